// This file holds the benchmarks: building and decoding a 16 KiB batch of
// 160 records of 100 bytes with each codec.

package record

import (
	"fmt"
	"testing"
)

// benchRecords is 160 records with 100-byte values, 16 KiB of values.
func benchRecords() []Record {
	recs := make([]Record, 160)
	for i := range recs {
		recs[i] = Record{
			Key:       []byte(fmt.Sprintf("user-%04d", i%50)),
			Value:     payload(100, i),
			Timestamp: 1_700_000_000_000 + int64(i),
		}
	}
	return recs
}

func valueBytes(recs []Record) int64 {
	var n int64
	for _, r := range recs {
		n += int64(len(r.Key) + len(r.Value))
	}
	return n
}

// BenchmarkBuild measures Append of every record and AppendBatch into a
// reused buffer, as a producer's hot loop does.
func BenchmarkBuild(b *testing.B) {
	recs := benchRecords()
	for _, c := range codecs {
		b.Run(c.String(), func(b *testing.B) {
			bld := NewBuilder(BuilderOptions{Compression: c})
			var out []byte
			b.SetBytes(valueBytes(recs))
			b.ReportAllocs()
			for b.Loop() {
				bld.Reset()
				for _, r := range recs {
					bld.Append(r)
				}
				var err error
				if out, err = bld.AppendBatch(out[:0]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(out)), "batch-bytes")
		})
	}
}

// BenchmarkBuildNew measures Build, which returns a fresh batch per call.
func BenchmarkBuildNew(b *testing.B) {
	recs := benchRecords()
	for _, c := range codecs {
		b.Run(c.String(), func(b *testing.B) {
			bld := NewBuilder(BuilderOptions{Compression: c})
			b.SetBytes(valueBytes(recs))
			b.ReportAllocs()
			for b.Loop() {
				bld.Reset()
				for _, r := range recs {
					bld.Append(r)
				}
				if _, err := bld.Build(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRecords measures Records, which allocates the record slice (and
// the inflated buffer for compressed batches).
func BenchmarkRecords(b *testing.B) {
	recs := benchRecords()
	for _, c := range codecs {
		b.Run(c.String(), func(b *testing.B) {
			batch := mustBuild(b, c, recs...)
			b.SetBytes(valueBytes(recs))
			b.ReportAllocs()
			for b.Loop() {
				got, err := Records(batch, 1<<20)
				if err != nil || len(got) != len(recs) {
					b.Fatal(len(got), err)
				}
			}
		})
	}
}

// BenchmarkBatchReader measures the reusing iterator.
func BenchmarkBatchReader(b *testing.B) {
	recs := benchRecords()
	for _, c := range codecs {
		b.Run(c.String(), func(b *testing.B) {
			batch := mustBuild(b, c, recs...)
			var br BatchReader
			var rec Record
			b.SetBytes(valueBytes(recs))
			b.ReportAllocs()
			for b.Loop() {
				if err := br.Reset(batch, 1<<20); err != nil {
					b.Fatal(err)
				}
				n := 0
				for br.Next(&rec) {
					n++
				}
				if br.Err() != nil || n != len(recs) {
					b.Fatal(n, br.Err())
				}
			}
		})
	}
}

// BenchmarkValidate measures the broker-side check of an incoming batch.
func BenchmarkValidate(b *testing.B) {
	recs := benchRecords()
	for _, c := range codecs {
		b.Run(c.String(), func(b *testing.B) {
			batch := mustBuild(b, c, recs...)
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Validate(batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkValidateFull measures the leader's full check of an incoming
// batch: BenchmarkValidate's checks plus every record parsed, compressed
// ones inflated as a stream. The ratio of the two is what validation on
// append costs over the frame check.
func BenchmarkValidateFull(b *testing.B) {
	recs := benchRecords()
	for _, c := range codecs {
		b.Run(c.String(), func(b *testing.B) {
			batch := mustBuild(b, c, recs...)
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ValidateFull(batch, 1<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTakeBatch measures Append of every record and TakeBatch, each
// batch's bytes given back as the next one's buffer, as the producer
// recycles delivered batches: uncompressed, the records are encoded in
// place and never copied (compare BenchmarkBuild/none). The 1MiB cases are
// issue 15's load: 1000 incompressible 1 KiB records per batch.
func BenchmarkTakeBatch(b *testing.B) {
	type run struct {
		name string
		c    Compression
		recs []Record
	}
	var runs []run
	for _, c := range codecs {
		runs = append(runs, run{c.String(), c, benchRecords()})
	}
	big := kgoBatchRecords(1000, 1024)
	runs = append(runs, run{"none-1MiB", CompressionNone, big}, run{"snappy-1MiB", CompressionSnappy, big})
	for _, r := range runs {
		c, recs := r.c, r.recs
		b.Run(r.name, func(b *testing.B) {
			bld := NewBuilder(BuilderOptions{Compression: c})
			var out []byte
			b.SetBytes(valueBytes(recs))
			b.ReportAllocs()
			for b.Loop() {
				for _, r := range recs {
					bld.Append(r)
				}
				var err error
				if out, err = bld.TakeBatch(out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(out)), "batch-bytes")
		})
	}
}
