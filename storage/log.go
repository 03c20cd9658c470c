// Package storage is actorlog's partition log: a directory of segments, each
// a plain sequence of Kafka RecordBatch v2 frames (%020d.log) with a sparse
// offset index (.index) and time index (.timeindex), plus a leader-epoch
// checkpoint, a recovery-point checkpoint, a high-watermark checkpoint and
// snapshots of the idempotent producers' state (%020d.snapshot).
//
// Threading: a Log is written by one owner (the partition replica actor):
// Append, AppendReplicated, TruncateTo, TruncateFullyAndStartAt,
// DeleteExpiredSegments, AssignEpoch, ExpireProducers, WriteHighWatermark,
// Flush and Close. They are serialized by a mutex all the same, so a
// background flusher or a mistaken second caller cannot corrupt it. Read,
// OffsetForTimestamp, MaxTimestamp and the accessors may be called from any goroutine
// concurrently with the writer: appends never block reads, and reads of
// sealed segments never block appends.
//
// Invariants: LogStartOffset <= recovery point <= LogEndOffset; every byte
// below a segment's size is a complete batch; batches' offsets strictly
// increase across the log; the producer state reflects exactly the batches
// below LogEndOffset (less the producers expired since they were
// written). After the first failed write or fsync the log refuses further
// writes and returns that error (a half-written log is never extended).
//
// Files: a segment's files are open only while in use (files.go), so a
// host's descriptors scale with the partitions and segments being read
// or written, not with every segment on disk.
package storage

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/storage/record"
)

var (
	// ErrOffsetOutOfRange means a read asked for an offset below the log
	// start or above the log end.
	ErrOffsetOutOfRange = errors.New("storage: offset out of range")
	// ErrRecordTooLarge means a batch exceeds max.message.bytes.
	ErrRecordTooLarge = errors.New("storage: batch larger than max.message.bytes")
	// ErrInvalidBatch wraps every reason an appended batch is refused.
	ErrInvalidBatch = errors.New("storage: invalid record batch")
	// ErrCorruptLog means data on disk failed its CRC or framing check; it is
	// reported, never served.
	ErrCorruptLog = errors.New("storage: corrupt data in log")
	// ErrClosed means the log was closed.
	ErrClosed = errors.New("storage: log closed")
)

// AppendInfo describes what an append wrote.
type AppendInfo struct {
	FirstOffset   int64 // base offset of the first batch
	LastOffset    int64 // last offset of the last batch
	MaxTimestamp  int64 // largest max timestamp among the batches
	LogAppendTime int64 // broker time stamped into the batch, -1 for CreateTime
	Bytes         int   // bytes written
	Batches       int
	// Duplicate says the batch was a retry of one of its producer's last
	// batches (same producer id, epoch and sequences): nothing was written,
	// and FirstOffset, LastOffset and MaxTimestamp are the original
	// batch's (Kafka answers such a retry with the original offsets).
	Duplicate bool
}

// Log is one partition's log. See the package comment for threading rules.
type Log struct {
	dir    string
	cfg    Config
	fs     FS
	logger *logrus.Entry
	epochs *epochCache

	// swapMu keeps a cleaning's swap (clean.go) apart from what removes
	// segments: truncation, retention's deletion and Close take it
	// before mu. Lock order: swapMu, mu, rmu.
	swapMu sync.Mutex
	mu     sync.Mutex   // serializes writers
	rmu    sync.RWMutex // readers share it; segment list changes, truncation and deletion take it alone

	segs []*segment // guarded by rmu; changed only while also holding mu

	leo    atomic.Int64 // log end offset: the offset the next batch gets
	start  atomic.Int64 // log start offset
	closed atomic.Bool

	// Guarded by mu.
	writeErr      error
	recoveryPoint int64
	gen           uint64         // bumped by every truncation
	producers     *producerState // idempotent producers' state up to the log end
	hwOnDisk      bool           // the high-watermark file holds hw

	hw atomic.Int64 // the checkpointed high watermark; see HighWatermarkCheckpoint

	closing bool // guarded by mu: Close has begun, no background flush may start

	// flushMu serializes Flush (and Close), so a flush's fsyncs never
	// overlap another flush's closing of files.
	flushMu    sync.Mutex
	flushing   atomic.Bool    // a background flush (kickFlush) is running
	flushAgain atomic.Bool    // a background flush is wanted
	bg         sync.WaitGroup // background flushes, waited for by Close

	// Open-file bookkeeping (files.go).
	fdmu       sync.Mutex
	openSealed []*segment // sealed segments that may hold open files, oldest first; guarded by fdmu
	idleMu     sync.Mutex // serializes idle sweeps; guards segment.idleSince

	cleaner cleanerState // the log cleaner's checkpoint and lock (clean.go)

	closeOnce sync.Once
	flushStop chan struct{}
	flushDone chan struct{}
}

// Open opens (creating if needed) the partition log in dir, recovering it
// from whatever state a crash left: segments at or above the recovery point
// are scanned with CRC checks and truncated at the first torn or corrupt
// frame; missing or broken indexes are rebuilt.
func Open(dir string, cfg Config) (*Log, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	l := &Log{
		dir:    dir,
		cfg:    cfg,
		fs:     cfg.FS,
		logger: cfg.Logger.WithField("log", dir),
	}
	if err := l.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("storage: create %s: %w", dir, err)
	}
	if err := l.load(); err != nil {
		if cerr := l.closeSegments(); cerr != nil {
			l.logger.WithError(cerr).Warn("closing segment files after a failed open")
		}
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	if cfg.Flush.Mode == FlushInterval {
		l.flushStop, l.flushDone = make(chan struct{}), make(chan struct{})
		go l.flushLoop(cfg.Flush.Interval)
	}
	janitor.add(l)
	return l, nil
}

