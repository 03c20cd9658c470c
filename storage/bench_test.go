// bench_test.go: append and read throughput of the log against a baseline
// that writes the same bytes with plain (*os.File).Write, measured in the
// same run so the ratio is meaningful on a noisy machine:
//
//	go test ./storage -run '^$' -bench . -benchtime 2s
//
// Both sides write into files that rotate every 128 MiB, keeping the last
// two, so a long run does not fill the disk and both pay for new files.

package storage

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/actorlog/actorlog/storage/record"
)

const benchRotate = 128 << 20

var benchSizes = []struct {
	name    string
	records int // of 100-byte values
}{
	{"16KiB", 150},
	{"1MiB", 9700},
}

func benchRecords(n int) []record.Record {
	recs := make([]record.Record, n)
	val := make([]byte, 100)
	for i := range val {
		val[i] = byte('a' + i%26)
	}
	for i := range recs {
		recs[i] = record.Record{Value: val, Timestamp: 1_700_000_000_000 + int64(i)}
	}
	return recs
}

func benchBatch(b *testing.B, n int) []byte {
	return buildBatch(b, record.CompressionNone, benchRecords(n))
}

func BenchmarkAppend(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			benchAppend(b, benchBatch(b, sz.records), nil)
		})
	}
}

// BenchmarkAppendIdempotent appends batches of one known idempotent
// producer, each with the next sequence: the producer state's check and
// update on the append path. Setting the sequence and CRC of each batch is
// part of the measured time (about what a CRC of the batch costs).
func BenchmarkAppendIdempotent(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			batch := idempotentBatch(b, record.CompressionNone, 1, 0, 0, benchRecords(sz.records))
			seq := uint32(0)
			benchAppend(b, batch, func() {
				binary.BigEndian.PutUint32(batch[53:], seq) // base sequence
				fixCRC(batch)
				seq += uint32(sz.records)
			})
		})
	}
}

// benchAppend appends batch b.N times (calling prepare, when set, before
// each append), deleting old segments as the log grows.
func benchAppend(b *testing.B, batch []byte, prepare func()) {
	l, err := Open(b.TempDir(), Config{SegmentBytes: benchRotate, RetentionBytes: 2 * benchRotate, MaxMessageBytes: 2 << 20, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	written := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if prepare != nil {
			prepare()
		}
		if _, err := l.Append(batch, 1); err != nil {
			b.Fatal(err)
		}
		if written += len(batch); written >= benchRotate {
			written = 0
			if _, err := l.DeleteExpiredSegments(l.LogEndOffset()); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkRawWrite is the baseline: the same bytes, os.File.Write.
func BenchmarkRawWrite(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			batch := benchBatch(b, sz.records)
			dir := b.TempDir()
			n := 0
			open := func() *os.File {
				f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("%020d.raw", n)), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
				if err != nil {
					b.Fatal(err)
				}
				if n >= 2 {
					if err := os.Remove(filepath.Join(dir, fmt.Sprintf("%020d.raw", n-2))); err != nil {
						b.Fatal(err)
					}
				}
				n++
				return f
			}
			f := open()
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			written := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := f.Write(batch); err != nil {
					b.Fatal(err)
				}
				if written += len(batch); written >= benchRotate {
					written = 0
					if err := f.Close(); err != nil {
						b.Fatal(err)
					}
					f = open()
				}
			}
			b.StopTimer()
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkRead reads a 256 MiB log of 16 KiB batches sequentially, 1 MiB
// per read, from the page cache; each op is one read.
func BenchmarkRead(b *testing.B) {
	batch := benchBatch(b, 150)
	l, err := Open(b.TempDir(), Config{SegmentBytes: benchRotate, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	for l.Size() < 2*benchRotate {
		if _, err := l.Append(batch, 1); err != nil {
			b.Fatal(err)
		}
	}
	res, err := l.Read(0, 1<<20, -1)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(res.Records)))
	b.ReportAllocs()
	var total int64
	off := int64(0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := l.Read(off, 1<<20, -1)
		if err != nil {
			b.Fatal(err)
		}
		total += int64(len(res.Records))
		h, err := record.ParseHeader(res.Records[len(res.Records)-int(lastBatchSize(res.Records)):])
		if err != nil {
			b.Fatal(err)
		}
		if off = h.NextOffset(); off >= l.LogEndOffset() {
			off = 0
		}
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds()/1e6, "read_MB/s")
}

// lastBatchSize is the size of the last whole batch in buf.
func lastBatchSize(buf []byte) int {
	last := 0
	for sc := record.Batches(buf); sc.Next(); {
		last = len(sc.Batch())
	}
	return last
}

// BenchmarkAppendValidation compares a leader's Append of a producer batch,
// which checks every record (inflating a compressed batch), with a
// follower's AppendReplicated of the same bytes, which checks only the
// frame and CRC: the difference is the cost of record validation.
//
//	go test ./storage -run '^$' -bench AppendValidation -benchtime 2s
func BenchmarkAppendValidation(b *testing.B) {
	codecs := []record.Compression{record.CompressionNone, record.CompressionGzip, record.CompressionSnappy, record.CompressionLZ4, record.CompressionZstd}
	for _, c := range codecs {
		for _, sz := range benchSizes {
			recs := make([]record.Record, sz.records)
			for i := range recs {
				v := fmt.Sprintf(`{"id":%d,"user":"u%03d","event":"click","ok":true,"n":%d}`, i, i%997, i*7919%10007)
				recs[i] = record.Record{Key: []byte(fmt.Sprintf("k%d", i%50)), Value: []byte(v + string(make([]byte, max(0, 100-len(v))))), Timestamp: 1_700_000_000_000 + int64(i)}
			}
			batch := buildBatch(b, c, recs)
			b.Run(fmt.Sprintf("%s/%s/validated", c, sz.name), func(b *testing.B) {
				benchAppend(b, batch, nil)
			})
			b.Run(fmt.Sprintf("%s/%s/replicated", c, sz.name), func(b *testing.B) {
				benchAppendReplicated(b, batch)
			})
		}
	}
}

// benchAppendReplicated appends batch b.N times as a follower does, at the
// log end each time, deleting old segments as the log grows.
func benchAppendReplicated(b *testing.B, batch []byte) {
	l, err := Open(b.TempDir(), Config{SegmentBytes: benchRotate, RetentionBytes: 2 * benchRotate, MaxMessageBytes: 2 << 20, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	written := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		record.SetBaseOffset(batch, l.LogEndOffset()) // outside the CRC
		if _, err := l.AppendReplicated(batch); err != nil {
			b.Fatal(err)
		}
		if written += len(batch); written >= benchRotate {
			written = 0
			if _, err := l.DeleteExpiredSegments(l.LogEndOffset()); err != nil {
				b.Fatal(err)
			}
		}
	}
}
