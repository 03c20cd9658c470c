// supervision_test.go: the broker (on a MemStore) keeps its replicas
// running — one stopped by anyone else is reopened with its log intact
// and counted; one whose directory cannot be prepared or whose log cannot
// be opened is reported in Health, naming the partition, and retried
// until it opens; a log that fails is reported — and removes the
// directories of a deleted topic off its goroutine, leaving none behind,
// not even from an earlier run.

package broker_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/actors/broker"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage"
	"github.com/actorlog/actorlog/storage/record"
)

// restarts is a broker.RestartCounter for tests.
type restarts struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *restarts) ActorRestarted(kind string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = map[string]int{}
	}
	r.n[kind]++
}

func (r *restarts) count(kind string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[kind]
}

// produceOne appends one record to topic-partition through its replica
// and returns the response's error.
func produceOne(t *testing.T, sys *actor.ActorSystem, topic string, partition int32) error {
	t.Helper()
	b, err := record.BuildBatch(record.CompressionNone, record.Record{Value: []byte("v"), Timestamp: 1000})
	if err != nil {
		t.Fatalf("build batch: %v", err)
	}
	resp, err := request[*messages.ProduceResponse](t, sys, actor.NewPID(sys.Address(), messages.ReplicaActorID(topic, partition)),
		&messages.ProduceRequest{Topic: topic, Partition: partition, Acks: messages.Acks_ACKS_LEADER, Records: b, CurrentLeaderEpoch: -1})
	if err != nil {
		return err
	}
	if resp.ErrorCode != 0 {
		return resp.ErrorCode.Err(resp.ErrorMessage)
	}
	return nil
}

// logEndOffset asks topic-partition's replica for its log end offset.
func logEndOffset(t *testing.T, sys *actor.ActorSystem, topic string, partition int32) (int64, error) {
	t.Helper()
	resp, err := request[*messages.ListOffsetsResponse](t, sys, actor.NewPID(sys.Address(), messages.ReplicaActorID(topic, partition)),
		&messages.ListOffsetsRequest{Topic: topic, Partition: partition, Timestamp: -1, CurrentLeaderEpoch: -1})
	if err != nil {
		return 0, err
	}
	if resp.ErrorCode != 0 {
		return 0, resp.ErrorCode.Err(resp.ErrorMessage)
	}
	return resp.Offset, nil
}

// problems returns health's lines, all of them.
func problems(h *broker.Health) []string {
	lines, _ := h.Problems(1 << 20)
	return lines
}

func TestStoppedReplicaIsReopenedWithItsLog(t *testing.T) {
	s := clustertest.NewMemStore(t)
	clustertest.RegisterMem(t, s, 1, 17151)
	health, counter := broker.NewHealth(), &restarts{}
	h := startHost1(t, s, "127.0.0.1:17151", func(c *broker.Config) {
		c.Health, c.Restarts, c.ReplicaRestartBackoff = health, counter, 50*time.Millisecond
	})
	createAndWait(t, h, "events")
	clustertest.WaitFor(t, 10*time.Second, func() error { return produceOne(t, h.sys, "events", 0) })

	// Stopped by someone else than the broker (a bug, a local Stop): it
	// comes back, with its record, and the restart is counted.
	for round := 1; round <= 2; round++ {
		h.sys.Root.Stop(actor.NewPID(h.sys.Address(), messages.ReplicaActorID("events", 0)))
		clustertest.WaitFor(t, 10*time.Second, func() error {
			if n := counter.count("replica"); n != round {
				return fmt.Errorf("replica restarts counted: %d, want %d", n, round)
			}
			leo, err := logEndOffset(t, h.sys, "events", 0)
			if err != nil {
				return err
			}
			if leo != 1 {
				t.Fatalf("log end offset after the replica was reopened: %d, want 1", leo)
			}
			if p := problems(health); len(p) != 0 {
				return fmt.Errorf("health still reports %v", p)
			}
			return nil
		})
	}
	if err := produceOne(t, h.sys, "events", 0); err != nil {
		t.Fatalf("produce after the restarts: %v", err)
	}
}

