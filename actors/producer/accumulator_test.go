// This file tests the Accumulator on a fake clock: linger, batch size
// boundaries, size and memory limits, in-flight limits, retries, timeouts,
// offsets, flush, pause, abort and the encoded contents of batches.

package producer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/actorlog/actorlog/storage/record"
)

// size100 is the encoded size of a keyless, headerless record with a
// 100-byte value at offset delta < 64 and timestamp delta 0: attributes,
// timestamp delta, offset delta, null key, 100 as a 2-byte varint and the
// value, header count; plus the 2-byte length prefix.
const size100 = 2 + 1 + 1 + 1 + 1 + 2 + 100 + 1

func TestRecordSizeMatchesBuilder(t *testing.T) {
	recs := []record.Record{
		{},
		{Key: []byte{}, Value: []byte{}},
		{Value: value(1, 100)},
		{Key: []byte("key"), Value: value(2, 300), Timestamp: 1 << 40},
		{Value: value(3, 10), Headers: []record.RecordHeader{{Key: "h", Value: []byte("v")}, {Key: "", Value: nil}}},
		{Value: value(4, 70000), Timestamp: -5},
	}
	if got := recordSize(&record.Record{Value: value(0, 100)}, 0, 0); got != size100 {
		t.Fatalf("recordSize(100-byte value) = %d, want %d", got, size100)
	}
	b := record.NewBuilder(record.BuilderOptions{})
	for i := range recs {
		before := b.EstimatedSize()
		want := recordSize(&recs[i], b.Len(), recs[i].Timestamp-recs[0].Timestamp)
		b.Append(recs[i])
		if got := b.EstimatedSize() - before; got != want {
			t.Errorf("record %d: builder grew by %d, recordSize says %d", i, got, want)
		}
	}
}

// TestLinger: a batch on a partition with nothing in flight is sent at
// once by default, and after its linger with LingerWhenIdle (Kafka's
// linger.ms).
func TestLinger(t *testing.T) {
	tests := []struct {
		name   string
		linger time.Duration
		idle   bool          // LingerWhenIdle
		want   time.Duration // effective linger
	}{
		{"default: idle partition sends at once", 0, false, 0},
		{"20ms: idle partition sends at once", 20 * time.Millisecond, false, 0},
		{"default 5ms when idle", 0, true, DefaultLinger},
		{"20ms when idle", 20 * time.Millisecond, true, 20 * time.Millisecond},
		{"none", -1, false, 0},
		{"none when idle", -1, true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newAcc(t, Config{Linger: tc.linger, LingerWhenIdle: tc.idle})
			for i := 0; i < 3; i++ {
				res := mustAppend(t, a, t0, tpA, i, 100)
				if res.NewBatch != (i == 0) || res.BatchFull {
					t.Fatalf("append %d: %+v", i, res)
				}
			}
			if at, ok := a.NextDeadline(); !ok || !at.Equal(t0.Add(tc.want)) {
				t.Fatalf("NextDeadline = %v, %v; want t0+%v", at.Sub(t0), ok, tc.want)
			}
			if tc.want > 0 {
				if rb := a.Ready(t0.Add(tc.want - time.Nanosecond)); len(rb) != 0 {
					t.Fatalf("Ready before linger expiry returned %d batches", len(rb))
				}
			}
			rb := readyCopy(a, t0.Add(tc.want))
			if len(rb) != 1 || rb[0].TopicPartition != tpA || rb[0].Attempt != 1 {
				t.Fatalf("Ready at linger expiry: %+v", rb)
			}
			recs := decode(t, rb[0])
			for i, r := range recs {
				if !bytes.Equal(r.Value, value(i, 100)) || r.Key != nil || r.Offset != int64(i) {
					t.Errorf("record %d: %+v", i, r)
				}
			}
			if got := reportInts(rb[0]); !slices.Equal(got, []int{0, 1, 2}) {
				t.Errorf("reports %v", got)
			}
			// Only the request timeout and delivery timeout remain.
			if at, ok := a.NextDeadline(); !ok || !at.Equal(t0.Add(tc.want+DefaultRequestTimeout)) {
				t.Errorf("NextDeadline after send = t0+%v, %v", at.Sub(t0), ok)
			}
		})
	}
}

func TestBatchSizeBoundary(t *testing.T) {
	const k = 10
	tests := []struct {
		name      string
		batchSize int
		valueLen  int
		appends   int
		full      []int // appends (0-based) reporting BatchFull
		newBatch  []int // appends reporting NewBatch
		batches   []int // records per batch, in order, after Flush
		firstLen  int   // if set, the first batch's exact length in bytes
	}{
		{
			name: "exact fit closes on the last record", batchSize: record.HeaderSize + k*size100,
			valueLen: 100, appends: k + 1,
			full: []int{k - 1}, newBatch: []int{0, k}, batches: []int{k, 1},
			firstLen: record.HeaderSize + k*size100,
		},
		{
			name: "one byte short closes before the last record", batchSize: record.HeaderSize + k*size100 - 1,
			valueLen: 100, appends: k + 1,
			full: []int{k - 1}, newBatch: []int{0, k - 1}, batches: []int{k - 1, 2},
		},
		{
			name: "record bigger than the batch size gets a batch of its own", batchSize: 100,
			valueLen: 200, appends: 3,
			full: []int{0, 1, 2}, newBatch: []int{0, 1, 2}, batches: []int{1, 1, 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newAcc(t, Config{BatchSize: tc.batchSize, Linger: time.Hour, DeliveryTimeout: 2 * time.Hour})
			var full, newBatch []int
			for i := 0; i < tc.appends; i++ {
				res := mustAppend(t, a, t0, tpA, i, tc.valueLen)
				if res.BatchFull {
					full = append(full, i)
				}
				if res.NewBatch {
					newBatch = append(newBatch, i)
				}
			}
			if !slices.Equal(full, tc.full) || !slices.Equal(newBatch, tc.newBatch) {
				t.Errorf("BatchFull at %v (want %v), NewBatch at %v (want %v)", full, tc.full, newBatch, tc.newBatch)
			}
			// Closed batches go out before linger; then flush the rest.
			early := readyCopy(a, t0)
			a.Flush()
			all := append(early, a.Ready(t0)...)
			var got []int
			next := 0
			for _, rb := range all {
				got = append(got, rb.Records)
				if tc.batchSize >= record.HeaderSize+size100 && len(rb.Bytes) > tc.batchSize {
					t.Errorf("batch of %d bytes exceeds batch size %d", len(rb.Bytes), tc.batchSize)
				}
				for _, r := range decode(t, rb) {
					if !bytes.Equal(r.Value, value(next, tc.valueLen)) {
						t.Errorf("record %d out of order or wrong", next)
					}
					next++
				}
			}
			if !slices.Equal(got, tc.batches) {
				t.Errorf("batches of %v records, want %v", got, tc.batches)
			}
			if tc.firstLen != 0 && len(all[0].Bytes) != tc.firstLen {
				t.Errorf("first batch is %d bytes, want %d", len(all[0].Bytes), tc.firstLen)
			}
		})
	}
}

