package group

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/actorlog/actorlog/messages"
)

// simClient is a well-behaved consumer driven by the group's answers: it
// rejoins when told to, syncs after each join (assigning as leader), and
// heartbeats every 3 s while it has a generation.
type simClient struct {
	*client
	alive     bool
	joinTok   Token
	syncTok   Token
	syncing   bool // has a generation and waits for or holds its assignment
	stable    bool // holds the current assignment
	heartbeat time.Time
}

// sim is a group with a changing population of simClients.
type sim struct {
	t       *testing.T
	h       *harness
	rng     *rand.Rand
	clients []*simClient
	next    int
	lastGen int32
}

// TestRandomizedMembership runs random populations of consumers — joining,
// crashing, leaving, restarting with their static instance id, changing
// subscription — against a group, checking its invariants after every step;
// then lets the survivors settle and checks that the group is Stable with
// exactly them, all in the current generation with their assignments; and
// finally that Unload answers every request still waiting, so every token
// was answered exactly once.
func TestRandomizedMembership(t *testing.T) {
	for seed := range uint64(60) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			delay := []time.Duration{0, 3 * time.Second}[rng.IntN(2)]
			s := &sim{t: t, rng: rng, h: newHarness(t, func(c *Config) { c.InitialRebalanceDelay = delay })}
			for range 300 {
				s.randomEvent()
				s.h.advance(time.Duration(rng.IntN(1500)) * time.Millisecond)
				s.react()
				s.checkInvariants()
			}
			s.settle()
			s.h.apply(s.h.g.Unload())
			for tok := range s.h.sent {
				if s.h.reply(tok) == nil {
					t.Errorf("token %v never answered", tok)
				}
			}
		})
	}
}

// randomEvent changes the population now and then.
func (s *sim) randomEvent() {
	alive := s.alive()
	switch r := s.rng.IntN(100); {
	case r < 8 && len(alive) < 7:
		s.start(s.newClient())
	case r < 11 && len(alive) > 0: // crash
		alive[s.rng.IntN(len(alive))].alive = false
	case r < 14 && len(alive) > 0: // graceful leave
		c := alive[s.rng.IntN(len(alive))]
		c.alive = false
		if c.id != "" {
			resp, eff := s.h.g.Leave(s.h.now, &messages.LeaveGroupRequest{GroupId: "g",
				Members: []*messages.LeaveGroupRequestMember{{MemberId: c.id, GroupInstanceId: c.instance}}})
			s.h.apply(eff)
			if resp.GetErrorCode() != codeOK {
				s.t.Fatalf("leave: %v", resp)
			}
		}
	case r < 17: // a crashed static member restarts
		for _, c := range s.clients {
			if !c.alive && c.instance != "" && !s.instanceAlive(c.instance) {
				restarted := &simClient{client: newStatic(c.name)}
				restarted.protocols = c.protocols
				s.start(restarted)
				break
			}
		}
	case r < 19 && len(alive) > 0: // subscription change
		c := alive[s.rng.IntN(len(alive))]
		c.protocols = []*messages.JoinGroupRequestProtocol{{Name: "range", Metadata: fmt.Appendf(nil, "m-%d", s.rng.IntN(3))}}
		s.rejoin(c)
	}
}

// newClient returns a new dynamic or static client.
func (s *sim) newClient() *simClient {
	s.next++
	name := fmt.Sprintf("c%d", s.next)
	if s.rng.IntN(2) == 0 {
		return &simClient{client: newStatic(name)}
	}
	return &simClient{client: newClient(name)}
}

func (s *sim) start(c *simClient) {
	c.alive = true
	s.clients = append(s.clients, c)
	s.rejoin(c)
}

// instanceAlive reports whether a live client has instance id.
func (s *sim) instanceAlive(instance string) bool {
	return slices.ContainsFunc(s.clients, func(c *simClient) bool { return c.alive && c.instance == instance })
}

func (s *sim) alive() []*simClient {
	var out []*simClient
	for _, c := range s.clients {
		if c.alive {
			out = append(out, c)
		}
	}
	return out
}

// rejoin sends a JoinGroup and drops the client's generation.
func (s *sim) rejoin(c *simClient) {
	c.syncing, c.stable, c.syncTok = false, false, nil
	c.joinTok = s.h.join(c.client)
}

// react lets every live client act on its answers and heartbeat, until
// nothing more happens.
func (s *sim) react() {
	for range 50 {
		acted := false
		for _, c := range s.alive() {
			if s.step(c) {
				acted = true
			}
		}
		if !acted {
			return
		}
	}
	s.t.Fatalf("clients did not quiesce")
}

