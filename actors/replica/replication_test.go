// replication_test.go: table tests of the pure replication logic in
// replication.go: high-watermark advance, ISR shrink and expand, the ISR
// change in flight, acks=all, epoch fencing, and the truncation decisions
// for divergent logs. No actors, no sleeps: times are passed in.

package replica

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/actorlog/actorlog/messages"
)

var t0 = time.Unix(1_700_000_000, 0)

func at(d time.Duration) time.Time { return t0.Add(d) }

const sec = time.Second

// run drives one LeaderState through a script of steps.
type run struct {
	t    *testing.T
	s    *LeaderState
	last FetchStep
}

type step struct {
	name string
	do   func(r *run)
}

func newRun(t *testing.T, cfg LeaderConfig) *run {
	t.Helper()
	s, err := NewLeaderState(cfg, t0)
	if err != nil {
		t.Fatalf("NewLeaderState: %v", err)
	}
	return &run{t: t, s: s}
}

func (r *run) play(steps []step) {
	r.t.Helper()
	for i, st := range steps {
		r.t.Logf("step %d: %s", i, st.name)
		st.do(r)
	}
}

func appendTo(leo int64, d time.Duration) step {
	return step{"append", func(r *run) { r.s.OnLeaderAppend(leo, at(d)) }}
}

func fetch(id int32, offset, leaderLEO int64, d time.Duration) step {
	return step{"fetch", func(r *run) {
		r.t.Helper()
		st, err := r.s.OnFollowerFetch(id, offset, leaderLEO, at(d))
		if err != nil {
			r.t.Fatalf("fetch by %d at %d: %v", id, offset, err)
		}
		r.last = st
	}}
}

func wantHW(hw int64) step {
	return step{"want hw", func(r *run) {
		r.t.Helper()
		if got := r.s.HighWatermark(); got != hw {
			r.t.Fatalf("high watermark %d, want %d", got, hw)
		}
	}}
}

// wantExpand checks the ISR expansion proposed by the last fetch (nil: none).
func wantExpand(isr []int32) step {
	return step{"want expand", func(r *run) {
		r.t.Helper()
		got := r.last.ExpandISR
		switch {
		case isr == nil && got != nil:
			r.t.Fatalf("expansion %v proposed, want none", got.ISR)
		case isr != nil && got == nil:
			r.t.Fatalf("no expansion, want %v", isr)
		case isr != nil && !slices.Equal(got.ISR, isr):
			r.t.Fatalf("expansion %v, want %v", got.ISR, isr)
		}
	}}
}

// shrink runs MaybeShrinkISR and checks the proposal (nil: none).
func shrink(d time.Duration, isr []int32) step {
	return step{"shrink", func(r *run) {
		r.t.Helper()
		got, ok := r.s.MaybeShrinkISR(at(d))
		switch {
		case isr == nil && ok:
			r.t.Fatalf("shrink to %v proposed, want none", got.ISR)
		case isr != nil && !ok:
			r.t.Fatalf("no shrink, want %v (out of sync: %v)", isr, r.s.OutOfSyncReplicas(at(d)))
		case isr != nil && !slices.Equal(got.ISR, isr):
			r.t.Fatalf("shrink to %v, want %v", got.ISR, isr)
		}
		if ok && (got.LeaderEpoch != r.s.LeaderEpoch() || got.PartitionEpoch != r.s.PartitionEpoch()) {
			r.t.Fatalf("proposal epochs %d/%d, want %d/%d", got.LeaderEpoch, got.PartitionEpoch, r.s.LeaderEpoch(), r.s.PartitionEpoch())
		}
	}}
}

func commit(isr []int32, d time.Duration, wantAdvanced bool) step {
	return step{"commit", func(r *run) {
		r.t.Helper()
		adv, err := r.s.CommitISR(r.s.LeaderEpoch(), r.s.PartitionEpoch()+1, isr, at(d))
		if err != nil || adv != wantAdvanced {
			r.t.Fatalf("CommitISR(%v) = %v, %v; want %v, nil", isr, adv, err, wantAdvanced)
		}
	}}
}

func abort() step {
	return step{"abort", func(r *run) {
		r.t.Helper()
		if !r.s.AbortISRChange(time.Time{}) { // no refusal backoff in these tables
			r.t.Fatal("AbortISRChange: nothing was in flight")
		}
	}}
}

// wantISR checks the committed ISR and the pending one (nil: none).
func wantISR(committed, pending []int32) step {
	return step{"want isr", func(r *run) {
		r.t.Helper()
		if got := r.s.ISR(); !slices.Equal(got, committed) {
			r.t.Fatalf("ISR %v, want %v", got, committed)
		}
		got, ok := r.s.PendingISR()
		if ok != (pending != nil) || !slices.Equal(got, pending) {
			r.t.Fatalf("pending ISR %v (%v), want %v", got, ok, pending)
		}
	}}
}

