// reassign.go: partition reassignment (Kafka's
// AlterPartitionReassignments, KIP-455).
//
// A ReassignPartitionsRequest gives partitions of one topic a target
// replica list (host ids, of the topic's replication factor, no
// duplicates, every id a host the cluster knows). The controller records
// the reassignment (BeginReassignment): the replicas become the target
// followed by the old replicas not in it, adding_replicas the target ones
// not in the old list, removing_replicas the old ones not in the target.
// Brokers on the adding hosts start followers and catch up; when the
// leader's ISR proposal (AlterPartition) has every adding replica in the
// ISR, or on a change of the live hosts, the controller completes it
// (CompleteReassignment): a leader being removed hands over to the first
// live in-sync target replica, the replicas become the target, the ISR
// keeps its target members, and adding/removing are cleared. Brokers that
// no longer host a replica stop it and delete its log. An empty target
// list cancels a reassignment in progress (CancelReassignment): the
// replicas go back to the old ones.
//
// Every change of the replica set bumps the leader epoch (as Kafka's
// ZooKeeper-based controller did at both steps): a leader replica takes
// its replica set when it starts, so the brokers restart it, and the
// followers truncate and fetch under the new epoch. A reordering that
// keeps the set (a new preferred replica) is written at once and bumps
// only the partition epoch.
//
// The request is all or nothing: when any partition is refused, nothing
// is written, and the partitions that were acceptable report
// INVALID_REQUEST ("not applied"). Per-partition codes:
// UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICATION_FACTOR, INVALID_REQUEST
// (duplicate or unknown hosts; a partition named twice; a cancellation
// that would leave no in-sync replica), REASSIGNMENT_IN_PROGRESS (another
// target is being reached), NO_REASSIGNMENT_IN_PROGRESS (nothing to
// cancel). Top-level: NOT_CONTROLLER, REQUEST_TIMED_OUT.

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

// reassigning reports whether p is being reassigned.
func reassigning(p *messages.PartitionState) bool {
	return len(p.GetAddingReplicas()) > 0 || len(p.GetRemovingReplicas()) > 0
}

// ValidateReassignment checks a non-empty target replica list: exactly rf
// entries, no duplicates, every one a known host id (known[id]). Pure.
func ValidateReassignment(target []int32, rf int32, known map[int32]bool) (messages.ErrorCode, string) {
	for i, id := range target {
		if slices.Contains(target[:i], id) {
			return messages.ErrorCode_ERROR_CODE_INVALID_REQUEST, fmt.Sprintf("target replicas %v: host %d listed twice", target, id)
		}
		if !known[id] {
			return messages.ErrorCode_ERROR_CODE_INVALID_REQUEST, fmt.Sprintf("target replicas %v: no host has id %d", target, id)
		}
	}
	if len(target) != int(rf) {
		return messages.ErrorCode_ERROR_CODE_INVALID_REPLICATION_FACTOR, fmt.Sprintf("target replicas %v: %d replicas, the topic's replication factor is %d", target, len(target), rf)
	}
	return 0, ""
}

// BeginReassignment records the reassignment of p to target (validated
// with ValidateReassignment) in place and reports whether p changed:
//   - target equal to the replicas: nothing to do;
//   - the same set in another order: the replicas are reordered at once
//     (partition epoch +1);
//   - otherwise: replicas = target followed by the old replicas not in it,
//     adding = target − old, removing = old − target, leader epoch and
//     partition epoch +1; leader and ISR unchanged.
//
// With a reassignment in progress, asking for its own target again is a
// success that changes nothing, and another target is refused with
// REASSIGNMENT_IN_PROGRESS (cancel it first). p is unchanged when a code
// is returned. Pure.
func BeginReassignment(p *messages.PartitionState, target []int32) (changed bool, code messages.ErrorCode, msg string) {
	if reassigning(p) {
		current := without(p.GetReplicas(), p.GetRemovingReplicas())
		if slices.Equal(current, target) {
			return false, 0, ""
		}
		return false, messages.ErrorCode_ERROR_CODE_REASSIGNMENT_IN_PROGRESS,
			fmt.Sprintf("partition %d is being reassigned to %v; cancel that first", p.GetPartition(), current)
	}
	old := p.GetReplicas()
	if slices.Equal(old, target) {
		return false, 0, ""
	}
	adding, removing := without(target, old), without(old, target)
	p.Replicas = append(slices.Clone(target), removing...)
	p.PartitionEpoch++
	if len(adding) == 0 && len(removing) == 0 {
		return true, 0, "" // a new order of the same set
	}
	p.AddingReplicas, p.RemovingReplicas = adding, removing
	p.LeaderEpoch++
	return true, 0, ""
}

