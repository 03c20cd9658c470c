package client

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strconv"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/messages"
)

var metadataRequestName = string(proto.MessageName(&messages.MetadataRequest{}))

// The deny list derived from the registry holds protoactor's system and
// auto-receive messages that have protobuf names; beyond it only
// actorlog's messages and DeadLetterResponse are allowed from the wire.
func TestDeniedTypeNames(t *testing.T) {
	denied := deniedTypeNames()
	t.Logf("deny list: %v", denied)
	for _, name := range []string{"actor.PoisonPill", "actor.Stop", "actor.Watch", "actor.Unwatch", "actor.Terminated"} {
		if !slices.Contains(denied, name) {
			t.Errorf("%s not denied; deny list %v", name, denied)
		}
		if got := checkTypeName(name); got != reasonDeniedType {
			t.Errorf("checkTypeName(%s) = %q", name, got)
		}
	}
	for _, name := range []string{"actor.DeadLetterResponse", metadataRequestName} {
		if slices.Contains(denied, name) || checkTypeName(name) != "" {
			t.Errorf("%s denied", name)
		}
	}
	// Registered, harmless to protoactor, but not actorlog's: refused.
	for _, name := range []string{"actor.PID", "actor.Touch"} {
		if got := checkTypeName(name); got != reasonDeniedType {
			t.Errorf("checkTypeName(%s) = %q, want refused (not an actorlog message)", name, got)
		}
	}
	if got := checkTypeName("no.such.Type"); got != reasonUnknownType {
		t.Errorf("unknown type: %q", got)
	}
	if got := checkTypeName(""); got != reasonUnknownType {
		t.Errorf("empty type name: %q", got)
	}
}

// The guard accepts serializer 0 only, on the premise that it is
// protoactor's protobuf serializer.
func TestSerializerZeroIsProtobuf(t *testing.T) {
	msg := &messages.MetadataRequest{CorrelationId: 7}
	data, name, err := remote.Serialize(msg, protoSerializerID)
	if err != nil {
		t.Fatal(err)
	}
	want, err := proto.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	if name != metadataRequestName || !bytes.Equal(data, want) {
		t.Fatalf("serializer 0 gave %q %x, want protobuf", name, data)
	}
}

func testBatch(envs ...*remote.MessageEnvelope) *remote.MessageBatch {
	return &remote.MessageBatch{
		TypeNames: []string{metadataRequestName, "actor.PoisonPill", "no.such.Type"},
		Targets:   []*actor.PID{actor.NewPID("h:1", "a"), actor.NewPID("h:1", "b")},
		Senders:   []*actor.PID{actor.NewPID("h:2", "s"), actor.NewPID("h:1", "forged")},
		Envelopes: envs,
	}
}

func TestScreenBatch(t *testing.T) {
	good := func() *remote.MessageEnvelope { return &remote.MessageEnvelope{Target: 1, Sender: 1, TypeId: 0} }
	with := func(f func(e *remote.MessageEnvelope)) *remote.MessageEnvelope {
		e := good()
		f(e)
		return e
	}
	for _, tc := range []struct {
		name   string
		env    *remote.MessageEnvelope
		reason string
	}{
		{"valid", good(), ""},
		{"no sender", with(func(e *remote.MessageEnvelope) { e.Sender = 0 }), ""},
		{"target past end", with(func(e *remote.MessageEnvelope) { e.Target = 2 }), reasonTarget},
		{"negative target", with(func(e *remote.MessageEnvelope) { e.Target = -1 }), reasonTarget},
		{"sender past end", with(func(e *remote.MessageEnvelope) { e.Sender = 3 }), reasonSender},
		{"negative sender", with(func(e *remote.MessageEnvelope) { e.Sender = -1 }), reasonSender},
		{"type past end", with(func(e *remote.MessageEnvelope) { e.TypeId = 3 }), reasonTypeID},
		{"negative type", with(func(e *remote.MessageEnvelope) { e.TypeId = -5 }), reasonTypeID},
		{"json serializer", with(func(e *remote.MessageEnvelope) { e.SerializerId = 1 }), reasonSerializer},
		{"serializer past end", with(func(e *remote.MessageEnvelope) { e.SerializerId = 2 }), reasonSerializer},
		{"negative serializer", with(func(e *remote.MessageEnvelope) { e.SerializerId = -1 }), reasonSerializer},
		{"poison pill", with(func(e *remote.MessageEnvelope) { e.TypeId = 1 }), reasonDeniedType},
		{"unknown type", with(func(e *remote.MessageEnvelope) { e.TypeId = 2 }), reasonUnknownType},
		{"sender claims this process", with(func(e *remote.MessageEnvelope) { e.Sender = 2 }), reasonLocalSender},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keep := good()
			b := testBatch(keep, tc.env)
			dropped, err := screenBatch(b, "h:1")
			if err != nil {
				t.Fatal(err)
			}
			if tc.reason == "" {
				if len(dropped) != 0 || len(b.Envelopes) != 2 {
					t.Fatalf("dropped %v, %d envelopes left", dropped, len(b.Envelopes))
				}
				return
			}
			if len(dropped) != 1 || dropped[tc.reason] != 1 {
				t.Fatalf("dropped %v, want 1 × %q", dropped, tc.reason)
			}
			if len(b.Envelopes) != 1 || b.Envelopes[0] != keep {
				t.Fatalf("kept %v, want the good envelope only", b.Envelopes)
			}
		})
	}
}

