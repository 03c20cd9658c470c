// groups_cli_e2e_test.go: `actorlog groups` on three `actorlog host`
// processes — describe's lag is produced minus committed for a group that
// committed from outside group management (generation -1); a member that
// joins through raw JoinGroup/SyncGroup requests shows in describe and
// makes reset-offsets and delete refuse; once it leaves, reset-offsets
// moves the offsets and delete removes the group. And a group whose
// coordinator's host is SIGKILLed is served by the next coordinator with
// its committed offsets, its member and its generation.

package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/actors/group"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
)

// rawMember is a consumer group member driven by raw requests to its
// coordinator, found through the brokers of the live hosts (not the
// client's cache, so a coordinator that moved is found at once).
type rawMember struct {
	t          *testing.T
	c          *client.Client
	live       []*hostProc
	group      string
	clientID   string
	instance   string
	id         string
	generation int32
	leader     string
	members    []*messages.JoinGroupResponseMember
	assignment group.Assignment
}

// coordinator asks a live host's broker where the group's coordinator is.
func (m *rawMember) coordinator() (*actor.PID, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var errs []error
	for _, h := range m.live {
		res, err := m.c.Request(ctx, actor.NewPID(h.addr(), messages.BrokerActorID), &messages.FindCoordinatorRequest{GroupId: m.group})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if resp, ok := res.(*messages.FindCoordinatorResponse); ok && resp.ErrorCode == 0 {
			return actor.NewPID(resp.Address, resp.ActorId), nil
		}
		errs = append(errs, fmt.Errorf("find coordinator: %v", res))
	}
	return nil, errors.Join(errs...)
}

// call sends msg to the coordinator until it answers with something else
// than a coordinator error (moved, loading, not available), and returns
// the answer.
func (m *rawMember) call(msg proto.Message) any {
	m.t.Helper()
	var out any
	clustertest.WaitFor(m.t, 90*time.Second, func() error {
		pid, err := m.coordinator()
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := m.c.Request(ctx, pid, msg)
		if err != nil {
			return err
		}
		if r, ok := res.(interface{ GetErrorCode() messages.ErrorCode }); ok {
			switch code := r.GetErrorCode(); code {
			case messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR, messages.ErrorCode_ERROR_CODE_COORDINATOR_LOAD_IN_PROGRESS,
				messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE, messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT:
				return fmt.Errorf("%T: %v", res, code)
			}
		}
		out = res
		return nil
	})
	return out
}

// join joins the group (twice for a dynamic member without an id,
// KIP-394); it returns the last answer's code.
func (m *rawMember) join() messages.ErrorCode {
	m.t.Helper()
	for range 2 {
		sub := group.Subscription{Topics: []string{"events"}, Generation: -1}
		resp := m.call(&messages.JoinGroupRequest{
			GroupId: m.group, MemberId: m.id, GroupInstanceId: m.instance, ClientId: m.clientID,
			ProtocolType: group.ProtocolType, Protocols: group.Protocols(sub, group.Range()),
			SessionTimeoutMs: 30000, RebalanceTimeoutMs: 30000,
		}).(*messages.JoinGroupResponse)
		switch resp.ErrorCode {
		case messages.ErrorCode_ERROR_CODE_MEMBER_ID_REQUIRED:
			m.id = resp.MemberId
			continue
		case 0:
			m.id, m.generation, m.leader, m.members = resp.MemberId, resp.GenerationId, resp.Leader, resp.Members
		}
		return resp.ErrorCode
	}
	return messages.ErrorCode_ERROR_CODE_MEMBER_ID_REQUIRED
}

