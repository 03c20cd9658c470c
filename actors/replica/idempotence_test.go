// idempotence_test.go: the leader's handling of idempotent producers'
// batches, a follower promoted to leader keeping the producers' state, and
// the high-watermark checkpoint across a restart.

package replica

import (
	"fmt"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage/record"
)

func idemBatch(t *testing.T, pid int64, epoch int16, seq int32, n int) []byte {
	t.Helper()
	b := record.NewBuilder(record.BuilderOptions{Idempotent: true, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq})
	for i := 0; i < n; i++ {
		b.Append(record.Record{Value: []byte(fmt.Sprintf("p%d-e%d-s%d", pid, epoch, int(seq)+i)), Timestamp: 1000})
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLeaderDeduplicatesIdempotentRetries(t *testing.T) {
	h := newHarness(t, t.TempDir())
	want := func(r *messages.ProduceResponse, code messages.ErrorCode, base int64) {
		t.Helper()
		if r.ErrorCode != code || (code == 0 && r.BaseOffset != base) {
			t.Fatalf("answer %v base %d (%s), want %v base %d", r.ErrorCode, r.BaseOffset, r.ErrorMessage, code, base)
		}
	}
	end := func() int64 { return h.request(GetState).(State).LogEndOffset }

	want(h.produce(idemBatch(t, 7, 0, 0, 5), messages.Acks_ACKS_ALL), 0, 0)
	want(h.produce(idemBatch(t, 7, 0, 5, 5), messages.Acks_ACKS_ALL), 0, 5)
	// Retries of either of the last batches get their original offsets
	// and write nothing.
	want(h.produce(idemBatch(t, 7, 0, 0, 5), messages.Acks_ACKS_ALL), 0, 0)
	want(h.produce(idemBatch(t, 7, 0, 5, 5), messages.Acks_ACKS_LEADER), 0, 5)
	if e := end(); e != 10 {
		t.Fatalf("log end %d after duplicates, want 10", e)
	}
	// A gap is refused and changes nothing.
	want(h.produce(idemBatch(t, 7, 0, 20, 1), messages.Acks_ACKS_ALL), messages.ErrorCode_ERROR_CODE_OUT_OF_ORDER_SEQUENCE_NUMBER, 0)
	// Another producer is independent; non-idempotent batches are not checked.
	want(h.produce(idemBatch(t, 8, 0, 0, 1), messages.Acks_ACKS_ALL), 0, 10)
	want(h.produce(batch(t, 1, "plain"), messages.Acks_ACKS_ALL), 0, 11)
	want(h.produce(batch(t, 1, "plain"), messages.Acks_ACKS_ALL), 0, 12)
	// A new epoch starts at sequence 0; the old epoch is then refused.
	want(h.produce(idemBatch(t, 7, 1, 0, 1), messages.Acks_ACKS_ALL), 0, 13)
	want(h.produce(idemBatch(t, 7, 0, 10, 1), messages.Acks_ACKS_ALL), messages.ErrorCode_ERROR_CODE_INVALID_PRODUCER_EPOCH, 0)
	if e := end(); e != 14 {
		t.Fatalf("log end %d, want 14", e)
	}
	// The state survives a restart.
	h.stop()
	h.start()
	want(h.produce(idemBatch(t, 7, 1, 0, 1), messages.Acks_ACKS_ALL), 0, 13)
	want(h.produce(idemBatch(t, 7, 1, 1, 1), messages.Acks_ACKS_ALL), 0, 14)
}

// A follower tracks the producers from the batches it replicates, so once
// it leads, a producer's retry of a batch the old leader wrote is still
// recognised.
func TestPromotedFollowerKnowsTheProducers(t *testing.T) {
	leaderDir, followerDir := t.TempDir(), t.TempDir()
	p := startPair(t, leaderDir, followerDir, 3)
	for i := 0; i < 4; i++ {
		r := p.leader.request(&messages.ProduceRequest{Topic: "t", Partition: 0, Acks: messages.Acks_ACKS_ALL,
			Records: idemBatch(t, 42, 0, int32(3*i), 3), CurrentLeaderEpoch: -1}).(*messages.ProduceResponse)
		if r.ErrorCode != 0 || r.BaseOffset != int64(3*i) {
			t.Fatalf("produce %d: %+v", i, r)
		}
	}
	p.waitSame()
	p.follower.stop()
	p.leader.stop()

	// The follower's log now leads (epoch 4, alone in the ISR).
	sys := actor.NewActorSystem()
	h := &harness{t: t, system: sys, dir: followerDir}
	h.pid = sys.Root.Spawn(Props(Config{Topic: "t", Partition: 0, Dir: followerDir, LeaderEpoch: 4, Logger: quiet(), Self: 2}))
	t.Cleanup(h.stop)
	r := h.produce(idemBatch(t, 42, 0, 9, 3), messages.Acks_ACKS_ALL)
	if r.ErrorCode != 0 || r.BaseOffset != 9 {
		t.Fatalf("retry on the new leader: %+v", r)
	}
	if r := h.produce(idemBatch(t, 42, 0, 13, 1), messages.Acks_ACKS_ALL); r.ErrorCode != messages.ErrorCode_ERROR_CODE_OUT_OF_ORDER_SEQUENCE_NUMBER {
		t.Fatalf("a gap on the new leader: %+v", r)
	}
	if st := h.request(GetState).(State); st.LogEndOffset != 12 {
		t.Fatalf("log end %d, want 12", st.LogEndOffset)
	}
}

// A leader restarted with followers in its ISR starts from its
// checkpointed high watermark, so consumers see the committed records at
// once instead of nothing until the followers fetch.
func TestHighWatermarkIsCheckpointed(t *testing.T) {
	leaderDir, followerDir := t.TempDir(), t.TempDir()
	p := startPair(t, leaderDir, followerDir, 3)
	for i := 0; i < 5; i++ {
		if r := p.leader.request(&messages.ProduceRequest{Topic: "t", Partition: 0, Acks: messages.Acks_ACKS_ALL,
			Records: batch(t, 4, fmt.Sprint(i)), CurrentLeaderEpoch: -1}).(*messages.ProduceResponse); r.ErrorCode != 0 {
			t.Fatalf("produce: %+v", r)
		}
	}
	p.waitSame()
	p.follower.stop()
	p.leader.stop()

	sys := actor.NewActorSystem()
	h := &harness{t: t, system: sys, dir: leaderDir}
	h.pid = sys.Root.Spawn(Props(Config{Topic: "t", Partition: 0, Dir: leaderDir, LeaderEpoch: 4, Logger: quiet(),
		Self: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, MinInsyncReplicas: 2}))
	t.Cleanup(h.stop)
	if st := h.request(GetState).(State); st.HighWatermark != 20 {
		t.Fatalf("high watermark after restart %d, want the checkpointed 20", st.HighWatermark)
	}
	if recs := decode(t, h.fetch(0, 0).Records); len(recs) != 20 {
		t.Fatalf("a consumer reads %d records after the restart, want 20", len(recs))
	}
}
