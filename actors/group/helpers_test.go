package group

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/messages"
)

// Test timeouts: every client uses them unless a test changes its own.
const (
	testSession   = 10 * time.Second
	testRebalance = 30 * time.Second
)

// client is a test member as the client side sees itself.
type client struct {
	name       string // client id
	instance   string // group.instance.id, "" for dynamic
	id         string // member id, "" before the coordinator gives one
	generation int32
	leader     string
	members    []*messages.JoinGroupResponseMember
	protocols  []*messages.JoinGroupRequestProtocol
	session    time.Duration
	rebalance  time.Duration
	assignment []byte
}

// harness drives a Group with a fake clock and checks, on every call, that
// each token is answered at most once, with its request's correlation id,
// and that Effects.Wake is the group's next wake.
type harness struct {
	t       *testing.T
	g       *Group
	now     time.Time
	nextID  int
	nextTok int
	// sent maps each token to the client that sent the request.
	sent map[Token]*client
	// replies holds the answer to each token.
	replies map[Token]proto.Message
	// hinted is the Effects.RebalanceStarted of the last call.
	hinted []string
}

// newHarness returns a harness whose group has no initial rebalance delay,
// a 1 s minimum session timeout and member ids "<client>-<n>".
func newHarness(t *testing.T, configure ...func(*Config)) *harness {
	t.Helper()
	h := &harness{
		t:       t,
		now:     time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		sent:    make(map[Token]*client),
		replies: make(map[Token]proto.Message),
	}
	cfg := DefaultConfig()
	cfg.InitialRebalanceDelay = 0
	cfg.MinSessionTimeout = time.Second
	cfg.NewMemberID = func(clientID string) string {
		h.nextID++
		return fmt.Sprintf("%s-%d", clientID, h.nextID)
	}
	for _, f := range configure {
		f(&cfg)
	}
	g, err := NewGroup("g", cfg)
	if err != nil {
		t.Fatalf("NewGroup: %v", err)
	}
	h.g = g
	return h
}

// newClient returns a dynamic client supporting protocol "range" with
// metadata "m-<name>".
func newClient(name string) *client {
	return &client{
		name:      name,
		session:   testSession,
		rebalance: testRebalance,
		protocols: []*messages.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte("m-" + name)}},
	}
}

// newStatic returns a static client with instance id "i-<name>".
func newStatic(name string) *client {
	c := newClient(name)
	c.instance = "i-" + name
	return c
}

// apply records eff's replies, updating the clients that sent them.
func (h *harness) apply(eff Effects) {
	h.t.Helper()
	h.hinted = eff.RebalanceStarted
	for _, r := range eff.Replies {
		c, ok := h.sent[r.Token]
		if !ok {
			h.t.Fatalf("reply to unknown token %v: %v", r.Token, r.Msg)
		}
		if prev, dup := h.replies[r.Token]; dup {
			h.t.Fatalf("token %v answered twice: %v, then %v", r.Token, prev, r.Msg)
		}
		h.replies[r.Token] = r.Msg
		want := int64(r.Token.(int))
		switch m := r.Msg.(type) {
		case *messages.JoinGroupResponse:
			if m.GetCorrelationId() != want {
				h.t.Fatalf("join reply to token %v has correlation id %d", r.Token, m.GetCorrelationId())
			}
			switch m.GetErrorCode() {
			case messages.ErrorCode_ERROR_CODE_UNSPECIFIED:
				c.id, c.generation, c.leader, c.members = m.GetMemberId(), m.GetGenerationId(), m.GetLeader(), m.GetMembers()
			case messages.ErrorCode_ERROR_CODE_MEMBER_ID_REQUIRED:
				c.id = m.GetMemberId()
			}
		case *messages.SyncGroupResponse:
			if m.GetCorrelationId() != want {
				h.t.Fatalf("sync reply to token %v has correlation id %d", r.Token, m.GetCorrelationId())
			}
			if m.GetErrorCode() == messages.ErrorCode_ERROR_CODE_UNSPECIFIED {
				c.assignment = m.GetAssignment()
			}
		default:
			h.t.Fatalf("unexpected reply %T", r.Msg)
		}
	}
	if got, want := eff.Wake, h.g.NextWake(); !got.Equal(want) {
		h.t.Fatalf("Effects.Wake = %v, NextWake() = %v", got, want)
	}
}