// sync sends SyncGroup (as leader, with the range assignment of the
// members) and keeps the assignment it gets.
func (m *rawMember) sync(partitions map[string]int32) {
	m.t.Helper()
	req := &messages.SyncGroupRequest{GroupId: m.group, GenerationId: m.generation, MemberId: m.id, GroupInstanceId: m.instance}
	if m.id == m.leader && len(m.members) > 0 {
		as, err := group.AssignGroup(group.Range(), m.members, partitions)
		if err != nil {
			m.t.Fatalf("assign: %v", err)
		}
		req.Assignments = as
	}
	resp := m.call(req).(*messages.SyncGroupResponse)
	if err := resp.Err(); err != nil {
		m.t.Fatalf("sync: %v", err)
	}
	a, err := group.DecodeAssignment(resp.Assignment)
	if err != nil {
		m.t.Fatalf("assignment: %v", err)
	}
	m.assignment = a
}

func (m *rawMember) heartbeat() messages.ErrorCode {
	m.t.Helper()
	return m.call(&messages.HeartbeatRequest{GroupId: m.group, GenerationId: m.generation, MemberId: m.id, GroupInstanceId: m.instance}).(*messages.HeartbeatResponse).ErrorCode
}

func (m *rawMember) leave() {
	m.t.Helper()
	resp := m.call(&messages.LeaveGroupRequest{GroupId: m.group, Members: []*messages.LeaveGroupRequestMember{{MemberId: m.id, GroupInstanceId: m.instance}}}).(*messages.LeaveGroupResponse)
	if resp.ErrorCode != 0 || len(resp.Members) != 1 || resp.Members[0].ErrorCode != 0 {
		m.t.Fatalf("leave: %v", resp)
	}
}

// commit commits offsets of events at generation (member id m's, or ""
// for -1) and returns the request-level code.
func (m *rawMember) commit(generation int32, offsets map[int32]int64) messages.ErrorCode {
	m.t.Helper()
	req := &messages.OffsetCommitRequest{GroupId: m.group, GenerationId: generation, MemberId: m.id}
	if generation < 0 {
		req.MemberId = ""
	}
	t := &messages.OffsetCommitTopic{Topic: "events"}
	for p := int32(0); p < 3; p++ {
		if o, ok := offsets[p]; ok {
			t.Partitions = append(t.Partitions, &messages.OffsetCommitPartition{Partition: p, Offset: o, LeaderEpoch: -1})
		}
	}
	req.Topics = []*messages.OffsetCommitTopic{t}
	resp := m.call(req).(*messages.OffsetCommitResponse)
	for _, r := range resp.Results {
		if r.ErrorCode != 0 {
			m.t.Fatalf("commit of events-%d: %v", r.Partition, r.ErrorCode.Err(r.ErrorMessage))
		}
	}
	return resp.ErrorCode
}

// describeGroupCLI runs `groups describe --output json` through h.
func describeGroupCLI(t *testing.T, h *hostProc, g string) groupDescription {
	t.Helper()
	var d groupDescription
	if err := h.describeJSON(&d, "groups", "describe", g); err != nil {
		t.Fatalf("%v\nhost log:\n%s", err, h.log())
	}
	return d
}

// lags renders d's offsets as "committed/end/lag" by partition ("-" for an
// unknown number), for a group of one topic.
func (d groupDescription) lags() map[int32]string {
	out := map[int32]string{}
	for _, o := range d.Offsets {
		out[o.Partition] = offsetPtrText(o.CommittedOffset) + "/" + offsetPtrText(o.LogEndOffset) + "/" + offsetPtrText(o.Lag)
	}
	return out
}

// owners returns the member id owning each partition, for a group of one
// topic.
func (d groupDescription) owners() map[int32]string {
	out := map[int32]string{}
	for _, o := range d.Offsets {
		out[o.Partition] = o.MemberID
	}
	return out
}

// cliFails runs the CLI expecting a failure whose stderr mentions want.
func cliFails(t *testing.T, h *hostProc, want string, args ...string) {
	t.Helper()
	out, errOut, err := h.cli("", args...)
	if err == nil {
		t.Fatalf("actorlog %v succeeded:\n%s", args, out)
	}
	if !strings.Contains(errOut, want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
		t.Fatalf("actorlog %v: stderr %q, want one line mentioning %q", args, errOut, want)
	}
}

