// commit.go holds the consumer's offset commits and its close: part of the
// actor shell (it asks the member core whether and as whom to commit, and
// hands it commit outcomes, Close, GiveUp and Closed).
//
// Commits go one at a time, in the order asked: auto-commits every
// AutoCommitInterval (while the member is stable or rejoining), the commit before
// partitions are revoked, the commit on Close, and the user's Commit
// messages. A commit of positions takes them when it is sent, so one queued
// behind another commits the latest. Each carries the member id and
// generation (none for a consumer outside group management); the client
// retries it across coordinator moves. A refusal for a stale generation
// (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID) of the member's current
// generation makes it rejoin as member.go describes; REBALANCE_IN_PROGRESS
// makes a stable member rejoin (the core's OnCommitDone decides).
//
// Close: fetching stops, the records handed to the target are waited for,
// positions are committed (with auto-commit), the partitions are reported
// revoked, and a dynamic member leaves the group (LeaveGroup); a static
// member does not, so a restart within the session timeout gets its
// partitions back without a rebalance (KIP-345). A consumer stopped
// without Close does the same, best effort, blocking in its Stopping
// handler for at most CloseTimeout per call.

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

// commitJob is one commit to make.
type commitJob struct {
	// offsets to commit when explicit; otherwise the pending positions
	// when the commit is sent.
	offsets  []client.CommitOffset
	explicit bool
	reason   string
	done     func(*CommitResult)
}

// commitQueue holds the commits waiting and the one in flight.
type commitQueue struct {
	queue    []*commitJob
	inFlight *commitJob
}

// busy reports whether a commit is queued or in flight.
func (q *commitQueue) busy() bool { return q.inFlight != nil || len(q.queue) > 0 }

type (
	commitDone struct {
		job        *commitJob
		offsets    []client.CommitOffset
		member     string
		generation int32
		resp       *messages.OffsetCommitResponse
		err        error
	}
	autoCommitTick struct{}
	leaveDone      struct{ err error }
)

// closeState is a close in progress.
type closeState struct {
	waiters                     []*actor.PID
	committing, committed       bool
	revoked, leaving, leaveDone bool
	// leave is the member's LeaveGroup, nil when it does not leave.
	leave *messages.LeaveGroupRequest
	err   error
}

func (c *Consumer) onCommitRequest(ctx actor.Context, m *Commit) {
	sender := ctx.Sender()
	reply := func(r *CommitResult) {
		if sender != nil {
			ctx.Send(sender, r)
		}
	}
	switch {
	case c.cfg.GroupID == "":
		reply(&CommitResult{Offsets: m.Offsets, Err: fmt.Errorf("%w: the consumer has no group id", ErrNotInGroup)})
	case c.closed:
		reply(&CommitResult{Offsets: m.Offsets, Err: ErrClosed})
	default:
		c.commit(ctx, &commitJob{offsets: slices.Clone(m.Offsets), explicit: m.Offsets != nil, reason: "commit", done: reply})
	}
}

func (c *Consumer) onAutoCommit(ctx actor.Context) {
	if c.stopped || c.closed {
		return
	}
	after(ctx, c.cfg.AutoCommitInterval, autoCommitTick{})
	if c.closing != nil || c.commits.busy() {
		return
	}
	// A member commits while stable, and while it rejoins (the group
	// prepares a rebalance and takes commits of the current generation),
	// not between its join and its sync (the group refuses them then).
	if g := c.grp; g != nil && !g.canAutoCommit() {
		return
	}
	if len(c.book.pending()) == 0 {
		return
	}
	c.commit(ctx, &commitJob{reason: "auto-commit"})
}

// commit queues job.
func (c *Consumer) commit(ctx actor.Context, job *commitJob) {
	c.commits.queue = append(c.commits.queue, job)
	c.commitNext(ctx)
}

func (j *commitJob) finish(r *CommitResult) {
	if j.done != nil {
		j.done(r)
	}
}

