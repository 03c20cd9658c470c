// compact.go: the log cleaner's storage core (issue 14, step 1): given the
// closed segments of a compacted partition log and an offset map of the
// newest offset of each key over its dirty part, rewrite them keeping only
// the newest record of each key, and swap the cleaned segments in with a
// crash-safe rename protocol that Open understands.
//
// What a cleaning keeps, as Kafka's LogCleaner:
//
//   - A record is kept when its key is not in the map or its offset is at
//     or above the map's offset for its key. Offsets never change: a
//     rewritten batch keeps its base offset, last offset delta, leader
//     epoch, timestamps, producer id/epoch/base sequence and codec, and
//     each surviving record its offset delta (consumers see gaps).
//   - A tombstone (null value) that is the newest record of its key is
//     dropped once its batch's max timestamp is DeleteRetention older than
//     Now; younger ones stay (consumers must get to see the delete). A
//     batch without timestamps keeps its tombstones.
//   - Records without a key are dropped (a compacted log refuses them at
//     produce; Kafka's cleaner discards them).
//   - A batch of an idempotent producer whose records are all cleaned away
//     is kept as an empty batch (record count 0, same header fields) when
//     it is that producer's last batch in the log, so the producer's last
//     sequence survives a reload of the producer state.
//   - The last batch cleaned is kept too, empty if need be, so the cleaned
//     segments still end at the offset they ended at and a read below the
//     log end always finds a batch to return.
//   - Transactional and control batches are kept as they are, and their
//     keys are not put in the offset map (aborted transactions are not
//     handled by this step).
//   - Adjacent segments are cleaned into one while their sizes add up to
//     at most SegmentBytes (and their offsets fit a segment's relative
//     offsets), so small cleaned segments merge.
//
// Swap protocol, for a group of segments with bases b0 < b1 < ... < bk
// followed by a segment at E (the group covers [b0, E)):
//
//  1. write b0.log.cleaned, b0.index.cleaned, b0.timeindex.cleaned and a
//     marker b0.clean.cleaned holding E (with a CRC), fsync each;
//  2. rename the three data files to .swap, fsync the directory;
//  3. rename the marker to b0.clean.swap, fsync the directory: the commit
//     point;
//  4. delete the files of every segment whose base lies in (b0, E), rename
//     the .swap data files over b0's files (rename replaces atomically),
//     fsync the directory, delete the marker, fsync the directory.
//
// Recovery (recoverCleaning, run by Open before it lists segments) redoes
// step 4 for every b0.clean.swap marker (step 4 is idempotent), then
// deletes every other .cleaned and .swap file: a cleaning that had not
// reached its commit point is rolled back, and the old segments, never
// touched before the commit, are all there. A crash at any step therefore
// leaves either the old or the new segments of a group, never a mix.

package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/storage/record"
)

