// validate_test.go: Append's full check of producer batches (Kafka's
// LogValidator), under every config permutation: a compressed body that is
// garbage or truncated under a valid CRC, a decompression bomb, a record
// count that does not match the records, and records broken inside a valid
// framing are each refused with the right error, leave the log unchanged
// and do not make it fail; a valid batch appends and reads back after them.

package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/actorlog/actorlog/storage/record"
)

// validateInflateLimit is MaxInflatedBytes in these tests.
const validateInflateLimit = 1 << 20

// withRecordsArea returns batch with its records area replaced by area and
// its length and CRC fixed: what a producer that means harm sends.
func withRecordsArea(batch, area []byte) []byte {
	b := append(bytes.Clone(batch[:record.HeaderSize]), area...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-record.LogOverhead))
	fixCRC(b)
	return b
}

// setCount sets a batch's record count and last offset delta (keeping them
// consistent, so that only the records tell) and fixes its CRC.
func setCount(batch []byte, n int32) []byte {
	b := bytes.Clone(batch)
	binary.BigEndian.PutUint32(b[57:], uint32(n))
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))
	fixCRC(b)
	return b
}

// bombs caches, per codec, a batch of one record whose value is zeros far
// beyond validateInflateLimit: built once, as a stream, so that it never
// sits inflated in memory (but for snappy, which cannot inflate more than
// 22 times and so makes no bomb, only a batch over the limit).
var bombs sync.Map // record.Compression → func() []byte

func bombBatch(t *testing.T, c record.Compression) []byte {
	t.Helper()
	f, _ := bombs.LoadOrStore(c, sync.OnceValue(func() []byte {
		size := map[record.Compression]int{
			record.CompressionGzip:   16 << 20,
			record.CompressionLZ4:    16 << 20,
			record.CompressionZstd:   1 << 30, // 1 GiB of zeros in about 110 KiB
			record.CompressionSnappy: 4 << 20,
		}[c]
		var buf bytes.Buffer
		var w io.WriteCloser
		switch c {
		case record.CompressionGzip:
			w = gzip.NewWriter(&buf)
		case record.CompressionLZ4:
			w = lz4.NewWriter(&buf)
		case record.CompressionZstd:
			zw, err := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1))
			if err != nil {
				panic(err)
			}
			w = zw
		default:
			w = nopCloser{&buf}
		}
		// One record: attributes, timestamp delta, offset delta 0, null
		// key, value of size zeros, no headers.
		body := binary.AppendVarint([]byte{0, 0, 0, 1}, int64(size))
		rec := append(binary.AppendVarint(nil, int64(len(body)+size+1)), body...)
		zeros := make([]byte, 1<<20)
		_, err := w.Write(rec)
		for left := size; left > 0 && err == nil; left -= len(zeros) {
			_, err = w.Write(zeros[:min(left, len(zeros))])
		}
		if err == nil {
			_, err = w.Write([]byte{0})
		}
		if err == nil {
			err = w.Close()
		}
		if err != nil {
			panic(err)
		}
		area := buf.Bytes()
		if c == record.CompressionSnappy {
			if area, err = record.Compress(c, nil, area); err != nil {
				panic(err)
			}
		}
		b := make([]byte, record.HeaderSize, record.HeaderSize+len(area))
		binary.BigEndian.PutUint64(b[43:], ^uint64(0)) // producer id -1
		binary.BigEndian.PutUint16(b[51:], 0xffff)     // producer epoch -1
		binary.BigEndian.PutUint32(b[53:], 0xffffffff) // base sequence -1
		b[16] = record.Magic
		binary.BigEndian.PutUint16(b[21:], uint16(c))
		return setCount(withRecordsArea(b, area), 1)
	}))
	return f.(func() []byte)()
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func TestAppendValidatesRecords(t *testing.T) {
	forAllPerms(t, testAppendValidatesRecords)
}

