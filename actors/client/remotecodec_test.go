package client

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"testing"
	"unsafe"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/internal/frame"
	"github.com/actorlog/actorlog/messages"
)

// randBytes returns n bytes of a fixed pseudo-random sequence (seed).
func randBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed+1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// codecTestBatch is a RemoteMessage with envelopes of every shape: large (sent
// aliased), small (copied), empty, with a header and request ids.
func codecTestBatch() *remote.RemoteMessage {
	return &remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: &remote.MessageBatch{
		TypeNames: []string{produceRequestName, "actorlog.messages.MetadataRequest"},
		Targets:   []*actor.PID{{Address: "127.0.0.1:1", Id: "partition/t/0"}, {Address: "127.0.0.1:1", Id: "meta"}},
		Senders:   []*actor.PID{{Address: "127.0.0.1:2", Id: "producer"}},
		Envelopes: []*remote.MessageEnvelope{
			{TypeId: 0, MessageData: randBytes(1<<20, 1), Target: 0, Sender: 1, SenderRequestId: 7},
			{TypeId: 1, MessageData: randBytes(100, 2), Target: 1, Sender: 1,
				MessageHeader: &remote.MessageHeader{HeaderData: map[string]string{"k": "v"}}},
			{TypeId: 1, Target: 1},
			{TypeId: 0, MessageData: randBytes(aliasMinBytes, 3), Target: 0, TargetRequestId: 3},
			{TypeId: 0, MessageData: randBytes(aliasMinBytes-1, 4), Target: 0},
		},
	}}}
}

// recordingPool is a mem.BufferPool that remembers every buffer put back,
// so a test can overwrite them as reuse would.
type recordingPool struct {
	mu  sync.Mutex
	put []*[]byte
}

func (p *recordingPool) Get(n int) *[]byte {
	b := make([]byte, n)
	return &b
}

func (p *recordingPool) Put(b *[]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.put = append(p.put, b)
}

// scribble overwrites every buffer put back.
func (p *recordingPool) scribble() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.put {
		for i := range *b {
			(*b)[i] = 0xEE
		}
	}
	return len(p.put)
}

// pooledSlice splits b into pooled buffers of chunk bytes, as grpc-go's
// transport hands a received message to the codec.
func pooledSlice(b []byte, chunk int, pool mem.BufferPool) mem.BufferSlice {
	var s mem.BufferSlice
	for len(b) > 0 {
		n := min(chunk, len(b))
		buf := pool.Get(n)
		copy(*buf, b[:n])
		s = append(s, mem.NewBuffer(buf, pool))
		b = b[n:]
	}
	return s
}

func materialize(t *testing.T, s mem.BufferSlice) []byte {
	t.Helper()
	b := s.Materialize()
	s.Free()
	return b
}

// TestRemoteCodecWireCompatible: what remoteCodec writes decodes with
// protobuf to the message sent, and what grpc-go's codec writes decodes
// with remoteCodec to the message sent, for batches above and below the
// aliasing size and other RemoteMessages.
func TestRemoteCodecWireCompatible(t *testing.T) {
	small := &remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: &remote.MessageBatch{
		TypeNames: []string{"a"}, Targets: []*actor.PID{{Id: "x"}},
		Envelopes: []*remote.MessageEnvelope{{MessageData: []byte("small"), SerializerId: 0}},
	}}}
	connect := &remote.RemoteMessage{MessageType: &remote.RemoteMessage_ConnectRequest{ConnectRequest: &remote.ConnectRequest{
		ConnectionType: &remote.ConnectRequest_ServerConnection{ServerConnection: &remote.ServerConnection{SystemId: "s", Address: "a"}},
	}}}
	for name, want := range map[string]*remote.RemoteMessage{"large batch": codecTestBatch(), "small batch": small, "connect": connect} {
		t.Run(name, func(t *testing.T) {
			out, err := remoteCodec{}.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			wire := materialize(t, out)
			got := &remote.RemoteMessage{}
			if err := proto.Unmarshal(wire, got); err != nil {
				t.Fatalf("protobuf cannot decode remoteCodec's bytes: %v", err)
			}
			if !proto.Equal(got, want) {
				t.Fatal("remoteCodec's bytes decode to another message")
			}
			if proto.Size(want) != len(wire) {
				t.Fatalf("remoteCodec wrote %d bytes, protobuf %d", len(wire), proto.Size(want))
			}

			std, err := defaultProtoCodec.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			pool := &recordingPool{}
			got = &remote.RemoteMessage{}
			if err := (remoteCodec{}).Unmarshal(pooledSlice(materialize(t, std), 16<<10, pool), got); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, want) {
				t.Fatal("remoteCodec decodes grpc-go's bytes to another message")
			}
		})
	}
}

