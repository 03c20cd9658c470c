// hwcheckpoint.go: the high-watermark checkpoint shared by every partition
// log of a data directory, as Kafka's replication-offset-checkpoint: one
// file, "replication-offset-checkpoint" in the data dir, in Kafka's text
// format:
//
//	0                      (version)
//	<count>
//	<topic> <partition> <high watermark>   (count lines)
//
// A log whose Config.HighWatermarks is set keeps its checkpointed high
// watermark there instead of in its own high-watermark file: storing one
// is a map write under a mutex, no syscall, and one owner (the broker)
// writes the file for all partitions (Flush, every interval by Start's
// goroutine, and on Stop). With 1,000 partitions the per-log files cost
// 1,000 write+fsync+rename+fsync-dir every interval; this costs one.
//
// Safety is that of the per-log files: the file never holds a high
// watermark above what was committed (every value stored is one the
// replica acted on), and a truncation that lowers a log's high watermark
// below what the file (or the log's legacy file) may hold rewrites the
// file before the truncation returns. A stale (lower) value only makes a
// restarted replica start lower, as it would after a crash before the
// next checkpoint. The value read at open is clamped to the log.
//
// Upgrade: a partition with no entry whose log directory still has the
// legacy high-watermark file takes its value; the legacy file is removed
// once the shared file holds the partition. A missing shared file is an
// empty one; a damaged or unreadable one is logged and treated as empty
// (each log then falls back as with a missing file: its legacy file, or
// its log start).

package storage

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// ReplicationOffsetCheckpointFile is the name of the shared high-watermark
// checkpoint in a data directory.
const ReplicationOffsetCheckpointFile = "replication-offset-checkpoint"

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// HighWatermarkCheckpoints is the shared high-watermark checkpoint of one
// data directory. Safe for concurrent use. Create it with
// NewHighWatermarkCheckpoints; the file is read on first use.
type HighWatermarkCheckpoints struct {
	fs     FS
	dir    string
	logger *logrus.Entry

	// flushMu serializes the writes of the file; mu guards the maps. A
	// flush takes flushMu, then mu only to copy the table.
	flushMu sync.Mutex
	mu      sync.Mutex
	loaded  bool
	hw      map[TopicPartition]int64
	// onDisk is what the file holds (as last written or read), for the
	// partitions it holds.
	onDisk map[TopicPartition]int64
	// legacy holds the partitions whose log directory has a legacy
	// high-watermark file, removed once the file holds their entry.
	legacy map[TopicPartition]legacyFile
	// gen counts the changes of hw; flushed is the gen last written.
	gen, flushed uint64
	// failErr is the error of the last write when it failed (nil after a
	// write that succeeded), failSince when the writes began failing,
	// failures how many failed in a row.
	failErr   error
	failSince time.Time
	failures  int

	runMu sync.Mutex
	stop  chan struct{}
	done  chan struct{}
}

// legacyFile is a partition's legacy high-watermark file: its value (when
// readable) and how to remove it.
type legacyFile struct {
	hw     int64
	found  bool
	remove func() error
}

// NewHighWatermarkCheckpoints returns the shared checkpoint of dataDir,
// read and written through fsys (nil: OSFS).
func NewHighWatermarkCheckpoints(fsys FS, dataDir string, logger *logrus.Entry) *HighWatermarkCheckpoints {
	if fsys == nil {
		fsys = OSFS{}
	}
	if logger == nil {
		logger = logrus.NewEntry(logrus.StandardLogger())
	}
	return &HighWatermarkCheckpoints{
		fs: fsys, dir: dataDir, logger: logger.WithField("file", filepath.Join(dataDir, ReplicationOffsetCheckpointFile)),
		hw: map[TopicPartition]int64{}, onDisk: map[TopicPartition]int64{}, legacy: map[TopicPartition]legacyFile{},
	}
}

// loadLocked reads the file once. Caller holds mu.
func (c *HighWatermarkCheckpoints) loadLocked() {
	if c.loaded {
		return
	}
	c.loaded = true
	entries, err := ReadReplicationOffsetCheckpoint(c.fs, c.dir)
	if err != nil {
		c.logger.WithError(err).Warn("shared high-watermark checkpoint unreadable; every partition recovers its high watermark as without a checkpoint")
		return
	}
	for k, v := range entries {
		c.hw[k] = v
		c.onDisk[k] = v
	}
}

// Get returns the high watermark stored for tp.
func (c *HighWatermarkCheckpoints) Get(topic string, partition int32) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loadLocked()
	hw, ok := c.hw[TopicPartition{topic, partition}]
	return hw, ok
}

// Len returns how many partitions the table holds.
func (c *HighWatermarkCheckpoints) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loadLocked()
	return len(c.hw)
}

