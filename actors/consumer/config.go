// config.go holds the consumer's configuration: where reading starts, what
// it reads (a topic's partitions, or a group subscription), the group
// settings (Kafka's consumer configs of the same names), their defaults
// and validation, and the Cluster seam the consumer talks through.

package consumer

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/actors/group"
	"github.com/actorlog/actorlog/messages"
)

// Start says where a partition is read from when the consumer starts (for
// a group: where a partition without a committed offset starts, Kafka's
// auto.offset.reset).
type Start struct {
	kind   int // 0 earliest, 1 latest, 2 offset, 3 timestamp
	offset int64
}

// Earliest starts at the log start offset.
func Earliest() Start { return Start{kind: 0} }

// Latest starts at the high watermark: only records produced from now on.
func Latest() Start { return Start{kind: 1} }

// AtOffset starts at offset.
func AtOffset(offset int64) Start { return Start{kind: 2, offset: offset} }

// AtTimestamp starts at the first record whose timestamp is >= ms.
func AtTimestamp(ms int64) Start { return Start{kind: 3, offset: ms} }

// OutOfRangePolicy is what a consumer does at an out-of-range position.
type OutOfRangePolicy int

// The policies.
const (
	ResetEarliest OutOfRangePolicy = iota
	ResetLatest
	Fail
)

// DefaultMaxBytes is Config.MaxBytes's default: what one fetch asks of a
// partition, Kafka's max.partition.fetch.bytes.
const DefaultMaxBytes = 1 << 20

// Group defaults, Kafka's consumer defaults (3.x).
const (
	// DefaultSessionTimeout is session.timeout.ms.
	DefaultSessionTimeout = 45 * time.Second
	// DefaultRebalanceTimeout is max.poll.interval.ms, the rebalance
	// timeout a classic Kafka consumer sends.
	DefaultRebalanceTimeout = 5 * time.Minute
	// DefaultHeartbeatInterval is heartbeat.interval.ms.
	DefaultHeartbeatInterval = 3 * time.Second
	// DefaultAutoCommitInterval is auto.commit.interval.ms.
	DefaultAutoCommitInterval = 5 * time.Second
	// DefaultMetadataMaxAge is metadata.max.age.ms: how often metadata is
	// refreshed even without errors (new partitions, new topics matching
	// a TopicRegex).
	DefaultMetadataMaxAge = 5 * time.Minute
	// DefaultCloseTimeout bounds the commit and LeaveGroup of a consumer
	// stopped without Close.
	DefaultCloseTimeout = 5 * time.Second
)

// DefaultAssignors returns the assignors a group consumer offers when
// Config.Assignors is empty: cooperative-sticky alone. Kafka 3.x offers
// [range, cooperative-sticky], which (the rebalance protocol being the one
// every listed assignor supports) runs the eager protocol so that old
// eager-only members can share the group; actorlog has no such members, so
// it runs KIP-429's incremental protocol from the start. List an eager
// assignor too (e.g. cooperative-sticky, range) to share a group with
// range-only members: the consumer then follows the eager protocol.
func DefaultAssignors() []group.Assignor { return []group.Assignor{group.CooperativeSticky()} }

