// helpers_test.go: the fake Backend, a server on 127.0.0.1:0 per test, a
// captured log, and raw-frame helpers for tests that speak the wire
// protocol by hand.

package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/internal/poll"
	"github.com/actorlog/actorlog/messages"
)

// fakeBackend is a Backend answering from a fixed ClusterMetadata.
type fakeBackend struct {
	mu  sync.Mutex
	md  ClusterMetadata
	err error
	// panicMsg, when set, makes Metadata panic with it.
	panicMsg string
	// gate, when set, makes Metadata wait for a value (or ctx) first.
	gate  chan struct{}
	calls atomic.Int32
}

func (b *fakeBackend) Metadata(ctx context.Context, _ MetadataQuery) (*ClusterMetadata, error) {
	b.calls.Add(1)
	b.mu.Lock()
	gate, err, panicMsg := b.gate, b.err, b.panicMsg
	md := b.md
	b.mu.Unlock()
	if panicMsg != "" {
		panic(panicMsg)
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, fmt.Errorf("fake backend: %w", ctx.Err())
		}
	}
	if err != nil {
		return nil, err
	}
	return &md, nil
}

func (b *fakeBackend) set(fn func(b *fakeBackend)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	fn(b)
}

// testTopicID is a fixed topic id for topic i.
func testTopicID(i byte) TopicID {
	var id TopicID
	for j := range id {
		id[j] = i + byte(j)
	}
	return id
}

// sampleCluster is three brokers, all at addr (one server plays every
// host), and three topics: "orders" (3 partitions, RF 3, one of them with
// a shrunk ISR and an offline replica), "logs" (1 partition, no leader) and
// __consumer_offsets.
func sampleCluster(addr string) ClusterMetadata {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		panic(err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		panic(err)
	}
	return ClusterMetadata{
		ClusterID:    "test-cluster-id",
		ControllerID: 2,
		Brokers: []Broker{
			{NodeID: 1, Host: host, Port: int32(port), Rack: "rack-a"},
			{NodeID: 2, Host: host, Port: int32(port), Rack: "rack-b"},
			{NodeID: 3, Host: host, Port: int32(port)},
		},
		Topics: []Topic{
			{Name: "orders", ID: testTopicID(1), Partitions: []Partition{
				{Partition: 0, Leader: 1, LeaderEpoch: 4, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}},
				{Partition: 1, Leader: 2, LeaderEpoch: 7, Replicas: []int32{2, 3, 1}, ISR: []int32{2, 3}, Offline: []int32{1}},
				{Partition: 2, Leader: 3, LeaderEpoch: 1, Replicas: []int32{3, 1, 2}, ISR: []int32{3, 1, 2}},
			}},
			{Name: "logs", ID: testTopicID(2), Partitions: []Partition{
				{Partition: 0, Leader: -1, LeaderEpoch: 2, Replicas: []int32{1}, ISR: []int32{}},
			}},
			{Name: messages.OffsetsTopic, ID: testTopicID(3), Partitions: []Partition{
				{Partition: 0, Leader: 2, LeaderEpoch: 0, Replicas: []int32{2}, ISR: []int32{2}},
			}},
		},
	}
}

// testServer is a running Server with its backend and captured log.
type testServer struct {
	srv     *Server
	addr    string
	backend *fakeBackend
	hook    *logtest.Hook
	served  chan error // Serve's result
}

// startServer serves a fake backend holding sampleCluster on 127.0.0.1:0;
// mod may adjust the config. The server is closed at cleanup.
func startServer(t testing.TB, mod func(*Config)) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	logger, hook := logtest.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	b := &fakeBackend{md: sampleCluster(ln.Addr().String())}
	cfg := Config{Logger: logrus.NewEntry(logger), Backend: b, LogEvery: time.Nanosecond}
	if mod != nil {
		mod(&cfg)
	}
	srv, err := NewServer(cfg)
	if err != nil {
		t.Fatalf("new server: %v", err)
	}
	ts := &testServer{srv: srv, addr: ln.Addr().String(), backend: b, hook: hook, served: make(chan error, 1)}
	go func() { ts.served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("close server: %v", err)
		}
		if err := <-ts.served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("serve returned %v, want ErrServerClosed", err)
		}
	})
	return ts
}

