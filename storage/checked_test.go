// checked_test.go: a read checks a batch's CRC32C only once per process —
// bytes the log appended (every append path checks them) or served before
// are not checksummed again; bytes opened from disk are, until a read has
// checked them, and truncation takes back what it cuts.

package storage

import (
	"errors"
	"os"
	"testing"

	"github.com/actorlog/actorlog/storage/record"
)

// checkedOf returns the segment at base's checked position and size.
func checkedOf(t *testing.T, l *Log, base int64) (checked, size int64) {
	t.Helper()
	l.rmu.RLock()
	defer l.rmu.RUnlock()
	for _, s := range l.segs {
		if s.base == base {
			return s.checked.Load(), s.size.Load()
		}
	}
	t.Fatalf("no segment at %d", base)
	return 0, 0
}

// flipBit flips one bit in the records of the batch at pos in the segment
// file at path, behind the log's back.
func flipBit(t *testing.T, path string, pos int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	at := pos + record.HeaderSize + 3
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x04
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}

func TestReadChecksumsEachBatchOnce(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{IndexIntervalBytes: 256, Logger: quietLogger()}
	l := openLog(t, dir, cfg)
	appendBatches(t, l, record.CompressionNone, 1, 10, 10, 0)
	if checked, size := checkedOf(t, l, 0); checked != size || size == 0 {
		t.Fatalf("after appends: checked %d, size %d: appended batches were checked on the way in", checked, size)
	}
	path := segmentPath(dir, 0, logSuffix)
	pos, hs := batchPositions(t, path)
	victim := 4

	// Bytes this process appended are served without a second checksum:
	// a bit flipped on disk afterwards is not noticed by the log (the
	// consumer's own check of the batch still catches it, as Kafka's
	// clients do).
	flipBit(t, path, pos[victim])
	res, err := l.Read(hs[victim].BaseOffset, 1, -1)
	if err != nil {
		t.Fatalf("read of an appended batch: %v (its checksum passed when it was appended)", err)
	}
	if _, err := record.CheckFrame(res.Records); !errors.Is(err, record.ErrChecksum) {
		t.Fatalf("the served batch checks as %v, want a checksum error for the consumer", err)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// Opened from disk nothing is trusted: a read from the middle checks
	// what it serves and does not mark it (checked covers a run from the
	// segment's start) ...
	l = openLog(t, dir, cfg)
	if checked, _ := checkedOf(t, l, 0); checked != 0 {
		t.Fatalf("a segment opened from disk starts with checked %d, want 0", checked)
	}
	after := hs[victim+1].BaseOffset
	if _, err := l.Read(after, 1, -1); err != nil {
		t.Fatal(err)
	}
	if checked, _ := checkedOf(t, l, 0); checked != 0 {
		t.Fatalf("a read from the middle moved checked to %d", checked)
	}
	// ... a read from the start marks what it checked, up to the damage ...
	if _, err := l.Read(0, 1<<20, -1); err != nil {
		t.Fatal(err)
	}
	if checked, _ := checkedOf(t, l, 0); checked != pos[victim] {
		t.Fatalf("after reading up to the damage: checked %d, want %d", checked, pos[victim])
	}
	// ... and the damaged batch is reported, every time.
	for range 2 {
		if _, err := l.Read(hs[victim].BaseOffset, 1, -1); !errors.Is(err, ErrCorruptLog) {
			t.Fatalf("read of the damaged batch: %v, want ErrCorruptLog", err)
		}
	}
	if checked, _ := checkedOf(t, l, 0); checked != pos[victim] {
		t.Fatalf("after the damaged batch: checked %d, want %d", checked, pos[victim])
	}
}

func TestTruncationLowersChecked(t *testing.T) {
	dir := t.TempDir()
	leader := openLog(t, t.TempDir(), Config{IndexIntervalBytes: 256, Logger: quietLogger()})
	appendBatches(t, leader, record.CompressionNone, 7, 10, 10, 0)
	l := openLog(t, dir, Config{IndexIntervalBytes: 256, Logger: quietLogger()})
	replicateAll(t, leader, l)
	if checked, size := checkedOf(t, l, 0); checked != size || size == 0 {
		t.Fatalf("after replicated appends: checked %d, size %d", checked, size)
	}
	pos, hs := batchPositions(t, segmentPath(dir, 0, logSuffix))
	if _, err := l.TruncateTo(hs[6].BaseOffset); err != nil {
		t.Fatal(err)
	}
	if checked, size := checkedOf(t, l, 0); checked != pos[6] || size != pos[6] {
		t.Fatalf("after truncating to batch 6: checked %d, size %d, want both %d", checked, size, pos[6])
	}
	// Other bytes where the cut ones were: checked follows the new appends,
	// and reads serve the new batches.
	want := appendBatches(t, l, record.CompressionNone, 99, 3, 10, 0)
	if checked, size := checkedOf(t, l, 0); checked != size {
		t.Fatalf("after appending past the cut: checked %d, size %d", checked, size)
	}
	got := readAllRecords(t, l, hs[6].BaseOffset, 1<<20)
	if len(got) != len(want) || string(got[0].Value) != string(want[0].Value) {
		t.Fatalf("read %d records after the cut, want the %d appended since", len(got), len(want))
	}
}
