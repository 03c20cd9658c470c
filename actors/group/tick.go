// tick.go handles time: the end of a join phase (initial delay, rebalance
// timeout), the pending-sync timeout, session expiries and the expiry of
// unused KIP-394 member ids (Kafka's DelayedJoin, InitialDelayedJoin,
// DelayedSync and DelayedHeartbeat operations).

package group

import (
	"slices"
	"time"
)

// Tick carries out every timer that is due at now, oldest first; the shell
// calls it at (or after) Effects.Wake. A member's session expires when it
// has not heartbeated for its session timeout, unless it is waiting in the
// join or sync phase (then the rebalance timeout governs it); a member that
// never completed a join phase expires after Config.NewMemberJoinTimeout.
// Expired members are removed and the rest rebalance; members that have not
// sent SyncGroup within the rebalance timeout after a join phase are removed
// likewise.
func (g *Group) Tick(now time.Time) Effects {
	g.begin()
	for g.step(now) {
	}
	return g.finish(now)
}

// step carries out the oldest timer due at now and reports whether there
// was one.
func (g *Group) step(now time.Time) bool {
	due := func(t time.Time) bool { return !t.IsZero() && !now.Before(t) }
	type timer struct {
		at  time.Time
		run func()
	}
	var next *timer
	consider := func(at time.Time, run func()) {
		if due(at) && (next == nil || at.Before(next.at)) {
			next = &timer{at, run}
		}
	}
	if g.state == PreparingRebalance {
		consider(g.join.deadline, func() {
			// maybeCompleteJoin moves or clears the deadline.
			before := g.join
			g.maybeCompleteJoin(now)
			if g.state == PreparingRebalance && g.join == before {
				g.join.deadline = now.Add(g.rebalanceTimeout())
			}
		})
	}
	if len(g.pendingSync) > 0 && (g.state == CompletingRebalance || g.state == Stable) {
		consider(g.syncDeadline, func() { g.expirePendingSync(now) })
	}
	for _, m := range g.order {
		consider(m.expires, func() { g.expire(m, now) })
	}
	for id, at := range g.pending {
		consider(at, func() { delete(g.pending, id) })
	}
	if next == nil {
		return false
	}
	next.run()
	return true
}

// expire handles the end of m's session timer (Kafka's onExpireHeartbeat).
func (g *Group) expire(m *member, now time.Time) {
	if !m.isNew && (m.join != nil || m.sync != nil) {
		// Waiting in a rebalance counts as alive; the next response
		// restarts the timer.
		m.expires = time.Time{}
		return
	}
	g.remove(m, now, "session timeout expired")
}

// expirePendingSync removes the members that did not send SyncGroup in time
// and starts a new rebalance (Kafka's onExpirePendingSync).
func (g *Group) expirePendingSync(now time.Time) {
	late := slices.DeleteFunc(g.Members(), func(id string) bool { return !g.pendingSync[id] })
	for _, id := range late {
		g.drop(g.members[id], "did not send SyncGroup within the rebalance timeout")
	}
	g.prepareRebalance(now)
}
