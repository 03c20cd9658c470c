// member_join.go holds the member core's join phase: what is given up
// before a join (Kafka's onJoinPrepare), the JoinGroup and its answer
// (MEMBER_ID_REQUIRED, the leader's assignment over fresh metadata,
// KIP-814's skipped assignment), the SyncGroup and its answer, and applying
// the generation's assignment.

package consumer

import (
	"fmt"
	"slices"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/actors/group"
	"github.com/actorlog/actorlog/messages"
)

// prepareJoin gives up what must go before joining (Kafka's
// onJoinPrepare) and joins: lost partitions when the generation was lost;
// everything under the eager protocol; under the cooperative one, the
// partitions of topics no longer subscribed to.
func (m *member) prepareJoin(now time.Time) {
	if m.generation < 0 && len(m.owned) > 0 {
		m.revoke(now, m.owned, true, afterRevoke{kind: afterStep})
		return
	}
	revoke := m.owned
	if m.cooperative {
		revoke = notSubscribed(m.owned, m.subscription)
	}
	if len(revoke) > 0 {
		m.revoke(now, revoke, false, afterRevoke{kind: afterStep})
		return
	}
	m.sendJoin(now)
}

func (m *member) sendJoin(now time.Time) {
	log := m.logger().WithFields(logrus.Fields{"topics": m.subscription, "owned_count": len(m.owned), "reason": m.rejoinWhy})
	if m.phase != phaseJoining {
		m.joinStarted = now
		log.Info("consumer: joining the group")
	} else {
		log.Debug("consumer: joining the group again with the member id given")
	}
	why := m.rejoinWhy
	m.phase, m.rejoin, m.rejoinWhy = phaseJoining, false, ""
	sub := group.Subscription{Topics: m.subscription, Owned: toAssignment(m.owned), Generation: m.generation}
	m.send(&messages.JoinGroupRequest{
		GroupId: m.cfg.GroupID, MemberId: m.memberID, GroupInstanceId: m.cfg.GroupInstanceID,
		ProtocolType: group.ProtocolType, Protocols: group.Protocols(sub, m.cfg.Assignors...),
		SessionTimeoutMs: int32(m.cfg.SessionTimeout.Milliseconds()), RebalanceTimeoutMs: int32(m.cfg.RebalanceTimeout.Milliseconds()),
		ClientId: m.cfg.ClientID, Reason: why,
	})
}

// send queues msg for the coordinator, in the current epoch.
func (m *member) send(msg proto.Message) {
	m.do(memberSend{Request: groupRequest{Coordinator: *m.coordinator, Msg: msg, epoch: m.epoch}})
}

// answerAs returns a coordinator's answer as T.
func answerAs[T proto.Message](res any, err error) (T, error) {
	var zero T
	if err != nil {
		return zero, err
	}
	r, ok := res.(T)
	if !ok {
		return zero, fmt.Errorf("consumer: unexpected answer %T", res)
	}
	return r, nil
}

// OnJoin takes the answer to the JoinGroup req (res, or the failure err).
func (m *member) OnJoin(now time.Time, req groupRequest, res any, err error) memberEffects {
	m.begin()
	if req.epoch == m.epoch {
		m.onJoin(now, res, err)
	}
	return m.finish()
}

func (m *member) onJoin(now time.Time, res any, err error) {
	resp, err := answerAs[*messages.JoinGroupResponse](res, err)
	if err != nil {
		m.failed(now, "join", reactRediscover, err)
		return
	}
	switch code := resp.ErrorCode; code {
	case messages.ErrorCode_ERROR_CODE_MEMBER_ID_REQUIRED:
		m.memberID = resp.MemberId
		m.sendJoin(now)
	case messages.ErrorCode_ERROR_CODE_UNSPECIFIED:
		m.memberID, m.generation, m.protocol = resp.MemberId, resp.GenerationId, resp.ProtocolName
		m.leader = resp.Leader == resp.MemberId
		m.logger().WithFields(logrus.Fields{"leader": m.leader, "protocol": m.protocol, "members": len(resp.Members)}).Debug("consumer: joined the group")
		if _, ok := assignorNamed(m.cfg.Assignors, resp.ProtocolName); !ok {
			m.fatal(now, fmt.Errorf("the group chose protocol %q, which this consumer does not offer", resp.ProtocolName))
			return
		}
		if m.leader && !resp.SkipAssignment {
			// Assign over fresh partition counts of every member's topics.
			m.phase = phaseAssigning
			m.do(memberAssign{Lookup: assignLookup{Resp: resp, Topics: groupTopics(resp.Members), epoch: m.epoch}})
			return
		}
		m.snapshot = nil
		if m.leader {
			// KIP-814: a static leader that rejoined keeps the
			// assignment, and watches the partition counts of the
			// group's topics it knows (those of its own subscription
			// at least) for a change.
			m.snapshot = map[string]int32{}
			for _, t := range groupTopics(resp.Members) {
				if n, ok := m.counts[t]; ok {
					m.snapshot[t] = n
				}
			}
		}
		m.sendSync(nil)
	default:
		m.failed(now, "join", reactionTo(code), resp.Err())
	}
}

