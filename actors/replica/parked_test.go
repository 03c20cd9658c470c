// parked_test.go: the bounds on parked requests (parked.go) — the byte
// clock and fetch need as tables, a flood of long-poll fetches beyond the
// cap answered at once while produce stays fast and wake-ups read the log
// only for fetches new data can satisfy, acks=all beyond the cap refused
// retriably and unwritten, and emptied maps recreated.

package replica

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/messages"
)

func TestByteClock(t *testing.T) {
	var c byteClock
	c.reset(100)
	c.add(105, 50)
	c.add(110, 70)
	c.add(112, 10)
	tests := []struct {
		name     string
		from, to int64
		want     int64
		ok       bool
	}{
		{"start to first", 100, 105, 50, true},
		{"start to last", 100, 112, 130, true},
		{"middle", 105, 110, 70, true},
		{"same", 110, 110, 0, true},
		{"inside a batch", 100, 107, 0, false},
		{"before the start", 90, 105, 0, false},
		{"past the end", 105, 120, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := c.between(tt.from, tt.to)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("between(%d, %d) = %d, %v; want %d, %v", tt.from, tt.to, got, ok, tt.want, tt.ok)
			}
		})
	}
	// A mark not after the last one restarts the clock there.
	c.add(111, 5)
	if _, ok := c.between(100, 105); ok {
		t.Fatal("marks before a restart are still known")
	}
	c.add(115, 9)
	if got, ok := c.between(111, 115); !ok || got != 9 {
		t.Fatalf("after the restart: %d, %v; want 9, true", got, ok)
	}
	// The clock keeps a bounded number of marks.
	c.reset(0)
	for i := int64(1); i <= 5*maxClockMarks; i++ {
		c.add(i, 1)
	}
	if len(c.marks) >= 2*maxClockMarks {
		t.Fatalf("%d marks kept, want fewer than %d", len(c.marks), 2*maxClockMarks)
	}
	if got, ok := c.between(5*maxClockMarks-10, 5*maxClockMarks); !ok || got != 10 {
		t.Fatalf("recent marks: %d, %v; want 10, true", got, ok)
	}
	if _, ok := c.between(1, 2); ok {
		t.Fatal("the oldest marks are still known")
	}
}

func TestFetchNeed(t *testing.T) {
	tests := []struct {
		minBytes int32
		limit    int
		want     int
	}{
		{0, 1 << 20, 1},
		{1, 1 << 20, 1},
		{-3, 1 << 20, 1},
		{5000, 1 << 20, 5000},
		{math.MaxInt32, 4096, 4096},
		{100, 0, 1},
	}
	for _, tt := range tests {
		if got := fetchNeed(tt.minBytes, tt.limit); got != tt.want {
			t.Errorf("fetchNeed(%d, %d) = %d, want %d", tt.minBytes, tt.limit, got, tt.want)
		}
	}
}

// startCapped starts a leader alone in its ISR with the given caps.
func startCapped(t *testing.T, maxFetches int) *harness {
	t.Helper()
	h := &harness{t: t, system: actor.NewActorSystem(), dir: t.TempDir()}
	h.pid = h.system.Root.Spawn(Props(Config{Topic: "t", Partition: 0, Dir: h.dir, LeaderEpoch: 3, Logger: quiet(), MaxParkedFetches: maxFetches}))
	t.Cleanup(h.stop)
	return h
}

// parkFetches sends n long-poll fetches at offset asking minBytes, and
// returns their futures.
func (h *harness) parkFetches(n int, offset int64, minBytes int32) []*actor.Future {
	futs := make([]*actor.Future, n)
	for i := range futs {
		futs[i] = h.system.Root.RequestFuture(h.pid, &messages.FetchRequest{Topic: "t", Partition: 0, FetchOffset: offset, MaxBytes: 1 << 20,
			MinBytes: minBytes, MaxWaitMs: 20_000, CurrentLeaderEpoch: -1, ReplicaId: -1}, 30*time.Second)
	}
	return futs
}

// produceLatency is the mean time of n acks=1 produces.
func (h *harness) produceLatency(n int) time.Duration {
	h.t.Helper()
	start := time.Now()
	for i := 0; i < n; i++ {
		if r := h.produce(batch(h.t, 5, "lat"), messages.Acks_ACKS_LEADER); r.ErrorCode != 0 {
			h.t.Fatalf("produce: %v", r.ErrorCode)
		}
	}
	return time.Since(start) / time.Duration(n)
}

