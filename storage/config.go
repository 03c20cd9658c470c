// config.go: the per-partition log configuration (Kafka's topic-level
// segment.bytes, segment.ms, retention.ms, retention.bytes,
// max.message.bytes, producer.id.expiration.ms, flush policy, the
// inflation limit of compressed batches, when idle files are closed, and
// the compaction settings: cleanup.policy, min.cleanable.dirty.ratio,
// min/max.compaction.lag.ms, delete.retention.ms), its defaults and its
// validation.

package storage

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/storage/record"
)

// Defaults, as in Kafka.
const (
	DefaultSegmentBytes         = 1 << 30
	DefaultSegmentAge           = 7 * 24 * time.Hour
	DefaultRetention            = 7 * 24 * time.Hour
	DefaultRetentionBytes       = -1
	DefaultMaxMessageBytes      = 1 << 20
	DefaultIndexIntervalBytes   = 4096
	DefaultProducerIDExpiration = 24 * time.Hour
	// DefaultFileIdleTimeout is how long a log's files stay open unused:
	// after it, the active segment's files are fsynced and closed, and
	// reopened by the next append or read (files.go). Kafka has no
	// equivalent (it keeps every segment open); ten minutes keeps the
	// files of any partition written or read more often than that open.
	DefaultFileIdleTimeout = 10 * time.Minute
	// DefaultMaxOpenSealedSegments is how many sealed segments per log may
	// keep their .log file open for reads; opening one more closes the
	// oldest.
	DefaultMaxOpenSealedSegments = 2
	// DefaultInflationFactor is how many times max.message.bytes the
	// records of a compressed batch may inflate to by default: 64, so
	// 64 MiB for the default 1 MiB, which record.MaxInflatedBytes caps.
	// Text and JSON compress 5 to 20 times; highly repetitive data more,
	// and a batch beyond the limit is refused as MESSAGE_TOO_LARGE (a
	// Kafka producer splits it and retries).
	DefaultInflationFactor = 64
	// DefaultMinCleanableDirtyRatio is min.cleanable.dirty.ratio's
	// default: a log is cleaned once half its cleanable bytes are dirty.
	DefaultMinCleanableDirtyRatio = 0.5
	// DefaultDeleteRetention is delete.retention.ms's default: how long a
	// tombstone stays readable after the cleaning that reaches it.
	DefaultDeleteRetention = 24 * time.Hour
	// DefaultMaxCompactionLag is max.compaction.lag.ms's default:
	// Long.MAX_VALUE in Kafka, no bound.
	DefaultMaxCompactionLag time.Duration = math.MaxInt64
)

// CleanupPolicy is a log's cleanup.policy: whether old segments are
// deleted (retention.ms, retention.bytes), compacted (the newest record of
// each key kept), or both. The zero value is the default, delete.
type CleanupPolicy uint8

const (
	// CleanupDelete deletes whole segments past retention.
	CleanupDelete CleanupPolicy = 1 << iota
	// CleanupCompact keeps the newest record of each key; a topic with it
	// refuses records without a key.
	CleanupCompact
	// cleanupAll is every valid bit.
	cleanupAll = CleanupDelete | CleanupCompact
)

// Cleanup policy names, Kafka's.
const (
	CleanupPolicyDelete  = "delete"
	CleanupPolicyCompact = "compact"
)

// Deletes reports whether retention deletes old segments (delete, the
// default, or compact,delete).
func (p CleanupPolicy) Deletes() bool { return p == 0 || p&CleanupDelete != 0 }

// Compacts reports whether the log is compacted (compact or
// compact,delete).
func (p CleanupPolicy) Compacts() bool { return p&CleanupCompact != 0 }

// String is the canonical cleanup.policy value: "delete", "compact" or
// "compact,delete" (what ParseCleanupPolicy reads back).
func (p CleanupPolicy) String() string {
	switch {
	case p.Compacts() && p.Deletes():
		return CleanupPolicyCompact + "," + CleanupPolicyDelete
	case p.Compacts():
		return CleanupPolicyCompact
	}
	return CleanupPolicyDelete
}

