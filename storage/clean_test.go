// clean_test.go: the cleaner on a live log ((*Log).Clean, clean.go).
// It checks that cleaning runs while a goroutine appends and others read
// (a tailing consumer and full re-reads: no error, offsets increasing,
// every key's value never older than one seen before), that a read in
// flight across a swap finishes on the old files while later reads see
// the cleaned data at the same offsets, that the cleaner checkpoint
// survives a reopen and keeps a second cleaning from redoing the work,
// the dirty ratio and max.compaction.lag.ms numbers, that
// min.compaction.lag.ms keeps new segments dirty, that reads at offsets
// cleaned away return the next surviving batch, and that a crash at any
// mutating step of a live cleaning leaves a log that opens with the same
// latest-value map.

package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/actorlog/actorlog/storage/record"
)

// clnConfig is a compacted log's config whose clock reads now.
func clnConfig(segBytes int64, now int64) Config {
	cfg := cmpConfig(segBytes)
	cfg.CleanupPolicy = CleanupCompact
	cfg.DeleteRetention = cmpRetention
	cfg.Now = func() time.Time { return time.UnixMilli(now) }
	return cfg
}

// clnValue is the value of the n-th append: values of a key grow with n.
func clnValue(n int) string { return fmt.Sprintf("v%08d", n) }

// clnReader checks a stream of batches: offsets strictly increase and a
// key's value never goes back to an older one.
type clnReader struct {
	last   int64
	latest map[string]string
}

func (c *clnReader) batches(data []byte) (int64, error) {
	next := int64(-1)
	sc := record.Batches(data)
	for sc.Next() {
		h := sc.Header()
		if h.BaseOffset <= c.last {
			return next, fmt.Errorf("batch at %d after offset %d", h.BaseOffset, c.last)
		}
		rs, err := record.Records(sc.Batch(), 64<<20)
		if err != nil {
			return next, fmt.Errorf("decode batch at %d: %w", h.BaseOffset, err)
		}
		for _, r := range rs {
			if r.Offset <= c.last {
				return next, fmt.Errorf("record at %d after offset %d", r.Offset, c.last)
			}
			c.last = r.Offset
			k, v := string(r.Key), string(r.Value)
			if old, ok := c.latest[k]; ok && v < old {
				return next, fmt.Errorf("key %s at %d: value %s older than %s seen before", k, r.Offset, v, old)
			}
			c.latest[k] = v
		}
		c.last = max(c.last, h.LastOffset())
		next = h.NextOffset()
	}
	if err := sc.Err(); err != nil {
		return next, fmt.Errorf("scan: %w", err)
	}
	return next, nil
}

