// hardening_harness_test.go: the harness of the hardening tests (issue 11,
// "How it is checked"): one real `actorlog host` process shared by the
// table's rows, a ledger topic whose every acknowledged record is kept,
// and the checks every row ends with — the process is alive, /healthz
// answers ok, every ledger partition takes an acks=all produce and serves
// a consumer fetch of everything ever acknowledged, in order and once, and
// the controller still creates a topic that then serves. Also the raw
// tools the rows attack with: a gRPC client of the host's actor remote
// (protoactor's Remoting service) that sends MessageBatches of its own
// making, an etcd client of the host's embedded member, and a reader of
// the host's /metrics.

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/actors/producer"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage/record"
)

const (
	// ledgerTopic is the topic whose acknowledged records the post-checks
	// track; ledgerPartitions its partition count.
	ledgerTopic      = "ledger"
	ledgerPartitions = 3
	// echoActorName is the test client's actor that collects the answers
	// to requests sent over raw MessageBatches.
	echoActorName = "hardening-echo"
)

// hardenEnv is one host process under attack and what the test knows
// about it. Rows run one after another on the test goroutine of their
// subtest; nothing here is shared with other goroutines except the echo
// actor's map.
type hardenEnv struct {
	t    *testing.T // the test that owns the host and clients
	h    *hostProc
	root string // parent of the host's data dir: outside it
	dir  string // the host's data dir
	c    *client.Client
	prod *producer.Producer
	etcd *clientv3.Client
	meta *cluster.Store
	echo *actor.PID
	// answered holds the correlation ids of the MetadataResponses the echo
	// actor received.
	answered sync.Map
	tokens   atomic.Int64
	// acked is every ledger record acknowledged, per partition, in
	// acknowledgement order.
	acked  [ledgerPartitions][]string
	rounds int
	// disconnect closes the current client and producer.
	disconnect func()
}

// newHardenEnv starts a host with its data dir inside a fresh directory
// (so a path escaping the data dir is still inside the test's), a client,
// an etcd client of the host's member, the ledger topic and a first round
// of acknowledged records.
func newHardenEnv(t *testing.T, extra ...string) *hardenEnv {
	t.Helper()
	return newHardenEnvOn(t, "", extra...)
}

// newHardenEnvOn is newHardenEnv with the host running bin (binPath when
// ""): clusterBinPath is never race-built, for checks of the host's
// memory.
func newHardenEnvOn(t *testing.T, bin string, extra ...string) *hardenEnv {
	t.Helper()
	root := t.TempDir()
	e := &hardenEnv{root: root, dir: root + "/data"}
	base := freeBase(t)
	args := append([]string{"--offsets-topic-partitions", "2", "--group-initial-rebalance-delay", "0s"}, extra...)
	if bin == "" {
		e.h = startHost(t, e.dir, base, args...)
	} else {
		e.h = &hostProc{t: t, dir: e.dir, base: base, extra: args, bin: bin, logPath: hostLogPath(t, base)}
		e.h.start()
		t.Cleanup(func() {
			if code := e.h.stop(syscall.SIGTERM); code > 0 {
				t.Errorf("host exited with %d on SIGTERM; log:\n%s", code, tail(e.h.log()))
			}
		})
	}
	e.t = t
	e.connect(t)
	e.tokens.Store(1 << 40)

	etcdURL := "http://127.0.0.1:" + strconv.Itoa(base+2)
	ec, err := clientv3.New(clientv3.Config{Endpoints: []string{etcdURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("etcd client of %s: %v", etcdURL, err)
	}
	t.Cleanup(func() {
		if err := ec.Close(); err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("closing the etcd client: %v", err)
		}
	})
	e.etcd = ec
	quiet := logrus.New()
	quiet.SetOutput(io.Discard)
	e.meta = cluster.NewStore(ec, "", logrus.NewEntry(quiet))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.c.CreateTopic(ctx, ledgerTopic, ledgerPartitions, 1, nil); err != nil {
		t.Fatalf("create %s: %v", ledgerTopic, err)
	}
	e.waitServing(t, ledgerTopic, ledgerPartitions)
	e.produceRound(t, "setup")
	return e
}

// connect starts the test client, its ledger producer and the echo
// actor, all closed with e.t (or earlier, by reconnect); failures go to
// t.
func (e *hardenEnv) connect(t *testing.T) {
	t.Helper()
	l := logrus.New()
	l.SetOutput(io.Discard)
	c, err := client.New(client.Config{Bootstrap: []string{e.h.addr()}, Logger: logrus.NewEntry(l), RequestTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("client of %s: %v", e.h.addr(), err)
	}
	p, err := producer.New(c, producer.ActorConfig{Acks: messages.Acks_ACKS_ALL})
	if err != nil {
		c.Close()
		t.Fatalf("ledger producer: %v", err)
	}
	echo, err := c.System().Root.SpawnNamed(actor.PropsFromFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(*messages.MetadataResponse); ok {
			e.answered.Store(m.CorrelationId, true)
		}
	}), echoActorName)
	if err != nil {
		c.Close()
		t.Fatalf("spawn the echo actor: %v", err)
	}
	e.c, e.prod, e.echo = c, p, echo
	var once sync.Once
	e.disconnect = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := p.Close(ctx); err != nil {
				e.t.Logf("closing the ledger producer: %v", err)
			}
			c.Close()
		})
	}
	e.t.Cleanup(e.disconnect)
}

