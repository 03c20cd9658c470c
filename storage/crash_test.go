// crash_test.go: the durability claim, tested by SIGKILL. A child process
// appends batches in a loop and prints each offset range once Append has
// returned; the parent kills it with SIGKILL mid-stream, reopens the log and
// checks that every acknowledged batch is there, intact and in order. Three
// kill/restart rounds per flush policy, with tiny segments so rolls happen.

package storage

import (
	"bufio"
	"bytes"
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
	codecs := []record.Compression{record.CompressionNone, record.CompressionZstd, record.CompressionLZ4, record.CompressionSnappy, record.CompressionGzip}
	for k := l.LogEndOffset() / crashPerBatch; ; k++ {
		batch, err := record.BuildBatch(codecs[k%int64(len(codecs))], crashBatch(k)...)
		if err != nil {
			t.Fatal(err)
		}
		info, err := l.Append(batch, 1)
		if err != nil {
			t.Fatal(err)
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
				t.Logf("round %d: %d acknowledged, %d recovered, %d segments", round, acked+1, len(got), l.NumSegments())
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
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
