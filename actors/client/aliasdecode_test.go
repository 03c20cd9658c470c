package client

import (
	"bytes"
	"testing"

	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/messages"
)

func TestAliasSerializerRegistered(t *testing.T) {
	if aliasSerializerID < 2 {
		t.Fatalf("alias serializer id %d: want past protoactor's protobuf (0) and JSON (1)", aliasSerializerID)
	}
	req := &messages.ProduceRequest{Topic: "t", Partition: 3, Records: []byte("batch")}
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := remote.Deserialize(b, produceRequestName, aliasSerializerID)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got.(*messages.ProduceRequest), req) {
		t.Fatalf("decoded %v, want %v", got, req)
	}
}

// TestAliasDecodeAliasesRecords: Records points into the input (no copy)
// and every other field decodes as protobuf decodes it.
func TestAliasDecodeAliasesRecords(t *testing.T) {
	recs := bytes.Repeat([]byte{7}, 1<<20)
	cases := []proto.Message{
		&messages.ProduceRequest{Topic: "orders", Partition: 2, Acks: messages.Acks_ACKS_ALL, TimeoutMs: 30000, Records: recs, CurrentLeaderEpoch: -1, CorrelationId: 99},
		&messages.FetchResponse{CorrelationId: 5, Topic: "orders", Partition: 1, ErrorMessage: "x", HighWatermark: 10, LastStableOffset: 10, LogStartOffset: 1, Records: recs, LeaderEpoch: 4},
	}
	for _, want := range cases {
		b, err := proto.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := aliasSerializer{}.Deserialize(string(proto.MessageName(want)), b)
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got.(proto.Message), want) {
			t.Fatalf("%s: decoded differently", proto.MessageName(want))
		}
		var r []byte
		switch m := got.(type) {
		case *messages.ProduceRequest:
			r = m.Records
		case *messages.FetchResponse:
			r = m.Records
		}
		// Writing the input where the records start shows in Records
		// only if they alias it.
		b[bytes.Index(b, recs[:64])] ^= 0xff
		if r[0] == recs[0] {
			t.Fatalf("%s: records were copied, not aliased", proto.MessageName(want))
		}
		if cap(r) != len(r) {
			t.Fatalf("%s: records slice has capacity %d past its length %d (an append would write into the input)", proto.MessageName(want), cap(r), len(r))
		}
	}
}

// TestAliasDecodeMatchesProtobuf: the same message or the same refusal as
// proto.Unmarshal, on well-formed and hostile inputs.
func TestAliasDecodeMatchesProtobuf(t *testing.T) {
	good, err := proto.Marshal(&messages.ProduceRequest{Topic: "t", Records: []byte("first"), CorrelationId: 1})
	if err != nil {
		t.Fatal(err)
	}
	twice := protowire.AppendBytes(protowire.AppendTag(append([]byte(nil), good...), produceRecordsNum, protowire.BytesType), []byte("second"))
	wrongType := protowire.AppendVarint(protowire.AppendTag(nil, produceRecordsNum, protowire.VarintType), 5)
	badUTF8 := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte{0xff, 0xfe})
	for name, in := range map[string][]byte{
		"good": good, "records twice (last wins)": twice, "records with a varint wire type": wrongType,
		"topic not UTF-8": badUTF8, "truncated": good[:len(good)-2], "bad tag": {0x80}, "empty": {},
		"records length past the end": protowire.AppendVarint(protowire.AppendTag(nil, produceRecordsNum, protowire.BytesType), 1000),
	} {
		checkAliasAgainstProto(t, name, in)
	}
}

func checkAliasAgainstProto(t *testing.T, name string, in []byte) {
	t.Helper()
	for _, typeName := range []string{produceRequestName, fetchResponseName} {
		var want proto.Message = &messages.ProduceRequest{}
		if typeName == fetchResponseName {
			want = &messages.FetchResponse{}
		}
		werr := proto.Unmarshal(in, want)
		got, gerr := aliasSerializer{}.Deserialize(typeName, in)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%s as %s: protobuf says %v, alias decoder %v", name, typeName, werr, gerr)
		}
		if werr == nil && !proto.Equal(got.(proto.Message), want) {
			t.Fatalf("%s as %s: alias decoder gives %v, protobuf %v", name, typeName, got, want)
		}
	}
}

func FuzzAliasDecode(f *testing.F) {
	for _, m := range []proto.Message{
		&messages.ProduceRequest{Topic: "t", Partition: 1, Records: []byte("r"), CorrelationId: 3},
		&messages.FetchResponse{Topic: "t", Records: []byte("r"), HighWatermark: 9},
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkAliasAgainstProto(t, "fuzz input", in)
	})
}

// BenchmarkDecodeProduceRequest: a 1 MiB produce request decoded as
// protoactor's protobuf serializer does (Protobuf) and as the guard's
// aliasing serializer does (Aliased). Compare B/op and ns/op.
func BenchmarkDecodeProduceRequest(b *testing.B) {
	in, err := proto.Marshal(&messages.ProduceRequest{Topic: "orders", Partition: 2, Acks: messages.Acks_ACKS_ALL, Records: bytes.Repeat([]byte{1}, 1<<20), CorrelationId: 7})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Protobuf", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			if _, err := remote.Deserialize(in, produceRequestName, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Aliased", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			if _, err := remote.Deserialize(in, produceRequestName, aliasSerializerID); err != nil {
				b.Fatal(err)
			}
		}
	})
}
