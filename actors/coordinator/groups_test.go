// groups_test.go: consumer groups through the coordinator actor, beside a
// real leader replica — members join (KIP-394's second join), the leader
// assigns with the core's range assignor, everyone syncs and heartbeats,
// a second member triggers a rebalance, stale generations cannot commit,
// sessions expire on the coordinator's timer, DescribeGroups, ListGroups
// and DeleteGroups; and the group metadata written after each rebalance
// restores members, generation and assignments in the coordinator of the
// next leadership.

package coordinator_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/actors/coordinator"
	core "github.com/actorlog/actorlog/actors/group"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
)

// Group test settings: short sessions (long enough for a loaded machine);
// the initial rebalance delay is 200 ms.
const (
	session   = 2 * time.Second
	rebalance = 4 * time.Second
)

var eventsPartitions = map[string]int32{"events": 3}

// startGroupCoordinator starts a coordinator at epoch beside rep with the
// group settings of these tests.
func startGroupCoordinator(t *testing.T, sys *actor.ActorSystem, rep *actor.PID, epoch int32) *actor.PID {
	t.Helper()
	cfg := core.DefaultConfig()
	cfg.InitialRebalanceDelay = 200 * time.Millisecond
	cfg.MinSessionTimeout = 100 * time.Millisecond
	return sys.Root.Spawn(coordinator.Props(coordinator.Config{
		Partition: partition, Partitions: partitions, LeaderEpoch: epoch, Replica: rep,
		Topics: map[string]int32{"events": 3}, Group: &cfg, CommitTimeout: time.Second,
		Logger: clustertest.Logger(t),
	}))
}

// startGroupPair starts, in a new actor system, a replica and a loaded
// group coordinator beside it at epoch 0.
func startGroupPair(t *testing.T) pair {
	t.Helper()
	sys := actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	rep := startReplica(t, sys, t.TempDir(), 0)
	p := pair{sys: sys, replica: rep, crd: startGroupCoordinator(t, sys, rep, 0)}
	waitState(t, sys, p.crd, loaded)
	return p
}

// member is a group member as its consumer sees itself.
type member struct {
	t          *testing.T
	sys        *actor.ActorSystem
	crd        *actor.PID
	client     string
	instance   string
	id         string
	generation int32
	leader     string
	members    []*messages.JoinGroupResponseMember
	assignment core.Assignment
	// inbox, once listen was called, is the member actor named in m's
	// requests; hints gets the RebalanceStarted it receives.
	inbox *actor.PID
	hints chan *messages.RebalanceStarted
}

// listen spawns m's member actor, which passes the RebalanceStarted hints
// it receives to m.hints; m's requests name it from now on.
func (m *member) listen() {
	m.t.Helper()
	m.hints = make(chan *messages.RebalanceStarted, 16)
	hints := m.hints
	m.inbox = m.sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if h, ok := ctx.Message().(*messages.RebalanceStarted); ok {
			hints <- h
		}
	}))
	m.t.Cleanup(func() { m.sys.Root.Stop(m.inbox) })
}

// memberActor is what m's requests carry as member_actor.
func (m *member) memberActor() *messages.MemberActor {
	if m.inbox == nil {
		return nil
	}
	return &messages.MemberActor{Address: m.inbox.Address, Id: m.inbox.Id}
}

// hinted waits for m's next RebalanceStarted hint and checks it.
func (m *member) hinted(generation int32) {
	m.t.Helper()
	select {
	case h := <-m.hints:
		if h.GroupId != group1 || h.GenerationId != generation || h.MemberId != m.id {
			m.t.Fatalf("%s: hint %v, want group %q generation %d member %q", m.client, h, group1, generation, m.id)
		}
	case <-time.After(timeout):
		m.t.Fatalf("%s: no RebalanceStarted hint within %v", m.client, timeout)
	}
}

// notHinted checks that m has no hint waiting.
func (m *member) notHinted() {
	m.t.Helper()
	select {
	case h := <-m.hints:
		m.t.Fatalf("%s: unexpected hint %v", m.client, h)
	default:
	}
}

