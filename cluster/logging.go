// logging.go holds the bridge from zap (what etcd's server and client log
// with) to logrus (what actorlog logs with): a zapcore.Core that forwards
// entries at or above a level to a logrus entry, with zap's fields as logrus
// fields and zap's logger name as the "component" field. Each message text
// is logged at most logBurst times per logWindow: a flood of one warning
// (etcd logs every refused TLS handshake, so anyone who can reach its
// ports could fill the disk) is cut to a few lines, the next one logged
// counting what was suppressed.

package cluster

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newZapLogger returns a zap logger that writes entries at min or above
// to entry. Safe for concurrent use (logrus entries are). Once *stopping is
// set, warnings and errors are logged at info: a member being stopped
// reports its closed listeners and connections as errors, which they are
// not.
func newZapLogger(entry *logrus.Entry, min zapcore.Level, stopping *atomic.Bool) *zap.Logger {
	return zap.New(&logrusCore{entry: entry, min: min, stopping: stopping, limit: newLogLimiter(time.Now)})
}

// The per-message rate limit of the bridge.
const (
	logWindow = 10 * time.Second
	logBurst  = 5
	// logLimitKeys bounds the messages tracked; etcd's texts are
	// constants, so it is only reached if one embeds varying data.
	logLimitKeys = 1024
)

// logLimiter counts each message text's lines in the current window.
type logLimiter struct {
	now func() time.Time
	mu  sync.Mutex
	by  map[string]*logCount
}

type logCount struct {
	windowStart time.Time
	logged      int
	suppressed  int
}

func newLogLimiter(now func() time.Time) *logLimiter {
	return &logLimiter{now: now, by: make(map[string]*logCount)}
}

// allow reports whether a line of msg may be written now and, when it
// may, how many were suppressed since the last one written.
func (l *logLimiter) allow(msg string) (ok bool, suppressed int) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.by[msg]
	if c == nil {
		if len(l.by) >= logLimitKeys {
			for k, v := range l.by {
				if now.Sub(v.windowStart) >= logWindow && v.suppressed == 0 {
					delete(l.by, k)
				}
			}
		}
		if len(l.by) >= logLimitKeys {
			return false, 0
		}
		c = &logCount{windowStart: now}
		l.by[msg] = c
	}
	if now.Sub(c.windowStart) >= logWindow {
		c.windowStart, c.logged = now, 0
	}
	if c.logged >= logBurst {
		c.suppressed++
		return false, 0
	}
	c.logged++
	suppressed, c.suppressed = c.suppressed, 0
	return true, suppressed
}

// logrusCore is a zapcore.Core writing to logrus. It is immutable: With
// returns a new core (sharing the rate limit).
type logrusCore struct {
	entry    *logrus.Entry
	min      zapcore.Level
	stopping *atomic.Bool
	limit    *logLimiter
}

func (c *logrusCore) Enabled(l zapcore.Level) bool { return l >= c.min }

func (c *logrusCore) With(fields []zapcore.Field) zapcore.Core {
	return &logrusCore{entry: c.entry.WithFields(encodeFields(fields)), min: c.min, stopping: c.stopping, limit: c.limit}
}

func (c *logrusCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *logrusCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	ok, suppressed := c.limit.allow(e.Message)
	if !ok {
		return nil
	}
	entry := c.entry.WithFields(encodeFields(fields))
	if suppressed > 0 {
		entry = entry.WithField("suppressed", suppressed)
	}
	if e.LoggerName != "" {
		entry = entry.WithField("component", e.LoggerName)
	}
	level := logrusLevel(e.Level)
	if (benign[e.Message] || c.stopping.Load()) && level < logrus.InfoLevel {
		level = logrus.InfoLevel
	}
	entry.Log(level, e.Message)
	return nil
}

// benign lists etcd warnings every embedded member logs at start by design
// (one listener for gRPC and HTTP; no TLS-signed auth tokens since auth is
// off): logged at info so that warn level stays for real trouble.
var benign = map[string]bool{
	"Running http and grpc server on single port. This is not recommended for production.": true,
	"simple token is not cryptographically signed":                                         true,
}

func (c *logrusCore) Sync() error { return nil }

// encodeFields turns zap fields into logrus fields.
func encodeFields(fields []zapcore.Field) logrus.Fields {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fields {
		f.AddTo(enc)
	}
	return logrus.Fields(enc.Fields)
}

// logrusLevel maps zap's levels to logrus's. DPanic, Panic and Fatal log
// as errors: zap itself panics or exits after writing them, and logrus
// must not do it a second time.
func logrusLevel(l zapcore.Level) logrus.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return logrus.DebugLevel
	case l == zapcore.InfoLevel:
		return logrus.InfoLevel
	case l == zapcore.WarnLevel:
		return logrus.WarnLevel
	}
	return logrus.ErrorLevel
}