// load lists the directory, opens and recovers the segments.
func (l *Log) load() error {
	// Finish or roll back a cleaning interrupted by a crash (compact.go).
	if err := recoverCleaning(l.fs, l.dir, l.logger); err != nil {
		return err
	}
	entries, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	var bases []int64
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, ".tmp") || strings.HasSuffix(name, ".deleted"):
			if err := l.fs.Remove(filepath.Join(l.dir, name)); err != nil {
				return fmt.Errorf("remove leftover %s: %w", name, err)
			}
		case strings.HasSuffix(name, logSuffix):
			base, ok := parseSegmentName(name)
			if !ok {
				l.logger.WithField("file", name).Warn("ignoring file with a segment suffix but no valid base offset")
				continue
			}
			bases = append(bases, base)
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })

	if l.epochs, err = loadEpochCache(l.fs, l.dir); err != nil {
		return err
	}
	rp, err := readRecoveryPoint(l.fs, l.dir)
	rpRead := err == nil // a missing file reads as 0
	if err != nil {
		l.logger.WithError(err).Warn("recovery point unreadable; recovering every segment")
		rp = 0
	}
	recoverFrom := 0
	for i, b := range bases {
		if b <= rp {
			recoverFrom = i
		}
	}

	// Segments are opened one at a time and a sealed one's files closed
	// as soon as it is loaded (written out and fsynced), so opening a log
	// of many segments needs a few descriptors, not three per segment.
	for i, base := range bases {
		seg, err := l.openSegment(base)
		if err != nil {
			return err
		}
		l.segs = append(l.segs, seg)
		if n := len(l.segs); n > 1 && seg.base < l.segs[n-2].next {
			return fmt.Errorf("segment %d overlaps the previous one, which ends at offset %d", seg.base, l.segs[n-2].next)
		}
		last := i == len(bases)-1
		if i < recoverFrom {
			if err := l.loadSealed(seg); err != nil {
				return err
			}
			if !last {
				if err := l.retireLoaded(seg); err != nil {
					return err
				}
			}
			continue
		}
		clean, err := l.recoverSegment(seg)
		if err != nil {
			return err
		}
		if clean && !last {
			if err := l.retireLoaded(seg); err != nil {
				return err
			}
		}
		if !clean {
			// Everything after a torn or corrupt frame is gone, including
			// any later segments (Kafka does the same).
			for _, later := range bases[i+1:] {
				dropped := &segment{base: later, dir: l.dir}
				if err := dropped.remove(l.fs); err != nil {
					return err
				}
				l.logger.WithField("segment", later).Warn("deleted segment after a corrupt frame in an earlier one")
			}
			break
		}
	}
	fresh := len(l.segs) == 0
	if fresh {
		seg, err := createSegment(l.fs, l.dir, 0, l.cfg.Now().UnixMilli())
		if err != nil {
			return err
		}
		// A new log's first segment: its files are new and empty, so
		// there is nothing to make durable. A crash may lose them; the
		// next open creates them again. Its first appends make it dirty
		// as usual.
		seg.synced.Store(seg.writes.Load())
		l.segs = append(l.segs, seg)
	}
	active := l.segs[len(l.segs)-1]
	l.leo.Store(active.next)
	l.start.Store(l.segs[0].base)
	if err := l.epochs.truncateFromEnd(active.next); err != nil {
		return err
	}
	if err := l.epochs.truncateFromStart(l.segs[0].base); err != nil {
		return err
	}
	// Make what recovery found durable, so the next open need not scan it
	// (the sealed segments were written out by retireLoaded).
	active.sealed.Store(false)
	if err := active.writeIndexes(l); err != nil {
		return err
	}
	// A new log skips both fsyncs and the checkpoint (a missing one
	// reads as 0): creating a topic of 1,000 partitions would otherwise
	// fsync 5,000 times at once, and every fsync queues with the
	// embedded etcd's WAL writes on the same disk (the host's lease).
	if !fresh {
		if err := active.sync(); err != nil {
			return err
		}
	}
	l.recoveryPoint = active.next
	if !rpRead || rp != l.recoveryPoint {
		if err := writeRecoveryPoint(l.fs, l.dir, l.recoveryPoint); err != nil {
			return err
		}
	}
	l.loadHighWatermark()
	return l.rebuildProducerStateLocked()
}

