// maxts_test.go: Log.MaxTimestamp (ListOffsets MAX_TIMESTAMP, -3) against a
// brute-force oracle that decodes every record, at every limit: timestamps
// out of order within and across batches with many ties, across segments,
// after a clean reopen (marks found lazily from the time index), after a
// reopen whose indexes are gone (rebuilt by scanning), after a crash
// recovery, after truncation, after size retention deleted the segment that
// held the maximum, with LogAppendTime, on an empty log, and concurrently
// with appends (under -race).

package storage

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/actorlog/actorlog/storage/record"
)

// maxTSAnswer is what MaxTimestamp should answer.
type maxTSAnswer struct {
	off, ts int64
	found   bool
}

// maxTSOracle decodes the whole log once and returns, for each batch in
// order, its last offset and the first record with the largest timestamp up
// to and including it.
func maxTSOracle(t *testing.T, l *Log) (lasts []int64, answers []maxTSAnswer) {
	t.Helper()
	data, err := l.ReadAll()
	if err != nil {
		t.Fatalf("read all: %v", err)
	}
	cur := maxTSAnswer{off: -1, ts: -1}
	sc := record.Batches(data)
	for sc.Next() {
		h := sc.Header()
		recs, err := record.Records(sc.Batch(), 64<<20)
		if err != nil {
			t.Fatalf("decode batch %d: %v", h.BaseOffset, err)
		}
		for _, r := range recs {
			if r.Timestamp > cur.ts {
				cur = maxTSAnswer{off: r.Offset, ts: r.Timestamp, found: true}
			}
		}
		lasts, answers = append(lasts, h.LastOffset()), append(answers, cur)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scan: %v", err)
	}
	return lasts, answers
}

// checkMaxTS compares MaxTimestamp with the oracle at every limit from the
// log start to the end (a batch counts when wholly below the limit), and
// with no limit.
func checkMaxTS(t *testing.T, l *Log, what string) {
	t.Helper()
	lasts, answers := maxTSOracle(t, l)
	for limit := l.LogStartOffset() - 1; limit <= l.LogEndOffset(); limit++ {
		q := limit
		if limit < l.LogStartOffset() {
			q = -1 // no limit
		}
		want := maxTSAnswer{off: -1, ts: -1}
		for i, last := range lasts {
			if q >= 0 && last >= q {
				break
			}
			want = answers[i]
		}
		off, ts, found, err := l.MaxTimestamp(q)
		if err != nil {
			t.Fatalf("%s: max timestamp below %d: %v", what, q, err)
		}
		if got := (maxTSAnswer{off, ts, found}); got != want {
			t.Fatalf("%s: below %d: got %+v, want %+v", what, q, got, want)
		}
	}
}

// appendShuffled appends nBatches batches of 1..maxPer records whose
// timestamps are drawn from a small range (out of order, many ties), and
// returns the offset and timestamp of the first record with the largest.
func appendShuffled(t *testing.T, l *Log, c record.Compression, r *rand.Rand, nBatches, maxPer int, lo, span int64) {
	t.Helper()
	for i := 0; i < nBatches; i++ {
		recs := makeRecords(r.Uint64(), 1+r.IntN(maxPer), 0)
		for j := range recs {
			recs[j].Timestamp = lo + r.Int64N(span)
		}
		if _, err := l.Append(buildBatch(t, c, recs), 1); err != nil {
			t.Fatalf("append batch %d: %v", i, err)
		}
	}
}