func TestScreenBatchMalformed(t *testing.T) {
	long := string(make([]byte, maxPIDFieldLen+1))
	for _, tc := range []struct {
		name string
		b    *remote.MessageBatch
	}{
		{"nil batch", nil},
		{"nil envelope", testBatch(nil)},
		{"nil target", &remote.MessageBatch{Targets: []*actor.PID{nil}}},
		{"nil sender", &remote.MessageBatch{Senders: []*actor.PID{nil}}},
		{"long PID", &remote.MessageBatch{Targets: []*actor.PID{actor.NewPID("h:1", long)}}},
		{"long type name", &remote.MessageBatch{TypeNames: []string{string(make([]byte, maxTypeNameLen+1))}}},
		{"too many envelopes", &remote.MessageBatch{Envelopes: make([]*remote.MessageEnvelope, maxBatchEnvelopes+1)}},
		{"too many types", &remote.MessageBatch{TypeNames: make([]string, maxBatchEnvelopes+1)}},
		{"too many headers", func() *remote.MessageBatch {
			h := map[string]string{}
			for i := 0; i <= maxHeaderEntries; i++ {
				h[strconv.Itoa(i)] = ""
			}
			return testBatch(&remote.MessageEnvelope{Target: 0, MessageHeader: &remote.MessageHeader{HeaderData: h}})
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before []*remote.MessageEnvelope
			if tc.b != nil {
				before = slices.Clone(tc.b.Envelopes)
			}
			if _, err := screenBatch(tc.b, ""); err == nil {
				t.Fatal("accepted")
			}
			if tc.b != nil && !slices.Equal(before, tc.b.Envelopes) {
				t.Fatal("malformed batch was changed")
			}
		})
	}
}

// fakeStream is a grpc.ServerStream that hands out queued messages.
type fakeStream struct {
	grpc.ServerStream
	queue []*remote.RemoteMessage
}

func (f *fakeStream) Context() context.Context { return context.Background() }

func (f *fakeStream) RecvMsg(m any) error {
	if len(f.queue) == 0 {
		return io.EOF
	}
	proto.Reset(m.(proto.Message))
	proto.Merge(m.(proto.Message), f.queue[0])
	f.queue = f.queue[1:]
	return nil
}

func quietGuard() *remoteGuard {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return newRemoteGuard(logrus.NewEntry(l), "")
}

