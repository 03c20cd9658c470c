// This file tests the Accumulator's idempotent-producer rules on a fake
// clock: sequence assignment and wrap-around, retries in sequence order with
// several batches in flight, the sequence errors, re-stamping after a new
// producer id, and a randomized run against a deduplicating fake leader.

package producer

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage/record"
)

var (
	errNotLeader  = messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER.Err("test")
	errOutOfOrder = messages.ErrorCode_ERROR_CODE_OUT_OF_ORDER_SEQUENCE_NUMBER.Err("test")
	errEpoch      = messages.ErrorCode_ERROR_CODE_INVALID_PRODUCER_EPOCH.Err("test")
	errUnknownPID = messages.ErrorCode_ERROR_CODE_UNKNOWN_PRODUCER_ID.Err("test")
)

// oneRecordBatches appends records from..from+n-1 to tp, 200 bytes each,
// into an Accumulator whose BatchSize is 100: each record closes a batch of
// its own.
func oneRecordBatches(t testing.TB, a *Accumulator, now time.Time, tp TopicPartition, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		mustAppend(t, a, now, tp, i, 200)
	}
}

// checkStamp fails unless rb's header carries its producer fields and they
// are pid, epoch 0 and seq.
func checkStamp(t testing.TB, rb ReadyBatch, pid int64, seq int32) {
	t.Helper()
	h, err := record.Validate(rb.Bytes)
	if err != nil {
		t.Fatalf("batch %d: %v", rb.ID, err)
	}
	if h.ProducerID != rb.ProducerID || h.ProducerEpoch != rb.ProducerEpoch || h.BaseSequence != rb.BaseSequence {
		t.Fatalf("batch %d: header pid %d epoch %d seq %d, ReadyBatch says %d %d %d", rb.ID,
			h.ProducerID, h.ProducerEpoch, h.BaseSequence, rb.ProducerID, rb.ProducerEpoch, rb.BaseSequence)
	}
	if rb.ProducerID != pid || rb.ProducerEpoch != 0 || rb.BaseSequence != seq {
		t.Fatalf("batch %d (records %v): pid %d epoch %d seq %d, want pid %d epoch 0 seq %d", rb.ID, reportInts(rb),
			rb.ProducerID, rb.ProducerEpoch, rb.BaseSequence, pid, seq)
	}
}

// values returns the values of records from..from+n-1 of size bytes, as
// mustAppend makes them.
func values(from, n, size int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = string(value(from+i, size))
	}
	return out
}

// sentInts returns the first report of each ready batch.
func sentInts(rbs []ReadyBatch) []int {
	out := make([]int, len(rbs))
	for i, rb := range rbs {
		out[i] = reportInts(rb)[0]
	}
	return out
}

func TestSeqAdd(t *testing.T) {
	tests := []struct {
		seq  int32
		n    int
		want int32
	}{
		{0, 1, 1},
		{5, 10, 15},
		{math.MaxInt32 - 1, 1, math.MaxInt32},
		{math.MaxInt32, 1, 0},
		{math.MaxInt32 - 1, 3, 1},
		{math.MaxInt32, math.MaxInt32, math.MaxInt32 - 1},
	}
	for _, tc := range tests {
		if got := seqAdd(tc.seq, tc.n); got != tc.want {
			t.Errorf("seqAdd(%d, %d) = %d, want %d", tc.seq, tc.n, got, tc.want)
		}
	}
}

