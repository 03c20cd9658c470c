// This file holds the decoding of records out of a batch (Records, and the
// lower-allocation BatchReader) and the scan over consecutive batches in a
// buffer (Batches). Every length and varint is checked against the bytes
// that remain, so malformed input yields an error, never a panic or an
// allocation beyond what the input can justify.

package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

const (
	// minRecordBody is the smallest record body: attributes, timestamp
	// delta, offset delta, key length, value length and header count, one
	// byte each.
	minRecordBody = 6
	// minRecordSize is the smallest record: a one-byte length and the body.
	minRecordSize = 1 + minRecordBody
	// maxVarint32Len is the longest varint Kafka reads for an int32 field.
	maxVarint32Len = 5
	// maxPrealloc is how many Records Records allocates before any decode.
	maxPrealloc = 1024
)

// rawRecord is one record parsed and validated, before its headers are
// decoded into RecordHeaders.
type rawRecord struct {
	tsDelta  int64
	offDelta int32
	key      []byte
	value    []byte
	nHeaders int
	headers  []byte // the headers' encoding, already validated
}

// readVarint32 reads a zigzag varint that must fit an int32 and take at most
// five bytes, as Kafka requires.
func readVarint32(b []byte) (int32, int, bool) {
	v, n := binary.Varint(b)
	if n <= 0 || n > maxVarint32Len || v < math.MinInt32 || v > math.MaxInt32 {
		return 0, 0, false
	}
	return int32(v), n, true
}

// readBytes reads a nullable length-prefixed byte string: nil for length -1.
// The result's capacity ends with it, so appending to it cannot overwrite
// the bytes that follow.
func readBytes(b []byte) ([]byte, int, bool) {
	l, n, ok := readVarint32(b)
	if !ok || l < -1 {
		return nil, 0, false
	}
	if l == -1 {
		return nil, n, true
	}
	end := n + int(l)
	if end > len(b) {
		return nil, 0, false
	}
	return b[n:end:end], end, true
}

// parseRecord parses and validates the length-prefixed record at the start
// of b and returns it with its encoded size. It checks what skimRecord
// checks, the same way (positions, short varints inline: every record a
// consumer reads passes here); parseRecordRef in the tests is the plain
// version it must agree with.
func parseRecord(b []byte) (rawRecord, int, error) {
	var r rawRecord
	l, n, ok := varint32At(b, 0)
	if !ok || l < minRecordBody {
		return r, 0, fmt.Errorf("%w: bad record length", ErrCorrupt)
	}
	if int(l) > len(b)-n {
		return r, 0, fmt.Errorf("%w: record length %d, %d bytes left", ErrCorrupt, l, len(b)-n)
	}
	end := n + int(l)
	body := b[:end]
	p := n + 1 // attributes: unused by Kafka, not checked
	if c := body[p]; c < 0x80 {
		r.tsDelta = int64(c>>1) ^ -int64(c&1)
		p++
	} else if p+1 < end && body[p+1] < 0x80 {
		u := uint64(c&0x7f) | uint64(body[p+1])<<7
		r.tsDelta = int64(u>>1) ^ -int64(u&1)
		p += 2
	} else {
		ts, w := binary.Varint(body[p:])
		if w <= 0 {
			return r, 0, fmt.Errorf("%w: bad timestamp delta", ErrCorrupt)
		}
		r.tsDelta = ts
		p += w
	}
	var w int
	if r.offDelta, w, ok = varint32At(body, p); !ok {
		return r, 0, fmt.Errorf("%w: bad offset delta", ErrCorrupt)
	}
	p += w
	kl, w, ok := varint32At(body, p)
	if !ok || kl < -1 || int(kl) > end-p-w {
		return r, 0, fmt.Errorf("%w: bad key length", ErrCorrupt)
	}
	p += w
	if kl >= 0 {
		r.key = body[p : p+int(kl) : p+int(kl)]
		p += int(kl)
	}
	vl, w, ok := varint32At(body, p)
	if !ok || vl < -1 || int(vl) > end-p-w {
		return r, 0, fmt.Errorf("%w: bad value length", ErrCorrupt)
	}
	p += w
	if vl >= 0 {
		r.value = body[p : p+int(vl) : p+int(vl)]
		p += int(vl)
	}
	hc, w, ok := varint32At(body, p)
	// Each header takes at least two bytes (key and value lengths).
	if !ok || hc < 0 || int(hc) > (end-p-w)/2 {
		return r, 0, fmt.Errorf("%w: bad header count", ErrCorrupt)
	}
	p += w
	start := p
	for i := range int(hc) {
		kl, w, ok := varint32At(body, p)
		if !ok || kl < 0 || int(kl) > end-p-w {
			return r, 0, fmt.Errorf("%w: header %d: bad key length", ErrCorrupt, i)
		}
		p += w + int(kl)
		vl, w, ok := varint32At(body, p)
		if !ok || vl < -1 || int(vl) > end-p-w {
			return r, 0, fmt.Errorf("%w: header %d: bad value length", ErrCorrupt, i)
		}
		p += w + max(int(vl), 0)
	}
	if p != end {
		return r, 0, fmt.Errorf("%w: record has %d bytes past its fields", ErrCorrupt, end-p)
	}
	r.nHeaders = int(hc)
	r.headers = body[start:p]
	return r, end, nil
}