// openSegment opens an existing segment's files for load. The segment is
// not shared yet.
func (l *Log) openSegment(base int64) (*segment, error) {
	s := &segment{base: base, dir: l.dir, fsys: l.fs, next: base, rollTS: -1, corruptAt: -1, created: l.cfg.Now().UnixMilli()}
	s.maxTS.Store(-1)
	var err error
	if s.log, err = l.fs.OpenFile(segmentPath(l.dir, base, logSuffix), os.O_RDWR, 0); err != nil {
		return nil, fmt.Errorf("open segment %d: %w", base, err)
	}
	if err := s.openIndexes(l.fs, false); err != nil {
		if cerr := s.closeFiles(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return nil, err
	}
	return s, nil
}

// retireLoaded finishes loading a sealed segment: its indexes are written
// out and, with anything written, fsynced, and its files closed until a
// read needs them.
func (l *Log) retireLoaded(s *segment) error {
	s.sealed.Store(true)
	if err := s.writeIndexes(l); err != nil {
		return err
	}
	s.idx.release() // lookups read the files from now on
	if !s.clean() {
		if err := s.sync(); err != nil {
			return err
		}
	}
	if err := s.closeFiles(); err != nil {
		return fmt.Errorf("close loaded segment %d: %w", s.base, err)
	}
	return nil
}

func fileSize(f File) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// recoverSegment scans a segment that may hold unflushed data, checking every
// CRC, truncating it at the first bad frame and rebuilding its indexes. It
// reports whether the segment was intact.
func (l *Log) recoverSegment(s *segment) (bool, error) {
	size, err := fileSize(s.log)
	if err != nil {
		return false, fmt.Errorf("stat segment %d: %w", s.base, err)
	}
	end, scanErr := s.rebuild(size, true, l.cfg.IndexIntervalBytes)
	if scanErr != nil && !isDataError(scanErr) {
		return false, fmt.Errorf("recover segment %d: %w", s.base, scanErr)
	}
	if end < size {
		l.logger.WithFields(logrus.Fields{"segment": s.base, "position": end, "file_size": size, "reason": scanErr}).
			Warn("truncating torn or corrupt tail of segment")
		s.writes.Add(1)
		if err := s.log.Truncate(end); err != nil {
			return false, fmt.Errorf("truncate segment %d at %d: %w", s.base, end, err)
		}
	}
	s.size.Store(end)
	s.writes.Add(1)
	if err := s.offFile.Truncate(0); err != nil {
		return false, fmt.Errorf("reset offset index of segment %d: %w", s.base, err)
	}
	if err := s.timeFile.Truncate(0); err != nil {
		return false, fmt.Errorf("reset time index of segment %d: %w", s.base, err)
	}
	return end == size, nil
}

// isDataError reports whether a scan stopped on bad data (as opposed to an
// I/O failure).
func isDataError(err error) bool {
	return errors.Is(err, record.ErrShortBuffer) || errors.Is(err, record.ErrCorrupt) ||
		errors.Is(err, record.ErrChecksum) || errors.Is(err, record.ErrMagic) || errors.Is(err, errStopScan)
}

// loadSealed opens a flushed segment from its indexes, checking them against
// the log file; broken or missing indexes are rebuilt from the log. Framing
// damage found while rebuilding is remembered (corruptAt) and reported by
// reads that reach it, not truncated away.
func (l *Log) loadSealed(s *segment) error {
	size, err := fileSize(s.log)
	if err != nil {
		return fmt.Errorf("stat segment %d: %w", s.base, err)
	}
	s.size.Store(size)
	offs, times, err := loadIndexes(l.fs, segmentPath(l.dir, s.base, indexSuffix), segmentPath(l.dir, s.base, timeIndexSuffix), size)
	if err == nil {
		err = l.checkIndexTail(s, offs, times, size)
	}
	if err == nil {
		return nil
	}
	l.logger.WithFields(logrus.Fields{"segment": s.base, "reason": err}).Warn("rebuilding segment index")
	end, scanErr := s.rebuild(size, false, l.cfg.IndexIntervalBytes)
	if scanErr != nil && !isDataError(scanErr) {
		return fmt.Errorf("rebuild index of segment %d: %w", s.base, scanErr)
	}
	if end < size {
		s.corruptAt = end
		l.logger.WithFields(logrus.Fields{"segment": s.base, "position": end, "reason": scanErr}).
			Error("sealed segment is corrupt; reads past this position will fail")
	}
	s.idx.appendTime(timeEntry{ts: s.maxTS.Load(), rel: s.lastOffsetRel}, true)
	s.writes.Add(1)
	if err := s.offFile.Truncate(0); err != nil {
		return fmt.Errorf("reset offset index of segment %d: %w", s.base, err)
	}
	if err := s.timeFile.Truncate(0); err != nil {
		return fmt.Errorf("reset time index of segment %d: %w", s.base, err)
	}
	return s.writeIndexes(l)
}

// checkIndexTail installs loaded index entries and walks the frames after
// the last offset entry to the end of the file, which must end exactly at a
// frame boundary, with the time index's last entry at the segment's last
// offset.
func (l *Log) checkIndexTail(s *segment, offs []offsetEntry, times []timeEntry, size int64) error {
	var from int64
	if len(offs) > 0 {
		from = int64(offs[len(offs)-1].pos)
	}
	var last *record.Header
	maxTS := int64(-1)
	since := 0 // bytes since the last entry, counted as noteBatch does
	end, err := scanBatches(s.log, from, size, false, func(h *record.Header, pos int64) error {
		if last != nil && h.BaseOffset <= last.LastOffset() {
			return errStopScan
		}
		if since > l.cfg.IndexIntervalBytes {
			return errors.New("offset index is missing entries")
		}
		since += h.Size()
		hh := *h
		last = &hh
		maxTS = max(maxTS, h.MaxTimestamp)
		return nil
	})
	if err != nil || end != size {
		return fmt.Errorf("index tail scan stopped at %d of %d: %w", end, size, err)
	}
	if last == nil {
		if size == 0 && len(times) == 0 {
			return nil
		}
		return errors.New("index points at no batch")
	}
	if len(offs) > 0 && last.BaseOffset < s.base+int64(offs[len(offs)-1].rel) {
		return errors.New("offset index disagrees with the log")
	}
	lastRel := uint32(last.LastOffset() - s.base)
	if len(times) == 0 || times[len(times)-1].rel != lastRel || times[len(times)-1].ts < maxTS {
		return errors.New("time index does not end at the segment's last offset")
	}
	s.idx.offsets, s.idx.times = offs, times
	s.idx.offsetsWritten, s.idx.timesWritten = len(offs), len(times)
	s.next = last.NextOffset()
	s.lastOffsetRel = lastRel
	s.maxTS.Store(times[len(times)-1].ts)
	return nil
}

// Dir is the log's directory.
func (l *Log) Dir() string { return l.dir }

// LogEndOffset is the offset the next appended record gets.
func (l *Log) LogEndOffset() int64 { return l.leo.Load() }

// LogStartOffset is the first offset still in the log.
func (l *Log) LogStartOffset() int64 { return l.start.Load() }

// Size is the total size of the segment files in bytes.
func (l *Log) Size() int64 {
	l.rmu.RLock()
	defer l.rmu.RUnlock()
	var n int64
	for _, s := range l.segs {
		n += s.size.Load()
	}
	return n
}

// NumSegments is the number of segments.
func (l *Log) NumSegments() int {
	l.rmu.RLock()
	defer l.rmu.RUnlock()
	return len(l.segs)
}

// Err returns the sticky write error, if any.
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writeErr
}

