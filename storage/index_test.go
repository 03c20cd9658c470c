// index_test.go: a sealed segment's indexes live in their files, not on the
// heap, and every lookup through them (reads at any offset, offsets by
// timestamp, the max timestamp) answers as before: after rolls, after
// reopening, after truncating into a sealed segment and after a cleaning.

package storage

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/actorlog/actorlog/storage/record"
)

// indexTestConfig makes small segments with dense indexes: dozens of
// sealed segments of dozens of entries each.
func indexTestConfig(p perm) Config {
	cfg := p.config()
	cfg.SegmentBytes = 4 << 10
	cfg.IndexIntervalBytes = 128
	return cfg
}

// checkIndexHeap fails unless only the active segment's entries are in
// memory, and no more of them than its size allows.
func checkIndexHeap(t *testing.T, l *Log) {
	t.Helper()
	all, active := l.indexMemEntries()
	if all != active {
		t.Fatalf("%d index entries in memory, only %d of them the active segment's", all, active)
	}
	l.rmu.RLock()
	a := l.segs[len(l.segs)-1]
	for _, s := range l.segs[:len(l.segs)-1] {
		s.idx.mu.RLock()
		onDisk, n := s.idx.onDisk, s.idx.offsetsWritten
		s.idx.mu.RUnlock()
		if !onDisk || n == 0 {
			l.rmu.RUnlock()
			t.Fatalf("sealed segment %d: index on disk %v with %d offset entries", s.base, onDisk, n)
		}
	}
	l.rmu.RUnlock()
	if bound := 2 * int(a.size.Load()/int64(l.cfg.IndexIntervalBytes)+1); active > bound {
		t.Fatalf("active segment of %d bytes holds %d entries, want at most %d", a.size.Load(), active, bound)
	}
}

// checkLookups reads at every offset of want (records from offset first)
// one batch at a time, and looks up every record's timestamp and the max
// timestamp, through whichever segment holds them.
func checkLookups(t *testing.T, l *Log, want []record.Record, first int64) {
	t.Helper()
	for i := range want {
		off := first + int64(i)
		res, err := l.Read(off, 1, -1)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		sc := record.Batches(res.Records)
		if !sc.Next() {
			t.Fatalf("read at %d returned no batch: %v", off, sc.Err())
		}
		if h := sc.Header(); h.BaseOffset > off || h.LastOffset() < off {
			t.Fatalf("read at %d returned batch %d..%d", off, h.BaseOffset, h.LastOffset())
		}
		got, ts, ok, err := l.OffsetForTimestamp(want[i].Timestamp)
		if err != nil || !ok || got != off || ts != want[i].Timestamp {
			t.Fatalf("offset for timestamp %d = %d, %d, %v, %v; want %d", want[i].Timestamp, got, ts, ok, err, off)
		}
	}
	// Between two records' timestamps: the later one.
	if len(want) > 1 && want[1].Timestamp > want[0].Timestamp+1 {
		got, _, ok, err := l.OffsetForTimestamp(want[0].Timestamp + 1)
		if err != nil || !ok || got != first+1 {
			t.Fatalf("offset for timestamp %d = %d, %v, %v; want %d", want[0].Timestamp+1, got, ok, err, first+1)
		}
	}
	if _, _, ok, err := l.OffsetForTimestamp(want[len(want)-1].Timestamp + 1); err != nil || ok {
		t.Fatalf("offset for a timestamp past the last: found %v, %v", ok, err)
	}
	// The max timestamp below every batch boundary: within a sealed
	// segment, its walk starts at a time entry read from its file.
	for limit := first + 4; limit <= first+int64(len(want)); limit += 4 { // batch boundaries: 4 records a batch
		n := limit - first
		if n <= 0 || n > int64(len(want)) {
			continue
		}
		got, ts, ok, err := l.MaxTimestamp(limit)
		wantOff := first + n - 1 // timestamps increase with offsets
		if err != nil || !ok || got != wantOff || ts != want[n-1].Timestamp {
			t.Fatalf("max timestamp below %d = %d, %d, %v, %v; want %d, %d", limit, got, ts, ok, err, wantOff, want[n-1].Timestamp)
		}
	}
}