func ids(v ...int32) []int32 { return v }

func cfg3(isr []int32, epochStart, hw int64) LeaderConfig {
	return LeaderConfig{
		Self: 1, LeaderEpoch: 5, PartitionEpoch: 7, EpochStartOffset: epochStart,
		Replicas: ids(1, 2, 3), ISR: isr, HighWatermark: hw, MinInsyncReplicas: 1,
	}
}

func cfg2(isr []int32, epochStart, hw int64) LeaderConfig {
	c := cfg3(isr, epochStart, hw)
	c.Replicas = ids(1, 2)
	return c
}

func TestHighWatermark(t *testing.T) {
	minISR2 := cfg3(ids(1), 10, 5)
	minISR2.MinInsyncReplicas = 2
	capped := LeaderConfig{Self: 1, Replicas: ids(1), ISR: ids(1), MinInsyncReplicas: 3}

	tests := []struct {
		name  string
		cfg   LeaderConfig
		steps []step
	}{
		{"min over the ISR; an unknown follower offset holds it", cfg3(ids(1, 2, 3), 10, 10), []step{
			wantHW(10),
			fetch(2, 10, 10, 0), wantHW(10),
			appendTo(20, 1*sec), wantHW(10),
			fetch(2, 15, 20, 2*sec), wantHW(10), // 3 has not fetched this term
			fetch(3, 12, 20, 2*sec), wantHW(12),
			fetch(2, 20, 20, 3*sec), wantHW(12),
			fetch(3, 20, 20, 3*sec), wantHW(20),
		}},
		{"never moves back", cfg2(ids(1, 2), 10, 8), []step{
			fetch(2, 5, 10, 0), wantHW(8),
			fetch(2, 10, 10, 1*sec), wantHW(10),
			fetch(2, 9, 10, 2*sec), wantHW(10),
		}},
		{"leader alone in the ISR: follows appends at once", cfg2(ids(1), 0, 0), []step{
			appendTo(5, 0), wantHW(5),
			appendTo(9, 1*sec), wantHW(9),
		}},
		{"a lagging follower outside the ISR does not hold it", cfg2(ids(1), 100, 100), []step{
			fetch(2, 50, 100, 0), wantExpand(nil), wantHW(100),
			appendTo(110, 1*sec), wantHW(110),
		}},
		{"a caught-up follower outside the ISR holds it until it joins", cfg2(ids(1), 20, 20), []step{
			fetch(2, 10, 20, 1*sec), wantExpand(nil),
			appendTo(30, 2*sec), wantHW(30), // 2 never caught up: not waited for
			fetch(2, 20, 30, 3*sec), wantExpand(nil), // reached the previous fetch's leader end: caught up as of 1s
			appendTo(40, 4*sec), wantHW(30), // waits for 2 (at 20) rather than leave it behind for ever
			fetch(2, 30, 40, 5*sec), wantExpand(ids(1, 2)), wantHW(30),
			fetch(2, 40, 40, 6*sec), wantHW(40),
		}},
		{"a pending expansion counts (maximal ISR)", cfg2(ids(1), 10, 10), []step{
			fetch(2, 10, 10, 0), wantExpand(ids(1, 2)), wantISR(ids(1), ids(1, 2)),
			appendTo(30, 40*sec), wantHW(10), // 2 is not caught up by time, but it is in the maximal ISR
			abort(), wantISR(ids(1), nil),
			appendTo(31, 41*sec), wantHW(31),
		}},
		{"a fetch's own expansion counts for that fetch's high watermark", cfg3(ids(1), 10, 10), []step{
			fetch(3, 10, 10, 0), wantExpand(ids(1, 3)), abort(), // say the controller refused it
			appendTo(20, 1*sec), wantHW(10), // 3 is caught up (by time): waited for
			fetch(2, 15, 20, 40*sec), wantExpand(ids(1, 2)),
			wantHW(15), // 3 no longer caught up; 2 counts because its expansion comes first (Kafka's order)
		}},
		{"a pending shrink still counts the removed follower", cfg3(ids(1, 2, 3), 0, 0), []step{
			fetch(2, 0, 0, 0), fetch(3, 0, 0, 0),
			appendTo(10, 1*sec), wantHW(0),
			fetch(2, 10, 10, 2*sec), wantHW(0),
			shrink(40*sec, ids(1, 2)),
			appendTo(20, 41*sec), fetch(2, 20, 20, 42*sec), wantHW(0),
			commit(ids(1, 2), 43*sec, true), wantHW(20), wantISR(ids(1, 2), nil),
		}},
		{"no advance under min ISR (KIP-966)", minISR2, []step{
			wantHW(5),
			appendTo(20, 0), wantHW(5),
			fetch(2, 20, 20, 1*sec), wantExpand(ids(1, 2)), wantHW(5), // pending is not committed
			commit(ids(1, 2), 2*sec, true), wantHW(20),
		}},
		{"min ISR above the replica count is capped", capped, []step{
			appendTo(5, 0), wantHW(5),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			newRun(t, tc.cfg).play(tc.steps)
		})
	}
}

