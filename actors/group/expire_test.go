// expire_test.go: offset expiry in the core, with a fake clock (KIP-211) —
// an emptied group's offsets expire exactly OffsetsRetention after it
// became Empty and not before; a group that regains a member keeps them and
// starts over when it empties again; offsets committed from outside group
// management to a group that never had members expire from their own
// commit times; a group with members (or in a rebalance) never expires;
// the group goes Dead once its last offset is gone (and not if it changed
// meanwhile); and the empty-since time survives Snapshot/Restore.

package group

import (
	"slices"
	"testing"
	"time"
)

const retention = 24 * time.Hour

// newExpiryHarness is newHarness with OffsetsRetention = retention.
func newExpiryHarness(t *testing.T) *harness {
	return newHarness(t, func(c *Config) { c.OffsetsRetention = retention })
}

// offsetsAt returns offsets of topic "t" partitions 0.. committed at the
// given times.
func offsetsAt(times ...time.Time) []Offset {
	out := make([]Offset, len(times))
	for i, at := range times {
		out[i] = Offset{Topic: "t", Partition: int32(i), Committed: at}
	}
	return out
}

// wantExpiry checks ExpireOffsets(at, offsets): the partitions expired and
// whether the group goes.
func (h *harness) wantExpiry(at time.Time, offsets []Offset, wantExpired []int32, wantRemove bool) {
	h.t.Helper()
	exp := h.g.ExpireOffsets(at, offsets)
	var got []int32
	for _, o := range exp.Expired {
		got = append(got, o.Partition)
	}
	if !slices.Equal(got, wantExpired) || exp.RemoveGroup != wantRemove {
		h.t.Fatalf("ExpireOffsets at %v (%v group): expired %v, remove %v; want %v, %v",
			at.Sub(h.now), h.g.State(), got, exp.RemoveGroup, wantExpired, wantRemove)
	}
}

// emptied stabilizes the group with c, then has c leave: the group is
// Empty from h.now.
func (h *harness) emptied(c *client) {
	h.t.Helper()
	gen := h.stabilize(c)
	h.leave(leaving(c))
	h.wantState(Empty, gen+1)
	if !h.g.EmptySince().Equal(h.now) {
		h.t.Fatalf("EmptySince = %v, want %v", h.g.EmptySince(), h.now)
	}
}

