package group

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/actorlog/actorlog/messages"
)

const (
	codeOK           = messages.ErrorCode_ERROR_CODE_UNSPECIFIED
	codeRebalance    = messages.ErrorCode_ERROR_CODE_REBALANCE_IN_PROGRESS
	codeUnknown      = messages.ErrorCode_ERROR_CODE_UNKNOWN_MEMBER_ID
	codeIllegalGen   = messages.ErrorCode_ERROR_CODE_ILLEGAL_GENERATION
	codeFenced       = messages.ErrorCode_ERROR_CODE_FENCED_INSTANCE_ID
	codeInconsistent = messages.ErrorCode_ERROR_CODE_INCONSISTENT_GROUP_PROTOCOL
	codeNotAvailable = messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE
)

func TestNewGroupValidates(t *testing.T) {
	tests := []struct {
		name      string
		id        string
		configure func(*Config)
		want      error
	}{
		{"defaults", "g", func(*Config) {}, nil},
		{"no initial delay", "g", func(c *Config) { c.InitialRebalanceDelay = 0 }, nil},
		{"empty id", "", func(*Config) {}, ErrEmptyGroupID},
		{"negative delay", "g", func(c *Config) { c.InitialRebalanceDelay = -1 }, ErrInvalidConfig},
		{"zero min session", "g", func(c *Config) { c.MinSessionTimeout = 0 }, ErrInvalidConfig},
		{"max below min", "g", func(c *Config) { c.MaxSessionTimeout = time.Second }, ErrInvalidConfig},
		{"negative max size", "g", func(c *Config) { c.MaxSize = -1 }, ErrInvalidConfig},
		{"zero new member timeout", "g", func(c *Config) { c.NewMemberJoinTimeout = 0 }, ErrInvalidConfig},
		{"no id generator", "g", func(c *Config) { c.NewMemberID = nil }, ErrInvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tt.configure(&cfg)
			g, err := NewGroup(tt.id, cfg)
			if !errors.Is(err, tt.want) {
				t.Fatalf("NewGroup: %v, want %v", err, tt.want)
			}
			if err == nil && (g.State() != Empty || g.Generation() != 0 || !g.NextWake().IsZero()) {
				t.Errorf("new group: %v generation %d wake %v", g.State(), g.Generation(), g.NextWake())
			}
		})
	}
}

func TestDefaultMemberIDs(t *testing.T) {
	cfg := DefaultConfig()
	a, b := cfg.NewMemberID("client"), cfg.NewMemberID("client")
	if a == b || len(a) != len("client-")+26 || a[:7] != "client-" {
		t.Errorf("member ids %q, %q: want distinct client-<26 random characters>", a, b)
	}
}

// TestFirstJoin walks one member through KIP-394's two joins, the sync and
// a heartbeat.
func TestFirstJoin(t *testing.T) {
	h := newHarness(t)
	c := newClient("c")
	tok := h.join(c)
	resp := h.joinReply(tok)
	if resp.GetErrorCode() != messages.ErrorCode_ERROR_CODE_MEMBER_ID_REQUIRED || resp.GetMemberId() != "c-1" || resp.GetGenerationId() != -1 {
		t.Fatalf("first join: %v", resp)
	}
	h.wantState(Empty, 0)
	if want := h.now.Add(testSession); !h.g.NextWake().Equal(want) {
		t.Errorf("pending member id: wake %v, want its session expiry %v", h.g.NextWake(), want)
	}

	tok = h.join(c)
	resp = h.joinReply(tok)
	if resp.GetErrorCode() != codeOK || resp.GetGenerationId() != 1 || resp.GetLeader() != "c-1" ||
		resp.GetMemberId() != "c-1" || resp.GetProtocolType() != ProtocolType || resp.GetProtocolName() != "range" {
		t.Fatalf("second join: %v", resp)
	}
	if len(resp.GetMembers()) != 1 || string(resp.GetMembers()[0].GetMetadata()) != "m-c" {
		t.Fatalf("leader's members: %v", resp.GetMembers())
	}
	h.wantState(CompletingRebalance, 1)

	h.wantSyncCode(h.leaderSync(c), codeOK)
	if string(c.assignment) != "a-c-1" {
		t.Fatalf("assignment %q", c.assignment)
	}
	h.wantState(Stable, 1)
	if code := h.heartbeat(c); code != codeOK {
		t.Fatalf("heartbeat: %v", code)
	}
}

