// cleaner_test.go: the host's cleaner pool (cleaner.go) and the Throttle
// hook of CleanOptions. It checks that registered logs are cleaned in the
// background up to the high watermark their registration reports (one
// reporting 0 is left alone), with one reused offset map; that the
// observer sees the cleanings, the dirty ratios and the unregistrations;
// that the throttle hook is paid for every byte a cleaning reads and
// writes, and its error aborts the cleaning; that unregistering a log
// while its cleaning runs (held back by the I/O bound) aborts it quickly,
// leaves the log as it was and no cleaned files behind; and the token
// bucket's arithmetic.

package storage

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/actorlog/actorlog/internal/poll"
)

// recObserver records what a cleaner reports.
type recObserver struct {
	mu      sync.Mutex
	cleaned map[string]CompactStats
	ratios  map[string]float64
	forgot  map[string]bool
}

func newRecObserver() *recObserver {
	return &recObserver{cleaned: map[string]CompactStats{}, ratios: map[string]float64{}, forgot: map[string]bool{}}
}

func (o *recObserver) LogCleaned(topic string, p int32, st CompactStats, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := fmt.Sprintf("%s-%d", topic, p)
	prev := o.cleaned[k]
	prev.Groups += st.Groups
	prev.TombstonesRemoved += st.TombstonesRemoved
	prev.BytesIn += st.BytesIn
	o.cleaned[k] = prev
}

func (o *recObserver) DirtyRatio(topic string, p int32, r float64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ratios[fmt.Sprintf("%s-%d", topic, p)] = r
}

func (o *recObserver) ForgetLog(topic string, p int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.forgot[fmt.Sprintf("%s-%d", topic, p)] = true
}

