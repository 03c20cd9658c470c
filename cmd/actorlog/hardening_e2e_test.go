// hardening_e2e_test.go: issue 11's table, row by row, against a real
// `actorlog host` process: each row sends the exact bad input the issue
// names, asserts the refusal (its code, and that nothing changed), and
// ends with the shared post-checks of hardening_harness_test.go — the
// process is alive, /healthz answers ok, every ledger partition takes an
// acks=all produce and serves everything ever acknowledged, and the
// controller still creates a topic that serves. One host serves every
// row; row 9 restarts it once (a batch is written into a segment while it
// is down). TestRemoteFuzzAgainstHost feeds random MessageBatches to a
// host's actor remote for ACTORLOG_FUZZ_DURATION (default 10 s).
//
// Rows 5, 6 and 14 (which load the host) are in
// hardening_load_e2e_test.go; row 3 (connection flood) is
// TestConnectionFloodDoesNotExhaustDescriptors (connlimit_e2e_test.go).
//
// To add a row: write its attack
// func(t, e) — send the bad input to e.h, assert the refusal and that
// nothing changed — and add {row, name, attack} to hardeningRows (or
// append to it from an init func in the row's own file). Rows run in the
// order of their numbers on one host, each followed by the post-checks;
// an attack that must stop or restart the host does so itself (row 9:
// e.h.stop, e.h.start, e.reconnect) and leaves it serving.

package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/klauspost/compress/zstd"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage"
	"github.com/actorlog/actorlog/storage/record"
)

// hardeningRow is one row of issue 11's table: attack sends the row's bad
// input to the host of e and asserts what must (not) come of it; the
// post-checks follow it.
type hardeningRow struct {
	row    int
	name   string
	attack func(t *testing.T, e *hardenEnv)
}

// hardeningRows are run in order on one host.
var hardeningRows = []hardeningRow{
	{1, "unimplemented remoting RPCs", attackUnimplementedRPCs},
	{2, "message batch with out-of-range indexes", attackBadIndexes},
	{4, "topic with 2^31-1 partitions", attackHugePartitionCount},
	{5, "topic with 100000 partitions; many partitions created and deleted", attackManyPartitions},
	{6, "Stop and PoisonPill for the broker, controller and a replica", attackStopActors},
	{7, "forged controlled shutdown", attackForgedControlledShutdown},
	{8, "forged ISR change and follower fetches", attackForgedReplicaRequests},
	{9, "compressed batch with an undecodable body", attackUndecodableBatch},
	{10, "fetch with max_bytes 2^31-1", attackHugeFetch},
	{11, "segment.bytes=100", attackTinySegments},
	{12, "alter __consumer_offsets configs", attackOffsetsTopicConfig},
	{13, "topic record named ../victim in etcd", attackEscapingTopicRecord},
	{14, "20,000 parked long-poll fetches; 20,000 activation requests", attackParkedFlood},
}

const (
	authFailed  = messages.ErrorCode_ERROR_CODE_CLUSTER_AUTHORIZATION_FAILED
	corruptCode = messages.ErrorCode_ERROR_CODE_CORRUPT_MESSAGE
)

func TestHardening(t *testing.T) {
	e := newHardenEnv(t)
	rows := slices.Clone(hardeningRows)
	slices.SortStableFunc(rows, func(a, b hardeningRow) int { return a.row - b.row })
	for _, r := range rows {
		name := fmt.Sprintf("row%02d %s", r.row, r.name)
		t.Run(name, func(t *testing.T) {
			defer e.use(t)()
			start := time.Now()
			r.attack(t, e)
			e.postChecks(t, fmt.Sprintf("row%02d", r.row))
			t.Logf("row %d: attack and post-checks took %v", r.row, time.Since(start).Round(time.Millisecond))
		})
	}
}

// wantCLIRefusal runs the CLI and fails unless it exits non-zero with a
// one-line error naming want.
func wantCLIRefusal(t *testing.T, e *hardenEnv, want string, args ...string) {
	t.Helper()
	_, errOut, err := e.h.cli("", args...)
	if err == nil {
		t.Fatalf("actorlog %v: exit 0; want an error naming %s", args, want)
	}
	if lines := strings.Count(strings.TrimSpace(errOut), "\n") + 1; !strings.Contains(errOut, want) || lines != 1 {
		t.Fatalf("actorlog %v: stderr %q; want one line naming %s", args, errOut, want)
	}
}

// wantCode fails unless err carries code.
func wantCode(t *testing.T, what string, err error, code messages.ErrorCode) {
	t.Helper()
	if !errors.Is(err, &messages.Error{Code: code}) {
		t.Fatalf("%s: %v; want %v", what, err, code)
	}
}

// --- row 1 ---

// attackUnimplementedRPCs calls protoactor's unimplemented Remoting RPCs
// (ListProcesses, GetProcessDiagnostics: a panic that grpc-go does not
// recover) on the host, and on the endpoint of a running `actorlog
// consume`, which must still print the record produced afterwards.
func attackUnimplementedRPCs(t *testing.T, e *hardenEnv) {
	const sample = `actorlog_remote_refused_total{kind="rejected_calls"}`
	before := e.metric(t, sample)
	callUnimplemented(t, e.h.addr())
	if d := e.metric(t, sample) - before; d != 2 {
		t.Fatalf("the host counted %v refused calls, want 2", d)
	}

	const topic = "row01-consume"
	e.createServingTopic(t, topic) // holds "hello row01-consume"
	cmd := exec.Command(binPath, "--bootstrap", e.h.addr(), "consume", topic, "--partition", "0", "--offset", "1",
		"--max-messages", "1", "--timeout", "30s")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatalf("start actorlog consume: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Logf("kill actorlog consume: %v", err)
		}
		<-done
	})
	var addrs []string
	clustertest.WaitFor(t, 15*time.Second, func() error {
		var err error
		if addrs, err = listenAddrs(cmd.Process.Pid); err != nil {
			return err
		}
		if len(addrs) == 0 {
			return errors.New("actorlog consume listens nowhere yet")
		}
		return nil
	})
	t.Logf("actorlog consume (pid %d) listens on %v", cmd.Process.Pid, addrs)
	for _, a := range addrs {
		callUnimplemented(t, a)
	}
	// The consumer is still there and delivers.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := e.prod.Produce(ctx, producerSend(topic, 0, "row01-after")); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
	select {
	case err := <-done:
		done <- err // for the cleanup
		if err != nil || strings.TrimSpace(out.String()) != "row01-after" {
			t.Fatalf("actorlog consume after the RPCs on its endpoint (%v): %v, stdout %q, stderr %q", addrs, err, out.String(), errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("actorlog consume did not deliver the record produced after the RPCs on its endpoint %v", addrs)
	}
}

// callUnimplemented calls ListProcesses and GetProcessDiagnostics at addr
// and fails unless both answer Unimplemented.
func callUnimplemented(t *testing.T, addr string) {
	t.Helper()
	rc := dialRemoting(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := rc.ListProcesses(ctx, &remote.ListProcessesRequest{Pattern: ".*", Type: remote.ListProcessesMatchType_MatchRegex})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("ListProcesses on %s: %v, want Unimplemented", addr, err)
	}
	_, err = rc.GetProcessDiagnostics(ctx, &remote.GetProcessDiagnosticsRequest{Pid: actor.NewPID(addr, messages.BrokerActorID)})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("GetProcessDiagnostics on %s: %v, want Unimplemented", addr, err)
	}
}

