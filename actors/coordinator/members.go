// members.go: the group membership handlers — JoinGroup (v9), SyncGroup
// (v5), Heartbeat (v4), LeaveGroup (v5) — and the shell that carries out
// what the membership core (actors/group) returns: replies, the one timer
// that drives Tick, and the group metadata writes.
//
// Each request is checked first for a valid group id hosted here
// (INVALID_GROUP_ID, NOT_COORDINATOR), then handed to the group's
// group.Group. A join without a member id creates the group; a join with
// one, a sync or a heartbeat for a group this coordinator does not have
// gets UNKNOWN_MEMBER_ID (the member rejoins from scratch), a leave gets
// UNKNOWN_MEMBER_ID for each member. Join and sync responses may come
// later: they are sent to the request's sender when the core answers its
// token. While loading every request gets COORDINATOR_LOAD_IN_PROGRESS;
// once fenced, NOT_COORDINATOR, and the groups are unloaded: requests that
// were waiting get NOT_COORDINATOR too.
//
// Group metadata (Kafka's GroupMetadataValue v3, records.go) is written to
// the partition with acks=all whenever a group reaches a durable state
// that differs from the last one written: a rebalance completed by the
// leader's SyncGroup (or a static member's new member id), the group
// emptying. The replies of the call that led there (the members' sync
// responses with their assignments) wait for the write, so an assignment a
// member has is one a new coordinator will restore. If the write fails,
// the waiting sync responses carry the failure instead (NOT_COORDINATOR,
// COORDINATOR_NOT_AVAILABLE, REBALANCE_IN_PROGRESS after a timeout), the
// members rejoin, and the next durable state is written again.

package coordinator

import (
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/group"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage/record"
)

// replyTo is the token the coordinator gives the core for a join or sync:
// who to send the answer to.
type replyTo struct{ pid *actor.PID }

// groupTick is posted by the group timer.
type groupTick struct{}

// token returns the current request's token.
func token(ctx actor.Context) group.Token { return replyTo{pid: ctx.Sender()} }

// clientHost is what DescribeGroups shows as a member's host: the address
// of the endpoint it sent from.
func clientHost(ctx actor.Context) string {
	if s := ctx.Sender(); s != nil {
		return s.Address
	}
	return ""
}

// hosted returns group id's entry for req (nil when this coordinator does
// not have the group); false when id is not valid or not hosted here, req
// then answered.
func (c *Coordinator) hosted(ctx actor.Context, req any, id string) (*groupEntry, bool) {
	if code, msg := c.owns(id); code != 0 {
		c.respond(ctx, groupRequestError(req, code, msg))
		return nil, false
	}
	return c.groups.get(id), true
}

// unknownGroup answers a member's request for a group this coordinator
// does not have: UNKNOWN_MEMBER_ID (for a leave, per member), so the
// member joins again from scratch.
func (c *Coordinator) unknownGroup(ctx actor.Context, req any, id string) {
	code := messages.ErrorCode_ERROR_CODE_UNKNOWN_MEMBER_ID
	if l, ok := req.(*messages.LeaveGroupRequest); ok {
		resp := &messages.LeaveGroupResponse{CorrelationId: l.CorrelationId}
		for _, m := range l.Members {
			resp.Members = append(resp.Members, &messages.LeaveGroupResponseMember{MemberId: m.MemberId, GroupInstanceId: m.GroupInstanceId, ErrorCode: code})
		}
		c.respond(ctx, resp)
		return
	}
	c.respond(ctx, groupRequestError(req, code, fmt.Sprintf("group %q has no members here; join it again without a member id", id)))
}

func (c *Coordinator) onJoin(ctx actor.Context, req *messages.JoinGroupRequest) {
	e, ok := c.hosted(ctx, req, req.GroupId)
	switch {
	case !ok:
		return
	case e == nil && req.MemberId != "":
		c.unknownGroup(ctx, req, req.GroupId)
		return
	case e == nil:
		var err error
		if e, err = c.groups.create(req.GroupId); err != nil {
			c.respond(ctx, groupRequestError(req, messages.ErrorCode_ERROR_CODE_INVALID_GROUP_ID, err.Error()))
			return
		}
	}
	e.noteActor(req.MemberId, req.MemberActor)
	c.carryOut(ctx, e, e.g.Join(c.cfg.Now(), token(ctx), clientHost(ctx), req))
}

func (c *Coordinator) onSync(ctx actor.Context, req *messages.SyncGroupRequest) {
	if e, ok := c.hosted(ctx, req, req.GroupId); ok && e == nil {
		c.unknownGroup(ctx, req, req.GroupId)
	} else if ok {
		e.noteActor(req.MemberId, req.MemberActor)
		c.carryOut(ctx, e, e.g.Sync(c.cfg.Now(), token(ctx), req))
	}
}

func (c *Coordinator) onHeartbeat(ctx actor.Context, req *messages.HeartbeatRequest) {
	if e, ok := c.hosted(ctx, req, req.GroupId); ok && e == nil {
		c.unknownGroup(ctx, req, req.GroupId)
	} else if ok {
		e.noteActor(req.MemberId, req.MemberActor)
		resp, eff := e.g.Heartbeat(c.cfg.Now(), req)
		c.respond(ctx, resp)
		c.carryOut(ctx, e, eff)
	}
}

