// maxts.go: the record with the largest timestamp in the log (Kafka's
// ListOffsets MAX_TIMESTAMP, -3, KIP-734).
//
// Each segment keeps its largest batch max timestamp (maxTS) and, as Kafka
// keeps maxTimestampAndOffsetSoFar, the first batch that carries it
// (maxTSAt: base and last offset, byte position). The writer sets it on
// every append that raises maxTS; every scan that rebuilds a segment
// (recovery, a broken index, truncation) rebuilds it through the same
// noteBatch; a deleted segment takes it with it. A sealed segment loaded
// from its indexes has no mark until the first look-up finds its batch with
// the time index (the entry before maxTS bounds the header walk) and keeps
// it (the segment no longer changes; truncation rebuilds under the write
// lock).
//
// A look-up is bounded by a limit (a leader passes its high watermark, so
// an unreplicated record is never answered): segments below it answer from
// their marks with no I/O; a segment whose mark lies at or past the limit
// answers for its prefix below the limit from the last time-index entry
// before it (every record up to that entry's offset is no newer than its
// timestamp) plus a walk over the batch headers after that entry. Kafka
// instead answers nothing at all when the partition's newest record is not
// yet below its high watermark.
//
// Precision: the record, not the batch. The winning batch is decoded and the
// first record whose timestamp equals the batch's max timestamp is answered
// (Kafka 3.x's RecordBatch.offsetOfMaxTimestamp); ties between batches or
// segments go to the earliest. A batch whose header claims a max timestamp
// no record has (a producer's bad header; appends do not recompute it)
// answers its first record with the largest record timestamp, still with the
// header's timestamp, as every other look-up trusts the header. Batches
// without timestamps (-1) never count: a log where no batch has one answers
// nothing, like an empty log.

package storage

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sync/atomic"

	"github.com/actorlog/actorlog/storage/record"
)

// tsMark is a batch holding a segment's max timestamp. Immutable but for
// the cached record offset.
type tsMark struct {
	ts        int64 // the batch's max timestamp
	base      int64 // the batch's base offset
	last      int64 // the batch's last offset
	pos       int64 // the batch's byte position in the .log file
	recOffset atomic.Int64
}

func newTSMark(h *record.Header, pos int64) *tsMark {
	m := &tsMark{ts: h.MaxTimestamp, base: h.BaseOffset, last: h.LastOffset(), pos: pos}
	m.recOffset.Store(-1)
	return m
}

// MaxTimestamp returns the offset and timestamp of the record with the
// largest timestamp among the batches wholly below limit (limit < 0 means
// the log end), the earliest such record on a tie. found is false when no
// batch there carries a timestamp (an empty log included).
func (l *Log) MaxTimestamp(limit int64) (offset, timestamp int64, found bool, err error) {
	l.rmu.RLock()
	defer l.rmu.RUnlock()
	if l.closed.Load() {
		return 0, 0, false, ErrClosed
	}
	// The log end is read before any mark: every batch below it had its
	// mark stored first (appendLocked publishes the end last).
	if leo := l.leo.Load(); limit < 0 || limit > leo {
		limit = leo
	}
	var best *tsMark
	var bestSeg *segment
	for _, s := range l.segs {
		if s.base >= limit {
			break
		}
		m, err := l.segmentMaxBelow(s, limit)
		if err != nil {
			return 0, 0, false, err
		}
		if m != nil && (best == nil || m.ts > best.ts) {
			best, bestSeg = m, s
		}
	}
	if best == nil {
		return -1, -1, false, nil
	}
	off, err := l.markRecord(bestSeg, best)
	if err != nil {
		return 0, 0, false, err
	}
	return off, best.ts, true, nil
}

// segmentMaxBelow returns the first batch of s holding the largest max
// timestamp among its batches wholly below limit, or nil when none has a
// timestamp. Caller holds rmu for reading.
func (l *Log) segmentMaxBelow(s *segment, limit int64) (*tsMark, error) {
	m := s.maxTSAt.Load()
	if m != nil && m.last < limit {
		return m, nil
	}
	if m == nil && s.maxTS.Load() < 0 {
		return nil, nil // no batch with a timestamp (or none at all)
	}
	f, err := l.acquireLog(s)
	if err != nil {
		return nil, err
	}
	defer s.fmu.RUnlock()
	found, err := s.maxBelow(f, limit)
	if err != nil {
		return nil, err
	}
	// A sealed segment's whole answer never changes: keep it.
	if m == nil && found != nil && s.sealed.Load() && found.ts == s.maxTS.Load() {
		s.maxTSAt.CompareAndSwap(nil, found)
	}
	return found, nil
}