func TestParkedFetchesBeyondTheCapAreAnsweredAtOnce(t *testing.T) {
	const limit, flood = 50, 250
	h := startCapped(t, limit)
	if r := h.produce(batch(t, 5, "a"), messages.Acks_ACKS_LEADER); r.ErrorCode != 0 {
		t.Fatalf("produce: %v", r.ErrorCode)
	}
	start := time.Now()
	futs := h.parkFetches(flood, 5, 1) // at the log end: nothing to read
	st := h.request(GetState).(State)
	if st.ParkedFetches != limit || st.FetchesNotParked != flood-limit {
		t.Fatalf("after %d fetches: %d parked, %d not parked; want %d and %d", flood, st.ParkedFetches, st.FetchesNotParked, limit, flood-limit)
	}
	for i, f := range futs[limit:] {
		res, err := f.Result()
		if err != nil {
			t.Fatalf("fetch %d beyond the cap: %v", limit+i, err)
		}
		if r := res.(*messages.FetchResponse); r.ErrorCode != 0 || len(r.Records) != 0 || r.HighWatermark != 5 {
			t.Fatalf("fetch %d beyond the cap: %v, %d bytes, hw %d; want an empty answer and no error", limit+i, r.ErrorCode, len(r.Records), r.HighWatermark)
		}
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("fetches beyond the cap took %v to be answered", took)
	}
	// New data answers the parked ones, with it.
	if r := h.produce(batch(t, 3, "b"), messages.Acks_ACKS_LEADER); r.ErrorCode != 0 {
		t.Fatalf("produce: %v", r.ErrorCode)
	}
	for i, f := range futs[:limit] {
		res, err := f.Result()
		if err != nil {
			t.Fatalf("parked fetch %d: %v", i, err)
		}
		if recs := decode(t, res.(*messages.FetchResponse).Records); len(recs) != 3 || recs[0].Offset != 5 {
			t.Fatalf("parked fetch %d: %d records", i, len(recs))
		}
	}
	if st := h.request(GetState).(State); st.ParkedFetches != 0 {
		t.Fatalf("%d fetches still parked", st.ParkedFetches)
	}
}

// TestParkedFetchesDoNotSlowProduce parks as many fetches as the default
// cap allows, each wanting more bytes than the test will write, and checks
// that appends do not read the log for each of them: the wake-ups read the
// log a handful of times in all (produce latency with and without them is
// logged).
func TestParkedFetchesDoNotSlowProduce(t *testing.T) {
	h := startCapped(t, 0) // the default cap
	base := h.produceLatency(100)
	const want = 16 << 10 // more than 60 small batches
	futs := h.parkFetches(DefaultMaxParkedFetches+500, 100*5, want)
	st := h.request(GetState).(State)
	if st.ParkedFetches != DefaultMaxParkedFetches || st.FetchesNotParked != 500 {
		t.Fatalf("%d parked, %d not parked; want %d and 500", st.ParkedFetches, st.FetchesNotParked, DefaultMaxParkedFetches)
	}
	parked := h.produceLatency(60)
	st = h.request(GetState).(State)
	if st.WakeReads > 10 {
		t.Fatalf("60 appends with %d fetches parked read the log %d times to wake them", st.ParkedFetches, st.WakeReads)
	}
	// The latencies are reported, not asserted: a timed check failed CI
	// on a loaded machine (3.4 ms against 0.28 ms), and the wake-read
	// count above is what a per-fetch read of the log would change.
	t.Logf("produce latency: %v with nothing parked, %v with %d fetches parked; %d wake reads", base, parked, st.ParkedFetches, st.WakeReads)
	// A big enough append satisfies them all at once.
	if r := h.produce(batch(t, 1000, "big"), messages.Acks_ACKS_LEADER); r.ErrorCode != 0 {
		t.Fatalf("big produce: %v", r.ErrorCode)
	}
	for i, f := range futs[:DefaultMaxParkedFetches] {
		res, err := f.Result()
		if err != nil {
			t.Fatalf("parked fetch %d: %v", i, err)
		}
		if r := res.(*messages.FetchResponse); r.ErrorCode != 0 || len(r.Records) < want {
			t.Fatalf("parked fetch %d: %v, %d bytes; want its %d", i, r.ErrorCode, len(r.Records), want)
		}
	}
	if st := h.request(GetState).(State); st.ParkedFetches != 0 {
		t.Fatalf("%d fetches still parked", st.ParkedFetches)
	}
}

