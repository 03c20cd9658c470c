// expire_test.go: offset expiry through the coordinator actor, beside a
// real leader replica, with a fake clock and a short check interval. A
// group gets offsets from outside group management (so their commit times
// are well before it empties), then a member, which leaves: its offsets
// must expire exactly OffsetsRetention after it became Empty — not from
// their commit times (premature), not from a new coordinator's load time
// after a failover (late) — because the empty-since time is persisted in
// the group metadata record and restored on replay. Once they expire, the
// group leaves ListGroups, and a coordinator loading the log afterwards
// finds neither offsets nor group: the tombstones were written.

package coordinator_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/actors/coordinator"
	core "github.com/actorlog/actorlog/actors/group"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
)

// fakeClock is a settable clock shared by the coordinators of a test.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

const testRetention = time.Hour

// startExpiryCoordinator starts a coordinator at epoch beside rep on clock,
// with an hour's offsets retention checked every 20 ms (real time).
func startExpiryCoordinator(t *testing.T, sys *actor.ActorSystem, rep *actor.PID, epoch int32, clock *fakeClock) *actor.PID {
	t.Helper()
	cfg := core.DefaultConfig()
	cfg.InitialRebalanceDelay = 0 // the fake clock does not move on its own
	cfg.MinSessionTimeout = 100 * time.Millisecond
	cfg.OffsetsRetention = testRetention
	cfg.OffsetsRetentionCheckInterval = 20 * time.Millisecond
	return sys.Root.Spawn(coordinator.Props(coordinator.Config{
		Partition: partition, Partitions: partitions, LeaderEpoch: epoch, Replica: rep,
		Topics: map[string]int32{"events": 3}, Group: &cfg, CommitTimeout: time.Second,
		Now: clock.Now, Logger: clustertest.Logger(t),
	}))
}

// afterChecks waits until two more expiry checks have run on p's
// coordinator with nothing in flight, and returns its state.
func afterChecks(t *testing.T, p pair) coordinator.State {
	t.Helper()
	n := request[coordinator.State](t, p.sys, p.crd, coordinator.GetState).ExpiryChecks
	return waitState(t, p.sys, p.crd, func(st coordinator.State) error {
		if st.ExpiryChecks < n+2 || st.InFlight > 0 {
			return fmt.Errorf("%d expiry checks, %d writes in flight", st.ExpiryChecks, st.InFlight)
		}
		return nil
	})
}

// listed returns the group ids p's coordinator lists.
func listed(t *testing.T, p pair) []string {
	t.Helper()
	var ids []string
	for _, g := range request[*messages.ListGroupsResponse](t, p.sys, p.crd, &messages.ListGroupsRequest{}).Groups {
		ids = append(ids, g.GroupId)
	}
	return ids
}

func TestOffsetsExpireFromWhenTheGroupEmptied(t *testing.T) {
	sys := actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	dir := t.TempDir()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: t0}
	start := func(epoch int32) pair {
		rep := startReplica(t, sys, dir, epoch)
		p := pair{sys: sys, replica: rep, crd: startExpiryCoordinator(t, sys, rep, epoch, clock)}
		waitState(t, sys, p.crd, loaded)
		return p
	}
	p := start(0)

	// Offsets committed from outside group management at t0...
	outside := &member{t: t, sys: sys, crd: p.crd}
	if resp := outside.commit(-1, map[int32]int64{0: 5, 1: 6}); resp.Err() != nil || resp.Results[0].ErrorCode != 0 || resp.Results[1].ErrorCode != 0 {
		t.Fatalf("commit from outside: %v", resp)
	}
	// ...then, 50 minutes later, a member comes and goes: the group is
	// Empty from emptied on, 10 minutes before the commits' retention
	// ends.
	emptied := t0.Add(50 * time.Minute)
	clock.set(emptied)
	a := newMember(t, p, "a", "")
	stableWith(t, a)
	a.leave()
	if d := describeGroup(t, p); d.GroupState != "Empty" {
		t.Fatalf("after the member left: %v", d)
	}

	// Past the commits' retention, before the group's: kept.
	clock.set(emptied.Add(30 * time.Minute))
	if st := afterChecks(t, p); st.Offsets != 2 || st.HostedGroups != 1 {
		t.Fatalf("offsets expired from their commit times: state %+v", st)
	}

	// A failover: the new coordinator restores the empty-since time (it
	// neither falls back to the commit times nor starts over).
	p.stop(t)
	p = start(1)
	if st := afterChecks(t, p); st.Offsets != 2 || st.HostedGroups != 1 {
		t.Fatalf("after the failover, offsets expired early: state %+v", st)
	}
	clock.set(emptied.Add(testRetention - time.Second))
	if st := afterChecks(t, p); st.Offsets != 2 {
		t.Fatalf("offsets expired a second before the retention: state %+v", st)
	}
	if ids := listed(t, p); len(ids) != 1 || ids[0] != group1 {
		t.Fatalf("listed %v before expiry, want [%s]", ids, group1)
	}

	// At the retention: the offsets and the group go.
	clock.set(emptied.Add(testRetention))
	waitState(t, sys, p.crd, func(st coordinator.State) error {
		if st.Offsets != 0 || st.HostedGroups != 0 {
			return fmt.Errorf("not expired yet: %+v", st)
		}
		return nil
	})
	if ids := listed(t, p); len(ids) != 0 {
		t.Fatalf("listed %v after expiry, want none", ids)
	}
	if d := describeGroup(t, p); d.GroupState != "Dead" {
		t.Fatalf("expired group described as %v, want Dead", d)
	}

	// The tombstones are in the log: the next coordinator finds nothing.
	p.stop(t)
	p = start(2)
	if st := request[coordinator.State](t, sys, p.crd, coordinator.GetState); st.Offsets != 0 || st.HostedGroups != 0 || st.LoadedRecords == 0 {
		t.Fatalf("after expiry and a failover: state %+v, want no offsets and no group", st)
	}
	if got := fetched(t, p); len(got) != 0 {
		t.Fatalf("fetched %v after expiry, want nothing", got)
	}
}

// TestOffsetsOfAGroupWithMembersDoNotExpire: a Stable group's offsets stay,
// however old; the same offsets committed from outside to a group that
// never had members expire from their commit time.
func TestOffsetsOfAGroupWithMembersDoNotExpire(t *testing.T) {
	sys := actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: t0}
	rep := startReplica(t, sys, t.TempDir(), 0)
	p := pair{sys: sys, replica: rep, crd: startExpiryCoordinator(t, sys, rep, 0, clock)}
	waitState(t, sys, p.crd, loaded)

	a := newMember(t, p, "a", "")
	gen := stableWith(t, a)
	if resp := a.commit(gen, map[int32]int64{0: 3}); resp.Err() != nil || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("commit: %v", resp)
	}
	// Far past the retention, the member still heartbeating (its session
	// runs on the fake clock too).
	clock.set(t0.Add(10 * testRetention))
	if code := a.heartbeat(); code != 0 {
		t.Fatalf("heartbeat: %v", code)
	}
	if st := afterChecks(t, p); st.Offsets != 1 || st.HostedGroups != 1 || st.Members != 1 {
		t.Fatalf("a Stable group's offsets expired: state %+v", st)
	}
}
