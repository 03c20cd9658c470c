// group.go is the group loop of a subscribing consumer: Kafka's
// ConsumerCoordinator over the classic protocol (messages/group.proto), as
// the shell around the pure decisions of member.go.
//
// The loop: FindCoordinator → JoinGroup (MEMBER_ID_REQUIRED: join again at
// once with the member id given) → as leader, assign with the chosen
// assignor (group.AssignGroup) over fresh metadata of every member's
// topics → SyncGroup → apply the assignment: revoke what the member owns
// and no longer has (after its records were handled and, with auto-commit,
// its positions committed), then add the new partitions from the group's
// committed offsets (or Start) → heartbeat every HeartbeatInterval.
//
// Protocols: with cooperative assignors only (the default), KIP-429's
// incremental protocol — the member keeps consuming what it owns through a
// rebalance, announces it in its subscription, gives up only the
// partitions the new assignment lacks, and rejoins at once when it gave
// some up so they can be assigned. Otherwise the eager protocol: every
// partition is revoked before each join.
//
// Answers (per request; reactionTo):
//   - REBALANCE_IN_PROGRESS: rejoin;
//   - ILLEGAL_GENERATION: the generation is stale — the owned partitions
//     are lost (Revoked.Lost, nothing committed), rejoin with the member id;
//   - UNKNOWN_MEMBER_ID: the same, and rejoin without a member id;
//   - NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, REQUEST_TIMED_OUT, no
//     answer in time, or the coordinator's host down: find the coordinator
//     again (the member keeps its generation; a join or sync cut off is
//     sent again);
//   - COORDINATOR_LOAD_IN_PROGRESS: ask again after RetryBackoff;
//   - FENCED_INSTANCE_ID, INCONSISTENT_GROUP_PROTOCOL,
//     INVALID_SESSION_TIMEOUT, INVALID_GROUP_ID, GROUP_MAX_SIZE_REACHED:
//     fatal (ErrGroupFatal to OnError; the partitions are lost and nothing
//     more is consumed).
//
// Rebalance hints: every JoinGroup, SyncGroup and Heartbeat names the
// consumer actor (member_actor), and the coordinator pushes
// RebalanceStarted to it when the group starts a rebalance; a stable
// member hinted for its own group, member id and generation rejoins at
// once instead of at its next heartbeat. Others are stale and ignored. A
// hint is never needed for correctness: a lost one costs a heartbeat
// interval.
//
// Metadata refreshes (every MetadataMaxAge, and after errors) re-evaluate
// a pattern subscription; a changed subscription, or (for the leader) a
// changed partition count of any topic of the group, makes the member
// rejoin.

package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/actors/group"
	"github.com/actorlog/actorlog/messages"
)

// groupPhase is where the member stands in the protocol.
type groupPhase int

const (
	// phaseIdle: no join or sync in flight and no assignment held (before
	// the first join, after losing the generation, after a join or sync
	// was cut off).
	phaseIdle groupPhase = iota
	// phaseJoining: a JoinGroup is in flight.
	phaseJoining
	// phaseAssigning: the leader looks up metadata for its assignment.
	phaseAssigning
	// phaseSyncing: a SyncGroup is in flight.
	phaseSyncing
	// phaseStable: the member holds its generation's assignment and
	// heartbeats.
	phaseStable
	// phaseFatal: the group refused the member for good.
	phaseFatal
)

func (p groupPhase) String() string {
	return [...]string{"idle", "joining", "assigning", "syncing", "stable", "fatal"}[p]
}

// membership is a subscribing consumer's group state, owned by the actor.
type membership struct {
	phase       groupPhase
	coordinator *client.Coordinator // nil until found
	finding     bool
	memberID    string
	// generation is the generation the member belongs to, -1 for none.
	generation int32
	protocol   string
	leader     bool
	// cooperative: KIP-429's incremental protocol (cooperative).
	cooperative bool
	// owned is the partitions the member owns, sorted.
	owned []TopicPartition
	// subscription is the topics subscribed to now (sorted).
	subscription []string
	// snapshot holds, for a leader, the partition counts of the group's
	// topics its last assignment was made with.
	snapshot map[string]int32
	// rejoin: a rebalance is needed (rejoinWhy says why).
	rejoin    bool
	rejoinWhy string
	// epoch is bumped to abandon the exchanges in flight with the
	// coordinator (it moved, or the consumer closes).
	epoch int
	// heartbeating: a heartbeat is in flight.
	heartbeating bool
	revoking     *revocation
	joinStarted  time.Time
}

