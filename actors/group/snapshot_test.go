// snapshot_test.go: a group's durable state and its restoration by a new
// coordinator — snapshots of stable and empty groups, what a restored
// group accepts (heartbeats, commits, a static member's return without a
// rebalance) and what it does when its members are gone, and invalid
// snapshots.

package group

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/messages"
)

// restore replaces the harness's group by one restored from its snapshot,
// as a new coordinator would after a failover at the harness's clock.
func (h *harness) restore() Snapshot {
	h.t.Helper()
	if !h.g.Durable() {
		h.t.Fatalf("snapshot of a %v group", h.g.State())
	}
	s := h.g.Snapshot()
	g, err := Restore("g", h.g.cfg, s, h.now)
	if err != nil {
		h.t.Fatalf("Restore: %v", err)
	}
	h.g = g
	return s
}

func TestSnapshotRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		clients func() []*client
		// leave removes the members before the snapshot (the group is
		// then Empty).
		leave bool
	}{
		{"dynamic members", func() []*client { return []*client{newClient("a"), newClient("b")} }, false},
		{"static and dynamic members", func() []*client { return []*client{newStatic("a"), newClient("b"), newStatic("c")} }, false},
		{"empty after the members left", func() []*client { return []*client{newClient("a")} }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			clients := tt.clients()
			gen := h.stabilize(clients...)
			if tt.leave {
				for _, c := range clients {
					h.leave(leaving(c))
				}
				h.advance(0)
				h.wantState(Empty, gen+1)
			}
			before := h.g.Describe()
			s := h.restore()
			after := h.g.Snapshot()
			if !reflect.DeepEqual(s, after) {
				t.Fatalf("snapshot of the restored group\n%+v\nwant\n%+v", after, s)
			}
			if got := h.g.Describe(); !proto.Equal(got, before) {
				t.Fatalf("restored group describes as\n%v\nwant\n%v", got, before)
			}
			if tt.leave {
				if len(s.Members) != 0 || s.Leader != "" || s.ProtocolName != "" {
					t.Fatalf("empty group's snapshot %+v", s)
				}
				return
			}
			if s.Generation != gen || len(s.Members) != len(clients) || s.Leader != h.g.Leader() || s.ProtocolName != "range" {
				t.Fatalf("snapshot %+v, want generation %d with %d members", s, gen, len(clients))
			}
		})
	}
}

// leaving is c's LeaveGroup entry.
func leaving(c *client) *messages.LeaveGroupRequestMember {
	return &messages.LeaveGroupRequestMember{MemberId: c.id, GroupInstanceId: c.instance}
}

func TestRestoredGroupServesItsMembers(t *testing.T) {
	h := newHarness(t)
	a, b, s := newClient("a"), newClient("b"), newStatic("s")
	gen := h.stabilize(a, b, s)
	h.advance(5 * time.Second) // the new coordinator loads later
	h.restore()
	h.wantState(Stable, gen)
	if wake := h.g.NextWake(); !wake.Equal(h.now.Add(testSession)) {
		t.Fatalf("restored members expire at %v, want a session timeout from now (%v)", wake, h.now.Add(testSession))
	}

	// Members carry on with their generation: heartbeats, commits, and
	// their assignment from SyncGroup.
	for _, c := range []*client{a, b, s} {
		if code := h.heartbeat(c); code != codeOK {
			t.Fatalf("%s: heartbeat after restore: %v", c.name, code)
		}
		if code, msg := h.g.CanCommit(h.now, c.id, c.instance, gen); code != codeOK {
			t.Fatalf("%s: commit after restore: %v %s", c.name, code, msg)
		}
		old := string(c.assignment)
		tok := h.sync(c, nil)
		h.wantSyncCode(tok, codeOK)
		if string(c.assignment) != old {
			t.Fatalf("%s: assignment %q after restore, want %q", c.name, c.assignment, old)
		}
	}
	if code, _ := h.g.CanCommit(h.now, a.id, "", gen-1); code != codeIllegalGen {
		t.Fatalf("commit of a stale generation after restore: %v, want ILLEGAL_GENERATION", code)
	}
	if code, _ := h.g.CanCommit(h.now, "", "", -1); code != codeIllegalGen {
		t.Fatalf("commit from outside the group after restore: %v, want ILLEGAL_GENERATION", code)
	}

	// The static member restarts (no member id) with the same
	// subscription: it gets the generation and its old assignment, and
	// nobody rebalances.
	old := string(s.assignment)
	s.id = ""
	tok := h.join(s)
	h.wantJoinCode(tok, codeOK)
	h.wantState(Stable, gen)
	h.wantSyncCode(h.sync(s, nil), codeOK)
	if string(s.assignment) != old {
		t.Fatalf("static member's assignment %q after its restart, want %q", s.assignment, old)
	}

	// A dynamic member that rejoins announces all its protocols, which
	// differ from the restored one: a rebalance, as Kafka.
	h.join(a)
	h.wantState(PreparingRebalance, gen)
}