const (
	cleanedSuffix = ".cleaned"
	swapSuffix    = ".swap"
	// cleanMarkerSuffix names the marker of a group being swapped in:
	// %020d.clean.cleaned, then %020d.clean.swap.
	cleanMarkerSuffix = ".clean"
	cleanMarkerSize   = 12 // end offset int64, CRC32C of it
	// DefaultDedupeBufferBytes is the offset map's default budget
	// (log.cleaner.dedupe.buffer.size).
	DefaultDedupeBufferBytes = 128 << 20
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// segmentDataSuffixes are a segment's files, in the order step 4 renames
// them: the .log last.
var segmentDataSuffixes = []string{indexSuffix, timeIndexSuffix, logSuffix}

// CompactOptions configure a cleaning. Zero values mean defaults.
type CompactOptions struct {
	// FS is the file system (default OSFS).
	FS FS
	// Logger receives the cleaner's log lines.
	Logger *logrus.Entry
	// SegmentBytes bounds a segment merged from cleaned ones
	// (segment.bytes; default DefaultSegmentBytes).
	SegmentBytes int64
	// IndexIntervalBytes spaces the cleaned segments' index entries
	// (default DefaultIndexIntervalBytes).
	IndexIntervalBytes int
	// MaxInflatedBytes bounds the inflation of one compressed batch
	// (default record.MaxInflatedBytes).
	MaxInflatedBytes int
	// DeleteRetention is delete.retention.ms: how long after its batch's
	// max timestamp a tombstone is kept. Zero means
	// DefaultDeleteRetention; negative means 0 (drop at once).
	DeleteRetention time.Duration
	// Now is the time tombstones' ages are measured at (default
	// time.Now()).
	Now time.Time
	// DedupeBufferBytes is the offset map's budget (default
	// DefaultDedupeBufferBytes).
	DedupeBufferBytes int
	// FirstDirty is the first offset not cleaned yet (the cleaner's
	// checkpoint): the offset map covers the closed segments from it.
	FirstDirty int64
	// OffsetMap, when set, is cleared and used as the offset map instead
	// of a new one of DedupeBufferBytes (a cleaner thread keeps one).
	OffsetMap *OffsetMap
}

func (o CompactOptions) withDefaults() CompactOptions {
	if o.FS == nil {
		o.FS = OSFS{}
	}
	if o.Logger == nil {
		o.Logger = logrus.NewEntry(logrus.StandardLogger())
	}
	if o.SegmentBytes <= 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	if o.IndexIntervalBytes <= 0 {
		o.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if o.MaxInflatedBytes <= 0 {
		o.MaxInflatedBytes = record.MaxInflatedBytes
	}
	switch {
	case o.DeleteRetention == 0:
		o.DeleteRetention = DefaultDeleteRetention
	case o.DeleteRetention < 0:
		o.DeleteRetention = 0
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.DedupeBufferBytes <= 0 {
		o.DedupeBufferBytes = DefaultDedupeBufferBytes
	}
	return o
}

// CompactStats says what a cleaning did.
type CompactStats struct {
	Groups            int   // groups of segments swapped in
	SegmentsIn        int   // segments replaced
	BytesIn, BytesOut int64 // sizes of the replaced and the new .log files
	RecordsIn         int64 // records read in rewritten batches
	RecordsKept       int64
	TombstonesRemoved int64
	EmptyBatches      int // batches kept empty for their producer's sake
	// EndOffset is the end of the offset map: the next cleaning's
	// FirstDirty. Offsets below it are clean.
	EndOffset int64
}

// segFile is a segment on disk, as the cleaner sees it.
type segFile struct {
	base int64
	size int64
}

// listSegmentFiles lists the .log segments of dir in offset order.
func listSegmentFiles(fsys FS, dir string) ([]segFile, error) {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var segs []segFile
	for _, e := range entries {
		base, ok := parseSegmentName(e.Name())
		if !ok {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("stat %s: %w", e.Name(), err)
		}
		segs = append(segs, segFile{base: base, size: info.Size()})
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].base < segs[j].base })
	return segs, nil
}

// eachBatch calls fn with every batch of the segment file at path, whole
// (frame checked) when full is set, else with only its header bytes. A
// scan that stops short of the file's end is an error: the cleaner works
// on recovered segments only.
func eachBatch(fsys FS, path string, full bool, fn func(h *record.Header, batch []byte) error) error {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	size, err := fileSize(f)
	if err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	var buf []byte
	end, err := scanBatches(f, 0, size, false, func(h *record.Header, pos int64) error {
		n := record.HeaderSize
		if full {
			n = h.Size()
		}
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		b := buf[:n]
		if _, err := f.ReadAt(b, pos); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read batch at %d: %w", pos, err)
		}
		return fn(h, b)
	})
	if err != nil {
		return fmt.Errorf("scan %s: %w", path, err)
	}
	if end != size {
		return fmt.Errorf("scan %s: stopped at %d of %d bytes", path, end, size)
	}
	return nil
}

