// This file checks the recycling of uncompressed batch buffers (Config.
// RecycleSent) at steady state: a stream of full batches, several in
// flight and answered in bursts, cycles through a fixed set of buffers,
// and the free list stays within the buffer memory budget.

package producer

import (
	"testing"
	"time"
)

func TestRecycleSteadyState(t *testing.T) {
	const (
		batchSize = 16 << 10
		mem       = 256 << 10
		recSize   = 1 << 10
	)
	a := newAcc(t, Config{BatchSize: batchSize, BufferMemory: mem, MaxRequestSize: mem, RecycleSent: true,
		Linger: time.Hour, DeliveryTimeout: 2 * time.Hour})
	buffer := func(b []byte) *byte { return &b[:cap(b)][cap(b)-1] }
	var inflight []BatchID
	seen := map[*byte]bool{}
	batches, fresh := 0, 0
	for i := 0; batches < 300; i++ {
		res := mustAppend(t, a, t0, tpA, i, recSize)
		if !res.BatchFull {
			continue
		}
		// At the partition's limit, every batch in flight is answered at
		// once, as responses come in bursts at full speed: the free list
		// must then hold them all for the batches that follow.
		if len(inflight) >= DefaultMaxInFlight {
			for _, id := range inflight {
				if d := a.Complete(id, int64(i), nil); len(d) == 0 || d[0].Err != nil {
					t.Fatalf("Complete: %+v", d)
				}
			}
			inflight = inflight[:0]
		}
		for _, rb := range a.Ready(t0) {
			inflight = append(inflight, rb.ID)
			batches++
			if p := buffer(rb.Bytes); !seen[p] {
				seen[p] = true
				if batches > 50 {
					fresh++
				}
			}
			if cap(rb.Bytes) > batchSize {
				t.Fatalf("batch of %d bytes in a buffer of %d, above the batch size %d", len(rb.Bytes), cap(rb.Bytes), batchSize)
			}
		}
		if a.freeBufBytes+a.used > mem {
			t.Fatalf("free batch buffers %d plus buffered bytes %d exceed buffer memory %d", a.freeBufBytes, a.used, mem)
		}
	}
	if fresh != 0 {
		t.Fatalf("after warm-up, %d batches came in newly allocated buffers (%d buffers in all); want none", fresh, len(seen))
	}
	if len(seen) > DefaultMaxInFlight+3 {
		t.Fatalf("%d distinct batch buffers for %d in flight", len(seen), DefaultMaxInFlight)
	}
	// Drained and idle, the free list keeps at most the buffer memory.
	for _, id := range inflight {
		a.Complete(id, 0, nil)
	}
	a.Flush()
	for _, rb := range a.Ready(t0) {
		a.Complete(rb.ID, 0, nil)
	}
	if a.BufferedBytes() != 0 || a.freeBufBytes > mem || a.freeBufBytes == 0 {
		t.Fatalf("idle: %d buffered, %d bytes of free buffers (budget %d)", a.BufferedBytes(), a.freeBufBytes, mem)
	}
}