func TestCleanerCleansRegisteredLogs(t *testing.T) {
	now := cmpT0 + int64(2*time.Hour/time.Millisecond)
	obs := newRecObserver()
	c, err := NewCleaner(CleanerConfig{Threads: 1, Backoff: 20 * time.Millisecond, DedupeBufferBytes: 1 << 16, Observer: obs, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	c.Start()
	defer c.Stop()
	var logs []*Log
	var wants []map[string]string
	for i := 0; i < 3; i++ {
		l := openLog(t, t.TempDir(), clnConfig(1<<20, now))
		clnFill(t, l, 40, 4, 10, cmpT0)
		recs, _ := cmpReadLog(t, l)
		logs, wants = append(logs, l), append(wants, cmpLatest(recs))
	}
	// Logs 0 and 1 are cleaned to their end; log 2's high watermark is 0.
	var unreg []func()
	for i, l := range logs {
		hw := func() int64 { return l.LogEndOffset() }
		if i == 2 {
			hw = func() int64 { return 0 }
		}
		unreg = append(unreg, c.Register("t", int32(i), l, hw))
	}
	poll.Until(t, 10*time.Second, func() error {
		for _, l := range logs[:2] {
			if fd, err := l.FirstDirtyOffset(); err != nil || fd != 40 {
				return fmt.Errorf("first dirty offset %d (%v), want 40", fd, err)
			}
		}
		obs.mu.Lock()
		defer obs.mu.Unlock()
		if len(obs.ratios) != 3 || obs.ratios["t-0"] != 0 || obs.ratios["t-1"] != 0 {
			return fmt.Errorf("ratios %v", obs.ratios)
		}
		return nil
	})
	for i, l := range logs {
		recs, _ := cmpReadLog(t, l)
		cmpSameMap(t, cmpLatest(recs), wants[i])
		if i < 2 && len(recs) != 4 {
			t.Fatalf("log %d: %d records after cleaning, want one per key (4)", i, len(recs))
		}
	}
	if fd, err := logs[2].FirstDirtyOffset(); err != nil || fd != 0 {
		t.Fatalf("log 2 (high watermark 0) cleaned to %d (%v)", fd, err)
	}
	obs.mu.Lock()
	if obs.cleaned["t-0"].Groups == 0 || obs.cleaned["t-1"].Groups == 0 || obs.cleaned["t-2"].Groups != 0 {
		t.Errorf("cleanings seen: %+v", obs.cleaned)
	}
	if obs.ratios["t-2"] != 0 { // nothing below its high watermark is cleanable
		t.Errorf("log 2's ratio %v", obs.ratios["t-2"])
	}
	obs.mu.Unlock()
	for _, u := range unreg {
		u()
		u() // twice is harmless
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.forgot) != 3 {
		t.Errorf("forgotten: %v", obs.forgot)
	}
}

func TestCleanerUnregisterAbortsCleaning(t *testing.T) {
	now := cmpT0 + int64(2*time.Hour/time.Millisecond)
	dir := t.TempDir()
	l := openLog(t, dir, clnConfig(1<<20, now))
	clnFill(t, l, 200, 7, 20, cmpT0)
	before, _ := cmpReadLog(t, l)
	// 64 bytes a second: the cleaning crawls, so it is surely running
	// when the log is unregistered.
	c, err := NewCleaner(CleanerConfig{Backoff: 10 * time.Millisecond, DedupeBufferBytes: 1 << 16, IOBytesPerSecond: 64, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	c.Start()
	defer c.Stop()
	unreg := c.Register("t", 0, l, l.LogEndOffset)
	poll.Until(t, 5*time.Second, func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		for e := range c.logs {
			if e.done != nil {
				return nil
			}
		}
		return fmt.Errorf("no cleaning in progress")
	})
	start := time.Now()
	unreg()
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("unregister took %v", took)
	}
	if fd, err := l.FirstDirtyOffset(); err != nil || fd != 0 {
		t.Fatalf("first dirty offset %d (%v) after an aborted cleaning", fd, err)
	}
	after, _ := cmpReadLog(t, l)
	if cmpRecsString(after) != cmpRecsString(before) {
		t.Fatalf("the log changed under an aborted cleaning")
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), cleanedSuffix) || strings.HasSuffix(e.Name(), swapSuffix) {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	if err := l.Close(); err != nil {
		t.Fatalf("close after the abort: %v", err)
	}
}

func TestCleanerConfig(t *testing.T) {
	if _, err := NewCleaner(CleanerConfig{IOBytesPerSecond: -1}); err == nil {
		t.Error("negative I/O bound accepted")
	}
	if _, err := NewCleaner(CleanerConfig{Threads: 4, DedupeBufferBytes: 100}); err == nil {
		t.Error("a dedupe buffer too small for the threads accepted")
	}
	c, err := NewCleaner(CleanerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if c.cfg.Threads != 1 || c.cfg.Backoff != DefaultCleanerBackoff || c.cfg.DedupeBufferBytes != DefaultDedupeBufferBytes || c.bucket != nil {
		t.Errorf("defaults: %+v", c.cfg)
	}
}

func TestTokenBucket(t *testing.T) {
	clock := time.UnixMilli(0)
	b := newTokenBucket(1000, func() time.Time { return clock })
	if d := b.reserve(1000); d != 0 { // the burst
		t.Fatalf("first second's bytes wait %v", d)
	}
	if d := b.reserve(500); d != 500*time.Millisecond {
		t.Fatalf("500 bytes of debt wait %v, want 500ms", d)
	}
	clock = clock.Add(2 * time.Second) // pays the debt, refills up to the burst only
	if d := b.reserve(1000); d != 0 {
		t.Fatalf("after the refill: wait %v", d)
	}
	if d := b.reserve(1); d <= 0 {
		t.Fatalf("the burst is capped at a second: wait %v", d)
	}
	abort := make(chan struct{})
	close(abort)
	if err := b.take(1000, abort, nil); err == nil || !strings.Contains(err.Error(), "unregistered") {
		t.Fatalf("take with an abort: %v", err)
	}
}

// TestCleanThrottleSeesTheIO checks that CleanOptions.Throttle is paid for
// every byte a cleaning reads and writes (the segments it rewrites are read
// at least once and the cleaned ones written), and that its error ends the
// cleaning with nothing swapped in.
func TestCleanThrottleSeesTheIO(t *testing.T) {
	now := cmpT0 + int64(2*time.Hour/time.Millisecond)
	l := openLog(t, t.TempDir(), clnConfig(1<<20, now))
	clnFill(t, l, 60, 5, 20, cmpT0)
	var n int64
	st, err := l.Clean(CleanOptions{HighWatermark: -1, Throttle: func(b int) error { n += int64(b); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if st.Groups == 0 || n < st.BytesIn+st.BytesOut {
		t.Fatalf("throttle saw %d bytes of a cleaning of %d bytes into %d (%+v)", n, st.BytesIn, st.BytesOut, st)
	}

	l2 := openLog(t, t.TempDir(), clnConfig(1<<20, now))
	clnFill(t, l2, 60, 5, 20, cmpT0)
	before, _ := cmpReadLog(t, l2)
	calls := 0
	_, err = l2.Clean(CleanOptions{HighWatermark: -1, Throttle: func(int) error {
		if calls++; calls > 3 {
			return fmt.Errorf("%w: test", ErrCleanAborted)
		}
		return nil
	}})
	if !errors.Is(err, ErrCleanAborted) {
		t.Fatalf("clean with a failing throttle: %v", err)
	}
	after, _ := cmpReadLog(t, l2)
	if cmpRecsString(after) != cmpRecsString(before) {
		t.Fatal("an aborted cleaning changed the log")
	}
}
