// health_test.go: the shared high-watermark checkpoint's failed writes
// are one of Health's problems, and only while they fail.

package broker

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// fakeCheckpoint is a checkpointHealth whose answer the test sets.
type fakeCheckpoint struct {
	err   error
	since time.Time
	n     int
}

func (f *fakeCheckpoint) WriteFailure() (time.Time, int, error) { return f.since, f.n, f.err }

func TestHealthReportsFailingCheckpoint(t *testing.T) {
	h := NewHealth()
	cp := &fakeCheckpoint{}
	h.watchCheckpoint(cp)
	if lines, total := h.Problems(10); total != 0 || lines != nil {
		t.Fatalf("healthy checkpoint: problems %q", lines)
	}
	cp.err, cp.since, cp.n = errors.New("sync replication-offset-checkpoint.tmp: no space left on device"),
		time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC), 3
	h.setDown(tp{topic: "a", partition: 1}, "log failed to open", false)
	lines, total := h.Problems(10)
	if total != 2 || len(lines) != 2 {
		t.Fatalf("problems %q (total %d), want the replica and the checkpoint", lines, total)
	}
	want := "high-watermark checkpoint: 3 writes in a row failed since 2026-12-03T07:00:00Z: sync replication-offset-checkpoint.tmp: no space left on device"
	if !strings.Contains(strings.Join(lines, "\n"), want) {
		t.Fatalf("problems %q lack %q", lines, want)
	}
	cp.err, cp.n = nil, 0
	if lines, total := h.Problems(10); total != 1 || strings.Contains(lines[0], "checkpoint") {
		t.Fatalf("after the checkpoint recovered: %q", lines)
	}
}