// Config returns the log's configuration, defaults filled in.
func (l *Log) Config() Config { return l.cfg }

// checkWritable returns why the log cannot be written. Caller holds mu.
func (l *Log) checkWritable() error {
	if l.closed.Load() {
		return ErrClosed
	}
	return l.writeErr
}

// fail makes err the sticky write error. Caller holds mu.
func (l *Log) fail(err error) error {
	if l.writeErr == nil {
		l.writeErr = fmt.Errorf("storage: log %s failed and refuses writes: %w", l.dir, err)
		l.logger.WithError(err).Error("log write failed; the log is now read-only")
		if l.cfg.OnFail != nil {
			l.cfg.OnFail(l.writeErr)
		}
	}
	return l.writeErr
}

// ParallelValidateBytes is the batch size from which Append checks an
// uncompressed batch's CRC and records on another core while it writes the
// batch, publishing it only once both succeed. Below it the check runs
// first.
const ParallelValidateBytes = 128 << 10

// Append validates one producer batch, assigns it the next offsets and the
// leader epoch (written into the header in place: batch is modified) and
// appends it.
//
// Validation is Kafka's LogValidator's: the header (length, magic, record
// count against the last offset delta, codec), the CRC32C, and every record
// parsed (record.CheckRecords), a compressed batch's inflated as a stream
// of at most Config.MaxInflatedBytes. A refused batch wraps ErrInvalidBatch
// and the record package's reason (record.ErrUndecodable for a compressed
// body that is no valid stream of its codec); one whose records inflate
// beyond the limit also wraps ErrRecordTooLarge and record.ErrTooLarge.
//
// A refused batch leaves the log as it was: for a large uncompressed batch
// whose records are checked during its write, the bytes written are cut
// off again before anything is published, and recovery re-checks any such
// frame a crash leaves behind. A compressed batch is checked before it is
// written, since recovery does not inflate.
func (l *Log) Append(batch []byte, leaderEpoch int32) (AppendInfo, error) {
	if len(batch) > l.cfg.MaxMessageBytes {
		return AppendInfo{}, fmt.Errorf("%w: %d bytes, limit %d", ErrRecordTooLarge, len(batch), l.cfg.MaxMessageBytes)
	}
	h, err := record.ValidateHeader(batch)
	if err != nil {
		return AppendInfo{}, fmt.Errorf("%w: %w", ErrInvalidBatch, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritable(); err != nil {
		return AppendInfo{}, err
	}
	// The body check overlaps the write unless the batch is compressed,
	// rolls the segment (a roll must not happen for a batch that turns out
	// bad) or its CRC is about to be rewritten for LogAppendTime.
	parallel := len(batch) >= ParallelValidateBytes && !l.cfg.LogAppendTime &&
		h.Compression() == record.CompressionNone &&
		!l.shouldRoll(l.segs[len(l.segs)-1], &h, len(batch))
	if !parallel {
		if err := l.checkRecords(batch, &h); err != nil {
			return AppendInfo{}, err
		}
	}
	if h.ProducerID >= 0 {
		orig, dup, err := l.producers.check(&h)
		if err != nil {
			return AppendInfo{}, err
		}
		if dup {
			return l.duplicateInfo(batch, &h, orig, parallel)
		}
	}
	info := l.stamp(batch, &h, l.leo.Load(), leaderEpoch)
	var check func() error
	if parallel {
		hc := h
		check = func() error { return l.checkRecords(batch, &hc) }
	}
	if err := l.appendLocked(batch, &h, check); err != nil {
		return AppendInfo{}, err
	}
	if h.ProducerID >= 0 {
		l.trackProducer(&h)
	}
	if err := l.maybeFlushLocked(); err != nil {
		return AppendInfo{}, err
	}
	return info, nil
}

// stamp gives a checked batch (header h) its base offset and leader
// epoch and, with LogAppendTime, the time, in the batch and in h, and
// returns what its append will report.
func (l *Log) stamp(batch []byte, h *record.Header, base int64, leaderEpoch int32) AppendInfo {
	record.SetBaseOffset(batch, base)
	record.SetLeaderEpoch(batch, leaderEpoch)
	h.BaseOffset, h.LeaderEpoch = base, leaderEpoch
	info := AppendInfo{FirstOffset: base, LastOffset: h.LastOffset(), LogAppendTime: -1, Bytes: len(batch), Batches: 1}
	if l.cfg.LogAppendTime {
		now := l.cfg.Now().UnixMilli()
		record.SetLogAppendTime(batch, now)
		h.MaxTimestamp = now
		info.LogAppendTime = now
	}
	info.MaxTimestamp = h.MaxTimestamp
	return info
}

// maxRunBytes bounds the bytes AppendMany gathers for one write.
const maxRunBytes = 1 << 20

// runBufs holds AppendMany's gathering buffers (one per call in progress,
// not one per log: a host may have thousands of logs).
var runBufs = sync.Pool{New: func() any { b := make([]byte, 0, maxRunBytes); return &b }}

// AppendMany appends batches as many calls of Append would, one after the
// other: each batch is checked, deduplicated and given its offsets as
// Append does, and results[i] is what Append would have returned for
// batches[i] (a refused batch does not stop the ones after it). What is
// written is gathered into runs that go into the active segment without a
// roll, each in one write: a leader with several small produce batches
// queued pays one pwrite for them instead of one each. Batches of
// ParallelValidateBytes or more are better appended alone (Append checks
// them during their write). A write or flush that fails fails the log, and
// every batch of the call not already refused gets that error, even one
// written by an earlier run of the call.
func (l *Log) AppendMany(batches [][]byte, leaderEpoch int32, results []AppendResult) []AppendResult {
	results = slices.Grow(results[:0], len(batches))[:len(batches)]
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritable(); err != nil {
		for i := range results {
			results[i] = AppendResult{Err: err}
		}
		return results
	}
	bufp := runBufs.Get().(*[]byte)
	defer runBufs.Put(bufp)
	run := (*bufp)[:0]
	var hs []record.Header
	next := l.leo.Load()
	// The run's segment as noteBatch will have left it: its size before
	// the run, and the record time it was started with.
	var runPos, runRollTS int64
	flush := func() error {
		for len(hs) > 0 {
			n, size, err := l.appendRunLocked(run, hs)
			if err != nil {
				return err
			}
			run, hs = run[size:], hs[n:]
		}
		run = (*bufp)[:0]
		return nil
	}
	var failed error
	for i, batch := range batches {
		if len(batch) > l.cfg.MaxMessageBytes {
			results[i] = AppendResult{Err: fmt.Errorf("%w: %d bytes, limit %d", ErrRecordTooLarge, len(batch), l.cfg.MaxMessageBytes)}
			continue
		}
		h, err := record.ValidateHeader(batch)
		if err != nil {
			results[i] = AppendResult{Err: fmt.Errorf("%w: %w", ErrInvalidBatch, err)}
			continue
		}
		if err := l.checkRecords(batch, &h); err != nil {
			results[i] = AppendResult{Err: err}
			continue
		}
		if h.ProducerID >= 0 {
			orig, dup, err := l.producers.check(&h)
			if err != nil {
				results[i] = AppendResult{Err: err}
				continue
			}
			if dup {
				info, err := l.duplicateInfo(batch, &h, orig, false)
				results[i] = AppendResult{Info: info, Err: err}
				continue
			}
		}
		info := l.stamp(batch, &h, next, leaderEpoch)
		// A batch that would roll the segment, or not fit the buffer,
		// starts a new run; the roll is taken before its producer is
		// tracked, so the producer snapshot taken at the roll holds only
		// the batches below it.
		if len(hs) > 0 && (len(run)+len(batch) > maxRunBytes ||
			l.rollNeeded(l.segs[len(l.segs)-1], &h, runPos+int64(len(run)), runRollTS, len(batch))) {
			if failed = flush(); failed != nil {
				break
			}
		}
		if len(hs) == 0 {
			s := l.segs[len(l.segs)-1]
			if l.shouldRoll(s, &h, len(batch)) {
				if failed = l.rollLocked(next); failed != nil {
					break
				}
				s = l.segs[len(l.segs)-1]
			}
			runPos, runRollTS = s.size.Load(), s.rollTS
		}
		if runRollTS < 0 {
			runRollTS = h.MaxTimestamp
		}
		if len(batch) > cap(run)-len(run) {
			// Only a batch larger than the buffer, alone in its run;
			// its own buffer is not kept.
			run = make([]byte, 0, len(batch))
		}
		run = append(run, batch...)
		hs = append(hs, h)
		if h.ProducerID >= 0 {
			l.trackProducer(&h)
		}
		next = h.NextOffset()
		results[i] = AppendResult{Info: info}
	}
	if failed == nil {
		failed = flush()
	}
	if failed == nil {
		failed = l.maybeFlushLocked()
	}
	if failed != nil {
		for i := range results {
			if results[i].Err == nil {
				results[i] = AppendResult{Err: failed}
			}
		}
	}
	return results
}

// AppendResult is one batch's outcome in AppendMany.
type AppendResult struct {
	Info AppendInfo
	Err  error
}

// checkRecords is Append's check of a batch's body (record.CheckRecords),
// its error wrapping ErrInvalidBatch and, for records that inflate beyond
// MaxInflatedBytes, ErrRecordTooLarge. It reads only l.cfg, so it may run
// on another goroutine during the write.
func (l *Log) checkRecords(batch []byte, h *record.Header) error {
	err := record.CheckRecords(batch, h, l.cfg.MaxInflatedBytes)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, record.ErrTooLarge):
		return fmt.Errorf("%w: %w (its records inflate beyond %d bytes): %w", ErrInvalidBatch, ErrRecordTooLarge, l.cfg.MaxInflatedBytes, err)
	}
	return fmt.Errorf("%w: %w", ErrInvalidBatch, err)
}

