// fetch_test.go: the server-side fetch caps — a fetch asking 2^31-1 bytes
// gets at most the cap (consumer and follower caps apart), the first batch
// still comes whole past it, and a min_bytes above the cap does not park
// the fetch.

package replica

import (
	"math"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/messages"
)

func TestFetchLimit(t *testing.T) {
	tests := []struct {
		name      string
		replicaID int32
		maxBytes  int32
		want      int
	}{
		{"consumer asks little", -1, 1 << 20, 1 << 20},
		{"consumer asks 2^31-1", -1, math.MaxInt32, DefaultFetchMaxBytes},
		{"consumer asks the cap", -1, DefaultFetchMaxBytes, DefaultFetchMaxBytes},
		{"consumer asks 0 (first batch only)", -1, 0, 0},
		{"negative", -1, -5, 0},
		{"follower asks its usual", 2, ReplicaFetchMaxBytes, ReplicaFetchMaxBytes},
		{"follower asks 2^31-1", 2, math.MaxInt32, DefaultReplicaFetchResponseMaxBytes},
	}
	for _, tt := range tests {
		if got := FetchLimit(tt.replicaID, tt.maxBytes, DefaultFetchMaxBytes, DefaultReplicaFetchResponseMaxBytes); got != tt.want {
			t.Errorf("%s: FetchLimit(%d, %d) = %d, want %d", tt.name, tt.replicaID, tt.maxBytes, got, tt.want)
		}
	}
	if DefaultFetchMaxBytes != 55<<20 || ReplicaFetchMaxBytes > DefaultReplicaFetchResponseMaxBytes {
		t.Fatalf("caps: fetch %d (want Kafka's 55 MiB), follower asks %d above the follower cap %d",
			DefaultFetchMaxBytes, ReplicaFetchMaxBytes, DefaultReplicaFetchResponseMaxBytes)
	}
}

func TestFetchIsCappedWhateverItAsks(t *testing.T) {
	const consumerCap, followerCap = 4096, 8192
	h := &harness{t: t, system: actor.NewActorSystem(), dir: t.TempDir()}
	h.pid = h.system.Root.Spawn(Props(Config{
		Topic: "t", Partition: 0, Dir: h.dir, LeaderEpoch: 3, Logger: quiet(),
		Self: 1, Replicas: []int32{1, 2}, ISR: []int32{1}, // the high watermark follows the leader alone
		FetchMaxBytes: consumerCap, ReplicaFetchResponseMaxBytes: followerCap, Hosts: inProcessFollower,
	}))
	t.Cleanup(h.stop)
	small := len(batch(t, 20, "x"))
	for i := 0; i < 80; i++ {
		if r := h.produce(batch(t, 20, "s"), messages.Acks_ACKS_LEADER); r.ErrorCode != 0 {
			t.Fatalf("produce: %v", r.ErrorCode)
		}
	}
	total := 80 * small
	if total < 2*followerCap {
		t.Fatalf("test log of %d bytes is too small for the caps", total)
	}
	big := batch(t, 400, "big")
	if len(big) <= followerCap {
		t.Fatalf("big batch of %d bytes is not above the caps", len(big))
	}
	bigAt := h.produce(big, messages.Acks_ACKS_LEADER).BaseOffset

	ask := func(replicaID int32, offset int64, minBytes int32, wait time.Duration) *messages.FetchResponse {
		t.Helper()
		return h.request(&messages.FetchRequest{Topic: "t", Partition: 0, FetchOffset: offset, MaxBytes: math.MaxInt32, MinBytes: minBytes,
			MaxWaitMs: int32(wait.Milliseconds()), CurrentLeaderEpoch: -1, ReplicaId: replicaID}).(*messages.FetchResponse)
	}
	for _, c := range []struct {
		name      string
		replicaID int32
		cap       int
	}{{"consumer", -1, consumerCap}, {"follower", 2, followerCap}} {
		r := ask(c.replicaID, 0, 1, 0)
		if r.ErrorCode != 0 || len(r.Records) == 0 || len(r.Records) > c.cap {
			t.Fatalf("%s asking 2^31-1 bytes: %v, %d bytes, want 1 to %d", c.name, r.ErrorCode, len(r.Records), c.cap)
		}
		if len(r.Records) < c.cap-small {
			t.Fatalf("%s: %d bytes, want the cap %d filled to within a batch", c.name, len(r.Records), c.cap)
		}
		if recs := decode(t, r.Records); recs[0].Offset != 0 {
			t.Fatalf("%s: first record at %d", c.name, recs[0].Offset)
		}
	}

	// The first batch comes whole even past the cap, and alone.
	r := ask(-1, bigAt, 1, 0)
	if r.ErrorCode != 0 || len(r.Records) != len(big) {
		t.Fatalf("fetch of a batch above the cap: %v, %d bytes, want the whole %d-byte batch", r.ErrorCode, len(r.Records), len(big))
	}

	// min_bytes above the cap is met at the cap: the fetch is not parked.
	start := time.Now()
	r = ask(-1, 0, math.MaxInt32, 10*time.Second)
	if took := time.Since(start); r.ErrorCode != 0 || len(r.Records) == 0 || took > 5*time.Second {
		t.Fatalf("min_bytes 2^31-1: %v, %d bytes after %v", r.ErrorCode, len(r.Records), took)
	}
}
