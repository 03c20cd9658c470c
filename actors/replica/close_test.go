// close_test.go: a stop and a Reopen answer every request the replica
// holds or gets meanwhile.

package replica

import (
	"errors"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage"
)

// listOffsets sends n ListOffsets requests without waiting for them.
func (h *harness) listOffsets(n int) []*actor.Future {
	fs := make([]*actor.Future, n)
	for i := range fs {
		fs[i] = h.system.Root.RequestFuture(h.pid, &messages.ListOffsetsRequest{Topic: "t", Partition: 0, Timestamp: messages.LatestTimestamp, CurrentLeaderEpoch: -1}, timeout)
	}
	return fs
}

// answers waits for every future's ListOffsetsResponse; its error codes.
func answers(t *testing.T, fs []*actor.Future) map[messages.ErrorCode]int {
	t.Helper()
	codes := map[messages.ErrorCode]int{}
	for i, f := range fs {
		res, err := f.Result()
		if err != nil {
			t.Fatalf("request %d of %d: %v", i, len(fs), err)
		}
		codes[res.(*messages.ListOffsetsResponse).ErrorCode]++
	}
	return codes
}

// TestStoppedReplicaAnswersEveryRequest: a stop (a system message, ahead
// of the mailbox) with requests queued behind a parked long-poll: the
// long-poll is answered NOT_LEADER_OR_FOLLOWER, every queued request a
// dead letter (Props' mailbox), none waits out its timeout, and the log
// reopens whole. The requests and the stop queue while the replica is
// inside a write (held by gateFS), so the stop always finds them queued.
func TestStoppedReplicaAnswersEveryRequest(t *testing.T) {
	fsys := &gateFS{held: make(chan struct{}), release: make(chan struct{}), holdAt: 2}
	h := &harness{t: t, system: actor.NewActorSystem(), dir: t.TempDir(), fs: fsys}
	h.start()
	t.Cleanup(func() { h.stop() })
	h.produce(batch(t, 3, "a"), messages.Acks_ACKS_LEADER)
	// MinBytes above what the second produce adds: the fetch stays parked.
	parked := h.system.Root.RequestFuture(h.pid, &messages.FetchRequest{Topic: "t", Partition: 0, FetchOffset: 3, MaxBytes: 1 << 20, MinBytes: 1 << 20, MaxWaitMs: 60_000, CurrentLeaderEpoch: -1, ReplicaId: -1}, timeout)
	// GetState is answered once the fetch is parked.
	h.request(GetState)
	second := h.system.Root.RequestFuture(h.pid, &messages.ProduceRequest{Topic: "t", Partition: 0, Acks: messages.Acks_ACKS_LEADER,
		Records: batch(t, 2, "b"), CurrentLeaderEpoch: -1}, timeout)
	select {
	case <-fsys.held:
	case <-time.After(timeout):
		close(fsys.release)
		t.Fatal("the second produce never reached its write")
	}
	queued := h.listOffsets(100)
	stopped := h.system.Root.StopFuture(h.pid)
	close(fsys.release)
	if res, err := second.Result(); err != nil {
		t.Fatalf("second produce: %v", err)
	} else if r := res.(*messages.ProduceResponse); r.ErrorCode != 0 {
		t.Fatalf("second produce: %v", r)
	}
	res, err := parked.Result()
	if err != nil {
		t.Fatalf("parked fetch: %v", err)
	}
	if f := res.(*messages.FetchResponse); f.ErrorCode != messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER {
		t.Fatalf("parked fetch answered %v, want NOT_LEADER_OR_FOLLOWER", f.ErrorCode)
	}
	for i, f := range queued {
		res, err := f.Result()
		switch {
		case errors.Is(err, actor.ErrDeadLetter):
		case err != nil:
			t.Fatalf("request %d queued at the stop: %v", i, err)
		default:
			t.Fatalf("request %d queued behind the stop was served: %v", i, res)
		}
	}
	if err := stopped.Wait(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	h.pid = nil
	h.fs = nil
	h.start()
	if recs := decode(t, h.fetch(0, 0).Records); len(recs) != 5 {
		t.Fatalf("after reopening: %d records, want 5", len(recs))
	}
}

func TestReopenAppliesNewConfigsInPlace(t *testing.T) {
	h := newHarness(t, t.TempDir())
	h.produce(batch(t, 3, "a"), messages.Acks_ACKS_LEADER)
	parked := h.system.Root.RequestFuture(h.pid, &messages.FetchRequest{Topic: "t", Partition: 0, FetchOffset: 3, MaxBytes: 1 << 20, MinBytes: 1, MaxWaitMs: 60_000, CurrentLeaderEpoch: -1, ReplicaId: -1}, timeout)
	before := h.listOffsets(50)
	h.system.Root.Send(h.pid, &Reopen{Config: Config{Topic: "t", Partition: 0, Dir: h.dir, LeaderEpoch: 4, Logger: quiet(),
		Log: storage.Config{MaxMessageBytes: 100}}})
	after := h.listOffsets(50)
	// Nothing is dropped: every request before and after the reopen is
	// served, by the replica before it or by the reopened one.
	if codes := answers(t, append(before, after...)); codes[0] != 100 {
		t.Fatalf("requests around the reopen: %v, want 100 answered", codes)
	}
	res, err := parked.Result()
	if err != nil {
		t.Fatalf("parked fetch: %v", err)
	}
	if f := res.(*messages.FetchResponse); f.ErrorCode != messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER {
		t.Fatalf("parked fetch answered %v, want NOT_LEADER_OR_FOLLOWER", f.ErrorCode)
	}
	// The new config holds (max.message.bytes 100), the log is the same,
	// and the replica serves at the new leader epoch.
	if p := h.produce(batch(t, 20, "big"), messages.Acks_ACKS_LEADER); p.ErrorCode != messages.ErrorCode_ERROR_CODE_MESSAGE_TOO_LARGE {
		t.Fatalf("produce over the new max.message.bytes: %v", p.ErrorCode)
	}
	if p := h.produce(batch(t, 1, "s"), messages.Acks_ACKS_LEADER); p.ErrorCode != 0 || p.BaseOffset != 3 {
		t.Fatalf("produce after the reopen: %+v", p)
	}
	if recs := decode(t, h.fetch(0, 0).Records); len(recs) != 4 || string(recs[3].Key) != "s-k0" {
		t.Fatalf("after the reopen: %d records", len(recs))
	}
	if st := h.request(GetState).(State); st.LeaderEpoch != 4 {
		t.Fatalf("leader epoch after the reopen: %d, want 4", st.LeaderEpoch)
	}
}
