// kafkaadmin.go holds kafkaAdminBackend, the host's kafka.AdminBackend:
// the Kafka listener's topic admin APIs (CreateTopics, DeleteTopics,
// CreatePartitions, DescribeConfigs, AlterConfigs,
// IncrementalAlterConfigs) as the native admin requests of
// messages/admin.proto (CreateTopicRequest, DeleteTopicRequest,
// CreatePartitionsRequest, AlterTopicConfigsRequest), sent to the LOCAL
// broker actor, which forwards them to the controller (as the native
// client's admin calls do). NOT_CONTROLLER (no controller reachable yet,
// an election in progress) is retried with backoff until the request's
// context ends, as Kafka's admin clients and actorlog's own do. A change
// is answered once the broker's cache shows it (awaitCache), so a client
// reads its own writes through this host. A topic created with -1 (and an
// auto-created one) gets the host's --num-partitions and
// --default-replication-factor.
//
// It is also the kafka.PartitionAdminBackend (at the end of this file):
// ElectLeaders as messages.ElectLeadersRequest (preferred elections),
// AlterPartitionReassignments as messages.ReassignPartitionsRequest (target
// ids no host has are refused here with INVALID_REPLICA_ASSIGNMENT), and
// ListPartitionReassignments from the broker's cache (the partitions with
// adding or removing replicas).
//
// validate_only is answered here, without the controller, by the
// cluster package's own checks (name, partition count, replication factor
// against the live hosts, configs) and the broker's metadata cache (does
// the topic exist). Topic configs are read from the broker's cache: every
// key the cluster knows, with its override or its default (storage's
// defaults, which are Kafka's, and the cluster's).

package host

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/actors/broker"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/kafka"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage"
)

// Defaults of a CreateTopics topic that gives -1 when the host's
// --num-partitions and --default-replication-factor are not set: Kafka's
// num.partitions and default.replication.factor defaults, as `actorlog
// topics create`'s.
const (
	kafkaDefaultPartitions        = 1
	kafkaDefaultReplicationFactor = 1
)

// kafkaAdminBackend is the kafka.AdminBackend (and
// kafka.PartitionAdminBackend, at the end of this file) of a host, over the local
// broker (meta's ask). Safe for concurrent use.
type kafkaAdminBackend struct {
	meta *kafkaBackend
	log  *logrus.Entry
	// partitions and rf are what a topic created with -1 gets (the
	// host's --num-partitions and --default-replication-factor).
	partitions, rf int32
}

var _ kafka.AdminBackend = (*kafkaAdminBackend)(nil)

// newKafkaAdmin returns the admin backend asking meta's broker; a topic
// created with -1 gets partitions and rf (0: Kafka's defaults, 1).
func newKafkaAdmin(meta *kafkaBackend, partitions int32, rf int16, log *logrus.Entry) *kafkaAdminBackend {
	a := &kafkaAdminBackend{meta: meta, log: log, partitions: partitions, rf: int32(rf)}
	if a.partitions <= 0 {
		a.partitions = kafkaDefaultPartitions
	}
	if a.rf <= 0 {
		a.rf = kafkaDefaultReplicationFactor
	}
	return a
}

// Kafka admin bounds.
const (
	// adminRetryMax bounds the backoff between NOT_CONTROLLER retries.
	adminRetryMax = time.Second
	// kafkaAdminTimeout bounds one topic's admin call, NOT_CONTROLLER
	// retries included (the handlers' context is the connection's, which
	// may live for hours): past it the topic gets the last answer.
	kafkaAdminTimeout = 30 * time.Second
)

// admin sends msg to the local broker (forwarded to the controller) and
// returns its answer, retrying NOT_CONTROLLER until ctx ends. A broker
// that does not answer in time is REQUEST_TIMED_OUT, not an error: that
// is the topic's outcome, not a local fault.
func (a *kafkaAdminBackend) admin(ctx context.Context, msg proto.Message) (*messages.AdminResponse, error) {
	res, err := a.askController(ctx, msg)
	if err != nil {
		return nil, err
	}
	resp, ok := res.(*messages.AdminResponse)
	if !ok {
		return nil, fmt.Errorf("host: Kafka admin %T: the broker answered %T", msg, res)
	}
	return resp, nil
}