func TestJoinErrors(t *testing.T) {
	tests := []struct {
		name      string
		configure func(*Config)
		// edit changes the request of client x, which is not in the
		// group unless edit gives it a member's id.
		edit       func(h *harness, req *messages.JoinGroupRequest)
		want       messages.ErrorCode
		wantMember string
	}{
		{"wrong group", nil, func(_ *harness, r *messages.JoinGroupRequest) { r.GroupId = "other" },
			messages.ErrorCode_ERROR_CODE_INVALID_GROUP_ID, ""},
		{"session too short", nil, func(_ *harness, r *messages.JoinGroupRequest) { r.SessionTimeoutMs = 999 },
			messages.ErrorCode_ERROR_CODE_INVALID_SESSION_TIMEOUT, ""},
		{"session too long", nil, func(_ *harness, r *messages.JoinGroupRequest) { r.SessionTimeoutMs = 31 * 60 * 1000 },
			messages.ErrorCode_ERROR_CODE_INVALID_SESSION_TIMEOUT, ""},
		{"unknown member id", nil, func(_ *harness, r *messages.JoinGroupRequest) { r.MemberId = "ghost" },
			codeUnknown, ""},
		{"other protocol type", nil, func(_ *harness, r *messages.JoinGroupRequest) { r.ProtocolType = "connect" },
			codeInconsistent, ""},
		{"no common protocol", nil, func(_ *harness, r *messages.JoinGroupRequest) {
			r.Protocols = []*messages.JoinGroupRequestProtocol{{Name: "roundrobin"}}
		}, codeInconsistent, ""},
		{"no protocols", nil, func(_ *harness, r *messages.JoinGroupRequest) { r.Protocols = nil },
			codeInconsistent, ""},
		{"static id of another member", nil, func(_ *harness, r *messages.JoinGroupRequest) {
			r.MemberId, r.GroupInstanceId = "a-1", "i-b"
		}, codeFenced, "a-1"},
		{"unknown static id with member id", nil, func(_ *harness, r *messages.JoinGroupRequest) {
			r.MemberId, r.GroupInstanceId = "a-1", "i-nobody"
		}, codeUnknown, ""},
		{"pending member id as static", nil, func(h *harness, r *messages.JoinGroupRequest) {
			r.MemberId = h.joinReply(h.join(newClient("p"))).GetMemberId()
			r.GroupInstanceId = "i-p"
		}, codeUnknown, ""},
		{"group full", func(c *Config) { c.MaxSize = 2 }, func(*harness, *messages.JoinGroupRequest) {},
			messages.ErrorCode_ERROR_CODE_GROUP_MAX_SIZE_REACHED, ""},
		{"dead group", nil, func(h *harness, _ *messages.JoinGroupRequest) { h.apply(h.g.Unload()) },
			codeNotAvailable, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var configure []func(*Config)
			if tt.configure != nil {
				configure = append(configure, tt.configure)
			}
			h := newHarness(t, configure...)
			a, b := newClient("a"), newStatic("b")
			gen := h.stabilize(a, b)
			x := newClient("x")
			tok := h.token(x)
			req := h.joinRequest(x, int64(tok.(int)))
			tt.edit(h, req)
			if h.g.State() == Dead {
				tt.edit = nil
			}
			h.apply(h.g.Join(h.now, tok, "host-x", req))
			resp := h.joinReply(tok)
			if resp.GetErrorCode() != tt.want || resp.GetMemberId() != tt.wantMember || resp.GetGenerationId() != -1 {
				t.Fatalf("join: %v, want code %v member %q", resp, tt.want, tt.wantMember)
			}
			if tt.edit != nil {
				h.wantState(Stable, gen)
			}
		})
	}
}

func TestInitialRebalanceDelay(t *testing.T) {
	const delay = 3 * time.Second
	tests := []struct {
		name string
		// joins are the times (since the first join) of the members' second
		// joins.
		joins []time.Duration
		// rebalance is every member's rebalance timeout.
		rebalance time.Duration
		// want is when the join phase ends, since the first join.
		want time.Duration
	}{
		{"one member waits the delay", []time.Duration{0}, testRebalance, delay},
		{"a joiner within the delay extends it", []time.Duration{0, 2 * time.Second}, testRebalance, 2 * delay},
		{"two joiners extend it once each", []time.Duration{0, time.Second, 4 * time.Second}, testRebalance, 3 * delay},
		{"extensions stop at the rebalance timeout", []time.Duration{0, time.Second, 4 * time.Second}, 5 * time.Second, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.InitialRebalanceDelay = delay })
			start := h.now
			var toks []Token
			for i, at := range tt.joins {
				h.advance(start.Add(at).Sub(h.now))
				c := newClient(string(rune('a' + i)))
				c.rebalance = tt.rebalance
				toks = append(toks, h.joinNew(c))
			}
			for h.reply(toks[0]) == nil {
				h.advance(h.g.NextWake().Sub(h.now))
			}
			if got := h.now.Sub(start); got != tt.want {
				t.Errorf("join phase ended after %v, want %v", got, tt.want)
			}
			for _, tok := range toks {
				if r := h.joinReply(tok); r.GetGenerationId() != 1 {
					t.Errorf("join %v: %v, want generation 1", tok, r)
				}
			}
		})
	}
}

// TestRebalanceOnJoin: a new member starts a rebalance that the others learn
// of from heartbeats; followers' syncs wait for the leader's.
func TestRebalanceOnJoin(t *testing.T) {
	h := newHarness(t)
	a, b := newClient("a"), newClient("b")
	gen := h.stabilize(a, b)
	c := newClient("c")
	ctok := h.joinNew(c)
	h.wantPending(ctok)
	h.wantState(PreparingRebalance, gen)
	for _, x := range []*client{a, b} {
		if code := h.heartbeat(x); code != codeRebalance {
			t.Fatalf("%s heartbeat: %v, want REBALANCE_IN_PROGRESS", x.name, code)
		}
	}
	if tok := h.sync(a, nil); h.syncReply(tok).GetErrorCode() != codeRebalance {
		t.Fatalf("sync while preparing: %v", h.syncReply(tok))
	}
	atok := h.join(a)
	h.wantPending(atok)
	btok := h.join(b)
	for _, tok := range []Token{atok, btok, ctok} {
		h.wantJoinCode(tok, codeOK)
	}
	h.wantState(CompletingRebalance, gen+1)
	if a.leader != a.id || len(a.members) != 3 || len(b.members) != 0 || b.leader != a.id {
		t.Fatalf("leader %q with members %v; follower sees leader %q and members %v", a.leader, a.members, b.leader, b.members)
	}

	// Followers wait for the leader's assignments; a member the leader
	// leaves out gets an empty one.
	bsync, csync := h.sync(b, nil), h.sync(c, nil)
	h.wantPending(bsync)
	if code := h.heartbeat(b); code != codeOK {
		t.Fatalf("heartbeat while completing: %v", code)
	}
	h.wantSyncCode(h.sync(a, map[string]string{a.id: "A", b.id: "B"}), codeOK)
	h.wantSyncCode(bsync, codeOK)
	h.wantSyncCode(csync, codeOK)
	if string(a.assignment) != "A" || string(b.assignment) != "B" || c.assignment == nil || len(c.assignment) != 0 {
		t.Fatalf("assignments %q %q %q", a.assignment, b.assignment, c.assignment)
	}
	h.wantState(Stable, gen+1)
	// A late sync in a Stable group gets the assignment at once.
	if r := h.syncReply(h.sync(b, nil)); string(r.GetAssignment()) != "B" || r.GetProtocolName() != "range" {
		t.Fatalf("sync when stable: %v", r)
	}
}

