// member_test.go: step-by-step table tests of the group member's core
// (member.go) with passed-in time, no actors and no sleeps — the join and
// sync (MEMBER_ID_REQUIRED, the leader's assignment), heartbeats on the
// clock, a cooperative rebalance (revoke only what moves, commit before
// reporting it, rejoin for the follow-up, early heartbeats) and an eager
// one, coordinator moves and stale answers, lost generations from a
// heartbeat or a commit, fatal refusals, rebalance hints, subscription
// and partition-count changes, and close.

package consumer

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/actors/group"
	"github.com/actorlog/actorlog/messages"
)

// memberRun drives one member through a scenario.
type memberRun struct {
	t   *testing.T
	m   *member
	t0  time.Time
	now time.Time
	// sent holds the last request of each kind ("join", "sync",
	// "heartbeat"): answers go to it.
	sent   map[string]groupRequest
	lookup assignLookup
}

// memberStep is one event at t0+at and what it must do.
type memberStep struct {
	at time.Duration
	// ev feeds the event.
	ev func(r *memberRun) memberEffects
	// want are prefixes of the actions' String(), in order.
	want []string
	// wake is the Wake wanted, as time since t0: 0 unchecked, noWake
	// none.
	wake time.Duration
}

const noWake = time.Duration(-1)

var testCoordinator = client.Coordinator{Address: "c1", ActorID: "coordinator"}

// newMemberRun returns a member of group "g" subscribed to topic t (a
// heartbeat every second, a 200 ms retry backoff), changed by change.
func newMemberRun(t *testing.T, change func(*Config)) *memberRun {
	t.Helper()
	cfg := Config{
		Cluster: &fakeCluster{logger: testLogger(t)}, Logger: testLogger(t), GroupID: "g", Topics: []string{"t"},
		Handler: func([]Message) {}, ClientID: "a", HeartbeatInterval: time.Second, SessionTimeout: 10 * time.Second,
		RebalanceTimeout: time.Minute, RetryBackoff: 200 * time.Millisecond,
	}
	if change != nil {
		change(&cfg)
	}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return &memberRun{t: t, m: newMember(cfg, cfg.Logger), t0: t0, now: t0, sent: map[string]groupRequest{}}
}

// run feeds steps in order and checks what each does.
func (r *memberRun) run(steps []memberStep) {
	r.t.Helper()
	for i, s := range steps {
		at := r.t0.Add(s.at)
		if at.Before(r.now) {
			r.t.Fatalf("step %d: time goes back to %v", i, s.at)
		}
		r.now = at
		eff := s.ev(r)
		var got []string
		for _, a := range eff.Actions {
			got = append(got, a.String())
			switch a := a.(type) {
			case memberSend:
				r.sent[strings.Fields(a.String())[0]] = a.Request
			case memberAssign:
				r.lookup = a.Lookup
			}
		}
		ok := len(got) == len(s.want)
		for j := 0; ok && j < len(got); j++ {
			ok = strings.HasPrefix(got[j], s.want[j])
		}
		if !ok {
			r.t.Fatalf("step %d at %v: actions\n\t%s\nwant\n\t%s", i, s.at, strings.Join(got, "\n\t"), strings.Join(s.want, "\n\t"))
		}
		switch {
		case s.wake == noWake && !eff.Wake.IsZero():
			r.t.Fatalf("step %d at %v: wake at %v, want none", i, s.at, eff.Wake.Sub(r.t0))
		case s.wake > 0 && !eff.Wake.Equal(r.t0.Add(s.wake)):
			r.t.Fatalf("step %d at %v: wake at %v, want %v", i, s.at, eff.Wake.Sub(r.t0), s.wake)
		}
	}
}

// The events.

func start() func(*memberRun) memberEffects {
	return func(r *memberRun) memberEffects { return r.m.Start(r.now) }
}

func tick() func(*memberRun) memberEffects {
	return func(r *memberRun) memberEffects { return r.m.Tick(r.now) }
}

// metadata gives topic counts "t:2 u:3"; all: every topic was asked for.
func metadata(counts string, all bool) func(*memberRun) memberEffects {
	return func(r *memberRun) memberEffects {
		m := map[string]int32{}
		for _, f := range strings.Fields(counts) {
			name, n, _ := strings.Cut(f, ":")
			var c int32
			if _, err := fmt.Sscan(n, &c); err != nil {
				r.t.Fatalf("metadata %q: %v", counts, err)
			}
			m[name] = c
		}
		return r.m.OnMetadata(r.now, m, all)
	}
}

func coordinatorFoundEv(err error) func(*memberRun) memberEffects {
	return func(r *memberRun) memberEffects {
		if err != nil {
			return r.m.OnCoordinator(r.now, client.Coordinator{}, err)
		}
		return r.m.OnCoordinator(r.now, testCoordinator, nil)
	}
}