// controllerReply is an answer of the controller to an admin request
// (AdminResponse, ElectLeadersResponse, ReassignPartitionsResponse).
type controllerReply interface {
	proto.Message
	GetErrorCode() messages.ErrorCode
	GetErrorMessage() string
}

// askController is admin for any admin request: it returns the
// controller's answer, of msg's reply type (messages.ErrorReply),
// retrying NOT_CONTROLLER until ctx ends; a broker that does not answer
// in time is REQUEST_TIMED_OUT.
func (a *kafkaAdminBackend) askController(ctx context.Context, msg proto.Message) (controllerReply, error) {
	ctx, cancel := context.WithTimeout(ctx, kafkaAdminTimeout)
	defer cancel()
	backoff := 50 * time.Millisecond
	for {
		res, err := a.meta.ask(ctx, msg)
		if err != nil {
			if errors.Is(err, errBrokerDown) {
				return nil, fmt.Errorf("host: Kafka admin %T: %w", msg, err)
			}
			a.log.WithError(err).WithField("request", fmt.Sprintf("%T", msg)).Warn("Kafka admin: the broker did not answer; answering REQUEST_TIMED_OUT")
			timedOut, ok := messages.ErrorReply(msg, 0, messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT, err.Error()).(controllerReply)
			if !ok {
				return nil, fmt.Errorf("host: Kafka admin %T: no error reply: %w", msg, err)
			}
			return timedOut, nil
		}
		resp, ok := res.(controllerReply)
		if !ok {
			return nil, fmt.Errorf("host: Kafka admin %T: the broker answered %T", msg, res)
		}
		if resp.GetErrorCode() != messages.ErrorCode_ERROR_CODE_NOT_CONTROLLER {
			return resp, nil
		}
		select {
		case <-ctx.Done():
			return resp, nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, adminRetryMax)
	}
}

// adminResult maps a native admin answer to Kafka's (the codes are Kafka's).
func adminResult(resp *messages.AdminResponse) kafka.AdminResult {
	return kafka.AdminResult{ErrorCode: int16(resp.ErrorCode), ErrorMessage: resp.ErrorMessage}
}

// adminRefused is the result for a local check's error.
func adminRefused(err error) kafka.AdminResult {
	return kafka.AdminResult{ErrorCode: int16(adminCode(err)), ErrorMessage: err.Error()}
}

// adminCode maps the cluster package's validation errors to the codes the
// controller answers for them.
func adminCode(err error) messages.ErrorCode {
	switch {
	case errors.Is(err, cluster.ErrInvalidTopic):
		return messages.ErrorCode_ERROR_CODE_INVALID_TOPIC_EXCEPTION
	case errors.Is(err, cluster.ErrTopicExists):
		return messages.ErrorCode_ERROR_CODE_TOPIC_ALREADY_EXISTS
	case errors.Is(err, cluster.ErrUnknownTopic):
		return messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION
	case errors.Is(err, cluster.ErrInvalidPartitions):
		return messages.ErrorCode_ERROR_CODE_INVALID_PARTITIONS
	case errors.Is(err, cluster.ErrInvalidReplicationFactor):
		return messages.ErrorCode_ERROR_CODE_INVALID_REPLICATION_FACTOR
	case errors.Is(err, cluster.ErrInvalidConfig):
		return messages.ErrorCode_ERROR_CODE_INVALID_CONFIG
	case errors.Is(err, cluster.ErrPolicyViolation):
		return messages.ErrorCode_ERROR_CODE_POLICY_VIOLATION
	}
	return messages.ErrorCode_ERROR_CODE_UNKNOWN_SERVER_ERROR
}

// cache returns the broker's metadata cache for names (the hosts always),
// waiting until the broker has read the store once.
func (a *kafkaAdminBackend) cache(ctx context.Context, names ...string) (*broker.KafkaMetadata, error) {
	return a.cacheFor(ctx, &broker.KafkaMetadataRequest{Topics: names})
}

// cacheFor is cache for any request of the broker's cache (AllTopics).
func (a *kafkaAdminBackend) cacheFor(ctx context.Context, req *broker.KafkaMetadataRequest) (*broker.KafkaMetadata, error) {
	ctx, cancel := context.WithTimeout(ctx, kafkaAskTimeout)
	defer cancel()
	for {
		res, err := a.meta.ask(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("host: Kafka admin: metadata: %w", err)
		}
		md, ok := res.(*broker.KafkaMetadata)
		if !ok {
			return nil, fmt.Errorf("host: Kafka admin: metadata: the broker answered %T", res)
		}
		if md.Synced {
			return md, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("host: Kafka admin: the broker has not read the metadata store yet: %w", ctx.Err())
		case <-time.After(kafkaSyncPoll):
		}
	}
}

