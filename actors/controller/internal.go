// internal.go: the internal offsets topic (messages.OffsetsTopic). Brokers
// ask for it on the first FindCoordinator (CreateOffsetsTopicRequest), as
// Kafka creates __consumer_offsets on first use; the controller chooses
// its replication factor and configs. Users may not create it themselves,
// delete it, or add partitions to it (that would move groups to other
// coordinators): INVALID_TOPIC_EXCEPTION. Its configs are read-only to
// users (retention.ms=1 would delete committed offsets): POLICY_VIOLATION.
// Only hosts may ask for it (senders.go): CLUSTER_AUTHORIZATION_FAILED.

package controller

import (
	"context"
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage"
)

// ErrInternalTopic means an admin request would create, delete,
// repartition or reconfigure an internal topic. A refused config change
// also wraps cluster.ErrPolicyViolation.
var ErrInternalTopic = errors.New("controller: operation not allowed on an internal topic")

// OffsetsTopicReplicationFactor is the offsets topic's replication factor
// when that many hosts are live (Kafka's
// offsets.topic.replication.factor); with fewer, it has one replica per
// live host.
const OffsetsTopicReplicationFactor = 3

// OffsetsTopicSegmentBytes is the offsets topic's segment size (Kafka's
// offsets.topic.segment.bytes).
const OffsetsTopicSegmentBytes = 100 << 20

// OffsetsTopicConfigs are the offsets topic's config overrides. As in
// Kafka, the topic is compacted (cleanup.policy=compact), keeping each
// key's last record (every record a coordinator writes has a key). Its
// retention by time and size is off too, so committed offsets never
// expire with log retention whichever policy a log applies (a coordinator
// replays the log from its start; compaction bounds that replay). An
// offsets topic created before cleanup.policy existed keeps its stored
// configs (createOffsetsTopic returns an existing topic as it is).
func OffsetsTopicConfigs() map[string]string {
	return map[string]string{
		cluster.ConfigCleanupPolicy:  storage.CleanupPolicyCompact,
		cluster.ConfigRetentionMs:    "-1",
		cluster.ConfigRetentionBytes: "-1",
		cluster.ConfigSegmentBytes:   fmt.Sprint(OffsetsTopicSegmentBytes),
	}
}

// refuseInternal refuses user admin requests that would create, delete,
// repartition or reconfigure an internal topic.
func refuseInternal(msg proto.Message) error {
	if m, ok := msg.(*messages.AlterTopicConfigsRequest); ok && messages.IsInternalTopic(m.Name) {
		return fmt.Errorf("%w: %w: %s is internal: its configs are read-only (set by the cluster; a short retention would delete committed offsets)",
			cluster.ErrPolicyViolation, ErrInternalTopic, m.Name)
	}
	var name, op string
	switch m := msg.(type) {
	case *messages.CreateTopicRequest:
		name, op = m.Name, "created by hand: the cluster creates it on the first FindCoordinator"
	case *messages.DeleteTopicRequest:
		name, op = m.Name, "deleted: it holds the consumer groups' committed offsets"
	case *messages.CreatePartitionsRequest:
		name, op = m.Name, "given more partitions: groups would move to other coordinators"
	}
	if name != "" && messages.IsInternalTopic(name) {
		return fmt.Errorf("%w: %s is internal and cannot be %s", ErrInternalTopic, name, op)
	}
	return nil
}

// createOffsetsTopic creates the offsets topic with m.Partitions
// partitions, min(OffsetsTopicReplicationFactor, live hosts) replicas
// (capped by Config.MaxReplicationFactor) and OffsetsTopicConfigs, or
// returns it as it is if it exists.
func (w *worker) createOffsetsTopic(ctx context.Context, m *messages.CreateOffsetsTopicRequest) (*messages.TopicMetadata, error) {
	if t, _, err := w.cfg.Store.GetTopic(ctx, messages.OffsetsTopic); err == nil {
		return t, nil
	} else if !errors.Is(err, cluster.ErrUnknownTopic) {
		return nil, err
	}
	hosts, err := w.liveHosts(ctx)
	if err != nil {
		return nil, err
	}
	rf := min(OffsetsTopicReplicationFactor, int32(len(hosts)))
	if w.cfg.MaxReplicationFactor > 0 {
		rf = min(rf, w.cfg.MaxReplicationFactor)
	}
	t, err := w.newTopic(ctx, messages.OffsetsTopic, m.Partitions, rf, OffsetsTopicConfigs())
	if errors.Is(err, cluster.ErrTopicExists) {
		// Another broker's request won the race.
		t, _, err = w.cfg.Store.GetTopic(ctx, messages.OffsetsTopic)
	}
	if err != nil {
		return nil, fmt.Errorf("controller: create %s: %w", messages.OffsetsTopic, err)
	}
	w.logger.WithFields(logrus.Fields{"topic": t.Name, "partitions": len(t.Partitions), "replication_factor": t.ReplicationFactor}).Info("created the internal offsets topic")
	return t, nil
}
