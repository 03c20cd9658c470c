// cleaner.go: the host's log cleaner (issue 14, step 4; Kafka's LogCleaner
// and its CleanerThreads). A small pool of goroutines, off every replica's
// request path, to which the replicas of compacted topics register their
// open logs:
//
//   - Every Backoff (log.cleaner.backoff.ms), and at once after a cleaning
//     that made progress, a thread looks at every registered log that no
//     other thread is cleaning, publishes its dirty ratio (Observer), and
//     cleans the one most in need: one past max.compaction.lag.ms first,
//     else the dirtiest whose CleanableInfo.ShouldClean holds. It cleans up
//     to the log's high watermark as the registration reports it.
//   - Memory: DedupeBufferBytes (log.cleaner.dedupe.buffer.size) is shared
//     by the threads; each allocates its share as one OffsetMap at its
//     first cleaning and reuses it.
//   - I/O: IOBytesPerSecond (log.cleaner.io.max.bytes.per.second) bounds
//     the bytes all threads read and write together, a token bucket with
//     one second of burst that a cleaning pays as it goes (the Throttle
//     hook of CleanOptions).
//   - Unregistering (a replica stopping) aborts the log's cleaning at its
//     next read, write or swap, quietly (ErrCleanAborted), and waits for
//     it to end, so the log can be closed with no cleaning inside.
//   - A cleaning that fails otherwise is logged, and the log is retried
//     after a growing pause (Backoff doubled per failure, up to
//     cleanerMaxRetry) rather than at every round.

package storage

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// DefaultCleanerBackoff is how long a cleaner thread sleeps when no log
// needs cleaning (Kafka's log.cleaner.backoff.ms).
const DefaultCleanerBackoff = 15 * time.Second

// cleanerMaxRetry bounds the pause before a log whose cleaning failed is
// tried again.
const cleanerMaxRetry = 10 * time.Minute

// CleanerObserver receives what the cleaner does, for metrics. It must be
// safe for concurrent use.
type CleanerObserver interface {
	// LogCleaned reports one cleaning that swapped something in or moved
	// the checkpoint.
	LogCleaned(topic string, partition int32, stats CompactStats, took time.Duration)
	// DirtyRatio reports a registered log's dirty ratio.
	DirtyRatio(topic string, partition int32, ratio float64)
	// ForgetLog says the log is no longer registered.
	ForgetLog(topic string, partition int32)
}

// CleanerConfig configures a Cleaner. Zero values mean defaults.
type CleanerConfig struct {
	// Threads is how many logs may be cleaned at once (default 1).
	Threads int
	// Backoff is the pause between rounds with nothing to clean (default
	// DefaultCleanerBackoff).
	Backoff time.Duration
	// DedupeBufferBytes is the offset maps' budget, shared by the threads
	// (default DefaultDedupeBufferBytes).
	DedupeBufferBytes int
	// IOBytesPerSecond bounds the cleaning I/O of all threads (0: no
	// bound).
	IOBytesPerSecond int64
	// Observer receives the cleanings and dirty ratios (optional).
	Observer CleanerObserver
	// Logger (logrus.StandardLogger when nil).
	Logger *logrus.Entry
}

// Cleaner cleans the logs registered with it; see the file comment.
type Cleaner struct {
	cfg    CleanerConfig
	bucket *tokenBucket
	stop   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once

	mu   sync.Mutex
	logs map[*cleanerEntry]struct{}
}

// cleanerEntry is one registered log.
type cleanerEntry struct {
	topic     string
	partition int32
	log       *Log
	hw        func() int64
	gone      chan struct{} // closed by the unregistration

	// Guarded by Cleaner.mu.
	done       chan struct{} // non-nil while a thread cleans the log; closed at the end
	retryAfter time.Time     // after a failed cleaning
	failures   int
}