// CompleteReassignment finishes p's reassignment in place once every
// adding replica is in the ISR, and reports whether it did. The target
// replicas (the replicas less the removing ones) become the replicas; the
// ISR keeps its target members, in order; the leader stays if it is a live
// target replica, else the first target replica that is live and in that
// ISR leads; adding and removing are cleared; leader epoch and partition
// epoch grow by one. It waits (returns false, p untouched) while an adding
// replica is out of the ISR or no target replica could lead, and when live
// is nil (the live hosts are not known yet). Pure.
func CompleteReassignment(p *messages.PartitionState, live map[int32]bool) bool {
	if !reassigning(p) || live == nil {
		return false
	}
	for _, id := range p.GetAddingReplicas() {
		if !slices.Contains(p.GetIsr(), id) {
			return false
		}
	}
	target := without(p.GetReplicas(), p.GetRemovingReplicas())
	isr := intersect(p.GetIsr(), target)
	leader := p.GetLeader()
	if !slices.Contains(target, leader) || !live[leader] {
		leader = firstLive(target, isr, live)
	}
	if leader == -1 {
		return false
	}
	p.Replicas, p.Isr, p.Leader = target, isr, leader
	p.AddingReplicas, p.RemovingReplicas = nil, nil
	p.LeaderEpoch++
	p.PartitionEpoch++
	return true
}

// CancelReassignment reverts p's reassignment in place: the replicas go
// back to the old ones (the replicas less the adding ones, in their
// current order, as Kafka reverts), the ISR keeps its old members, the
// leader stays if it is an old replica, else the first live in-sync old
// replica leads (-1, offline, when none is live); adding and removing are
// cleared; leader epoch and partition epoch grow by one. Codes (p then
// unchanged): NO_REASSIGNMENT_IN_PROGRESS; INVALID_REQUEST when no old
// replica is in the ISR (reverting would need an unclean election). Pure.
func CancelReassignment(p *messages.PartitionState, live map[int32]bool) (messages.ErrorCode, string) {
	if !reassigning(p) {
		return messages.ErrorCode_ERROR_CODE_NO_REASSIGNMENT_IN_PROGRESS, fmt.Sprintf("partition %d is not being reassigned", p.GetPartition())
	}
	original := without(p.GetReplicas(), p.GetAddingReplicas())
	isr := intersect(p.GetIsr(), original)
	if len(isr) == 0 {
		return messages.ErrorCode_ERROR_CODE_INVALID_REQUEST,
			fmt.Sprintf("partition %d: none of the original replicas %v is in the ISR %v; cancelling would need an unclean election", p.GetPartition(), original, p.GetIsr())
	}
	leader := p.GetLeader()
	if !slices.Contains(original, leader) {
		leader = firstLive(original, isr, live)
	}
	p.Replicas, p.Isr, p.Leader = original, isr, leader
	p.AddingReplicas, p.RemovingReplicas = nil, nil
	p.LeaderEpoch++
	p.PartitionEpoch++
	return 0, ""
}

// PlanReassignments applies a request's reassignments to t (in place) and
// returns one result per requested partition, in request order, and
// whether t changed. known holds the host ids the cluster knows; live the
// hosts elections may use. All or nothing: if any partition is refused, t
// is left as it was, and the acceptable ones report INVALID_REQUEST. Pure.
func PlanReassignments(t *messages.TopicMetadata, reqs []*messages.PartitionReassignment, known, live map[int32]bool) (results []*messages.PartitionResult, changed bool) {
	work := proto.Clone(t).(*messages.TopicMetadata)
	seen := map[int32]bool{}
	refused := false
	for _, r := range reqs {
		res := &messages.PartitionResult{Topic: t.GetName(), Partition: r.GetPartition()}
		results = append(results, res)
		part := r.GetPartition()
		switch {
		case part < 0 || int(part) >= len(work.GetPartitions()):
			res.ErrorCode, res.ErrorMessage = messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION, fmt.Sprintf("topic %q has partitions 0..%d", t.GetName(), len(work.GetPartitions())-1)
		case seen[part]:
			res.ErrorCode, res.ErrorMessage = messages.ErrorCode_ERROR_CODE_INVALID_REQUEST, fmt.Sprintf("partition %d named twice", part)
		case len(r.GetReplicas()) == 0:
			res.ErrorCode, res.ErrorMessage = CancelReassignment(work.GetPartitions()[part], live)
			changed = changed || res.ErrorCode == 0
		default:
			res.ErrorCode, res.ErrorMessage = ValidateReassignment(r.GetReplicas(), t.GetReplicationFactor(), known)
			if res.ErrorCode == 0 {
				var c bool
				c, res.ErrorCode, res.ErrorMessage = BeginReassignment(work.GetPartitions()[part], r.GetReplicas())
				changed = changed || c
			}
		}
		seen[part] = true
		refused = refused || res.ErrorCode != 0
	}
	if refused {
		for _, res := range results {
			if res.ErrorCode == 0 {
				res.ErrorCode, res.ErrorMessage = messages.ErrorCode_ERROR_CODE_INVALID_REQUEST, "not applied: another partition of the request was refused"
			}
		}
		return results, false
	}
	if changed {
		t.Partitions = work.Partitions
	}
	return results, changed
}

// onReassignPartitions records (or cancels) reassignments, as a job of
// the admin lane.
func (e *elected) onReassignPartitions(ctx actor.Context, req request, m *messages.ReassignPartitionsRequest) {
	e.submit(ctx, laneAdmin, m.Topic, req, func(actor.Context) work {
		w := e.worker()
		return func(ctx context.Context) func(actor.Context) {
			resp := w.reassign(ctx, m)
			return func(actx actor.Context) { e.c.respond(actx, req, resp) }
		}
	})
}