// duplicateInfo answers a retried batch with its original's offsets,
// writing nothing. A large batch whose body check was to overlap its write
// is checked first, so a damaged retry is refused rather than acknowledged.
// Caller holds mu.
func (l *Log) duplicateInfo(batch []byte, h *record.Header, orig BatchMetadata, unchecked bool) (AppendInfo, error) {
	if unchecked {
		if err := l.checkRecords(batch, h); err != nil {
			return AppendInfo{}, err
		}
	}
	info := AppendInfo{FirstOffset: orig.FirstOffset, LastOffset: orig.LastOffset, MaxTimestamp: orig.Timestamp, LogAppendTime: -1, Duplicate: true}
	if l.cfg.LogAppendTime {
		info.LogAppendTime = orig.Timestamp
	}
	return info, nil
}

// AppendReplicated appends batches fetched from a leader, keeping their
// offsets and leader epochs. Every batch must pass its frame checks and
// offsets must increase from the log end offset; otherwise nothing is
// written.
func (l *Log) AppendReplicated(batches []byte) (AppendInfo, error) {
	if len(batches) == 0 {
		return AppendInfo{}, fmt.Errorf("%w: no batches", ErrInvalidBatch)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritable(); err != nil {
		return AppendInfo{}, err
	}
	var hs []record.Header
	next := l.leo.Load()
	for rest := batches; len(rest) > 0; {
		h, err := record.CheckFrame(rest)
		if err != nil {
			return AppendInfo{}, fmt.Errorf("%w: batch %d: %w", ErrInvalidBatch, len(hs), err)
		}
		if h.BaseOffset < next {
			return AppendInfo{}, fmt.Errorf("%w: batch %d starts at offset %d, expected >= %d", ErrInvalidBatch, len(hs), h.BaseOffset, next)
		}
		next = h.NextOffset()
		hs = append(hs, h)
		rest = rest[h.Size():]
	}
	info := AppendInfo{FirstOffset: hs[0].BaseOffset, LastOffset: next - 1, MaxTimestamp: -1, LogAppendTime: -1, Bytes: len(batches), Batches: len(hs)}
	for rest := hs; len(rest) > 0; {
		n, size, err := l.appendRunLocked(batches, rest)
		if err != nil {
			return AppendInfo{}, err
		}
		for i := range rest[:n] {
			h := &rest[i]
			if h.ProducerID >= 0 {
				l.trackProducer(h)
			}
			info.MaxTimestamp = max(info.MaxTimestamp, h.MaxTimestamp)
		}
		batches, rest = batches[size:], rest[n:]
	}
	if err := l.maybeFlushLocked(); err != nil {
		return AppendInfo{}, err
	}
	return info, nil
}

// appendLocked writes one batch whose header h is final, rolling first if
// needed. With check set, check runs on another goroutine while the batch is
// written; if it fails the written bytes are cut off, nothing is published
// and check's error is returned as it is. The batch's leader epoch is
// recorded before it becomes visible. Caller holds mu.
func (l *Log) appendLocked(batch []byte, h *record.Header, check func() error) error {
	s := l.segs[len(l.segs)-1]
	if l.shouldRoll(s, h, len(batch)) {
		if err := l.rollLocked(h.BaseOffset); err != nil {
			return err
		}
		s = l.segs[len(l.segs)-1]
	}
	pos := s.size.Load()
	f, err := l.acquireLog(s) // nothing written yet: a failed reopen is not sticky
	if err != nil {
		return err
	}
	var checkErr error
	var checked chan struct{}
	if check != nil {
		checked = make(chan struct{})
		go func() {
			defer close(checked)
			checkErr = check()
		}()
	}
	s.writes.Add(1)
	_, werr := f.WriteAt(batch, pos)
	if checked != nil {
		<-checked
	}
	if werr != nil || checkErr != nil {
		// Cut what was written; nothing past pos was ever published.
		terr := f.Truncate(pos)
		s.fmu.RUnlock()
		if terr != nil {
			return l.fail(fmt.Errorf("cut refused batch at %d in segment %d: %w", pos, s.base, errors.Join(werr, terr)))
		}
		if werr != nil {
			return l.fail(fmt.Errorf("write segment %d at %d: %w", s.base, pos, werr))
		}
		return checkErr
	}
	s.fmu.RUnlock()
	if _, err := l.epochs.assign(h.LeaderEpoch, h.BaseOffset); err != nil {
		return l.fail(err)
	}
	s.noteBatch(h, pos, l.cfg.IndexIntervalBytes)
	s.markChecked(pos, pos+int64(len(batch))) // its checksum was checked (Append, AppendMany)
	s.size.Store(pos + int64(len(batch)))
	l.leo.Store(h.NextOffset())
	l.spillIndex(s)
	return nil
}

// spillIndex writes the active segment's index entries to its files and
// drops them from memory once spillIndexEntries are there (see
// segIndex.spill). The batch is appended whatever happens here: a failed
// write is logged and left to the next flush or roll (which fail the log
// if the files still cannot be written), and the next spill waits for as
// many entries again. Caller holds mu.
func (l *Log) spillIndex(s *segment) {
	if !s.idx.wantSpill() {
		return
	}
	if err := s.writeIndexes(l); err != nil {
		l.logger.WithError(err).WithField("segment", s.base).Warn("writing out the active segment's index entries failed; they stay in memory")
		s.idx.spillFailed()
		return
	}
	s.idx.spill()
}

// appendRunLocked writes the first batches of hs (headers final, frames
// back to back at the start of batches) that go into the active segment
// without a roll, rolling first if the first batch needs it, in one write:
// a follower's fetch of many small batches costs one pwrite, not one each.
// It returns how many batches it wrote and their bytes. As appendLocked: on
// a failed write the bytes are cut and the log fails; the batches' leader
// epochs are recorded before they become visible. Caller holds mu.
func (l *Log) appendRunLocked(batches []byte, hs []record.Header) (int, int, error) {
	s := l.segs[len(l.segs)-1]
	if l.shouldRoll(s, &hs[0], hs[0].Size()) {
		if err := l.rollLocked(hs[0].BaseOffset); err != nil {
			return 0, 0, err
		}
		s = l.segs[len(l.segs)-1]
	}
	pos := s.size.Load()
	// What noteBatch will have made of the segment when batch n comes.
	rollTS := s.rollTS
	if rollTS < 0 {
		rollTS = hs[0].MaxTimestamp
	}
	n, size := 1, hs[0].Size()
	for n < len(hs) && !l.rollNeeded(s, &hs[n], pos+int64(size), rollTS, hs[n].Size()) {
		if rollTS < 0 {
			rollTS = hs[n].MaxTimestamp
		}
		size += hs[n].Size()
		n++
	}
	f, err := l.acquireLog(s) // nothing written yet: a failed reopen is not sticky
	if err != nil {
		return 0, 0, err
	}
	s.writes.Add(1)
	if _, werr := f.WriteAt(batches[:size], pos); werr != nil {
		terr := f.Truncate(pos)
		s.fmu.RUnlock()
		return 0, 0, l.fail(fmt.Errorf("write segment %d at %d (%d batches): %w", s.base, pos, n, errors.Join(werr, terr)))
	}
	s.fmu.RUnlock()
	at := pos
	for i := range hs[:n] {
		h := &hs[i]
		if _, err := l.epochs.assign(h.LeaderEpoch, h.BaseOffset); err != nil {
			return 0, 0, l.fail(err)
		}
		s.noteBatch(h, at, l.cfg.IndexIntervalBytes)
		at += int64(h.Size())
	}
	s.markChecked(pos, pos+int64(size)) // every caller checked the frames' checksums
	s.size.Store(pos + int64(size))
	l.leo.Store(hs[n-1].NextOffset())
	l.spillIndex(s)
	return n, size, nil
}

func (l *Log) shouldRoll(s *segment, h *record.Header, n int) bool {
	if s.empty() {
		return false
	}
	return l.rollNeeded(s, h, s.size.Load(), s.rollTS, n)
}

// rollNeeded says whether a batch of n bytes with header h must start a
// new segment after s, were s size bytes long (not empty) with first
// record time rollTS.
func (l *Log) rollNeeded(s *segment, h *record.Header, size, rollTS int64, n int) bool {
	if size+int64(n) > l.cfg.SegmentBytes {
		return true
	}
	if h.LastOffset()-s.base > math.MaxUint32 {
		return true
	}
	// As Kafka: the age is measured in record time (the new batch's max
	// timestamp minus the segment's first), falling back to wall-clock time
	// since creation when records carry no timestamp.
	age := h.MaxTimestamp - rollTS
	if rollTS < 0 || h.MaxTimestamp < 0 {
		age = l.cfg.Now().UnixMilli() - s.created
	}
	return age > l.cfg.SegmentAge.Milliseconds()
}

// rollLocked seals the active segment, starts a new one at base and
// snapshots the producer state there. Caller holds mu.
func (l *Log) rollLocked(base int64) error {
	old := l.segs[len(l.segs)-1]
	if err := old.seal(l); err != nil {
		return l.fail(err)
	}
	if l.cfg.Flush.Mode != FlushNever {
		if err := old.sync(); err != nil {
			return l.fail(err)
		}
	}
	s, err := createSegment(l.fs, l.dir, base, l.cfg.Now().UnixMilli())
	if err != nil {
		return l.fail(err)
	}
	l.rmu.Lock()
	l.segs = append(l.segs, s)
	l.rmu.Unlock()
	// The old segment's files close once fsynced and beyond the cap of
	// open sealed segments (files.go).
	old.sealed.Store(true)
	l.noteOpened(old)
	if old.clean() {
		l.evictOpenSealed() // its index files too
	} else if l.tooManyOpenSealed() {
		// Only now are the sealed segments fsynced (in the background),
		// so that they may close: a log rolling large segments seldom
		// pays for it, and finds them written back by the OS by then.
		l.kickFlush()
	}
	if err := l.takeSnapshotLocked(base); err != nil {
		return err
	}
	l.logger.WithFields(logrus.Fields{"segment": base, "previous": old.base}).Debug("rolled segment")
	return nil
}

// Roll seals the active segment and starts a new one, if the active segment
// holds data.
func (l *Log) Roll() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritable(); err != nil {
		return err
	}
	if l.segs[len(l.segs)-1].empty() {
		return nil
	}
	return l.rollLocked(l.leo.Load())
}