// Remove drops a partition (its log was deleted: a deleted topic, a
// partition moved away). The file loses it at the next flush.
func (c *HighWatermarkCheckpoints) Remove(topic string, partition int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loadLocked()
	k := TopicPartition{topic, partition}
	if _, ok := c.hw[k]; !ok {
		return
	}
	delete(c.hw, k)
	delete(c.legacy, k)
	c.gen++
}

// Slot returns the handle a partition's log uses (Config.HighWatermarks).
func (c *HighWatermarkCheckpoints) Slot(topic string, partition int32) *HighWatermarkSlot {
	return &HighWatermarkSlot{c: c, key: TopicPartition{topic, partition}}
}

// Flush writes the file (tmp file, fsync, rename, fsync of the data dir)
// if anything changed since the last write, then removes the legacy files
// of the partitions it now holds.
func (c *HighWatermarkCheckpoints) Flush() error {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	return c.flushLocked()
}

// flushLocked is Flush. Caller holds flushMu.
func (c *HighWatermarkCheckpoints) flushLocked() error {
	c.mu.Lock()
	c.loadLocked()
	if c.gen == c.flushed && len(c.legacy) == 0 {
		c.mu.Unlock()
		return nil
	}
	gen, snap, write := c.gen, c.onDisk, c.gen != c.flushed
	if write {
		snap = make(map[TopicPartition]int64, len(c.hw))
		for k, v := range c.hw {
			snap[k] = v
		}
	}
	c.mu.Unlock()

	if write {
		name := filepath.Join(c.dir, ReplicationOffsetCheckpointFile)
		if err := writeFileAtomic(c.fs, c.dir, name, formatReplicationOffsetCheckpoint(snap)); err != nil {
			err = fmt.Errorf("write %s: %w", ReplicationOffsetCheckpointFile, err)
			c.mu.Lock()
			if c.failErr == nil {
				c.failSince = time.Now()
			}
			c.failErr = err
			c.failures++
			c.mu.Unlock()
			return err
		}
	}

	c.mu.Lock()
	c.failErr, c.failSince, c.failures = nil, time.Time{}, 0
	c.onDisk = snap
	c.flushed = gen
	var removes []func() error
	var removed []TopicPartition
	for k, lf := range c.legacy {
		if _, ok := snap[k]; ok {
			removes = append(removes, lf.remove)
			removed = append(removed, k)
			delete(c.legacy, k)
		}
	}
	c.mu.Unlock()
	for i, rm := range removes {
		if err := rm(); err != nil && !isNotExist(err) {
			c.logger.WithError(err).WithFields(logrus.Fields{"topic": removed[i].Topic, "partition": removed[i].Partition}).
				Warn("cannot remove a partition's legacy high-watermark file (its value is in the shared checkpoint)")
		}
	}
	return nil
}

// WriteFailure reports whether the last write of the file failed: its error,
// since when the writes have been failing and how many failed in a row
// (nil, zero, 0 once a write succeeds). A host whose checkpoint cannot be
// written is unhealthy: high watermarks it acted on are not kept.
func (c *HighWatermarkCheckpoints) WriteFailure() (since time.Time, failures int, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failSince, c.failures, c.failErr
}

// Start starts the goroutine that flushes every interval (when something
// changed). Starting a started checkpoint does nothing.
func (c *HighWatermarkCheckpoints) Start(interval time.Duration) {
	c.runMu.Lock()
	defer c.runMu.Unlock()
	if c.stop != nil {
		return
	}
	stop, done := make(chan struct{}), make(chan struct{})
	c.stop, c.done = stop, done
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if err := c.Flush(); err != nil {
					c.logger.WithError(err).Error("writing the shared high-watermark checkpoint failed; retrying at the next interval")
				}
			}
		}
	}()
}

// Stop ends Start's goroutine (if running) and flushes.
func (c *HighWatermarkCheckpoints) Stop() error {
	c.runMu.Lock()
	stop, done := c.stop, c.done
	c.stop, c.done = nil, nil
	c.runMu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	return c.Flush()
}

// HighWatermarkSlot is one partition's entry in a shared high-watermark
// checkpoint: what its log reads at open and stores its high watermark in.
type HighWatermarkSlot struct {
	c   *HighWatermarkCheckpoints
	key TopicPartition
}

// load returns the partition's entry.
func (s *HighWatermarkSlot) load() (int64, bool) {
	return s.c.Get(s.key.Topic, s.key.Partition)
}

// adoptLegacy records that the log directory has a legacy high-watermark
// file (value hw when found), removed by remove once the shared file holds
// the partition. A partition with an entry keeps it.
func (s *HighWatermarkSlot) adoptLegacy(hw int64, found bool, remove func() error) {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loadLocked()
	if _, ok := c.hw[s.key]; !ok && found {
		c.hw[s.key] = hw
		c.gen++
	}
	c.legacy[s.key] = legacyFile{hw: hw, found: found, remove: remove}
}

