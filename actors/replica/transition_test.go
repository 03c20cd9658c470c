// transition_test.go: a leader change handled in place (Transition): the
// follower becomes leader and the old leader its follower, without
// stopping either actor. Every request either holds, queued before the
// change or parked in the old role, is answered — none waits out its
// timeout — and the two logs end identical.

package replica

import (
	"bytes"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/messages"
)

func TestTransitionAnswersEveryRequestAndSwapsRoles(t *testing.T) {
	leaderDir, followerDir := t.TempDir(), t.TempDir()
	p := startPair(t, leaderDir, followerDir, 3)
	for i := 0; i < 5; i++ {
		if r := p.leader.produce(batch(t, 4, "before"), messages.Acks_ACKS_ALL); r.ErrorCode != 0 {
			t.Fatalf("produce to the first leader: %v %s", r.ErrorCode, r.ErrorMessage)
		}
	}
	before := p.waitSame()

	// A consumer's long poll parked on the old leader at its log end.
	parked := p.system.Root.RequestFuture(p.leader.pid, &messages.FetchRequest{Topic: "t", Partition: 0, FetchOffset: before.LogEndOffset,
		MaxBytes: 1 << 20, MinBytes: 1, MaxWaitMs: 4000, CurrentLeaderEpoch: -1, ReplicaId: -1}, timeout)

	// Produce requests queued at host 2 while it is still a follower, then
	// the transition, then more: all in one mailbox.
	send := func(n int) []*actor.Future {
		var fs []*actor.Future
		for i := 0; i < n; i++ {
			fs = append(fs, p.system.Root.RequestFuture(p.follower.pid, &messages.ProduceRequest{Topic: "t", Partition: 0,
				Acks: messages.Acks_ACKS_ALL, Records: batch(t, 2, "after"), CurrentLeaderEpoch: -1, CorrelationId: int64(i)}, timeout))
		}
		return fs
	}
	early := send(20)
	start := time.Now()
	p.system.Root.Send(p.follower.pid, &Transition{Config: Config{Topic: "t", Partition: 0, Dir: followerDir, LeaderEpoch: 4, Logger: quiet(),
		Self: 2, Replicas: []int32{1, 2}, ISR: []int32{2, 1}, PartitionEpoch: 1, MinInsyncReplicas: 2, Hosts: map[int32]string{1: "nonhost"}}})
	late := send(20)
	p.system.Root.Send(p.leader.pid, &Transition{Config: Config{Topic: "t", Partition: 0, Dir: leaderDir, LeaderEpoch: 4, Logger: quiet(),
		Self: 1, Replicas: []int32{1, 2}, ISR: []int32{2, 1}, MinInsyncReplicas: 2, Follow: p.follower.pid}})

	res, err := parked.Result()
	if err != nil {
		t.Fatalf("the parked fetch was not answered: %v", err)
	}
	if f := res.(*messages.FetchResponse); f.ErrorCode != messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER {
		t.Fatalf("parked fetch on the old leader answered %v, want NOT_LEADER_OR_FOLLOWER", f.ErrorCode)
	}
	if waited := time.Since(start); waited > 2*time.Second {
		t.Fatalf("the parked fetch was answered after %v: it waited out its long poll instead of being answered at the change", waited)
	}
	for i, f := range early {
		res, err := f.Result()
		if err != nil {
			t.Fatalf("produce %d queued before the transition: %v", i, err)
		}
		// The follower refuses it; a request that arrived just after
		// the change is taken. Either is an answer.
		if r := res.(*messages.ProduceResponse); r.ErrorCode != 0 && r.ErrorCode != messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER {
			t.Fatalf("produce %d queued before the transition: %v %s", i, r.ErrorCode, r.ErrorMessage)
		}
	}
	for i, f := range late {
		res, err := f.Result()
		if err != nil {
			t.Fatalf("produce %d after the transition: %v", i, err)
		}
		if r := res.(*messages.ProduceResponse); r.ErrorCode != 0 {
			t.Fatalf("produce %d to the new leader: %v %s", i, r.ErrorCode, r.ErrorMessage)
		}
	}

	// The roles swapped: host 2 leads epoch 4, host 1 follows it.
	newLeader, newFollower := &pair{t: t, system: p.system, leader: p.follower, follower: p.leader}, p.leader
	after := newLeader.waitSame()
	if after.LeaderEpoch != 4 || after.LogEndOffset < before.LogEndOffset+40 {
		t.Fatalf("after the transition: %+v (before %+v)", after, before)
	}
	if r := newFollower.produce(batch(t, 1, "x"), messages.Acks_ACKS_LEADER); r.ErrorCode != messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER {
		t.Fatalf("produce to the old leader, now a follower: %v", r.ErrorCode)
	}
	p.follower.stop()
	p.leader.stop()
	if a, b := logBytes(t, leaderDir), logBytes(t, followerDir); !bytes.Equal(a, b) {
		t.Fatalf("logs differ after the transition: %d vs %d bytes", len(a), len(b))
	}
}
