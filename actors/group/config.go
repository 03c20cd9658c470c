// config.go holds the coordinator settings a Group follows (Kafka's group.*
// broker configs), their defaults and their validation.

package group

import (
	"crypto/rand"
	"errors"
	"fmt"
	"time"
)

// ErrInvalidConfig is returned (wrapped, with the offending setting) by
// Config.Validate and NewGroup.
var ErrInvalidConfig = errors.New("group: invalid config")

// Config holds the coordinator's group settings. Start from DefaultConfig:
// a zero field is a real value (InitialRebalanceDelay 0 means none), not a
// request for the default.
type Config struct {
	// InitialRebalanceDelay is Kafka's group.initial.rebalance.delay.ms: when
	// an empty group gets its first member, the join phase lasts this long
	// (extended by the same again, up to the rebalance timeout, while new
	// members keep arriving), so a starting fleet lands in one generation.
	// Default 3 s; 0 completes the join phase as soon as everyone is in.
	InitialRebalanceDelay time.Duration
	// MinSessionTimeout and MaxSessionTimeout bound the session timeout a
	// member may ask for (group.min/max.session.timeout.ms); outside them a
	// join fails with INVALID_SESSION_TIMEOUT. Defaults 6 s and 30 min.
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// MaxSize is group.max.size, the most members a group may have; 0 means
	// no limit (Kafka's default). Joins beyond it fail with
	// GROUP_MAX_SIZE_REACHED.
	MaxSize int
	// NewMemberJoinTimeout is how long a member that has never completed a
	// join may wait in the join phase before it is removed (Kafka's
	// NewMemberJoinTimeoutMs). Default 5 min.
	NewMemberJoinTimeout time.Duration
	// OffsetsRetention is Kafka's offsets.retention.minutes (KIP-211): the
	// committed offsets of a group expire once it has been Empty this long
	// (or, for offsets committed from outside group management to a group
	// that never had members, this long after each offset's commit), see
	// Group.ExpireOffsets. Default 7 days.
	OffsetsRetention time.Duration
	// OffsetsRetentionCheckInterval is Kafka's
	// offsets.retention.check.interval.ms: how often the coordinator (the
	// shell) calls ExpireOffsets on its groups. Default 10 min.
	OffsetsRetentionCheckInterval time.Duration
	// NewMemberID returns the id for a new member of client clientID. The
	// default is clientID + "-" + 26 random base32 characters, as Kafka's
	// clientId-UUID. Tests supply a deterministic one.
	NewMemberID func(clientID string) string
}

// Kafka's defaults of offsets.retention.minutes and
// offsets.retention.check.interval.ms.
const (
	DefaultOffsetsRetention              = 7 * 24 * time.Hour
	DefaultOffsetsRetentionCheckInterval = 10 * time.Minute
)

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		InitialRebalanceDelay: 3 * time.Second,
		MinSessionTimeout:     6 * time.Second,
		MaxSessionTimeout:     30 * time.Minute,
		NewMemberJoinTimeout:  5 * time.Minute,
		NewMemberID:           randomMemberID,

		OffsetsRetention:              DefaultOffsetsRetention,
		OffsetsRetentionCheckInterval: DefaultOffsetsRetentionCheckInterval,
	}
}

// randomMemberID is DefaultConfig's NewMemberID.
func randomMemberID(clientID string) string { return clientID + "-" + rand.Text() }

// Validate reports the first setting that is out of range, wrapping
// ErrInvalidConfig.
func (c Config) Validate() error {
	switch {
	case c.InitialRebalanceDelay < 0:
		return fmt.Errorf("%w: InitialRebalanceDelay %v is negative", ErrInvalidConfig, c.InitialRebalanceDelay)
	case c.MinSessionTimeout <= 0:
		return fmt.Errorf("%w: MinSessionTimeout %v is not positive", ErrInvalidConfig, c.MinSessionTimeout)
	case c.MaxSessionTimeout < c.MinSessionTimeout:
		return fmt.Errorf("%w: MaxSessionTimeout %v is below MinSessionTimeout %v",
			ErrInvalidConfig, c.MaxSessionTimeout, c.MinSessionTimeout)
	case c.MaxSize < 0:
		return fmt.Errorf("%w: MaxSize %d is negative", ErrInvalidConfig, c.MaxSize)
	case c.NewMemberJoinTimeout <= 0:
		return fmt.Errorf("%w: NewMemberJoinTimeout %v is not positive", ErrInvalidConfig, c.NewMemberJoinTimeout)
	case c.OffsetsRetention <= 0:
		return fmt.Errorf("%w: OffsetsRetention %v is not positive", ErrInvalidConfig, c.OffsetsRetention)
	case c.OffsetsRetentionCheckInterval <= 0:
		return fmt.Errorf("%w: OffsetsRetentionCheckInterval %v is not positive", ErrInvalidConfig, c.OffsetsRetentionCheckInterval)
	case c.NewMemberID == nil:
		return fmt.Errorf("%w: NewMemberID is nil", ErrInvalidConfig)
	}
	return nil
}