// maxBelow finds, by reading f (the segment's .log file), the first batch
// holding the largest max timestamp among the batches wholly below limit.
// The last time entry before limit bounds the prefix it covers; only the
// headers after it are read.
func (s *segment) maxBelow(f File, limit int64) (*tsMark, error) {
	end := s.size.Load()
	if s.corruptAt >= 0 && s.corruptAt < end {
		end = s.corruptAt
	}
	rel := uint32(min(max(limit-s.base, 0), math.MaxUint32))
	e, ok, err := s.lastTimeBefore(rel)
	if err != nil {
		return nil, err
	}
	bestTS, from := int64(-1), s.base
	if ok {
		bestTS, from = e.ts, s.base+int64(e.rel)+1
	}
	var best *tsMark
	pos, h, err := s.findBatch(f, from, end)
	if err != nil {
		return nil, err
	}
	hdr := make([]byte, record.HeaderSize)
	for pos < end && h.LastOffset() < limit {
		if h.MaxTimestamp > bestTS {
			bestTS, best = h.MaxTimestamp, newTSMark(&h, pos)
		}
		pos += int64(h.Size())
		if pos >= end {
			break
		}
		if h, err = s.batchHeaderAt(f, pos, hdr); err != nil {
			return nil, fmt.Errorf("%w: segment %d: header at position %d: %w", ErrCorruptLog, s.base, pos, err)
		}
	}
	if best != nil || bestTS < 0 {
		return best, nil
	}
	// The time entry's timestamp is the newest: find its first batch,
	// which lies after the last entry older than it and at or before e.
	return s.firstBatchWith(f, bestTS, end)
}

// firstBatchWith returns the first batch of the segment whose max timestamp
// is >= ts, or nil.
func (s *segment) firstBatchWith(f File, ts, end int64) (*tsMark, error) {
	from := s.base
	rel, ok, err := s.lookupTime(ts)
	if err != nil {
		return nil, err
	}
	if ok {
		from = s.base + int64(rel) + 1 // everything up to rel is older than ts
	}
	pos, h, err := s.findBatch(f, from, end)
	if err != nil {
		return nil, err
	}
	hdr := make([]byte, record.HeaderSize)
	for pos < end {
		if h.MaxTimestamp >= ts {
			return newTSMark(&h, pos), nil
		}
		pos += int64(h.Size())
		if pos >= end {
			break
		}
		if h, err = s.batchHeaderAt(f, pos, hdr); err != nil {
			return nil, fmt.Errorf("%w: segment %d: header at position %d: %w", ErrCorruptLog, s.base, pos, err)
		}
	}
	return nil, nil
}

// markRecord returns the offset of the record holding m's timestamp,
// decoding m's batch once per mark. Caller holds rmu for reading.
func (l *Log) markRecord(s *segment, m *tsMark) (int64, error) {
	if off := m.recOffset.Load(); off >= 0 {
		return off, nil
	}
	f, err := l.acquireLog(s)
	if err != nil {
		return 0, err
	}
	defer s.fmu.RUnlock()
	hdr := make([]byte, record.HeaderSize)
	h, err := s.batchHeaderAt(f, m.pos, hdr)
	if err != nil {
		return 0, fmt.Errorf("%w: segment %d: header at position %d: %w", ErrCorruptLog, s.base, m.pos, err)
	}
	if h.BaseOffset != m.base {
		return 0, fmt.Errorf("%w: segment %d: batch at position %d has base offset %d, expected %d", ErrCorruptLog, s.base, m.pos, h.BaseOffset, m.base)
	}
	batch := make([]byte, h.Size())
	if n, err := f.ReadAt(batch, m.pos); n < len(batch) {
		return 0, fmt.Errorf("storage: read segment %d at %d: %w", s.base, m.pos, errors.Join(io.ErrUnexpectedEOF, err))
	}
	recs, err := record.Records(batch, max(l.cfg.MaxMessageBytes, len(batch))*64)
	if err != nil {
		return 0, fmt.Errorf("%w: segment %d, batch at offset %d: %w", ErrCorruptLog, s.base, h.BaseOffset, err)
	}
	off := m.base // a batch with no records: its base offset
	bestTS := int64(math.MinInt64)
	for _, r := range recs {
		if r.Timestamp == m.ts {
			off = r.Offset
			break
		}
		if r.Timestamp > bestTS {
			bestTS, off = r.Timestamp, r.Offset
		}
	}
	m.recOffset.Store(off)
	return off, nil
}