// commitRequest returns the OffsetCommitRequest of offsets, and offsets in
// the request's order (topic by topic), which its results follow.
func (c *Consumer) commitRequest(offsets []client.CommitOffset, member string, gen int32) (*messages.OffsetCommitRequest, []client.CommitOffset) {
	req := &messages.OffsetCommitRequest{GroupId: c.cfg.GroupID, GenerationId: gen, MemberId: member, GroupInstanceId: c.cfg.GroupInstanceID}
	byTopic := map[string]*messages.OffsetCommitTopic{}
	for _, o := range offsets {
		t := byTopic[o.Topic]
		if t == nil {
			t = &messages.OffsetCommitTopic{Topic: o.Topic}
			byTopic[o.Topic] = t
			req.Topics = append(req.Topics, t)
		}
		t.Partitions = append(t.Partitions, &messages.OffsetCommitPartition{Partition: o.Partition, Offset: o.Offset, LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata})
	}
	ordered := make([]client.CommitOffset, 0, len(offsets))
	for _, t := range req.Topics {
		for _, o := range offsets {
			if o.Topic == t.Topic {
				ordered = append(ordered, o)
			}
		}
	}
	return req, ordered
}

// commitNext sends the next queued commit, unless one is in flight.
func (c *Consumer) commitNext(ctx actor.Context) {
	q := &c.commits
	for q.inFlight == nil && len(q.queue) > 0 {
		job := q.queue[0]
		q.queue = q.queue[1:]
		offsets := job.offsets
		if !job.explicit {
			offsets = c.book.pending()
		}
		member, gen := "", int32(-1)
		if g := c.grp; g != nil {
			if !g.inGeneration() {
				job.finish(&CommitResult{Offsets: offsets, Err: ErrNotInGroup})
				continue
			}
			member, gen = g.commitID()
		}
		if len(offsets) == 0 {
			job.finish(&CommitResult{})
			continue
		}
		req, ordered := c.commitRequest(offsets, member, gen)
		q.inFlight = job
		self, root, cl := ctx.Self(), ctx.ActorSystem().Root, c.conn
		go func() {
			rctx, cancel := context.WithTimeout(context.Background(), cl.RequestTimeout())
			defer cancel()
			resp, err := cl.CommitOffsetsRequest(rctx, req)
			root.Send(self, commitDone{job: job, offsets: ordered, member: member, generation: gen, resp: resp, err: err})
		}()
	}
}

func (c *Consumer) onCommitDone(ctx actor.Context, m commitDone) {
	c.commits.inFlight = nil
	committed, err := c.book.done(m.offsets, m.resp.GetResults(), m.err)
	log := c.logger.WithFields(logrus.Fields{"reason": m.job.reason, "offsets": len(m.offsets), "generation": m.generation})
	if err != nil {
		log.WithError(err).Warn("consumer: commit failed")
		c.report(fmt.Errorf("consumer: %s of group %q: %w", m.job.reason, c.cfg.GroupID, err))
	} else {
		log.Debug("consumer: committed")
	}
	if c.grp != nil {
		c.applyGroup(ctx, c.grp.OnCommitDone(time.Now(), m.member, m.generation, m.err))
	}
	res := &CommitResult{Offsets: committed, Err: err}
	if m.err != nil {
		res.Offsets = m.offsets
	}
	m.job.finish(res)
	c.commitNext(ctx)
}

func (c *Consumer) onClose(ctx actor.Context) {
	sender := ctx.Sender()
	switch {
	case c.closed:
		if sender != nil {
			ctx.Respond(&CloseResult{})
		}
		return
	case c.closing != nil:
		if sender != nil {
			c.closing.waiters = append(c.closing.waiters, sender)
		}
		return
	}
	c.closing = &closeState{}
	if sender != nil {
		c.closing.waiters = append(c.closing.waiters, sender)
	}
	for _, p := range c.parts {
		p.fs.revoke() // fetched no more; answers in flight are dropped
	}
	if c.grp != nil {
		c.applyGroup(ctx, c.grp.Close(time.Now())) // a join or sync in flight no longer matters
	}
	c.logger.Info("consumer: closing")
	c.closeStep(ctx)
}

// closeStep moves the close on (see the file comment).
func (c *Consumer) closeStep(ctx actor.Context) {
	cs, g := c.closing, c.grp
	if cs == nil || c.closed || cs.committing || cs.leaving || (g != nil && g.revokingParts() != nil) {
		return
	}
	for _, p := range c.parts {
		if p.fs.handing() {
			return // onIdle calls again
		}
	}
	if !cs.committed {
		cs.committed = true
		if c.canCommitPositions() && len(c.book.pending()) > 0 {
			cs.committing = true
			c.commit(ctx, &commitJob{reason: "close", done: func(r *CommitResult) {
				cs.committing = false
				if r.Err != nil {
					cs.err = r.Err
				}
				c.closeStep(ctx)
			}})
			return
		}
	}
	if g != nil && !cs.revoked {
		cs.revoked = true
		var eff memberEffects
		eff, cs.leave = g.GiveUp(time.Now(), false)
		c.carryOut(ctx, eff)
	}
	if cs.leave != nil && !cs.leaveDone {
		cs.leaving = true
		c.leave(ctx, cs.leave)
		return
	}
	c.closed = true
	if g != nil {
		c.carryOut(ctx, g.Closed(time.Now()))
	}
	for tp := range c.parts {
		c.removePartition(tp)
	}
	c.logger.WithError(cs.err).Info("consumer: closed")
	for _, w := range cs.waiters {
		ctx.Send(w, &CloseResult{Err: cs.err})
	}
}