// --- row 2 ---

// attackBadIndexes sends MessageBatches whose envelopes index past their
// tables (target, sender, type, serializer), name unknown types, or carry
// protoactor system messages for the broker, controller and a replica;
// each is dropped, the stream keeps delivering valid envelopes, and a
// batch past the size limits ends only its own stream.
func attackBadIndexes(t *testing.T, e *hardenEnv) {
	rs := openStream(t, dialRemoting(t, e.h.addr()))
	e.delivered(t, rs)
	data := mustMarshal(t, &messages.MetadataRequest{CorrelationId: 1})
	const dropped = `actorlog_remote_refused_total{kind="dropped_envelopes"}`
	before := e.metric(t, dropped)
	bad := []struct {
		name  string
		env   *remote.MessageEnvelope
		types []string // the batch's type names, when not the valid one
	}{
		{"target past end", &remote.MessageEnvelope{Target: 1}, nil},
		{"negative target", &remote.MessageEnvelope{Target: -1}, nil},
		{"huge target", &remote.MessageEnvelope{Target: math.MaxInt32, TargetRequestId: 3}, nil},
		{"sender past end", &remote.MessageEnvelope{Sender: 2}, nil},
		{"negative sender", &remote.MessageEnvelope{Sender: -1, SenderRequestId: 4}, nil},
		{"type past end", &remote.MessageEnvelope{TypeId: 1}, nil},
		{"negative type", &remote.MessageEnvelope{TypeId: -1}, nil},
		{"no type names", &remote.MessageEnvelope{}, []string{}},
		{"serializer past end", &remote.MessageEnvelope{SerializerId: 2}, nil},
		{"negative serializer", &remote.MessageEnvelope{SerializerId: -1}, nil},
		{"json serializer", &remote.MessageEnvelope{SerializerId: 1}, nil},
		{"unknown type name", &remote.MessageEnvelope{}, []string{"no.such.Message"}},
		{"empty type name", &remote.MessageEnvelope{}, []string{""}},
	}
	for _, tc := range bad {
		b := e.probeBatch(t, 0)
		b.Senders = nil
		tc.env.MessageData = data
		b.Envelopes = []*remote.MessageEnvelope{tc.env}
		if tc.types != nil {
			b.TypeNames = tc.types
		}
		if !rs.send(b) {
			t.Fatalf("%s: the stream is gone", tc.name)
		}
		e.delivered(t, rs)
	}
	// Stopping messages, addressed to the actors a host cannot lose.
	replica := actor.NewPID(e.h.addr(), messages.ReplicaActorID(ledgerTopic, 0))
	denied := []struct {
		msg    proto.Message
		target *actor.PID
	}{
		{&actor.PoisonPill{}, actor.NewPID(e.h.addr(), messages.BrokerActorID)},
		{&actor.Stop{}, actor.NewPID(e.h.addr(), messages.ControllerActorID)},
		{&actor.PoisonPill{}, replica},
		{&actor.Stop{}, replica},
		{&actor.Terminated{Who: replica}, actor.NewPID(e.h.addr(), messages.BrokerActorID)},
		{&pcluster.PubSubBatchTransport{Envelopes: []*pcluster.PubSubEnvelope{{TypeId: 3}}}, actor.NewPID(e.h.addr(), messages.BrokerActorID)},
	}
	for _, d := range denied {
		b := &remote.MessageBatch{TypeNames: []string{string(proto.MessageName(d.msg))}, Targets: []*actor.PID{d.target},
			Envelopes: []*remote.MessageEnvelope{{MessageData: mustMarshal(t, d.msg)}}}
		if !rs.send(b) {
			t.Fatalf("%T: the stream is gone", d.msg)
		}
		e.delivered(t, rs)
	}
	if d := e.metric(t, dropped) - before; d != float64(len(bad)+len(denied)) {
		t.Fatalf("the host dropped %v envelopes, want %d", d, len(bad)+len(denied))
	}
	// A batch past the limits ends its stream, and only it.
	big := e.probeBatch(t, 0)
	for len(big.Envelopes) <= 1<<14 {
		big.Envelopes = append(big.Envelopes, &remote.MessageEnvelope{})
	}
	other := openStream(t, dialRemoting(t, e.h.addr()))
	if !other.send(big) {
		t.Fatal("the oversized batch was not sent")
	}
	select {
	case <-other.ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the host did not end the stream of an oversized batch")
	}
	e.delivered(t, rs)
}

// --- row 4 ---

// attackHugePartitionCount asks for 2^31-1 partitions (and for a topic
// past the per-topic limit, and to grow the ledger to 2^31-1): refused
// with INVALID_PARTITIONS before anything is allocated or written.
func attackHugePartitionCount(t *testing.T, e *hardenEnv) {
	before, rev := e.storedTopic(t, ledgerTopic)
	wantCLIRefusal(t, e, "INVALID_PARTITIONS", "topics", "create", "row04-huge", "--partitions", "2147483647")
	wantCLIRefusal(t, e, "INVALID_PARTITIONS", "topics", "create", "row04-over", "--partitions", "10001")
	wantCLIRefusal(t, e, "INVALID_PARTITIONS", "topics", "add-partitions", ledgerTopic, "--total", "2147483647")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := e.c.CreateTopic(ctx, "row04-go", math.MaxInt32, 1, nil)
	wantCode(t, "create a topic of 2^31-1 partitions", err, messages.ErrorCode_ERROR_CODE_INVALID_PARTITIONS)
	if out := e.h.mustCLI("", "topics", "list"); strings.Contains(out, "row04") {
		t.Fatalf("a refused topic exists: %q", out)
	}
	e.ledgerUnchanged(t, "growing the ledger to 2^31-1 partitions", before, rev)
	if entries, err := os.ReadDir(e.dir); err != nil {
		t.Fatalf("list the data dir: %v", err)
	} else {
		for _, de := range entries {
			if strings.HasPrefix(de.Name(), "row04") || strings.HasPrefix(de.Name(), ledgerTopic+"-"+strconv.Itoa(ledgerPartitions)) {
				t.Fatalf("a refused partition has a directory: %s", de.Name())
			}
		}
	}
}

// --- row 7 ---

