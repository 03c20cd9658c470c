// metrics.go: the host's Prometheus metrics — produce and fetch request
// rates and latencies, bytes in and out, each partition's log end offset,
// the actors respawned after they stopped unexpectedly, and the log
// cleaner's work (bytes, cleanings, time, tombstones removed, each
// compacted partition's dirty ratio) — implementing replica.Metrics,
// broker.RestartCounter and storage.CleanerObserver.

package host

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/actors/replica"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage"
)

// Metrics holds the host's collectors; safe for concurrent use.
type Metrics struct {
	Registry     *prometheus.Registry
	requests     *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	bytesIn      *prometheus.CounterVec
	bytesOut     *prometheus.CounterVec
	recordsIn    *prometheus.CounterVec
	logEndOffset *prometheus.GaugeVec
	restarts     *prometheus.CounterVec
	// The log cleaner's.
	cleanedBytes, cleanings, cleanerSeconds, tombstonesRemoved prometheus.Counter
	dirtyRatio                                                 *prometheus.GaugeVec
	// denied counts Kafka requests refused by the ACLs (kafkaauthz.go).
	denied *prometheus.CounterVec
	// remoteDenied counts remote requests refused by the ACLs
	// (kafkaauthz.go).
	remoteDenied *prometheus.CounterVec
}

// NewMetrics registers the collectors (and Go/process collectors) in a new
// registry.
func NewMetrics() *Metrics {
	r := prometheus.NewRegistry()
	m := &Metrics{
		Registry: r,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "actorlog_requests_total", Help: "Requests handled, by type and error code.",
		}, []string{"request", "error"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "actorlog_request_duration_seconds", Help: "Time from a request's arrival at its replica to its answer (long-poll fetches include their wait).",
			Buckets: prometheus.ExponentialBuckets(0.00005, 4, 10),
		}, []string{"request"}),
		bytesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "actorlog_bytes_in_total", Help: "Record batch bytes appended by producers.",
		}, []string{"topic"}),
		bytesOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "actorlog_bytes_out_total", Help: "Record batch bytes returned by fetches.",
		}, []string{"topic"}),
		recordsIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "actorlog_records_in_total", Help: "Records appended by producers.",
		}, []string{"topic"}),
		logEndOffset: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "actorlog_log_end_offset", Help: "Log end offset (high watermark) of each partition led here.",
		}, []string{"topic", "partition"}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "actorlog_actor_restarts_total", Help: "Actors respawned after they stopped unexpectedly, by kind (broker, controller, replica, coordinator).",
		}, []string{"actor"}),
		cleanedBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "actorlog_log_cleaner_bytes_cleaned_total", Help: "Bytes of closed segments the log cleaner rewrote (before cleaning).",
		}),
		cleanings: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "actorlog_log_cleaner_cleanings_total", Help: "Cleanings of a log that swapped segments in or moved its cleaner checkpoint.",
		}),
		cleanerSeconds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "actorlog_log_cleaner_seconds_total", Help: "Time the log cleaner spent in those cleanings (I/O throttling included).",
		}),
		tombstonesRemoved: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "actorlog_log_cleaner_tombstones_removed_total", Help: "Tombstones the log cleaner dropped past delete.retention.ms.",
		}),
		dirtyRatio: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "actorlog_log_dirty_ratio", Help: "Dirty share of the cleanable closed segments of each compacted partition replica here, as the cleaner last saw it.",
		}, []string{"topic", "partition"}),
	}
	m.denied = newDeniedCounter()
	r.MustRegister(m.denied)
	m.remoteDenied = newRemoteDeniedCounter()
	r.MustRegister(m.remoteDenied)
	r.MustRegister(m.requests, m.latency, m.bytesIn, m.bytesOut, m.recordsIn, m.logEndOffset, m.restarts,
		m.cleanedBytes, m.cleanings, m.cleanerSeconds, m.tombstonesRemoved, m.dirtyRatio,
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "actorlog_fetch_frames_recycled_total",
			Help: "Read buffers of fetch answers sent to other processes and given back to their pool once written (internal/frame).",
		}, func() float64 { return float64(client.FetchFramesRecycled()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "actorlog_produce_frames_recycled_total",
			Help: "Receive buffers of produce requests from other processes given back to their pool once the batch was appended (internal/frame).",
		}, func() float64 { return float64(replica.ProduceFramesRecycled()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "actorlog_fetched_frames_recycled_total",
			Help: "Receive buffers of fetch answers a follower replica here appended and gave back to their pool (internal/frame).",
		}, func() float64 { return float64(replica.FetchedFramesRecycled()) }),
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

// Produced records one produce request.
func (m *Metrics) Produced(topic string, _ int32, records, bytes int, took time.Duration, code messages.ErrorCode) {
	m.requests.WithLabelValues("produce", code.ShortName()).Inc()
	m.latency.WithLabelValues("produce").Observe(took.Seconds())
	if code == 0 {
		m.bytesIn.WithLabelValues(topic).Add(float64(bytes))
		m.recordsIn.WithLabelValues(topic).Add(float64(records))
	}
}

// Fetched records one fetch request.
func (m *Metrics) Fetched(topic string, _ int32, bytes int, took time.Duration, code messages.ErrorCode) {
	m.requests.WithLabelValues("fetch", code.ShortName()).Inc()
	m.latency.WithLabelValues("fetch").Observe(took.Seconds())
	m.bytesOut.WithLabelValues(topic).Add(float64(bytes))
}

// LogEndOffset records a partition's log end offset.
func (m *Metrics) LogEndOffset(topic string, partition int32, offset int64) {
	m.logEndOffset.WithLabelValues(topic, strconv.Itoa(int(partition))).Set(float64(offset))
}

// ActorRestarted counts one respawn of an actor of kind.
func (m *Metrics) ActorRestarted(kind string) {
	m.restarts.WithLabelValues(kind).Inc()
}

// Forget drops a partition's gauges (after it is deleted or moves away).
func (m *Metrics) Forget(topic string, partition int32) {
	m.logEndOffset.DeleteLabelValues(topic, strconv.Itoa(int(partition)))
}

// LogCleaned records one cleaning (storage.CleanerObserver).
func (m *Metrics) LogCleaned(_ string, _ int32, stats storage.CompactStats, took time.Duration) {
	m.cleanings.Inc()
	m.cleanedBytes.Add(float64(stats.BytesIn))
	m.tombstonesRemoved.Add(float64(stats.TombstonesRemoved))
	m.cleanerSeconds.Add(took.Seconds())
}

// DirtyRatio records a compacted partition's dirty ratio.
func (m *Metrics) DirtyRatio(topic string, partition int32, ratio float64) {
	m.dirtyRatio.WithLabelValues(topic, strconv.Itoa(int(partition))).Set(ratio)
}

// ForgetLog drops a partition's dirty ratio once its replica stopped.
func (m *Metrics) ForgetLog(topic string, partition int32) {
	m.dirtyRatio.DeleteLabelValues(topic, strconv.Itoa(int(partition)))
}
