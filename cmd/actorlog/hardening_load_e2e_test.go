// hardening_load_e2e_test.go: the rows of issue 11's table that load a
// host rather than send it one bad message — row 5 (a topic of 100,000
// partitions; many partitions' descriptors; deleting them while the broker
// keeps answering), row 6 (Stop and PoisonPill for the actors a host
// cannot lose, from the wire and through the client package, leave
// nothing to respawn) and row 14 (20,000 long-poll fetches parked on one
// partition; 20,000 protoactor activation requests). They run in
// TestHardening with the other rows (hardeningRows) and end with its
// post-checks.

package main

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/actors/replica"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
)

// hostSample samples the host process of e (RSS, descriptors).
func hostSample(t *testing.T, e *hardenEnv) procSample {
	t.Helper()
	if e.h.cmd == nil || e.h.cmd.Process == nil {
		t.Fatal("the host process is not running")
	}
	s, err := sampleProc(e.h.cmd.Process.Pid)
	if err != nil {
		t.Fatalf("sample the host process: %v", err)
	}
	return s
}

// dataDirEntries lists the entries of the host's data dir whose names
// start with prefix (partition directories and their tombstones).
func dataDirEntries(t *testing.T, e *hardenEnv, prefix string) []string {
	t.Helper()
	entries, err := os.ReadDir(e.dir)
	if err != nil {
		t.Fatalf("list the data dir: %v", err)
	}
	var names []string
	for _, de := range entries {
		if strings.HasPrefix(de.Name(), prefix) {
			names = append(names, de.Name())
		}
	}
	return names
}

// --- row 5 ---

