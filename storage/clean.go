// clean.go: the log cleaner on a live log (issue 14, step 3). (*Log).Clean
// compacts the closed segments of an open log while appends and reads go
// on, reusing the offline rewrite of compact.go:
//
//   - Which segments: the closed ones (never the active one) from the
//     cleaner's first dirty offset up to the first segment that is not
//     cleanable yet — one holding a record newer than now minus
//     min.compaction.lag.ms, or ending above the high watermark passed in
//     (Kafka never cleans what consumers may not read yet). Their sizes
//     and bases are taken under the read lock; closed segments never
//     change but by truncation or deletion, which the swap detects.
//   - The offset map and the .cleaned files are built and written WITHOUT
//     the log's locks: the cleaner reads the closed segments' files on its
//     own descriptors, appends go on into the active segment.
//   - The swap of each group holds Log.swapMu, which truncation,
//     retention's deletion and Close also take, so the group's segments
//     cannot change under it. It checks under the writer lock (Log.mu)
//     that they are still the log's (no truncation since the snapshot:
//     Log.gen; no deletion by retention: same *segment values); commits
//     (.cleaned -> .swap, marker, two directory fsyncs) with no log lock,
//     appends going on; then, briefly, under the writer lock and the read
//     lock for writing (Log.rmu), renames the .swap files over the live
//     ones and replaces the group's segments in the in-memory list by the
//     cleaned one, and after that makes the renames durable and removes
//     the marker. A Read holds rmu for reading from its start to its end,
//     so a read that began before the swap finishes on the old files (the
//     swap waits for it), and every read after it sees the cleaned
//     segment at the same offsets. The replaced segments' descriptors are
//     closed afterwards (a flush still holding one is waited for by the
//     segment's fmu).
//   - A swap that finds the log changed drops the cleaned files and the
//     cleaning ends with ErrCleanAborted (the next cleaning starts over).
//   - A crash anywhere is the offline protocol's: Open finishes a
//     committed swap or rolls back an uncommitted one.
//
// The cleaner checkpoint (cleaner-offset-checkpoint, the recovery point's
// text format, written atomically) holds the first dirty offset, so a
// restarted host does not clean everything again. A truncation seen since
// the log was opened (Log.gen moved) resets it to the log start, since the
// offsets it vouched for may have been rewritten.
//
// CleanableInfo is what a scheduler needs: clean and dirty bytes over the
// closed segments (Kafka's dirty ratio) and whether max.compaction.lag.ms
// forces a cleaning now. The scheduler (cleaner.go) passes a reused
// OffsetMap and a Throttle hook, paid for every byte the cleaning reads and
// writes (its I/O budget) and whose error aborts the cleaning.

package storage

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// cleanerCheckpointFile holds the cleaner's first dirty offset.
const cleanerCheckpointFile = "cleaner-offset-checkpoint"

// ErrCleanAborted means the log changed under a cleaning (truncation or
// segment deletion) or was closed; nothing it had not swapped in is lost,
// and a later cleaning starts from the checkpoint again.
var ErrCleanAborted = errors.New("storage: cleaning aborted: the log changed under it")

// cleanerState is a log's cleaner bookkeeping (Log.cleaner).
type cleanerState struct {
	run sync.Mutex // one cleaning at a time

	mu         sync.Mutex // guards the fields below
	loaded     bool
	firstDirty int64
	gen        uint64 // Log.gen that firstDirty is valid for
}

// CleanOptions configure (*Log).Clean and CleanableInfo. Zero values mean
// defaults; the compaction settings come from the log's Config.
type CleanOptions struct {
	// HighWatermark bounds the cleaning: only segments ending at or below
	// it are cleaned. Negative means the log end offset; the zero value
	// (0) cleans nothing, so a caller must pass its high watermark or -1.
	HighWatermark int64
	// Now is the time lags and tombstone ages are measured at (default
	// the log's Config.Now).
	Now time.Time
	// DedupeBufferBytes is the offset map's budget (default
	// DefaultDedupeBufferBytes).
	DedupeBufferBytes int
	// OffsetMap, when set, is cleared and reused as the offset map
	// (DedupeBufferBytes is then ignored). Not safe for two cleanings at
	// once: a cleaner thread keeps one.
	OffsetMap *OffsetMap
	// Throttle, when set, is called with the byte count of each read and
	// write the cleaning makes of segment files (after it), and with 0
	// before each swap: it may sleep (an I/O budget) and its error ends
	// the cleaning (the cleaned files not swapped in yet are dropped; wrap
	// ErrCleanAborted to make it a quiet abort).
	Throttle func(n int) error
}