// cleanable reports whether a batch's keys take part in compaction.
func cleanable(h *record.Header) bool { return !h.Transactional() && !h.Control() }

// BuildOffsetMap fills m with the newest offset of each key in the batches
// of the segment files at paths (in offset order) from offset from on.
// It stops before the first batch whose records might not fit (the map
// then covers a prefix) and returns the offset after the last batch it
// covered: records at or above it are not in the map. It fails when not
// even the first batch fits.
func BuildOffsetMap(fsys FS, paths []string, from int64, m *OffsetMap, maxInflated int) (int64, error) {
	end := from
	errMapFull := errors.New("offset map full")
	var br record.BatchReader
	var rec record.Record
	for _, p := range paths {
		err := eachBatch(fsys, p, true, func(h *record.Header, batch []byte) error {
			if h.NextOffset() <= from {
				return nil
			}
			if cleanable(h) {
				if int(h.RecordCount) > m.Free() {
					return errMapFull
				}
				if err := br.Reset(batch, maxInflated); err != nil {
					return fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
				}
				for br.Next(&rec) {
					if rec.Key != nil && rec.Offset >= from {
						m.Put(rec.Key, rec.Offset)
					}
				}
				if err := br.Err(); err != nil {
					return fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
				}
			}
			end = h.NextOffset()
			return nil
		})
		if errors.Is(err, errMapFull) {
			if end == from {
				return from, fmt.Errorf("storage: offset map of %d entries cannot hold the batch at offset %d", m.Len()+m.Free(), from)
			}
			return end, nil
		}
		if err != nil {
			return end, err
		}
	}
	return end, nil
}

// producerLastBatches returns the base offset of each producer's last
// batch in the segment files at paths, and that of the last batch in the
// first n files (-1 if none).
func producerLastBatches(fsys FS, paths []string, n int) (map[int64]int64, int64, error) {
	last, lastInN := map[int64]int64{}, int64(-1)
	for i, p := range paths {
		err := eachBatch(fsys, p, false, func(h *record.Header, _ []byte) error {
			if h.ProducerID >= 0 {
				last[h.ProducerID] = h.BaseOffset
			}
			if i < n {
				lastInN = h.BaseOffset
			}
			return nil
		})
		if err != nil {
			return nil, -1, err
		}
	}
	return last, lastInN, nil
}

// batchCleaner rewrites batches against an offset map.
type batchCleaner struct {
	m            *OffsetMap
	horizon      int64           // tombstones in batches with max timestamp below it are dropped
	producerLast map[int64]int64 // pid -> base offset of its last batch
	// keepLast is the base offset of the last batch cleaned: kept, empty
	// if need be, so the cleaned segments end where they did and a read
	// below the log end always finds a batch (else a consumer at a
	// trailing gap would wait for the next append to move on).
	keepLast    int64
	maxInflated int
	stats       *CompactStats
	area        []byte // records area being built, reused
}

// cleanBatch returns what is left of batch: nil when nothing is kept,
// batch itself when everything is, else a new batch. changed reports
// whether the result differs from batch.
func (c *batchCleaner) cleanBatch(h *record.Header, batch []byte) (out []byte, changed bool, err error) {
	if !cleanable(h) {
		return batch, false, nil
	}
	recs, err := record.Records(batch, c.maxInflated)
	if err != nil {
		return nil, false, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
	}
	kept := recs[:0:0]
	for i := range recs {
		r := &recs[i]
		if r.Key == nil {
			continue
		}
		if newest, ok := c.m.Get(r.Key); ok && r.Offset < newest {
			continue
		}
		if r.Value == nil && h.MaxTimestamp >= 0 && h.MaxTimestamp < c.horizon {
			c.stats.TombstonesRemoved++
			continue
		}
		kept = append(kept, *r)
	}
	c.stats.RecordsIn += int64(len(recs))
	c.stats.RecordsKept += int64(len(kept))
	switch {
	case len(kept) == 0:
		// An empty batch (this one, or one a cleaning left) is kept only
		// while it is needed.
		if (h.ProducerID >= 0 && c.producerLast[h.ProducerID] == h.BaseOffset) || h.BaseOffset == c.keepLast {
			c.stats.EmptyBatches++
			if len(recs) == 0 {
				return batch, false, nil
			}
			return emptyBatch(batch), true, nil
		}
		return nil, true, nil
	case len(kept) == len(recs):
		return batch, false, nil
	}
	out, err = c.rebuild(h, batch, kept)
	return out, true, err
}

