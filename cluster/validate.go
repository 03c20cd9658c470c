// validate.go holds the validation of what the controller stores: topic
// names (Kafka's rule), topic configs (Kafka's keys and ranges, checked
// against what storage accepts), the mapping of a topic's configs to a
// storage.Config, and the structural checks of a TopicMetadata (partitions
// numbered 0..n-1, replica lists of the replication factor, leader and ISR
// among the replicas, within the limits of limits.go). Records read from
// etcd go through the same checks as admin requests (Store's reads), so a
// record written straight into etcd is held to the CLI's rules — with one
// exception: a max.message.bytes above MaxMessageBytesLimit, which users
// can no longer set but older records may hold, is accepted in a record
// and clamped in StorageConfig. All functions here are pure and safe for
// concurrent use.

package cluster

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage"
	"github.com/actorlog/actorlog/storage/record"
)

// MaxTopicNameLength is Kafka's limit on topic names.
const MaxTopicNameLength = 249

// Topic config keys: Kafka's names. Values are strings, as in Kafka.
const (
	// ConfigRetentionMs: -1 (forever) or a positive number of milliseconds.
	ConfigRetentionMs = "retention.ms"
	// ConfigRetentionBytes: -1 (no limit) or a number of bytes >= 0.
	ConfigRetentionBytes = "retention.bytes"
	// ConfigSegmentBytes: segment size in bytes, MinSegmentBytes (1 MiB,
	// Kafka 4) to 2^31-1.
	ConfigSegmentBytes = "segment.bytes"
	// ConfigSegmentMs: positive segment age in milliseconds.
	ConfigSegmentMs = "segment.ms"
	// ConfigMaxMessageBytes: largest batch, record.HeaderSize to
	// MaxMessageBytesLimit (64 MiB) when a user sets it; a stored record
	// may hold up to 2^31-13 (older limit), which StorageConfig clamps.
	ConfigMaxMessageBytes = "max.message.bytes"
	// ConfigFlushPolicy: "never", "batch" or a positive Go duration
	// (storage.ParseFlushPolicy). actorlog's replacement for Kafka's
	// flush.messages / flush.ms.
	ConfigFlushPolicy = "flush.policy"
	// ConfigMinInsyncReplicas: at least 1.
	ConfigMinInsyncReplicas = "min.insync.replicas"
	// ConfigMessageTimestampType: "CreateTime" or "LogAppendTime".
	ConfigMessageTimestampType = "message.timestamp.type"
	// ConfigUncleanLeaderElectionEnable: "true" or "false" (any case; the
	// default is false, as in Kafka). When true, a partition whose ISR
	// members are all down may be led by a live replica outside the ISR,
	// losing the records it lacks, instead of staying offline.
	ConfigUncleanLeaderElectionEnable = "unclean.leader.election.enable"
	// ConfigCleanupPolicy: "delete" (the default), "compact" or
	// "compact,delete" (any order, blanks trimmed: stored as
	// NormalizeTopicConfigs writes it). A compacted topic refuses
	// records without a key.
	ConfigCleanupPolicy = "cleanup.policy"
	// ConfigMinCleanableDirtyRatio: a number in [0, 1] (default 0.5).
	ConfigMinCleanableDirtyRatio = "min.cleanable.dirty.ratio"
	// ConfigMinCompactionLagMs: milliseconds >= 0 (default 0).
	ConfigMinCompactionLagMs = "min.compaction.lag.ms"
	// ConfigMaxCompactionLagMs: milliseconds >= 1 and >= min.compaction.lag.ms
	// (default Long.MAX_VALUE: no bound).
	ConfigMaxCompactionLagMs = "max.compaction.lag.ms"
	// ConfigDeleteRetentionMs: milliseconds >= 0 a tombstone stays
	// readable after cleaning (default 86400000, one day).
	ConfigDeleteRetentionMs = "delete.retention.ms"
)

// Values of ConfigMessageTimestampType.
const (
	TimestampCreateTime    = "CreateTime"
	TimestampLogAppendTime = "LogAppendTime"
)

