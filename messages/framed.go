// framed.go: a FetchResponse or ProduceRequest whose records are an
// internal/frame slice (as storage's reads and the producer's batch
// buffers are) is encoded for the actor remote without copying its
// records. protoactor's endpoint writer calls Serialize (its
// RootSerializable hook) before marshaling a message for another process;
// Serialize encodes every other field (proto.Marshal of a copy without the
// records, withoutRecords, which a test holds to every field of the
// message) and the
// records' tag and length into the frame's headroom, right in front of the
// records, and returns a message whose marshaling is that one slice. The
// bytes are standard protobuf (the records field after the others, which
// every decoder accepts); the receiver decodes a FetchResponse as before.
//
// Records of another origin, or a header that does not fit the headroom
// (not possible for a fetch answer with records, which carries no error
// message, nor for a produce request, whose topic name is at most 249
// bytes), are marshaled as before, with a copy. Local deliveries never
// call Serialize.
//
// Serialize writes into the headroom, so a frame's records must be sent
// in one message at a time: a fetch answer's frame is its own read's; the
// producer sends a batch's frame on its first send only (a retry, which
// may overlap the first send's encoding, goes without the frame).

package messages

import (
	"fmt"

	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/runtime/protoiface"

	"github.com/actorlog/actorlog/internal/frame"
)

// The records' field numbers of FetchResponse and ProduceRequest.
const (
	fetchRecordsField   = 9
	produceRecordsField = 5
)

var (
	_ remote.RootSerializable = (*FetchResponse)(nil)
	_ remote.RootSerializable = (*ProduceRequest)(nil)
)

// Serialize is protoactor's hook before m is marshaled for the remote (see
// the file comment).
func (m *FetchResponse) Serialize() (remote.RootSerialized, error) {
	return serializeFramed(m, m.Records, fetchRecordsField, m.withoutRecords)
}

// withoutRecords is a copy of m's fields but its records. A field added to
// fetch.proto must be added here: TestWithoutRecordsCopiesEveryField
// fails until it is.
func (m *FetchResponse) withoutRecords() proto.Message {
	return &FetchResponse{
		CorrelationId: m.CorrelationId, Topic: m.Topic, Partition: m.Partition,
		ErrorCode: m.ErrorCode, ErrorMessage: m.ErrorMessage, HighWatermark: m.HighWatermark,
		LastStableOffset: m.LastStableOffset, LogStartOffset: m.LogStartOffset,
		DivergingEpoch: m.DivergingEpoch, LeaderEpoch: m.LeaderEpoch,
	}
}

// Serialize is protoactor's hook before m is marshaled for the remote (see
// the file comment): a producer's batch in a frame is sent without a copy.
func (m *ProduceRequest) Serialize() (remote.RootSerialized, error) {
	return serializeFramed(m, m.Records, produceRecordsField, m.withoutRecords)
}

// withoutRecords is a copy of m's fields but its records (see
// FetchResponse.withoutRecords).
func (m *ProduceRequest) withoutRecords() proto.Message {
	return &ProduceRequest{
		Topic: m.Topic, Partition: m.Partition, Acks: m.Acks, TimeoutMs: m.TimeoutMs,
		CurrentLeaderEpoch: m.CurrentLeaderEpoch, CorrelationId: m.CorrelationId,
	}
}

// serializeFramed encodes m, whose records field (number num) holds
// records, into the records' frame if they are in one, else with
// proto.Marshal. rest returns m without its records.
func serializeFramed(m proto.Message, records []byte, num protowire.Number, rest func() proto.Message) (remote.RootSerialized, error) {
	if b, ok := framedEncoding(records, num, rest); ok {
		return &encoded{m: m, data: b}, nil
	}
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("messages: marshal %s: %w", proto.MessageName(m), err)
	}
	return &encoded{m: m, data: b}, nil
}

// framedEncoding is a message's encoding laid out in the frame of records
// (its field num), if they are in one and the other fields (rest: the
// message without its records) fit its headroom.
func framedEncoding(records []byte, num protowire.Number, rest func() proto.Message) ([]byte, bool) {
	if len(records) == 0 {
		return nil, false
	}
	whole, ok := frame.Of(records)
	if !ok {
		return nil, false
	}
	head := whole[:frame.Headroom]
	hdr, err := proto.MarshalOptions{}.MarshalAppend(make([]byte, 0, 64), rest())
	if err != nil {
		return nil, false
	}
	hdr = protowire.AppendTag(hdr, num, protowire.BytesType)
	hdr = protowire.AppendVarint(hdr, uint64(len(records)))
	if len(hdr) > len(head) {
		return nil, false
	}
	at := len(head) - len(hdr)
	copy(head[at:], hdr)
	// whole is the headroom followed by the records: the encoding is
	// whole[at:], its capacity still reaching the frame's trailer, by
	// which the remote codec recycles a pooled frame once it was sent
	// (frame.Recycle).
	return whole[at:], true
}

// encoded is a message already encoded: proto.Marshal of it returns data
// as is. Its name and descriptor are m's, so the remote sends data as m's
// type and the receiver decodes an m.
type encoded struct {
	m    proto.Message
	data []byte
}

var _ remote.RootSerialized = (*encoded)(nil)

func (e *encoded) ProtoReflect() protoreflect.Message {
	return encodedReflect{Message: e.m.ProtoReflect(), e: e}
}

// Deserialize is part of protoactor's RootSerialized; an encoded never
// reaches a receiver (it is decoded as m's type), so it only gives m back.
func (e *encoded) Deserialize() (remote.RootSerializable, error) {
	if r, ok := e.m.(remote.RootSerializable); ok {
		return r, nil
	}
	return nil, fmt.Errorf("messages: %T is not RootSerializable", e.m)
}

// encodedReflect is m's reflection with the fast-path marshal replaced.
type encodedReflect struct {
	protoreflect.Message
	e *encoded
}

func (r encodedReflect) Interface() protoreflect.ProtoMessage { return r.e }

func (r encodedReflect) ProtoMethods() *protoiface.Methods {
	return &protoiface.Methods{
		Marshal: func(in protoiface.MarshalInput) (protoiface.MarshalOutput, error) {
			if len(in.Buf) == 0 {
				return protoiface.MarshalOutput{Buf: r.e.data}, nil
			}
			return protoiface.MarshalOutput{Buf: append(in.Buf, r.e.data...)}, nil
		},
		CheckInitialized: func(protoiface.CheckInitializedInput) (protoiface.CheckInitializedOutput, error) {
			return protoiface.CheckInitializedOutput{}, nil // proto3: no required fields
		},
	}
}