// topic returns name's record from the cache, nil when it is unknown or
// being deleted.
func (a *kafkaAdminBackend) topic(ctx context.Context, name string) (*messages.TopicMetadata, error) {
	md, err := a.cache(ctx, name)
	if err != nil {
		return nil, err
	}
	for _, t := range md.Topics {
		if t.GetName() == name && !t.GetDeleting() {
			return t, nil
		}
	}
	return nil, nil
}

// awaitCache waits until the broker's cache shows name as done says (the
// topic's record, nil when absent or being deleted), at most
// kafkaAskTimeout: a change the controller has stored reaches the cache
// through the broker's watch a moment later, and a client that changes a
// topic and then describes it, or alters it again (IncrementalAlterConfigs
// reads the overrides it changes), must see its own change. Past the
// bound (another change of the topic got in between) it answers anyway.
func (a *kafkaAdminBackend) awaitCache(ctx context.Context, name string, done func(t *messages.TopicMetadata) bool) {
	ctx, cancel := context.WithTimeout(ctx, kafkaAskTimeout)
	defer cancel()
	for {
		t, err := a.topic(ctx, name)
		if err == nil && done(t) {
			return
		}
		select {
		case <-ctx.Done():
			a.log.WithError(err).WithField("topic", name).Debug("Kafka admin: the broker's cache does not show the change yet; answering anyway")
			return
		case <-time.After(kafkaSyncPoll):
		}
	}
}

// CreateTopic implements kafka.AdminBackend.
func (a *kafkaAdminBackend) CreateTopic(ctx context.Context, q kafka.CreateTopicQuery) (kafka.CreateTopicResult, error) {
	parts, rf := q.Partitions, int32(q.ReplicationFactor)
	if parts == -1 {
		parts = a.partitions
	}
	if rf == -1 {
		rf = a.rf
	}
	if q.ValidateOnly {
		return a.validateCreate(ctx, q.Name, parts, rf, q.Configs)
	}
	resp, err := a.admin(ctx, &messages.CreateTopicRequest{Name: q.Name, Partitions: parts, ReplicationFactor: rf, Configs: q.Configs})
	if err != nil {
		return kafka.CreateTopicResult{}, err
	}
	out := kafka.CreateTopicResult{AdminResult: adminResult(resp)}
	if t := resp.GetTopic(); out.ErrorCode == 0 && t != nil {
		out.Partitions, out.ReplicationFactor = int32(len(t.GetPartitions())), int16(t.GetReplicationFactor())
		out.Configs = topicConfigEntries(t.GetConfigs())
		id, err := kafka.ParseTopicID(t.GetTopicId())
		if err != nil {
			a.log.WithError(err).WithField("topic", q.Name).Warn("created topic has a malformed id: answered without one")
		}
		out.ID = id
		a.awaitCache(ctx, q.Name, func(t *messages.TopicMetadata) bool { return t != nil })
	}
	return out, nil
}

// validateCreate checks a topic's creation as the controller would,
// without creating it: the name, the configs, the partition count and
// the replication factor against the live hosts, and that no topic has
// the name.
func (a *kafkaAdminBackend) validateCreate(ctx context.Context, name string, parts, rf int32, configs map[string]string) (kafka.CreateTopicResult, error) {
	if err := cluster.ValidateTopicName(name); err != nil {
		return kafka.CreateTopicResult{AdminResult: adminRefused(err)}, nil
	}
	if err := cluster.ValidateTopicConfigs(configs); err != nil {
		return kafka.CreateTopicResult{AdminResult: adminRefused(err)}, nil
	}
	md, err := a.cache(ctx, name)
	if err != nil {
		return kafka.CreateTopicResult{}, err
	}
	if len(md.Topics) > 0 {
		return kafka.CreateTopicResult{AdminResult: adminRefused(fmt.Errorf("%w: %q", cluster.ErrTopicExists, name))}, nil
	}
	hosts := make([]int32, 0, len(md.Hosts))
	for _, h := range md.Hosts {
		hosts = append(hosts, h.GetHostId())
	}
	if rf < 1 || rf > int32(len(hosts)) {
		return kafka.CreateTopicResult{AdminResult: adminRefused(fmt.Errorf("%w: %d, want 1 to %d (the live hosts)", cluster.ErrInvalidReplicationFactor, rf, len(hosts)))}, nil
	}
	if parts < 1 || parts > cluster.MaxPartitionsPerTopic {
		return kafka.CreateTopicResult{AdminResult: adminRefused(fmt.Errorf("%w: %d, want 1 to %d", cluster.ErrInvalidPartitions, parts, cluster.MaxPartitionsPerTopic))}, nil
	}
	return kafka.CreateTopicResult{Partitions: parts, ReplicationFactor: int16(rf), Configs: topicConfigEntries(cluster.NormalizeTopicConfigs(configs))}, nil
}