func TestRecordTooLarge(t *testing.T) {
	// The upper bound of a record alone in a batch: header, length prefix
	// up to 5 bytes, attributes, 10-byte timestamp delta, 5-byte offset
	// delta, key and value, header count.
	const maxReq = 1000
	tests := []struct {
		name string
		rec  record.Record
		err  error
	}{
		{"small", record.Record{Value: value(0, 10)}, nil},
		{"just fits", record.Record{Value: value(0, maxReq-record.HeaderSize-2-1-10-5-1-2-1)}, nil},
		{"one byte over", record.Record{Value: value(0, maxReq-record.HeaderSize-2-1-10-5-1-2-1+1)}, ErrRecordTooLarge},
		{"huge value", record.Record{Value: value(0, 5000)}, ErrRecordTooLarge},
		{"huge key", record.Record{Key: value(0, 2000), Value: []byte("v")}, ErrRecordTooLarge},
		{"huge headers", record.Record{Headers: []record.RecordHeader{{Key: string(value(0, 1500))}}}, ErrRecordTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newAcc(t, Config{BatchSize: 500, MaxRequestSize: maxReq, BufferMemory: maxReq})
			_, err := a.Append(t0, tpA, tc.rec, "r")
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			wantPending := 1
			if tc.err != nil {
				wantPending = 0
			}
			if a.Pending() != wantPending || (wantPending == 0 && a.BufferedBytes() != 0) {
				t.Errorf("Pending %d, BufferedBytes %d", a.Pending(), a.BufferedBytes())
			}
		})
	}
}

func TestBufferFullAndFreed(t *testing.T) {
	const mem = 4096
	a := newAcc(t, Config{BatchSize: 1024, MaxRequestSize: 2048, BufferMemory: mem, Linger: time.Hour, DeliveryTimeout: 2 * time.Hour})
	tps := []TopicPartition{tpA, tpB, tpC}
	n := 0
	var err error
	for ; n < 1000; n++ {
		if _, err = a.Append(t0, tps[n%3], record.Record{Value: value(n, 100), Timestamp: 1}, n); err != nil {
			break
		}
	}
	if !errors.Is(err, ErrBufferFull) {
		t.Fatalf("after %d appends: err %v, want ErrBufferFull", n, err)
	}
	if a.Pending() != n || a.BufferedBytes() > mem || a.BufferedBytes() < mem-record.HeaderSize-size100 {
		t.Fatalf("Pending %d (want %d), BufferedBytes %d of %d", a.Pending(), n, a.BufferedBytes(), mem)
	}
	// Memory is short: the shell should act now, and every open batch
	// goes out without waiting for its linger.
	if at, ok := a.NextDeadline(); !ok || at.After(t0) {
		t.Errorf("NextDeadline after ErrBufferFull = %v, %v; want now", at, ok)
	}
	rb := readyCopy(a, t0)
	total := 0
	for _, b := range rb {
		total += b.Records
	}
	if total != n {
		t.Fatalf("Ready after ErrBufferFull sent %d of %d records in %d batches", total, n, len(rb))
	}
	// Still full until something completes.
	if _, err := a.Append(t0, tpA, record.Record{Value: value(0, 100)}, -1); !errors.Is(err, ErrBufferFull) {
		t.Fatalf("append before completion: %v", err)
	}
	before := a.BufferedBytes()
	ds := a.Complete(rb[0].ID, 0, nil)
	if len(ds) != rb[0].Records || a.BufferedBytes() >= before || a.Pending() != n-len(ds) {
		t.Fatalf("Complete: %d deliveries, BufferedBytes %d -> %d, Pending %d", len(ds), before, a.BufferedBytes(), a.Pending())
	}
	if _, err := a.Append(t0, tpA, record.Record{Value: value(0, 100)}, -1); err != nil {
		t.Fatalf("append after completion: %v", err)
	}
	for _, b := range rb[1:] {
		a.Complete(b.ID, 0, nil)
	}
	a.Flush()
	for _, b := range a.Ready(t0) {
		a.Complete(b.ID, 0, nil)
	}
	if a.Pending() != 0 || a.BufferedBytes() != 0 {
		t.Errorf("all completed: Pending %d, BufferedBytes %d", a.Pending(), a.BufferedBytes())
	}
}

