package storage

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/actorlog/actorlog/storage/record"
)

// syncCountFS counts the durability operations the log asks for.
type syncCountFS struct {
	OSFS
	mu        sync.Mutex
	fileSyncs map[string]int // by file name
	dirSyncs  int
	renames   int
}

func newSyncCountFS() *syncCountFS { return &syncCountFS{fileSyncs: map[string]int{}} }

func (f *syncCountFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	file, err := f.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &syncCountFile{File: file, fs: f, name: filepath.Base(name)}, nil
}

func (f *syncCountFS) SyncDir(dir string) error {
	f.mu.Lock()
	f.dirSyncs++
	f.mu.Unlock()
	return f.OSFS.SyncDir(dir)
}

func (f *syncCountFS) Rename(oldpath, newpath string) error {
	f.mu.Lock()
	f.renames++
	f.mu.Unlock()
	return f.OSFS.Rename(oldpath, newpath)
}

// counts returns the file fsyncs (in all), the directory fsyncs and the
// renames so far, and starts counting again.
func (f *syncCountFS) counts() (files map[string]int, dirs, renames int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	files, dirs, renames = f.fileSyncs, f.dirSyncs, f.renames
	f.fileSyncs, f.dirSyncs, f.renames = map[string]int{}, 0, 0
	return files, dirs, renames
}

type syncCountFile struct {
	File
	fs   *syncCountFS
	name string
}

func (f *syncCountFile) Sync() error {
	f.fs.mu.Lock()
	f.fs.fileSyncs[f.name]++
	f.fs.mu.Unlock()
	return f.File.Sync()
}

// TestOpenSyncsOnlyWhatItMustMakeDurable: a new log's open fsyncs nothing
// (its files are new and empty; a topic of 1,000 partitions would
// otherwise fsync 5,000 times at once, beside the embedded etcd's WAL),
// its first flush fsyncs what was appended, and reopening a log whose
// recovery point is current does not write the checkpoint again.
func TestOpenSyncsOnlyWhatItMustMakeDurable(t *testing.T) {
	dir := t.TempDir()
	fsys := newSyncCountFS()
	cfg := Config{FS: fsys, Logger: quietLogger()}
	l := openLog(t, dir, cfg)
	if files, dirs, renames := fsys.counts(); len(files) != 0 || dirs != 0 || renames != 0 {
		t.Fatalf("opening a new log: file fsyncs %v, directory fsyncs %d, renames %d; want none", files, dirs, renames)
	}
	if err := l.Flush(); err != nil {
		t.Fatalf("flush of the empty log: %v", err)
	}
	if files, dirs, renames := fsys.counts(); len(files) != 0 || dirs != 0 || renames != 0 {
		t.Fatalf("flushing a new empty log: file fsyncs %v, directory fsyncs %d, renames %d; want none", files, dirs, renames)
	}

	want := appendBatches(t, l, record.CompressionNone, 1, 3, 5, 1_000)
	if err := l.Flush(); err != nil {
		t.Fatalf("flush: %v", err)
	}
	files, dirs, _ := fsys.counts()
	if files[segmentFileName(0, logSuffix)] == 0 || dirs == 0 {
		t.Fatalf("the first flush after appends: file fsyncs %v, directory fsyncs %d; want the segment's log file and the directory", files, dirs)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	fsys.counts()

	// Reopened after a clean close: the recovery point is the log end.
	l2 := openLog(t, dir, cfg)
	if got := l2.LogEndOffset(); got != int64(len(want)) {
		t.Fatalf("reopened log ends at %d, want %d", got, len(want))
	}
	checkRecords(t, readAllRecords(t, l2, 0, 1<<20), want, 0)
	if files, _, renames := fsys.counts(); renames != 0 {
		t.Fatalf("reopening a log with a current recovery point renamed %d files (fsyncs %v); want the checkpoint left alone", renames, files)
	}
	if err := l2.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	// A recovery point behind the log end (a crash before the flush) is
	// moved to it on open.
	if err := writeRecoveryPoint(OSFS{}, dir, 0); err != nil {
		t.Fatalf("rewind recovery point: %v", err)
	}
	fsys.counts()
	l3 := openLog(t, dir, cfg)
	files, dirs, renames := fsys.counts()
	if renames != 1 || dirs != 1 || files[segmentFileName(0, logSuffix)] == 0 {
		t.Fatalf("reopening with a stale recovery point: file fsyncs %v, directory fsyncs %d, renames %d; want the segment fsynced and the checkpoint written once", files, dirs, renames)
	}
	if rp, err := readRecoveryPoint(OSFS{}, dir); err != nil || rp != l3.LogEndOffset() {
		t.Fatalf("recovery point after open: %d (%v), want %d", rp, err, l3.LogEndOffset())
	}
}

// segmentFileName is the base name of segment base's file of suffix.
func segmentFileName(base int64, suffix string) string {
	return filepath.Base(segmentPath("", base, suffix))
}
