// reusebuffers_e2e_test.go: a consumer with Config.ReuseBuffers gives each
// fetch answer's buffer back to a pool once its records were handled, and
// its client's remote receives the next answers into pooled buffers
// (actors/client: Client.PoolFetchAnswers). Were a buffer given back
// while its records were still being handed over — or to a consumer of
// the same client that keeps its records — records would hold another
// answer's bytes.

package main

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/actors/consumer"
	"github.com/actorlog/actorlog/internal/frame"
)

// reuseTally is what one consumer saw, checked as the records arrive
// (inside the handler, where a reusing consumer's records are valid).
type reuseTally struct {
	mu   sync.Mutex
	next map[int32]int64
	n    int
	err  error
	kept []consumer.Message // a keeping consumer's records, checked at the end
	done chan struct{}
	want int
}

func newReuseTally(want int) *reuseTally {
	return &reuseTally{next: map[int32]int64{}, done: make(chan struct{}), want: want}
}

// check verifies msgs (offsets in order per partition, each value the
// one its key names) and, with keep, keeps them.
func (r *reuseTally) check(msgs []consumer.Message, keep bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range msgs {
		if r.err != nil || r.n >= r.want {
			return
		}
		if err := checkReused(m, r.next[m.Partition]); err != nil {
			r.err = err
			close(r.done)
			return
		}
		r.next[m.Partition]++
		r.n++
		if keep {
			r.kept = append(r.kept, m)
		}
		if r.n == r.want {
			close(r.done)
		}
	}
}

// checkReused checks one record against its key and its expected offset.
func checkReused(m consumer.Message, offset int64) error {
	if m.Offset != offset {
		return fmt.Errorf("partition %d: offset %d, want %d", m.Partition, m.Offset, offset)
	}
	var i int
	if _, err := fmt.Sscanf(string(m.Key), "k-%d", &i); err != nil {
		return fmt.Errorf("partition %d offset %d: key %q: %w", m.Partition, m.Offset, m.Key, err)
	}
	if string(m.Value) != recycleValue(i) {
		return fmt.Errorf("partition %d offset %d (%s): value %.40q..., want %.40q...", m.Partition, m.Offset, m.Key, m.Value, recycleValue(i))
	}
	return nil
}

// TestReusingConsumersGetIntactRecordsFromRecycledAnswers: on one client,
// a consumer with ReuseBuffers and a Handler, one with ReuseBuffers and a
// Target actor, and one without that keeps every record it gets, all
// reading the same 20,000 records at once while a producer appends more.
// Each sees every record once, in order, with its own value — the keeping
// consumer's still intact after all three finished — and the reusing ones
// gave fetch answers' buffers back.
func TestReusingConsumersGetIntactRecordsFromRecycledAnswers(t *testing.T) {
	h := startHost(t, t.TempDir(), freeBase(t))
	c := newClient(t, h.addr())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const n = 20000
	// Batches of 16 KiB: a fetch answer holds at least one whole batch,
	// so with the default 1 MiB batches there would be ~10 answers in all.
	w := newRecycleWriter(ctx, t, c, h, "reuse", n, 16<<10)
	// Frames given back in this process: only its consumers give any back
	// (it runs no host, and its producer's batches are not pooled frames).
	recycledBefore := frame.Recycled()

	// Small fetches of small batches: many answers, so that buffers go
	// round the pool.
	base := consumer.Config{Client: c, Topic: "reuse", Start: consumer.Earliest(), MaxBytes: 64 << 10, OnError: func(error) {}}
	spawn := func(cfg consumer.Config) {
		props, err := consumer.Props(cfg)
		if err != nil {
			t.Fatal(err)
		}
		pid := c.System().Root.Spawn(props)
		t.Cleanup(func() { c.System().Root.Stop(pid) })
	}
	handled, targeted, kept := newReuseTally(n), newReuseTally(n), newReuseTally(n)
	cfg := base
	cfg.ReuseBuffers, cfg.Handler = true, func(msgs []consumer.Message) { handled.check(msgs, false) }
	spawn(cfg)
	target := c.System().Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if r, ok := ctx.Message().(*consumer.Records); ok {
			targeted.check(r.Messages, false)
			ctx.Respond(true)
		}
	}))
	t.Cleanup(func() { c.System().Root.Stop(target) })
	cfg = base
	cfg.ReuseBuffers, cfg.Target = true, target
	spawn(cfg)
	cfg = base
	cfg.Handler = func(msgs []consumer.Message) { kept.check(msgs, true) }
	spawn(cfg)

	w.send(n, n+5000) // appends (and parked fetches woken) meanwhile
	for name, r := range map[string]*reuseTally{"handler": handled, "target": targeted, "keeping": kept} {
		select {
		case <-r.done:
		case <-ctx.Done():
			t.Fatalf("%s consumer: %d of %d records before the deadline", name, r.n, n)
		}
		if r.err != nil {
			t.Fatalf("%s consumer: %v", name, r.err)
		}
	}
	w.close(ctx)
	next := map[int32]int64{}
	for _, m := range kept.kept {
		if err := checkReused(m, next[m.Partition]); err != nil {
			t.Fatalf("keeping consumer, after the others reused their buffers: %v", err)
		}
		next[m.Partition]++
	}
	// ~6.5 MB of records fetched 64 KiB at a time by each of two
	// reusing consumers: ~200 answers, most of them pooled.
	got := frame.Recycled() - recycledBefore
	t.Logf("fetch answers given back: %d", got)
	if got < 100 {
		t.Fatalf("the reusing consumers gave %d fetch answers back, want at least 100: the test did not exercise it", got)
	}
}