func TestMaxInFlight(t *testing.T) {
	for _, max := range []int{1, 2, 5} {
		t.Run(fmt.Sprintf("max %d", max), func(t *testing.T) {
			// BatchSize 100 and 200-byte values: one record per batch.
			a := newAcc(t, Config{BatchSize: 100, MaxInFlight: max})
			for i := 0; i < 7; i++ {
				mustAppend(t, a, t0, tpA, i, 200)
			}
			mustAppend(t, a, t0, tpB, 100, 200)
			rb := readyCopy(a, t0)
			var sentA []int
			sentB := 0
			for _, b := range rb {
				if b.TopicPartition == tpA {
					sentA = append(sentA, reportInts(b)...)
				} else {
					sentB++
				}
			}
			if want := []int{0, 1, 2, 3, 4, 5, 6}[:min(max, 7)]; !slices.Equal(sentA, want) || sentB != 1 {
				t.Fatalf("sent %v on A (want %v) and %d on B", sentA, want, sentB)
			}
			// Blocked by the window: no deadline but the timeouts.
			if at, _ := a.NextDeadline(); at.Before(t0.Add(DefaultRequestTimeout)) {
				t.Errorf("NextDeadline t0+%v while blocked on the in-flight window", at.Sub(t0))
			}
			if again := a.Ready(t0.Add(time.Second)); len(again) != 0 {
				t.Fatalf("Ready with a full window sent %d", len(again))
			}
			// Each completion lets exactly one more go, in order.
			var inflight []BatchID
			for _, b := range rb {
				if b.TopicPartition == tpA {
					inflight = append(inflight, b.ID)
				}
			}
			for next := max; len(inflight) > 0; next++ {
				a.Complete(inflight[0], 0, nil)
				inflight = inflight[1:]
				more := a.Ready(t0.Add(time.Second))
				if next >= 7 {
					if len(more) != 0 {
						t.Fatalf("nothing left, Ready sent %d", len(more))
					}
					continue
				}
				if len(more) != 1 || reportInts(more[0])[0] != next {
					t.Fatalf("after a completion: %+v, want record %d", more, next)
				}
				inflight = append(inflight, more[0].ID)
			}
			if a.Pending() != 1 { // B's batch is still in flight
				t.Errorf("Pending %d, want 1", a.Pending())
			}
		})
	}
}

func TestRetryKeepsOrderAndBytes(t *testing.T) {
	errX := errors.New("NOT_LEADER_OR_FOLLOWER")
	// Without idempotence retries are pipelined; TestIdempotentRetryOrder
	// covers the idempotent rules.
	a := newAcc(t, Config{BatchSize: 100, MaxInFlight: 2, Idempotence: IdempotenceOff})
	for i := 0; i < 3; i++ { // batches A, B, C: one record each
		mustAppend(t, a, t0, tpA, i, 200)
	}
	first := readyCopy(a, t0)
	if len(first) != 2 {
		t.Fatalf("sent %d, want 2", len(first))
	}
	// A fails first, then B: the queue must be A, B, C (putting each
	// retry simply at the front would give B, A, C).
	t1 := ms(10)
	if ds := a.Retry(first[0].ID, t1, errX); ds != nil {
		t.Fatalf("Retry(A) failed records: %+v", ds)
	}
	if ds := a.Retry(first[1].ID, t1, errX); ds != nil {
		t.Fatalf("Retry(B) failed records: %+v", ds)
	}
	if rb := a.Ready(t1.Add(DefaultRetryBackoff - time.Nanosecond)); len(rb) != 0 {
		t.Fatalf("sent %d during the retry backoff (C must wait behind A)", len(rb))
	}
	if at, ok := a.NextDeadline(); !ok || !at.Equal(t1.Add(DefaultRetryBackoff)) {
		t.Fatalf("NextDeadline = t0+%v, want end of backoff t0+%v", at.Sub(t0), t1.Add(DefaultRetryBackoff).Sub(t0))
	}
	second := readyCopy(a, t1.Add(DefaultRetryBackoff))
	if len(second) != 2 {
		t.Fatalf("after backoff sent %d, want 2", len(second))
	}
	for i, b := range second {
		if got := reportInts(b)[0]; got != i {
			t.Errorf("resend %d carries record %d", i, got)
		}
		if b.Attempt != 2 || b.ID == first[i].ID || &b.Bytes[0] != &first[i].Bytes[0] || !bytes.Equal(b.Bytes, first[i].Bytes) {
			t.Errorf("resend %d: attempt %d, id %d (was %d), same bytes %v", i, b.Attempt, b.ID, first[i].ID, &b.Bytes[0] == &first[i].Bytes[0])
		}
	}
	// Answers to the first sends are stale now.
	if ds := a.Complete(first[0].ID, 5, nil); ds != nil {
		t.Errorf("stale Complete delivered %+v", ds)
	}
	if ds := a.Retry(first[1].ID, t1, errX); ds != nil {
		t.Errorf("stale Retry delivered %+v", ds)
	}
	if rb := a.Ready(t1.Add(time.Hour)); len(rb) != 0 {
		t.Errorf("stale Retry requeued a batch: Ready sent %d", len(rb))
	}
	dA := a.Complete(second[0].ID, 100, nil)
	dB := a.Complete(second[1].ID, 101, nil)
	if len(dA) != 1 || dA[0].Offset != 100 || dA[0].Report != 0 || len(dB) != 1 || dB[0].Offset != 101 || dB[0].Report != 1 {
		t.Errorf("deliveries %+v %+v", dA, dB)
	}
	third := a.Ready(t1.Add(DefaultRetryBackoff))
	if len(third) != 1 || reportInts(third[0])[0] != 2 || third[0].Attempt != 1 {
		t.Errorf("C: %+v", third)
	}
}