// emptyBatch returns a copy of batch's header as a batch of no records:
// same offsets, epoch, timestamps and producer fields, uncompressed.
func emptyBatch(batch []byte) []byte {
	out := make([]byte, record.HeaderSize)
	copy(out, batch[:record.HeaderSize])
	be := binary.BigEndian
	be.PutUint32(out[8:], uint32(record.HeaderSize-record.LogOverhead)) // length
	attrs := be.Uint16(out[21:])
	be.PutUint16(out[21:], attrs&^uint16(0x7)) // no codec
	be.PutUint32(out[57:], 0)                  // record count
	be.PutUint32(out[17:], record.Checksum(out))
	return out
}

// rebuild encodes kept, records of batch, into a new batch with batch's
// header fields and codec.
func (c *batchCleaner) rebuild(h *record.Header, batch []byte, kept []record.Record) ([]byte, error) {
	area := c.area[:0]
	for i := range kept {
		r := &kept[i]
		area = appendCleanedRecord(area, r.Offset-h.BaseOffset, r.Timestamp-h.BaseTimestamp, r)
	}
	c.area = area
	out := make([]byte, record.HeaderSize, record.HeaderSize+len(area))
	copy(out, batch[:record.HeaderSize])
	out, err := record.Compress(h.Compression(), out, area)
	if err != nil {
		return nil, fmt.Errorf("compress batch at offset %d: %w", h.BaseOffset, err)
	}
	length := len(out) - record.LogOverhead
	if length > math.MaxInt32 {
		return nil, fmt.Errorf("batch at offset %d: %d bytes exceed the v2 limit", h.BaseOffset, len(out))
	}
	be := binary.BigEndian
	be.PutUint32(out[8:], uint32(length))
	be.PutUint32(out[57:], uint32(len(kept)))
	be.PutUint32(out[17:], record.Checksum(out))
	return out, nil
}

func zigzagSize(v int64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutVarint(b[:], v)
}

func nullableSize(b []byte) int {
	if b == nil {
		return 1
	}
	return zigzagSize(int64(len(b))) + len(b)
}