func TestSequenceAssignment(t *testing.T) {
	a, err := NewAccumulator(Config{Linger: time.Hour, DeliveryTimeout: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !a.NeedProducerID() {
		t.Fatal("a new idempotent Accumulator does not ask for a producer id")
	}
	// Batches of 3, 1 and 2 records on tpA and one of 4 on tpB.
	for i, n := range []int{3, 1, 2} {
		for j := 0; j < n; j++ {
			mustAppend(t, a, t0, tpA, 10*i+j, 10)
		}
		a.Flush()
	}
	for j := 0; j < 4; j++ {
		mustAppend(t, a, t0, tpB, 100+j, 10)
	}
	a.Flush()
	if rb := a.Ready(t0); len(rb) != 0 {
		t.Fatalf("sent %d batches without a producer id", len(rb))
	}
	if at, ok := a.NextDeadline(); !ok || !at.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("NextDeadline without a producer id = t0+%v, %v; want only the delivery timeout", at.Sub(t0), ok)
	}
	a.SetProducerID(7, 0)
	if a.NeedProducerID() {
		t.Fatal("still asks for a producer id")
	}
	rb := readyCopy(a, t0)
	if len(rb) != 4 {
		t.Fatalf("sent %d batches, want 4", len(rb))
	}
	for i, want := range []int32{0, 3, 4, 0} {
		checkStamp(t, rb[i], 7, want)
	}
	// A retry keeps its stamp and its bytes.
	if ds := a.Retry(rb[2].ID, t0, errNotLeader); ds != nil {
		t.Fatalf("Retry: %+v", ds)
	}
	a.Complete(rb[0].ID, 0, nil)
	a.Complete(rb[1].ID, 3, nil)
	again := readyCopy(a, t0.Add(DefaultRetryBackoff))
	if len(again) != 1 || &again[0].Bytes[0] != &rb[2].Bytes[0] {
		t.Fatalf("retry: %+v", again)
	}
	checkStamp(t, again[0], 7, 4)
	mustAppend(t, a, t0, tpA, 99, 10)
	a.Flush()
	next := readyCopy(a, t0.Add(DefaultRetryBackoff))
	if len(next) != 1 {
		t.Fatalf("sent %d, want the new batch", len(next))
	}
	checkStamp(t, next[0], 7, 6)

	off := newAcc(t, Config{Idempotence: IdempotenceOff})
	if off.NeedProducerID() {
		t.Error("a plain Accumulator asks for a producer id")
	}
	off.SetProducerID(7, 0) // ignored
	mustAppend(t, off, t0, tpA, 0, 10)
	off.Flush()
	rb = off.Ready(t0)
	if h, err := record.Validate(rb[0].Bytes); err != nil || h.ProducerID != -1 || h.BaseSequence != -1 || rb[0].ProducerID != -1 || rb[0].BaseSequence != -1 {
		t.Errorf("plain batch: header %+v, %v; ReadyBatch %+v", h, err, rb[0])
	}
}

func TestSequenceWrap(t *testing.T) {
	tests := []struct {
		name  string
		start int32   // the partition's next sequence
		sizes []int   // records per batch
		want  []int32 // base sequences
		next  int32
	}{
		{"below", math.MaxInt32 - 10, []int{3, 3}, []int32{math.MaxInt32 - 10, math.MaxInt32 - 7}, math.MaxInt32 - 4},
		{"last sequence fits exactly", math.MaxInt32 - 2, []int{3, 1}, []int32{math.MaxInt32 - 2, 0}, 1},
		{"batch straddles", math.MaxInt32 - 1, []int{4, 2}, []int32{math.MaxInt32 - 1, 2}, 4},
		{"starts at MaxInt32", math.MaxInt32, []int{1, 1}, []int32{math.MaxInt32, 0}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newAcc(t, Config{Linger: time.Hour, DeliveryTimeout: 2 * time.Hour})
			mustAppend(t, a, t0, tpA, 0, 10)
			a.Flush()
			a.Complete(a.Ready(t0)[0].ID, 0, nil)
			a.lookup(tpA).nextSeq = tc.start
			for i, n := range tc.sizes {
				for j := 0; j < n; j++ {
					mustAppend(t, a, t0, tpA, 100*i+j, 10)
				}
				a.Flush()
			}
			rb := readyCopy(a, t0)
			if len(rb) != len(tc.want) {
				t.Fatalf("sent %d batches", len(rb))
			}
			for i, want := range tc.want {
				checkStamp(t, rb[i], testPID, want)
			}
			if got := a.lookup(tpA).nextSeq; got != tc.next {
				t.Errorf("next sequence %d, want %d", got, tc.next)
			}
		})
	}
}