func newMembership(cfg Config) *membership {
	return &membership{generation: -1, cooperative: cooperative(cfg.Assignors), rejoin: true, rejoinWhy: "first join"}
}

// requestRejoin notes that a rebalance is needed.
func (g *membership) requestRejoin(why string) {
	if !g.rejoin {
		g.rejoin, g.rejoinWhy = true, why
	}
}

// revocation is partitions being given up: once their records handed out
// were handled and (unless lost, with auto-commit) positions committed,
// OnRevoked runs, they are removed, and then runs.
type revocation struct {
	parts      []TopicPartition
	lost       bool
	committing bool
	committed  bool
	then       func(actor.Context)
}

// Internal messages of the group loop.
type (
	coordinatorFound struct {
		co  client.Coordinator
		err error
	}
	groupRetry     struct{}
	heartbeatTick  struct{}
	earlyHeartbeat struct{ generation int32 }
	assignMetadata struct {
		resp   *messages.JoinGroupResponse
		counts map[string]int32
		err    error
		epoch  int
	}
)

// errCoordinatorDown is the failure of a request not sent because the
// coordinator's host is down.
var errCoordinatorDown = errors.New("consumer: the coordinator's host is down")

// groupLog returns the logger with the member's id and generation.
func (c *Consumer) groupLog() *logrus.Entry {
	return c.logger.WithFields(logrus.Fields{"member": c.grp.memberID, "generation": c.grp.generation})
}

// groupStep moves the membership on; it is called whenever something it
// may wait for happened (metadata, a coordinator, a revocation's end, a
// failure's backoff).
func (c *Consumer) groupStep(ctx actor.Context) {
	g := c.grp
	if g == nil || g.phase == phaseFatal || c.closing != nil || g.revoking != nil || !c.haveMeta {
		return
	}
	switch g.phase {
	case phaseJoining, phaseAssigning, phaseSyncing:
		return
	}
	if g.coordinator == nil {
		c.findCoordinator(ctx)
		return
	}
	if g.phase == phaseIdle || g.rejoin {
		c.prepareJoin(ctx)
	}
}

func (c *Consumer) findCoordinator(ctx actor.Context) {
	g := c.grp
	if g.finding {
		return
	}
	g.finding = true
	self, root, cl, id := ctx.Self(), ctx.ActorSystem().Root, c.conn, c.cfg.GroupID
	go func() {
		rctx, cancel := context.WithTimeout(context.Background(), cl.RequestTimeout())
		defer cancel()
		co, err := cl.FindCoordinator(rctx, id)
		root.Send(self, coordinatorFound{co: co, err: err})
	}()
}

func (c *Consumer) onCoordinatorFound(ctx actor.Context, m coordinatorFound) {
	g := c.grp
	g.finding = false
	if m.err != nil {
		c.report(fmt.Errorf("consumer: group %q: find coordinator: %w", c.cfg.GroupID, m.err))
		after(ctx, c.cfg.RetryBackoff, groupRetry{})
		return
	}
	g.coordinator = &m.co
	c.groupLog().WithFields(logrus.Fields{"coordinator": m.co.Address, "partition": m.co.Partition}).Debug("consumer: coordinator found")
	c.groupStep(ctx)
}

// rediscover forgets the coordinator and finds it again after a backoff,
// abandoning the exchanges in flight; a join or sync cut off is sent again.
func (c *Consumer) rediscover(ctx actor.Context) {
	g := c.grp
	if g.coordinator != nil {
		c.conn.ForgetCoordinator(*g.coordinator)
		g.coordinator = nil
	}
	g.epoch++
	g.heartbeating = false
	c.cutOff()
	after(ctx, c.cfg.RetryBackoff, groupRetry{})
}

