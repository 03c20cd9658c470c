// This file holds helpers shared by the package's tests: the codec list,
// record sets, comparison and hand-framing of batches.

package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
)

// codecs is every codec, for tests that run across all of them.
var codecs = []Compression{CompressionNone, CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd}

type recordSet struct {
	name string
	recs []Record
}

// payload returns n bytes of compressible, seed-dependent text.
func payload(n, seed int) []byte {
	var b bytes.Buffer
	for b.Len() < n {
		fmt.Fprintf(&b, `{"id":%d,"user":"u%03d","event":"click","ok":true}`, seed, seed%997)
		seed++
	}
	return b.Bytes()[:n]
}

// recordSets returns the record sets every codec is tested with.
func recordSets() []recordSet {
	const ts = 1_700_000_000_000
	many := make([]Record, 1000)
	for i := range many {
		many[i] = Record{Key: []byte(fmt.Sprintf("k%d", i%7)), Value: payload(20+i%50, i), Timestamp: ts + int64(i)}
	}
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = byte(i*7 + i>>9)
	}
	return []recordSet{
		{"null key and value", []Record{{Timestamp: ts}}},
		{"empty key and value", []Record{{Key: []byte{}, Value: []byte{}, Timestamp: ts}}},
		{"null key empty value", []Record{{Value: []byte{}, Timestamp: ts}, {Key: []byte("k"), Timestamp: ts + 1}}},
		{"headers", []Record{
			{Key: []byte("k1"), Value: []byte("v1"), Timestamp: ts, Headers: []RecordHeader{
				{Key: "trace", Value: []byte("abc")},
				{Key: "", Value: []byte{}},
				{Key: "null", Value: nil},
			}},
			{Key: []byte("k2"), Value: []byte("v2"), Timestamp: ts + 5, Headers: []RecordHeader{{Key: "trace", Value: []byte("def")}}},
			{Key: []byte("k3"), Value: []byte("v3"), Timestamp: ts + 6},
		}},
		{"timestamps out of order", []Record{
			{Value: []byte("a"), Timestamp: ts},
			{Value: []byte("b"), Timestamp: ts - 1000},
			{Value: []byte("c"), Timestamp: ts + 1000},
			{Value: []byte("d"), Timestamp: 0},
		}},
		{"large value", []Record{{Key: []byte("big"), Value: big, Timestamp: ts}}},
		{"many small", many},
	}
}

// mustBuild builds a batch or fails the test.
func mustBuild(tb testing.TB, c Compression, recs ...Record) []byte {
	tb.Helper()
	b, err := BuildBatch(c, recs...)
	if err != nil {
		tb.Fatalf("BuildBatch(%v): %v", c, err)
	}
	return b
}

// sameBytes compares two nullable byte strings, null and empty apart.
func sameBytes(a, b []byte) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

// compareRecords compares decoded records with what was built: offsets are
// base+i, timestamps as given (or logAppend for every record when set).
func compareRecords(tb testing.TB, want, got []Record, base int64) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range want {
		w, g := &want[i], &got[i]
		if !sameBytes(w.Key, g.Key) {
			tb.Fatalf("record %d: key %q (nil %v), want %q (nil %v)", i, g.Key, g.Key == nil, w.Key, w.Key == nil)
		}
		if !sameBytes(w.Value, g.Value) {
			tb.Fatalf("record %d: value of %d bytes (nil %v), want %d (nil %v)", i, len(g.Value), g.Value == nil, len(w.Value), w.Value == nil)
		}
		if g.Timestamp != w.Timestamp {
			tb.Fatalf("record %d: timestamp %d, want %d", i, g.Timestamp, w.Timestamp)
		}
		if g.Offset != base+int64(i) {
			tb.Fatalf("record %d: offset %d, want %d", i, g.Offset, base+int64(i))
		}
		if len(g.Headers) != len(w.Headers) {
			tb.Fatalf("record %d: %d headers, want %d", i, len(g.Headers), len(w.Headers))
		}
		for j := range w.Headers {
			if g.Headers[j].Key != w.Headers[j].Key || !sameBytes(g.Headers[j].Value, w.Headers[j].Value) {
				tb.Fatalf("record %d header %d: %q=%q, want %q=%q", i, j, g.Headers[j].Key, g.Headers[j].Value, w.Headers[j].Key, w.Headers[j].Value)
			}
		}
	}
}

// rawBatch describes a batch framed by hand, for inputs the Builder will
// not produce.
type rawBatch struct {
	baseOffset      int64
	attrs           int16
	lastOffsetDelta int32
	baseTimestamp   int64
	maxTimestamp    int64
	count           int32
	area            []byte // records area as stored (compressed or not)
}