// DeleteTopic implements kafka.AdminBackend.
func (a *kafkaAdminBackend) DeleteTopic(ctx context.Context, name string) (kafka.AdminResult, error) {
	resp, err := a.admin(ctx, &messages.DeleteTopicRequest{Name: name})
	if err != nil {
		return kafka.AdminResult{}, err
	}
	if resp.ErrorCode == messages.ErrorCode_ERROR_CODE_UNSPECIFIED {
		a.awaitCache(ctx, name, func(t *messages.TopicMetadata) bool { return t == nil })
	}
	return adminResult(resp), nil
}

// CreatePartitions implements kafka.AdminBackend.
func (a *kafkaAdminBackend) CreatePartitions(ctx context.Context, q kafka.CreatePartitionsQuery) (kafka.AdminResult, error) {
	if !q.ValidateOnly {
		resp, err := a.admin(ctx, &messages.CreatePartitionsRequest{Name: q.Name, Total: q.Total})
		if err != nil {
			return kafka.AdminResult{}, err
		}
		if resp.ErrorCode == messages.ErrorCode_ERROR_CODE_UNSPECIFIED {
			a.awaitCache(ctx, q.Name, func(t *messages.TopicMetadata) bool { return t != nil && len(t.GetPartitions()) >= int(q.Total) })
		}
		return adminResult(resp), nil
	}
	t, err := a.topic(ctx, q.Name)
	switch {
	case err != nil:
		return kafka.AdminResult{}, err
	case t == nil:
		return adminRefused(fmt.Errorf("%w: %q", cluster.ErrUnknownTopic, q.Name)), nil
	case q.Total > cluster.MaxPartitionsPerTopic:
		return adminRefused(fmt.Errorf("%w: %d, want at most %d", cluster.ErrInvalidPartitions, q.Total, cluster.MaxPartitionsPerTopic)), nil
	case q.Total <= int32(len(t.GetPartitions())):
		return adminRefused(fmt.Errorf("%w: topic %q has %d partitions; the new total %d must be larger", cluster.ErrInvalidPartitions, q.Name, len(t.GetPartitions()), q.Total)), nil
	}
	return kafka.AdminResult{}, nil
}

// TopicConfigs implements kafka.AdminBackend from the broker's cache.
func (a *kafkaAdminBackend) TopicConfigs(ctx context.Context, name string) (kafka.TopicConfigsResult, error) {
	if err := cluster.ValidateTopicName(name); err != nil {
		return kafka.TopicConfigsResult{AdminResult: adminRefused(err)}, nil
	}
	t, err := a.topic(ctx, name)
	switch {
	case err != nil:
		return kafka.TopicConfigsResult{}, err
	case t == nil:
		return kafka.TopicConfigsResult{AdminResult: adminRefused(fmt.Errorf("%w: %q", cluster.ErrUnknownTopic, name))}, nil
	}
	return kafka.TopicConfigsResult{Configs: topicConfigEntries(t.GetConfigs())}, nil
}

