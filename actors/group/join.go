// join.go handles JoinGroup (Kafka's GroupCoordinator.handleJoinGroup,
// JoinGroup v9 with KIP-394 and KIP-345 always on).
//
// A dynamic member's first join (empty member_id) is answered at once with
// MEMBER_ID_REQUIRED and the member id to use; the id is pending until the
// member joins again with it (or its session timeout passes). A join with a
// member id waits in the join phase (PreparingRebalance) and is answered
// when the phase ends, with the new generation, the chosen protocol and the
// leader; the leader's response lists every member's metadata. A member
// that rejoins a Stable or CompletingRebalance group with unchanged
// protocols (and is not the leader of a Stable group) gets the current
// generation at once, without a rebalance.
//
// A static member (group_instance_id set) joins without MEMBER_ID_REQUIRED.
// If its instance id is known, the new member id replaces the old one: the
// old id's waiting requests are answered FENCED_INSTANCE_ID and later ones
// fail the same way. If the group is Stable, the chosen protocol would not
// change and the member's subscription is the same, the member gets the
// current generation at once and then its old assignment from SyncGroup,
// with no rebalance (a static leader is told skip_assignment).
//
// Error codes: MEMBER_ID_REQUIRED, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
// INCONSISTENT_GROUP_PROTOCOL, INVALID_SESSION_TIMEOUT, INVALID_GROUP_ID,
// GROUP_MAX_SIZE_REACHED, COORDINATOR_NOT_AVAILABLE (Dead),
// REBALANCE_IN_PROGRESS (a newer join from the member replaced this one),
// NOT_COORDINATOR (Unload).

package group

import (
	"fmt"
	"slices"
	"time"

	"github.com/actorlog/actorlog/messages"
)

// Join handles req, which the shell identifies by token; clientHost is the
// sender's address (DescribeGroups shows it). The response to req is among
// the returned or a later call's Replies, under token.
//
// The shell answers requests for a group it does not have itself: a join
// with an empty member id creates the group (NewGroup) first; one with a
// member id gets UNKNOWN_MEMBER_ID.
func (g *Group) Join(now time.Time, token Token, clientHost string, req *messages.JoinGroupRequest) Effects {
	g.begin()
	g.onJoin(now, &waiter{token: token, correlation: req.GetCorrelationId()}, clientHost, req)
	return g.finish(now)
}

// millis converts a request's milliseconds.
func millis(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }

func (g *Group) onJoin(now time.Time, w *waiter, clientHost string, req *messages.JoinGroupRequest) {
	id := req.GetMemberId()
	session := millis(req.GetSessionTimeoutMs())
	// self is the member joining again: by member id, or a static member
	// restarting without one.
	self := g.members[id]
	if id == "" && req.GetGroupInstanceId() != "" {
		self = g.members[g.static[req.GetGroupInstanceId()]]
	}
	switch {
	case req.GetGroupId() != g.id:
		g.joinError(w, id, messages.ErrorCode_ERROR_CODE_INVALID_GROUP_ID,
			fmt.Sprintf("group %q asked of group %q", req.GetGroupId(), g.id))
		return
	case session < g.cfg.MinSessionTimeout || session > g.cfg.MaxSessionTimeout:
		g.joinError(w, id, messages.ErrorCode_ERROR_CODE_INVALID_SESSION_TIMEOUT,
			fmt.Sprintf("session timeout %v is outside [%v, %v]", session, g.cfg.MinSessionTimeout, g.cfg.MaxSessionTimeout))
		return
	case g.state == Dead:
		g.joinError(w, id, messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE,
			"the group is being deleted or moved; find its coordinator again")
		return
	case !g.acceptJoining(self):
		if self != nil {
			g.drop(self, "the group is full")
		}
		delete(g.pending, id)
		g.joinError(w, "", messages.ErrorCode_ERROR_CODE_GROUP_MAX_SIZE_REACHED,
			fmt.Sprintf("the group has reached its maximum size of %d members", g.cfg.MaxSize))
		return
	case !g.supportsProtocols(req, self):
		g.joinError(w, id, messages.ErrorCode_ERROR_CODE_INCONSISTENT_GROUP_PROTOCOL,
			fmt.Sprintf("protocol type %q or protocols %v are not supported by every member (group protocol type %q)",
				req.GetProtocolType(), protocolNames(req.GetProtocols()), g.protocolType))
		return
	case id == "":
		g.joinNew(now, w, clientHost, req)
	default:
		g.joinKnown(now, w, clientHost, req)
	}
}

// protocolNames lists the names of protocols, for messages.
func protocolNames(protocols []*messages.JoinGroupRequestProtocol) []string {
	names := make([]string, len(protocols))
	for i, p := range protocols {
		names[i] = p.GetName()
	}
	return names
}