// throttledFS calls a cleaning's Throttle hook on each read and write of
// the files it opens.
type throttledFS struct {
	FS
	hook func(n int) error
}

func (t throttledFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if err := t.hook(0); err != nil {
		return nil, err
	}
	f, err := t.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return throttledFile{File: f, hook: t.hook}, nil
}

type throttledFile struct {
	File
	hook func(n int) error
}

func (t throttledFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := t.File.ReadAt(p, off)
	if herr := t.hook(n); herr != nil {
		return n, herr
	}
	return n, err
}

func (t throttledFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := t.File.WriteAt(p, off)
	if herr := t.hook(n); herr != nil && err == nil {
		return n, herr
	}
	return n, err
}

// CleanableInfo describes how dirty a log is.
type CleanableInfo struct {
	FirstDirty int64 // the cleaner checkpoint: offsets below it are clean
	// CleanableEnd is the first offset a cleaning may not reach now (the
	// base of the first closed segment that is too new, above the high
	// watermark, or of the active segment).
	CleanableEnd int64
	CleanBytes   int64 // closed segments wholly below FirstDirty
	DirtyBytes   int64 // closed segments from FirstDirty to CleanableEnd
	// Ratio is DirtyBytes / (CleanBytes + DirtyBytes), 0 when both are 0.
	Ratio float64
	// OldestDirtyTimestamp is the max timestamp of the first batch of the
	// first dirty closed segment (Kafka's first batch timestamp), -1 when
	// unknown or none, or when max.compaction.lag.ms is unbounded (it is
	// not read then).
	OldestDirtyTimestamp int64
	// MaxLagExceeded says the oldest dirty record is older than
	// max.compaction.lag.ms: the log must be cleaned whatever its ratio.
	MaxLagExceeded bool
	// ShouldClean is Ratio >= min.cleanable.dirty.ratio with dirty bytes,
	// or MaxLagExceeded.
	ShouldClean bool
}

// firstDirty returns the cleaner's first dirty offset, reading the
// checkpoint the first time and resetting it to the log start when it is
// out of the log or a truncation happened since it was valid.
func (l *Log) firstDirty() (int64, error) {
	l.mu.Lock()
	gen, start, end := l.gen, l.start.Load(), l.leo.Load()
	l.mu.Unlock()
	c := &l.cleaner
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.loaded {
		off, found, err := readOffsetCheckpoint(l.fs, l.dir, cleanerCheckpointFile)
		if err != nil {
			l.logger.WithError(err).Warn("cleaner checkpoint unreadable; cleaning from the log start")
			found = false
		}
		if !found {
			off = start
		}
		// gen is 0 at Open: a truncation since then is caught below.
		c.loaded, c.firstDirty, c.gen = true, off, 0
	}
	if c.gen != gen || c.firstDirty < start || c.firstDirty > end {
		if c.gen != gen {
			l.logger.WithFields(logrus.Fields{"first_dirty": c.firstDirty, "log_start": start}).
				Info("log truncated since the cleaner checkpoint; cleaning from the log start")
		}
		c.firstDirty, c.gen = start, gen
	}
	return c.firstDirty, nil
}

// setFirstDirty stores and checkpoints the first dirty offset, valid for
// truncation generation gen.
func (l *Log) setFirstDirty(off int64, gen uint64) error {
	c := &l.cleaner
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loaded, c.firstDirty, c.gen = true, off, gen
	if err := writeOffsetCheckpoint(l.fs, l.dir, cleanerCheckpointFile, off); err != nil {
		return fmt.Errorf("storage: cleaner checkpoint of %s: %w", l.dir, err)
	}
	return nil
}

// lowerCleanerCheckpoint keeps the persisted first dirty offset at or
// below end, the log end after a truncation (l.mu held). In memory a
// truncation already sends the next cleaning back to the log start
// (firstDirty sees the new generation); on disk the checkpoint must not
// survive a crash claiming offsets the log rewrote since as clean: a key's
// tombstone appended there could otherwise be dropped while an older value
// of the key, below it, is never compared with it.
func (l *Log) lowerCleanerCheckpoint(end int64) error {
	c := &l.cleaner
	c.mu.Lock()
	defer c.mu.Unlock()
	off, found, err := readOffsetCheckpoint(l.fs, l.dir, cleanerCheckpointFile)
	if err != nil || !found || off <= end {
		return nil // unreadable or absent: the next cleaning starts from the log start anyway
	}
	if err := writeOffsetCheckpoint(l.fs, l.dir, cleanerCheckpointFile, end); err != nil {
		return fmt.Errorf("storage: lower the cleaner checkpoint of %s to %d: %w", l.dir, end, err)
	}
	return nil
}