// OnAssignMetadata takes the partition counts the leader's assignment
// lookup found (counts; or the failure err) and assigns.
func (m *member) OnAssignMetadata(now time.Time, lookup assignLookup, counts map[string]int32, err error) memberEffects {
	m.begin()
	if lookup.epoch == m.epoch && m.phase == phaseAssigning && m.generation == lookup.Resp.GenerationId {
		m.assign(now, lookup.Resp, counts, err)
	}
	return m.finish()
}

func (m *member) assign(now time.Time, resp *messages.JoinGroupResponse, counts map[string]int32, err error) {
	if err != nil {
		// Without metadata the leader cannot assign; the coordinator
		// starts over once the rebalance timeout passes: rejoin now.
		m.failed(now, "assign", reactBackoff, fmt.Errorf("metadata for the assignment: %w", err))
		return
	}
	a, _ := assignorNamed(m.cfg.Assignors, resp.ProtocolName)
	assignments, err := group.AssignGroup(a, resp.Members, counts)
	if err != nil {
		m.failed(now, "assign", reactBackoff, err)
		return
	}
	m.snapshot = countsOf(groupTopics(resp.Members), counts)
	for t, n := range counts {
		if _, ok := m.counts[t]; ok {
			m.counts[t] = n
		}
	}
	m.logger().WithFields(logrus.Fields{"assignor": a.Name(), "members": len(resp.Members), "topics": keys(counts)}).Debug("consumer: assigned the group's partitions")
	m.sendSync(assignments)
}

func (m *member) sendSync(assignments []*messages.SyncGroupRequestAssignment) {
	m.phase = phaseSyncing
	m.send(&messages.SyncGroupRequest{
		GroupId: m.cfg.GroupID, GenerationId: m.generation, MemberId: m.memberID,
		GroupInstanceId: m.cfg.GroupInstanceID, ProtocolType: group.ProtocolType, ProtocolName: m.protocol,
		Assignments: assignments,
	})
}

// OnSync takes the answer to the SyncGroup req.
func (m *member) OnSync(now time.Time, req groupRequest, res any, err error) memberEffects {
	m.begin()
	if req.epoch == m.epoch {
		m.onSync(now, res, err)
	}
	return m.finish()
}

func (m *member) onSync(now time.Time, res any, err error) {
	resp, err := answerAs[*messages.SyncGroupResponse](res, err)
	if err != nil {
		m.failed(now, "sync", reactRediscover, err)
		return
	}
	if code := resp.ErrorCode; code != 0 {
		m.failed(now, "sync", reactionTo(code), resp.Err())
		return
	}
	a, err := group.DecodeAssignment(resp.Assignment)
	if err != nil {
		m.failed(now, "sync", reactBackoff, err)
		return
	}
	m.applyAssignment(now, toTPs(a))
}

// applyAssignment takes the generation's assignment: it revokes what the
// member owns and was not given (then, under the cooperative protocol,
// rejoins so those can be assigned), and adds what is new.
func (m *member) applyAssignment(now time.Time, assigned []TopicPartition) {
	m.phase = phaseStable
	added, revoked := diffAssignment(m.owned, assigned)
	then := afterRevoke{kind: afterAssign, added: added, revoked: revoked, generation: m.generation}
	if len(revoked) > 0 {
		m.revoke(now, revoked, false, then)
		return
	}
	m.finishAssignment(now, then)
}

// finishAssignment adds an assignment's new partitions, once the ones it
// took away are revoked.
func (m *member) finishAssignment(now time.Time, a afterRevoke) {
	if m.generation != a.generation || m.phase != phaseStable {
		m.step(now) // lost meanwhile: rejoin
		return
	}
	m.owned = sortTPs(append(slices.Clone(m.owned), a.added...))
	m.logger().WithFields(logrus.Fields{
		"added": tpStrings(a.added), "revoked": tpStrings(a.revoked), "owned": tpStrings(m.owned),
		"rebalance_ms": now.Sub(m.joinStarted).Milliseconds(),
	}).Info("consumer: partitions assigned")
	m.do(memberAssigned{Assigned: Assigned{Partitions: a.added, Owned: slices.Clone(m.owned), MemberID: m.memberID, Generation: m.generation}})
	switch {
	case len(a.revoked) > 0 && m.cooperative:
		// KIP-429: the partitions given up go to their new owners in a
		// follow-up rebalance.
		m.requestRejoin("partitions were revoked")
	case m.cooperative:
		for _, d := range earlyHeartbeats {
			if d < m.cfg.HeartbeatInterval {
				m.timers = append(m.timers, memberTimer{at: now.Add(d), generation: a.generation})
			}
		}
	}
	m.step(now)
}