func TestRestoredGroupWithoutItsMembersEmpties(t *testing.T) {
	h := newHarness(t)
	a, s := newClient("a"), newStatic("s")
	gen := h.stabilize(a, s)
	h.restore()
	// Nobody heartbeats: the session timeouts remove both members (the
	// static one too), the join phase ends with no member, and the group
	// is Empty, a generation later.
	h.advance(testSession)
	for i := 0; i < 5 && h.g.State() != Empty; i++ {
		h.advance(h.g.NextWake().Sub(h.now))
	}
	h.wantState(Empty, gen+1)
	if code, msg := h.g.CanCommit(h.now, "", "", -1); code != codeOK {
		t.Fatalf("commit from outside an emptied group: %v %s", code, msg)
	}
	// A restored Empty group takes a new member into the next generation.
	h.restore()
	h.wantState(Empty, gen+1)
	c := newClient("c")
	if got := h.stabilize(c); got != gen+2 {
		t.Fatalf("generation %d after a join, want %d", got, gen+2)
	}
}

func TestRestoreRefusesInvalidSnapshots(t *testing.T) {
	member := func(id, instance string) MemberSnapshot {
		return MemberSnapshot{ID: id, InstanceID: instance, SessionTimeout: testSession, Metadata: []byte("m"), Assignment: []byte("a")}
	}
	tests := []struct {
		name string
		s    Snapshot
	}{
		{"negative generation", Snapshot{ProtocolType: ProtocolType, Generation: -1}},
		{"members without a protocol", Snapshot{ProtocolType: ProtocolType, Generation: 1, Leader: "a", Members: []MemberSnapshot{member("a", "")}}},
		{"a member without an id", Snapshot{ProtocolType: ProtocolType, ProtocolName: "range", Generation: 1, Leader: "a", Members: []MemberSnapshot{member("a", ""), member("", "")}}},
		{"a member twice", Snapshot{ProtocolType: ProtocolType, ProtocolName: "range", Generation: 1, Leader: "a", Members: []MemberSnapshot{member("a", ""), member("a", "")}}},
		{"an instance id twice", Snapshot{ProtocolType: ProtocolType, ProtocolName: "range", Generation: 1, Leader: "a", Members: []MemberSnapshot{member("a", "i"), member("b", "i")}}},
		{"no session timeout", Snapshot{ProtocolType: ProtocolType, ProtocolName: "range", Generation: 1, Leader: "a", Members: []MemberSnapshot{{ID: "a"}}}},
		{"a leader that is not a member", Snapshot{ProtocolType: ProtocolType, ProtocolName: "range", Generation: 1, Leader: "x", Members: []MemberSnapshot{member("a", "")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Restore("g", DefaultConfig(), tt.s, time.Now()); !errors.Is(err, ErrInvalidSnapshot) {
				t.Fatalf("Restore: %v, want ErrInvalidSnapshot", err)
			}
		})
	}
	if _, err := Restore("", DefaultConfig(), Snapshot{}, time.Now()); !errors.Is(err, ErrEmptyGroupID) {
		t.Fatalf("Restore with an empty id: %v, want ErrEmptyGroupID", err)
	}
}
