// aliasdecode.go: decoding the two messages that carry record batches
// across hosts — ProduceRequest (producer → leader) and FetchResponse
// (leader → consumer or follower) — without copying their records.
//
// protoactor decodes every envelope with proto.Unmarshal, which copies
// each bytes field out of its input. The input here is an envelope's
// MessageData, itself already a private copy made when the gRPC message
// was decoded, so the records were copied twice on the way to the replica
// (a whole core-second per ~2 GB at 1 KiB records, host CPU profile of
// issue 15). The guard (remoteguard.go), after its checks, moves envelopes
// of these two types to aliasSerializer, which decodes every field but the
// records with proto.Unmarshal and points Records into MessageData.
//
// Aliasing is safe because nothing else holds MessageData: the endpoint
// reader drops its envelope after Deserialize, and the decoded message
// owns the bytes from then on, as it owned its copy before.

package client

import (
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/internal/frame"
	"github.com/actorlog/actorlog/messages"
)

// Full names of the aliased messages and the field numbers of their
// records (messages/produce.proto, messages/fetch.proto).
const (
	produceRequestName = "actorlog.messages.ProduceRequest"
	fetchResponseName  = "actorlog.messages.FetchResponse"
	produceRecordsNum  = 5
	fetchRecordsNum    = 9
)

// errAliasProbe is what aliasSerializer answers the probe type with, so
// init can find the serializer's index.
var errAliasProbe = errors.New("client: alias serializer probe")

const aliasProbeName = "actorlog.client.AliasProbe"

// aliasSerializerID is aliasSerializer's index in protoactor's serializer
// list (set by init; protoactor registers protobuf at 0 and JSON at 1).
var aliasSerializerID int32 = -1

func init() {
	remote.RegisterSerializer(aliasSerializer{})
	// protoactor has no getter for an index: probe the list.
	for id := int32(0); id < 16; id++ {
		if probeSerializer(id) {
			aliasSerializerID = id
			return
		}
	}
	panic("client: alias serializer not found in protoactor's serializer list")
}

// probeSerializer reports whether serializer id is aliasSerializer (an
// index past the list's end panics inside protoactor).
func probeSerializer(id int32) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	_, err := remote.Deserialize(nil, aliasProbeName, id)
	return errors.Is(err, errAliasProbe)
}

// aliasedType reports whether envelopes of the named type go to
// aliasSerializer.
func aliasedType(name string) bool {
	return name == produceRequestName || name == fetchResponseName
}

// aliasSerializer decodes ProduceRequest and FetchResponse with Records
// aliasing the input. It is only ever chosen by the guard on the receiving
// side; senders keep serializer 0, so its Serialize is protobuf's.
type aliasSerializer struct{}

func (aliasSerializer) Serialize(msg any) ([]byte, error) {
	m, ok := msg.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("client: alias serializer: %T is not a protobuf message", msg)
	}
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("client: alias serializer: %w", err)
	}
	return b, nil
}

func (aliasSerializer) Deserialize(typeName string, b []byte) (any, error) {
	switch typeName {
	case produceRequestName:
		m := &messages.ProduceRequest{}
		return m, unmarshalAliasing(b, m, produceRecordsNum, &m.Records)
	case fetchResponseName:
		m := &messages.FetchResponse{}
		return m, unmarshalAliasing(b, m, fetchRecordsNum, &m.Records)
	case aliasProbeName:
		return nil, errAliasProbe
	}
	return nil, fmt.Errorf("client: alias serializer: type %q is not decoded here", typeName)
}

func (aliasSerializer) GetTypeName(msg any) (string, error) {
	m, ok := msg.(proto.Message)
	if !ok {
		return "", fmt.Errorf("client: alias serializer: %T is not a protobuf message", msg)
	}
	return string(proto.MessageName(m)), nil
}

// unmarshalAliasing decodes b into m as proto.Unmarshal does, except that
// the bytes field numbered recordsNum (m's field *records) is set to a
// slice of b rather than a copy (the last occurrence, as proto3 keeps the
// last value of a scalar field). The other fields, a few dozen bytes, are
// copied out and decoded by proto.Unmarshal, so their validation (UTF-8
// strings, wire types) is protobuf's own. Input protowire cannot split
// into fields is handed whole to proto.Unmarshal, for its error.
func unmarshalAliasing(b []byte, m proto.Message, recordsNum protowire.Number, records *[]byte) error {
	var recs []byte
	rest := make([]byte, 0, 128)
	for in := b; len(in) > 0; {
		num, typ, n := protowire.ConsumeTag(in)
		if n < 0 {
			return unmarshalWhole(b, m)
		}
		v := protowire.ConsumeFieldValue(num, typ, in[n:])
		if v < 0 {
			return unmarshalWhole(b, m)
		}
		if num == recordsNum && typ == protowire.BytesType {
			val, _ := protowire.ConsumeBytes(in[n:])
			recs = val[:len(val):len(val)]
			if n+v == len(in) && frame.Pooled(b) {
				// The last field of an envelope the codec received into
				// a pooled frame (remotedecode.go): the capacity keeps
				// reaching the frame's trailer, so that the replica can
				// give the frame back (frame.Recycle) once it has
				// appended the batch. Nothing follows the records in the
				// frame but the trailer.
				recs = val
			}
		} else {
			rest = append(rest, in[:n+v]...)
		}
		in = in[n+v:]
	}
	if err := proto.Unmarshal(rest, m); err != nil {
		return fmt.Errorf("client: decode %s: %w", proto.MessageName(m), err)
	}
	if recs != nil {
		*records = recs
	}
	return nil
}

func unmarshalWhole(b []byte, m proto.Message) error {
	if err := proto.Unmarshal(b, m); err != nil {
		return fmt.Errorf("client: decode %s: %w", proto.MessageName(m), err)
	}
	// protowire could not split b but protobuf decoded it: not expected,
	// and harmless (the message was decoded, with a copy).
	return nil
}
