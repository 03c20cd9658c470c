// coordinators.go: the broker's part in consumer groups (DESIGN §6). It
// answers FindCoordinator from its metadata cache, has the controller
// create the offsets topic on first use, and runs a group coordinator
// (actors/coordinator) beside each leader replica of the offsets topic on
// this host: spawned with the replica, stopped with it when leadership
// moves, and kept told of the topics' partition counts.
//
// FindCoordinator: group G is held by offsets topic partition
// PartitionFor(G, N); the answer is the host leading that partition and
// the coordinator's actor id there. Error codes: INVALID_GROUP_ID,
// COORDINATOR_NOT_AVAILABLE (no offsets topic yet: its creation is asked
// for; the partition has no leader; or the leader's host is not known
// here yet). A coordinator that is still loading answers its own
// COORDINATOR_LOAD_IN_PROGRESS.
//
// ListGroups: the groups of every coordinator on this host, merged and
// sorted (clients ask every live host). Error codes:
// COORDINATOR_LOAD_IN_PROGRESS (a coordinator here is loading: its groups
// are missing), COORDINATOR_NOT_AVAILABLE (one did not answer); the groups
// of the others are listed all the same. A coordinator whose partition's
// leadership just moved is left out: its groups are listed by the new one.

package broker

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/coordinator"
	"github.com/actorlog/actorlog/messages"
)

// DefaultOffsetsTopicPartitions is the offsets topic's partition count
// when the host does not set one (Kafka's offsets.topic.num.partitions).
const DefaultOffsetsTopicPartitions = 50

// offsetsTopicRetry spaces the broker's requests to create the offsets
// topic.
const offsetsTopicRetry = time.Second

// offsetsTopicAsked reports the end of a request to create the offsets
// topic.
type offsetsTopicAsked struct{}

func (b *Broker) findCoordinator(ctx actor.Context, req *messages.FindCoordinatorRequest) {
	resp := &messages.FindCoordinatorResponse{CorrelationId: req.CorrelationId, HostId: -1, Partition: -1, LeaderEpoch: -1}
	fail := func(code messages.ErrorCode, msg string) {
		resp.ErrorCode, resp.ErrorMessage = code, msg
		ctx.Respond(resp)
	}
	if code, msg := coordinator.ValidateGroupID(req.GroupId); code != 0 {
		fail(code, msg)
		return
	}
	t, ok := b.topics[messages.OffsetsTopic]
	if !ok || t.Deleting || len(t.Partitions) == 0 {
		b.askOffsetsTopic(ctx)
		fail(messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE, fmt.Sprintf("the %s topic is being created", messages.OffsetsTopic))
		return
	}
	part := coordinator.PartitionFor(req.GroupId, len(t.Partitions))
	p := t.Partitions[part]
	resp.Partition, resp.LeaderEpoch = part, p.LeaderEpoch
	h, known := b.hosts[p.Leader]
	if p.Leader < 0 || !known {
		fail(messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE, fmt.Sprintf("partition %d of %s has no live leader", part, messages.OffsetsTopic))
		return
	}
	resp.HostId, resp.Address, resp.ActorId = p.Leader, h.AdvertisedAddress, messages.CoordinatorActorID(part)
	ctx.Respond(resp)
}

// askOffsetsTopic has the controller create the offsets topic, unless a
// request is in flight or one was sent less than offsetsTopicRetry ago.
// The request and its wait run on a goroutine that touches no broker
// state.
func (b *Broker) askOffsetsTopic(ctx actor.Context) {
	if b.offsetsTopicAsking || time.Since(b.offsetsTopicAskedAt) < offsetsTopicRetry {
		return
	}
	b.offsetsTopicAsking, b.offsetsTopicAskedAt = true, time.Now()
	self, root, resolve, timeout := ctx.Self(), ctx.ActorSystem().Root, b.cfg.Controller, b.cfg.AdminTimeout
	log := b.logger.WithFields(logrus.Fields{"topic": messages.OffsetsTopic, "partitions": b.cfg.OffsetsTopicPartitions})
	req := &messages.CreateOffsetsTopicRequest{Partitions: b.cfg.OffsetsTopicPartitions}
	go func() {
		defer root.Send(self, offsetsTopicAsked{})
		var ctrl *actor.PID
		if resolve != nil {
			ctrl = resolve()
		}
		if ctrl == nil {
			log.Info("no controller reachable yet to create the offsets topic")
			return
		}
		res, err := root.RequestFuture(ctrl, req, timeout).Result()
		if err != nil {
			log.WithError(err).Warn("the controller did not answer the offsets topic creation")
			return
		}
		resp, ok := res.(*messages.AdminResponse)
		if !ok {
			log.WithField("answer", fmt.Sprintf("%T", res)).Warn("unexpected answer to the offsets topic creation")
			return
		}
		if err := resp.ErrorCode.Err(resp.ErrorMessage); err != nil {
			log.WithError(err).Warn("the offsets topic was not created")
			return
		}
		log.WithField("replication_factor", resp.GetTopic().GetReplicationFactor()).Info("offsets topic exists")
	}()
}

