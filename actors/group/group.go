// group.go holds the Group state machine's data — members, generation,
// leader, the join-phase and pending-sync timers — with its constructor,
// accessors, the Effects a call returns, and the transitions the request
// handlers share (Kafka's prepareRebalance, onCompleteJoin,
// initNextGeneration, propagateAssignment).

package group

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/messages"
)

// Token identifies a JoinGroup or SyncGroup request that may be answered
// later. The shell chooses it (typically the sender's PID with the request's
// correlation id); the Group only hands it back in a Reply.
type Token any

// Reply is a response for the request the shell passed Token with: a
// *messages.JoinGroupResponse or *messages.SyncGroupResponse, correlation_id
// already set from that request.
type Reply struct {
	Token Token
	Msg   proto.Message
}

// Effects is what a call asks the shell to do.
type Effects struct {
	// Replies to send, in order.
	Replies []Reply
	// Wake is when the shell must call Tick next; zero when nothing is
	// timed. Calling Tick earlier is harmless.
	Wake time.Time
	// RebalanceStarted lists, when the call moved the group from Stable
	// or CompletingRebalance into a join phase that is still open, the
	// members that have not rejoined yet (in join order): the shell may
	// hint to them that they should rejoin now (messages.RebalanceStarted
	// for Generation()). Only a hint: they also learn it from their next
	// heartbeat. Nil otherwise.
	RebalanceStarted []string
}

// waiter is a request waiting for its answer.
type waiter struct {
	token Token
	// correlation is the request's correlation_id, echoed in the reply.
	correlation int64
}

// member is one member of the group (Kafka's MemberMetadata).
type member struct {
	id, instanceID       string
	clientID, clientHost string
	protocolType         string
	sessionTimeout       time.Duration
	rebalanceTimeout     time.Duration
	// protocols in the member's order of preference.
	protocols []*messages.JoinGroupRequestProtocol
	// assignment is the member's share of the current generation, from the
	// leader's SyncGroup; nil before it.
	assignment []byte
	// join and sync are the member's waiting JoinGroup and SyncGroup
	// requests (Kafka's awaitingJoinCallback / awaitingSyncCallback).
	join, sync *waiter
	// isNew: the member has not completed a join phase yet.
	isNew bool
	// expires is when the member is removed unless it heartbeats (or, if
	// new, completes a join) before; zero when not timed (see expire).
	expires time.Time
}

// metadata returns m's metadata for protocol name, nil if it has none.
func (m *member) metadata(name string) []byte {
	for _, p := range m.protocols {
		if p.GetName() == name {
			return p.GetMetadata()
		}
	}
	return nil
}

// supports reports whether m lists protocol name.
func (m *member) supports(name string) bool {
	return slices.ContainsFunc(m.protocols, func(p *messages.JoinGroupRequestProtocol) bool {
		return p.GetName() == name
	})
}

// matches reports whether protocols are exactly m's (names, order and
// metadata bytes), Kafka's MemberMetadata.matches.
func (m *member) matches(protocols []*messages.JoinGroupRequestProtocol) bool {
	return slices.EqualFunc(m.protocols, protocols, func(a, b *messages.JoinGroupRequestProtocol) bool {
		return a.GetName() == b.GetName() && bytes.Equal(a.GetMetadata(), b.GetMetadata())
	})
}

// joinPhase is the timer of the PreparingRebalance state: Kafka's DelayedJoin
// (completes early once every member has rejoined) or, for a group that was
// empty, InitialDelayedJoin (completes only at its deadline).
type joinPhase struct {
	deadline time.Time
	initial  bool
	// remaining is how far an initial join phase may still be extended.
	remaining time.Duration
}

