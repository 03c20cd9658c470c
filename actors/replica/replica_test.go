// replica_test.go: the replica actor in a local actor system: produce,
// fetch with long polling, list offsets, bad input and restarts.

package replica

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/internal/poll"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage"
	"github.com/actorlog/actorlog/storage/record"
)

const timeout = 5 * time.Second

func quiet() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}

type harness struct {
	t      *testing.T
	system *actor.ActorSystem
	pid    *actor.PID
	dir    string
	// parent is the replica's parent when it has one (spawnUnderParent).
	parent *actor.PID
	// fs is the replica's file system (OSFS when nil).
	fs storage.FS
}

func newHarness(t *testing.T, dir string) *harness {
	t.Helper()
	system := actor.NewActorSystem()
	h := &harness{t: t, system: system, dir: dir}
	h.start()
	t.Cleanup(func() { h.stop() })
	return h
}

func (h *harness) start() {
	h.pid = h.system.Root.Spawn(Props(Config{Topic: "t", Partition: 0, Dir: h.dir, LeaderEpoch: 3, Logger: quiet(),
		Log: storage.Config{FS: h.fs}}))
}

func (h *harness) stop() {
	if h.pid != nil {
		if err := h.system.Root.StopFuture(h.pid).Wait(); err != nil {
			h.t.Errorf("stop replica: %v", err)
		}
		h.pid = nil
	}
}

func (h *harness) request(msg any) any {
	h.t.Helper()
	res, err := h.system.Root.RequestFuture(h.pid, msg, timeout).Result()
	if err != nil {
		h.t.Fatalf("request %T: %v", msg, err)
	}
	return res
}

func batch(t *testing.T, n int, prefix string) []byte {
	t.Helper()
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{Key: []byte(fmt.Sprintf("%s-k%d", prefix, i)), Value: []byte(fmt.Sprintf("%s-v%d", prefix, i)), Timestamp: 1000 + int64(i)}
	}
	b, err := record.BuildBatch(record.CompressionNone, recs...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (h *harness) produce(records []byte, acks messages.Acks) *messages.ProduceResponse {
	h.t.Helper()
	return h.request(&messages.ProduceRequest{Topic: "t", Partition: 0, Acks: acks, Records: records, CurrentLeaderEpoch: -1, CorrelationId: 7}).(*messages.ProduceResponse)
}

func (h *harness) fetch(offset int64, wait time.Duration) *messages.FetchResponse {
	h.t.Helper()
	return h.request(&messages.FetchRequest{Topic: "t", Partition: 0, FetchOffset: offset, MaxBytes: 1 << 20, MinBytes: 1, MaxWaitMs: int32(wait.Milliseconds()), CurrentLeaderEpoch: -1, ReplicaId: -1}).(*messages.FetchResponse)
}

func decode(t *testing.T, data []byte) []record.Record {
	t.Helper()
	var out []record.Record
	for sc := record.Batches(data); sc.Next(); {
		recs, err := record.Records(sc.Batch(), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recs...)
	}
	return out
}

func TestProduceFetchListOffsets(t *testing.T) {
	h := newHarness(t, t.TempDir())
	for i, acks := range []messages.Acks{messages.Acks_ACKS_LEADER, messages.Acks_ACKS_ALL} {
		resp := h.produce(batch(t, 5, fmt.Sprint(i)), acks)
		if resp.ErrorCode != 0 || resp.BaseOffset != int64(i*5) || resp.CorrelationId != 7 {
			t.Fatalf("produce %d: %+v", i, resp)
		}
	}
	f := h.fetch(0, 0)
	recs := decode(t, f.Records)
	if f.ErrorCode != 0 || f.HighWatermark != 10 || len(recs) != 10 || string(recs[7].Value) != "1-v2" || recs[7].Offset != 7 {
		t.Fatalf("fetch: code %v hw %d, %d records", f.ErrorCode, f.HighWatermark, len(recs))
	}
	for _, tc := range []struct {
		ts, want int64
	}{{messages.EarliestTimestamp, 0}, {messages.LatestTimestamp, 10}, {1003, 3}, {5000, 10}} {
		lo := h.request(&messages.ListOffsetsRequest{Topic: "t", Partition: 0, Timestamp: tc.ts, CurrentLeaderEpoch: -1}).(*messages.ListOffsetsResponse)
		if lo.ErrorCode != 0 || lo.Offset != tc.want {
			t.Fatalf("list offsets %d: %+v, want %d", tc.ts, lo, tc.want)
		}
	}
	ep := h.request(&messages.OffsetForLeaderEpochRequest{Topic: "t", Partition: 0, CurrentLeaderEpoch: -1, LeaderEpoch: 3, ReplicaId: -1}).(*messages.OffsetForLeaderEpochResponse)
	if ep.ErrorCode != 0 || ep.LeaderEpoch != 3 || ep.EndOffset != 10 {
		t.Fatalf("offset for leader epoch: %+v", ep)
	}
}

func TestBadRequestsGetErrorsAndChangeNothing(t *testing.T) {
	h := newHarness(t, t.TempDir())
	h.produce(batch(t, 3, "a"), messages.Acks_ACKS_LEADER)
	good := batch(t, 2, "b")
	tests := []struct {
		name string
		req  *messages.ProduceRequest
		want messages.ErrorCode
	}{
		{"garbage bytes", &messages.ProduceRequest{Topic: "t", Acks: messages.Acks_ACKS_LEADER, Records: []byte("garbage"), CurrentLeaderEpoch: -1}, messages.ErrorCode_ERROR_CODE_INVALID_RECORD},
		{"empty", &messages.ProduceRequest{Topic: "t", Acks: messages.Acks_ACKS_LEADER, CurrentLeaderEpoch: -1}, messages.ErrorCode_ERROR_CODE_INVALID_RECORD},
		{"corrupt", &messages.ProduceRequest{Topic: "t", Acks: messages.Acks_ACKS_LEADER, Records: flip(good), CurrentLeaderEpoch: -1}, messages.ErrorCode_ERROR_CODE_CORRUPT_MESSAGE},
		{"wrong partition", &messages.ProduceRequest{Topic: "t", Partition: 4, Acks: messages.Acks_ACKS_LEADER, Records: good, CurrentLeaderEpoch: -1}, messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION},
		{"wrong topic", &messages.ProduceRequest{Topic: "u", Acks: messages.Acks_ACKS_LEADER, Records: good, CurrentLeaderEpoch: -1}, messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION},
		{"old epoch", &messages.ProduceRequest{Topic: "t", Acks: messages.Acks_ACKS_LEADER, Records: good, CurrentLeaderEpoch: 2}, messages.ErrorCode_ERROR_CODE_FENCED_LEADER_EPOCH},
		{"future epoch", &messages.ProduceRequest{Topic: "t", Acks: messages.Acks_ACKS_LEADER, Records: good, CurrentLeaderEpoch: 4}, messages.ErrorCode_ERROR_CODE_UNKNOWN_LEADER_EPOCH},
		{"acks unset", &messages.ProduceRequest{Topic: "t", Records: good, CurrentLeaderEpoch: -1}, messages.ErrorCode_ERROR_CODE_INVALID_REQUIRED_ACKS},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := h.request(tc.req).(*messages.ProduceResponse)
			if resp.ErrorCode != tc.want || resp.ErrorMessage == "" {
				t.Fatalf("got %v %q, want %v", resp.ErrorCode, resp.ErrorMessage, tc.want)
			}
		})
	}
	if st := h.request(GetState).(State); st.LogEndOffset != 3 {
		t.Fatalf("bad requests changed the log: end %d", st.LogEndOffset)
	}
	for _, off := range []int64{-1, 4} {
		if f := h.fetch(off, 0); f.ErrorCode != messages.ErrorCode_ERROR_CODE_OFFSET_OUT_OF_RANGE {
			t.Fatalf("fetch at %d: %v", off, f.ErrorCode)
		}
	}
}