// appendHeaders decodes n headers from raw (validated by parseRecord) onto
// dst. A key equal to prev[i].Key reuses that string instead of allocating,
// which makes repeated header keys free. prev may share dst's backing array:
// prev[i] is read before dst[i] is written.
func appendHeaders(dst []RecordHeader, raw []byte, n int, prev []RecordHeader) []RecordHeader {
	for i := range n {
		kl, w := binary.Varint(raw)
		kb := raw[w : w+int(kl)]
		raw = raw[w+int(kl):]
		v, w, _ := readBytes(raw) // validated by parseRecord
		raw = raw[w:]
		var k string
		if i < len(prev) && prev[i].Key == string(kb) {
			k = prev[i].Key
		} else {
			k = string(kb)
		}
		dst = append(dst, RecordHeader{Key: k, Value: v})
	}
	return dst
}

// walker steps through the records area of one batch, checking that it
// holds exactly RecordCount records with strictly increasing offset deltas
// no larger than LastOffsetDelta.
type walker struct {
	area      []byte
	count     int32 // records the header claims
	lastDelta int32 // the header's last offset delta
	n         int32 // records walked
	prevDelta int64 // offset delta of the previous record, -1 at first
}

func newWalker(h *Header, area []byte) (walker, error) {
	w := walker{area: area, count: h.RecordCount, lastDelta: h.LastOffsetDelta, prevDelta: -1}
	if h.RecordCount < 0 {
		return w, fmt.Errorf("%w: negative record count %d", ErrCorrupt, h.RecordCount)
	}
	if int64(h.RecordCount) > int64(len(area)/minRecordSize) {
		return w, fmt.Errorf("%w: header says %d records, %d bytes cannot hold them", ErrCorrupt, h.RecordCount, len(area))
	}
	return w, nil
}

// next returns the next record; ok is false after the last one, with err
// set if bytes remain.
func (w *walker) next() (r rawRecord, ok bool, err error) {
	if w.n == w.count {
		if len(w.area) > 0 {
			return r, false, fmt.Errorf("%w: %d bytes after the batch's %d records", ErrCorrupt, len(w.area), w.count)
		}
		return r, false, nil
	}
	if len(w.area) == 0 {
		return r, false, fmt.Errorf("%w: header says %d records, found %d", ErrCorrupt, w.count, w.n)
	}
	r, size, err := parseRecord(w.area)
	if err != nil {
		return r, false, fmt.Errorf("record %d: %w", w.n, err)
	}
	if err := w.accept(r.offDelta); err != nil {
		return r, false, err
	}
	w.area = w.area[size:]
	return r, true, nil
}

// accept counts a record with offset delta d as the next one after
// checking d: strictly above the previous record's, at most the last
// offset delta.
func (w *walker) accept(d int32) error {
	if int64(d) <= w.prevDelta || d > w.lastDelta {
		return w.deltaError(d)
	}
	w.prevDelta = int64(d)
	w.n++
	return nil
}

// deltaError is accept's error, apart so that accept stays small.
func (w *walker) deltaError(d int32) error {
	return fmt.Errorf("%w: record %d: offset delta %d after %d (last offset delta %d)",
		ErrCorrupt, w.n, d, w.prevDelta, w.lastDelta)
}

// checkRecords validates every record of an uncompressed records area.
func checkRecords(h *Header, area []byte) error {
	w, err := newWalker(h, area)
	if err != nil {
		return err
	}
	for {
		_, ok, err := w.next()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
	}
}

