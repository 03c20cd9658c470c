package client

import (
	"bytes"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/internal/frame"
	"github.com/actorlog/actorlog/messages"
)

// chunked splits b into buffers of chunk bytes (copies, as grpc-go's own).
func chunked(b []byte, chunk int) mem.BufferSlice {
	var s mem.BufferSlice
	for len(b) > 0 {
		n := min(chunk, len(b))
		s = append(s, mem.SliceBuffer(bytes.Clone(b[:n])))
		b = b[n:]
	}
	return s
}

// TestStreamedDecodeMatchesProtobuf: decoding straight from the received
// buffers gives what protobuf gives, however the message is cut into
// buffers (a varint or a tag split between two included), for the field
// order protobuf writes and the one the codec's Marshal writes.
func TestStreamedDecodeMatchesProtobuf(t *testing.T) {
	want := codecTestBatch()
	std, err := proto.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := remoteCodec{}.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	for name, wire := range map[string][]byte{"protobuf": std, "codec": ours.Materialize()} {
		for _, chunk := range []int{1, 3, 7, 4093, 16 << 10, len(wire)} {
			got := &remote.RemoteMessage{}
			if !unmarshalStreamed(chunked(wire, chunk), got, false) {
				t.Fatalf("%s, chunks of %d: the streamed decoder gave up on a well-formed batch", name, chunk)
			}
			if !proto.Equal(got, want) {
				t.Fatalf("%s, chunks of %d: decoded differently", name, chunk)
			}
		}
	}
}

// TestStreamedDecodePoolsProduceRequestsOnly: a ProduceRequest's large
// envelope arrives in a pooled frame that reaches the replica as the
// request's records, recyclable; a fetch answer's (kept by the
// application) and small envelopes are not pooled. A request whose
// records are not its last field (another encoder's order) decodes the
// same, its records capped and not recyclable.
func TestStreamedDecodePoolsProduceRequestsOnly(t *testing.T) {
	recs := randBytes(64<<10, 9)
	framed := frame.Alloc(len(recs))
	copy(framed, recs)
	produce := &messages.ProduceRequest{Topic: "orders", Partition: 1, Acks: messages.Acks_ACKS_ALL, Records: framed, CorrelationId: 12}
	ser, err := produce.Serialize() // as the producer sends it: records last
	if err != nil {
		t.Fatal(err)
	}
	framedData, err := proto.Marshal(ser.(proto.Message))
	if err != nil {
		t.Fatal(err)
	}
	plainData, err := proto.Marshal(produce) // correlation_id after records
	if err != nil {
		t.Fatal(err)
	}
	fetchData, err := proto.Marshal(&messages.FetchResponse{Topic: "orders", Records: recs})
	if err != nil {
		t.Fatal(err)
	}
	m := &remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: &remote.MessageBatch{
		TypeNames: []string{fetchResponseName, produceRequestName},
		Targets:   []*actor.PID{{Address: "a", Id: "partition/orders/1"}},
		Envelopes: []*remote.MessageEnvelope{
			{TypeId: 1, MessageData: framedData},
			{TypeId: 1, MessageData: plainData},
			{TypeId: 0, MessageData: fetchData},
		},
	}}}
	out, err := remoteCodec{}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	got := &remote.RemoteMessage{}
	if err := (remoteCodec{}).Unmarshal(chunked(out.Materialize(), 16<<10), got); err != nil {
		t.Fatal(err)
	}
	envs := got.GetMessageBatch().GetEnvelopes()
	for i, want := range []bool{true, true, false} {
		if frame.Pooled(envs[i].MessageData) != want {
			t.Fatalf("envelope %d: pooled %v, want %v", i, !want, want)
		}
	}
	decode := func(e *remote.MessageEnvelope) *messages.ProduceRequest {
		t.Helper()
		v, err := aliasSerializer{}.Deserialize(produceRequestName, e.MessageData)
		if err != nil {
			t.Fatal(err)
		}
		req := v.(*messages.ProduceRequest)
		if !bytes.Equal(req.Records, recs) || req.Topic != "orders" || req.CorrelationId != 12 {
			t.Fatalf("decoded %s/%d correlation %d, %d bytes of records: not what was sent", req.Topic, req.Partition, req.CorrelationId, len(req.Records))
		}
		return req
	}
	last := decode(envs[0])
	if !frame.Pooled(last.Records) {
		t.Fatal("records sent last in a pooled frame do not reach its trailer: the replica cannot recycle the frame")
	}
	notLast := decode(envs[1])
	if frame.Pooled(notLast.Records) || cap(notLast.Records) != len(notLast.Records) {
		t.Fatalf("records followed by another field have capacity %d past their %d bytes", cap(notLast.Records), len(notLast.Records))
	}
	before := frame.Recycled()
	if !frame.Recycle(last.Records) || frame.Recycled() != before+1 {
		t.Fatal("the frame of a received produce request was not recycled")
	}
}

