// read.go: reading from the log — whole batches from an offset up to a byte
// limit (the first batch always whole, so a consumer can never get stuck),
// offset lookup by timestamp, and leader-epoch queries. Reads may run on any
// goroutine, concurrently with the writer; every batch served has passed its
// CRC32C check.

package storage

import (
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/actorlog/actorlog/internal/frame"
	"github.com/actorlog/actorlog/storage/record"
)

// ReadResult is what Read returns.
type ReadResult struct {
	// Records holds whole v2 batches, back to back. The first may start
	// before the requested offset (a batch is never split); callers skip
	// records below it. Empty when there is nothing to read yet.
	Records []byte
	// LogStartOffset and LogEndOffset as the read saw them.
	LogStartOffset int64
	LogEndOffset   int64
}

// Read returns whole batches starting with the one that holds offset, up to
// maxBytes (the first batch is returned whole even if larger) and stopping
// before any batch whose base offset is >= maxOffset (maxOffset < 0 means
// the log end; a leader passes its high watermark). It fails with
// ErrOffsetOutOfRange when offset is below the log start or above the log
// end, and with ErrCorruptLog when the first batch it would return fails its
// checks.
func (l *Log) Read(offset int64, maxBytes int, maxOffset int64) (ReadResult, error) {
	l.rmu.RLock()
	defer l.rmu.RUnlock()
	if l.closed.Load() {
		return ReadResult{}, ErrClosed
	}
	res := ReadResult{LogStartOffset: l.start.Load(), LogEndOffset: l.leo.Load()}
	if offset < res.LogStartOffset || offset > res.LogEndOffset {
		return res, fmt.Errorf("%w: offset %d, log holds [%d, %d)", ErrOffsetOutOfRange, offset, res.LogStartOffset, res.LogEndOffset)
	}
	limit := res.LogEndOffset
	if maxOffset >= 0 && maxOffset < limit {
		limit = maxOffset
	}
	if offset >= limit {
		return res, nil
	}
	for i := l.floorSegment(offset); i < len(l.segs); i++ {
		data, err := l.readSegment(l.segs[i], offset, maxBytes, limit)
		if err != nil || len(data) > 0 {
			res.Records = data
			return res, err
		}
	}
	return res, nil
}

// floorSegment is the index of the last segment whose base is <= offset (0
// when none). Caller holds rmu.
func (l *Log) floorSegment(offset int64) int {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset })
	return max(i-1, 0)
}

// readSegment is segment.read with the segment's file open.
func (l *Log) readSegment(s *segment, offset int64, maxBytes int, limit int64) ([]byte, error) {
	f, err := l.acquireLog(s)
	if err != nil {
		return nil, err
	}
	defer s.fmu.RUnlock()
	return s.read(f, offset, maxBytes, limit)
}

