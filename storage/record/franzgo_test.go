// This file cross-checks the batch and codec encodings against franz-go:
// kmsg parses what our Builder writes, and our readers parse what kmsg and
// kgo's compressor write.

package record

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kgoCodec returns franz-go's codec for c.
func kgoCodec(c Compression) kgo.CompressionCodec {
	switch c {
	case CompressionGzip:
		return kgo.GzipCompression()
	case CompressionSnappy:
		return kgo.SnappyCompression()
	case CompressionLZ4:
		return kgo.Lz4Compression()
	case CompressionZstd:
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

// kgoCompress compresses src as a franz-go producer would.
func kgoCompress(tb testing.TB, c Compression, src []byte) []byte {
	tb.Helper()
	if c == CompressionNone {
		return bytes.Clone(src)
	}
	comp, err := kgo.DefaultCompressor(kgoCodec(c))
	if err != nil {
		tb.Fatalf("kgo.DefaultCompressor(%v): %v", c, err)
	}
	out, used := comp.Compress(new(bytes.Buffer), src)
	if used != kgo.CompressionCodecType(c) {
		tb.Fatalf("kgo compressed with codec %d, want %d", used, c)
	}
	return bytes.Clone(out)
}

// kgoDecompress inflates src as a franz-go consumer would.
func kgoDecompress(tb testing.TB, c Compression, src []byte) []byte {
	tb.Helper()
	out, err := kgo.DefaultDecompressor().Decompress(src, kgo.CompressionCodecType(c))
	if err != nil {
		tb.Fatalf("kgo decompress %v: %v", c, err)
	}
	return out
}

// TestFranzGoReadsOurBatches parses each Builder batch with kmsg and kgo's
// decompressor and compares the records.
func TestFranzGoReadsOurBatches(t *testing.T) {
	for _, c := range codecs {
		for _, set := range recordSets() {
			t.Run(c.String()+"/"+set.name, func(t *testing.T) {
				b := NewBuilder(BuilderOptions{Compression: c, Idempotent: true, ProducerID: 42, ProducerEpoch: 1, BaseSequence: 100})
				for _, r := range set.recs {
					b.Append(r)
				}
				batch, err := b.Build()
				if err != nil {
					t.Fatal(err)
				}
				var rb kmsg.RecordBatch
				if err := rb.ReadFrom(batch); err != nil {
					t.Fatalf("kmsg.RecordBatch.ReadFrom: %v", err)
				}
				n := len(set.recs)
				if rb.Magic != 2 || rb.NumRecords != int32(n) || rb.LastOffsetDelta != int32(n-1) ||
					rb.Attributes&0x7 != int16(c) || rb.ProducerID != 42 || rb.ProducerEpoch != 1 || rb.FirstSequence != 100 ||
					int(rb.Length)+12 != len(batch) || rb.PartitionLeaderEpoch != -1 {
					t.Fatalf("kmsg header %+v", rb)
				}
				if crc := crc32.Checksum(batch[21:], crc32.MakeTable(crc32.Castagnoli)); uint32(rb.CRC) != crc {
					t.Fatalf("CRC %08x, computed %08x", uint32(rb.CRC), crc)
				}
				raw := rb.Records
				if c != CompressionNone {
					raw = kgoDecompress(t, c, raw)
				}
				got := make([]Record, 0, n)
				for len(raw) > 0 {
					l, w := binary.Varint(raw)
					if w <= 0 || int(l) > len(raw)-w {
						t.Fatalf("record %d: bad length prefix", len(got))
					}
					var kr kmsg.Record
					if err := kr.ReadFrom(raw[:w+int(l)]); err != nil {
						t.Fatalf("kmsg.Record.ReadFrom: %v", err)
					}
					raw = raw[w+int(l):]
					if kr.Attributes != 0 || int(kr.OffsetDelta) != len(got) {
						t.Fatalf("record %d: attributes %d offset delta %d", len(got), kr.Attributes, kr.OffsetDelta)
					}
					r := Record{Key: kr.Key, Value: kr.Value, Timestamp: rb.FirstTimestamp + kr.TimestampDelta64, Offset: rb.FirstOffset + int64(kr.OffsetDelta)}
					for _, h := range kr.Headers {
						r.Headers = append(r.Headers, RecordHeader{Key: h.Key, Value: h.Value})
					}
					got = append(got, r)
				}
				compareRecords(t, set.recs, got, 0)
			})
		}
	}
}

// kmsgBatch builds a batch with kmsg and kgo's compressor, as a franz-go
// producer would.
func kmsgBatch(tb testing.TB, c Compression, recs []Record) []byte {
	tb.Helper()
	var raw []byte
	maxTS := recs[0].Timestamp
	for i, r := range recs {
		maxTS = max(maxTS, r.Timestamp)
		kr := kmsg.Record{
			TimestampDelta64: r.Timestamp - recs[0].Timestamp,
			OffsetDelta:      int32(i),
			Key:              r.Key,
			Value:            r.Value,
		}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		// Length counts the bytes after itself: encode once with a
		// zero length (one byte) to measure.
		kr.Length = int32(len(kr.AppendTo(nil)) - 1)
		raw = kr.AppendTo(raw)
	}
	area := kgoCompress(tb, c, raw)
	rb := kmsg.RecordBatch{
		FirstOffset:          0,
		Length:               int32(49 + len(area)),
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           int16(c),
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       recs[0].Timestamp,
		MaxTimestamp:         maxTS,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(recs)),
		Records:              area,
	}
	batch := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(batch[17:], crc32.Checksum(batch[21:], crc32.MakeTable(crc32.Castagnoli)))
	return batch
}

// TestWeReadFranzGoBatches reads kmsg-built batches with Validate, Records
// and BatchReader.
func TestWeReadFranzGoBatches(t *testing.T) {
	for _, c := range codecs {
		for _, set := range recordSets() {
			t.Run(c.String()+"/"+set.name, func(t *testing.T) {
				batch := kmsgBatch(t, c, set.recs)
				if _, err := Validate(batch); err != nil {
					t.Fatalf("Validate: %v", err)
				}
				got, err := Records(batch, 4<<20)
				if err != nil {
					t.Fatalf("Records: %v", err)
				}
				compareRecords(t, set.recs, got, 0)
			})
		}
	}
}

// TestCodecsAgainstFranzGo checks each codec both ways: kgo inflates what
// Compress writes and Decompress inflates what kgo writes.
func TestCodecsAgainstFranzGo(t *testing.T) {
	inputs := map[string][]byte{
		"small":          []byte("hello, hello, hello"),
		"compressible":   payload(200<<10, 1),
		"incompressible": noise(100 << 10),
	}
	for _, c := range codecs[1:] {
		for name, in := range inputs {
			t.Run(c.String()+"/"+name, func(t *testing.T) {
				ours, err := Compress(c, nil, in)
				if err != nil {
					t.Fatal(err)
				}
				if got := kgoDecompress(t, c, ours); !bytes.Equal(got, in) {
					t.Fatal("kgo inflated our output to different bytes")
				}
				theirs := kgoCompress(t, c, in)
				got, err := Decompress(c, nil, theirs, len(in))
				if err != nil {
					t.Fatalf("Decompress of kgo output: %v", err)
				}
				if !bytes.Equal(got, in) {
					t.Fatal("we inflated kgo's output to different bytes")
				}
			})
		}
	}
}
