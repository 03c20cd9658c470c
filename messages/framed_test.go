// framed_test.go: a FetchResponse or ProduceRequest with framed records
// encodes, through
// Serialize (protoactor's RootSerializable hook), to bytes that decode to
// the same message, with the records not copied; any other response
// encodes as proto.Marshal does.

package messages

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/actorlog/actorlog/internal/frame"
)

// serialized runs the endpoint writer's steps: Serialize, then
// proto.Marshal of what it returns, and the type name protoactor sends.
func serialized(t *testing.T, m remote.RootSerializable) ([]byte, string) {
	t.Helper()
	rs, err := m.Serialize()
	if err != nil {
		t.Fatal(err)
	}
	pm, ok := rs.(proto.Message)
	if !ok {
		t.Fatalf("Serialize returned %T, not a protobuf message", rs)
	}
	b, err := proto.Marshal(pm)
	if err != nil {
		t.Fatal(err)
	}
	return b, string(proto.MessageName(pm))
}

func fullResponse(records []byte) *FetchResponse {
	return &FetchResponse{
		CorrelationId: 77, Topic: strings.Repeat("t", 249), Partition: 1<<31 - 1,
		HighWatermark: -1, LastStableOffset: 1 << 62, LogStartOffset: 12345,
		DivergingEpoch: &EpochEndOffset{Epoch: 4, EndOffset: 99},
		LeaderEpoch:    -7, Records: records,
	}
}

func TestFramedFetchResponseIsNotCopied(t *testing.T) {
	recs := frame.Alloc(4096)
	for i := range recs {
		recs[i] = byte(i * 7)
	}
	recs = recs[:4000] // as a read that stopped before a partial batch
	m := fullResponse(recs)
	b, name := serialized(t, m)
	if name != "actorlog.messages.FetchResponse" {
		t.Fatalf("sent as %q", name)
	}
	if unsafe.SliceData(b[len(b)-len(recs):]) != unsafe.SliceData(recs) {
		t.Fatal("the encoding does not end with the records themselves: they were copied")
	}
	got := &FetchResponse{}
	if err := proto.Unmarshal(b, got); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, m) {
		t.Fatalf("decoded %v, want %v", got, m)
	}
	if want, _ := proto.Marshal(m); proto.Size(got) != len(want) {
		t.Fatalf("framed encoding decodes to a message of %d bytes, proto.Marshal's %d", proto.Size(got), len(want))
	}
}

// TestUnframedFetchResponseEncodesAsBefore: records of another origin, no
// records, or fields that do not fit the headroom: proto.Marshal's bytes.
func TestUnframedFetchResponseEncodesAsBefore(t *testing.T) {
	big := fullResponse(frame.Alloc(100))
	big.ErrorMessage = strings.Repeat("e", frame.Headroom)
	for name, m := range map[string]*FetchResponse{
		"plain records":        fullResponse([]byte("not a frame")),
		"no records":           fullResponse(nil),
		"re-sliced frame":      fullResponse(frame.Alloc(100)[1:]),
		"fields over headroom": big,
	} {
		b, _ := serialized(t, m)
		want, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != string(want) {
			t.Errorf("%s: encoded %d bytes unlike proto.Marshal's %d", name, len(b), len(want))
		}
	}
}

// TestFramedProduceRequestIsNotCopied: a producer's batch in a frame is
// sent inside the encoded request itself, which decodes to the request;
// the longest topic name fits the headroom. Unframed records encode as
// proto.Marshal does.
func TestFramedProduceRequestIsNotCopied(t *testing.T) {
	recs := frame.Alloc(64 << 10)
	for i := range recs {
		recs[i] = byte(i * 13)
	}
	recs = recs[:60000] // a batch smaller than its buffer
	m := &ProduceRequest{Topic: strings.Repeat("p", 249), Partition: 1<<31 - 1, Acks: Acks_ACKS_ALL, TimeoutMs: 1<<31 - 1,
		Records: recs, CurrentLeaderEpoch: -1, CorrelationId: -1}
	b, name := serialized(t, m)
	if name != "actorlog.messages.ProduceRequest" {
		t.Fatalf("sent as %q", name)
	}
	if unsafe.SliceData(b[len(b)-len(recs):]) != unsafe.SliceData(recs) {
		t.Fatal("the encoding does not end with the records themselves: they were copied")
	}
	got := &ProduceRequest{}
	if err := proto.Unmarshal(b, got); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, m) {
		t.Fatal("decoded request differs from the one sent")
	}
	plain := &ProduceRequest{Topic: "t", Records: []byte("not a frame"), CurrentLeaderEpoch: -1}
	b, _ = serialized(t, plain)
	if want, _ := proto.Marshal(plain); string(b) != string(want) {
		t.Fatalf("unframed request encoded %d bytes unlike proto.Marshal's %d", len(b), len(want))
	}
}

