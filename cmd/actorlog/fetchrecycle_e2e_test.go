// fetchrecycle_e2e_test.go: a host gives the read buffer of a fetch answer
// back to a pool once the remote has written it (internal/frame,
// actors/client/remotecodec.go), so the next read may overwrite it. Were
// one given back too early, a consumer would receive another read's bytes.
// The same host receives the producer's requests into pooled frames and
// gives each back once its batch is appended (actors/client/remotedecode.go,
// actors/replica/produce.go): one given back too early would put another
// request's bytes in the log.

package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/actors/producer"
	"github.com/actorlog/actorlog/messages"
)

// recycleValue is record i's value: distinct per record, 300 bytes.
func recycleValue(i int) string {
	return strings.Repeat(fmt.Sprintf("%07d:", i), 38)[:300]
}

// recycleWriter produces records whose values recycleValue names (key
// "k-<i>") to a topic of h.
type recycleWriter struct {
	t      *testing.T
	topic  string
	p      *producer.Producer
	failed atomicError
}

// newRecycleWriter creates topic (2 partitions) and writes records 0..n-1
// to it, acknowledged by every replica, in batches of up to batchSize
// bytes (0: the producer's default).
func newRecycleWriter(ctx context.Context, t *testing.T, c *client.Client, h *hostProc, topic string, n, batchSize int) *recycleWriter {
	t.Helper()
	h.mustCLI("", "topics", "create", topic, "--partitions", "2")
	p, err := producer.New(c, producer.ActorConfig{Acks: messages.Acks_ACKS_ALL, Config: producer.Config{BatchSize: batchSize}})
	if err != nil {
		t.Fatal(err)
	}
	w := &recycleWriter{t: t, topic: topic, p: p}
	w.send(0, n)
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.failed.get(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	return w
}

// send writes records from..to-1 without waiting for them.
func (w *recycleWriter) send(from, to int) {
	for i := from; i < to; i++ {
		w.p.ProduceAsync(&producer.Send{Topic: w.topic, Partition: producer.AnyPartition,
			Key: []byte(fmt.Sprintf("k-%d", i)), Value: []byte(recycleValue(i)),
			Callback: func(d producer.Delivered) { w.failed.set(d.Err) }})
	}
}

// close waits for every record sent and fails the test if one failed.
func (w *recycleWriter) close(ctx context.Context) {
	w.t.Helper()
	if err := w.p.Close(ctx); err != nil {
		w.t.Fatal(err)
	}
	if err := w.failed.get(); err != nil {
		w.t.Fatalf("produce: %v", err)
	}
}

// TestConcurrentConsumersGetIntactRecordsFromRecycledFrames: four CLI
// consumers (processes of their own, so every fetch answer goes through
// the remote) read the same 20,000 records at once, while a producer
// appends more, from a host (race-built under CI) that recycles its read
// buffers. Every consumer gets every record once, in order, with its own
// value, and the host reports frames recycled, of fetch answers and of
// received produce requests.
func TestConcurrentConsumersGetIntactRecordsFromRecycledFrames(t *testing.T) {
	h := startHost(t, t.TempDir(), freeBase(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const n = 20000
	w := newRecycleWriter(ctx, t, newClient(t, h.addr()), h, "recycle", n, 0)

	const consumers = 4
	results := make([][]consumed, consumers)
	var wg sync.WaitGroup
	for j := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[j] = h.consumeAll("recycle", n)
		}()
	}
	w.send(n, n+5000) // appends (and parked fetches woken) meanwhile
	wg.Wait()
	w.close(ctx)

	for j, recs := range results {
		if len(recs) != n {
			t.Fatalf("consumer %d: %d records, want %d", j, len(recs), n)
		}
		next := map[int32]int64{}
		seen := map[string]bool{}
		for _, r := range recs {
			if r.offset != next[r.partition] {
				t.Fatalf("consumer %d: partition %d offset %d, want %d", j, r.partition, r.offset, next[r.partition])
			}
			next[r.partition]++
			var i int
			if _, err := fmt.Sscanf(r.key, "k-%d", &i); err != nil || seen[r.key] {
				t.Fatalf("consumer %d: key %q (seen before: %v): %v", j, r.key, seen[r.key], err)
			}
			seen[r.key] = true
			if r.value != recycleValue(i) {
				t.Fatalf("consumer %d: %s at %d:%d holds %.40q..., want %.40q...", j, r.key, r.partition, r.offset, r.value, recycleValue(i))
			}
		}
	}
	vals, err := metricValues(h)
	if err != nil {
		t.Fatal(err)
	}
	if vals["actorlog_fetch_frames_recycled_total"] < 1 {
		t.Fatalf("the host recycled no fetch frames (actorlog_fetch_frames_recycled_total %v): the test did not exercise it",
			vals["actorlog_fetch_frames_recycled_total"])
	}
	if vals["actorlog_produce_frames_recycled_total"] < 1 {
		t.Fatalf("the host recycled no produce frames (actorlog_produce_frames_recycled_total %v): the test did not exercise it",
			vals["actorlog_produce_frames_recycled_total"])
	}
}
