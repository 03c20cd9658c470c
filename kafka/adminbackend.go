// adminbackend.go holds the AdminBackend interface, the seam of the admin
// APIs (CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs,
// AlterConfigs, IncrementalAlterConfigs; DescribeCluster needs only
// Backend), and the plain structs it takes and returns. The host
// implements it over the local broker, which forwards to the controller.

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