// AlterTopicConfigs implements kafka.AdminBackend: the configs are
// checked here first, so a bad value never reaches the controller.
func (a *kafkaAdminBackend) AlterTopicConfigs(ctx context.Context, q kafka.AlterConfigsQuery) (kafka.AdminResult, error) {
	if err := cluster.ValidateTopicConfigs(q.Configs); err != nil {
		return adminRefused(err), nil
	}
	if q.ValidateOnly {
		t, err := a.topic(ctx, q.Name)
		switch {
		case err != nil:
			return kafka.AdminResult{}, err
		case t == nil:
			return adminRefused(fmt.Errorf("%w: %q", cluster.ErrUnknownTopic, q.Name)), nil
		}
		return kafka.AdminResult{}, nil
	}
	resp, err := a.admin(ctx, &messages.AlterTopicConfigsRequest{Name: q.Name, Configs: maps.Clone(q.Configs)})
	if err != nil {
		return kafka.AdminResult{}, err
	}
	if resp.ErrorCode == messages.ErrorCode_ERROR_CODE_UNSPECIFIED {
		want := resp.GetTopic().GetConfigs()
		a.awaitCache(ctx, q.Name, func(t *messages.TopicMetadata) bool { return t != nil && maps.Equal(t.GetConfigs(), want) })
	}
	return adminResult(resp), nil
}

// topicConfigDefaults are the values of the topic config keys a topic
// without overrides has: storage's defaults (Kafka's) and the cluster's.
var topicConfigDefaults = map[string]string{
	cluster.ConfigRetentionMs:                 strconv.FormatInt(storage.DefaultRetention.Milliseconds(), 10),
	cluster.ConfigRetentionBytes:              strconv.FormatInt(storage.DefaultRetentionBytes, 10),
	cluster.ConfigSegmentBytes:                strconv.FormatInt(storage.DefaultSegmentBytes, 10),
	cluster.ConfigSegmentMs:                   strconv.FormatInt(storage.DefaultSegmentAge.Milliseconds(), 10),
	cluster.ConfigMaxMessageBytes:             strconv.Itoa(storage.DefaultMaxMessageBytes),
	cluster.ConfigFlushPolicy:                 "never",
	cluster.ConfigMinInsyncReplicas:           "1",
	cluster.ConfigMessageTimestampType:        cluster.TimestampCreateTime,
	cluster.ConfigUncleanLeaderElectionEnable: "false",
	cluster.ConfigCleanupPolicy:               storage.CleanupPolicyDelete,
	cluster.ConfigMinCleanableDirtyRatio:      strconv.FormatFloat(storage.DefaultMinCleanableDirtyRatio, 'f', -1, 64),
	cluster.ConfigMinCompactionLagMs:          "0",
	cluster.ConfigMaxCompactionLagMs:          strconv.FormatInt(math.MaxInt64, 10),
	cluster.ConfigDeleteRetentionMs:           strconv.FormatInt(storage.DefaultDeleteRetention.Milliseconds(), 10),
}

// topicConfigTypes are the Kafka config types of the keys (DescribeConfigs
// v3+); a key not here is a STRING.
var topicConfigTypes = map[string]kmsg.ConfigType{
	cluster.ConfigRetentionMs:                 kmsg.ConfigTypeLong,
	cluster.ConfigRetentionBytes:              kmsg.ConfigTypeLong,
	cluster.ConfigSegmentBytes:                kmsg.ConfigTypeInt,
	cluster.ConfigSegmentMs:                   kmsg.ConfigTypeLong,
	cluster.ConfigMaxMessageBytes:             kmsg.ConfigTypeInt,
	cluster.ConfigMinInsyncReplicas:           kmsg.ConfigTypeInt,
	cluster.ConfigUncleanLeaderElectionEnable: kmsg.ConfigTypeBoolean,
	cluster.ConfigCleanupPolicy:               kmsg.ConfigTypeList,
	cluster.ConfigMinCleanableDirtyRatio:      kmsg.ConfigTypeDouble,
	cluster.ConfigMinCompactionLagMs:          kmsg.ConfigTypeLong,
	cluster.ConfigMaxCompactionLagMs:          kmsg.ConfigTypeLong,
	cluster.ConfigDeleteRetentionMs:           kmsg.ConfigTypeLong,
}

// topicConfigEntries lists every topic config key the cluster knows,
// sorted, with the override in overrides or its default. Pure.
func topicConfigEntries(overrides map[string]string) []kafka.ConfigEntry {
	keys := cluster.TopicConfigKeys()
	out := make([]kafka.ConfigEntry, 0, len(keys))
	for _, k := range keys {
		e := kafka.ConfigEntry{Name: k, Value: topicConfigDefaults[k], Default: true, DefaultValue: topicConfigDefaults[k], Type: int8(kmsg.ConfigTypeString)}
		if t, ok := topicConfigTypes[k]; ok {
			e.Type = int8(t)
		}
		if v, ok := overrides[k]; ok {
			e.Value, e.Default = v, false
		}
		if k == cluster.ConfigFlushPolicy {
			e.Doc = "actorlog's fsync policy (replaces flush.messages / flush.ms): never, batch, or a Go duration"
		}
		out = append(out, e)
	}
	return out
}