// token returns a new token for c's next request.
func (h *harness) token(c *client) Token {
	h.nextTok++
	h.sent[h.nextTok] = c
	return h.nextTok
}

// joinRequest is c's JoinGroupRequest.
func (h *harness) joinRequest(c *client, corr int64) *messages.JoinGroupRequest {
	return &messages.JoinGroupRequest{
		CorrelationId:      corr,
		GroupId:            "g",
		MemberId:           c.id,
		GroupInstanceId:    c.instance,
		ProtocolType:       ProtocolType,
		Protocols:          c.protocols,
		SessionTimeoutMs:   int32(c.session / time.Millisecond),
		RebalanceTimeoutMs: int32(c.rebalance / time.Millisecond),
		ClientId:           c.name,
	}
}

// join sends c's JoinGroupRequest and returns its token.
func (h *harness) join(c *client) Token {
	h.t.Helper()
	tok := h.token(c)
	h.apply(h.g.Join(h.now, tok, "host-"+c.name, h.joinRequest(c, int64(tok.(int)))))
	return tok
}

// joinNew has a client without a member id join twice (KIP-394) and returns
// the second join's token.
func (h *harness) joinNew(c *client) Token {
	h.t.Helper()
	tok := h.join(c)
	if c.instance == "" {
		h.wantJoinCode(tok, messages.ErrorCode_ERROR_CODE_MEMBER_ID_REQUIRED)
		return h.join(c)
	}
	return tok
}

// sync sends c's SyncGroupRequest for its generation with assignments (the
// leader's) and returns its token.
func (h *harness) sync(c *client, assignments map[string]string) Token {
	h.t.Helper()
	tok := h.token(c)
	req := &messages.SyncGroupRequest{
		CorrelationId:   int64(tok.(int)),
		GroupId:         "g",
		GenerationId:    c.generation,
		MemberId:        c.id,
		GroupInstanceId: c.instance,
		ProtocolType:    ProtocolType,
	}
	for id, a := range assignments {
		req.Assignments = append(req.Assignments, &messages.SyncGroupRequestAssignment{MemberId: id, Assignment: []byte(a)})
	}
	h.apply(h.g.Sync(h.now, tok, req))
	return tok
}

// leaderSync sends the leader's sync assigning "a-<member id>" to each
// member it was told of.
func (h *harness) leaderSync(c *client) Token {
	h.t.Helper()
	assignments := make(map[string]string)
	for _, m := range c.members {
		assignments[m.GetMemberId()] = "a-" + m.GetMemberId()
	}
	return h.sync(c, assignments)
}

// heartbeat sends c's heartbeat and returns its error code.
func (h *harness) heartbeat(c *client) messages.ErrorCode {
	h.t.Helper()
	resp, eff := h.g.Heartbeat(h.now, &messages.HeartbeatRequest{
		CorrelationId: 7, GroupId: "g", GenerationId: c.generation, MemberId: c.id, GroupInstanceId: c.instance,
	})
	h.apply(eff)
	if resp.GetCorrelationId() != 7 {
		h.t.Fatalf("heartbeat response correlation id %d", resp.GetCorrelationId())
	}
	return resp.GetErrorCode()
}

// leave has members leave and returns the per-member codes.
func (h *harness) leave(members ...*messages.LeaveGroupRequestMember) []messages.ErrorCode {
	h.t.Helper()
	resp, eff := h.g.Leave(h.now, &messages.LeaveGroupRequest{CorrelationId: 8, GroupId: "g", Members: members})
	h.apply(eff)
	if resp.GetErrorCode() != messages.ErrorCode_ERROR_CODE_UNSPECIFIED {
		h.t.Fatalf("leave: group-level error %v", resp.GetErrorCode())
	}
	var codes []messages.ErrorCode
	for _, m := range resp.GetMembers() {
		codes = append(codes, m.GetErrorCode())
	}
	return codes
}

// advance moves the clock by d and ticks.
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	h.now = h.now.Add(d)
	h.apply(h.g.Tick(h.now))
}

// reply returns the answer to tok, nil if it has none yet.
func (h *harness) reply(tok Token) proto.Message { return h.replies[tok] }

// replyAs returns the answer to tok as a T; it fails the test if there is
// none.
func replyAs[T any](h *harness, tok Token) T {
	h.t.Helper()
	r, ok := h.replies[tok].(T)
	if !ok {
		h.t.Fatalf("token %v: no %T answer (have %v)", tok, r, h.replies[tok])
	}
	return r
}

