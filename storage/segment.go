// segment.go: one segment of a partition log — a .log file holding a plain
// sequence of RecordBatch v2 frames, with its sparse offset and time indexes —
// and the scanner that walks, validates and indexes its frames.

package storage

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/actorlog/actorlog/storage/record"
)

const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
)

func segmentPath(dir string, base int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, suffix))
}

// parseSegmentName returns the base offset of a "%020d.log" file name.
func parseSegmentName(name string) (int64, bool) { return parseOffsetName(name, logSuffix) }

// parseOffsetName returns the offset of a "%020d<suffix>" file name.
func parseOffsetName(name, suffix string) (int64, bool) {
	if !strings.HasSuffix(name, suffix) {
		return 0, false
	}
	digits := strings.TrimSuffix(name, suffix)
	if len(digits) != 20 {
		return 0, false
	}
	base, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || base < 0 {
		return 0, false
	}
	return base, true
}

// segment is one .log file and its indexes.
//
// Threading: the writer (holding Log.mu) appends, rolls and truncates.
// Readers (holding Log.rmu for reading) use size, maxTS, maxTSAt, corruptAt and the
// index under its own lock; bytes below size are complete batches that never
// change while a reader holds Log.rmu.
//
// Files are opened on demand and closed when idle (files.go): log, offFile
// and timeFile are nil while closed. They are guarded by fmu: whoever uses
// a handle holds fmu for reading (withFiles, acquireLog), whoever opens or
// closes one holds it for writing. Invariant: a handle is closed only when
// everything written through it has been fsynced (synced == writes), or
// when the segment is being deleted or the log closed.
type segment struct {
	base     int64
	dir      string
	fsys     FS // opens a sealed segment's index files for a lookup (index.go)
	fmu      sync.RWMutex
	log      File
	offFile  File
	timeFile File
	idx      segIndex

	size      atomic.Int64 // bytes of complete batches, readable
	maxTS     atomic.Int64 // largest batch max timestamp, -1 when empty
	corruptAt int64        // >= 0: framing broke here in a sealed segment; reads past it fail
	// checked is a position below which every batch has passed its CRC32C
	// check in this process: when appended (every append path checks it)
	// or when an earlier read served it. Reads check only what lies at or
	// past it (read.go), so serving the same bytes again, or bytes this
	// process wrote, costs no second checksum. 0 for a segment opened from
	// disk; lowered by truncation.
	checked atomic.Int64
	// maxTSAt is the first batch holding maxTS (maxts.go): set by the
	// writer on append and by every scan that rebuilds the segment (so
	// recovery and truncation rebuild it); nil while unknown (a sealed
	// segment loaded from its indexes, until a reader finds it) or while
	// no batch carries a timestamp.
	maxTSAt atomic.Pointer[tsMark]

	// writes counts the writes and truncations of the segment's files;
	// synced is the value of writes that the last successful fsync of all
	// its open files covered. The segment is clean when they are equal.
	writes, synced atomic.Uint64
	// used is set by every use of the segment's files and cleared by the
	// idle sweep, which closes files unused for Config.FileIdleTimeout.
	used atomic.Bool
	// sealed is set once the segment is no longer the active one.
	sealed atomic.Bool

	// Owned by the log's open-file bookkeeping (Log.fdmu).
	inOpenList bool  // in Log.openSealed
	idleSince  int64 // ms; set by the idle sweep

	// Writer-owned.
	next            int64 // offset after the last batch
	rollTS          int64 // max timestamp of the first batch, -1 when empty
	created         int64 // wall-clock ms when this process created or opened it
	bytesSinceIndex int
	lastOffsetRel   uint32 // relative last offset of the last batch
}