// TopicConfigKeys lists every topic config key the cluster accepts, sorted.
func TopicConfigKeys() []string {
	keys := []string{
		ConfigRetentionMs, ConfigRetentionBytes, ConfigSegmentBytes, ConfigSegmentMs,
		ConfigMaxMessageBytes, ConfigFlushPolicy, ConfigMinInsyncReplicas, ConfigMessageTimestampType,
		ConfigUncleanLeaderElectionEnable, ConfigCleanupPolicy, ConfigMinCleanableDirtyRatio,
		ConfigMinCompactionLagMs, ConfigMaxCompactionLagMs, ConfigDeleteRetentionMs,
	}
	sort.Strings(keys)
	return keys
}

// ValidateTopicName checks Kafka's topic name rule: 1 to 249 characters
// from [a-zA-Z0-9._-], and not "." or "..". The error wraps ErrInvalidTopic.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrInvalidTopic)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %q is not allowed", ErrInvalidTopic, name)
	case len(name) > MaxTopicNameLength:
		return fmt.Errorf("%w: %d characters, at most %d allowed", ErrInvalidTopic, len(name), MaxTopicNameLength)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			// The character ('ü', not the 'Ã' of its first byte), or
			// the byte where it is no UTF-8 ("\xff").
			r, size := utf8.DecodeRuneInString(name[i:])
			ch := strconv.QuoteRune(r)
			if r == utf8.RuneError && size <= 1 {
				ch = strconv.Quote(name[i : i+1])
			}
			return fmt.Errorf("%w: %q: character %s at byte %d is not in [a-zA-Z0-9._-]", ErrInvalidTopic, name, ch, i)
		}
	}
	return nil
}

// ValidateTopicConfigs checks every key and value of the config overrides
// a user gives a topic (create, alter). Unknown keys are an error, and so
// is a max.message.bytes above MaxMessageBytesLimit. Stored records are
// checked with the laxer validateStoredConfigs (ValidateTopic). The error
// wraps ErrInvalidConfig.
func ValidateTopicConfigs(configs map[string]string) error {
	tc, err := parseTopicConfigs(configs)
	if err != nil {
		return err
	}
	if n := tc.storage.MaxMessageBytes; n > MaxMessageBytesLimit {
		return fmt.Errorf("%w: %s=%d: want at most %d (64 MiB): a fetch carries its first batch whole, and one message of the actor remote is at most 128 MiB",
			ErrInvalidConfig, ConfigMaxMessageBytes, n, MaxMessageBytesLimit)
	}
	return nil
}

// validateStoredConfigs checks the config overrides of a topic record
// (read from etcd, or about to be rewritten there): every key and value,
// with the bounds records were written under. A max.message.bytes above
// MaxMessageBytesLimit passes — refusing the record would leave its
// partitions unserved — and StorageConfig clamps it. The error wraps
// ErrInvalidConfig.
func validateStoredConfigs(configs map[string]string) error {
	_, err := parseTopicConfigs(configs)
	return err
}

// StorageConfig maps a topic's config overrides to the storage.Config of
// its partition logs; absent keys leave the field zero, which storage reads
// as its default (the same defaults as Kafka's). A max.message.bytes above
// MaxMessageBytesLimit (only a stored record can hold one) is clamped to
// it: the logs refuse larger batches from producers, and still keep and
// serve any they hold. Now, FS and Logger are left for the caller to fill.
// The error wraps ErrInvalidConfig.
func StorageConfig(configs map[string]string) (storage.Config, error) {
	tc, err := parseTopicConfigs(configs)
	if err != nil {
		return storage.Config{}, err
	}
	tc.storage.MaxMessageBytes = min(tc.storage.MaxMessageBytes, MaxMessageBytesLimit)
	return tc.storage, nil
}

// MaxMessageBytesOverLimit reports a max.message.bytes in configs above
// MaxMessageBytesLimit (which StorageConfig clamps), with its value, so the
// caller can warn. Invalid configs report false.
func MaxMessageBytesOverLimit(configs map[string]string) (int, bool) {
	tc, err := parseTopicConfigs(configs)
	if err != nil || tc.storage.MaxMessageBytes <= MaxMessageBytesLimit {
		return 0, false
	}
	return tc.storage.MaxMessageBytes, true
}