// maybeFlushLocked fsyncs the active segment under FlushEveryBatch. Caller holds mu.
func (l *Log) maybeFlushLocked() error {
	if l.cfg.Flush.Mode != FlushEveryBatch {
		return nil
	}
	s := l.segs[len(l.segs)-1]
	f, err := l.acquireLog(s)
	if err != nil {
		return l.fail(fmt.Errorf("fsync: %w", err))
	}
	err = f.Sync()
	s.fmu.RUnlock()
	if err != nil {
		return l.fail(fmt.Errorf("fsync: %w", err))
	}
	return nil
}

// Flush writes pending index entries and fsyncs every segment written
// since its last fsync, then moves the recovery point to the log end offset
// it saw. Appends proceed while it fsyncs. Sealed segments it leaves clean
// may then be closed (files.go).
func (l *Log) Flush() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	return l.flushLocked()
}

// flushLocked is Flush. Caller holds flushMu.
func (l *Log) flushLocked() error {
	l.mu.Lock()
	if err := l.checkWritable(); err != nil {
		l.mu.Unlock()
		return err
	}
	leo, gen := l.leo.Load(), l.gen
	type dirtySeg struct {
		s      *segment
		writes uint64 // the writes this flush makes durable
	}
	var dirty []dirtySeg
	for _, s := range l.segs {
		if err := s.writeIndexes(l); err != nil {
			err = l.fail(err)
			l.mu.Unlock()
			return err
		}
		if !s.clean() {
			dirty = append(dirty, dirtySeg{s, s.writes.Load()})
		}
	}
	if leo == l.recoveryPoint && len(dirty) == 0 {
		l.mu.Unlock()
		return nil
	}
	l.mu.Unlock()
	// A segment deleted or closed meanwhile is skipped or waited for by
	// its fmu (segment.sync).
	var syncErr error
	for _, d := range dirty {
		if syncErr = d.s.syncTo(d.writes); syncErr != nil {
			break
		}
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if syncErr != nil {
		return l.fail(syncErr)
	}
	l.evictOpenSealed()
	if gen != l.gen || leo <= l.recoveryPoint {
		return nil // truncated meanwhile: what we synced may be gone
	}
	if err := writeRecoveryPoint(l.fs, l.dir, leo); err != nil {
		return l.fail(err)
	}
	l.recoveryPoint = leo
	return nil
}

func (l *Log) flushLoop(interval time.Duration) {
	defer close(l.flushDone)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-l.flushStop:
			return
		case <-t.C:
			if err := l.Flush(); err != nil && !errors.Is(err, ErrClosed) {
				l.logger.WithError(err).Warn("periodic flush failed")
			}
		}
	}
}

