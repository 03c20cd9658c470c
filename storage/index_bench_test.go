// index_bench_test.go: the cost of the segment index on the read path and on
// the heap. Reads at random offsets of a sealed segment (its index on disk)
// and of the active one (its index in memory), and the live heap a log of
// 1 KiB records holds once written (INDEX_HEAP_MIB of it, 256 by default):
//
//	go test ./storage -run '^$' -bench 'IndexRead|IndexHeap' -benchtime 1x
//
// Compare before and after a change by running both trees alternately.

package storage

import (
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/actorlog/actorlog/storage/record"
)

// indexBenchLog is one log shared by every run of BenchmarkIndexRead in the
// process: a 128 MiB sealed segment then a 32 MiB active one, of single
// 1 KiB record batches.
var indexBenchLog struct {
	once   sync.Once
	l      *Log
	sealed int64 // offsets [0, sealed) are in the sealed segment
	err    error
}

const indexBenchSegment = 128 << 20

func indexBenchBatch(tb testing.TB) []byte {
	val := make([]byte, 1024)
	for i := range val {
		val[i] = byte('a' + i%26)
	}
	return buildBatch(tb, record.CompressionNone, []record.Record{{Value: val, Timestamp: 1_700_000_000_000}})
}

func openIndexBenchLog(b *testing.B) (*Log, int64) {
	b.Helper()
	indexBenchLog.once.Do(func() {
		dir, err := os.MkdirTemp("", "indexbench")
		if err != nil {
			indexBenchLog.err = err
			return
		}
		l, err := Open(dir, Config{SegmentBytes: indexBenchSegment, Logger: quietLogger()})
		if err != nil {
			indexBenchLog.err = err
			return
		}
		batch := indexBenchBatch(b)
		for l.Size() < indexBenchSegment+32<<20 {
			if l.NumSegments() == 2 && indexBenchLog.sealed == 0 {
				indexBenchLog.sealed = l.LogEndOffset() - 1
			}
			if _, err := l.Append(batch, 1); err != nil {
				indexBenchLog.err = err
				return
			}
		}
		if err := l.Flush(); err != nil {
			indexBenchLog.err = err
			return
		}
		indexBenchLog.l = l
	})
	if indexBenchLog.err != nil {
		b.Fatal(indexBenchLog.err)
	}
	return indexBenchLog.l, indexBenchLog.sealed
}

// BenchmarkIndexRead reads 16 KiB at a random offset, in the sealed
// segment or the active one, or (sealed-seq) reads the sealed segment on
// from where the last read ended, as a catching-up consumer does; each op
// is one Read.
func BenchmarkIndexRead(b *testing.B) {
	l, sealed := openIndexBenchLog(b)
	end := l.LogEndOffset()
	for _, c := range []struct {
		name     string
		from, to int64
	}{{"sealed", 0, sealed}, {"active", sealed + 1, end}} {
		b.Run(c.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			offs := make([]int64, 4096)
			for i := range offs {
				offs[i] = c.from + r.Int64N(c.to-c.from)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := l.Read(offs[i%len(offs)], 16<<10, -1)
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Records) == 0 {
					b.Fatal("empty read")
				}
			}
		})
	}
	b.Run("sealed-seq", func(b *testing.B) {
		b.ReportAllocs()
		off := int64(0)
		for i := 0; i < b.N; i++ {
			res, err := l.Read(off, 16<<10, -1)
			if err != nil {
				b.Fatal(err)
			}
			if len(res.Records) == 0 {
				b.Fatal("empty read")
			}
			h, err := record.ParseHeader(res.Records[len(res.Records)-lastBatchSize(res.Records):])
			if err != nil {
				b.Fatal(err)
			}
			if off = h.NextOffset(); off >= sealed {
				off = 0
			}
		}
	})
}

// BenchmarkIndexHeap writes INDEX_HEAP_MIB MiB (256 by default) of single
// 1 KiB record batches into 64 MiB segments and reports the live heap the
// open log holds afterwards (after a GC), and per GiB of log.
func BenchmarkIndexHeap(b *testing.B) {
	mib := 256
	if s := os.Getenv("INDEX_HEAP_MIB"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		mib = n
	}
	for i := 0; i < b.N; i++ {
		batch := indexBenchBatch(b)
		heap := func() uint64 {
			var ms runtime.MemStats
			runtime.GC()
			runtime.GC()
			runtime.ReadMemStats(&ms)
			return ms.HeapAlloc
		}
		// Every batch a millisecond newer, so the time index grows too.
		var ms atomic.Int64
		ms.Store(1_700_000_000_000)
		now := func() time.Time { return time.UnixMilli(ms.Add(1)) }
		l, err := Open(b.TempDir(), Config{SegmentBytes: 64 << 20, LogAppendTime: true, Now: now, SegmentAge: 1 << 62, Logger: quietLogger()})
		if err != nil {
			b.Fatal(err)
		}
		before := heap()
		for l.Size() < int64(mib)<<20 {
			if _, err := l.Append(batch, 1); err != nil {
				b.Fatal(err)
			}
		}
		after := heap()
		grown := float64(after) - float64(before)
		b.ReportMetric(grown/1024, "heap_KiB")
		b.ReportMetric(grown/1024/(float64(l.Size())/(1<<30)), "heap_KiB/GiB")
		b.ReportMetric(float64(l.NumSegments()), "segments")
		runtime.KeepAlive(l)
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
