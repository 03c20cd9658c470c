// This file holds the leader's full check of a producer batch, as Kafka's
// LogValidator does it: CheckRecords parses every record of a batch, for a
// compressed batch through a bounded stream of its inflated records, so
// that a batch whose records no reader could decode (a garbage or
// truncated compressed body under a valid CRC, a decompression bomb, a
// wrong record count) never enters a log.
//
// The stream is inflated into a small window (records up to 64 KiB are
// parsed in it whole, larger ones as they stream past), never the whole
// records area: memory is the window (and, for zstd, the frame's window),
// whatever the batch holds or claims, and a bomb is stopped once its
// output passes the limit, after costing only the CPU to inflate that far.
// Snappy has no streaming form in Kafka's framings, but cannot inflate
// more than 22 times, so it is inflated whole.

package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// MaxInflatedBytes is the most the records of one compressed batch may
// inflate to anywhere in actorlog: 64 MiB, 64 times Kafka's default
// max.message.bytes and max.request.size (1 MiB). A leader refuses a batch
// beyond its limit (at most this; see storage.Config.MaxInflatedBytes) and
// readers (the consumer actor, group coordinators) decode up to it, so every
// batch in a log is readable.
const MaxInflatedBytes = 64 << 20

// ErrUndecodable means a compressed records area is not a valid stream of
// its codec — garbage, truncated, a failed codec checksum, bytes after the
// stream — so that none of the batch's records can be read. It wraps
// ErrCorrupt. Kafka answers such a batch with CORRUPT_MESSAGE.
var ErrUndecodable = fmt.Errorf("%w: compressed records cannot be decoded", ErrCorrupt)

// ValidateFull is ValidateHeader plus CheckRecords: everything a leader
// checks before a producer batch enters its log. Records and BatchReader,
// given a limit of at least maxInflated, decode every batch ValidateFull
// accepts.
func ValidateFull(b []byte, maxInflated int) (Header, error) {
	h, err := ValidateHeader(b)
	if err != nil {
		return h, err
	}
	return h, CheckRecords(b, &h, maxInflated)
}

// CheckRecords checks what ValidateHeader does not, fully: the CRC32C, then
// every record as Records parses it (lengths, varints, keys, values,
// headers), exactly h.RecordCount of them with offset deltas strictly
// increasing up to the last offset delta (for a producer batch, which
// ValidateHeader requires to be count-1, that is 0..n-1 in order), no bytes
// after the last, and timestamps that base timestamp plus delta can
// represent. A compressed records area is inflated as a stream, at most
// maxInflated bytes of it (capped at MaxInflatedBytes): beyond that the
// error wraps ErrTooLarge, and the rest is never inflated. b is the whole
// batch whose header is h.
//
// Errors wrap ErrChecksum, ErrUndecodable (the compressed stream itself is
// broken), ErrTooLarge, or ErrCorrupt (the records break a rule). Unlike
// ValidateBody, which only checks the CRC and, for uncompressed batches,
// the records' length prefixes, CheckRecords costs a parse of every record
// and an inflation of compressed batches; it allocates nothing in steady
// state (the window and codec state are pooled). It is safe for concurrent
// use.
func CheckRecords(b []byte, h *Header, maxInflated int) error {
	if len(b) < HeaderSize || len(b) != h.Size() {
		return ErrShortBuffer
	}
	if err := VerifyChecksum(b, h); err != nil {
		return err
	}
	area := b[HeaderSize:]
	c := h.Compression()
	switch {
	case c == CompressionNone || len(area) == 0:
		// An empty area is no records whatever the codec says (as
		// Records reads it); the count check refuses it.
		return checkArea(h, area)
	case maxInflated < 0:
		return fmt.Errorf("record: check records: negative size limit %d", maxInflated)
	case c == CompressionSnappy:
		return checkSnappy(h, area, min(maxInflated, MaxInflatedBytes))
	}
	return checkStream(h, c, area, min(maxInflated, MaxInflatedBytes))
}

// checkTimestamp refuses a record whose timestamp, base timestamp plus its
// delta, does not fit an int64 (a reader would compute a wrapped value).
// Under LogAppendTime record timestamps are not used.
func checkTimestamp(h *Header, tsDelta int64, i int32) error {
	if ts := h.BaseTimestamp + tsDelta; (tsDelta > 0 && ts < h.BaseTimestamp) || (tsDelta < 0 && ts > h.BaseTimestamp) {
		if h.LogAppendTime() {
			return nil
		}
		return fmt.Errorf("%w: record %d: timestamp delta %d overflows base timestamp %d", ErrCorrupt, i, tsDelta, h.BaseTimestamp)
	}
	return nil
}