// TestIdempotentRetryOrder: five batches in flight, the 2nd fails
// retriably; the leader refuses the 3rd to 5th as out of order. All four
// are sent again one at a time, in sequence order, with their bytes, and
// the 1st is not overtaken.
func TestIdempotentRetryOrder(t *testing.T) {
	a := newAcc(t, Config{BatchSize: 100, MaxInFlight: 5, DeliveryTimeout: time.Hour})
	leader := newFakeLog()
	oneRecordBatches(t, a, t0, tpA, 0, 7)
	first := readyCopy(a, t0)
	if got := sentInts(first); !slices.Equal(got, []int{0, 1, 2, 3, 4}) {
		t.Fatalf("first sends %v", got)
	}
	now := ms(1)
	// The leader appends batch 0 (its answer is still on the way), fails
	// batch 1, and refuses 2 to 4.
	if code, _ := leader.produce(t, first[0].Bytes); code != 0 {
		t.Fatalf("leader: %v", code)
	}
	if ds := a.Retry(first[1].ID, now, errNotLeader); ds != nil {
		t.Fatalf("Retry: %+v", ds)
	}
	for _, rb := range first[2:] {
		if code, _ := leader.produce(t, rb.Bytes); code != messages.ErrorCode_ERROR_CODE_OUT_OF_ORDER_SEQUENCE_NUMBER {
			t.Fatalf("leader accepted batch %v: %v", reportInts(rb), code)
		}
		if ds := a.OutOfOrderSequence(rb.ID, now, errOutOfOrder); ds != nil {
			t.Fatalf("OutOfOrderSequence behind a retry failed records: %+v", ds)
		}
	}
	later := now.Add(DefaultRetryBackoff)
	// Batch 0 is still in flight: batch 1 waits behind it, and no
	// deadline spins on its ended backoff.
	if rb := a.Ready(later); len(rb) != 0 {
		t.Fatalf("sent %v while batch 0 is in flight", sentInts(rb))
	}
	if at, _ := a.NextDeadline(); !at.After(later) {
		t.Fatalf("NextDeadline t0+%v: a blocked retry must not wake the shell", at.Sub(t0))
	}
	var offsets []int64
	complete := func(rb ReadyBatch) {
		t.Helper()
		code, off := leader.produce(t, rb.Bytes)
		if code != 0 {
			t.Fatalf("leader refused batch %v: %v", reportInts(rb), code)
		}
		for _, d := range a.Complete(rb.ID, off, nil) {
			offsets = append(offsets, d.Offset)
		}
	}
	complete(first[0]) // the same bytes again: the leader deduplicates
	for i := 1; i <= 4; i++ {
		rb := readyCopy(a, later)
		want := []int{i}
		if i == 4 {
			want = []int{4, 5, 6} // the last retry, then new batches pipelined
		}
		if got := sentInts(rb); !slices.Equal(got, want) {
			t.Fatalf("step %d: sent %v, want %v", i, got, want)
		}
		if &rb[0].Bytes[0] != &first[i].Bytes[0] || rb[0].Attempt != 2 {
			t.Errorf("retry of batch %d: new bytes or attempt %d", i, rb[0].Attempt)
		}
		checkStamp(t, rb[0], testPID, int32(i))
		for _, r := range rb {
			complete(r)
		}
	}
	if !slices.Equal(offsets, []int64{0, 1, 2, 3, 4, 5, 6}) {
		t.Errorf("offsets %v", offsets)
	}
	leader.checkExactlyOnce(t, "tpA", values(0, 7, 200))
}

// TestLateOutOfOrderAnswerIsRetried: the leader refuses batch 1, so it
// refuses 2 and 3 as out of order; 3's answer comes late, after batches 1
// and 2 were sent again and appended. Nothing earlier is outstanding then,
// but the refusal predates those retries: batch 3 is sent again and
// appended, not failed (before, its records failed and the producer id
// was dropped).
func TestLateOutOfOrderAnswerIsRetried(t *testing.T) {
	a := newAcc(t, Config{BatchSize: 100, MaxInFlight: 5, DeliveryTimeout: time.Hour})
	leader := newFakeLog()
	oneRecordBatches(t, a, t0, tpA, 0, 4)
	first := readyCopy(a, t0)
	if got := sentInts(first); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Fatalf("first sends %v", got)
	}
	complete := func(rb ReadyBatch, now time.Time) {
		t.Helper()
		code, off := leader.produce(t, rb.Bytes)
		if code != 0 {
			t.Fatalf("leader refused batch %v: %v", reportInts(rb), code)
		}
		if ds := a.Complete(rb.ID, off, nil); len(ds) != rb.Records || ds[0].Err != nil {
			t.Fatalf("Complete %v: %+v", reportInts(rb), ds)
		}
	}
	complete(first[0], t0)
	now := ms(1)
	if ds := a.Retry(first[1].ID, now, errNotLeader); ds != nil { // not appended
		t.Fatalf("Retry: %+v", ds)
	}
	for _, rb := range first[2:] {
		if code, _ := leader.produce(t, rb.Bytes); code != messages.ErrorCode_ERROR_CODE_OUT_OF_ORDER_SEQUENCE_NUMBER {
			t.Fatalf("leader accepted batch %v: %v", reportInts(rb), code)
		}
	}
	if ds := a.OutOfOrderSequence(first[2].ID, now, errOutOfOrder); ds != nil {
		t.Fatalf("OutOfOrderSequence behind a retry failed records: %+v", ds)
	}
	// Batch 3's answer is still on its way; 1 and 2 go again and land.
	later := now.Add(DefaultRetryBackoff)
	for i := 1; i <= 2; i++ {
		rb := readyCopy(a, later)
		if got := sentInts(rb); !slices.Equal(got, []int{i}) {
			t.Fatalf("retry step %d: sent %v", i, got)
		}
		complete(rb[0], later)
	}
	if ds := a.OutOfOrderSequence(first[3].ID, later, errOutOfOrder); ds != nil {
		t.Fatalf("late out-of-order answer failed records: %+v", ds)
	}
	rb := readyCopy(a, later.Add(DefaultRetryBackoff))
	if got := sentInts(rb); !slices.Equal(got, []int{3}) || rb[0].Attempt != 2 {
		t.Fatalf("after the late answer: sent %v", got)
	}
	complete(rb[0], later)
	leader.checkExactlyOnce(t, "tpA", values(0, 4, 200))
	if a.NeedProducerID() {
		t.Error("the producer id was dropped")
	}
}