func appendNullable(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

// appendCleanedRecord encodes r with the given offset and timestamp
// deltas (the record.Builder numbers records by position; the cleaner
// keeps their original offset deltas).
func appendCleanedRecord(dst []byte, offDelta, tsDelta int64, r *record.Record) []byte {
	size := 1 + zigzagSize(tsDelta) + zigzagSize(offDelta) + nullableSize(r.Key) + nullableSize(r.Value) + zigzagSize(int64(len(r.Headers)))
	for i := range r.Headers {
		hd := &r.Headers[i]
		size += zigzagSize(int64(len(hd.Key))) + len(hd.Key) + nullableSize(hd.Value)
	}
	dst = binary.AppendVarint(dst, int64(size))
	dst = append(dst, 0) // attributes
	dst = binary.AppendVarint(dst, tsDelta)
	dst = binary.AppendVarint(dst, offDelta)
	dst = appendNullable(dst, r.Key)
	dst = appendNullable(dst, r.Value)
	dst = binary.AppendVarint(dst, int64(len(r.Headers)))
	for i := range r.Headers {
		hd := &r.Headers[i]
		dst = binary.AppendVarint(dst, int64(len(hd.Key)))
		dst = append(dst, hd.Key...)
		dst = appendNullable(dst, hd.Value)
	}
	return dst
}

// groupSegments splits segs (to be cleaned, in order; next is the base of
// the segment after the last) into runs whose .log sizes add up to at most
// limit and whose offsets fit one segment's relative offsets. A segment
// larger than limit is a group of its own.
func groupSegments(segs []segFile, next int64, limit int64) [][]segFile {
	var groups [][]segFile
	for i := 0; i < len(segs); {
		j, size := i+1, segs[i].size
		for j < len(segs) {
			end := next
			if j+1 < len(segs) {
				end = segs[j+1].base
			}
			if size+segs[j].size > limit || end-1-segs[i].base > math.MaxUint32 {
				break
			}
			size += segs[j].size
			j++
		}
		groups = append(groups, segs[i:j])
		i = j
	}
	return groups
}

// CompactDir cleans the log in dir, which must not be open: it finishes
// or rolls back an interrupted swap, builds the offset map over the closed
// segments (all but the last) from opts.FirstDirty, rewrites every closed
// segment that starts below the map's end, merging small ones, and swaps
// each group in. It returns what it did; EndOffset is the next cleaning's
// FirstDirty. (*Log).Clean (clean.go) cleans an open log.
func CompactDir(dir string, opts CompactOptions) (CompactStats, error) {
	opts = opts.withDefaults()
	fsys, logger := opts.FS, opts.Logger.WithField("log", dir)
	if err := recoverCleaning(fsys, dir, logger); err != nil {
		return CompactStats{EndOffset: opts.FirstDirty}, err
	}
	segs, err := listSegmentFiles(fsys, dir)
	if err != nil {
		return CompactStats{EndOffset: opts.FirstDirty}, err
	}
	if len(segs) < 2 {
		return CompactStats{EndOffset: opts.FirstDirty}, nil // only the active segment
	}
	paths := make([]string, len(segs))
	for i, s := range segs {
		paths[i] = segmentPath(dir, s.base, logSuffix)
	}
	plan := compactPlan{segs: segs[:len(segs)-1], next: segs[len(segs)-1].base, scanPaths: paths}
	swap := func(b0, end int64, _ *segment) error { return swapCleaned(fsys, dir, b0, end) }
	return compactSegments(fsys, dir, plan, opts, logger, swap)
}

// compactPlan is what a cleaning works on.
type compactPlan struct {
	segs      []segFile // the closed segments that may be cleaned, in order
	next      int64     // base of the segment after the last of segs
	scanPaths []string  // segs' files and those after them, scanned for each producer's last batch
}

// swapFunc swaps the cleaned segment at b0, covering [b0, end), in once
// its .cleaned files and marker are written (step 1 done); seg is its
// state as written. On error the caller removes what is left of step 1.
type swapFunc func(b0, end int64, seg *segment) error

// compactSegments cleans plan's segments: builds the offset map from
// opts.FirstDirty, rewrites the segments below its end, merged into
// groups, and has swap put each group in.
func compactSegments(fsys FS, dir string, plan compactPlan, opts CompactOptions, logger *logrus.Entry, swap swapFunc) (CompactStats, error) {
	stats := CompactStats{EndOffset: opts.FirstDirty}
	closed := plan.segs
	if len(closed) == 0 {
		return stats, nil
	}
	m := opts.OffsetMap
	if m != nil {
		m.Clear()
	} else {
		var err error
		if m, err = NewOffsetMap(opts.DedupeBufferBytes); err != nil {
			return stats, err
		}
	}
	from := max(opts.FirstDirty, closed[0].base)
	end, err := BuildOffsetMap(fsys, plan.scanPaths[:len(closed)], from, m, opts.MaxInflatedBytes)
	if err != nil {
		return stats, fmt.Errorf("storage: compact %s: %w", dir, err)
	}
	stats.EndOffset = end
	if end <= from {
		return stats, nil // nothing dirty
	}
	n := sort.Search(len(closed), func(i int) bool { return closed[i].base >= end })
	last, keepLast, err := producerLastBatches(fsys, plan.scanPaths, n)
	if err != nil {
		return stats, fmt.Errorf("storage: compact %s: %w", dir, err)
	}
	c := &batchCleaner{
		m:            m,
		horizon:      opts.Now.Add(-opts.DeleteRetention).UnixMilli(),
		producerLast: last,
		keepLast:     keepLast,
		maxInflated:  opts.MaxInflatedBytes,
		stats:        &stats,
	}
	after := plan.next
	if n < len(closed) {
		after = closed[n].base
	}
	groups := groupSegments(closed[:n], after, opts.SegmentBytes)
	for i, g := range groups {
		next := after
		if i+1 < len(groups) {
			next = groups[i+1][0].base
		}
		if err := cleanGroup(fsys, dir, g, next, c, opts, logger, swap); err != nil {
			return stats, fmt.Errorf("storage: compact %s: %w", dir, err)
		}
	}
	logger.WithFields(logrus.Fields{"groups": stats.Groups, "segments": stats.SegmentsIn, "bytes_in": stats.BytesIn,
		"bytes_out": stats.BytesOut, "tombstones_removed": stats.TombstonesRemoved, "clean_to": end}).Info("cleaned log")
	return stats, nil
}

// cleanedWriter writes one cleaned segment: its .log.cleaned and, at the
// end, its indexes.
type cleanedWriter struct {
	fsys    FS
	f       File
	seg     *segment // index state, built as a scan would
	pos     int64
	buf     []byte
	changed bool
	opts    CompactOptions
}

func (w *cleanedWriter) add(h *record.Header, batch []byte) error {
	nh, err := record.ParseHeader(batch)
	if err != nil {
		return fmt.Errorf("cleaned batch at offset %d: %w", h.BaseOffset, err)
	}
	w.seg.noteBatch(&nh, w.pos+int64(len(w.buf)), w.opts.IndexIntervalBytes)
	w.buf = append(w.buf, batch...)
	if len(w.buf) >= scanBuffer {
		return w.flush()
	}
	return nil
}

func (w *cleanedWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	if _, err := w.f.WriteAt(w.buf, w.pos); err != nil {
		return fmt.Errorf("write cleaned segment %d: %w", w.seg.base, err)
	}
	w.pos += int64(len(w.buf))
	w.buf = w.buf[:0]
	return nil
}

// createSynced creates path, lets write fill it, fsyncs and closes it.
func createSynced(fsys FS, path string, write func(f File) error) error {
	f, err := fsys.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	err = write(f)
	if err == nil {
		if err = f.Sync(); err != nil {
			err = fmt.Errorf("fsync %s: %w", path, err)
		}
	}
	if cerr := f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close %s: %w", path, cerr)
	}
	return err
}