// NewCleaner returns a cleaner; Start runs its threads.
func NewCleaner(cfg CleanerConfig) (*Cleaner, error) {
	if cfg.Threads <= 0 {
		cfg.Threads = 1
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = DefaultCleanerBackoff
	}
	if cfg.DedupeBufferBytes <= 0 {
		cfg.DedupeBufferBytes = DefaultDedupeBufferBytes
	}
	if cfg.IOBytesPerSecond < 0 {
		return nil, fmt.Errorf("storage: cleaner I/O bound %d bytes/s: want 0 (none) or more", cfg.IOBytesPerSecond)
	}
	if per := cfg.DedupeBufferBytes / cfg.Threads; per/offsetMapSlotBytes < 2 {
		return nil, fmt.Errorf("storage: cleaner dedupe buffer of %d bytes over %d threads leaves %d bytes a thread, too few for an offset map", cfg.DedupeBufferBytes, cfg.Threads, per)
	}
	if cfg.Logger == nil {
		cfg.Logger = logrus.NewEntry(logrus.StandardLogger())
	}
	c := &Cleaner{cfg: cfg, stop: make(chan struct{}), logs: map[*cleanerEntry]struct{}{}}
	if cfg.IOBytesPerSecond > 0 {
		c.bucket = newTokenBucket(float64(cfg.IOBytesPerSecond), time.Now)
	}
	return c, nil
}

// Start runs the cleaner threads until Stop.
func (c *Cleaner) Start() {
	for i := 0; i < c.cfg.Threads; i++ {
		c.wg.Add(1)
		go c.thread(i)
	}
}

// Stop aborts the cleanings in progress and waits for the threads to end.
func (c *Cleaner) Stop() {
	c.once.Do(func() { close(c.stop) })
	c.wg.Wait()
}

// Register has the cleaner clean l, the log of topic's partition, up to
// the high watermark hw reports (called from the cleaner's goroutines:
// it must be safe to call from any goroutine). The returned function
// unregisters it, aborting and waiting for a cleaning of it in progress;
// call it before closing l. It may be called more than once.
func (c *Cleaner) Register(topic string, partition int32, l *Log, hw func() int64) (unregister func()) {
	e := &cleanerEntry{topic: topic, partition: partition, log: l, hw: hw, gone: make(chan struct{})}
	c.mu.Lock()
	c.logs[e] = struct{}{}
	c.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { c.unregister(e) }) }
}

// Busy is how many logs are being cleaned now.
func (c *Cleaner) Busy() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for e := range c.logs {
		if e.done != nil {
			n++
		}
	}
	return n
}

func (c *Cleaner) unregister(e *cleanerEntry) {
	c.mu.Lock()
	delete(c.logs, e)
	close(e.gone)
	done := e.done
	c.mu.Unlock()
	if done != nil {
		<-done
	}
	if c.cfg.Observer != nil {
		c.cfg.Observer.ForgetLog(e.topic, e.partition)
	}
}

// thread is one cleaner thread.
func (c *Cleaner) thread(i int) {
	defer c.wg.Done()
	logger := c.cfg.Logger.WithField("cleaner_thread", i)
	var m *OffsetMap
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-timer.C:
		}
		e, info := c.pick()
		if e == nil {
			timer.Reset(c.cfg.Backoff)
			continue
		}
		if m == nil {
			var err error
			if m, err = NewOffsetMap(c.cfg.DedupeBufferBytes / c.cfg.Threads); err != nil {
				logger.WithError(err).Error("log cleaner: no offset map; this thread stops")
				c.release(e, false)
				return
			}
		}
		progress := c.clean(e, info, m, logger)
		c.release(e, progress)
		if progress {
			timer.Reset(0)
		} else {
			timer.Reset(c.cfg.Backoff)
		}
	}
}

