// leader_test.go: the replica actor as the leader of a replicated
// partition, with a follower simulated by hand-made replica fetches: the
// high watermark follows the ISR, acks=all waits for it, consumers see only
// what is below it, the ISR shrinks through the controller path, and a
// non-replica fetching as a follower is refused.

package replica

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/internal/poll"
	"github.com/actorlog/actorlog/messages"
)

type proposals struct {
	mu  sync.Mutex
	got []ISRChange
}

func (p *proposals) add(c ISRChange) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, c)
}

func (p *proposals) last() (ISRChange, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.got) == 0 {
		return ISRChange{}, 0
	}
	return p.got[len(p.got)-1], len(p.got)
}

// parentSync asks the parent of spawnUnderParent to answer once it has
// handled every message queued before.
type parentSync struct{}

// spawnUnderParent spawns a replica of cfg as the child of a parent that
// records the ISR changes it proposes (as the broker would forward them)
// and answers none; it returns the replica's PID and the parent's.
func spawnUnderParent(t *testing.T, system *actor.ActorSystem, cfg Config, props *proposals) (child, parent *actor.PID) {
	t.Helper()
	spawned := make(chan *actor.PID, 1)
	parent = system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case *actor.Started:
			spawned <- ctx.Spawn(Props(cfg))
		case *ProposeISR:
			if m.Topic != cfg.Topic || m.Partition != cfg.Partition || ctx.Sender() == nil {
				t.Errorf("proposal %+v from %v, want one for %s-%d from the replica", m, ctx.Sender(), cfg.Topic, cfg.Partition)
			}
			props.add(m.Change)
		case parentSync:
			ctx.Respond(parentSync{})
		}
	}))
	select {
	case child = <-spawned:
		return child, parent
	case <-time.After(timeout):
		t.Fatal("the parent did not spawn the replica")
		return nil, nil
	}
}

// proposed returns the last ISR change the replica proposed and how many
// it did, once the parent has handled every proposal the replica sent
// before the answers the test already has (a proposal reaches the parent
// before the reply the replica sends after it, so it is queued before a
// sync the test sends after that reply).
func (h *harness) proposed(props *proposals) (ISRChange, int) {
	h.t.Helper()
	if _, err := h.system.Root.RequestFuture(h.parent, parentSync{}, timeout).Result(); err != nil {
		h.t.Fatalf("sync with the replica's parent: %v", err)
	}
	return props.last()
}

func startLeader(t *testing.T, props *proposals, lag time.Duration) *harness {
	t.Helper()
	h := &harness{t: t, system: actor.NewActorSystem(), dir: t.TempDir()}
	h.pid, h.parent = spawnUnderParent(t, h.system, Config{
		Topic: "t", Partition: 0, Dir: h.dir, LeaderEpoch: 3, Logger: quiet(),
		Self: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, PartitionEpoch: 5, MinInsyncReplicas: 2,
		ReplicaLagTimeMax: lag, Hosts: inProcessFollower,
	}, props)
	t.Cleanup(h.stop)
	return h
}

func (h *harness) followerFetch(id int32, offset int64, lastEpoch int32) *messages.FetchResponse {
	h.t.Helper()
	return h.request(&messages.FetchRequest{Topic: "t", Partition: 0, FetchOffset: offset, MaxBytes: 1 << 20, MinBytes: 0,
		CurrentLeaderEpoch: 3, ReplicaId: id, LastFetchedEpoch: lastEpoch}).(*messages.FetchResponse)
}