// cleanGroup cleans one group of segments into one at the group's first
// base and swaps it in. next is the base of the segment after the group.
func cleanGroup(fsys FS, dir string, group []segFile, next int64, c *batchCleaner, opts CompactOptions, logger *logrus.Entry, swap swapFunc) error {
	b0 := group[0].base
	w := &cleanedWriter{fsys: fsys, opts: opts, seg: &segment{base: b0, dir: dir, fsys: fsys, next: b0, rollTS: -1, corruptAt: -1}}
	w.seg.maxTS.Store(-1)
	logPath := segmentPath(dir, b0, logSuffix+cleanedSuffix)
	err := createSynced(fsys, logPath, func(f File) error {
		w.f = f
		for _, s := range group {
			err := eachBatch(fsys, segmentPath(dir, s.base, logSuffix), true, func(h *record.Header, batch []byte) error {
				out, changed, err := c.cleanBatch(h, batch)
				if err != nil {
					return err
				}
				w.changed = w.changed || changed
				if out == nil {
					return nil
				}
				return w.add(h, out)
			})
			if err != nil {
				return err
			}
		}
		return w.flush()
	})
	if err == nil && !w.changed && len(group) == 1 {
		// Nothing to clean in a lone segment: leave it be.
		return removeAll(fsys, logPath)
	}
	if err == nil {
		passCrashPoint(CrashCleanedLogWritten)
		if w.pos > 0 {
			w.seg.idx.appendTime(timeEntry{ts: w.seg.maxTS.Load(), rel: w.seg.lastOffsetRel}, true)
		}
		err = w.writeIndexes(dir, b0)
	}
	if err == nil {
		err = createSynced(fsys, segmentPath(dir, b0, cleanMarkerSuffix+cleanedSuffix), func(f File) error {
			_, err := f.WriteAt(encodeCleanMarker(next), 0)
			return err
		})
	}
	if err == nil {
		passCrashPoint(CrashBeforeSwap)
		w.seg.size.Store(w.pos)
		err = swap(b0, next, w.seg)
	}
	if err != nil {
		// Roll back what was written; the old segments are untouched.
		paths := []string{segmentPath(dir, b0, cleanMarkerSuffix+cleanedSuffix)}
		for _, sfx := range segmentDataSuffixes {
			paths = append(paths, segmentPath(dir, b0, sfx+cleanedSuffix))
		}
		if rerr := removeAll(fsys, paths...); rerr != nil {
			logger.WithError(rerr).Warn("removing the files of a failed cleaning; the next open removes them")
		}
		return err
	}
	for _, s := range group {
		c.stats.BytesIn += s.size
	}
	c.stats.BytesOut += w.pos
	c.stats.Groups++
	c.stats.SegmentsIn += len(group)
	logger.WithFields(logrus.Fields{"base": b0, "segments": len(group), "bytes": w.pos}).Debug("swapped in a cleaned segment")
	return nil
}

