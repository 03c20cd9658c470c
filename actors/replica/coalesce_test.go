// coalesce_test.go: produces queued behind a write are appended together.

package replica

import (
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage"
)

// gateFS counts the writes to .log files and holds the first one until
// release is closed.
type gateFS struct {
	storage.OSFS
	mu      sync.Mutex
	writes  int
	held    chan struct{} // closed when the held write waits
	release chan struct{}
	holdAt  int // which write of a .log file is held: 1 (the first) when 0
}

func (g *gateFS) OpenFile(name string, flag int, perm os.FileMode) (storage.File, error) {
	f, err := g.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(name, ".log") {
		return f, nil
	}
	return &gateFile{File: f, fs: g}, nil
}

type gateFile struct {
	storage.File
	fs *gateFS
}

func (f *gateFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	f.fs.writes++
	hold := f.fs.writes == max(f.fs.holdAt, 1)
	f.fs.mu.Unlock()
	if hold {
		close(f.fs.held)
		<-f.fs.release
	}
	return f.File.WriteAt(p, off)
}

// Produces that queue in the mailbox while the leader writes are appended
// in one write afterwards, each answered as if appended alone: its own
// offsets, its own error, acks=all and acks=1 alike.
func TestQueuedProducesShareOneWrite(t *testing.T) {
	fsys := &gateFS{held: make(chan struct{}), release: make(chan struct{})}
	system := actor.NewActorSystem()
	pid := system.Root.Spawn(Props(Config{Topic: "t", Partition: 0, Dir: t.TempDir(), LeaderEpoch: 3, Logger: quiet(),
		Log: storage.Config{FS: fsys}}))
	t.Cleanup(func() { _ = system.Root.StopFuture(pid).Wait() })

	produce := func(records []byte, acks messages.Acks, corr int64) *actor.Future {
		return system.Root.RequestFuture(pid, &messages.ProduceRequest{Topic: "t", Partition: 0, Acks: acks, Records: records,
			CurrentLeaderEpoch: -1, CorrelationId: corr}, timeout)
	}
	first := produce(batch(t, 2, "first"), messages.Acks_ACKS_ALL, 0)
	<-fsys.held // the leader is inside the first write
	var futures []*actor.Future
	const queued = 9
	for i := 1; i <= queued; i++ {
		b := batch(t, i, "q")
		if i == 4 {
			b = flip(b) // corrupt: refused alone
		}
		acks := messages.Acks_ACKS_ALL
		if i%2 == 0 {
			acks = messages.Acks_ACKS_LEADER
		}
		futures = append(futures, produce(b, acks, int64(i)))
	}
	close(fsys.release)

	res, err := first.Result()
	if err != nil {
		t.Fatal(err)
	}
	if r := res.(*messages.ProduceResponse); r.ErrorCode != 0 || r.BaseOffset != 0 {
		t.Fatalf("first produce: %v", r)
	}
	next := int64(2)
	var want []string
	for i, f := range futures {
		res, err := f.Result()
		if err != nil {
			t.Fatalf("produce %d: %v", i+1, err)
		}
		r := res.(*messages.ProduceResponse)
		if r.CorrelationId != int64(i+1) {
			t.Fatalf("produce %d answered with correlation id %d", i+1, r.CorrelationId)
		}
		if i+1 == 4 {
			if r.ErrorCode != messages.ErrorCode_ERROR_CODE_CORRUPT_MESSAGE || r.BaseOffset != -1 {
				t.Fatalf("corrupt batch: %v", r)
			}
			continue
		}
		if r.ErrorCode != 0 || r.BaseOffset != next {
			t.Fatalf("produce %d: %v, want base offset %d", i+1, r, next)
		}
		for j := 0; j < i+1; j++ {
			want = append(want, "q-v"+string(rune('0'+j)))
		}
		next += int64(i + 1)
	}
	fsys.mu.Lock()
	writes := fsys.writes
	fsys.mu.Unlock()
	if writes != 2 {
		t.Fatalf("%d writes to the log for the first produce and %d queued behind it, want 2", writes, queued)
	}
	if got := logValues(t, system, pid, 2); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("log holds %v, want %v", got, want)
	}
}

// logValues fetches partition t/0 from offset from (up to 1 MiB) and
// returns its records' values.
func logValues(t *testing.T, system *actor.ActorSystem, pid *actor.PID, from int64) []string {
	t.Helper()
	res, err := system.Root.RequestFuture(pid, &messages.FetchRequest{Topic: "t", Partition: 0, FetchOffset: from, MaxBytes: 1 << 20,
		CurrentLeaderEpoch: -1, ReplicaId: -1}, timeout).Result()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rec := range decode(t, res.(*messages.FetchResponse).Records) {
		got = append(got, string(rec.Value))
	}
	return got
}