func TestRetryWithOneInFlightBlocksLaterBatches(t *testing.T) {
	a := newAcc(t, Config{BatchSize: 100, MaxInFlight: 1})
	for i := 0; i < 3; i++ {
		mustAppend(t, a, t0, tpA, i, 200)
	}
	var order []int
	rb := readyCopy(a, t0)
	a.Retry(rb[0].ID, t0, errors.New("boom"))
	now := t0
	for len(order) < 3 {
		now = now.Add(10 * time.Millisecond)
		for _, b := range readyCopy(a, now) {
			order = append(order, reportInts(b)...)
			a.Complete(b.ID, int64(len(order)), nil)
		}
	}
	if !slices.Equal(order, []int{0, 1, 2}) {
		t.Errorf("delivery order %v", order)
	}
	if now.Before(t0.Add(DefaultRetryBackoff)) {
		t.Errorf("retried batch went out before its backoff")
	}
}

func TestDeliveryTimeout(t *testing.T) {
	cfg := Config{Linger: -1, RequestTimeout: 500 * time.Millisecond, DeliveryTimeout: time.Second}
	errX := errors.New("LEADER_NOT_AVAILABLE")

	t.Run("retry after the deadline fails", func(t *testing.T) {
		a := newAcc(t, cfg)
		mustAppend(t, a, t0, tpA, 0, 10)
		rb := readyCopy(a, t0)
		if ds := a.Retry(rb[0].ID, ms(999), errX); ds != nil {
			t.Fatalf("retry before the deadline failed: %+v", ds)
		}
		rb = readyCopy(a, ms(1099))
		ds := a.Retry(rb[0].ID, ms(1100), errX)
		if len(ds) != 1 || !errors.Is(ds[0].Err, ErrDeliveryTimeout) || !errors.Is(ds[0].Err, errX) || ds[0].Offset != -1 || ds[0].Report != 0 {
			t.Fatalf("deliveries %+v", ds)
		}
		if a.Pending() != 0 || a.BufferedBytes() != 0 {
			t.Errorf("Pending %d, BufferedBytes %d", a.Pending(), a.BufferedBytes())
		}
	})

	t.Run("paused partition expires in the queue", func(t *testing.T) {
		a := newAcc(t, cfg)
		a.Pause(tpA)
		mustAppend(t, a, t0, tpA, 0, 10)
		mustAppend(t, a, t0, tpB, 1, 10)
		rb := readyCopy(a, t0)
		if len(rb) != 1 || rb[0].TopicPartition != tpB {
			t.Fatalf("Ready with A paused: %+v", rb)
		}
		// B's request timeout comes first, then A's delivery timeout.
		if at, _ := a.NextDeadline(); !at.Equal(ms(500)) {
			t.Fatalf("NextDeadline t0+%v", at.Sub(t0))
		}
		a.Complete(rb[0].ID, 0, nil)
		if at, _ := a.NextDeadline(); !at.Equal(ms(1000)) {
			t.Fatalf("NextDeadline t0+%v, want A's delivery timeout", at.Sub(t0))
		}
		if ds := a.Expire(ms(999)); ds != nil {
			t.Fatalf("expired early: %+v", ds)
		}
		ds := a.Expire(ms(1000))
		if len(ds) != 1 || ds[0].TopicPartition != tpA || !errors.Is(ds[0].Err, ErrDeliveryTimeout) {
			t.Fatalf("deliveries %+v", ds)
		}
		if _, ok := a.NextDeadline(); ok || a.Pending() != 0 || a.BufferedBytes() != 0 {
			t.Errorf("after expiry: deadline %v, Pending %d, BufferedBytes %d", ok, a.Pending(), a.BufferedBytes())
		}
	})

	t.Run("open batch expires", func(t *testing.T) {
		a := newAcc(t, cfg)
		mustAppend(t, a, t0, tpA, 0, 10)
		ds := a.Expire(ms(1000))
		if len(ds) != 1 || !errors.Is(ds[0].Err, ErrDeliveryTimeout) {
			t.Fatalf("deliveries %+v", ds)
		}
		// The partition works on.
		mustAppend(t, a, ms(1000), tpA, 1, 10)
		if rb := a.Ready(ms(1000)); len(rb) != 1 || reportInts(rb[0])[0] != 1 {
			t.Fatalf("Ready after expiry: %+v", rb)
		}
	})

	t.Run("request timeout retries, then fails", func(t *testing.T) {
		a := newAcc(t, cfg)
		mustAppend(t, a, t0, tpA, 0, 10)
		rb := readyCopy(a, t0)
		if at, _ := a.NextDeadline(); !at.Equal(ms(500)) {
			t.Fatalf("NextDeadline t0+%v, want the request timeout", at.Sub(t0))
		}
		if ds := a.Expire(ms(500)); ds != nil {
			t.Fatalf("request timeout failed records: %+v", ds)
		}
		if ds := a.Complete(rb[0].ID, 7, nil); ds != nil {
			t.Fatalf("late answer to the timed-out send delivered %+v", ds)
		}
		rb2 := readyCopy(a, ms(600))
		if len(rb2) != 1 || rb2[0].Attempt != 2 {
			t.Fatalf("resend: %+v", rb2)
		}
		ds := a.Expire(ms(1100))
		if len(ds) != 1 || !errors.Is(ds[0].Err, ErrDeliveryTimeout) || !errors.Is(ds[0].Err, ErrRequestTimeout) {
			t.Fatalf("deliveries %+v", ds)
		}
	})
}