func TestKnownMemberRejoin(t *testing.T) {
	tests := []struct {
		name          string
		who           string // "leader" or "follower"
		newMetadata   bool
		wantRebalance bool
	}{
		{"follower, same metadata", "follower", false, false},
		{"follower, new metadata", "follower", true, true},
		{"leader, same metadata", "leader", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			a, b := newClient("a"), newClient("b")
			gen := h.stabilize(a, b)
			x := b
			if tt.who == "leader" {
				x = a
			}
			if tt.newMetadata {
				x.protocols = []*messages.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte("changed")}}
			}
			tok := h.join(x)
			if tt.wantRebalance {
				h.wantPending(tok)
				h.wantState(PreparingRebalance, gen)
				return
			}
			h.wantJoinCode(tok, codeOK)
			h.wantState(Stable, gen)
			if r := h.joinReply(tok); r.GetGenerationId() != gen || r.GetLeader() != a.id {
				t.Fatalf("rejoin: %v", r)
			}
		})
	}
}

func TestNewJoinReplacesWaitingJoin(t *testing.T) {
	h := newHarness(t)
	a, b := newClient("a"), newClient("b")
	h.stabilize(a, b)
	first := h.join(a) // the leader's join starts a rebalance
	second := h.join(a)
	h.wantJoinCode(first, codeRebalance)
	h.wantPending(second)
	h.join(b)
	h.wantJoinCode(second, codeOK)
}

func TestMembersThatDoNotRejoin(t *testing.T) {
	tests := []struct {
		name string
		// heartbeats: c keeps heartbeating during the rebalance.
		heartbeats bool
		// want is when c is removed (and the join phase ends), since the
		// rebalance began.
		want time.Duration
	}{
		{"removed at the rebalance timeout", true, testRebalance},
		{"removed at the session timeout", false, testSession},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			a, b, c := newClient("a"), newClient("b"), newClient("c")
			gen := h.stabilize(a, b, c)
			start := h.now
			d := newClient("d")
			toks := []Token{h.joinNew(d), h.join(a), h.join(b)}
			for h.reply(toks[0]) == nil {
				step := time.Second
				if !tt.heartbeats {
					step = h.g.NextWake().Sub(h.now)
				}
				h.advance(step)
				if tt.heartbeats && h.g.State() == PreparingRebalance {
					if code := h.heartbeat(c); code != codeRebalance {
						t.Fatalf("c heartbeat: %v", code)
					}
				}
			}
			if got := h.now.Sub(start); got != tt.want {
				t.Errorf("join phase ended after %v, want %v", got, tt.want)
			}
			h.wantState(CompletingRebalance, gen+1)
			if slices.Contains(h.g.Members(), c.id) || len(h.g.Members()) != 3 {
				t.Fatalf("members %v: c should be gone", h.g.Members())
			}
			if code := h.heartbeat(c); code != codeUnknown {
				t.Errorf("c heartbeat after removal: %v, want UNKNOWN_MEMBER_ID", code)
			}
		})
	}
}

func TestSessionExpiry(t *testing.T) {
	h := newHarness(t)
	a, b := newClient("a"), newClient("b")
	gen := h.stabilize(a, b)
	for range 3 {
		h.advance(testSession / 3)
		if code := h.heartbeat(a); code != codeOK {
			t.Fatalf("a heartbeat: %v", code)
		}
	}
	// b has been silent for a whole session timeout.
	h.advance(testSession - 3*(testSession/3))
	if slices.Contains(h.g.Members(), b.id) {
		t.Fatalf("b not removed after its session timeout: %v", h.g.Members())
	}
	h.wantState(PreparingRebalance, gen)
	if code := h.heartbeat(a); code != codeRebalance {
		t.Fatalf("a heartbeat: %v", code)
	}
	h.wantJoinCode(h.join(a), codeOK)
	h.wantState(CompletingRebalance, gen+1)
}

func TestHeartbeatErrors(t *testing.T) {
	tests := []struct {
		name string
		// setup runs on a Stable group of dynamic a and static s.
		setup func(h *harness, a, s *client)
		req   func(a, s *client) *messages.HeartbeatRequest
		want  messages.ErrorCode
	}{
		{"stable", nil, func(a, _ *client) *messages.HeartbeatRequest {
			return &messages.HeartbeatRequest{GroupId: "g", MemberId: a.id, GenerationId: a.generation}
		}, codeOK},
		{"static", nil, func(_, s *client) *messages.HeartbeatRequest {
			return &messages.HeartbeatRequest{GroupId: "g", MemberId: s.id, GroupInstanceId: s.instance, GenerationId: s.generation}
		}, codeOK},
		{"old generation", nil, func(a, _ *client) *messages.HeartbeatRequest {
			return &messages.HeartbeatRequest{GroupId: "g", MemberId: a.id, GenerationId: a.generation - 1}
		}, codeIllegalGen},
		{"unknown member", nil, func(a, _ *client) *messages.HeartbeatRequest {
			return &messages.HeartbeatRequest{GroupId: "g", MemberId: "ghost", GenerationId: a.generation}
		}, codeUnknown},
		{"fenced static member", nil, func(a, s *client) *messages.HeartbeatRequest {
			return &messages.HeartbeatRequest{GroupId: "g", MemberId: a.id, GroupInstanceId: s.instance, GenerationId: a.generation}
		}, codeFenced},
		{"wrong group", nil, func(a, _ *client) *messages.HeartbeatRequest {
			return &messages.HeartbeatRequest{GroupId: "h", MemberId: a.id, GenerationId: a.generation}
		}, messages.ErrorCode_ERROR_CODE_INVALID_GROUP_ID},
		{"preparing rebalance", func(h *harness, _, _ *client) { h.joinNew(newClient("n")) },
			func(a, _ *client) *messages.HeartbeatRequest {
				return &messages.HeartbeatRequest{GroupId: "g", MemberId: a.id, GenerationId: a.generation}
			}, codeRebalance},
		{"completing rebalance", func(h *harness, a, s *client) {
			h.joinNew(newClient("n"))
			h.join(a)
			h.join(s)
		}, func(a, _ *client) *messages.HeartbeatRequest {
			return &messages.HeartbeatRequest{GroupId: "g", MemberId: a.id, GenerationId: a.generation}
		}, codeOK},
		{"dead", func(h *harness, _, _ *client) { h.apply(h.g.Unload()) }, func(a, _ *client) *messages.HeartbeatRequest {
			return &messages.HeartbeatRequest{GroupId: "g", MemberId: a.id, GenerationId: a.generation}
		}, codeNotAvailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			a, s := newClient("a"), newStatic("s")
			h.stabilize(a, s)
			if tt.setup != nil {
				tt.setup(h, a, s)
			}
			resp, eff := h.g.Heartbeat(h.now, tt.req(a, s))
			h.apply(eff)
			if resp.GetErrorCode() != tt.want {
				t.Fatalf("heartbeat: %v, want %v", resp, tt.want)
			}
		})
	}
}

