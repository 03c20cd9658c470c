// preferred.go: preferred-leader election (Kafka's ElectLeaders with the
// PREFERRED type) and automatic leader rebalancing
// (auto.leader.rebalance.enable=true).
//
// The preferred replica of a partition is the first of its replica list.
// An ElectLeadersRequest moves leadership to it where it is live (and not
// in controlled shutdown), in the ISR, and not already leading. Its
// per-partition results:
//   - success (no code): the preferred replica leads now, with a new
//     leader epoch and partition epoch;
//   - ELECTION_NOT_NEEDED: it leads already (left out of the results of a
//     request naming no partitions, as Kafka does);
//   - PREFERRED_LEADER_NOT_AVAILABLE: it is not live or not in the ISR;
//   - UNKNOWN_TOPIC_OR_PARTITION: no such topic or partition (or the
//     topic is being deleted);
//   - NOT_CONTROLLER, REQUEST_TIMED_OUT: the write failed.
//
// While elected, the controller also checks the balance every
// LeaderImbalanceCheckInterval (leader.imbalance.check.interval, 300 s
// by default): for every host, the share of the partitions it is the
// preferred replica of that it does not lead; above
// LeaderImbalancePerHostPercentage (leader.imbalance.per.broker.percentage,
// 10 %) it runs preferred elections for those partitions (RebalancePlan).
// Partitions being reassigned are left alone, as in Kafka.
//
// Threading: the check is a message the actor posts to itself with
// time.AfterFunc, tagged with the election term; the elections, on demand
// or by the check, are jobs of the admin lane (lanes.go) whose etcd work
// runs off the actor.

package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/messages"
)

// DefaultLeaderImbalanceCheckInterval is Kafka's
// leader.imbalance.check.interval.seconds default.
const DefaultLeaderImbalanceCheckInterval = 300 * time.Second

// DefaultLeaderImbalancePerHostPercentage is Kafka's
// leader.imbalance.per.broker.percentage default.
const DefaultLeaderImbalancePerHostPercentage = 10

// rebalanceCheck asks the actor of the given term for a leader balance
// check; posted by a timer.
type rebalanceCheck struct{ term int }

// ElectPreferred moves p's leadership to its preferred replica (the first
// of its replicas) in place, if that replica is live (live[id]) and in the
// ISR and not leading yet: leader epoch and partition epoch grow by one
// and the ISR is unchanged. It changes nothing when it returns a code:
// ELECTION_NOT_NEEDED (the preferred replica leads already) or
// PREFERRED_LEADER_NOT_AVAILABLE.
//
// Pure.
func ElectPreferred(p *messages.PartitionState, live map[int32]bool) (code messages.ErrorCode, msg string) {
	if len(p.GetReplicas()) == 0 {
		return messages.ErrorCode_ERROR_CODE_PREFERRED_LEADER_NOT_AVAILABLE, "the partition has no replicas"
	}
	preferred := p.GetReplicas()[0]
	switch {
	case p.GetLeader() == preferred:
		return messages.ErrorCode_ERROR_CODE_ELECTION_NOT_NEEDED, fmt.Sprintf("the preferred replica %d leads already", preferred)
	case !live[preferred]:
		return messages.ErrorCode_ERROR_CODE_PREFERRED_LEADER_NOT_AVAILABLE, fmt.Sprintf("the preferred replica %d is not live", preferred)
	case !slices.Contains(p.GetIsr(), preferred):
		return messages.ErrorCode_ERROR_CODE_PREFERRED_LEADER_NOT_AVAILABLE, fmt.Sprintf("the preferred replica %d is not in the ISR %v", preferred, p.GetIsr())
	}
	p.Leader = preferred
	p.LeaderEpoch++
	p.PartitionEpoch++
	return 0, ""
}

