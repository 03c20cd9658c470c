// produce.go: the leader's produce handler.
//
// A ProduceRequest carries exactly one RecordBatch v2 for one partition. The
// leader checks the target and leader epoch, the acks value, and (for
// acks=all) that the ISR is at least min.insync.replicas, then appends the
// batch (the log validates it and assigns offsets) and answers:
//   - acks=0: no answer at all, not even for an error;
//   - acks=1: once the batch is in the leader's log;
//   - acks=all: once the high watermark passes the batch (with one replica,
//     at once).
//
// Error codes: UNKNOWN_TOPIC_OR_PARTITION, FENCED_LEADER_EPOCH,
// UNKNOWN_LEADER_EPOCH, INVALID_REQUIRED_ACKS, NOT_ENOUGH_REPLICAS,
// MESSAGE_TOO_LARGE, CORRUPT_MESSAGE, INVALID_RECORD, KAFKA_STORAGE_ERROR.

package replica

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage/record"
)

var recordChecksum = record.ErrChecksum

// isrSize is the number of in-sync replicas: one until replication exists.
func (r *Replica) isrSize() int { return 1 }

func (r *Replica) onProduce(ctx actor.Context, req *messages.ProduceRequest) {
	start := time.Now()
	resp := &messages.ProduceResponse{
		CorrelationId:   req.CorrelationId,
		Topic:           req.Topic,
		Partition:       req.Partition,
		BaseOffset:      -1,
		LogAppendTimeMs: -1,
	}
	code, msg := r.checkTarget(req.Topic, req.Partition, req.CurrentLeaderEpoch)
	if code == 0 {
		switch req.Acks {
		case messages.Acks_ACKS_NONE, messages.Acks_ACKS_LEADER:
		case messages.Acks_ACKS_ALL:
			if r.isrSize() < r.cfg.MinInsyncReplicas {
				code, msg = messages.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS, "fewer in-sync replicas than min.insync.replicas"
			}
		default:
			code, msg = messages.ErrorCode_ERROR_CODE_INVALID_REQUIRED_ACKS, "acks must be 0, 1 or all"
		}
	}
	records := 0
	if code == 0 {
		info, err := r.log.Append(req.Records, r.epoch)
		if err != nil {
			code, msg = codeFor(err), err.Error()
			r.logger.WithError(err).WithField("code", code).Debug("produce refused")
		} else {
			resp.BaseOffset = info.FirstOffset
			resp.LogAppendTimeMs = info.LogAppendTime
			records = int(info.LastOffset - info.FirstOffset + 1)
			r.advanceHighWatermark(ctx, r.log.LogEndOffset())
		}
	}
	resp.ErrorCode, resp.ErrorMessage = code, msg
	if r.log != nil {
		resp.LogStartOffset = r.log.LogStartOffset()
	}
	r.metrics.Produced(r.cfg.Topic, r.cfg.Partition, records, len(req.Records), time.Since(start), code)
	if req.Acks == messages.Acks_ACKS_NONE {
		if code != 0 {
			r.logger.WithFields(logrus.Fields{"code": code, "error": msg}).Debug("acks=0 produce failed; no response is sent")
		}
		return
	}
	if ctx.Sender() != nil {
		ctx.Respond(resp)
	}
}

// advanceHighWatermark moves the high watermark (with one replica, to the
// log end offset) and wakes fetches waiting for data.
func (r *Replica) advanceHighWatermark(ctx actor.Context, hw int64) {
	if hw <= r.hw {
		return
	}
	r.hw = hw
	r.metrics.LogEndOffset(r.cfg.Topic, r.cfg.Partition, hw)
	r.wakeFetches(ctx)
}