func TestSyncErrors(t *testing.T) {
	tests := []struct {
		name string
		edit func(r *messages.SyncGroupRequest)
		want messages.ErrorCode
	}{
		{"ok", func(*messages.SyncGroupRequest) {}, codeOK},
		{"old generation", func(r *messages.SyncGroupRequest) { r.GenerationId-- }, codeIllegalGen},
		{"unknown member", func(r *messages.SyncGroupRequest) { r.MemberId = "ghost" }, codeUnknown},
		{"fenced", func(r *messages.SyncGroupRequest) { r.GroupInstanceId = "i-s" }, codeFenced},
		{"other protocol type", func(r *messages.SyncGroupRequest) { r.ProtocolType = "connect" }, codeInconsistent},
		{"other protocol", func(r *messages.SyncGroupRequest) { r.ProtocolName = "roundrobin" }, codeInconsistent},
		{"unchecked protocol", func(r *messages.SyncGroupRequest) { r.ProtocolType, r.ProtocolName = "", "" }, codeOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			a, s := newClient("a"), newStatic("s")
			h.stabilize(a, s)
			tok := h.token(a)
			req := &messages.SyncGroupRequest{
				CorrelationId: int64(tok.(int)), GroupId: "g", GenerationId: a.generation, MemberId: a.id,
				ProtocolType: ProtocolType, ProtocolName: "range",
			}
			tt.edit(req)
			h.apply(h.g.Sync(h.now, tok, req))
			h.wantSyncCode(tok, tt.want)
		})
	}
}

// TestSyncDeadline: a member that does not sync within the rebalance
// timeout after the join phase is removed, and the others rebalance.
func TestSyncDeadline(t *testing.T) {
	tests := []struct {
		name string
		late string // the member that never syncs
	}{
		{"follower", "b"},
		{"leader", "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			a, b, c := newClient("a"), newClient("b"), newClient("c")
			gen := h.stabilize(a, b, c)
			toks := []Token{h.join(a), h.join(b), h.join(c)}
			for _, tok := range toks {
				h.wantJoinCode(tok, codeOK)
			}
			var waiting []Token
			for _, x := range []*client{a, b, c} {
				if x.name == tt.late {
					continue
				}
				if x.id == x.leader {
					h.leaderSync(x)
				} else {
					waiting = append(waiting, h.sync(x, nil))
				}
			}
			// Everyone heartbeats, the late member too: only its missing
			// sync removes it, one rebalance timeout after the join phase.
			start := h.now
			for h.now.Sub(start) < testRebalance-time.Second {
				h.advance(time.Second)
				for _, x := range []*client{a, b, c} {
					h.heartbeat(x)
				}
			}
			if len(h.g.Members()) != 3 {
				t.Fatalf("members %v removed before the rebalance timeout", h.g.Members())
			}
			h.advance(time.Second)
			h.wantState(PreparingRebalance, gen+1)
			if len(h.g.Members()) != 2 {
				t.Fatalf("members %v: %s should be gone", h.g.Members(), tt.late)
			}
			for _, tok := range waiting {
				want := codeOK
				if tt.late == "a" { // the followers never got an assignment
					want = codeRebalance
				}
				h.wantSyncCode(tok, want)
			}
		})
	}
}

