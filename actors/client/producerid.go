package client

import (
	"context"
	"fmt"

	"github.com/actorlog/actorlog/messages"
)

// InitProducerID asks a bootstrap host for a new producer id (and epoch 0)
// for an idempotent producer. Ids are unique in the cluster.
func (c *Client) InitProducerID(ctx context.Context) (id int64, epoch int16, err error) {
	res, err := c.bootstrapRequest(ctx, messages.BrokerActorID, &messages.InitProducerIdRequest{CorrelationId: c.NextCorrelationID()})
	if err != nil {
		return -1, -1, err
	}
	resp, ok := res.(*messages.InitProducerIdResponse)
	if !ok {
		return -1, -1, fmt.Errorf("client: unexpected init-producer-id reply %T", res)
	}
	if err := resp.ErrorCode.Err(resp.ErrorMessage); err != nil {
		return -1, -1, fmt.Errorf("client: init producer id: %w", err)
	}
	return resp.ProducerId, int16(resp.ProducerEpoch), nil
}
