// This file tests CheckRecords and ValidateFull, the leader's full check of
// a producer batch, across every codec: valid batches (ours, franz-go's,
// streamed frames) pass and decode; a compressed body that is garbage or
// truncated under a valid CRC, a decompression bomb, a record count that
// does not match, junk after the records and broken records are refused
// with the right sentinel, a bomb without inflating it.

package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"runtime"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// testInflateLimit is the inflation limit of these tests.
const testInflateLimit = 1 << 20

// withArea returns batch (whose records area is compressed with c) with
// its records area replaced by area and its length and CRC fixed: what a
// producer that means harm sends.
func withArea(batch, area []byte) []byte {
	b := append(bytes.Clone(batch[:HeaderSize]), area...)
	binary.BigEndian.PutUint32(b[offLength:], uint32(len(b)-LogOverhead))
	binary.BigEndian.PutUint32(b[offCRC:], Checksum(b))
	return b
}

// compressStream compresses what write writes with c's streaming writer, so
// that a large input never sits in memory. Snappy has no streaming form in
// Kafka's framings: its input is collected and compressed whole.
func compressStream(tb testing.TB, c Compression, write func(w io.Writer) error) []byte {
	tb.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	switch c {
	case CompressionGzip:
		w = gzip.NewWriter(&buf)
	case CompressionLZ4:
		w = lz4.NewWriter(&buf)
	case CompressionZstd:
		zw, err := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1))
		if err != nil {
			tb.Fatal(err)
		}
		w = zw
	default:
		var raw bytes.Buffer
		if err := write(&raw); err != nil {
			tb.Fatal(err)
		}
		out, err := Compress(c, nil, raw.Bytes())
		if err != nil {
			tb.Fatal(err)
		}
		return out
	}
	if err := write(w); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// writeBigRecord writes one record (offset delta 0) whose value is n zero
// bytes, in 1 MiB pieces.
func writeBigRecord(w io.Writer, n int) error {
	body := []byte{0, 0, 0, 1} // attributes, timestamp delta, offset delta, null key
	body = binary.AppendVarint(body, int64(n))
	rec := binary.AppendVarint(nil, int64(len(body)+n+1))
	if _, err := w.Write(append(rec, body...)); err != nil {
		return err
	}
	zeros := make([]byte, 1<<20)
	for left := n; left > 0; left -= len(zeros) {
		if _, err := w.Write(zeros[:min(left, len(zeros))]); err != nil {
			return err
		}
	}
	_, err := w.Write([]byte{0}) // no headers
	return err
}

// bigRecordBatch returns a one-record batch compressed with c whose record
// holds n zero bytes, built without holding them (but snappy) in memory.
func bigRecordBatch(tb testing.TB, c Compression, n int) []byte {
	tb.Helper()
	area := compressStream(tb, c, func(w io.Writer) error { return writeBigRecord(w, n) })
	return rawBatch{attrs: int16(c), count: 1, area: area}.frame()
}

func TestCheckRecordsAcceptsValidBatches(t *testing.T) {
	for _, c := range codecs {
		t.Run(c.String(), func(t *testing.T) {
			for _, set := range recordSets() {
				batch := mustBuild(t, c, set.recs...)
				if _, err := ValidateFull(batch, 2<<20); err != nil {
					t.Fatalf("%s: %v", set.name, err)
				}
				la := bytes.Clone(batch)
				SetLogAppendTime(la, 1234)
				if _, err := ValidateFull(la, 2<<20); err != nil {
					t.Fatalf("%s under LogAppendTime: %v", set.name, err)
				}
				if _, err := ValidateFull(kmsgBatch(t, c, set.recs), 2<<20); err != nil {
					t.Fatalf("%s as franz-go writes it: %v", set.name, err)
				}
			}
			if c == CompressionNone {
				return
			}
			// Exactly at the limit passes; one byte below does not.
			batch := bigRecordBatch(t, c, 100<<10)
			h, err := ParseHeader(batch)
			if err != nil {
				t.Fatal(err)
			}
			var raw bytes.Buffer
			if err := writeBigRecord(&raw, 100<<10); err != nil {
				t.Fatal(err)
			}
			inflated := raw.Len()
			if err := CheckRecords(batch, &h, inflated); err != nil {
				t.Fatalf("at the limit: %v", err)
			}
			if err := CheckRecords(batch, &h, inflated-1); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("one byte over the limit: %v, want ErrTooLarge", err)
			}
		})
	}
	t.Run("zstd stream without content size", func(t *testing.T) {
		raw := append(okRecord(0).encode(), okRecord(1).encode()...)
		batch := rawBatch{attrs: int16(CompressionZstd), lastOffsetDelta: 1, count: 2, area: zstdStream(t, raw)}.frame()
		if _, err := ValidateFull(batch, testInflateLimit); err != nil {
			t.Fatal(err)
		}
	})
}