func newMember(t *testing.T, p pair, client, instance string) *member {
	return &member{t: t, sys: p.sys, crd: p.crd, client: client, instance: instance, generation: -1}
}

// joinFuture sends m's JoinGroup (subscribed to events, range assignor).
func (m *member) joinFuture() *actor.Future {
	sub := core.Subscription{Topics: []string{"events"}, Owned: m.assignment, Generation: m.generation}
	return m.sys.Root.RequestFuture(m.crd, &messages.JoinGroupRequest{
		CorrelationId: 11, GroupId: group1, MemberId: m.id, GroupInstanceId: m.instance,
		ProtocolType: core.ProtocolType, Protocols: core.Protocols(sub, core.Range()),
		SessionTimeoutMs: int32(session / time.Millisecond), RebalanceTimeoutMs: int32(rebalance / time.Millisecond),
		ClientId: m.client, MemberActor: m.memberActor(),
	}, timeout)
}

// joined reads a join's answer into m and returns its code.
func (m *member) joined(f *actor.Future) messages.ErrorCode {
	m.t.Helper()
	resp := result[*messages.JoinGroupResponse](m.t, f)
	if resp.CorrelationId != 11 {
		m.t.Fatalf("%s: join answer with correlation id %d", m.client, resp.CorrelationId)
	}
	switch resp.ErrorCode {
	case 0:
		m.id, m.generation, m.leader, m.members = resp.MemberId, resp.GenerationId, resp.Leader, resp.Members
	case messages.ErrorCode_ERROR_CODE_MEMBER_ID_REQUIRED:
		m.id = resp.MemberId
	}
	return resp.ErrorCode
}

// join joins (twice for a dynamic member without an id) and waits for
// the answer, which must be a success.
func (m *member) join() {
	m.t.Helper()
	code := m.joined(m.joinFuture())
	if code == messages.ErrorCode_ERROR_CODE_MEMBER_ID_REQUIRED {
		code = m.joined(m.joinFuture())
	}
	if code != 0 {
		m.t.Fatalf("%s: join: %v", m.client, code)
	}
}

// syncFuture sends m's SyncGroup; as leader, with the range assignment of
// the members it was told of.
func (m *member) syncFuture() *actor.Future {
	m.t.Helper()
	req := &messages.SyncGroupRequest{
		CorrelationId: 12, GroupId: group1, GenerationId: m.generation, MemberId: m.id, GroupInstanceId: m.instance,
		ProtocolType: core.ProtocolType, ProtocolName: "range", MemberActor: m.memberActor(),
	}
	if m.id == m.leader && len(m.members) > 0 {
		as, err := core.AssignGroup(core.Range(), m.members, eventsPartitions)
		if err != nil {
			m.t.Fatalf("assign: %v", err)
		}
		req.Assignments = as
	}
	return m.sys.Root.RequestFuture(m.crd, req, timeout)
}

// synced reads a sync's answer into m; it must be a success.
func (m *member) synced(f *actor.Future) {
	m.t.Helper()
	resp := result[*messages.SyncGroupResponse](m.t, f)
	if err := resp.Err(); err != nil || resp.CorrelationId != 12 {
		m.t.Fatalf("%s: sync: %v (correlation id %d)", m.client, err, resp.CorrelationId)
	}
	a, err := core.DecodeAssignment(resp.Assignment)
	if err != nil {
		m.t.Fatalf("%s: assignment: %v", m.client, err)
	}
	m.assignment = a
}

func (m *member) heartbeat() messages.ErrorCode {
	m.t.Helper()
	resp := request[*messages.HeartbeatResponse](m.t, m.sys, m.crd, &messages.HeartbeatRequest{
		CorrelationId: 13, GroupId: group1, GenerationId: m.generation, MemberId: m.id, GroupInstanceId: m.instance,
		MemberActor: m.memberActor(),
	})
	return resp.ErrorCode
}