func TestReplicaThatCannotOpenIsReportedAndRetried(t *testing.T) {
	s := clustertest.NewMemStore(t)
	clustertest.RegisterMem(t, s, 1, 17152)
	dataDir := t.TempDir()
	// events-0: a file where its directory should be (the broker cannot
	// prepare it; chmod would not stop root). events-1: a directory where
	// its first segment should be (storage cannot open the log).
	if err := os.WriteFile(filepath.Join(dataDir, "events-0"), []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	badSegment := filepath.Join(dataDir, "events-1", fmt.Sprintf("%020d.log", 0))
	if err := os.MkdirAll(badSegment, 0o755); err != nil {
		t.Fatal(err)
	}
	health := broker.NewHealth()
	h := startHost1(t, s, "127.0.0.1:17152", func(c *broker.Config) {
		c.DataDir, c.Health = dataDir, health
		c.ReplicaRestartBackoff, c.ReplicaRestartBackoffMax = 50*time.Millisecond, 200*time.Millisecond
	})
	clustertest.CreateTopic(t, h.sys, h.brk, &messages.CreateTopicRequest{Name: "events", Partitions: 3, ReplicationFactor: 1})
	clustertest.WaitFor(t, 10*time.Second, func() error {
		if !running(h.sys, "events", 2) {
			return errors.New("the healthy partition's replica is not running")
		}
		got := strings.Join(problems(health), "\n")
		for _, want := range []string{"partition events-0: replica not running: cannot prepare partition directory", "partition events-1: replica not running: cannot open its log"} {
			if !strings.Contains(got, want) {
				return fmt.Errorf("health reports %q, want a line %q", got, want)
			}
		}
		if strings.Contains(got, "events-2") {
			t.Fatalf("health reports the healthy partition: %q", got)
		}
		return nil
	})
	// Not "not registered": a retry spawns the replica, which is
	// registered until its open fails. What must hold is that neither
	// partition takes a record.
	for p := int32(0); p < 2; p++ {
		if err := produceOne(t, h.sys, "events", p); err == nil {
			t.Fatalf("events-%d took a record while its log cannot be opened", p)
		}
	}

	// Repaired, both are reopened by the retries and health clears.
	if err := os.Remove(filepath.Join(dataDir, "events-0")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(badSegment); err != nil {
		t.Fatal(err)
	}
	clustertest.WaitFor(t, 10*time.Second, func() error {
		for p := int32(0); p < 2; p++ {
			if err := produceOne(t, h.sys, "events", p); err != nil {
				return fmt.Errorf("produce to events-%d: %w", p, err)
			}
		}
		if p := problems(health); len(p) != 0 {
			return fmt.Errorf("health still reports %v", p)
		}
		return nil
	})
}

// failingFS fails every write to a segment file once fail is set.
type failingFS struct {
	storage.OSFS
	fail *atomic.Bool
}

func (f failingFS) OpenFile(name string, flag int, perm os.FileMode) (storage.File, error) {
	file, err := f.OSFS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return file, err
	}
	return failingFile{File: file, fail: f.fail}, nil
}

type failingFile struct {
	storage.File
	fail *atomic.Bool
}

func (f failingFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fail.Load() {
		return 0, &os.PathError{Op: "write", Path: "segment", Err: syscall.EIO}
	}
	return f.File.WriteAt(p, off)
}

func TestFailedLogIsReported(t *testing.T) {
	s := clustertest.NewMemStore(t)
	clustertest.RegisterMem(t, s, 1, 17153)
	health, fail := broker.NewHealth(), &atomic.Bool{}
	h := startHost1(t, s, "127.0.0.1:17153", func(c *broker.Config) {
		c.Health, c.LogFS = health, failingFS{fail: fail}
	})
	createAndWait(t, h, "events")
	clustertest.WaitFor(t, 10*time.Second, func() error { return produceOne(t, h.sys, "events", 0) })
	if p := problems(health); len(p) != 0 {
		t.Fatalf("health reports %v before any failure", p)
	}
	fail.Store(true)
	if err := produceOne(t, h.sys, "events", 0); err == nil {
		t.Fatal("a produce whose write failed was acknowledged")
	}
	got := strings.Join(problems(health), "\n")
	if !strings.Contains(got, "partition events-0: log failed:") || !strings.Contains(got, "input/output error") {
		t.Fatalf("health reports %q, want events-0's failed log with its error", got)
	}
}

func TestDeletingATopicRemovesItsDirectoriesOffTheActor(t *testing.T) {
	s := clustertest.NewMemStore(t)
	clustertest.RegisterMem(t, s, 1, 17154)
	dataDir := t.TempDir()
	release := make(chan struct{})
	var removals atomic.Int32
	h := startHost1(t, s, "127.0.0.1:17154", func(c *broker.Config) {
		c.DataDir = dataDir
		// A removal that takes until the test releases it: minutes, for
		// a topic of 100,000 partitions.
		c.RemoveDir = func(path string) error {
			<-release
			removals.Add(1)
			return os.RemoveAll(path)
		}
	})
	released := false
	t.Cleanup(func() {
		if !released {
			close(release)
		}
	})
	const partitions = 40
	clustertest.CreateTopic(t, h.sys, h.brk, &messages.CreateTopicRequest{Name: "big", Partitions: partitions, ReplicationFactor: 1})
	clustertest.WaitFor(t, 10*time.Second, func() error {
		for p := int32(0); p < partitions; p++ {
			if !running(h.sys, "big", p) {
				return fmt.Errorf("big-%d not running", p)
			}
		}
		return nil
	})

	start := time.Now()
	resp, err := request[*messages.AdminResponse](t, h.sys, h.brk, &messages.DeleteTopicRequest{Name: "big"})
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("delete topic: %v %v", err, resp)
	}
	// Every partition directory is gone from its name (tombstoned) while
	// no removal has run, and the broker answers meanwhile.
	clustertest.WaitFor(t, 10*time.Second, func() error {
		live, tombs := partitionDirs(t, dataDir, "big")
		if live != 0 || tombs != partitions {
			return fmt.Errorf("%d partition directories and %d tombstones, want 0 and %d", live, tombs, partitions)
		}
		return nil
	})
	if took := time.Since(start); took > 8*time.Second {
		t.Fatalf("deleting the topic took %v", took)
	}
	if n := removals.Load(); n != 0 {
		t.Fatalf("%d removals ran before they were released", n)
	}
	for p := int32(0); p < partitions; p++ {
		if running(h.sys, "big", p) {
			t.Fatalf("replica big-%d still runs", p)
		}
	}
	begin := time.Now()
	if _, err := request[*messages.MetadataResponse](t, h.sys, h.brk, &messages.MetadataRequest{}); err != nil {
		t.Fatalf("the broker does not answer while the removals run: %v", err)
	}
	if took := time.Since(begin); took > time.Second {
		t.Fatalf("a metadata request took %v while the removals run", took)
	}
	// A new topic of the same name does not collide with the tombstones.
	clustertest.CreateTopic(t, h.sys, h.brk, &messages.CreateTopicRequest{Name: "big", Partitions: 1, ReplicationFactor: 1})
	clustertest.WaitFor(t, 10*time.Second, func() error { return produceOne(t, h.sys, "big", 0) })

	close(release)
	released = true
	clustertest.WaitFor(t, 10*time.Second, func() error {
		live, tombs := partitionDirs(t, dataDir, "big")
		if live != 1 || tombs != 0 {
			return fmt.Errorf("%d partition directories and %d tombstones, want 1 and 0", live, tombs)
		}
		return nil
	})
	if n := removals.Load(); n != partitions {
		t.Fatalf("%d removals, want %d", n, partitions)
	}
}