func TestSealedIndexesStayOffHeap(t *testing.T) {
	forAllPerms(t, func(t *testing.T, p perm) {
		cfg := indexTestConfig(p)
		dir := t.TempDir()
		l := openLog(t, dir, cfg)
		want := appendBatches(t, l, p.codec, 1, 150, 4, 10_000)
		if n := l.NumSegments(); n < 10 {
			t.Fatalf("only %d segments; the test needs many", n)
		}
		checkIndexHeap(t, l)
		checkLookups(t, l, want, 0)
		checkRecords(t, readAllRecords(t, l, 0, 5000), want, 0)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}

		// Reopened, the sealed segments load from their index files.
		l = openLog(t, dir, cfg)
		checkIndexHeap(t, l)
		checkLookups(t, l, want, 0)

		// Truncating into a sealed segment makes it active again, its
		// entries rebuilt in memory and its index files rewritten.
		l.rmu.RLock()
		mid := l.segs[len(l.segs)/2]
		l.rmu.RUnlock()
		cut := mid.base + (mid.next-mid.base)/2
		end, err := l.TruncateTo(cut)
		if err != nil {
			t.Fatal(err)
		}
		want = want[:end]
		if l.segs[len(l.segs)-1] != mid {
			t.Fatalf("truncation to %d did not end in segment %d", cut, mid.base)
		}
		checkIndexHeap(t, l)
		checkLookups(t, l, want, 0)
		more := appendBatches(t, l, p.codec, 1000, 150, 4, want[len(want)-1].Timestamp+1)
		want = append(want, more...)
		checkIndexHeap(t, l)
		checkLookups(t, l, want, 0)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = openLog(t, dir, cfg)
		checkIndexHeap(t, l)
		checkLookups(t, l, want, 0)
		checkRecords(t, readAllRecords(t, l, 0, 3000), want, 0)
	})
}

// TestSequentialReadHint reads a sealed segment on from where each read
// ended, then at offsets inside batches and backwards, so the position
// remembered from one read is used only when it is right.
func TestSequentialReadHint(t *testing.T) {
	p := allPerms()[0]
	l := openLog(t, t.TempDir(), indexTestConfig(p))
	want := appendBatches(t, l, p.codec, 1, 150, 4, 10_000)
	checkRecords(t, readAllRecords(t, l, 0, 700), want, 0)
	for _, off := range []int64{5, 4, 3, 0, 2, 9, 6} {
		res, err := l.Read(off, 700, -1)
		if err != nil {
			t.Fatal(err)
		}
		sc := record.Batches(res.Records)
		if !sc.Next() {
			t.Fatalf("read at %d returned no batch", off)
		}
		if h := sc.Header(); h.BaseOffset > off || h.LastOffset() < off {
			t.Fatalf("read at %d returned batch %d..%d", off, h.BaseOffset, h.LastOffset())
		}
	}
	// Truncation into the segment a hint points into drops the hint.
	l.rmu.RLock()
	s := l.segs[0]
	l.rmu.RUnlock()
	if _, err := l.Read(8, 1, -1); err != nil { // the hint: offset 12
		t.Fatal(err)
	}
	if _, err := l.TruncateTo(8); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.idx.hinted(12, 1<<30); ok {
		t.Fatal("a hint survived the truncation of its segment")
	}
	more := appendBatches(t, l, p.codec, 77, 3, 4, 50_000)
	checkRecords(t, readAllRecords(t, l, 0, 1), append(want[:8:8], more...), 0)
}

// TestSearchEntries checks the search of an index file against sort.Search
// over the same entries, for every target, with and without a guess (good,
// bad, out of range), across sizes around the block size.
func TestSearchEntries(t *testing.T) {
	for _, n := range []int{1, 2, 511, 512, 513, 1024, 5000} {
		r := rand.New(rand.NewPCG(uint64(n), 7))
		rels := make([]uint32, n)
		raw := make([]byte, n*offsetEntrySize)
		next := uint32(0)
		for i := range rels {
			next += 1 + uint32(r.IntN(3)*r.IntN(40)) // uneven gaps
			rels[i] = next
			binary.BigEndian.PutUint32(raw[i*offsetEntrySize:], next)
			binary.BigEndian.PutUint32(raw[i*offsetEntrySize+4:], uint32(i))
		}
		path := filepath.Join(t.TempDir(), "x.index")
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := OSFS{}.OpenFile(path, os.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := f.Close(); err != nil {
				t.Error(err)
			}
		})
		for target := uint32(0); target <= next+1; target += 1 + uint32(r.IntN(5)) {
			want := sort.Search(n, func(i int) bool { return rels[i] > target })
			for _, guess := range []int{-1, 0, n - 1, n + 10, want, r.IntN(n)} {
				got, prev, err := searchEntries(f, n, offsetEntrySize, guess, func(b []byte) bool { return binary.BigEndian.Uint32(b) > target })
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Fatalf("n=%d target %d guess %d: index %d, want %d", n, target, guess, got, want)
				}
				if (want == 0) != (prev == nil) || (prev != nil && binary.BigEndian.Uint32(prev[4:]) != uint32(want-1)) {
					t.Fatalf("n=%d target %d guess %d: previous entry %x, want entry %d", n, target, guess, prev, want-1)
				}
			}
		}
	}
}