func TestGroupsCommandsEndToEnd(t *testing.T) {
	hosts := startCluster(t, "--offsets-topic-partitions", "4")
	h := hosts[0]
	h.mustCLI("", "topics", "create", "events", "--partitions", "3", "--replication-factor", "3")
	produced := map[int32]int{0: 10, 1: 20, 2: 30}
	for p, n := range produced {
		var lines strings.Builder
		for i := range n {
			fmt.Fprintf(&lines, "p%d-%d\n", p, i)
		}
		h.mustCLI(lines.String(), "produce", "events", "--partition", strconv.Itoa(int(p)), "--acks", "all")
	}
	c := newClient(t, h.addr(), hosts[1].addr(), hosts[2].addr())

	// A consumer outside group management commits (generation -1).
	const g = "billing"
	simple := &rawMember{t: t, c: c, live: hosts, group: g}
	if code := simple.commit(-1, map[int32]int64{0: 4, 1: 20, 2: 0}); code != 0 {
		t.Fatalf("commit: %v", code)
	}
	if out := h.mustCLI("", "groups", "list"); !strings.Contains(out, "billing") || !strings.Contains(out, "Empty") {
		t.Fatalf("groups list:\n%s", out)
	}
	d := describeGroupCLI(t, hosts[1], g)
	want := map[int32]string{0: "4/10/6", 1: "20/20/0", 2: "0/30/30"}
	if d.State != "Empty" || fmt.Sprint(d.lags()) != fmt.Sprint(want) {
		t.Fatalf("describe: %+v, want Empty with committed/end/lag %v", d, want)
	}

	// A member joins: the group is Stable, the member shows with its
	// partitions, and reset-offsets and delete refuse.
	m := &rawMember{t: t, c: c, live: hosts, group: g, clientID: "e2e-member"}
	if code := m.join(); code != 0 {
		t.Fatalf("join: %v", code)
	}
	m.sync(map[string]int32{"events": 3})
	if m.assignment.Count() != 3 {
		t.Fatalf("assignment %v, want the 3 partitions", m.assignment)
	}
	t.Logf("groups describe with a member:\n%s", hosts[2].mustCLI("", "groups", "describe", g))
	d = describeGroupCLI(t, hosts[2], g)
	if d.State != "Stable" || d.ProtocolType != "consumer" || d.Protocol != "range" || d.Generation != m.generation ||
		len(d.Members) != 1 || d.Members[0].MemberID != m.id || d.Members[0].ClientID != "e2e-member" ||
		fmt.Sprint(d.Members[0].Assignment) != fmt.Sprint([]topicPartitions{{Topic: "events", Partitions: []int32{0, 1, 2}}}) {
		t.Fatalf("describe with a member: %+v", d)
	}
	owners := d.owners()
	for p := range int32(3) {
		if owners[p] != m.id {
			t.Fatalf("partition %d owned by %q, want %s (offsets %+v)", p, owners[p], m.id, d.Offsets)
		}
	}
	cliFails(t, h, "has members", "groups", "reset-offsets", g, "--topic", "events", "--to-earliest")
	cliFails(t, h, "NON_EMPTY_GROUP", "groups", "delete", g)
	if code := simple.commit(-1, map[int32]int64{0: 1}); code != messages.ErrorCode_ERROR_CODE_ILLEGAL_GENERATION {
		t.Fatalf("commit from outside a group with members: %v, want ILLEGAL_GENERATION", code)
	}
	if code := m.heartbeat(); code != 0 {
		t.Fatalf("heartbeat: %v", code)
	}

	// Bad input: one clear line, nothing changed.
	cliFails(t, h, "--to-earliest", "groups", "reset-offsets", g, "--topic", "events")
	cliFails(t, h, "none of the others", "groups", "reset-offsets", g, "--topic", "events", "--to-earliest", "--to-latest")
	cliFails(t, h, "RFC 3339", "groups", "reset-offsets", g, "--topic", "events", "--to-datetime", "yesterday")
	cliFails(t, h, "must not be negative", "groups", "reset-offsets", g, "--topic", "events", "--to-offset", "-3")
	cliFails(t, h, "--topic is required", "groups", "reset-offsets", g, "--to-latest")
	cliFails(t, h, "must not be empty", "groups", "describe", "")
	cliFails(t, h, "does not exist", "groups", "describe", "no-such-group")
	cliFails(t, h, "--state", "groups", "list", "--state", "Sleeping")

	// The member leaves: the group is Empty and its offsets can move.
	m.leave()
	clustertest.WaitFor(t, 30*time.Second, func() error {
		if d := describeGroupCLI(t, h, g); d.State != "Empty" {
			return fmt.Errorf("state %s after the member left", d.State)
		}
		return nil
	})
	cliFails(t, h, "partition 9 out of range", "groups", "reset-offsets", g, "--topic", "events", "--to-latest", "--partition", "9")
	cliFails(t, h, "UNKNOWN_TOPIC_OR_PARTITION", "groups", "reset-offsets", g, "--topic", "nope", "--to-latest")
	out := h.mustCLI("", "groups", "reset-offsets", g, "--topic", "events", "--to-offset", "5", "--partition", "1", "--dry-run")
	if !strings.Contains(out, "Dry run") || !strings.Contains(out, "events  1          5") {
		t.Fatalf("dry run:\n%s", out)
	}
	if d := describeGroupCLI(t, h, g); fmt.Sprint(d.lags()) != fmt.Sprint(want) {
		t.Fatalf("a dry run changed the offsets: %v, want %v", d.lags(), want)
	}
	steps := []struct {
		args []string
		want map[int32]string
	}{
		{[]string{"--to-earliest"}, map[int32]string{0: "0/10/10", 1: "0/20/20", 2: "0/30/30"}},
		{[]string{"--to-offset", "15"}, map[int32]string{0: "10/10/0", 1: "15/20/5", 2: "15/30/15"}},
		{[]string{"--to-latest", "--partition", "2"}, map[int32]string{0: "10/10/0", 1: "15/20/5", 2: "30/30/0"}},
		{[]string{"--to-datetime", "2020-01-01T00:00:00Z"}, map[int32]string{0: "0/10/10", 1: "0/20/20", 2: "0/30/30"}},
		{[]string{"--to-datetime", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}, map[int32]string{0: "10/10/0", 1: "20/20/0", 2: "30/30/0"}},
	}
	for _, s := range steps {
		h.mustCLI("", append([]string{"groups", "reset-offsets", g, "--topic", "events"}, s.args...)...)
		if got := describeGroupCLI(t, hosts[1], g).lags(); fmt.Sprint(got) != fmt.Sprint(s.want) {
			t.Fatalf("after reset-offsets %v: %v, want %v", s.args, got, s.want)
		}
	}

	// Deleted, it is gone with its offsets.
	if out := h.mustCLI("", "groups", "delete", g); !strings.Contains(out, "Deleted group billing.") {
		t.Fatalf("delete: %s", out)
	}
	cliFails(t, h, "does not exist", "groups", "describe", g)
	if out := h.mustCLI("", "groups", "list"); strings.Contains(out, "billing") {
		t.Fatalf("deleted group listed:\n%s", out)
	}
	offs, err := c.FetchOffsets(context.Background(), g)
	if err != nil || len(offs) != 0 {
		t.Fatalf("offsets of a deleted group: %v, %v", offs, err)
	}
	cliFails(t, h, "GROUP_ID_NOT_FOUND", "groups", "delete", g)
}