// subscriptionOf returns a member's JoinGroup metadata for topics.
func subscriptionOf(topics ...string) []byte {
	return group.EncodeSubscription(group.Subscription{Topics: topics, Generation: -1})
}

// joinAnswer answers the last join: code, the member id, generation and
// leader ("" : the member itself), and, for a leader, the members "a b"
// subscribed to t.
func joinAnswer(code messages.ErrorCode, id string, gen int32, leader string, members string) func(*memberRun) memberEffects {
	return func(r *memberRun) memberEffects {
		if leader == "" {
			leader = id
		}
		resp := &messages.JoinGroupResponse{ErrorCode: code, MemberId: id, GenerationId: gen, Leader: leader, ProtocolName: "cooperative-sticky"}
		if code == messages.ErrorCode_ERROR_CODE_UNSPECIFIED && !r.m.cooperative {
			resp.ProtocolName = "range"
		}
		for _, m := range strings.Fields(members) {
			resp.Members = append(resp.Members, &messages.JoinGroupResponseMember{MemberId: m, Metadata: subscriptionOf("t")})
		}
		return r.m.OnJoin(r.now, r.sent["join"], resp, nil)
	}
}

// answerFails fails the last request of kind with err (no answer).
func answerFails(kind string, err error) func(*memberRun) memberEffects {
	return func(r *memberRun) memberEffects {
		switch kind {
		case "join":
			return r.m.OnJoin(r.now, r.sent[kind], nil, err)
		case "sync":
			return r.m.OnSync(r.now, r.sent[kind], nil, err)
		}
		return r.m.OnHeartbeat(r.now, r.sent[kind], nil, err)
	}
}

// assignMetadataEv answers the leader's lookup with counts of t.
func assignMetadataEv(partitions int32) func(*memberRun) memberEffects {
	return func(r *memberRun) memberEffects {
		return r.m.OnAssignMetadata(r.now, r.lookup, map[string]int32{"t": partitions}, nil)
	}
}

// syncAnswer answers the last sync with the assignment "t-0 t-1" (or
// code).
func syncAnswer(code messages.ErrorCode, assigned string) func(*memberRun) memberEffects {
	return func(r *memberRun) memberEffects {
		resp := &messages.SyncGroupResponse{ErrorCode: code, Assignment: group.EncodeAssignment(toAssignment(tps(assigned)))}
		return r.m.OnSync(r.now, r.sent["sync"], resp, nil)
	}
}

func heartbeatAnswer(code messages.ErrorCode) func(*memberRun) memberEffects {
	return func(r *memberRun) memberEffects {
		return r.m.OnHeartbeat(r.now, r.sent["heartbeat"], &messages.HeartbeatResponse{ErrorCode: code}, nil)
	}
}

func handled(pending bool) func(*memberRun) memberEffects {
	return func(r *memberRun) memberEffects { return r.m.OnHandled(r.now, pending) }
}

func revocationCommitted() func(*memberRun) memberEffects {
	return func(r *memberRun) memberEffects { return r.m.OnRevocationCommitted(r.now) }
}

// commitAnswered reports a commit made as the member now, refused with code
// (0: accepted).
func commitAnswered(code messages.ErrorCode) func(*memberRun) memberEffects {
	return func(r *memberRun) memberEffects {
		id, gen := r.m.commitID()
		return r.m.OnCommitDone(r.now, id, gen, code.Err("fake"))
	}
}

func hint(groupID, id string, gen int32) func(*memberRun) memberEffects {
	return func(r *memberRun) memberEffects {
		return r.m.OnRebalanceHint(r.now, &messages.RebalanceStarted{GroupId: groupID, MemberId: id, GenerationId: gen})
	}
}

func coordinatorGone(address string) func(*memberRun) memberEffects {
	return func(r *memberRun) memberEffects { return r.m.OnCoordinatorGone(r.now, address) }
}

func closeEv() func(*memberRun) memberEffects {
	return func(r *memberRun) memberEffects { return r.m.Close(r.now) }
}

const (
	codeOK            = messages.ErrorCode_ERROR_CODE_UNSPECIFIED
	codeMemberID      = messages.ErrorCode_ERROR_CODE_MEMBER_ID_REQUIRED
	codeRebalancing   = messages.ErrorCode_ERROR_CODE_REBALANCE_IN_PROGRESS
	codeNotCoord      = messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR
	codeUnknownMember = messages.ErrorCode_ERROR_CODE_UNKNOWN_MEMBER_ID
	codeIllegalGen    = messages.ErrorCode_ERROR_CODE_ILLEGAL_GENERATION
	codeFenced        = messages.ErrorCode_ERROR_CODE_FENCED_INSTANCE_ID
	codeLoading       = messages.ErrorCode_ERROR_CODE_COORDINATOR_LOAD_IN_PROGRESS
)