// RebalancePlan decides which partitions an automatic rebalance moves
// back to their preferred replica (Kafka's
// checkAndTriggerAutoLeaderRebalance). For each host, among the partitions
// whose preferred replica it is (topics being deleted and partitions
// being reassigned left out), the imbalance is the share it does not lead;
// when that exceeds percent (strictly), the partitions of that host whose
// preferred replica could lead (live and in the ISR) are in the plan. The
// plan lists topics by name and partitions in ascending order; nil when
// there is nothing to do.
//
// Pure: it reads topics and live and changes neither.
func RebalancePlan(topics []*messages.TopicMetadata, live map[int32]bool, percent float64) []*messages.TopicPartitions {
	type ref struct {
		topic string
		p     *messages.PartitionState
	}
	preferredOf := map[int32][]ref{}
	for _, t := range topics {
		if t.GetDeleting() {
			continue
		}
		for _, p := range t.GetPartitions() {
			if len(p.GetReplicas()) == 0 || reassigning(p) {
				continue
			}
			h := p.GetReplicas()[0]
			preferredOf[h] = append(preferredOf[h], ref{t.GetName(), p})
		}
	}
	move := map[string][]int32{}
	for h, refs := range preferredOf {
		var notLed []ref
		for _, r := range refs {
			if r.p.GetLeader() != h {
				notLed = append(notLed, r)
			}
		}
		if float64(len(notLed))*100 <= percent*float64(len(refs)) {
			continue
		}
		for _, r := range notLed {
			if live[h] && slices.Contains(r.p.GetIsr(), h) {
				move[r.topic] = append(move[r.topic], r.p.GetPartition())
			}
		}
	}
	if len(move) == 0 {
		return nil
	}
	plan := make([]*messages.TopicPartitions, 0, len(move))
	for topic, parts := range move {
		slices.Sort(parts)
		plan = append(plan, &messages.TopicPartitions{Topic: topic, Partitions: parts})
	}
	sort.Slice(plan, func(i, j int) bool { return plan[i].Topic < plan[j].Topic })
	return plan
}

// onElectLeaders runs the preferred elections a client asked for, as a
// job of the admin lane.
func (e *elected) onElectLeaders(ctx actor.Context, req request, m *messages.ElectLeadersRequest) {
	e.submit(ctx, laneAdmin, "", req, func(actor.Context) work {
		w := e.worker()
		return func(ctx context.Context) func(actor.Context) {
			resp := w.electLeaders(ctx, m)
			return func(actx actor.Context) { e.c.respond(actx, req, resp) }
		}
	})
}

// electLeaders runs the preferred elections of a request and returns the
// answer.
func (w *worker) electLeaders(ctx context.Context, req *messages.ElectLeadersRequest) *messages.ElectLeadersResponse {
	resp := &messages.ElectLeadersResponse{CorrelationId: req.CorrelationId}
	if w.live == nil {
		resp.ErrorCode, resp.ErrorMessage = messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT, "the controller has not read the host registrations yet"
		return resp
	}
	rctx, cancel := context.WithTimeout(ctx, w.cfg.RequestTimeout)
	defer cancel()
	results, err := w.electPreferred(rctx, req.Partitions)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = codeFor(err), err.Error()
		w.logger.WithError(err).Info("preferred leader election refused")
	}
	resp.Results = results
	return resp
}

// electPreferred runs ElectPreferred on the named partitions (all when
// none are named; all of a topic named without partitions) and writes
// each topic that changed, fenced, re-reading and retrying a topic that
// changed meanwhile. It returns one result per partition considered (less
// the ELECTION_NOT_NEEDED ones when none were named); the error is for
// the request as a whole (the topics could not be read, or this host is
// no longer the controller).
func (w *worker) electPreferred(ctx context.Context, named []*messages.TopicPartitions) ([]*messages.PartitionResult, error) {
	topics, rev, err := w.cfg.Store.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("controller: preferred leader election: %w", err)
	}
	all := len(named) == 0
	if all {
		for _, t := range topics {
			named = append(named, &messages.TopicPartitions{Topic: t.GetName()})
		}
	}
	byName := map[string]*messages.TopicMetadata{}
	for _, t := range topics {
		byName[t.GetName()] = t
	}
	var results []*messages.PartitionResult
	for _, tp := range named {
		rs, err := w.electPreferredTopic(ctx, byName[tp.Topic], rev, tp)
		if errors.Is(err, cluster.ErrNotController) {
			return results, err
		}
		for _, r := range rs {
			if !all || r.ErrorCode != messages.ErrorCode_ERROR_CODE_ELECTION_NOT_NEEDED {
				results = append(results, r)
			}
		}
	}
	return results, nil
}

