// slog.go: the bridge that routes protoactor's slog output into logrus
// (DESIGN §8), with its level lowered: protoactor logs a great deal at Info.

package client

import (
	"context"
	"log/slog"

	"github.com/sirupsen/logrus"
)

// slogHandler is a slog.Handler that forwards records to logrus. Records
// at slog Info and below go to logrus Debug: protoactor is chatty.
type slogHandler struct {
	entry *logrus.Entry
	group string
}

// NewSlogLogger returns a *slog.Logger that writes through entry.
func NewSlogLogger(entry *logrus.Entry) *slog.Logger {
	return slog.New(&slogHandler{entry: entry})
}

func (h *slogHandler) Enabled(_ context.Context, level slog.Level) bool {
	return h.entry.Logger.IsLevelEnabled(toLogrus(level))
}

func toLogrus(level slog.Level) logrus.Level {
	switch {
	case level >= slog.LevelError:
		return logrus.ErrorLevel
	case level >= slog.LevelWarn:
		return logrus.WarnLevel
	default:
		return logrus.DebugLevel
	}
}

// benign lists protoactor messages that report ordinary events at error
// level — a client closing its connection, or going away before a reply
// reached it — which are logged at debug. Hosts' liveness is judged by
// their etcd leases, not by these.
var benign = map[string]bool{
	"EndpointWriter lost connection":                 true,
	"EndpointWriter failed to connect":               true,
	"EndpointWriter failed to create receive stream": true,
}

func (h *slogHandler) Handle(_ context.Context, r slog.Record) error {
	level := toLogrus(r.Level)
	if benign[r.Message] {
		level = logrus.DebugLevel
		if !h.entry.Logger.IsLevelEnabled(level) {
			return nil
		}
	}
	fields := logrus.Fields{}
	r.Attrs(func(a slog.Attr) bool {
		fields[h.key(a.Key)] = a.Value.Any()
		return true
	})
	h.entry.WithFields(fields).Log(level, r.Message)
	return nil
}

func (h *slogHandler) key(k string) string {
	if h.group == "" {
		return k
	}
	return h.group + "." + k
}

func (h *slogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	fields := logrus.Fields{}
	for _, a := range attrs {
		fields[h.key(a.Key)] = a.Value.Any()
	}
	return &slogHandler{entry: h.entry.WithFields(fields), group: h.group}
}

func (h *slogHandler) WithGroup(name string) slog.Handler {
	return &slogHandler{entry: h.entry, group: h.key(name)}
}