// joinAsLeader is a first join of member a-1, alone in the group, that
// ends owning t-0 and t-1 in generation 1 at 10 ms; the heartbeat clock
// started at 0.
func joinAsLeader() []memberStep {
	return []memberStep{
		{at: 0, ev: start(), wake: time.Second},
		// Nothing before metadata, then the coordinator.
		{at: 0, ev: tick()},
		{at: 0, ev: metadata("t:2", false), want: []string{"find coordinator"}},
		{at: time.Millisecond, ev: coordinatorFoundEv(nil), want: []string{`join member="" generation=-1 owned=0`}},
		// KIP-394: join again at once with the id given.
		{at: 2 * time.Millisecond, ev: joinAnswer(codeMemberID, "a-1", -1, "", ""), want: []string{`join member="a-1" generation=-1 owned=0`}},
		// The leader assigns over fresh partition counts.
		{at: 3 * time.Millisecond, ev: joinAnswer(codeOK, "a-1", 1, "", "a-1"), want: []string{"assign t"}},
		{at: 4 * time.Millisecond, ev: assignMetadataEv(2), want: []string{"sync generation=1 assignments=1"}},
		{at: 10 * time.Millisecond, ev: syncAnswer(codeOK, "t-0 t-1"), want: []string{
			"assigned [t-0 t-1] owned=[t-0 t-1] generation=1",
		}, wake: 110 * time.Millisecond}, // the first early heartbeat
	}
}