func TestOffsetsAndErrors(t *testing.T) {
	errFatal := errors.New("INVALID_RECORD")
	tests := []struct {
		name string
		base int64
		err  error
		want func(i int) int64
	}{
		{"offsets base+i", 1000, nil, func(i int) int64 { return 1000 + int64(i) }},
		{"base zero", 0, nil, func(i int) int64 { return int64(i) }},
		{"acks=0 unknown base", -1, nil, func(int) int64 { return -1 }},
		{"non-retriable error", -1, errFatal, func(int) int64 { return -1 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newAcc(t, Config{})
			for i := 0; i < 50; i++ {
				mustAppend(t, a, t0, tpA, i, 100)
			}
			a.Flush()
			rb := a.Ready(t0)
			if len(rb) != 1 {
				t.Fatalf("%d batches", len(rb))
			}
			ds := a.Complete(rb[0].ID, tc.base, tc.err)
			if got := deliveredInts(ds); !slices.Equal(got, seq(50)) {
				t.Fatalf("delivery order %v", got)
			}
			for i, d := range ds {
				if d.Offset != tc.want(i) || !errors.Is(d.Err, tc.err) || (tc.err == nil) != (d.Err == nil) || d.TopicPartition != tpA {
					t.Errorf("delivery %d: %+v", i, d)
				}
			}
			if a.Pending() != 0 || a.BufferedBytes() != 0 {
				t.Errorf("Pending %d, BufferedBytes %d", a.Pending(), a.BufferedBytes())
			}
			if ds := a.Complete(rb[0].ID, tc.base, nil); ds != nil {
				t.Errorf("second Complete delivered %d", len(ds))
			}
		})
	}
}

// seq returns 0..n-1.
func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func TestFlush(t *testing.T) {
	a := newAcc(t, Config{Linger: time.Minute, LingerWhenIdle: true})
	for i, tp := range []TopicPartition{tpA, tpB, tpC} {
		mustAppend(t, a, t0, tp, i, 100)
	}
	if rb := a.Ready(t0); len(rb) != 0 {
		t.Fatalf("Ready before linger: %d", len(rb))
	}
	a.Flush()
	rb := readyCopy(a, t0)
	if len(rb) != 3 || a.Pending() != 3 {
		t.Fatalf("after Flush: %d batches, Pending %d", len(rb), a.Pending())
	}
	// Later records linger again.
	if res := mustAppend(t, a, t0, tpA, 3, 100); !res.NewBatch {
		t.Errorf("append after Flush joined a flushed batch")
	}
	if got := a.Ready(ms(1)); len(got) != 0 {
		t.Errorf("new batch sent before its linger")
	}
}

func TestPauseResume(t *testing.T) {
	a := newAcc(t, Config{Linger: -1})
	a.Pause(tpA)
	a.Pause(tpA)
	mustAppend(t, a, t0, tpA, 0, 10)
	mustAppend(t, a, t0, tpB, 1, 10)
	if rb := a.Ready(t0); len(rb) != 1 || rb[0].TopicPartition != tpB {
		t.Fatalf("paused A sent: %+v", rb)
	}
	// Past its linger, a paused partition's batch stays open and fills.
	mustAppend(t, a, ms(1), tpA, 2, 10)
	a.Ready(ms(1))
	a.Resume(tpA)
	a.Resume(tpC) // unknown partition: nothing happens
	rb := readyCopy(a, ms(2))
	if len(rb) != 1 || !slices.Equal(reportInts(rb[0]), []int{0, 2}) {
		t.Fatalf("after Resume: %+v", rb)
	}
}

// TestLingerOnlyWhileInFlight: by default a batch lingers only while the
// producer has a batch in flight, on any partition; once the last answer
// arrives, the batches gathered meanwhile are sent at once, linger or not
// (Nagle's algorithm), and nobody is woken early while they may wait.
func TestLingerOnlyWhileInFlight(t *testing.T) {
	a := newAcc(t, Config{Linger: 5 * time.Millisecond})
	mustAppend(t, a, t0, tpA, 0, 100)
	if at, ok := a.NextDeadline(); !ok || at.After(t0) {
		t.Fatalf("idle partition: NextDeadline = t0+%v, %v; want now", at.Sub(t0), ok)
	}
	first := readyCopy(a, t0)
	if len(first) != 1 || first[0].Records != 1 {
		t.Fatalf("idle partition: Ready sent %+v, want the record at once", first)
	}
	for i := 1; i <= 3; i++ {
		mustAppend(t, a, ms(1), tpA, i, 100)
	}
	mustAppend(t, a, ms(1), tpB, 10, 100) // B has nothing in flight, A has
	if at, ok := a.NextDeadline(); !ok || !at.Equal(ms(6)) {
		t.Fatalf("busy partition: NextDeadline = t0+%v, %v; want its linger, t0+6ms", at.Sub(t0), ok)
	}
	if rb := a.Ready(ms(2)); len(rb) != 0 {
		t.Fatalf("busy partition sent before its linger: %+v", rb)
	}
	if ds := a.Complete(first[0].ID, 0, nil); len(ds) != 1 {
		t.Fatalf("Complete: %+v", ds)
	}
	if at, ok := a.NextDeadline(); !ok || at.After(ms(2)) {
		t.Fatalf("producer idle again: NextDeadline = t0+%v, %v; want now", at.Sub(t0), ok)
	}
	rb := readyCopy(a, ms(2))
	if len(rb) != 2 || !slices.Equal(reportInts(rb[0]), []int{1, 2, 3}) || !slices.Equal(reportInts(rb[1]), []int{10}) {
		t.Fatalf("producer idle again: Ready sent %+v, want records 1-3 and 10 at once", rb)
	}
	a.Complete(rb[1].ID, 0, nil)
	// A partition with one in flight and room for more still lingers.
	mustAppend(t, a, ms(3), tpA, 4, 100)
	if rb := a.Ready(ms(7)); len(rb) != 0 {
		t.Fatalf("sent before linger with a batch in flight: %+v", rb)
	}
	if rb := a.Ready(ms(8)); len(rb) != 1 || rb[0].Records != 1 {
		t.Fatalf("not sent at its linger: %+v", rb)
	}
}