func TestParkedAcksBeyondTheCapAreRefusedUnwritten(t *testing.T) {
	const limit = 5
	h := &harness{t: t, system: actor.NewActorSystem(), dir: t.TempDir()}
	h.pid = h.system.Root.Spawn(Props(Config{
		Topic: "t", Partition: 0, Dir: h.dir, LeaderEpoch: 3, Logger: quiet(),
		Self: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, PartitionEpoch: 5, MinInsyncReplicas: 2,
		ReplicaLagTimeMax: time.Minute, Hosts: inProcessFollower, MaxParkedAcks: limit,
	}))
	t.Cleanup(h.stop)
	send := func() *actor.Future {
		return h.system.Root.RequestFuture(h.pid, &messages.ProduceRequest{Topic: "t", Partition: 0, Acks: messages.Acks_ACKS_ALL,
			Records: batch(t, 2, "w"), CurrentLeaderEpoch: -1, CorrelationId: 9}, timeout)
	}
	var waiting []*actor.Future
	for i := 0; i < limit; i++ {
		waiting = append(waiting, send())
	}
	res, err := send().Result()
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*messages.ProduceResponse)
	if r.ErrorCode != messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT || !r.ErrorCode.Retriable() || r.BaseOffset != -1 {
		t.Fatalf("acks=all beyond the cap: %v (retriable %v), base offset %d; want a retriable REQUEST_TIMED_OUT and no offset", r.ErrorCode, r.ErrorCode.Retriable(), r.BaseOffset)
	}
	st := h.request(GetState).(State)
	if st.ParkedAcks != limit || st.AcksRefused != 1 || st.LogEndOffset != 2*limit {
		t.Fatalf("%d acks parked, %d refused, log end %d; want %d, 1 and %d (the refused batch unwritten)", st.ParkedAcks, st.AcksRefused, st.LogEndOffset, limit, 2*limit)
	}
	// acks=1 is not limited.
	if r := h.produce(batch(t, 1, "one"), messages.Acks_ACKS_LEADER); r.ErrorCode != 0 {
		t.Fatalf("acks=1 with the acks=all cap reached: %v", r.ErrorCode)
	}
	// The follower catches up: every parked produce is answered, and
	// acks=all is taken again.
	if f := h.followerFetch(2, 2*limit+1, 3); f.ErrorCode != 0 || f.HighWatermark != 2*limit+1 {
		t.Fatalf("follower fetch: %v, hw %d", f.ErrorCode, f.HighWatermark)
	}
	for i, f := range waiting {
		res, err := f.Result()
		if err != nil {
			t.Fatalf("parked produce %d: %v", i, err)
		}
		if r := res.(*messages.ProduceResponse); r.ErrorCode != 0 || r.BaseOffset != int64(2*i) {
			t.Fatalf("parked produce %d: %v at %d", i, r.ErrorCode, r.BaseOffset)
		}
	}
	again := send()
	if f := h.followerFetch(2, 2*limit+3, 3); f.ErrorCode != 0 {
		t.Fatalf("follower fetch: %v", f.ErrorCode)
	}
	if res, err := again.Result(); err != nil || res.(*messages.ProduceResponse).ErrorCode != 0 {
		t.Fatalf("acks=all after the parked ones were answered: %v, %+v", err, res)
	}
}

func TestEmptiedParkedMapsAreRecreated(t *testing.T) {
	r := newReplica(Config{Topic: "t", Logger: quiet()})
	for i := uint64(0); i < 1000; i++ {
		r.waiting[i] = &parkedFetch{}
		r.waitingAcks[i] = &parkedProduce{}
	}
	r.waitingPeak, r.acksPeak = 1000, 1000
	bigFetches, bigAcks := reflect.ValueOf(r.waiting).Pointer(), reflect.ValueOf(r.waitingAcks).Pointer()
	for i := uint64(0); i < 999; i++ {
		delete(r.waiting, i)
		delete(r.waitingAcks, i)
	}
	r.shrinkParked()
	if reflect.ValueOf(r.waiting).Pointer() != bigFetches || reflect.ValueOf(r.waitingAcks).Pointer() != bigAcks {
		t.Fatal("maps still holding a request were replaced")
	}
	delete(r.waiting, 999)
	delete(r.waitingAcks, 999)
	r.shrinkParked()
	if reflect.ValueOf(r.waiting).Pointer() == bigFetches || reflect.ValueOf(r.waitingAcks).Pointer() == bigAcks {
		t.Fatal("emptied maps that held 1000 requests were kept")
	}
	if r.waitingPeak != 0 || r.acksPeak != 0 || r.waiting == nil || r.waitingAcks == nil {
		t.Fatalf("after recreating: peaks %d %d", r.waitingPeak, r.acksPeak)
	}
	// Small maps are kept.
	small := reflect.ValueOf(r.waiting).Pointer()
	r.waiting[1] = &parkedFetch{}
	r.waitingPeak = 1
	delete(r.waiting, 1)
	r.shrinkParked()
	if reflect.ValueOf(r.waiting).Pointer() != small {
		t.Fatal("a small emptied map was replaced")
	}
}