// TestRemoteCodecMarshalAliasesUnpooled: a large message_data is sent as
// it is (no copy), and freeing the encoded slice, as grpc-go does once the
// transport has written it, never hands the envelope's bytes to a pool:
// buffers taken from grpc-go's pool afterwards and overwritten leave it
// intact.
func TestRemoteCodecMarshalAliasesUnpooled(t *testing.T) {
	m := codecTestBatch()
	data := m.GetMessageBatch().Envelopes[0].MessageData
	want := bytes.Clone(data)
	out, err := remoteCodec{}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	aliased := false
	for _, b := range out {
		if d := b.ReadOnlyData(); len(d) > 0 && unsafe.SliceData(d) == unsafe.SliceData(data) {
			aliased = true
		}
	}
	if !aliased {
		t.Fatal("the 1 MiB message_data was copied, not sent as it is")
	}
	out.Free()
	pool := mem.DefaultBufferPool()
	for range 8 {
		b := pool.Get(len(data))
		for i := range *b {
			(*b)[i] = 0xEE
		}
		defer pool.Put(b)
	}
	if !bytes.Equal(data, want) {
		t.Fatal("the envelope's message_data changed after the encoded slice was freed")
	}
}

// smallRequestsBatch is a batch of n envelopes of size bytes each, as a
// producer's small batches for one host leave the endpoint writer, and one
// envelope of 100 bytes.
func smallRequestsBatch(n, size int) *remote.RemoteMessage {
	m := &remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: &remote.MessageBatch{
		TypeNames: []string{produceRequestName}, Targets: []*actor.PID{{Address: "a", Id: "p"}},
	}}}
	b := m.GetMessageBatch()
	for i := range n {
		b.Envelopes = append(b.Envelopes, &remote.MessageEnvelope{MessageData: randBytes(size, uint64(10+i)), TargetRequestId: uint32(i)})
	}
	b.Envelopes = append(b.Envelopes, &remote.MessageEnvelope{MessageData: randBytes(100, 99)})
	return m
}

// TestRemoteCodecSmallRequestsTogether: envelopes each below aliasMinBytes
// that reach it together are sent in pieces, every message_data of at
// least pieceMinBytes as it is and smaller ones copied, in bytes protobuf
// decodes to the message sent; a batch below aliasMinBytes in all is
// copied whole.
func TestRemoteCodecSmallRequestsTogether(t *testing.T) {
	for _, c := range []struct {
		name        string
		n, size     int
		wantAliased int
	}{
		{"5x16KiB", 5, 16 << 10, 5},
		{"9x4KiB", 9, pieceMinBytes, 9},
		{"9x4KiB-1", 9, pieceMinBytes - 1, 0},
		{"1x16KiB", 1, 16 << 10, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := smallRequestsBatch(c.n, c.size)
			out, err := remoteCodec{}.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			aliased := 0
			for _, b := range out {
				for _, e := range want.GetMessageBatch().Envelopes {
					if d := b.ReadOnlyData(); len(d) > 0 && unsafe.SliceData(d) == unsafe.SliceData(e.MessageData) {
						aliased++
					}
				}
			}
			if aliased != c.wantAliased {
				t.Fatalf("%d message_data sent as they are, want %d", aliased, c.wantAliased)
			}
			wire := materialize(t, out)
			got := &remote.RemoteMessage{}
			if err := proto.Unmarshal(wire, got); err != nil {
				t.Fatalf("protobuf cannot decode remoteCodec's bytes: %v", err)
			}
			if !proto.Equal(got, want) || len(wire) != proto.Size(want) {
				t.Fatal("remoteCodec's bytes decode to another message")
			}
		})
	}
}

