// expire.go handles offset expiry (Kafka's GroupMetadata.removeExpiredOffsets
// and the Dead transition of GroupMetadataManager.cleanupGroupMetadata, with
// KIP-211's semantics): the committed offsets of a group expire once the
// group has been Empty for Config.OffsetsRetention, measured from when it
// became Empty; a group that never had members (offsets committed from
// outside group management, generation -1, e.g. `groups reset-offsets` or
// a standalone consumer), or whose empty-since time is unknown, has each
// offset expire OffsetsRetention after its own commit. Offsets of a group
// with members, or in a rebalance, never expire. (Kafka also expires, in a
// Stable consumer group, the offsets of topics no member subscribes to; the
// core does not track subscribed topics, so it does not.) An Empty group
// left without offsets is removed: Kafka moves it to Dead.
//
// The core holds no offsets: the shell passes the group's committed offsets
// in, writes the tombstones of those ExpireOffsets names (and, when it says
// so, the group metadata tombstone), and once they are durable calls
// OffsetsExpired.

package group

import "time"

// Offset is one committed offset of a group, as ExpireOffsets weighs it.
type Offset struct {
	Topic     string
	Partition int32
	// Committed is the offset's commit timestamp.
	Committed time.Time
}

// Expiry is what ExpireOffsets decided.
type Expiry struct {
	// Expired lists the offsets to delete (tombstones), in the order
	// given.
	Expired []Offset
	// RemoveGroup: the group is Empty, waits for nothing and none of its
	// offsets is left once Expired are deleted, so it goes too (the shell
	// writes its group metadata tombstone with the offsets' tombstones,
	// then calls OffsetsExpired).
	RemoveGroup bool
}

// ExpireOffsets returns, of offsets (the group's committed offsets, as
// the shell holds them), those that have expired at now, and whether the
// group then goes. It changes nothing: the shell writes the tombstones and
// reports back with OffsetsExpired once they are durable. A Dead group
// expires nothing.
func (g *Group) ExpireOffsets(now time.Time, offsets []Offset) Expiry {
	if g.state != Empty {
		return Expiry{}
	}
	var exp Expiry
	for _, o := range offsets {
		base := g.emptySince
		if g.protocolType == "" || base.IsZero() {
			base = o.Committed
		}
		if now.Sub(base) >= g.cfg.OffsetsRetention {
			exp.Expired = append(exp.Expired, o)
		}
	}
	exp.RemoveGroup = len(exp.Expired) == len(offsets) && g.removable()
	return exp
}

// removable reports whether the group is Empty and waits for nothing (no
// KIP-394 member id is still to be used), so it may go once it has no
// offsets.
func (g *Group) removable() bool { return g.state == Empty && len(g.pending) == 0 }

// OffsetsExpired tells the group that the tombstones of an ExpireOffsets
// are durable, remaining being how many committed offsets it still has
// (commits may have landed meanwhile). If the group is still Empty, waits
// for nothing and has no offsets left, it becomes Dead and OffsetsExpired
// reports true: the shell forgets it (it no longer shows in ListGroups). A
// group that gained a member or an offset meanwhile stays.
func (g *Group) OffsetsExpired(remaining int) bool {
	if remaining > 0 || !g.removable() {
		return false
	}
	g.state = Dead
	return true
}

// EmptySince returns when the group became Empty (zero when it is not
// Empty, never had members, or that time is unknown).
func (g *Group) EmptySince() time.Time {
	if g.state != Empty {
		return time.Time{}
	}
	return g.emptySince
}