func (m *member) commit(generation int32, offsets map[int32]int64) *messages.OffsetCommitResponse {
	m.t.Helper()
	ct := &messages.OffsetCommitTopic{Topic: "events"}
	for _, part := range slices.Sorted(maps.Keys(offsets)) {
		ct.Partitions = append(ct.Partitions, &messages.OffsetCommitPartition{Partition: part, Offset: offsets[part], LeaderEpoch: -1})
	}
	return request[*messages.OffsetCommitResponse](m.t, m.sys, m.crd, &messages.OffsetCommitRequest{
		GroupId: group1, GenerationId: generation, MemberId: m.id, GroupInstanceId: m.instance, Topics: []*messages.OffsetCommitTopic{ct},
	})
}

func (m *member) leave() messages.ErrorCode {
	m.t.Helper()
	resp := request[*messages.LeaveGroupResponse](m.t, m.sys, m.crd, &messages.LeaveGroupRequest{
		CorrelationId: 14, GroupId: group1, Members: []*messages.LeaveGroupRequestMember{{MemberId: m.id, GroupInstanceId: m.instance}},
	})
	if resp.ErrorCode != 0 || len(resp.Members) != 1 {
		m.t.Fatalf("%s: leave: %v", m.client, resp)
	}
	return resp.Members[0].ErrorCode
}

// group1 is the group of these tests, held by the tests' partition.
const group1 = group

func result[T any](t *testing.T, f *actor.Future) T {
	t.Helper()
	res, err := f.Result()
	if err != nil {
		t.Fatalf("answer: %v", err)
	}
	v, ok := res.(T)
	if !ok {
		t.Fatalf("answer %T (%v), want %T", res, res, v)
	}
	return v
}

// stableWith brings the group to a new generation with exactly ms as
// members (all rejoining, the leader assigning by range) and returns it.
func stableWith(t *testing.T, ms ...*member) int32 {
	t.Helper()
	joins := make([]*actor.Future, len(ms))
	for i, m := range ms {
		if m.id == "" && m.instance == "" {
			if code := m.joined(m.joinFuture()); code != messages.ErrorCode_ERROR_CODE_MEMBER_ID_REQUIRED {
				t.Fatalf("%s: first join: %v, want MEMBER_ID_REQUIRED", m.client, code)
			}
		}
		joins[i] = m.joinFuture()
	}
	for i, m := range ms {
		if code := m.joined(joins[i]); code != 0 {
			t.Fatalf("%s: join: %v", m.client, code)
		}
	}
	syncs := make([]*actor.Future, len(ms))
	for i, m := range ms {
		if m.generation != ms[0].generation {
			t.Fatalf("members in generations %d and %d", ms[0].generation, m.generation)
		}
		syncs[i] = m.syncFuture()
	}
	for i, m := range ms {
		m.synced(syncs[i])
	}
	checkAssignments(t, ms...)
	return ms[0].generation
}

// checkAssignments checks that ms own each partition of events exactly
// once.
func checkAssignments(t *testing.T, ms ...*member) {
	t.Helper()
	owners := map[int32]string{}
	for _, m := range ms {
		for _, p := range m.assignment["events"] {
			if o, dup := owners[p]; dup {
				t.Fatalf("partition %d owned by %s and %s", p, o, m.client)
			}
			owners[p] = m.client
		}
	}
	if len(owners) != 3 {
		t.Fatalf("owners %v, want every partition of events owned", owners)
	}
}

func describeGroup(t *testing.T, p pair) *messages.DescribedGroup {
	t.Helper()
	resp := request[*messages.DescribeGroupsResponse](t, p.sys, p.crd, &messages.DescribeGroupsRequest{CorrelationId: 15, GroupIds: []string{group1}})
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 || resp.CorrelationId != 15 {
		t.Fatalf("describe: %v", resp)
	}
	return resp.Groups[0]
}

func deleteGroup(t *testing.T, p pair) messages.ErrorCode {
	t.Helper()
	resp := request[*messages.DeleteGroupsResponse](t, p.sys, p.crd, &messages.DeleteGroupsRequest{CorrelationId: 16, GroupIds: []string{group1}})
	if len(resp.Results) != 1 || resp.CorrelationId != 16 {
		t.Fatalf("delete: %v", resp)
	}
	return resp.Results[0].ErrorCode
}

