// kafkadata_glue_test.go measures the Append glue alone: kafkaData.Append
// to a stand-in replica actor that answers every ProduceRequest at once,
// so what is measured is the per-append cost of the request/answer
// plumbing (issue 13's profile: kafkaData.Append was 12 % of a host at
// 50,000 rec/s with linger 0, RequestFuture 8 % of it, plus a goroutine per
// append). TestKafkaAppendGlue checks the answers the glue maps: success, a
// missing replica, a timeout, acks=0, a replica stopping; TestKafkaReadGlue
// the same for a read-side request (a consumer fetch), and its context.

package host

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/kafka"
	"github.com/actorlog/actorlog/messages"
)

// echoReplica answers every ProduceRequest with its base offset 42,
// nothing to requests whose timeout is 1 ms (to exercise the timeout), and
// stops itself without answering one whose timeout is 2 ms (a replica
// stopped with a produce in its mailbox, as a follower is in a failover).
//
// A FetchRequest is answered with high watermark 5, none at fetch offset
// 1001 (never answered) and the replica stops without answering one at
// 1002.
func echoReplica(ctx actor.Context) {
	switch r := ctx.Message().(type) {
	case *messages.ProduceRequest:
		switch r.TimeoutMs {
		case 1:
		case 2:
			ctx.Stop(ctx.Self())
		default:
			ctx.Respond(&messages.ProduceResponse{Topic: r.Topic, Partition: r.Partition, BaseOffset: 42, LogStartOffset: 0, LogAppendTimeMs: -1})
		}
	case *messages.FetchRequest:
		switch r.FetchOffset {
		case 1001:
		case 1002:
			ctx.Stop(ctx.Self())
		default:
			ctx.Respond(&messages.FetchResponse{Topic: r.Topic, Partition: r.Partition, HighWatermark: 5, LastStableOffset: 5, LogStartOffset: 0})
		}
	}
}

// glueData is a kafkaData over a bare actor system whose replica of
// topic-0 is echoReplica.
func glueData(tb testing.TB, topic string) *kafkaData {
	tb.Helper()
	log := clustertest.Logger(tb)
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	tb.Cleanup(sys.Shutdown)
	if _, err := sys.Root.SpawnNamed(actor.PropsFromFunc(echoReplica), messages.ReplicaActorID(topic, 0)); err != nil {
		tb.Fatalf("spawn the stand-in replica: %v", err)
	}
	return newKafkaData(&kafkaBackend{root: sys.Root, broker: func() *actor.PID { return actor.NewPID(sys.Address(), "nobody") }, log: log}, sys.Root, sys.Address(), log)
}

func BenchmarkKafkaAppendGlue(b *testing.B) {
	d := glueData(b, "bench")
	req := kafka.AppendRequest{Topic: "bench", Partition: 0, Acks: -1, Timeout: 30 * time.Second, Batch: []byte("batch")}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if res := <-d.Append(ctx, req); res.ErrorCode != 0 || res.BaseOffset != 42 {
			b.Fatalf("append: %+v", res)
		}
	}
}