// FirstDirtyOffset is the cleaner checkpoint: offsets below it are clean.
func (l *Log) FirstDirtyOffset() (int64, error) { return l.firstDirty() }

// cleanView is a snapshot of a log's closed segments for a cleaning.
type cleanView struct {
	gen    uint64
	start  int64
	closed []*segment // every closed segment
	bound  int        // closed[:bound] may be cleaned now
	next   int64      // base of the segment after closed[:bound]
}

// view snapshots the closed segments and finds the cleanable bound.
func (l *Log) view(hw int64, now time.Time) (cleanView, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return cleanView{}, ErrClosed
	}
	if hw < 0 || hw > l.leo.Load() {
		hw = l.leo.Load()
	}
	l.rmu.RLock()
	defer l.rmu.RUnlock()
	v := cleanView{gen: l.gen, start: l.start.Load(), closed: append([]*segment(nil), l.segs[:len(l.segs)-1]...)}
	newest := now.UnixMilli() - max(l.cfg.MinCompactionLag, 0).Milliseconds()
	v.bound = len(v.closed)
	for i, s := range v.closed {
		if s.next > hw || s.maxTS.Load() > newest {
			v.bound = i
			break
		}
	}
	v.next = l.segs[len(l.segs)-1].base
	if v.bound < len(v.closed) {
		v.next = v.closed[v.bound].base
	}
	return v, nil
}

// CleanableInfo reports the log's dirty ratio and whether
// max.compaction.lag.ms forces a cleaning, over the closed segments.
func (l *Log) CleanableInfo(opts CleanOptions) (CleanableInfo, error) {
	if opts.Now.IsZero() {
		opts.Now = l.cfg.Now()
	}
	fd, err := l.firstDirty()
	if err != nil {
		return CleanableInfo{}, err
	}
	v, err := l.view(opts.HighWatermark, opts.Now)
	if err != nil {
		return CleanableInfo{}, err
	}
	info := CleanableInfo{FirstDirty: fd, CleanableEnd: v.next, OldestDirtyTimestamp: -1}
	var firstDirtySeg *segment
	for i, s := range v.closed {
		switch {
		case s.next <= fd:
			info.CleanBytes += s.size.Load()
		case i < v.bound:
			info.DirtyBytes += s.size.Load()
			fallthrough
		default:
			if firstDirtySeg == nil && !s.empty() {
				firstDirtySeg = s
			}
		}
	}
	if total := info.CleanBytes + info.DirtyBytes; total > 0 {
		info.Ratio = float64(info.DirtyBytes) / float64(total)
	}
	maxLag := l.cfg.EffectiveMaxCompactionLag()
	if firstDirtySeg != nil && maxLag != time.Duration(math.MaxInt64) {
		// Read only when max.compaction.lag.ms needs it: the cleaner
		// asks every backoff, and the read would reopen the files of a
		// segment closed for idleness.
		ts, err := l.firstBatchTimestamp(firstDirtySeg)
		if err != nil {
			return info, err
		}
		info.OldestDirtyTimestamp = ts
	}
	info.MaxLagExceeded = maxLag != time.Duration(math.MaxInt64) && info.OldestDirtyTimestamp >= 0 &&
		opts.Now.UnixMilli()-info.OldestDirtyTimestamp > maxLag.Milliseconds()
	info.ShouldClean = info.MaxLagExceeded || (info.DirtyBytes > 0 && info.Ratio >= l.cfg.EffectiveMinCleanableDirtyRatio())
	return info, nil
}

// DirtyRatio is CleanableInfo's Ratio up to the log end, now; 0 when it
// cannot be computed (closed log).
func (l *Log) DirtyRatio() float64 {
	info, err := l.CleanableInfo(CleanOptions{HighWatermark: -1})
	if err != nil {
		return 0
	}
	return info.Ratio
}

