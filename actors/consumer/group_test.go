// group_test.go: actor smoke tests of a consumer in a group, against the
// fakes of fake_test.go (the protocol's scenarios step by step are the
// member core's table tests, member_test.go): join, sync, consume,
// auto-commit, commit and leave on Close; a second member's arrival under
// the cooperative protocol (revoke only what moves, commit before
// OnRevoked, every record handled exactly once, rebalance hints) and the
// first member's leaving; and a PID target's Assigned/Revoked messages,
// with revocations and the close waiting for its answers. The helpers
// here serve consumer_test.go too.

package consumer

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/actors/group"
	"github.com/actorlog/actorlog/internal/poll"
)

const testGroup = "g"

// testMember is one consumer actor in the test group, recording what it
// handled and its rebalance callbacks.
type testMember struct {
	t    *testing.T
	name string
	fc   *fakeCluster
	crd  *fakeCoordinator
	pid  *actor.PID

	mu        sync.Mutex
	handled   map[string]int // value → times handled
	positions map[TopicPartition]int64
	owned     []TopicPartition
	assigned  []Assigned
	revoked   []Revoked
	errs      []error
	// commitOnRevoke checks that, when OnRevoked runs, the coordinator
	// holds this member's positions of the revoked partitions.
	revokeChecks []string
}

func memberConfig(m *testMember) Config {
	return Config{
		Cluster: m.fc, GroupID: testGroup, Topics: []string{"t"}, Start: Earliest(),
		Handler:    m.handle,
		OnAssigned: m.onAssigned, OnRevoked: m.onRevoked,
		OnError: func(err error) {
			m.mu.Lock()
			m.errs = append(m.errs, err)
			m.mu.Unlock()
		},
		MaxWait: 100 * time.Millisecond, RetryBackoff: 20 * time.Millisecond,
		SessionTimeout: time.Second, HeartbeatInterval: 50 * time.Millisecond, RebalanceTimeout: 3 * time.Second,
		AutoCommitInterval: 100 * time.Millisecond, ClientID: m.name, Logger: testLogger(m.t).WithField("member", m.name),
	}
}

// startMember spawns a member; change adjusts its config.
func startMember(t *testing.T, fc *fakeCluster, crd *fakeCoordinator, name string, change func(*Config)) *testMember {
	t.Helper()
	m := &testMember{t: t, name: name, fc: fc, crd: crd, handled: map[string]int{}, positions: map[TopicPartition]int64{}}
	cfg := memberConfig(m)
	if change != nil {
		change(&cfg)
	}
	props, err := Props(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.pid = fc.sys.Root.Spawn(props)
	return m
}

func (m *testMember) handle(msgs []Message) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range msgs {
		m.handled[string(r.Value)]++
		m.positions[TopicPartition{r.Topic, r.Partition}] = r.Offset + 1
	}
}

func (m *testMember) onAssigned(a Assigned) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.assigned = append(m.assigned, a)
	m.owned = a.Owned
}

func (m *testMember) onRevoked(r Revoked) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.revoked = append(m.revoked, r)
	m.owned = r.Owned
	if r.Lost {
		return
	}
	for _, tp := range r.Partitions {
		if pos, ok := m.positions[tp]; ok {
			if got := m.crd.committed(testGroup, tp); got != pos {
				m.revokeChecks = append(m.revokeChecks, fmt.Sprintf("%s: committed %d at OnRevoked, handled up to %d", tp, got, pos))
			}
		}
	}
}

func (m *testMember) ownedNow() []TopicPartition {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.owned)
}

func (m *testMember) close(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := CloseAndStop(ctx, m.fc.sys.Root, m.pid); err != nil {
		t.Fatalf("close %s: %v", m.name, err)
	}
}

