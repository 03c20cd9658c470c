// This file checks the recycling of uncompressed batch buffers (Config.
// RecycleSent) at steady state: a stream of full batches, several in
// flight and answered in bursts, cycles through a fixed set of buffers,
// and the free list stays within the buffer memory budget.

package producer

import (
	"errors"
	"testing"
	"time"

	"github.com/actorlog/actorlog/internal/frame"
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
			if frame.Cap(rb.Bytes) > batchSize {
				t.Fatalf("batch of %d bytes in a buffer of %d, above the batch size %d", len(rb.Bytes), frame.Cap(rb.Bytes), batchSize)
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

// TestFirstSendsAreFramesRetriesAreNot: once builders carry batch buffers,
// a batch's first send hands out its bytes in a frame (so a leader in
// another process gets it without a copy: messages/framed.go), and a
// retry hands out the same bytes without the frame (the first send may
// still be encoding into its headroom). Fails if the producer's buffers
// are not frames, or if a retry keeps the frame.
func TestFirstSendsAreFramesRetriesAreNot(t *testing.T) {
	a := newAcc(t, Config{BatchSize: 16 << 10, MaxInFlight: 1, RecycleSent: true})
	framed := 0
	var last ReadyBatch
	for i := 0; i < 40; i++ {
		for j := 0; j < 16; j++ {
			mustAppend(t, a, t0, tpA, i*16+j, 1000)
		}
		rbs := readyCopy(a, t0.Add(time.Hour))
		if len(rbs) != 1 {
			t.Fatalf("round %d: %d batches ready, want 1", i, len(rbs))
		}
		last = rbs[0]
		if _, ok := frame.Of(last.Bytes); ok {
			framed++
		}
		if i < 39 {
			a.Complete(last.ID, int64(i), nil)
		}
	}
	if framed < 35 {
		t.Fatalf("%d of 40 first sends were frames, want all but the first few", framed)
	}
	if _, ok := frame.Of(last.Bytes); !ok {
		t.Fatal("the last first send was not a frame")
	}
	a.Retry(last.ID, t0, errors.New("timeout"))
	again := readyCopy(a, t0.Add(2*time.Hour))
	if len(again) != 1 || &again[0].Bytes[0] != &last.Bytes[0] {
		t.Fatalf("retry sent %d batches, want the same bytes again", len(again))
	}
	if _, ok := frame.Of(again[0].Bytes); ok {
		t.Fatal("a retry was handed out in its frame")
	}
}