// steps concatenates scenarios.
func steps(parts ...[]memberStep) []memberStep {
	var out []memberStep
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestMemberJoinSyncHeartbeat(t *testing.T) {
	r := newMemberRun(t, nil)
	r.run(steps(joinAsLeader(), []memberStep{
		// Early heartbeats (cooperative, nothing revoked) at +100 and
		// +400 ms, then one a second.
		{at: 110 * time.Millisecond, ev: tick(), want: []string{"heartbeat generation=1"}, wake: 410 * time.Millisecond},
		{at: 120 * time.Millisecond, ev: heartbeatAnswer(codeOK), wake: 410 * time.Millisecond},
		{at: 410 * time.Millisecond, ev: tick(), want: []string{"heartbeat generation=1"}, wake: time.Second},
		// At most one heartbeat in flight.
		{at: time.Second, ev: tick(), wake: 2 * time.Second},
		{at: 1100 * time.Millisecond, ev: heartbeatAnswer(codeOK), wake: 2 * time.Second},
		// A tick before the wake does nothing.
		{at: 1500 * time.Millisecond, ev: tick(), wake: 2 * time.Second},
		{at: 2 * time.Second, ev: tick(), want: []string{"heartbeat generation=1"}, wake: 3 * time.Second},
	}))
	if id, gen := r.m.commitID(); id != "a-1" || gen != 1 || !r.m.canAutoCommit() {
		t.Fatalf("commit id %q %d, can auto-commit %v", id, gen, r.m.canAutoCommit())
	}
}

func TestMemberFollowerSyncsWithoutAssigning(t *testing.T) {
	r := newMemberRun(t, nil)
	r.run([]memberStep{
		{at: 0, ev: metadata("t:2", false), want: []string{"find coordinator"}},
		{at: 0, ev: coordinatorFoundEv(nil), want: []string{`join member=""`}},
		{at: 0, ev: joinAnswer(codeOK, "b-1", 3, "a-1", ""), want: []string{"sync generation=3 assignments=0"}},
		// Between join and sync the group refuses commits.
		{at: 0, ev: func(r *memberRun) memberEffects {
			if r.m.canAutoCommit() {
				r.t.Fatal("auto-commit allowed while syncing")
			}
			return r.m.Tick(r.now)
		}},
		{at: 0, ev: syncAnswer(codeOK, "t-1"), want: []string{"assigned [t-1] owned=[t-1] generation=3"}},
	})
}

func TestMemberCooperativeRebalance(t *testing.T) {
	r := newMemberRun(t, nil)
	r.run(steps(joinAsLeader(), []memberStep{
		// A second member joins: the hint makes a rejoin at once,
		// announcing what it owns.
		{at: 500 * time.Millisecond, ev: hint("g", "a-1", 1), want: []string{`join member="a-1" generation=1 owned=2`}},
		{at: 510 * time.Millisecond, ev: joinAnswer(codeOK, "a-1", 2, "", "a-1 b-1"), want: []string{"assign t"}},
		{at: 520 * time.Millisecond, ev: assignMetadataEv(2), want: []string{"sync generation=2 assignments=2"}},
		// KIP-429: only t-1 moves. It stops; a waits for its records
		// handed out, commits, reports it revoked, then rejoins for the
		// follow-up rebalance.
		{at: 530 * time.Millisecond, ev: syncAnswer(codeOK, "t-0"), want: []string{"stop [t-1]"}},
		{at: 540 * time.Millisecond, ev: handled(true), want: []string{"commit [t-1]"}},
		// More handing done while committing changes nothing.
		{at: 545 * time.Millisecond, ev: handled(true)},
		{at: 550 * time.Millisecond, ev: revocationCommitted(), want: []string{
			"revoked [t-1] owned=[t-0]",
			"assigned [] owned=[t-0] generation=2",
			`join member="a-1" generation=2 owned=1`,
		}},
		{at: 560 * time.Millisecond, ev: joinAnswer(codeOK, "a-1", 3, "b-1", ""), want: []string{"sync generation=3 assignments=0"}},
		{at: 570 * time.Millisecond, ev: syncAnswer(codeOK, "t-0"), want: []string{"assigned [] owned=[t-0] generation=3"}},
	}))
}

func TestMemberRevocationWithoutPositionsToCommit(t *testing.T) {
	r := newMemberRun(t, func(c *Config) { c.DisableAutoCommit = true })
	r.run(steps(joinAsLeader(), []memberStep{
		{at: 500 * time.Millisecond, ev: hint("g", "a-1", 1), want: []string{`join member="a-1"`}},
		{at: 510 * time.Millisecond, ev: joinAnswer(codeOK, "a-1", 2, "b-1", ""), want: []string{"sync generation=2"}},
		{at: 530 * time.Millisecond, ev: syncAnswer(codeOK, "t-0"), want: []string{"stop [t-1]"}},
		// Without auto-commit nothing is committed, pending or not.
		{at: 540 * time.Millisecond, ev: handled(true), want: []string{
			"revoked [t-1] owned=[t-0]", "assigned [] owned=[t-0]", `join member="a-1" generation=2 owned=1`,
		}},
	}))
}

func TestMemberEagerRebalance(t *testing.T) {
	r := newMemberRun(t, func(c *Config) { c.Assignors = []group.Assignor{group.Range()} })
	r.run(steps(joinAsLeader()[:7], []memberStep{
		// Eager: no early heartbeats.
		{at: 10 * time.Millisecond, ev: syncAnswer(codeOK, "t-0 t-1"), want: []string{"assigned [t-0 t-1]"}, wake: time.Second},
		{at: time.Second, ev: tick(), want: []string{"heartbeat generation=1"}},
		// The heartbeat says the group rebalances: everything is
		// revoked (and committed) before the join.
		{at: 1010 * time.Millisecond, ev: heartbeatAnswer(codeRebalancing), want: []string{"stop [t-0 t-1]"}},
		{at: 1020 * time.Millisecond, ev: handled(true), want: []string{"commit [t-0 t-1]"}},
		// The commit is refused (the group rebalances): the revocation
		// goes on all the same.
		{at: 1030 * time.Millisecond, ev: commitAnswered(codeRebalancing)},
		{at: 1030 * time.Millisecond, ev: revocationCommitted(), want: []string{
			"revoked [t-0 t-1] owned=[]", `join member="a-1" generation=1 owned=0`,
		}},
	}))
}

func TestMemberCoordinatorMoves(t *testing.T) {
	r := newMemberRun(t, nil)
	r.run(steps(joinAsLeader(), []memberStep{
		{at: 110 * time.Millisecond, ev: tick(), want: []string{"heartbeat generation=1"}},
		// NOT_COORDINATOR: forget it, find it again after the backoff;
		// the member keeps its generation and partitions.
		{at: 120 * time.Millisecond, ev: heartbeatAnswer(codeNotCoord), want: []string{
			`error consumer: group "g": heartbeat: actorlog: NOT_COORDINATOR`, "forget coordinator c1",
		}, wake: 320 * time.Millisecond},
		// The early heartbeat at 410 ms finds no coordinator to send to.
		{at: 320 * time.Millisecond, ev: tick(), want: []string{"find coordinator"}, wake: 410 * time.Millisecond},
		{at: 410 * time.Millisecond, ev: tick(), wake: time.Second},
		{at: 420 * time.Millisecond, ev: coordinatorFoundEv(nil)},
		{at: time.Second, ev: tick(), want: []string{"heartbeat generation=1"}},
	}))
	if r.m.generation != 1 || len(r.m.owned) != 2 {
		t.Fatalf("generation %d owned %v after the move", r.m.generation, r.m.owned)
	}
}

func TestMemberJoinCutOffIsSentAgain(t *testing.T) {
	r := newMemberRun(t, nil)
	r.run([]memberStep{
		{at: 0, ev: metadata("t:2", false), want: []string{"find coordinator"}},
		// The lookup fails: retried after the backoff.
		{at: 0, ev: coordinatorFoundEv(fmt.Errorf("no coordinator")), want: []string{`error consumer: group "g": find coordinator: no coordinator`}, wake: 200 * time.Millisecond},
		{at: 200 * time.Millisecond, ev: tick(), want: []string{"find coordinator"}, wake: noWake},
		{at: 210 * time.Millisecond, ev: coordinatorFoundEv(nil), want: []string{`join member=""`}},
		// The coordinator's host goes: the join is cut off, sent again
		// once the coordinator is found again.
		{at: 220 * time.Millisecond, ev: coordinatorGone("elsewhere")},
		{at: 230 * time.Millisecond, ev: coordinatorGone("c1"), want: []string{
			`error consumer: group "g": connection: consumer: the connection to the coordinator's host c1 ended`, "forget coordinator c1",
		}, wake: 430 * time.Millisecond},
		// Its answer, if it comes, is stale.
		{at: 240 * time.Millisecond, ev: joinAnswer(codeOK, "a-1", 1, "", "a-1")},
		{at: 430 * time.Millisecond, ev: tick(), want: []string{"find coordinator"}},
		{at: 440 * time.Millisecond, ev: coordinatorFoundEv(nil), want: []string{`join member=""`}},
		// COORDINATOR_LOAD_IN_PROGRESS: ask again after the backoff.
		{at: 450 * time.Millisecond, ev: joinAnswer(codeLoading, "", -1, "", ""), want: []string{
			`error consumer: group "g": join: actorlog: COORDINATOR_LOAD_IN_PROGRESS`,
		}, wake: 650 * time.Millisecond},
		{at: 650 * time.Millisecond, ev: tick(), want: []string{`join member=""`}},
	})
}

func TestMemberLostGeneration(t *testing.T) {
	r := newMemberRun(t, nil)
	r.run(steps(joinAsLeader(), []memberStep{
		{at: 110 * time.Millisecond, ev: tick(), want: []string{"heartbeat generation=1"}},
		// UNKNOWN_MEMBER_ID: the partitions are lost (no waiting, no
		// commit) and the member joins again without its id.
		{at: 120 * time.Millisecond, ev: heartbeatAnswer(codeUnknownMember), want: []string{
			`error consumer: group "g": heartbeat: actorlog: UNKNOWN_MEMBER_ID`,
			"stop [t-0 t-1]", "revoked [t-0 t-1] lost owned=[]", `join member="" generation=-1 owned=0`,
		}},
		{at: 130 * time.Millisecond, ev: joinAnswer(codeOK, "a-2", 2, "", "a-2"), want: []string{"assign t"}},
		{at: 140 * time.Millisecond, ev: assignMetadataEv(2), want: []string{"sync generation=2"}},
		{at: 150 * time.Millisecond, ev: syncAnswer(codeOK, "t-0 t-1"), want: []string{"assigned [t-0 t-1] owned=[t-0 t-1] generation=2"}},
		// A commit refused for a stale generation: lost again, rejoined
		// with the member id.
		{at: 160 * time.Millisecond, ev: commitAnswered(codeIllegalGen), want: []string{
			`error consumer: group "g": commit: actorlog: ILLEGAL_GENERATION`,
			"stop [t-0 t-1]", "revoked [t-0 t-1] lost owned=[]", `join member="a-2" generation=-1 owned=0`,
		}},
		// A commit refused for a generation the member left is ignored.
		{at: 170 * time.Millisecond, ev: func(r *memberRun) memberEffects {
			return r.m.OnCommitDone(r.now, "a-2", 2, codeUnknownMember.Err("old"))
		}},
	}))
	if r.m.inGeneration() {
		t.Fatal("in a generation while joining after a loss")
	}
}

func TestMemberFatal(t *testing.T) {
	r := newMemberRun(t, func(c *Config) { c.GroupInstanceID = "ia" })
	r.run(steps(joinAsLeader(), []memberStep{
		{at: 110 * time.Millisecond, ev: tick(), want: []string{"heartbeat generation=1"}},
		{at: 120 * time.Millisecond, ev: heartbeatAnswer(codeFenced), want: []string{
			`error consumer: group "g": heartbeat: actorlog: FENCED_INSTANCE_ID`,
			"error consumer: group membership failed",
			"stop [t-0 t-1]", "revoked [t-0 t-1] lost owned=[]",
		}},
		// Nothing more: no heartbeats, hints or joins.
		{at: time.Second, ev: tick(), wake: noWake},
		{at: 2 * time.Second, ev: hint("g", "a-1", 1)},
		{at: 2 * time.Second, ev: metadata("t:3", false)},
	}))
}

func TestMemberUnofferedProtocolIsFatal(t *testing.T) {
	r := newMemberRun(t, nil)
	r.run([]memberStep{
		{at: 0, ev: metadata("t:2", false), want: []string{"find coordinator"}},
		{at: 0, ev: coordinatorFoundEv(nil), want: []string{`join member=""`}},
		{at: 0, ev: func(r *memberRun) memberEffects {
			return r.m.OnJoin(r.now, r.sent["join"], &messages.JoinGroupResponse{MemberId: "a-1", GenerationId: 1, Leader: "b-1", ProtocolName: "roundrobin"}, nil)
		}, want: []string{`error consumer: group membership failed: group "g": the group chose protocol "roundrobin"`}},
	})
}

func TestMemberRebalanceHints(t *testing.T) {
	r := newMemberRun(t, nil)
	r.run(steps(joinAsLeader(), []memberStep{
		// Stale hints: another generation, member or group.
		{at: 500 * time.Millisecond, ev: hint("g", "a-1", 0)},
		{at: 500 * time.Millisecond, ev: hint("g", "b-1", 1)},
		{at: 500 * time.Millisecond, ev: hint("other", "a-1", 1)},
		{at: 500 * time.Millisecond, ev: hint("g", "a-1", 1), want: []string{`join member="a-1" generation=1`}},
		// While joining, hints are stale too.
		{at: 510 * time.Millisecond, ev: hint("g", "a-1", 1)},
	}))
}

func TestMemberSubscriptionAndPartitionCounts(t *testing.T) {
	r := newMemberRun(t, func(c *Config) { c.Topics, c.TopicRegex = nil, regexp.MustCompile("t|u") })
	r.run([]memberStep{
		{at: 0, ev: metadata("t:2 x:1", true), want: []string{"find coordinator"}},
		{at: 0, ev: coordinatorFoundEv(nil), want: []string{`join member=""`}},
		{at: 0, ev: joinAnswer(codeOK, "a-1", 1, "", "a-1"), want: []string{"assign t"}},
		{at: 0, ev: assignMetadataEv(2), want: []string{"sync generation=1"}},
		{at: 0, ev: syncAnswer(codeOK, "t-0 t-1"), want: []string{"assigned [t-0 t-1]"}},
		// The same metadata again changes nothing.
		{at: 0, ev: metadata("t:2 x:1", true)},
		// A matching topic appears: rejoin.
		{at: 0, ev: metadata("t:2 u:1 x:1", true), want: []string{`join member="a-1" generation=1 owned=2`}},
		{at: 0, ev: joinAnswer(codeOK, "a-1", 2, "", "a-1"), want: []string{"assign t"}},
		{at: 0, ev: assignMetadataEv(2), want: []string{"sync generation=2"}},
		{at: 0, ev: syncAnswer(codeOK, "t-0 t-1"), want: []string{"assigned [] owned=[t-0 t-1] generation=2"}},
		// t grows: the leader rejoins to assign the new partition.
		{at: 0, ev: metadata("t:3 u:1 x:1", true), want: []string{`join member="a-1" generation=2 owned=2`}},
	})
	if got := r.m.snapshotTopics(); fmt.Sprint(got) != "[t]" {
		t.Fatalf("snapshot topics %v", got)
	}
}

func TestMemberClose(t *testing.T) {
	for _, tt := range []struct {
		name     string
		instance string
		stopping bool
		leaves   bool
		revoked  string
	}{
		{"dynamic: leaves", "", false, true, "revoked [t-0 t-1] owned=[]"},
		{"static: stays (KIP-345)", "ia", false, false, "revoked [t-0 t-1] owned=[]"},
		// Stopped without Close: the report names them as still owned,
		// as it always did.
		{"stopped without Close", "", true, true, "revoked [t-0 t-1] owned=[t-0 t-1]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newMemberRun(t, func(c *Config) { c.GroupInstanceID = tt.instance })
			r.run(steps(joinAsLeader(), []memberStep{
				{at: 50 * time.Millisecond, ev: closeEv()},
				// Closing: hints and rejoins are ignored, the heartbeat
				// clock goes on until closed.
				{at: 60 * time.Millisecond, ev: hint("g", "a-1", 1)},
				{at: 110 * time.Millisecond, ev: tick(), want: []string{"heartbeat generation=1"}},
			}))
			eff, leave := r.m.GiveUp(r.now, tt.stopping)
			if len(eff.Actions) != 1 || eff.Actions[0].String() != tt.revoked {
				t.Fatalf("give up: %v", eff.Actions)
			}
			if (leave != nil) != tt.leaves || (leave != nil && leave.Members[0].MemberId != "a-1") {
				t.Fatalf("leave %v, want one: %v", leave, tt.leaves)
			}
			if eff := r.m.Closed(r.now); !eff.Wake.IsZero() || len(eff.Actions) != 0 {
				t.Fatalf("closed: %+v", eff)
			}
			if eff := r.m.Tick(r.now.Add(time.Hour)); len(eff.Actions) != 0 {
				t.Fatalf("tick after close: %v", eff.Actions)
			}
		})
	}
}