// waitOwned waits until the members own counts[i] partitions each, and
// together every partition of topic t exactly once.
func waitOwned(t *testing.T, total int, members []*testMember, counts ...int) {
	t.Helper()
	poll.Until(t, 15*time.Second, func() error {
		seen := map[TopicPartition]string{}
		for i, m := range members {
			owned := m.ownedNow()
			if len(owned) != counts[i] {
				return fmt.Errorf("%s owns %v, want %d partitions", m.name, owned, counts[i])
			}
			for _, tp := range owned {
				if other, dup := seen[tp]; dup {
					return fmt.Errorf("%s owned by %s and %s", tp, other, m.name)
				}
				seen[tp] = m.name
			}
		}
		if len(seen) != total {
			return fmt.Errorf("%d partitions owned, want %d", len(seen), total)
		}
		return nil
	})
}

// waitHandled waits until the members handled every value of the topic
// produced so far (want per partition) at least once.
func waitHandled(t *testing.T, want map[string]bool, members ...*testMember) {
	t.Helper()
	poll.Until(t, 15*time.Second, func() error {
		missing := 0
		for v := range want {
			n := 0
			for _, m := range members {
				m.mu.Lock()
				n += m.handled[v]
				m.mu.Unlock()
			}
			if n == 0 {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d of %d records not handled yet", missing, len(want))
		}
		return nil
	})
}

// checkExactlyOnce fails on any value handled more than once in all.
func checkExactlyOnce(t *testing.T, want map[string]bool, members ...*testMember) {
	t.Helper()
	total := map[string]int{}
	for _, m := range members {
		m.mu.Lock()
		for v, n := range m.handled {
			total[v] += n
		}
		m.mu.Unlock()
	}
	for v := range want {
		if total[v] != 1 {
			t.Errorf("record %s handled %d times", v, total[v])
		}
	}
}

// values returns the values produced by produceAll for partitions parts.
func values(topic string, parts, from, n int) map[string]bool {
	out := map[string]bool{}
	for p := range parts {
		for i := from; i < from+n; i++ {
			out[topic+"/"+strconv.Itoa(p)+"/"+strconv.Itoa(i)] = true
		}
	}
	return out
}

func merge(ms ...map[string]bool) map[string]bool {
	out := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			out[k] = true
		}
	}
	return out
}

func (m *testMember) checkRevokes(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.revokeChecks {
		t.Errorf("%s: %s", m.name, c)
	}
}

// oneMember starts topic t of n partitions, a coordinator with faults
// (nil: none) and member a, and waits until a owns every partition.
func oneMember(t *testing.T, n int32, faults *coordFaults, change func(*Config)) (*fakeCluster, *fakeCoordinator, *testMember) {
	t.Helper()
	fc := newFakeCluster(t)
	fc.addTopic("t", n)
	crd := fc.startCoordinator(faults)
	a := startMember(t, fc, crd, "a", change)
	waitOwned(t, int(n), []*testMember{a}, int(n))
	return fc, crd, a
}

func TestGroupJoinSyncConsumeCommit(t *testing.T) {
	fc := newFakeCluster(t)
	fc.addTopic("t", 4)
	crd := fc.startCoordinator(nil)
	fc.produceAll("t", 0, 10)
	a := startMember(t, fc, crd, "a", nil)
	waitOwned(t, 4, []*testMember{a}, 4)
	want := values("t", 4, 0, 10)
	waitHandled(t, want, a)
	// Auto-commit brings the coordinator to the positions.
	poll.Until(t, 5*time.Second, func() error {
		for p := range int32(4) {
			if got := crd.committed(testGroup, TopicPartition{"t", p}); got != 10 {
				return fmt.Errorf("t-%d committed %d, want 10", p, got)
			}
		}
		return nil
	})
	v := crd.view(t, testGroup)
	if v.State != group.Stable || v.Generation != 1 || len(v.Members) != 1 || !strings.HasPrefix(v.Members[0], "a-") {
		t.Fatalf("group %+v, want Stable generation 1 with member a-...", v)
	}
	a.mu.Lock()
	first := a.assigned[0]
	a.mu.Unlock()
	if len(first.Partitions) != 4 || first.Generation != 1 || first.MemberID != v.Members[0] {
		t.Fatalf("first Assigned %+v", first)
	}
	// More records flow through the same generation.
	fc.produceAll("t", 10, 5)
	want = merge(want, values("t", 4, 10, 5))
	waitHandled(t, want, a)
	checkExactlyOnce(t, want, a)
	a.close(t)
	if v := crd.view(t, testGroup); v.State != group.Empty {
		t.Fatalf("after close the group is %+v, want Empty (the member left)", v)
	}
	for p := range int32(4) {
		if got := crd.committed(testGroup, TopicPartition{"t", p}); got != 15 {
			t.Fatalf("t-%d committed %d after close, want 15", p, got)
		}
	}
}