// firstBatchTimestamp reads the max timestamp of a segment's first batch
// (-1 for an empty segment or one swapped out meanwhile).
func (l *Log) firstBatchTimestamp(s *segment) (int64, error) {
	l.rmu.RLock()
	defer l.rmu.RUnlock()
	if l.closed.Load() {
		return -1, ErrClosed
	}
	live := false
	for _, o := range l.segs {
		live = live || o == s
	}
	if !live || s.empty() {
		return -1, nil
	}
	f, err := l.acquireLog(s)
	if err != nil {
		return -1, err
	}
	defer s.fmu.RUnlock()
	h, err := s.batchHeaderAt(f, 0, make([]byte, 61))
	if err != nil {
		return -1, fmt.Errorf("%w: %w", ErrCorruptLog, err)
	}
	return h.MaxTimestamp, nil
}

// Clean compacts the log's cleanable closed segments while it stays open
// for appends and reads (see the file comment), then moves the cleaner
// checkpoint to the end of the offset map. Cleanings of one log are
// serialized. It does not look at the dirty ratio: CleanableInfo says
// whether to call it.
func (l *Log) Clean(opts CleanOptions) (CompactStats, error) {
	l.cleaner.run.Lock()
	defer l.cleaner.run.Unlock()
	if opts.Now.IsZero() {
		opts.Now = l.cfg.Now()
	}
	fd, err := l.firstDirty()
	if err != nil {
		return CompactStats{}, err
	}
	v, err := l.view(opts.HighWatermark, opts.Now)
	if err != nil {
		return CompactStats{EndOffset: fd}, err
	}
	if v.bound == 0 || fd >= v.next {
		return CompactStats{EndOffset: fd}, nil
	}
	plan := compactPlan{next: v.next}
	for i, s := range v.closed {
		if i < v.bound {
			plan.segs = append(plan.segs, segFile{base: s.base, size: s.size.Load()})
		}
		plan.scanPaths = append(plan.scanPaths, segmentPath(l.dir, s.base, logSuffix))
	}
	retention := l.cfg.EffectiveDeleteRetention()
	if retention == 0 {
		retention = -1 // CompactOptions' "drop at once"
	}
	copts := CompactOptions{
		FS: l.fs, Logger: l.logger, SegmentBytes: l.cfg.SegmentBytes, IndexIntervalBytes: l.cfg.IndexIntervalBytes,
		MaxInflatedBytes: l.cfg.MaxInflatedBytes, DeleteRetention: retention, Now: opts.Now,
		DedupeBufferBytes: opts.DedupeBufferBytes, FirstDirty: fd, OffsetMap: opts.OffsetMap,
	}.withDefaults()
	if opts.Throttle != nil {
		copts.FS = throttledFS{FS: l.fs, hook: opts.Throttle}
	}
	old := make(map[*segment]bool, len(v.closed))
	for _, s := range v.closed[:v.bound] {
		old[s] = true
	}
	swap := func(b0, end int64, seg *segment) error {
		if opts.Throttle != nil {
			if err := opts.Throttle(0); err != nil {
				return err
			}
		}
		return l.swapLive(v.gen, old, b0, end, seg)
	}
	stats, err := compactSegments(copts.FS, l.dir, plan, copts, l.logger, swap)
	if err != nil {
		return stats, err
	}
	if stats.EndOffset > fd {
		if err := l.setFirstDirty(stats.EndOffset, v.gen); err != nil {
			return stats, err
		}
		passCrashPoint(CrashCheckpointed)
	}
	return stats, nil
}

