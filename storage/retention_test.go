// retention_test.go: retention by time and by size with a fake clock,
// bounded by the high watermark, across every permutation.

package storage

import (
	"errors"
	"testing"
	"time"
)

func TestRetentionByTime(t *testing.T) {
	forAllPerms(t, func(t *testing.T, p perm) {
		clock := newFakeClock()
		cfg := p.config()
		cfg.Now, cfg.Retention = clock.Now, 24*time.Hour
		dir := t.TempDir()
		l := openLog(t, dir, cfg)
		old := clock.Millis()
		appendBatches(t, l, p.codec, 1, 5, 10, old) // 0..49, stamped now
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
		clock.Advance(20 * time.Hour)
		want := appendBatches(t, l, p.codec, 2, 5, 10, clock.Millis()) // 50..99
		if n, err := l.DeleteExpiredSegments(l.LogEndOffset()); err != nil || n != 0 {
			t.Fatalf("nothing is a day old yet: deleted %d, %v", n, err)
		}
		clock.Advance(5 * time.Hour) // the first 50 records are 25h old, the rest 5h
		// Below the high watermark only.
		if n, err := l.DeleteExpiredSegments(10); err != nil || n != 0 {
			t.Fatalf("segments above the high watermark must stay: deleted %d, %v", n, err)
		}
		n, err := l.DeleteExpiredSegments(l.LogEndOffset())
		if err != nil || n == 0 {
			t.Fatalf("deleted %d, %v; want the old segments gone", n, err)
		}
		if l.LogStartOffset() != 50 {
			t.Fatalf("log start %d, want 50", l.LogStartOffset())
		}
		if _, err := l.Read(49, 100, -1); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("read below log start: %v", err)
		}
		checkRecords(t, readAllRecords(t, l, 50, 1<<20), want, 50)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = openLog(t, dir, cfg)
		if l.LogStartOffset() != 50 || l.LogEndOffset() != 100 {
			t.Fatalf("after reopen: [%d, %d), want [50, 100)", l.LogStartOffset(), l.LogEndOffset())
		}
		// When even the active segment expires, the log rolls and keeps its end.
		clock.Advance(48 * time.Hour)
		if _, err := l.DeleteExpiredSegments(l.LogEndOffset()); err != nil {
			t.Fatal(err)
		}
		if l.LogStartOffset() != 100 || l.LogEndOffset() != 100 || l.NumSegments() != 1 || l.Size() != 0 {
			t.Fatalf("all expired: [%d, %d) in %d segments of %d bytes", l.LogStartOffset(), l.LogEndOffset(), l.NumSegments(), l.Size())
		}
		more := appendBatches(t, l, p.codec, 3, 2, 10, clock.Millis())
		checkRecords(t, readAllRecords(t, l, 100, 1<<20), more, 100)
	})
}

func TestRetentionBySize(t *testing.T) {
	forAllPerms(t, func(t *testing.T, p perm) {
		clock := newFakeClock()
		cfg := p.config()
		cfg.Now, cfg.Retention = clock.Now, -1 // time never expires
		l := openLog(t, t.TempDir(), cfg)
		var sizes []int64
		for i := 0; i < 4; i++ {
			appendBatches(t, l, p.codec, uint64(i), 3, 10, 0)
			before := l.Size()
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, before)
		}
		total := l.Size()
		clock.Advance(1000 * 24 * time.Hour)
		if n, err := l.DeleteExpiredSegments(l.LogEndOffset()); err != nil || n != 0 {
			t.Fatalf("retention.ms=-1 keeps everything: deleted %d, %v", n, err)
		}
		// Keep at most what the last two rolls hold: the oldest go.
		cfg.RetentionBytes = total - sizes[1]
		l.cfg.RetentionBytes = cfg.RetentionBytes
		if _, err := l.DeleteExpiredSegments(l.LogEndOffset()); err != nil {
			t.Fatal(err)
		}
		if l.Size() > cfg.RetentionBytes {
			t.Fatalf("size %d over retention.bytes %d", l.Size(), cfg.RetentionBytes)
		}
		if l.LogStartOffset() != 60 {
			t.Fatalf("log start %d, want 60 (two rolls of 30 records deleted)", l.LogStartOffset())
		}
		if got := readAllRecords(t, l, 60, 1<<20); len(got) != 60 {
			t.Fatalf("%d records left, want 60", len(got))
		}
	})
}