// testRebalance runs a second member joining a consuming one, then the
// first leaving, under the assignors given, and checks exactly-once
// handling and commit-before-revoke. It returns the members and the
// coordinator.
func testRebalance(t *testing.T, assignors []group.Assignor) (*testMember, *testMember, *fakeCoordinator) {
	fc := newFakeCluster(t)
	fc.addTopic("t", 6)
	crd := fc.startCoordinator(nil)
	fc.produceAll("t", 0, 20)
	use := func(c *Config) { c.Assignors = assignors }
	a := startMember(t, fc, crd, "a", use)
	waitOwned(t, 6, []*testMember{a}, 6)
	want := values("t", 6, 0, 20)
	waitHandled(t, want, a)

	// Records keep coming while b joins: 5 per partition every 20 ms.
	stop := make(chan struct{})
	produced := make(chan map[string]bool)
	var batches atomic.Int64
	go func() {
		all := map[string]bool{}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := 20; ; i += 5 {
			fc.produceAll("t", i, 5)
			for k := range values("t", 6, i, 5) {
				all[k] = true
			}
			batches.Add(1)
			select {
			case <-stop:
				produced <- all
				return
			case <-tick.C:
			}
		}
	}()
	b := startMember(t, fc, crd, "b", use)
	waitOwned(t, 6, []*testMember{a, b}, 3, 3)
	// And for ten more batches once the two share the partitions.
	since := batches.Load()
	poll.Until(t, 5*time.Second, func() error {
		if n := batches.Load() - since; n < 10 {
			return fmt.Errorf("%d batches produced since the rebalance, want 10", n)
		}
		return nil
	})
	close(stop)
	want = merge(want, <-produced)
	waitHandled(t, want, a, b)
	checkExactlyOnce(t, want, a, b)
	a.checkRevokes(t)

	// a leaves: b gets everything, at once (no session timeout).
	t0 := time.Now()
	a.close(t)
	waitOwned(t, 6, []*testMember{b}, 6)
	if d := time.Since(t0); d > 900*time.Millisecond {
		t.Errorf("b took %v to take over after a left; want well below the 1 s session timeout", d)
	}
	fc.produceAll("t", 10000, 3)
	want = merge(want, values("t", 6, 10000, 3))
	waitHandled(t, want, a, b)
	checkExactlyOnce(t, want, a, b)
	b.close(t)
	return a, b, crd
}

