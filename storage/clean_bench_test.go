// clean_bench_test.go: throughput of the log cleaner, (*Log).Clean, on a
// compacted log of ~32 MiB of closed 1 MiB segments over 10,000 keys (most
// records superseded), in MB/s of closed segments cleaned, against a
// baseline measured in the same run: a raw copy of the same segment files
// (sequential reads, one write pass, fsync), so "cleaner MB/s / raw copy
// MB/s" is a ratio that means something on a noisy machine:
//
//	go test ./storage -run '^$' -bench 'Clean' -benchtime 3x
//
// Each iteration builds a fresh log outside the timer (the same batches
// every time, so both benchmarks start from identical, page-cached files);
// the cleaner's offset map is allocated once and reused, as a cleaner
// thread does. Each cleaning checks that it read every closed byte and kept
// exactly one record per key.

package storage

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/actorlog/actorlog/storage/record"
)

const (
	cleanBenchLogBytes = 32 << 20 // closed segment bytes per iteration
	cleanBenchSegBytes = 1 << 20
	cleanBenchKeys     = 10_000
	cleanBenchBatch    = 16 << 10 // ~ the producer's default batch size
	cleanBenchNow      = 1_700_000_000_000
)

var cleanBenchValues = []struct {
	name string
	size int
}{
	{"1KiB", 1024},
	{"100B", 100},
}

// cleanBenchData is the batches of one benchmark log and what cleaning it
// must keep.
type cleanBenchData struct {
	batches [][]byte
	keys    int // distinct keys in the batches
}

// cleanBenchBatches builds ~cleanBenchLogBytes of uncompressed batches of
// ~cleanBenchBatch bytes, records of valueSize bytes with keys drawn at
// random (fixed seed) from cleanBenchKeys.
func cleanBenchBatches(b *testing.B, valueSize int) cleanBenchData {
	b.Helper()
	rng := rand.New(rand.NewPCG(14, uint64(valueSize)))
	val := make([]byte, valueSize)
	for i := range val {
		val[i] = byte('a' + rng.IntN(26))
	}
	perBatch := max(1, cleanBenchBatch/(valueSize+24))
	seen := make(map[int]bool, cleanBenchKeys)
	var d cleanBenchData
	total, n := 0, 0
	for total < cleanBenchLogBytes {
		recs := make([]record.Record, perBatch)
		for i := range recs {
			k := rng.IntN(cleanBenchKeys)
			seen[k] = true
			recs[i] = record.Record{Key: []byte(fmt.Sprintf("key-%08d", k)), Value: val, Timestamp: cleanBenchNow - 3_600_000 + int64(n)}
			n++
		}
		batch := buildBatch(b, record.CompressionNone, recs)
		d.batches = append(d.batches, batch)
		total += len(batch)
	}
	d.keys = len(seen)
	return d
}

func cleanBenchConfig() Config {
	return Config{
		SegmentBytes: cleanBenchSegBytes, CleanupPolicy: CleanupCompact, FileIdleTimeout: -1,
		Logger: quietLogger(), Now: func() time.Time { return time.UnixMilli(cleanBenchNow) },
	}
}

// cleanBenchLog opens a fresh log in dir, appends d's batches and rolls,
// so that every byte is in a closed segment. It returns the log and the
// bytes of its closed segments.
func cleanBenchLog(b *testing.B, dir string, d cleanBenchData) (*Log, int64) {
	b.Helper()
	l, err := Open(dir, cleanBenchConfig())
	if err != nil {
		b.Fatal(err)
	}
	for _, batch := range d.batches {
		if _, err := l.Append(batch, 1); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Roll(); err != nil {
		b.Fatal(err)
	}
	var closed int64
	for _, p := range cleanBenchSegments(b, dir) {
		fi, err := os.Stat(p)
		if err != nil {
			b.Fatal(err)
		}
		closed += fi.Size()
	}
	return l, closed
}

// cleanBenchSegments lists the non-empty .log files of dir in offset order
// (the names are zero-padded, so lexical order is offset order).
func cleanBenchSegments(b *testing.B, dir string) []string {
	b.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*"+logSuffix))
	if err != nil {
		b.Fatal(err)
	}
	out := paths[:0]
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			b.Fatal(err)
		}
		if fi.Size() > 0 && !strings.HasSuffix(p, cleanedSuffix) {
			out = append(out, p)
		}
	}
	return out
}

