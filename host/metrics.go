// metrics.go: the host's Prometheus metrics — produce and fetch request
// rates and latencies, bytes in and out, each partition's log end offset,
// and the actors respawned after they stopped unexpectedly — implementing
// replica.Metrics and broker.RestartCounter.

package host

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/actorlog/actorlog/messages"
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
	}
	r.MustRegister(m.requests, m.latency, m.bytesIn, m.bytesOut, m.recordsIn, m.logEndOffset, m.restarts,
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
