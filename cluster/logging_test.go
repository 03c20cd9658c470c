// logging_test.go: the zap-to-logrus bridge.

package cluster

import (
	"errors"
	"sync/atomic"
	"testing"

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
