// kafkacleaner_test.go: the host's log cleaner on a live compacted topic,
// end to end over the Kafka protocol (issue 14, step 4). A host with a
// short --log-cleaner-backoff and a small dedupe buffer serves a topic
// with cleanup.policy=compact, small segments, delete.retention.ms=1 and
// min.cleanable.dirty.ratio=0.01; kgo writes many updates to few keys,
// then tombstones for some of them, then keys written once (which push
// everything before them out of the active segment). Without any call
// into the log, the cleaner must make a consumer reading from the start
// see exactly the newest value of each live key, no tombstoned key, at
// increasing offsets with gaps, while the consumers polling for that read
// through the cleaning (every fetch succeeds, no key's value goes back to
// an older one within a pass; storage's TestCleanReadInFlightAcrossSwap
// pins a read in flight across a swap); /metrics must show the cleaner's
// counters and the partition's dirty ratio.

package host

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/internal/poll"
)

// hostMetrics reads the host's /metrics as name{labels} -> value.
func hostMetrics(t *testing.T, h *Host) map[string]float64 {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + h.cfg.HTTP + "/metrics")
	if err != nil {
		t.Fatalf("get /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read /metrics: %v", err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// consumeTo reads topic's partition 0 from the start up to offset last,
// in one pass of a fresh consumer. The cleaner may swap segments in under
// the pass (the test polls while it cleans): every fetch must succeed,
// offsets increase, and a key's values never go back to an older one
// (values sort in the order written).
func consumeTo(t *testing.T, addr, topic string, last int64) []*kgo.Record {
	t.Helper()
	cl := kafkaClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) == 0 || got[len(got)-1].Offset < last {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d records, not up to offset %d: %v", len(got), last, ctx.Err())
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		got = append(got, fs.Records()...)
	}
	newest := map[string]string{}
	for i, rec := range got {
		if i > 0 && rec.Offset <= got[i-1].Offset {
			t.Fatalf("offset %d after %d in one pass", rec.Offset, got[i-1].Offset)
		}
		k := string(rec.Key)
		if rec.Value != nil && string(rec.Value) < newest[k] {
			t.Fatalf("key %s: value %.8q at %d after the newer %.8q in one pass", k, rec.Value, rec.Offset, newest[k])
		}
		if rec.Value != nil {
			newest[k] = string(rec.Value)
		}
	}
	return got
}

func TestKafkaLogCleanerCompactsLiveTopic(t *testing.T) {
	cluster.SetMinSegmentBytes(1024)
	t.Cleanup(func() { cluster.SetMinSegmentBytes(cluster.MinSegmentBytes) })
	h := startTestHost(t, func(c *Config) {
		c.KafkaListen = "127.0.0.1:0"
		c.LogCleanerBackoff = 50 * time.Millisecond
		c.LogCleanerDedupeBufferSize = 1 << 20
	})
	adm := kafkaAdmin(t, h.KafkaAddress())
	waitKafkaMetadata(t, adm, func(md kadm.Metadata) error {
		if len(md.Brokers) != 1 {
			return fmt.Errorf("brokers %v", md.Brokers)
		}
		return nil
	})
	const topic = "cleaned"
	r, err := adm.CreateTopics(kafkaAdminCtx(t), 1, 1, map[string]*string{
		"cleanup.policy": kadm.StringPtr("compact"), "segment.bytes": kadm.StringPtr("4096"),
		"delete.retention.ms": kadm.StringPtr("1"), "min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
	}, topic)
	if err != nil || r[topic].Err != nil {
		t.Fatalf("create: %+v %v", r, err)
	}
	waitKafkaMetadata(t, adm, func(md kadm.Metadata) error {
		td, ok := md.Topics[topic]
		if !ok || len(td.Partitions) != 1 || td.Partitions[0].Leader != h.hostID.Load() {
			return fmt.Errorf("topic %s not led here yet: %+v", topic, td)
		}
		return nil
	})

	prod := kafkaClient(t, h.KafkaAddress(), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression())) // uncompressed: the segments roll by the record bytes
	ctx, cancel := context30s()
	defer cancel()
	want := map[string]string{}
	send := func(recs []*kgo.Record) int64 {
		t.Helper()
		res := prod.ProduceSync(ctx, recs...)
		if err := res.FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		for _, rec := range recs {
			if rec.Value == nil {
				delete(want, string(rec.Key))
			} else {
				want[string(rec.Key)] = string(rec.Value)
			}
		}
		return res[len(res)-1].Record.Offset
	}
	const keys, rounds = 12, 60
	for round := 0; round < rounds; round++ { // updates: 12 keys, 60 values each
		recs := make([]*kgo.Record, keys)
		for k := range recs {
			recs[k] = &kgo.Record{Key: []byte(fmt.Sprintf("key-%02d", k)), Value: []byte(fmt.Sprintf("r%03d %s", round, strings.Repeat("x", 60)))}
		}
		send(recs)
	}
	var tombs []*kgo.Record // tombstones for the first four keys
	for k := 0; k < 4; k++ {
		tombs = append(tombs, &kgo.Record{Key: []byte(fmt.Sprintf("key-%02d", k))})
	}
	send(tombs)
	var last int64
	for i := 0; i < 8; i++ { // keys written once: 6 KiB, over a segment
		recs := make([]*kgo.Record, 10)
		for j := range recs {
			recs[j] = &kgo.Record{Key: []byte(fmt.Sprintf("once-%d-%d", i, j)), Value: []byte(strings.Repeat("y", 60))}
		}
		last = send(recs)
	}
	if len(want) != keys-4+80 {
		t.Fatalf("test bug: %d live keys", len(want))
	}

	// The cleaner cleans up to the high watermark
	// once the backoff passes: poll with fresh consumers.
	var got []*kgo.Record
	took := poll.Until(t, 40*time.Second, func() error {
		got = consumeTo(t, h.KafkaAddress(), topic, last)
		if len(got) != len(want) {
			return fmt.Errorf("%d records up to offset %d, want one per live key (%d)", len(got), last, len(want))
		}
		return nil
	})
	t.Logf("cleaned in %v", took)
	seen := map[string]bool{}
	gaps := false
	for i, rec := range got {
		if i > 0 {
			if rec.Offset <= got[i-1].Offset {
				t.Fatalf("offset %d after %d", rec.Offset, got[i-1].Offset)
			}
			gaps = gaps || rec.Offset > got[i-1].Offset+1
		}
		k := string(rec.Key)
		if seen[k] {
			t.Errorf("key %s twice", k)
		}
		seen[k] = true
		if w, ok := want[k]; !ok {
			t.Errorf("key %s (offset %d) is deleted or unknown", k, rec.Offset)
		} else if string(rec.Value) != w {
			t.Errorf("key %s = %.8q at %d, want its newest value %.8q", k, rec.Value, rec.Offset, w)
		}
	}
	if !gaps || got[0].Offset == 0 && len(got) == int(last)+1 {
		t.Errorf("no offset gaps in %d records up to %d", len(got), last)
	}

	// The counters move once Clean has returned, a moment after the swap
	// the consumer saw: poll them.
	var m map[string]float64
	poll.Until(t, 20*time.Second, func() error {
		m = hostMetrics(t, h)
		for _, name := range []string{"actorlog_log_cleaner_cleanings_total", "actorlog_log_cleaner_bytes_cleaned_total", "actorlog_log_cleaner_seconds_total"} {
			if m[name] <= 0 {
				return fmt.Errorf("%s = %v, want > 0", name, m[name])
			}
		}
		if n := m["actorlog_log_cleaner_tombstones_removed_total"]; n < 4 {
			return fmt.Errorf("tombstones removed %v, want at least 4", n)
		}
		return nil
	})
	ratio, ok := m[`actorlog_log_dirty_ratio{partition="0",topic="cleaned"}`]
	if !ok || ratio < 0 || ratio > 1 {
		t.Errorf("dirty ratio of cleaned-0: %v (present %v)", ratio, ok)
	}
}