func TestGroupMembershipThroughTheCoordinator(t *testing.T) {
	p := startGroupPair(t)
	sys := p.sys

	// A first member: a generation of its own with every partition.
	a := newMember(t, p, "a", "")
	gen1 := stableWith(t, a)
	if gen1 != 1 || a.leader != a.id || len(a.assignment["events"]) != 3 {
		t.Fatalf("generation %d, leader %q, assignment %v: want generation 1 led by a with 3 partitions", gen1, a.leader, a.assignment)
	}
	if code := a.heartbeat(); code != 0 {
		t.Fatalf("heartbeat: %v", code)
	}

	// A second member joins: a learns of the rebalance from its
	// heartbeat, rejoins, and the two share the partitions.
	b := newMember(t, p, "b", "")
	if code := b.joined(b.joinFuture()); code != messages.ErrorCode_ERROR_CODE_MEMBER_ID_REQUIRED {
		t.Fatalf("b's first join: %v", code)
	}
	bJoin := b.joinFuture()
	clustertest.WaitFor(t, 5*time.Second, func() error {
		if code := a.heartbeat(); code != messages.ErrorCode_ERROR_CODE_REBALANCE_IN_PROGRESS {
			return fmt.Errorf("heartbeat during a rebalance: %v", code)
		}
		return nil
	})
	aJoin := a.joinFuture()
	if a.joined(aJoin) != 0 || b.joined(bJoin) != 0 {
		t.Fatal("joins of the second generation failed")
	}
	if a.generation != gen1+1 || b.generation != gen1+1 || a.leader != a.id || len(a.members) != 2 || len(b.members) != 0 {
		t.Fatalf("a: generation %d leader %q members %d; b: generation %d members %d", a.generation, a.leader, len(a.members), b.generation, len(b.members))
	}
	bSync := b.syncFuture() // waits for the leader's
	a.synced(a.syncFuture())
	b.synced(bSync)
	checkAssignments(t, a, b)
	gen2 := a.generation

	// Commits: the current generation's members only.
	if resp := a.commit(gen1, map[int32]int64{0: 1}); resp.ErrorCode != messages.ErrorCode_ERROR_CODE_ILLEGAL_GENERATION {
		t.Fatalf("commit of a stale generation: %v, want ILLEGAL_GENERATION", resp)
	}
	if resp := (&member{t: t, sys: sys, crd: p.crd}).commit(-1, map[int32]int64{0: 1}); resp.ErrorCode != messages.ErrorCode_ERROR_CODE_ILLEGAL_GENERATION {
		t.Fatalf("commit from outside a group with members: %v, want ILLEGAL_GENERATION", resp)
	}
	if resp := b.commit(gen2, map[int32]int64{b.assignment["events"][0]: 7}); resp.Err() != nil || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("commit of the current generation: %v", resp)
	}

	// The admin view.
	d := describeGroup(t, p)
	if d.GroupState != "Stable" || d.ProtocolType != "consumer" || d.ProtocolData != "range" || d.GenerationId != gen2 || d.Leader != a.id || len(d.Members) != 2 {
		t.Fatalf("described %v", d)
	}
	for _, dm := range d.Members {
		got, err := core.DecodeAssignment(dm.MemberAssignment)
		want := map[string]*member{a.id: a, b.id: b}[dm.MemberId]
		if err != nil || want == nil || fmt.Sprint(got) != fmt.Sprint(want.assignment) || dm.ClientId != want.client {
			t.Fatalf("described member %v: assignment %v, %v", dm, got, err)
		}
	}
	list := request[*messages.ListGroupsResponse](t, sys, p.crd, &messages.ListGroupsRequest{StatesFilter: []string{"stable"}})
	if len(list.Groups) != 1 || list.Groups[0].GroupId != group1 || list.Groups[0].GroupState != "Stable" {
		t.Fatalf("listed %v", list)
	}
	if list := request[*messages.ListGroupsResponse](t, sys, p.crd, &messages.ListGroupsRequest{StatesFilter: []string{"Empty"}}); len(list.Groups) != 0 {
		t.Fatalf("listed as Empty: %v", list)
	}
	if code := deleteGroup(t, p); code != messages.ErrorCode_ERROR_CODE_NON_EMPTY_GROUP {
		t.Fatalf("delete of a group with members: %v, want NON_EMPTY_GROUP", code)
	}

	// b stops heartbeating: the coordinator's timer expires its session,
	// and a, told to rejoin, gets every partition back.
	clustertest.WaitFor(t, 5*time.Second, func() error {
		if code := a.heartbeat(); code != messages.ErrorCode_ERROR_CODE_REBALANCE_IN_PROGRESS {
			return fmt.Errorf("heartbeat: %v, want a rebalance once b's session expired", code)
		}
		return nil
	})
	gen3 := stableWith(t, a)
	if gen3 != gen2+1 || len(a.assignment["events"]) != 3 {
		t.Fatalf("generation %d, assignment %v after b expired", gen3, a.assignment)
	}
	if code := b.heartbeat(); code != messages.ErrorCode_ERROR_CODE_UNKNOWN_MEMBER_ID {
		t.Fatalf("heartbeat of an expired member: %v, want UNKNOWN_MEMBER_ID", code)
	}

	// a leaves: the group is Empty, and can be deleted with its offsets.
	if code := a.leave(); code != 0 {
		t.Fatalf("leave: %v", code)
	}
	clustertest.WaitFor(t, 5*time.Second, func() error {
		if d := describeGroup(t, p); d.GroupState != "Empty" || len(d.Members) != 0 {
			return fmt.Errorf("after the last member left: %v", d)
		}
		return nil
	})
	if code := deleteGroup(t, p); code != 0 {
		t.Fatalf("delete: %v", code)
	}
	if d := describeGroup(t, p); d.GroupState != "Dead" {
		t.Fatalf("deleted group described as %v", d)
	}
	if got := request[*messages.OffsetFetchResponse](t, sys, p.crd, &messages.OffsetFetchRequest{GroupId: group1}); len(got.Topics) != 0 {
		t.Fatalf("offsets of a deleted group: %v", got.Topics)
	}
	if code := deleteGroup(t, p); code != messages.ErrorCode_ERROR_CODE_GROUP_ID_NOT_FOUND {
		t.Fatalf("second delete: %v, want GROUP_ID_NOT_FOUND", code)
	}
}

