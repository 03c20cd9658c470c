// logging.go holds the bridge from zap (what etcd's server and client log
// with) to logrus (what actorlog logs with): a zapcore.Core that forwards
// entries at or above a level to a logrus entry, with zap's fields as logrus
// fields and zap's logger name as the "component" field.

package cluster

import (
	"sync/atomic"

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
	return zap.New(&logrusCore{entry: entry, min: min, stopping: stopping})
}

// logrusCore is a zapcore.Core writing to logrus. It is immutable: With
// returns a new core.
type logrusCore struct {
	entry    *logrus.Entry
	min      zapcore.Level
	stopping *atomic.Bool
}

func (c *logrusCore) Enabled(l zapcore.Level) bool { return l >= c.min }

func (c *logrusCore) With(fields []zapcore.Field) zapcore.Core {
	return &logrusCore{entry: c.entry.WithFields(encodeFields(fields)), min: c.min, stopping: c.stopping}
}

func (c *logrusCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *logrusCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	entry := c.entry.WithFields(encodeFields(fields))
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