// checkArea checks the records of an area held in memory: an uncompressed
// batch's, or a snappy batch's inflated. It applies the walker's rules
// with skimRecord in place of parseRecord.
func checkArea(h *Header, area []byte) error {
	w, err := newWalker(h, area)
	if err != nil {
		return err
	}
	pos := 0
	for w.n < w.count {
		if pos == len(area) {
			return fmt.Errorf("%w: header says %d records, found %d", ErrCorrupt, w.count, w.n)
		}
		ts, od, size, err := skimRecord(area[pos:])
		if err != nil {
			return fmt.Errorf("record %d: %w", w.n, err)
		}
		if err := w.accept(od); err != nil {
			return err
		}
		if err := checkTimestamp(h, ts, w.n-1); err != nil {
			return err
		}
		pos += size
	}
	if pos != len(area) {
		return fmt.Errorf("%w: %d bytes after the batch's %d records", ErrCorrupt, len(area)-pos, w.count)
	}
	return nil
}

// varint32At is readVarint32 at b[p:], with the one-byte form (values -64
// to 63: most deltas and counts) decoded inline.
func varint32At(b []byte, p int) (int32, int, bool) {
	if uint(p) < uint(len(b)) && b[p] < 0x80 {
		return int32(b[p]>>1) ^ -int32(b[p]&1), 1, true
	}
	return varint32Long(b, p)
}

// varint32Long is varint32At past the one-byte form: the two-byte form
// (to ±8191: most lengths) inline, longer ones by readVarint32.
func varint32Long(b []byte, p int) (int32, int, bool) {
	if p+1 < len(b) && b[p+1] < 0x80 {
		u := uint32(b[p]&0x7f) | uint32(b[p+1])<<7
		return int32(u>>1) ^ -int32(u&1), 2, true
	}
	if p >= len(b) {
		return 0, 0, false
	}
	return readVarint32(b[p:])
}

// skimRecord checks the length-prefixed record at the start of b with
// exactly parseRecord's rules and returns its timestamp and offset deltas
// and its encoded size. It walks positions and decodes short varints
// inline: the append path runs it on every record.
func skimRecord(b []byte) (tsDelta int64, offDelta int32, size int, err error) {
	l, n, ok := varint32At(b, 0)
	if !ok || l < minRecordBody {
		return 0, 0, 0, fmt.Errorf("%w: bad record length", ErrCorrupt)
	}
	if int(l) > len(b)-n {
		return 0, 0, 0, fmt.Errorf("%w: record length %d, %d bytes left", ErrCorrupt, l, len(b)-n)
	}
	end := n + int(l)
	body := b[:end]
	p := n + 1 // attributes: unused by Kafka, not checked
	if c := body[p]; c < 0x80 {
		tsDelta = int64(c>>1) ^ -int64(c&1)
		p++
	} else if p+1 < end && body[p+1] < 0x80 {
		u := uint64(c&0x7f) | uint64(body[p+1])<<7
		tsDelta = int64(u>>1) ^ -int64(u&1)
		p += 2
	} else {
		ts, w := binary.Varint(body[p:])
		if w <= 0 {
			return 0, 0, 0, fmt.Errorf("%w: bad timestamp delta", ErrCorrupt)
		}
		tsDelta = ts
		p += w
	}
	var w int
	if offDelta, w, ok = varint32At(body, p); !ok {
		return 0, 0, 0, fmt.Errorf("%w: bad offset delta", ErrCorrupt)
	}
	p += w
	kl, w, ok := varint32At(body, p)
	if !ok || kl < -1 || int(kl) > end-p-w {
		return 0, 0, 0, fmt.Errorf("%w: bad key length", ErrCorrupt)
	}
	p += w + max(int(kl), 0)
	vl, w, ok := varint32At(body, p)
	if !ok || vl < -1 || int(vl) > end-p-w {
		return 0, 0, 0, fmt.Errorf("%w: bad value length", ErrCorrupt)
	}
	p += w + max(int(vl), 0)
	hc, w, ok := varint32At(body, p)
	// Each header takes at least two bytes (key and value lengths).
	if !ok || hc < 0 || int(hc) > (end-p-w)/2 {
		return 0, 0, 0, fmt.Errorf("%w: bad header count", ErrCorrupt)
	}
	p += w
	for i := range int(hc) {
		kl, w, ok := varint32At(body, p)
		if !ok || kl < 0 || int(kl) > end-p-w {
			return 0, 0, 0, fmt.Errorf("%w: header %d: bad key length", ErrCorrupt, i)
		}
		p += w + int(kl)
		vl, w, ok := varint32At(body, p)
		if !ok || vl < -1 || int(vl) > end-p-w {
			return 0, 0, 0, fmt.Errorf("%w: header %d: bad value length", ErrCorrupt, i)
		}
		p += w + max(int(vl), 0)
	}
	if p != end {
		return 0, 0, 0, fmt.Errorf("%w: record has %d bytes past its fields", ErrCorrupt, end-p)
	}
	return tsDelta, offDelta, end, nil
}

