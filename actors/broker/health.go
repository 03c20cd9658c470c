// health.go: what the broker knows of its partitions' health, for the
// host's /healthz — partitions whose replica is not running although it
// should (its directory could not be prepared, its log failed to open, or
// the actor stopped unexpectedly and waits to be reopened), partitions
// whose log failed (a sticky write error: the log refuses writes), and a
// shared high-watermark checkpoint that cannot be written.

package broker

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Health is the partitions' health as the broker sees it. Safe for
// concurrent use: the broker writes it on its goroutine, a failing log
// from its writer's goroutine (storage.Config.OnFail), and the host's
// /healthz reads it from HTTP handlers, never waiting on the actor.
//
// Invariant: an entry names a partition this broker should run; the broker
// clears it once the replica opened its log or the partition left this
// host.
type Health struct {
	mu sync.Mutex
	// down: partitions whose replica should run but does not, and why.
	down map[tp]string
	// failedLogs: partitions whose log failed, and its sticky error.
	failedLogs map[tp]string
	// checkpoint is the shared high-watermark checkpoint whose failed
	// writes are a problem too (nil: none).
	checkpoint checkpointHealth
}

// checkpointHealth is what Health asks the shared high-watermark
// checkpoint (storage.HighWatermarkCheckpoints).
type checkpointHealth interface {
	WriteFailure() (since time.Time, failures int, err error)
}

// NewHealth returns an empty (healthy) Health.
func NewHealth() *Health {
	return &Health{down: map[tp]string{}, failedLogs: map[tp]string{}}
}

// Problems returns one line per unhealthy partition, sorted, at most
// limit of them (nil when all are healthy), and how many there are.
func (h *Health) Problems(limit int) (lines []string, total int) {
	h.mu.Lock()
	out := make([]string, 0, len(h.down)+len(h.failedLogs))
	for key, why := range h.down {
		out = append(out, fmt.Sprintf("partition %s-%d: replica not running: %s", key.topic, key.partition, why))
	}
	for key, why := range h.failedLogs {
		out = append(out, fmt.Sprintf("partition %s-%d: log failed: %s", key.topic, key.partition, why))
	}
	cp := h.checkpoint
	h.mu.Unlock()
	if cp != nil {
		if since, n, err := cp.WriteFailure(); err != nil {
			out = append(out, fmt.Sprintf("high-watermark checkpoint: %d writes in a row failed since %s: %v",
				n, since.UTC().Format(time.RFC3339), err))
		}
	}
	slices.SortFunc(out, strings.Compare)
	if len(out) == 0 {
		return nil, 0
	}
	return out[:min(len(out), max(limit, 0))], len(out)
}

// watchCheckpoint makes the shared high-watermark checkpoint's failed
// writes a problem.
func (h *Health) watchCheckpoint(c checkpointHealth) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.checkpoint = c
}

// setDown records that key's replica does not run; a later call for key
// replaces the reason only if override is set (an open error explains
// more than "stopped unexpectedly").
func (h *Health) setDown(key tp, why string, override bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.down[key]; ok && !override {
		return
	}
	h.down[key] = why
}

// setUp records that key's replica opened its log.
func (h *Health) setUp(key tp) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.down, key)
}

// logFailed records key's log's sticky error.
func (h *Health) logFailed(key tp, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failedLogs[key] = err.Error()
}

// forget drops everything known of key (its replica stopped for good or
// is being replaced by a new one that reopens the log).
func (h *Health) forget(key tp) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.down, key)
	delete(h.failedLogs, key)
}

// reset drops everything: a new broker incarnation starts with no
// replica and reopens them all.
func (h *Health) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	clear(h.down)
	clear(h.failedLogs)
}
