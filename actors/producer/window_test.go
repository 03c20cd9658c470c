// window_test.go: the producer's in-flight limit against a real partition
// log. An idempotent producer may have MaxInFlightIdempotent batches of one
// partition in flight; every one of them may have been appended with its
// answer lost, so the leader's log must still recognise a retry of the
// oldest as a duplicate.

package producer

import (
	"testing"
	"time"

	"github.com/actorlog/actorlog/storage"
)

// TestWholeWindowRetriedIsDeduplicated: MaxInFlightIdempotent batches go out
// at once, the log appends them all, every answer is lost; the retries, in
// sequence order, are each answered with the original offsets and the log
// does not grow.
func TestWholeWindowRetriedIsDeduplicated(t *testing.T) {
	if MaxInFlightIdempotent > storage.ProducerBatchesRetained {
		t.Fatalf("MaxInFlightIdempotent %d exceeds the %d batches a leader remembers",
			MaxInFlightIdempotent, storage.ProducerBatchesRetained)
	}
	l, err := storage.Open(t.TempDir(), storage.Config{})
	if err != nil {
		t.Fatalf("open log: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("close log: %v", err)
		}
	})
	a := newAcc(t, Config{BatchSize: 100, MaxInFlight: MaxInFlightIdempotent, DeliveryTimeout: time.Hour})
	n := MaxInFlightIdempotent + 2
	oneRecordBatches(t, a, t0, tpA, 0, n)
	first := readyCopy(a, t0)
	if len(first) != MaxInFlightIdempotent {
		t.Fatalf("%d batches sent at once, want MaxInFlightIdempotent (%d)", len(first), MaxInFlightIdempotent)
	}
	offsets := make([]int64, len(first))
	for i, rb := range first {
		info, err := l.Append(rb.Bytes, 0)
		if err != nil || info.Duplicate {
			t.Fatalf("append batch %d: %+v, %v", i, info, err)
		}
		offsets[i] = info.FirstOffset
		// The answer is lost: the producer retries.
		if ds := a.Retry(rb.ID, t0, errNotLeader); ds != nil {
			t.Fatalf("Retry: %+v", ds)
		}
	}
	end := l.LogEndOffset()
	now := t0.Add(DefaultRetryBackoff)
	var delivered []int64
	for i := 0; i < len(first); i++ {
		rb := readyCopy(a, now)
		if len(rb) == 0 || rb[0].Attempt != 2 {
			t.Fatalf("retry %d: sent %d batches, first attempt %v", i, len(rb), rb)
		}
		info, err := l.Append(rb[0].Bytes, 0)
		if err != nil || !info.Duplicate || info.FirstOffset != offsets[i] {
			t.Fatalf("retry of batch %d (of %d in flight): %+v, %v; want a duplicate at %d",
				i, len(first), info, err, offsets[i])
		}
		for _, d := range a.Complete(rb[0].ID, info.FirstOffset, nil) {
			delivered = append(delivered, d.Offset)
		}
		for _, more := range rb[1:] { // new batches pipelined behind the last retry
			info, err := l.Append(more.Bytes, 0)
			if err != nil || info.Duplicate {
				t.Fatalf("append new batch: %+v, %v", info, err)
			}
			end = info.LastOffset + 1
			for _, d := range a.Complete(more.ID, info.FirstOffset, nil) {
				delivered = append(delivered, d.Offset)
			}
		}
	}
	if l.LogEndOffset() != end {
		t.Fatalf("log end %d, want %d: a retry was appended again", l.LogEndOffset(), end)
	}
	for i, off := range delivered[:len(first)] {
		if off != offsets[i] {
			t.Fatalf("delivered offsets %v, want %v first", delivered, offsets)
		}
	}
}