// reassign records (or cancels) the reassignments of a request and
// returns the answer.
func (w *worker) reassign(ctx context.Context, req *messages.ReassignPartitionsRequest) (resp *messages.ReassignPartitionsResponse) {
	resp = &messages.ReassignPartitionsResponse{CorrelationId: req.CorrelationId}
	if w.live == nil {
		resp.ErrorCode, resp.ErrorMessage = messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT, "the controller has not read the host registrations yet"
		return resp
	}
	rctx, cancel := context.WithTimeout(ctx, w.cfg.RequestTimeout)
	defer cancel()
	names, err := w.cfg.Store.HostNames(rctx)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = codeFor(err), fmt.Sprintf("controller: reassign partitions: %v", err)
		return resp
	}
	known := make(map[int32]bool, len(names))
	for id := range names {
		known[id] = true
	}
	for id := range w.live {
		known[id] = true // registered with an id of its choosing
	}
	for attempt := 1; ; attempt++ {
		t, rev, err := w.cfg.Store.GetTopic(rctx, req.Topic)
		if err == nil && t.GetDeleting() {
			err = fmt.Errorf("%w: %q is being deleted", cluster.ErrUnknownTopic, req.Topic)
		}
		if errors.Is(err, cluster.ErrUnknownTopic) || errors.Is(err, cluster.ErrInvalidTopic) {
			for _, r := range req.Partitions {
				resp.Results = append(resp.Results, &messages.PartitionResult{Topic: req.Topic, Partition: r.Partition,
					ErrorCode: messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION, ErrorMessage: err.Error()})
			}
			return resp
		}
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = codeFor(err), fmt.Sprintf("controller: reassign partitions: %v", err)
			return resp
		}
		before := proto.Clone(t).(*messages.TopicMetadata)
		results, changed := PlanReassignments(t, req.Partitions, known, w.electionLive)
		resp.Results = results
		if !changed {
			return resp
		}
		err = w.cfg.Store.UpdateTopic(rctx, w.fence, t, rev)
		if errors.Is(err, cluster.ErrTopicChanged) && attempt < updateAttempts {
			continue
		}
		if err != nil {
			resp.Results = nil
			resp.ErrorCode, resp.ErrorMessage = codeFor(err), fmt.Sprintf("controller: reassign partitions of %q: %v", req.Topic, err)
			return resp
		}
		w.logReassignments(before, t)
		return resp
	}
}

// completeReassignments completes every reassignment of t that can
// complete (CompleteReassignment) and reports whether any did.
func completeReassignments(t *messages.TopicMetadata, live map[int32]bool) (changed bool) {
	for _, p := range t.GetPartitions() {
		if CompleteReassignment(p, live) {
			changed = true
		}
	}
	return changed
}

// logReassignments logs, at Info, every partition whose replica set or
// reassignment state differs between before and after.
func (w *worker) logReassignments(before, after *messages.TopicMetadata) {
	for i, p := range after.GetPartitions() {
		old := before.GetPartitions()[i]
		if slices.Equal(p.GetReplicas(), old.GetReplicas()) && reassigning(p) == reassigning(old) {
			continue
		}
		log := w.logger.WithFields(logrus.Fields{
			"topic": after.GetName(), "partition": p.GetPartition(), "replicas": p.GetReplicas(), "previous_replicas": old.GetReplicas(),
			"adding": p.GetAddingReplicas(), "removing": p.GetRemovingReplicas(), "leader": p.GetLeader(), "isr": p.GetIsr(),
			"leader_epoch": p.GetLeaderEpoch(), "partition_epoch": p.GetPartitionEpoch(),
		})
		switch {
		case reassigning(p):
			log.Info("controller: partition reassignment started")
		case reassigning(old) && slices.Equal(p.GetReplicas(), without(old.GetReplicas(), old.GetAddingReplicas())):
			log.Info("controller: partition reassignment cancelled")
		case reassigning(old):
			log.Info("controller: partition reassignment completed")
		default:
			log.Info("controller: partition replicas reordered")
		}
	}
}

// without returns the members of xs not in ys, in xs's order (a new slice).
func without(xs, ys []int32) []int32 {
	out := make([]int32, 0, len(xs))
	for _, x := range xs {
		if !slices.Contains(ys, x) {
			out = append(out, x)
		}
	}
	return out
}

// intersect returns the members of xs also in ys, in xs's order.
func intersect(xs, ys []int32) []int32 {
	out := make([]int32, 0, len(xs))
	for _, x := range xs {
		if slices.Contains(ys, x) {
			out = append(out, x)
		}
	}
	return out
}

// firstLive returns the first of candidates that is live and in isr, or -1.
func firstLive(candidates, isr []int32, live map[int32]bool) int32 {
	for _, id := range candidates {
		if live[id] && slices.Contains(isr, id) {
			return id
		}
	}
	return -1
}
