// adminbackend.go holds the AdminBackend interface, the seam of the admin
// APIs (CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs,
// AlterConfigs, IncrementalAlterConfigs; DescribeCluster needs only
// Backend), the PartitionAdminBackend interface of the partition admin
// APIs (ElectLeaders, AlterPartitionReassignments,
// ListPartitionReassignments), and the plain structs they take and
// return. The host implements both over the local broker, which forwards
// to the controller.

package kafka

import "context"

// AdminBackend answers the topic admin APIs. Per-topic failures are error
// codes in the results (Kafka's numbers); a Go error is a local fault and
// closes the connection. Its methods are called concurrently and must
// return once their context is done.
type AdminBackend interface {
	// CreateTopic creates one topic, or with q.ValidateOnly only checks
	// that it could be created.
	CreateTopic(ctx context.Context, q CreateTopicQuery) (CreateTopicResult, error)
	// DeleteTopic deletes one topic by name.
	DeleteTopic(ctx context.Context, name string) (AdminResult, error)
	// CreatePartitions grows a topic to q.Total partitions, or with
	// q.ValidateOnly only checks that it could.
	CreatePartitions(ctx context.Context, q CreatePartitionsQuery) (AdminResult, error)
	// TopicConfigs returns every config a topic has: each known key, with
	// its override or its default.
	TopicConfigs(ctx context.Context, name string) (TopicConfigsResult, error)
	// AlterTopicConfigs replaces a topic's config overrides with q.Configs
	// (keys not given return to their defaults), or with q.ValidateOnly
	// only checks them. A bad key or value is INVALID_CONFIG and changes
	// nothing.
	AlterTopicConfigs(ctx context.Context, q AlterConfigsQuery) (AdminResult, error)
}

// AdminResult is the outcome of one admin operation on one topic.
type AdminResult struct {
	// ErrorCode is 0, or a Kafka error code.
	ErrorCode int16
	// ErrorMessage explains a non-zero ErrorCode.
	ErrorMessage string
}

// CreateTopicQuery is one topic of a CreateTopics request.
type CreateTopicQuery struct {
	// Name is the topic's name, as the client sent it.
	Name string
	// Partitions and ReplicationFactor are the topic's; -1 takes the
	// host's default.
	Partitions        int32
	ReplicationFactor int16
	// Configs are the config overrides.
	Configs map[string]string
	// ValidateOnly checks without creating.
	ValidateOnly bool
}

// CreateTopicResult is the outcome of one topic's creation.
type CreateTopicResult struct {
	AdminResult
	// ID is the topic id (zero for validate-only).
	ID [16]byte
	// Partitions and ReplicationFactor are the topic's (defaults filled).
	Partitions        int32
	ReplicationFactor int16
	// Configs are the topic's configs, every known key (v5+).
	Configs []ConfigEntry
}

// CreatePartitionsQuery is one topic of a CreatePartitions request.
type CreatePartitionsQuery struct {
	// Name is the topic; Total its new partition count.
	Name  string
	Total int32
	// ValidateOnly checks without creating.
	ValidateOnly bool
}

// ConfigEntry is one topic config.
type ConfigEntry struct {
	// Name and Value are the key and its value (the override, or the
	// default when none is set).
	Name, Value string
	// Default: no override is set (source DEFAULT_CONFIG, otherwise
	// TOPIC_CONFIG).
	Default bool
	// DefaultValue is the key's default (equal to Value when Default),
	// the last of its synonyms.
	DefaultValue string
	// ReadOnly: the key cannot be altered.
	ReadOnly bool
	// Type is the value's Kafka config type (kmsg.ConfigType), for v3+.
	Type int8
	// Doc documents the key (v3+ with include_documentation); may be empty.
	Doc string
	// Source, when set, is the entry's Kafka config source
	// (kmsg.ConfigSource, e.g. STATIC_BROKER_CONFIG for a host's flag);
	// 0 derives it from Default (DEFAULT_CONFIG or DYNAMIC_TOPIC_CONFIG).
	Source int8
}

// TopicConfigsResult is a topic's configs, or why they cannot be read.
type TopicConfigsResult struct {
	AdminResult
	// Configs are the configs, by name.
	Configs []ConfigEntry
}

// AlterConfigsQuery replaces one topic's config overrides.
type AlterConfigsQuery struct {
	// Name is the topic.
	Name string
	// Configs are the new overrides, all of them.
	Configs map[string]string
	// ValidateOnly checks without changing.
	ValidateOnly bool
}

// adminEnabled is the enabled test of the admin APIs: they need
// Config.Admin.
func adminEnabled(cfg *Config) bool { return cfg.Admin != nil }

// PartitionAdminBackend answers the partition admin APIs (ElectLeaders,
// AlterPartitionReassignments, ListPartitionReassignments). The host
// implements it over the controller's preferred-leader election and
// partition reassignment. Per-partition failures are error codes in the
// results; a Go error is a local fault and closes the connection. Its
// methods are called concurrently and must return once their context is
// done.
type PartitionAdminBackend interface {
	// ElectPreferredLeaders moves the leadership of the named partitions
	// (every partition when topics is nil) to their preferred replica.
	// It returns one result per partition considered; for topics nil,
	// the partitions whose preferred replica leads already may be left
	// out. A top-level code (Result.ErrorCode) means the request as a
	// whole failed (e.g. REQUEST_TIMED_OUT): the named partitions it
	// has no result for take it.
	ElectPreferredLeaders(ctx context.Context, topics []TopicPartitions) (ElectionResult, error)
	// AlterReassignments gives partitions of one topic a new replica
	// list, or cancels their reassignment in progress (Replicas nil).
	// Results are indexed like parts. All or nothing within the topic:
	// when one partition is refused none changes, and the acceptable
	// ones report INVALID_REQUEST ("not applied").
	AlterReassignments(ctx context.Context, topic string, parts []PartitionReassignment) ([]AdminResult, error)
	// ListReassignments returns every reassignment in progress, sorted
	// by topic and partition.
	ListReassignments(ctx context.Context) ([]Reassignment, error)
}

// TopicPartitions names partitions of one topic.
type TopicPartitions struct {
	Topic      string
	Partitions []int32
}

// PartitionResult is the outcome of an operation on one partition.
type PartitionResult struct {
	Topic     string
	Partition int32
	AdminResult
}

// ElectionResult answers ElectPreferredLeaders.
type ElectionResult struct {
	// AdminResult is the request's top-level outcome.
	AdminResult
	// Partitions are the per-partition outcomes.
	Partitions []PartitionResult
}

// PartitionReassignment is one partition's target replica list (host ids,
// preferred first); nil cancels the partition's reassignment in progress.
type PartitionReassignment struct {
	Partition int32
	Replicas  []int32
}

// Reassignment is one partition's reassignment in progress.
type Reassignment struct {
	Topic     string
	Partition int32
	// Replicas is the full replica set (target followed by the replicas
	// being removed); Adding and Removing the target replicas not yet in
	// the old set and the old ones not in the target.
	Replicas, Adding, Removing []int32
}

// partitionAdminEnabled is the enabled test of the partition admin APIs:
// they need Config.PartitionAdmin.
func partitionAdminEnabled(cfg *Config) bool { return cfg.PartitionAdmin != nil }
