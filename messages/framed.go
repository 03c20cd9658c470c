// framed.go: a FetchResponse whose records are an internal/frame slice
// (as storage's reads return them) is encoded for the actor remote without
// copying its records. protoactor's endpoint writer calls Serialize (its
// RootSerializable hook) before marshaling a message for another process;
// Serialize encodes every other field (proto.Marshal of a copy without the
// records, so a field added to fetch.proto is never left out) and the
// records' tag and length into the frame's headroom, right in front of the
// records, and returns a message whose marshaling is that one slice. The
// bytes are standard protobuf (the records field after the others, which
// every decoder accepts); the receiver decodes a FetchResponse as before.
//
// Records of another origin, or a header that does not fit the headroom
// (not possible for a fetch answer with records: it carries no error
// message), are marshaled as before, with a copy. Local deliveries never
// call Serialize.

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

// fetchRecordsField is FetchResponse.records' field number.
const fetchRecordsField = 9

var _ remote.RootSerializable = (*FetchResponse)(nil)

// Serialize is protoactor's hook before m is marshaled for the remote (see
// the file comment).
func (m *FetchResponse) Serialize() (remote.RootSerialized, error) {
	if b, ok := m.framedEncoding(); ok {
		return &encoded{m: m, data: b}, nil
	}
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("messages: marshal FetchResponse: %w", err)
	}
	return &encoded{m: m, data: b}, nil
}

// framedEncoding is m's encoding laid out in its records' frame, if they
// are in one and the other fields fit its headroom.
func (m *FetchResponse) framedEncoding() ([]byte, bool) {
	if len(m.Records) == 0 {
		return nil, false
	}
	whole, ok := frame.Of(m.Records)
	if !ok {
		return nil, false
	}
	head := whole[:frame.Headroom]
	rest := &FetchResponse{}
	rr := rest.ProtoReflect()
	m.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Number() != fetchRecordsField {
			rr.Set(fd, v)
		}
		return true
	})
	hdr, err := proto.Marshal(rest)
	if err != nil {
		return nil, false
	}
	hdr = protowire.AppendTag(hdr, fetchRecordsField, protowire.BytesType)
	hdr = protowire.AppendVarint(hdr, uint64(len(m.Records)))
	if len(hdr) > len(head) {
		return nil, false
	}
	at := len(head) - len(hdr)
	copy(head[at:], hdr)
	// whole is the headroom followed by m.Records: the encoding is
	// whole[at:].
	return whole[at:len(whole):len(whole)], true
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