func TestMemberAssignmentFailures(t *testing.T) {
	r := newMemberRun(t, nil)
	r.run([]memberStep{
		{at: 0, ev: metadata("t:2", false), want: []string{"find coordinator"}},
		{at: 0, ev: coordinatorFoundEv(nil), want: []string{`join member=""`}},
		{at: 0, ev: joinAnswer(codeOK, "a-1", 1, "", "a-1"), want: []string{"assign t"}},
		// Without metadata the leader cannot assign: it rejoins after
		// the backoff.
		{at: 10 * time.Millisecond, ev: func(r *memberRun) memberEffects {
			return r.m.OnAssignMetadata(r.now, r.lookup, nil, fmt.Errorf("no metadata"))
		}, want: []string{`error consumer: group "g": assign: metadata for the assignment: no metadata`}, wake: 210 * time.Millisecond},
		// A late lookup of the abandoned assignment is ignored.
		{at: 20 * time.Millisecond, ev: assignMetadataEv(2)},
		{at: 210 * time.Millisecond, ev: tick(), want: []string{`join member="a-1" generation=1`}},
		// KIP-814: a static leader that rejoined skips the assignment and
		// watches the partition counts it knows.
		{at: 220 * time.Millisecond, ev: func(r *memberRun) memberEffects {
			return r.m.OnJoin(r.now, r.sent["join"], &messages.JoinGroupResponse{MemberId: "a-1", GenerationId: 2, Leader: "a-1",
				ProtocolName: "cooperative-sticky", SkipAssignment: true,
				Members: []*messages.JoinGroupResponseMember{{MemberId: "a-1", Metadata: subscriptionOf("t")}}}, nil)
		}, want: []string{"sync generation=2 assignments=0"}},
		{at: 230 * time.Millisecond, ev: syncAnswer(codeOK, "t-0"), want: []string{"assigned [t-0] owned=[t-0] generation=2"}},
		// t grows: the static leader's snapshot sees it.
		{at: 240 * time.Millisecond, ev: metadata("t:3", false), want: []string{`join member="a-1" generation=2 owned=1`}},
		{at: 250 * time.Millisecond, ev: joinAnswer(codeOK, "a-1", 3, "b-1", ""), want: []string{"sync generation=3"}},
		// An assignment that does not decode: rejoin after the backoff.
		{at: 260 * time.Millisecond, ev: func(r *memberRun) memberEffects {
			return r.m.OnSync(r.now, r.sent["sync"], &messages.SyncGroupResponse{Assignment: []byte{0, 3, 0}}, nil)
		}, want: []string{`error consumer: group "g": sync:`}, wake: 330 * time.Millisecond}, // generation 2's early heartbeat
		{at: 330 * time.Millisecond, ev: tick(), wake: 460 * time.Millisecond},
		{at: 460 * time.Millisecond, ev: tick(), want: []string{`join member="a-1" generation=3 owned=1`}},
	})
}

