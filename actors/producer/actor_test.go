// This file tests the producer actor against fake partition leaders (actors
// around fakeLog) and a fake Cluster: an idempotent producer whose answers
// are lost, delayed and reordered, or refused, appends every record exactly
// once and in order; a fenced producer id fails one batch and the producer
// goes on under a new id.

package producer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/internal/poll"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage/record"
)

// fakeCluster serves metadata for one topic led by fake leader actors, and
// producer ids 1, 2, ..., failing the first failIDs requests.
type fakeCluster struct {
	topic   string
	leaders []*actor.PID
	failIDs int
	epoch   atomic.Int32 // every partition's leader epoch

	mu      sync.Mutex
	idCalls int
	ids     int64
}

func (c *fakeCluster) Metadata(_ context.Context, topics ...string) (*messages.MetadataResponse, error) {
	tm := &messages.TopicMetadataResponse{Name: c.topic}
	c.mu.Lock()
	leaders := slices.Clone(c.leaders)
	c.mu.Unlock()
	for i, pid := range leaders {
		tm.Partitions = append(tm.Partitions, &messages.PartitionMetadata{
			Partition: int32(i), LeaderAddress: pid.Address, ReplicaActorId: pid.Id, LeaderEpoch: c.epoch.Load(),
		})
	}
	if len(topics) != 1 || topics[0] != c.topic {
		tm = &messages.TopicMetadataResponse{Name: fmt.Sprint(topics), ErrorCode: messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION}
	}
	return &messages.MetadataResponse{Topics: []*messages.TopicMetadataResponse{tm}}, nil
}

func (c *fakeCluster) InitProducerID(context.Context) (int64, int16, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.idCalls++
	if c.idCalls <= c.failIDs {
		return -1, -1, messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT.Err("fake: no id yet")
	}
	c.ids++
	return c.ids, 0, nil
}

func (c *fakeCluster) calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.idCalls
}

// leaderFaults says how a fake leader misbehaves; probabilities in percent.
type leaderFaults struct {
	seed uint64
	// lose: the batch is appended and the answer lost.
	lose int
	// delay: the answer comes up to 30ms late, perhaps after later ones.
	delay int
	// refuse: NOT_LEADER_OR_FOLLOWER without appending; only once the
	// leader knows the producer id (a new id accepts any sequence, so a
	// refused first batch could be overtaken).
	refuse int
	// notAcked: appended, answered NOT_ENOUGH_REPLICAS_AFTER_APPEND.
	notAcked int
	// fenceAfter: batches of producer id 1 are refused with
	// INVALID_PRODUCER_EPOCH once this many were appended (0: never).
	fenceAfter int
	// answerAfter: every answer not lost or delayed is sent this late.
	answerAfter time.Duration
}

// getLog asks a fake leader for a copy of its log's values.
type getLog struct{}

// fakeLeader is a partition leader actor around a fakeLog.
type fakeLeader struct {
	t      testing.TB
	log    *fakeLog
	faults leaderFaults
	rnd    *rand.Rand
	fenced int // batches of producer id 1 appended
}

func (l *fakeLeader) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *messages.ProduceRequest:
		l.onProduce(ctx, msg)
	case getLog:
		ctx.Respond(append([]string(nil), l.log.values...))
	}
}

func (l *fakeLeader) onProduce(ctx actor.Context, req *messages.ProduceRequest) {
	resp := &messages.ProduceResponse{CorrelationId: req.CorrelationId, Topic: req.Topic, Partition: req.Partition, BaseOffset: -1}
	pid := int64(-1)
	if h, err := record.ParseHeader(req.Records); err == nil {
		pid = h.ProducerID
	}
	f := l.faults
	roll := l.rnd.IntN(100)
	switch {
	case f.fenceAfter > 0 && pid == 1 && l.fenced >= f.fenceAfter:
		resp.ErrorCode = messages.ErrorCode_ERROR_CODE_INVALID_PRODUCER_EPOCH
	case roll < f.refuse && l.log.producers[pid] != nil:
		resp.ErrorCode = messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER
	default:
		resp.ErrorCode, resp.BaseOffset = l.log.produce(l.t, req.Records)
		if resp.ErrorCode == 0 && pid == 1 {
			l.fenced++
		}
		if resp.ErrorCode == 0 && roll >= f.refuse && roll < f.refuse+f.notAcked {
			resp.ErrorCode, resp.BaseOffset = messages.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS_AFTER_APPEND, -1
		}
	}
	roll = l.rnd.IntN(100)
	switch sender := ctx.Sender(); {
	case roll < f.lose:
	case roll < f.lose+f.delay:
		root := ctx.ActorSystem().Root
		time.AfterFunc(time.Duration(l.rnd.IntN(30))*time.Millisecond, func() { root.Send(sender, resp) })
	case f.answerAfter > 0:
		root := ctx.ActorSystem().Root
		time.AfterFunc(f.answerAfter, func() { root.Send(sender, resp) })
	default:
		ctx.Respond(resp)
	}
}