// ParseCleanupPolicy reads a cleanup.policy value as Kafka's LIST config
// does: comma-separated "delete" and "compact", in any order, blanks
// around each trimmed ("delete,compact", "compact, delete" and
// "compact,delete" are the same policy; a repeated value counts once).
// An empty list or any other value is an error wrapping ErrInvalidConfig.
func ParseCleanupPolicy(s string) (CleanupPolicy, error) {
	var p CleanupPolicy
	for _, part := range strings.Split(s, ",") {
		switch strings.TrimSpace(part) {
		case CleanupPolicyDelete:
			p |= CleanupDelete
		case CleanupPolicyCompact:
			p |= CleanupCompact
		default:
			return 0, fmt.Errorf("%w: cleanup.policy %q: want %q, %q or %q", ErrInvalidConfig, s,
				CleanupPolicyDelete, CleanupPolicyCompact, CleanupPolicyCompact+","+CleanupPolicyDelete)
		}
	}
	return p, nil
}

// FlushMode says when the log fsyncs appended data.
type FlushMode int

const (
	// FlushNever leaves flushing to the OS (Kafka's default); durability
	// comes from replication. The log still fsyncs on Close.
	FlushNever FlushMode = iota
	// FlushEveryBatch fsyncs after every append, before Append returns.
	FlushEveryBatch
	// FlushInterval fsyncs in the background every FlushPolicy.Interval.
	FlushInterval
)

// FlushPolicy is the log's fsync policy.
type FlushPolicy struct {
	Mode     FlushMode
	Interval time.Duration // for FlushInterval
}

// String renders the policy as ParseFlushPolicy reads it.
func (p FlushPolicy) String() string {
	switch p.Mode {
	case FlushEveryBatch:
		return "batch"
	case FlushInterval:
		return p.Interval.String()
	}
	return "never"
}

// ParseFlushPolicy reads "never", "batch", or a duration such as "100ms".
func ParseFlushPolicy(s string) (FlushPolicy, error) {
	switch s {
	case "never", "":
		return FlushPolicy{Mode: FlushNever}, nil
	case "batch":
		return FlushPolicy{Mode: FlushEveryBatch}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return FlushPolicy{}, fmt.Errorf("storage: flush policy %q: want never, batch or a positive duration", s)
	}
	return FlushPolicy{Mode: FlushInterval, Interval: d}, nil
}