func TestLeaderHighWatermarkFollowsTheISR(t *testing.T) {
	props := &proposals{}
	h := startLeader(t, props, time.Minute)

	// acks=all waits: the follower has nothing yet.
	fut := h.system.Root.RequestFuture(h.pid, &messages.ProduceRequest{Topic: "t", Partition: 0, Acks: messages.Acks_ACKS_ALL,
		Records: batch(t, 5, "a"), CurrentLeaderEpoch: -1, CorrelationId: 1}, timeout)
	// acks=1 is answered at once.
	if r := h.produce(batch(t, 3, "b"), messages.Acks_ACKS_LEADER); r.ErrorCode != 0 || r.BaseOffset != 5 {
		t.Fatalf("acks=1: %+v", r)
	}
	if st := h.request(GetState).(State); st.HighWatermark != 0 || st.LogEndOffset != 8 {
		t.Fatalf("before the follower fetched: %+v", st)
	}
	// Consumers see nothing below a zero high watermark.
	if r := h.fetch(0, 0); r.ErrorCode != 0 || len(r.Records) != 0 || r.HighWatermark != 0 {
		t.Fatalf("consumer fetch before replication: %d bytes, hw %d, %v", len(r.Records), r.HighWatermark, r.ErrorCode)
	}

	// The follower reads up to the log end, not the high watermark.
	f := h.followerFetch(2, 0, -1)
	if f.ErrorCode != 0 || len(decode(t, f.Records)) != 8 {
		t.Fatalf("follower fetch: %v, %d records", f.ErrorCode, len(decode(t, f.Records)))
	}
	// Its next fetch, at 5, says it has the acks=all batch: the high
	// watermark moves to 5 and the produce is answered.
	if f := h.followerFetch(2, 5, 3); f.ErrorCode != 0 || f.HighWatermark != 5 {
		t.Fatalf("follower at 5: %v, hw %d", f.ErrorCode, f.HighWatermark)
	}
	res, err := fut.Result()
	if err != nil {
		t.Fatal(err)
	}
	if r := res.(*messages.ProduceResponse); r.ErrorCode != 0 || r.BaseOffset != 0 {
		t.Fatalf("acks=all answer: %+v", r)
	}
	if r := h.fetch(0, 0); len(decode(t, r.Records)) != 5 || r.HighWatermark != 5 {
		t.Fatalf("consumer sees %d records, hw %d; want the 5 below the high watermark", len(decode(t, r.Records)), r.HighWatermark)
	}
	if f := h.followerFetch(2, 8, 3); f.HighWatermark != 8 {
		t.Fatalf("follower caught up: hw %d", f.HighWatermark)
	}
	if _, n := h.proposed(props); n != 0 {
		t.Fatalf("proposals while the ISR was healthy: %+v", props.got)
	}

	// A non-replica fetching as a follower, and a stale epoch, are refused.
	if f := h.followerFetch(7, 0, -1); f.ErrorCode != messages.ErrorCode_ERROR_CODE_CLUSTER_AUTHORIZATION_FAILED {
		t.Fatalf("replica 7: %v", f.ErrorCode)
	}
	stale := h.request(&messages.FetchRequest{Topic: "t", Partition: 0, FetchOffset: 8, MaxBytes: 1 << 20, CurrentLeaderEpoch: 2, ReplicaId: 2}).(*messages.FetchResponse)
	if stale.ErrorCode != messages.ErrorCode_ERROR_CODE_FENCED_LEADER_EPOCH {
		t.Fatalf("stale epoch: %v", stale.ErrorCode)
	}
	// A follower whose last epoch the leader never wrote is told where its
	// log diverges, with no records.
	if f := h.followerFetch(2, 8, 2); f.DivergingEpoch == nil || len(f.Records) != 0 {
		t.Fatalf("diverging follower: %+v", f)
	}
}