// withSpillEntries sets spillIndexEntries for one test.
func withSpillEntries(t *testing.T, n int) {
	old := spillIndexEntries
	spillIndexEntries = n
	t.Cleanup(func() { spillIndexEntries = old })
}

// checkActiveSpilled fails unless the active segment keeps fewer than
// spillIndexEntries entries (and a batch's worth) in memory and has
// spilled some to its files.
func checkActiveSpilled(t *testing.T, l *Log) {
	t.Helper()
	_, active := l.indexMemEntries()
	l.rmu.RLock()
	a := l.segs[len(l.segs)-1]
	l.rmu.RUnlock()
	a.idx.mu.RLock()
	offBase, timeBase := a.idx.offBase, a.idx.timeBase
	a.idx.mu.RUnlock()
	if active > spillIndexEntries+2 || offBase == 0 || timeBase == 0 {
		t.Fatalf("active segment: %d entries in memory (spill at %d), %d offset and %d time entries spilled", active, spillIndexEntries, offBase, timeBase)
	}
}

// The active segment keeps only its latest index entries in memory: the
// rest are written to its files as it grows, and every lookup (reads at
// every offset, by timestamp, the max timestamp) answers through both;
// also after truncating into it, appending on and reopening.
func TestActiveIndexSpills(t *testing.T) {
	withSpillEntries(t, 40)
	for _, p := range []perm{allPerms()[0], allPerms()[3*2*2+2*2]} { // none; a codec with fsync per batch
		t.Run(p.name, func(t *testing.T) {
			cfg := indexTestConfig(p)
			cfg.SegmentBytes = 64 << 20 // one segment throughout
			dir := t.TempDir()
			l := openLog(t, dir, cfg)
			want := appendBatches(t, l, p.codec, 1, 150, 4, 10_000)
			if n := l.NumSegments(); n != 1 {
				t.Fatalf("%d segments, want 1", n)
			}
			checkActiveSpilled(t, l)
			checkLookups(t, l, want, 0)
			checkRecords(t, readAllRecords(t, l, 0, 5000), want, 0)

			// Truncation rebuilds the entries in memory; appending
			// spills them again.
			end, err := l.TruncateTo(int64(len(want) / 3))
			if err != nil {
				t.Fatal(err)
			}
			want = want[:end]
			checkLookups(t, l, want, 0)
			more := appendBatches(t, l, p.codec, 1000, 150, 4, want[len(want)-1].Timestamp+1)
			want = append(want, more...)
			checkActiveSpilled(t, l)
			checkLookups(t, l, want, 0)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			// The files hold every entry, in order: reopened, the log
			// loads them (a broken index would be rebuilt, not loaded).
			l = openLog(t, dir, cfg)
			checkLookups(t, l, want, 0)
			checkRecords(t, readAllRecords(t, l, 0, 3000), want, 0)
			more = appendBatches(t, l, p.codec, 2000, 100, 4, want[len(want)-1].Timestamp+1)
			want = append(want, more...)
			checkActiveSpilled(t, l)
			checkLookups(t, l, want, 0)
		})
	}
}

// A spill that cannot write the index files keeps the entries in memory,
// appends go on, and the next spill after the disk recovers writes them.
func TestActiveIndexSpillFailure(t *testing.T) {
	withSpillEntries(t, 40)
	p := allPerms()[0]
	cfg := indexTestConfig(p)
	cfg.SegmentBytes = 64 << 20
	fsys := &faultFS{}
	cfg.FS = fsys
	l := openLog(t, t.TempDir(), cfg)
	fsys.mu.Lock()
	fsys.failIndex = true
	fsys.mu.Unlock()
	want := appendBatches(t, l, p.codec, 1, 100, 4, 10_000)
	if _, active := l.indexMemEntries(); active <= spillIndexEntries {
		t.Fatalf("%d entries in memory although the files cannot be written", active)
	}
	checkLookups(t, l, want, 0)
	fsys.mu.Lock()
	fsys.failIndex = false
	fsys.mu.Unlock()
	more := appendBatches(t, l, p.codec, 2, 150, 4, want[len(want)-1].Timestamp+1)
	want = append(want, more...)
	checkActiveSpilled(t, l)
	checkLookups(t, l, want, 0)
	if err := l.Close(); err != nil {
		t.Fatalf("close after the disk recovered: %v", err)
	}
}