func (c *Coordinator) onLeave(ctx actor.Context, req *messages.LeaveGroupRequest) {
	if e, ok := c.hosted(ctx, req, req.GroupId); ok && e == nil {
		c.unknownGroup(ctx, req, req.GroupId)
	} else if ok {
		resp, eff := e.g.Leave(c.cfg.Now(), req)
		c.respond(ctx, resp)
		c.carryOut(ctx, e, eff)
	}
}

// onGroupTick runs the groups' timers that are due.
func (c *Coordinator) onGroupTick(ctx actor.Context) {
	c.groupTimer, c.groupWake = nil, time.Time{}
	now := c.cfg.Now()
	for _, id := range c.groups.ids() {
		e := c.groups.get(id)
		if e == nil {
			continue // forgotten by an earlier group's tick
		}
		if w := e.g.NextWake(); w.IsZero() || now.Before(w) {
			continue
		}
		c.carryOut(ctx, e, e.g.Tick(now))
	}
	c.armGroupTimer(ctx)
}

// carryOut does what a call of e's core asked: it writes the group's
// metadata if the call left it in a new durable state (the call's replies
// then wait for the write), sends the replies, forgets a group that has
// nothing left, and re-arms the timer.
func (c *Coordinator) carryOut(ctx actor.Context, e *groupEntry, eff group.Effects) {
	if e.needsPersist() && !c.stopped && c.notCoordinator == "" {
		c.persistGroup(ctx, e, eff.Replies)
	} else {
		sendReplies(ctx, eff.Replies)
	}
	c.hintRebalance(ctx, e, eff.RebalanceStarted)
	e.forgetActors()
	c.maybeForget(e)
	c.armGroupTimer(ctx)
}

// noteActor remembers a as member id's actor, for rebalance hints (a
// request without a member id or member actor changes nothing; one from a
// member the core refuses is forgotten again by carryOut).
func (e *groupEntry) noteActor(id string, a *messages.MemberActor) {
	if id == "" || a.GetAddress() == "" || a.GetId() == "" {
		return
	}
	if e.actors == nil {
		e.actors = map[string]*actor.PID{}
	}
	if pid := e.actors[id]; pid == nil || pid.Address != a.GetAddress() || pid.Id != a.GetId() {
		e.actors[id] = actor.NewPID(a.GetAddress(), a.GetId())
	}
}

// forgetActors drops the actors of those that are no longer members.
func (e *groupEntry) forgetActors() {
	if len(e.actors) == 0 {
		return
	}
	members := e.g.Members()
	for id := range e.actors {
		if !slices.Contains(members, id) {
			delete(e.actors, id)
		}
	}
}

// hintRebalance sends RebalanceStarted to the actors of members (those the
// core listed as not rejoined yet); members without a known actor learn
// of the rebalance from their next heartbeat.
func (c *Coordinator) hintRebalance(ctx actor.Context, e *groupEntry, members []string) {
	if len(members) == 0 {
		return
	}
	gen := e.g.Generation()
	hinted := 0
	for _, id := range members {
		if pid := e.actors[id]; pid != nil {
			ctx.Send(pid, &messages.RebalanceStarted{GroupId: e.g.ID(), GenerationId: gen, MemberId: id})
			hinted++
		}
	}
	c.logger.WithFields(logrus.Fields{"group": e.g.ID(), "generation": gen, "members": len(members), "hinted": hinted}).Debug("rebalance started; members hinted to rejoin")
}

// sendReplies sends each reply to the request its token names.
func sendReplies(ctx actor.Context, replies []group.Reply) {
	for _, r := range replies {
		if to, ok := r.Token.(replyTo); ok && to.pid != nil {
			ctx.Send(to.pid, r.Msg)
		}
	}
}

// persistGroup writes e's group metadata, then sends held.
func (c *Coordinator) persistGroup(ctx actor.Context, e *groupEntry, held []group.Reply) {
	id, sig, snap := e.g.ID(), signatureOf(e.g), e.g.Snapshot()
	e.persisted, e.persistedOK = sig, true
	now := c.cfg.Now().UnixMilli()
	stateMs := now
	if len(snap.Members) == 0 {
		// An Empty group's timestamp is when it became Empty, from which
		// its offsets expire (expire.go); a new coordinator restores it.
		stateMs = -1
		if !snap.EmptySince.IsZero() {
			stateMs = snap.EmptySince.UnixMilli()
		}
	}
	rec := record.Record{Key: EncodeGroupMetadataKey(id), Value: EncodeGroupMetadata(snap, stateMs), Timestamp: now}
	log := c.logger.WithFields(logrus.Fields{"group": id, "state": sig.state, "generation": sig.generation, "members": len(snap.Members)})
	c.appendRecords(ctx, []record.Record{rec}, func(base int64, code messages.ErrorCode, msg string) {
		if code != 0 {
			log.WithFields(logrus.Fields{"code": code.ShortName(), "error": msg}).Warn("group metadata not written")
			if e.persisted == sig {
				e.persistedOK = false
			}
			held = failSyncs(held, syncErrorFor(code), "the group's assignment could not be stored: "+msg)
		} else {
			log.WithField("offset", base).Debug("group metadata written")
		}
		sendReplies(ctx, held)
	})
}

