// log_test.go: behaviour of the log under every configuration permutation:
// append and read back, reopen, read limits, bad input, truncation,
// replicated appends, timestamps, rolling and concurrency.

package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/actorlog/actorlog/storage/record"
)

func TestAppendReadReopen(t *testing.T) {
	forAllPerms(t, func(t *testing.T, p perm) {
		dir := t.TempDir()
		l := openLog(t, dir, p.config())
		want := appendBatches(t, l, p.codec, 1, 40, 25, 1_000)
		if got := l.LogEndOffset(); got != 1000 {
			t.Fatalf("log end offset %d, want 1000", got)
		}
		for _, maxBytes := range []int{1, 700, 1 << 20} {
			checkRecords(t, readAllRecords(t, l, 0, maxBytes), want, 0)
		}
		// A read from the middle of a batch returns the batch holding it.
		res, err := l.Read(510, 1, -1)
		if err != nil {
			t.Fatal(err)
		}
		h, err := record.ParseHeader(res.Records)
		if err != nil || h.BaseOffset != 500 || h.LastOffset() != 524 {
			t.Fatalf("read at 510: header %+v, err %v; want batch 500..524", h, err)
		}
		if p.segBytes == 4096 && l.NumSegments() < 5 {
			t.Fatalf("tiny segments: want many segments, got %d", l.NumSegments())
		}
		segs := l.NumSegments()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l2 := openLog(t, dir, p.config())
		if l2.LogEndOffset() != 1000 || l2.NumSegments() != segs {
			t.Fatalf("after reopen: end %d segments %d, want 1000 and %d", l2.LogEndOffset(), l2.NumSegments(), segs)
		}
		checkRecords(t, readAllRecords(t, l2, 0, 4096), want, 0)
		more := appendBatches(t, l2, p.codec, 100, 4, 10, 50_000)
		checkRecords(t, readAllRecords(t, l2, 1000, 4096), more, 1000)
	})
}

func TestReadLimits(t *testing.T) {
	l := openLog(t, t.TempDir(), Config{SegmentBytes: 1 << 20})
	big := makeRecords(7, 1, 0)
	big[0].Value = bytes.Repeat([]byte("x"), 300_000)
	appendBatches(t, l, record.CompressionNone, 1, 3, 10, 0) // offsets 0..29
	if _, err := l.Append(buildBatch(t, record.CompressionNone, big), 1); err != nil {
		t.Fatal(err) // offset 30
	}
	appendBatches(t, l, record.CompressionNone, 2, 1, 10, 0) // 31..40

	tests := []struct {
		name      string
		offset    int64
		maxBytes  int
		maxOffset int64
		wantFirst int64 // base offset of the first batch, -1 for none
		wantLast  int64 // last offset of the last batch
		wantErr   error
	}{
		{"first batch whole even when larger than maxBytes", 30, 10, -1, 30, 30, nil},
		{"maxBytes zero still returns a batch", 0, 0, -1, 0, 9, nil},
		{"batches are never split", 0, 1000, -1, 0, 9, nil},
		{"high watermark excludes later batches", 0, 1 << 20, 20, 0, 19, nil},
		{"at high watermark nothing", 20, 1 << 20, 20, -1, 0, nil},
		{"at log end nothing", 41, 1 << 20, -1, -1, 0, nil},
		{"past log end", 42, 100, -1, -1, 0, ErrOffsetOutOfRange},
		{"negative offset", -1, 100, -1, -1, 0, ErrOffsetOutOfRange},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := l.Read(tc.offset, tc.maxBytes, tc.maxOffset)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if tc.wantFirst < 0 {
				if len(res.Records) != 0 {
					t.Fatalf("got %d bytes, want none", len(res.Records))
				}
				return
			}
			sc := record.Batches(res.Records)
			first, last := int64(-1), int64(-1)
			for sc.Next() {
				h := sc.Header()
				if first < 0 {
					first = h.BaseOffset
				}
				last = h.LastOffset()
			}
			if sc.Consumed() != len(res.Records) || first != tc.wantFirst || last != tc.wantLast {
				t.Fatalf("got batches %d..%d (%d of %d bytes whole), want %d..%d", first, last, sc.Consumed(), len(res.Records), tc.wantFirst, tc.wantLast)
			}
		})
	}
}