// spawnCoordinator starts the coordinator beside the leader replica of
// offsets topic partition p (spawned just before, at pid).
func (b *Broker) spawnCoordinator(ctx actor.Context, t *messages.TopicMetadata, p *messages.PartitionState, pid *actor.PID) *actor.PID {
	var m coordinator.Membership
	if b.cfg.NewMembership != nil {
		m = b.cfg.NewMembership(p.Partition)
	}
	cpid, err := ctx.SpawnNamed(b.cfg.childProps(coordinator.Props(coordinator.Config{
		Partition: p.Partition, Partitions: int32(len(t.Partitions)), LeaderEpoch: p.LeaderEpoch,
		Replica: pid, Topics: b.topicPartitionCounts(), Membership: m, Group: b.cfg.Group, Logger: b.cfg.Logger,
	})), messages.CoordinatorActorName(p.Partition))
	if err != nil {
		b.logger.WithError(err).WithField("partition", p.Partition).Error("cannot spawn the group coordinator")
		return nil
	}
	return cpid
}

// topicPartitionCounts is the partition count of every topic not being
// deleted, for the coordinators to check commits against.
func (b *Broker) topicPartitionCounts() map[string]int32 {
	counts := make(map[string]int32, len(b.topics))
	for name, t := range b.topics {
		if !t.Deleting {
			counts[name] = int32(len(t.Partitions))
		}
	}
	return counts
}

// updateCoordinatorTopics tells the coordinators the topics' partition
// counts when they changed. Each map sent is new and never modified.
func (b *Broker) updateCoordinatorTopics(ctx actor.Context) {
	counts := b.topicPartitionCounts()
	if maps.Equal(counts, b.coordinatorTopics) {
		return
	}
	b.coordinatorTopics = counts
	for _, r := range b.replicas {
		if r.coordinator != nil {
			ctx.Send(r.coordinator, &coordinator.Topics{Partitions: counts})
		}
	}
}

// listGroups asks every coordinator of this host for its groups, on a
// goroutine that touches no broker state, and answers with them merged.
func (b *Broker) listGroups(ctx actor.Context, req *messages.ListGroupsRequest) {
	sender := ctx.Sender()
	if sender == nil {
		return
	}
	var crds []*actor.PID
	for key, r := range b.replicas {
		if r.coordinator != nil && !b.stopping[key] {
			crds = append(crds, r.coordinator)
		}
	}
	root, timeout, logger := ctx.ActorSystem().Root, b.cfg.AdminTimeout, b.logger
	go func() {
		futures := make([]*actor.Future, len(crds))
		for i, pid := range crds {
			futures[i] = root.RequestFuture(pid, &messages.ListGroupsRequest{CorrelationId: req.CorrelationId, StatesFilter: req.StatesFilter}, timeout)
		}
		resp := &messages.ListGroupsResponse{CorrelationId: req.CorrelationId}
		var problems []string
		for i, f := range futures {
			res, err := f.Result()
			lr, ok := res.(*messages.ListGroupsResponse)
			switch {
			case errors.Is(err, actor.ErrDeadLetter):
				// Stopped meanwhile: its partition moved.
			case err != nil || !ok:
				logger.WithError(err).WithField("coordinator", crds[i].Id).Warn("a group coordinator did not answer ListGroups")
				resp.ErrorCode = messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE
				problems = append(problems, fmt.Sprintf("%s did not answer", crds[i].Id))
			case lr.ErrorCode == messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR:
			case lr.ErrorCode != 0:
				if resp.ErrorCode == 0 {
					resp.ErrorCode = lr.ErrorCode
				}
				problems = append(problems, lr.ErrorMessage)
			default:
				resp.Groups = append(resp.Groups, lr.Groups...)
			}
		}
		slices.SortFunc(resp.Groups, func(x, y *messages.ListedGroup) int { return strings.Compare(x.GroupId, y.GroupId) })
		resp.ErrorMessage = strings.Join(problems, "; ")
		root.Send(sender, resp)
	}()
}