// TestBuilderPoolBounded: builders grown by large batches are reused while
// the builders' capacity fits in BufferMemory, and dropped beyond it, so
// partitions that take a builder once grown to a full batch for a small
// one do not make the producer keep more than BufferMemory in builders.
func TestBuilderPoolBounded(t *testing.T) {
	const mem, batch = 1 << 20, 256 << 10
	a := newAcc(t, Config{BatchSize: batch, MaxRequestSize: batch, BufferMemory: mem, Linger: time.Hour, LingerWhenIdle: true, DeliveryTimeout: 2 * time.Hour})
	tp := func(p int) TopicPartition { return TopicPartition{Topic: "many", Partition: int32(p)} }
	fill := func(from int) { // 200 KiB on each of 4 partitions, sent and acknowledged
		for p := from; p < from+4; p++ {
			for i := 0; i < 200; i++ {
				mustAppend(t, a, t0, tp(p), i, 1000)
			}
		}
		a.Flush()
		for _, b := range readyCopy(a, t0) {
			a.Complete(b.ID, 0, nil)
		}
	}
	held := func() (free, open int) {
		for _, pb := range a.freeBuilders {
			free += pb.cap
		}
		for _, p := range a.parts {
			if p.open != nil {
				open += p.open.bcap
			}
		}
		return free, open
	}
	fill(0)
	if free, _ := held(); free < 4*200*1000 || len(a.freeBuilders) != 4 {
		t.Fatalf("after the first fill: %d builders free, %d bytes; want the 4 grown ones kept", len(a.freeBuilders), free)
	}
	for p := 4; p < 8; p++ { // small batches, kept open, on the grown builders
		mustAppend(t, a, t0, tp(p), 0, 10)
	}
	fill(8)
	free, open := held()
	if free+open > mem || free+open != a.builderBytes {
		t.Fatalf("builders hold %d bytes free and %d open (counted %d); want at most buffer memory %d", free, open, a.builderBytes, mem)
	}
	if len(a.freeBuilders) == 0 {
		t.Errorf("no builder kept for reuse")
	}
}

// A partition that cannot send (paused, or its in-flight limit reached)
// keeps filling its open batch up to BatchSize instead of closing one
// batch per linger, and does not ask to be woken for that linger: after
// a pause it sends a few full batches, not a long queue of small ones.
func TestBlockedPartitionFillsBatches(t *testing.T) {
	const rec = 10
	for _, blocked := range []string{"paused", "in flight"} {
		t.Run(blocked, func(t *testing.T) {
			a := newAcc(t, Config{Linger: 5 * time.Millisecond, BatchSize: 2000, MaxInFlight: 1})
			if blocked == "paused" {
				a.Pause(tpA)
			} else {
				mustAppend(t, a, t0, tpA, -1, rec)
				if rb := a.Ready(ms(5)); len(rb) != 1 {
					t.Fatalf("first batch not sent: %+v", rb)
				}
			}
			n := 0
			for tick := 10; tick <= 1000; tick += 10 { // 100 records, one every 10 ms
				mustAppend(t, a, ms(tick), tpA, n, rec)
				n++
				for _, now := range []time.Time{ms(tick), ms(tick + 6)} { // on the append, and past its linger
					if rb := a.Ready(now); len(rb) != 0 {
						t.Fatalf("a blocked partition sent %+v", rb)
					}
					if at, ok := a.NextDeadline(); ok && !at.After(now) {
						t.Fatalf("wake-up asked for %v at %v: a busy loop", at.Sub(t0), now.Sub(t0))
					}
				}
			}
			var queued []int
			open := 0
			if b := a.lookup(tpA).open; b != nil {
				open = len(b.reports)
			}
			sum := open
			for _, b := range a.lookup(tpA).queue {
				queued = append(queued, len(b.reports))
				sum += len(b.reports)
			}
			if sum != n {
				t.Fatalf("%d records buffered, want %d", sum, n)
			}
			for i, c := range queued {
				if c < 50 {
					t.Errorf("queued batch %d holds %d records: closed before it was full (queue %v, open %d)", i, c, queued, open)
				}
			}
		})
	}
}

func TestAbort(t *testing.T) {
	a := newAcc(t, Config{BatchSize: 100, MaxInFlight: 1, Linger: time.Minute, LingerWhenIdle: true})
	mustAppend(t, a, t0, tpA, 0, 200) // in flight
	mustAppend(t, a, t0, tpA, 1, 200) // queued
	mustAppend(t, a, t0, tpB, 2, 10)  // open
	rb := readyCopy(a, t0)
	if len(rb) != 1 {
		t.Fatalf("sent %d", len(rb))
	}
	cause := errors.New("shutting down")
	ds := a.Abort(cause)
	if got := deliveredInts(ds); !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("aborted %v", got)
	}
	for _, d := range ds {
		if !errors.Is(d.Err, cause) || d.Offset != -1 {
			t.Errorf("delivery %+v", d)
		}
	}
	if a.Pending() != 0 || a.BufferedBytes() != 0 {
		t.Errorf("Pending %d, BufferedBytes %d", a.Pending(), a.BufferedBytes())
	}
	if ds := a.Complete(rb[0].ID, 0, nil); ds != nil {
		t.Errorf("Complete after Abort delivered %+v", ds)
	}
	if ds := a.Abort(nil); len(ds) != 0 {
		t.Errorf("second Abort: %+v", ds)
	}
	mustAppend(t, a, t0, tpA, 3, 10)
	if ds := a.Abort(nil); len(ds) != 1 || !errors.Is(ds[0].Err, ErrAborted) {
		t.Errorf("Abort(nil): %+v", ds)
	}
}