// snappyMaxExpansion bounds how far snappy data inflates: its densest
// element is a three-byte copy of 64 bytes. (S2's extensions go further,
// but the snappy of Kafka's producers has none; data that claims more is
// not snappy.)
const snappyMaxExpansion = 22

// maxPooledWindow is the largest window buffer kept for reuse, and the
// largest zstd frame window whose decoder is kept: a rare large record or
// window should not stay pinned in a pool.
const maxPooledWindow = 8 << 20

// snappyBufs holds buffers for inflated snappy areas.
var snappyBufs = sync.Pool{New: func() any { return new([]byte) }}

// checkSnappy inflates a snappy area whole, to at most limit bytes and at
// most snappyMaxExpansion times its size, and checks its records.
func checkSnappy(h *Header, area []byte, limit int) error {
	byRatio := false
	if r := snappyMaxExpansion * len(area); r < limit {
		limit, byRatio = r, true
	}
	bp := snappyBufs.Get().(*[]byte)
	defer func() {
		if cap(*bp) > maxPooledWindow {
			*bp = nil
		}
		snappyBufs.Put(bp)
	}()
	out, err := Decompress(CompressionSnappy, (*bp)[:0], area, limit)
	if err != nil {
		if byRatio && errors.Is(err, ErrTooLarge) {
			return fmt.Errorf("%w: snappy data of %d bytes claims to inflate more than %d times", ErrUndecodable, len(area), snappyMaxExpansion)
		}
		return err
	}
	*bp = out
	return checkArea(h, out)
}

// inflater is a window over an inflating stream: buf[lo:hi] is inflated
// and not yet parsed. read counts every byte inflated; more than limit
// fails with ErrTooLarge.
type inflater struct {
	r      io.Reader
	buf    []byte
	lo, hi int
	read   int
	limit  int
	eof    bool
}

// minWindow is the window buffer's initial size.
const minWindow = 32 << 10

var inflaters = sync.Pool{New: func() any { return &inflater{buf: make([]byte, minWindow)} }}

// fill reads until buf[lo:hi] holds at least n bytes or the stream ends.
// The buffer grows (doubling) only while data keeps arriving, so a record
// that claims more than the stream holds costs no more than what arrived.
func (s *inflater) fill(n int) error {
	for stalled := 0; s.hi-s.lo < n && !s.eof; {
		if s.hi == len(s.buf) {
			if s.lo > 0 {
				s.hi = copy(s.buf, s.buf[s.lo:s.hi])
				s.lo = 0
			}
			if s.hi == len(s.buf) {
				s.buf = slices.Grow(s.buf, len(s.buf))
				s.buf = s.buf[:cap(s.buf)]
			}
		}
		room := s.buf[s.hi:]
		// Read at most limit+1 bytes in all: the extra byte tells
		// "exactly at the limit" from "beyond it".
		if rest := s.limit + 1 - s.read; len(room) > rest {
			room = room[:rest]
		}
		k, err := s.r.Read(room)
		s.hi += k
		s.read += k
		if s.read > s.limit {
			return fmt.Errorf("%w: records inflate beyond %d bytes", ErrTooLarge, s.limit)
		}
		switch {
		case err == io.EOF:
			s.eof = true
		case err != nil:
			return corrupt(err)
		case k > 0:
			stalled = 0
		default:
			if stalled++; stalled == 100 {
				return corrupt(io.ErrNoProgress)
			}
		}
	}
	return nil
}