// electPreferredTopic runs the preferred elections of one topic's
// partitions (all when tp names none) and writes the topic if any
// changed. t is the topic as read at rev (nil: unknown). Only
// ErrNotController is returned as an error; other write failures are
// reported in the results of the partitions that would have changed.
func (w *worker) electPreferredTopic(ctx context.Context, t *messages.TopicMetadata, rev int64, tp *messages.TopicPartitions) ([]*messages.PartitionResult, error) {
	for attempt := 1; ; attempt++ {
		results := make([]*messages.PartitionResult, 0, len(tp.Partitions))
		if t == nil || t.GetDeleting() {
			parts := tp.Partitions
			if len(parts) == 0 {
				parts = []int32{-1}
			}
			for _, p := range parts {
				results = append(results, &messages.PartitionResult{Topic: tp.Topic, Partition: p,
					ErrorCode: messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION, ErrorMessage: fmt.Sprintf("no topic %q", tp.Topic)})
			}
			return results, nil
		}
		before := proto.Clone(t).(*messages.TopicMetadata)
		parts := tp.Partitions
		if len(parts) == 0 {
			for _, p := range t.GetPartitions() {
				parts = append(parts, p.GetPartition())
			}
		}
		var elected []*messages.PartitionResult
		for _, part := range parts {
			r := &messages.PartitionResult{Topic: tp.Topic, Partition: part}
			results = append(results, r)
			if part < 0 || int(part) >= len(t.GetPartitions()) {
				r.ErrorCode, r.ErrorMessage = messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION, fmt.Sprintf("topic %q has partitions 0..%d", tp.Topic, len(t.GetPartitions())-1)
				continue
			}
			r.ErrorCode, r.ErrorMessage = ElectPreferred(t.GetPartitions()[part], w.electionLive)
			if r.ErrorCode == 0 {
				elected = append(elected, r)
			}
		}
		if len(elected) == 0 {
			return results, nil
		}
		err := w.cfg.Store.UpdateTopic(ctx, w.fence, t, rev)
		if err == nil {
			w.logElections(before, t)
			return results, nil
		}
		if errors.Is(err, cluster.ErrNotController) {
			return results, err
		}
		if errors.Is(err, cluster.ErrTopicChanged) && attempt < updateAttempts {
			var gerr error
			t, rev, gerr = w.cfg.Store.GetTopic(ctx, tp.Topic)
			if gerr == nil || errors.Is(gerr, cluster.ErrUnknownTopic) {
				continue
			}
			err = gerr
		}
		for _, r := range elected {
			r.ErrorCode, r.ErrorMessage = codeFor(err), fmt.Sprintf("controller: preferred leader election in topic %q: %v", tp.Topic, err)
		}
		return results, nil
	}
}

// scheduleRebalanceCheck arms the next leader balance check of this term.
func (e *elected) scheduleRebalanceCheck(ctx actor.Context) {
	self, root, term := ctx.Self(), ctx.ActorSystem().Root, e.term
	time.AfterFunc(e.c.cfg.LeaderImbalanceCheckInterval, func() { root.Send(self, rebalanceCheck{term: term}) })
}

// onRebalanceCheck queues a job of the admin lane that runs the preferred
// elections RebalancePlan asks for, then arms the next check (a check of
// an ended term is dropped, and with it the term's chain of checks).
func (e *elected) onRebalanceCheck(ctx actor.Context) {
	e.c.submit(ctx, &job{lane: laneAdmin, start: func(ctx actor.Context) work {
		if e.live == nil {
			e.scheduleRebalanceCheck(ctx)
			return nil
		}
		w := e.worker()
		return func(ctx context.Context) func(actor.Context) {
			w.rebalance(ctx)
			return e.scheduleRebalanceCheck
		}
	}})
}

// rebalance runs the preferred elections RebalancePlan asks for.
func (w *worker) rebalance(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, w.cfg.RequestTimeout)
	defer cancel()
	topics, _, err := w.cfg.Store.ListTopics(rctx)
	if err != nil {
		w.logger.WithError(err).Warn("controller: leader balance check: cannot read the topics")
		return
	}
	plan := RebalancePlan(topics, w.electionLive, w.cfg.LeaderImbalancePerHostPercentage)
	if len(plan) == 0 {
		return
	}
	w.logger.WithField("partitions", planText(plan)).Info("controller: leader imbalance above the threshold; electing preferred leaders")
	results, err := w.electPreferred(rctx, plan)
	if err != nil {
		w.logger.WithError(err).Warn("controller: automatic preferred leader election failed")
	}
	for _, r := range results {
		if r.ErrorCode != 0 {
			w.logger.WithFields(logrus.Fields{"topic": r.Topic, "partition": r.Partition, "code": r.ErrorCode.ShortName()}).Info("controller: automatic preferred leader election not done: " + r.ErrorMessage)
		}
	}
}

// planText renders a plan for the log: "topic:0,1 other:3".
func planText(plan []*messages.TopicPartitions) []string {
	out := make([]string, 0, len(plan))
	for _, tp := range plan {
		out = append(out, fmt.Sprintf("%s:%v", tp.Topic, tp.Partitions))
	}
	return out
}