// The guarded stream passes one server connect request and batches with
// envelopes left, skips the rest, and ends on a malformed batch.
func TestGuardedStream(t *testing.T) {
	connect := func(c *remote.ConnectRequest) *remote.RemoteMessage {
		return &remote.RemoteMessage{MessageType: &remote.RemoteMessage_ConnectRequest{ConnectRequest: c}}
	}
	server := connect(&remote.ConnectRequest{ConnectionType: &remote.ConnectRequest_ServerConnection{
		ServerConnection: &remote.ServerConnection{SystemId: "sys", Address: "h:1"}}})
	batch := func(b *remote.MessageBatch) *remote.RemoteMessage {
		return &remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: b}}
	}
	fs := &fakeStream{queue: []*remote.RemoteMessage{
		{},
		connect(&remote.ConnectRequest{ConnectionType: &remote.ConnectRequest_ClientConnection{ClientConnection: &remote.ClientConnection{}}}),
		connect(&remote.ConnectRequest{}),
		server,
		server,
		{MessageType: &remote.RemoteMessage_DisconnectRequest{DisconnectRequest: &remote.DisconnectRequest{}}},
		batch(testBatch(&remote.MessageEnvelope{TypeId: 1})),
		batch(testBatch(&remote.MessageEnvelope{TypeId: 1}, &remote.MessageEnvelope{TypeId: 0, Target: 1})),
		batch(testBatch(&remote.MessageEnvelope{Target: 9})),
		batch(&remote.MessageBatch{TypeNames: []string{string(make([]byte, maxTypeNameLen+1))}}),
		batch(testBatch(&remote.MessageEnvelope{})),
	}}
	before := RemoteGuardStats()
	gs := quietGuard().guardStream(fs, receiveMethod)
	var got remote.RemoteMessage
	if err := gs.RecvMsg(&got); err != nil || !proto.Equal(&got, server) {
		t.Fatalf("first message %v, %v; want the server connect request", &got, err)
	}
	if err := gs.RecvMsg(&got); err != nil {
		t.Fatal(err)
	}
	envs := got.GetMessageBatch().GetEnvelopes()
	if len(envs) != 1 || envs[0].Target != 1 {
		t.Fatalf("second message %v; want the batch's good envelope only", &got)
	}
	err := gs.RecvMsg(&got)
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("malformed batch: %v", err)
	}
	after := RemoteGuardStats()
	if d := after.SkippedMessages - before.SkippedMessages; d != 7 {
		t.Errorf("skipped %d messages, want 7 (empty, client, untyped, repeat connect, disconnect, 2 emptied batches)", d)
	}
	if d := after.DroppedEnvelopes - before.DroppedEnvelopes; d != 3 {
		t.Errorf("dropped %d envelopes, want 3", d)
	}
	if d := after.DroppedBatches - before.DroppedBatches; d != 3 {
		t.Errorf("dropped from %d batches, want 3", d)
	}
	if d := after.RejectedStreams - before.RejectedStreams; d != 1 {
		t.Errorf("rejected %d streams, want 1", d)
	}
}

func TestInterceptorsRecoverPanics(t *testing.T) {
	g := quietGuard()
	before := RemoteGuardStats().Panics
	_, err := g.unary(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/x.Y/Z"}, func(context.Context, any) (any, error) {
		panic("boom")
	})
	if status.Code(err) != codes.Internal {
		t.Fatalf("unary: %v", err)
	}
	err = g.stream(nil, &fakeStream{}, &grpc.StreamServerInfo{FullMethod: receiveMethod}, func(any, grpc.ServerStream) error {
		var s []int
		_ = s[3]
		return nil
	})
	if status.Code(err) != codes.Internal {
		t.Fatalf("stream: %v", err)
	}
	if d := RemoteGuardStats().Panics - before; d != 2 {
		t.Fatalf("%d panics counted, want 2", d)
	}
}

func TestUnaryRefusesRemotingCalls(t *testing.T) {
	g := quietGuard()
	for _, m := range []string{"/remote.Remoting/ListProcesses", "/remote.Remoting/GetProcessDiagnostics"} {
		_, err := g.unary(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: m}, func(context.Context, any) (any, error) {
			t.Fatalf("%s: handler called", m)
			return nil, nil
		})
		if status.Code(err) != codes.Unimplemented {
			t.Fatalf("%s: %v", m, err)
		}
	}
	resp, err := g.unary(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/x.Y/Z"}, func(context.Context, any) (any, error) {
		return "ok", nil
	})
	if err != nil || resp != "ok" {
		t.Fatalf("other call: %v %v", resp, err)
	}
}