// Config configures a consumer. Read a topic's partitions (Topic, optional
// Partitions) or, with GroupID, join a group and read what it assigns
// (Topics and/or Topic, or TopicRegex). A GroupID with Partitions reads
// those partitions outside group management and commits to the group's
// offsets (Kafka's assign() with a group.id).
type Config struct {
	// Client is the connection (required unless Cluster is set).
	Client *client.Client
	// Cluster is what the consumer asks of the cluster (default Client).
	Cluster Cluster
	// Topic is the topic to read (or, with GroupID, one more topic of the
	// subscription).
	Topic string
	// Partitions to read; empty means all the topic's partitions. Not with
	// a subscription (Topics, TopicRegex).
	Partitions []int32
	// Start is where reading begins (default Earliest); for a group, where
	// a partition without a committed offset begins.
	Start Start
	// Handler receives records (exactly one of Handler and Target).
	Handler Handler
	// Target is an actor that receives *Records and must answer each; a
	// group consumer also sends it *Assigned and *Revoked (no answer
	// expected).
	Target *actor.PID
	// MaxWait, MinBytes, MaxBytes shape each fetch (defaults 500 ms, 1 byte,
	// 1 MiB per partition).
	MaxWait  time.Duration
	MinBytes int32
	MaxBytes int32
	// ReuseBuffers lets the consumer reuse the memory records arrive in: a
	// Message's Key, Value and header values, and the []Message itself,
	// are valid only until the Handler returns (for a Target, until it
	// answers); copy what must outlive that. The consumer then gives each
	// fetch answer's buffer back once its records were handled, and the
	// next answer is received into memory already in use instead of fresh
	// memory the garbage collector must reclaim: a consumer reading 1 KiB
	// records at full speed spends ~45 % less CPU and reads ~1.5x the
	// records per second (`actorlog perf consume --reuse-buffers`,
	// README). Off by default:
	// records kept past the handler would change under the code keeping
	// them. Compressed batches are decompressed into fresh memory either
	// way.
	ReuseBuffers bool
	// RetryBackoff waits before refetching after an error (default 200 ms).
	RetryBackoff time.Duration
	// OnOutOfRange says what to do when the position is outside the log
	// (Kafka's auto.offset.reset): ResetEarliest (default), ResetLatest, or
	// Fail, which stops the partition and reports an error wrapping
	// ErrOffsetOutOfRange to OnError.
	OnOutOfRange OutOfRangePolicy
	// OnError, if set, is told of errors the consumer recovers from (leader
	// moves, timeouts, rebalances) and of unrecoverable ones (wrapping
	// ErrOffsetOutOfRange, ErrCorruptBatch or ErrGroupFatal). It runs
	// inside the actor.
	OnError func(error)
	// MetadataMaxAge is how often metadata is refreshed without errors
	// (default DefaultMetadataMaxAge).
	MetadataMaxAge time.Duration
	Logger         *logrus.Entry

	// GroupID is the consumer group (Kafka's group.id); empty for none.
	GroupID string
	// GroupInstanceID makes the member static (KIP-345,
	// group.instance.id): a restart within the session timeout gets its
	// partitions back without a rebalance, and Close does not leave the
	// group.
	GroupInstanceID string
	// Topics is the subscription (with Topic, if set).
	Topics []string
	// TopicRegex subscribes to every non-internal topic whose whole name
	// matches (Kafka's subscribe(Pattern)); re-evaluated on every metadata
	// refresh. Not with Topics or Topic.
	TopicRegex *regexp.Regexp
	// Assignors are the assignors offered, most preferred first (default
	// DefaultAssignors). The rebalance protocol is incremental (KIP-429)
	// when every one is cooperative, eager otherwise.
	Assignors []group.Assignor
	// SessionTimeout is session.timeout.ms (default 45 s): the coordinator
	// removes a member it has not heard from for this long.
	SessionTimeout time.Duration
	// RebalanceTimeout is how long the coordinator waits for members to
	// rejoin a rebalance (Kafka's max.poll.interval.ms; default 5 min).
	RebalanceTimeout time.Duration
	// HeartbeatInterval is heartbeat.interval.ms (default 3 s); it must be
	// below SessionTimeout.
	HeartbeatInterval time.Duration
	// DisableAutoCommit turns enable.auto.commit off (auto-commit is on by
	// default): positions are then committed only by Commit.
	DisableAutoCommit bool
	// AutoCommitInterval is auto.commit.interval.ms (default 5 s).
	AutoCommitInterval time.Duration
	// OnAssigned is called (inside the actor) after every completed
	// rebalance with the partitions this member gained.
	OnAssigned func(Assigned)
	// OnRevoked is called (inside the actor) when partitions are taken
	// away: after their records were handled and, with auto-commit, their
	// positions committed; or, with Lost set, when the membership was lost
	// and nothing could be committed.
	OnRevoked func(Revoked)
	// ClientID prefixes the member id (default "actorlog-consumer").
	ClientID string
	// CloseTimeout bounds the commit and leave of a consumer stopped
	// without Close (default DefaultCloseTimeout).
	CloseTimeout time.Duration
}