// set stores hw. When hw is below what the file (or the partition's
// legacy file) may hold, the file is rewritten before set returns, so a
// crash cannot bring the higher value back. A value lower than the one
// stored (a truncation), or the partition's first, first waits for a
// flush in progress, which may be writing an older, higher value.
func (s *HighWatermarkSlot) set(hw int64) error {
	c := s.c
	c.mu.Lock()
	c.loadLocked()
	old, had := c.hw[s.key]
	if !had || old != hw {
		c.hw[s.key] = hw
		c.gen++
	}
	above := c.durableAboveLocked(s.key, hw)
	c.mu.Unlock()
	if had && hw >= old && !above {
		return nil
	}
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	c.mu.Lock()
	above = c.durableAboveLocked(s.key, hw)
	c.mu.Unlock()
	if !above {
		return nil
	}
	if err := c.flushLocked(); err != nil {
		return fmt.Errorf("lower the high watermark of %s-%d to %d: %w", s.key.Topic, s.key.Partition, hw, err)
	}
	return nil
}

// durableAboveLocked reports whether the file, or k's legacy file, holds
// a high watermark above hw for k. Caller holds mu.
func (c *HighWatermarkCheckpoints) durableAboveLocked(k TopicPartition, hw int64) bool {
	disk, onDisk := c.onDisk[k]
	lf, legacy := c.legacy[k]
	return (onDisk && disk > hw) || (legacy && lf.found && lf.hw > hw)
}

// ReadReplicationOffsetCheckpoint reads the shared high-watermark
// checkpoint of data dir dir (fsys nil: OSFS); a missing file is an empty
// table, a damaged one an error wrapping ErrCorruptCheckpoint.
func ReadReplicationOffsetCheckpoint(fsys FS, dir string) (map[TopicPartition]int64, error) {
	if fsys == nil {
		fsys = OSFS{}
	}
	raw, err := readWholeFile(fsys, filepath.Join(dir, ReplicationOffsetCheckpointFile))
	if err != nil {
		if isNotExist(err) {
			return map[TopicPartition]int64{}, nil
		}
		return nil, fmt.Errorf("read %s: %w", ReplicationOffsetCheckpointFile, err)
	}
	entries, err := parseReplicationOffsetCheckpoint(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ReplicationOffsetCheckpointFile, err)
	}
	return entries, nil
}

// parseReplicationOffsetCheckpoint decodes the shared file's bytes.
func parseReplicationOffsetCheckpoint(raw []byte) (map[TopicPartition]int64, error) {
	if len(raw) == 0 || raw[len(raw)-1] != '\n' {
		return nil, fmt.Errorf("%w: truncated (%d bytes)", ErrCorruptCheckpoint, len(raw))
	}
	lines := strings.Split(string(raw[:len(raw)-1]), "\n")
	if len(lines) < 2 || lines[0] != "0" {
		return nil, fmt.Errorf("%w: bad header", ErrCorruptCheckpoint)
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n < 0 || n != len(lines)-2 {
		return nil, fmt.Errorf("%w: count %q for %d entries", ErrCorruptCheckpoint, lines[1], len(lines)-2)
	}
	entries := make(map[TopicPartition]int64, n)
	for i, line := range lines[2:] {
		f := strings.Split(line, " ")
		if len(f) != 3 || f[0] == "" {
			return nil, fmt.Errorf("%w: entry %d: %q", ErrCorruptCheckpoint, i, line)
		}
		p, perr := strconv.ParseInt(f[1], 10, 32)
		off, oerr := strconv.ParseInt(f[2], 10, 64)
		if perr != nil || oerr != nil || p < 0 || off < 0 {
			return nil, fmt.Errorf("%w: entry %d: %q", ErrCorruptCheckpoint, i, line)
		}
		k := TopicPartition{f[0], int32(p)}
		if _, dup := entries[k]; dup {
			return nil, fmt.Errorf("%w: entry %d: %s-%d twice", ErrCorruptCheckpoint, i, k.Topic, k.Partition)
		}
		entries[k] = off
	}
	return entries, nil
}

// formatReplicationOffsetCheckpoint encodes entries, sorted.
func formatReplicationOffsetCheckpoint(entries map[TopicPartition]int64) []byte {
	keys := make([]TopicPartition, 0, len(entries))
	for k := range entries {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Topic != keys[j].Topic {
			return keys[i].Topic < keys[j].Topic
		}
		return keys[i].Partition < keys[j].Partition
	})
	var b strings.Builder
	b.Grow(16 + 32*len(keys))
	b.WriteString("0\n")
	b.WriteString(strconv.Itoa(len(keys)))
	b.WriteByte('\n')
	for _, k := range keys {
		b.WriteString(k.Topic)
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(int64(k.Partition), 10))
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(entries[k], 10))
		b.WriteByte('\n')
	}
	return []byte(b.String())
}
