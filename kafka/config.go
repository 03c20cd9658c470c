// config.go holds the Server's Config: its backend, logger and the limits
// a connection is held to, with Kafka's names and defaults, filled in and
// validated once by NewServer.

package kafka

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/internal/acl"
)

// Defaults of the limits, Kafka's where Kafka has one.
const (
	// DefaultMaxRequestBytes is socket.request.max.bytes: the largest
	// request frame (after its 4-byte length) a connection may send.
	DefaultMaxRequestBytes = 100 << 20
	// DefaultIdleTimeout is connections.max.idle.ms: a connection that
	// neither sent a request nor has one in flight for this long is closed.
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultMaxInFlight bounds the requests of one connection read but not
	// yet answered. Kafka reads one request per connection at a time; a
	// few more let pipelining clients overlap the handlers' waits without
	// letting one connection queue unbounded work (or memory: at most
	// MaxInFlight frames of MaxRequestBytes each).
	DefaultMaxInFlight = 8
	// DefaultMaxFetchWait bounds how long a Fetch may wait for data,
	// whatever max_wait_ms it asks for (clients ask 0.5–5 s; an answer
	// with less than min_bytes before that only makes them fetch again).
	DefaultMaxFetchWait = 30 * time.Second
	// DefaultLogEvery is how often at most one line is logged per kind of
	// refused input (a peer can trigger these at will).
	DefaultLogEvery = time.Second
)

// ErrBadConfig is wrapped by every Config validation error.
var ErrBadConfig = errors.New("kafka: bad config")

// Config configures a Server. The zero value of a limit takes its default.
type Config struct {
	// Logger receives the server's lines. Nil uses logrus's standard
	// logger.
	Logger *logrus.Entry
	// Backend answers the handlers. Required.
	Backend Backend
	// Data answers the data APIs (Produce, Fetch, ListOffsets,
	// OffsetForLeaderEpoch, InitProducerId). Optional: when nil those
	// APIs are neither advertised nor served.
	Data DataBackend
	// Admin answers the topic admin APIs (CreateTopics, DeleteTopics,
	// CreatePartitions, DescribeConfigs, AlterConfigs,
	// IncrementalAlterConfigs, DescribeCluster). Optional: when nil those
	// APIs are neither advertised nor served.
	Admin AdminBackend
	// Groups answers the consumer-group APIs (FindCoordinator, JoinGroup,
	// SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch,
	// DescribeGroups, ListGroups, DeleteGroups). Optional: when nil those
	// APIs are neither advertised nor served.
	Groups GroupBackend
	// PartitionAdmin answers the partition admin APIs (ElectLeaders,
	// AlterPartitionReassignments, ListPartitionReassignments).
	// Optional: when nil those APIs are neither advertised nor served.
	PartitionAdmin PartitionAdminBackend
	// Topics are the host's topic settings (Kafka's
	// auto.create.topics.enable, num.partitions,
	// default.replication.factor): auto-creation by Metadata, and what
	// DescribeConfigs reports for the BROKER resource.
	Topics TopicSettings
	// MaxRequestBytes is socket.request.max.bytes: a frame longer than
	// this closes its connection. Default DefaultMaxRequestBytes.
	MaxRequestBytes int32
	// IdleTimeout is connections.max.idle.ms: a connection with no request
	// in flight that sends nothing for this long is closed, and so is one
	// whose peer does not take a response for this long. Default
	// DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxInFlight bounds the requests read from one connection and not yet
	// answered; past it the connection is not read (TCP pushes back on
	// the client) until a response is written. Default DefaultMaxInFlight.
	MaxInFlight int
	// MaxFetchWait bounds the wait of a Fetch for min_bytes: a request
	// asking for longer is answered with what there is after this long.
	// It bounds what one connection's parked fetches can hold (a peer may
	// pipeline MaxInFlight fetches asking for days). Default
	// DefaultMaxFetchWait.
	MaxFetchWait time.Duration
	// LogEvery rate-limits the lines about refused input and closed
	// connections: at most one per kind per LogEvery. Default
	// DefaultLogEvery.
	LogEvery time.Duration
	// TLS, when set, makes the listener speak TLS only (tls.go): every
	// accepted connection must complete a handshake within
	// TLSHandshakeTimeout. With a verifying ClientAuth, a client
	// certificate names the connection's principal. Nil: plain text.
	TLS *tls.Config
	// TLSHandshakeTimeout bounds a connection's TLS handshake. Default
	// DefaultTLSHandshakeTimeout.
	TLSHandshakeTimeout time.Duration
	// SASL enables SASL authentication (sasl.go). Zero: off.
	SASL SASLConfig
	// ACLs answers the ACL APIs (DescribeAcls, CreateAcls, DeleteAcls;
	// acls.go). Optional: when nil those APIs are neither advertised nor
	// served.
	ACLs ACLBackend
	// Authorizer, when set, authorizes every request by the connection's
	// principal before its handler runs (authorize.go). Nil: every request
	// is allowed, as in Kafka without an authorizer.
	Authorizer Authorizer
	// AuditEvery is how often a refusal of one principal, operation and
	// resource is logged. Default DefaultAuditEvery.
	AuditEvery time.Duration
	// OnDenied, when set, is called for every refused operation (for a
	// metric); it must not block.
	OnDenied func(op acl.Operation, res acl.ResourceType)
}

// Kafka's defaults of the topic settings.
const (
	// DefaultNumPartitions is num.partitions.
	DefaultNumPartitions = 1
	// DefaultReplicationFactor is default.replication.factor.
	DefaultReplicationFactor = 1
)