// reconnect replaces the client (after a host restart: a fresh client
// does not wait for protoactor to notice the old connection is gone).
func (e *hardenEnv) reconnect(t *testing.T) {
	t.Helper()
	e.disconnect()
	e.connect(t)
}

// use points the host helper's failures at t (a row's subtest) until the
// returned function restores the previous test.
func (e *hardenEnv) use(t *testing.T) func() {
	prev := e.h.t
	e.h.t = t
	return func() { e.h.t = prev }
}

// postChecks are what every row ends with (issue 11, "How it is
// checked").
func (e *hardenEnv) postChecks(t *testing.T, row string) {
	t.Helper()
	e.alive(t)
	e.healthy(t)
	e.produceRound(t, row)
	e.checkLedger(t)
	e.createServingTopic(t, "post-"+row)
}

// alive fails when the host process is gone (or a zombie).
func (e *hardenEnv) alive(t *testing.T) {
	t.Helper()
	if e.h.cmd == nil || e.h.cmd.Process == nil {
		t.Fatal("the host process is not running")
	}
	pid := e.h.cmd.Process.Pid
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("host process %d: %v; log:\n%s", pid, err, tail(e.h.log()))
	}
	// The state follows the parenthesised command name.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X' {
		t.Fatalf("host process %d has exited (stat %q); log:\n%s", pid, s, tail(e.h.log()))
	}
}