// attackForgedControlledShutdown sends the host's controller a
// ControlledShutdownRequest naming the host with its real broker epoch
// (as `cluster describe` prints it) from a client: refused with
// CLUSTER_AUTHORIZATION_FAILED, no epoch in the answer, every partition
// keeps its leader and ISR.
func attackForgedControlledShutdown(t *testing.T, e *hardenEnv) {
	hi := e.hostInfo(t)
	before, rev := e.storedTopic(t, ledgerTopic)
	const sample = `actorlog_internal_requests_refused_total{kind="controlled_shutdown"}`
	refused := e.metric(t, sample)
	ctrl := actor.NewPID(e.h.addr(), messages.ControllerActorID)
	reqs := []*messages.ControlledShutdownRequest{
		{HostId: hi.HostId, BrokerEpoch: hi.BrokerEpoch, CorrelationId: 71},
		{HostId: hi.HostId, BrokerEpoch: hi.BrokerEpoch + 1, CorrelationId: 72},
		{HostId: hi.HostId + 1, BrokerEpoch: hi.BrokerEpoch, CorrelationId: 73},
	}
	for _, req := range reqs {
		res, err := e.request(ctrl, req)
		if err != nil {
			t.Fatalf("forged %v: %v", req, err)
		}
		resp, ok := res.(*messages.ControlledShutdownResponse)
		if !ok || resp.ErrorCode != authFailed || resp.CorrelationId != req.CorrelationId || resp.PartitionsRemaining != 0 || resp.ErrorMessage == "" {
			t.Fatalf("forged %v: answer %T %v; want %v with a message and nothing else", req, res, res, authFailed)
		}
		if strings.Contains(resp.ErrorMessage, strconv.FormatInt(hi.BrokerEpoch, 10)) {
			t.Fatalf("the refusal echoes the broker epoch: %q", resp.ErrorMessage)
		}
	}
	if d := e.metric(t, sample) - refused; d != float64(len(reqs)) {
		t.Fatalf("the host counted %v refused controlled shutdowns, want %d", d, len(reqs))
	}
	// Over a raw stream, with a sender PID whose address the sender checks
	// would take for the host itself: dropped by the remote guard.
	const dropped = `actorlog_remote_refused_total{kind="dropped_envelopes"}`
	droppedBefore := e.metric(t, dropped)
	rs := openStream(t, dialRemoting(t, e.h.addr()))
	local := []string{"", "nonhost"}
	for _, addr := range local {
		if !rs.send(&remote.MessageBatch{
			TypeNames: []string{string(proto.MessageName(reqs[0]))},
			Targets:   []*actor.PID{ctrl},
			Senders:   []*actor.PID{{Address: addr, Id: "forger"}},
			Envelopes: []*remote.MessageEnvelope{{Sender: 1, MessageData: mustMarshal(t, reqs[0])}},
		}) {
			t.Fatalf("sender address %q: the stream is gone", addr)
		}
	}
	e.delivered(t, rs)
	if d := e.metric(t, dropped) - droppedBefore; d != float64(len(local)) {
		t.Fatalf("the host dropped %v forged envelopes with a local sender address, want %d", d, len(local))
	}
	e.ledgerUnchanged(t, "forged controlled shutdowns", before, rev)
}

// --- row 8 ---

// attackForgedReplicaRequests sends, from a client, an AlterPartition
// shrinking or growing each ledger partition's ISR with the right epochs
// (and with wrong ones, probing), and follower fetches and
// OffsetForLeaderEpoch requests claiming the leader's own replica id and
// another host's: all refused with CLUSTER_AUTHORIZATION_FAILED and no
// epochs, offsets or records; the ISR, epochs and high watermark stay.
func attackForgedReplicaRequests(t *testing.T, e *hardenEnv) {
	before, rev := e.storedTopic(t, ledgerTopic)
	kinds := []string{"alter_partition", "follower_fetch", "offset_for_leader_epoch"}
	refused := map[string]float64{}
	for _, k := range kinds {
		refused[k] = e.metric(t, `actorlog_internal_requests_refused_total{kind="`+k+`"}`)
	}
	want := map[string]int{}
	ctrl := actor.NewPID(e.h.addr(), messages.ControllerActorID)
	for _, ps := range before.Partitions {
		for _, req := range []*messages.AlterPartitionRequest{
			{Topic: ledgerTopic, TopicId: before.TopicId, Partition: ps.Partition, LeaderId: ps.Leader, LeaderEpoch: ps.LeaderEpoch,
				PartitionEpoch: ps.PartitionEpoch, NewIsr: []int32{ps.Leader, ps.Leader + 1}, CorrelationId: 81},
			{Topic: ledgerTopic, TopicId: before.TopicId, Partition: ps.Partition, LeaderId: ps.Leader, LeaderEpoch: ps.LeaderEpoch,
				PartitionEpoch: ps.PartitionEpoch, NewIsr: []int32{}, CorrelationId: 82},
			{Topic: ledgerTopic, TopicId: before.TopicId, Partition: ps.Partition, LeaderId: ps.Leader, LeaderEpoch: 99,
				PartitionEpoch: 99, NewIsr: []int32{ps.Leader}, CorrelationId: 83},
		} {
			res, err := e.request(ctrl, req)
			if err != nil {
				t.Fatalf("forged %v: %v", req, err)
			}
			resp, ok := res.(*messages.AlterPartitionResponse)
			if !ok || resp.ErrorCode != authFailed || resp.Partition != nil || resp.CorrelationId != req.CorrelationId {
				t.Fatalf("forged %v: answer %T %v; want %v and no partition state", req, res, res, authFailed)
			}
			if strings.Contains(resp.ErrorMessage, "epoch") {
				t.Fatalf("the refusal mentions epochs: %q", resp.ErrorMessage)
			}
			want["alter_partition"]++
		}

		leader, err := e.leader(ledgerTopic, ps.Partition)
		if err != nil {
			t.Fatal(err)
		}
		end := int64(len(e.acked[ps.Partition]))
		for _, id := range []int32{ps.Leader, ps.Leader + 1} {
			for _, req := range []*messages.FetchRequest{
				{Topic: ledgerTopic, Partition: ps.Partition, FetchOffset: end, MaxBytes: 1 << 20, CurrentLeaderEpoch: ps.LeaderEpoch,
					ReplicaId: id, LogStartOffset: 0, LastFetchedEpoch: ps.LeaderEpoch, CorrelationId: 84},
				{Topic: ledgerTopic, Partition: ps.Partition, FetchOffset: 0, MaxBytes: 1 << 20, CurrentLeaderEpoch: ps.LeaderEpoch - 1,
					ReplicaId: id, LogStartOffset: 0, LastFetchedEpoch: -1, CorrelationId: 84},
			} {
				res, err := e.request(leader, req)
				if err != nil {
					t.Fatalf("forged follower fetch %v: %v", req, err)
				}
				resp, ok := res.(*messages.FetchResponse)
				bare := &messages.FetchResponse{CorrelationId: 84, Topic: ledgerTopic, Partition: ps.Partition, ErrorCode: authFailed}
				if ok {
					bare.ErrorMessage = resp.ErrorMessage
				}
				if !ok || resp.ErrorMessage == "" || !proto.Equal(resp, bare) {
					t.Fatalf("forged follower fetch as replica %d: answer %T %v; want %v with no offsets, epochs or records", id, res, res, authFailed)
				}
				want["follower_fetch"]++
			}
			res, err := e.request(leader, &messages.OffsetForLeaderEpochRequest{Topic: ledgerTopic, Partition: ps.Partition,
				CurrentLeaderEpoch: ps.LeaderEpoch, LeaderEpoch: ps.LeaderEpoch, ReplicaId: id, CorrelationId: 85})
			if err != nil {
				t.Fatalf("forged OffsetForLeaderEpoch: %v", err)
			}
			ep, ok := res.(*messages.OffsetForLeaderEpochResponse)
			if !ok || ep.ErrorCode != authFailed || ep.LeaderEpoch != -1 || ep.EndOffset != -1 || ep.CorrelationId != 85 {
				t.Fatalf("forged OffsetForLeaderEpoch as replica %d: answer %T %v; want %v with epoch and offset -1", id, res, res, authFailed)
			}
			want["offset_for_leader_epoch"]++
		}
		// The high watermark is where the acknowledged records end.
		if resp, err := e.fetch(ledgerTopic, ps.Partition, 0, 1<<10); err != nil || resp.HighWatermark != end {
			t.Fatalf("after forged follower fetches, %s-%d: %v, %v; want the high watermark at %d", ledgerTopic, ps.Partition, resp, err, end)
		}
	}
	for _, k := range kinds {
		if d := e.metric(t, `actorlog_internal_requests_refused_total{kind="`+k+`"}`) - refused[k]; d != float64(want[k]) {
			t.Fatalf("the host counted %v refused %s requests, want %d", d, k, want[k])
		}
	}
	e.ledgerUnchanged(t, "forged ISR changes and follower fetches", before, rev)
}