func TestLeaderShrinksTheISRAndRefusesAcksAll(t *testing.T) {
	props := &proposals{}
	h := startLeader(t, props, 200*time.Millisecond)
	if r := h.produce(batch(t, 2, "a"), messages.Acks_ACKS_LEADER); r.ErrorCode != 0 {
		t.Fatal(r)
	}
	// The follower never fetches: after the lag time the leader proposes
	// the ISR without it.
	var c ISRChange
	poll.Until(t, timeout, func() error {
		var n int
		if c, n = props.last(); n == 0 {
			return errors.New("no ISR shrink proposed")
		}
		return nil
	})
	if len(c.ISR) != 1 || c.ISR[0] != 1 || c.LeaderEpoch != 3 || c.PartitionEpoch != 5 {
		t.Fatalf("proposal %+v", c)
	}
	// Not committed yet: acks=all still accepted (it waits).
	fut := h.system.Root.RequestFuture(h.pid, &messages.ProduceRequest{Topic: "t", Partition: 0, Acks: messages.Acks_ACKS_ALL, TimeoutMs: 300,
		Records: batch(t, 1, "b"), CurrentLeaderEpoch: -1, CorrelationId: 2}, timeout)
	res, err := fut.Result()
	if err != nil {
		t.Fatal(err)
	}
	if r := res.(*messages.ProduceResponse); r.ErrorCode != messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT {
		t.Fatalf("acks=all with a silent follower: %+v", r)
	}
	// The controller commits it: acks=all is refused up front, as
	// min.insync.replicas is 2, and the high watermark no longer waits
	// for the follower — but stays put, since the ISR is under the
	// minimum (Kafka 4, KIP-966).
	h.system.Root.Send(h.pid, &UpdateISR{LeaderEpoch: 3, PartitionEpoch: 6, ISR: []int32{1}})
	if r := h.produce(batch(t, 1, "c"), messages.Acks_ACKS_ALL); r.ErrorCode != messages.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS {
		t.Fatalf("acks=all under min ISR: %+v", r)
	}
	if st := h.request(GetState).(State); st.LogEndOffset != 3 {
		t.Fatalf("a refused acks=all changed the log: %+v", st)
	}
	// A stale commit (older partition epoch) is ignored.
	h.system.Root.Send(h.pid, &UpdateISR{LeaderEpoch: 3, PartitionEpoch: 4, ISR: []int32{1, 2}})
	if r := h.produce(batch(t, 1, "d"), messages.Acks_ACKS_ALL); r.ErrorCode != messages.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS {
		t.Fatalf("after a stale ISR update: %+v", r)
	}
	// The follower catches up: it is proposed back into the ISR.
	h.followerFetch(2, 0, -1)
	if f := h.followerFetch(2, 4, 3); f.ErrorCode != 0 {
		t.Fatal(f.ErrorCode)
	}
	if c, n := h.proposed(props); n != 2 || len(c.ISR) != 2 {
		t.Fatalf("expand proposal %+v (%d proposals)", c, n)
	}
}

// fakeClock is a Config.Now that moves only when the test moves it.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestLeaderLagIsMeasuredOnItsClock: the ISR's lag is read from
// Config.Now, not the wall clock — a follower that never fetches stays in
// the ISR while the replica's clock stands still, however long the real
// wait, and is proposed out once the clock passes the lag time.
func TestLeaderLagIsMeasuredOnItsClock(t *testing.T) {
	props, clock := &proposals{}, &fakeClock{now: time.Unix(1_700_000_000, 0)}
	h := &harness{t: t, system: actor.NewActorSystem(), dir: t.TempDir()}
	h.pid, h.parent = spawnUnderParent(t, h.system, Config{
		Topic: "t", Partition: 0, Dir: h.dir, LeaderEpoch: 3, Logger: quiet(),
		Self: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, PartitionEpoch: 5, MinInsyncReplicas: 2,
		ReplicaLagTimeMax: 100 * time.Millisecond, Hosts: inProcessFollower, Now: clock.Now,
	}, props)
	t.Cleanup(h.stop)
	if r := h.produce(batch(t, 2, "a"), messages.Acks_ACKS_LEADER); r.ErrorCode != 0 {
		t.Fatal(r)
	}
	// Several ISR checks (every 50 ms of real time) see no time pass.
	poll.Never(t, 300*time.Millisecond, func() error {
		if c, n := props.last(); n != 0 {
			return fmt.Errorf("ISR change %+v proposed while the replica's clock stood still", c)
		}
		return nil
	})
	clock.advance(time.Second)
	poll.Until(t, timeout, func() error {
		c, n := props.last()
		if n == 0 {
			return errors.New("no ISR shrink proposed after the clock passed the lag time")
		}
		if len(c.ISR) != 1 || c.ISR[0] != 1 || c.LeaderEpoch != 3 || c.PartitionEpoch != 5 {
			t.Fatalf("proposal %+v, want ISR [1] at epochs 3/5", c)
		}
		return nil
	})
}