// acceptJoining reports whether the group has room for member m, nil for a
// new one (Kafka's acceptJoiningMember): while preparing a rebalance,
// members already waiting and up to MaxSize waiting ones; otherwise known
// members (a restarting static member too) and up to MaxSize members.
func (g *Group) acceptJoining(m *member) bool {
	if g.cfg.MaxSize == 0 {
		return true
	}
	switch g.state {
	case PreparingRebalance:
		waiting := 0
		for _, x := range g.order {
			if x.join != nil {
				waiting++
			}
		}
		return (m != nil && m.join != nil) || waiting < g.cfg.MaxSize
	case CompletingRebalance, Stable:
		return m != nil || len(g.order) < g.cfg.MaxSize
	}
	return true
}

// supportsProtocols reports whether req's protocol type and protocols fit the
// group: for the only (or first) member, a non-empty type and protocol list;
// otherwise the group's type and a protocol every other member supports.
// self is the member joining again, nil for a new one.
func (g *Group) supportsProtocols(req *messages.JoinGroupRequest, self *member) bool {
	others := len(g.order)
	if self != nil {
		others--
	}
	if others == 0 {
		return req.GetProtocolType() != "" && len(req.GetProtocols()) > 0
	}
	if req.GetProtocolType() != g.protocolType {
		return false
	}
	return slices.ContainsFunc(req.GetProtocols(), func(p *messages.JoinGroupRequestProtocol) bool {
		return g.allSupport(p.GetName(), self)
	})
}

// joinNew handles a join without a member id.
func (g *Group) joinNew(now time.Time, w *waiter, clientHost string, req *messages.JoinGroupRequest) {
	id := g.cfg.NewMemberID(req.GetClientId())
	if req.GetGroupInstanceId() != "" {
		g.joinStatic(now, w, id, clientHost, req)
		return
	}
	g.pending[id] = now.Add(millis(req.GetSessionTimeoutMs()))
	g.joinError(w, id, messages.ErrorCode_ERROR_CODE_MEMBER_ID_REQUIRED, "join again with the member id given")
}

// joinKnown handles a join with a member id.
func (g *Group) joinKnown(now time.Time, w *waiter, clientHost string, req *messages.JoinGroupRequest) {
	id := req.GetMemberId()
	if _, ok := g.pending[id]; ok {
		if req.GetGroupInstanceId() != "" {
			g.joinError(w, "", messages.ErrorCode_ERROR_CODE_UNKNOWN_MEMBER_ID,
				"a member id given to a dynamic member cannot join as a static member")
			return
		}
		delete(g.pending, id)
		g.addAndRebalance(now, w, id, clientHost, req)
		return
	}
	if r := g.validateMember(id, req.GetGroupInstanceId()); r != nil {
		g.joinError(w, knownID(r.code, id), r.code, r.msg)
		return
	}
	m := g.members[id]
	switch g.state {
	case PreparingRebalance:
		g.updateAndRebalance(now, m, w, req)
	case CompletingRebalance:
		if m.matches(req.GetProtocols()) {
			// The member lost its join response: resend it.
			g.reply(w, g.joinResult(m, w.correlation, false))
			return
		}
		g.updateAndRebalance(now, m, w, req)
	case Stable:
		if m.id == g.leader || !m.matches(req.GetProtocols()) {
			// A leader's join means it wants a new assignment (e.g. the
			// topics' metadata changed).
			g.updateAndRebalance(now, m, w, req)
			return
		}
		g.reply(w, g.joinResult(m, w.correlation, false))
	default:
		g.joinError(w, "", messages.ErrorCode_ERROR_CODE_UNKNOWN_MEMBER_ID, "the group has no members")
	}
}

// knownID is the member id a join error carries: none for
// UNKNOWN_MEMBER_ID (the member must start over), the request's otherwise.
func knownID(code messages.ErrorCode, id string) string {
	if code == messages.ErrorCode_ERROR_CODE_UNKNOWN_MEMBER_ID {
		return ""
	}
	return id
}

// refusal is a request's failure: the code and message its response
// carries.
type refusal struct {
	code messages.ErrorCode
	msg  string
}

// refuse builds a refusal.
func refuse(code messages.ErrorCode, format string, args ...any) *refusal {
	return &refusal{code: code, msg: fmt.Sprintf(format, args...)}
}