// TestRemoteCodecUnmarshalSurvivesRecycle: a decoded batch references none
// of the buffers grpc-go passed in (they are recycled once Unmarshal
// returns): overwriting them all leaves every envelope intact. Large
// message_data aliases the codec's own copy, with its capacity capped so
// an append cannot run into the next envelope.
func TestRemoteCodecUnmarshalSurvivesRecycle(t *testing.T) {
	want := codecTestBatch()
	wire, err := proto.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	// In many buffers, as grpc-go's transport hands them over, and in one.
	for _, chunk := range []int{16 << 10, len(wire)} {
		pool := &recordingPool{}
		in := pooledSlice(wire, chunk, pool)
		got := &remote.RemoteMessage{}
		if err := (remoteCodec{}).Unmarshal(in, got); err != nil {
			t.Fatal(err)
		}
		pooled := 0 // grpc-go's mem.NewBuffer does not pool tiny buffers
		for _, b := range in {
			if _, ok := b.(mem.SliceBuffer); !ok {
				pooled++
			}
		}
		in.Free()
		if n := pool.scribble(); n != pooled || n < len(in)-1 {
			t.Fatalf("%d buffers recycled, want %d of %d", n, pooled, len(in))
		}
		// Nor may the decoded batch hold a buffer of grpc-go's own pool
		// (where its codec assembles a message): take and overwrite
		// what that pool has of the message's size.
		for range 8 {
			b := mem.DefaultBufferPool().Get(len(wire))
			for i := range *b {
				(*b)[i] = 0xEE
			}
			defer mem.DefaultBufferPool().Put(b)
		}
		if !proto.Equal(got, want) {
			t.Fatalf("chunks of %d: the decoded batch changed when the received buffers were recycled", chunk)
		}
		envs := got.GetMessageBatch().Envelopes
		for i, e := range envs {
			// A ProduceRequest's large data has a pooled frame of its own
			// (remotedecode.go), whose capacity reaches just its trailer.
			wantPooled := e.TypeId == 0 && len(e.MessageData) >= pieceMinBytes
			if frame.Pooled(e.MessageData) != wantPooled {
				t.Fatalf("envelope %d (type %d, %d bytes): pooled frame %v, want %v", i, e.TypeId, len(e.MessageData), !wantPooled, wantPooled)
			}
			if !wantPooled && cap(e.MessageData) != len(e.MessageData) {
				t.Fatalf("envelope %d: message_data has capacity %d past its %d bytes", i, cap(e.MessageData), len(e.MessageData))
			}
		}
		// Writing through one envelope's data (as a replica stamping a
		// batch header would) changes no other envelope.
		for i := range envs[0].MessageData {
			envs[0].MessageData[i] = 0
		}
		grown := append(envs[0].MessageData, 1, 2, 3)
		if frame.Pooled(envs[0].MessageData) {
			t.Fatal("appending to a pooled envelope's data wrote its trailer, and the frame still counts as pooled")
		}
		for i := 1; i < len(envs); i++ {
			if !bytes.Equal(envs[i].MessageData, want.GetMessageBatch().Envelopes[i].MessageData) {
				t.Fatalf("envelope %d changed when envelope 0's data (now %d bytes) was written", i, len(grown))
			}
		}
	}
}

// TestRemoteCodecUnmarshalMalformed: truncated input is an error, as with
// protobuf, not a panic or a partial message.
func TestRemoteCodecUnmarshalMalformed(t *testing.T) {
	wire, err := proto.Marshal(codecTestBatch())
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{1, 100, len(wire) / 2, len(wire) - 1} {
		got := &remote.RemoteMessage{}
		if err := (remoteCodec{}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(wire[:max(cut, aliasMinBytes)])}, got); err == nil {
			t.Fatalf("cut at %d: decoded %d envelopes without error", cut, len(got.GetMessageBatch().GetEnvelopes()))
		}
	}
}