// TestRebalanceStartedHintsTheMembers: when a stable group starts a
// rebalance, the coordinator pushes RebalanceStarted to the member actor
// of each member that has not rejoined, so none waits for its heartbeat;
// the member whose join started it, members without a member actor and
// members that left get none.
func TestRebalanceStartedHintsTheMembers(t *testing.T) {
	p := startGroupPair(t)

	a, b, c := newMember(t, p, "a", ""), newMember(t, p, "b", ""), newMember(t, p, "c", "")
	a.listen()
	b.listen()
	gen1 := stableWith(t, a, b, c) // c names no member actor
	a.notHinted()
	b.notHinted()

	// A new member joins the stable group: a and b are told at once.
	d := newMember(t, p, "d", "")
	d.listen()
	if code := d.joined(d.joinFuture()); code != messages.ErrorCode_ERROR_CODE_MEMBER_ID_REQUIRED {
		t.Fatalf("d's first join: %v", code)
	}
	dJoin := d.joinFuture()
	a.hinted(gen1)
	b.hinted(gen1)
	d.notHinted()
	if code := c.heartbeat(); code != messages.ErrorCode_ERROR_CODE_REBALANCE_IN_PROGRESS {
		t.Fatalf("c's heartbeat: %v, want REBALANCE_IN_PROGRESS", code)
	}

	// c learns of the rebalance from its heartbeat and everyone rejoins.
	joins := []*actor.Future{a.joinFuture(), b.joinFuture(), c.joinFuture()}
	for i, m := range []*member{a, b, c} {
		if code := m.joined(joins[i]); code != 0 {
			t.Fatalf("%s: rejoin: %v", m.client, code)
		}
	}
	if code := d.joined(dJoin); code != 0 {
		t.Fatalf("d: join: %v", code)
	}
	syncs := []*actor.Future{a.syncFuture(), b.syncFuture(), c.syncFuture(), d.syncFuture()}
	for i, m := range []*member{a, b, c, d} {
		m.synced(syncs[i])
	}
	gen2 := a.generation

	// b leaves: the others that listen are told, b is forgotten.
	if code := b.leave(); code != 0 {
		t.Fatalf("b: leave: %v", code)
	}
	a.hinted(gen2)
	d.hinted(gen2)
	b.notHinted()
	for _, m := range []*member{a, b, c, d} {
		if len(m.hints) != 0 {
			t.Fatalf("%s: %d more hints", m.client, len(m.hints))
		}
	}
}