func TestLeave(t *testing.T) {
	tests := []struct {
		name string
		// leaving lists who leaves, by the a, b (static), c built below.
		leaving func(a, b, c *client) []*messages.LeaveGroupRequestMember
		want    []messages.ErrorCode
		// wantMembers is how many members remain.
		wantMembers int
	}{
		{"dynamic member", func(a, _, _ *client) []*messages.LeaveGroupRequestMember {
			return []*messages.LeaveGroupRequestMember{{MemberId: a.id, Reason: "shutting down"}}
		}, []messages.ErrorCode{codeOK}, 2},
		{"static member by member id", func(_, b, _ *client) []*messages.LeaveGroupRequestMember {
			return []*messages.LeaveGroupRequestMember{{MemberId: b.id, GroupInstanceId: b.instance}}
		}, []messages.ErrorCode{codeOK}, 2},
		{"static member by instance id (admin)", func(_, b, _ *client) []*messages.LeaveGroupRequestMember {
			return []*messages.LeaveGroupRequestMember{{GroupInstanceId: b.instance}}
		}, []messages.ErrorCode{codeOK}, 2},
		{"fenced static member", func(a, b, _ *client) []*messages.LeaveGroupRequestMember {
			return []*messages.LeaveGroupRequestMember{{MemberId: a.id, GroupInstanceId: b.instance}}
		}, []messages.ErrorCode{codeFenced}, 3},
		{"unknown members", func(*client, *client, *client) []*messages.LeaveGroupRequestMember {
			return []*messages.LeaveGroupRequestMember{{MemberId: "ghost"}, {GroupInstanceId: "i-ghost"}, {}}
		}, []messages.ErrorCode{codeUnknown, codeUnknown, codeUnknown}, 3},
		{"everyone", func(a, b, c *client) []*messages.LeaveGroupRequestMember {
			return []*messages.LeaveGroupRequestMember{{MemberId: a.id}, {GroupInstanceId: b.instance}, {MemberId: c.id}}
		}, []messages.ErrorCode{codeOK, codeOK, codeOK}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			a, b, c := newClient("a"), newStatic("b"), newClient("c")
			gen := h.stabilize(a, b, c)
			if got := h.leave(tt.leaving(a, b, c)...); !slices.Equal(got, tt.want) {
				t.Fatalf("leave codes %v, want %v", got, tt.want)
			}
			if got := len(h.g.Members()); got != tt.wantMembers {
				t.Fatalf("%d members remain (%v), want %d", got, h.g.Members(), tt.wantMembers)
			}
			switch tt.wantMembers {
			case 3:
				h.wantState(Stable, gen)
			case 0:
				h.wantState(Empty, gen+1)
				if h.g.Leader() != "" || h.g.ProtocolName() != "" || h.g.ProtocolType() != ProtocolType {
					t.Errorf("empty group: leader %q protocol %q type %q", h.g.Leader(), h.g.ProtocolName(), h.g.ProtocolType())
				}
			default:
				h.wantState(PreparingRebalance, gen)
			}
		})
	}
}

func TestLeaveAnswersWaitingJoin(t *testing.T) {
	h := newHarness(t)
	a, b := newClient("a"), newClient("b")
	gen := h.stabilize(a, b)
	atok := h.join(a)
	h.wantPending(atok)
	if got := h.leave(&messages.LeaveGroupRequestMember{MemberId: a.id}); !slices.Equal(got, []messages.ErrorCode{codeOK}) {
		t.Fatalf("leave: %v", got)
	}
	if r := h.joinReply(atok); r.GetErrorCode() != codeUnknown || r.GetMemberId() != "" {
		t.Fatalf("waiting join of the leaving member: %v", r)
	}
	// b has not rejoined; once it does, the phase ends with b as leader.
	btok := h.join(b)
	h.wantJoinCode(btok, codeOK)
	if b.leader != b.id {
		t.Fatalf("leader %q, want b", b.leader)
	}
	h.wantState(CompletingRebalance, gen+1)
}

func TestPendingMemberID(t *testing.T) {
	t.Run("expires unused", func(t *testing.T) {
		h := newHarness(t)
		a := newClient("a")
		h.stabilize(a)
		p := newClient("p")
		h.wantJoinCode(h.join(p), messages.ErrorCode_ERROR_CODE_MEMBER_ID_REQUIRED)
		for range 4 { // a keeps its session; p's id expires
			h.advance(testSession / 3)
			h.heartbeat(a)
		}
		h.wantJoinCode(h.join(p), codeUnknown)
	})
	t.Run("holds the join phase open", func(t *testing.T) {
		h := newHarness(t)
		a, b := newClient("a"), newClient("b")
		gen := h.stabilize(a, b)
		p := newClient("p")
		h.wantJoinCode(h.join(p), messages.ErrorCode_ERROR_CODE_MEMBER_ID_REQUIRED)
		atok, btok := h.join(a), h.join(b) // the leader's join starts a rebalance
		h.wantPending(btok)
		h.advance(testSession)
		h.wantJoinCode(atok, codeOK)
		h.wantJoinCode(btok, codeOK)
		h.wantState(CompletingRebalance, gen+1)
	})
	t.Run("leaves", func(t *testing.T) {
		h := newHarness(t)
		a, b := newClient("a"), newClient("b")
		gen := h.stabilize(a, b)
		p := newClient("p")
		h.wantJoinCode(h.join(p), messages.ErrorCode_ERROR_CODE_MEMBER_ID_REQUIRED)
		atok, btok := h.join(a), h.join(b)
		h.wantPending(btok)
		if got := h.leave(&messages.LeaveGroupRequestMember{MemberId: p.id}); !slices.Equal(got, []messages.ErrorCode{codeOK}) {
			t.Fatalf("leave: %v", got)
		}
		h.wantJoinCode(atok, codeOK)
		h.wantState(CompletingRebalance, gen+1)
	})
}

func TestNewMemberJoinTimeout(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.NewMemberJoinTimeout = time.Minute })
	a := newClient("a")
	a.rebalance = 10 * time.Minute
	gen := h.stabilize(a)
	n := newClient("n")
	ntok := h.joinNew(n)
	for range 20 { // a heartbeats but does not rejoin
		h.advance(5 * time.Second)
		h.heartbeat(a)
	}
	if r := h.joinReply(ntok); r.GetErrorCode() != codeUnknown {
		t.Fatalf("new member's join after a minute: %v", r)
	}
	h.wantState(PreparingRebalance, gen)
	if slices.Contains(h.g.Members(), n.id) {
		t.Fatalf("new member still in %v", h.g.Members())
	}
}