// Group is one consumer group's membership state machine. See the package
// documentation for how a shell drives it.
//
// Invariants: members and order hold the same members; static maps each
// group.instance.id to its member's id; leader is a member's id, empty only
// when there are no members; an Empty group has no members, and a group
// without members is Empty or in a join phase about to end (waiting only for
// unused KIP-394 member ids to expire); every waiter is answered exactly
// once.
type Group struct {
	id    string
	cfg   Config
	state State
	// generation counts completed join phases; 0 before the first.
	generation   int32
	protocolType string
	// protocolName is the generation's protocol, empty when Empty.
	protocolName string
	leader       string
	members      map[string]*member
	// order is the members in the order they joined, for determinism.
	order []*member
	// static maps group.instance.id to member id.
	static map[string]string
	// pending holds KIP-394 member ids given out with MEMBER_ID_REQUIRED
	// whose second join has not come yet, with their expiry.
	pending map[string]time.Time
	join    joinPhase
	// newMemberAdded: a member joined during the initial join phase of a
	// brand-new group, which extends it.
	newMemberAdded bool
	// pendingSync holds the members that have not sent SyncGroup since the
	// join phase ended; syncDeadline is when they are removed.
	pendingSync  map[string]bool
	syncDeadline time.Time
	// emptySince is when the group last became Empty (Kafka's
	// currentStateTimestamp while Empty), from which its offsets expire;
	// zero while not Empty, and for a group that never had members or
	// was restored from metadata without the timestamp (its offsets then
	// expire from their commit timestamps).
	emptySince time.Time
	// out collects the Replies of the current call.
	out []Reply
	// rebalanced: the current call moved the group from Stable or
	// CompletingRebalance into PreparingRebalance.
	rebalanced bool
}

// ErrEmptyGroupID is NewGroup's error for an empty group id (Kafka's
// INVALID_GROUP_ID).
var ErrEmptyGroupID = errors.New("group: empty group id")

// NewGroup returns an Empty group with id (non-empty) and cfg (validated).
func NewGroup(id string, cfg Config) (*Group, error) {
	if id == "" {
		return nil, ErrEmptyGroupID
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("group: new group %q: %w", id, err)
	}
	return &Group{
		id:          id,
		cfg:         cfg,
		members:     make(map[string]*member),
		static:      make(map[string]string),
		pending:     make(map[string]time.Time),
		pendingSync: make(map[string]bool),
	}, nil
}

// ID returns the group id.
func (g *Group) ID() string { return g.id }

// State returns the group's state.
func (g *Group) State() State { return g.state }

// Generation returns the current generation id (0 before the first join
// phase completes).
func (g *Group) Generation() int32 { return g.generation }

// Leader returns the leader's member id, or "" when the group has no
// members.
func (g *Group) Leader() string { return g.leader }

// ProtocolType returns the group's protocol type ("consumer"), set by its
// first member; kept while Empty.
func (g *Group) ProtocolType() string { return g.protocolType }

// ProtocolName returns the current generation's protocol, or "" when the
// group is Empty.
func (g *Group) ProtocolName() string { return g.protocolName }

// Members returns the member ids in the order they joined.
func (g *Group) Members() []string {
	ids := make([]string, len(g.order))
	for i, m := range g.order {
		ids[i] = m.id
	}
	return ids
}

// NextWake returns when Tick must next be called; zero when nothing is
// timed.
func (g *Group) NextWake() time.Time {
	var wake time.Time
	earliest := func(t time.Time) {
		if !t.IsZero() && (wake.IsZero() || t.Before(wake)) {
			wake = t
		}
	}
	if g.state == PreparingRebalance {
		earliest(g.join.deadline)
	}
	if len(g.pendingSync) > 0 {
		earliest(g.syncDeadline)
	}
	for _, m := range g.order {
		earliest(m.expires)
	}
	for _, t := range g.pending {
		earliest(t)
	}
	return wake
}

// begin starts a call that returns Effects.
func (g *Group) begin() { g.out, g.rebalanced = nil, false }

