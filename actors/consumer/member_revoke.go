// member_revoke.go holds how the member core gives partitions up: a
// revocation (stop the partitions, wait until none has records out, commit
// unless they are lost, report them revoked, go on), and the close (Close,
// GiveUp, Closed).

package consumer

import (
	"slices"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/messages"
)

// revocation is partitions being given up: once their records handed out
// were handled and (unless lost, with auto-commit) their positions
// committed, they are reported revoked and the member goes on with then.
type revocation struct {
	parts      []TopicPartition
	lost       bool
	committing bool
	then       afterRevoke
}

// afterRevoke is what a revocation goes on with.
type afterRevoke struct {
	kind afterKind
	// For afterAssign: the assignment being applied.
	added, revoked []TopicPartition
	generation     int32
}

type afterKind int

const (
	// afterStep: step the membership on (join).
	afterStep afterKind = iota
	// afterAssign: finish applying an assignment.
	afterAssign
	// afterNothing: the membership is over.
	afterNothing
)

// revoke starts giving up tps (see revocation); a lost revocation ends at
// once.
func (m *member) revoke(now time.Time, tps []TopicPartition, lost bool, then afterRevoke) {
	m.revoking = &revocation{parts: slices.Clone(tps), lost: lost, then: then}
	m.do(memberStop{Partitions: slices.Clone(tps)})
	if lost {
		m.endRevocation(now)
	}
}

// OnHandled is told that no partition being revoked has records out any
// more; pending: their positions moved past what is committed.
func (m *member) OnHandled(now time.Time, pending bool) memberEffects {
	m.begin()
	r := m.revoking
	if r != nil && !r.committing {
		if !m.cfg.DisableAutoCommit && m.generation >= 0 && pending {
			r.committing = true
			m.do(memberCommit{Partitions: slices.Clone(r.parts)})
		} else {
			m.endRevocation(now)
		}
	}
	return m.finish()
}

// OnRevocationCommitted is told that the revocation's commit is over
// (its outcome reached OnCommitDone).
func (m *member) OnRevocationCommitted(now time.Time) memberEffects {
	m.begin()
	if r := m.revoking; r != nil && r.committing {
		r.committing = false
		m.endRevocation(now)
	}
	return m.finish()
}

// endRevocation reports the revocation's partitions revoked and goes on.
func (m *member) endRevocation(now time.Time) {
	r := m.revoking
	m.revoking = nil
	m.owned = minus(m.owned, r.parts)
	m.logger().WithFields(logrus.Fields{"revoked": tpStrings(r.parts), "lost": r.lost, "owned": tpStrings(m.owned)}).Info("consumer: partitions revoked")
	m.do(memberRevoked{Revoked: Revoked{Partitions: r.parts, Owned: slices.Clone(m.owned), Lost: r.lost, Generation: m.generation}})
	switch r.then.kind {
	case afterStep:
		m.step(now)
	case afterAssign:
		m.finishAssignment(now, r.then)
	}
}

// Close stops the membership moving on: the consumer is closing. A join
// or sync in flight no longer matters; a revocation in progress goes on,
// and heartbeats go on until Closed.
func (m *member) Close(now time.Time) memberEffects {
	m.begin()
	m.closing = true
	m.epoch++
	return m.finish()
}

// GiveUp gives up every owned partition (the consumer closes or stops):
// they are reported revoked (lost without a generation) with nothing
// committed here. leave is the LeaveGroup to send, nil for a static
// member (KIP-345: it keeps its partitions for the session timeout), a
// member without an id, or a fatal one. stopping: the actor stops without
// Close (the report then names the partitions as still owned, as it
// always did).
func (m *member) GiveUp(now time.Time, stopping bool) (eff memberEffects, leave *messages.LeaveGroupRequest) {
	m.begin()
	if len(m.owned) > 0 {
		r := Revoked{Partitions: m.owned, Lost: m.generation < 0, Generation: m.generation}
		if stopping {
			r.Owned = slices.Clone(m.owned)
		}
		m.owned = nil
		m.do(memberRevoked{Revoked: r})
	}
	if m.cfg.GroupInstanceID == "" && m.memberID != "" && m.phase != phaseFatal {
		leave = &messages.LeaveGroupRequest{GroupId: m.cfg.GroupID, Members: []*messages.LeaveGroupRequestMember{
			{MemberId: m.memberID, GroupInstanceId: m.cfg.GroupInstanceID, Reason: "the consumer is closing"},
		}}
	}
	return m.finish(), leave
}

// Closed ends the membership: nothing more is sent or timed.
func (m *member) Closed(now time.Time) memberEffects {
	m.begin()
	m.closing, m.closed = true, true
	m.epoch++
	m.nextHeartbeat, m.timers = time.Time{}, nil
	return m.finish()
}