// BenchmarkRemoteCodec: one RemoteMessage of 4 envelopes of 1 MiB (a
// producer's requests at the default batch size) and one of 5 envelopes of
// 16 KiB (at --batch-size 16384), encoded and decoded by grpc-go's codec
// and by remoteCodec (B/op: the copies this file removes).
func BenchmarkRemoteCodec(b *testing.B) {
	for _, shape := range []struct {
		name      string
		envelopes int
		size      int
	}{{"4x1MiB", 4, 1 << 20}, {"5x16KiB", 5, 16 << 10}} {
		b.Run(shape.name, func(b *testing.B) { benchmarkRemoteCodec(b, shape.envelopes, shape.size) })
	}
}

func benchmarkRemoteCodec(b *testing.B, envelopes, size int) {
	m := &remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: &remote.MessageBatch{
		TypeNames: []string{produceRequestName}, Targets: []*actor.PID{{Address: "a", Id: "p"}},
	}}}
	for i := range envelopes {
		m.GetMessageBatch().Envelopes = append(m.GetMessageBatch().Envelopes, &remote.MessageEnvelope{MessageData: randBytes(size, uint64(i))})
	}
	wire, err := proto.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		codec interface {
			Marshal(any) (mem.BufferSlice, error)
			Unmarshal(mem.BufferSlice, any) error
		}
	}{{"grpc", defaultProtoCodec}, {"remote", remoteCodec{}}} {
		b.Run(c.name+"/marshal", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(wire)))
			for b.Loop() {
				out, err := c.codec.Marshal(m)
				if err != nil {
					b.Fatal(err)
				}
				out.Free()
			}
		})
		b.Run(c.name+"/unmarshal", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(wire)))
			pool := mem.DefaultBufferPool()
			for b.Loop() {
				in := pooledSlice(wire, 16<<10, pool)
				got := &remote.RemoteMessage{}
				if err := c.codec.Unmarshal(in, got); err != nil {
					b.Fatal(err)
				}
				in.Free()
			}
		})
	}
}

// FuzzRemoteCodecUnmarshal: the remote's port takes bytes from anyone, so
// the aliasing decoder must agree with proto.Unmarshal on every input:
// the same message where it decodes, an error where it does not, and
// never a panic.
func FuzzRemoteCodecUnmarshal(f *testing.F) {
	small := codecTestBatch()
	for _, e := range small.GetMessageBatch().GetEnvelopes() {
		if len(e.MessageData) > 64 {
			e.MessageData = e.MessageData[:64]
		}
	}
	for _, m := range []proto.Message{small, &remote.RemoteMessage{}, &remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: &remote.MessageBatch{}}}} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		want := &remote.RemoteMessage{}
		wantErr := proto.Unmarshal(in, want)
		got := &remote.RemoteMessage{}
		gotErr := unmarshalRemoteMessage(bytes.Clone(in), got)
		switch {
		case wantErr == nil && gotErr != nil:
			t.Fatalf("proto decodes %x, the remote codec refuses it: %v", in, gotErr)
		case wantErr != nil && gotErr == nil:
			t.Fatalf("proto refuses %x (%v), the remote codec decodes it", in, wantErr)
		case wantErr == nil && !proto.Equal(got, want):
			t.Fatalf("decoded %x differently:\n got %v\nwant %v", in, got, want)
		}
		// Straight from the received buffers (remotedecode.go): where it
		// does not give up, protobuf agrees.
		for _, chunk := range []int{1, 5, len(in) + 1} {
			streamed := &remote.RemoteMessage{}
			if !unmarshalStreamed(chunked(in, chunk), streamed, false) {
				continue
			}
			if wantErr != nil {
				t.Fatalf("proto refuses %x (%v), the streamed decoder (chunks of %d) decodes it", in, wantErr, chunk)
			}
			if !proto.Equal(streamed, want) {
				t.Fatalf("streamed (chunks of %d) decoded %x differently:\n got %v\nwant %v", chunk, in, streamed, want)
			}
		}
	})
}