// attackManyPartitions asks for a topic of 100,000 partitions: refused
// with INVALID_PARTITIONS, nothing written. Then it creates a topic of
// 500 partitions (the host's descriptors grow by at most 3 a partition
// plus slack, and it stays healthy) and deletes it: the broker answers
// metadata and the ledger takes acks=all produces within a second or two
// while the replicas stop and the directories go (renamed to tombstones
// by the broker, removed off its goroutine: actors/broker/remover.go),
// the directories are gone within seconds, and the descriptors come back.
func attackManyPartitions(t *testing.T, e *hardenEnv) {
	const (
		topic      = "row05"
		partitions = 500
		slackFDs   = 64 // connections, etcd and rolled files come and go
		quick      = 2 * time.Second
	)
	wantCLIRefusal(t, e, "INVALID_PARTITIONS", "topics", "create", topic+"-huge", "--partitions", "100000")
	if out := e.h.mustCLI("", "topics", "list"); strings.Contains(out, topic) {
		t.Fatalf("a refused topic exists: %q", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, _, err := e.meta.GetTopic(ctx, topic+"-huge"); err == nil {
		t.Fatal("the refused topic of 100,000 partitions is in etcd")
	}
	if dirs := dataDirEntries(t, e, topic); len(dirs) != 0 {
		t.Fatalf("the data dir holds %v before the topic exists", dirs)
	}

	before := hostSample(t, e)
	start := time.Now()
	if _, err := e.c.CreateTopic(ctx, topic, partitions, 1, nil); err != nil {
		t.Fatalf("create %s with %d partitions: %v", topic, partitions, err)
	}
	t.Logf("create %s answered in %v", topic, time.Since(start).Round(time.Millisecond))
	e.waitAllServing(t, topic, partitions)
	created := time.Since(start)
	after := hostSample(t, e)
	grew := after.fds - before.fds
	t.Logf("%d partitions created and serving in %v; host descriptors %d → %d (+%d), rss %dMB → %dMB",
		partitions, created.Round(time.Millisecond), before.fds, after.fds, grew, before.rssBytes>>20, after.rssBytes>>20)
	if grew > cluster.DescriptorsPerPartition*partitions+slackFDs {
		t.Fatalf("%d partitions took %d descriptors, more than %d per partition (+%d)", partitions, grew, cluster.DescriptorsPerPartition, slackFDs)
	}
	if dirs := dataDirEntries(t, e, topic+"-"); len(dirs) != partitions {
		t.Fatalf("the data dir holds %d directories of %s, want %d", len(dirs), topic, partitions)
	}
	e.healthy(t)

	start = time.Now()
	if err := e.c.DeleteTopic(ctx, topic); err != nil {
		t.Fatalf("delete %s: %v", topic, err)
	}
	t.Logf("delete %s answered in %v", topic, time.Since(start).Round(time.Millisecond))
	// While the broker stops the replicas and discards their directories:
	// metadata and an acks=all produce to the ledger each answer quickly.
	var worstMeta, worstProduce time.Duration
	checks := 0
	for deadline := time.Now().Add(30 * time.Second); ; checks++ {
		t0 := time.Now()
		mctx, mcancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := e.c.Metadata(mctx, ledgerTopic)
		mcancel()
		took := time.Since(t0)
		if err != nil || took > quick {
			t.Fatalf("metadata while %s is deleted: %v after %v; want an answer within %v", topic, err, took, quick)
		}
		worstMeta = max(worstMeta, took)
		p := int32(checks % ledgerPartitions)
		v := fmt.Sprintf("row05-delete-%d", checks)
		t0 = time.Now()
		if _, err := e.prod.Produce(ctx, producerSend(ledgerTopic, p, v)); err != nil {
			t.Fatalf("acks=all produce to %s-%d while %s is deleted: %v", ledgerTopic, p, topic, err)
		}
		e.acked[p] = append(e.acked[p], v)
		took = time.Since(t0)
		if took > quick {
			t.Fatalf("an acks=all produce to %s-%d took %v while %s was deleted; want at most %v", ledgerTopic, p, took, topic, quick)
		}
		worstProduce = max(worstProduce, took)
		if len(dataDirEntries(t, e, topic)) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after deleting %s, the data dir still holds %d of its directories (or tombstones): %.5v",
				topic, len(dataDirEntries(t, e, topic)), dataDirEntries(t, e, topic))
		}
		// Not internal/poll: every round is also a measured metadata
		// request and produce; this paces them.
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("the %d directories of %s were gone %v after the delete; meanwhile %d checks, slowest metadata %v, slowest produce %v",
		partitions, topic, time.Since(start).Round(time.Millisecond), checks+1, worstMeta.Round(time.Millisecond), worstProduce.Round(time.Millisecond))
	// The replicas closed their files.
	clustertest.WaitFor(t, 15*time.Second, func() error {
		if now := hostSample(t, e); now.fds > before.fds+slackFDs {
			return fmt.Errorf("the host holds %d descriptors after %s was deleted, %d before it was created", now.fds, topic, before.fds)
		}
		return nil
	})
}

// waitAllServing waits until every partition of topic has a leader that
// answers a fetch, with one metadata request per round (waitServing asks
// metadata once per partition).
func (e *hardenEnv) waitAllServing(t *testing.T, topic string, partitions int) {
	t.Helper()
	clustertest.WaitFor(t, 60*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		md, err := e.c.Metadata(ctx, topic)
		if err != nil {
			return fmt.Errorf("metadata of %s: %w", topic, err)
		}
		var pms []*messages.PartitionMetadata
		for _, tm := range md.Topics {
			if tm.Name == topic {
				if err := tm.ErrorCode.Err(tm.Name); err != nil {
					return fmt.Errorf("metadata of %s: %w", topic, err)
				}
				pms = tm.Partitions
			}
		}
		if len(pms) != partitions {
			return fmt.Errorf("metadata of %s: %d partitions, want %d", topic, len(pms), partitions)
		}
		for _, pm := range pms {
			pid, err := client.LeaderPID(pm)
			if err != nil {
				return fmt.Errorf("%s-%d: %w", topic, pm.Partition, err)
			}
			res, err := e.request(pid, &messages.FetchRequest{Topic: topic, Partition: pm.Partition, MaxBytes: 1 << 10,
				CurrentLeaderEpoch: -1, ReplicaId: -1, LogStartOffset: -1, LastFetchedEpoch: -1, CorrelationId: e.c.NextCorrelationID()})
			if err != nil {
				return fmt.Errorf("fetch %s-%d: %w", topic, pm.Partition, err)
			}
			if resp, ok := res.(*messages.FetchResponse); !ok || resp.ErrorCode != 0 {
				return fmt.Errorf("fetch %s-%d: answer %T %v", topic, pm.Partition, res, res)
			}
		}
		return nil
	})
}

// --- row 6 ---

