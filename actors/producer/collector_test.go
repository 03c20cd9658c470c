package producer

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

type fakeStats struct {
	st  ProducerStats
	err error
}

func (f fakeStats) Stats() (ProducerStats, error) { return f.st, f.err }

// gather registers c alone and returns its series' values by name.
func gather(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	r := prometheus.NewRegistry()
	r.MustRegister(c)
	mfs, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if l := m.GetLabel(); len(l) != 1 || l[0].GetName() != "producer" || l[0].GetValue() != "orders" {
				t.Errorf("%s: labels %v", mf.GetName(), l)
			}
			switch {
			case m.GetCounter() != nil:
				out[mf.GetName()] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[mf.GetName()] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

func TestCollectorExportsStats(t *testing.T) {
	st := ProducerStats{Stats: Stats{BatchesSent: 7, Retries: 2, RecordsDelivered: 100, RecordsFailed: 1, InFlight: 3, Pending: 30, BufferedBytes: 4096}, Blocked: 1}
	got := gather(t, newCollector(fakeStats{st: st}, "orders"))
	want := map[string]float64{
		"actorlog_producer_batches_sent_total": 7, "actorlog_producer_retries_total": 2,
		"actorlog_producer_records_delivered_total": 100, "actorlog_producer_records_failed_total": 1,
		"actorlog_producer_in_flight": 3, "actorlog_producer_pending_records": 30,
		"actorlog_producer_buffered_bytes": 4096, "actorlog_producer_blocked_sends": 1,
	}
	if len(got) != len(want) {
		t.Fatalf("series %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	// A producer that does not answer is left out of the scrape.
	if got := gather(t, newCollector(fakeStats{err: errors.New("timeout")}, "orders")); len(got) != 0 {
		t.Fatalf("series from a producer that did not answer: %v", got)
	}
}