// TestSequenceErrors: how each sequence error is classified, and what
// becomes of the partition's other batches and of the producer id.
func TestSequenceErrors(t *testing.T) {
	type step struct {
		batch int    // index into the first sends
		how   string // "ooo", "rejected", "retry", "fail", "ok"
		cause error  // for ooo, rejected and fail
		fails bool   // the batch's records fail
		need  bool   // NeedProducerID afterwards
	}
	tests := []struct {
		name     string
		inflight int // batches sent first (one record each), of 4 appended
		steps    []step
		// After SetProducerID(2000, 0): the records sent next, in order
		// (each Ready's batches completed before the next Ready), and
		// their base sequences under the new id.
		resend []int
		seqs   []int32
	}{
		{
			name: "out of order with nothing earlier outstanding is fatal", inflight: 1,
			steps:  []step{{batch: 0, how: "ooo", cause: errOutOfOrder, fails: true, need: true}},
			resend: []int{1, 2, 3}, seqs: []int32{0, 1, 2},
		},
		{
			name: "out of order behind an earlier batch in flight is retried", inflight: 2,
			steps: []step{
				{batch: 1, how: "ooo", cause: errOutOfOrder},
				{batch: 0, how: "ok"},
			},
		},
		{
			name: "out of order behind an earlier retry is retried", inflight: 2,
			steps: []step{
				{batch: 0, how: "retry"},
				{batch: 1, how: "ooo", cause: errOutOfOrder},
			},
		},
		{
			name: "invalid epoch fails the batch; later ones in flight are re-stamped", inflight: 3,
			steps: []step{
				{batch: 0, how: "rejected", cause: errEpoch, fails: true, need: true},
				{batch: 1, how: "rejected", cause: errEpoch, need: true},
				{batch: 2, how: "ooo", cause: errOutOfOrder, need: true},
			},
			resend: []int{1, 2, 3}, seqs: []int32{0, 1, 2},
		},
		{
			name: "unknown producer id fails the batch even behind an earlier one", inflight: 2,
			steps: []step{
				{batch: 1, how: "rejected", cause: errUnknownPID, fails: true, need: true},
				{batch: 0, how: "ok", need: true},
			},
			resend: []int{2, 3}, seqs: []int32{0, 1},
		},
		{
			name: "a non-retriable failure of a sent batch loses the sequence", inflight: 2,
			steps: []step{
				{batch: 0, how: "fail", cause: messages.ErrorCode_ERROR_CODE_MESSAGE_TOO_LARGE.Err("test"), fails: true, need: true},
				{batch: 1, how: "ooo", cause: errOutOfOrder, need: true},
			},
			resend: []int{1, 2, 3}, seqs: []int32{0, 1, 2},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newAcc(t, Config{BatchSize: 100, MaxInFlight: tc.inflight, DeliveryTimeout: time.Hour})
			oneRecordBatches(t, a, t0, tpA, 0, 4)
			first := readyCopy(a, t0)
			if len(first) != tc.inflight {
				t.Fatalf("sent %d", len(first))
			}
			for i, st := range tc.steps {
				id := first[st.batch].ID
				var ds []Delivery
				switch st.how {
				case "ooo":
					ds = a.OutOfOrderSequence(id, t0, st.cause)
				case "rejected":
					ds = a.ProducerRejected(id, t0, st.cause)
				case "retry":
					ds = a.Retry(id, t0, errNotLeader)
				case "fail":
					ds = a.Complete(id, -1, st.cause)
				case "ok":
					ds = a.Complete(id, int64(st.batch), nil)
					if len(ds) != 1 || ds[0].Err != nil {
						t.Fatalf("step %d: Complete: %+v", i, ds)
					}
					ds = nil
				}
				if st.fails != (len(ds) == 1) {
					t.Fatalf("step %d (%s of batch %d): deliveries %+v, want failure %v", i, st.how, st.batch, ds, st.fails)
				}
				if st.fails && (!errors.Is(ds[0].Err, st.cause) || ds[0].Report != st.batch) {
					t.Fatalf("step %d: delivery %+v, want batch %d failing with %v", i, ds[0], st.batch, st.cause)
				}
				if a.NeedProducerID() != st.need {
					t.Fatalf("step %d: NeedProducerID %v, want %v", i, a.NeedProducerID(), st.need)
				}
			}
			if tc.resend == nil {
				return
			}
			if rb := a.Ready(t0.Add(time.Minute)); len(rb) != 0 {
				t.Fatalf("sent %v without a producer id", sentInts(rb))
			}
			a.SetProducerID(2000, 0)
			var sent []int
			for round := 0; a.Pending() > 0; round++ {
				rb := readyCopy(a, t0.Add(time.Minute))
				if len(rb) == 0 || round > 10 {
					t.Fatalf("nothing sent with %d records pending, after %v", a.Pending(), sent)
				}
				for _, r := range rb {
					checkStamp(t, r, 2000, tc.seqs[min(len(sent), len(tc.seqs)-1)])
					sent = append(sent, reportInts(r)[0])
					if ds := a.Complete(r.ID, 0, nil); len(ds) != 1 || ds[0].Err != nil {
						t.Fatalf("Complete: %+v", ds)
					}
				}
			}
			if !slices.Equal(sent, tc.resend) {
				t.Errorf("sent %v under the new id, want %v", sent, tc.resend)
			}
			if a.Pending() != 0 {
				t.Errorf("Pending %d after the resends", a.Pending())
			}
		})
	}
}

