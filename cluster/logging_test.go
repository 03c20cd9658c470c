// logging_test.go: the zap-to-logrus bridge.

package cluster

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

func TestZapToLogrus(t *testing.T) {
	l, hook := test.NewNullLogger()
	l.SetLevel(logrus.DebugLevel)
	stopping := new(atomic.Bool)
	z := newZapLogger(logrus.NewEntry(l).WithField("base", 1), zapcore.WarnLevel, stopping).Named("etcd-server")

	z.Info("dropped: below warn")
	z.With(zap.String("peer", "p1")).Warn("peer slow", zap.Int("rtt_ms", 7), zap.Error(errors.New("boom")))
	z.Error("broken")
	z.Warn("simple token is not cryptographically signed")
	stopping.Store(true)
	z.Error("setting up serving from embedded etcd failed.")

	entries := hook.AllEntries()
	if len(entries) != 4 {
		t.Fatalf("%d entries, want 4: %v", len(entries), entries)
	}
	want := []struct {
		msg   string
		level logrus.Level
	}{
		{"peer slow", logrus.WarnLevel},
		{"broken", logrus.ErrorLevel},
		{"simple token is not cryptographically signed", logrus.InfoLevel},
		{"setting up serving from embedded etcd failed.", logrus.InfoLevel},
	}
	for i, w := range want {
		if entries[i].Message != w.msg || entries[i].Level != w.level {
			t.Errorf("entry %d: %q at %v, want %q at %v", i, entries[i].Message, entries[i].Level, w.msg, w.level)
		}
	}
	f := entries[0].Data
	if f["base"] != 1 || f["peer"] != "p1" || f["rtt_ms"] != int64(7) || f["error"] != "boom" || f["component"] != "etcd-server" {
		t.Errorf("fields %v", f)
	}
}

// TestZapToLogrusRateLimit: one message text is written logBurst times a
// window; the next line after a suppression counts what was dropped;
// other messages are not affected; With-derived loggers share the limit.
func TestZapToLogrusRateLimit(t *testing.T) {
	l, hook := test.NewNullLogger()
	now := time.Unix(1000, 0)
	core := &logrusCore{entry: logrus.NewEntry(l), min: zapcore.WarnLevel, stopping: new(atomic.Bool),
		limit: newLogLimiter(func() time.Time { return now })}
	z := zap.New(core)
	for i := range 100 {
		z.With(zap.Int("conn", i)).Warn("rejected connection on client endpoint")
	}
	z.Warn("another warning")
	if n := len(hook.AllEntries()); n != logBurst+1 {
		t.Fatalf("%d lines for 100 refused connections and one other warning, want %d", n, logBurst+1)
	}
	now = now.Add(logWindow)
	z.Warn("rejected connection on client endpoint")
	last := hook.LastEntry()
	if last.Message != "rejected connection on client endpoint" || last.Data["suppressed"] != 100-logBurst {
		t.Errorf("first line of the next window: %q suppressed=%v, want %d", last.Message, last.Data["suppressed"], 100-logBurst)
	}
	z.Warn("rejected connection on client endpoint")
	if _, ok := hook.LastEntry().Data["suppressed"]; ok {
		t.Error("a line after one without suppression carries a suppressed count")
	}
}