func TestCleanWhileAppendingAndReading(t *testing.T) {
	const nKeys, appends = 12, 1500
	cfg := clnConfig(900, cmpT0+int64(time.Hour/time.Millisecond))
	l := openLog(t, t.TempDir(), cfg)
	var written atomic.Int64 // appends done
	var swapRounds, passes atomic.Int64
	var stop atomic.Bool
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	want := map[string]string{}

	wg.Add(1)
	go func() { // the producer
		defer wg.Done()
		defer stop.Store(true)
		// At least appends appends, and on until the cleaner has swapped
		// segments in three times and the full reader read three times
		// (bounded), so the overlap does not depend on the machine's speed.
		start := time.Now()
		for n := 0; n < appends || ((swapRounds.Load() < 3 || passes.Load() < 3) && time.Since(start) < 20*time.Second); n++ {
			k := fmt.Sprintf("k%02d", n%nKeys)
			b, err := record.BuildBatch(record.CompressionNone, record.Record{Key: []byte(k), Value: []byte(clnValue(n)), Timestamp: cmpT0 + int64(n)})
			if err != nil {
				errs <- err
				return
			}
			if _, err := l.Append(b, 1); err != nil {
				errs <- fmt.Errorf("append %d: %w", n, err)
				return
			}
			want[k] = clnValue(n)
			written.Add(1)
		}
	}()
	wg.Add(1)
	go func() { // a consumer tailing the log
		defer wg.Done()
		c := &clnReader{last: -1, latest: map[string]string{}}
		off := int64(0)
		for !stop.Load() || off < l.LogEndOffset() {
			res, err := l.Read(off, 300, -1)
			if err != nil {
				errs <- fmt.Errorf("tailing read at %d: %w", off, err)
				return
			}
			if len(res.Records) == 0 {
				if off < res.LogEndOffset {
					errs <- fmt.Errorf("tailing read at %d: nothing below the log end %d", off, res.LogEndOffset)
					return
				}
				time.Sleep(100 * time.Microsecond)
				continue
			}
			next, err := c.batches(res.Records)
			if err != nil {
				errs <- fmt.Errorf("tailing read at %d: %w", off, err)
				return
			}
			off = next
		}
	}()
	wg.Add(1)
	go func() { // full re-reads: each pass's map is at least as new as the last
		defer wg.Done()
		prev := map[string]string{}
		for !stop.Load() {
			c := &clnReader{last: -1, latest: map[string]string{}}
			for off, end := int64(0), l.LogEndOffset(); off < end; {
				res, err := l.Read(off, 1000, end)
				if err == nil && len(res.Records) == 0 {
					err = errors.New("nothing read below the end")
				}
				if err != nil {
					errs <- fmt.Errorf("pass read at %d: %w", off, err)
					return
				}
				if off, err = c.batches(res.Records); err != nil {
					errs <- fmt.Errorf("pass read: %w", err)
					return
				}
			}
			for k, v := range prev {
				if c.latest[k] < v {
					errs <- fmt.Errorf("pass %d: key %s went back from %s to %s", passes.Load(), k, v, c.latest[k])
					return
				}
			}
			prev = c.latest
			passes.Add(1)
		}
	}()
	var cleaned CompactStats
	rounds := 0
	for !stop.Load() {
		st, err := l.Clean(CleanOptions{HighWatermark: -1, DedupeBufferBytes: 64 << 10})
		if err != nil {
			t.Errorf("clean: %v", err)
			break
		}
		rounds++
		if st.Groups > 0 {
			swapRounds.Add(1)
		}
		cleaned.Groups += st.Groups
		cleaned.BytesIn += st.BytesIn
		cleaned.BytesOut += st.BytesOut
		time.Sleep(2 * time.Millisecond)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	if _, err := l.Clean(CleanOptions{HighWatermark: -1}); err != nil {
		t.Fatal(err)
	}
	if swapRounds.Load() < 3 || cleaned.BytesOut >= cleaned.BytesIn {
		t.Fatalf("%d cleanings swapped %d groups (%d -> %d bytes) while appending: too little to test", rounds, cleaned.Groups, cleaned.BytesIn, cleaned.BytesOut)
	}
	if passes.Load() < 3 {
		t.Fatalf("only %d full reads ran during the appends", passes.Load())
	}
	recs, _ := cmpReadLog(t, l)
	cmpSameMap(t, cmpLatest(recs), want)
	if n := written.Load(); int64(len(recs)) >= n/2 {
		t.Fatalf("%d records left of %d appended over %d keys", len(recs), n, nKeys)
	}
	fd, err := l.FirstDirtyOffset()
	if err != nil {
		t.Fatal(err)
	}
	dir := l.Dir()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, cfg)
	defer l.Close()
	again, _ := cmpReadLog(t, l)
	if cmpRecsString(again) != cmpRecsString(recs) {
		t.Fatal("the reopened log reads differently")
	}
	if got, err := l.FirstDirtyOffset(); err != nil || got != fd {
		t.Fatalf("first dirty offset after reopen %d, %v; want %d", got, err, fd)
	}
	t.Logf("%d cleanings, %d groups, %d -> %d bytes, %d full reads; %d records left", rounds, cleaned.Groups, cleaned.BytesIn, cleaned.BytesOut, passes.Load(), len(recs))
}

// gateFS blocks ReadAt on the log's own (read-write) .log handles while
// armed, so a Read can be held in flight. The cleaner reads through
// read-only handles and is not held.
type gateFS struct {
	OSFS
	armed   atomic.Bool
	entered chan struct{} // a held read arrived
	release chan struct{}
}

func (g *gateFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := g.OSFS.OpenFile(name, flag, perm)
	if err != nil || flag&os.O_RDWR == 0 || !strings.HasSuffix(name, logSuffix) {
		return f, err
	}
	return &gateFile{File: f, g: g}, nil
}

type gateFile struct {
	File
	g *gateFS
}

func (f *gateFile) ReadAt(p []byte, off int64) (int, error) {
	if f.g.armed.CompareAndSwap(true, false) {
		f.g.entered <- struct{}{}
		<-f.g.release
	}
	return f.File.ReadAt(p, off)
}