// TestStaticRejoin covers KIP-345: a static member restarting with the
// same group.instance.id.
func TestStaticRejoin(t *testing.T) {
	consumerMeta := func(topics []string, owned Assignment) []byte {
		return EncodeSubscription(Subscription{Topics: topics, Owned: owned, Generation: -1})
	}
	tests := []struct {
		name string
		// restart is "leader" (s leads) or "follower".
		restart string
		// before and after are s's metadata before and after the restart.
		before, after []byte
		// preparing: the restart comes during a rebalance, not when stable.
		preparing     bool
		wantRebalance bool
	}{
		{"follower, same metadata", "follower", []byte("m"), []byte("m"), false, false},
		{"leader, same metadata", "leader", []byte("m"), []byte("m"), false, false},
		{"follower, new metadata", "follower", []byte("m"), []byte("m2"), false, true},
		{"consumer, same topics, owned partitions lost", "follower",
			consumerMeta([]string{"t"}, Assignment{"t": {0, 1}}), consumerMeta([]string{"t"}, nil), false, false},
		{"consumer, other topics", "follower",
			consumerMeta([]string{"t"}, nil), consumerMeta([]string{"t", "u"}, nil), false, true},
		{"during a rebalance", "follower", []byte("m"), []byte("m"), true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			s, d := newStatic("s"), newClient("d")
			s.protocols[0].Metadata = tt.before
			clients := []*client{s, d}
			if tt.restart == "follower" {
				clients = []*client{d, s}
			}
			gen := h.stabilize(clients...)
			oldID, oldAssignment := s.id, string(s.assignment)
			var dtok Token
			if tt.preparing {
				dtok = h.join(d) // d is the leader: a rebalance starts
				h.wantPending(dtok)
			}

			// The old incarnation has a sync waiting when it dies... the
			// new one joins without a member id.
			restarted := newStatic("s")
			restarted.protocols[0].Metadata = tt.after
			tok := h.join(restarted)
			if restarted.id == oldID || restarted.id == "" && !tt.wantRebalance {
				t.Fatalf("restart kept member id %q", restarted.id)
			}
			if tt.wantRebalance {
				if !tt.preparing {
					h.wantPending(tok)
					h.wantState(PreparingRebalance, gen)
					dtok = h.join(d)
				}
				h.wantJoinCode(tok, codeOK)
				h.wantJoinCode(dtok, codeOK)
				h.wantState(CompletingRebalance, gen+1)
			} else {
				r := h.joinReply(tok)
				isLeader := tt.restart == "leader"
				if r.GetErrorCode() != codeOK || r.GetGenerationId() != gen || r.GetSkipAssignment() != isLeader ||
					(r.GetLeader() == r.GetMemberId()) != isLeader || (len(r.GetMembers()) > 0) != isLeader {
					t.Fatalf("restart's join: %v", r)
				}
				h.wantState(Stable, gen)
				h.wantSyncCode(h.sync(restarted, nil), codeOK)
				if string(restarted.assignment) != oldAssignment {
					t.Fatalf("restart's assignment %q, want the old %q", restarted.assignment, oldAssignment)
				}
			}

			// The old incarnation is fenced everywhere.
			if code := h.heartbeat(s); code != codeFenced {
				t.Errorf("old incarnation's heartbeat: %v", code)
			}
			h.wantSyncCode(h.sync(s, nil), codeFenced)
			h.wantJoinCode(h.join(s), codeFenced)
			if code, _ := h.g.CanCommit(h.now, oldID, s.instance, gen); code != codeFenced {
				t.Errorf("old incarnation's commit: %v", code)
			}
			if got := h.leave(&messages.LeaveGroupRequestMember{MemberId: oldID, GroupInstanceId: s.instance}); got[0] != codeFenced {
				t.Errorf("old incarnation's leave: %v", got)
			}
		})
	}
}

func TestStaticRejoinFencesWaitingRequests(t *testing.T) {
	h := newHarness(t)
	s, d := newStatic("s"), newClient("d")
	h.stabilize(d, s)
	dtok, stok := h.join(d), h.join(s) // the leader's join starts a rebalance
	h.wantJoinCode(stok, codeOK)
	h.wantJoinCode(dtok, codeOK)
	ssync := h.sync(s, nil)
	h.wantPending(ssync)
	restarted := newStatic("s")
	tok := h.join(restarted)
	h.wantSyncCode(ssync, codeFenced)
	// The group was completing a rebalance: it rebalances again.
	h.wantPending(tok)
	h.wantState(PreparingRebalance, h.g.Generation())
}

// TestStaticMemberKeptThroughRebalance: a static member that misses a join
// phase stays a member (the leader assigns to it), and is removed only if it
// does not sync in time.
func TestStaticMemberKeptThroughRebalance(t *testing.T) {
	h := newHarness(t)
	d, s := newClient("d"), newStatic("s")
	gen := h.stabilize(d, s)
	n := newClient("n")
	toks := []Token{h.joinNew(n), h.join(d)}
	for h.reply(toks[0]) == nil {
		h.advance(time.Second)
		h.heartbeat(s) // alive, but does not rejoin
	}
	h.wantState(CompletingRebalance, gen+1)
	if !slices.Contains(h.g.Members(), s.id) || len(d.members) != 3 {
		t.Fatalf("members %v, leader sees %v: the static member should stay", h.g.Members(), d.members)
	}
	h.sync(n, nil)
	h.leaderSync(d)
	h.wantState(Stable, gen+1)
	for range testRebalance / (3 * time.Second) {
		h.advance(3 * time.Second)
		h.heartbeat(d)
		h.heartbeat(n)
		h.heartbeat(s)
	}
	if slices.Contains(h.g.Members(), s.id) {
		t.Fatalf("static member that never synced is still in %v", h.g.Members())
	}
	h.wantState(PreparingRebalance, gen+1)
}

func TestProtocolSelection(t *testing.T) {
	tests := []struct {
		name    string
		members [][]string // each member's protocols, most preferred first; the first member leads
		want    string
	}{
		{"one member", [][]string{{"cooperative-sticky", "range"}}, "cooperative-sticky"},
		{"common preference", [][]string{{"range", "roundrobin"}, {"range", "roundrobin"}}, "range"},
		{"only one common", [][]string{{"cooperative-sticky", "range"}, {"range"}}, "range"},
		{"majority vote", [][]string{{"range", "roundrobin"}, {"roundrobin", "range"}, {"roundrobin", "range"}}, "roundrobin"},
		{"tie goes to the leader", [][]string{{"range", "roundrobin"}, {"roundrobin", "range"}}, "range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			var clients []*client
			for i, names := range tt.members {
				c := newClient(string(rune('a' + i)))
				c.protocols = nil
				for _, n := range names {
					c.protocols = append(c.protocols, &messages.JoinGroupRequestProtocol{Name: n, Metadata: []byte(n)})
				}
				clients = append(clients, c)
			}
			h.stabilize(clients...)
			if got := h.g.ProtocolName(); got != tt.want {
				t.Errorf("protocol %q, want %q", got, tt.want)
			}
			if got := string(clients[0].members[0].GetMetadata()); got != tt.want {
				t.Errorf("leader got metadata %q, want the %q one", got, tt.want)
			}
		})
	}
}