// Cluster is what the consumer asks of the cluster besides messaging
// partition leaders and its group coordinator; *client.Client implements
// it. The calls block; the consumer makes them from goroutines.
type Cluster interface {
	Logger() *logrus.Entry
	RequestTimeout() time.Duration
	Metadata(ctx context.Context, topics ...string) (*messages.MetadataResponse, error)
	HostUp(addr string) bool
	ListOffsets(ctx context.Context, p *messages.PartitionMetadata, topic string, ts int64) (*messages.ListOffsetsResponse, error)
	FindCoordinator(ctx context.Context, group string) (client.Coordinator, error)
	ForgetCoordinator(co client.Coordinator)
	CommitOffsetsRequest(ctx context.Context, req *messages.OffsetCommitRequest) (*messages.OffsetCommitResponse, error)
	FetchOffsets(ctx context.Context, group string, partitions ...*messages.TopicPartitions) ([]client.CommittedOffset, error)
	Request(ctx context.Context, pid *actor.PID, msg proto.Message) (any, error)
}

// ErrOffsetOutOfRange is reported (under the Fail policy) when a partition's
// position is outside its log.
var ErrOffsetOutOfRange = errors.New("consumer: offset out of range")

// ErrCorruptBatch is matched by the *CorruptBatchError a partition stops
// with when a fetched batch cannot be decoded.
var ErrCorruptBatch = errors.New("consumer: undecodable record batch")

// CorruptBatchError is reported to OnError (and logged at error level)
// when a batch fetched from a partition cannot be decoded: its CRC fails,
// its compressed records are no valid stream, or its records are
// malformed. Retrying would read the same bytes again, so the partition
// stops there, as under the Fail out-of-range policy: the records before
// Offset were delivered, nothing at or after it is, and a Seek (past the
// batch, to NextOffset, accepting the loss; or anywhere else) moves it on.
// Errors.Is matches it with ErrCorruptBatch and with the record package's
// reason (record.ErrUndecodable, record.ErrChecksum, record.ErrCorrupt,
// record.ErrTooLarge).
type CorruptBatchError struct {
	Partition TopicPartition
	// Offset is the first offset not delivered: the batch's, or that of
	// its first record that did not decode.
	Offset int64
	// NextOffset is the offset after the batch by its header, -1 when the
	// header itself failed its checks (CRC, length, magic).
	NextOffset int64
	Err        error
}

// Error names the partition, the offsets and the reason.
func (e *CorruptBatchError) Error() string {
	next := "unknown"
	if e.NextOffset >= 0 {
		next = strconv.FormatInt(e.NextOffset, 10)
	}
	return fmt.Sprintf("consumer: undecodable record batch in %s at offset %d (the batch ends before offset %s); the partition stops there: %v",
		e.Partition, e.Offset, next, e.Err)
}

// Unwrap returns ErrCorruptBatch and the decoding error.
func (e *CorruptBatchError) Unwrap() []error { return []error{ErrCorruptBatch, e.Err} }

// ErrConfig wraps configuration errors.
var ErrConfig = errors.New("consumer: invalid config")

// ErrGroupFatal is reported (wrapped) to OnError when the group refused the
// member for good (FENCED_INSTANCE_ID: another consumer took its
// GroupInstanceID; INCONSISTENT_GROUP_PROTOCOL, INVALID_SESSION_TIMEOUT,
// GROUP_MAX_SIZE_REACHED, INVALID_GROUP_ID): the consumer stops consuming.
var ErrGroupFatal = errors.New("consumer: group membership failed")

