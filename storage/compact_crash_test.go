// compact_crash_test.go: the cleaner's swap protocol under crashes. A
// file system that "dies" at its n-th mutating operation (create, write —
// torn: half of it lands —, fsync, truncate, rename, remove, directory
// fsync; everything after fails, as after a SIGKILL, and what was done
// stays on disk) interrupts a cleaning at every one of its steps, among
// them between writing the .cleaned files and the swap, mid-rename and
// mid-deletion of the replaced segments. After each crash the log is
// reopened (Open finishes or rolls back the swap) and must: hold no
// .cleaned or .swap file; give the same latest-value map; hold, over the
// offset range of each group, either exactly the old records or exactly
// the cleaned ones, never a mix; converge to the uninterrupted cleaning's
// records when cleaned again; and take and serve a new append.

package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/actorlog/actorlog/storage/record"
)

var errCmpCrashed = errors.New("injected crash")

// cmpCrashFS fails its crashAt-th mutating operation and every one after
// (crashAt 0: never) and records the operations it let through.
type cmpCrashFS struct {
	OSFS
	mu      sync.Mutex
	crashAt int
	ops     int
	dead    bool
	trace   []string
}

// step accounts for one mutating operation: an error means it must not
// happen (or, for a write, happen only in part).
func (f *cmpCrashFS) step(op, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dead {
		return errCmpCrashed
	}
	f.ops++
	if f.crashAt > 0 && f.ops == f.crashAt {
		f.dead = true
		return errCmpCrashed
	}
	f.trace = append(f.trace, op+" "+filepath.Base(name))
	return nil
}

func (f *cmpCrashFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if flag&(os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_RDWR) != 0 {
		if err := f.step("open", name); err != nil {
			return nil, err
		}
	}
	file, err := f.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &cmpCrashFile{File: file, fs: f, name: name}, nil
}

func (f *cmpCrashFS) Remove(name string) error {
	if err := f.step("remove", name); err != nil {
		return err
	}
	return f.OSFS.Remove(name)
}

func (f *cmpCrashFS) Rename(oldpath, newpath string) error {
	if err := f.step("rename", oldpath+" -> "+filepath.Base(newpath)); err != nil {
		return err
	}
	return f.OSFS.Rename(oldpath, newpath)
}

func (f *cmpCrashFS) SyncDir(dir string) error {
	if err := f.step("syncdir", dir); err != nil {
		return err
	}
	return f.OSFS.SyncDir(dir)
}

func (f *cmpCrashFS) MkdirAll(dir string, perm os.FileMode) error {
	if err := f.step("mkdir", dir); err != nil {
		return err
	}
	return f.OSFS.MkdirAll(dir, perm)
}

type cmpCrashFile struct {
	File
	fs   *cmpCrashFS
	name string
}

func (f *cmpCrashFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	wasDead := f.fs.dead
	f.fs.mu.Unlock()
	if err := f.fs.step("write", f.name); err != nil {
		if wasDead {
			return 0, err
		}
		n, werr := f.File.WriteAt(p[:len(p)/2], off) // the crashing write is torn: half lands
		return n, errors.Join(err, werr)
	}
	return f.File.WriteAt(p, off)
}

