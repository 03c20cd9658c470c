// remote_test.go: the gRPC server RemoteConfig builds, started by
// protoactor on a real port — its connections are limited by the
// connection limiter (a connection over it is refused, and its slot
// comes back when a client leaves) and each connection may open at most
// MaxConcurrentStreams streams.

package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/remote"
	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/netlimit"
	"github.com/actorlog/actorlog/internal/poll"
)

// startLimitedRemote serves the Remoting service on a free loopback port
// with the server options RemoteConfig gives protoactor (the connection
// limiter, the remote guard, MaxConcurrentStreams), and returns its
// address. It is a plain grpc.Server, not protoactor's Remote.Start: that
// swaps grpc's global logger (grpclog.SetLoggerV2) without
// synchronisation, a data race with any gRPC goroutine of an earlier test
// still logging, which the race detector reports. What is tested here is
// the options, not protoactor.
func startLimitedRemote(t *testing.T, limits netlimit.Limits) (string, *netlimit.Limiter) {
	t.Helper()
	quiet := logrus.New()
	quiet.SetOutput(io.Discard)
	lim, err := netlimit.New(limits, logrus.NewEntry(quiet))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := RemoteConfig("127.0.0.1:0", "", WithGuardLogger(logrus.NewEntry(quiet)), WithConnectionLimiter(lim))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(cfg.ServerOptions...)
	remote.RegisterRemotingServer(srv, heldStreams{})
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			t.Errorf("serve: %v", err)
		}
	}()
	t.Cleanup(srv.Stop)
	return ln.Addr().String(), lim
}

// heldStreams is a Remoting service whose Receive streams stay open until
// the client ends them (the unary calls are answered by the guard).
type heldStreams struct {
	remote.UnimplementedRemotingServer
}

func (heldStreams) Receive(s remote.Remoting_ReceiveServer) error {
	<-s.Context().Done()
	return nil
}

// probe makes one unary call on cc: the remote guard answers
// Unimplemented on a served connection.
func probe(cc *grpc.ClientConn) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := remote.NewRemotingClient(cc).ListProcesses(ctx, &remote.ListProcessesRequest{})
	if status.Code(err) == codes.Unimplemented {
		return nil
	}
	return err
}

func dialRemote(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func TestRemoteConnectionLimit(t *testing.T) {
	addr, lim := startLimitedRemote(t, netlimit.Limits{MaxConnections: 2, MaxConnectionsPerIP: netlimit.Unlimited})
	a, b, c := dialRemote(t, addr), dialRemote(t, addr), dialRemote(t, addr)
	if err := probe(a); err != nil {
		t.Fatalf("first connection: %v", err)
	}
	if err := probe(b); err != nil {
		t.Fatalf("second connection: %v", err)
	}
	if err := probe(c); err == nil {
		t.Fatal("third connection served over max.connections=2")
	}
	if s := lim.Stats()["remote"]; s.RefusedTotal == 0 || s.Open != 2 {
		t.Fatalf("limiter stats %+v, want refusals and 2 open", s)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, func() error {
		if err := probe(c); err != nil {
			return fmt.Errorf("no slot for a new connection after one closed (stats %+v): %w", lim.Stats()["remote"], err)
		}
		return nil
	})
}

func TestRemoteMaxConcurrentStreams(t *testing.T) {
	addr, _ := startLimitedRemote(t, netlimit.Limits{MaxConnections: 10, MaxConnectionsPerIP: 10})
	cc := dialRemote(t, addr)
	if err := probe(cc); err != nil { // the server's settings have arrived
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rc := remote.NewRemotingClient(cc)
	for i := range MaxConcurrentStreams {
		if _, err := rc.Receive(ctx); err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
	}
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelShort()
	if _, err := rc.Receive(short); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("stream %d on one connection: %v, want to wait for a free stream until its deadline", MaxConcurrentStreams+1, err)
	}
}

// TestMaxMessageBytesFitsTheWire: the largest batch a user may allow a
// topic (cluster.MaxMessageBytesLimit) fits one gRPC message of the actor
// remote twice over, since a fetch response carries its first batch whole
// and protoactor sends several envelopes in one message.
func TestMaxMessageBytesFitsTheWire(t *testing.T) {
	if 2*cluster.MaxMessageBytesLimit > MaxWireMessage {
		t.Fatalf("cluster.MaxMessageBytesLimit %d is above half of MaxWireMessage %d", cluster.MaxMessageBytesLimit, MaxWireMessage)
	}
}

// The endpoint writer's mailbox ring starts small. Its first size is
// allocated and zeroed, inside the send, by whichever actor first sends to
// a new peer (a host's broker answering a new client, a replica completing
// its produce); protoactor's ring doubles when full, so a large first
// size buys nothing. At 100,000 slots (1.6 MB) a host stalled ~10-60 ms on
// each new client on the PVM test VMs (issue 15).
func TestEndpointWriterQueueStartsSmall(t *testing.T) {
	cfg, err := RemoteConfig("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.EndpointWriterQueueSize; got != EndpointWriterInitialQueue || got*16 > 64<<10 {
		t.Fatalf("endpoint writer queue starts at %d slots (%d bytes); want EndpointWriterInitialQueue (%d), at most 64 KiB",
			got, got*16, EndpointWriterInitialQueue)
	}
}