func TestGroupCooperativeRebalance(t *testing.T) {
	a, _, crd := testRebalance(t, nil)
	// The coordinator hinted a at b's arrival: it found the consumer
	// actor named in a's requests.
	if countEvents(crd, "hint ") == 0 {
		t.Errorf("no rebalance hint sent: %v", crd.eventLog())
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	// KIP-429: a gave up only the 3 partitions b took, once, and kept
	// the others throughout; then the rest on close.
	if len(a.revoked) != 2 || len(a.revoked[0].Partitions) != 3 || a.revoked[0].Lost || len(a.revoked[0].Owned) != 3 {
		t.Fatalf("a's revocations %+v; want 3 partitions, then the other 3 on close", a.revoked)
	}
}

// slowTarget is a PID target that answers Records after a delay and
// records Assigned/Revoked.
type slowTarget struct {
	delay time.Duration
	mu    sync.Mutex
	log   []string
	pos   map[TopicPartition]int64
	crd   *fakeCoordinator
}

func (s *slowTarget) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *Records:
		// A sleep is right here: it is the behaviour under test, a
		// target that takes a while over every Records (so revocations
		// and the close must wait for it), not a wait for a condition.
		time.Sleep(s.delay)
		s.mu.Lock()
		for _, r := range msg.Messages {
			s.pos[TopicPartition{r.Topic, r.Partition}] = r.Offset + 1
		}
		s.mu.Unlock()
		ctx.Respond(true)
	case *Assigned:
		s.mu.Lock()
		s.log = append(s.log, fmt.Sprintf("assigned %v gen %d by %v", msg.Partitions, msg.Generation, msg.Consumer != nil))
		s.mu.Unlock()
	case *Revoked:
		s.mu.Lock()
		for _, tp := range msg.Partitions {
			// Committed before the Revoked was sent: at least what was
			// handled. (Not exactly: the target reads the Revoked on its
			// own time, when the partition's next owner, which started
			// at that commit, may have committed more.) A partition
			// revoked before the target handled any of its records
			// needs no commit (-1: none).
			handled, ok := s.pos[tp]
			if got := s.crd.committed(testGroup, tp); ok && got < handled {
				s.log = append(s.log, fmt.Sprintf("BAD: %s committed %d at Revoked, handled up to %d", tp, got, handled))
			}
		}
		s.log = append(s.log, fmt.Sprintf("revoked %v", msg.Partitions))
		s.mu.Unlock()
	}
}

func TestGroupTargetGetsAssignedAndRevoked(t *testing.T) {
	fc := newFakeCluster(t)
	fc.addTopic("t", 2)
	crd := fc.startCoordinator(nil)
	fc.produceAll("t", 0, 200)
	target := &slowTarget{delay: 30 * time.Millisecond, pos: map[TopicPartition]int64{}, crd: crd}
	tpid := fc.sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return target }))
	a := startMember(t, fc, crd, "a", func(c *Config) {
		c.Handler, c.Target = nil, tpid
		c.MaxBytes = 200 // a few records per fetch: the target stays busy
	})
	poll.Until(t, 5*time.Second, func() error {
		target.mu.Lock()
		defer target.mu.Unlock()
		if len(target.log) == 0 || !strings.HasPrefix(target.log[0], "assigned [t-0 t-1] gen 1 by true") {
			return fmt.Errorf("target log %v", target.log)
		}
		return nil
	})
	b := startMember(t, fc, crd, "b", nil)
	waitOwned(t, 1, []*testMember{b}, 1)
	a.close(t)
	// a's leave starts a rebalance; a commit from b while the group is
	// completing it is refused (REBALANCE_IN_PROGRESS, as Kafka), so b
	// closes once it owns both partitions.
	waitOwned(t, 2, []*testMember{b}, 2)
	b.close(t)
	// The target gets the close's Revoked before the close answers, but
	// handles it on its own time.
	poll.Until(t, 5*time.Second, func() error {
		target.mu.Lock()
		defer target.mu.Unlock()
		if l := target.log[len(target.log)-1]; l != "revoked [t-0]" {
			return fmt.Errorf("target log %v, want the close's revocation last", target.log)
		}
		return nil
	})
	target.mu.Lock()
	defer target.mu.Unlock()
	revokes := 0
	for _, l := range target.log {
		if strings.HasPrefix(l, "BAD") {
			t.Error(l)
		}
		if strings.HasPrefix(l, "revoked") {
			revokes++
		}
	}
	if revokes != 2 {
		t.Fatalf("target log %v: want a revocation of one partition for b, then one on close", target.log)
	}
}

// countEvents returns how many of crd's events start with prefix.
func countEvents(crd *fakeCoordinator, prefix string) int {
	n := 0
	for _, e := range crd.eventLog() {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}
