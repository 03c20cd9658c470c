package remotetest

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
)

var metadataRequestName = string(proto.MessageName(&messages.MetadataRequest{}))

// guardFixture is one protoactor remote (a client's endpoint) with a named
// echo actor, and a raw gRPC client of its Remoting service.
type guardFixture struct {
	t      *testing.T
	c      *client.Client
	echo   *actor.PID
	rc     remote.RemotingClient
	seen   sync.Map // correlation ids the echo actor received
	tokens atomic.Int64
	logs   *logtest.Hook
}

func newGuardFixture(t *testing.T) *guardFixture {
	t.Helper()
	// The guard logs to the client's logger: capture it.
	quiet := logrus.New()
	quiet.SetOutput(io.Discard)
	f := &guardFixture{t: t, logs: logtest.NewLocal(quiet)}
	c, err := client.New(client.Config{Bootstrap: []string{"127.0.0.1:1"}, Listen: "127.0.0.1:0", Logger: logrus.NewEntry(quiet)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	f.c = c
	f.echo, err = c.System().Root.SpawnNamed(actor.PropsFromFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(*messages.MetadataRequest); ok {
			f.seen.Store(m.CorrelationId, true)
			if ctx.Sender() != nil {
				ctx.Respond(&messages.MetadataResponse{CorrelationId: m.CorrelationId})
			}
		}
	}), "guard-echo")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(c.System().Address(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	f.rc = remote.NewRemotingClient(conn)
	f.tokens.Store(1 << 40)
	return f
}

// connect opens a Receive stream and does protoactor's handshake.
func (f *guardFixture) connect() remote.Remoting_ReceiveClient {
	f.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f.t.Cleanup(cancel)
	s, err := f.rc.Receive(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := s.Send(connectRequest("guard-test", "127.0.0.1:1")); err != nil {
		f.t.Fatal(err)
	}
	m, err := s.Recv()
	if err != nil || m.GetConnectResponse() == nil {
		f.t.Fatalf("connect response %v, %v", m, err)
	}
	return s
}

func connectRequest(systemID, address string) *remote.RemoteMessage {
	return &remote.RemoteMessage{MessageType: &remote.RemoteMessage_ConnectRequest{ConnectRequest: &remote.ConnectRequest{
		ConnectionType: &remote.ConnectRequest_ServerConnection{ServerConnection: &remote.ServerConnection{SystemId: systemID, Address: address}},
	}}}
}

func batchMessage(b *remote.MessageBatch) *remote.RemoteMessage {
	return &remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: b}}
}

func marshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// validBatch is what protoactor's endpoint writer sends for one message to
// the echo actor carrying token.
func (f *guardFixture) validBatch(token int64) *remote.MessageBatch {
	return &remote.MessageBatch{
		TypeNames: []string{metadataRequestName},
		Targets:   []*actor.PID{f.echo},
		Envelopes: []*remote.MessageEnvelope{{MessageData: marshal(f.t, &messages.MetadataRequest{CorrelationId: token})}},
	}
}

// delivered sends a fresh token to the echo actor on s and waits for the
// actor to receive it: the stream and the actor both still work.
func (f *guardFixture) delivered(s remote.Remoting_ReceiveClient) {
	f.t.Helper()
	token := f.tokens.Add(1)
	if err := s.Send(batchMessage(f.validBatch(token))); err != nil {
		f.t.Fatalf("send a valid batch: %v", err)
	}
	clustertest.WaitFor(f.t, 5*time.Second, func() error {
		if _, ok := f.seen.Load(token); !ok {
			return fmt.Errorf("token %d never reached the echo actor", token)
		}
		return nil
	})
}

// alive checks that the echo actor answers a local request, and that a
// valid message from the wire on a new stream reaches it.
func (f *guardFixture) alive() {
	f.t.Helper()
	token := f.tokens.Add(1)
	res, err := f.c.System().Root.RequestFuture(f.echo, &messages.MetadataRequest{CorrelationId: token}, 5*time.Second).Result()
	if err != nil {
		f.t.Fatalf("echo actor does not answer: %v", err)
	}
	if r, ok := res.(*messages.MetadataResponse); !ok || r.CorrelationId != token {
		f.t.Fatalf("echo actor answered %v", res)
	}
	f.delivered(f.connect())
}

// streamEnds waits for the server to end s and returns its status code.
func streamEnds(t *testing.T, s remote.Remoting_ReceiveClient) codes.Code {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		for {
			if _, err := s.Recv(); err != nil {
				done <- err
				return
			}
		}
	}()
	select {
	case err := <-done:
		return status.Code(err)
	case <-time.After(10 * time.Second):
		t.Fatal("the server never ended the stream")
		return codes.OK
	}
}

