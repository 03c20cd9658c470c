// group_test.go: the consumer actor in a group, against the fakes of
// fake_test.go — join and sync (MEMBER_ID_REQUIRED, then the generation),
// a second member's arrival under the cooperative and the eager protocol
// (revoke only what moves, commit before OnRevoked, every record handled
// exactly once without failures), a PID target's Assigned/Revoked messages
// and commit after its answers, leaving on Close, static members that keep
// their partitions, lost generations and coordinator moves, manual
// commits, pause/resume, and a pattern subscription picking up a new
// topic.

package consumer

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/actors/group"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
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
	clustertest.WaitFor(t, 15*time.Second, func() error {
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
	clustertest.WaitFor(t, 15*time.Second, func() error {
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
	clustertest.WaitFor(t, 5*time.Second, func() error {
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
// handling and commit-before-revoke. It returns the members.
func testRebalance(t *testing.T, assignors []group.Assignor) (*testMember, *testMember) {
	fc := newFakeCluster(t)
	fc.addTopic("t", 6)
	crd := fc.startCoordinator(nil)
	fc.produceAll("t", 0, 20)
	use := func(c *Config) { c.Assignors = assignors }
	a := startMember(t, fc, crd, "a", use)
	waitOwned(t, 6, []*testMember{a}, 6)
	want := values("t", 6, 0, 20)
	waitHandled(t, want, a)

	// Records keep coming while b joins.
	stop := make(chan struct{})
	produced := make(chan map[string]bool)
	go func() {
		all := map[string]bool{}
		for i := 20; ; i += 5 {
			select {
			case <-stop:
				produced <- all
				return
			default:
			}
			fc.produceAll("t", i, 5)
			for k := range values("t", 6, i, 5) {
				all[k] = true
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	b := startMember(t, fc, crd, "b", use)
	waitOwned(t, 6, []*testMember{a, b}, 3, 3)
	time.Sleep(200 * time.Millisecond)
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
	return a, b
}

func TestGroupCooperativeRebalance(t *testing.T) {
	a, _ := testRebalance(t, nil)
	a.mu.Lock()
	defer a.mu.Unlock()
	// KIP-429: a gave up only the 3 partitions b took, once, and kept
	// the others throughout; then the rest on close.
	if len(a.revoked) != 2 || len(a.revoked[0].Partitions) != 3 || a.revoked[0].Lost || len(a.revoked[0].Owned) != 3 {
		t.Fatalf("a's revocations %+v; want 3 partitions, then the other 3 on close", a.revoked)
	}
}

func TestGroupEagerRebalance(t *testing.T) {
	a, _ := testRebalance(t, []group.Assignor{group.Range()})
	a.mu.Lock()
	defer a.mu.Unlock()
	// Eager: a gave up everything before rejoining.
	if len(a.revoked) < 2 || len(a.revoked[0].Partitions) != 6 || len(a.revoked[0].Owned) != 0 {
		t.Fatalf("a's revocations %+v; want all 6 partitions first", a.revoked)
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
			if got := s.crd.committed(testGroup, tp); got != s.pos[tp] {
				s.log = append(s.log, fmt.Sprintf("BAD: %s committed %d at Revoked, handled up to %d", tp, got, s.pos[tp]))
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
	clustertest.WaitFor(t, 5*time.Second, func() error {
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
	clustertest.WaitFor(t, 5*time.Second, func() error {
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

func TestGroupStaticMemberKeepsItsPartitions(t *testing.T) {
	fc := newFakeCluster(t)
	fc.addTopic("t", 4)
	crd := fc.startCoordinator(nil)
	static := func(id string) func(*Config) {
		return func(c *Config) { c.GroupInstanceID = id; c.SessionTimeout = 5 * time.Second }
	}
	a := startMember(t, fc, crd, "a", static("ia"))
	b := startMember(t, fc, crd, "b", static("ib"))
	waitOwned(t, 4, []*testMember{a, b}, 2, 2)
	gen := crd.view(t, testGroup).Generation
	bOwned := b.ownedNow()
	a.mu.Lock()
	aRevoked, aAssigned := len(a.revoked), len(a.assigned)
	a.mu.Unlock()
	fc.produceAll("t", 0, 10)
	waitHandled(t, values("t", 4, 0, 10), a, b)

	// A static member's close does not leave the group ...
	b.close(t)
	if v := crd.view(t, testGroup); len(v.Members) != 2 || v.Generation != gen {
		t.Fatalf("after a static member's close the group is %+v; want both members, generation %d", v, gen)
	}
	// ... so when it comes back it gets its partitions back at once,
	// without a rebalance.
	fc.produceAll("t", 10, 10)
	b2 := startMember(t, fc, crd, "b2", static("ib"))
	waitOwned(t, 4, []*testMember{a, b2}, 2, 2)
	if got := b2.ownedNow(); fmt.Sprint(got) != fmt.Sprint(bOwned) {
		t.Fatalf("the restarted static member owns %v, before %v", got, bOwned)
	}
	if v := crd.view(t, testGroup); v.Generation != gen {
		t.Fatalf("generation %d after the static member returned, want %d (no rebalance)", v.Generation, gen)
	}
	a.mu.Lock()
	if len(a.revoked) != aRevoked || len(a.assigned) != aAssigned {
		t.Errorf("a saw revocations %v, assignments %v: a rebalance happened", a.revoked[aRevoked:], a.assigned[aAssigned:])
	}
	a.mu.Unlock()
	want := merge(values("t", 4, 0, 10), values("t", 4, 10, 10))
	waitHandled(t, want, a, b, b2)
	checkExactlyOnce(t, want, a, b, b2) // b committed on close: b2 starts there
	a.close(t)
	b2.close(t)
}

func TestGroupLostGenerationAndCoordinatorMoves(t *testing.T) {
	faults := &coordFaults{}
	fc, crd, a := oneMember(t, 2, faults, nil)

	// The coordinator moved: the member finds it again and carries on in
	// its generation.
	finds, forgets := fc.counters()
	faults.set(&faults.heartbeats, messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR)
	clustertest.WaitFor(t, 5*time.Second, func() error {
		f, g := fc.counters()
		if f <= finds || g <= forgets {
			return fmt.Errorf("finds %d forgets %d, before %d %d", f, g, finds, forgets)
		}
		return nil
	})
	time.Sleep(200 * time.Millisecond)
	if v := crd.view(t, testGroup); v.Generation != 1 {
		t.Fatalf("generation %d after a coordinator move, want 1 (no rebalance)", v.Generation)
	}

	// The coordinator forgot the member: its partitions are lost (no
	// commit) and it joins again as a new member.
	faults.set(&faults.heartbeats, messages.ErrorCode_ERROR_CODE_UNKNOWN_MEMBER_ID)
	clustertest.WaitFor(t, 5*time.Second, func() error {
		a.mu.Lock()
		defer a.mu.Unlock()
		if len(a.revoked) == 0 || !a.revoked[0].Lost || len(a.revoked[0].Partitions) != 2 {
			return fmt.Errorf("revocations %+v, want both partitions lost", a.revoked)
		}
		if len(a.assigned) < 2 || len(a.owned) != 2 {
			return fmt.Errorf("assignments %+v, want a new one of both partitions", a.assigned)
		}
		return nil
	})

	// A commit refused for a stale generation: lost again, and rejoined.
	fc.produceAll("t", 0, 3)
	faults.set(&faults.commits, messages.ErrorCode_ERROR_CODE_ILLEGAL_GENERATION)
	clustertest.WaitFor(t, 5*time.Second, func() error {
		a.mu.Lock()
		defer a.mu.Unlock()
		if len(a.revoked) < 2 || !a.revoked[1].Lost || len(a.owned) != 2 {
			return fmt.Errorf("revocations %+v owned %v", a.revoked, a.owned)
		}
		return nil
	})
	clustertest.WaitFor(t, 5*time.Second, func() error {
		if got := crd.committed(testGroup, TopicPartition{"t", 0}); got != 3 {
			return fmt.Errorf("t-0 committed %d, want 3", got)
		}
		return nil
	})
	a.close(t)
}

func TestGroupFencedInstanceIsFatal(t *testing.T) {
	faults := &coordFaults{}
	_, _, a := oneMember(t, 2, faults, nil)
	faults.set(&faults.heartbeats, messages.ErrorCode_ERROR_CODE_FENCED_INSTANCE_ID)
	clustertest.WaitFor(t, 5*time.Second, func() error {
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, err := range a.errs {
			if errors.Is(err, ErrGroupFatal) && len(a.owned) == 0 {
				return nil
			}
		}
		return fmt.Errorf("errors %v, owned %v", a.errs, a.owned)
	})
	a.close(t)
}

func TestManualCommit(t *testing.T) {
	fc := newFakeCluster(t)
	fc.addTopic("t", 2)
	crd := fc.startCoordinator(nil)
	fc.produceAll("t", 0, 5)
	a := startMember(t, fc, crd, "a", func(c *Config) { c.DisableAutoCommit = true })
	waitHandled(t, values("t", 2, 0, 5), a)
	time.Sleep(300 * time.Millisecond)
	if got := crd.committed(testGroup, TopicPartition{"t", 0}); got != -1 {
		t.Fatalf("committed %d without auto-commit", got)
	}
	offs, err := CommitSync(fc.sys.Root, a.pid, nil, 5*time.Second)
	if err != nil || len(offs) != 2 || offs[0].Offset != 5 || offs[1].Offset != 5 {
		t.Fatalf("commit of the positions: %+v, %v", offs, err)
	}
	offs, err = CommitSync(fc.sys.Root, a.pid, []client.CommitOffset{{Topic: "t", Partition: 1, Offset: 2, LeaderEpoch: -1}}, 5*time.Second)
	if err != nil || len(offs) != 1 || crd.committed(testGroup, TopicPartition{"t", 1}) != 2 {
		t.Fatalf("commit of given offsets: %+v, %v", offs, err)
	}
	// Nothing moved since: nothing to commit.
	if offs, err := CommitSync(fc.sys.Root, a.pid, nil, 5*time.Second); err != nil || len(offs) != 1 || offs[0].Partition != 1 {
		t.Fatalf("commit again: %+v, %v (want t-1 only: its commit was moved back)", offs, err)
	}
	a.close(t) // no auto-commit: close commits nothing
	if got := crd.committed(testGroup, TopicPartition{"t", 0}); got != 5 {
		t.Fatalf("t-0 committed %d", got)
	}
}

func TestPauseResume(t *testing.T) {
	fc, _, a := oneMember(t, 2, nil, nil)
	fc.sys.Root.Send(a.pid, &Pause{Partitions: []TopicPartition{{"t", 0}}})
	time.Sleep(50 * time.Millisecond)
	fc.produceAll("t", 0, 5)
	onlyT1 := map[string]bool{}
	for v := range values("t", 2, 0, 5) {
		if strings.HasPrefix(v, "t/1/") {
			onlyT1[v] = true
		}
	}
	waitHandled(t, onlyT1, a)
	time.Sleep(300 * time.Millisecond) // several fetch rounds
	a.mu.Lock()
	for v := range a.handled {
		if strings.HasPrefix(v, "t/0/") {
			t.Errorf("record %s of the paused partition handled", v)
		}
	}
	a.mu.Unlock()
	fc.sys.Root.Send(a.pid, &Resume{Partitions: []TopicPartition{{"t", 0}}})
	want := values("t", 2, 0, 5)
	waitHandled(t, want, a)
	checkExactlyOnce(t, want, a)
	a.close(t)
}

func TestSeek(t *testing.T) {
	fc := newFakeCluster(t)
	fc.addTopic("t", 1)
	crd := fc.startCoordinator(nil)
	fc.produceAll("t", 0, 5)
	a := startMember(t, fc, crd, "a", nil)
	waitHandled(t, values("t", 1, 0, 5), a)
	fc.sys.Root.Send(a.pid, &Seek{Partition: TopicPartition{"t", 0}, Offset: 3})
	clustertest.WaitFor(t, 5*time.Second, func() error {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.handled["t/0/3"] != 2 || a.handled["t/0/4"] != 2 || a.handled["t/0/2"] != 1 {
			return fmt.Errorf("handled %v, want offsets 3 and 4 again", a.handled)
		}
		return nil
	})
	a.close(t)
}

func TestPatternSubscriptionFollowsNewTopics(t *testing.T) {
	fc := newFakeCluster(t)
	fc.addTopic("orders-eu", 2)
	fc.addTopic("payments", 2)
	crd := fc.startCoordinator(nil)
	a := startMember(t, fc, crd, "a", func(c *Config) {
		c.Topics, c.TopicRegex = nil, regexp.MustCompile("orders-.*")
		c.MetadataMaxAge = 100 * time.Millisecond
	})
	waitOwned(t, 2, []*testMember{a}, 2)
	// A new matching topic is picked up at the next metadata refresh.
	fc.addTopic("orders-us", 3)
	fc.produceAll("orders-us", 0, 4)
	clustertest.WaitFor(t, 10*time.Second, func() error {
		if got := a.ownedNow(); len(got) != 5 {
			return fmt.Errorf("owned %v, want 5 partitions of orders-eu and orders-us", got)
		}
		return nil
	})
	waitHandled(t, values("orders-us", 3, 0, 4), a)
	a.mu.Lock()
	for v := range a.handled {
		if strings.HasPrefix(v, "payments") {
			t.Errorf("handled %s of a topic the pattern does not match", v)
		}
	}
	a.mu.Unlock()
	a.close(t)
}

func TestManualAssignmentWithGroupCommits(t *testing.T) {
	fc := newFakeCluster(t)
	fc.addTopic("t", 2)
	crd := fc.startCoordinator(nil)
	fc.produceAll("t", 0, 6)
	crd.setCommitted(testGroup, TopicPartition{"t", 1}, 4)
	a := startMember(t, fc, crd, "a", func(c *Config) { c.Topics, c.Topic, c.Partitions = nil, "t", []int32{1} })
	waitHandled(t, map[string]bool{"t/1/4": true, "t/1/5": true}, a)
	a.close(t)
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.handled) != 2 {
		t.Fatalf("handled %v, want t-1 from its committed offset 4", a.handled)
	}
	if got := crd.committed(testGroup, TopicPartition{"t", 1}); got != 6 {
		t.Fatalf("committed %d, want 6", got)
	}
}

// TestGroupRebalanceHintRejoinsAtOnce: with heartbeats a minute apart, a
// stable member learns of a second member's arrival only from the
// coordinator's RebalanceStarted hint, and rejoins at once; hints for
// another generation, member or group are ignored; without hints the
// member learns nothing before its heartbeat (the coordinator's rebalance
// timeout removes it instead).
func TestGroupRebalanceHintRejoinsAtOnce(t *testing.T) {
	slow := func(c *Config) {
		c.HeartbeatInterval, c.SessionTimeout, c.RebalanceTimeout = time.Minute, 2*time.Minute, 2*time.Second
	}
	fc, crd, a := oneMember(t, 6, nil, slow)
	time.Sleep(500 * time.Millisecond) // past the early heartbeats
	v := crd.view(t, testGroup)
	if v.State != group.Stable || len(v.Members) != 1 {
		t.Fatalf("group %+v, want Stable with a", v)
	}
	member, gen := v.Members[0], v.Generation

	// Stale hints change nothing.
	for _, h := range []*messages.RebalanceStarted{
		{GroupId: testGroup, GenerationId: gen - 1, MemberId: member},
		{GroupId: testGroup, GenerationId: gen, MemberId: "someone-else"},
		{GroupId: "other", GenerationId: gen, MemberId: member},
	} {
		fc.sys.Root.Send(a.pid, h)
	}
	joins := func() int {
		n := 0
		for _, e := range crd.eventLog() {
			if strings.HasPrefix(e, "join "+member) {
				n++
			}
		}
		return n
	}
	before := joins()
	time.Sleep(200 * time.Millisecond)
	if n := joins(); n != before {
		t.Fatalf("a rejoined %d times after stale hints", n-before)
	}

	// b joins: a is hinted and rejoins well before its heartbeat.
	t0 := time.Now()
	b := startMember(t, fc, crd, "b", slow)
	waitOwned(t, 6, []*testMember{a, b}, 3, 3)
	if d := time.Since(t0); d > time.Second {
		t.Errorf("the rebalance took %v with a hint; want well below a second", d)
	}
	if !slices.Contains(crd.eventLog(), fmt.Sprintf("hint %s %d", member, gen)) {
		t.Fatalf("no hint to a in %v", crd.eventLog())
	}
	if n := joins(); n <= before {
		t.Fatalf("a did not rejoin; events %v", crd.eventLog())
	}
	if v := crd.view(t, testGroup); !slices.Contains(v.Members, member) {
		t.Fatalf("a is no longer a member: %+v", v)
	}
}

// TestGroupRebalanceWithoutHints: hints are only hints — with none, a
// member learns of a rebalance from its heartbeat, as before.
func TestGroupRebalanceWithoutHints(t *testing.T) {
	faults := &coordFaults{noHints: true}
	change := func(c *Config) { c.HeartbeatInterval = 300 * time.Millisecond }
	fc, crd, a := oneMember(t, 6, faults, change)
	b := startMember(t, fc, crd, "b", change)
	waitOwned(t, 6, []*testMember{a, b}, 3, 3)
	for _, e := range crd.eventLog() {
		if strings.HasPrefix(e, "hint ") {
			t.Fatalf("hinted with hints off: %v", crd.eventLog())
		}
	}
}