func TestCanCommit(t *testing.T) {
	tests := []struct {
		name string
		// state: "empty", "stable", "preparing", "completing", "dead".
		state      string
		member     func(a, s *client) (id, instance string, gen int32)
		want       messages.ErrorCode
		wantExtend bool // the commit counts as a's heartbeat
	}{
		{"simple consumer, empty group", "empty", func(*client, *client) (string, string, int32) { return "", "", -1 }, codeOK, false},
		{"simple consumer, group with members", "stable", func(*client, *client) (string, string, int32) { return "", "", -1 }, codeIllegalGen, false},
		{"member, stable", "stable", func(a, _ *client) (string, string, int32) { return a.id, "", a.generation }, codeOK, true},
		{"static member, stable", "stable", func(_, s *client) (string, string, int32) { return s.id, s.instance, s.generation }, codeOK, false},
		{"member, old generation", "stable", func(a, _ *client) (string, string, int32) { return a.id, "", a.generation - 1 }, codeIllegalGen, false},
		{"unknown member", "stable", func(a, _ *client) (string, string, int32) { return "ghost", "", a.generation }, codeUnknown, false},
		{"member id with generation -1", "stable", func(a, _ *client) (string, string, int32) { return a.id, "", -1 }, codeIllegalGen, false},
		{"fenced", "stable", func(a, s *client) (string, string, int32) { return a.id, s.instance, a.generation }, codeFenced, false},
		{"member, preparing", "preparing", func(a, _ *client) (string, string, int32) { return a.id, "", a.generation }, codeOK, true},
		{"member, completing", "completing", func(a, _ *client) (string, string, int32) { return a.id, "", a.generation }, codeRebalance, false},
		{"member of an empty group", "empty", func(a, _ *client) (string, string, int32) { return a.id, "", 1 }, codeUnknown, false},
		{"dead", "dead", func(*client, *client) (string, string, int32) { return "", "", -1 }, codeNotAvailable, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			a, s := newClient("a"), newStatic("s")
			if tt.state != "empty" && tt.state != "dead" {
				h.stabilize(a, s)
			}
			switch tt.state {
			case "preparing":
				h.joinNew(newClient("n"))
			case "completing":
				h.joinNew(newClient("n"))
				h.join(a)
				h.join(s)
				h.wantState(CompletingRebalance, h.g.Generation())
			case "dead":
				h.apply(h.g.Unload())
			}
			h.advance(time.Second)
			id, instance, gen := tt.member(a, s)
			code, msg := h.g.CanCommit(h.now, id, instance, gen)
			if code != tt.want {
				t.Fatalf("CanCommit: %v (%s), want %v", code, msg, tt.want)
			}
			if (code == codeOK) != (msg == "") {
				t.Errorf("code %v with message %q", code, msg)
			}
			if tt.wantExtend {
				h.advance(testSession - time.Second/2)
				if !slices.Contains(h.g.Members(), a.id) {
					t.Errorf("the commit did not extend a's session")
				}
			}
		})
	}
}

func TestDescribeListDelete(t *testing.T) {
	h := newHarness(t)
	a, s := newClient("a"), newStatic("s")
	gen := h.stabilize(a, s)

	d := h.g.Describe()
	if d.GetGroupState() != "Stable" || d.GetProtocolData() != "range" || d.GetProtocolType() != ProtocolType ||
		d.GetGenerationId() != gen || d.GetLeader() != a.id || len(d.GetMembers()) != 2 {
		t.Fatalf("describe: %v", d)
	}
	for _, m := range d.GetMembers() {
		c := a
		if m.GetMemberId() == s.id {
			c = s
		}
		if m.GetGroupInstanceId() != c.instance || m.GetClientId() != c.name || m.GetClientHost() != "host-"+c.name ||
			string(m.GetMemberMetadata()) != "m-"+c.name || string(m.GetMemberAssignment()) != "a-"+c.id {
			t.Errorf("described member: %v", m)
		}
	}
	if l := h.g.Listed(); l.GetGroupId() != "g" || l.GetGroupState() != "Stable" || l.GetProtocolType() != ProtocolType {
		t.Errorf("listed: %v", l)
	}
	if code := h.g.Delete(); code != messages.ErrorCode_ERROR_CODE_NON_EMPTY_GROUP {
		t.Fatalf("delete with members: %v", code)
	}

	// While rebalancing, no metadata or assignment is shown.
	h.joinNew(newClient("n"))
	for _, m := range h.g.Describe().GetMembers() {
		if m.GetMemberMetadata() != nil || m.GetMemberAssignment() != nil {
			t.Errorf("described while rebalancing: %v", m)
		}
	}
	if got := h.g.Describe().GetProtocolData(); got != "" {
		t.Errorf("protocol while rebalancing: %q", got)
	}

	h.leave(&messages.LeaveGroupRequestMember{MemberId: a.id}, &messages.LeaveGroupRequestMember{GroupInstanceId: s.instance},
		&messages.LeaveGroupRequestMember{MemberId: h.g.Members()[len(h.g.Members())-1]})
	if got := h.g.Describe().GetGroupState(); got != "Empty" {
		t.Fatalf("after everyone left: %v", got)
	}
	if code := h.g.Delete(); code != codeOK {
		t.Fatalf("delete empty: %v", code)
	}
	if h.g.State() != Dead || h.g.Listed().GetGroupState() != "Dead" {
		t.Fatalf("after delete: %v", h.g.State())
	}
	if code := h.g.Delete(); code != messages.ErrorCode_ERROR_CODE_GROUP_ID_NOT_FOUND {
		t.Errorf("delete again: %v", code)
	}
	h.wantJoinCode(h.join(newClient("late")), codeNotAvailable)
	resp, eff := h.g.Leave(h.now, &messages.LeaveGroupRequest{GroupId: "g", Members: []*messages.LeaveGroupRequestMember{{MemberId: "x"}}})
	h.apply(eff)
	if resp.GetErrorCode() != codeNotAvailable {
		t.Errorf("leave a dead group: %v", resp)
	}
}