// TestCheckRecordsRefusesBadBodies covers what a producer can put under a
// valid CRC, for every codec.
func TestCheckRecordsRefusesBadBodies(t *testing.T) {
	recs := recordSets()[6].recs[:200] // many small records
	for _, c := range codecs[1:] {
		t.Run(c.String(), func(t *testing.T) {
			good := mustBuild(t, c, recs...)
			area := good[HeaderSize:]
			raw, err := Decompress(c, nil, area, 1<<30)
			if err != nil {
				t.Fatal(err)
			}
			recompress := func(b []byte) []byte {
				out, err := Compress(c, nil, b)
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			miscounted := withArea(good, area)
			binary.BigEndian.PutUint32(miscounted[offRecordCount:], uint32(len(recs)+1))
			binary.BigEndian.PutUint32(miscounted[offLastOffsetDelta:], uint32(len(recs)))
			binary.BigEndian.PutUint32(miscounted[offCRC:], Checksum(miscounted))
			undercounted := withArea(good, area)
			binary.BigEndian.PutUint32(undercounted[offRecordCount:], uint32(len(recs)-1))
			binary.BigEndian.PutUint32(undercounted[offLastOffsetDelta:], uint32(len(recs)-2))
			binary.BigEndian.PutUint32(undercounted[offCRC:], Checksum(undercounted))
			// The last record cut short: the records no longer parse.
			broken := raw[:len(raw)-3]

			tests := []struct {
				name  string
				batch []byte
				want  error
			}{
				{"garbage body", withArea(good, noise(len(area))), ErrUndecodable},
				{"text body", withArea(good, bytes.Repeat([]byte("not compressed "), 40)), ErrUndecodable},
				{"truncated body", withArea(good, area[:len(area)/2]), ErrUndecodable},
				{"body cut by one byte", withArea(good, area[:len(area)-1]), ErrUndecodable},
				{"count above the records", miscounted, ErrCorrupt},
				{"count below the records", undercounted, ErrCorrupt},
				{"junk after the records", withArea(good, recompress(append(bytes.Clone(raw), 0, 0, 0, 0, 0, 0, 0))), ErrCorrupt},
				{"last record cut short", withArea(good, recompress(broken)), ErrCorrupt},
				{"records of zeros", withArea(good, recompress(make([]byte, 64<<10))), ErrCorrupt},
			}
			if c != CompressionSnappy {
				// Snappy blocks carry no checksum: a stray byte may
				// decode to other bytes.
				flipped := bytes.Clone(area)
				flipped[len(flipped)/2] ^= 0xff
				tests = append(tests,
					struct {
						name  string
						batch []byte
						want  error
					}{"flipped byte in body", withArea(good, flipped), ErrUndecodable},
					struct {
						name  string
						batch []byte
						want  error
					}{"junk after the stream", withArea(good, append(bytes.Clone(area), "junk"...)), ErrUndecodable})
			}
			for _, tt := range tests {
				_, err := ValidateFull(tt.batch, testInflateLimit)
				if !errors.Is(err, tt.want) {
					t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
					continue
				}
				if tt.want != ErrUndecodable && errors.Is(err, ErrUndecodable) {
					t.Errorf("%s: %v: the stream itself is sound", tt.name, err)
				}
				// The cheap header and CRC check passes them all.
				if _, err := Validate(tt.batch); err != nil && !errors.Is(err, ErrCorrupt) {
					t.Errorf("%s: Validate: %v", tt.name, err)
				}
			}
		})
	}
}

// TestCheckRecordsRefusesBombs inflates bombs through the limit: each is
// refused with ErrTooLarge after inflating little more than the limit.
func TestCheckRecordsRefusesBombs(t *testing.T) {
	sizes := map[Compression]int{
		CompressionGzip: 16 << 20,
		CompressionLZ4:  16 << 20,
		CompressionZstd: 1 << 30, // 1 GiB of zeros in about 110 KiB
		// Snappy inflates at most 22 times: this is no bomb, only a batch
		// over the limit.
		CompressionSnappy: 4 << 20,
	}
	for _, c := range codecs[1:] {
		t.Run(c.String(), func(t *testing.T) {
			batch := bigRecordBatch(t, c, sizes[c])
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := ValidateFull(batch, testInflateLimit)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("%d bytes inflating past %d: %v, want ErrTooLarge", len(batch), sizes[c], err)
			}
			// The window and pooled codec state (a zstd decoder's 8 MiB
			// window) may be allocated here; never the bomb.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 24<<20 {
				t.Fatalf("allocated %d MiB checking a %d MiB bomb with a %d MiB limit", alloc>>20, sizes[c]>>20, testInflateLimit>>20)
			}
		})
	}
	t.Run("zstd at the default limit", func(t *testing.T) {
		// The record streams past in a small window: memory does not
		// follow the limit either.
		batch := bigRecordBatch(t, CompressionZstd, 1<<30)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := ValidateFull(batch, MaxInflatedBytes)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("%v, want ErrTooLarge", err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 24<<20 {
			t.Fatalf("allocated %d MiB checking a 1 GiB bomb with a %d MiB limit", alloc>>20, MaxInflatedBytes>>20)
		}
	})
	t.Run("snappy claiming more than snappy can", func(t *testing.T) {
		area := binary.AppendUvarint(nil, 1<<30) // a raw block claiming 1 GiB
		area = append(area, make([]byte, 100)...)
		batch := rawBatch{attrs: int16(CompressionSnappy), count: 1, area: area}.frame()
		if _, err := ValidateFull(batch, MaxInflatedBytes); !errors.Is(err, ErrUndecodable) {
			t.Fatalf("%v, want ErrUndecodable", err)
		}
	})
	t.Run("record count beyond the limit", func(t *testing.T) {
		raw := bytes.Repeat(okRecord(0).encode(), 1)
		batch := rawBatch{attrs: int16(CompressionZstd), lastOffsetDelta: math.MaxInt32 - 1, count: math.MaxInt32,
			area: zstdStream(t, raw)}.frame()
		if _, err := ValidateFull(batch, testInflateLimit); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%v, want ErrCorrupt", err)
		}
	})
}