// MinInsyncReplicas returns the topic's min.insync.replicas (1 when not
// set). The error wraps ErrInvalidConfig.
func MinInsyncReplicas(configs map[string]string) (int, error) {
	tc, err := parseTopicConfigs(configs)
	if err != nil {
		return 0, err
	}
	return tc.minISR, nil
}

// UncleanLeaderElection returns the topic's unclean.leader.election.enable
// (false when not set). The error wraps ErrInvalidConfig.
func UncleanLeaderElection(configs map[string]string) (bool, error) {
	tc, err := parseTopicConfigs(configs)
	if err != nil {
		return false, err
	}
	return tc.unclean, nil
}

// NormalizeTopicConfigs returns a copy of configs with the values that
// have a canonical form written in it: cleanup.policy as "delete",
// "compact" or "compact,delete" (so "delete,compact" and "compact, delete"
// are stored and shown as "compact,delete"). Values that do not parse are
// copied as they are, for validation to refuse. nil stays nil.
func NormalizeTopicConfigs(configs map[string]string) map[string]string {
	if configs == nil {
		return nil
	}
	out := make(map[string]string, len(configs))
	for k, v := range configs {
		if k == ConfigCleanupPolicy {
			if p, err := storage.ParseCleanupPolicy(v); err == nil {
				v = p.String()
			}
		}
		out[k] = v
	}
	return out
}

// topicConfigs is a parsed, validated config map.
type topicConfigs struct {
	storage storage.Config
	minISR  int
	unclean bool
}

// parseTopicConfigs validates configs and parses them in one pass, so
// validation and mapping can never disagree.
func parseTopicConfigs(configs map[string]string) (topicConfigs, error) {
	tc := topicConfigs{minISR: 1}
	// Sorted, so the first error reported does not depend on map order.
	keys := make([]string, 0, len(configs))
	for k := range configs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := configs[k]
		bad := func(want string) error {
			return fmt.Errorf("%w: %s=%q: want %s", ErrInvalidConfig, k, v, want)
		}
		switch k {
		case ConfigRetentionMs:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n == 0 || n < -1 {
				return tc, bad("-1 (forever) or a positive number of milliseconds")
			}
			tc.storage.Retention = millis(n) // -1 stays negative: forever
		case ConfigRetentionBytes:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < -1 {
				return tc, bad("-1 (no limit) or a number of bytes >= 0")
			}
			if n == 0 {
				// storage reads 0 as "default" (no limit); 1 byte is the
				// nearest limit it can express: every segment but the
				// last non-empty one goes.
				n = 1
			}
			tc.storage.RetentionBytes = n
		case ConfigSegmentBytes:
			lo := CurrentMinSegmentBytes()
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < lo || n > math.MaxInt32 {
				return tc, bad(fmt.Sprintf("a number of bytes in [%d, %d] (smaller segments would cost three descriptors each)", lo, math.MaxInt32))
			}
			tc.storage.SegmentBytes = n
		case ConfigSegmentMs:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return tc, bad("a positive number of milliseconds")
			}
			tc.storage.SegmentAge = millis(n)
		case ConfigMaxMessageBytes:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < record.HeaderSize || n > math.MaxInt32-record.LogOverhead {
				return tc, bad(fmt.Sprintf("a number of bytes in [%d, %d]", record.HeaderSize, math.MaxInt32-record.LogOverhead))
			}
			tc.storage.MaxMessageBytes = int(n)
		case ConfigFlushPolicy:
			if v == "" {
				return tc, bad(`"never", "batch" or a positive duration`)
			}
			p, err := storage.ParseFlushPolicy(v)
			if err != nil {
				return tc, fmt.Errorf("%w: %s: %v", ErrInvalidConfig, k, err)
			}
			tc.storage.Flush = p
		case ConfigMinInsyncReplicas:
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < 1 {
				return tc, bad("an integer >= 1")
			}
			tc.minISR = int(n)
		case ConfigMessageTimestampType:
			switch v {
			case TimestampCreateTime:
				tc.storage.LogAppendTime = false
			case TimestampLogAppendTime:
				tc.storage.LogAppendTime = true
			default:
				return tc, bad(TimestampCreateTime + " or " + TimestampLogAppendTime)
			}
		case ConfigUncleanLeaderElectionEnable:
			// Kafka's BOOLEAN configs: "true" or "false", any case.
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "true":
				tc.unclean = true
			case "false":
				tc.unclean = false
			default:
				return tc, bad(`"true" or "false"`)
			}
		case ConfigCleanupPolicy:
			p, err := storage.ParseCleanupPolicy(v)
			if err != nil {
				return tc, bad(`"delete", "compact" or "compact,delete"`)
			}
			tc.storage.CleanupPolicy = p
		case ConfigMinCleanableDirtyRatio:
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || math.IsNaN(f) || f < 0 || f > 1 {
				return tc, bad("a number in [0, 1]")
			}
			if f == 0 {
				f = -1 // storage reads 0 as "default", a negative value as 0
			}
			tc.storage.MinCleanableDirtyRatio = f
		case ConfigMinCompactionLagMs:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return tc, bad("a number of milliseconds >= 0")
			}
			tc.storage.MinCompactionLag = millis(n)
		case ConfigMaxCompactionLagMs:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 {
				return tc, bad("a number of milliseconds >= 1")
			}
			tc.storage.MaxCompactionLag = millis(n)
		case ConfigDeleteRetentionMs:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return tc, bad("a number of milliseconds >= 0")
			}
			tc.storage.DeleteRetention = millis(n)
			if n == 0 {
				tc.storage.DeleteRetention = -1 // storage reads 0 as "default", a negative value as 0
			}
		default:
			return tc, fmt.Errorf("%w: unknown key %q (known: %v)", ErrInvalidConfig, k, TopicConfigKeys())
		}
	}
	if lo, hi := tc.storage.MinCompactionLag, tc.storage.MaxCompactionLag; hi != 0 && hi < lo {
		return tc, fmt.Errorf("%w: %s=%q is below %s=%q: a record would have to be compacted before it may be",
			ErrInvalidConfig, ConfigMaxCompactionLagMs, configs[ConfigMaxCompactionLagMs], ConfigMinCompactionLagMs, configs[ConfigMinCompactionLagMs])
	}
	return tc, nil
}