// Close flushes the log (index entries, fsync, recovery point), snapshots
// the producer state at the log end and closes its files. Reads and writes
// after Close fail with ErrClosed.
func (l *Log) Close() error {
	var err error
	l.closeOnce.Do(func() {
		l.swapMu.Lock() // a swap in progress ends first; later ones see closed
		defer l.swapMu.Unlock()
		janitor.remove(l)
		if l.flushStop != nil {
			close(l.flushStop)
			<-l.flushDone
		}
		l.mu.Lock()
		l.closing = true
		l.mu.Unlock()
		l.bg.Wait()
		l.flushMu.Lock()
		defer l.flushMu.Unlock()
		if ferr := l.flushLocked(); ferr != nil {
			err = fmt.Errorf("storage: close %s: %w", l.dir, ferr)
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.writeErr == nil {
			if serr := l.takeSnapshotLocked(l.leo.Load()); serr != nil && err == nil {
				err = fmt.Errorf("storage: close %s: %w", l.dir, serr)
			}
		}
		l.rmu.Lock()
		defer l.rmu.Unlock()
		l.closed.Store(true)
		if cerr := l.closeSegments(); cerr != nil && err == nil {
			err = fmt.Errorf("storage: close %s: %w", l.dir, cerr)
		}
	})
	return err
}

func (l *Log) closeSegments() error {
	var first error
	for _, s := range l.segs {
		s.fmu.Lock()
		if err := s.closeFiles(); err != nil && first == nil {
			first = err
		}
		s.fmu.Unlock()
	}
	l.fdmu.Lock()
	for _, s := range l.openSealed {
		s.inOpenList = false
	}
	l.openSealed = nil
	l.fdmu.Unlock()
	return first
}