// Config configures one partition log. The zero value of a field means its
// default; use Retention < 0 and RetentionBytes < 0 for "forever".
type Config struct {
	// SegmentBytes rolls the active segment when the next batch would take
	// it past this size (segment.bytes). At most math.MaxInt32.
	SegmentBytes int64
	// SegmentAge rolls the active segment once its first batch is older
	// than this (segment.ms).
	SegmentAge time.Duration
	// Retention deletes whole segments whose newest record is older than
	// this (retention.ms); negative keeps them forever.
	Retention time.Duration
	// RetentionBytes deletes the oldest segments while the log is larger
	// than this (retention.bytes); negative (the default) means no limit.
	RetentionBytes int64
	// MaxMessageBytes is the largest batch accepted (max.message.bytes).
	MaxMessageBytes int
	// MaxInflatedBytes is the most the records of one compressed batch
	// may inflate to: Append inflates every compressed batch to check its
	// records and refuses one beyond this (a decompression bomb, or a
	// batch no reader would decode) before inflating the rest. Default
	// DefaultInflationFactor × MaxMessageBytes, at most
	// record.MaxInflatedBytes (64 MiB, what readers decode); it may not be
	// set above that.
	MaxInflatedBytes int
	// IndexIntervalBytes is how many log bytes lie between two sparse
	// index entries (index.interval.bytes).
	IndexIntervalBytes int
	// Flush is the fsync policy.
	Flush FlushPolicy
	// ProducerIDExpiration is how long the state of an idle idempotent
	// producer is kept after its last batch's timestamp
	// (producer.id.expiration.ms); see Log.ExpireProducers.
	ProducerIDExpiration time.Duration
	// LogAppendTime stamps each leader append with the broker's clock
	// (message.timestamp.type=LogAppendTime) instead of keeping the
	// producer's CreateTime.
	LogAppendTime bool

	// CleanupPolicy is cleanup.policy (zero: delete). With compaction, the
	// leader refuses producer records without a key (INVALID_RECORD).
	CleanupPolicy CleanupPolicy
	// MinCleanableDirtyRatio is min.cleanable.dirty.ratio, in [0, 1]:
	// the share of a compacted log's cleanable bytes that must be dirty
	// (not yet cleaned) before it is cleaned. Zero means the default
	// (DefaultMinCleanableDirtyRatio); a negative value means 0 (clean
	// whenever anything is dirty). Read it with
	// EffectiveMinCleanableDirtyRatio.
	MinCleanableDirtyRatio float64
	// MinCompactionLag is min.compaction.lag.ms: a record younger than
	// this is never compacted away (zero, the default: no lag).
	MinCompactionLag time.Duration
	// MaxCompactionLag is max.compaction.lag.ms: a dirty record older
	// than this makes its log eligible for cleaning whatever its dirty
	// ratio. Zero means the default (DefaultMaxCompactionLag, no bound);
	// it must not be below MinCompactionLag.
	MaxCompactionLag time.Duration
	// DeleteRetention is delete.retention.ms: how long a tombstone (a
	// record with a null value) stays readable after its segment was
	// cleaned, so consumers see the delete. Zero means the default
	// (DefaultDeleteRetention); a negative value means 0 (tombstones go
	// at the next cleaning). Read it with EffectiveDeleteRetention.
	DeleteRetention time.Duration

	// FileIdleTimeout closes the log's files after this long without an
	// append or read (fsyncing them first); they reopen on demand. Sealed
	// segments' files close after it too. Default DefaultFileIdleTimeout;
	// negative keeps the active segment's files open for the log's life.
	FileIdleTimeout time.Duration
	// MaxOpenSealedSegments is how many sealed segments may keep their
	// .log file open at once for reads (default
	// DefaultMaxOpenSealedSegments, at least 1). A sealed segment's
	// index files are open only while written.
	MaxOpenSealedSegments int

	// Now is the clock (time.Now when nil); tests move it.
	Now func() time.Time
	// FS is the file system (OSFS when nil); tests inject faults.
	FS FS
	// Logger receives the log's messages (logrus.StandardLogger when nil).
	Logger *logrus.Entry
	// OnFail, when set, is called once, with the sticky error, when the
	// log fails (a write, fsync or rename failed; it refuses writes from
	// then on), so its owner can report the partition unhealthy. It runs
	// on the failing writer's goroutine with the log's writer lock held:
	// it must be quick and must not call into the log.
	OnFail func(err error)
	// HighWatermarks, when set, is the log's entry in the shared
	// high-watermark checkpoint of its data dir (hwcheckpoint.go), which
	// then holds its checkpointed high watermark instead of its own
	// high-watermark file.
	HighWatermarks *HighWatermarkSlot
}

// ErrInvalidConfig wraps every configuration error.
var ErrInvalidConfig = errors.New("storage: invalid config")

// EffectiveMinCleanableDirtyRatio is the min.cleanable.dirty.ratio c
// stands for: the default for zero, 0 for a negative value.
func (c Config) EffectiveMinCleanableDirtyRatio() float64 {
	switch {
	case c.MinCleanableDirtyRatio == 0:
		return DefaultMinCleanableDirtyRatio
	case c.MinCleanableDirtyRatio < 0:
		return 0
	}
	return c.MinCleanableDirtyRatio
}

// EffectiveDeleteRetention is the delete.retention.ms c stands for: the
// default for zero, 0 for a negative value.
func (c Config) EffectiveDeleteRetention() time.Duration {
	switch {
	case c.DeleteRetention == 0:
		return DefaultDeleteRetention
	case c.DeleteRetention < 0:
		return 0
	}
	return c.DeleteRetention
}

// EffectiveMaxCompactionLag is the max.compaction.lag.ms c stands for:
// the default (no bound) for zero.
func (c Config) EffectiveMaxCompactionLag() time.Duration {
	if c.MaxCompactionLag == 0 {
		return DefaultMaxCompactionLag
	}
	return c.MaxCompactionLag
}

