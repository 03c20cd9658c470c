// hwcheckpoint_bench_test.go: one checkpoint interval of 1,000 partitions'
// high watermarks, per-log files (each log writes, fsyncs and renames its
// own) against the shared checkpoint (1,000 stores and one file), with the
// fsyncs and the process's CPU time counted. Alternate the two runs:
//
//	for i in 1 2; do for v in per-log shared; do
//	  go test ./storage -run '^$' -bench "HighWatermarkCheckpointInterval/$v" -benchtime 5x
//	done; done

package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/actorlog/actorlog/storage/record"
)

// processCPU is the process's user and system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// syncCountingFS counts the fsyncs of files and directories.
type syncCountingFS struct {
	OSFS
	syncs *atomic.Int64
}

type syncCountingFile struct {
	File
	syncs *atomic.Int64
}

func (f syncCountingFile) Sync() error { f.syncs.Add(1); return f.File.Sync() }

func (fs syncCountingFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := fs.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return syncCountingFile{File: f, syncs: fs.syncs}, nil
}

func (fs syncCountingFS) SyncDir(dir string) error { fs.syncs.Add(1); return fs.OSFS.SyncDir(dir) }

// hwBenchRecords is how many records each log of the benchmark holds.
const hwBenchRecords = 100

func BenchmarkHighWatermarkCheckpointInterval(b *testing.B) {
	const partitions = 1000
	for _, shared := range []bool{false, true} {
		name := "per-log-files"
		if shared {
			name = "shared-file"
		}
		b.Run(fmt.Sprintf("%s/partitions=%d", name, partitions), func(b *testing.B) {
			dataDir := b.TempDir()
			var syncs atomic.Int64
			fsys := syncCountingFS{syncs: &syncs}
			c := NewHighWatermarkCheckpoints(fsys, dataDir, quietLogger())
			logs := make([]*Log, partitions)
			for p := range logs {
				cfg := Config{SegmentBytes: 1 << 20, Logger: quietLogger(), FS: fsys, FileIdleTimeout: -1}
				if shared {
					cfg.HighWatermarks = c.Slot("t", int32(p))
				}
				l, err := Open(filepath.Join(dataDir, fmt.Sprintf("t-%d", p)), cfg)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() {
					if err := l.Close(); err != nil {
						b.Error(err)
					}
				})
				if _, err := l.Append(buildBatch(b, record.CompressionNone, makeRecords(uint64(p), hwBenchRecords, 0)), 1); err != nil {
					b.Fatal(err)
				}
				logs[p] = l
			}
			syncs.Store(0)
			cpu0 := processCPU(b)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// Every high watermark moved up since the last interval
				// (down once in hwBenchRecords intervals).
				for _, l := range logs {
					if err := l.WriteHighWatermark(int64(1 + i%hwBenchRecords)); err != nil {
						b.Fatal(err)
					}
				}
				if err := c.Flush(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(syncs.Load())/float64(b.N), "fsyncs/interval")
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/interval")
		})
	}
}