func TestAppendRejectsBadInput(t *testing.T) {
	forAllPerms(t, testAppendRejectsBadInput)
}

func testAppendRejectsBadInput(t *testing.T, p perm) {
	cfg := p.config()
	cfg.MaxMessageBytes = 4096
	l := openLog(t, t.TempDir(), cfg)
	appendBatches(t, l, p.codec, 1, 2, 5, 0)
	good := buildBatch(t, p.codec, makeRecords(3, 5, 0))

	flipped := bytes.Clone(good)
	flipped[len(flipped)-3] ^= 0x10
	badMagic := bytes.Clone(good)
	badMagic[16] = 1
	empty := bytes.Clone(good[:record.HeaderSize])
	empty[8], empty[9], empty[10], empty[11] = 0, 0, 0, record.HeaderSize-record.LogOverhead
	empty[57], empty[58], empty[59], empty[60] = 0, 0, 0, 0
	empty[23], empty[24], empty[25], empty[26] = 0, 0, 0, 0
	fixCRC(empty)
	wrongCount := buildBatch(t, record.CompressionNone, makeRecords(3, 5, 0))
	wrongCount[60]++ // says 6 records, holds 5
	wrongCount[26]++ // keep last offset delta consistent with the count
	fixCRC(wrongCount)
	huge := buildBatch(t, record.CompressionNone, []record.Record{{Value: bytes.Repeat([]byte("z"), 5000)}})

	tests := []struct {
		name    string
		batch   []byte
		wantErr error
	}{
		{"nil", nil, ErrInvalidBatch},
		{"garbage", []byte("this is not a record batch at all, not even close to one......"), ErrInvalidBatch},
		{"truncated", good[:len(good)-1], ErrInvalidBatch},
		{"trailing bytes", append(bytes.Clone(good), 0), ErrInvalidBatch},
		{"flipped bit", flipped, record.ErrChecksum},
		{"magic 1", badMagic, record.ErrMagic},
		{"no records", empty, record.ErrEmptyBatch},
		{"count mismatch", wrongCount, record.ErrCorrupt},
		{"over max.message.bytes", huge, ErrRecordTooLarge},
	}
	size, leo := l.Size(), l.LogEndOffset()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := l.Append(tc.batch, 1)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if l.Size() != size || l.LogEndOffset() != leo {
				t.Fatalf("log changed: size %d->%d, end %d->%d", size, l.Size(), leo, l.LogEndOffset())
			}
		})
	}
	if l.Err() != nil {
		t.Fatalf("bad input made the log fail: %v", l.Err())
	}
	if _, err := l.Append(good, 1); err != nil {
		t.Fatalf("good batch after bad ones: %v", err)
	}
}

func fixCRC(b []byte) {
	c := record.Checksum(b)
	b[17], b[18], b[19], b[20] = byte(c>>24), byte(c>>16), byte(c>>8), byte(c)
}

func TestOffsetForTimestamp(t *testing.T) {
	forAllPerms(t, func(t *testing.T, p perm) {
		l := openLog(t, t.TempDir(), p.config())
		appendBatches(t, l, p.codec, 1, 30, 10, 10_000) // offset o has timestamp 10000+o
		tests := []struct {
			ts, wantOff int64
			found       bool
		}{
			{0, 0, true},
			{10_000, 0, true},
			{10_005, 5, true},
			{10_123, 123, true},
			{10_299, 299, true},
			{10_300, -1, false},
		}
		for _, tc := range tests {
			off, ts, found, err := l.OffsetForTimestamp(tc.ts)
			if err != nil {
				t.Fatal(err)
			}
			if found != tc.found || off != tc.wantOff || (found && ts != 10_000+off) {
				t.Fatalf("ts %d: got offset %d ts %d found %v, want %d %v", tc.ts, off, ts, found, tc.wantOff, tc.found)
			}
		}
	})
}

