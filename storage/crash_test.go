// crash_test.go: the durability claim, tested by SIGKILL. A child process
// appends batches in a loop and prints each offset range once Append has
// returned; the parent kills it with SIGKILL mid-stream, reopens the log and
// checks that every acknowledged batch is there, intact and in order, and
// that the recovered producer state recognises every acknowledged batch: a
// retry of one of its producer's last ProducerBatchesRetained is a duplicate with the original
// offsets, an older one is refused, and neither writes anything. Three
// kill/restart rounds per flush policy, with tiny segments so rolls (and
// producer state snapshots) happen.

package storage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/actorlog/actorlog/storage/record"
)

const (
	crashDirEnv   = "ACTORLOG_CRASH_CHILD_DIR"
	crashFlushEnv = "ACTORLOG_CRASH_CHILD_FLUSH"
	crashPerBatch = 10
	// crashProducers idempotent producers take turns: batch k is producer
	// k%crashProducers's batch number k/crashProducers.
	crashProducers = 3
)

func crashConfig(flush string) (Config, error) {
	fp, err := ParseFlushPolicy(flush)
	if err != nil {
		return Config{}, err
	}
	return Config{SegmentBytes: 64 << 10, IndexIntervalBytes: 1024, Flush: fp, Logger: quietLogger()}, nil
}

// crashBatch is batch number k: records k*10..k*10+9, content derived from k.
func crashBatch(k int64) []record.Record { return makeRecords(uint64(k), crashPerBatch, k) }

var crashCodecs = []record.Compression{record.CompressionNone, record.CompressionZstd, record.CompressionLZ4, record.CompressionSnappy, record.CompressionGzip}

// crashBatchBytes encodes batch k as its idempotent producer sends it.
func crashBatchBytes(t testing.TB, k int64) []byte {
	return idempotentBatch(t, crashCodecs[k%int64(len(crashCodecs))], k%crashProducers, 0,
		int32(k/crashProducers)*crashPerBatch, crashBatch(k))
}

// TestCrashChild is the child process body; it is skipped unless the parent
// test started it.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("child process of TestSIGKILLDuringAppends")
	}
	cfg, err := crashConfig(os.Getenv(crashFlushEnv))
	if err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Each producer's next sequence follows from the log end, so an append
	// after a restart also checks the recovered producer state.
	for k := l.LogEndOffset() / crashPerBatch; ; k++ {
		info, err := l.Append(crashBatchBytes(t, k), 1)
		if err != nil {
			t.Fatal(err)
		}
		if info.Duplicate {
			t.Fatalf("batch %d taken for a duplicate of %d..%d", k, info.FirstOffset, info.LastOffset)
		}
		if _, err := fmt.Fprintf(os.Stdout, "ACK %d %d\n", info.FirstOffset, info.LastOffset); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSIGKILLDuringAppends(t *testing.T) {
	for _, flush := range []string{"never", "batch", "20ms"} {
		t.Run("flush="+flush, func(t *testing.T) {
			dir := t.TempDir()
			var acked int64 = -1 // highest acknowledged offset
			for round := 0; round < 3; round++ {
				acked = max(acked, runAndKill(t, dir, flush, 200+round*150))
				cfg, err := crashConfig(flush)
				if err != nil {
					t.Fatal(err)
				}
				l, err := Open(dir, cfg)
				if err != nil {
					t.Fatalf("round %d: reopen after SIGKILL: %v", round, err)
				}
				if l.LogEndOffset() <= acked {
					t.Fatalf("round %d: log end %d, but offset %d was acknowledged", round, l.LogEndOffset(), acked)
				}
				got := readAllRecords(t, l, 0, 1<<20)
				for i, r := range got {
					want := crashBatch(int64(i) / crashPerBatch)[i%crashPerBatch]
					if r.Offset != int64(i) || !bytes.Equal(r.Key, want.Key) || !bytes.Equal(r.Value, want.Value) {
						t.Fatalf("round %d: record %d is offset %d key %q, want key %q", round, i, r.Offset, r.Key, want.Key)
					}
				}
				checkCrashProducers(t, l, acked)
				t.Logf("round %d: %d acknowledged, %d recovered, %d segments", round, acked+1, len(got), l.NumSegments())
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// checkCrashProducers retries every acknowledged batch (those up to offset
// acked) against the reopened log: the last ProducerBatchesRetained of each producer in the
// log are duplicates with their original offsets, older ones are out of
// order, and the log does not change.
func checkCrashProducers(t *testing.T, l *Log, acked int64) {
	t.Helper()
	last := l.LogEndOffset()/crashPerBatch - 1 // the last batch in the log
	leo := l.LogEndOffset()
	for k := int64(0); (k+1)*crashPerBatch-1 <= acked; k++ {
		newest := last - (last-k)%crashProducers // the producer's last batch in the log
		info, err := l.Append(crashBatchBytes(t, k), 1)
		switch {
		case (newest-k)/crashProducers < ProducerBatchesRetained:
			if err != nil || !info.Duplicate || info.FirstOffset != k*crashPerBatch || info.LastOffset != k*crashPerBatch+crashPerBatch-1 {
				t.Fatalf("retry of acknowledged batch %d: %+v, %v; want a duplicate at %d", k, info, err, k*crashPerBatch)
			}
		case !errors.Is(err, ErrOutOfOrderSequence):
			t.Fatalf("retry of old acknowledged batch %d: %+v, %v; want ErrOutOfOrderSequence", k, info, err)
		}
	}
	if l.LogEndOffset() != leo {
		t.Fatalf("retries moved the log end from %d to %d", leo, l.LogEndOffset())
	}
}

// runAndKill starts the child, SIGKILLs it after it acknowledged killAfter
// batches, and returns the highest offset it acknowledged.
func runAndKill(t *testing.T, dir, flush string, killAfter int) int64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashFlushEnv+"="+flush)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acked int64 = -1
	n := 0
	killed := false
	deadline := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() }) // never hang CI
	defer deadline.Stop()
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "ACK" {
			continue
		}
		last, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			t.Fatalf("bad ack line %q", sc.Text())
		}
		acked = last // acks arrive in order
		if n++; n == killAfter && !killed {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("child exited before it was killed (%v): %s", err, stderr.String())
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL: %v; stderr: %s", err, stderr.String())
	}
	return acked
}
