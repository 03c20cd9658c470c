// follower_test.go: a leader and a follower replica actor in one actor
// system replicating for real: acks=all completes once the follower has
// the batch, the follower's log becomes identical to the leader's, and a
// follower whose log diverged (records of an epoch the leader never had)
// truncates before it fetches.

package replica

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/internal/poll"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage"
)

// inProcessFollower is the host registry of a leader whose follower, host
// 2, runs in the same actor system: its requests come from protoactor's
// local address.
var inProcessFollower = map[int32]string{2: "nonhost"}

// pair is a leader (host 1) and a follower (host 2) of partition t-0.
type pair struct {
	t                *testing.T
	system           *actor.ActorSystem
	leader, follower *harness
}

func startPair(t *testing.T, leaderDir, followerDir string, epoch int32) *pair {
	t.Helper()
	system := actor.NewActorSystem()
	p := &pair{t: t, system: system}
	p.leader = &harness{t: t, system: system, dir: leaderDir}
	p.leader.pid = system.Root.Spawn(Props(Config{Topic: "t", Partition: 0, Dir: leaderDir, LeaderEpoch: epoch, Logger: quiet(),
		Self: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, MinInsyncReplicas: 2, Hosts: inProcessFollower}))
	p.follower = &harness{t: t, system: system, dir: followerDir}
	p.follower.pid = system.Root.Spawn(Props(Config{Topic: "t", Partition: 0, Dir: followerDir, LeaderEpoch: epoch, Logger: quiet(),
		Self: 2, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, MinInsyncReplicas: 2, Follow: p.leader.pid}))
	t.Cleanup(func() {
		p.follower.stop()
		p.leader.stop()
	})
	return p
}

// waitSame waits until both replicas have the same log end offset and
// high watermark, and returns the leader's state.
func (p *pair) waitSame() State {
	p.t.Helper()
	var l State
	poll.Until(p.t, timeout, func() error {
		l = p.leader.request(GetState).(State)
		f := p.follower.request(GetState).(State)
		if l.LogEndOffset == f.LogEndOffset && l.HighWatermark == f.HighWatermark && l.HighWatermark == l.LogEndOffset {
			return nil
		}
		return fmt.Errorf("replicas did not converge: leader %+v, follower %+v", l, f)
	})
	return l
}

// logBytes reads a closed log's batches.
func logBytes(t *testing.T, dir string) []byte {
	t.Helper()
	b, err := storage.ReadAllDir(dir, storage.Config{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFollowerReplicates(t *testing.T) {
	p := startPair(t, t.TempDir(), t.TempDir(), 3)
	for i := 0; i < 20; i++ {
		r := p.leader.request(&messages.ProduceRequest{Topic: "t", Partition: 0, Acks: messages.Acks_ACKS_ALL,
			Records: batch(t, 10, fmt.Sprintf("b%d", i)), CurrentLeaderEpoch: -1, CorrelationId: int64(i)}).(*messages.ProduceResponse)
		if r.ErrorCode != 0 || r.BaseOffset != int64(10*i) {
			t.Fatalf("acks=all produce %d: %+v", i, r)
		}
	}
	st := p.waitSame()
	if st.LogEndOffset != 200 {
		t.Fatalf("leader %+v", st)
	}
	// The follower refuses clients.
	if r := p.follower.produce(batch(t, 1, "x"), messages.Acks_ACKS_LEADER); r.ErrorCode != messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER {
		t.Fatalf("produce to follower: %v", r.ErrorCode)
	}
	if r := p.follower.fetch(0, 0); r.ErrorCode != messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER {
		t.Fatalf("consumer fetch from follower: %v", r.ErrorCode)
	}
	p.follower.stop()
	p.leader.stop()
	if a, b := logBytes(t, p.leader.dir), logBytes(t, p.follower.dir); !bytes.Equal(a, b) || len(a) == 0 {
		t.Fatalf("logs differ: leader %d bytes, follower %d bytes", len(a), len(b))
	}
}

func TestFollowerTruncatesADivergentLog(t *testing.T) {
	// KIP-101 scenario 2: both replicas wrote offsets 0-4 (epoch 1); then
	// the follower alone wrote 5-9 in epoch 2 (never committed) while the
	// new leader wrote 5-7 in epoch 3. The follower must drop its 5-9.
	leaderDir, followerDir := t.TempDir(), t.TempDir()
	write := func(dir string, parts ...struct {
		epoch int32
		n     int
		tag   string
	}) {
		l, err := storage.Open(dir, storage.Config{Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range parts {
			if err := l.AssignEpoch(p.epoch, l.LogEndOffset()); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Append(batch(t, p.n, p.tag), p.epoch); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	type part = struct {
		epoch int32
		n     int
		tag   string
	}
	write(leaderDir, part{1, 5, "common"}, part{3, 3, "leader"})
	write(followerDir, part{1, 5, "common"}, part{2, 5, "lost"})

	p := startPair(t, leaderDir, followerDir, 4)
	if r := p.leader.request(&messages.ProduceRequest{Topic: "t", Partition: 0, Acks: messages.Acks_ACKS_ALL,
		Records: batch(t, 2, "new"), CurrentLeaderEpoch: -1}).(*messages.ProduceResponse); r.ErrorCode != 0 || r.BaseOffset != 8 {
		t.Fatalf("produce: %+v", r)
	}
	if st := p.waitSame(); st.LogEndOffset != 10 {
		t.Fatalf("after truncation and catch-up: %+v", st)
	}
	p.follower.stop()
	p.leader.stop()
	a, b := logBytes(t, leaderDir), logBytes(t, followerDir)
	if !bytes.Equal(a, b) {
		t.Fatalf("logs differ after truncation")
	}
	if bytes.Contains(b, []byte("lost-v")) {
		t.Fatal("the follower kept records of the epoch the leader never had")
	}
}

// A step an earlier incarnation of the follower scheduled (a retry timer
// firing after the broker restarted the replica under the same PID) is
// ignored: the follower keeps exactly one fetch in flight.
func TestStaleFollowerStepsAreIgnored(t *testing.T) {
	p := startPair(t, t.TempDir(), t.TempDir(), 3)
	p.waitSame()
	for i := 0; i < 5; i++ {
		p.system.Root.Send(p.follower.pid, fetchStep{}) // incarnation 0 is never a live one
		p.system.Root.Send(p.follower.pid, truncateStep{})
	}
	poll.Never(t, time.Second, func() error {
		if st := p.leader.request(GetState).(State); st.ParkedFetches > 1 {
			return fmt.Errorf("the leader holds %d parked fetches from one follower: stale steps started more fetch loops", st.ParkedFetches)
		}
		return nil
	})
}