// attackStopActors sends the exact inputs — Stop to the broker,
// PoisonPill to the controller and to a replica — over a raw stream (row
// 2 sent the others: PoisonPill to the broker, Stop to the controller and
// the replica), and all of them through the client package's own calls
// (RootContext.Stop and Poison on the host's PIDs, which protoactor sends
// as system and auto-receive messages). Every one is dropped and counted;
// no actor died, so actorlog_actor_restarts_total is unchanged, and the
// broker, the controller and the replica still answer.
//
// Nothing from outside the host process can kill its broker without a
// code hook (which the host must not have), so respawning after a real
// death is tested in process: host.TestBrokerAndControllerAreRespawned
// (host/health_test.go) stops both and checks they come back, /healthz
// failing meanwhile.
func attackStopActors(t *testing.T, e *hardenEnv) {
	kinds := []string{"broker", "controller", "replica", "coordinator"}
	restarts := func() []float64 {
		var out []float64
		for _, k := range kinds {
			out = append(out, e.metric(t, `actorlog_actor_restarts_total{actor="`+k+`"}`))
		}
		return out
	}
	const dropped = `actorlog_remote_refused_total{kind="dropped_envelopes"}`
	restartsBefore, droppedBefore := restarts(), e.metric(t, dropped)
	broker := actor.NewPID(e.h.addr(), messages.BrokerActorID)
	ctrl := actor.NewPID(e.h.addr(), messages.ControllerActorID)
	const ledgerPart = 1
	rep := actor.NewPID(e.h.addr(), messages.ReplicaActorID(ledgerTopic, ledgerPart))

	rs := openStream(t, dialRemoting(t, e.h.addr()))
	raw := []struct {
		msg    proto.Message
		target *actor.PID
	}{
		{&actor.Stop{}, broker},
		{&actor.PoisonPill{}, ctrl},
		{&actor.PoisonPill{}, rep},
	}
	for _, r := range raw {
		if !rs.send(&remote.MessageBatch{TypeNames: []string{string(proto.MessageName(r.msg))}, Targets: []*actor.PID{r.target},
			Envelopes: []*remote.MessageEnvelope{{MessageData: mustMarshal(t, r.msg)}}}) {
			t.Fatalf("%T to %s: the stream is gone", r.msg, r.target.Id)
		}
	}
	e.delivered(t, rs)

	root := e.c.System().Root
	for _, pid := range []*actor.PID{broker, ctrl, rep} {
		root.Stop(pid)
		root.Poison(pid)
	}
	const viaClient = 6
	clustertest.WaitFor(t, 10*time.Second, func() error {
		if d := e.metric(t, dropped) - droppedBefore; d != float64(len(raw)+viaClient) {
			return fmt.Errorf("the host dropped %v envelopes, want %d", d, len(raw)+viaClient)
		}
		return nil
	})

	// Each actor answers a request of its own.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.c.Metadata(ctx, ledgerTopic); err != nil {
		t.Fatalf("the broker after Stop and PoisonPill: %v", err)
	}
	res, err := e.request(ctrl, &messages.ControlledShutdownRequest{HostId: -6, BrokerEpoch: -6, CorrelationId: 606})
	if err != nil {
		t.Fatalf("the controller after Stop and PoisonPill: %v", err)
	}
	if resp, ok := res.(*messages.ControlledShutdownResponse); !ok || resp.CorrelationId != 606 || resp.ErrorCode != authFailed {
		t.Fatalf("the controller after Stop and PoisonPill answered %T %v; want the refusal of a client's controlled shutdown", res, res)
	}
	if leader, err := e.leader(ledgerTopic, ledgerPart); err != nil || !leader.Equal(rep) {
		t.Fatalf("%s-%d is led by %v (%v), want %v", ledgerTopic, ledgerPart, leader, err, rep)
	}
	if resp, err := e.fetch(ledgerTopic, ledgerPart, 0, 1<<10); err != nil || resp.ErrorCode != 0 || resp.HighWatermark != int64(len(e.acked[ledgerPart])) {
		t.Fatalf("the replica %s after Stop and PoisonPill: %v, %v", rep.Id, resp, err)
	}
	if now := restarts(); !slices.Equal(now, restartsBefore) {
		t.Fatalf("actorlog_actor_restarts_total of %v went from %v to %v: an actor died", kinds, restartsBefore, now)
	}
}

// --- row 14 ---

// fetchCollector is a test-client actor counting the answers to the
// flood of row 14.
type fetchCollector struct {
	answered atomic.Int64 // FetchResponses
	failed   atomic.Int64 // FetchResponses with an error code
	other    atomic.Int64 // anything else (an activation's answer)
	pid      *actor.PID
}

func newFetchCollector(t *testing.T, e *hardenEnv, name string) *fetchCollector {
	t.Helper()
	fc := &fetchCollector{}
	pid, err := e.c.System().Root.SpawnNamed(actor.PropsFromFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case *messages.FetchResponse:
			fc.answered.Add(1)
			if m.ErrorCode != 0 {
				fc.failed.Add(1)
			}
		case *actor.Started, *actor.Stopping, *actor.Stopped, *actor.Restarting:
		default:
			fc.other.Add(1)
		}
	}), name)
	if err != nil {
		t.Fatalf("spawn %s: %v", name, err)
	}
	t.Cleanup(func() { e.c.System().Root.Stop(pid) })
	fc.pid = pid
	return fc
}