func (f *cmpCrashFile) Sync() error {
	if err := f.fs.step("fsync", f.name); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *cmpCrashFile) Truncate(size int64) error {
	if err := f.fs.step("truncate", f.name); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

// cmpCopyDir copies the regular files of src into a new temporary dir.
func cmpCopyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		in, err := os.Open(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(filepath.Join(dst, e.Name()))
		if err != nil {
			t.Fatal(errors.Join(err, in.Close()))
		}
		_, err = io.Copy(out, in)
		if err = errors.Join(err, in.Close(), out.Close()); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// cmpInRange returns the records of recs with offsets in [from, to).
func cmpInRange(recs []record.Record, from, to int64) []record.Record {
	var out []record.Record
	for _, r := range recs {
		if r.Offset >= from && r.Offset < to {
			out = append(out, r)
		}
	}
	return out
}

func TestCompactCrashAtEveryStep(t *testing.T) {
	h := cmpRandomHistory(1234)
	cfg := cmpConfig(700)
	pristine := t.TempDir()
	cmpWriteHistory(t, pristine, h, cfg)
	opts := cmpOpts(h.now)
	opts.SegmentBytes = 1500

	orig, _ := cmpRead(t, cmpCopyDir(t, pristine), cfg)
	want := cmpLatest(orig)

	// The uninterrupted cleaning: its operations are the crash points.
	refDir := cmpCopyDir(t, pristine)
	counter := &cmpCrashFS{}
	opts.FS = counter
	st, err := CompactDir(refDir, opts)
	if err != nil {
		t.Fatal(err)
	}
	total := counter.ops
	trace := strings.Join(counter.trace, "\n")
	if total < 20 || st.Groups < 2 || st.SegmentsIn <= st.Groups {
		t.Fatalf("a cleaning of %d operations, %+v: too small to test merges and crash points", total, st)
	}
	for _, must := range []string{".log.cleaned -> ", ".clean.cleaned -> ", ".log.swap -> ", "remove "} {
		if !strings.Contains(trace, "rename "+must) && !strings.Contains(trace, must) {
			t.Fatalf("the cleaning never did %q:\n%s", must, trace)
		}
	}
	ref, _ := cmpRead(t, cmpCopyDir(t, refDir), cfg)
	segs, err := listSegmentFiles(OSFS{}, refDir)
	if err != nil {
		t.Fatal(err)
	}
	var bounds []int64 // a group's range is [bounds[i], bounds[i+1])
	for _, s := range segs {
		bounds = append(bounds, s.base)
	}
	bounds = append(bounds, 1<<62)

	for n := 1; n <= total; n++ {
		dir := cmpCopyDir(t, pristine)
		crash := &cmpCrashFS{crashAt: n}
		opts.FS = crash
		if _, err := CompactDir(dir, opts); !errors.Is(err, errCmpCrashed) {
			t.Fatalf("crash at %d: cleaning returned %v", n, err)
		}
		at := counter.trace[n-1]
		got, _ := cmpRead(t, dir, cfg) // Open recovers
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), cleanedSuffix) || strings.HasSuffix(e.Name(), swapSuffix) {
				t.Fatalf("crash at %d (%s): %s left after open", n, at, e.Name())
			}
		}
		if gm := cmpLatest(got); len(gm) != len(want) {
			t.Fatalf("crash at %d (%s): %d live keys, want %d", n, at, len(gm), len(want))
		}
		cmpSameMap(t, cmpLatest(got), want)
		for i := 0; i+1 < len(bounds); i++ {
			g := cmpRecsString(cmpInRange(got, bounds[i], bounds[i+1]))
			if g != cmpRecsString(cmpInRange(orig, bounds[i], bounds[i+1])) && g != cmpRecsString(cmpInRange(ref, bounds[i], bounds[i+1])) {
				t.Fatalf("crash at %d (%s): offsets [%d, %d) hold neither the old nor the cleaned records:\n%s", n, at, bounds[i], bounds[i+1], g)
			}
		}
		// Cleaning again reaches the uninterrupted result.
		opts.FS = nil
		if _, err := CompactDir(dir, opts); err != nil {
			t.Fatalf("crash at %d (%s): cleaning again: %v", n, at, err)
		}
		l, err := Open(dir, cfg)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := cmpReadLog(t, l)
		if a, b := cmpRecsString(again), cmpRecsString(ref); a != b {
			t.Fatalf("crash at %d (%s): cleaning again gave\n%s\nwant\n%s", n, at, a, b)
		}
		leo := l.LogEndOffset()
		info, err := l.Append(buildBatch(t, record.CompressionSnappy, []record.Record{{Key: []byte("new"), Value: []byte(fmt.Sprint(n)), Timestamp: h.now}}), 2)
		if err != nil || info.FirstOffset != leo {
			t.Fatalf("crash at %d: append after recovery: %+v, %v", n, info, err)
		}
		after, _ := cmpReadLog(t, l)
		if last := after[len(after)-1]; last.Offset != leo || string(last.Value) != fmt.Sprint(n) {
			t.Fatalf("crash at %d: last record %d %q after append at %d", n, last.Offset, last.Value, leo)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d crash points over %d groups (%d segments merged)", total, st.Groups, st.SegmentsIn)
}