func TestMemberGenerationLostDuringRevocation(t *testing.T) {
	r := newMemberRun(t, nil)
	r.run(steps(joinAsLeader(), []memberStep{
		{at: 500 * time.Millisecond, ev: hint("g", "a-1", 1), want: []string{`join member="a-1" generation=1 owned=2`}},
		{at: 510 * time.Millisecond, ev: joinAnswer(codeOK, "a-1", 2, "b-1", ""), want: []string{"sync generation=2"}},
		{at: 520 * time.Millisecond, ev: syncAnswer(codeOK, "t-0"), want: []string{"stop [t-1]"}},
		{at: 530 * time.Millisecond, ev: handled(true), want: []string{"commit [t-1]"}},
		// The commit is refused for a stale generation while t-1 is
		// being revoked: the revocation ends first (t-1 revoked), then
		// what is left is lost and the member rejoins.
		{at: 540 * time.Millisecond, ev: commitAnswered(codeIllegalGen), want: []string{`error consumer: group "g": commit: actorlog: ILLEGAL_GENERATION`}},
		{at: 540 * time.Millisecond, ev: revocationCommitted(), want: []string{
			"revoked [t-1] owned=[t-0]", "stop [t-0]", "revoked [t-0] lost owned=[]", `join member="a-1" generation=-1 owned=0`,
		}},
	}))
}