// actorHarness is an actor system with fake leaders for topic "t" and a
// producer actor.
type actorHarness struct {
	system   *actor.ActorSystem
	cluster  *fakeCluster
	producer *actor.PID
}

func newActorHarness(t *testing.T, partitions int, faults leaderFaults, failIDs int, cfg Config) *actorHarness {
	t.Helper()
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	t.Cleanup(system.Shutdown)
	h := &actorHarness{system: system, cluster: &fakeCluster{topic: "t", failIDs: failIDs}}
	for i := 0; i < partitions; i++ {
		f := faults
		l := &fakeLeader{t: t, log: newFakeLog(), faults: f, rnd: rand.New(rand.NewPCG(f.seed, uint64(i)))}
		h.cluster.leaders = append(h.cluster.leaders, system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return l })))
	}
	quiet := logrus.New()
	quiet.SetOutput(io.Discard)
	props, err := ActorProps(ActorConfig{Cluster: h.cluster, Config: cfg, Logger: logrus.NewEntry(quiet)})
	if err != nil {
		t.Fatalf("ActorProps: %v", err)
	}
	h.producer = system.Root.Spawn(props)
	t.Cleanup(func() { system.Root.Stop(h.producer) })
	return h
}

// produce sends n records to each partition, value "p<partition>-<i>", in
// chunks of SendMany, and waits for every delivery. It returns the
// deliveries by value.
func (h *actorHarness) produce(t *testing.T, partitions, n int) map[string][]Delivered {
	t.Helper()
	var mu sync.Mutex
	got := map[string][]Delivered{}
	total := 0
	cb := func(value string) func(Delivered) {
		return func(d Delivered) {
			mu.Lock()
			got[value] = append(got[value], d)
			total++
			mu.Unlock()
		}
	}
	for i := 0; i < n; i += 25 {
		var recs []Send
		for j := i; j < min(i+25, n); j++ {
			for p := 0; p < partitions; p++ {
				v := fmt.Sprintf("p%d-%04d", p, j)
				recs = append(recs, Send{Topic: "t", Partition: int32(p), Value: []byte(v), Callback: cb(v)})
			}
		}
		for k := range recs { // one a message: a SendMany has one callback
			h.system.Root.Send(h.producer, &recs[k])
		}
		// Pacing, not waiting: spread the sends over time so batches of
		// every size, and retries among them, reach the faulty leaders.
		time.Sleep(time.Millisecond)
	}
	clustertest.WaitFor(t, 30*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if total < partitions*n {
			return fmt.Errorf("%d of %d records delivered", total, partitions*n)
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	return got
}

// logs returns each fake leader's log values.
func (h *actorHarness) logs(t *testing.T) [][]string {
	t.Helper()
	var out [][]string
	for _, l := range h.cluster.leaders {
		res, err := h.system.Root.RequestFuture(l, getLog{}, 5*time.Second).Result()
		if err != nil {
			t.Fatalf("getLog: %v", err)
		}
		out = append(out, res.([]string))
	}
	return out
}

func TestActorIdempotentExactlyOnce(t *testing.T) {
	const partitions, n = 2, 300
	faults := leaderFaults{seed: 7, lose: 5, delay: 10, refuse: 5, notAcked: 5}
	h := newActorHarness(t, partitions, faults, 2, Config{
		BatchSize: 300, Linger: time.Millisecond, RetryBackoff: 5 * time.Millisecond,
		RequestTimeout: 300 * time.Millisecond, DeliveryTimeout: time.Minute,
	})
	got := h.produce(t, partitions, n)
	logs := h.logs(t)
	for p := 0; p < partitions; p++ {
		want := make([]string, n)
		for i := range want {
			want[i] = fmt.Sprintf("p%d-%04d", p, i)
		}
		l := &fakeLog{values: logs[p]}
		l.checkExactlyOnce(t, fmt.Sprint("partition ", p), want)
		for _, v := range want {
			ds := got[v]
			if len(ds) != 1 || ds[0].Err != nil || ds[0].Partition != int32(p) {
				t.Fatalf("record %s: deliveries %+v", v, ds)
			}
			if off := ds[0].Offset; off < 0 || off >= int64(len(logs[p])) || logs[p][off] != v {
				t.Fatalf("record %s delivered at offset %d, which does not hold it", v, off)
			}
		}
	}
	if c := h.cluster.calls(); c != 3 {
		t.Errorf("InitProducerID called %d times, want 3 (two failures, then an id)", c)
	}
}

func TestActorNewProducerIDAfterFencing(t *testing.T) {
	const n = 200
	h := newActorHarness(t, 1, leaderFaults{seed: 1, fenceAfter: 3}, 0, Config{
		BatchSize: 300, Linger: time.Millisecond, RetryBackoff: 5 * time.Millisecond,
		RequestTimeout: time.Second, DeliveryTimeout: time.Minute,
	})
	got := h.produce(t, 1, n)
	var failed, ok []string
	for i := 0; i < n; i++ {
		v := fmt.Sprintf("p0-%04d", i)
		ds := got[v]
		switch {
		case len(ds) != 1:
			t.Fatalf("record %s: %d deliveries", v, len(ds))
		case ds[0].Err == nil:
			ok = append(ok, v)
		case errors.Is(ds[0].Err, &messages.Error{Code: messages.ErrorCode_ERROR_CODE_INVALID_PRODUCER_EPOCH}):
			failed = append(failed, v)
		default:
			t.Fatalf("record %s: %v", v, ds[0].Err)
		}
	}
	if len(failed) == 0 {
		t.Fatal("no record failed: the leader never fenced the producer")
	}
	// The failed records are one batch: consecutive.
	first := 0
	fmt.Sscanf(failed[0], "p0-%d", &first)
	for i, v := range failed {
		if want := fmt.Sprintf("p0-%04d", first+i); v != want {
			t.Fatalf("failed records %v are not one run", failed)
		}
	}
	l := &fakeLog{values: h.logs(t)[0]}
	l.checkExactlyOnce(t, "partition 0", ok)
	if c := h.cluster.calls(); c != 2 {
		t.Errorf("InitProducerID called %d times, want 2", c)
	}
}

// A request lost with the leader replica's old incarnation (the broker
// restarts a replica for every new leader epoch; what sat in the old
// actor's mailbox is dropped) is sent again as soon as the metadata shows
// the new epoch, not after the request timeout.
func TestActorResendsInflightOnNewLeaderEpoch(t *testing.T) {
	h := newActorHarness(t, 1, leaderFaults{lose: 100}, 0, Config{RequestTimeout: 20 * time.Second, Linger: -1})
	// The first leader appends and never answers (its actor is going away).
	quiet := logrus.New()
	quiet.SetOutput(io.Discard)
	const metadataMaxAge = 100 * time.Millisecond
	props, err := ActorProps(ActorConfig{Cluster: h.cluster, Config: Config{RequestTimeout: 20 * time.Second, Linger: -1},
		MetadataMaxAge: metadataMaxAge, Logger: logrus.NewEntry(quiet)})
	if err != nil {
		t.Fatal(err)
	}
	p := h.system.Root.Spawn(props)
	done := make(chan Delivered, 2)
	h.system.Root.Send(p, &Send{Topic: "t", Partition: 0, Value: []byte("a"), Callback: func(d Delivered) { done <- d }})
	// Sent to the first leader, appended there, its answer lost.
	h.cluster.mu.Lock()
	first := h.cluster.leaders[0]
	h.cluster.mu.Unlock()
	poll.Until(t, 5*time.Second, func() error {
		res, err := h.system.Root.RequestFuture(first, getLog{}, time.Second).Result()
		if err != nil {
			return fmt.Errorf("getLog: %w", err)
		}
		if vs := res.([]string); len(vs) == 0 {
			return errors.New("the first leader has not appended a yet")
		}
		return nil
	})
	// The sleep that stays: the producer refreshes metadata older than
	// MetadataMaxAge by its own clock, which a test cannot observe, so
	// the age is waited out for the next send to find the new leader.
	time.Sleep(metadataMaxAge)
	// The partition gets a new leader epoch, led by a well-behaved actor.
	good := &fakeLeader{t: t, log: newFakeLog(), rnd: rand.New(rand.NewPCG(1, 1))}
	h.cluster.mu.Lock()
	h.cluster.leaders[0] = h.system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return good }))
	h.cluster.mu.Unlock()
	h.cluster.epoch.Store(1)
	start := time.Now()
	// The next send finds the metadata old and refreshes it.
	h.system.Root.Send(p, &Send{Topic: "t", Partition: 0, Value: []byte("b"), Callback: func(d Delivered) { done <- d }})
	for i := 0; i < 2; i++ {
		select {
		case d := <-done:
			if d.Err != nil {
				t.Fatalf("delivery: %v", d.Err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("a record sent before the leader epoch changed waited for its request timeout (%v so far)", time.Since(start))
		}
	}
}

// A record's Latency runs from its hand-over to the producer (the time the
// Producer's methods stamp), not from the actor reading it, and the
// records answered together share one clock reading.
func TestActorLatencyIsFromHandOver(t *testing.T) {
	h := newActorHarness(t, 1, leaderFaults{seed: 1}, 0, Config{
		Linger: 20 * time.Millisecond, RetryBackoff: 5 * time.Millisecond,
		RequestTimeout: 5 * time.Second, DeliveryTimeout: time.Minute,
	})
	const n, early = 100, 200 * time.Millisecond
	var mu sync.Mutex
	var got []Delivered
	recs := make([]Send, n)
	for i := range recs {
		recs[i] = Send{Topic: "t", Partition: 0, Value: []byte(fmt.Sprint(i))}
	}
	start := time.Now()
	h.system.Root.Send(h.producer, &SendMany{Records: recs, at: start.Add(-early), Callback: func(d Delivered) {
		mu.Lock()
		got = append(got, d)
		mu.Unlock()
	}})
	var direct Delivered
	done := make(chan struct{})
	h.system.Root.Send(h.producer, &Send{Topic: "t", Partition: 0, Value: []byte("direct"), Callback: func(d Delivered) { direct = d; close(done) }})
	clustertest.WaitFor(t, 10*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(got) < n {
			return fmt.Errorf("%d of %d delivered", len(got), n)
		}
		return nil
	})
	<-done
	elapsed := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	for _, d := range got {
		if d.Err != nil {
			t.Fatalf("delivery failed: %v", d.Err)
		}
		if d.Latency < early || d.Latency > early+elapsed {
			t.Fatalf("latency %v, want between %v and %v (from the hand-over)", d.Latency, early, early+elapsed)
		}
		if d.Latency != got[0].Latency {
			t.Fatalf("latencies %v and %v of records answered together differ", got[0].Latency, d.Latency)
		}
	}
	// A Send from another actor, unstamped, is timed from its receipt.
	if direct.Err != nil || direct.Latency <= 0 || direct.Latency > elapsed {
		t.Fatalf("direct send: %+v, want a latency in (0, %v]", direct, elapsed)
	}
}