func TestRestampWhileInFlight(t *testing.T) {
	a := newAcc(t, Config{BatchSize: 100, MaxInFlight: 3, DeliveryTimeout: time.Hour})
	oneRecordBatches(t, a, t0, tpA, 0, 4)
	first := readyCopy(a, t0)
	if ds := a.ProducerRejected(first[0].ID, t0, errEpoch); len(ds) != 1 {
		t.Fatalf("ProducerRejected: %+v", ds)
	}
	a.SetProducerID(2000, 0)
	// Batches 1 and 2 are re-stamped while their old sends are in
	// flight; batch 3 must not start the new sequence before them.
	if rb := a.Ready(t0); len(rb) != 0 {
		t.Fatalf("sent %v while old sends are in flight", sentInts(rb))
	}
	if ds := a.OutOfOrderSequence(first[1].ID, t0, errOutOfOrder); ds != nil {
		t.Fatalf("moot out-of-order failed %+v", ds)
	}
	now := t0.Add(DefaultRetryBackoff)
	rb := readyCopy(a, now)
	if got := sentInts(rb); !slices.Equal(got, []int{1}) {
		t.Fatalf("sent %v, want batch 1 (batch 2's old send is in flight)", got)
	}
	checkStamp(t, rb[0], 2000, 0)
	if &rb[0].Bytes[0] == &first[1].Bytes[0] {
		t.Error("re-stamped in the slice handed out before")
	}
	checkStamp(t, first[1], testPID, 1) // the old send's bytes are untouched
	if ds := a.ProducerRejected(first[2].ID, now, errUnknownPID); ds != nil {
		t.Fatalf("moot rejection failed %+v", ds)
	}
	if ds := a.Complete(rb[0].ID, 0, nil); len(ds) != 1 {
		t.Fatalf("Complete: %+v", ds)
	}
	rb = readyCopy(a, now.Add(DefaultRetryBackoff))
	if got := sentInts(rb); !slices.Equal(got, []int{2, 3}) {
		t.Fatalf("sent %v, want the retry of 2 then the new 3", got)
	}
	checkStamp(t, rb[0], 2000, 1)
	checkStamp(t, rb[1], 2000, 2)
}