// finish ends a call: it completes a join phase that can complete and
// returns the call's Effects.
func (g *Group) finish(now time.Time) Effects {
	g.maybeCompleteJoin(now)
	eff := Effects{Replies: g.out, Wake: g.NextWake()}
	if g.rebalanced && g.state == PreparingRebalance {
		for _, m := range g.order {
			if m.join == nil {
				eff.RebalanceStarted = append(eff.RebalanceStarted, m.id)
			}
		}
	}
	g.out, g.rebalanced = nil, false
	return eff
}

// reply queues msg for w.
func (g *Group) reply(w *waiter, msg proto.Message) {
	g.out = append(g.out, Reply{Token: w.token, Msg: msg})
}

// joinError answers w with code. memberID is what the response carries: the
// request's id, or the id to use (MEMBER_ID_REQUIRED), or "" (UNKNOWN_MEMBER_ID).
func (g *Group) joinError(w *waiter, memberID string, code messages.ErrorCode, msg string) {
	g.reply(w, &messages.JoinGroupResponse{
		CorrelationId: w.correlation,
		ErrorCode:     code,
		ErrorMessage:  msg,
		GenerationId:  -1,
		MemberId:      memberID,
	})
}

// syncError answers w with code.
func (g *Group) syncError(w *waiter, code messages.ErrorCode, msg string) {
	g.reply(w, &messages.SyncGroupResponse{CorrelationId: w.correlation, ErrorCode: code, ErrorMessage: msg})
}

// answerWaiters answers m's waiting requests with code (join responses carry
// joinMemberID) and forgets them.
func (g *Group) answerWaiters(m *member, joinMemberID string, code messages.ErrorCode, msg string) {
	if m.join != nil {
		g.joinError(m.join, joinMemberID, code, msg)
		m.join = nil
	}
	if m.sync != nil {
		g.syncError(m.sync, code, msg)
		m.sync = nil
	}
}

// heartbeat restarts m's session timer (Kafka's
// completeAndScheduleNextHeartbeatExpiration).
func (g *Group) heartbeat(m *member, now time.Time) { m.expires = now.Add(m.sessionTimeout) }