// TestActorTimesRequests: ProducerStats.Requests counts every answered
// produce request and times it from its send to its answer: with leaders
// that answer 15 ms late, the average and the maximum are at least that,
// and an idle producer reports nothing.
func TestActorTimesRequests(t *testing.T) {
	const late = 15 * time.Millisecond
	h := newActorHarness(t, 2, leaderFaults{seed: 1, answerAfter: late}, 0, Config{
		Linger: time.Millisecond, RequestTimeout: 5 * time.Second, DeliveryTimeout: time.Minute,
	})
	stats := func() ProducerStats {
		t.Helper()
		res, err := h.system.Root.RequestFuture(h.producer, &StatsRequest{}, 5*time.Second).Result()
		if err != nil {
			t.Fatalf("stats: %v", err)
		}
		return *res.(*ProducerStats)
	}
	if st := stats(); st.Requests != (RequestLatency{}) || st.Requests.Avg() != 0 {
		t.Fatalf("idle producer: %+v, want no requests", st.Requests)
	}
	h.produce(t, 2, 40)
	st := stats()
	r := st.Requests
	if r.Count == 0 || r.Count != st.BatchesSent {
		t.Fatalf("%d requests timed, %d batches sent (no retries here): want as many, more than 0", r.Count, st.BatchesSent)
	}
	if r.Avg() < late || r.Max < r.Avg() || r.Max > 5*time.Second {
		t.Fatalf("avg %v, max %v: want avg >= %v and avg <= max < 5s", r.Avg(), r.Max, late)
	}
	var sum RequestLatency
	sum.Add(r)
	sum.Add(RequestLatency{Count: 1, Total: time.Hour, Max: time.Hour})
	if sum.Count != r.Count+1 || sum.Total != r.Total+time.Hour || sum.Max != time.Hour {
		t.Fatalf("Add: %+v", sum)
	}
}