// --- row 9 ---

// reframe returns batch with its records area replaced by area, its
// length and CRC fixed (record count and offsets as they were).
func reframe(batch, area []byte) []byte {
	b := append(bytes.Clone(batch[:record.HeaderSize]), area...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-record.LogOverhead))
	binary.BigEndian.PutUint32(b[17:], record.Checksum(b))
	return b
}

// undecodableBatch is a zstd batch of n records whose compressed body is
// replaced by garbage of the same size, with a valid CRC.
func undecodableBatch(t *testing.T, n int) []byte {
	t.Helper()
	var recs []record.Record
	for i := 0; i < n; i++ {
		recs = append(recs, record.Record{Value: []byte(fmt.Sprintf("never-%d", i)), Timestamp: time.Now().UnixMilli()})
	}
	good, err := record.BuildBatch(record.CompressionZstd, recs...)
	if err != nil {
		t.Fatalf("build a zstd batch: %v", err)
	}
	garbage := make([]byte, len(good)-record.HeaderSize)
	for i := range garbage {
		garbage[i] = byte(i*37 + 11)
	}
	b := reframe(good, garbage)
	if _, err := record.CheckFrame(b); err != nil {
		t.Fatalf("the undecodable batch's frame must be valid: %v", err)
	}
	if _, err := record.Records(b, 1<<20); err == nil {
		t.Fatal("the undecodable batch decodes")
	}
	return b
}

// zstdBomb is a zstd batch of one record whose value is size zero bytes.
func zstdBomb(t *testing.T, size int) []byte {
	t.Helper()
	like, err := record.BuildBatch(record.CompressionZstd, record.Record{Value: []byte("x"), Timestamp: time.Now().UnixMilli()})
	if err != nil {
		t.Fatalf("build a zstd batch: %v", err)
	}
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatalf("zstd writer: %v", err)
	}
	body := binary.AppendVarint([]byte{0, 0, 0, 1}, int64(size)) // attributes, ts delta, offset delta, null key, value length
	if _, err := w.Write(append(binary.AppendVarint(nil, int64(len(body)+size+1)), body...)); err != nil {
		t.Fatalf("zstd: %v", err)
	}
	zeros := make([]byte, 1<<20)
	for left := size; left > 0; left -= len(zeros) {
		if _, err := w.Write(zeros[:min(left, len(zeros))]); err != nil {
			t.Fatalf("zstd: %v", err)
		}
	}
	if _, err := w.Write([]byte{0}); err != nil { // no headers
		t.Fatalf("zstd: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("zstd: %v", err)
	}
	return reframe(like, buf.Bytes())
}