// TopicSettings are the broker settings about topics that a client can
// see (DescribeConfigs of the BROKER resource) and that Metadata acts on.
type TopicSettings struct {
	// AutoCreate is auto.create.topics.enable: a Metadata request that
	// allows auto-creation (v0-3 always; v4+ with
	// allow_auto_topic_creation) and names an unknown topic has it
	// created through AdminBackend.CreateTopic with the defaults (-1),
	// and answers LEADER_NOT_AVAILABLE until it has leaders. Off by
	// default (Kafka's default is on; a typo in a producer's topic name
	// then creates a topic). Needs Config.Admin.
	AutoCreate bool
	// NumPartitions and ReplicationFactor are num.partitions and
	// default.replication.factor: what a topic created with -1 (by
	// CreateTopics v4+, or auto-created) gets. They are reported here;
	// the AdminBackend applies them. Zero: DefaultNumPartitions,
	// DefaultReplicationFactor.
	NumPartitions     int32
	ReplicationFactor int16
}

// withDefaults returns c with unset limits at their defaults.
func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = logrus.NewEntry(logrus.StandardLogger())
	}
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.MaxFetchWait == 0 {
		c.MaxFetchWait = DefaultMaxFetchWait
	}
	if c.LogEvery == 0 {
		c.LogEvery = DefaultLogEvery
	}
	if c.AuditEvery == 0 {
		c.AuditEvery = DefaultAuditEvery
	}
	if c.TLSHandshakeTimeout == 0 {
		c.TLSHandshakeTimeout = DefaultTLSHandshakeTimeout
	}
	if c.SASL.LookupTimeout == 0 {
		c.SASL.LookupTimeout = defaultSASLLookupTimeout
	}
	if c.Topics.NumPartitions == 0 {
		c.Topics.NumPartitions = DefaultNumPartitions
	}
	if c.Topics.ReplicationFactor == 0 {
		c.Topics.ReplicationFactor = DefaultReplicationFactor
	}
	return c
}

// validate reports a config NewServer cannot run with.
func (c Config) validate() error {
	switch {
	case c.Backend == nil:
		return fmt.Errorf("%w: no backend", ErrBadConfig)
	case c.MaxRequestBytes < 0:
		return fmt.Errorf("%w: max request bytes %d: want at least 1", ErrBadConfig, c.MaxRequestBytes)
	case c.IdleTimeout < 0:
		return fmt.Errorf("%w: idle timeout %v: want positive", ErrBadConfig, c.IdleTimeout)
	case c.MaxInFlight < 0:
		return fmt.Errorf("%w: max in-flight %d: want at least 1", ErrBadConfig, c.MaxInFlight)
	case c.MaxFetchWait < 0:
		return fmt.Errorf("%w: max fetch wait %v: want positive", ErrBadConfig, c.MaxFetchWait)
	case c.LogEvery < 0:
		return fmt.Errorf("%w: log every %v: want positive", ErrBadConfig, c.LogEvery)
	case c.Topics.NumPartitions < 0:
		return fmt.Errorf("%w: num.partitions %d: want at least 1", ErrBadConfig, c.Topics.NumPartitions)
	case c.Topics.ReplicationFactor < 0:
		return fmt.Errorf("%w: default.replication.factor %d: want at least 1", ErrBadConfig, c.Topics.ReplicationFactor)
	case c.Topics.AutoCreate && c.Admin == nil:
		return fmt.Errorf("%w: topic auto-creation needs an admin backend", ErrBadConfig)
	case c.TLSHandshakeTimeout < 0:
		return fmt.Errorf("%w: TLS handshake timeout %v: want positive", ErrBadConfig, c.TLSHandshakeTimeout)
	}
	return c.SASL.validate()
}

// Broker config keys reported by DescribeConfigs for the BROKER resource.
const (
	ConfigAutoCreateTopics         = "auto.create.topics.enable"
	ConfigNumPartitions            = "num.partitions"
	ConfigDefaultReplicationFactor = "default.replication.factor"
)

// brokerConfigEntries are the broker configs DescribeConfigs reports for
// a BROKER resource: the topic settings, read-only (they are the host's
// flags), STATIC_BROKER_CONFIG when a flag changed them, DEFAULT_CONFIG
// otherwise. Sorted by name. Pure.
func brokerConfigEntries(t TopicSettings) []ConfigEntry {
	entry := func(name, value, def string, typ kmsg.ConfigType, doc string) ConfigEntry {
		e := ConfigEntry{Name: name, Value: value, Default: value == def, DefaultValue: def, ReadOnly: true, Type: int8(typ), Doc: doc}
		if !e.Default {
			e.Source = int8(kmsg.ConfigSourceStaticBrokerConfig)
		}
		return e
	}
	return []ConfigEntry{
		entry(ConfigAutoCreateTopics, strconv.FormatBool(t.AutoCreate), "false", kmsg.ConfigTypeBoolean,
			"Create a topic when a Metadata request names it and allows auto-creation (the host's --auto-create-topics; off by default, unlike Kafka)"),
		entry(ConfigDefaultReplicationFactor, strconv.Itoa(int(t.ReplicationFactor)), strconv.Itoa(DefaultReplicationFactor), kmsg.ConfigTypeInt,
			"The replication factor of auto-created topics and of topics created with -1 (the host's --default-replication-factor)"),
		entry(ConfigNumPartitions, strconv.Itoa(int(t.NumPartitions)), strconv.Itoa(DefaultNumPartitions), kmsg.ConfigTypeInt,
			"The partition count of auto-created topics and of topics created with -1 (the host's --num-partitions)"),
	}
}