// read returns batches of this segment from the one holding offset, within
// maxBytes (the first one always whole) and below limit, reading f, its
// open .log file.
func (s *segment) read(f File, offset int64, maxBytes int, limit int64) ([]byte, error) {
	end := s.size.Load()
	if s.corruptAt >= 0 && s.corruptAt < end {
		end = s.corruptAt
	}
	pos, h, err := s.findBatch(f, offset, end)
	if err != nil {
		return nil, err
	}
	if pos >= end {
		if s.corruptAt >= 0 && offset < s.next {
			return nil, fmt.Errorf("%w: segment %d unreadable from position %d", ErrCorruptLog, s.base, s.corruptAt)
		}
		return nil, nil
	}
	if h.BaseOffset >= limit {
		return nil, nil
	}
	first := h.Size()
	if pos+int64(first) > end {
		return nil, fmt.Errorf("%w: segment %d: batch at %d runs past the segment end", ErrCorruptLog, s.base, pos)
	}
	n := int(min(int64(max(maxBytes, first)), end-pos))
	// A frame: a fetch answer carrying these bytes is encoded for the
	// remote without copying them (internal/frame, messages/framed.go).
	buf := frame.AllocPooled(n) // given back by the remote codec once sent
	if m, err := f.ReadAt(buf, pos); m < n {
		return nil, fmt.Errorf("storage: read segment %d at %d: %w", s.base, pos, errors.Join(io.ErrUnexpectedEOF, err))
	}
	i := 0
	var next int64 // after the last batch served
	checked := s.checked.Load()
	for i < n {
		at := pos + int64(i)
		hh, err := checkServed(buf[i:], at, checked)
		if errors.Is(err, record.ErrShortBuffer) {
			break // a batch cut by maxBytes: left for the next read
		}
		if err != nil {
			if i == 0 {
				return nil, fmt.Errorf("%w: segment %d, batch at offset %d (position %d): %w", ErrCorruptLog, s.base, h.BaseOffset, pos, err)
			}
			break // served up to the damage; the next read reports it
		}
		if hh.BaseOffset >= limit {
			break
		}
		i += hh.Size()
		next = hh.NextOffset()
		if at == checked {
			checked = s.markChecked(at, pos+int64(i))
		}
	}
	if i > 0 {
		s.idx.setHint(next, pos+int64(i)) // where a consumer reading on starts
	}
	return buf[:i], nil
}

// checkServed checks the batch at the start of b, at position at of its
// segment, before it is served: record.CheckFrame's checks, without the
// CRC32C when the batch lies wholly below checked (segment.checked: its
// checksum already passed in this process).
func checkServed(b []byte, at, checked int64) (record.Header, error) {
	h, err := record.CheckFrameNoChecksum(b)
	if err != nil || at+int64(h.Size()) <= checked {
		return h, err
	}
	return h, record.VerifyChecksum(b[:h.Size()], &h)
}

// markChecked moves checked from exactly from to to (batches in between
// have just passed their checks) and returns its value afterwards. It does
// nothing when checked is elsewhere: a write, another reader or a
// truncation moved it meanwhile, and checked only ever covers a contiguous
// run from the segment's start.
func (s *segment) markChecked(from, to int64) int64 {
	if s.checked.CompareAndSwap(from, to) {
		return to
	}
	return s.checked.Load()
}

// findBatch returns the position and header of the first batch in the
// segment whose last offset is >= offset, or pos >= end when there is none,
// reading f, its open .log file.
func (s *segment) findBatch(f File, offset int64, end int64) (int64, record.Header, error) {
	var h record.Header
	rel := offset - s.base
	if rel < 0 {
		rel = 0
	}
	pos, ok := s.idx.hinted(offset, end)
	if !ok {
		p, err := s.lookup(uint32(min(rel, int64(^uint32(0)))))
		if err != nil {
			return 0, h, err
		}
		pos = int64(p)
	}
	hdr := make([]byte, record.HeaderSize)
	for pos < end {
		var err error
		if h, err = s.batchHeaderAt(f, pos, hdr); err != nil {
			return pos, h, fmt.Errorf("%w: segment %d: header at position %d: %w", ErrCorruptLog, s.base, pos, err)
		}
		if h.LastOffset() >= offset {
			return pos, h, nil
		}
		pos += int64(h.Size())
	}
	return pos, h, nil
}

// OffsetForTimestamp returns the first offset whose record timestamp is >= ts
// and that record's timestamp (Kafka's ListOffsets by time). found is false
// when no record is that new.
func (l *Log) OffsetForTimestamp(ts int64) (offset, timestamp int64, found bool, err error) {
	l.rmu.RLock()
	defer l.rmu.RUnlock()
	if l.closed.Load() {
		return 0, 0, false, ErrClosed
	}
	for _, s := range l.segs {
		if s.maxTS.Load() < ts {
			continue
		}
		off, t, ok, err := l.segmentOffsetForTimestamp(s, ts)
		if err != nil || ok {
			return off, t, ok, err
		}
	}
	return -1, -1, false, nil
}

