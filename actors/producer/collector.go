// collector.go: a Prometheus collector of a producer's counters and load
// (Stats), for a Go app to register on its own /metrics: sends, retries,
// records delivered and failed, batches in flight, records pending,
// buffered bytes and sends held back. Each scrape asks the producer actor
// once, bounded by the client's request timeout; a producer that does not
// answer is left out of that scrape.

package producer

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports one producer's Stats. Register it with a registry
// (prometheus.MustRegister(producer.NewCollector(p, "orders"))); name
// labels the producer's series (label "producer").
type Collector struct {
	p     statser
	descs map[string]*prometheus.Desc
}

// statser is what a Collector reads (a *Producer).
type statser interface {
	Stats() (ProducerStats, error)
}

// NewCollector returns a collector of p's Stats labelled name.
func NewCollector(p *Producer, name string) *Collector { return newCollector(p, name) }

func newCollector(p statser, name string) *Collector {
	d := func(metric, help string) *prometheus.Desc {
		return prometheus.NewDesc("actorlog_producer_"+metric, help, nil, prometheus.Labels{"producer": name})
	}
	return &Collector{p: p, descs: map[string]*prometheus.Desc{
		"batches_sent_total":      d("batches_sent_total", "Produce requests sent, retries included."),
		"retries_total":           d("retries_total", "Sends that failed retriably (queued again or timed out)."),
		"records_delivered_total": d("records_delivered_total", "Records acknowledged."),
		"records_failed_total":    d("records_failed_total", "Records that failed for good."),
		"in_flight":               d("in_flight", "Batches sent and not yet answered."),
		"pending":                 d("pending_records", "Records appended and not yet delivered."),
		"buffered_bytes":          d("buffered_bytes", "Memory held by pending records (counted against buffer memory)."),
		"blocked":                 d("blocked_sends", "Sends held back because the buffer memory is full."),
	}}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st, err := c.p.Stats()
	if err != nil {
		return
	}
	counter := func(k string, v uint64) {
		ch <- prometheus.MustNewConstMetric(c.descs[k], prometheus.CounterValue, float64(v))
	}
	gauge := func(k string, v int) {
		ch <- prometheus.MustNewConstMetric(c.descs[k], prometheus.GaugeValue, float64(v))
	}
	counter("batches_sent_total", st.BatchesSent)
	counter("retries_total", st.Retries)
	counter("records_delivered_total", st.RecordsDelivered)
	counter("records_failed_total", st.RecordsFailed)
	gauge("in_flight", st.InFlight)
	gauge("pending", st.Pending)
	gauge("buffered_bytes", st.BufferedBytes)
	gauge("blocked", st.Blocked)
}