// waitLog waits for a log line with the given reason field.
func (ts *testServer) waitLog(t testing.TB, reason string) *logrus.Entry {
	t.Helper()
	var found *logrus.Entry
	poll.Until(t, 5*time.Second, func() error {
		for _, e := range ts.hook.AllEntries() {
			if e.Data["reason"] == reason {
				found = e
				return nil
			}
		}
		return fmt.Errorf("no log line with reason %q", reason)
	})
	return found
}

// dial opens a raw connection to the server, closed at cleanup.
func (ts *testServer) dial(t testing.TB) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", ts.addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", ts.addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// frame encodes req as a request frame with correlation id corr.
func frame(req kmsg.Request, corr int32) []byte {
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("kafka-test")).AppendRequest(nil, req, corr)
}

// metadataReq returns a Metadata request at version v for topics (nil for
// all topics).
func metadataReq(v int16, topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(v)
	if topics != nil {
		req.Topics = []kmsg.MetadataRequestTopic{}
	}
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// apiVersionsReq returns an ApiVersions request at version v.
func apiVersionsReq(v int16) *kmsg.ApiVersionsRequest {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(v)
	req.ClientSoftwareName = "kafka-test"
	req.ClientSoftwareVersion = "1.0"
	return req
}

// readResponse reads one response frame from c into resp (whose version
// must be set) and returns its correlation id.
func readResponse(t testing.TB, c net.Conn, resp kmsg.Response) int32 {
	t.Helper()
	corr, body, err := readResponseFrame(c)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	if resp.IsFlexible() && resp.Key() != apiVersionsKey {
		if len(body) == 0 || body[0] != 0 {
			t.Fatalf("response header tag section %x, want one empty", body[:min(len(body), 1)])
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decode %T v%d: %v", resp, resp.GetVersion(), err)
	}
	return corr
}

// readResponseFrame reads one response frame: its correlation id and the
// rest.
func readResponseFrame(c net.Conn) (int32, []byte, error) {
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return 0, nil, fmt.Errorf("set deadline: %w", err)
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return 0, nil, fmt.Errorf("read length: %w", err)
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 64<<20 {
		return 0, nil, fmt.Errorf("response length %d", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(c, buf); err != nil {
		return 0, nil, fmt.Errorf("read body: %w", err)
	}
	return int32(binary.BigEndian.Uint32(buf)), buf[4:], nil
}

// expectClosed checks that the server closes c (a read ends with EOF or a
// reset, not a timeout), with nothing more to read.
func expectClosed(t testing.TB, c net.Conn) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatalf("set deadline: %v", err)
	}
	n, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after 5s (read %d bytes)", n)
	}
	if n != 0 {
		t.Fatalf("read %d unexpected bytes before the close", n)
	}
}

// expectServed checks that a fresh connection gets an ApiVersions answer.
func (ts *testServer) expectServed(t testing.TB) {
	t.Helper()
	c := ts.dial(t)
	if _, err := c.Write(frame(apiVersionsReq(3), 77)); err != nil {
		t.Fatalf("write: %v", err)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	if corr := readResponse(t, c, resp); corr != 77 || resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		t.Fatalf("healthy connection: corr %d, error %d, %d keys", corr, resp.ErrorCode, len(resp.ApiKeys))
	}
}

// withTestAPI puts a in the table for the test's duration, in place of
// what the package registers under its key (restored at cleanup).
func withTestAPI(t testing.TB, a api) {
	t.Helper()
	apisMu.Lock()
	old := apis[a.key]
	delete(apis, a.key)
	apisMu.Unlock()
	register(a)
	t.Cleanup(func() {
		apisMu.Lock()
		defer apisMu.Unlock()
		delete(apis, a.key)
		if old != nil {
			apis[a.key] = old
		}
	})
}

// errEMFILE is "too many open files".
var errEMFILE = syscall.EMFILE