var _ kafka.PartitionAdminBackend = (*kafkaAdminBackend)(nil)

// ElectPreferredLeaders implements kafka.PartitionAdminBackend with the
// controller's preferred-leader election (messages.ElectLeadersRequest,
// as `actorlog topics elect-leaders`), answered once the broker's cache
// shows the new leaders.
func (a *kafkaAdminBackend) ElectPreferredLeaders(ctx context.Context, topics []kafka.TopicPartitions) (kafka.ElectionResult, error) {
	req := &messages.ElectLeadersRequest{}
	for _, tp := range topics {
		req.Partitions = append(req.Partitions, &messages.TopicPartitions{Topic: tp.Topic, Partitions: tp.Partitions})
	}
	res, err := a.askController(ctx, req)
	if err != nil {
		return kafka.ElectionResult{}, err
	}
	resp, ok := res.(*messages.ElectLeadersResponse)
	if !ok {
		return kafka.ElectionResult{}, fmt.Errorf("host: Kafka elect leaders: the broker answered %T", res)
	}
	out := kafka.ElectionResult{AdminResult: kafka.AdminResult{ErrorCode: int16(resp.GetErrorCode()), ErrorMessage: resp.GetErrorMessage()}}
	elected := map[string][]int32{}
	for _, r := range resp.GetResults() {
		out.Partitions = append(out.Partitions, kafka.PartitionResult{Topic: r.GetTopic(), Partition: r.GetPartition(),
			AdminResult: kafka.AdminResult{ErrorCode: int16(r.GetErrorCode()), ErrorMessage: r.GetErrorMessage()}})
		if r.GetErrorCode() == messages.ErrorCode_ERROR_CODE_UNSPECIFIED {
			elected[r.GetTopic()] = append(elected[r.GetTopic()], r.GetPartition())
		}
	}
	for topic, parts := range elected {
		a.awaitCache(ctx, topic, func(t *messages.TopicMetadata) bool {
			for _, p := range parts {
				ps := partitionState(t, p)
				if ps == nil || len(ps.GetReplicas()) == 0 || ps.GetLeader() != ps.GetReplicas()[0] {
					return false
				}
			}
			return true
		})
	}
	return out, nil
}

// partitionState is partition p of t, nil when t is nil or has no such
// partition.
func partitionState(t *messages.TopicMetadata, p int32) *messages.PartitionState {
	if t == nil || p < 0 || int(p) >= len(t.GetPartitions()) {
		return nil
	}
	return t.GetPartitions()[p]
}

// knownHosts returns the ids of the hosts the cluster knows (live or
// down), from the broker's DescribeCluster; ok is false when they could
// not be read (the controller then checks the ids itself).
func (a *kafkaAdminBackend) knownHosts(ctx context.Context) (known map[int32]bool, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, kafkaAskTimeout)
	defer cancel()
	res, err := a.meta.ask(ctx, &messages.DescribeClusterRequest{})
	resp, isResp := res.(*messages.DescribeClusterResponse)
	if err != nil || !isResp || resp.GetErrorCode() != messages.ErrorCode_ERROR_CODE_UNSPECIFIED {
		a.log.WithError(err).WithField("answer", fmt.Sprintf("%T", res)).Debug("Kafka reassign: the known hosts could not be read; the controller checks the ids")
		return nil, false
	}
	known = map[int32]bool{}
	for _, h := range append(resp.GetHosts(), resp.GetDownHosts()...) {
		known[h.GetHostId()] = true
	}
	return known, true
}