// TestGroupMetadataSurvivesCoordinatorRestart: the coordinator of the next
// leadership restores the group from its metadata records — members,
// generation, leader and assignments — so members carry on without
// rejoining and a static member's restart gets its partitions back
// without a rebalance; an emptied group keeps its generation, and a
// deleted one stays deleted.
func TestGroupMetadataSurvivesCoordinatorRestart(t *testing.T) {
	sys := actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	dir := t.TempDir()
	rep := startReplica(t, sys, dir, 0)
	p := pair{sys: sys, replica: rep, crd: startGroupCoordinator(t, sys, rep, 0)}
	waitState(t, sys, p.crd, loaded)

	a, s := newMember(t, p, "a", ""), newMember(t, p, "s", "instance-s")
	gen := stableWith(t, a, s)
	if resp := a.commit(gen, map[int32]int64{a.assignment["events"][0]: 5}); resp.Err() != nil {
		t.Fatalf("commit: %v", resp.Err())
	}
	before := describeGroup(t, p)

	// A waiting join is answered NOT_COORDINATOR when the coordinator
	// stops (leadership moves).
	c := newMember(t, p, "c", "")
	if code := c.joined(c.joinFuture()); code != messages.ErrorCode_ERROR_CODE_MEMBER_ID_REQUIRED {
		t.Fatalf("c's first join: %v", code)
	}
	cJoin := c.joinFuture()
	clustertest.WaitFor(t, 5*time.Second, func() error {
		if d := describeGroup(t, p); d.GroupState != "PreparingRebalance" || len(d.Members) != 3 {
			return fmt.Errorf("c's join not in: %v", d)
		}
		return nil
	})
	p.stop(t)
	if code := c.joined(cJoin); code != messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR {
		t.Fatalf("a join waiting when the coordinator stopped: %v, want NOT_COORDINATOR", code)
	}

	// The next leadership: the group is back, Stable, as it was before c
	// came (a rebalance in progress is not durable).
	p = pair{sys: sys, replica: startReplica(t, sys, dir, 1)}
	p.crd = startGroupCoordinator(t, sys, p.replica, 1)
	waitState(t, sys, p.crd, loaded)
	for _, m := range []*member{a, s} {
		m.crd = p.crd
	}
	after := describeGroup(t, p)
	if after.String() != before.String() {
		t.Fatalf("restored group\n%v\nwant\n%v", after, before)
	}
	for _, m := range []*member{a, s} {
		if code := m.heartbeat(); code != 0 {
			t.Fatalf("%s: heartbeat to the new coordinator: %v", m.client, code)
		}
	}
	if resp := a.commit(gen, map[int32]int64{a.assignment["events"][0]: 6}); resp.Err() != nil {
		t.Fatalf("commit to the new coordinator: %v", resp.Err())
	}
	if resp := a.commit(gen-1, map[int32]int64{0: 1}); resp.ErrorCode != messages.ErrorCode_ERROR_CODE_ILLEGAL_GENERATION {
		t.Fatalf("stale commit to the new coordinator: %v, want ILLEGAL_GENERATION", resp)
	}
	// The static member restarts: same generation, same partitions, no
	// rebalance.
	old := fmt.Sprint(s.assignment)
	s.id = ""
	s.join()
	s.synced(s.syncFuture())
	if s.generation != gen || fmt.Sprint(s.assignment) != old {
		t.Fatalf("static member after its restart: generation %d, assignment %v; want %d, %s", s.generation, s.assignment, gen, old)
	}
	if d := describeGroup(t, p); d.GroupState != "Stable" || d.GenerationId != gen {
		t.Fatalf("after the static restart %v, want Stable at generation %d", d, gen)
	}

	// Both leave; the emptied group is restored Empty at its generation.
	a.leave()
	s.leave()
	clustertest.WaitFor(t, 5*time.Second, func() error {
		if d := describeGroup(t, p); d.GroupState != "Empty" {
			return fmt.Errorf("state %s", d.GroupState)
		}
		return nil
	})
	emptied := describeGroup(t, p).GenerationId
	// The Empty group's record is written after the state changes: stop
	// only once no write waits for the replica (else the restart rightly
	// finds the group as last written).
	waitState(t, p.sys, p.crd, func(st coordinator.State) error {
		if st.InFlight > 0 {
			return fmt.Errorf("%d writes in flight", st.InFlight)
		}
		return nil
	})
	p.stop(t)
	p = pair{sys: sys, replica: startReplica(t, sys, dir, 2)}
	p.crd = startGroupCoordinator(t, sys, p.replica, 2)
	waitState(t, sys, p.crd, loaded)
	if d := describeGroup(t, p); d.GroupState != "Empty" || d.GenerationId != emptied {
		t.Fatalf("emptied group restored as %v, want Empty at generation %d", d, emptied)
	}

	// Deleted, it stays deleted (offsets too).
	if code := deleteGroup(t, p); code != 0 {
		t.Fatalf("delete: %v", code)
	}
	p.stop(t)
	p = pair{sys: sys, replica: startReplica(t, sys, dir, 3)}
	p.crd = startGroupCoordinator(t, sys, p.replica, 3)
	st := waitState(t, sys, p.crd, loaded)
	if d := describeGroup(t, p); d.GroupState != "Dead" || st.Offsets != 0 || st.HostedGroups != 0 {
		t.Fatalf("deleted group after a restart: %v, state %+v", d, st)
	}
}