// produceLatencies produces n small records to topic-0 with acks=all, one
// after another, and returns their median latency.
func (e *hardenEnv) produceLatencies(t *testing.T, topic string, n int, tag string) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var took []time.Duration
	for i := 0; i < n; i++ {
		start := time.Now()
		if _, err := e.prod.Produce(ctx, producerSend(topic, 0, fmt.Sprintf("%s-%d", tag, i))); err != nil {
			t.Fatalf("acks=all produce to %s-0 (%s): %v", topic, tag, err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	return took[len(took)/2]
}

// sendInBatches sends n envelopes made by env over rs, per batches of
// perBatch, with one type, target and sender table.
func sendInBatches(t *testing.T, rs *rawStream, n, perBatch int, typeName string, target, sender *actor.PID, env func(i int) []byte) {
	t.Helper()
	for i := 0; i < n; {
		b := &remote.MessageBatch{TypeNames: []string{typeName}, Targets: []*actor.PID{target}, Senders: []*actor.PID{sender}}
		for ; i < n && len(b.Envelopes) < perBatch; i++ {
			b.Envelopes = append(b.Envelopes, &remote.MessageEnvelope{Sender: 1, MessageData: env(i)})
		}
		if !rs.send(b) {
			t.Fatalf("the stream ended after %d of %d envelopes", i, n)
		}
	}
}

// attackParkedFlood parks 20,000 long-poll fetches (max_wait 30 s, more
// min_bytes than the test's small produces bring) at the log end of one
// partition: all but replica.DefaultMaxParkedFetches are answered at once,
// with nothing and no error; acks=all produces to the partition stay fast
// (their median at most 10× the one before the flood + 50 ms) and leave
// exactly the cap parked; one larger record answers those; the host's RSS
// comes back within 45 MB of where it was. Then 20,000 protoactor
// activation requests (the built-in "prototopic" kind) for the cluster's
// placement actor: every one dropped by the remote guard and counted,
// none answered, and RSS does not grow past the same slack.
func attackParkedFlood(t *testing.T, e *hardenEnv) {
	// A race-built host's RSS is mostly the race detector's shadow memory,
	// which grows with every goroutine and timer and is never given back:
	// TestHardeningFloodMemory repeats the row on a host built without it.
	checkRSS := !hostRaceBuilt(t)
	if !checkRSS {
		t.Log("the host is race-built: its RSS is checked by TestHardeningFloodMemory, on a host built without the race detector")
	}
	parkedFlood(t, e, checkRSS)
}

// parkedFlood is row 14's attack; checkRSS adds the checks of the host's
// RSS.
func parkedFlood(t *testing.T, e *hardenEnv, checkRSS bool) {
	const (
		topic    = "row14"
		flood    = 20000
		parkCap  = replica.DefaultMaxParkedFetches
		minBytes = 4096 // more than the measured produces append
		perBatch = 500
		rssSlack = 45 << 20
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := e.c.CreateTopic(ctx, topic, 1, 1, nil); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	e.waitServing(t, topic, 1)
	baseline := e.produceLatencies(t, topic, 10, "baseline")
	leader, err := e.leader(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	first, err := e.fetch(topic, 0, 0, 1<<10)
	if err != nil || first.ErrorCode != 0 {
		t.Fatalf("fetch %s-0: %v, %v", topic, first, err)
	}
	end := first.HighWatermark
	fc := newFetchCollector(t, e, "row14-fetches")
	rs := openStream(t, dialRemoting(t, e.h.addr()))
	rssBefore := hostSample(t, e).rssBytes

	start := time.Now()
	sendInBatches(t, rs, flood, perBatch, string(proto.MessageName(&messages.FetchRequest{})), leader, fc.pid, func(i int) []byte {
		return mustMarshal(t, &messages.FetchRequest{Topic: topic, Partition: 0, FetchOffset: end, MaxBytes: minBytes, MinBytes: minBytes,
			MaxWaitMs: int32(replica.MaxFetchWait / time.Millisecond), CurrentLeaderEpoch: -1, ReplicaId: -1, LogStartOffset: -1,
			LastFetchedEpoch: -1, CorrelationId: int64(i)})
	})
	// Well before max_wait: the fetches beyond the cap are not parked.
	clustertest.WaitFor(t, replica.MaxFetchWait/2, func() error {
		if n := fc.answered.Load(); n < flood-parkCap {
			return fmt.Errorf("%d of %d fetches answered", n, flood)
		}
		return nil
	})
	prompt := time.Since(start)
	during := e.produceLatencies(t, topic, 10, "flooded")
	if n := fc.answered.Load(); n != flood-parkCap {
		t.Fatalf("%d of %d fetches answered before any could have reached max_wait or min_bytes; want all but the %d parked", n, flood, parkCap)
	}
	t.Logf("%d fetches sent; %d answered at once in %v; acks=all produce median %v before, %v with %d parked",
		flood, flood-parkCap, prompt.Round(time.Millisecond), baseline.Round(time.Microsecond), during.Round(time.Microsecond), parkCap)
	if during > 10*baseline+50*time.Millisecond {
		t.Fatalf("with %d fetches parked, the median acks=all produce took %v; %v before the flood", parkCap, during, baseline)
	}
	// Enough bytes for every parked fetch.
	if _, err := e.prod.Produce(ctx, producerSend(topic, 0, strings.Repeat("x", 2*minBytes))); err != nil {
		t.Fatalf("produce to %s-0: %v", topic, err)
	}
	clustertest.WaitFor(t, 20*time.Second, func() error {
		if n := fc.answered.Load(); n != flood {
			return fmt.Errorf("%d of %d fetches answered after a record of %d bytes", n, flood, 2*minBytes)
		}
		return nil
	})
	if n := fc.failed.Load(); n != 0 {
		t.Fatalf("%d of the fetches were answered with an error", n)
	}
	if checkRSS {
		e.rssComesBack(t, "20,000 fetches", rssBefore, rssSlack)
	}

	// 20,000 activations of protoactor's built-in kind.
	const dropped = `actorlog_remote_refused_total{kind="dropped_envelopes"}`
	droppedBefore := e.metric(t, dropped)
	rssBefore = hostSample(t, e).rssBytes
	activator := actor.NewPID(e.h.addr(), disthash.PartitionActivatorActorName)
	sendInBatches(t, rs, flood, perBatch, string(proto.MessageName(&pcluster.ActivationRequest{})), activator, fc.pid, func(i int) []byte {
		return mustMarshal(t, &pcluster.ActivationRequest{ClusterIdentity: &pcluster.ClusterIdentity{Identity: fmt.Sprintf("row14-%d", i),
			Kind: pcluster.TopicActorKind}, RequestId: fmt.Sprint(i)})
	})
	e.delivered(t, rs)
	clustertest.WaitFor(t, 10*time.Second, func() error {
		if d := e.metric(t, dropped) - droppedBefore; d != flood {
			return fmt.Errorf("the host dropped %v envelopes, want the %d activation requests", d, flood)
		}
		return nil
	})
	if n := fc.other.Load(); n != 0 {
		t.Fatalf("%d activation requests were answered", n)
	}
	if checkRSS {
		e.rssComesBack(t, "20,000 activation requests", rssBefore, rssSlack)
	}
}

// rssComesBack waits up to 10 s for the host's RSS to be at most slack
// above before.
func (e *hardenEnv) rssComesBack(t *testing.T, what string, before, slack int64) {
	t.Helper()
	var now int64
	clustertest.WaitFor(t, 10*time.Second, func() error {
		if now = hostSample(t, e).rssBytes; now > before+slack {
			return fmt.Errorf("after %s the host's RSS is %d MB, %d MB before", what, now>>20, before>>20)
		}
		return nil
	})
	t.Logf("host RSS %d MB before %s, %d MB after", before>>20, what, now>>20)
}

// hostRaceBuilt reports whether the host binary was built with the race
// detector (ACTORLOG_E2E_RACE_HOSTS, or a race-built test).
func hostRaceBuilt(t *testing.T) bool {
	t.Helper()
	bi, err := buildinfo.ReadFile(binPath)
	if err != nil {
		t.Fatalf("build info of %s: %v", binPath, err)
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// TestHardeningFloodMemory is row 14 (attackParkedFlood) with its RSS
// checks on a host built without the race detector, when TestHardening's
// host is race-built (scripts/test.sh: ACTORLOG_E2E_RACE_HOSTS=1), then
// the post-checks.
func TestHardeningFloodMemory(t *testing.T) {
	if !hostRaceBuilt(t) {
		t.Skip("the host binary is not race-built: TestHardening's row 14 checks the host's RSS")
	}
	e := newHardenEnvOn(t, clusterBinPath)
	if hostRaceBuilt(t) && clusterBinPath == binPath {
		t.Fatal("no host binary without the race detector")
	}
	parkedFlood(t, e, true)
	e.postChecks(t, "row14-memory")
}