// cutOff returns a member whose join or sync will not be answered to idle,
// to join again.
func (c *Consumer) cutOff() {
	g := c.grp
	switch g.phase {
	case phaseJoining, phaseAssigning, phaseSyncing:
		g.phase = phaseIdle
		g.requestRejoin("a join or sync was cut off")
	}
}

// groupRequest sends msg to the coordinator and runs then with the answer
// on the actor's goroutine, unless the exchange was abandoned meanwhile.
func (c *Consumer) groupRequest(ctx actor.Context, msg proto.Message, timeout time.Duration, then func(res any, err error)) {
	g := c.grp
	co := *g.coordinator
	if !c.conn.HostUp(co.Address) {
		then(nil, fmt.Errorf("%w: %s", errCoordinatorDown, co.Address))
		return
	}
	epoch := g.epoch
	ctx.ReenterAfter(ctx.RequestFuture(co.PID(), msg, timeout), func(res any, err error) {
		if c.stopped || c.grp.epoch != epoch {
			return
		}
		then(res, err)
	})
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

// groupFailed carries out the reaction r to a failure of what (a join,
// sync, heartbeat or commit).
func (c *Consumer) groupFailed(ctx actor.Context, what string, r reaction, err error) {
	g := c.grp
	log := c.groupLog().WithFields(logrus.Fields{"request": what, "reaction": r.String()}).WithError(err)
	if r != reactRejoin {
		c.report(fmt.Errorf("consumer: group %q: %s: %w", c.cfg.GroupID, what, err))
	}
	switch r {
	case reactRetry, reactBackoff:
		log.Info("consumer: group request failed; retrying")
		c.cutOff()
		after(ctx, c.cfg.RetryBackoff, groupRetry{})
	case reactRediscover:
		log.Info("consumer: finding the group coordinator again")
		c.rediscover(ctx)
	case reactRejoin:
		log.Info("consumer: the group is rebalancing; rejoining")
		c.cutOff()
		g.requestRejoin("the group is rebalancing")
		c.groupStep(ctx)
	case reactResetGeneration, reactResetMember:
		log.Warn("consumer: the member's generation is no longer valid; its partitions are lost, rejoining")
		if r == reactResetMember {
			g.memberID = ""
		}
		g.generation = -1
		g.phase = phaseIdle
		g.requestRejoin("the membership was lost")
		c.groupStep(ctx)
	case reactFatal:
		c.groupFatal(ctx, err)
	}
}

// groupFatal ends the membership: the group refused the member for good.
func (c *Consumer) groupFatal(ctx actor.Context, err error) {
	g := c.grp
	c.groupLog().WithError(err).Error("consumer: the group refused the member; consuming stops")
	g.phase = phaseFatal
	g.epoch++
	c.report(fmt.Errorf("%w: group %q: %w", ErrGroupFatal, c.cfg.GroupID, err))
	if len(g.owned) > 0 && g.revoking == nil {
		c.revoke(ctx, g.owned, true, func(actor.Context) {})
	}
}

// prepareJoin gives up what must go before joining (Kafka's
// onJoinPrepare) and joins: lost partitions when the generation was lost;
// everything under the eager protocol; under the cooperative one, the
// partitions of topics no longer subscribed to.
func (c *Consumer) prepareJoin(ctx actor.Context) {
	g := c.grp
	if g.generation < 0 && len(g.owned) > 0 {
		c.revoke(ctx, g.owned, true, c.groupStep)
		return
	}
	revoke := g.owned
	if g.cooperative {
		revoke = notSubscribed(g.owned, g.subscription)
	}
	if len(revoke) > 0 {
		c.revoke(ctx, revoke, false, c.groupStep)
		return
	}
	c.sendJoin(ctx)
}

func (c *Consumer) sendJoin(ctx actor.Context) {
	g := c.grp
	log := c.groupLog().WithFields(logrus.Fields{"topics": g.subscription, "owned_count": len(g.owned), "reason": g.rejoinWhy})
	if g.phase != phaseJoining {
		g.joinStarted = time.Now()
		log.Info("consumer: joining the group")
	} else {
		log.Debug("consumer: joining the group again with the member id given")
	}
	why := g.rejoinWhy
	g.phase, g.rejoin, g.rejoinWhy = phaseJoining, false, ""
	sub := group.Subscription{Topics: g.subscription, Owned: toAssignment(g.owned), Generation: g.generation}
	req := &messages.JoinGroupRequest{
		CorrelationId: c.nextCorr(), GroupId: c.cfg.GroupID, MemberId: g.memberID, GroupInstanceId: c.cfg.GroupInstanceID,
		ProtocolType: group.ProtocolType, Protocols: group.Protocols(sub, c.cfg.Assignors...),
		SessionTimeoutMs: int32(c.cfg.SessionTimeout.Milliseconds()), RebalanceTimeoutMs: int32(c.cfg.RebalanceTimeout.Milliseconds()),
		ClientId: c.cfg.ClientID, Reason: why, MemberActor: memberActor(ctx),
	}
	c.groupRequest(ctx, req, c.cfg.RebalanceTimeout+c.conn.RequestTimeout(), func(res any, err error) { c.onJoin(ctx, res, err) })
}

func (c *Consumer) nextCorr() int64 {
	c.corr++
	return c.corr
}

func (c *Consumer) onJoin(ctx actor.Context, res any, err error) {
	g := c.grp
	resp, err := answerAs[*messages.JoinGroupResponse](res, err)
	if err != nil {
		c.groupFailed(ctx, "join", reactRediscover, err)
		return
	}
	switch code := resp.ErrorCode; code {
	case messages.ErrorCode_ERROR_CODE_MEMBER_ID_REQUIRED:
		g.memberID = resp.MemberId
		c.sendJoin(ctx)
	case messages.ErrorCode_ERROR_CODE_UNSPECIFIED:
		g.memberID, g.generation, g.protocol = resp.MemberId, resp.GenerationId, resp.ProtocolName
		g.leader = resp.Leader == resp.MemberId
		c.groupLog().WithFields(logrus.Fields{"leader": g.leader, "protocol": g.protocol, "members": len(resp.Members)}).Debug("consumer: joined the group")
		if _, ok := assignorNamed(c.cfg.Assignors, resp.ProtocolName); !ok {
			c.groupFatal(ctx, fmt.Errorf("the group chose protocol %q, which this consumer does not offer", resp.ProtocolName))
			return
		}
		if g.leader && !resp.SkipAssignment {
			c.assign(ctx, resp)
			return
		}
		g.snapshot = nil
		if g.leader {
			// KIP-814: a static leader that rejoined keeps the
			// assignment, and watches the partition counts of the
			// group's topics it knows (those of its own subscription
			// at least) for a change.
			g.snapshot = map[string]int32{}
			for _, t := range groupTopics(resp.Members) {
				if n, ok := c.counts[t]; ok {
					g.snapshot[t] = n
				}
			}
		}
		c.sendSync(ctx, nil)
	default:
		c.groupFailed(ctx, "join", reactionTo(code), resp.Err())
	}
}

// assign looks up the partition counts of every member's topics, then
// assigns (onAssignMetadata).
func (c *Consumer) assign(ctx actor.Context, resp *messages.JoinGroupResponse) {
	g := c.grp
	g.phase = phaseAssigning
	topics := groupTopics(resp.Members)
	self, root, cl, epoch := ctx.Self(), ctx.ActorSystem().Root, c.conn, g.epoch
	go func() {
		rctx, cancel := context.WithTimeout(context.Background(), cl.RequestTimeout())
		defer cancel()
		m := assignMetadata{resp: resp, epoch: epoch, counts: map[string]int32{}}
		if len(topics) > 0 {
			md, err := cl.Metadata(rctx, topics...)
			m.err = err
			if err == nil {
				for _, tm := range md.Topics {
					if tm.ErrorCode == 0 {
						m.counts[tm.Name] = int32(len(tm.Partitions))
					}
				}
			}
		}
		root.Send(self, m)
	}()
}

func (c *Consumer) onAssignMetadata(ctx actor.Context, m assignMetadata) {
	g := c.grp
	if g.epoch != m.epoch || g.phase != phaseAssigning || g.generation != m.resp.GenerationId {
		return
	}
	if m.err != nil {
		// Without metadata the leader cannot assign; the coordinator
		// starts over once the rebalance timeout passes: rejoin now.
		c.groupFailed(ctx, "assign", reactBackoff, fmt.Errorf("metadata for the assignment: %w", m.err))
		return
	}
	a, _ := assignorNamed(c.cfg.Assignors, m.resp.ProtocolName)
	assignments, err := group.AssignGroup(a, m.resp.Members, m.counts)
	if err != nil {
		c.groupFailed(ctx, "assign", reactBackoff, err)
		return
	}
	g.snapshot = countsOf(groupTopics(m.resp.Members), m.counts)
	for t, n := range m.counts {
		if _, ok := c.counts[t]; ok {
			c.counts[t] = n
		}
	}
	c.groupLog().WithFields(logrus.Fields{"assignor": a.Name(), "members": len(m.resp.Members), "topics": keys(m.counts)}).Debug("consumer: assigned the group's partitions")
	c.sendSync(ctx, assignments)
}

func (c *Consumer) sendSync(ctx actor.Context, assignments []*messages.SyncGroupRequestAssignment) {
	g := c.grp
	g.phase = phaseSyncing
	req := &messages.SyncGroupRequest{
		CorrelationId: c.nextCorr(), GroupId: c.cfg.GroupID, GenerationId: g.generation, MemberId: g.memberID,
		GroupInstanceId: c.cfg.GroupInstanceID, ProtocolType: group.ProtocolType, ProtocolName: g.protocol,
		Assignments: assignments, MemberActor: memberActor(ctx),
	}
	c.groupRequest(ctx, req, c.cfg.RebalanceTimeout+c.conn.RequestTimeout(), func(res any, err error) { c.onSync(ctx, res, err) })
}

func (c *Consumer) onSync(ctx actor.Context, res any, err error) {
	resp, err := answerAs[*messages.SyncGroupResponse](res, err)
	if err != nil {
		c.groupFailed(ctx, "sync", reactRediscover, err)
		return
	}
	if code := resp.ErrorCode; code != 0 {
		c.groupFailed(ctx, "sync", reactionTo(code), resp.Err())
		return
	}
	a, err := group.DecodeAssignment(resp.Assignment)
	if err != nil {
		c.groupFailed(ctx, "sync", reactBackoff, err)
		return
	}
	c.applyAssignment(ctx, toTPs(a))
}

// applyAssignment takes the generation's assignment: it revokes what the
// member owns and was not given (then, under the cooperative protocol,
// rejoins so those can be assigned), and adds what is new.
func (c *Consumer) applyAssignment(ctx actor.Context, assigned []TopicPartition) {
	g := c.grp
	g.phase = phaseStable
	added, revoked := diffAssignment(g.owned, assigned)
	gen := g.generation
	finish := func(ctx actor.Context) {
		if g.generation != gen || g.phase != phaseStable {
			c.groupStep(ctx) // lost meanwhile: rejoin
			return
		}
		c.addPartitions(ctx, added)
		g.owned = sortTPs(append(slices.Clone(g.owned), added...))
		c.groupLog().WithFields(logrus.Fields{
			"added": tpStrings(added), "revoked": tpStrings(revoked), "owned": tpStrings(g.owned),
			"rebalance_ms": time.Since(g.joinStarted).Milliseconds(),
		}).Info("consumer: partitions assigned")
		c.notifyAssigned(ctx, added)
		switch {
		case len(revoked) > 0 && g.cooperative:
			// KIP-429: the partitions given up go to their new owners
			// in a follow-up rebalance.
			g.requestRejoin("partitions were revoked")
		case g.cooperative:
			c.scheduleEarlyHeartbeats(ctx, gen)
		}
		c.groupStep(ctx)
	}
	if len(revoked) > 0 {
		c.revoke(ctx, revoked, false, finish)
		return
	}
	finish(ctx)
}

// revoke gives up tps (see revocation), then runs then.
func (c *Consumer) revoke(ctx actor.Context, tps []TopicPartition, lost bool, then func(actor.Context)) {
	g := c.grp
	g.revoking = &revocation{parts: slices.Clone(tps), lost: lost, then: then}
	for _, tp := range tps {
		if p := c.parts[tp]; p != nil {
			p.revoking = true
			p.inFlight = 0 // its answer is dropped
		}
	}
	c.revokeStep(ctx)
}

// revokeStep moves the revocation in progress on: it waits for the
// partitions' records handed to the target, commits, then finishes.
func (c *Consumer) revokeStep(ctx actor.Context) {
	g := c.grp
	r := g.revoking
	if r == nil || r.committing {
		return
	}
	if !r.lost {
		if slices.ContainsFunc(r.parts, func(tp TopicPartition) bool { p := c.parts[tp]; return p != nil && p.busy }) {
			return // onIdle calls again
		}
		if !r.committed && !c.cfg.DisableAutoCommit && g.generation >= 0 && len(c.book.pending(r.parts...)) > 0 {
			r.committing = true
			c.commit(ctx, &commitJob{reason: "revocation", done: func(*CommitResult) {
				r.committing, r.committed = false, true
				c.revokeStep(ctx)
			}})
			return
		}
	}
	g.revoking = nil
	g.owned = minus(g.owned, r.parts)
	c.groupLog().WithFields(logrus.Fields{"revoked": tpStrings(r.parts), "lost": r.lost, "owned": tpStrings(g.owned)}).Info("consumer: partitions revoked")
	c.notifyRevoked(ctx, r.parts, r.lost)
	for _, tp := range r.parts {
		c.removePartition(tp)
	}
	r.then(ctx)
	if c.closing != nil {
		c.closeStep(ctx)
	}
}

func (c *Consumer) notifyAssigned(ctx actor.Context, added []TopicPartition) {
	g := c.grp
	a := Assigned{Partitions: added, Owned: slices.Clone(g.owned), MemberID: g.memberID, Generation: g.generation}
	if c.cfg.OnAssigned != nil {
		c.cfg.OnAssigned(a)
	}
	if c.cfg.Target != nil {
		a.Consumer = ctx.Self()
		ctx.Send(c.cfg.Target, &a)
	}
}

func (c *Consumer) notifyRevoked(ctx actor.Context, tps []TopicPartition, lost bool) {
	g := c.grp
	r := Revoked{Partitions: tps, Owned: slices.Clone(g.owned), Lost: lost, Generation: g.generation}
	if c.cfg.OnRevoked != nil {
		c.cfg.OnRevoked(r)
	}
	if c.cfg.Target != nil {
		r.Consumer = ctx.Self()
		ctx.Send(c.cfg.Target, &r)
	}
}

// onGroupMetadata re-evaluates the subscription and, for the leader, the
// partition counts its assignment was made with.
func (c *Consumer) onGroupMetadata(ctx actor.Context) {
	g := c.grp
	sub := subscription(c.cfg.Topics, c.cfg.TopicRegex, c.counts)
	if !sameTopics(sub, g.subscription) {
		if g.generation >= 0 || g.phase != phaseIdle {
			c.groupLog().WithFields(logrus.Fields{"from": g.subscription, "to": sub}).Info("consumer: the subscription changed; rejoining")
			g.requestRejoin("the subscription changed")
		}
		g.subscription = sub
	}
	if g.leader && g.snapshot != nil && g.phase == phaseStable && countsChanged(g.snapshot, c.counts) {
		c.groupLog().Info("consumer: the partition counts of the group's topics changed; rejoining")
		g.requestRejoin("partition counts changed")
	}
	c.groupStep(ctx)
}

// onHeartbeatTick sends a heartbeat while the member is stable, and arms
// the next tick.
func (c *Consumer) onHeartbeatTick(ctx actor.Context) {
	g := c.grp
	if g == nil || c.stopped || c.closed || g.phase == phaseFatal {
		return
	}
	after(ctx, c.cfg.HeartbeatInterval, heartbeatTick{})
	c.heartbeat(ctx)
}

// earlyHeartbeats are when a member heartbeats, besides its interval,
// after a cooperative rebalance that left it nothing to revoke: members
// that revoked partitions rejoin at once for the follow-up rebalance
// (KIP-429), and the others learn of it only from a heartbeat, so one soon
// after saves up to a heartbeat interval.
var earlyHeartbeats = []time.Duration{100 * time.Millisecond, 400 * time.Millisecond}

// scheduleEarlyHeartbeats arms the early heartbeats of generation gen.
func (c *Consumer) scheduleEarlyHeartbeats(ctx actor.Context, gen int32) {
	for _, d := range earlyHeartbeats {
		if d < c.cfg.HeartbeatInterval {
			after(ctx, d, earlyHeartbeat{generation: gen})
		}
	}
}

// heartbeat sends a heartbeat if the member is stable and none is in
// flight.
func (c *Consumer) heartbeat(ctx actor.Context) {
	g := c.grp
	if c.stopped || c.closed || g.phase != phaseStable || g.generation < 0 || g.coordinator == nil || g.heartbeating {
		return
	}
	g.heartbeating = true
	gen, member := g.generation, g.memberID
	req := &messages.HeartbeatRequest{
		CorrelationId: c.nextCorr(), GroupId: c.cfg.GroupID, GenerationId: gen, MemberId: member, GroupInstanceId: c.cfg.GroupInstanceID,
		MemberActor: memberActor(ctx),
	}
	c.groupRequest(ctx, req, min(c.conn.RequestTimeout(), c.cfg.SessionTimeout), func(res any, err error) {
		g.heartbeating = false
		if g.generation != gen || g.memberID != member || g.phase != phaseStable {
			return // answered for a generation the member left already
		}
		resp, err := answerAs[*messages.HeartbeatResponse](res, err)
		if err != nil {
			c.groupFailed(ctx, "heartbeat", reactRediscover, err)
			return
		}
		if r := reactionTo(resp.ErrorCode); r != reactNone {
			c.groupFailed(ctx, "heartbeat", r, resp.Err())
		}
	})
}

// memberActor names the consumer actor in group requests: the coordinator
// sends it RebalanceStarted hints (the requests' sender is a reply future,
// gone once answered).
func memberActor(ctx actor.Context) *messages.MemberActor {
	self := ctx.Self()
	return &messages.MemberActor{Address: self.Address, Id: self.Id}
}

// onRebalanceStarted rejoins at once when the coordinator hints that the
// member's group started a rebalance of the member's generation; a hint
// for another group, member or generation, or while the member is not
// stable (joining, syncing, closing), is stale and ignored.
func (c *Consumer) onRebalanceStarted(ctx actor.Context, h *messages.RebalanceStarted) {
	g := c.grp
	log := c.logger.WithFields(logrus.Fields{"group": h.GroupId, "hint_member": h.MemberId, "hint_generation": h.GenerationId})
	if g == nil || c.stopped || c.closed || c.closing != nil || h.GroupId != c.cfg.GroupID || h.MemberId != g.memberID ||
		h.GenerationId != g.generation || g.phase != phaseStable || g.rejoin {
		log.Debug("consumer: ignoring a stale rebalance hint")
		return
	}
	c.groupLog().Info("consumer: the coordinator started a rebalance; rejoining")
	g.requestRejoin("the coordinator started a rebalance")
	c.groupStep(ctx)
}

// tpStrings returns tps as strings, for logs.
func tpStrings(tps []TopicPartition) []string {
	out := make([]string, len(tps))
	for i, tp := range tps {
		out[i] = tp.String()
	}
	return out
}