func TestRemoteGuard(t *testing.T) {
	f := newGuardFixture(t)
	f.alive()

	t.Run("unimplemented calls", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := f.rc.ListProcesses(ctx, &remote.ListProcessesRequest{Pattern: ".*", Type: remote.ListProcessesMatchType_MatchRegex})
		if status.Code(err) != codes.Unimplemented {
			t.Fatalf("ListProcesses: %v", err)
		}
		_, err = f.rc.GetProcessDiagnostics(ctx, &remote.GetProcessDiagnosticsRequest{Pid: f.echo})
		if status.Code(err) != codes.Unimplemented {
			t.Fatalf("GetProcessDiagnostics: %v", err)
		}
		var logged bool
		for _, e := range f.logs.AllEntries() {
			if strings.Contains(e.Message, "unimplemented remoting call") && e.Data["method"] == "/remote.Remoting/ListProcesses" && e.Data["peer"] != "" {
				logged = true
			}
		}
		if !logged {
			t.Error("the refused call was not logged with method and peer")
		}
		f.alive()
	})

	t.Run("bad indexes and types", func(t *testing.T) {
		data := marshal(t, &messages.MetadataRequest{CorrelationId: 1})
		for _, tc := range []struct {
			name  string
			env   *remote.MessageEnvelope
			types []string // the batch's type names, when not the valid one
		}{
			{"target past end", &remote.MessageEnvelope{Target: 1}, nil},
			{"negative target", &remote.MessageEnvelope{Target: -1}, nil},
			{"target request id with bad target", &remote.MessageEnvelope{Target: 7, TargetRequestId: 3}, nil},
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
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := f.connect()
				b := f.validBatch(0)
				tc.env.MessageData = data
				b.Envelopes = []*remote.MessageEnvelope{tc.env}
				if tc.types != nil {
					b.TypeNames = tc.types
				}
				before := client.RemoteGuardStats()
				if err := s.Send(batchMessage(b)); err != nil {
					t.Fatal(err)
				}
				f.delivered(s)
				if d := client.RemoteGuardStats().DroppedEnvelopes - before.DroppedEnvelopes; d != 1 {
					t.Fatalf("guard dropped %d envelopes, want 1", d)
				}
			})
		}
		t.Run("bad envelope among good ones", func(t *testing.T) {
			s := f.connect()
			good := f.tokens.Add(1)
			b := f.validBatch(good)
			b.Envelopes = append(b.Envelopes, &remote.MessageEnvelope{Target: 5, MessageData: data})
			if err := s.Send(batchMessage(b)); err != nil {
				t.Fatal(err)
			}
			f.delivered(s)
			if _, ok := f.seen.Load(good); !ok {
				t.Fatal("the batch's good envelope was not delivered")
			}
		})
		f.alive()
	})

	t.Run("denied message types from the wire", func(t *testing.T) {
		for _, m := range []proto.Message{
			&actor.PoisonPill{},
			&actor.Stop{},
			&actor.Watch{Watcher: actor.NewPID("127.0.0.1:1", "watcher")},
			&actor.Unwatch{Watcher: actor.NewPID("127.0.0.1:1", "watcher")},
			&actor.Terminated{Who: f.echo},
			// RootSerialized: protoactor unpacks its inner envelopes
			// without checking their indexes.
			&pcluster.PubSubBatchTransport{Envelopes: []*pcluster.PubSubEnvelope{{TypeId: 3}}},
		} {
			name := string(proto.MessageName(m))
			t.Run(name, func(t *testing.T) {
				s := f.connect()
				b := &remote.MessageBatch{
					TypeNames: []string{name},
					Targets:   []*actor.PID{f.echo},
					Envelopes: []*remote.MessageEnvelope{{MessageData: marshal(t, m)}},
				}
				before := client.RemoteGuardStats()
				if err := s.Send(batchMessage(b)); err != nil {
					t.Fatal(err)
				}
				f.delivered(s)
				if d := client.RemoteGuardStats().DroppedEnvelopes - before.DroppedEnvelopes; d != 1 {
					t.Fatalf("guard dropped %d envelopes, want 1", d)
				}
				f.alive()
			})
		}
	})

	t.Run("malformed messages end the stream", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			msg  func() *remote.RemoteMessage
		}{
			{"huge batch", func() *remote.RemoteMessage {
				b := f.validBatch(0)
				for len(b.Envelopes) <= 1<<14 {
					b.Envelopes = append(b.Envelopes, &remote.MessageEnvelope{})
				}
				return batchMessage(b)
			}},
			{"huge type name", func() *remote.RemoteMessage {
				b := f.validBatch(0)
				b.TypeNames[0] = strings.Repeat("x", 100_000)
				return batchMessage(b)
			}},
			{"huge target id", func() *remote.RemoteMessage {
				b := f.validBatch(0)
				b.Targets[0] = actor.NewPID(f.echo.Address, strings.Repeat("x", 100_000))
				return batchMessage(b)
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := f.connect()
				if err := s.Send(tc.msg()); err != nil {
					t.Fatal(err)
				}
				if c := streamEnds(t, s); c != codes.InvalidArgument {
					t.Fatalf("stream ended with %v, want InvalidArgument", c)
				}
			})
		}
		t.Run("huge connect request", func(t *testing.T) {
			s, err := f.rc.Receive(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Send(connectRequest(strings.Repeat("x", 1<<20), "127.0.0.1:1")); err != nil {
				t.Fatal(err)
			}
			if c := streamEnds(t, s); c != codes.InvalidArgument {
				t.Fatalf("stream ended with %v, want InvalidArgument", c)
			}
		})
		f.alive()
	})

	t.Run("other messages are skipped", func(t *testing.T) {
		s := f.connect()
		before := client.RemoteGuardStats().SkippedMessages
		for _, m := range []*remote.RemoteMessage{
			{},
			{MessageType: &remote.RemoteMessage_DisconnectRequest{DisconnectRequest: &remote.DisconnectRequest{}}},
			{MessageType: &remote.RemoteMessage_ConnectRequest{ConnectRequest: &remote.ConnectRequest{}}},
			{MessageType: &remote.RemoteMessage_ConnectRequest{ConnectRequest: &remote.ConnectRequest{
				ConnectionType: &remote.ConnectRequest_ClientConnection{ClientConnection: &remote.ClientConnection{SystemId: "x"}}}}},
			connectRequest("again", "127.0.0.1:1"),
			{MessageType: &remote.RemoteMessage_ConnectResponse{ConnectResponse: &remote.ConnectResponse{MemberId: "x"}}},
		} {
			if err := s.Send(m); err != nil {
				t.Fatal(err)
			}
		}
		f.delivered(s)
		if d := client.RemoteGuardStats().SkippedMessages - before; d != 6 {
			t.Fatalf("guard skipped %d messages, want 6", d)
		}
	})

	t.Run("fuzz", func(t *testing.T) {
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 1))
		self := f.echo.Address
		types := []string{metadataRequestName, metadataRequestName, "actor.PoisonPill", "actor.Stop", "actor.Watch",
			"actor.Terminated", "actor.Touch", "no.such.Type", ""}
		pids := []*actor.PID{f.echo, f.echo, actor.NewPID(self, "nobody"), actor.NewPID(self, "guard-echo/child")}
		payloads := [][]byte{
			marshal(t, &messages.MetadataRequest{CorrelationId: 5}),
			marshal(t, &actor.PoisonPill{}),
			marshal(t, &actor.Terminated{Who: f.echo}),
			nil,
		}
		idx := func(n int) int32 { return int32(rng.IntN(n+4) - 2) } // [-2, n+1]
		randomBatch := func() *remote.MessageBatch {
			b := &remote.MessageBatch{}
			for range rng.IntN(4) {
				b.TypeNames = append(b.TypeNames, types[rng.IntN(len(types))])
			}
			for range rng.IntN(3) {
				b.Targets = append(b.Targets, pids[rng.IntN(len(pids))])
			}
			for range rng.IntN(3) {
				b.Senders = append(b.Senders, pids[2+rng.IntN(2)])
			}
			for range rng.IntN(5) {
				e := &remote.MessageEnvelope{
					TypeId: idx(len(b.TypeNames)), Target: idx(len(b.Targets)), Sender: idx(len(b.Senders) + 1),
					SerializerId: []int32{-1, 0, 0, 0, 1, 2}[rng.IntN(6)],
				}
				if rng.IntN(3) == 0 {
					e.MessageData = make([]byte, rng.IntN(32))
					for i := range e.MessageData {
						e.MessageData[i] = byte(rng.Uint32())
					}
				} else {
					e.MessageData = payloads[rng.IntN(len(payloads))]
				}
				if rng.IntN(4) == 0 {
					e.TargetRequestId, e.SenderRequestId = rng.Uint32(), rng.Uint32()
				}
				b.Envelopes = append(b.Envelopes, e)
			}
			return b
		}
		// A payload that does not unmarshal makes protoactor end the
		// stream (and drop what is still buffered): watch for the end and
		// open another.
		open := func() (remote.Remoting_ReceiveClient, chan struct{}) {
			s := f.connect()
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					if _, err := s.Recv(); err != nil {
						return
					}
				}
			}()
			return s, done
		}
		before := client.RemoteGuardStats()
		s, done := open()
		deadline := time.Now().Add(5 * time.Second)
		sent, streams := 0, 1
		for ; sent < 2000 && time.Now().Before(deadline); sent++ {
			select {
			case <-done:
				s, done = open()
				streams++
			default:
			}
			if err := s.Send(batchMessage(randomBatch())); err != nil {
				<-done
			}
		}
		after := client.RemoteGuardStats()
		t.Logf("%d batches on %d streams; guard dropped %d envelopes from %d batches, skipped %d",
			sent, streams, after.DroppedEnvelopes-before.DroppedEnvelopes, after.DroppedBatches-before.DroppedBatches,
			after.SkippedMessages-before.SkippedMessages)
		if after.DroppedEnvelopes == before.DroppedEnvelopes {
			t.Error("the guard dropped nothing")
		}
		if after.Panics != before.Panics {
			t.Errorf("%d handler panics", after.Panics-before.Panics)
		}
		f.alive()
	})
}