func TestCleanReadInFlightAcrossSwap(t *testing.T) {
	g := &gateFS{entered: make(chan struct{}), release: make(chan struct{})}
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(g.release) }) }
	defer release() // never leave a read held on failure
	cfg := clnConfig(1<<20, cmpT0+1000)
	cfg.FS = g
	dir := t.TempDir()
	l := openLog(t, dir, cfg)
	defer l.Close()
	// Segment [0, 10): ten values of one key; then the active segment.
	for i := 0; i < 10; i++ {
		cmpAppend(t, l, record.CompressionNone, -1, 0, []cmpRec{{"k", cmpVal(clnValue(i)), cmpT0}})
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	cmpAppend(t, l, record.CompressionNone, -1, 0, []cmpRec{{"other", cmpVal("x"), cmpT0}})
	if err := l.closeSegmentFiles(l.segs[0]); err != nil { // so the held read opens it through the gate
		t.Fatal(err)
	}

	g.armed.Store(true)
	type readResult struct {
		res ReadResult
		err error
	}
	held := make(chan readResult, 1)
	go func() {
		res, err := l.Read(0, 1<<20, -1)
		held <- readResult{res, err}
	}()
	<-g.entered // the read holds the log's read lock, inside the old file
	cleanDone := make(chan error, 1)
	var st CompactStats
	go func() {
		var err error
		st, err = l.Clean(CleanOptions{HighWatermark: -1})
		cleanDone <- err
	}()
	// The cleaning commits (its marker) and then waits for the read.
	marker := segmentPath(dir, 0, cleanMarkerSuffix+swapSuffix)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cleaning never reached its commit point")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-cleanDone:
		t.Fatalf("the swap finished with a read in flight: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	release()
	r := <-held
	if r.err != nil {
		t.Fatalf("held read: %v", r.err)
	}
	c := &clnReader{last: -1, latest: map[string]string{}}
	if _, err := c.batches(r.res.Records); err != nil || c.last != 9 || c.latest["k"] != clnValue(9) {
		t.Fatalf("held read: last %d, %v, %v", c.last, c.latest, err)
	}
	if n := strings.Count(cmpRecsString(mustRecords(t, r.res.Records)), "k="); n != 10 {
		t.Fatalf("held read saw %d records of k, want the 10 old ones", n)
	}
	if err := <-cleanDone; err != nil {
		t.Fatal(err)
	}
	if st.Groups != 1 {
		t.Fatalf("stats %+v", st)
	}
	// After the swap: the cleaned data at the same offsets; a read at an
	// offset cleaned away returns the next surviving batch.
	for _, off := range []int64{0, 5, 9} {
		res, err := l.Read(off, 1<<20, -1)
		if err != nil {
			t.Fatal(err)
		}
		got := cmpRecsString(mustRecords(t, res.Records))
		if want := "9:k=" + clnValue(9) + "\n"; got != want { // a read stops at its segment's end
			t.Fatalf("read at %d after the swap:\n%swant\n%s", off, got, want)
		}
	}
}

// mustRecords decodes batches.
func mustRecords(t *testing.T, data []byte) []record.Record {
	t.Helper()
	var out []record.Record
	for sc := record.Batches(data); sc.Next(); {
		rs, err := record.Records(sc.Batch(), 64<<20)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rs...)
	}
	return out
}