func TestNewLeaderStateFollowers(t *testing.T) {
	s, err := NewLeaderState(cfg3(ids(1, 2), 10, 10), t0)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		id   int32
		want FollowerState
	}{
		{2, FollowerState{LogEndOffset: -1, LastFetchLeaderLogEndOffset: -1, LastCaughtUpTime: t0}}, // ISR: grace period
		{3, FollowerState{LogEndOffset: -1, LastFetchLeaderLogEndOffset: -1}},                       // outside: never caught up
	}
	for _, tc := range tests {
		got, ok := s.Follower(tc.id)
		if !ok || got != tc.want {
			t.Errorf("follower %d: %+v (%v), want %+v", tc.id, got, ok, tc.want)
		}
	}
	if _, ok := s.Follower(1); ok {
		t.Error("the leader is listed as a follower")
	}
}

func TestFollowerCaughtUpTime(t *testing.T) {
	type fetchAt struct {
		offset, leaderLEO int64
		at                time.Duration
	}
	tests := []struct {
		name    string
		inISR   bool
		fetches []fetchAt
		want    time.Time // LastCaughtUpTime after the fetches
	}{
		{"at the leader's log end: now", false, []fetchAt{{10, 10, 5 * sec}}, at(5 * sec)},
		{"behind, first fetch, outside the ISR: never", false, []fetchAt{{5, 10, 5 * sec}}, time.Time{}},
		{"behind, first fetch, in the ISR: keeps the grace period", true, []fetchAt{{5, 10, 5 * sec}}, t0},
		{"reached the previous fetch's leader end: the previous fetch time", false,
			[]fetchAt{{10, 10, 1 * sec}, {10, 20, 2 * sec}, {20, 30, 3 * sec}}, at(2 * sec)},
		{"behind the previous fetch's leader end: unchanged", false,
			[]fetchAt{{10, 10, 1 * sec}, {10, 20, 2 * sec}, {15, 30, 3 * sec}}, at(1 * sec)},
		{"never moves back", false,
			[]fetchAt{{10, 10, 9 * sec}, {10, 20, 10 * sec}, {20, 20, 8 * sec}}, at(9 * sec)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			isr := ids(1)
			if tc.inISR {
				isr = ids(1, 2)
			}
			s, err := NewLeaderState(cfg3(isr, 0, 0), t0)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range tc.fetches {
				if _, err := s.OnFollowerFetch(2, f.offset, f.leaderLEO, at(f.at)); err != nil {
					t.Fatal(err)
				}
				s.AbortISRChange(time.Time{}) // keep expansions out of the way
			}
			got, _ := s.Follower(2)
			if !got.LastCaughtUpTime.Equal(tc.want) {
				t.Errorf("last caught up %v, want %v", got.LastCaughtUpTime, tc.want)
			}
			last := tc.fetches[len(tc.fetches)-1]
			if got.LogEndOffset != last.offset || !got.LastFetchTime.Equal(at(last.at)) {
				t.Errorf("follower state %+v after fetch %+v", got, last)
			}
		})
	}
}

func TestISRShrink(t *testing.T) {
	all := cfg3(ids(1, 2, 3), 100, 100)
	tests := []struct {
		name  string
		steps []step
	}{
		{"grace period from the start of the term, lag time inclusive", []step{
			shrink(30*sec, nil),
			shrink(31*sec, ids(1)),
		}},
		{"a follower at the leader's log end is never out of sync", []step{
			fetch(2, 100, 100, 0), fetch(3, 100, 100, 0),
			shrink(time.Hour, nil),
		}},
		{"a stuck follower leaves", []step{
			fetch(2, 100, 100, 0), fetch(3, 100, 100, 0),
			appendTo(110, 1*sec),
			fetch(2, 110, 110, 20*sec),
			shrink(30*sec, nil), // 3 last caught up at 0s
			shrink(31*sec, ids(1, 2)),
			wantISR(ids(1, 2, 3), ids(1, 2)),
		}},
		{"trailing a busy leader by less than a fetch stays in sync; falling further behind does not", []step{
			fetch(2, 100, 100, 0), fetch(3, 100, 100, 0),
			appendTo(110, 9*sec), fetch(2, 100, 110, 10*sec), fetch(3, 100, 110, 10*sec),
			appendTo(120, 19*sec), fetch(2, 110, 120, 20*sec), fetch(3, 100, 120, 20*sec),
			appendTo(130, 29*sec), fetch(2, 120, 130, 30*sec), fetch(3, 110, 130, 30*sec),
			appendTo(140, 39*sec), fetch(2, 130, 140, 40*sec), fetch(3, 120, 140, 40*sec),
			shrink(41*sec, ids(1, 2)), // 2 caught up as of 30s, 3 as of 0s
		}},
		{"one change in flight: no second proposal", []step{
			shrink(31*sec, ids(1)),
			shrink(32*sec, nil),
			step{"out of sync while pending", func(r *run) {
				if out := r.s.OutOfSyncReplicas(at(32 * sec)); out != nil {
					r.t.Fatalf("out of sync %v while a change is in flight", out)
				}
			}},
			fetch(2, 100, 100, 33*sec), wantExpand(nil), // in flight: no expansion either
			commit(ids(1), 34*sec, false), wantISR(ids(1), nil),
			fetch(2, 100, 100, 35*sec), wantExpand(ids(1, 2)),
		}},
		{"an aborted shrink can be proposed again", []step{
			shrink(31*sec, ids(1)), abort(), wantISR(ids(1, 2, 3), nil),
			shrink(32*sec, ids(1)),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			newRun(t, all).play(tc.steps)
		})
	}
}