func TestUnloadAnswersEveryWaitingRequest(t *testing.T) {
	h := newHarness(t)
	a, b, c := newClient("a"), newClient("b"), newClient("c")
	h.stabilize(a, b, c)
	atok, btok := h.join(a), h.join(b) // c has not rejoined yet
	h.wantJoinCode(h.join(c), codeOK)
	h.wantJoinCode(atok, codeOK)
	h.wantJoinCode(btok, codeOK)
	bsync := h.sync(b, nil)
	n := newClient("n")
	ntok := h.joinNew(n) // a rebalance: b's sync is told to rejoin
	h.wantSyncCode(bsync, codeRebalance)
	atok = h.join(a)

	eff := h.g.Unload()
	h.apply(eff)
	for _, tok := range []Token{atok, ntok} {
		h.wantJoinCode(tok, messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR)
	}
	if !eff.Wake.IsZero() || h.g.State() != Dead {
		t.Fatalf("after unload: %v, wake %v", h.g.State(), eff.Wake)
	}
}

func TestParseState(t *testing.T) {
	for s := Empty; s <= Dead; s++ {
		if got, ok := ParseState(s.String()); !ok || got != s {
			t.Errorf("ParseState(%q) = %v, %v", s, got, ok)
		}
	}
	if got, ok := ParseState("stable"); !ok || got != Stable {
		t.Errorf("ParseState is case-sensitive: %v %v", got, ok)
	}
	if _, ok := ParseState("Rebalancing"); ok {
		t.Errorf("ParseState accepted an unknown name")
	}
	if got := State(9).String(); got != "State(9)" {
		t.Errorf("unknown state %q", got)
	}
}

func TestStaticRestartEdgeCases(t *testing.T) {
	t.Run("full group", func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.MaxSize = 2 })
		s, d := newStatic("s"), newClient("d")
		gen := h.stabilize(d, s)
		h.wantJoinCode(h.join(newClient("x")), messages.ErrorCode_ERROR_CODE_GROUP_MAX_SIZE_REACHED)
		restarted := newStatic("s")
		h.wantJoinCode(h.join(restarted), codeOK)
		h.wantState(Stable, gen)
	})
	t.Run("sole member switches protocol", func(t *testing.T) {
		h := newHarness(t)
		s := newStatic("s")
		gen := h.stabilize(s)
		restarted := newStatic("s")
		restarted.protocols = []*messages.JoinGroupRequestProtocol{{Name: "roundrobin", Metadata: []byte("m")}}
		tok := h.join(restarted)
		h.wantJoinCode(tok, codeOK)
		if r := h.joinReply(tok); r.GetGenerationId() != gen+1 || r.GetProtocolName() != "roundrobin" {
			t.Fatalf("join: %v", r)
		}
	})
}

func TestRebalanceStartedHints(t *testing.T) {
	tests := []struct {
		name string
		// act runs on a Stable group of a, b, c (a leads); it returns
		// the members expected in the hint, by client.
		act func(h *harness, a, b, c *client) []*client
	}{
		{"new member joins", func(h *harness, a, b, c *client) []*client {
			h.joinNew(newClient("d"))
			return []*client{a, b, c}
		}},
		{"follower rejoins with new metadata", func(h *harness, a, b, c *client) []*client {
			b.protocols = []*messages.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte("changed")}}
			h.join(b)
			return []*client{a, c}
		}},
		{"follower rejoins unchanged", func(h *harness, a, b, c *client) []*client {
			h.join(b)
			return nil
		}},
		{"member leaves", func(h *harness, a, b, c *client) []*client {
			h.leave(&messages.LeaveGroupRequestMember{MemberId: b.id})
			return []*client{a, c}
		}},
		{"session expires", func(h *harness, a, b, c *client) []*client {
			h.advance(testSession / 2)
			h.heartbeat(a)
			h.heartbeat(b)
			h.advance(testSession / 2)
			return []*client{a, b}
		}},
		{"heartbeat", func(h *harness, a, b, c *client) []*client {
			h.heartbeat(a)
			return nil
		}},
		{"join while already preparing", func(h *harness, a, b, c *client) []*client {
			h.joinNew(newClient("d"))
			h.joinNew(newClient("e"))
			return nil
		}},
		{"join while completing", func(h *harness, a, b, c *client) []*client {
			d := newClient("d")
			h.joinNew(d)
			h.join(a)
			h.join(b)
			h.join(c)
			h.wantState(CompletingRebalance, h.g.Generation())
			h.joinNew(newClient("e"))
			return []*client{a, b, c, d}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			a, b, c := newClient("a"), newClient("b"), newClient("c")
			h.stabilize(a, b, c)
			var want []string
			for _, x := range tt.act(h, a, b, c) {
				want = append(want, x.id)
			}
			if !slices.Equal(h.hinted, want) {
				t.Fatalf("RebalanceStarted = %v, want %v (state %v)", h.hinted, want, h.g.State())
			}
		})
	}

	t.Run("only member rejoins with new metadata", func(t *testing.T) {
		h := newHarness(t)
		a := newClient("a")
		gen := h.stabilize(a)
		a.protocols = []*messages.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte("changed")}}
		h.wantJoinCode(h.join(a), codeOK)
		h.wantState(CompletingRebalance, gen+1)
		if h.hinted != nil {
			t.Fatalf("RebalanceStarted = %v for a join phase that already ended", h.hinted)
		}
	})
}