// BenchmarkClean times (*Log).Clean of every closed segment of a freshly
// built log; b.SetBytes is the closed bytes, so MB/s is of segments
// cleaned. kept_% is the share of those bytes the cleaned log holds.
func BenchmarkClean(b *testing.B) {
	for _, v := range cleanBenchValues {
		b.Run(v.name, func(b *testing.B) {
			d := cleanBenchBatches(b, v.size)
			m, err := NewOffsetMap(DefaultDedupeBufferBytes)
			if err != nil {
				b.Fatal(err)
			}
			root := b.TempDir()
			var in, out int64
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				dir := filepath.Join(root, fmt.Sprint(i))
				l, closed := cleanBenchLog(b, dir, d)
				b.SetBytes(closed)
				b.StartTimer()
				stats, err := l.Clean(CleanOptions{HighWatermark: -1, OffsetMap: m})
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				if stats.BytesIn != closed || stats.RecordsKept != int64(d.keys) {
					b.Fatalf("cleaned %d of %d closed bytes, kept %d records of %d keys", stats.BytesIn, closed, stats.RecordsKept, d.keys)
				}
				in, out = in+stats.BytesIn, out+stats.BytesOut
				if err := l.Close(); err != nil {
					b.Fatal(err)
				}
				if err := os.RemoveAll(dir); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.StopTimer()
			b.ReportMetric(100*float64(out)/float64(in), "kept_%")
		})
	}
}

// BenchmarkCleanBaseline is BenchmarkClean's yardstick on the same logs: a
// raw copy of every closed segment file, read sequentially in 1 MiB reads
// and written once to a new file that is fsynced, as a cleaner that kept
// every record would at best. The cleaner reads its input twice (offset
// map, then cleaning) and writes only what it keeps.
func BenchmarkCleanBaseline(b *testing.B) {
	for _, v := range cleanBenchValues {
		b.Run(v.name, func(b *testing.B) {
			d := cleanBenchBatches(b, v.size)
			buf := make([]byte, 1<<20)
			root := b.TempDir()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				dir := filepath.Join(root, fmt.Sprint(i))
				l, closed := cleanBenchLog(b, dir, d)
				segs := cleanBenchSegments(b, dir)
				b.SetBytes(closed)
				b.StartTimer()
				var copied int64
				for _, p := range segs {
					n, err := cleanBenchCopy(p, p+".copy", buf)
					if err != nil {
						b.Fatal(err)
					}
					copied += n
				}
				b.StopTimer()
				if copied != closed {
					b.Fatalf("copied %d of %d closed bytes", copied, closed)
				}
				if err := l.Close(); err != nil {
					b.Fatal(err)
				}
				if err := os.RemoveAll(dir); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// cleanBenchCopy copies src to a new file dst with reads and writes of
// len(buf) bytes (no copy_file_range: the bytes pass through user space, as
// the cleaner's do), fsyncs and closes it, and returns the bytes copied.
func cleanBenchCopy(src, dst string, buf []byte) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	var n int64
	for {
		r, rerr := in.Read(buf)
		if r > 0 {
			if _, err := out.Write(buf[:r]); err != nil {
				out.Close()
				return n, fmt.Errorf("write %s: %w", dst, err)
			}
			n += int64(r)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			out.Close()
			return n, fmt.Errorf("read %s: %w", src, rerr)
		}
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return n, fmt.Errorf("fsync %s: %w", dst, err)
	}
	return n, out.Close()
}