// recordsArea returns the batch's records, inflated onto dst if compressed.
func recordsArea(h *Header, batch, dst []byte, maxUncompressed int) ([]byte, error) {
	area := batch[HeaderSize:h.Size()]
	c := h.Compression()
	if c == CompressionNone || len(area) == 0 {
		// An empty area is no records whatever the codec says (the
		// walker then checks the count).
		return area, nil
	}
	out, err := Decompress(c, dst, area, maxUncompressed)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// fill sets rec's fields other than Headers from a raw record.
func fill(rec *Record, h *Header, r *rawRecord) {
	rec.Key, rec.Value = r.key, r.value
	rec.Offset = h.BaseOffset + int64(r.offDelta)
	if h.LogAppendTime() {
		rec.Timestamp = h.MaxTimestamp
	} else {
		rec.Timestamp = h.BaseTimestamp + r.tsDelta
	}
}

// Records decodes every record of the batch at the start of batch (bytes
// after it are ignored). It checks the frame with CheckFrame, inflates a
// compressed records area (to at most maxUncompressed bytes, else an error
// wrapping ErrTooLarge) and checks that the area holds exactly the header's
// record count, each well formed, with strictly increasing offset deltas no
// larger than the last offset delta. maxUncompressed bounds only inflation:
// an uncompressed batch's records are already in memory. Errors wrap ErrCorrupt, or the frame
// errors of CheckFrame (ErrShortBuffer, ErrMagic, ErrChecksum).
//
// Each record's Offset is the base offset plus its offset delta (consecutive
// for a batch as producers write it; with gaps after compaction) and its
// Timestamp the base timestamp plus its delta, or, for a LogAppendTime batch,
// the batch's max timestamp, as in Kafka. Control batches (transaction
// markers) are decoded like any other; check Header.Control to skip them. A
// batch with a record count of 0 and no records yields no records.
//
// Keys, values and header values alias batch when it is uncompressed and a
// buffer owned by the result when it is compressed; header keys are copied.
// Use BatchReader to decode with fewer allocations.
func Records(batch []byte, maxUncompressed int) ([]Record, error) {
	h, err := CheckFrame(batch)
	if err != nil {
		return nil, err
	}
	area, err := recordsArea(&h, batch, nil, maxUncompressed)
	if err != nil {
		return nil, err
	}
	w, err := newWalker(&h, area)
	if err != nil {
		return nil, err
	}
	// The count is capped by the area's size, but a Record is 12 times
	// the smallest encoded record: past a first chunk, grow only as
	// records actually decode.
	recs := make([]Record, 0, min(h.RecordCount, maxPrealloc))
	// The headers of all records share one growing slice; a record keeps
	// the backing array it was decoded into, which stays valid.
	var hdrs, prev []RecordHeader
	for {
		r, ok, err := w.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		recs = append(recs, Record{})
		rec := &recs[len(recs)-1]
		fill(rec, &h, &r)
		if r.nHeaders > 0 {
			at := len(hdrs)
			hdrs = appendHeaders(hdrs, r.headers, r.nHeaders, prev)
			rec.Headers = hdrs[at:len(hdrs):len(hdrs)]
			prev = rec.Headers
		}
	}
	return recs, nil
}

// BatchReader decodes the records of one batch one at a time, reusing its
// decompression buffer across batches and the caller's Record (headers
// included), so that in steady state decoding allocates only for new header
// keys. It checks what Records checks.
//
// Usage:
//
//	var br record.BatchReader
//	var rec record.Record
//	if err := br.Reset(batch, maxUncompressed); err != nil { ... }
//	for br.Next(&rec) { ... }
//	if err := br.Err(); err != nil { ... }
//
// Keys, values and header values alias the batch (uncompressed) or the
// reader's buffer (compressed): they stay valid until the next Reset. Next
// reuses rec.Headers' backing array (a record without headers gets
// rec.Headers[:0]); copy headers that must outlive the next call. The zero BatchReader is ready for Reset. A BatchReader is not safe
// for concurrent use.
type BatchReader struct {
	h   Header
	w   walker
	err error
	buf []byte // inflated records area, reused
}

// NewBatchReader returns a reader positioned before the first record of
// batch; the error is that of Reset.
func NewBatchReader(batch []byte, maxUncompressed int) (*BatchReader, error) {
	r := new(BatchReader)
	return r, r.Reset(batch, maxUncompressed)
}

// Reset checks the frame at the start of batch (see CheckFrame), inflates
// its records to at most maxUncompressed bytes and positions the reader
// before the first record. Records read before are invalidated when they
// alias the reader's buffer. A failure is also reported by Err, and Next
// then returns false.
func (r *BatchReader) Reset(batch []byte, maxUncompressed int) error {
	r.w, r.err = walker{}, nil
	h, err := CheckFrame(batch)
	r.h = h
	if err != nil {
		r.err = err
		return err
	}
	return r.reset(batch, h, maxUncompressed)
}

// reset is Reset past CheckFrame: batch passed it, with header h.
func (r *BatchReader) reset(batch []byte, h Header, maxUncompressed int) error {
	r.w, r.err, r.h = walker{}, nil, h
	area, err := recordsArea(&h, batch, r.buf[:0], maxUncompressed)
	if err != nil {
		r.err = err
		return err
	}
	if h.Compression() != CompressionNone {
		r.buf = area
	}
	if r.w, err = newWalker(&h, area); err != nil {
		r.err = err
		return err
	}
	return nil
}

// Header is the header of the batch last passed to Reset.
func (r *BatchReader) Header() Header { return r.h }

// Next decodes the next record into rec and reports whether there was one.
// After false, Err tells whether the batch ended cleanly.
func (r *BatchReader) Next(rec *Record) bool {
	if r.err != nil {
		return false
	}
	raw, ok, err := r.w.next()
	if err != nil {
		r.err = err
		return false
	}
	if !ok {
		return false
	}
	fill(rec, &r.h, &raw)
	rec.Headers = appendHeaders(rec.Headers[:0], raw.headers, raw.nHeaders, rec.Headers)
	return true
}

// Err is the first error met by Reset or Next, or nil.
func (r *BatchReader) Err() error { return r.err }

// BatchScanner iterates over the consecutive whole batches at the start of
// a buffer, such as a fetch response's record set or a segment file read.
// Each batch is checked with CheckFrame (magic, CRC32C) but its records are
// not decoded.
//
// A trailing partial batch — fewer bytes than its length field claims, or
// fewer than the length field itself — is not an error: a Kafka fetch may
// end with one. Iteration stops before it, Err stays nil, and Consumed is
// less than the buffer's length. A whole batch that fails CheckFrame, or a
// length field too small for a header, stops iteration with Err set.
//
// Usage:
//
//	s := record.Batches(buf)
//	for s.Next() {
//		use(s.Batch(), s.Header())
//	}
//	if err := s.Err(); err != nil { ... }
//	rest := buf[s.Consumed():] // a partial batch, or empty
type BatchScanner struct {
	buf      []byte
	consumed int
	batch    []byte
	h        Header
	err      error
}

// Batches returns a scanner over the batches in buf.
func Batches(buf []byte) BatchScanner { return BatchScanner{buf: buf} }

// Next advances to the next whole batch and reports whether there is one.
func (s *BatchScanner) Next() bool {
	s.batch = nil
	if s.err != nil {
		return false
	}
	rest := s.buf[s.consumed:]
	if len(rest) < LogOverhead {
		return false
	}
	size, err := FrameSize(rest)
	if err != nil {
		s.err = fmt.Errorf("batch at byte %d: %w", s.consumed, err)
		return false
	}
	if size > len(rest) {
		return false // partial trailing batch
	}
	h, err := CheckFrame(rest[:size])
	if err != nil {
		s.err = fmt.Errorf("batch at byte %d: %w", s.consumed, err)
		return false
	}
	s.batch, s.h = rest[:size:size], h
	s.consumed += size
	return true
}

// Read positions br before the first record of the current batch, as
// br.Reset(s.Batch(), maxUncompressed) would, without checking the frame
// (and computing its CRC) again: Next did. Call it only after Next returned
// true.
func (s *BatchScanner) Read(br *BatchReader, maxUncompressed int) error {
	if s.batch == nil {
		err := errors.New("record: BatchScanner.Read without a current batch")
		br.w, br.err, br.h = walker{}, err, Header{}
		return err
	}
	return br.reset(s.batch, s.h, maxUncompressed)
}

// Batch is the current batch, exactly its size; it aliases the buffer.
func (s *BatchScanner) Batch() []byte { return s.batch }

// Header is the current batch's header.
func (s *BatchScanner) Header() Header { return s.h }

// Consumed is the number of bytes of whole batches returned so far.
func (s *BatchScanner) Consumed() int { return s.consumed }

// Err is the error that stopped iteration, or nil if it stopped at the end
// of the buffer or before a partial batch.
func (s *BatchScanner) Err() error { return s.err }