// rebalanceTimeout is the longest rebalance timeout of the members.
func (g *Group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.order {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// add makes m a member; the first member sets the protocol type and
// becomes leader.
func (g *Group) add(m *member) {
	if len(g.order) == 0 {
		g.protocolType = m.protocolType
	}
	if g.leader == "" {
		g.leader = m.id
	}
	g.members[m.id] = m
	g.order = append(g.order, m)
	if m.instanceID != "" {
		g.static[m.instanceID] = m.id
	}
}

// drop removes m without starting a rebalance (Kafka's GroupMetadata.remove),
// answering its waiting requests with UNKNOWN_MEMBER_ID.
func (g *Group) drop(m *member, why string) {
	g.answerWaiters(m, "", messages.ErrorCode_ERROR_CODE_UNKNOWN_MEMBER_ID, why)
	delete(g.members, m.id)
	g.order = slices.DeleteFunc(g.order, func(x *member) bool { return x == m })
	if m.instanceID != "" && g.static[m.instanceID] == m.id {
		delete(g.static, m.instanceID)
	}
	g.donePendingSync(m.id)
	if g.leader == m.id {
		g.leader = ""
		if len(g.order) > 0 {
			g.leader = g.order[0].id
		}
	}
}

// remove removes m and rebalances the rest (Kafka's
// removeMemberAndUpdateGroup); in PreparingRebalance the join phase may now
// complete.
func (g *Group) remove(m *member, now time.Time, why string) {
	g.drop(m, why)
	switch g.state {
	case Stable, CompletingRebalance:
		g.prepareRebalance(now)
	case PreparingRebalance:
		g.maybeCompleteJoin(now)
	}
}

// donePendingSync notes that id no longer owes a SyncGroup.
func (g *Group) donePendingSync(id string) {
	delete(g.pendingSync, id)
	if len(g.pendingSync) == 0 {
		g.syncDeadline = time.Time{}
	}
}

// canRebalance reports whether a rebalance can start now (Kafka's
// canRebalance: from Empty, Stable or CompletingRebalance).
func (g *Group) canRebalance() bool {
	return g.state == Empty || g.state == Stable || g.state == CompletingRebalance
}

// maybePrepareRebalance starts a rebalance unless one is in progress.
func (g *Group) maybePrepareRebalance(now time.Time) {
	if g.canRebalance() {
		g.prepareRebalance(now)
	}
}

// prepareRebalance enters PreparingRebalance: members waiting for a sync are
// told to rejoin, and the join phase's timer starts (the initial delay for a
// group that was empty).
func (g *Group) prepareRebalance(now time.Time) {
	if g.state == Stable || g.state == CompletingRebalance {
		g.rebalanced = true
	}
	if g.state == CompletingRebalance {
		g.resetAssignments(now, messages.ErrorCode_ERROR_CODE_REBALANCE_IN_PROGRESS)
	}
	clear(g.pendingSync)
	g.syncDeadline = time.Time{}
	if g.state == Empty {
		g.emptySince = time.Time{}
		delay := g.cfg.InitialRebalanceDelay
		g.join = joinPhase{deadline: now.Add(delay), initial: true, remaining: max(g.rebalanceTimeout()-delay, 0)}
		g.newMemberAdded = false
	} else {
		g.join = joinPhase{deadline: now.Add(g.rebalanceTimeout())}
	}
	g.state = PreparingRebalance
}

// allJoined reports whether every member is waiting in the join phase and no
// KIP-394 member id is still to be used (Kafka's hasAllMembersJoined).
func (g *Group) allJoined() bool {
	for _, m := range g.order {
		if m.join == nil {
			return false
		}
	}
	return len(g.pending) == 0
}

// maybeCompleteJoin ends the join phase if it can end at now: an initial
// phase at its deadline (or extended), a normal one when all have joined or
// at its deadline.
func (g *Group) maybeCompleteJoin(now time.Time) {
	for g.state == PreparingRebalance {
		due := !now.Before(g.join.deadline)
		switch {
		case g.join.initial && due && g.newMemberAdded && g.join.remaining > 0:
			// Extend from the deadline, not now: a late Tick does not
			// stretch the phase.
			g.newMemberAdded = false
			delay := min(g.cfg.InitialRebalanceDelay, g.join.remaining)
			g.join = joinPhase{deadline: g.join.deadline.Add(delay), initial: true, remaining: g.join.remaining - delay}
		case g.join.initial && !due, !g.join.initial && !due && !g.allJoined():
			return
		default:
			if !g.completeJoin(now) {
				return
			}
		}
	}
}

// completeJoin ends the join phase (Kafka's onCompleteJoin): dynamic members
// that did not rejoin are removed, a joined leader is chosen, and the next
// generation starts; each member waiting in the join phase gets its
// response. If members remain but none rejoined, the phase is extended by a
// rebalance timeout and completeJoin returns false.
func (g *Group) completeJoin(now time.Time) bool {
	for _, m := range slices.Clone(g.order) {
		if m.join == nil && m.instanceID == "" {
			g.drop(m, "did not rejoin the group within the rebalance timeout")
		}
	}
	if !g.electJoinedLeader() && len(g.order) > 0 {
		g.join = joinPhase{deadline: now.Add(g.rebalanceTimeout())}
		return false
	}
	g.join = joinPhase{}
	g.generation++
	clear(g.pendingSync)
	if len(g.order) == 0 {
		g.protocolName = ""
		g.state = Empty
		g.emptySince = now
		return true
	}
	g.protocolName = g.selectProtocol()
	g.state = CompletingRebalance
	for _, m := range g.order {
		if m.join != nil {
			g.reply(m.join, g.joinResult(m, m.join.correlation, false))
			m.join = nil
		}
		g.heartbeat(m, now)
		m.isNew = false
		g.pendingSync[m.id] = true
	}
	g.syncDeadline = now.Add(g.rebalanceTimeout())
	return true
}

// joinResult is the successful JoinGroupResponse for m in the current
// generation: the leader gets every member's metadata.
func (g *Group) joinResult(m *member, correlation int64, skipAssignment bool) *messages.JoinGroupResponse {
	resp := &messages.JoinGroupResponse{
		CorrelationId:  correlation,
		GenerationId:   g.generation,
		ProtocolType:   g.protocolType,
		ProtocolName:   g.protocolName,
		Leader:         g.leader,
		SkipAssignment: skipAssignment,
		MemberId:       m.id,
	}
	if m.id == g.leader {
		for _, x := range g.order {
			resp.Members = append(resp.Members, &messages.JoinGroupResponseMember{
				MemberId:        x.id,
				GroupInstanceId: x.instanceID,
				Metadata:        x.metadata(g.protocolName),
			})
		}
	}
	return resp
}

// electJoinedLeader keeps the leader if it rejoined, or else makes the first
// member that rejoined leader; false if no member rejoined (Kafka's
// maybeElectNewJoinedLeader).
func (g *Group) electJoinedLeader() bool {
	if g.leader == "" {
		return false
	}
	if g.members[g.leader].join != nil {
		return true
	}
	for _, m := range g.order {
		if m.join != nil {
			g.leader = m.id
			return true
		}
	}
	return false
}

// selectProtocol chooses the generation's protocol: among the protocols every
// member supports, each member votes for the one it prefers most, and the
// most votes win; a tie goes to the leader's preference.
func (g *Group) selectProtocol() string {
	var candidates []string
	for _, p := range g.order[0].protocols {
		if g.allSupport(p.GetName(), nil) && !slices.Contains(candidates, p.GetName()) {
			candidates = append(candidates, p.GetName())
		}
	}
	votes := make(map[string]int)
	for _, m := range g.order {
		for _, p := range m.protocols {
			if slices.Contains(candidates, p.GetName()) {
				votes[p.GetName()]++
				break
			}
		}
	}
	best := ""
	for _, p := range g.members[g.leader].protocols {
		if n := votes[p.GetName()]; n > votes[best] {
			best = p.GetName()
		}
	}
	return best
}

// allSupport reports whether every member other than except supports
// protocol name.
func (g *Group) allSupport(name string, except *member) bool {
	for _, m := range g.order {
		if m != except && !m.supports(name) {
			return false
		}
	}
	return true
}

// setAssignments stores the leader's assignments (members it left out get an
// empty one), answers the members waiting in SyncGroup and makes the group
// Stable (Kafka's setAndPropagateAssignment).
func (g *Group) setAssignments(now time.Time, assignments map[string][]byte) {
	for _, m := range g.order {
		m.assignment = assignments[m.id]
		if m.assignment == nil {
			m.assignment = []byte{}
		}
		if m.sync != nil {
			g.reply(m.sync, &messages.SyncGroupResponse{
				CorrelationId: m.sync.correlation,
				ProtocolType:  g.protocolType,
				ProtocolName:  g.protocolName,
				Assignment:    m.assignment,
			})
			m.sync = nil
			g.heartbeat(m, now)
		}
	}
	g.state = Stable
}

// resetAssignments clears every assignment and answers the members waiting
// in SyncGroup with code (Kafka's resetAndPropagateAssignmentError).
func (g *Group) resetAssignments(now time.Time, code messages.ErrorCode) {
	for _, m := range g.order {
		m.assignment = nil
		if m.sync != nil {
			g.syncError(m.sync, code, "a new rebalance started; rejoin the group")
			m.sync = nil
			g.heartbeat(m, now)
		}
	}
}