func TestISRExpand(t *testing.T) {
	// 3 is in the ISR but has not fetched: the high watermark stays at the
	// checkpoint (90), below the epoch start (100).
	c := cfg3(ids(1, 3), 100, 90)
	tests := []struct {
		name  string
		steps []step
	}{
		{"below the high watermark: no", []step{fetch(2, 80, 100, 0), wantExpand(nil)}},
		{"at the high watermark but below the epoch start: no", []step{
			wantHW(90), fetch(2, 95, 100, 0), wantExpand(nil),
		}},
		{"at the high watermark and the epoch start: yes", []step{
			fetch(2, 100, 100, 0), wantExpand(ids(1, 3, 2)), wantISR(ids(1, 3), ids(1, 3, 2)),
		}},
		{"already in the ISR: no", []step{fetch(3, 100, 100, 0), wantExpand(nil), wantHW(100)}},
		{"rejoins after a shrink once back at the high watermark", []step{
			fetch(2, 100, 100, 0), wantExpand(ids(1, 3, 2)), commit(ids(1, 3, 2), 0, false),
			fetch(3, 100, 100, 0), wantHW(100),
			appendTo(150, 1*sec), fetch(3, 150, 150, 2*sec),
			shrink(31*sec, ids(1, 3)), commit(ids(1, 3), 31*sec, true), wantHW(150),
			fetch(2, 120, 150, 32*sec), wantExpand(nil),
			fetch(2, 150, 150, 33*sec), wantExpand(ids(1, 3, 2)),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			newRun(t, c).play(tc.steps)
		})
	}
}

func TestLeaderStateErrors(t *testing.T) {
	newState := func(t *testing.T) *LeaderState {
		s, err := NewLeaderState(cfg3(ids(1, 2), 10, 10), t0)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	tests := []struct {
		name string
		do   func(s *LeaderState) error
		want error
	}{
		{"fetch by a non-replica", func(s *LeaderState) error { _, err := s.OnFollowerFetch(9, 10, 10, t0); return err }, ErrUnknownReplica},
		{"fetch by the leader itself", func(s *LeaderState) error { _, err := s.OnFollowerFetch(1, 10, 10, t0); return err }, ErrUnknownReplica},
		{"fetch past the leader's log end", func(s *LeaderState) error { _, err := s.OnFollowerFetch(2, 11, 10, t0); return err }, ErrFetchOffset},
		{"commit for another leader epoch", func(s *LeaderState) error { _, err := s.CommitISR(4, 8, ids(1), t0); return err }, ErrStaleISRUpdate},
		{"commit of an older partition epoch", func(s *LeaderState) error { _, err := s.CommitISR(5, 6, ids(1), t0); return err }, ErrStaleISRUpdate},
		{"commit without the leader", func(s *LeaderState) error { _, err := s.CommitISR(5, 8, ids(2), t0); return err }, ErrInvalidISR},
		{"commit of a non-replica", func(s *LeaderState) error { _, err := s.CommitISR(5, 8, ids(1, 4), t0); return err }, ErrInvalidISR},
		{"commit with a duplicate", func(s *LeaderState) error { _, err := s.CommitISR(5, 8, ids(1, 2, 2), t0); return err }, ErrInvalidISR},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newState(t)
			before := *s
			if err := tc.do(s); !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if !slices.Equal(s.isr, before.isr) || s.partitionEpoch != before.partitionEpoch || s.hw != before.hw {
				t.Fatal("a refused call changed the state")
			}
		})
	}

	configs := []struct {
		name string
		cfg  LeaderConfig
	}{
		{"leader not a replica", LeaderConfig{Self: 4, Replicas: ids(1, 2), ISR: ids(4)}},
		{"leader not in the ISR", LeaderConfig{Self: 1, Replicas: ids(1, 2), ISR: ids(2)}},
		{"ISR member not a replica", LeaderConfig{Self: 1, Replicas: ids(1, 2), ISR: ids(1, 3)}},
		{"duplicate replica", LeaderConfig{Self: 1, Replicas: ids(1, 2, 2), ISR: ids(1)}},
	}
	for _, tc := range configs {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewLeaderState(tc.cfg, t0); err == nil {
				t.Fatal("NewLeaderState accepted it")
			}
		})
	}
}