// TestStreamedDecodeGivesUpOnOddShapes: what the streamed decoder does
// not expect — or a batch without a produce request, which has nothing
// to pool — is left to the materialized path, untouched, and the codec
// still answers as protobuf does.
func TestStreamedDecodeGivesUpOnOddShapes(t *testing.T) {
	wire, err := proto.Marshal(codecTestBatch())
	if err != nil {
		t.Fatal(err)
	}
	trailing := append(bytes.Clone(wire), 0x10, 0x01) // a second top-level field
	group := append(bytes.Clone(wire), 0x0b, 0x0c)    // a group after the batch
	fetches := codecTestBatch()                       // what a consumer receives
	fetches.GetMessageBatch().TypeNames[0] = fetchResponseName
	fetchOnly, err := proto.Marshal(fetches)
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string][]byte{"cut": wire[:len(wire)-1], "trailing field": trailing, "group": group, "no produce request": fetchOnly} {
		got := &remote.RemoteMessage{}
		if unmarshalStreamed(chunked(in, 4096), got, false) {
			t.Fatalf("%s: the streamed decoder took it", name)
		}
		if got.GetMessageBatch() != nil {
			t.Fatalf("%s: the streamed decoder gave up but left a batch behind", name)
		}
		want := &remote.RemoteMessage{}
		wantErr := proto.Unmarshal(in, want)
		gotErr := (remoteCodec{}).Unmarshal(chunked(in, 4096), got)
		if (wantErr == nil) != (gotErr == nil) || (wantErr == nil && !proto.Equal(got, want)) {
			t.Fatalf("%s: codec says %v, protobuf %v", name, gotErr, wantErr)
		}
	}
}

// TestStreamedDecodePoolsFetchAnswersOnHosts: with WithPooledFetchAnswers
// (a host, whose followers give the frame back) a batch of fetch answers
// is decoded envelope by envelope, each large answer in a pooled frame
// whose records, sent last as the leader sends them, reach its trailer;
// without it (a client's consumer) the same batch is left to the
// materialized decode and nothing is pooled.
func TestStreamedDecodePoolsFetchAnswersOnHosts(t *testing.T) {
	recs := randBytes(64<<10, 11)
	framed := frame.Alloc(len(recs))
	copy(framed, recs)
	answer := &messages.FetchResponse{Topic: "orders", Partition: 2, HighWatermark: 77, Records: framed, CorrelationId: 5}
	ser, err := answer.Serialize() // as the leader sends it: records last
	if err != nil {
		t.Fatal(err)
	}
	data, err := proto.Marshal(ser.(proto.Message))
	if err != nil {
		t.Fatal(err)
	}
	m := &remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: &remote.MessageBatch{
		TypeNames: []string{fetchResponseName},
		Targets:   []*actor.PID{{Address: "a", Id: "partition/orders/2"}},
		Envelopes: []*remote.MessageEnvelope{{TypeId: 0, MessageData: data}, {TypeId: 0, MessageData: data}},
	}}}
	out, err := remoteCodec{}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	wire := out.Materialize()
	if unmarshalStreamed(chunked(wire, 16<<10), &remote.RemoteMessage{}, false) {
		t.Fatal("a client's codec decoded fetch answers envelope by envelope")
	}
	got := &remote.RemoteMessage{}
	if err := (remoteCodec{poolFetch: true}).Unmarshal(chunked(wire, 16<<10), got); err != nil {
		t.Fatal(err)
	}
	envs := got.GetMessageBatch().GetEnvelopes()
	if len(envs) != 2 {
		t.Fatalf("%d envelopes decoded, want 2", len(envs))
	}
	before := frame.Recycled()
	for i, e := range envs {
		v, err := aliasSerializer{}.Deserialize(fetchResponseName, e.MessageData)
		if err != nil {
			t.Fatal(err)
		}
		resp := v.(*messages.FetchResponse)
		if !bytes.Equal(resp.Records, recs) || resp.Topic != "orders" || resp.HighWatermark != 77 || resp.CorrelationId != 5 {
			t.Fatalf("envelope %d: decoded %s/%d hw %d, %d bytes of records: not what was sent", i, resp.Topic, resp.Partition, resp.HighWatermark, len(resp.Records))
		}
		if !frame.Recycle(resp.Records) {
			t.Fatalf("envelope %d: the answer's records do not reach a pooled frame's trailer: the follower cannot recycle it", i)
		}
	}
	if frame.Recycled() != before+2 {
		t.Fatalf("%d frames recycled, want 2", frame.Recycled()-before)
	}
}