// syncErrorFor maps a failed group metadata write to the code the members
// waiting in SyncGroup get (Kafka's handleSyncGroup mapping).
func syncErrorFor(code messages.ErrorCode) messages.ErrorCode {
	switch code {
	case messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR, messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE:
		return code
	case messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT:
		return messages.ErrorCode_ERROR_CODE_REBALANCE_IN_PROGRESS
	}
	return messages.ErrorCode_ERROR_CODE_UNKNOWN_SERVER_ERROR
}

// failSyncs turns the successful sync responses among replies into
// failures with code.
func failSyncs(replies []group.Reply, code messages.ErrorCode, msg string) []group.Reply {
	out := make([]group.Reply, len(replies))
	for i, r := range replies {
		if s, ok := r.Msg.(*messages.SyncGroupResponse); ok && s.ErrorCode == 0 {
			r.Msg = &messages.SyncGroupResponse{CorrelationId: s.CorrelationId, ErrorCode: code, ErrorMessage: msg}
		}
		out[i] = r
	}
	return out
}

// maybeForget drops e's group if it never had a generation, holds no
// offsets and waits for nothing (e.g. a member that took a member id and
// never came back).
func (c *Coordinator) maybeForget(e *groupEntry) {
	g := e.g
	if g.State() != group.Empty || g.Generation() != 0 || !g.NextWake().IsZero() || e.commits > 0 || e.deleting || e.expiring ||
		len(c.table.Partitions(g.ID())) > 0 || c.groups.get(g.ID()) != e {
		return
	}
	delete(c.groups.groups, g.ID())
}

// armGroupTimer makes the group timer fire at the groups' next wake (a
// tick before it is harmless, so it is only moved when that changes).
func (c *Coordinator) armGroupTimer(ctx actor.Context) {
	wake := c.groups.nextWake()
	if wake.Equal(c.groupWake) && (c.groupTimer != nil || wake.IsZero()) {
		return
	}
	c.stopGroupTimer()
	c.groupWake = wake
	if wake.IsZero() {
		return
	}
	self, root := ctx.Self(), ctx.ActorSystem().Root
	c.groupTimer = time.AfterFunc(max(wake.Sub(c.cfg.Now()), 0), func() { root.Send(self, groupTick{}) })
}

func (c *Coordinator) stopGroupTimer() {
	if c.groupTimer != nil {
		c.groupTimer.Stop()
	}
	c.groupTimer, c.groupWake = nil, time.Time{}
}

// unloadGroups hands every group back (leadership moved): the requests
// waiting in a join or sync phase get NOT_COORDINATOR, so their members
// find the new coordinator.
func (c *Coordinator) unloadGroups(ctx actor.Context) {
	c.stopGroupTimer()
	c.stopExpiryTimer()
	for _, id := range c.groups.ids() {
		sendReplies(ctx, c.groups.get(id).g.Unload().Replies)
	}
}

// groupRequestError is the response to a group request (membership or
// admin) that fails as a whole with code; nil for other messages.
func groupRequestError(msg any, code messages.ErrorCode, text string) any {
	switch m := msg.(type) {
	case *messages.JoinGroupRequest:
		return &messages.JoinGroupResponse{CorrelationId: m.CorrelationId, ErrorCode: code, ErrorMessage: text, GenerationId: -1, MemberId: m.MemberId}
	case *messages.SyncGroupRequest:
		return &messages.SyncGroupResponse{CorrelationId: m.CorrelationId, ErrorCode: code, ErrorMessage: text}
	case *messages.HeartbeatRequest:
		return &messages.HeartbeatResponse{CorrelationId: m.CorrelationId, ErrorCode: code, ErrorMessage: text}
	case *messages.LeaveGroupRequest:
		return &messages.LeaveGroupResponse{CorrelationId: m.CorrelationId, ErrorCode: code, ErrorMessage: text}
	case *messages.DescribeGroupsRequest:
		resp := &messages.DescribeGroupsResponse{CorrelationId: m.CorrelationId}
		for _, id := range m.GroupIds {
			resp.Groups = append(resp.Groups, &messages.DescribedGroup{GroupId: id, ErrorCode: code, ErrorMessage: text})
		}
		return resp
	case *messages.ListGroupsRequest:
		return &messages.ListGroupsResponse{CorrelationId: m.CorrelationId, ErrorCode: code, ErrorMessage: text}
	case *messages.DeleteGroupsRequest:
		resp := &messages.DeleteGroupsResponse{CorrelationId: m.CorrelationId}
		for _, id := range m.GroupIds {
			resp.Results = append(resp.Results, &messages.DeleteGroupsResult{GroupId: id, ErrorCode: code, ErrorMessage: text})
		}
		return resp
	}
	return nil
}