func TestAcksAll(t *testing.T) {
	c := cfg3(ids(1, 2), 0, 0)
	c.MinInsyncReplicas = 2
	ok := messages.ErrorCode_ERROR_CODE_UNSPECIFIED
	type check struct {
		required int64
		done     bool
		code     messages.ErrorCode
	}
	acks := func(before messages.ErrorCode, checks ...check) step {
		return step{"acks", func(r *run) {
			r.t.Helper()
			if got := r.s.CheckAcksAll(); got != before {
				r.t.Fatalf("CheckAcksAll %v, want %v", got, before)
			}
			for _, ck := range checks {
				done, code := r.s.AcksAllDone(ck.required)
				if done != ck.done || code != ck.code {
					r.t.Fatalf("AcksAllDone(%d) = %v, %v; want %v, %v", ck.required, done, code, ck.done, ck.code)
				}
			}
		}}
	}
	newRun(t, c).play([]step{
		acks(ok, check{1, false, ok}),
		fetch(2, 0, 0, 0), appendTo(10, 1*sec), wantHW(0),
		acks(ok, check{10, false, ok}),
		fetch(2, 10, 10, 2*sec), wantHW(10),
		acks(ok, check{10, true, ok}, check{11, false, ok}),
		appendTo(20, 3*sec),
		shrink(40*sec, ids(1)),
		acks(ok, check{10, true, ok}), // the pending shrink is not committed yet
		commit(ids(1), 41*sec, false),
		acks(messages.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS,
			check{10, true, messages.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS_AFTER_APPEND},
			check{20, false, ok}),
		step{"in sync count", func(r *run) {
			if n := r.s.InSyncCount(); n != 1 || !r.s.UnderMinISR() {
				r.t.Fatalf("InSyncCount %d, UnderMinISR %v", n, r.s.UnderMinISR())
			}
		}},
	})
}

func TestLatestOffsetAvailable(t *testing.T) {
	newRun(t, cfg2(ids(1, 2), 10, 4)).play([]step{
		step{"before", func(r *run) {
			if r.s.LatestOffsetAvailable() {
				r.t.Fatal("available with the high watermark below the epoch start")
			}
		}},
		fetch(2, 10, 10, 0), wantHW(10),
		step{"after", func(r *run) {
			if !r.s.LatestOffsetAvailable() {
				r.t.Fatal("not available with the high watermark at the epoch start")
			}
		}},
	})
}

func TestCheckLeaderEpoch(t *testing.T) {
	tests := []struct {
		current, requested int32
		want               messages.ErrorCode
	}{
		{5, 5, messages.ErrorCode_ERROR_CODE_UNSPECIFIED},
		{5, -1, messages.ErrorCode_ERROR_CODE_UNSPECIFIED},
		{5, 4, messages.ErrorCode_ERROR_CODE_FENCED_LEADER_EPOCH},
		{5, 0, messages.ErrorCode_ERROR_CODE_FENCED_LEADER_EPOCH},
		{5, 6, messages.ErrorCode_ERROR_CODE_UNKNOWN_LEADER_EPOCH},
		{0, 0, messages.ErrorCode_ERROR_CODE_UNSPECIFIED},
	}
	for _, tc := range tests {
		if got := CheckLeaderEpoch(tc.current, tc.requested); got != tc.want {
			t.Errorf("CheckLeaderEpoch(%d, %d) = %v, want %v", tc.current, tc.requested, got, tc.want)
		}
	}
}

// epochLog is a log reduced to what truncation looks at: its leader-epoch
// checkpoint (epoch, start offset) and its end offset.
type epochLog struct {
	epochs []int32
	starts []int64
	leo    int64
}

// elog builds an epochLog from its end offset and (epoch, start) pairs.
func elog(leo int64, pairs ...int64) *epochLog {
	l := &epochLog{leo: leo}
	for i := 0; i+1 < len(pairs); i += 2 {
		l.epochs = append(l.epochs, int32(pairs[i]))
		l.starts = append(l.starts, pairs[i+1])
	}
	return l
}