// millis converts milliseconds to a Duration, saturating instead of
// overflowing (Kafka users write Long.MaxValue for "forever").
func millis(n int64) time.Duration {
	if n > math.MaxInt64/int64(time.Millisecond) {
		return math.MaxInt64
	}
	if n < math.MinInt64/int64(time.Millisecond) {
		return math.MinInt64
	}
	return time.Duration(n) * time.Millisecond
}

// ValidateTopic checks a whole TopicMetadata before it is stored and after
// it is read: the name, the configs (with the bounds of stored records,
// validateStoredConfigs: a user's are checked first with the stricter
// ValidateTopicConfigs), a replication factor >= 1, 1 to
// MaxPartitionsPerTopic partitions, numbered 0..n-1 in order, each with
// exactly replication_factor distinct
// replicas (host ids >= 1), a leader that is -1 or in the ISR, and an ISR
// that is a duplicate-free subset of the replicas. It does not check that
// the hosts exist: hosts come and go, and that is the controller's call.
func ValidateTopic(t *messages.TopicMetadata) error {
	if t == nil {
		return fmt.Errorf("%w: nil topic", ErrInvalidTopic)
	}
	if err := ValidateTopicName(t.GetName()); err != nil {
		return err
	}
	if err := validateStoredConfigs(t.GetConfigs()); err != nil {
		return fmt.Errorf("topic %q: %w", t.GetName(), err)
	}
	rf := int(t.GetReplicationFactor())
	if rf < 1 {
		return fmt.Errorf("%w: topic %q: replication factor %d, want >= 1", ErrInvalidReplicationFactor, t.GetName(), rf)
	}
	if len(t.GetPartitions()) == 0 {
		return fmt.Errorf("%w: topic %q has no partitions", ErrInvalidPartitions, t.GetName())
	}
	if n := len(t.GetPartitions()); n > MaxPartitionsPerTopic {
		return fmt.Errorf("%w: topic %q has %d partitions, at most %d allowed", ErrInvalidPartitions, t.GetName(), n, MaxPartitionsPerTopic)
	}
	for i, p := range t.GetPartitions() {
		if p == nil || int(p.GetPartition()) != i {
			return fmt.Errorf("%w: topic %q: entry %d is partition %d, want %d", ErrInvalidPartitions, t.GetName(), i, p.GetPartition(), i)
		}
		if err := validatePartition(p, rf); err != nil {
			return fmt.Errorf("topic %q partition %d: %w", t.GetName(), i, err)
		}
	}
	return nil
}