// TestCheckRecordsMalformed runs TestMalformed's broken records through
// CheckRecords, uncompressed and in every codec: none passes, and a sound
// stream of broken records is not called undecodable.
func TestCheckRecordsMalformed(t *testing.T) {
	rec := func(specs ...rawRecordSpec) []byte {
		var b []byte
		for _, s := range specs {
			b = append(b, s.encode()...)
		}
		return b
	}
	tests := []struct {
		name string
		rb   rawBatch
	}{
		{"offset deltas repeat", rawBatch{lastOffsetDelta: 2, count: 3, area: rec(okRecord(0), okRecord(0), okRecord(2))}},
		{"offset deltas skip", rawBatch{lastOffsetDelta: 2, count: 3, area: rec(okRecord(0), okRecord(2), okRecord(3))}},
		{"offset deltas out of order", rawBatch{lastOffsetDelta: 2, count: 3, area: rec(okRecord(0), okRecord(2), okRecord(1))}},
		{"record length short", rawBatch{count: 1, area: rec(rawRecordSpec{keyLen: -1, valueLen: 3, value: []byte("abc"), lenAdjust: -2})}},
		{"record length past end", rawBatch{count: 1, area: rec(rawRecordSpec{keyLen: -1, valueLen: -1, lenAdjust: 5})}},
		{"junk inside record", rawBatch{count: 1, area: rec(rawRecordSpec{keyLen: -1, valueLen: -1, extra: []byte{1, 2}})}},
		{"header count huge", rawBatch{count: 1, area: rec(rawRecordSpec{keyLen: -1, valueLen: -1, nHeaders: 1 << 30})}},
		{"timestamp overflows", rawBatch{count: 1, baseTimestamp: math.MaxInt64 - 5, maxTimestamp: math.MaxInt64 - 5,
			area: rec(rawRecordSpec{tsDelta: 10, keyLen: -1, valueLen: -1})}},
		{"timestamp underflows", rawBatch{count: 1, baseTimestamp: math.MinInt64 + 5,
			area: rec(rawRecordSpec{tsDelta: -10, keyLen: -1, valueLen: -1})}},
	}
	for _, tt := range tests {
		for _, c := range codecs {
			rb := tt.rb
			rb.attrs = int16(c)
			var err error
			if rb.area, err = Compress(c, nil, tt.rb.area); err != nil {
				t.Fatal(err)
			}
			_, err = ValidateFull(rb.frame(), testInflateLimit)
			if !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrUndecodable) {
				t.Errorf("%s, %v: %v, want ErrCorrupt (not ErrUndecodable)", tt.name, c, err)
			}
		}
	}
}