// attackUndecodableBatch produces, through the raw produce path, a zstd
// batch with a valid CRC and a body that is no zstd stream, and a zstd
// bomb: refused (CORRUPT_MESSAGE, MESSAGE_TOO_LARGE) and nothing written,
// the records before and after are consumed. Then such a batch written
// straight into a segment while the host is down (as an older leader
// accepted them): `actorlog consume` prints the records before it, names
// the batch and exits non-zero, and reads past it when told to.
func attackUndecodableBatch(t *testing.T, e *hardenEnv) {
	const topic = "row09"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := e.c.CreateTopic(ctx, topic, 1, 1, map[string]string{"max.message.bytes": "65536"}); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	e.waitServing(t, topic, 1)
	if _, err := e.prod.Produce(ctx, producerSend(topic, 0, "row09-before")); err != nil {
		t.Fatalf("produce: %v", err)
	}
	leader, err := e.leader(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		batch []byte
		want  messages.ErrorCode
	}{
		{"garbage zstd body, valid CRC", undecodableBatch(t, 4), corruptCode},
		// 16 MiB of zeros, past 64 x max.message.bytes.
		{"zstd bomb", zstdBomb(t, 16<<20), messages.ErrorCode_ERROR_CODE_MESSAGE_TOO_LARGE},
	} {
		for _, acks := range []messages.Acks{messages.Acks_ACKS_LEADER, messages.Acks_ACKS_ALL} {
			res, err := e.request(leader, &messages.ProduceRequest{Topic: topic, Partition: 0, Acks: acks, TimeoutMs: 5000,
				Records: c.batch, CurrentLeaderEpoch: -1, CorrelationId: e.c.NextCorrelationID()})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			resp, ok := res.(*messages.ProduceResponse)
			if !ok || resp.ErrorCode != c.want || resp.BaseOffset != -1 {
				t.Fatalf("%s (acks %v): answer %T %v; want %v and no offset", c.name, acks, res, res, c.want)
			}
		}
	}
	if _, err := e.prod.Produce(ctx, producerSend(topic, 0, "row09-after")); err != nil {
		t.Fatalf("produce: %v", err)
	}
	var got []string
	for _, r := range e.fetchAll(t, topic, 0) {
		got = append(got, fmt.Sprintf("%d:%s", r.Offset, r.Value))
	}
	if want := []string{"0:row09-before", "1:row09-after"}; !slices.Equal(got, want) {
		t.Fatalf("%s holds %v, want %v", topic, got, want)
	}
	if out := e.h.mustCLI("", "consume", topic, "--from-beginning", "--max-messages", "2", "--timeout", "10s"); out != "row09-before\nrow09-after\n" {
		t.Fatalf("consume %s: %q", topic, out)
	}

	// On disk, written while the host is down.
	const disk = "row09-disk"
	if _, err := e.c.CreateTopic(ctx, disk, 1, 1, nil); err != nil {
		t.Fatalf("create %s: %v", disk, err)
	}
	e.waitServing(t, disk, 1)
	for _, v := range []string{"d0", "d1"} {
		if _, err := e.prod.Produce(ctx, producerSend(disk, 0, v)); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	pm, err := e.partition(disk, 0)
	if err != nil {
		t.Fatal(err)
	}
	if code := e.h.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("host exited with %d on SIGTERM; log:\n%s", code, tail(e.h.log()))
	}
	writeBadBatch(t, filepath.Join(e.dir, disk+"-0"), pm.LeaderEpoch)
	e.h.start()
	e.reconnect(t)
	e.waitServing(t, disk, 1)
	if _, err := e.prod.Produce(ctx, producerSend(disk, 0, "d4")); err != nil {
		t.Fatalf("produce after the bad batch: %v", err)
	}
	out, errOut, err := e.h.cli("", "consume", disk, "--from-beginning", "--timeout", "5s")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("consume over an undecodable batch: %v (want a non-zero exit); stdout %q, stderr %q", err, out, errOut)
	}
	if out != "d0\nd1\n" || !strings.Contains(errOut, "undecodable") || !strings.Contains(errOut, "--offset 4") {
		t.Fatalf("consume over an undecodable batch: stdout %q (want d0, d1), stderr %q (want the batch named and --offset 4)", out, errOut)
	}
	if out := e.h.mustCLI("", "consume", disk, "--partition", "0", "--offset", "4", "--max-messages", "1", "--timeout", "10s"); out != "d4\n" {
		t.Fatalf("consume past the undecodable batch: %q", out)
	}
}

