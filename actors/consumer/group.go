// group.go is the shell of a subscribing consumer's group membership, the
// actor side of member.go's core (as the coordinator actor is the shell of
// actors/group): it feeds the core what reaches the actor — the coordinator
// lookup's result, the answers to the core's requests, the leader's
// assignment metadata, the consumer's metadata, rebalance hints, commit
// outcomes, the end of the revoked partitions' hand-offs, Close, and the
// ticks of one timer — with the current time, and carries out the effects
// it returns, in order: it looks the coordinator up and fetches metadata
// on goroutines, sends the core's requests as request futures (their
// answers come back through the mailbox; one to a host that is down fails
// at once), stops, removes and adds partitions (consumer.go), commits
// (commit.go), reports to OnAssigned, OnRevoked, a Target and OnError, and
// re-arms its one timer for the core's next wake time after every event.
// The protocol itself is described in member.go.

package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/messages"
)

// Internal messages of the group shell.
type (
	coordinatorFound struct {
		co  client.Coordinator
		err error
	}
	// memberTick is the core's timer.
	memberTick     struct{}
	assignMetadata struct {
		lookup assignLookup
		counts map[string]int32
		err    error
	}
)

// errCoordinatorDown is the failure of a request not sent because the
// coordinator's host is down.
var errCoordinatorDown = errors.New("consumer: the coordinator's host is down")

// applyGroup carries out eff and, when a revocation ended during a close,
// moves the close on.
func (c *Consumer) applyGroup(ctx actor.Context, eff memberEffects) {
	if c.carryOut(ctx, eff) && c.closing != nil {
		c.closeStep(ctx)
	}
}

// carryOut re-arms the timer for eff.Wake and carries out eff's actions in
// order. It reports whether partitions were reported revoked. The timer
// goes first: an action may feed the core another event at once (a
// request to a host that is down fails, stopped partitions have nothing
// out), whose effects then arm it for the later state.
func (c *Consumer) carryOut(ctx actor.Context, eff memberEffects) (revoked bool) {
	c.armMemberTimer(ctx, eff.Wake)
	for _, a := range eff.Actions {
		switch a := a.(type) {
		case memberFind:
			c.findCoordinator(ctx)
		case memberForget:
			c.conn.ForgetCoordinator(a.Coordinator)
		case memberSend:
			c.sendGroupRequest(ctx, a.Request)
		case memberAssign:
			c.lookUpAssignMetadata(ctx, a.Lookup)
		case memberStop:
			c.stopPartitions(ctx, a.Partitions)
		case memberCommit:
			c.commit(ctx, &commitJob{reason: "revocation", done: func(*CommitResult) {
				c.applyGroup(ctx, c.grp.OnRevocationCommitted(time.Now()))
			}})
		case memberRevoked:
			revoked = true
			c.notifyRevoked(ctx, a.Revoked)
			for _, tp := range a.Revoked.Partitions {
				c.removePartition(tp)
			}
		case memberAssigned:
			c.addPartitions(ctx, a.Assigned.Partitions)
			c.notifyAssigned(ctx, a.Assigned)
		case memberError:
			c.report(a.Err)
		default:
			c.logger.WithField("action", a.String()).Warn("consumer: unknown group action")
		}
	}
	return revoked
}

// armMemberTimer arms the one timer of the core for wake (none when zero),
// replacing the one armed before.
func (c *Consumer) armMemberTimer(ctx actor.Context, wake time.Time) {
	if c.memberTimer != nil {
		c.memberTimer.Stop()
		c.memberTimer = nil
	}
	if wake.IsZero() || c.stopped {
		return
	}
	self, root := ctx.Self(), ctx.ActorSystem().Root
	c.memberTimer = time.AfterFunc(max(time.Until(wake), 0), func() { root.Send(self, memberTick{}) })
}

func (c *Consumer) findCoordinator(ctx actor.Context) {
	self, root, cl, id := ctx.Self(), ctx.ActorSystem().Root, c.conn, c.cfg.GroupID
	go func() {
		rctx, cancel := context.WithTimeout(context.Background(), cl.RequestTimeout())
		defer cancel()
		co, err := cl.FindCoordinator(rctx, id)
		root.Send(self, coordinatorFound{co: co, err: err})
	}()
}

