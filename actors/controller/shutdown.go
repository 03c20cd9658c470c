// shutdown.go: controlled shutdown. Before a host stops it asks the
// controller to move leadership of its partitions to other in-sync
// replicas and to take it out of every ISR (Kafka's controlled shutdown),
// so producers and consumers switch leaders before the host goes, not a
// lease TTL after. Until the host's registration ends, the controller
// treats it as not live for elections. Only the host itself may ask
// (senders.go); its broker epoch must be the registered one.

package controller

import (
	"context"
	"fmt"
	"maps"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/messages"
)

// electionLive is the live host set elections use: live hosts not in
// controlled shutdown.
func (c *Controller) electionLive() map[int32]bool {
	if len(c.shuttingDown) == 0 || c.live == nil {
		return c.live
	}
	live := maps.Clone(c.live)
	for id := range c.shuttingDown {
		delete(live, id)
	}
	return live
}

func (c *Controller) onControlledShutdown(ctx actor.Context, req *messages.ControlledShutdownRequest) {
	if !c.authorizeInternal(ctx, req) {
		return
	}
	if c.fence == nil {
		c.forward(ctx, req, req.CorrelationId)
		return
	}
	resp := &messages.ControlledShutdownResponse{CorrelationId: req.CorrelationId}
	defer func() { ctx.Respond(resp) }()
	rctx, cancel := context.WithTimeout(context.Background(), c.cfg.RequestTimeout)
	defer cancel()
	hosts, err := c.cfg.Store.ListHosts(rctx)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = codeFor(err), err.Error()
		return
	}
	registered := false
	for _, h := range hosts {
		registered = registered || (h.HostId == req.HostId && h.BrokerEpoch == req.BrokerEpoch)
	}
	if !registered {
		resp.ErrorCode = messages.ErrorCode_ERROR_CODE_STALE_BROKER_EPOCH
		resp.ErrorMessage = fmt.Sprintf("host %d with broker epoch %d is not registered", req.HostId, req.BrokerEpoch)
		return
	}
	if c.live == nil {
		resp.ErrorCode, resp.ErrorMessage = messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT, "the controller has not read the host registrations yet"
		return
	}
	if c.shuttingDown == nil {
		c.shuttingDown = map[int32]bool{}
	}
	c.shuttingDown[req.HostId] = true
	if err := c.electAll(rctx); err != nil {
		resp.ErrorCode, resp.ErrorMessage = codeFor(err), err.Error()
		return
	}
	topics, _, err := c.cfg.Store.ListTopics(rctx)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = codeFor(err), err.Error()
		return
	}
	for _, t := range topics {
		for _, p := range t.Partitions {
			if p.Leader == req.HostId {
				resp.PartitionsRemaining++
			}
		}
	}
	c.logger.WithFields(logrus.Fields{"host": req.HostId, "partitions_still_led": resp.PartitionsRemaining}).Info("controlled shutdown: leadership moved")
}