func TestExpiryAfterSendResetsProducerID(t *testing.T) {
	cfg := Config{BatchSize: 100, RequestTimeout: time.Second, DeliveryTimeout: time.Minute}
	t.Run("sent", func(t *testing.T) {
		a := newAcc(t, cfg)
		oneRecordBatches(t, a, t0, tpA, 0, 1)
		a.Ready(t0)
		if ds := a.Expire(t0.Add(time.Second)); ds != nil { // request timeout: retried
			t.Fatalf("Expire at the request timeout: %+v", ds)
		}
		a.Pause(tpA) // the leader is gone
		ds := a.Expire(t0.Add(time.Minute))
		if len(ds) != 1 || !errors.Is(ds[0].Err, ErrDeliveryTimeout) || !a.NeedProducerID() {
			t.Fatalf("Expire at the delivery timeout: %+v, NeedProducerID %v", ds, a.NeedProducerID())
		}
		a.Resume(tpA)
		a.SetProducerID(2000, 0)
		oneRecordBatches(t, a, t0.Add(time.Minute), tpA, 1, 1)
		rb := a.Ready(t0.Add(time.Minute))
		if len(rb) != 1 {
			t.Fatalf("sent %d", len(rb))
		}
		checkStamp(t, rb[0], 2000, 0)
	})
	t.Run("never sent", func(t *testing.T) {
		a := newAcc(t, cfg)
		a.Pause(tpA)
		oneRecordBatches(t, a, t0, tpA, 0, 1)
		if ds := a.Expire(t0.Add(time.Minute)); len(ds) != 1 || a.NeedProducerID() {
			t.Fatalf("Expire: %+v, NeedProducerID %v", ds, a.NeedProducerID())
		}
	})
}

func TestOtherPartitionsKeepOldIDUntilSettled(t *testing.T) {
	a := newAcc(t, Config{BatchSize: 100, DeliveryTimeout: time.Hour})
	oneRecordBatches(t, a, t0, tpA, 0, 1)
	oneRecordBatches(t, a, t0, tpB, 100, 1)
	first := readyCopy(a, t0) // a0, b0
	if ds := a.OutOfOrderSequence(first[0].ID, t0, errOutOfOrder); len(ds) != 1 {
		t.Fatalf("OutOfOrderSequence: %+v", ds)
	}
	a.SetProducerID(2000, 0)
	oneRecordBatches(t, a, t0, tpA, 1, 1)
	oneRecordBatches(t, a, t0, tpB, 101, 1)
	rb := readyCopy(a, t0)
	if got := sentInts(rb); !slices.Equal(got, []int{1}) {
		t.Fatalf("sent %v, want only a1 (b0 is in flight with the old id)", got)
	}
	checkStamp(t, rb[0], 2000, 0)
	a.Retry(first[1].ID, t0, errNotLeader)
	now := t0.Add(DefaultRetryBackoff)
	rb = readyCopy(a, now)
	if got := sentInts(rb); !slices.Equal(got, []int{100}) || &rb[0].Bytes[0] != &first[1].Bytes[0] {
		t.Fatalf("sent %v, want b0's retry with its old bytes", got)
	}
	checkStamp(t, rb[0], testPID, 0)
	a.Complete(rb[0].ID, 0, nil)
	rb = readyCopy(a, now)
	if got := sentInts(rb); !slices.Equal(got, []int{101}) {
		t.Fatalf("sent %v, want b1", got)
	}
	checkStamp(t, rb[0], 2000, 0)
}