// TestKafkaAppendGlue checks every outcome Append maps: the replica's
// answer, a partition with no local replica (NOT_LEADER_OR_FOLLOWER: the
// broker cannot be asked here), a replica that never answers
// (REQUEST_TIMED_OUT once the produce timeout and the slack pass), and
// acks=0 (no answer awaited); and that an answered append leaves no
// process behind in the actor system's registry.
func TestKafkaAppendGlue(t *testing.T) {
	defer func(s time.Duration) { kafkaAppendSlack = s }(kafkaAppendSlack)
	kafkaAppendSlack = 50 * time.Millisecond
	d := glueData(t, "glue")
	ctx := context.Background()
	reg := d.root.ActorSystem().ProcessRegistry
	before := registered(reg)
	wait := func(ch <-chan kafka.AppendResult) kafka.AppendResult {
		t.Helper()
		select {
		case res := <-ch:
			return res
		case <-time.After(10 * time.Second):
			t.Fatal("no append result within 10 s")
			return kafka.AppendResult{}
		}
	}
	req := kafka.AppendRequest{Topic: "glue", Partition: 0, Acks: -1, Timeout: 30 * time.Second, Batch: []byte("batch")}
	for i := range 100 {
		if res := wait(d.Append(ctx, req)); res != (kafka.AppendResult{BaseOffset: 42, LogAppendTime: -1}) {
			t.Fatalf("append %d: %+v", i, res)
		}
	}
	if n := registered(reg); n != before {
		t.Errorf("%d processes registered after 100 answered appends, %d before", n, before)
	}
	missing := req
	missing.Partition = 1
	if res := wait(d.Append(ctx, missing)); res.ErrorCode != int16(messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER) || res.BaseOffset != -1 {
		t.Errorf("append to a missing replica: %+v", res)
	}
	silent := req
	silent.Timeout = time.Millisecond // echoReplica does not answer these
	start := time.Now()
	res := wait(d.Append(ctx, silent))
	if res.ErrorCode != int16(messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT) || res.BaseOffset != -1 || res.ErrorMessage != "ask replica glue-0: future: timeout" {
		t.Errorf("append the replica never answers: %+v", res)
	}
	if took := time.Since(start); took < kafkaAppendSlack {
		t.Errorf("timed out after %v, before the slack of %v", took, kafkaAppendSlack)
	}
	if n := registered(reg); n != before {
		t.Errorf("%d processes registered after the failed appends, %d before", n, before)
	}
	noAck := req
	noAck.Acks = 0
	if res := wait(d.Append(ctx, noAck)); res != (kafka.AppendResult{BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}) {
		t.Errorf("acks=0 append: %+v", res)
	}

	// The replica stops with the produce unanswered: the append ends at
	// once, as NOT_LEADER_OR_FOLLOWER (retriable), not after the timeout.
	kafkaAppendSlack = time.Minute
	dying := req
	dying.Timeout = 2 * time.Millisecond
	start = time.Now()
	if res := wait(d.Append(ctx, dying)); res.ErrorCode != int16(messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER) || res.BaseOffset != -1 {
		t.Errorf("append to a replica that stopped without answering: %+v", res)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the append to a stopped replica ended after %v", took)
	}
	if n := registered(reg); n != before-1 { // the replica is gone too
		t.Errorf("%d processes registered after the replica stopped, want %d", n, before-1)
	}
}

// registered counts the processes in reg.
func registered(reg *actor.ProcessRegistryValue) int {
	n := 0
	for _, m := range reg.LocalPIDs.LocalPIDs {
		n += m.Count()
	}
	return n
}

// TestKafkaReadGlue checks a read-side request (Read: a consumer fetch) the
// way TestKafkaAppendGlue checks appends: the replica's answer; a missing
// replica and one that stops with the fetch in its mailbox (as a follower
// does in a failover) are NOT_LEADER_OR_FOLLOWER at once, not after the
// 10 s replica timeout; a cancelled context ends the read; no call is left
// registered.
func TestKafkaReadGlue(t *testing.T) {
	d := glueData(t, "glue")
	reg := d.root.ActorSystem().ProcessRegistry
	before := registered(reg)
	q := kafka.ReadQuery{Topic: "glue", Partition: 0, Offset: 0, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1}
	for i := range 100 {
		res, err := d.Read(context.Background(), q)
		if err != nil || res.ErrorCode != 0 || res.HighWatermark != 5 {
			t.Fatalf("read %d: %+v, %v", i, res, err)
		}
	}
	missing := q
	missing.Partition = 1
	if res, err := d.Read(context.Background(), missing); err != nil || res.ErrorCode != int16(messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER) {
		t.Errorf("read from a missing replica: %+v, %v", res, err)
	}
	silent := q
	silent.Offset = 1001 // never answered
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if res, err := d.Read(ctx, silent); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("read the replica never answers, context done: %+v, %v", res, err)
	}
	if n := registered(reg); n != before {
		t.Errorf("%d processes registered after the reads, %d before", n, before)
	}
	dying := q
	dying.Offset = 1002
	start := time.Now()
	if res, err := d.Read(context.Background(), dying); err != nil || res.ErrorCode != int16(messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER) {
		t.Errorf("read from a replica that stopped without answering: %+v, %v", res, err)
	}
	if took := time.Since(start); took > kafkaReplicaTimeout/2 {
		t.Errorf("the read from a stopped replica ended after %v", took)
	}
	if n := registered(reg); n != before-1 { // the replica is gone too
		t.Errorf("%d processes registered after the replica stopped, want %d", n, before-1)
	}
}