func TestExpireOffsets(t *testing.T) {
	tests := []struct {
		name string
		run  func(h *harness)
	}{
		{"an emptied group expires after the retention, not before", func(h *harness) {
			committed := h.now
			h.advance(time.Hour)
			h.emptied(newClient("a"))
			offs := offsetsAt(committed, committed)
			h.wantExpiry(h.now.Add(retention-time.Millisecond), offs, nil, false)
			h.wantExpiry(h.now.Add(retention), offs, []int32{0, 1}, true)
			// ExpireOffsets only decides; the group is still Empty.
			h.wantState(Empty, h.g.Generation())
		}},
		{"a group that regains a member keeps its offsets", func(h *harness) {
			h.emptied(newClient("a"))
			offs := offsetsAt(h.now)
			h.advance(retention / 2)
			b := newClient("b")
			h.stabilize(b)
			h.wantExpiry(h.now.Add(10*retention), offs, nil, false)
			// Empty again: the retention starts over.
			h.advance(retention)
			h.leave(leaving(b))
			h.wantExpiry(h.now.Add(retention-time.Millisecond), offs, nil, false)
			h.wantExpiry(h.now.Add(retention), offs, []int32{0}, true)
		}},
		{"standalone commits expire from their commit times", func(h *harness) {
			// A group that never had members: generation -1 commits
			// (a standalone consumer, groups reset-offsets).
			first, second := h.now, h.now.Add(time.Hour)
			offs := offsetsAt(first, second)
			h.wantExpiry(first.Add(retention-time.Millisecond), offs, nil, false)
			h.wantExpiry(first.Add(retention), offs, []int32{0}, false)
			h.wantExpiry(second.Add(retention), offs, []int32{0, 1}, true)
			h.wantExpiry(second.Add(retention), offs[1:], []int32{1}, true)
		}},
		{"a group with members never expires", func(h *harness) {
			a, b := newClient("a"), newClient("b")
			h.stabilize(a)
			offs := offsetsAt(h.now.Add(-10 * retention))
			h.wantExpiry(h.now.Add(10*retention), offs, nil, false)
			// Nor while it rebalances.
			h.joinNew(b)
			if h.g.State() != PreparingRebalance {
				t.Fatalf("state %v, want PreparingRebalance", h.g.State())
			}
			h.wantExpiry(h.now.Add(10*retention), offs, nil, false)
		}},
		{"the group goes once its offsets are gone", func(h *harness) {
			h.emptied(newClient("a"))
			at := h.now.Add(retention)
			h.wantExpiry(at, offsetsAt(h.now, h.now), []int32{0, 1}, true)
			// A commit landed meanwhile: the group stays.
			if h.g.OffsetsExpired(1) {
				t.Fatal("OffsetsExpired(1) removed the group")
			}
			h.wantState(Empty, h.g.Generation())
			if !h.g.OffsetsExpired(0) {
				t.Fatal("OffsetsExpired(0) kept the group")
			}
			if h.g.State() != Dead || h.g.Listed().GetGroupState() != "Dead" {
				t.Fatalf("state %v, listed %v: want Dead", h.g.State(), h.g.Listed())
			}
			h.wantExpiry(at, offsetsAt(h.now), nil, false)
		}},
		{"a group that gained a member meanwhile stays", func(h *harness) {
			h.emptied(newClient("a"))
			h.wantExpiry(h.now.Add(retention), offsetsAt(h.now), []int32{0}, true)
			h.stabilize(newClient("b"))
			if h.g.OffsetsExpired(0) || h.g.State() != Stable {
				t.Fatalf("a Stable group was removed (state %v)", h.g.State())
			}
		}},
		{"an empty group without offsets goes at once", func(h *harness) {
			h.emptied(newClient("a"))
			h.wantExpiry(h.now, nil, nil, true)
		}},
		{"a pending member id keeps the group", func(h *harness) {
			h.emptied(newClient("a"))
			h.join(newClient("b")) // MEMBER_ID_REQUIRED: a pending id
			h.wantExpiry(h.now.Add(retention), offsetsAt(h.now), []int32{0}, false)
			if h.g.OffsetsExpired(0) {
				t.Fatal("OffsetsExpired removed a group with a pending member id")
			}
		}},
		{"the empty-since time survives a restore", func(h *harness) {
			h.emptied(newClient("a"))
			since := h.now
			h.advance(retention / 2) // the failover comes later
			s := h.restore()
			if !s.EmptySince.Equal(since) || !h.g.EmptySince().Equal(since) {
				t.Fatalf("snapshot EmptySince %v, restored %v, want %v", s.EmptySince, h.g.EmptySince(), since)
			}
			offs := offsetsAt(since.Add(-time.Hour))
			h.wantExpiry(since.Add(retention-time.Millisecond), offs, nil, false)
			h.wantExpiry(since.Add(retention), offs, []int32{0}, true)
		}},
		{"without an empty-since time, offsets expire from their commits", func(h *harness) {
			g, err := Restore("g", h.g.cfg, Snapshot{ProtocolType: ProtocolType, Generation: 3}, h.now)
			if err != nil {
				t.Fatal(err)
			}
			h.g = g
			committed := h.now.Add(time.Hour)
			h.wantExpiry(committed.Add(retention-time.Millisecond), offsetsAt(committed), nil, false)
			h.wantExpiry(committed.Add(retention), offsetsAt(committed), []int32{0}, true)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.run(newExpiryHarness(t))
		})
	}
}

func TestOffsetsRetentionConfig(t *testing.T) {
	def := DefaultConfig()
	if def.OffsetsRetention != 7*24*time.Hour || def.OffsetsRetentionCheckInterval != 10*time.Minute {
		t.Fatalf("defaults %v, %v; want Kafka's 7 days and 10 min", def.OffsetsRetention, def.OffsetsRetentionCheckInterval)
	}
	for _, bad := range []func(*Config){
		func(c *Config) { c.OffsetsRetention = 0 },
		func(c *Config) { c.OffsetsRetention = -time.Hour },
		func(c *Config) { c.OffsetsRetentionCheckInterval = 0 },
	} {
		c := DefaultConfig()
		bad(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("Validate accepted OffsetsRetention %v, check interval %v", c.OffsetsRetention, c.OffsetsRetentionCheckInterval)
		}
	}
}