// validateMember checks that id is a member and, for a static member, that
// instanceID still belongs to id (Kafka's validateCurrentMember); nil when
// it is.
func (g *Group) validateMember(id, instanceID string) *refusal {
	if instanceID != "" {
		current, ok := g.static[instanceID]
		switch {
		case !ok:
			return refuse(messages.ErrorCode_ERROR_CODE_UNKNOWN_MEMBER_ID, "no member has group instance id %q", instanceID)
		case current != id:
			return refuse(messages.ErrorCode_ERROR_CODE_FENCED_INSTANCE_ID,
				"group instance id %q now belongs to member %s", instanceID, current)
		}
		return nil
	}
	if g.members[id] == nil {
		return refuse(messages.ErrorCode_ERROR_CODE_UNKNOWN_MEMBER_ID, "member %q is not in the group", id)
	}
	return nil
}

// newMember builds the member req describes.
func newMember(id, clientHost string, req *messages.JoinGroupRequest) *member {
	m := &member{id: id, instanceID: req.GetGroupInstanceId(), protocolType: req.GetProtocolType()}
	m.update(clientHost, req)
	return m
}

// update takes the client, timeouts and protocols of req.
func (m *member) update(clientHost string, req *messages.JoinGroupRequest) {
	m.clientID, m.clientHost = req.GetClientId(), clientHost
	m.sessionTimeout = millis(req.GetSessionTimeoutMs())
	m.rebalanceTimeout = millis(req.GetRebalanceTimeoutMs())
	if m.rebalanceTimeout <= 0 {
		m.rebalanceTimeout = m.sessionTimeout
	}
	m.protocols = cloneProtocols(req.GetProtocols())
}

// cloneProtocols deep-copies protocols, so the group does not share the
// request's messages.
func cloneProtocols(protocols []*messages.JoinGroupRequestProtocol) []*messages.JoinGroupRequestProtocol {
	out := make([]*messages.JoinGroupRequestProtocol, len(protocols))
	for i, p := range protocols {
		out[i] = &messages.JoinGroupRequestProtocol{Name: p.GetName(), Metadata: slices.Clone(p.GetMetadata())}
	}
	return out
}

// addAndRebalance makes a new member that waits in the join phase, starting
// a rebalance if none is in progress (Kafka's addMemberAndRebalance).
func (g *Group) addAndRebalance(now time.Time, w *waiter, id, clientHost string, req *messages.JoinGroupRequest) {
	m := newMember(id, clientHost, req)
	m.isNew = true
	m.join = w
	if g.state == PreparingRebalance && g.generation == 0 {
		g.newMemberAdded = true
	}
	g.add(m)
	m.expires = now.Add(g.cfg.NewMemberJoinTimeout)
	g.maybePrepareRebalance(now)
}

// updateAndRebalance makes member m wait in the join phase with req's
// protocols, starting a rebalance if none is in progress (Kafka's
// updateMemberAndRebalance).
func (g *Group) updateAndRebalance(now time.Time, m *member, w *waiter, req *messages.JoinGroupRequest) {
	if m.join != nil {
		g.joinError(m.join, m.id, messages.ErrorCode_ERROR_CODE_REBALANCE_IN_PROGRESS,
			"replaced by a newer JoinGroup from the same member")
	}
	m.update(m.clientHost, req)
	m.join = w
	g.maybePrepareRebalance(now)
}

// joinStatic handles a static member's join without a member id: a new
// instance id joins like a new member; a known one replaces its old member
// id with id (Kafka's doStaticMemberJoinGroup and
// updateStaticMemberAndRebalance).
func (g *Group) joinStatic(now time.Time, w *waiter, id, clientHost string, req *messages.JoinGroupRequest) {
	instanceID := req.GetGroupInstanceId()
	oldID, ok := g.static[instanceID]
	if !ok {
		g.addAndRebalance(now, w, id, clientHost, req)
		return
	}
	m := g.members[oldID]
	oldMetadata := m.metadata(g.protocolName)

	// Fence the old incarnation and move the member to the new id.
	g.answerWaiters(m, oldID, messages.ErrorCode_ERROR_CODE_FENCED_INSTANCE_ID,
		fmt.Sprintf("group instance id %q joined again as member %s", instanceID, id))
	delete(g.members, oldID)
	m.id = id
	g.members[id] = m
	g.static[instanceID] = id
	if g.leader == oldID {
		g.leader = id
	}
	if g.pendingSync[oldID] {
		delete(g.pendingSync, oldID)
		g.pendingSync[id] = true
	}
	m.update(clientHost, req)
	g.heartbeat(m, now)
	m.join = w

	switch g.state {
	case Stable:
		if g.selectProtocol() == g.protocolName &&
			sameSubscription(g.protocolType, oldMetadata, m.metadata(g.protocolName)) {
			m.join = nil
			g.reply(w, g.joinResult(m, w.correlation, m.id == g.leader))
			return
		}
		g.prepareRebalance(now)
	case CompletingRebalance:
		g.prepareRebalance(now)
	}
	// PreparingRebalance: the member waits for the join phase to end.
}
