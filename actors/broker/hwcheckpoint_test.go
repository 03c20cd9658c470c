// hwcheckpoint_test.go: a partition directory the broker discards (a
// deleted topic, a partition moved away, a stray, a directory left by an
// older topic of the same name) leaves the shared high-watermark
// checkpoint.

package broker

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/storage"
)

func TestDiscardedPartitionLeavesTheSharedHighWatermarkCheckpoint(t *testing.T) {
	dataDir := t.TempDir()
	file := filepath.Join(dataDir, storage.ReplicationOffsetCheckpointFile)
	if err := os.WriteFile(file, []byte("0\n3\nev-x 0 5\nev-x 1 7\nother 0 9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ev-x-0", "ev-x-1", "other-0"} {
		if err := os.Mkdir(filepath.Join(dataDir, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	logger := logrus.NewEntry(logrus.New())
	c := storage.NewHighWatermarkCheckpoints(nil, dataDir, logger)
	r := newDirRemover(dataDir, storage.OSFS{}, nil, logger)
	r.hwCheckpoints = c
	if err := r.discard(filepath.Join(dataDir, "ev-x-0")); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get("ev-x", 0); ok {
		t.Fatal("ev-x-0 discarded but still in the shared checkpoint")
	}
	if hw, ok := c.Get("ev-x", 1); !ok || hw != 7 {
		t.Fatalf("ev-x-1: %d (%v), want 7", hw, ok)
	}
	if hw, ok := c.Get("other", 0); !ok || hw != 9 {
		t.Fatalf("other-0: %d (%v), want 9", hw, ok)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if raw, err := os.ReadFile(file); err != nil || string(raw) != "0\n2\nev-x 1 7\nother 0 9\n" {
		t.Fatalf("shared file after the discard: %q, %v", raw, err)
	}
	for name, want := range map[string]tp{"ev-x-1": {"ev-x", 1}, "a-b-c-12": {"a-b-c", 12}} {
		if got, ok := keyOfDir(name); !ok || got != want {
			t.Errorf("keyOfDir(%q) = %v, %v; want %v", name, got, ok, want)
		}
	}
	for _, name := range []string{"nopartition", "t-x", "t-99999999999", "t-"} {
		if got, ok := keyOfDir(name); ok {
			t.Errorf("keyOfDir(%q) = %v, want none", name, got)
		}
	}
}