func TestContentsAllCodecs(t *testing.T) {
	recs := []record.Record{
		{Key: []byte("k1"), Value: []byte("v1"), Timestamp: 1_700_000_000_123},
		{Key: []byte{}, Value: nil, Timestamp: 1_700_000_000_100}, // out of order
		{Value: bytes.Repeat([]byte("compressible "), 100), Headers: []record.RecordHeader{
			{Key: "trace", Value: []byte("abc")}, {Key: "null", Value: nil},
		}, Timestamp: 1_700_000_000_200},
		{Value: []byte("no timestamp: set to now")},
	}
	for _, c := range codecs {
		t.Run(c.String(), func(t *testing.T) {
			a := newAcc(t, Config{Compression: c})
			for i, r := range recs {
				if _, err := a.Append(t0, tpA, r, i); err != nil {
					t.Fatal(err)
				}
			}
			rb := a.Ready(t0.Add(DefaultLinger))
			if len(rb) != 1 {
				t.Fatalf("%d batches", len(rb))
			}
			h, err := record.Validate(rb[0].Bytes)
			if err != nil || h.Compression() != c || h.RecordCount != int32(len(recs)) || h.BaseOffset != 0 || h.LeaderEpoch != -1 ||
				h.ProducerID != testPID || h.ProducerEpoch != 0 || h.BaseSequence != 0 {
				t.Fatalf("header %+v, %v", h, err)
			}
			got := decode(t, rb[0])
			for i, r := range got {
				want := recs[i]
				if want.Timestamp == 0 {
					want.Timestamp = t0.UnixMilli()
				}
				if !bytes.Equal(r.Key, want.Key) || (r.Key == nil) != (want.Key == nil) ||
					!bytes.Equal(r.Value, want.Value) || (r.Value == nil) != (want.Value == nil) ||
					r.Timestamp != want.Timestamp || r.Offset != int64(i) || len(r.Headers) != len(want.Headers) {
					t.Errorf("record %d: got %+v, want %+v", i, r, want)
				}
				for j, hd := range want.Headers {
					if r.Headers[j].Key != hd.Key || !bytes.Equal(r.Headers[j].Value, hd.Value) || (r.Headers[j].Value == nil) != (hd.Value == nil) {
						t.Errorf("record %d header %d: %+v", i, j, r.Headers[j])
					}
				}
			}
		})
	}
}

func TestAppendCopiesCallerBuffers(t *testing.T) {
	a := newAcc(t, Config{})
	buf := []byte("original")
	if _, err := a.Append(t0, tpA, record.Record{Value: buf}, 0); err != nil {
		t.Fatal(err)
	}
	copy(buf, "XXXXXXXX")
	a.Flush()
	if got := decode(t, a.Ready(t0)[0])[0].Value; string(got) != "original" {
		t.Errorf("batch holds %q after the caller reused its buffer", got)
	}
}

func TestAppendDoesNotAllocate(t *testing.T) {
	a := newAcc(t, Config{Linger: time.Hour, DeliveryTimeout: 2 * time.Hour})
	v := value(0, 100)
	report := new(int) // a pointer converts to any without allocating
	// Warm up: one full batch through its whole life, so a builder, a
	// batch and a reports slice of full size wait in the free lists.
	for {
		res, err := a.Append(t0, tpA, record.Record{Value: v, Timestamp: 1}, report)
		if err != nil {
			t.Fatal(err)
		}
		if res.BatchFull {
			break
		}
	}
	for _, b := range a.Ready(t0) {
		a.Complete(b.ID, 0, nil)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := a.Append(t0, tpA, record.Record{Value: v, Timestamp: 1}, report); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Append allocates %v times per record in steady state, want 0", allocs)
	}
}

func TestConfig(t *testing.T) {
	got := newAcc(t, Config{}).Config()
	want := Config{
		BatchSize: DefaultBatchSize, Linger: DefaultLinger, MaxRequestSize: DefaultMaxRequestSize,
		MaxInFlight: DefaultMaxInFlight, BufferMemory: DefaultBufferMemory, RetryBackoff: DefaultRetryBackoff,
		DeliveryTimeout: DefaultDeliveryTimeout, RequestTimeout: DefaultRequestTimeout, Idempotence: IdempotenceOn,
	}
	if got != want {
		t.Errorf("defaults %+v, want %+v", got, want)
	}
	if c := newAcc(t, Config{MaxInFlight: MaxInFlightIdempotent + 1}).Config(); c.Idempotence != IdempotenceOff {
		t.Errorf("default idempotence with max in flight %d: %v, want off", c.MaxInFlight, c.Idempotence)
	}
	if c := newAcc(t, Config{Linger: -1, RetryBackoff: -1}).Config(); c.Linger != 0 || c.RetryBackoff != 0 {
		t.Errorf("negative linger/backoff gave %v, %v; want 0, 0", c.Linger, c.RetryBackoff)
	}
	bad := []struct {
		name string
		cfg  Config
	}{
		{"negative batch size", Config{BatchSize: -1}},
		{"batch size above max request size", Config{BatchSize: 2 << 20}},
		{"tiny max request size", Config{MaxRequestSize: record.HeaderSize, BatchSize: 10}},
		{"buffer below max request size", Config{BufferMemory: 1 << 10}},
		{"negative max in flight", Config{MaxInFlight: -1}},
		{"delivery timeout below linger + request timeout", Config{DeliveryTimeout: time.Second}},
		{"negative request timeout", Config{RequestTimeout: -1}},
		{"unknown codec", Config{Compression: 7}},
		{"idempotent with 6 in flight", Config{Idempotence: IdempotenceOn, MaxInFlight: MaxInFlightIdempotent + 1}},
		{"unknown idempotence", Config{Idempotence: 7}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewAccumulator(tc.cfg); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("err = %v, want ErrInvalidConfig", err)
			}
			if _, err := NewCore(tc.cfg, nil); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("NewCore err = %v, want ErrInvalidConfig", err)
			}
		})
	}
}

