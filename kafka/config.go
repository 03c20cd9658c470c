// config.go holds the Server's Config: its backend, logger and the limits
// a connection is held to, with Kafka's names and defaults, filled in and
// validated once by NewServer.

package kafka

import (
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
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
	// LogEvery rate-limits the lines about refused input and closed
	// connections: at most one per kind per LogEvery. Default
	// DefaultLogEvery.
	LogEvery time.Duration
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
	if c.LogEvery == 0 {
		c.LogEvery = DefaultLogEvery
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
	case c.LogEvery < 0:
		return fmt.Errorf("%w: log every %v: want positive", ErrBadConfig, c.LogEvery)
	}
	return nil
}