// writeBadBatch appends an undecodable two-record batch at the log end of
// the partition log in dir, as a follower copies one (no decoding).
func writeBadBatch(t *testing.T, dir string, epoch int32) {
	t.Helper()
	l, err := storage.Open(dir, storage.Config{})
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	leo := l.LogEndOffset()
	if leo != 2 {
		l.Close()
		t.Fatalf("%s ends at %d, want 2", dir, leo)
	}
	b := undecodableBatch(t, 2)
	record.SetBaseOffset(b, leo)
	record.SetLeaderEpoch(b, epoch)
	if _, err := l.AppendReplicated(b); err != nil {
		l.Close()
		t.Fatalf("append the undecodable batch to %s: %v", dir, err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("close %s: %v", dir, err)
	}
}

// --- row 10 ---

// attackHugeFetch fills a partition past fetch.max.bytes (55 MiB) with
// 8 MB batches and fetches it with max_bytes 2^31-1: at most the cap
// comes back, in whole batches, and the rest on the next fetch; two such
// fetches at once leave the host alive.
func attackHugeFetch(t *testing.T, e *hardenEnv) {
	const (
		topic     = "row10"
		batches   = 8
		valueSize = 8_000_000
		fetchCap  = 55 << 20 // Kafka's fetch.max.bytes
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := e.c.CreateTopic(ctx, topic, 1, 1, map[string]string{"max.message.bytes": "8500000"}); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	e.waitServing(t, topic, 1)
	leader, err := e.leader(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	value := make([]byte, valueSize)
	for i := range value {
		value[i] = byte(i)
	}
	total := 0
	for i := 0; i < batches; i++ {
		b, err := record.BuildBatch(record.CompressionNone, record.Record{Value: value, Timestamp: time.Now().UnixMilli()})
		if err != nil {
			t.Fatalf("build a batch: %v", err)
		}
		total += len(b)
		res, err := e.request(leader, &messages.ProduceRequest{Topic: topic, Partition: 0, Acks: messages.Acks_ACKS_LEADER, TimeoutMs: 10000,
			Records: b, CurrentLeaderEpoch: -1, CorrelationId: e.c.NextCorrelationID()})
		if err != nil {
			t.Fatalf("produce batch %d: %v", i, err)
		}
		if resp, ok := res.(*messages.ProduceResponse); !ok || resp.ErrorCode != 0 || resp.BaseOffset != int64(i) {
			t.Fatalf("produce batch %d: answer %T %v", i, res, res)
		}
	}
	// A 55 MiB answer crosses protoactor's remote as one message: on a
	// loaded machine that takes longer than the client's request timeout.
	huge := func(offset int64) (*messages.FetchResponse, error) {
		res, err := e.c.System().Root.RequestFuture(leader, &messages.FetchRequest{Topic: topic, Partition: 0, FetchOffset: offset,
			MaxBytes: math.MaxInt32, CurrentLeaderEpoch: -1, ReplicaId: -1, LogStartOffset: -1, LastFetchedEpoch: -1,
			CorrelationId: e.c.NextCorrelationID()}, time.Minute).Result()
		if err != nil {
			return nil, fmt.Errorf("fetch at %d with max_bytes 2^31-1: %w", offset, err)
		}
		resp, ok := res.(*messages.FetchResponse)
		if !ok {
			return nil, fmt.Errorf("fetch at %d with max_bytes 2^31-1: answer %T", offset, res)
		}
		return resp, nil
	}
	resp, err := huge(0)
	if err != nil {
		t.Fatalf("fetch with max_bytes 2^31-1: %v", err)
	}
	n := len(resp.Records)
	recs, err := decodeBatches(resp.Records)
	if resp.ErrorCode != 0 || err != nil || n == 0 || n > fetchCap || n >= total || len(recs) == 0 || recs[0].Offset != 0 {
		t.Fatalf("fetch with max_bytes 2^31-1 of a %d-byte log: %v, %d bytes, %d records (%v); want at most %d bytes of whole batches",
			total, resp.ErrorCode, n, len(recs), err, fetchCap)
	}
	next := recs[len(recs)-1].Offset + 1
	rest, err := huge(next)
	if err != nil || rest.ErrorCode != 0 {
		t.Fatalf("the next fetch at %d: %v, %v", next, rest, err)
	}
	if more, err := decodeBatches(rest.Records); err != nil || len(recs)+len(more) != batches {
		t.Fatalf("the two fetches returned %d+%d records (%v), want %d", len(recs), len(more), err, batches)
	}
	rss := func() string {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", e.h.cmd.Process.Pid))
		if err != nil {
			return err.Error()
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "VmRSS:") {
				return strings.TrimSpace(strings.TrimPrefix(l, "VmRSS:"))
			}
		}
		return "?"
	}
	rssBefore := rss()
	concurrentStart := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := huge(0)
			switch {
			case err != nil:
				errs[i] = err
			case r.ErrorCode != 0 || len(r.Records) > fetchCap:
				errs[i] = fmt.Errorf("%v, %d bytes", r.ErrorCode, len(r.Records))
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("concurrent fetches with max_bytes 2^31-1: %v", err)
	}
	t.Logf("log of %d bytes: one fetch with max_bytes 2^31-1 returned %d; host RSS %s before two at once (%v), %s after",
		total, n, rssBefore, time.Since(concurrentStart).Round(time.Millisecond), rss())
	if err := e.c.DeleteTopic(ctx, topic); err != nil {
		t.Fatalf("delete %s: %v", topic, err)
	}
}

// --- row 11 ---

// attackTinySegments sets segment.bytes=100 (and just under Kafka 4's
// 1 MiB minimum) on create and alter: refused with INVALID_CONFIG.
func attackTinySegments(t *testing.T, e *hardenEnv) {
	before, rev := e.storedTopic(t, ledgerTopic)
	wantCLIRefusal(t, e, "INVALID_CONFIG", "topics", "create", "row11", "--config", "segment.bytes=100")
	wantCLIRefusal(t, e, "INVALID_CONFIG", "topics", "create", "row11", "--config", "segment.bytes=1048575")
	wantCLIRefusal(t, e, "INVALID_CONFIG", "topics", "alter", ledgerTopic, "--config", "segment.bytes=100")
	if out := e.h.mustCLI("", "topics", "list"); strings.Contains(out, "row11") {
		t.Fatalf("a refused topic exists: %q", out)
	}
	e.ledgerUnchanged(t, "segment.bytes=100 on the ledger", before, rev)
}

// --- row 12 ---

// attackOffsetsTopicConfig commits a group's offsets, then sets
// retention.ms=1 on __consumer_offsets (CLI and Go client): refused with
// POLICY_VIOLATION, the topic's record unchanged, the committed offsets
// still there.
func attackOffsetsTopicConfig(t *testing.T, e *hardenEnv) {
	const group = "row12"
	if out := e.h.mustCLI("", "consume", ledgerTopic, "--group", group, "--from-beginning", "--max-messages", "3", "--timeout", "20s"); strings.Count(out, "\n") != 3 {
		t.Fatalf("group consume printed %q, want 3 records", out)
	}
	describe := describeGroupCLI(t, e.h, group)
	if !slices.ContainsFunc(describe.Offsets, func(o groupOffset) bool { return o.Topic == ledgerTopic }) {
		t.Fatalf("group %s has no committed offsets of %s: %+v", group, ledgerTopic, describe)
	}
	before, rev := e.storedTopic(t, "__consumer_offsets")
	wantCLIRefusal(t, e, "POLICY_VIOLATION", "topics", "alter", "__consumer_offsets", "--config", "retention.ms=1")
	wantCLIRefusal(t, e, "POLICY_VIOLATION", "topics", "alter", "__consumer_offsets", "--config", "cleanup.policy=delete")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := e.c.AlterTopicConfigs(ctx, "__consumer_offsets", map[string]string{"retention.ms": "1"})
	wantCode(t, "retention.ms=1 on __consumer_offsets", err, messages.ErrorCode_ERROR_CODE_POLICY_VIOLATION)
	now, nowRev := e.storedTopic(t, "__consumer_offsets")
	if nowRev != rev || !proto.Equal(now, before) {
		t.Fatalf("__consumer_offsets changed in etcd (revision %d → %d): %v", rev, nowRev, now.Configs)
	}
	if td := e.h.mustDescribeTopic("__consumer_offsets"); td.Configs["retention.ms"] == "1" || td.Configs["cleanup.policy"] == "delete" {
		t.Fatalf("describe __consumer_offsets: configs %v", td.Configs)
	}
	if after := describeGroupCLI(t, e.h, group); !reflect.DeepEqual(after, describe) {
		t.Fatalf("group %s changed:\n%+v\nwas\n%+v", group, after, describe)
	}
}

// --- row 13 ---

// attackEscapingTopicRecord writes topic records named ../victim (under
// its own key and under another) straight into the host's etcd, next to
// directories of those names outside the data dir: the host logs and
// ignores them, creates nothing outside its data dir, and removes nothing
// there when the records are deleted.
func attackEscapingTopicRecord(t *testing.T, e *hardenEnv) {
	keep := func(dir string) string { return filepath.Join(e.root, dir, "keep") }
	for _, d := range []string{"victim-0", "victim2-0"} {
		if err := os.MkdirAll(filepath.Join(e.root, d), 0o755); err != nil {
			t.Fatalf("create %s: %v", d, err)
		}
		if err := os.WriteFile(keep(d), []byte("not the host's"), 0o644); err != nil {
			t.Fatalf("write %s: %v", keep(d), err)
		}
	}
	listing := func() []string {
		t.Helper()
		var names []string
		for _, dir := range []string{e.root, filepath.Dir(e.root)} {
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatalf("list %s: %v", dir, err)
			}
			for _, de := range entries {
				names = append(names, filepath.Join(dir, de.Name()))
			}
		}
		slices.Sort(names)
		return names
	}
	before := listing()

	ledger, _ := e.storedTopic(t, ledgerTopic)
	keys := cluster.NewKeys("")
	records := map[string]string{ // key → name in the record
		keys.Topic("../victim"): "../victim",
		keys.Topic("victim2"):   "../victim2",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for key, name := range records {
		tm := proto.Clone(ledger).(*messages.TopicMetadata)
		tm.Name, tm.TopicId = name, cluster.NewTopicID()
		tm.Partitions = tm.Partitions[:1]
		val, err := proto.Marshal(tm)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		if _, err := e.etcd.Put(ctx, key, string(val)); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
	}
	// The host reads and refuses each record.
	clustertest.WaitFor(t, 15*time.Second, func() error {
		log := e.h.log()
		for key := range records {
			if !strings.Contains(log, "ignoring an invalid metadata record") || !strings.Contains(log, key) {
				return fmt.Errorf("the host has not logged ignoring %s", key)
			}
		}
		return nil
	})
	if out := e.h.mustCLI("", "topics", "list"); strings.Contains(out, "victim") {
		t.Fatalf("topics list shows the forged records: %q", out)
	}
	// Whatever the host does with a topic, it does before it serves the
	// next one created: a sync point instead of a sleep.
	e.createServingTopic(t, "row13-sync-a")
	if after := listing(); !slices.Equal(after, before) {
		t.Fatalf("entries outside the data dir changed:\n%v\nwere\n%v", after, before)
	}
	for key := range records {
		if _, err := e.etcd.Delete(ctx, key); err != nil {
			t.Fatalf("delete %s: %v", key, err)
		}
	}
	e.createServingTopic(t, "row13-sync-b")
	if after := listing(); !slices.Equal(after, before) {
		t.Fatalf("entries outside the data dir changed after the delete:\n%v\nwere\n%v", after, before)
	}
	for _, d := range []string{"victim-0", "victim2-0"} {
		if b, err := os.ReadFile(keep(d)); err != nil || string(b) != "not the host's" {
			t.Fatalf("%s: %q, %v", keep(d), b, err)
		}
	}
	entries, err := os.ReadDir(e.dir)
	if err != nil {
		t.Fatalf("list the data dir: %v", err)
	}
	for _, de := range entries {
		if strings.Contains(de.Name(), "victim") {
			t.Fatalf("the data dir has %s", de.Name())
		}
	}
}

// --- fuzz ---

// fuzzDuration is how long TestRemoteFuzzAgainstHost sends:
// ACTORLOG_FUZZ_DURATION (a Go duration), default 10 s.
func fuzzDuration(t *testing.T) time.Duration {
	t.Helper()
	v := os.Getenv("ACTORLOG_FUZZ_DURATION")
	if v == "" {
		return 10 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("ACTORLOG_FUZZ_DURATION=%q: want a positive Go duration (%v)", v, err)
	}
	return d
}

// fuzzSeed is ACTORLOG_FUZZ_SEED (a run to replay), else a new seed; it
// logs the seed either way.
func fuzzSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("ACTORLOG_FUZZ_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("ACTORLOG_FUZZ_SEED=%q: %v", v, err)
		}
		seed = s
	}
	t.Logf("seed %d (ACTORLOG_FUZZ_SEED replays it)", seed)
	return seed
}

