// recycle_test.go: the frames received produce requests arrive in go back
// to their pool once the batch is appended and answered, and not before.

package replica

import (
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/internal/frame"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage"
)

// pooled is b in a pooled frame reaching its trailer, as the remote codec
// hands a received produce request's records to the replica. Frames
// under 1 KiB are not pooled (frame.AllocPooled): b must be larger.
func pooled(t *testing.T, b []byte) []byte {
	t.Helper()
	f := frame.AllocPooled(len(b))
	copy(f, b)
	if !frame.Pooled(f) {
		t.Fatalf("a frame of %d bytes is not pooled", len(b))
	}
	return f
}

// Record key and value prefixes long enough that every batch of the test
// (one record at least) takes a pooled frame.
var (
	padA = "a" + strings.Repeat(".", 600)
	padB = "b" + strings.Repeat(".", 600)
	padC = "c" + strings.Repeat(".", 600)
)

// TestReceivedProduceFramesRecycledAfterAppend: a produce whose records
// lie in a pooled frame is not recycled while its write is under way,
// and is recycled once answered — alone, queued with others, refused
// (corrupt) alike; a frame reused right after holds none of the log's
// records (they were written before it was given back); an
// InternalProduce's frame is left alone.
func TestReceivedProduceFramesRecycledAfterAppend(t *testing.T) {
	fsys := &gateFS{held: make(chan struct{}), release: make(chan struct{})}
	system := actor.NewActorSystem()
	pid := system.Root.Spawn(Props(Config{Topic: "t", Partition: 0, Dir: t.TempDir(), LeaderEpoch: 3, Logger: quiet(),
		Log: storage.Config{FS: fsys}}))
	t.Cleanup(func() { _ = system.Root.StopFuture(pid).Wait() })

	before := ProduceFramesRecycled()
	produce := func(records []byte, corr int64) *actor.Future {
		return system.Root.RequestFuture(pid, &messages.ProduceRequest{Topic: "t", Partition: 0, Acks: messages.Acks_ACKS_ALL,
			Records: records, CurrentLeaderEpoch: -1, CorrelationId: corr}, timeout)
	}
	first := produce(pooled(t, batch(t, 3, padA)), 0)
	select {
	case <-fsys.held: // the leader is inside the first write
	case <-time.After(timeout):
		close(fsys.release)
		t.Fatal("the first produce never reached its write")
	}
	var queued []*actor.Future
	for i := 1; i <= 4; i++ {
		b := batch(t, 2, padB)
		if i == 2 {
			b = flip(b)
		}
		queued = append(queued, produce(pooled(t, b), int64(i)))
	}
	early := ProduceFramesRecycled() - before
	close(fsys.release) // before any Fatal: the replica's stop waits for the write
	if early != 0 {
		t.Fatalf("%d frames recycled while the first batch was being written", early)
	}
	for i, f := range append([]*actor.Future{first}, queued...) {
		res, err := f.Result()
		if err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		if r := res.(*messages.ProduceResponse); (r.ErrorCode != 0) != (i == 2) {
			t.Fatalf("produce %d: %v", i, r)
		}
	}
	if n := ProduceFramesRecycled() - before; n != 5 {
		t.Fatalf("%d frames recycled after five produces were answered, want 5", n)
	}
	// What the pool hands out next may be those frames: overwrite.
	for range 16 {
		f := frame.AllocPooled(len(batch(t, 2, padB)))
		for i := range f {
			f[i] = 0xEE
		}
	}

	internal := pooled(t, batch(t, 1, padC))
	res, err := system.Root.RequestFuture(pid, &InternalProduce{Request: &messages.ProduceRequest{Topic: "t", Partition: 0,
		Acks: messages.Acks_ACKS_ALL, Records: internal, CurrentLeaderEpoch: -1}}, timeout).Result()
	if err != nil {
		t.Fatal(err)
	}
	if r := res.(*messages.ProduceResponse); r.ErrorCode != 0 {
		t.Fatalf("internal produce: %v", r)
	}
	if n := ProduceFramesRecycled() - before; n != 5 || !frame.Pooled(internal) {
		t.Fatalf("an InternalProduce's frame was recycled (%d recycled)", n)
	}

	want := strings.NewReplacer("a", padA, "b", padB, "c", padC).Replace("a-v0,a-v1,a-v2,b-v0,b-v1,b-v0,b-v1,b-v0,b-v1,c-v0")
	if got := logValues(t, system, pid, 0); strings.Join(got, ",") != want {
		t.Fatalf("log holds %v, want %s", got, want)
	}
}