// joinReply returns the join answer to tok.
func (h *harness) joinReply(tok Token) *messages.JoinGroupResponse {
	h.t.Helper()
	return replyAs[*messages.JoinGroupResponse](h, tok)
}

// syncReply returns the sync answer to tok.
func (h *harness) syncReply(tok Token) *messages.SyncGroupResponse {
	h.t.Helper()
	return replyAs[*messages.SyncGroupResponse](h, tok)
}

// wantJoinCode checks the code of tok's join answer.
func (h *harness) wantJoinCode(tok Token, want messages.ErrorCode) {
	h.t.Helper()
	if got := h.joinReply(tok).GetErrorCode(); got != want {
		h.t.Fatalf("join %v: code %v, want %v (%s)", tok, got, want, h.joinReply(tok).GetErrorMessage())
	}
}

// wantSyncCode checks the code of tok's sync answer.
func (h *harness) wantSyncCode(tok Token, want messages.ErrorCode) {
	h.t.Helper()
	if got := h.syncReply(tok).GetErrorCode(); got != want {
		h.t.Fatalf("sync %v: code %v, want %v (%s)", tok, got, want, h.syncReply(tok).GetErrorMessage())
	}
}

// wantPending checks that tok has no answer yet.
func (h *harness) wantPending(tok Token) {
	h.t.Helper()
	if r := h.reply(tok); r != nil {
		h.t.Fatalf("token %v answered too early: %v", tok, r)
	}
}

// wantState checks the group's state and generation.
func (h *harness) wantState(state State, generation int32) {
	h.t.Helper()
	if h.g.State() != state || h.g.Generation() != generation {
		h.t.Fatalf("group is %v generation %d, want %v generation %d", h.g.State(), h.g.Generation(), state, generation)
	}
}

// stabilize brings the group to Stable with exactly clients as members:
// every client (re)joins (again, whenever its answer is stale), the join
// phase is waited out when needed, and all sync, the leader assigning
// "a-<member id>". It returns the generation.
func (h *harness) stabilize(clients ...*client) int32 {
	h.t.Helper()
	last := make(map[*client]Token)
	for _, c := range clients {
		if c.id == "" {
			last[c] = h.joinNew(c)
		} else {
			last[c] = h.join(c)
		}
	}
	current := func(c *client) bool {
		r, ok := h.reply(last[c]).(*messages.JoinGroupResponse)
		return ok && r.GetErrorCode() == messages.ErrorCode_ERROR_CODE_UNSPECIFIED && r.GetGenerationId() == h.g.Generation()
	}
	for round := 0; ; round++ {
		if round > 10 {
			h.t.Fatalf("stabilize: no stable generation after %d rounds (state %v)", round, h.g.State())
		}
		done := h.g.State() == CompletingRebalance || h.g.State() == Stable
		for _, c := range clients {
			done = done && current(c)
		}
		if done {
			break
		}
		for _, c := range clients {
			if h.reply(last[c]) != nil && !current(c) || h.reply(last[c]) != nil && h.g.State() == PreparingRebalance {
				last[c] = h.join(c)
			}
		}
		if h.g.State() == PreparingRebalance {
			h.advance(h.g.NextWake().Sub(h.now))
		}
	}
	var leader *client
	for _, c := range clients {
		if c.id == h.g.Leader() {
			leader = c
		}
	}
	if leader == nil {
		h.t.Fatalf("no client is the leader %q", h.g.Leader())
	}
	syncs := make(map[*client]Token)
	for _, c := range clients {
		if c != leader {
			syncs[c] = h.sync(c, nil)
		}
	}
	if h.g.State() == CompletingRebalance {
		syncs[leader] = h.leaderSync(leader)
	} else {
		syncs[leader] = h.sync(leader, nil)
	}
	for _, c := range clients {
		h.wantSyncCode(syncs[c], messages.ErrorCode_ERROR_CODE_UNSPECIFIED)
		if got, want := string(c.assignment), "a-"+c.id; got != want {
			h.t.Fatalf("%s: assignment %q, want %q", c.name, got, want)
		}
	}
	h.wantState(Stable, h.g.Generation())
	if got := len(h.g.Members()); got != len(clients) {
		h.t.Fatalf("group has %d members %v, want %d", got, h.g.Members(), len(clients))
	}
	return h.g.Generation()
}