// TestCodecHeadsCopyEveryField: the copies the codec marshals in front of
// the pieces hold every field of protoactor's MessageBatch and
// MessageEnvelope but envelopes and message_data (a field added by a
// protoactor upgrade and not copied fails here), unknown fields included.
func TestCodecHeadsCopyEveryField(t *testing.T) {
	env := &remote.MessageEnvelope{TypeId: 1, MessageData: []byte{9}, Target: 2, Sender: 3, SerializerId: 4,
		MessageHeader: &remote.MessageHeader{HeaderData: map[string]string{"k": "v"}}, TargetRequestId: 5, SenderRequestId: 6}
	batch := &remote.MessageBatch{TypeNames: []string{"a"}, Targets: []*actor.PID{{Id: "t"}},
		Envelopes: []*remote.MessageEnvelope{env}, Senders: []*actor.PID{{Id: "s"}}}
	unknown := proto.Clone(env).(*remote.MessageEnvelope)
	unknown.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 1))
	for _, c := range []struct {
		src, copied proto.Message
		without     protowire.Number
	}{
		{batch, batchHead(batch), batchEnvelopesNum},
		{env, envelopeHead(env), envelopeDataNum},
		{unknown, envelopeHead(unknown), envelopeDataNum},
	} {
		src, got := c.src.ProtoReflect(), c.copied.ProtoReflect()
		fields := src.Descriptor().Fields()
		for i := range fields.Len() {
			fd := fields.Get(i)
			switch {
			case !src.Has(fd):
				t.Fatalf("%s: the test sets no %s: set every field", src.Descriptor().Name(), fd.Name())
			case fd.Number() == c.without:
				if got.Has(fd) {
					t.Errorf("%s: the copy holds %s", src.Descriptor().Name(), fd.Name())
				}
			case !got.Get(fd).Equal(src.Get(fd)):
				t.Errorf("%s: field %s not copied", src.Descriptor().Name(), fd.Name())
			}
		}
		if string(got.GetUnknown()) != string(src.GetUnknown()) {
			t.Errorf("%s: unknown fields not copied", src.Descriptor().Name())
		}
	}
}

