// alter.go: the controller's side of ISR changes (Kafka's AlterPartition,
// KIP-497). A partition leader proposes a new ISR against the partition
// state it knows; the controller commits it (fenced, like every metadata
// write) only if that leader still leads at that leader epoch, nothing
// changed the partition since (its partition epoch), and every member is a
// live replica. Brokers learn the result from the metadata, as everything
// else. An ISR that takes in the last replica a reassignment waits for
// completes the reassignment in the same write (reassign.go). Only the
// host named as the leader may propose (senders.go), and a refusal
// carries no partition state.

package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/messages"
)

// ApplyAlterPartition checks an ISR proposal against a partition's state
// and applies it in place (ISR replaced, partition epoch bumped). It
// changes nothing when it returns a non-zero code. A proposal equal to
// the current ISR at the current epochs is a success that changes nothing
// (a retried request).
func ApplyAlterPartition(p *messages.PartitionState, req *messages.AlterPartitionRequest, live map[int32]bool) (changed bool, code messages.ErrorCode, msg string) {
	switch {
	case p.Leader != req.LeaderId || p.LeaderEpoch != req.LeaderEpoch:
		return false, messages.ErrorCode_ERROR_CODE_FENCED_LEADER_EPOCH,
			fmt.Sprintf("leader %d at epoch %d proposed, but %d leads at epoch %d", req.LeaderId, req.LeaderEpoch, p.Leader, p.LeaderEpoch)
	case p.PartitionEpoch == req.PartitionEpoch+1 && slices.Equal(p.Isr, req.NewIsr):
		return false, 0, "" // already applied: the answer to a retry
	case p.PartitionEpoch != req.PartitionEpoch:
		return false, messages.ErrorCode_ERROR_CODE_INVALID_UPDATE_VERSION,
			fmt.Sprintf("proposal against partition epoch %d; it is %d", req.PartitionEpoch, p.PartitionEpoch)
	}
	if !slices.Contains(req.NewIsr, p.Leader) {
		return false, messages.ErrorCode_ERROR_CODE_INELIGIBLE_REPLICA, fmt.Sprintf("proposed ISR %v lacks the leader %d", req.NewIsr, p.Leader)
	}
	seen := map[int32]bool{}
	for _, id := range req.NewIsr {
		if seen[id] || !slices.Contains(p.Replicas, id) {
			return false, messages.ErrorCode_ERROR_CODE_INELIGIBLE_REPLICA, fmt.Sprintf("proposed ISR %v: %d is a duplicate or not a replica (%v)", req.NewIsr, id, p.Replicas)
		}
		// Only additions must be live; removing a dead host is always fine.
		if !slices.Contains(p.Isr, id) && live != nil && !live[id] {
			return false, messages.ErrorCode_ERROR_CODE_INELIGIBLE_REPLICA, fmt.Sprintf("proposed ISR %v: host %d is not live", req.NewIsr, id)
		}
		seen[id] = true
	}
	if slices.Equal(p.Isr, req.NewIsr) {
		return false, 0, ""
	}
	p.Isr = slices.Clone(req.NewIsr)
	p.PartitionEpoch++
	return true, 0, ""
}

// onAlterPartition commits (or refuses) a leader's ISR proposal, as a
// job of the ISR lane.
func (e *elected) onAlterPartition(ctx actor.Context, req request, m *messages.AlterPartitionRequest) {
	e.submit(ctx, laneISR, m.Topic, req, func(actor.Context) work {
		w := e.worker()
		return func(ctx context.Context) func(actor.Context) {
			resp := w.alterPartition(ctx, m)
			return func(actx actor.Context) { e.c.respond(actx, req, resp) }
		}
	})
}

// alterPartition commits (or refuses) an ISR proposal and returns the
// answer.
func (w *worker) alterPartition(ctx context.Context, req *messages.AlterPartitionRequest) *messages.AlterPartitionResponse {
	rctx, cancel := context.WithTimeout(ctx, w.cfg.RequestTimeout)
	defer cancel()
	resp := &messages.AlterPartitionResponse{CorrelationId: req.CorrelationId}
	for attempt := 0; ; attempt++ {
		t, rev, err := w.cfg.Store.GetTopic(rctx, req.Topic)
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = codeFor(err), err.Error()
			break
		}
		if req.TopicId != "" && t.TopicId != req.TopicId || req.Partition < 0 || int(req.Partition) >= len(t.Partitions) {
			resp.ErrorCode, resp.ErrorMessage = messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION, fmt.Sprintf("no partition %s-%d (topic id %s)", req.Topic, req.Partition, req.TopicId)
			break
		}
		p := t.Partitions[req.Partition]
		before := proto.Clone(t).(*messages.TopicMetadata)
		changed, code, msg := ApplyAlterPartition(p, req, w.electionLive)
		if code != 0 {
			// A refusal carries no partition state.
			resp.ErrorCode, resp.ErrorMessage = code, msg
			break
		}
		if !changed {
			resp.Partition = p
			break
		}
		// The new ISR may hold every replica a reassignment waits for.
		completed := CompleteReassignment(p, w.electionLive)
		err = w.cfg.Store.UpdateTopic(rctx, w.fence, t, rev)
		if errors.Is(err, cluster.ErrTopicChanged) && attempt < 3 {
			continue
		}
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = codeFor(err), err.Error()
			break
		}
		resp.Partition = p
		w.logger.WithFields(logrus.Fields{"topic": req.Topic, "partition": req.Partition, "isr": p.Isr, "partition_epoch": p.PartitionEpoch, "leader": p.Leader}).Info("ISR changed")
		if completed {
			w.logReassignments(before, t)
		}
		break
	}
	if resp.ErrorCode != 0 {
		w.logger.WithFields(logrus.Fields{"topic": req.Topic, "partition": req.Partition, "proposed_isr": req.NewIsr, "code": resp.ErrorCode}).Info("ISR change refused: " + resp.ErrorMessage)
	}
	return resp
}
