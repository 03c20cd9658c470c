// offsets.go: list-offsets and offset-for-leader-epoch handlers.
//
// ListOffsets: timestamp -2 is the log start offset, -1 the high watermark
// (the "latest" a consumer may read to), otherwise the first offset whose
// record timestamp is >= the given one. When no record is that new, the
// answer is the high watermark with timestamp -1: where such a record will
// be written, decided in the same step as the search, so a consumer seeking
// to "now" cannot miss a record produced between two lookups (Kafka answers
// -1 and leaves the client a racy second request). Timestamp -3
// (MaxTimestamp, KIP-734) is the record with the largest timestamp below
// the high watermark, the earliest on a tie, from the log's per-segment
// max-timestamp marks (storage/maxts.go); none is offset and timestamp -1,
// as Kafka answers. Kafka answers none when the partition's newest record
// is not yet below the high watermark; this answers the newest below it.
// Error codes: UNKNOWN_TOPIC_OR_PARTITION, FENCED_LEADER_EPOCH,
// UNKNOWN_LEADER_EPOCH, INVALID_REQUEST (negative timestamps below -3),
// CORRUPT_MESSAGE, KAFKA_STORAGE_ERROR.
//
// OffsetForLeaderEpoch (KIP-101/279): the largest epoch <= the requested one
// and where it ended, from the leader-epoch checkpoint. A follower's request
// (replica_id >= 0) is answered only on the follower's own host's behalf
// (senders.go): otherwise CLUSTER_AUTHORIZATION_FAILED, with epoch and
// offset -1.

package replica

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/messages"
)

func (r *Replica) onListOffsets(ctx actor.Context, req *messages.ListOffsetsRequest) {
	resp := &messages.ListOffsetsResponse{
		CorrelationId: req.CorrelationId,
		Topic:         req.Topic,
		Partition:     req.Partition,
		Timestamp:     -1,
		Offset:        -1,
		LeaderEpoch:   r.cfg.LeaderEpoch,
	}
	code, msg := r.checkTarget(req.Topic, req.Partition, req.CurrentLeaderEpoch)
	if code == 0 {
		switch ts := req.Timestamp; {
		case ts == messages.EarliestTimestamp:
			resp.Offset = r.log.LogStartOffset()
		case ts == messages.LatestTimestamp:
			resp.Offset = r.hw
		case ts == messages.MaxTimestamp:
			off, t, found, err := r.log.MaxTimestamp(r.hw)
			switch {
			case err != nil:
				code, msg = codeFor(err), err.Error()
			case found:
				resp.Offset, resp.Timestamp = off, t
			}
		case ts < 0:
			code, msg = messages.ErrorCode_ERROR_CODE_INVALID_REQUEST, "timestamp must be -1 (latest), -2 (earliest), -3 (max timestamp) or >= 0"
		default:
			off, t, found, err := r.log.OffsetForTimestamp(ts)
			switch {
			case err != nil:
				code, msg = codeFor(err), err.Error()
			case found && off < r.hw:
				resp.Offset, resp.Timestamp = off, t
			default:
				resp.Offset = r.hw
			}
		}
	}
	resp.ErrorCode, resp.ErrorMessage = code, msg
	ctx.Respond(resp)
}

func (r *Replica) onOffsetForLeaderEpoch(ctx actor.Context, req *messages.OffsetForLeaderEpochRequest) {
	resp := &messages.OffsetForLeaderEpochResponse{
		CorrelationId: req.CorrelationId,
		Topic:         req.Topic,
		Partition:     req.Partition,
		LeaderEpoch:   -1,
		EndOffset:     -1,
	}
	if req.ReplicaId >= 0 && !r.fromFollower(ctx, req.ReplicaId) {
		r.refuseFollower(ctx, cluster.RefusedOffsetForLeaderEpoch, req.ReplicaId)
		resp.ErrorCode, resp.ErrorMessage = messages.ErrorCode_ERROR_CODE_CLUSTER_AUTHORIZATION_FAILED, followerRefusal(req.ReplicaId)
		ctx.Respond(resp)
		return
	}
	code, msg := r.checkTarget(req.Topic, req.Partition, req.CurrentLeaderEpoch)
	if code == 0 {
		resp.LeaderEpoch, resp.EndOffset = r.log.EndOffsetForEpoch(req.LeaderEpoch)
	}
	resp.ErrorCode, resp.ErrorMessage = code, msg
	ctx.Respond(resp)
}
