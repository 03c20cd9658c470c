// commit.go: the OffsetCommit handler (Kafka's OffsetCommit v8 semantics)
// and the coordinator's write path.
//
// A commit is checked as a whole first: a valid group id hosted here
// (INVALID_GROUP_ID, NOT_COORDINATOR), then the membership core's verdict
// on member and generation (Membership.CanCommit: ILLEGAL_GENERATION and
// the like). Then each partition: the topic and partition must exist
// (UNKNOWN_TOPIC_OR_PARTITION), the offset must not be negative
// (INVALID_REQUEST), the metadata must fit offset.metadata.max.bytes
// (OFFSET_METADATA_TOO_LARGE); refused partitions are not written, the
// others are.
//
// The accepted offsets are written as one batch (one record per
// partition, records.go) to the coordinator's partition through the local
// leader replica with acks=all and the coordinator's leader epoch. The
// replica's answer, once the high watermark passes the batch, is the
// commit's durability point: only then is the in-memory table updated and
// the commit answered. Write failures map to Kafka's coordinator codes
// (commitErrorFor): NOT_COORDINATOR when the replica no longer leads at
// the epoch (the coordinator is then fenced), COORDINATOR_NOT_AVAILABLE
// when too few replicas are in sync, INVALID_COMMIT_OFFSET_SIZE when the
// batch is too large, REQUEST_TIMED_OUT when the in-sync replicas were not
// reached within the commit timeout. After a failure the records may still
// be in the log; a later load replays them, as Kafka's would.

package coordinator

import (
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/replica"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage/record"
)

// write is one offset to commit.
type write struct {
	key   OffsetKey
	value OffsetValue
}

// planCommit checks each partition of req against the topics' partition
// counts and the metadata limit. It returns the offsets to write, in
// request order, and one result per partition of the request in request
// order: the refusals carry their code; the others, a success that holds
// if the write does.
func planCommit(req *messages.OffsetCommitRequest, topics map[string]int32, maxMetadata int, nowMs int64) ([]write, []*messages.PartitionResult) {
	var writes []write
	var results []*messages.PartitionResult
	for _, t := range req.Topics {
		n, known := topics[t.Topic]
		for _, p := range t.Partitions {
			res := &messages.PartitionResult{Topic: t.Topic, Partition: p.Partition}
			switch {
			case !known || p.Partition < 0 || p.Partition >= n:
				res.ErrorCode, res.ErrorMessage = messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION, fmt.Sprintf("no partition %d of topic %q", p.Partition, t.Topic)
			case p.Offset < 0:
				res.ErrorCode, res.ErrorMessage = messages.ErrorCode_ERROR_CODE_INVALID_REQUEST, fmt.Sprintf("offset %d is negative", p.Offset)
			case len(p.Metadata) > maxMetadata:
				res.ErrorCode, res.ErrorMessage = messages.ErrorCode_ERROR_CODE_OFFSET_METADATA_TOO_LARGE, fmt.Sprintf("metadata of %d bytes, at most %d allowed", len(p.Metadata), maxMetadata)
			default:
				writes = append(writes, write{
					key:   OffsetKey{Group: req.GroupId, Topic: t.Topic, Partition: p.Partition},
					value: OffsetValue{Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: p.Metadata, CommitTimestamp: nowMs},
				})
			}
			results = append(results, res)
		}
	}
	return writes, results
}

// commitErrorFor maps the replica's answer to a commit's write to the code
// the committer gets (Kafka's GroupMetadataManager mapping, plus the
// leader epoch codes, which Kafka's in-process append does not have).
func commitErrorFor(code messages.ErrorCode) messages.ErrorCode {
	switch code {
	case messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION,
		messages.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS,
		messages.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS_AFTER_APPEND:
		return messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE
	case messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER,
		messages.ErrorCode_ERROR_CODE_KAFKA_STORAGE_ERROR,
		messages.ErrorCode_ERROR_CODE_FENCED_LEADER_EPOCH,
		messages.ErrorCode_ERROR_CODE_UNKNOWN_LEADER_EPOCH:
		return messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR
	case messages.ErrorCode_ERROR_CODE_MESSAGE_TOO_LARGE,
		messages.ErrorCode_ERROR_CODE_RECORD_LIST_TOO_LARGE,
		messages.ErrorCode_ERROR_CODE_INVALID_FETCH_SIZE:
		return messages.ErrorCode_ERROR_CODE_INVALID_COMMIT_OFFSET_SIZE
	}
	return code
}

// leadershipLost reports whether a replica's answer means it no longer
// leads at the coordinator's epoch.
func leadershipLost(code messages.ErrorCode) bool {
	return code == messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER || code == messages.ErrorCode_ERROR_CODE_FENCED_LEADER_EPOCH
}