// healthy fails unless /healthz answers 200 with status ok.
func (e *hardenEnv) healthy(t *testing.T) {
	t.Helper()
	resp, err := http.Get("http://" + e.h.httpAddr() + "/healthz")
	if err != nil {
		t.Fatalf("/healthz: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("/healthz body: %v", err)
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"status":"ok"`) {
		t.Fatalf("/healthz: %s %q", resp.Status, body)
	}
}

// produceRound produces one record to every ledger partition with
// acks=all and records it as acknowledged.
func (e *hardenEnv) produceRound(t *testing.T, tag string) {
	t.Helper()
	e.rounds++
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for p := int32(0); p < ledgerPartitions; p++ {
		v := fmt.Sprintf("%s-%d-p%d", tag, e.rounds, p)
		if _, err := e.prod.Produce(ctx, producer.Send{Topic: ledgerTopic, Partition: p, Value: []byte(v)}); err != nil {
			t.Fatalf("acks=all produce to %s-%d (%s): %v; host log:\n%s", ledgerTopic, p, tag, err, tail(e.h.log()))
		}
		e.acked[p] = append(e.acked[p], v)
	}
}

// checkLedger reads every ledger partition from its start with consumer
// fetches and fails unless it holds every acknowledged record, once each
// and in acknowledgement order (and nothing else: only this test writes
// it).
func (e *hardenEnv) checkLedger(t *testing.T) {
	t.Helper()
	for p := int32(0); p < ledgerPartitions; p++ {
		var got []string
		for _, r := range e.fetchAll(t, ledgerTopic, p) {
			got = append(got, string(r.Value))
		}
		if !slices.Equal(got, e.acked[p]) {
			t.Fatalf("%s-%d holds %d records %v; acknowledged %d: %v", ledgerTopic, p, len(got), got, len(e.acked[p]), e.acked[p])
		}
	}
}

// createServingTopic creates a one-partition topic through the controller
// and checks that it takes a record and serves it back.
func (e *hardenEnv) createServingTopic(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.c.CreateTopic(ctx, name, 1, 1, nil); err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	e.waitServing(t, name, 1)
	if _, err := e.prod.Produce(ctx, producer.Send{Topic: name, Partition: 0, Value: []byte("hello " + name)}); err != nil {
		t.Fatalf("produce to new topic %s: %v", name, err)
	}
	if recs := e.fetchAll(t, name, 0); len(recs) != 1 || string(recs[0].Value) != "hello "+name {
		t.Fatalf("new topic %s serves %d records", name, len(recs))
	}
}

// waitServing waits until every partition of topic has a leader that
// answers a fetch.
func (e *hardenEnv) waitServing(t *testing.T, topic string, partitions int) {
	t.Helper()
	clustertest.WaitFor(t, 20*time.Second, func() error {
		for p := int32(0); p < int32(partitions); p++ {
			resp, err := e.fetch(topic, p, 0, 1<<10)
			if err != nil {
				return err
			}
			if resp.ErrorCode != 0 {
				return fmt.Errorf("%s-%d: %v %s", topic, p, resp.ErrorCode, resp.ErrorMessage)
			}
		}
		return nil
	})
}

// partition returns the metadata of one partition.
func (e *hardenEnv) partition(topic string, p int32) (*messages.PartitionMetadata, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	md, err := e.c.Metadata(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	for _, tm := range md.Topics {
		if tm.Name != topic {
			continue
		}
		if err := tm.ErrorCode.Err(tm.Name); err != nil {
			return nil, fmt.Errorf("metadata of %s: %w", topic, err)
		}
		for _, pm := range tm.Partitions {
			if pm.Partition == p {
				return pm, nil
			}
		}
	}
	return nil, fmt.Errorf("metadata has no %s-%d", topic, p)
}

// leader returns the PID of a partition's leader replica.
func (e *hardenEnv) leader(topic string, p int32) (*actor.PID, error) {
	pm, err := e.partition(topic, p)
	if err != nil {
		return nil, err
	}
	return client.LeaderPID(pm)
}

// request sends msg to pid from the test client and returns the answer.
func (e *hardenEnv) request(pid *actor.PID, msg proto.Message) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return e.c.Request(ctx, pid, msg)
}

// fetch sends one consumer fetch (no long poll) to the partition's leader.
func (e *hardenEnv) fetch(topic string, p int32, offset int64, maxBytes int32) (*messages.FetchResponse, error) {
	pid, err := e.leader(topic, p)
	if err != nil {
		return nil, err
	}
	res, err := e.request(pid, &messages.FetchRequest{Topic: topic, Partition: p, FetchOffset: offset, MaxBytes: maxBytes,
		CurrentLeaderEpoch: -1, ReplicaId: -1, LogStartOffset: -1, LastFetchedEpoch: -1, CorrelationId: e.c.NextCorrelationID()})
	if err != nil {
		return nil, err
	}
	resp, ok := res.(*messages.FetchResponse)
	if !ok {
		return nil, fmt.Errorf("fetch %s-%d: answer %T", topic, p, res)
	}
	return resp, nil
}

// fetchAll reads a partition from offset 0 to its high watermark.
func (e *hardenEnv) fetchAll(t *testing.T, topic string, p int32) []record.Record {
	t.Helper()
	var out []record.Record
	for off := int64(0); ; {
		resp, err := e.fetch(topic, p, off, 1<<20)
		if err != nil {
			t.Fatalf("fetch %s-%d at %d: %v", topic, p, off, err)
		}
		if resp.ErrorCode != 0 {
			t.Fatalf("fetch %s-%d at %d: %v %s", topic, p, off, resp.ErrorCode, resp.ErrorMessage)
		}
		if off >= resp.HighWatermark {
			return out
		}
		if len(resp.Records) == 0 {
			t.Fatalf("fetch %s-%d at %d below the high watermark %d returned nothing", topic, p, off, resp.HighWatermark)
		}
		recs, err := decodeBatches(resp.Records)
		if err != nil {
			t.Fatalf("fetch %s-%d at %d: %v", topic, p, off, err)
		}
		from := off
		for _, r := range recs {
			if r.Offset >= off && r.Offset < resp.HighWatermark {
				out = append(out, r)
				off = r.Offset + 1
			}
		}
		if off == from {
			t.Fatalf("fetch %s-%d at %d below the high watermark %d returned no record at or past it", topic, p, off, resp.HighWatermark)
		}
	}
}

// decodeBatches decodes back-to-back batches.
func decodeBatches(buf []byte) ([]record.Record, error) {
	var out []record.Record
	s := record.Batches(buf)
	for s.Next() {
		recs, err := record.Records(s.Batch(), 64<<20)
		if err != nil {
			return nil, fmt.Errorf("decode batch at offset %d: %w", s.Header().BaseOffset, err)
		}
		out = append(out, recs...)
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("scan batches: %w", err)
	}
	return out, nil
}

// hostInfo returns this host's registration as the cluster describes it.
func (e *hardenEnv) hostInfo(t *testing.T) *messages.HostInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := e.c.DescribeCluster(ctx)
	if err != nil {
		t.Fatalf("describe cluster: %v", err)
	}
	if len(d.Hosts) != 1 {
		t.Fatalf("describe cluster: %d hosts, want 1", len(d.Hosts))
	}
	return d.Hosts[0]
}

// storedTopic returns a topic's record in etcd and its mod revision.
func (e *hardenEnv) storedTopic(t *testing.T, name string) (*messages.TopicMetadata, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tm, rev, err := e.meta.GetTopic(ctx, name)
	if err != nil {
		t.Fatalf("topic %s in etcd: %v", name, err)
	}
	return tm, rev
}

// ledgerUnchanged fails unless the ledger's etcd record is still at rev
// and every partition is led by its leader with the whole ISR, as
// metadata reports it.
func (e *hardenEnv) ledgerUnchanged(t *testing.T, what string, before *messages.TopicMetadata, rev int64) {
	t.Helper()
	now, nowRev := e.storedTopic(t, ledgerTopic)
	if nowRev != rev || !proto.Equal(now, before) {
		t.Fatalf("%s changed the ledger topic in etcd (revision %d → %d):\n%v\nwas\n%v", what, rev, nowRev, now, before)
	}
	for _, ps := range before.Partitions {
		pm, err := e.partition(ledgerTopic, ps.Partition)
		if err != nil {
			t.Fatalf("after %s: %v", what, err)
		}
		if pm.ErrorCode != 0 || pm.Leader != ps.Leader || !slices.Equal(pm.Isr, ps.Isr) || pm.LeaderEpoch != ps.LeaderEpoch {
			t.Fatalf("after %s, %s-%d: leader %d epoch %d ISR %v (%v); want leader %d epoch %d ISR %v",
				what, ledgerTopic, ps.Partition, pm.Leader, pm.LeaderEpoch, pm.Isr, pm.ErrorCode, ps.Leader, ps.LeaderEpoch, ps.Isr)
		}
	}
}

// metric returns the value of one sample of the host's /metrics (name
// with its labels as printed, e.g. `x_total{kind="a"}`), 0 when absent.
func (e *hardenEnv) metric(t *testing.T, sample string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + e.h.httpAddr() + "/metrics")
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), sample+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("/metrics %s: %v", sample, err)
			}
			return f
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	return 0
}

// producerSend is a record for an explicit partition.
func producerSend(topic string, p int32, value string) producer.Send {
	return producer.Send{Topic: topic, Partition: p, Value: []byte(value)}
}

// tail is the end of a host log, for failure messages.
func tail(log string) string {
	const max = 8 << 10
	if len(log) > max {
		return "..." + log[len(log)-max:]
	}
	return log
}

// --- raw access to a protoactor endpoint ---

// dialRemoting returns a raw gRPC client of the Remoting service at addr,
// closed with the test.
func dialRemoting(t *testing.T, addr string) remote.RemotingClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("grpc client of %s: %v", addr, err)
	}
	t.Cleanup(func() {
		if err := conn.Close(); err != nil {
			t.Logf("closing the grpc client of %s: %v", addr, err)
		}
	})
	return remote.NewRemotingClient(conn)
}

// rawStream is one Receive stream, connected as a server of systemID.
// ended is closed when the server ends the stream.
type rawStream struct {
	s     remote.Remoting_ReceiveClient
	ended chan struct{}
}

// openStream opens a Receive stream and does protoactor's handshake. The
// stream is cancelled with the test.
func openStream(t *testing.T, rc remote.RemotingClient) *rawStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s, err := rc.Receive(ctx)
	if err != nil {
		t.Fatalf("open a Receive stream: %v", err)
	}
	connect := &remote.RemoteMessage{MessageType: &remote.RemoteMessage_ConnectRequest{ConnectRequest: &remote.ConnectRequest{
		ConnectionType: &remote.ConnectRequest_ServerConnection{ServerConnection: &remote.ServerConnection{SystemId: "hardening-test", Address: "127.0.0.1:1"}},
	}}}
	if err := s.Send(connect); err != nil {
		t.Fatalf("send the connect request: %v", err)
	}
	m, err := s.Recv()
	if err != nil || m.GetConnectResponse() == nil {
		t.Fatalf("connect response %v, %v", m, err)
	}
	rs := &rawStream{s: s, ended: make(chan struct{})}
	go func() {
		defer close(rs.ended)
		for {
			if _, err := s.Recv(); err != nil {
				return
			}
		}
	}()
	return rs
}

// send sends one batch; false when the stream is gone.
func (rs *rawStream) send(b *remote.MessageBatch) bool {
	return rs.s.Send(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: b}}) == nil
}

var metadataRequestType = string(proto.MessageName(&messages.MetadataRequest{}))

// mustMarshal marshals m.
func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatalf("marshal %T: %v", m, err)
	}
	return b
}

// probeBatch is a valid batch: a MetadataRequest carrying token to the
// host's broker, answered to the echo actor.
func (e *hardenEnv) probeBatch(t *testing.T, token int64) *remote.MessageBatch {
	return &remote.MessageBatch{
		TypeNames: []string{metadataRequestType},
		Targets:   []*actor.PID{actor.NewPID(e.h.addr(), messages.BrokerActorID)},
		Senders:   []*actor.PID{e.echo},
		Envelopes: []*remote.MessageEnvelope{{Sender: 1, MessageData: mustMarshal(t, &messages.MetadataRequest{CorrelationId: token})}},
	}
}

// delivered sends a valid request on rs and waits for the broker's answer
// to reach the echo actor: the stream and the broker both still work.
func (e *hardenEnv) delivered(t *testing.T, rs *rawStream) {
	t.Helper()
	token := e.tokens.Add(1)
	if !rs.send(e.probeBatch(t, token)) {
		t.Fatal("the stream is gone: the valid probe was not sent")
	}
	clustertest.WaitFor(t, 10*time.Second, func() error {
		if _, ok := e.answered.Load(token); !ok {
			return fmt.Errorf("no answer to probe %d from the broker", token)
		}
		return nil
	})
}

// listenAddrs returns the IPv4 TCP addresses process pid listens on, from
// /proc (its socket descriptors matched against the listening sockets of
// its network namespace).
func listenAddrs(pid int) ([]string, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, fmt.Errorf("list descriptors of %d: %w", pid, err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if ino, ok := strings.CutPrefix(link, "socket:["); ok {
			inodes[strings.TrimSuffix(ino, "]")] = true
		}
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/tcp", pid))
	if err != nil {
		return nil, fmt.Errorf("read the TCP sockets of %d: %w", pid, err)
	}
	var addrs []string
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] { // 0A: LISTEN
			continue
		}
		hostHex, portHex, ok := strings.Cut(f[1], ":")
		if !ok || len(hostHex) != 8 {
			continue
		}
		ipn, err1 := strconv.ParseUint(hostHex, 16, 32)
		port, err2 := strconv.ParseUint(portHex, 16, 16)
		if err1 != nil || err2 != nil {
			continue
		}
		ip := net.IPv4(byte(ipn), byte(ipn>>8), byte(ipn>>16), byte(ipn>>24)) // little-endian
		addrs = append(addrs, net.JoinHostPort(ip.String(), strconv.Itoa(int(port))))
	}
	return addrs, nil
}
