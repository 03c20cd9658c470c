// corruption_test.go: damage on disk, then reopen — a torn tail of the
// active segment is cut off, a flipped bit in a sealed segment is reported
// (never served), and deleted or garbled indexes are rebuilt.

package storage

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/actorlog/actorlog/storage/record"
)

// batchPositions returns the position and header of every batch in a segment file.
func batchPositions(t *testing.T, path string) ([]int64, []record.Header) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pos []int64
	var hs []record.Header
	for at := 0; at < len(data); {
		h, err := record.CheckFrame(data[at:])
		if err != nil {
			t.Fatalf("%s at %d: %v", path, at, err)
		}
		pos, hs = append(pos, int64(at)), append(hs, h)
		at += h.Size()
	}
	return pos, hs
}

// sealedAndActive fills a log with a sealed segment and an active one.
func sealedAndActive(t *testing.T, dir string, p perm) (want []record.Record, active int64) {
	t.Helper()
	l := openLog(t, dir, p.config())
	want = appendBatches(t, l, p.codec, 1, 12, 10, 0)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	active = l.LogEndOffset()
	want = append(want, appendBatches(t, l, p.codec, 50, 6, 10, 0)...)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return want, active
}

func TestRecoverTornTail(t *testing.T) {
	forAllPerms(t, func(t *testing.T, p perm) {
		for _, tc := range []struct {
			name   string
			damage func(t *testing.T, path string, size int64)
		}{
			{"cut mid-batch", func(t *testing.T, path string, size int64) {
				if err := os.Truncate(path, size-17); err != nil {
					t.Fatal(err)
				}
			}},
			{"cut mid-header", func(t *testing.T, path string, size int64) {
				pos, _ := batchPositions(t, path)
				if err := os.Truncate(path, pos[len(pos)-1]+20); err != nil {
					t.Fatal(err)
				}
			}},
			{"zeros after the last batch", func(t *testing.T, path string, size int64) {
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if _, err := f.Write(make([]byte, 4096)); err != nil {
					t.Fatal(err)
				}
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				dir := t.TempDir()
				want, active := sealedAndActive(t, dir, p)
				l := openLog(t, dir, p.config())
				last := l.LogEndOffset()
				segs := l.NumSegments()
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				path := lastSegmentPath(t, dir)
				st, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				tc.damage(t, path, st.Size())
				l2 := openLog(t, dir, p.config())
				wantEnd := last
				if tc.name != "zeros after the last batch" {
					wantEnd = last - 10 // the torn batch is gone
				}
				if l2.LogEndOffset() != wantEnd || l2.NumSegments() != segs {
					t.Fatalf("after recovery: end %d (want %d), segments %d (want %d), active base %d", l2.LogEndOffset(), wantEnd, l2.NumSegments(), segs, active)
				}
				checkRecords(t, readAllRecords(t, l2, 0, 1<<20), want[:wantEnd], 0)
				more := appendBatches(t, l2, p.codec, 77, 2, 10, 0)
				checkRecords(t, readAllRecords(t, l2, wantEnd, 1<<20), more, wantEnd)
			})
		}
	})
}

func lastSegmentPath(t *testing.T, dir string) string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(matches) == 0 {
		t.Fatalf("no segments in %s: %v", dir, err)
	}
	return matches[len(matches)-1] // zero-padded names sort by offset
}

func TestBitFlipInSealedSegmentIsReported(t *testing.T) {
	forAllPerms(t, func(t *testing.T, p perm) {
		dir := t.TempDir()
		want, _ := sealedAndActive(t, dir, p)
		first := segmentPath(dir, 0, logSuffix)
		pos, hs := batchPositions(t, first)
		victim := len(pos) / 2
		data, err := os.ReadFile(first)
		if err != nil {
			t.Fatal(err)
		}
		data[pos[victim]+record.HeaderSize+3] ^= 0x04
		if err := os.WriteFile(first, data, 0o644); err != nil {
			t.Fatal(err)
		}
		l := openLog(t, dir, p.config())
		bad := hs[victim].BaseOffset
		// Everything before the damage reads back.
		checkRecords(t, readAllRecordsUntil(t, l, 0, bad), want[:bad], 0)
		// The damaged batch is reported, not served, whichever way it is asked for.
		for _, off := range []int64{bad, bad + 5} {
			if _, err := l.Read(off, 1<<20, -1); !errors.Is(err, ErrCorruptLog) {
				t.Fatalf("read at %d: %v, want ErrCorruptLog", off, err)
			}
		}
		// A read that starts before it stops short of it.
		res, err := l.Read(0, 1<<30, -1)
		if err != nil {
			t.Fatal(err)
		}
		sc := record.Batches(res.Records)
		for sc.Next() {
			if h := sc.Header(); h.LastOffset() >= bad {
				t.Fatalf("read served batch %d..%d, which holds the flipped bit", h.BaseOffset, h.LastOffset())
			}
		}
		// The batches after it are still there.
		next := hs[victim].NextOffset()
		checkRecords(t, readAllRecordsUntil(t, l, next, l.LogEndOffset()), want[next:], next)
	})
}