// pick publishes the dirty ratio of each registered log no thread is
// cleaning, and claims the one to clean (nil: none needs it now).
func (c *Cleaner) pick() (*cleanerEntry, CleanableInfo) {
	now := time.Now()
	c.mu.Lock()
	var cands []*cleanerEntry
	for e := range c.logs {
		if e.done == nil {
			cands = append(cands, e)
		}
	}
	c.mu.Unlock()
	type cand struct {
		e    *cleanerEntry
		info CleanableInfo
	}
	var todo []cand
	for _, e := range cands {
		info, err := e.log.CleanableInfo(CleanOptions{HighWatermark: e.hw()})
		if err != nil {
			if !errors.Is(err, ErrClosed) {
				c.cfg.Logger.WithError(err).WithFields(logrus.Fields{"topic": e.topic, "partition": e.partition}).
					Debug("log cleaner: cannot tell how dirty a log is")
			}
			continue
		}
		c.mu.Lock()
		_, live := c.logs[e]
		retry := e.retryAfter
		c.mu.Unlock()
		if !live {
			continue
		}
		if c.cfg.Observer != nil {
			c.cfg.Observer.DirtyRatio(e.topic, e.partition, info.Ratio)
		}
		if info.ShouldClean && !now.Before(retry) {
			todo = append(todo, cand{e, info})
		}
	}
	sort.SliceStable(todo, func(i, j int) bool {
		if todo[i].info.MaxLagExceeded != todo[j].info.MaxLagExceeded {
			return todo[i].info.MaxLagExceeded
		}
		return todo[i].info.Ratio > todo[j].info.Ratio
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range todo {
		if _, live := c.logs[t.e]; live && t.e.done == nil {
			t.e.done = make(chan struct{})
			return t.e, t.info
		}
	}
	return nil, CleanableInfo{}
}

// release ends a thread's claim on e.
func (c *Cleaner) release(e *cleanerEntry, progress bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	close(e.done)
	e.done = nil
	if progress {
		e.failures, e.retryAfter = 0, time.Time{}
	}
}

// clean cleans e once and reports whether it made progress (moved the
// checkpoint). A failure other than an abort delays the log's next try.
func (c *Cleaner) clean(e *cleanerEntry, info CleanableInfo, m *OffsetMap, logger *logrus.Entry) bool {
	log := logger.WithFields(logrus.Fields{"topic": e.topic, "partition": e.partition})
	hook := func(n int) error {
		select {
		case <-e.gone:
			return fmt.Errorf("%w: the log was unregistered", ErrCleanAborted)
		case <-c.stop:
			return fmt.Errorf("%w: the cleaner stopped", ErrCleanAborted)
		default:
		}
		if c.bucket != nil && n > 0 {
			return c.bucket.take(n, e.gone, c.stop)
		}
		return nil
	}
	start := time.Now()
	stats, err := e.log.Clean(CleanOptions{HighWatermark: e.hw(), OffsetMap: m, Throttle: hook})
	took := time.Since(start)
	switch {
	case err == nil:
	case errors.Is(err, ErrCleanAborted) || errors.Is(err, ErrClosed):
		log.WithError(err).Debug("log cleaner: cleaning aborted")
		return false
	default:
		c.mu.Lock()
		e.failures++
		wait := min(c.cfg.Backoff<<min(e.failures, 16), cleanerMaxRetry)
		e.retryAfter = time.Now().Add(wait)
		c.mu.Unlock()
		log.WithError(err).WithField("retry_in", wait).Warn("log cleaner: cleaning failed")
		return false
	}
	progress := stats.EndOffset > info.FirstDirty
	if c.cfg.Observer != nil && (progress || stats.Groups > 0) {
		c.cfg.Observer.LogCleaned(e.topic, e.partition, stats, took)
	}
	if !progress {
		// Dirty by the numbers but nothing to do now (e.g. min lag):
		// look again after a backoff, not at once.
		c.mu.Lock()
		e.retryAfter = time.Now().Add(c.cfg.Backoff)
		c.mu.Unlock()
	}
	return progress
}

// tokenBucket bounds a byte rate: takers go into debt and sleep it off.
type tokenBucket struct {
	rate   float64 // bytes per second, also the burst
	now    func() time.Time
	mu     sync.Mutex
	tokens float64
	last   time.Time
}

func newTokenBucket(rate float64, now func() time.Time) *tokenBucket {
	return &tokenBucket{rate: rate, now: now, tokens: rate, last: now()}
}

// reserve takes n bytes and returns how long the taker must wait.
func (b *tokenBucket) reserve(n int) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	b.tokens = min(b.rate, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	b.last = now
	b.tokens -= float64(n)
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / b.rate * float64(time.Second))
}

// take waits for n bytes, or until abort or stop is closed (an error
// wrapping ErrCleanAborted).
func (b *tokenBucket) take(n int, abort, stop <-chan struct{}) error {
	d := b.reserve(n)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-abort:
		return fmt.Errorf("%w: the log was unregistered", ErrCleanAborted)
	case <-stop:
		return fmt.Errorf("%w: the cleaner stopped", ErrCleanAborted)
	}
}