// frame assembles the batch with a correct length and CRC32C.
func (r rawBatch) frame() []byte {
	b := make([]byte, HeaderSize, HeaderSize+len(r.area))
	be := binary.BigEndian
	be.PutUint64(b[offBaseOffset:], uint64(r.baseOffset))
	be.PutUint32(b[offLength:], uint32(HeaderSize-LogOverhead+len(r.area)))
	be.PutUint32(b[offLeaderEpoch:], 0xffffffff)
	b[offMagic] = Magic
	be.PutUint16(b[offAttributes:], uint16(r.attrs))
	be.PutUint32(b[offLastOffsetDelta:], uint32(r.lastOffsetDelta))
	be.PutUint64(b[offBaseTimestamp:], uint64(r.baseTimestamp))
	be.PutUint64(b[offMaxTimestamp:], uint64(r.maxTimestamp))
	be.PutUint64(b[offProducerID:], 0xffffffffffffffff)
	be.PutUint16(b[offProducerEpoch:], 0xffff)
	be.PutUint32(b[offBaseSequence:], 0xffffffff)
	be.PutUint32(b[offRecordCount:], uint32(r.count))
	b = append(b, r.area...)
	be.PutUint32(b[offCRC:], Checksum(b))
	return b
}

// encodeRecord encodes one record body field by field, so tests can write
// records the Builder never would (wrong deltas, bad lengths, junk).
type rawRecordSpec struct {
	attrs     byte
	tsDelta   int64
	offDelta  int64
	keyLen    int64 // -1 null
	key       []byte
	valueLen  int64
	value     []byte
	nHeaders  int64
	headers   []byte // raw header encoding
	extra     []byte // junk inside the record body
	lenAdjust int64  // added to the record's length prefix
}

func (s rawRecordSpec) encode() []byte {
	body := []byte{s.attrs}
	body = binary.AppendVarint(body, s.tsDelta)
	body = binary.AppendVarint(body, s.offDelta)
	body = binary.AppendVarint(body, s.keyLen)
	body = append(body, s.key...)
	body = binary.AppendVarint(body, s.valueLen)
	body = append(body, s.value...)
	body = binary.AppendVarint(body, s.nHeaders)
	body = append(body, s.headers...)
	body = append(body, s.extra...)
	out := binary.AppendVarint(nil, int64(len(body))+s.lenAdjust)
	return append(out, body...)
}

// okRecord is a well-formed record spec with the given offset delta.
func okRecord(delta int64) rawRecordSpec {
	return rawRecordSpec{offDelta: delta, keyLen: -1, valueLen: 3, value: []byte("abc")}
}

// parseRecordRef is parseRecord written plainly (readVarint32 and
// readBytes for every field): the reference the fast one must agree with.
func parseRecordRef(b []byte) (rawRecord, int, error) {
	var r rawRecord
	l, n, ok := readVarint32(b)
	if !ok || l < minRecordBody {
		return r, 0, fmt.Errorf("%w: bad record length", ErrCorrupt)
	}
	if int(l) > len(b)-n {
		return r, 0, fmt.Errorf("%w: record length %d, %d bytes left", ErrCorrupt, l, len(b)-n)
	}
	size := n + int(l)
	body := b[n:size]
	p := 1 // attributes: unused by Kafka, not checked
	ts, w := binary.Varint(body[p:])
	if w <= 0 {
		return r, 0, fmt.Errorf("%w: bad timestamp delta", ErrCorrupt)
	}
	r.tsDelta = ts
	p += w
	if r.offDelta, w, ok = readVarint32(body[p:]); !ok {
		return r, 0, fmt.Errorf("%w: bad offset delta", ErrCorrupt)
	}
	p += w
	if r.key, w, ok = readBytes(body[p:]); !ok {
		return r, 0, fmt.Errorf("%w: bad key length", ErrCorrupt)
	}
	p += w
	if r.value, w, ok = readBytes(body[p:]); !ok {
		return r, 0, fmt.Errorf("%w: bad value length", ErrCorrupt)
	}
	p += w
	hc, w, ok := readVarint32(body[p:])
	// Each header takes at least two bytes (key and value lengths).
	if !ok || hc < 0 || int(hc) > (len(body)-p-w)/2 {
		return r, 0, fmt.Errorf("%w: bad header count", ErrCorrupt)
	}
	p += w
	start := p
	for i := range int(hc) {
		kl, w, ok := readVarint32(body[p:])
		if !ok || kl < 0 || int(kl) > len(body)-p-w {
			return r, 0, fmt.Errorf("%w: header %d: bad key length", ErrCorrupt, i)
		}
		p += w + int(kl)
		if _, w, ok = readBytes(body[p:]); !ok {
			return r, 0, fmt.Errorf("%w: header %d: bad value length", ErrCorrupt, i)
		}
		p += w
	}
	if p != len(body) {
		return r, 0, fmt.Errorf("%w: record has %d bytes past its fields", ErrCorrupt, len(body)-p)
	}
	r.nHeaders = int(hc)
	r.headers = body[start:p]
	return r, size, nil
}
