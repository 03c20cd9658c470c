// shutdown.go: controlled shutdown. Before a host stops it asks the
// controller to move leadership of its partitions to other in-sync
// replicas and to take it out of every ISR (Kafka's controlled shutdown),
// so producers and consumers switch leaders before the host goes, not a
// lease TTL after. Until the host's registration ends, the controller
// treats it as not live for elections. Only the host itself may ask
// (senders.go); its broker epoch must be the registered one.
//
// The etcd work runs in two jobs of the admin lane (lanes.go): the
// registration check, then, once the host is marked, the elections.

package controller

import (
	"context"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/messages"
)

// onControlledShutdown runs a host's controlled shutdown in two jobs of
// the admin lane: the first checks the registration; if it holds, the
// host is marked as shutting down (so no job started from then on elects
// it or takes it into an ISR) and the second, queued first in the lane,
// moves its leaderships and counts those left.
func (e *elected) onControlledShutdown(ctx actor.Context, req request, m *messages.ControlledShutdownRequest) {
	e.submit(ctx, laneAdmin, "", req, func(actor.Context) work {
		w := e.worker()
		return func(ctx context.Context) func(actor.Context) {
			resp := w.checkShutdown(ctx, m)
			return func(actx actor.Context) {
				switch {
				case resp != nil:
					e.c.respond(actx, req, resp)
					return
				case !e.current():
					e.c.respond(actx, req, messages.ErrorReply(req.msg, req.corr, messages.ErrorCode_ERROR_CODE_NOT_CONTROLLER, "the controller's term ended"))
					return
				}
				if e.shuttingDown == nil {
					e.shuttingDown = map[int32]bool{}
				}
				e.shuttingDown[m.HostId] = true
				e.c.lanes.addFront(&job{lane: laneAdmin, start: func(actor.Context) work {
					w := e.worker()
					return func(ctx context.Context) func(actor.Context) {
						resp := w.moveLeadership(ctx, m)
						return func(actx actor.Context) { e.c.respond(actx, req, resp) }
					}
				}, refuse: func(ctx actor.Context, code messages.ErrorCode, why string) {
					e.c.respond(ctx, req, messages.ErrorReply(req.msg, req.corr, code, why))
				}})
			}
		}
	})
}

// checkShutdown checks that the host asking for a controlled shutdown is
// registered with its broker epoch and that the live hosts are known; it
// returns the refusal, or nil.
func (w *worker) checkShutdown(ctx context.Context, req *messages.ControlledShutdownRequest) *messages.ControlledShutdownResponse {
	resp := &messages.ControlledShutdownResponse{CorrelationId: req.CorrelationId}
	rctx, cancel := context.WithTimeout(ctx, w.cfg.RequestTimeout)
	defer cancel()
	hosts, err := w.cfg.Store.ListHosts(rctx)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = codeFor(err), err.Error()
		return resp
	}
	registered := false
	for _, h := range hosts {
		registered = registered || (h.HostId == req.HostId && h.BrokerEpoch == req.BrokerEpoch)
	}
	if !registered {
		resp.ErrorCode = messages.ErrorCode_ERROR_CODE_STALE_BROKER_EPOCH
		resp.ErrorMessage = fmt.Sprintf("host %d with broker epoch %d is not registered", req.HostId, req.BrokerEpoch)
		return resp
	}
	if w.live == nil {
		resp.ErrorCode, resp.ErrorMessage = messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT, "the controller has not read the host registrations yet"
		return resp
	}
	return nil
}

// moveLeadership re-elects every topic's leaders without the host in
// controlled shutdown (w.electionLive lacks it) and counts the partitions
// it still leads.
func (w *worker) moveLeadership(ctx context.Context, req *messages.ControlledShutdownRequest) *messages.ControlledShutdownResponse {
	resp := &messages.ControlledShutdownResponse{CorrelationId: req.CorrelationId}
	rctx, cancel := context.WithTimeout(ctx, w.cfg.RequestTimeout)
	defer cancel()
	if err := w.electAll(rctx); err != nil {
		resp.ErrorCode, resp.ErrorMessage = codeFor(err), err.Error()
		return resp
	}
	topics, _, err := w.cfg.Store.ListTopics(rctx)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = codeFor(err), err.Error()
		return resp
	}
	for _, t := range topics {
		for _, p := range t.Partitions {
			if p.Leader == req.HostId {
				resp.PartitionsRemaining++
			}
		}
	}
	w.logger.WithFields(logrus.Fields{"host": req.HostId, "partitions_still_led": resp.PartitionsRemaining}).Info("controlled shutdown: leadership moved")
	return resp
}