// partitionDirs counts topic's partition directories in dataDir and the
// tombstones of its discarded ones.
func partitionDirs(t *testing.T, dataDir, topic string) (live, tombstones int) {
	t.Helper()
	for _, name := range dirNames(t, dataDir) {
		switch {
		case !strings.HasPrefix(name, topic+"-"):
		case strings.Contains(name, ".deleted-"):
			tombstones++
		default:
			live++
		}
	}
	return live, tombstones
}

func TestLeftoverTombstonesAreRemovedAtStart(t *testing.T) {
	s := clustertest.NewMemStore(t)
	clustertest.RegisterMem(t, s, 1, 17155)
	dataDir := t.TempDir()
	tomb := filepath.Join(dataDir, "old-0.deleted-1764612345000000000")
	// Not tombstones: a topic named "x.deleted" has a directory so named.
	lookalike := filepath.Join(dataDir, "x.deleted-3")
	other := filepath.Join(dataDir, "not-ours")
	for _, dir := range []string{filepath.Join(tomb, "sub"), lookalike, other} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tomb, "sub", fmt.Sprintf("%020d.log", 0)), []byte("old data"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := startHost1(t, s, "127.0.0.1:17155", func(c *broker.Config) { c.DataDir = dataDir })
	createAndWait(t, h, "events")
	clustertest.WaitFor(t, 10*time.Second, func() error {
		if _, err := os.Stat(tomb); !os.IsNotExist(err) {
			return fmt.Errorf("leftover tombstone still there: %v", err)
		}
		return nil
	})
	for _, dir := range []string{lookalike, other} {
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("a directory that is no tombstone was removed: %v", err)
		}
	}
}