// canCommitPositions reports whether the consumer commits positions on
// its own: auto-commit on, a group, and (for a member) a generation.
func (c *Consumer) canCommitPositions() bool {
	return c.cfg.GroupID != "" && !c.cfg.DisableAutoCommit && (c.grp == nil || c.grp.inGeneration())
}

// leave sends req, the member's LeaveGroup (on a goroutine; leaveDone).
func (c *Consumer) leave(ctx actor.Context, req *messages.LeaveGroupRequest) {
	self, root := ctx.Self(), ctx.ActorSystem().Root
	req.CorrelationId = c.nextCorr()
	go func() { root.Send(self, leaveDone{err: c.sendLeave(req)}) }()
}

// sendLeave sends req to the group's coordinator and waits for the answer
// (finding the coordinator again once if it moved). It blocks: call it
// from a goroutine, or while stopping.
func (c *Consumer) sendLeave(req *messages.LeaveGroupRequest) error {
	cl, timeout := c.conn, min(c.conn.RequestTimeout(), c.cfg.CloseTimeout)
	var err error
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		var co client.Coordinator
		co, err = cl.FindCoordinator(ctx, c.cfg.GroupID)
		if err == nil {
			var res any
			res, err = cl.Request(ctx, co.PID(), req)
			var resp *messages.LeaveGroupResponse
			if resp, err = answerAs[*messages.LeaveGroupResponse](res, err); err == nil {
				err = resp.Err()
				for _, m := range resp.Members {
					err = errors.Join(err, m.ErrorCode.Err("member "+m.MemberId))
				}
			}
			if reactionTo(messages.CodeOf(err)) == reactRediscover || (err != nil && messages.CodeOf(err) == messages.ErrorCode_ERROR_CODE_UNKNOWN_SERVER_ERROR) {
				cl.ForgetCoordinator(co)
				cancel()
				continue
			}
		}
		cancel()
		break
	}
	if err != nil {
		return fmt.Errorf("consumer: leave group %q: %w", c.cfg.GroupID, err)
	}
	return nil
}

func (c *Consumer) onLeaveDone(ctx actor.Context, m leaveDone) {
	cs := c.closing
	if cs == nil {
		return
	}
	cs.leaving, cs.leaveDone = false, true
	if m.err != nil {
		// The session timeout removes the member anyway.
		c.grp.logger().WithError(m.err).Warn("consumer: leaving the group failed")
		c.report(m.err)
	} else {
		c.grp.logger().Info("consumer: left the group")
	}
	c.closeStep(ctx)
}

// onStopping finishes a consumer stopped without Close, best effort: it
// commits the positions and leaves, blocking for at most CloseTimeout per
// call (the actor can wait for no reply once stopping).
func (c *Consumer) onStopping(ctx actor.Context) {
	defer func() { c.stopped = true }()
	if c.closed || c.cfg.GroupID == "" {
		return
	}
	if offsets := c.book.pending(); c.canCommitPositions() && len(offsets) > 0 {
		member, gen := "", int32(-1)
		if g := c.grp; g != nil {
			member, gen = g.commitID()
		}
		req, _ := c.commitRequest(offsets, member, gen)
		rctx, cancel := context.WithTimeout(context.Background(), c.cfg.CloseTimeout)
		_, err := c.conn.CommitOffsetsRequest(rctx, req)
		cancel()
		if err != nil {
			c.logger.WithError(err).Warn("consumer: commit on stop failed")
		}
	}
	g := c.grp
	if g == nil {
		return
	}
	eff, leave := g.GiveUp(time.Now(), true)
	c.carryOut(ctx, eff)
	if leave != nil {
		leave.CorrelationId = c.nextCorr()
		if err := c.sendLeave(leave); err != nil {
			c.logger.WithError(err).Warn("consumer: leave on stop failed")
		}
	}
	c.carryOut(ctx, g.Closed(time.Now()))
}
