// decode_test.go: decode sizes its slice of messages from the batches'
// record counts (recordCountHint), which a forged count cannot inflate.

package consumer

import (
	"encoding/binary"
	"fmt"
	"testing"
	"unsafe"

	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage/record"
)

// batchOfN is a batch of n records at base, values "v<i>".
func batchOfN(t *testing.T, base int64, n int) []byte {
	t.Helper()
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{Value: fmt.Appendf(nil, "v%d", i)}
	}
	b, err := record.BuildBatch(record.CompressionNone, recs...)
	if err != nil {
		t.Fatal(err)
	}
	record.SetBaseOffset(b, base)
	return b
}

func TestDecodeSizesItsSliceOnce(t *testing.T) {
	var buf []byte
	buf = append(buf, batchOfN(t, 0, 3)...)
	buf = append(buf, batchOfN(t, 3, 40)...)
	buf = append(buf, batchOfN(t, 43, 7)...)
	whole := len(buf)
	buf = append(buf, batchOfN(t, 50, 9)[:30]...) // a partial trailing batch
	if got := recordCountHint(buf); got != 50 {
		t.Fatalf("recordCountHint = %d, want 50", got)
	}
	out, next, _, err := decode(nil, &messages.FetchResponse{Topic: "t", Records: buf}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 50 || cap(out) != 50 || next != 50 {
		t.Fatalf("decode: %d messages in a slice of capacity %d, next %d; want 50, 50, 50", len(out), cap(out), next)
	}
	if got := recordCountHint(buf[:whole-1]); got != 43 {
		t.Fatalf("recordCountHint without the last byte = %d, want 43", got)
	}
}

// TestRecordCountHintForgedCount: a header claiming 2^31-1 records asks for
// no more than its bytes could hold.
func TestRecordCountHintForgedCount(t *testing.T) {
	b := batchOfN(t, 0, 2)
	binary.BigEndian.PutUint32(b[57:], 1<<31-1) // the record count field
	if got, limit := recordCountHint(b), len(b)/minRecordBytes; got > limit {
		t.Fatalf("recordCountHint = %d for a forged count, want at most %d", got, limit)
	}
	if got := recordCountHint([]byte("garbage that is no batch header at all, long enough to parse as one...")); got != 0 {
		t.Fatalf("recordCountHint(garbage) = %d, want 0", got)
	}
}

// decode allocates a Message per record fetched: keep it free of padding.
func TestMessageHasNoPadding(t *testing.T) {
	if got := unsafe.Sizeof(Message{}); got != 112 {
		t.Errorf("Message is %d bytes, want 112 (field order leaves padding?)", got)
	}
}

// BenchmarkDecode decodes a 4 MiB fetch answer of 100-byte records in
// 1 MiB batches (perf produce's default batch size), as the consumer does
// for every fetch.
func BenchmarkDecode(b *testing.B) {
	var buf []byte
	value := make([]byte, 100)
	for base := int64(0); len(buf) < 4<<20; {
		recs := make([]record.Record, 9000)
		for i := range recs {
			recs[i] = record.Record{Value: value, Timestamp: 1000}
		}
		batch, err := record.BuildBatch(record.CompressionNone, recs...)
		if err != nil {
			b.Fatal(err)
		}
		record.SetBaseOffset(batch, base)
		buf = append(buf, batch...)
		base += int64(len(recs))
	}
	resp := &messages.FetchResponse{Topic: "t", Records: buf}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		out, _, _, err := decode(nil, resp, 0)
		if err != nil {
			b.Fatal(err)
		}
		n += len(out)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/record")
}

// TestDecodeIntoReusedSlice: decoding into an earlier answer's slice
// (Config.ReuseBuffers) reuses its memory and leaves nothing of the
// earlier records in the new ones: a record without headers decoded where
// one with headers was has none.
func TestDecodeIntoReusedSlice(t *testing.T) {
	withHeaders, err := record.BuildBatch(record.CompressionNone,
		record.Record{Value: []byte("a"), Headers: []record.RecordHeader{{Key: "h", Value: []byte("x")}}},
		record.Record{Value: []byte("b"), Headers: []record.RecordHeader{{Key: "h", Value: []byte("y")}}})
	if err != nil {
		t.Fatal(err)
	}
	first, _, _, err := decode(nil, &messages.FetchResponse{Topic: "t", Records: withHeaders}, 0)
	if err != nil || len(first) != 2 || len(first[0].Headers) != 1 {
		t.Fatalf("decode: %d messages, headers %v, err %v", len(first), first[0].Headers, err)
	}
	out, next, _, err := decode(first, &messages.FetchResponse{Topic: "t", Records: batchOfN(t, 2, 2)}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || next != 4 || unsafe.SliceData(out) != unsafe.SliceData(first) {
		t.Fatalf("decode into a reused slice: %d messages, next %d, same memory %v; want 2, 4, true",
			len(out), next, unsafe.SliceData(out) == unsafe.SliceData(first))
	}
	for i, m := range out {
		if m.Offset != int64(2+i) || string(m.Value) != fmt.Sprintf("v%d", i) || m.Headers != nil {
			t.Fatalf("message %d: offset %d value %q headers %v; want offset %d, v%d, no headers", i, m.Offset, m.Value, m.Headers, 2+i, i)
		}
	}
}