func TestRollBySizeAndAge(t *testing.T) {
	clock := newFakeClock()
	l := openLog(t, t.TempDir(), Config{SegmentBytes: 1 << 20, SegmentAge: time.Hour, Now: clock.Now})
	now := clock.Millis()
	appendBatches(t, l, record.CompressionNone, 1, 3, 5, now)
	if l.NumSegments() != 1 {
		t.Fatalf("segments %d, want 1", l.NumSegments())
	}
	clock.Advance(2 * time.Hour)
	appendBatches(t, l, record.CompressionNone, 2, 1, 5, clock.Millis())
	if l.NumSegments() != 2 {
		t.Fatalf("after segment.ms passed: segments %d, want 2", l.NumSegments())
	}
	entries, err := os.ReadDir(l.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	for _, want := range []string{"00000000000000000000.log", "00000000000000000000.index", "00000000000000000000.timeindex", "00000000000000000015.log"} {
		if !containsString(names, want) {
			t.Fatalf("missing %s in %v", want, names)
		}
	}
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func TestTruncateTo(t *testing.T) {
	forAllPerms(t, func(t *testing.T, p perm) {
		dir := t.TempDir()
		l := openLog(t, dir, p.config())
		want := appendBatches(t, l, p.codec, 1, 20, 10, 0) // epoch 1: 0..199
		if err := l.AssignEpoch(2, 200); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5; i++ {
			if _, err := l.Append(buildBatch(t, p.codec, makeRecords(50+uint64(i), 10, 0)), 2); err != nil {
				t.Fatal(err)
			}
		}
		// Truncating inside a batch cuts at the batch start.
		end, err := l.TruncateTo(125)
		if err != nil || end != 120 {
			t.Fatalf("truncate to 125: end %d err %v, want 120", end, err)
		}
		if got := l.EpochEntries(); len(got) != 1 || got[0] != (EpochEntry{1, 0}) {
			t.Fatalf("epochs after truncation %v, want [{1 0}]", got)
		}
		if _, err := l.Read(121, 100, -1); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("read past new end: %v", err)
		}
		more := appendBatches(t, l, p.codec, 99, 3, 10, 0)
		all := append(want[:120:120], more...)
		checkRecords(t, readAllRecords(t, l, 0, 1000), all, 0)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l2 := openLog(t, dir, p.config())
		checkRecords(t, readAllRecords(t, l2, 0, 1000), all, 0)
		// Truncating below the log start empties the log and restarts it.
		if err := l2.TruncateFullyAndStartAt(5000); err != nil {
			t.Fatal(err)
		}
		if l2.LogStartOffset() != 5000 || l2.LogEndOffset() != 5000 || l2.NumSegments() != 1 || len(l2.EpochEntries()) != 0 {
			t.Fatalf("after full truncation: start %d end %d segments %d epochs %v", l2.LogStartOffset(), l2.LogEndOffset(), l2.NumSegments(), l2.EpochEntries())
		}
		more = appendBatches(t, l2, p.codec, 7, 2, 10, 0)
		checkRecords(t, readAllRecords(t, l2, 5000, 1000), more, 5000)
	})
}

func TestEpochCheckpoint(t *testing.T) {
	forAllPerms(t, testEpochCheckpoint)
}

func testEpochCheckpoint(t *testing.T, p perm) {
	dir := t.TempDir()
	l := openLog(t, dir, p.config())
	for epoch, n := range []int{3, 4, 0, 5} { // epoch 2 writes nothing
		for i := 0; i < n; i++ {
			if _, err := l.Append(buildBatch(t, p.codec, makeRecords(1, 10, 0)), int32(epoch)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// epoch 0: 0..29, epoch 1: 30..69, epoch 3: 70..119
	tests := []struct {
		epoch     int32
		wantEpoch int32
		wantEnd   int64
	}{
		{0, 0, 30},
		{1, 1, 70},
		{2, 1, 70}, // unknown epoch between: the largest known below it
		{3, 3, 120},
		{4, -1, -1}, // newer than any
		{-1, -1, -1},
	}
	check := func(l *Log) {
		t.Helper()
		for _, tc := range tests {
			e, off := l.EndOffsetForEpoch(tc.epoch)
			if e != tc.wantEpoch || off != tc.wantEnd {
				t.Fatalf("epoch %d: got (%d, %d), want (%d, %d)", tc.epoch, e, off, tc.wantEpoch, tc.wantEnd)
			}
		}
	}
	check(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openLog(t, dir, p.config())
	check(l2)
	if e, ok := l2.LatestEpoch(); !ok || e != 3 {
		t.Fatalf("latest epoch %d %v, want 3", e, ok)
	}
	// A garbled checkpoint is a clear error, not a silent reset.
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, epochCheckpointFile), []byte("0\n7\n1 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Config{Logger: quietLogger()}); !errors.Is(err, ErrCorruptCheckpoint) {
		t.Fatalf("open with garbled epoch checkpoint: %v, want ErrCorruptCheckpoint", err)
	}
}

func TestAppendReplicated(t *testing.T) {
	forAllPerms(t, testAppendReplicated)
}

func testAppendReplicated(t *testing.T, p perm) {
	leader := openLog(t, t.TempDir(), Config{})
	follower := openLog(t, t.TempDir(), p.config())
	want := appendBatches(t, leader, p.codec, 1, 30, 10, 0)
	replicateAll(t, leader, follower)
	checkRecords(t, readAllRecords(t, follower, 0, 1000), want, 0)
	if e, ok := follower.LatestEpoch(); !ok || e != 1 {
		t.Fatalf("follower epoch %d %v, want 1", e, ok)
	}
	// Re-sending old batches, or a corrupt one, changes nothing.
	res, err := leader.Read(0, 1000, -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := follower.AppendReplicated(res.Records); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("overlapping append: %v, want ErrInvalidBatch", err)
	}
	bad := buildBatch(t, record.CompressionNone, makeRecords(1, 3, 0))
	record.SetBaseOffset(bad, follower.LogEndOffset())
	bad[len(bad)-1] ^= 1
	if _, err := follower.AppendReplicated(bad); !errors.Is(err, record.ErrChecksum) {
		t.Fatalf("corrupt replicated batch: %v, want ErrChecksum", err)
	}
	if follower.LogEndOffset() != 300 {
		t.Fatalf("follower end %d, want 300", follower.LogEndOffset())
	}
}

func TestStickyWriteError(t *testing.T) {
	for _, mode := range []string{"write", "fsync"} {
		t.Run(mode, func(t *testing.T) {
			fsys := &faultFS{}
			dir := t.TempDir()
			l := openLog(t, dir, Config{FS: fsys, Flush: FlushPolicy{Mode: FlushEveryBatch}})
			want := appendBatches(t, l, record.CompressionNone, 1, 3, 5, 0)
			fsys.set(mode == "write", mode == "fsync")
			if _, err := l.Append(buildBatch(t, record.CompressionNone, makeRecords(9, 5, 0)), 1); !errors.Is(err, errInjected) {
				t.Fatalf("append with failing %s: %v", mode, err)
			}
			fsys.set(false, false)
			// The fault is gone, but the log stays failed.
			for i := 0; i < 2; i++ {
				if _, err := l.Append(buildBatch(t, record.CompressionNone, makeRecords(10, 5, 0)), 1); !errors.Is(err, errInjected) {
					t.Fatalf("append after failure: %v, want the sticky error", err)
				}
			}
			if _, err := l.TruncateTo(0); !errors.Is(err, errInjected) {
				t.Fatalf("truncate after failure: %v", err)
			}
			// What was acknowledged is still readable.
			checkRecords(t, readAllRecords(t, l, 0, 1<<20)[:15], want, 0)
			_ = l.Close() // reports the sticky error
			l2 := openLog(t, dir, Config{})
			got := readAllRecords(t, l2, 0, 1<<20)
			if mode == "write" {
				checkRecords(t, got, want, 0) // the torn half is gone
			} else if len(got) < 15 {
				t.Fatalf("after reopen: %d records, want >= 15", len(got))
			}
		})
	}
}

func TestConcurrentReadsDuringAppends(t *testing.T) {
	forAllPerms(t, testConcurrentReadsDuringAppends)
}

func testConcurrentReadsDuringAppends(t *testing.T, p perm) {
	l := openLog(t, t.TempDir(), p.config())
	const batches = 300
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	done := make(chan struct{})
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			off := int64(0)
			for {
				select {
				case <-done:
					return
				default:
				}
				res, err := l.Read(off, 2048, -1)
				if errors.Is(err, ErrOffsetOutOfRange) && off > res.LogEndOffset {
					off = res.LogEndOffset // truncated under us, as a follower would see
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				sc := record.Batches(res.Records)
				for sc.Next() {
					h := sc.Header()
					if h.LastOffset() < off {
						errs <- errors.New("read went backwards")
						return
					}
					if _, err := record.Records(sc.Batch(), 1<<20); err != nil {
						errs <- err
						return
					}
					off = h.NextOffset()
				}
			}
		}()
	}
	for i := 0; i < batches; i++ {
		if _, err := l.Append(buildBatch(t, p.codec, makeRecords(uint64(i), 5, time.Now().UnixMilli())), 1); err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 {
			if _, err := l.TruncateTo(l.LogEndOffset() - 3); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(done)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatalf("concurrent reader: %v", err)
	default:
	}
}

func TestCloseThenUse(t *testing.T) {
	l := openLog(t, t.TempDir(), Config{})
	appendBatches(t, l, record.CompressionNone, 1, 1, 3, 0)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(buildBatch(t, record.CompressionNone, makeRecords(1, 1, 0)), 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
	if _, err := l.Read(0, 100, -1); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after close: %v", err)
	}
}

func TestInvalidConfig(t *testing.T) {
	for _, cfg := range []Config{
		{SegmentBytes: 10},
		{SegmentBytes: 1 << 40},
		{MaxMessageBytes: 3},
		{Flush: FlushPolicy{Mode: FlushInterval}},
		{SegmentAge: -time.Second},
		{ProducerIDExpiration: -time.Hour},
	} {
		if _, err := Open(t.TempDir(), cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Fatalf("config %+v: %v, want ErrInvalidConfig", cfg, err)
		}
	}
	for in, want := range map[string]FlushPolicy{"never": {}, "batch": {Mode: FlushEveryBatch}, "250ms": {Mode: FlushInterval, Interval: 250 * time.Millisecond}} {
		got, err := ParseFlushPolicy(in)
		if err != nil || got != want {
			t.Fatalf("ParseFlushPolicy(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseFlushPolicy("sometimes"); err == nil {
		t.Fatal("ParseFlushPolicy accepted garbage")
	}
}

// TestStuckReadDoesNotBlockAppends holds a read of a sealed segment inside
// its ReadAt and checks that appends (and rolls) proceed meanwhile.
func TestStuckReadDoesNotBlockAppends(t *testing.T) {
	fsys := &faultFS{}
	l := openLog(t, t.TempDir(), Config{FS: fsys})
	appendBatches(t, l, record.CompressionNone, 1, 5, 10, 0)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	gate, reading := make(chan struct{}), make(chan struct{}, 1)
	fsys.mu.Lock()
	fsys.readGate, fsys.reading = gate, reading
	fsys.mu.Unlock()
	readDone := make(chan error, 1)
	go func() {
		_, err := l.Read(0, 1<<20, -1)
		readDone <- err
	}()
	<-reading // the reader is stuck inside the sealed segment's ReadAt
	appended := make(chan error, 1)
	go func() {
		for i := 0; i < 20; i++ {
			if _, err := l.Append(buildBatch(t, record.CompressionNone, makeRecords(uint64(i), 10, 0)), 1); err != nil {
				appended <- err
				return
			}
		}
		appended <- nil
	}()
	select {
	case err := <-appended:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("appends blocked behind a stuck read of a sealed segment")
	}
	fsys.mu.Lock()
	fsys.readGate = nil
	fsys.mu.Unlock()
	close(gate)
	if err := <-readDone; err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 250 {
		t.Fatalf("log end %d, want 250", l.LogEndOffset())
	}
}

// TestLargeBadBatchLeavesNoTrace covers batches big enough that their body
// is checked while they are written: a refused one must leave neither bytes
// on disk nor a change in the log, and must not roll a segment.
func TestLargeBadBatchLeavesNoTrace(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Config{MaxMessageBytes: 4 << 20})
	want := appendBatches(t, l, record.CompressionNone, 1, 2, 5, 0)
	recs := makeRecords(5, 3000, 0)
	good := buildBatch(t, record.CompressionNone, recs)
	if len(good) < ParallelValidateBytes {
		t.Fatalf("batch of %d bytes is below the parallel check size", len(good))
	}
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 1
	miscounted := bytes.Clone(good)
	miscounted[record.HeaderSize] = 0x7e // first record's length prefix: 63, not what it is
	fixCRC(miscounted)
	segFile := lastSegmentPath(t, dir)
	before, err := os.Stat(segFile)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"flipped bit": flipped, "bad record framing": miscounted} {
		if _, err := l.Append(b, 1); !errors.Is(err, ErrInvalidBatch) {
			t.Fatalf("%s: %v, want ErrInvalidBatch", name, err)
		}
		after, err := os.Stat(segFile)
		if err != nil {
			t.Fatal(err)
		}
		if after.Size() != before.Size() || l.LogEndOffset() != 10 || l.NumSegments() != 1 {
			t.Fatalf("%s: file %d->%d bytes, end %d, segments %d", name, before.Size(), after.Size(), l.LogEndOffset(), l.NumSegments())
		}
	}
	if _, err := l.Append(good, 1); err != nil {
		t.Fatal(err)
	}
	checkRecords(t, readAllRecords(t, l, 0, 1<<20), append(want, recs...), 0)
}

// A follower appending a fetch of many batches writes each run of them
// that fits its active segment in one write, and ends with the same files
// as one appending them one at a time: same segments, same bytes, same
// indexes.
func TestAppendReplicatedWritesRunsAtOnce(t *testing.T) {
	cfg := Config{SegmentBytes: 8 << 10, IndexIntervalBytes: 1 << 10}
	leader := openLog(t, t.TempDir(), cfg)
	want := appendBatches(t, leader, record.CompressionNone, 1, 60, 10, 1_000)
	var all []byte
	for off := int64(0); off < leader.LogEndOffset(); {
		res, err := leader.Read(off, 1<<20, -1)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, res.Records...)
		for sc := record.Batches(res.Records); sc.Next(); {
			h, err := record.CheckFrame(sc.Batch())
			if err != nil {
				t.Fatal(err)
			}
			off = h.NextOffset()
		}
	}
	bulkFS, singleFS := &faultFS{}, &faultFS{}
	bulkCfg, singleCfg := cfg, cfg
	bulkCfg.FS, singleCfg.FS = bulkFS, singleFS
	bulkDir, singleDir := t.TempDir(), t.TempDir()
	bulk, single := openLog(t, bulkDir, bulkCfg), openLog(t, singleDir, singleCfg)
	if _, err := bulk.AppendReplicated(all); err != nil {
		t.Fatal(err)
	}
	for sc := record.Batches(all); sc.Next(); {
		if _, err := single.AppendReplicated(sc.Batch()); err != nil {
			t.Fatal(err)
		}
	}
	segs := len(bulk.segs)
	if segs < 5 {
		t.Fatalf("%d segments; the test wants several rolls inside one fetch", segs)
	}
	if bulkFS.logWrites != segs || singleFS.logWrites != 60 {
		t.Fatalf("writes to .log files: %d for one fetch of 60 batches over %d segments (want one per segment), %d one by one (want 60)",
			bulkFS.logWrites, segs, singleFS.logWrites)
	}
	checkRecords(t, readAllRecords(t, bulk, 0, 1<<20), want, 0)
	for _, l := range []*Log{bulk, single} {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	sameFiles(t, singleDir, bulkDir)
}

// AppendMany gives every batch what Append would have, one call after the
// other: the same offsets, the same refusals (a corrupt batch, an
// oversize one, a sequence gap, a retry of a batch earlier in the same
// call answered as a duplicate), and the same files, in fewer writes.
func TestAppendManyIsAppendOneByOne(t *testing.T) {
	for _, appendTime := range []bool{false, true} {
		t.Run(fmt.Sprintf("logAppendTime=%v", appendTime), func(t *testing.T) {
			clock := time.UnixMilli(1_700_000_000_000)
			cfg := Config{SegmentBytes: 6 << 10, IndexIntervalBytes: 1 << 10, MaxMessageBytes: 3 << 10,
				LogAppendTime: appendTime, Now: func() time.Time { return clock }}
			var batches [][]byte
			seq := map[int64]int32{}
			for i := 0; i < 80; i++ {
				recs := makeRecords(uint64(i), 1+i%7, int64(1000+i*10))
				var b []byte
				switch i % 10 {
				case 3: // an idempotent producer's next batch
					pid := int64(7 + (i/10)%2)
					b = idempotentBatch(t, record.CompressionNone, pid, 0, seq[pid], recs)
					seq[pid] += int32(len(recs))
				case 4: // the same batch again: a duplicate, in the same call as its original
					b = slices.Clone(batches[len(batches)-1])
				case 5: // a gap in the sequence
					b = idempotentBatch(t, record.CompressionNone, 9, 0, int32(5+i), recs)
				case 6: // a corrupt batch
					b = buildBatch(t, record.CompressionNone, recs)
					b[len(b)-1] ^= 0xff
				case 8: // over max.message.bytes
					b = buildBatch(t, record.CompressionNone, makeRecords(uint64(i), 40, 0))
				default:
					b = buildBatch(t, record.CompressionSnappy, recs)
				}
				batches = append(batches, b)
			}
			oneFS, manyFS := &faultFS{}, &faultFS{}
			oneCfg, manyCfg := cfg, cfg
			oneCfg.FS, manyCfg.FS = oneFS, manyFS
			oneDir, manyDir := t.TempDir(), t.TempDir()
			one, many := openLog(t, oneDir, oneCfg), openLog(t, manyDir, manyCfg)
			var want []AppendResult
			for _, b := range batches {
				info, err := one.Append(slices.Clone(b), 3)
				want = append(want, AppendResult{Info: info, Err: err})
			}
			var got []AppendResult
			for i, n := 0, 1; i < len(batches); i, n = i+n, n%9+1 {
				chunk := batches[i:min(i+n, len(batches))]
				got = append(got, many.AppendMany(chunk, 3, nil)...)
			}
			refused := 0
			for i := range want {
				if (want[i].Err == nil) != (got[i].Err == nil) || want[i].Info != got[i].Info {
					t.Fatalf("batch %d: AppendMany %+v %v, Append %+v %v", i, got[i].Info, got[i].Err, want[i].Info, want[i].Err)
				}
				if want[i].Err != nil {
					refused++
					for _, target := range []error{ErrInvalidBatch, ErrRecordTooLarge, record.ErrChecksum, ErrOutOfOrderSequence} {
						if errors.Is(want[i].Err, target) != errors.Is(got[i].Err, target) {
							t.Fatalf("batch %d: AppendMany %v, Append %v", i, got[i].Err, want[i].Err)
						}
					}
				}
			}
			if refused < 20 || many.LogEndOffset() != one.LogEndOffset() || len(many.segs) < 4 {
				t.Fatalf("%d refused, log end %d and %d, %d segments: the test wants refusals and rolls", refused, many.LogEndOffset(), one.LogEndOffset(), len(many.segs))
			}
			if manyFS.logWrites >= oneFS.logWrites*2/3 {
				t.Fatalf("AppendMany wrote %d times, Append %d", manyFS.logWrites, oneFS.logWrites)
			}
			for _, l := range []*Log{one, many} {
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			}
			sameFiles(t, oneDir, manyDir)
			// The producer state survived the same: a retry of producer 7's
			// last batch is a duplicate in both after reopening.
			var last []byte
			for i := len(batches) - 1; last == nil; i-- {
				if i%10 == 3 && (i/10)%2 == 0 {
					last = batches[i]
				}
			}
			for _, dir := range []string{oneDir, manyDir} {
				l := openLog(t, dir, cfg)
				info, err := l.Append(slices.Clone(last), 3)
				if err != nil || !info.Duplicate {
					t.Fatalf("%s: retry after reopen: %+v %v, want a duplicate", dir, info, err)
				}
			}
		})
	}
}

// A failed write fails every batch of the call and the log.
func TestAppendManyFailedWrite(t *testing.T) {
	fsys := &faultFS{}
	l := openLog(t, t.TempDir(), Config{FS: fsys})
	want := appendBatches(t, l, record.CompressionNone, 1, 3, 5, 0)
	fsys.set(true, false)
	res := l.AppendMany([][]byte{
		buildBatch(t, record.CompressionNone, makeRecords(4, 5, 0)),
		buildBatch(t, record.CompressionNone, makeRecords(5, 5, 0)),
	}, 1, nil)
	fsys.set(false, false)
	for i, r := range res {
		if !errors.Is(r.Err, errInjected) {
			t.Fatalf("batch %d: %+v %v, want the write's error", i, r.Info, r.Err)
		}
	}
	if _, err := l.Append(buildBatch(t, record.CompressionNone, makeRecords(6, 5, 0)), 1); !errors.Is(err, errInjected) {
		t.Fatalf("append after the failed write: %v, want the sticky error", err)
	}
	checkRecords(t, readAllRecords(t, l, 0, 1<<20), want, 0)
}

// sameFiles fails unless dirs a and b hold the same segment and index
// files with the same bytes.
func sameFiles(t *testing.T, a, b string) {
	t.Helper()
	names, err := os.ReadDir(a)
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	for _, e := range names {
		if !strings.HasSuffix(e.Name(), ".log") && !strings.HasSuffix(e.Name(), ".index") && !strings.HasSuffix(e.Name(), ".timeindex") {
			continue
		}
		x, err := os.ReadFile(filepath.Join(a, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(filepath.Join(b, e.Name()))
		if err != nil {
			t.Fatalf("%s: in %s, not in %s: %v", e.Name(), a, b, err)
		}
		if !bytes.Equal(x, y) {
			t.Fatalf("%s differs: %d bytes in %s, %d in %s", e.Name(), len(x), a, len(y), b)
		}
		compared++
	}
	if compared < 3 {
		t.Fatalf("compared only %d files", compared)
	}
}

// Recovery's scan of an active segment allocates per scan, not per batch:
// a host restarted after a kill late in a long run (a large unrolled
// segment) must not start with a heap peak the same host did not have
// early in the run. The scan once allocated a header per batch (its
// address escaped into the visitor), a max-timestamp mark per batch and
// a buffer per frame larger than the read buffer.
func TestRecoveryScanAllocatesPerScanNotPerBatch(t *testing.T) {
	scanAllocs := func(batches, perBatch, size int) float64 {
		l := openLog(t, t.TempDir(), Config{IndexIntervalBytes: 1 << 30, MaxMessageBytes: 4 << 20}) // no index entries to grow
		for i := 0; i < batches; i++ {
			recs := make([]record.Record, perBatch)
			for j := range recs {
				recs[j] = record.Record{Value: make([]byte, size), Timestamp: int64(1000 + i)}
			}
			if _, err := l.Append(buildBatch(t, record.CompressionNone, recs), 1); err != nil {
				t.Fatal(err)
			}
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		s := l.segs[len(l.segs)-1]
		end := s.size.Load()
		return testing.AllocsPerRun(3, func() {
			err := l.withFiles(s, false, func() error {
				got, err := s.rebuild(end, true, l.cfg.IndexIntervalBytes)
				if err == nil && got != end {
					err = fmt.Errorf("scan ended at %d of %d", got, end)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
	small, many := scanAllocs(10, 1, 100), scanAllocs(2000, 1, 100)
	bigFew, bigMany := scanAllocs(2, 3, 600<<10), scanAllocs(12, 3, 600<<10) // frames of 1.8 MB, past the 1 MiB read buffer
	t.Logf("allocations per scan: 10 batches %.0f, 2000 batches %.0f; 2 large frames %.0f, 12 large frames %.0f", small, many, bigFew, bigMany)
	if many > small+5 || bigMany > bigFew+5 {
		t.Fatalf("a scan's allocations grow with its batches: 10 batches %.0f, 2000 batches %.0f; 2 large frames %.0f, 12 large frames %.0f", small, many, bigFew, bigMany)
	}
}