// records parses the stream's records against h, then checks that the
// stream ends cleanly after the last (which also runs the codec's own end
// checks: gzip's CRC, zstd's and lz4's checksums).
func (s *inflater) records(h *Header) error {
	w := walker{count: h.RecordCount, lastDelta: h.LastOffsetDelta, prevDelta: -1}
	if h.RecordCount < 0 {
		return fmt.Errorf("%w: negative record count %d", ErrCorrupt, h.RecordCount)
	}
	for w.n < w.count {
		if err := s.fill(maxVarint32Len); err != nil {
			return err
		}
		if s.hi == s.lo {
			return fmt.Errorf("%w: header says %d records, found %d", ErrCorrupt, w.count, w.n)
		}
		l, n, ok := readVarint32(s.buf[s.lo:s.hi])
		if !ok || l < minRecordBody {
			return fmt.Errorf("record %d: %w: bad record length", w.n, ErrCorrupt)
		}
		var ts int64
		var od int32
		if size := n + int(l); size <= maxBufferedRecord {
			if err := s.fill(size); err != nil {
				return err
			}
			if s.hi-s.lo < size {
				return fmt.Errorf("record %d: %w: record length %d, %d bytes left", w.n, ErrCorrupt, l, s.hi-s.lo-n)
			}
			var err error
			if ts, od, _, err = skimRecord(s.buf[s.lo : s.lo+size]); err != nil {
				return fmt.Errorf("record %d: %w", w.n, err)
			}
			s.lo += size
		} else {
			s.lo += n
			var err error
			if ts, od, err = s.streamRecord(int(l)); err != nil {
				return fmt.Errorf("record %d: %w", w.n, err)
			}
		}
		if err := w.accept(od); err != nil {
			return err
		}
		if err := checkTimestamp(h, ts, w.n-1); err != nil {
			return err
		}
	}
	if err := s.fill(1); err != nil {
		return err
	}
	if s.hi > s.lo {
		return fmt.Errorf("%w: bytes after the batch's %d records", ErrCorrupt, w.count)
	}
	return nil
}

// maxBufferedRecord is the largest record parsed whole in the window (by
// skimRecord, with the readers' rules); larger ones are parsed as they stream
// past (streamRecord), so that the window never grows beyond about twice
// this, whatever size a record has or claims.
const maxBufferedRecord = 64 << 10

// peek returns up to n bytes at the window's start, fewer only where the
// stream ends.
func (s *inflater) peek(n int) ([]byte, error) {
	if err := s.fill(n); err != nil {
		return nil, err
	}
	return s.buf[s.lo:min(s.hi, s.lo+n)], nil
}

// skip consumes n bytes of the stream; false if it ends first.
func (s *inflater) skip(n int) (bool, error) {
	for n > 0 {
		if s.hi == s.lo {
			s.lo, s.hi = 0, 0
			if err := s.fill(min(n, len(s.buf))); err != nil {
				return false, err
			}
			if s.hi == 0 {
				return false, nil
			}
		}
		k := min(n, s.hi-s.lo)
		s.lo += k
		n -= k
	}
	return true, nil
}

// streamRecord parses a record body of size bytes (its length prefix
// consumed) as it streams past, with exactly parseRecord's rules, keeping
// none of its keys and values, and returns its timestamp and offset
// deltas.
func (s *inflater) streamRecord(size int) (tsDelta int64, offDelta int32, err error) {
	rem := size
	bad := func(what string) (int64, int32, error) {
		return 0, 0, fmt.Errorf("%w: bad %s", ErrCorrupt, what)
	}
	// varint reads a varint field of the body; int32 fields must be
	// Kafka's (at most five bytes, in range).
	varint := func(int32Field bool) (int64, bool, error) {
		b, err := s.peek(min(rem, binary.MaxVarintLen64))
		if err != nil {
			return 0, false, err
		}
		var v int64
		var w int
		if int32Field {
			v32, n, ok := readVarint32(b)
			if !ok {
				return 0, false, nil
			}
			v, w = int64(v32), n
		} else if v, w = binary.Varint(b); w <= 0 {
			return 0, false, nil
		}
		s.lo += w
		rem -= w
		return v, true, nil
	}
	// bytesField skips a length-prefixed field; nullable allows -1.
	bytesField := func(nullable bool) (bool, error) {
		l, ok, err := varint(true)
		if err != nil || !ok || l < -1 || (l == -1 && !nullable) || l > int64(rem) {
			return false, err
		}
		if l <= 0 {
			return true, nil
		}
		rem -= int(l)
		return s.skip(int(l))
	}
	if ok, err := s.skip(1); err != nil { // attributes
		return 0, 0, err
	} else if !ok {
		return bad("record length")
	}
	rem--
	ts, ok, err := varint(false)
	if err != nil {
		return 0, 0, err
	} else if !ok {
		return bad("timestamp delta")
	}
	od, ok, err := varint(true)
	if err != nil {
		return 0, 0, err
	} else if !ok {
		return bad("offset delta")
	}
	for _, field := range [...]string{"key length", "value length"} {
		if ok, err := bytesField(true); err != nil {
			return 0, 0, err
		} else if !ok {
			return bad(field)
		}
	}
	hc, ok, err := varint(true)
	if err != nil {
		return 0, 0, err
	}
	// Each header takes at least two bytes (key and value lengths).
	if !ok || hc < 0 || hc > int64(rem/2) {
		return bad("header count")
	}
	for range hc {
		if ok, err := bytesField(false); err != nil {
			return 0, 0, err
		} else if !ok {
			return bad("header key length")
		}
		if ok, err := bytesField(true); err != nil {
			return 0, 0, err
		} else if !ok {
			return bad("header value length")
		}
	}
	if rem != 0 {
		return 0, 0, fmt.Errorf("%w: record has %d bytes past its fields", ErrCorrupt, rem)
	}
	return ts, int32(od), nil
}