// AlterReassignments implements kafka.PartitionAdminBackend with the
// controller's partition reassignment (messages.ReassignPartitionsRequest,
// as `actorlog topics alter --replicas`): target ids no host has are
// refused here with INVALID_REPLICA_ASSIGNMENT (the controller would say
// INVALID_REQUEST), all or nothing. The answer comes once the broker's
// cache shows the recorded change.
func (a *kafkaAdminBackend) AlterReassignments(ctx context.Context, topic string, parts []kafka.PartitionReassignment) ([]kafka.AdminResult, error) {
	results := make([]kafka.AdminResult, len(parts))
	if known, ok := a.knownHosts(ctx); ok {
		for i, p := range parts {
			for _, id := range p.Replicas {
				if !known[id] {
					results[i] = kafka.AdminResult{ErrorCode: kerr.InvalidReplicaAssignment.Code,
						ErrorMessage: fmt.Sprintf("replicas %v: no host has id %d", p.Replicas, id)}
					break
				}
			}
		}
		if kafka.NotApplied(topic, results) {
			return results, nil
		}
	}
	req := &messages.ReassignPartitionsRequest{Topic: topic}
	for _, p := range parts {
		req.Partitions = append(req.Partitions, &messages.PartitionReassignment{Partition: p.Partition, Replicas: p.Replicas})
	}
	res, err := a.askController(ctx, req)
	if err != nil {
		return nil, err
	}
	resp, ok := res.(*messages.ReassignPartitionsResponse)
	if !ok {
		return nil, fmt.Errorf("host: Kafka reassign partitions: the broker answered %T", res)
	}
	if resp.GetErrorCode() != messages.ErrorCode_ERROR_CODE_UNSPECIFIED {
		for i := range results {
			results[i] = kafka.AdminResult{ErrorCode: int16(resp.GetErrorCode()), ErrorMessage: resp.GetErrorMessage()}
		}
		return results, nil
	}
	got := resp.GetResults()
	for i, p := range parts {
		var r *messages.PartitionResult
		if len(got) == len(parts) {
			r = got[i] // one result per partition, in request order
		} else {
			for _, g := range got {
				if g.GetPartition() == p.Partition {
					r = g
					break
				}
			}
		}
		if r == nil {
			results[i] = kafka.AdminResult{ErrorCode: int16(messages.ErrorCode_ERROR_CODE_UNKNOWN_SERVER_ERROR), ErrorMessage: "the controller gave no result for the partition"}
			continue
		}
		results[i] = kafka.AdminResult{ErrorCode: int16(r.GetErrorCode()), ErrorMessage: r.GetErrorMessage()}
	}
	if len(results) > 0 && results[0].ErrorCode == 0 { // all or nothing: all applied
		a.awaitCache(ctx, topic, func(t *messages.TopicMetadata) bool {
			for _, p := range parts {
				if !reassignmentShown(partitionState(t, p.Partition), p.Replicas) {
					return false
				}
			}
			return true
		})
	}
	return results, nil
}

// reassignmentShown reports whether ps shows a recorded reassignment to
// target: cancelled (target nil: none in progress), under way to target,
// or done (the replicas are target). Pure.
func reassignmentShown(ps *messages.PartitionState, target []int32) bool {
	if ps == nil {
		return false
	}
	reassigning := len(ps.GetAddingReplicas()) > 0 || len(ps.GetRemovingReplicas()) > 0
	if target == nil {
		return !reassigning
	}
	if !reassigning {
		return slices.Equal(ps.GetReplicas(), target)
	}
	var current []int32
	for _, id := range ps.GetReplicas() {
		if !slices.Contains(ps.GetRemovingReplicas(), id) {
			current = append(current, id)
		}
	}
	return slices.Equal(current, target)
}

// ListReassignments implements kafka.PartitionAdminBackend from the
// broker's cache: every partition with adding or removing replicas, of
// the topics not being deleted.
func (a *kafkaAdminBackend) ListReassignments(ctx context.Context) ([]kafka.Reassignment, error) {
	md, err := a.cacheFor(ctx, &broker.KafkaMetadataRequest{AllTopics: true})
	if err != nil {
		return nil, err
	}
	var out []kafka.Reassignment
	for _, t := range md.Topics {
		if t.GetDeleting() {
			continue
		}
		for _, p := range t.GetPartitions() {
			if len(p.GetAddingReplicas()) == 0 && len(p.GetRemovingReplicas()) == 0 {
				continue
			}
			out = append(out, kafka.Reassignment{Topic: t.GetName(), Partition: p.GetPartition(),
				Replicas: slices.Clone(p.GetReplicas()), Adding: slices.Clone(p.GetAddingReplicas()), Removing: slices.Clone(p.GetRemovingReplicas())})
		}
	}
	return out, nil
}