// createSegment makes a new empty segment at base, removing any stale files.
func createSegment(fsys FS, dir string, base, now int64) (*segment, error) {
	s := &segment{base: base, dir: dir, fsys: fsys, next: base, rollTS: -1, corruptAt: -1, created: now}
	s.maxTS.Store(-1)
	s.writes.Store(1) // the files are created (or cut to zero) and need an fsync
	var err error
	if s.log, err = fsys.OpenFile(segmentPath(dir, base, logSuffix), os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644); err != nil {
		return nil, fmt.Errorf("create segment %d: %w", base, err)
	}
	if err := s.openIndexes(fsys, true); err != nil {
		if cerr := s.closeFiles(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return nil, err
	}
	s.used.Store(true)
	return s, nil
}

// openIndexes opens the index files that are closed, cutting them to zero
// with truncate. Caller holds fmu for writing (or owns the segment alone).
func (s *segment) openIndexes(fsys FS, truncate bool) error {
	var err error
	if s.offFile == nil {
		if s.offFile, err = openIndexFile(fsys, segmentPath(s.dir, s.base, indexSuffix)); err != nil {
			return err
		}
	}
	if s.timeFile == nil {
		if s.timeFile, err = openIndexFile(fsys, segmentPath(s.dir, s.base, timeIndexSuffix)); err != nil {
			return err
		}
	}
	if truncate {
		s.writes.Add(1)
		if err := s.offFile.Truncate(0); err != nil {
			return fmt.Errorf("truncate offset index of segment %d: %w", s.base, err)
		}
		if err := s.timeFile.Truncate(0); err != nil {
			return fmt.Errorf("truncate time index of segment %d: %w", s.base, err)
		}
	}
	return nil
}

// closeFiles closes every open file of the segment, returning the first
// error. Caller holds fmu for writing (or owns the segment alone).
func (s *segment) closeFiles() error {
	var first error
	for _, f := range []*File{&s.log, &s.offFile, &s.timeFile} {
		if *f == nil {
			continue
		}
		if err := (*f).Close(); err != nil && first == nil {
			first = err
		}
		*f = nil
	}
	return first
}

// openFiles reports how many of the segment's files are open. Caller holds
// fmu.
func (s *segment) openFiles() int {
	n := 0
	for _, f := range []File{s.log, s.offFile, s.timeFile} {
		if f != nil {
			n++
		}
	}
	return n
}

// clean reports whether every write to the segment's files was fsynced.
func (s *segment) clean() bool { return s.synced.Load() == s.writes.Load() }

// remove closes and deletes the segment's files.
func (s *segment) remove(fsys FS) error {
	s.fmu.Lock()
	err := s.closeFiles()
	s.fmu.Unlock()
	if err != nil {
		return fmt.Errorf("close segment %d: %w", s.base, err)
	}
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		if err := fsys.Remove(segmentPath(s.dir, s.base, suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove segment %d: %w", s.base, err)
		}
	}
	return nil
}

// empty reports whether the segment holds no batch.
func (s *segment) empty() bool { return s.size.Load() == 0 }

// noteBatch records a batch appended (or found by a scan) at pos: it moves
// next and the max timestamp, and adds sparse index entries.
func (s *segment) noteBatch(h *record.Header, pos int64, indexInterval int) {
	if s.noteBatchIndexes(h, pos, indexInterval) {
		s.maxTSAt.Store(newTSMark(h, pos))
	}
}

// noteBatchIndexes is noteBatch but for the max timestamp's mark, which
// is the caller's to set when it returns true (h raised maxTS): a scan
// sets it once at its end instead of allocating one per batch.
func (s *segment) noteBatchIndexes(h *record.Header, pos int64, indexInterval int) bool {
	if s.rollTS < 0 {
		s.rollTS = h.MaxTimestamp
	}
	raised := h.MaxTimestamp > s.maxTS.Load()
	if raised {
		s.maxTS.Store(h.MaxTimestamp)
	}
	s.next = h.NextOffset()
	s.lastOffsetRel = uint32(h.LastOffset() - s.base)
	if s.bytesSinceIndex > indexInterval {
		s.idx.appendOffset(offsetEntry{rel: uint32(h.BaseOffset - s.base), pos: uint32(pos)})
		s.idx.appendTime(timeEntry{ts: s.maxTS.Load(), rel: s.lastOffsetRel}, false)
		s.bytesSinceIndex = 0
	}
	s.bytesSinceIndex += h.Size()
	return raised
}

// seal appends the final time-index entry (so the time index always ends at
// the segment's last offset and largest timestamp), writes the indexes and
// drops their entries from memory: lookups read the files from now on.
// Caller holds Log.mu.
func (s *segment) seal(l *Log) error {
	if !s.empty() {
		s.idx.appendTime(timeEntry{ts: s.maxTS.Load(), rel: s.lastOffsetRel}, true)
	}
	if err := s.writeIndexes(l); err != nil {
		return err
	}
	s.idx.release()
	return nil
}

// writeIndexes writes the index entries not yet in the files, opening them
// if they are closed. Caller holds Log.mu.
func (s *segment) writeIndexes(l *Log) error {
	if !s.idx.pending() {
		return nil
	}
	return l.withFiles(s, true, func() error {
		s.writes.Add(1)
		if err := s.idx.writeTo(s.offFile, s.timeFile); err != nil {
			return fmt.Errorf("segment %d: %w", s.base, err)
		}
		return nil
	})
}

// sync fsyncs the segment's open files. A closed file has nothing to sync
// (see the invariant on segment). Caller holds Log.mu, so no write is in
// flight, or owns the segment alone.
func (s *segment) sync() error { return s.syncTo(s.writes.Load()) }

// syncTo fsyncs the segment's open files and records that the first w
// writes are durable. w must be a value of writes read while no write was
// in flight (under Log.mu): writes counted later may not have reached the
// file when the fsync ran.
func (s *segment) syncTo(w uint64) error {
	s.fmu.RLock()
	for _, f := range []File{s.log, s.offFile, s.timeFile} {
		if f == nil {
			continue
		}
		if err := f.Sync(); err != nil {
			s.fmu.RUnlock()
			return fmt.Errorf("fsync segment %d: %w", s.base, err)
		}
	}
	s.fmu.RUnlock()
	for {
		cur := s.synced.Load()
		if cur >= w || s.synced.CompareAndSwap(cur, w) {
			return nil
		}
	}
}

// errStopScan is returned by a scan visitor to end a scan at a batch that is
// well-formed but does not belong (offsets out of order).
var errStopScan = errors.New("storage: batch offsets out of order")

// scanBuffer is the read size of a scan; larger frames are read on their own.
const scanBuffer = 1 << 20

// scanBuffers recycles scanBatches' read buffers: the cleaner scans every
// segment file of a log at each cleaning (a new 1 MiB buffer per file was
// most of what a cleaning allocated).
var scanBuffers = sync.Pool{New: func() any {
	b := make([]byte, scanBuffer)
	return &b
}}

// scanBatches walks the frames of f between from and size. With verify, each
// whole frame is read and checked (magic, CRC32C); without, only headers are
// parsed. visit is called for every valid frame in order; an error from it
// stops the scan. It returns the end of the last valid frame and, if the
// scan stopped before size, why (a torn frame is record.ErrShortBuffer).
func scanBatches(f File, from, size int64, verify bool, visit func(h *record.Header, pos int64) error) (int64, error) {
	bp := scanBuffers.Get().(*[]byte) // visit sees headers and positions, never buf
	defer scanBuffers.Put(bp)
	buf := *bp
	var big []byte // frames larger than buf, read on their own
	// One header for the scan: visit takes its address, so a header
	// declared per frame would be allocated per frame.
	var h record.Header
	pos := from
	for pos < size {
		n := int(min(int64(len(buf)), size-pos))
		m, err := f.ReadAt(buf[:n], pos)
		if err != nil && !errors.Is(err, io.EOF) {
			return pos, fmt.Errorf("read at %d: %w", pos, err)
		}
		if m < n { // the file is shorter than we were told
			n, size = m, pos+int64(m)
		}
		i := 0
		for i < n {
			rem := buf[i:n]
			at := pos + int64(i)
			if len(rem) < record.HeaderSize {
				if at+int64(len(rem)) >= size {
					return at, fmt.Errorf("%w: %d bytes at %d", record.ErrShortBuffer, len(rem), at)
				}
				break // refill
			}
			var err error
			if h, err = record.ParseHeader(rem); err != nil {
				return at, err
			}
			fsz := h.Size()
			if at+int64(fsz) > size {
				return at, fmt.Errorf("%w: frame of %d bytes at %d runs past end %d", record.ErrShortBuffer, fsz, at, size)
			}
			if fsz > len(rem) {
				if i > 0 {
					break // refill from this frame
				}
				// A frame larger than the buffer: read it alone.
				frame := rem
				if verify {
					if cap(big) < fsz { // one buffer for the scan's large frames, not one each
						big = make([]byte, fsz)
					}
					frame = big[:fsz]
					if m, err := f.ReadAt(frame, at); m < fsz {
						return at, fmt.Errorf("read frame at %d: %w", at, errors.Join(record.ErrShortBuffer, err))
					}
				}
				if err := checkScanned(frame, &h, at, verify, visit); err != nil {
					return at, err
				}
				i += fsz
				break
			}
			if err := checkScanned(rem[:fsz], &h, at, verify, visit); err != nil {
				return at, err
			}
			i += fsz
		}
		pos += int64(i)
	}
	return pos, nil
}

// checkScanned checks one scanned frame (whole when verify, else only its
// header need be present) and hands it to visit.
func checkScanned(frame []byte, h *record.Header, at int64, verify bool, visit func(h *record.Header, pos int64) error) error {
	if verify {
		if err := verifyFrame(frame, h); err != nil {
			return err
		}
	} else if h.Magic != record.Magic {
		return fmt.Errorf("%w: magic %d", record.ErrMagic, h.Magic)
	}
	return visit(h, at)
}

// verifyFrame is the check recovery applies to a frame: magic, CRC32C and,
// for uncompressed batches, every record parsed — what Append checks, since
// a crash can leave behind a large uncompressed batch whose check was still
// running. Compressed batches are not inflated: Append checks them fully
// before writing them.
func verifyFrame(frame []byte, h *record.Header) error {
	if h.Magic != record.Magic {
		return fmt.Errorf("%w: magic %d", record.ErrMagic, h.Magic)
	}
	if h.LastOffsetDelta < 0 {
		return fmt.Errorf("%w: negative last offset delta %d", record.ErrCorrupt, h.LastOffsetDelta)
	}
	if h.Compression() == record.CompressionNone {
		return record.CheckRecords(frame, h, 0)
	}
	return record.ValidateBody(frame, h)
}

// indexVisitor returns a scan visitor that checks offset order and rebuilds
// the segment's state and indexes from the frames it sees.
// The max timestamp's mark is set by done, once, for the batch that
// raised it last.
func (s *segment) indexVisitor(indexInterval int) (visit func(h *record.Header, pos int64) error, done func()) {
	var mark record.Header
	var markPos int64 = -1
	visit = func(h *record.Header, pos int64) error {
		if h.BaseOffset < s.next || h.LastOffset()-s.base > math.MaxUint32 {
			return fmt.Errorf("%w: batch at %d has offsets %d..%d, expected >= %d", errStopScan, pos, h.BaseOffset, h.LastOffset(), s.next)
		}
		if s.noteBatchIndexes(h, pos, indexInterval) {
			mark, markPos = *h, pos
		}
		return nil
	}
	done = func() {
		if markPos >= 0 {
			s.maxTSAt.Store(newTSMark(&mark, markPos))
		}
	}
	return visit, done
}

// rebuild re-creates the indexes and state by scanning the whole .log file.
// With verify, CRCs are checked. It returns the end of the valid frames and
// why the scan stopped early, if it did; it neither truncates nor writes.
// Caller holds fmu (withFiles) with the log file open.
func (s *segment) rebuild(fileSize int64, verify bool, indexInterval int) (int64, error) {
	s.idx.reset()
	s.next, s.rollTS, s.bytesSinceIndex, s.lastOffsetRel = s.base, -1, 0, 0
	s.maxTS.Store(-1)
	s.maxTSAt.Store(nil)
	visit, done := s.indexVisitor(indexInterval)
	end, err := scanBatches(s.log, 0, fileSize, verify, visit)
	done() // the batches up to end are the segment's, whatever stopped the scan
	return end, err
}

// batchHeaderAt reads the header of the batch at pos from f, the segment's
// log file.
func (s *segment) batchHeaderAt(f File, pos int64, buf []byte) (record.Header, error) {
	n, err := f.ReadAt(buf[:record.HeaderSize], pos)
	if err != nil && !errors.Is(err, io.EOF) {
		return record.Header{}, fmt.Errorf("segment %d: read header at %d: %w", s.base, pos, err)
	}
	return record.ParseHeader(buf[:n])
}