// withDefaults fills zero fields with defaults and validates the result.
func (c Config) withDefaults() (Config, error) {
	if c.SegmentBytes == 0 {
		c.SegmentBytes = DefaultSegmentBytes
	}
	if c.SegmentAge == 0 {
		c.SegmentAge = DefaultSegmentAge
	}
	if c.Retention == 0 {
		c.Retention = DefaultRetention
	}
	if c.RetentionBytes == 0 {
		c.RetentionBytes = DefaultRetentionBytes
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if c.MaxInflatedBytes == 0 && c.MaxMessageBytes > 0 {
		c.MaxInflatedBytes = int(min(int64(c.MaxMessageBytes)*DefaultInflationFactor, record.MaxInflatedBytes))
	}
	if c.IndexIntervalBytes == 0 {
		c.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if c.ProducerIDExpiration == 0 {
		c.ProducerIDExpiration = DefaultProducerIDExpiration
	}
	if c.FileIdleTimeout == 0 {
		c.FileIdleTimeout = DefaultFileIdleTimeout
	}
	if c.MaxOpenSealedSegments == 0 {
		c.MaxOpenSealedSegments = DefaultMaxOpenSealedSegments
	}
	// MinCleanableDirtyRatio and DeleteRetention keep their zero and
	// negative forms (so that a filled Config fills to itself): read them
	// through the Effective methods.
	if c.MaxCompactionLag == 0 {
		c.MaxCompactionLag = DefaultMaxCompactionLag
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.FS == nil {
		c.FS = OSFS{}
	}
	if c.Logger == nil {
		c.Logger = logrus.NewEntry(logrus.StandardLogger())
	}
	switch {
	case c.SegmentBytes < record.HeaderSize || c.SegmentBytes > math.MaxInt32:
		return c, fmt.Errorf("%w: segment.bytes %d must be in [%d, %d]", ErrInvalidConfig, c.SegmentBytes, record.HeaderSize, math.MaxInt32)
	case c.SegmentAge < 0:
		return c, fmt.Errorf("%w: segment.ms %v must be positive", ErrInvalidConfig, c.SegmentAge)
	case c.ProducerIDExpiration < time.Millisecond:
		return c, fmt.Errorf("%w: producer.id.expiration.ms %v must be at least 1ms", ErrInvalidConfig, c.ProducerIDExpiration)
	case c.MaxMessageBytes < record.HeaderSize || c.MaxMessageBytes > math.MaxInt32-record.LogOverhead:
		return c, fmt.Errorf("%w: max.message.bytes %d out of range", ErrInvalidConfig, c.MaxMessageBytes)
	case c.MaxInflatedBytes < 1 || c.MaxInflatedBytes > record.MaxInflatedBytes:
		return c, fmt.Errorf("%w: max inflated bytes %d must be in [1, %d]", ErrInvalidConfig, c.MaxInflatedBytes, record.MaxInflatedBytes)
	case c.IndexIntervalBytes < 0:
		return c, fmt.Errorf("%w: index.interval.bytes %d must not be negative", ErrInvalidConfig, c.IndexIntervalBytes)
	case c.Flush.Mode == FlushInterval && c.Flush.Interval <= 0:
		return c, fmt.Errorf("%w: flush interval %v must be positive", ErrInvalidConfig, c.Flush.Interval)
	case c.MaxOpenSealedSegments < 1:
		return c, fmt.Errorf("%w: max open sealed segments %d must be at least 1", ErrInvalidConfig, c.MaxOpenSealedSegments)
	case c.Flush.Mode < FlushNever || c.Flush.Mode > FlushInterval:
		return c, fmt.Errorf("%w: unknown flush mode %d", ErrInvalidConfig, c.Flush.Mode)
	}
	return c, c.checkCompaction()
}

// checkCompaction validates the compaction settings of a Config whose
// MaxCompactionLag is filled.
func (c Config) checkCompaction() error {
	switch {
	case c.CleanupPolicy&^cleanupAll != 0:
		return fmt.Errorf("%w: unknown cleanup policy bits %#x", ErrInvalidConfig, uint8(c.CleanupPolicy))
	case math.IsNaN(c.MinCleanableDirtyRatio) || c.MinCleanableDirtyRatio > 1:
		return fmt.Errorf("%w: min.cleanable.dirty.ratio %v must be in [0, 1]", ErrInvalidConfig, c.MinCleanableDirtyRatio)
	case c.MinCompactionLag < 0:
		return fmt.Errorf("%w: min.compaction.lag.ms %v must not be negative", ErrInvalidConfig, c.MinCompactionLag)
	case c.MaxCompactionLag < time.Millisecond:
		return fmt.Errorf("%w: max.compaction.lag.ms %v must be at least 1ms", ErrInvalidConfig, c.MaxCompactionLag)
	case c.MaxCompactionLag < c.MinCompactionLag:
		return fmt.Errorf("%w: max.compaction.lag.ms %v is below min.compaction.lag.ms %v", ErrInvalidConfig, c.MaxCompactionLag, c.MinCompactionLag)
	}
	return nil
}