// segmentOffsetForTimestamp is segment.offsetForTimestamp with the
// segment's file open.
func (l *Log) segmentOffsetForTimestamp(s *segment, ts int64) (int64, int64, bool, error) {
	f, err := l.acquireLog(s)
	if err != nil {
		return 0, 0, false, err
	}
	defer s.fmu.RUnlock()
	return s.offsetForTimestamp(f, ts, l.cfg.MaxMessageBytes)
}

func (s *segment) offsetForTimestamp(f File, ts int64, maxBatch int) (int64, int64, bool, error) {
	from := s.base
	rel, ok, err := s.lookupTime(ts)
	if err != nil {
		return 0, 0, false, err
	}
	if ok {
		from = s.base + int64(rel) + 1 // everything up to rel is older than ts
	}
	end := s.size.Load()
	if s.corruptAt >= 0 && s.corruptAt < end {
		end = s.corruptAt
	}
	pos, h, err := s.findBatch(f, from, end)
	if err != nil {
		return 0, 0, false, err
	}
	hdr := make([]byte, record.HeaderSize)
	for pos < end {
		if h.MaxTimestamp >= ts {
			batch := make([]byte, h.Size())
			if m, err := f.ReadAt(batch, pos); m < len(batch) {
				return 0, 0, false, fmt.Errorf("storage: read segment %d at %d: %w", s.base, pos, errors.Join(io.ErrUnexpectedEOF, err))
			}
			recs, err := record.Records(batch, max(maxBatch, len(batch))*64)
			if err != nil {
				return 0, 0, false, fmt.Errorf("%w: segment %d, batch at offset %d: %w", ErrCorruptLog, s.base, h.BaseOffset, err)
			}
			for _, r := range recs {
				if r.Offset >= from && r.Timestamp >= ts {
					return r.Offset, r.Timestamp, true, nil
				}
			}
		}
		pos += int64(h.Size())
		if pos >= end {
			break
		}
		if h, err = s.batchHeaderAt(f, pos, hdr); err != nil {
			return 0, 0, false, fmt.Errorf("%w: segment %d: header at position %d: %w", ErrCorruptLog, s.base, pos, err)
		}
	}
	return 0, 0, false, nil
}

// LatestEpoch returns the newest leader epoch in the epoch checkpoint.
func (l *Log) LatestEpoch() (int32, bool) {
	e, ok := l.epochs.latest()
	return e.Epoch, ok
}

// EpochEntries returns a copy of the leader-epoch checkpoint.
func (l *Log) EpochEntries() []EpochEntry { return l.epochs.snapshot() }

// EndOffsetForEpoch answers OffsetForLeaderEpoch (KIP-101/279): the largest
// epoch <= epoch that this log knows, and the offset where it ended (the log
// end offset for the latest epoch); (-1, -1) when there is no such epoch.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	return l.epochs.endOffsetFor(epoch, l.leo.Load())
}

// ReadAll returns every batch from the log start to the log end, as stored
// (for tools and tests that compare replicas). It reads the whole log into
// memory.
func (l *Log) ReadAll() ([]byte, error) {
	var out []byte
	for off, end := l.LogStartOffset(), l.LogEndOffset(); off < end; {
		res, err := l.Read(off, 1<<20, end)
		if err != nil {
			return nil, fmt.Errorf("storage: read all at %d: %w", off, err)
		}
		next := off
		for sc := record.Batches(res.Records); sc.Next(); {
			next = sc.Header().NextOffset()
		}
		if next <= off {
			return nil, fmt.Errorf("storage: read all: no batch at %d below the log end %d", off, end)
		}
		out = append(out, res.Records...)
		off = next
	}
	return out, nil
}

// ReadAllDir opens the log in dir, returns ReadAll's batches and closes it.
// The log must not be open elsewhere.
func ReadAllDir(dir string, cfg Config) ([]byte, error) {
	l, err := Open(dir, cfg)
	if err != nil {
		return nil, err
	}
	b, err := l.ReadAll()
	if cerr := l.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("storage: close %s: %w", dir, cerr)
	}
	return b, err
}