// TestGroupRequestsOfAnotherPartition: a coordinator answers only for its
// own groups.
func TestGroupRequestsOfAnotherPartition(t *testing.T) {
	sys := actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	rep := startReplica(t, sys, t.TempDir(), 0)
	crd := startGroupCoordinator(t, sys, rep, 0)
	waitState(t, sys, crd, loaded)
	other := "other-0"
	for i := 0; coordinator.PartitionFor(other, partitions) == partition; i++ {
		other = fmt.Sprintf("other-%d", i)
	}
	notCoordinator := messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR
	if r := request[*messages.JoinGroupResponse](t, sys, crd, &messages.JoinGroupRequest{GroupId: other, ProtocolType: "consumer"}); r.ErrorCode != notCoordinator {
		t.Fatalf("join: %v", r)
	}
	if r := request[*messages.HeartbeatResponse](t, sys, crd, &messages.HeartbeatRequest{GroupId: other}); r.ErrorCode != notCoordinator {
		t.Fatalf("heartbeat: %v", r)
	}
	if r := request[*messages.DescribeGroupsResponse](t, sys, crd, &messages.DescribeGroupsRequest{GroupIds: []string{other, ""}}); r.Groups[0].ErrorCode != notCoordinator ||
		r.Groups[1].ErrorCode != messages.ErrorCode_ERROR_CODE_INVALID_GROUP_ID {
		t.Fatalf("describe: %v", r)
	}
	if r := request[*messages.DeleteGroupsResponse](t, sys, crd, &messages.DeleteGroupsRequest{GroupIds: []string{other}}); r.Results[0].ErrorCode != notCoordinator {
		t.Fatalf("delete: %v", r)
	}
	// A sync or heartbeat for a group it does not have: rejoin.
	if r := request[*messages.SyncGroupResponse](t, sys, crd, &messages.SyncGroupRequest{GroupId: group, MemberId: "m"}); r.ErrorCode != messages.ErrorCode_ERROR_CODE_UNKNOWN_MEMBER_ID {
		t.Fatalf("sync of an unknown group: %v", r)
	}
}
