package broker

import (
	"context"
	"errors"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/messages"
)

// initProducerID answers InitProducerIdRequest with a new producer id from
// this host's block (taking a new block from etcd off the actor's
// goroutine when needed).
func (b *Broker) initProducerID(ctx actor.Context, req *messages.InitProducerIdRequest) {
	sender, root, timeout := ctx.Sender(), ctx.ActorSystem().Root, b.cfg.AdminTimeout
	if sender == nil {
		return
	}
	if b.producerIDs == nil {
		b.producerIDs = cluster.NewProducerIDAllocator(b.cfg.Store, 0)
	}
	alloc := b.producerIDs
	go func() {
		rctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		resp := &messages.InitProducerIdResponse{CorrelationId: req.CorrelationId, ProducerId: -1, ProducerEpoch: -1}
		id, err := alloc.Next(rctx)
		switch {
		case err == nil:
			resp.ProducerId, resp.ProducerEpoch = id, 0
		case errors.Is(err, context.DeadlineExceeded):
			resp.ErrorCode, resp.ErrorMessage = messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT, err.Error()
		default:
			resp.ErrorCode, resp.ErrorMessage = messages.ErrorCode_ERROR_CODE_UNKNOWN_SERVER_ERROR, err.Error()
		}
		if err != nil {
			b.logger.WithError(err).Warn("allocating a producer id failed")
		}
		root.Send(sender, resp)
	}()
}