func flip(b []byte) []byte {
	c := bytes.Clone(b)
	c[len(c)-1] ^= 1
	return c
}

func TestLongPollFetch(t *testing.T) {
	h := newHarness(t, t.TempDir())
	// Nothing there: the fetch waits out its max wait and comes back empty.
	start := time.Now()
	f := h.fetch(0, 200*time.Millisecond)
	if f.ErrorCode != 0 || len(f.Records) != 0 || time.Since(start) < 150*time.Millisecond {
		t.Fatalf("empty long poll: code %v, %d bytes after %v", f.ErrorCode, len(f.Records), time.Since(start))
	}
	// A waiting fetch is answered as soon as a produce lands.
	fut := h.system.Root.RequestFuture(h.pid, &messages.FetchRequest{Topic: "t", FetchOffset: 0, MaxBytes: 1 << 20, MinBytes: 1, MaxWaitMs: 10_000, CurrentLeaderEpoch: -1, ReplicaId: -1}, timeout)
	poll.Until(t, timeout, func() error {
		if n := h.request(GetState).(State).ParkedFetches; n != 1 {
			return fmt.Errorf("%d parked fetches, want the one", n)
		}
		return nil
	})
	h.produce(batch(t, 4, "x"), messages.Acks_ACKS_ALL)
	res, err := fut.Result()
	if err != nil {
		t.Fatal(err)
	}
	if recs := decode(t, res.(*messages.FetchResponse).Records); len(recs) != 4 {
		t.Fatalf("woken fetch got %d records", len(recs))
	}
}

func TestAcksZeroSendsNothing(t *testing.T) {
	h := newHarness(t, t.TempDir())
	fut := h.system.Root.RequestFuture(h.pid, &messages.ProduceRequest{Topic: "t", Acks: messages.Acks_ACKS_NONE, Records: batch(t, 2, "z"), CurrentLeaderEpoch: -1}, 300*time.Millisecond)
	if _, err := fut.Result(); err == nil {
		t.Fatal("acks=0 produce got a response")
	}
	if st := h.request(GetState).(State); st.LogEndOffset != 2 {
		t.Fatalf("acks=0 batch not appended: end %d", st.LogEndOffset)
	}
}

func TestRestartKeepsData(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, dir)
	h.produce(batch(t, 6, "p"), messages.Acks_ACKS_LEADER)
	h.stop()
	h.start()
	if recs := decode(t, h.fetch(0, 0).Records); len(recs) != 6 || string(recs[5].Key) != "p-k5" {
		t.Fatalf("after restart: %d records", len(recs))
	}
}