func commitError(req *messages.OffsetCommitRequest, code messages.ErrorCode, msg string) *messages.OffsetCommitResponse {
	return &messages.OffsetCommitResponse{CorrelationId: req.CorrelationId, ErrorCode: code, ErrorMessage: msg}
}

func (c *Coordinator) onCommit(ctx actor.Context, req *messages.OffsetCommitRequest) {
	if code, msg := c.owns(req.GroupId); code != 0 {
		c.respond(ctx, commitError(req, code, msg))
		return
	}
	if code, msg := c.membership.CanCommit(req.GroupId, req.MemberId, req.GroupInstanceId, req.GenerationId); code != 0 {
		c.respond(ctx, commitError(req, code, msg))
		return
	}
	now := c.cfg.Now()
	writes, results := planCommit(req, c.topics, c.cfg.MaxMetadataSize, now.UnixMilli())
	resp := &messages.OffsetCommitResponse{CorrelationId: req.CorrelationId, Results: results}
	if len(writes) == 0 {
		c.respond(ctx, resp)
		return
	}
	recs := make([]record.Record, len(writes))
	for i, w := range writes {
		recs[i] = record.Record{Key: EncodeOffsetKey(w.key), Value: EncodeOffsetValue(w.value), Timestamp: now.UnixMilli()}
	}
	sender := ctx.Sender()
	log := c.logger.WithFields(logrus.Fields{"group": req.GroupId, "member": req.MemberId, "generation": req.GenerationId, "offsets": len(writes)})
	e := c.groups.get(req.GroupId)
	if e != nil {
		e.commits++
	}
	c.appendRecords(ctx, recs, func(base int64, code messages.ErrorCode, msg string) {
		if e != nil {
			defer c.commitDone(e)
		}
		if code != 0 {
			log.WithFields(logrus.Fields{"code": code.ShortName(), "error": msg}).Info("offset commit not written")
			resp = commitError(req, code, msg)
		} else {
			for i, w := range writes {
				c.table.Apply(w.key, &w.value, base+int64(i))
			}
			log.WithField("base_offset", base).Debug("offsets committed")
		}
		if sender != nil {
			ctx.Send(sender, resp)
		}
	})
}

// appendRecords writes recs as one batch to the coordinator's partition
// through the local leader replica, with acks=all at the coordinator's
// leader epoch, and calls done on the actor's goroutine: with the offset
// of the first record once the in-sync replicas have the batch, or with
// the code the failure maps to (commitErrorFor) and a detail. A replica
// that no longer leads at the epoch fences the coordinator. If the
// coordinator stops first, done gets NOT_COORDINATOR. The membership core
// writes its group metadata records the same way.
func (c *Coordinator) appendRecords(ctx actor.Context, recs []record.Record, done func(base int64, code messages.ErrorCode, msg string)) {
	batch, err := record.BuildBatch(record.CompressionNone, recs...)
	if err != nil {
		done(-1, messages.ErrorCode_ERROR_CODE_UNKNOWN_SERVER_ERROR, fmt.Sprintf("coordinator: encoding the batch: %v", err))
		return
	}
	id := c.newID()
	c.inflight[id] = done
	req := &messages.ProduceRequest{
		Topic: messages.OffsetsTopic, Partition: c.cfg.Partition, Acks: messages.Acks_ACKS_ALL,
		TimeoutMs: int32(c.cfg.CommitTimeout / time.Millisecond), Records: batch,
		CurrentLeaderEpoch: c.cfg.LeaderEpoch, CorrelationId: id,
	}
	c.requestReplica(ctx, &replica.InternalProduce{Request: req}, c.cfg.CommitTimeout, func(res any, err error) {
		if _, waiting := c.inflight[id]; !waiting {
			return // answered when the coordinator stopped
		}
		delete(c.inflight, id)
		resp, err := answerAs[*messages.ProduceResponse](res, err)
		switch {
		case errors.Is(err, actor.ErrDeadLetter):
			c.fence(ctx, fmt.Sprintf("the replica is gone: %v", err))
			done(-1, messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR, "the partition's leader replica is gone")
		case err != nil:
			done(-1, messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT, fmt.Sprintf("the leader replica did not answer: %v", err))
		case resp.ErrorCode != 0:
			if leadershipLost(resp.ErrorCode) {
				c.fence(ctx, fmt.Sprintf("the replica refused a write: %v", resp.Err()))
			}
			done(-1, commitErrorFor(resp.ErrorCode), resp.ErrorMessage)
		default:
			done(resp.BaseOffset, messages.ErrorCode_ERROR_CODE_UNSPECIFIED, "")
		}
	})
}