func testAppendValidatesRecords(t *testing.T, p perm) {
	cfg := p.config()
	cfg.MaxMessageBytes = 512 << 10
	cfg.MaxInflatedBytes = validateInflateLimit
	l := openLog(t, t.TempDir(), cfg)
	want := appendBatches(t, l, p.codec, 1, 2, 5, 0)
	recs := makeRecords(3, 50, 0)
	good := buildBatch(t, p.codec, recs)
	area := good[record.HeaderSize:]

	type refusal struct {
		name  string
		batch []byte
		want  []error // every one must match
		not   error   // must not match, if set
	}
	// Records whose framing (length prefixes, count) is sound but whose
	// insides are not: the first record's header count says one header,
	// and there is none.
	raw, err := record.Decompress(p.codec, nil, area, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	brokenInside := bytes.Clone(raw)
	if brokenInside[len(brokenInside)-1] != 0 {
		t.Fatal("the last record should end with a header count of 0")
	}
	brokenInside[len(brokenInside)-1] = 2 // one header, no bytes for it
	var tests []refusal
	if p.codec == record.CompressionNone {
		tests = []refusal{
			{"header count without headers", withRecordsArea(good, brokenInside), []error{ErrInvalidBatch, record.ErrCorrupt}, record.ErrUndecodable},
			{"count above the records", setCount(good, int32(len(recs)+1)), []error{ErrInvalidBatch, record.ErrCorrupt}, nil},
		}
	} else {
		recompressed, err := record.Compress(p.codec, nil, brokenInside)
		if err != nil {
			t.Fatal(err)
		}
		garbage := make([]byte, len(area))
		for i := range garbage {
			garbage[i] = byte(i*131 + i>>3)
		}
		tests = []refusal{
			{"garbage body", withRecordsArea(good, garbage), []error{ErrInvalidBatch, record.ErrUndecodable}, nil},
			{"truncated body", withRecordsArea(good, area[:len(area)/2]), []error{ErrInvalidBatch, record.ErrUndecodable}, nil},
			{"bomb", bombBatch(t, p.codec), []error{ErrInvalidBatch, ErrRecordTooLarge, record.ErrTooLarge}, record.ErrUndecodable},
			{"count above the records", setCount(good, int32(len(recs)+1)), []error{ErrInvalidBatch, record.ErrCorrupt}, record.ErrUndecodable},
			{"count below the records", setCount(good, int32(len(recs)-1)), []error{ErrInvalidBatch, record.ErrCorrupt}, record.ErrUndecodable},
			{"header count without headers", withRecordsArea(good, recompressed), []error{ErrInvalidBatch, record.ErrCorrupt}, record.ErrUndecodable},
		}
	}
	size, leo := l.Size(), l.LogEndOffset()
	for _, tc := range tests {
		if _, err := record.Validate(tc.batch); err != nil && p.codec != record.CompressionNone {
			t.Fatalf("%s: the cheap check refuses it already (%v): the test shows nothing", tc.name, err)
		}
		_, err := l.Append(bytes.Clone(tc.batch), 1)
		for _, w := range tc.want {
			if !errors.Is(err, w) {
				t.Errorf("%s: %v, want %v", tc.name, err, w)
			}
		}
		if tc.not != nil && errors.Is(err, tc.not) {
			t.Errorf("%s: %v, must not be %v", tc.name, err, tc.not)
		}
		if l.Size() != size || l.LogEndOffset() != leo {
			t.Fatalf("%s: log changed: size %d->%d, end %d->%d", tc.name, size, l.Size(), leo, l.LogEndOffset())
		}
	}
	if l.Err() != nil {
		t.Fatalf("bad input made the log fail: %v", l.Err())
	}
	if _, err := l.Append(good, 1); err != nil {
		t.Fatalf("good batch after bad ones: %v", err)
	}
	checkRecords(t, readAllRecords(t, l, 0, 1<<20), append(want, recs...), 0)
}

// TestLargeBrokenRecordsLeaveNoTrace covers an uncompressed batch big
// enough that its records are checked while it is written, whose framing
// is sound and one record's insides are not: refused, nothing left on
// disk, and a reopened log holds only what was acknowledged.
func TestLargeBrokenRecordsLeaveNoTrace(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Config{MaxMessageBytes: 4 << 20})
	want := appendBatches(t, l, record.CompressionNone, 1, 2, 5, 0)
	recs := makeRecords(5, 3000, 0)
	good := buildBatch(t, record.CompressionNone, recs)
	if len(good) < ParallelValidateBytes {
		t.Fatalf("batch of %d bytes is below the parallel check size", len(good))
	}
	broken := bytes.Clone(good)
	broken[len(broken)-1] = 2 // the last record's header count: one header, no bytes
	fixCRC(broken)
	if _, err := record.Validate(broken); err != nil {
		t.Fatalf("the framing check refuses it already (%v): the test shows nothing", err)
	}
	if _, err := l.Append(broken, 1); !errors.Is(err, ErrInvalidBatch) || !errors.Is(err, record.ErrCorrupt) {
		t.Fatalf("%v, want ErrInvalidBatch and record.ErrCorrupt", err)
	}
	if l.LogEndOffset() != 10 || l.Err() != nil {
		t.Fatalf("end %d, log error %v", l.LogEndOffset(), l.Err())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, Config{MaxMessageBytes: 4 << 20})
	checkRecords(t, readAllRecords(t, l, 0, 1<<20), want, 0)
}

func TestMaxInflatedBytesConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want int
	}{
		{Config{}, record.MaxInflatedBytes},
		{Config{MaxMessageBytes: 4096}, 64 * 4096},
		{Config{MaxMessageBytes: 8 << 20}, record.MaxInflatedBytes},
		{Config{MaxInflatedBytes: 5000}, 5000},
	} {
		got, err := tc.cfg.withDefaults()
		if err != nil || got.MaxInflatedBytes != tc.want {
			t.Errorf("%+v: MaxInflatedBytes %d, %v; want %d", tc.cfg, got.MaxInflatedBytes, err, tc.want)
		}
	}
	for _, bad := range []int{-1, record.MaxInflatedBytes + 1} {
		if _, err := (Config{MaxInflatedBytes: bad}).withDefaults(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("MaxInflatedBytes %d: %v, want ErrInvalidConfig", bad, err)
		}
	}
}