// clnFill appends n single-record batches over nKeys keys with timestamp
// ts, rolling after every perSeg of them.
func clnFill(t *testing.T, l *Log, n, nKeys, perSeg int, ts int64) {
	t.Helper()
	for i := 0; i < n; i++ {
		cmpAppend(t, l, record.CompressionNone, -1, 0, []cmpRec{{fmt.Sprintf("k%d", i%nKeys), cmpVal(clnValue(int(l.LogEndOffset()))), ts}})
		if (i+1)%perSeg == 0 {
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestCleanCheckpointAndDirtyRatio(t *testing.T) {
	now := cmpT0 + int64(2*time.Hour/time.Millisecond)
	cfg := clnConfig(1<<20, now)
	cfg.MaxCompactionLag = 3 * time.Hour
	dir := t.TempDir()
	l := openLog(t, dir, cfg)
	clnFill(t, l, 40, 4, 10, cmpT0) // four closed segments of 10 batches, keys k0..k3
	cmpAppend(t, l, record.CompressionNone, -1, 0, []cmpRec{{"k0", cmpVal("active"), cmpT0}})

	closedBytes := func() int64 {
		l.rmu.RLock()
		defer l.rmu.RUnlock()
		var n int64
		for _, s := range l.segs[:len(l.segs)-1] {
			n += s.size.Load()
		}
		return n
	}
	info, err := l.CleanableInfo(CleanOptions{HighWatermark: -1})
	if err != nil {
		t.Fatal(err)
	}
	if info.FirstDirty != 0 || info.CleanBytes != 0 || info.DirtyBytes != closedBytes() || info.Ratio != 1 || !info.ShouldClean || info.CleanableEnd != 40 {
		t.Fatalf("before cleaning: %+v (closed bytes %d)", info, closedBytes())
	}
	if info.OldestDirtyTimestamp != cmpT0 || info.MaxLagExceeded {
		t.Fatalf("lag: %+v", info)
	}
	if got := l.DirtyRatio(); got != 1 {
		t.Fatalf("DirtyRatio %v", got)
	}
	st, err := l.Clean(CleanOptions{HighWatermark: -1})
	if err != nil {
		t.Fatal(err)
	}
	if st.EndOffset != 40 || st.Groups != 1 || st.SegmentsIn != 4 {
		t.Fatalf("clean: %+v", st)
	}
	raw, err := os.ReadFile(filepath.Join(dir, cleanerCheckpointFile))
	if err != nil || string(raw) != "0\n40\n" {
		t.Fatalf("checkpoint %q, %v", raw, err)
	}
	// The producer state snapshots of the segments cleaned away (taken
	// at their rolls: 10, 20, 30) are gone; the active segment's stays.
	if snaps, err := listSnapshots(l.fs, dir); err != nil || !slices.Equal(snaps, []int64{40}) {
		t.Fatalf("snapshots after cleaning [0, 40): %v, %v; want [40]", snaps, err)
	}
	info, err = l.CleanableInfo(CleanOptions{HighWatermark: -1})
	if err != nil {
		t.Fatal(err)
	}
	cleanBytes := closedBytes()
	if info.FirstDirty != 40 || info.DirtyBytes != 0 || info.CleanBytes != cleanBytes || info.Ratio != 0 || info.ShouldClean || info.OldestDirtyTimestamp != -1 {
		t.Fatalf("after cleaning: %+v", info)
	}
	// New dirty segments: ratio = dirty / (clean + dirty).
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	clnFill(t, l, 20, 4, 10, cmpT0+1000)
	info, err = l.CleanableInfo(CleanOptions{HighWatermark: -1})
	if err != nil {
		t.Fatal(err)
	}
	dirty := closedBytes() - cleanBytes
	if want := float64(dirty) / float64(cleanBytes+dirty); info.DirtyBytes != dirty || info.CleanBytes != cleanBytes || info.Ratio != want {
		t.Fatalf("with new dirty data: %+v, want dirty %d clean %d ratio %v", info, dirty, cleanBytes, want)
	}
	if !info.ShouldClean || info.Ratio <= 0.5 {
		t.Fatalf("ratio %v should call for a cleaning at 0.5", info.Ratio)
	}
	// The active segment's first batch (offset 40) is the oldest dirty one.
	if info.OldestDirtyTimestamp != cmpT0 {
		t.Fatalf("oldest dirty timestamp %d", info.OldestDirtyTimestamp)
	}
	later, err := l.CleanableInfo(CleanOptions{HighWatermark: -1, Now: time.UnixMilli(cmpT0 + int64(4*time.Hour/time.Millisecond))})
	if err != nil || !later.MaxLagExceeded || !later.ShouldClean {
		t.Fatalf("4 h later with a 3 h max lag: %+v, %v", later, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// The checkpoint survives a reopen: no cleaning of what is clean.
	l = openLog(t, dir, cfg)
	if fd, err := l.FirstDirtyOffset(); err != nil || fd != 40 {
		t.Fatalf("first dirty after reopen %d, %v", fd, err)
	}
	before, _ := cmpReadLog(t, l)
	st, err = l.Clean(CleanOptions{HighWatermark: -1})
	if err != nil {
		t.Fatal(err)
	}
	after, _ := cmpReadLog(t, l)
	cmpSameMap(t, cmpLatest(after), cmpLatest(before))
	if st.EndOffset != l.LogEndOffset() || st.RecordsIn == 0 {
		t.Fatalf("second cleaning: %+v, log end %d", st, l.LogEndOffset())
	}
	if st2, err := l.Clean(CleanOptions{HighWatermark: -1}); err != nil || st2.Groups != 0 || st2.RecordsIn != 0 {
		t.Fatalf("a cleaning with nothing dirty: %+v, %v", st2, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// A damaged checkpoint means cleaning from the start.
	if err := os.WriteFile(filepath.Join(dir, cleanerCheckpointFile), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, cfg)
	defer l.Close()
	if fd, err := l.FirstDirtyOffset(); err != nil || fd != 0 {
		t.Fatalf("first dirty with a damaged checkpoint %d, %v", fd, err)
	}
}

func TestCleanMinCompactionLag(t *testing.T) {
	hour := int64(time.Hour / time.Millisecond)
	now := cmpT0 + 3*hour
	cfg := clnConfig(1<<20, now)
	cfg.MinCompactionLag = time.Hour
	l := openLog(t, t.TempDir(), cfg)
	defer l.Close()
	clnFill(t, l, 20, 2, 10, cmpT0)        // [0, 20): old enough
	clnFill(t, l, 20, 2, 10, now-hour/2)   // [20, 40): younger than the lag
	clnFill(t, l, 5, 2, 100, cmpT0+2*hour) // active
	before, _ := cmpReadLog(t, l)
	info, err := l.CleanableInfo(CleanOptions{HighWatermark: -1})
	if err != nil || info.CleanableEnd != 20 {
		t.Fatalf("cleanable info %+v, %v", info, err)
	}
	st, err := l.Clean(CleanOptions{HighWatermark: -1})
	if err != nil {
		t.Fatal(err)
	}
	if st.EndOffset != 20 {
		t.Fatalf("cleaned to %d, want 20 (the lag bounds it)", st.EndOffset)
	}
	after, _ := cmpReadLog(t, l)
	if got, want := cmpRecsString(cmpInRange(after, 20, 1<<62)), cmpRecsString(cmpInRange(before, 20, 1<<62)); got != want {
		t.Fatalf("records younger than the lag changed:\n%s\nwant\n%s", got, want)
	}
	if got := cmpRecsString(cmpInRange(after, 0, 20)); got != fmt.Sprintf("18:k0=%s\n19:k1=%s\n", clnValue(18), clnValue(19)) {
		t.Fatalf("cleaned part:\n%s", got)
	}
	// A high watermark below a segment's end keeps it dirty too.
	l2 := openLog(t, t.TempDir(), clnConfig(1<<20, now))
	defer l2.Close()
	clnFill(t, l2, 30, 2, 10, cmpT0)
	st, err = l2.Clean(CleanOptions{HighWatermark: 15})
	if err != nil || st.EndOffset != 10 {
		t.Fatalf("clean below the high watermark 15: %+v, %v", st, err)
	}
	// Later, min lag passed: everything closed is cleanable.
	st, err = l.Clean(CleanOptions{HighWatermark: -1, Now: time.UnixMilli(now + 2*hour)})
	if err != nil || st.EndOffset != 40 {
		t.Fatalf("clean after the lag: %+v, %v", st, err)
	}
}

// TestCleanLiveCrashAtEveryStep: a crash (the FS dies, as at SIGKILL) at
// each mutating step of a live cleaning, with an append before it; the
// reopened log has no cleaning leftovers, the same latest-value map and
// takes appends.
func TestCleanLiveCrashAtEveryStep(t *testing.T) {
	h := cmpRandomHistory(99)
	pristine := t.TempDir()
	cfg := clnConfig(700, h.now)
	cmpWriteHistory(t, pristine, h, cfg)
	// Cleaned with larger segments: small ones merge, as in the offline
	// crash test, in fewer groups (fewer steps to crash at).
	cfg = clnConfig(2000, h.now)
	orig, _ := cmpRead(t, cmpCopyDir(t, pristine), cfg)
	run := func(dir string, fsys FS) (int, error) {
		c := cfg
		c.FS = fsys
		l, err := Open(dir, c)
		if err != nil {
			return 0, err
		}
		cmpAppend(t, l, record.CompressionNone, -1, 0, []cmpRec{{"live", cmpVal("1"), h.now}})
		opened := 0
		if cf, ok := fsys.(*cmpCrashFS); ok {
			cf.mu.Lock()
			opened = cf.ops
			cf.mu.Unlock()
		}
		_, err = l.Clean(CleanOptions{HighWatermark: -1})
		if cerr := l.Close(); cerr != nil && err == nil {
			err = cerr
		}
		return opened, err
	}
	counter := &cmpCrashFS{}
	refDir := cmpCopyDir(t, pristine)
	opened, err := run(refDir, counter)
	if err != nil {
		t.Fatal(err)
	}
	total := counter.ops
	ref, _ := cmpRead(t, refDir, cfg)
	want := cmpLatest(append(append([]record.Record(nil), orig...), record.Record{Key: []byte("live"), Value: []byte("1")}))
	cmpSameMap(t, cmpLatest(ref), want)
	if !strings.Contains(strings.Join(counter.trace, "\n"), ".clean.cleaned -> ") {
		t.Fatal("the reference cleaning swapped nothing")
	}
	points := 0
	for n := opened + 1; n <= total; n++ { // after the open and the append
		// Every step on a commit marker (writing it, the commit rename,
		// its removal); every 5th of the other steps (creating, writing,
		// fsyncing, renaming and removing segment files), to keep the
		// test short.
		at := counter.trace[n-1]
		if !strings.Contains(at, ".clean.") && n%5 != 0 {
			continue
		}
		dir := cmpCopyDir(t, pristine)
		crash := &cmpCrashFS{crashAt: n}
		if _, err := run(dir, crash); !errors.Is(err, errCmpCrashed) {
			t.Fatalf("crash at %d: %v", n, err)
		}
		points++
		l, err := Open(dir, cfg)
		if err != nil {
			t.Fatalf("crash at %d (%s): open: %v", n, at, err)
		}
		got, _ := cmpReadLog(t, l)
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), cleanedSuffix) || strings.HasSuffix(e.Name(), swapSuffix) {
				t.Fatalf("crash at %d (%s): %s left after open", n, at, e.Name())
			}
		}
		gm := cmpLatest(got)
		if gm["live"] == "1" {
			delete(gm, "live") // the append may not have been fsynced
		}
		w := cmpLatest(orig)
		cmpSameMap(t, gm, w)
		leo := l.LogEndOffset()
		if info, err := l.Append(buildBatch(t, record.CompressionNone, []record.Record{{Key: []byte("after"), Value: []byte("x"), Timestamp: h.now}}), 2); err != nil || info.FirstOffset != leo {
			t.Fatalf("crash at %d: append after recovery: %+v, %v", n, info, err)
		}
		if _, err := l.Clean(CleanOptions{HighWatermark: -1}); err != nil {
			t.Fatalf("crash at %d: cleaning after recovery: %v", n, err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if points < 25 {
		t.Fatalf("only %d crash points", points)
	}
	t.Logf("%d crash points of %d", points, total-opened)
}

// TestCleanAbortsAndResets: a truncation since the checkpoint makes the
// next cleaning start from the log start, and a swap that finds the log
// truncated under it aborts with ErrCleanAborted, changing nothing.
func TestCleanAbortsAndResets(t *testing.T) {
	cfg := clnConfig(1<<20, cmpT0+1000)
	l := openLog(t, t.TempDir(), cfg)
	defer l.Close()
	clnFill(t, l, 30, 3, 10, cmpT0)
	if st, err := l.Clean(CleanOptions{HighWatermark: -1}); err != nil || st.EndOffset != 30 {
		t.Fatalf("clean: %+v, %v", st, err)
	}
	if fd, err := l.FirstDirtyOffset(); err != nil || fd != 30 {
		t.Fatalf("first dirty %d, %v", fd, err)
	}
	before, _ := cmpReadLog(t, l)
	l.mu.Lock()
	gen := l.gen
	l.mu.Unlock()
	if err := l.swapLive(gen+1, nil, 0, 30, nil); !errors.Is(err, ErrCleanAborted) {
		t.Fatalf("swap after a truncation: %v", err)
	}
	after, _ := cmpReadLog(t, l)
	if cmpRecsString(after) != cmpRecsString(before) {
		t.Fatal("an aborted swap changed the log")
	}
	if _, err := l.TruncateTo(29); err != nil {
		t.Fatal(err)
	}
	if fd, err := l.FirstDirtyOffset(); err != nil || fd != 0 {
		t.Fatalf("first dirty after a truncation %d, %v; want the log start", fd, err)
	}
	// On disk too, with no cleaning since: a crash now must not reopen
	// with the old checkpoint (30) above the truncated end (29).
	if off, found, err := readOffsetCheckpoint(l.fs, l.dir, cleanerCheckpointFile); err != nil || !found || off > 29 {
		t.Fatalf("persisted cleaner checkpoint after truncating to 29: %d, %v, %v", off, found, err)
	}
}