// TestIdempotentExactlyOnceRandomFaults drives an Accumulator against
// deduplicating fake leaders that lose answers, move away (refusing what
// was sent to them), drop the connection, append without acknowledging,
// and answer late, and checks that every record is appended exactly once,
// in order, at the offset delivered.
func TestIdempotentExactlyOnceRandomFaults(t *testing.T) {
	const records = 300
	tps := []TopicPartition{tpA, tpB, tpC}
	for seed := uint64(1); seed <= 30; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 99))
			a := newAcc(t, Config{BatchSize: 200, Linger: -1, MaxInFlight: 5, RetryBackoff: 10 * time.Millisecond,
				RequestTimeout: 500 * time.Millisecond, DeliveryTimeout: time.Hour})
			type request struct {
				id    BatchID
				bytes []byte
			}
			type answer struct {
				id   BatchID
				code messages.ErrorCode
				off  int64
			}
			leaders := map[TopicPartition]*fakeLog{}
			requests := map[TopicPartition][]request{}
			answers := map[TopicPartition][]answer{}
			refusing := map[TopicPartition]bool{}
			want := map[TopicPartition][]string{}
			for _, tp := range tps {
				leaders[tp] = newFakeLog()
			}
			delivered := map[int]int64{}
			deliver := func(ds []Delivery) {
				for _, d := range ds {
					if d.Err != nil {
						t.Fatalf("record %v failed: %v", d.Report, d.Err)
					}
					delivered[d.Report.(int)] = d.Offset
				}
			}
			now, next := t0, 0
			for step := 0; len(delivered) < records; step++ {
				if step > 200_000 {
					t.Fatalf("stuck: %d of %d delivered, %d pending", len(delivered), records, a.Pending())
				}
				now = now.Add(time.Duration(rnd.IntN(20)) * time.Millisecond)
				tp := tps[rnd.IntN(len(tps))]
				switch r := rnd.IntN(10); {
				case r < 3 && next < records:
					mustAppend(t, a, now, tp, next, 40)
					want[tp] = append(want[tp], string(value(next, 40)))
					next++
				case r < 6 && len(requests[tp]) > 0: // the leader takes a request
					req := requests[tp][0]
					requests[tp] = requests[tp][1:]
					switch f := rnd.IntN(20); {
					case f == 0 || refusing[tp]:
						// The leader moved: it refuses every request until
						// the producer has heard of it (a refused request
						// followed by an accepted one would let a new
						// producer id's sequence start past a gap).
						refusing[tp] = true
						answers[tp] = append(answers[tp], answer{req.id, messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER, -1})
					case f == 1:
						// The connection dropped: requests and answers on
						// the way are lost, and the producer hears of it
						// (the actor's onEndpointGone).
						for _, q := range append([]request{req}, requests[tp]...) {
							deliver(a.Retry(q.id, now, errNotLeader))
						}
						for _, ans := range answers[tp] {
							deliver(a.Retry(ans.id, now, errNotLeader))
						}
						requests[tp], answers[tp] = nil, nil
					default:
						code, off := leaders[tp].produce(t, req.bytes)
						ans := answer{req.id, code, off}
						if code == 0 && f == 2 { // appended, not acknowledged
							ans = answer{req.id, messages.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS_AFTER_APPEND, -1}
						}
						if f != 3 { // else the answer is lost
							answers[tp] = append(answers[tp], ans)
						}
					}
				case r < 9 && len(answers[tp]) > 0:
					ans := answers[tp][0]
					answers[tp] = answers[tp][1:]
					switch code := ans.code; {
					case code == 0:
						deliver(a.Complete(ans.id, ans.off, nil))
					case code == messages.ErrorCode_ERROR_CODE_OUT_OF_ORDER_SEQUENCE_NUMBER:
						deliver(a.OutOfOrderSequence(ans.id, now, code.Err("")))
					case code.Retriable():
						deliver(a.Retry(ans.id, now, code.Err("")))
					default:
						deliver(a.ProducerRejected(ans.id, now, code.Err("")))
					}
				}
				if refusing[tp] && len(requests[tp]) == 0 && len(answers[tp]) == 0 {
					refusing[tp] = false // the producer knows
				}
				if a.NeedProducerID() {
					t.Fatalf("step %d: the producer id was dropped", step)
				}
				deliver(a.Expire(now))
				for _, rb := range a.Ready(now) {
					requests[rb.TopicPartition] = append(requests[rb.TopicPartition], request{rb.ID, rb.Bytes})
				}
			}
			for _, tp := range tps {
				leaders[tp].checkExactlyOnce(t, tp.String(), want[tp])
			}
			for i, off := range delivered {
				for _, tp := range tps {
					if l := leaders[tp]; off < int64(len(l.values)) && l.values[off] == string(value(i, 40)) {
						delete(delivered, i)
					}
				}
			}
			if len(delivered) != 0 {
				t.Errorf("%d records delivered with an offset that does not hold them", len(delivered))
			}
		})
	}
}
