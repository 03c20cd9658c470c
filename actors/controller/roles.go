// roles.go: the controller's two behaviours (one role, one behaviour, as
// etcd-io/raft swaps r.step per role). The actor holds one role at a time:
//
//   - standby (not elected): forwards every admin and internal request to
//     the elected controller (after the sender check), and ignores the
//     timers and host watch reports of a term that has ended;
//   - elected (one per election term): owns the term's state — the fence,
//     the live hosts, the hosts in controlled shutdown, the host watch —
//     and turns requests and events into jobs (lanes.go) whose etcd work
//     runs off the mailbox.
//
// The campaign goroutine posts elected and deposed; Receive swaps the
// role on them. A job that runs across the end of its term still answers
// its request (its writes fail with NOT_CONTROLLER once the fence is
// gone); what it changes is the ended term's state, which nothing reads.

package controller

import (
	"context"
	"fmt"
	"maps"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/messages"
)

// role is one of the controller's behaviours.
type role interface {
	// serve acts on a request that passed the sender check.
	serve(ctx actor.Context, req request)
	// receive handles the role's own messages and reports whether msg
	// was one.
	receive(ctx actor.Context, msg any) bool
}

// request is an admin or internal request, with whom to answer.
type request struct {
	msg    proto.Message
	sender *actor.PID
	corr   int64
}

// standby is the role of a controller that is not elected.
type standby struct{ c *Controller }

func (s standby) serve(ctx actor.Context, req request) { s.c.forward(ctx, req) }

func (s standby) receive(_ actor.Context, msg any) bool {
	switch msg.(type) {
	case liveHosts, retryReconcile, rebalanceCheck:
		// From a term that has ended.
		return true
	}
	return false
}

// elected is the role of the elected controller, for one term.
type elected struct {
	c     *Controller
	term  int
	fence cluster.Fence

	// Host liveness (liveness.go). live is nil until the watch first
	// reports; a live set is replaced, never changed in place.
	live map[int32]bool
	// shuttingDown holds live hosts in controlled shutdown: they lead
	// nothing and join no ISR until they leave.
	shuttingDown    map[int32]bool
	watchCancel     context.CancelFunc // stops the host watch
	watchDone       chan struct{}      // closed when the host watch goroutine ends
	retryPending    bool               // a retryReconcile is scheduled
	reconcileQueued bool               // a reconcile job is queued, not started
}

// electionLive is the live host set elections use: live hosts not in
// controlled shutdown (shutdown.go).
func (e *elected) electionLive() map[int32]bool {
	if len(e.shuttingDown) == 0 || e.live == nil {
		return e.live
	}
	live := maps.Clone(e.live)
	for id := range e.shuttingDown {
		delete(live, id)
	}
	return live
}

// current reports whether e's term is the one under way.
func (e *elected) current() bool { return e.c.role == role(e) }

// worker returns what a job's etcd work may know of this term: a copy.
func (e *elected) worker() *worker {
	return &worker{cfg: e.c.cfg, logger: e.c.logger, fence: e.fence, live: e.live, electionLive: e.electionLive()}
}

func (e *elected) serve(ctx actor.Context, req request) {
	switch m := req.msg.(type) {
	case *messages.AlterPartitionRequest:
		e.onAlterPartition(ctx, req, m)
	case *messages.ControlledShutdownRequest:
		e.onControlledShutdown(ctx, req, m)
	case *messages.ElectLeadersRequest:
		e.onElectLeaders(ctx, req, m)
	case *messages.ReassignPartitionsRequest:
		e.onReassignPartitions(ctx, req, m)
	case *messages.CreateAclsRequest, *messages.DeleteAclsRequest, *messages.AlterScramCredentialsRequest:
		e.onSecurityWrite(ctx, req) // acls.go
	default: // the admin requests
		e.onAdmin(ctx, req)
	}
}

func (e *elected) receive(ctx actor.Context, msg any) bool {
	switch m := msg.(type) {
	case liveHosts:
		if m.term == e.term {
			e.onLiveHosts(ctx, m)
		}
	case retryReconcile:
		if m.term == e.term {
			e.onRetryReconcile(ctx)
		}
	case rebalanceCheck:
		if m.term == e.term {
			e.onRebalanceCheck(ctx)
		}
	default:
		return false
	}
	return true
}

// submit queues a job of this term that answers req: if the term ends
// before it starts, it answers NOT_CONTROLLER.
func (e *elected) submit(ctx actor.Context, ln lane, topic string, req request, start func(ctx actor.Context) work) {
	e.c.submit(ctx, &job{lane: ln, topic: topic, start: start, refuse: func(ctx actor.Context, code messages.ErrorCode, why string) {
		e.c.respond(ctx, req, messages.ErrorReply(req.msg, req.corr, code, why))
	}})
}

// becomeElected starts a term: the host watch and the balance checks.
func (c *Controller) becomeElected(ctx actor.Context, fence cluster.Fence) {
	c.terms++
	e := &elected{c: c, term: c.terms, fence: fence}
	c.role = e
	c.logger.WithFields(logrus.Fields{"controller_epoch": fence.Epoch, "host": c.cfg.HostID}).Info("this host is now the controller")
	e.startHostWatch(ctx)
	e.scheduleRebalanceCheck(ctx)
}

// becomeStandby ends the current term, if any: the host watch stops and
// the jobs that have not started are refused (NOT_CONTROLLER); those
// running finish.
func (c *Controller) becomeStandby(ctx actor.Context) {
	if e, ok := c.role.(*elected); ok {
		c.logger.WithField("controller_epoch", e.fence.Epoch).Warn("lost the controller election session; standing by")
		e.stopHostWatch()
		for _, j := range c.lanes.drain() {
			if j.refuse != nil {
				j.refuse(ctx, messages.ErrorCode_ERROR_CODE_NOT_CONTROLLER, fmt.Sprintf("host %d is no longer the controller", c.cfg.HostID))
			}
		}
	}
	c.role = standby{c}
}