// subscribing reports whether the config joins a group with a
// subscription (rather than reading given partitions).
func (c *Config) subscribing() bool { return c.GroupID != "" && len(c.Partitions) == 0 }

func (c *Config) validate() error {
	if c.Cluster == nil && c.Client != nil {
		c.Cluster = c.Client
	}
	if c.Cluster == nil {
		return fmt.Errorf("%w: a client is required", ErrConfig)
	}
	if (c.Handler == nil) == (c.Target == nil) {
		return fmt.Errorf("%w: set exactly one of Handler and Target", ErrConfig)
	}
	switch {
	case c.GroupID == "" && c.Topic == "":
		return fmt.Errorf("%w: a topic is required (or a group id with a subscription)", ErrConfig)
	case c.GroupID == "" && (len(c.Topics) > 0 || c.TopicRegex != nil):
		return fmt.Errorf("%w: a subscription (Topics, TopicRegex) needs a group id", ErrConfig)
	case len(c.Partitions) > 0 && (len(c.Topics) > 0 || c.TopicRegex != nil):
		return fmt.Errorf("%w: Partitions are read outside group management: not with a subscription", ErrConfig)
	case c.GroupID != "" && len(c.Partitions) > 0 && c.Topic == "":
		return fmt.Errorf("%w: Partitions need a Topic", ErrConfig)
	case c.TopicRegex != nil && (len(c.Topics) > 0 || c.Topic != ""):
		return fmt.Errorf("%w: subscribe to topics or to a pattern, not both", ErrConfig)
	case c.GroupID != "" && c.TopicRegex == nil && c.Topic == "" && len(c.Topics) == 0:
		return fmt.Errorf("%w: group %q needs topics to subscribe to", ErrConfig, c.GroupID)
	case c.GroupInstanceID != "" && c.GroupID == "":
		return fmt.Errorf("%w: a group instance id needs a group id", ErrConfig)
	}
	if c.Topic != "" && c.subscribing() && !slices.Contains(c.Topics, c.Topic) {
		c.Topics = append(slices.Clone(c.Topics), c.Topic)
	}
	if c.TopicRegex != nil {
		// Kafka matches the whole topic name.
		re, err := regexp.Compile("^(?:" + c.TopicRegex.String() + ")$")
		if err != nil {
			return fmt.Errorf("%w: topic regex: %w", ErrConfig, err)
		}
		c.TopicRegex = re
	}
	if c.MaxWait <= 0 {
		c.MaxWait = 500 * time.Millisecond
	}
	if c.MinBytes <= 0 {
		c.MinBytes = 1
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.MaxBytes > client.MaxFetchBytes {
		return fmt.Errorf("%w: max bytes %d above %d", ErrConfig, c.MaxBytes, client.MaxFetchBytes)
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = 200 * time.Millisecond
	}
	if c.MetadataMaxAge <= 0 {
		c.MetadataMaxAge = DefaultMetadataMaxAge
	}
	if len(c.Assignors) == 0 {
		c.Assignors = DefaultAssignors()
	}
	names := map[string]bool{}
	for _, a := range c.Assignors {
		if a == nil || names[a.Name()] {
			return fmt.Errorf("%w: assignors must be distinct and non-nil", ErrConfig)
		}
		names[a.Name()] = true
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
	if c.RebalanceTimeout <= 0 {
		c.RebalanceTimeout = DefaultRebalanceTimeout
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.HeartbeatInterval >= c.SessionTimeout {
		return fmt.Errorf("%w: heartbeat interval %v must be below the session timeout %v", ErrConfig, c.HeartbeatInterval, c.SessionTimeout)
	}
	if c.AutoCommitInterval <= 0 {
		c.AutoCommitInterval = DefaultAutoCommitInterval
	}
	if c.ClientID == "" {
		c.ClientID = "actorlog-consumer"
	}
	if c.CloseTimeout <= 0 {
		c.CloseTimeout = DefaultCloseTimeout
	}
	if c.Logger == nil {
		c.Logger = c.Cluster.Logger()
	}
	return nil
}