// TestRemoteFuzzAgainstHost sends random MessageBatches — valid gRPC and
// protobuf framing; random tables, indexes, type names, serializers,
// request ids, headers and payloads (random bytes, and well-formed
// actorlog requests with random fields) — to a host's actor remote for
// ACTORLOG_FUZZ_DURATION, from senders that are no host, then runs the
// post-checks and asserts that no handler panicked.
// ACTORLOG_FUZZ_SEED replays a run.
func TestRemoteFuzzAgainstHost(t *testing.T) {
	e := newHardenEnv(t)
	seed := fuzzSeed(t)
	rng := rand.New(rand.NewPCG(seed, 11))
	hi := e.hostInfo(t)
	ledger, _ := e.storedTopic(t, ledgerTopic)
	f := newBatchFuzzer(rng, e, hi, ledger)

	rc := dialRemoting(t, e.h.addr())
	panicsBefore := e.metric(t, `actorlog_remote_refused_total{kind="panics"}`)
	droppedBefore := e.metric(t, `actorlog_remote_refused_total{kind="dropped_envelopes"}`)
	rs := openStream(t, rc)
	deadline := time.Now().Add(fuzzDuration(t))
	sent, streams := 0, 1
	for time.Now().Before(deadline) {
		select {
		case <-rs.ended:
			// A payload protoactor cannot unmarshal ends the stream:
			// open another.
			rs = openStream(t, rc)
			streams++
		default:
		}
		if rs.send(f.batch()) {
			sent++
		} else {
			<-rs.ended
		}
		if sent%64 == 63 {
			// Let the host's mailboxes drain now and then: the point is
			// what a batch does, not a flood (that is another row).
			time.Sleep(time.Millisecond)
		}
	}
	t.Logf("%d batches on %d streams; the host dropped %v envelopes", sent, streams,
		e.metric(t, `actorlog_remote_refused_total{kind="dropped_envelopes"}`)-droppedBefore)
	if sent == 0 {
		t.Fatal("no batch was sent")
	}
	if d := e.metric(t, `actorlog_remote_refused_total{kind="dropped_envelopes"}`) - droppedBefore; d == 0 {
		t.Error("the host dropped no envelope: the fuzzer sends nothing bad")
	}
	if d := e.metric(t, `actorlog_remote_refused_total{kind="panics"}`) - panicsBefore; d != 0 {
		t.Errorf("%v handler panics recovered on the host; log:\n%s", d, tail(e.h.log()))
	}
	e.delivered(t, openStream(t, rc))
	e.postChecks(t, "fuzz")
}

// batchFuzzer makes random MessageBatches for one host.
type batchFuzzer struct {
	rng      *rand.Rand
	types    []string
	targets  []*actor.PID
	senders  []*actor.PID
	payloads []func() []byte
}