// BenchmarkSerializeFramed: a producer's 16 KiB batch and a fetch answer
// encoded through Serialize, the per-request cost of the framed path.
func BenchmarkSerializeFramed(b *testing.B) {
	produce := &ProduceRequest{Topic: "topic-1", Partition: 2, Acks: Acks_ACKS_ALL, TimeoutMs: 30000,
		Records: frame.Alloc(16 << 10), CurrentLeaderEpoch: 3, CorrelationId: 99}
	fetch := fullResponse(frame.Alloc(16 << 10))
	for name, m := range map[string]remote.RootSerializable{"produce": produce, "fetch": fetch} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rs, err := m.Serialize()
				if err != nil {
					b.Fatal(err)
				}
				if _, err := proto.Marshal(rs.(proto.Message)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// populated is m with every field set to a value other than its default,
// through reflection, so that a field added to the .proto is set too.
func populated(t *testing.T, m proto.Message) proto.Message {
	t.Helper()
	r := m.ProtoReflect()
	fields := r.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.IsList() || fd.IsMap() {
			t.Fatalf("%s: repeated field %s: extend populated", r.Descriptor().FullName(), fd.Name())
		}
		var v protoreflect.Value
		switch fd.Kind() {
		case protoreflect.StringKind:
			v = protoreflect.ValueOfString("s")
		case protoreflect.BytesKind:
			v = protoreflect.ValueOfBytes([]byte{1, 2, 3})
		case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
			v = protoreflect.ValueOfInt32(int32(7 + i))
		case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
			v = protoreflect.ValueOfInt64(int64(70 + i))
		case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
			v = protoreflect.ValueOfUint32(uint32(7 + i))
		case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
			v = protoreflect.ValueOfUint64(uint64(70 + i))
		case protoreflect.BoolKind:
			v = protoreflect.ValueOfBool(true)
		case protoreflect.EnumKind:
			v = protoreflect.ValueOfEnum(1)
		case protoreflect.MessageKind:
			v = protoreflect.ValueOfMessage(populated(t, r.NewField(fd).Message().Interface()).ProtoReflect())
		default:
			t.Fatalf("%s: field %s of kind %v: extend populated", r.Descriptor().FullName(), fd.Name(), fd.Kind())
		}
		r.Set(fd, v)
	}
	return m
}

// TestWithoutRecordsCopiesEveryField: the copy a framed encoding marshals
// holds every field of the message but its records (a field added to
// fetch.proto or produce.proto and not to withoutRecords fails here).
func TestWithoutRecordsCopiesEveryField(t *testing.T) {
	for _, c := range []struct {
		m    proto.Message
		rest func() proto.Message
		num  protowire.Number
	}{
		{populated(t, &FetchResponse{}), nil, fetchRecordsField},
		{populated(t, &ProduceRequest{}), nil, produceRecordsField},
	} {
		switch m := c.m.(type) {
		case *FetchResponse:
			c.rest = m.withoutRecords
		case *ProduceRequest:
			c.rest = m.withoutRecords
		}
		got := c.rest().ProtoReflect()
		want := c.m.ProtoReflect()
		fields := want.Descriptor().Fields()
		for i := range fields.Len() {
			fd := fields.Get(i)
			switch {
			case fd.Number() == c.num && got.Has(fd):
				t.Errorf("%s: the copy holds the records", want.Descriptor().Name())
			case fd.Number() != c.num && !got.Get(fd).Equal(want.Get(fd)):
				t.Errorf("%s: field %s not copied", want.Descriptor().Name(), fd.Name())
			}
		}
	}
}
