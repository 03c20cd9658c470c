// initproducerid.go: InitProducerId (key 22), served and advertised v0-5;
// needs Config.Data.
//
// Behaviour:
//   - Idempotent producers only: a null transactional id gets a producer id
//     and epoch from the DataBackend (v3+ passes the producer's current id
//     and epoch on, for KIP-360 epoch bumps).
//   - A transactional id is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
//     what Kafka answers a producer that may not use its transactional id:
//     clients fail fatally and clearly instead of retrying (transactions
//     are not served, DESIGN §9). An empty one is INVALID_REQUEST, as Kafka
//     answers.
//   - A DataBackend error closes the connection (a local fault).
//
// Error codes: TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53), INVALID_REQUEST
// (42), and whatever the DataBackend reports (COORDINATOR_NOT_AVAILABLE,
// ...).

package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(api{key: 22, servedMin: 0, servedMax: 5, advertisedMin: 0, advertisedMax: 5,
		handle: handleInitProducerID, enabled: dataEnabled})
}

func handleInitProducerID(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	if code := initProducerIDRefusal(req); code != 0 {
		resp.ErrorCode = code
		return respond(resp)
	}
	q := ProducerIDQuery{ProducerID: -1, ProducerEpoch: -1}
	if req.Version >= 3 {
		q.ProducerID, q.ProducerEpoch = req.ProducerID, req.ProducerEpoch
	}
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		res, err := c.srv.cfg.Data.InitProducerID(ctx, q)
		if err != nil {
			return nil, err
		}
		resp.ErrorCode = res.ErrorCode
		if res.ErrorCode == 0 {
			resp.ProducerID, resp.ProducerEpoch = res.ProducerID, res.ProducerEpoch
		}
		return resp, nil
	})
}

// initProducerIDRefusal is the error code req is refused with, 0 if it is
// served. Pure.
func initProducerIDRefusal(req *kmsg.InitProducerIDRequest) int16 {
	switch {
	case req.TransactionalID == nil:
		return 0
	case *req.TransactionalID == "":
		return kerr.InvalidRequest.Code
	default:
		return kerr.TransactionalIDAuthorizationFailed.Code
	}
}