func TestMaxTimestampEmptyLog(t *testing.T) {
	l := openLog(t, t.TempDir(), Config{IndexIntervalBytes: 256})
	off, ts, found, err := l.MaxTimestamp(-1)
	if err != nil || found || off != -1 || ts != -1 {
		t.Fatalf("empty log: offset %d ts %d found %v err %v, want -1 -1 false", off, ts, found, err)
	}
	// Emptied by a full truncation too.
	appendBatches(t, l, record.CompressionNone, 1, 2, 3, 1000)
	if err := l.TruncateFullyAndStartAt(100); err != nil {
		t.Fatal(err)
	}
	if off, ts, found, err := l.MaxTimestamp(-1); err != nil || found || off != -1 || ts != -1 {
		t.Fatalf("after full truncation: offset %d ts %d found %v err %v", off, ts, found, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := l.MaxTimestamp(-1); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed log: %v, want ErrClosed", err)
	}
}

func TestMaxTimestampOutOfOrder(t *testing.T) {
	forAllPerms(t, func(t *testing.T, p perm) {
		if p.flush.Mode == FlushInterval {
			t.Skip("covered by the other flush policies; keeps the test short")
		}
		dir := t.TempDir()
		cfg := p.config()
		l := openLog(t, dir, cfg)
		r := rand.New(rand.NewPCG(7, uint64(len(p.name))))
		appendShuffled(t, l, p.codec, r, 40, 8, 1000, 40)
		// A clear winner in the middle of a batch in the middle of the log,
		// then an equal one later: the earlier must be answered.
		mid := makeRecords(99, 5, 500)
		mid[2].Timestamp = 9000
		midBase := l.LogEndOffset()
		if _, err := l.Append(buildBatch(t, p.codec, mid), 1); err != nil {
			t.Fatal(err)
		}
		appendShuffled(t, l, p.codec, r, 20, 8, 1000, 40)
		tie := makeRecords(100, 3, 8000)
		tie[1].Timestamp = 9000
		if _, err := l.Append(buildBatch(t, p.codec, tie), 1); err != nil {
			t.Fatal(err)
		}
		appendShuffled(t, l, p.codec, r, 20, 8, 1000, 40)
		if p.segBytes == 4096 && l.NumSegments() < 3 {
			t.Fatalf("want several segments, have %d", l.NumSegments())
		}
		off, ts, found, err := l.MaxTimestamp(-1)
		if err != nil || !found || off != midBase+2 || ts != 9000 {
			t.Fatalf("got offset %d ts %d found %v err %v, want %d 9000", off, ts, found, err, midBase+2)
		}
		checkMaxTS(t, l, "live")

		// A clean reopen: sealed segments load from their indexes and find
		// their marks lazily.
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = openLog(t, dir, cfg)
		checkMaxTS(t, l, "reopened")

		// Indexes gone: rebuilt by scanning the logs.
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		removeFiles(t, dir, indexSuffix, timeIndexSuffix)
		l = openLog(t, dir, cfg)
		checkMaxTS(t, l, "indexes rebuilt")

		// Recovery of every segment (no recovery point).
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		removeFiles(t, dir, recoveryPointFile)
		l = openLog(t, dir, cfg)
		checkMaxTS(t, l, "recovered")

		// Truncation below the winner: the next largest takes over (the
		// tie is gone with it), and appends after it count again.
		if _, err := l.TruncateTo(midBase + 1); err != nil {
			t.Fatal(err)
		}
		_, ts, _, err = l.MaxTimestamp(-1)
		if err != nil || ts >= 9000 {
			t.Fatalf("after truncation below the winner: ts %d err %v", ts, err)
		}
		checkMaxTS(t, l, "truncated")
		appendShuffled(t, l, p.codec, r, 10, 8, 2000, 40)
		checkMaxTS(t, l, "appended after truncation")
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = openLog(t, dir, cfg)
		checkMaxTS(t, l, "reopened after truncation")
	})
}

// removeFiles deletes dir's files whose names end with one of suffixes.
func removeFiles(t *testing.T, dir string, suffixes ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		for _, s := range suffixes {
			if strings.HasSuffix(e.Name(), s) {
				if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

func TestMaxTimestampRetention(t *testing.T) {
	cfg := Config{SegmentBytes: 4096, IndexIntervalBytes: 256, RetentionBytes: 1 << 30, Retention: -1, Logger: quietLogger()}
	dir := t.TempDir()
	l := openLog(t, dir, cfg)
	first := makeRecords(1, 5, 100)
	first[3].Timestamp = 1 << 40 // the winner, in the first segment
	if _, err := l.Append(buildBatch(t, record.CompressionNone, first), 1); err != nil {
		t.Fatal(err)
	}
	appendShuffled(t, l, record.CompressionNone, rand.New(rand.NewPCG(3, 4)), 60, 8, 1000, 40)
	if l.NumSegments() < 3 {
		t.Fatalf("want several segments, have %d", l.NumSegments())
	}
	if off, ts, _, err := l.MaxTimestamp(-1); err != nil || off != 3 || ts != 1<<40 {
		t.Fatalf("before retention: offset %d ts %d err %v, want 3", off, ts, err)
	}
	cfg.RetentionBytes = l.Size() - l.segs[0].size.Load() // the first segment must go
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, cfg)
	if n, err := l.DeleteExpiredSegments(l.LogEndOffset()); err != nil || n == 0 {
		t.Fatalf("retention deleted %d segments: %v", n, err)
	}
	off, ts, found, err := l.MaxTimestamp(-1)
	if err != nil || !found || ts >= 1<<40 || off < l.LogStartOffset() {
		t.Fatalf("after retention: offset %d ts %d found %v err %v (log start %d)", off, ts, found, err, l.LogStartOffset())
	}
	checkMaxTS(t, l, "after retention")
}

func TestMaxTimestampLogAppendTime(t *testing.T) {
	clock := newFakeClock()
	l := openLog(t, t.TempDir(), Config{IndexIntervalBytes: 256, LogAppendTime: true, Now: clock.Now})
	appendBatches(t, l, record.CompressionNone, 1, 3, 4, 5) // stamped with the clock
	clock.Advance(time.Second)
	want := l.LogEndOffset()
	appendBatches(t, l, record.CompressionNone, 2, 1, 4, 5)
	appendBatches(t, l, record.CompressionNone, 3, 1, 4, 5) // same time: a tie
	off, ts, found, err := l.MaxTimestamp(-1)
	if err != nil || !found || off != want || ts != clock.Millis() {
		t.Fatalf("got offset %d ts %d found %v err %v, want %d %d", off, ts, found, err, want, clock.Millis())
	}
}

func TestMaxTimestampConcurrentAppends(t *testing.T) {
	l := openLog(t, t.TempDir(), Config{SegmentBytes: 8192, IndexIntervalBytes: 256, Logger: quietLogger()})
	const batches = 200
	var wg sync.WaitGroup
	wg.Add(1)
	errs := make(chan error, 1)
	go func() {
		defer wg.Done()
		for i := 0; i < batches; i++ {
			recs := makeRecords(uint64(i), 3, 0)
			for j := range recs {
				recs[j].Timestamp = int64(1000 + i*3 + (2 - j)) // decreasing inside, increasing across
			}
			b, err := record.BuildBatch(record.CompressionNone, recs...)
			if err == nil {
				_, err = l.Append(b, 1)
			}
			if err != nil {
				errs <- err
				return
			}
		}
	}()
	lastTS := int64(-1)
	for done := false; !done; {
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
		done = l.LogEndOffset() == batches*3
		limit := l.LogEndOffset()
		off, ts, found, err := l.MaxTimestamp(-1)
		if err != nil {
			t.Fatal(err)
		}
		if !found {
			if lastTS >= 0 {
				t.Fatalf("max timestamp vanished after %d", lastTS)
			}
			continue
		}
		// Batch i's winner is its first record, offset 3i, timestamp 1000+3i+2.
		if ts < lastTS || off%3 != 0 || ts != 1000+off+2 || (done && off >= limit) {
			t.Fatalf("got offset %d ts %d (previous ts %d, end %d)", off, ts, lastTS, limit)
		}
		lastTS = ts
	}
	wg.Wait()
	if lastTS != 1000+(batches-1)*3+2 {
		t.Fatalf("final max ts %d", lastTS)
	}
}