func newBatchFuzzer(rng *rand.Rand, e *hardenEnv, hi *messages.HostInfo, ledger *messages.TopicMetadata) *batchFuzzer {
	f := &batchFuzzer{rng: rng}
	// Every actorlog message type but the admin requests that any client
	// may send today to destroy or reshape a topic (nothing is
	// authenticated yet): any payload with a string in field 1 — a
	// MetadataRequest naming the ledger — is a DeleteTopicRequest for it.
	// Then protoactor's system and cluster types, and names that are no
	// type.
	destructive := map[string]bool{}
	for _, m := range []proto.Message{&messages.DeleteTopicRequest{}, &messages.AlterTopicConfigsRequest{},
		&messages.CreatePartitionsRequest{}, &messages.ReassignPartitionsRequest{}} {
		destructive[string(proto.MessageName(m))] = true
	}
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		if name := string(mt.Descriptor().FullName()); strings.HasPrefix(name, "actorlog.") && !destructive[name] {
			f.types = append(f.types, name)
		}
		return true
	})
	slices.Sort(f.types)
	f.types = append(f.types, "actor.PoisonPill", "actor.Stop", "actor.Watch", "actor.Unwatch", "actor.Terminated", "actor.Touch",
		"actor.Restart", "actor.DeadLetterResponse", "cluster.PubSubBatchTransport", "cluster.ActivationRequest",
		"cluster.GossipRequest", "remote.ActorPidRequest", "no.such.Type", "", "actorlog.messages.", strings.Repeat("x", 600))
	addr := e.h.addr()
	for _, id := range []string{messages.BrokerActorID, messages.ControllerActorID, messages.ReplicaActorID(ledgerTopic, 0),
		messages.ReplicaActorID(ledgerTopic, 1), messages.ReplicaActorID(ledgerTopic, 7), messages.CoordinatorActorID(0),
		"broker/nope", "nope", "$1", "", "activator", "partition-activator"} {
		f.targets = append(f.targets, actor.NewPID(addr, id))
	}
	f.targets = append(f.targets, actor.NewPID("10.255.0.1:1", "elsewhere"))
	// Senders are never a host: the test client's echo actor, and
	// addresses nobody listens on.
	f.senders = []*actor.PID{e.echo, actor.NewPID(e.echo.Address, "nobody"), actor.NewPID("127.0.0.1:1", "x"),
		actor.NewPID("10.255.0.1:1", "y")}
	randBytes := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	marshal := func(m proto.Message) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			panic(fmt.Sprintf("marshal %T: %v", m, err)) // only this file's messages: a bug here
		}
		return b
	}
	i32 := func() int32 { return []int32{-1, 0, 1, 2, math.MaxInt32, math.MinInt32, rng.Int32()}[rng.IntN(7)] }
	i64 := func() int64 { return []int64{-2, -1, 0, 1, math.MaxInt64, rng.Int64()}[rng.IntN(6)] }
	part := func() *messages.PartitionState { return ledger.Partitions[rng.IntN(len(ledger.Partitions))] }
	topic := func() string {
		return []string{ledgerTopic, "fuzz-junk", "", "../x", "__consumer_offsets"}[rng.IntN(5)]
	}
	f.payloads = []func() []byte{
		func() []byte { return nil },
		func() []byte { return randBytes(rng.IntN(64)) },
		func() []byte { return randBytes(rng.IntN(2048)) },
		func() []byte {
			return marshal(&messages.MetadataRequest{CorrelationId: i64(), Topics: []string{topic()}})
		},
		func() []byte {
			return marshal(&messages.FetchRequest{Topic: topic(), Partition: i32(), FetchOffset: i64(), MaxBytes: i32(), MinBytes: i32(),
				MaxWaitMs: int32(rng.IntN(200)), CurrentLeaderEpoch: i32(), ReplicaId: i32(), LastFetchedEpoch: i32(), CorrelationId: i64()})
		},
		func() []byte {
			// Never a valid batch: the ledger holds only what the test
			// acknowledged.
			return marshal(&messages.ProduceRequest{Topic: topic(), Partition: i32(), Acks: messages.Acks(i32()), TimeoutMs: int32(rng.IntN(100)),
				Records: randBytes(rng.IntN(256)), CurrentLeaderEpoch: i32(), CorrelationId: i64()})
		},
		func() []byte {
			return marshal(&messages.ControlledShutdownRequest{HostId: []int32{hi.HostId, i32()}[rng.IntN(2)],
				BrokerEpoch: []int64{hi.BrokerEpoch, i64()}[rng.IntN(2)], CorrelationId: i64()})
		},
		func() []byte {
			p := part()
			return marshal(&messages.AlterPartitionRequest{Topic: ledgerTopic, TopicId: ledger.TopicId, Partition: p.Partition, LeaderId: p.Leader,
				LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewIsr: []int32{i32()}, CorrelationId: i64()})
		},
		func() []byte {
			return marshal(&messages.OffsetForLeaderEpochRequest{Topic: topic(), Partition: i32(), CurrentLeaderEpoch: i32(),
				LeaderEpoch: i32(), ReplicaId: i32(), CorrelationId: i64()})
		},
		func() []byte {
			// Topics the fuzzer may create: a bounded set, few partitions
			// or absurdly many.
			return marshal(&messages.CreateTopicRequest{Name: fmt.Sprintf("fuzz-%d", rng.IntN(4)),
				Partitions: []int32{-1, 0, 1, 2, math.MaxInt32}[rng.IntN(5)], ReplicationFactor: i32(), CorrelationId: i64()})
		},
		func() []byte { return marshal(&actor.PoisonPill{}) },
		func() []byte { return marshal(&actor.Terminated{Who: f.targets[rng.IntN(len(f.targets))]}) },
	}
	return f
}

// idx is a random index around a table of n: [-2, n+1], and now and
// then far outside.
func (f *batchFuzzer) idx(n int) int32 {
	if f.rng.IntN(16) == 0 {
		return []int32{math.MaxInt32, math.MinInt32}[f.rng.IntN(2)]
	}
	return int32(f.rng.IntN(n+4) - 2)
}

func (f *batchFuzzer) batch() *remote.MessageBatch {
	rng := f.rng
	b := &remote.MessageBatch{}
	for range rng.IntN(4) {
		b.TypeNames = append(b.TypeNames, f.types[rng.IntN(len(f.types))])
	}
	for range rng.IntN(4) {
		b.Targets = append(b.Targets, f.targets[rng.IntN(len(f.targets))])
	}
	for range rng.IntN(3) {
		b.Senders = append(b.Senders, f.senders[rng.IntN(len(f.senders))])
	}
	for range 1 + rng.IntN(6) {
		env := &remote.MessageEnvelope{
			TypeId: f.idx(len(b.TypeNames)), Target: f.idx(len(b.Targets)), Sender: f.idx(len(b.Senders) + 1),
			SerializerId: []int32{-1, 0, 0, 0, 0, 1, 2, math.MaxInt32}[rng.IntN(8)],
			MessageData:  f.payloads[rng.IntN(len(f.payloads))](),
		}
		if rng.IntN(4) == 0 {
			env.TargetRequestId, env.SenderRequestId = rng.Uint32(), rng.Uint32()
		}
		if rng.IntN(8) == 0 {
			env.MessageHeader = &remote.MessageHeader{HeaderData: map[string]string{"k": "v", fmt.Sprint(rng.Uint32()): ""}}
		}
		b.Envelopes = append(b.Envelopes, env)
	}
	return b
}

// TestHardeningForgedHostSender is row 7 over a raw stream with the
// sender PID naming the host's own address: the internal-request checks
// take such a sender for the host itself (cluster.SenderIsHost: a sender
// with the receiver's address is local), so the remote guard drops every
// envelope whose sender claims its own process's advertised address.
// (In a cluster, naming another registered host's address passes until
// TLS binds senders to connections; cluster/senders.go.)
func TestHardeningForgedHostSender(t *testing.T) {
	e := newHardenEnv(t)
	hi := e.hostInfo(t)
	before, rev := e.storedTopic(t, ledgerTopic)
	req := &messages.ControlledShutdownRequest{HostId: hi.HostId, BrokerEpoch: hi.BrokerEpoch, CorrelationId: 79}
	rs := openStream(t, dialRemoting(t, e.h.addr()))
	if !rs.send(&remote.MessageBatch{
		TypeNames: []string{string(proto.MessageName(req))},
		Targets:   []*actor.PID{actor.NewPID(e.h.addr(), messages.ControllerActorID)},
		Senders:   []*actor.PID{actor.NewPID(e.h.addr(), "forger")},
		Envelopes: []*remote.MessageEnvelope{{Sender: 1, MessageData: mustMarshal(t, req)}},
	}) {
		t.Fatal("the stream is gone")
	}
	e.delivered(t, rs)
	// Give a shutdown that got through the time to take effect.
	time.Sleep(2 * time.Second)
	e.ledgerUnchanged(t, "a controlled shutdown from a sender claiming the host's address", before, rev)
	e.postChecks(t, "forged-host-sender")
}