func (w *cleanedWriter) writeIndexes(dir string, b0 int64) error {
	var off File
	err := createSynced(w.fsys, segmentPath(dir, b0, indexSuffix+cleanedSuffix), func(f File) error {
		off = f
		return createSynced(w.fsys, segmentPath(dir, b0, timeIndexSuffix+cleanedSuffix), func(tf File) error {
			return w.seg.idx.writeTo(off, tf)
		})
	})
	if err != nil {
		return fmt.Errorf("write indexes of cleaned segment %d: %w", b0, err)
	}
	return nil
}

// removeAll removes paths, ignoring those already gone.
func removeAll(fsys FS, paths ...string) error {
	for _, p := range paths {
		if err := fsys.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", p, err)
		}
	}
	return nil
}

func encodeCleanMarker(end int64) []byte {
	b := make([]byte, cleanMarkerSize)
	binary.BigEndian.PutUint64(b, uint64(end))
	binary.BigEndian.PutUint32(b[8:], crc32.Checksum(b[:8], crcTable))
	return b
}

func decodeCleanMarker(b []byte) (int64, error) {
	if len(b) != cleanMarkerSize || crc32.Checksum(b[:8], crcTable) != binary.BigEndian.Uint32(b[8:]) {
		return 0, fmt.Errorf("%w: cleaning marker of %d bytes fails its check", ErrCorruptLog, len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// swapCleaned runs steps 2 to 4 of the swap protocol for the cleaned
// segment at b0 covering [b0, end).
func swapCleaned(fsys FS, dir string, b0, end int64) error {
	for _, sfx := range segmentDataSuffixes {
		from := segmentPath(dir, b0, sfx+cleanedSuffix)
		if err := fsys.Rename(from, segmentPath(dir, b0, sfx+swapSuffix)); err != nil {
			return fmt.Errorf("rename %s: %w", from, err)
		}
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	marker := segmentPath(dir, b0, cleanMarkerSuffix+cleanedSuffix)
	if err := fsys.Rename(marker, segmentPath(dir, b0, cleanMarkerSuffix+swapSuffix)); err != nil {
		return fmt.Errorf("rename %s: %w", marker, err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return finishSwap(fsys, dir, b0, end, true)
}

// finishSwap is step 4 of the swap protocol: idempotent, so recovery
// redoes it after a crash anywhere in it. A cleaning (not recovery) passes
// its crash point.
func finishSwap(fsys FS, dir string, b0, end int64, cleaning bool) error {
	if err := finishSwapFiles(fsys, dir, b0, end, cleaning); err != nil {
		return err
	}
	return finishSwapDurable(fsys, dir, b0)
}

// finishSwapFiles is step 4's file changes: the replaced segments' files
// go and the .swap files take their final names (b0's replacing the old
// segment's). Not durable until finishSwapDurable.
func finishSwapFiles(fsys FS, dir string, b0, end int64, cleaning bool) error {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	// Every file of a replaced segment other than b0's: indexes first, so
	// a crash never leaves an index whose .log is gone unnoticed.
	var doomed [3][]string
	for _, e := range entries {
		for i, sfx := range segmentDataSuffixes {
			if base, ok := parseOffsetName(e.Name(), sfx); ok && base > b0 && base < end {
				doomed[i] = append(doomed[i], filepath.Join(dir, e.Name()))
			}
		}
	}
	for _, paths := range doomed {
		if err := removeAll(fsys, paths...); err != nil {
			return err
		}
	}
	if cleaning {
		passCrashPoint(CrashOldRemoved)
	}
	for _, sfx := range segmentDataSuffixes {
		from := segmentPath(dir, b0, sfx+swapSuffix)
		if err := fsys.Rename(from, segmentPath(dir, b0, sfx)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("rename %s: %w", from, err)
		}
	}
	return nil
}

// finishSwapDurable makes step 4's file changes durable, then removes the
// marker (durably): until then recovery redoes the swap.
func finishSwapDurable(fsys FS, dir string, b0 int64) error {
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	if err := removeAll(fsys, segmentPath(dir, b0, cleanMarkerSuffix+swapSuffix)); err != nil {
		return err
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// recoverCleaning finishes every swap that reached its commit point and
// rolls back every cleaning that did not, leaving dir with no .cleaned or
// .swap file. Open runs it before it lists the segments.
func recoverCleaning(fsys FS, dir string, logger *logrus.Entry) error {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	var markers []int64
	leftovers := false
	for _, e := range entries {
		name := e.Name()
		if base, ok := parseOffsetName(name, cleanMarkerSuffix+swapSuffix); ok {
			markers = append(markers, base)
		} else if strings.HasSuffix(name, cleanedSuffix) || strings.HasSuffix(name, swapSuffix) {
			leftovers = true
		}
	}
	sort.Slice(markers, func(i, j int) bool { return markers[i] < markers[j] })
	for _, b0 := range markers {
		raw, err := readWholeFile(fsys, segmentPath(dir, b0, cleanMarkerSuffix+swapSuffix))
		if err != nil {
			return fmt.Errorf("read cleaning marker %d: %w", b0, err)
		}
		end, err := decodeCleanMarker(raw)
		if err != nil {
			return fmt.Errorf("cleaning marker %d: %w", b0, err)
		}
		logger.WithFields(logrus.Fields{"base": b0, "end": end}).Info("finishing an interrupted swap of a cleaned segment")
		if err := finishSwap(fsys, dir, b0, end, false); err != nil {
			return fmt.Errorf("finish swap of cleaned segment %d: %w", b0, err)
		}
	}
	if !leftovers {
		return nil
	}
	if entries, err = fsys.ReadDir(dir); err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, cleanedSuffix) || strings.HasSuffix(name, swapSuffix) {
			logger.WithField("file", name).Info("removing the leftover of an interrupted cleaning")
			if err := removeAll(fsys, filepath.Join(dir, name)); err != nil {
				return err
			}
		}
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}