// TestGroupSurvivesCoordinatorHostKill: the host running a group's
// coordinator is SIGKILLed (offsets topic RF=3); the next coordinator
// serves the group with its committed offsets, and its member carries on
// with its member id and generation, without rejoining.
func TestGroupSurvivesCoordinatorHostKill(t *testing.T) {
	hosts := startCluster(t, "--offsets-topic-partitions", "4")
	hosts[0].mustCLI("", "topics", "create", "events", "--partitions", "3", "--replication-factor", "3")
	waitFullISR(t, hosts[0], "events")
	c := newClient(t, hosts[0].addr(), hosts[1].addr(), hosts[2].addr())
	const g = "survivors"
	m := &rawMember{t: t, c: c, live: hosts, group: g, clientID: "static-member", instance: "instance-1"}
	if code := m.join(); code != 0 {
		t.Fatalf("join: %v", code)
	}
	waitFullISR(t, hosts[0], messages.OffsetsTopic)
	m.sync(map[string]int32{"events": 3})
	if code := m.commit(m.generation, map[int32]int64{0: 3, 1: 4, 2: 5}); code != 0 {
		t.Fatalf("commit: %v", code)
	}
	pid, err := m.coordinator()
	if err != nil {
		t.Fatalf("coordinator: %v", err)
	}
	victim := byAddr(t, hosts, pid.Address)
	var live []*hostProc
	for _, h := range hosts {
		if h != victim {
			live = append(live, h)
		}
	}
	before := describeGroupCLI(t, live[0], g)

	victim.stop(syscall.SIGKILL)
	m.live = live
	t0 := time.Now()
	// The member's next heartbeat reaches the new coordinator, which
	// knows it: same member id, same generation.
	if code := m.heartbeat(); code != 0 {
		t.Fatalf("heartbeat to the new coordinator: %v, want the member and generation kept", code)
	}
	t.Logf("the new coordinator took the member's heartbeat %v after the SIGKILL", time.Since(t0).Round(time.Millisecond))
	moved, err := m.coordinator()
	if err != nil || moved.Address == pid.Address {
		t.Fatalf("coordinator after the kill: %v, %v; want another host than %s", moved, err, pid.Address)
	}
	after := describeGroupCLI(t, live[1], g)
	if after.State != "Stable" || after.Generation != before.Generation || after.Leader != m.id ||
		fmt.Sprint(after.Members) != fmt.Sprint(before.Members) || fmt.Sprint(after.lags()) != fmt.Sprint(map[int32]string{0: "3/0/0", 1: "4/0/0", 2: "5/0/0"}) {
		t.Fatalf("after the kill:\n%+v\nbefore:\n%+v", after, before)
	}
	offs, err := c.FetchOffsets(context.Background(), g)
	if err != nil || fmt.Sprint(offs) != fmt.Sprint([]client.CommittedOffset{{Topic: "events", Partition: 0, Offset: 3, LeaderEpoch: -1}, {Topic: "events", Partition: 1, Offset: 4, LeaderEpoch: -1}, {Topic: "events", Partition: 2, Offset: 5, LeaderEpoch: -1}}) {
		t.Fatalf("committed offsets after the kill: %v, %v", offs, err)
	}

	// It commits at its generation (a stale one is refused), and when the
	// static member restarts it gets its partitions back, no rebalance.
	if code := m.commit(m.generation, map[int32]int64{1: 6}); code != 0 {
		t.Fatalf("commit to the new coordinator: %v", code)
	}
	if code := m.commit(m.generation-1, map[int32]int64{1: 1}); code != messages.ErrorCode_ERROR_CODE_ILLEGAL_GENERATION {
		t.Fatalf("stale commit: %v, want ILLEGAL_GENERATION", code)
	}
	gen, old := m.generation, fmt.Sprint(m.assignment)
	m.id = ""
	if code := m.join(); code != 0 || m.generation != gen {
		t.Fatalf("static restart: %v, generation %d; want %d", code, m.generation, gen)
	}
	m.sync(map[string]int32{"events": 3})
	if fmt.Sprint(m.assignment) != old {
		t.Fatalf("static member's assignment after its restart %v, want %s", m.assignment, old)
	}
}