func TestStatsCountSendsRetriesAndOutcomes(t *testing.T) {
	a := newAcc(t, Config{Linger: -1, RetryBackoff: -1})
	mustAppend(t, a, t0, tpA, 0, 10)
	mustAppend(t, a, t0, tpB, 1, 10)
	rb := readyCopy(a, t0)
	if st := a.Stats(); st.BatchesSent != 2 || st.InFlight != 2 || st.Pending != 2 || st.BufferedBytes == 0 {
		t.Fatalf("after sending two batches: %+v", st)
	}
	a.Retry(rb[0].ID, t0, errors.New("not leader"))
	a.Complete(rb[1].ID, 7, nil)
	again := readyCopy(a, ms(1))
	a.Complete(again[0].ID, -1, errors.New("fatal"))
	want := Stats{BatchesSent: 3, Retries: 1, RecordsDelivered: 1, RecordsFailed: 1}
	if st := a.Stats(); st != want {
		t.Fatalf("stats %+v, want %+v", st, want)
	}
}

// TestRecycleSent: with RecycleSent, the bytes of a batch delivered after
// one send carry a later batch; a batch sent twice, and any batch without
// RecycleSent, never lends its bytes (an earlier send may still hold
// them). Uncompressed batches are encoded in place in their builder's
// buffer, and a builder closing a batch takes its next buffer from the
// recycled ones, so a delivered batch's bytes carry the batch after the
// next one of its partition.
func TestRecycleSent(t *testing.T) {
	sendOne := func(a *Accumulator, i int) ReadyBatch {
		t.Helper()
		mustAppend(t, a, t0, tpA, i, 200)
		rb := readyCopy(a, t0)
		if len(rb) != 1 {
			t.Fatalf("%d batches ready, want 1", len(rb))
		}
		return rb[0]
	}
	sameBuffer := func(x, y []byte) bool { return &x[0] == &y[0] }

	a := newAcc(t, Config{BatchSize: 100, MaxInFlight: 1, RecycleSent: true})
	// The first batch is in the buffer its new builder grew, not a frame
	// (internal/frame): not kept, so that frames take its place.
	first := sendOne(a, 1)
	a.Complete(first.ID, 0, nil)
	second := sendOne(a, 2)
	if sameBuffer(first.Bytes, second.Bytes) {
		t.Fatal("a builder-grown buffer was kept for a later batch")
	}
	a.Complete(second.ID, 1, nil)
	third := sendOne(a, 3)
	if sameBuffer(first.Bytes, third.Bytes) {
		t.Fatal("a builder-grown buffer was kept for a later batch")
	}
	a.Complete(third.ID, 2, nil)
	third = sendOne(a, 4)
	if !sameBuffer(second.Bytes, third.Bytes) {
		t.Fatal("a batch delivered after one send did not lend its bytes to a later one")
	}
	if got := decode(t, third); string(got[0].Value) != string(value(4, 200)) {
		t.Fatalf("recycled batch holds %q", got[0].Value)
	}
	// Sent twice: not reused.
	a.Retry(third.ID, t0, errors.New("timeout"))
	again := readyCopy(a, t0.Add(time.Hour))
	if len(again) != 1 || !sameBuffer(again[0].Bytes, third.Bytes) {
		t.Fatalf("retry sent %d batches, want the same bytes again", len(again))
	}
	a.Complete(again[0].ID, 3, nil)
	for i := 5; i < 9; i++ {
		next := sendOne(a, i)
		if sameBuffer(next.Bytes, third.Bytes) {
			t.Fatalf("the bytes of a batch sent twice were reused by batch %d", i)
		}
		a.Complete(next.ID, int64(i), nil)
	}

	off := newAcc(t, Config{BatchSize: 100, MaxInFlight: 1})
	b1 := sendOne(off, 1)
	off.Complete(b1.ID, 0, nil)
	for i := 2; i < 6; i++ {
		next := sendOne(off, i)
		if sameBuffer(b1.Bytes, next.Bytes) {
			t.Fatalf("bytes reused without RecycleSent by batch %d", i)
		}
		off.Complete(next.ID, int64(i), nil)
	}
}

// varintSize agrees with encoding/binary's zigzag varint at every length
// boundary and at the extremes.
func TestVarintSize(t *testing.T) {
	vs := []int64{0, -1, 1, math.MinInt64, math.MaxInt64}
	for shift := 1; shift < 63; shift++ {
		for _, d := range []int64{-1, 0, 1} {
			vs = append(vs, int64(1)<<shift+d, -(int64(1)<<shift)+d)
		}
	}
	var buf [binary.MaxVarintLen64]byte
	for _, v := range vs {
		if got, want := varintSize(v), binary.PutVarint(buf[:], v); got != want {
			t.Errorf("varintSize(%d) = %d, want %d", v, got, want)
		}
	}
}

// CompleteAppend gives the deliveries Complete gives, after what dst
// holds; an id not in flight leaves dst as it is.
func TestCompleteAppend(t *testing.T) {
	a := newAcc(t, Config{BatchSize: 1 << 20, Linger: time.Hour, DeliveryTimeout: 2 * time.Hour})
	for i := 0; i < 10; i++ {
		mustAppend(t, a, t0, tpA, i, 10)
		mustAppend(t, a, t0, tpB, 100+i, 10)
	}
	a.Flush()
	ready := readyCopy(a, t0)
	if len(ready) != 2 {
		t.Fatalf("%d batches ready, want 2", len(ready))
	}
	want := a.Complete(ready[0].ID, 40, nil)
	dst := []Delivery{{Offset: -7}}
	got := a.CompleteAppend(dst, ready[1].ID, 40, nil)
	if len(got) != 11 || got[0].Offset != -7 {
		t.Fatalf("CompleteAppend returned %d deliveries starting %+v, want dst's one and 10", len(got), got[0])
	}
	for i, d := range got[1:] {
		w := want[i]
		if d.Offset != w.Offset || d.Offset != 40+int64(i) || d.Err != nil || d.TopicPartition != tpB || d.Report != 100+i {
			t.Fatalf("delivery %d: %+v; Complete's for the other batch: %+v", i, d, w)
		}
	}
	if again := a.CompleteAppend(got[:1], ready[1].ID, 40, nil); len(again) != 1 {
		t.Fatalf("completing again appended %d deliveries", len(again)-1)
	}
}