// TestRemoteCodecRecyclesPooledFetchFrames: a fetch answer whose records
// are a host's pooled read frame (storage reads into frame.AllocPooled) is
// sent in pieces, the frame itself one of them; when grpc-go frees the
// encoded message the frame goes back to its pool, not before. The bytes
// sent decode to the same answer. A producer's batch in a frame of its own
// (frame.Alloc: the producer reuses it after the answer) is never
// recycled by the codec.
func TestRemoteCodecRecyclesPooledFetchFrames(t *testing.T) {
	encode := func(m remote.RootSerializable) []byte {
		t.Helper()
		enc, err := m.Serialize()
		if err != nil {
			t.Fatal(err)
		}
		pm, ok := enc.(proto.Message)
		if !ok {
			t.Fatalf("%T is not a proto.Message", enc)
		}
		b, err := proto.Marshal(pm) // as protoactor's proto serializer
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	batch := func(typeName string, data []byte) *remote.RemoteMessage {
		return &remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: &remote.MessageBatch{
			TypeNames: []string{typeName},
			Targets:   []*actor.PID{{Address: "127.0.0.1:1", Id: "consumer"}},
			Envelopes: []*remote.MessageEnvelope{{TypeId: 0, MessageData: data, Target: 0}},
		}}}
	}

	records := frame.AllocPooled(64 << 10)
	copy(records, randBytes(len(records), 9))
	want := bytes.Clone(records)
	resp := &messages.FetchResponse{CorrelationId: 5, Topic: "t", Partition: 2, HighWatermark: 99, Records: records}
	data := encode(resp)
	if !frame.Pooled(data) {
		t.Fatal("the encoded fetch answer does not reach its pooled frame's trailer")
	}
	out, err := remoteCodec{}.Marshal(batch(fetchResponseName, data))
	if err != nil {
		t.Fatal(err)
	}
	before := frame.Recycled()
	var got remote.RemoteMessage
	if err := proto.Unmarshal(out.Materialize(), &got); err != nil {
		t.Fatal(err)
	}
	var decoded messages.FetchResponse
	if err := proto.Unmarshal(got.GetMessageBatch().GetEnvelopes()[0].GetMessageData(), &decoded); err != nil {
		t.Fatal(err)
	}
	if decoded.CorrelationId != 5 || decoded.HighWatermark != 99 || !bytes.Equal(decoded.Records, want) {
		t.Fatal("the pieces do not decode to the fetch answer")
	}
	if frame.Recycled() != before {
		t.Fatal("the frame was recycled before the encoded answer was freed")
	}
	out.Free()
	if frame.Recycled() < before+1 {
		t.Fatal("freeing the encoded answer did not recycle its frame")
	}

	// A small answer (a follower's at a moderate rate: tens of records)
	// takes a frame of the smallest class all the same (17 KiB); it goes
	// in pieces too, its frame back to the pool, beside a small message
	// that is not pooled (copied with the small fields). Below 1 KiB
	// storage's reads are not pooled (frame.AllocPooled): grpc-go would
	// not give such a buffer back.
	for _, size := range []int{2 << 10, 5 << 10} {
		small := frame.AllocPooled(size)
		copy(small, randBytes(size, 11))
		want := bytes.Clone(small)
		data := encode(&messages.FetchResponse{CorrelationId: 6, Topic: "t", Partition: 1, HighWatermark: 7, Records: small})
		if !frame.Pooled(data) {
			t.Fatalf("%d B: the encoded fetch answer does not reach its pooled frame's trailer", size)
		}
		other := encode(&messages.FetchResponse{CorrelationId: 8, Topic: "t", Partition: 0, Records: []byte("plain")})
		m := batch(fetchResponseName, other)
		m.GetMessageBatch().Envelopes = append(m.GetMessageBatch().Envelopes, &remote.MessageEnvelope{TypeId: 0, MessageData: data, Target: 0})
		out, err := remoteCodec{}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var got remote.RemoteMessage
		if err := proto.Unmarshal(out.Materialize(), &got); err != nil {
			t.Fatal(err)
		}
		envs := got.GetMessageBatch().GetEnvelopes()
		var first, second messages.FetchResponse
		if len(envs) != 2 || proto.Unmarshal(envs[0].GetMessageData(), &first) != nil || proto.Unmarshal(envs[1].GetMessageData(), &second) != nil {
			t.Fatalf("%d B: the pieces do not decode to two answers", size)
		}
		if first.CorrelationId != 8 || string(first.Records) != "plain" || second.CorrelationId != 6 || !bytes.Equal(second.Records, want) {
			t.Fatalf("%d B: the pieces do not decode to the fetch answers", size)
		}
		before := frame.Recycled()
		out.Free()
		if frame.Recycled() != before+1 {
			t.Fatalf("%d B: freeing the encoded answers recycled %d frames, want 1", size, frame.Recycled()-before)
		}
	}

	batchBuf := frame.Alloc(64 << 10)
	copy(batchBuf, randBytes(len(batchBuf), 10))
	req := &messages.ProduceRequest{Topic: "t", Partition: 0, Records: batchBuf}
	data = encode(req)
	if frame.Pooled(data) {
		t.Fatal("a producer's frame counts as pooled")
	}
	out, err = remoteCodec{}.Marshal(batch(produceRequestName, data))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range out {
		if _, ok := b.(mem.SliceBuffer); !ok {
			t.Fatalf("a piece of a produce request is a %T, want mem.SliceBuffer (Free leaves it alone)", b)
		}
	}
	out.Free()
}