// zstdStreamDecoder is a synchronous streaming zstd decoder (concurrency 1: no
// goroutines) with its input reader.
type zstdStreamDecoder struct {
	d   *zstd.Decoder
	src bytes.Reader
}

// zstdStreams pools zstd stream decoders, whose window is at most
// MaxInflatedBytes. New returns an error when the decoder cannot be made.
var zstdStreams = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(MaxInflatedBytes),
		zstd.WithDecoderMaxMemory(MaxInflatedBytes),
	)
	if err != nil {
		return err
	}
	return &zstdStreamDecoder{d: d}
}}

// checkStream inflates a gzip, lz4 or zstd area as a stream, at most limit
// bytes, and checks its records.
func checkStream(h *Header, c Compression, area []byte, limit int) error {
	s := inflaters.Get().(*inflater)
	s.lo, s.hi, s.read, s.limit, s.eof = 0, 0, 0, limit, false
	defer func() {
		s.r = nil
		if cap(s.buf) > maxPooledWindow {
			s.buf = make([]byte, minWindow)
		}
		inflaters.Put(s)
	}()
	var err error
	switch c {
	case CompressionGzip:
		gr := gzipReaders.Get().(*gzipReader)
		defer gzipReaders.Put(gr)
		gr.src.Reset(area)
		defer gr.src.Reset(nil)
		if err := gr.r.Reset(&gr.src); err != nil {
			return fmt.Errorf("record: gzip: %w", corrupt(err))
		}
		s.r = &gr.r
	case CompressionLZ4:
		lr := lz4Readers.Get().(*lz4Reader)
		defer lz4Readers.Put(lr)
		lr.src.Reset(area)
		lr.r.Reset(&lr.src)
		defer func() {
			lr.r.Reset(nil)
			lr.src.Reset(nil)
		}()
		s.r = lr.r
	case CompressionZstd:
		var zh zstd.Header
		if err := zh.Decode(area); err != nil {
			return fmt.Errorf("record: zstd: %w", corrupt(err))
		}
		got := zstdStreams.Get()
		zs, ok := got.(*zstdStreamDecoder)
		if !ok {
			return fmt.Errorf("record: zstd: new decoder: %v", got)
		}
		zs.src.Reset(area)
		defer func() {
			_ = zs.d.Reset(nil) // only drops the input
			zs.src.Reset(nil)
			// A decoder keeps its window: pool only modest ones.
			if zh.WindowSize <= maxPooledWindow && (!zh.SingleSegment || zh.FrameContentSize <= maxPooledWindow) {
				zstdStreams.Put(zs)
			}
		}()
		if err := zs.d.Reset(&zs.src); err != nil {
			return fmt.Errorf("record: zstd: %w", corrupt(err))
		}
		s.r = zs.d
	default:
		return fmt.Errorf("%w: unknown codec %d", ErrCorrupt, int8(c))
	}
	if err = s.records(h); err != nil {
		if !errors.Is(err, ErrUndecodable) && !errors.Is(err, ErrTooLarge) {
			// Records that do not parse may be the first sign of a
			// damaged stream (a flipped byte shows as a bad length
			// long before the codec's checksum at the end): tell the
			// two apart, so that a broken stream is reported as one.
			if derr := s.drain(); errors.Is(derr, ErrUndecodable) {
				err = derr
			}
		}
		return fmt.Errorf("record: %s records: %w", c, err)
	}
	return nil
}

// drain inflates the rest of the stream, discarding it, and returns the
// error that ends it, nil at a clean end.
func (s *inflater) drain() error {
	for !s.eof {
		s.lo, s.hi = 0, 0
		if err := s.fill(len(s.buf)); err != nil {
			return err
		}
	}
	return nil
}