// endOffsetFor has storage.Log.EndOffsetForEpoch's contract (Kafka's
// LeaderEpochFileCache.endOffsetFor).
func (l *epochLog) endOffsetFor(epoch int32) (int32, int64) {
	n := len(l.epochs)
	if epoch < 0 || n == 0 {
		return UndefinedEpoch, UndefinedOffset
	}
	if l.epochs[n-1] == epoch {
		return epoch, l.leo
	}
	next := slices.IndexFunc(l.epochs, func(e int32) bool { return e > epoch })
	switch next {
	case -1:
		return UndefinedEpoch, UndefinedOffset
	case 0:
		return epoch, l.starts[0]
	}
	return l.epochs[next-1], l.starts[next]
}

func (l *epochLog) latestEpoch() int32 {
	if len(l.epochs) == 0 {
		return UndefinedEpoch
	}
	return l.epochs[len(l.epochs)-1]
}

func (l *epochLog) truncateTo(offset int64) {
	if offset >= l.leo {
		return
	}
	l.leo = offset
	keep := len(l.starts)
	for keep > 0 && l.starts[keep-1] >= offset {
		keep--
	}
	l.epochs, l.starts = l.epochs[:keep], l.starts[:keep]
}

// epochAt is the epoch of the record at offset, or -1 before the first
// entry (below the log start, or a log without epochs).
func (l *epochLog) epochAt(offset int64) int32 {
	e := UndefinedEpoch
	for i, s := range l.starts {
		if s <= offset {
			e = l.epochs[i]
		}
	}
	return e
}

// TestTruncationRounds plays the follower's side of KIP-101/279 against a
// leader: ask about the latest local epoch, truncate as TruncationPoint
// says, repeat until it is completed; then the follower's log must be a
// prefix of the leader's (same epoch at every offset it kept).
func TestTruncationRounds(t *testing.T) {
	tests := []struct {
		name       string
		leader     *epochLog
		follower   *epochLog
		followerHW int64
		want       int64 // follower log end after truncation
		wantRounds int
	}{
		// KIP-101 scenario 1: the follower fetched m2 (offset 1) but had not
		// yet learned the high watermark covering it. Truncating to the
		// high watermark would lose m2 if the follower then became leader.
		{"KIP-101 1: keeps records above its high watermark that the leader has",
			elog(2, 0, 0), elog(2, 0, 0), 1, 2, 1},
		// KIP-101 scenario 2: both crashed; B came back first and wrote m3
		// at offset 1 in epoch 1, where A has m2 from epoch 0.
		{"KIP-101 2: different records at the same offset in different epochs",
			elog(2, 0, 0, 1, 1), elog(2, 0, 0), 1, 1, 1},
		{"uncommitted records of the old leader's epoch the new leader never got",
			elog(10, 0, 0, 1, 5, 2, 6), elog(8, 0, 0, 1, 5), 5, 6, 1},
		{"epochs the leader never saw: truncate, ask again (KIP-279)",
			elog(12, 0, 0, 1, 3, 3, 7), elog(10, 0, 0, 2, 5), 0, 3, 2},
		{"follower ahead of the leader in the leader's current epoch",
			elog(7, 0, 0), elog(10, 0, 0), 7, 7, 1},
		{"follower with no epochs at all: its high watermark",
			elog(10, 0, 0), elog(6), 4, 4, 1},
		{"follower entirely behind the leader: nothing to truncate",
			elog(20, 0, 0, 1, 10), elog(3, 0, 0), 3, 3, 1},
		{"follower behind the leader's first epoch: nothing to truncate",
			elog(60, 2, 50), elog(3, 0, 0), 3, 3, 1},
		{"follower's log starts after the leader's answer",
			elog(12, 0, 0, 1, 4, 4, 6), elog(8, 3, 5), 5, 5, 1},
		{"identical logs: nothing to truncate",
			elog(15, 0, 0, 1, 5, 2, 10), elog(10, 0, 0, 1, 5), 10, 10, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.follower
			hadEpochs := len(f.epochs) > 0
			for round := 1; ; round++ {
				if round > 10 {
					t.Fatal("truncation does not converge")
				}
				e, end := tc.leader.endOffsetFor(f.latestEpoch())
				d := TruncationPoint(f.leo, min(tc.followerHW, f.leo), f.endOffsetFor, EpochEndOffset{Epoch: e, EndOffset: end})
				f.truncateTo(d.TruncateTo)
				if !d.Completed {
					continue
				}
				if f.leo != tc.want || round != tc.wantRounds {
					t.Fatalf("log end %d after %d rounds, want %d after %d", f.leo, round, tc.want, tc.wantRounds)
				}
				break
			}
			if !hadEpochs {
				return
			}
			for off := int64(0); off < f.leo; off++ {
				fe, le := f.epochAt(off), tc.leader.epochAt(off)
				if fe != UndefinedEpoch && le != UndefinedEpoch && fe != le {
					t.Fatalf("offset %d: follower epoch %d, leader's %d", off, fe, le)
				}
			}
		})
	}
}

