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

	"github.com/actorlog/actorlog/actors/producer"
	"github.com/actorlog/actorlog/messages"
)

// recycleValue is record i's value: distinct per record, 300 bytes.
func recycleValue(i int) string {
	return strings.Repeat(fmt.Sprintf("%07d:", i), 38)[:300]
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
	h.mustCLI("", "topics", "create", "recycle", "--partitions", "2")
	c := newClient(t, h.addr())
	p, err := producer.New(c, producer.ActorConfig{Acks: messages.Acks_ACKS_ALL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var failed atomicError
	send := func(from, to int) {
		for i := from; i < to; i++ {
			p.ProduceAsync(&producer.Send{Topic: "recycle", Partition: producer.AnyPartition,
				Key: []byte(fmt.Sprintf("k-%d", i)), Value: []byte(recycleValue(i)),
				Callback: func(d producer.Delivered) { failed.set(d.Err) }})
		}
	}
	const n = 20000
	send(0, n)
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := failed.get(); err != nil {
		t.Fatalf("produce: %v", err)
	}

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
	send(n, n+5000) // appends (and parked fetches woken) meanwhile
	wg.Wait()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := failed.get(); err != nil {
		t.Fatalf("produce: %v", err)
	}

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