// TestCheckRecordsBigRecords covers records larger than the window, which
// CheckRecords parses as they stream past rather than whole: valid ones
// pass in every codec, and each way of breaking one is refused as the
// readers refuse it.
func TestCheckRecordsBigRecords(t *testing.T) {
	big := payload(300<<10, 5)
	hdrs := []byte{}
	hdrs = binary.AppendVarint(hdrs, 5)
	hdrs = append(hdrs, "trace"...)
	hdrs = binary.AppendVarint(hdrs, int64(len(big)))
	hdrs = append(hdrs, big...)
	hdrs = binary.AppendVarint(hdrs, 0)  // empty key
	hdrs = binary.AppendVarint(hdrs, -1) // null value
	okBig := func(delta int64) rawRecordSpec {
		return rawRecordSpec{offDelta: delta, tsDelta: -7, keyLen: int64(len(big)), key: big, valueLen: int64(len(big)), value: big,
			nHeaders: 2, headers: hdrs}
	}
	enc := func(specs ...rawRecordSpec) []byte {
		var b []byte
		for _, s := range specs {
			b = append(b, s.encode()...)
		}
		return b
	}
	with := func(f func(*rawRecordSpec)) rawRecordSpec {
		s := okBig(0)
		f(&s)
		return s
	}
	valid := []struct {
		name string
		rb   rawBatch
	}{
		{"one big record", rawBatch{count: 1, area: enc(okBig(0))}},
		{"small, big, small", rawBatch{count: 3, lastOffsetDelta: 2, area: enc(okRecord(0), okBig(1), okRecord(2))}},
		{"null key and value", rawBatch{count: 1, area: enc(with(func(s *rawRecordSpec) { s.keyLen, s.key, s.valueLen, s.value = -1, nil, -1, nil }))}},
	}
	broken := []struct {
		name string
		rb   rawBatch
	}{
		{"junk inside", rawBatch{count: 1, area: enc(with(func(s *rawRecordSpec) { s.extra = []byte{1, 2} }))}},
		{"length short", rawBatch{count: 1, area: enc(with(func(s *rawRecordSpec) { s.lenAdjust = -1 }))}},
		{"length past end", rawBatch{count: 1, area: enc(with(func(s *rawRecordSpec) { s.lenAdjust = 1 }))}},
		{"key length past record", rawBatch{count: 1, area: enc(with(func(s *rawRecordSpec) { s.keyLen = 1 << 30 }))}},
		{"key length below -1", rawBatch{count: 1, area: enc(with(func(s *rawRecordSpec) { s.keyLen = -2 }))}},
		{"value length past record", rawBatch{count: 1, area: enc(with(func(s *rawRecordSpec) { s.valueLen++ }))}},
		{"header count negative", rawBatch{count: 1, area: enc(with(func(s *rawRecordSpec) { s.nHeaders = -1 }))}},
		{"header count huge", rawBatch{count: 1, area: enc(with(func(s *rawRecordSpec) { s.nHeaders = 1 << 20 }))}},
		{"header count one more", rawBatch{count: 1, area: enc(with(func(s *rawRecordSpec) { s.nHeaders = 3 }))}},
		{"header null key", rawBatch{count: 1, area: enc(with(func(s *rawRecordSpec) {
			s.headers = append(binary.AppendVarint(nil, -1), hdrs[6:]...)
		}))}},
		{"offset delta beyond int32", rawBatch{count: 1, area: enc(with(func(s *rawRecordSpec) { s.offDelta = 1 << 33 }))}},
		{"offset delta 1 for the first record", rawBatch{count: 1, area: enc(okBig(1))}},
		{"cut in the value", rawBatch{count: 1, area: enc(okBig(0))[:200<<10]}},
	}
	for _, c := range codecs {
		compressed := func(rb rawBatch) []byte {
			var err error
			rb.attrs = int16(c)
			if rb.area, err = Compress(c, nil, rb.area); err != nil {
				t.Fatal(err)
			}
			return rb.frame()
		}
		for _, tt := range valid {
			batch := compressed(tt.rb)
			if _, err := ValidateFull(batch, 4<<20); err != nil {
				t.Errorf("%v, %s: %v", c, tt.name, err)
			} else if _, err := Records(batch, 4<<20); err != nil {
				t.Errorf("%v, %s: passed, but Records: %v", c, tt.name, err)
			}
		}
		for _, tt := range broken {
			batch := compressed(tt.rb)
			_, err := ValidateFull(batch, 4<<20)
			if !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrUndecodable) {
				t.Errorf("%v, %s: %v, want ErrCorrupt (not ErrUndecodable)", c, tt.name, err)
			}
			if _, rerr := Records(batch, 4<<20); rerr == nil {
				t.Errorf("%v, %s: Records accepts it", c, tt.name)
			}
		}
	}
}

// TestCheckRecordsSteadyStateAllocs checks that the pooled window and
// codec state make a check of a valid batch allocation-free.
func TestCheckRecordsSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	recs := benchRecords()
	for _, c := range codecs {
		batch := mustBuild(t, c, recs...)
		h, err := ParseHeader(batch)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckRecords(batch, &h, testInflateLimit); err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(50, func() {
			if err := CheckRecords(batch, &h, testInflateLimit); err != nil {
				t.Fatal(err)
			}
		})
		// A GC may empty the pools during the run; a fraction of an
		// allocation per run on average is noise, not a leak per call.
		if allocs >= 1 {
			t.Errorf("%v: %.1f allocations per check", c, allocs)
		}
	}
}