func TestTruncationPoint(t *testing.T) {
	fixed := func(epoch int32, end int64) func(int32) (int32, int64) {
		return func(int32) (int32, int64) { return epoch, end }
	}
	tests := []struct {
		name     string
		leo, hw  int64
		localEnd func(int32) (int32, int64)
		leader   EpochEndOffset
		want     TruncationDecision
	}{
		{"leader knows no such epoch: high watermark", 10, 4, fixed(3, 10), EpochEndOffset{-1, -1}, TruncationDecision{4, true}},
		{"end offset without epoch (old leader), below the log end", 10, 4, fixed(3, 10), EpochEndOffset{-1, 7}, TruncationDecision{7, true}},
		{"end offset without epoch (old leader), above the log end", 10, 4, fixed(3, 10), EpochEndOffset{-1, 12}, TruncationDecision{10, true}},
		{"follower tracks no epoch that old", 10, 4, fixed(-1, -1), EpochEndOffset{2, 6}, TruncationDecision{6, true}},
		{"same epoch: the smaller end", 10, 4, fixed(2, 8), EpochEndOffset{2, 6}, TruncationDecision{6, true}},
		{"same epoch: the local end is smaller", 10, 4, fixed(2, 5), EpochEndOffset{2, 6}, TruncationDecision{5, true}},
		{"same epoch: the log end is smaller", 5, 4, fixed(2, 8), EpochEndOffset{2, 9}, TruncationDecision{5, true}},
		{"epoch unknown to the follower: intermediate", 10, 4, fixed(1, 7), EpochEndOffset{2, 6}, TruncationDecision{7, false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := TruncationPoint(tc.leo, tc.hw, tc.localEnd, tc.leader); got != tc.want {
				t.Fatalf("TruncationPoint = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDivergingEpoch(t *testing.T) {
	ok := messages.ErrorCode_ERROR_CODE_UNSPECIFIED
	oor := messages.ErrorCode_ERROR_CODE_OFFSET_OUT_OF_RANGE
	leader := elog(20, 0, 0, 2, 10)
	tests := []struct {
		name             string
		leader           *epochLog
		logStart         int64
		lastFetchedEpoch int32
		fetchOffset      int64
		want             EpochEndOffset
		wantDiverged     bool
		wantCode         messages.ErrorCode
	}{
		{"no last fetched epoch: no check", leader, 0, -1, 15, EpochEndOffset{}, false, ok},
		{"same epoch, within it", leader, 0, 2, 15, EpochEndOffset{}, false, ok},
		{"at the end of an older epoch", leader, 0, 0, 10, EpochEndOffset{}, false, ok},
		{"past the end of an older epoch", leader, 0, 0, 12, EpochEndOffset{0, 10}, true, ok},
		{"an epoch the leader never had", leader, 0, 1, 12, EpochEndOffset{0, 10}, true, ok},
		{"below the leader's log start", elog(60, 2, 50), 50, 0, 3, EpochEndOffset{}, false, oor},
		{"leader has no epochs", elog(0), 0, 0, 0, EpochEndOffset{}, false, oor},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, diverged, code := DivergingEpoch(tc.lastFetchedEpoch, tc.fetchOffset, tc.logStart, tc.leader.endOffsetFor)
			if got != tc.want || diverged != tc.wantDiverged || code != tc.wantCode {
				t.Fatalf("DivergingEpoch = %+v, %v, %v; want %+v, %v, %v", got, diverged, code, tc.want, tc.wantDiverged, tc.wantCode)
			}
		})
	}
}

func TestFollowerHighWatermark(t *testing.T) {
	tests := []struct {
		leaderHW, logStart, leo, want int64
	}{
		{10, 0, 20, 10},
		{25, 0, 20, 20}, // not past our own log end
		{3, 5, 20, 5},   // not below our log start
		{7, 0, 7, 7},
	}
	for _, tc := range tests {
		if got := FollowerHighWatermark(tc.leaderHW, tc.logStart, tc.leo); got != tc.want {
			t.Errorf("FollowerHighWatermark(%d, %d, %d) = %d, want %d", tc.leaderHW, tc.logStart, tc.leo, got, tc.want)
		}
	}
}

// TestIneligibleFollower: a follower outside the ISR that was caught up
// holds the high watermark (it is about to join) only while its host is
// eligible; once its host is gone it neither holds it nor joins.
func TestIneligibleFollower(t *testing.T) {
	now := time.Unix(1000, 0)
	s, err := NewLeaderState(LeaderConfig{Self: 1, LeaderEpoch: 2, EpochStartOffset: 0, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, MinInsyncReplicas: 1, ReplicaLagTimeMax: 10 * time.Second}, now)
	if err != nil {
		t.Fatal(err)
	}
	s.OnLeaderAppend(10, now)
	// Follower 3 (outside the ISR) fetches at 10: caught up; then the
	// leader appends more and 2 catches up, 3 does not fetch again.
	if _, err := s.OnFollowerFetch(3, 10, 10, now); err != nil {
		t.Fatal(err)
	}
	s.AbortISRChange(time.Time{}) // the expansion it proposed is not committed
	s.OnLeaderAppend(20, now)
	if _, err := s.OnFollowerFetch(2, 20, 20, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if hw := s.HighWatermark(); hw != 10 {
		t.Fatalf("high watermark %d; want 10, held by the caught-up follower 3", hw)
	}
	if !s.SetIneligible(map[int32]bool{3: true}, now.Add(2*time.Second)) || s.HighWatermark() != 20 {
		t.Fatalf("after host 3 went: high watermark %d, want 20", s.HighWatermark())
	}
	if step, err := s.OnFollowerFetch(3, 20, 20, now.Add(3*time.Second)); err != nil || step.ExpandISR != nil {
		t.Fatalf("an ineligible follower was proposed into the ISR: %+v, %v", step, err)
	}
}

// A follower whose addition the controller refused (its host is in
// controlled shutdown) is not proposed again on its next fetches, nor
// waited for by the high watermark, until the backoff has passed.
func TestRefusedExpansionBacksOff(t *testing.T) {
	now := time.Unix(1000, 0)
	s, err := NewLeaderState(LeaderConfig{Self: 1, LeaderEpoch: 2, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, MinInsyncReplicas: 1, ReplicaLagTimeMax: 10 * time.Second}, now)
	if err != nil {
		t.Fatal(err)
	}
	s.OnLeaderAppend(10, now)
	mustFetch := func(id int32, off, leo int64, at time.Time) FetchStep {
		t.Helper()
		step, err := s.OnFollowerFetch(id, off, leo, at)
		if err != nil {
			t.Fatal(err)
		}
		return step
	}
	mustFetch(2, 10, 10, now)
	if step := mustFetch(3, 10, 10, now); step.ExpandISR == nil {
		t.Fatal("a caught-up follower was not proposed")
	}
	s.AbortISRChange(now) // refused
	for i := 1; i <= 9; i++ {
		if step := mustFetch(3, 10, 10, now.Add(time.Duration(i)*100*time.Millisecond)); step.ExpandISR != nil {
			t.Fatalf("proposed again %v after the refusal", time.Duration(i)*100*time.Millisecond)
		}
	}
	// Within the backoff the refused follower does not hold the HW back.
	s.OnLeaderAppend(20, now.Add(950*time.Millisecond))
	mustFetch(2, 20, 20, now.Add(960*time.Millisecond))
	if hw := s.HighWatermark(); hw != 20 {
		t.Fatalf("high watermark %d, want 20: the refused follower held it", hw)
	}
	if step := mustFetch(3, 20, 20, now.Add(1100*time.Millisecond)); step.ExpandISR == nil {
		t.Fatal("not proposed again after the backoff")
	}
}

// A follower whose host went away and came back (a restart) starts
// afresh: the high watermark does not wait for the position it had before
// its host stopped, which it may take seconds to fetch back to.
func TestReturningFollowerStartsAfresh(t *testing.T) {
	now := time.Unix(1000, 0)
	s, err := NewLeaderState(LeaderConfig{Self: 1, LeaderEpoch: 2, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, MinInsyncReplicas: 1, ReplicaLagTimeMax: 30 * time.Second}, now)
	if err != nil {
		t.Fatal(err)
	}
	s.OnLeaderAppend(10, now)
	if _, err := s.OnFollowerFetch(2, 10, 10, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.OnFollowerFetch(3, 10, 10, now); err != nil { // caught up, outside the ISR
		t.Fatal(err)
	}
	s.AbortISRChange(time.Time{})
	s.SetIneligible(map[int32]bool{3: true}, now.Add(time.Second)) // host 3 stops
	s.SetIneligible(map[int32]bool{}, now.Add(2*time.Second))      // and registers again
	s.OnLeaderAppend(20, now.Add(3*time.Second))
	if _, err := s.OnFollowerFetch(2, 20, 20, now.Add(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	if hw := s.HighWatermark(); hw != 20 {
		t.Fatalf("high watermark %d, want 20: held by the returning follower's position from before its restart", hw)
	}
	if f, _ := s.Follower(3); f.LogEndOffset != -1 {
		t.Fatalf("returning follower's log end %d, want -1 (unknown)", f.LogEndOffset)
	}
}