// validatePartition checks one partition's replicas, leader and ISR, and
// its reassignment state: during a reassignment (KIP-455) the replicas are
// the union of the old and the target lists, both of the replication
// factor; adding_replicas (target only) and removing_replicas (old only)
// are disjoint subsets of the replicas. Its cost is linear in the lists'
// lengths, whatever a stored record holds.
func validatePartition(p *messages.PartitionState, rf int) error {
	replicas := p.GetReplicas()
	adding, removing := p.GetAddingReplicas(), p.GetRemovingReplicas()
	if len(replicas)-len(adding) != rf || len(replicas)-len(removing) != rf {
		return fmt.Errorf("%w: %d replicas %v (adding %v, removing %v), want %d", ErrInvalidReplicationFactor, len(replicas), replicas, adding, removing, rf)
	}
	for i, r := range replicas {
		if r < 1 {
			return fmt.Errorf("%w: replica host id %d at %d, want >= 1", ErrInvalidReplicaAssignment, r, i)
		}
	}
	if r, dup := firstDuplicate(replicas); dup {
		return fmt.Errorf("%w: host %d listed twice in replicas %v", ErrInvalidReplicaAssignment, r, replicas)
	}
	isReplica := memberOf(replicas)
	for _, set := range [][]int32{adding, removing} {
		if r, dup := firstDuplicate(set); dup {
			return fmt.Errorf("%w: reassignment: adding %v, removing %v: %d is a duplicate", ErrInvalidReplicaAssignment, adding, removing, r)
		}
		for _, r := range set {
			if !isReplica(r) {
				return fmt.Errorf("%w: reassignment: adding %v, removing %v: %d is not a replica %v", ErrInvalidReplicaAssignment, adding, removing, r, replicas)
			}
		}
	}
	isRemoved := memberOf(removing)
	for _, r := range adding {
		if isRemoved(r) {
			return fmt.Errorf("%w: reassignment: host %d both added and removed", ErrInvalidReplicaAssignment, r)
		}
	}
	isr := p.GetIsr()
	for _, r := range isr {
		if !isReplica(r) {
			return fmt.Errorf("%w: ISR member %d is not a replica %v", ErrInvalidReplicaAssignment, r, replicas)
		}
	}
	if r, dup := firstDuplicate(isr); dup {
		return fmt.Errorf("%w: host %d listed twice in ISR %v", ErrInvalidReplicaAssignment, r, isr)
	}
	if l := p.GetLeader(); l != -1 && !slices.Contains(isr, l) {
		return fmt.Errorf("%w: leader %d is not in the ISR %v", ErrInvalidReplicaAssignment, l, isr)
	}
	if p.GetLeaderEpoch() < 0 || p.GetPartitionEpoch() < 0 {
		return fmt.Errorf("%w: negative epoch (leader %d, partition %d)", ErrInvalidReplicaAssignment, p.GetLeaderEpoch(), p.GetPartitionEpoch())
	}
	return nil
}

// smallSet is the list length up to which a linear scan beats a map.
const smallSet = 8

// firstDuplicate returns the first id of ids that appeared before it.
func firstDuplicate(ids []int32) (int32, bool) {
	if len(ids) <= smallSet {
		for i, r := range ids {
			if slices.Contains(ids[:i], r) {
				return r, true
			}
		}
		return 0, false
	}
	seen := make(map[int32]struct{}, len(ids))
	for _, r := range ids {
		if _, ok := seen[r]; ok {
			return r, true
		}
		seen[r] = struct{}{}
	}
	return 0, false
}

// memberOf returns a membership test of ids, in O(1) per call for long
// lists.
func memberOf(ids []int32) func(int32) bool {
	if len(ids) <= smallSet {
		return func(r int32) bool { return slices.Contains(ids, r) }
	}
	set := make(map[int32]struct{}, len(ids))
	for _, r := range ids {
		set[r] = struct{}{}
	}
	return func(r int32) bool {
		_, ok := set[r]
		return ok
	}
}
