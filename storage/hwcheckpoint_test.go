// hwcheckpoint_test.go: the data dir's shared high-watermark checkpoint
// (hwcheckpoint.go): round trip, a damaged file, the upgrade from the
// per-log files, a dropped partition, the synchronous rewrite after a
// truncation, and a SIGKILL after checkpoints.

package storage

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/actorlog/actorlog/storage/record"
)

// hwPartitionDir is the log directory of partition p of topic "t" in
// dataDir, as the broker names it.
func hwPartitionDir(dataDir string, p int32) string {
	return filepath.Join(dataDir, "t-"+strconv.Itoa(int(p)))
}

// openSlotLog opens partition p's log with its entry of c.
func openSlotLog(t *testing.T, c *HighWatermarkCheckpoints, dataDir string, p int32) *Log {
	t.Helper()
	cfg := Config{SegmentBytes: 64 << 10, Logger: quietLogger(), HighWatermarks: c.Slot("t", p)}
	return openLog(t, hwPartitionDir(dataDir, p), cfg)
}

func closeLog(t *testing.T, l *Log) {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestReplicationOffsetCheckpointFormat(t *testing.T) {
	entries := map[TopicPartition]int64{{"b", 1}: 7, {"a", 10}: 0, {"a", 2}: 1 << 40, {"x-y.z_0", 0}: 3}
	raw := formatReplicationOffsetCheckpoint(entries)
	want := "0\n4\na 2 1099511627776\na 10 0\nb 1 7\nx-y.z_0 0 3\n"
	if string(raw) != want {
		t.Fatalf("formatted %q, want %q", raw, want)
	}
	got, err := parseReplicationOffsetCheckpoint(raw)
	if err != nil || len(got) != len(entries) {
		t.Fatalf("parse: %v, %v", got, err)
	}
	for k, v := range entries {
		if got[k] != v {
			t.Fatalf("%v: %d, want %d", k, got[k], v)
		}
	}
	if got, err := parseReplicationOffsetCheckpoint([]byte("0\n0\n")); err != nil || len(got) != 0 {
		t.Fatalf("empty: %v, %v", got, err)
	}
	for _, bad := range []string{"", "0\n", "1\n0\n", "0\n2\na 0 1\n", "0\n1\na 0 1", "0\n1\na 0 -1\n", "0\n1\na -1 1\n",
		"0\n1\na 0\n", "0\n1\na 0 1 2\n", "0\n2\na 0 1\na 0 2\n", "0\n1\n 0 1\n", "0\nx\n"} {
		if _, err := parseReplicationOffsetCheckpoint([]byte(bad)); !errors.Is(err, ErrCorruptCheckpoint) {
			t.Errorf("parse %q: %v, want ErrCorruptCheckpoint", bad, err)
		}
	}
}

func TestSharedHighWatermarkRoundTrip(t *testing.T) {
	dataDir := t.TempDir()
	c := NewHighWatermarkCheckpoints(nil, dataDir, quietLogger())
	var logs []*Log
	for p := int32(0); p < 3; p++ {
		l := openSlotLog(t, c, dataDir, p)
		appendBatches(t, l, record.CompressionNone, uint64(p+1), 10, 10, 0) // 0..99
		if err := l.WriteHighWatermark(int64(50 + p)); err != nil {
			t.Fatal(err)
		}
		logs = append(logs, l)
	}
	// Storing is no write: no file yet, and no per-log file ever.
	if _, err := os.Stat(filepath.Join(dataDir, ReplicationOffsetCheckpointFile)); !os.IsNotExist(err) {
		t.Fatalf("shared file before the first flush: %v", err)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dataDir, ReplicationOffsetCheckpointFile))
	if err != nil || string(raw) != "0\n3\nt 0 50\nt 1 51\nt 2 52\n" {
		t.Fatalf("shared file %q, %v", raw, err)
	}
	for p, l := range logs {
		closeLog(t, l)
		if _, err := os.Stat(filepath.Join(hwPartitionDir(dataDir, int32(p)), highWatermarkFile)); !os.IsNotExist(err) {
			t.Fatalf("partition %d has a per-log high-watermark file: %v", p, err)
		}
	}
	// A new table (a restarted host) reads it back.
	c2 := NewHighWatermarkCheckpoints(nil, dataDir, quietLogger())
	for p := int32(0); p < 3; p++ {
		l := openSlotLog(t, c2, dataDir, p)
		if hw := l.HighWatermarkCheckpoint(); hw != int64(50+p) {
			t.Fatalf("partition %d reopened: high watermark %d, want %d", p, hw, 50+p)
		}
	}
	// Nothing changed: a flush writes nothing (the file keeps its time).
	info, err := os.Stat(filepath.Join(dataDir, ReplicationOffsetCheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(dataDir, ReplicationOffsetCheckpointFile), time.Unix(1, 0), time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	if err := c2.Flush(); err != nil {
		t.Fatal(err)
	}
	if info2, err := os.Stat(filepath.Join(dataDir, ReplicationOffsetCheckpointFile)); err != nil || !info2.ModTime().Equal(time.Unix(1, 0)) {
		t.Fatalf("an unchanged table was written again (%v, was %v): %v", info2.ModTime(), info.ModTime(), err)
	}
}

func TestSharedHighWatermarkClampedToTheLog(t *testing.T) {
	dataDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dataDir, ReplicationOffsetCheckpointFile), []byte("0\n1\nt 0 5000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := NewHighWatermarkCheckpoints(nil, dataDir, quietLogger())
	l := openSlotLog(t, c, dataDir, 0)
	appendBatches(t, l, record.CompressionNone, 1, 3, 10, 0) // 0..29
	// Clamped at open (the log was empty), not raised by the appends.
	if hw := l.HighWatermarkCheckpoint(); hw != 0 {
		t.Fatalf("entry above an empty log: high watermark %d after appends, want 0", hw)
	}
}

func TestSharedHighWatermarkCorruptFile(t *testing.T) {
	dataDir := t.TempDir()
	c := NewHighWatermarkCheckpoints(nil, dataDir, quietLogger())
	for p := int32(0); p < 2; p++ {
		l := openSlotLog(t, c, dataDir, p)
		appendBatches(t, l, record.CompressionNone, 1, 10, 10, 0)
		if err := l.WriteHighWatermark(60); err != nil {
			t.Fatal(err)
		}
		closeLog(t, l)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	garble(t, filepath.Join(dataDir, ReplicationOffsetCheckpointFile))
	// Partition 1 still has a per-log file (an upgrade not finished):
	// it is used; partition 0 has none: the log start.
	if err := writeOffsetCheckpoint(OSFS{}, hwPartitionDir(dataDir, 1), highWatermarkFile, 40); err != nil {
		t.Fatal(err)
	}
	logger, hook := logtest.NewNullLogger()
	c2 := NewHighWatermarkCheckpoints(nil, dataDir, logrus.NewEntry(logger))
	l0 := openSlotLog(t, c2, dataDir, 0)
	if hw := l0.HighWatermarkCheckpoint(); hw != 0 {
		t.Fatalf("corrupt shared file: high watermark %d, want the log start 0", hw)
	}
	l1 := openSlotLog(t, c2, dataDir, 1)
	if hw := l1.HighWatermarkCheckpoint(); hw != 40 {
		t.Fatalf("corrupt shared file, per-log file at 40: high watermark %d", hw)
	}
	warned := false
	for _, e := range hook.AllEntries() {
		err, _ := e.Data[logrus.ErrorKey].(error)
		file, _ := e.Data["file"].(string)
		warned = warned || (e.Level == logrus.WarnLevel && errors.Is(err, ErrCorruptCheckpoint) && strings.HasSuffix(file, ReplicationOffsetCheckpointFile))
	}
	if !warned {
		t.Fatalf("no warning with the file and ErrCorruptCheckpoint: %v", hook.AllEntries())
	}
	// The next checkpoint replaces the damaged file.
	if err := l0.WriteHighWatermark(70); err != nil {
		t.Fatal(err)
	}
	if err := c2.Flush(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadReplicationOffsetCheckpoint(OSFS{}, dataDir)
	if err != nil || got[TopicPartition{"t", 0}] != 70 || got[TopicPartition{"t", 1}] != 40 {
		t.Fatalf("rewritten shared file: %v, %v", got, err)
	}
}

func TestSharedHighWatermarkLegacyUpgrade(t *testing.T) {
	dataDir := t.TempDir()
	// Before: per-log files (no shared checkpoint).
	for p := int32(0); p < 2; p++ {
		l := openLog(t, hwPartitionDir(dataDir, p), Config{Logger: quietLogger()})
		appendBatches(t, l, record.CompressionNone, 1, 10, 10, 0)
		if err := l.WriteHighWatermark(int64(80 + p)); err != nil {
			t.Fatal(err)
		}
		closeLog(t, l)
	}
	legacy := func(p int32) string { return filepath.Join(hwPartitionDir(dataDir, p), highWatermarkFile) }
	// Partition 1 already has an entry (a crash after the shared file was
	// written, before its legacy file was removed): the entry wins.
	if err := os.WriteFile(filepath.Join(dataDir, ReplicationOffsetCheckpointFile), []byte("0\n1\nt 1 75\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := NewHighWatermarkCheckpoints(nil, dataDir, quietLogger())
	l0, l1 := openSlotLog(t, c, dataDir, 0), openSlotLog(t, c, dataDir, 1)
	if hw0, hw1 := l0.HighWatermarkCheckpoint(), l1.HighWatermarkCheckpoint(); hw0 != 80 || hw1 != 75 {
		t.Fatalf("after the upgrade: high watermarks %d and %d, want 80 (per-log file) and 75 (shared entry)", hw0, hw1)
	}
	// The legacy files stay until the shared file holds their partitions.
	for p := int32(0); p < 2; p++ {
		if _, err := os.Stat(legacy(p)); err != nil {
			t.Fatalf("legacy file of %d removed before the shared file was written: %v", p, err)
		}
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 2; p++ {
		if _, err := os.Stat(legacy(p)); !os.IsNotExist(err) {
			t.Fatalf("legacy file of %d left after the shared file was written: %v", p, err)
		}
	}
	closeLog(t, l0)
	closeLog(t, l1)
	c2 := NewHighWatermarkCheckpoints(nil, dataDir, quietLogger())
	if hw0, hw1 := openSlotLog(t, c2, dataDir, 0).HighWatermarkCheckpoint(), openSlotLog(t, c2, dataDir, 1).HighWatermarkCheckpoint(); hw0 != 80 || hw1 != 75 {
		t.Fatalf("after the upgrade and a restart: %d and %d, want 80 and 75", hw0, hw1)
	}
}

func TestSharedHighWatermarkRemovedPartition(t *testing.T) {
	dataDir := t.TempDir()
	c := NewHighWatermarkCheckpoints(nil, dataDir, quietLogger())
	for p := int32(0); p < 2; p++ {
		l := openSlotLog(t, c, dataDir, p)
		appendBatches(t, l, record.CompressionNone, 1, 2, 10, 0)
		if err := l.WriteHighWatermark(15); err != nil {
			t.Fatal(err)
		}
		closeLog(t, l)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	c.Remove("t", 1)
	c.Remove("t", 9) // never there: nothing
	if _, ok := c.Get("t", 1); ok || c.Len() != 1 {
		t.Fatalf("removed partition still in the table (%d entries)", c.Len())
	}
	if err := c.Stop(); err != nil { // not started: flushes
		t.Fatal(err)
	}
	got, err := ReadReplicationOffsetCheckpoint(OSFS{}, dataDir)
	if _, ok := got[TopicPartition{"t", 1}]; err != nil || ok || got[TopicPartition{"t", 0}] != 15 {
		t.Fatalf("shared file after removing t-1: %v, %v", got, err)
	}
}

// A truncation below the checkpointed high watermark rewrites the shared
// file before it returns, as it rewrote the per-log file.
func TestSharedHighWatermarkTruncationIsDurable(t *testing.T) {
	dataDir := t.TempDir()
	c := NewHighWatermarkCheckpoints(nil, dataDir, quietLogger())
	l := openSlotLog(t, c, dataDir, 0)
	other := openSlotLog(t, c, dataDir, 1)
	appendBatches(t, l, record.CompressionNone, 1, 10, 10, 0)
	appendBatches(t, other, record.CompressionNone, 1, 1, 10, 0)
	if err := l.WriteHighWatermark(80); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := other.WriteHighWatermark(5); err != nil { // pending, not lowered: no write
		t.Fatal(err)
	}
	if _, err := l.TruncateTo(40); err != nil {
		t.Fatal(err)
	}
	got, err := ReadReplicationOffsetCheckpoint(OSFS{}, dataDir)
	if err != nil || got[TopicPartition{"t", 0}] != 40 || got[TopicPartition{"t", 1}] != 5 {
		t.Fatalf("shared file right after the truncation to 40: %v, %v", got, err)
	}
	// Raising it again is only a store.
	appendBatches(t, l, record.CompressionNone, 2, 2, 10, 0)
	if err := l.WriteHighWatermark(60); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadReplicationOffsetCheckpoint(OSFS{}, dataDir); err != nil || got[TopicPartition{"t", 0}] != 40 {
		t.Fatalf("shared file after raising the high watermark, before a flush: %v, %v", got, err)
	}
	// A full truncation to a new start above it is a raise too.
	if err := l.TruncateFullyAndStartAt(700); err != nil {
		t.Fatal(err)
	}
	if hw, ok := c.Get("t", 0); !ok || hw != 700 {
		t.Fatalf("after a full truncation: entry %d (%v), want 700", hw, ok)
	}
}

const hwCrashDirEnv = "ACTORLOG_HW_CRASH_CHILD_DIR"

const hwCrashPartitions = 20

// TestHighWatermarkCrashChild is the child of
// TestSharedHighWatermarkSIGKILL: it appends to hwCrashPartitions logs and
// moves their high watermarks, with the shared checkpoint flushed by its
// goroutine every millisecond and by the child after each round; it
// prints "CKPT <round>" after each explicit flush returned.
func TestHighWatermarkCrashChild(t *testing.T) {
	dataDir := os.Getenv(hwCrashDirEnv)
	if dataDir == "" {
		t.Skip("child process of TestSharedHighWatermarkSIGKILL")
	}
	c := NewHighWatermarkCheckpoints(nil, dataDir, quietLogger())
	c.Start(time.Millisecond)
	logs := make([]*Log, hwCrashPartitions)
	for p := range logs {
		l, err := Open(hwPartitionDir(dataDir, int32(p)), Config{SegmentBytes: 64 << 10, Logger: quietLogger(), HighWatermarks: c.Slot("t", int32(p))})
		if err != nil {
			t.Fatal(err)
		}
		logs[p] = l
	}
	for round := int64(1); ; round++ {
		for p, l := range logs {
			if _, err := l.Append(buildBatch(t, record.CompressionNone, makeRecords(uint64(round), 1, round)), 1); err != nil {
				t.Fatal(err)
			}
			if err := l.WriteHighWatermark(l.LogEndOffset() - int64(p%2)); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Flush(); err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Fprintf(os.Stdout, "CKPT %d\n", round); err != nil {
			t.Fatal(err)
		}
	}
}

// After a SIGKILL at any point, the shared file is whole and every
// partition's high watermark is at least what the last acknowledged
// checkpoint held, and within its log.
func TestSharedHighWatermarkSIGKILL(t *testing.T) {
	dataDir := t.TempDir()
	var acked int64
	for round, killAt := range []int64{30, 77, 140} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHighWatermarkCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), hwCrashDirEnv+"="+dataDir)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() }) // never hang CI
		killed, n := false, int64(0)
		for sc := bufio.NewScanner(out); sc.Scan(); {
			f := strings.Fields(sc.Text())
			if len(f) != 2 || f[0] != "CKPT" {
				continue
			}
			if n++; n == killAt && !killed {
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				killed = true
			} else if !killed {
				acked++ // rounds add one record per log: offsets grow by one per round
			}
		}
		err = cmd.Wait()
		deadline.Stop()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !killed || !ok || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: child not killed as planned (%v); stderr: %s", round, err, stderr.String())
		}
		entries, err := ReadReplicationOffsetCheckpoint(OSFS{}, dataDir)
		if err != nil {
			t.Fatalf("round %d: shared file after SIGKILL: %v", round, err)
		}
		c := NewHighWatermarkCheckpoints(nil, dataDir, quietLogger())
		for p := int32(0); p < hwCrashPartitions; p++ {
			l := openSlotLog(t, c, dataDir, p)
			want := acked - int64(p%2) // what the last acknowledged checkpoint held
			if hw := l.HighWatermarkCheckpoint(); hw < want || hw > l.LogEndOffset() || hw != min(entries[TopicPartition{"t", p}], l.LogEndOffset()) {
				t.Fatalf("round %d: t-%d high watermark %d after SIGKILL; acknowledged %d, log end %d, entry %d", round, p, hw, want, l.LogEndOffset(), entries[TopicPartition{"t", p}])
			}
			closeLog(t, l)
		}
		// The next child starts from the recovered logs: offsets go on
		// from the shortest log end (one record per round and log).
		acked = 1 << 62
		for p := int32(0); p < hwCrashPartitions; p++ {
			l := openSlotLog(t, c, dataDir, p)
			acked = min(acked, l.LogEndOffset())
			closeLog(t, l)
		}
		t.Logf("round %d: killed after %d checkpoints; shared file holds %d partitions", round, killAt, len(entries))
	}
}

// TestSharedHighWatermarkFailingWrites: a write of the file that fails is
// reported by WriteFailure (since when, how many in a row, the error) until a write
// succeeds; the host's /healthz lists it (actors/broker.Health).
func TestSharedHighWatermarkFailingWrites(t *testing.T) {
	dataDir := t.TempDir()
	fs := &faultFS{}
	c := NewHighWatermarkCheckpoints(fs, dataDir, quietLogger())
	l := openSlotLog(t, c, dataDir, 0)
	appendBatches(t, l, record.CompressionNone, 1, 2, 10, 0)
	if err := l.WriteHighWatermark(15); err != nil {
		t.Fatal(err)
	}
	if _, n, err := c.WriteFailure(); err != nil || n != 0 {
		t.Fatalf("failing before any write: %v, %d", err, n)
	}
	fs.set(false, true)
	before := time.Now()
	for i := 1; i <= 2; i++ {
		if err := c.Flush(); !errors.Is(err, errInjected) {
			t.Fatalf("flush %d with failing fsync: %v", i, err)
		}
		since, n, err := c.WriteFailure()
		if !errors.Is(err, errInjected) || n != i || since.Before(before) || since.After(time.Now()) {
			t.Fatalf("after %d failed writes: WriteFailure() = %v, %d, %v", i, since, n, err)
		}
	}
	fs.set(false, false)
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if since, n, err := c.WriteFailure(); err != nil || !since.IsZero() || n != 0 {
		t.Fatalf("after a write that succeeded: WriteFailure() = %v, %d, %v", since, n, err)
	}
	if got, err := ReadReplicationOffsetCheckpoint(OSFS{}, dataDir); err != nil || got[TopicPartition{"t", 0}] != 15 {
		t.Fatalf("file after the retry: %v, %v", got, err)
	}
	closeLog(t, l)
}