// swapLive swaps the cleaned segment seg, covering [b0, end) and written
// as .cleaned files with its marker, into the open log in place of its
// segments, which must still be the ones the cleaning read (old, log
// generation gen). See the file comment.
//
// Appends are held up only by the list change: the whole swap holds
// swapMu, which keeps out what could change the group's segments
// (truncation, retention's deletion, Close); the group is checked under
// the writer lock, the commit (renames of the new files and two directory
// fsyncs) runs with no log lock, and the renames replacing the live files
// run under the writer and read locks with the list change, their fsync
// after it. A crash between those renames and their fsync is recovery's
// (the marker is removed only once they are durable).
func (l *Log) swapLive(gen uint64, old map[*segment]bool, b0, end int64, seg *segment) error {
	l.swapMu.Lock()
	defer l.swapMu.Unlock()
	i, j, err := l.swapGroup(gen, old, b0, end)
	if err != nil {
		return err
	}
	// Steps 2 and 3 (commit): the live files are not touched yet, so
	// readers and appends go on.
	for _, sfx := range segmentDataSuffixes {
		from := segmentPath(l.dir, b0, sfx+cleanedSuffix)
		if err := l.fs.Rename(from, segmentPath(l.dir, b0, sfx+swapSuffix)); err != nil {
			return fmt.Errorf("rename %s: %w", from, err)
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("sync dir %s: %w", l.dir, err)
	}
	passCrashPoint(CrashSwapRenamed)
	marker := segmentPath(l.dir, b0, cleanMarkerSuffix+cleanedSuffix)
	if err := l.fs.Rename(marker, segmentPath(l.dir, b0, cleanMarkerSuffix+swapSuffix)); err != nil {
		return fmt.Errorf("rename %s: %w", marker, err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		// The marker may be durable: the swap can no longer be undone
		// here, and recovery will finish it.
		return l.failLocking(fmt.Errorf("sync dir after committing cleaned segment %d: %w", b0, err))
	}
	passCrashPoint(CrashCommitted)
	// Step 4's renames, with no reader in flight, and the list change. The
	// group is still l.segs[i:j]: only swapMu's holders remove segments,
	// and rolls add them after it.
	seg.sealed.Store(true)
	seg.created = l.cfg.Now().UnixMilli()
	seg.fsys = l.fs
	seg.idx.release() // its indexes were written whole: lookups read them
	l.mu.Lock()
	l.rmu.Lock()
	err = finishSwapFiles(l.fs, l.dir, b0, end, true)
	replaced := append([]*segment(nil), l.segs[i:j]...)
	if err == nil {
		segs := make([]*segment, 0, len(l.segs)-(j-i)+1)
		segs = append(segs, l.segs[:i]...)
		segs = append(segs, seg)
		l.segs = append(segs, l.segs[j:]...)
	}
	l.rmu.Unlock()
	if err != nil {
		// Files and list disagree now; reopening the log finishes the swap.
		err = l.fail(fmt.Errorf("swap in cleaned segment %d: %w", b0, err))
		l.mu.Unlock()
		return err
	}
	l.mu.Unlock()
	if err := finishSwapDurable(l.fs, l.dir, b0); err != nil {
		return l.failLocking(fmt.Errorf("swap in cleaned segment %d: %w", b0, err))
	}
	passCrashPoint(CrashSwapped)
	// The producer state snapshots taken when the replaced segments rolled
	// go with them, as Kafka's replaceSegments deletes them (a compacted
	// log's start never moves, so retention never would): b0's and end's
	// stay, and recovery replays from b0's through the cleaned segment,
	// whose emptied batches keep the producers' state. Left behind, one
	// is only a stale file: a warning.
	l.mu.Lock()
	_, perr := l.pruneSnapshotsLocked("segment cleaned away", func(offs []int64, i int) bool { return offs[i] > b0 && offs[i] < end })
	l.mu.Unlock()
	if perr != nil {
		l.logger.WithError(perr).WithField("base", b0).Warn("deleting the producer state snapshots of segments cleaned away")
	}
	for _, s := range replaced {
		if cerr := l.closeSegmentFiles(s); cerr != nil {
			l.logger.WithError(cerr).WithField("segment", s.base).Warn("closing a segment replaced by a cleaned one")
		}
	}
	l.logger.WithFields(logrus.Fields{"base": b0, "end": end, "segments": len(replaced), "bytes": seg.size.Load()}).
		Debug("swapped a cleaned segment into the open log")
	return nil
}

// swapGroup checks, under the writer lock, that the log is open, writable
// and not truncated since generation gen, and that its segments over
// [b0, end) are still old's; it returns their range l.segs[i:j].
func (l *Log) swapGroup(gen uint64, old map[*segment]bool, b0, end int64) (i, j int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return 0, 0, fmt.Errorf("%w: %w", ErrCleanAborted, ErrClosed)
	}
	if err := l.checkWritable(); err != nil {
		return 0, 0, err
	}
	if l.gen != gen {
		return 0, 0, fmt.Errorf("%w: truncated", ErrCleanAborted)
	}
	i, j = -1, -1
	for k, s := range l.segs {
		if s.base == b0 {
			i = k
		}
		if i >= 0 && j < 0 && s.base >= end {
			j = k
		}
	}
	if i < 0 || j < 0 {
		return 0, 0, fmt.Errorf("%w: segments of [%d, %d) gone", ErrCleanAborted, b0, end)
	}
	for _, s := range l.segs[i:j] {
		if !old[s] {
			return 0, 0, fmt.Errorf("%w: segment %d replaced", ErrCleanAborted, s.base)
		}
	}
	return i, j, nil
}

// failLocking is fail for a caller that does not hold mu.
func (l *Log) failLocking(err error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fail(err)
}