// step makes c act once; false if it had nothing to do.
func (s *sim) step(c *simClient) bool {
	h := s.h
	if c.joinTok != nil {
		r, ok := h.reply(c.joinTok).(*messages.JoinGroupResponse)
		if !ok {
			return false
		}
		c.joinTok = nil
		switch r.GetErrorCode() {
		case codeOK:
			c.syncing, c.heartbeat = true, h.now.Add(3*time.Second)
			if c.id == c.leader && !r.GetSkipAssignment() {
				c.syncTok = h.leaderSync(c.client)
			} else {
				c.syncTok = h.sync(c.client, nil)
			}
		default:
			s.recover(c, "join", r.GetErrorCode())
		}
		return true
	}
	if c.syncTok != nil {
		r, ok := h.reply(c.syncTok).(*messages.SyncGroupResponse)
		if !ok {
			return s.beat(c)
		}
		c.syncTok = nil
		if r.GetErrorCode() == codeOK {
			c.stable = true
		} else {
			s.recover(c, "sync", r.GetErrorCode())
		}
		return true
	}
	if c.syncing {
		return s.beat(c)
	}
	return false
}

// beat sends c's heartbeat when due and acts on the answer.
func (s *sim) beat(c *simClient) bool {
	if s.h.now.Before(c.heartbeat) {
		return false
	}
	c.heartbeat = s.h.now.Add(3 * time.Second)
	if code := s.h.heartbeat(c.client); code != codeOK {
		s.recover(c, "heartbeat", code)
	}
	return true
}

// recover acts on an error answer as a Kafka consumer does: rejoin (from
// scratch if the member is unknown), or stop if fenced.
func (s *sim) recover(c *simClient, what string, code messages.ErrorCode) {
	switch code {
	case codeRebalance, codeIllegalGen, messages.ErrorCode_ERROR_CODE_MEMBER_ID_REQUIRED:
		s.rejoin(c)
	case codeUnknown:
		c.id = ""
		s.rejoin(c)
	case codeFenced:
		c.alive = false
	default:
		s.t.Fatalf("%s: %s answered %v", c.name, what, code)
	}
}

// checkInvariants checks what must hold between any two calls.
func (s *sim) checkInvariants() {
	g := s.g()
	members := g.Members()
	if (g.State() == Empty) != (len(members) == 0) && g.State() != PreparingRebalance {
		s.t.Fatalf("state %v with members %v", g.State(), members)
	}
	if (g.Leader() == "") != (len(members) == 0) || g.Leader() != "" && !slices.Contains(members, g.Leader()) {
		s.t.Fatalf("leader %q, members %v", g.Leader(), members)
	}
	if g.Generation() < s.lastGen {
		s.t.Fatalf("generation went back from %d to %d", s.lastGen, g.Generation())
	}
	s.lastGen = g.Generation()
	instances := make(map[string]bool)
	for _, m := range g.Describe().GetMembers() {
		if i := m.GetGroupInstanceId(); i != "" {
			if instances[i] {
				s.t.Fatalf("instance id %q twice in %v", i, g.Describe())
			}
			instances[i] = true
		}
	}
	wake := g.NextWake()
	if !wake.IsZero() && wake.Before(s.h.now) {
		s.t.Fatalf("wake %v is in the past (now %v)", wake, s.h.now)
	}
	// Every client holding an assignment of the current generation of a
	// Stable group holds the one the coordinator has for it (a restarted
	// static member the one of its previous member id).
	if g.State() == Stable {
		assigned := make(map[string]string)
		for _, m := range g.Describe().GetMembers() {
			assigned[m.GetMemberId()] = string(m.GetMemberAssignment())
		}
		for _, c := range s.alive() {
			if c.stable && c.generation == g.Generation() && string(c.assignment) != assigned[c.id] {
				s.t.Fatalf("%s holds %q in generation %d, the coordinator has %q", c.id, c.assignment, c.generation, assigned[c.id])
			}
		}
	}
}

func (s *sim) g() *Group { return s.h.g }

// settle lets the live clients run undisturbed, then checks that the group
// is Stable with exactly them.
func (s *sim) settle() {
	for range 240 {
		s.h.advance(time.Second)
		s.react()
		s.checkInvariants()
	}
	g := s.g()
	alive := s.alive()
	var want []string
	for _, c := range alive {
		want = append(want, c.id)
	}
	got := g.Members()
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		s.t.Fatalf("members %v, live clients %v", got, want)
	}
	if len(alive) == 0 {
		if g.State() != Empty {
			s.t.Fatalf("no live clients, state %v", g.State())
		}
		return
	}
	if g.State() != Stable {
		s.t.Fatalf("state %v after settling", g.State())
	}
	assigned := make(map[string]string)
	for _, m := range g.Describe().GetMembers() {
		assigned[m.GetMemberId()] = string(m.GetMemberAssignment())
	}
	for _, c := range alive {
		if !c.stable || c.generation != g.Generation() || len(c.assignment) == 0 || string(c.assignment) != assigned[c.id] {
			s.t.Fatalf("%s: stable %v generation %d (group %d) assignment %q", c.id, c.stable, c.generation, g.Generation(), c.assignment)
		}
	}
}