// sendGroupRequest sends r to the coordinator and hands the answer to the
// core on the actor's goroutine. A request to a host that is down fails at
// once.
func (c *Consumer) sendGroupRequest(ctx actor.Context, r groupRequest) {
	answer := func(res any, err error) {
		now := time.Now()
		switch r.Msg.(type) {
		case *messages.JoinGroupRequest:
			c.applyGroup(ctx, c.grp.OnJoin(now, r, res, err))
		case *messages.SyncGroupRequest:
			c.applyGroup(ctx, c.grp.OnSync(now, r, res, err))
		case *messages.HeartbeatRequest:
			c.applyGroup(ctx, c.grp.OnHeartbeat(now, r, res, err))
		}
	}
	if !c.conn.HostUp(r.Coordinator.Address) {
		answer(nil, fmt.Errorf("%w: %s", errCoordinatorDown, r.Coordinator.Address))
		return
	}
	timeout := c.cfg.RebalanceTimeout + c.conn.RequestTimeout()
	switch msg := r.Msg.(type) {
	case *messages.JoinGroupRequest:
		msg.CorrelationId, msg.MemberActor = c.nextCorr(), memberActor(ctx)
	case *messages.SyncGroupRequest:
		msg.CorrelationId, msg.MemberActor = c.nextCorr(), memberActor(ctx)
	case *messages.HeartbeatRequest:
		msg.CorrelationId, msg.MemberActor = c.nextCorr(), memberActor(ctx)
		timeout = min(c.conn.RequestTimeout(), c.cfg.SessionTimeout)
	}
	ctx.ReenterAfter(ctx.RequestFuture(r.Coordinator.PID(), r.Msg, timeout), func(res any, err error) {
		if c.stopped {
			return
		}
		answer(res, err)
	})
}

func (c *Consumer) nextCorr() int64 {
	c.corr++
	return c.corr
}

// lookUpAssignMetadata looks up the partition counts of the topics of the
// leader's assignment (onAssignMetadata).
func (c *Consumer) lookUpAssignMetadata(ctx actor.Context, lookup assignLookup) {
	self, root, cl := ctx.Self(), ctx.ActorSystem().Root, c.conn
	go func() {
		rctx, cancel := context.WithTimeout(context.Background(), cl.RequestTimeout())
		defer cancel()
		m := assignMetadata{lookup: lookup, counts: map[string]int32{}}
		if len(lookup.Topics) > 0 {
			md, err := cl.Metadata(rctx, lookup.Topics...)
			if err != nil {
				m.err = err // the core says what it was for
			} else {
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

// stopPartitions stops fetching tps, which are being revoked (a fetch in
// flight is abandoned: its answer is dropped), and tells the core once
// none of them has records out.
func (c *Consumer) stopPartitions(ctx actor.Context, tps []TopicPartition) {
	for _, tp := range tps {
		if p := c.parts[tp]; p != nil {
			p.fs.revoke()
		}
	}
	c.revocationHandled(ctx)
}

// revocationHandled tells the core, while it revokes partitions none of
// which has records out any more, whether their positions moved past what
// is committed.
func (c *Consumer) revocationHandled(ctx actor.Context) {
	parts := c.grp.revokingParts()
	if parts == nil || slices.ContainsFunc(parts, func(tp TopicPartition) bool { p := c.parts[tp]; return p != nil && p.fs.handing() }) {
		return
	}
	c.applyGroup(ctx, c.grp.OnHandled(time.Now(), len(c.book.pending(parts...)) > 0))
}

func (c *Consumer) notifyAssigned(ctx actor.Context, a Assigned) {
	if c.cfg.OnAssigned != nil {
		c.cfg.OnAssigned(a)
	}
	if c.cfg.Target != nil {
		a.Consumer = ctx.Self()
		ctx.Send(c.cfg.Target, &a)
	}
}

func (c *Consumer) notifyRevoked(ctx actor.Context, r Revoked) {
	if c.cfg.OnRevoked != nil {
		c.cfg.OnRevoked(r)
	}
	if c.cfg.Target != nil {
		r.Consumer = ctx.Self()
		ctx.Send(c.cfg.Target, &r)
	}
}

// memberActor names the consumer actor in group requests: the coordinator
// sends it RebalanceStarted hints (the requests' sender is a reply future,
// gone once answered).
func memberActor(ctx actor.Context) *messages.MemberActor {
	self := ctx.Self()
	return &messages.MemberActor{Address: self.Address, Id: self.Id}
}

// onRebalanceStarted hands the coordinator's hint to the core.
func (c *Consumer) onRebalanceStarted(ctx actor.Context, h *messages.RebalanceStarted) {
	if c.grp == nil || c.stopped {
		c.logger.WithFields(logrus.Fields{"group": h.GroupId, "hint_member": h.MemberId, "hint_generation": h.GenerationId}).Debug("consumer: ignoring a stale rebalance hint")
		return
	}
	c.applyGroup(ctx, c.grp.OnRebalanceHint(time.Now(), h))
}