// readAllRecordsUntil reads records in [from, until).
func readAllRecordsUntil(t *testing.T, l *Log, from, until int64) []record.Record {
	t.Helper()
	var out []record.Record
	for off := from; off < until; {
		res, err := l.Read(off, 512, until)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		sc := record.Batches(res.Records)
		for sc.Next() {
			recs, err := record.Records(sc.Batch(), 1<<26)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if r.Offset >= off && r.Offset < until {
					out = append(out, r)
				}
			}
			h := sc.Header()
			off = h.NextOffset()
		}
	}
	return out
}

func TestDamagedIndexesAreRebuilt(t *testing.T) {
	damages := []struct {
		name   string
		damage func(t *testing.T, dir string)
	}{
		{"offset index deleted", func(t *testing.T, dir string) {
			mustRemove(t, segmentPath(dir, 0, indexSuffix))
		}},
		{"time index deleted", func(t *testing.T, dir string) {
			mustRemove(t, segmentPath(dir, 0, timeIndexSuffix))
		}},
		{"both deleted", func(t *testing.T, dir string) {
			mustRemove(t, segmentPath(dir, 0, indexSuffix))
			mustRemove(t, segmentPath(dir, 0, timeIndexSuffix))
		}},
		{"offset index garbled", func(t *testing.T, dir string) {
			garble(t, segmentPath(dir, 0, indexSuffix))
		}},
		{"time index garbled", func(t *testing.T, dir string) {
			garble(t, segmentPath(dir, 0, timeIndexSuffix))
		}},
		{"offset index torn", func(t *testing.T, dir string) {
			path := segmentPath(dir, 0, indexSuffix)
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, st.Size()-3); err != nil {
				t.Fatal(err)
			}
		}},
		{"time index cut to a shorter valid one", func(t *testing.T, dir string) {
			if err := os.Truncate(segmentPath(dir, 0, timeIndexSuffix), timeEntrySize); err != nil {
				t.Fatal(err)
			}
		}},
		{"active segment indexes deleted", func(t *testing.T, dir string) {
			path := lastSegmentPath(t, dir)
			mustRemove(t, path[:len(path)-len(logSuffix)]+indexSuffix)
			mustRemove(t, path[:len(path)-len(logSuffix)]+timeIndexSuffix)
		}},
	}
	forAllPerms(t, func(t *testing.T, p perm) {
		for _, d := range damages {
			t.Run(d.name, func(t *testing.T) {
				dir := t.TempDir()
				l := openLog(t, dir, p.config())
				want := appendBatches(t, l, p.codec, 1, 15, 10, 10_000)
				if err := l.Roll(); err != nil {
					t.Fatal(err)
				}
				want = append(want, appendBatches(t, l, p.codec, 99, 3, 10, 10_150)...)
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				d.damage(t, dir)
				l2 := openLog(t, dir, p.config())
				checkRecords(t, readAllRecords(t, l2, 0, 300), want, 0)
				for _, ts := range []int64{10_000, 10_077, 10_149, 10_150, 10_179} {
					off, _, found, err := l2.OffsetForTimestamp(ts)
					if err != nil || !found || off != ts-10_000 {
						t.Fatalf("offset for ts %d: %d %v %v", ts, off, found, err)
					}
				}
				for _, suffix := range []string{indexSuffix, timeIndexSuffix} {
					if st, err := os.Stat(segmentPath(dir, 0, suffix)); err != nil || st.Size() == 0 {
						t.Fatalf("index %s not rebuilt: %v", suffix, err)
					}
				}
			})
		}
	})
}

func mustRemove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

func garble(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) == 0 {
		data = make([]byte, 24)
	}
	for i := range data {
		data[i] = byte(i*131 + 7)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