// TestMemberRandomHistories drives members through random histories —
// answers of every kind in any order, lost coordinators, hints, metadata
// changes, ticks, a close — as the shell would (every request, lookup,
// stop and commit gets exactly one answer), and checks after every event
// that what the core reported assigned and revoked adds up to what it
// owns, that it never revokes what it does not own nor assigns what it
// owns, and that its invariants hold.
func TestMemberRandomHistories(t *testing.T) {
	codes := []messages.ErrorCode{codeOK, codeOK, codeOK, codeRebalancing, codeIllegalGen, codeUnknownMember, codeNotCoord, codeLoading, codeFenced}
	for seed := range uint64(300) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			eager := seed%3 == 0
			r := newMemberRun(t, func(c *Config) {
				if eager {
					c.Assignors = []group.Assignor{group.Range()}
				}
			})
			m := r.m
			// pending holds the events the shell owes the core.
			var pending []func() memberEffects
			var owned []TopicPartition
			var history []string
			take := func(name string, eff memberEffects) {
				history = append(history, name)
				for _, a := range eff.Actions {
					history = append(history, "  "+a.String())
					switch a := a.(type) {
					case memberFind:
						pending = append(pending, func() memberEffects {
							if rng.IntN(4) == 0 {
								return m.OnCoordinator(r.now, client.Coordinator{}, fmt.Errorf("no coordinator"))
							}
							return m.OnCoordinator(r.now, testCoordinator, nil)
						})
					case memberSend:
						req := a.Request
						pending = append(pending, func() memberEffects {
							code := codes[rng.IntN(len(codes))]
							switch msg := req.Msg.(type) {
							case *messages.JoinGroupRequest:
								id := msg.MemberId
								if id == "" || code == codeUnknownMember {
									id = fmt.Sprintf("a-%d", rng.IntN(3))
								}
								if rng.IntN(6) == 0 {
									return m.OnJoin(r.now, req, &messages.JoinGroupResponse{ErrorCode: codeMemberID, MemberId: id}, nil)
								}
								leader := id
								if rng.IntN(2) == 0 {
									leader = "b-1"
								}
								proto := "cooperative-sticky"
								if eager {
									proto = "range"
								}
								resp := &messages.JoinGroupResponse{ErrorCode: code, MemberId: id, GenerationId: int32(len(history)), Leader: leader, ProtocolName: proto,
									Members: []*messages.JoinGroupResponseMember{{MemberId: id, Metadata: subscriptionOf("t")}}}
								return m.OnJoin(r.now, req, resp, nil)
							case *messages.SyncGroupRequest:
								var assigned []TopicPartition
								for p := range int32(4) {
									if rng.IntN(2) == 0 {
										assigned = append(assigned, TopicPartition{"t", p})
									}
								}
								return m.OnSync(r.now, req, &messages.SyncGroupResponse{ErrorCode: code, Assignment: group.EncodeAssignment(toAssignment(assigned))}, nil)
							}
							if rng.IntN(8) == 0 {
								return m.OnHeartbeat(r.now, req, nil, fmt.Errorf("timed out"))
							}
							return m.OnHeartbeat(r.now, req, &messages.HeartbeatResponse{ErrorCode: code}, nil)
						})
					case memberAssign:
						lookup := a.Lookup
						pending = append(pending, func() memberEffects {
							return m.OnAssignMetadata(r.now, lookup, map[string]int32{"t": 4}, nil)
						})
					case memberStop:
						pending = append(pending, func() memberEffects { return m.OnHandled(r.now, rng.IntN(2) == 0) })
					case memberCommit:
						pending = append(pending, func() memberEffects {
							id, gen := m.commitID()
							eff := m.OnCommitDone(r.now, id, gen, codes[rng.IntN(len(codes))].Err("fake"))
							return memberEffects{Actions: append(eff.Actions, m.OnRevocationCommitted(r.now).Actions...)}
						})
					case memberRevoked:
						for _, tp := range a.Revoked.Partitions {
							if !slices.Contains(owned, tp) {
								t.Fatalf("revoked %s, not owned (%v)\n%s", tp, owned, strings.Join(history, "\n"))
							}
						}
						owned = minus(owned, a.Revoked.Partitions)
					case memberAssigned:
						for _, tp := range a.Assigned.Partitions {
							if slices.Contains(owned, tp) {
								t.Fatalf("assigned %s, owned already\n%s", tp, strings.Join(history, "\n"))
							}
						}
						owned = sortTPs(append(owned, a.Assigned.Partitions...))
					}
				}
				if fmt.Sprint(owned) != fmt.Sprint(m.owned) || !slices.IsSortedFunc(m.owned, compareTP) {
					t.Fatalf("reported owned %v, the core owns %v\n%s", owned, m.owned, strings.Join(history, "\n"))
				}
				if rp := m.revokingParts(); len(minus(rp, m.owned)) > 0 {
					t.Fatalf("revoking %v, owning %v\n%s", rp, m.owned, strings.Join(history, "\n"))
				}
				if m.phase == phaseStable && m.generation < 0 {
					t.Fatalf("stable without a generation\n%s", strings.Join(history, "\n"))
				}
			}
			take("start", m.Start(r.now))
			for range 200 {
				r.now = r.now.Add(time.Duration(rng.IntN(300)) * time.Millisecond)
				switch n := rng.IntN(20); {
				case n < 12 && len(pending) > 0:
					i := rng.IntN(len(pending))
					ev := pending[i]
					pending = slices.Delete(pending, i, i+1)
					take("answer", ev())
				case n < 14:
					take("tick", m.Tick(r.now))
				case n < 15:
					take("metadata", m.OnMetadata(r.now, map[string]int32{"t": 4, "u": int32(rng.IntN(2))}, false))
				case n < 16:
					take("hint", m.OnRebalanceHint(r.now, &messages.RebalanceStarted{GroupId: "g", MemberId: m.memberID, GenerationId: m.generation}))
				case n < 17:
					take("coordinator gone", m.OnCoordinatorGone(r.now, testCoordinator.Address))
				case n < 18 && rng.IntN(10) == 0 && !m.closing:
					take("close", m.Close(r.now))
				default:
					take("metadata", m.OnMetadata(r.now, map[string]int32{"t": 4}, true))
				}
			}
		})
	}
}
