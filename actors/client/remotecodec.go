// remotecodec.go: the gRPC codec of the remote's Receive stream, which
// carries protoactor's RemoteMessage (a MessageBatch of envelopes, each
// holding one serialized actor message in message_data). With grpc-go's
// default proto codec every large envelope was copied twice more in each
// direction (issue 15, allocation profiles of `perf produce` at 1 KiB):
//
//   - sending, proto.Marshal copied each envelope's message_data into a
//     pooled buffer of the whole message (~0.26 B allocated per produced
//     byte: batches of ~1 MiB and more miss grpc-go's size-tiered pools);
//   - receiving, grpc-go assembled the message into a pooled buffer (again
//     ~0.26 B/B of misses) and proto.Unmarshal copied each message_data
//     out of it (1 B/B), before aliasdecode.go could alias the records.
//
// remoteCodec keeps the wire format (standard protobuf, content-subtype
// "proto", so peers with grpc-go's codec read and write the same bytes)
// and changes only the copies:
//
//   - Marshal: a batch whose envelopes' message_data add up to at least
//     aliasMinBytes, or that holds a host's pooled read frame (see
//     sendInPieces), is written as a mem.BufferSlice whose pieces are the
//     small fields, encoded into one buffer, and each message_data of at
//     least pieceMinBytes, or in a pooled frame, itself
//     (mem.SliceBuffer: never returned to a pool, Free is a no-op; but a
//     host's pooled read frame, frame.AllocPooled, goes back to its pool
//     when grpc-go frees it: recycledFrames). The
//     fields of each message are written in another order than
//     proto.Marshal's (message_data after the envelope's other fields,
//     envelopes after the batch's tables), which every protobuf decoder
//     accepts. Safe because message_data is the []byte protoactor's
//     endpoint writer got from its serializer for that envelope alone and
//     drops after Send: nobody writes it afterwards, so grpc-go may read it
//     until the transport has sent it.
//   - Unmarshal: a message batch of at least aliasMinBytes is decoded
//     straight from the buffers grpc-go passed in, each large envelope's
//     message_data copied once into a buffer of its own — a pooled frame
//     for a ProduceRequest, which the replica gives back once it appended
//     the batch (remotedecode.go). A message of another shape is copied
//     once into a fresh, not zeroed []byte (materializeNoZero) and decoded
//     with each envelope's message_data aliasing that copy. Either way the
//     buffers grpc-go passed in are not referenced after Unmarshal
//     returns, so their recycling cannot touch a decoded message; the
//     copies belong to the decoded batch (the endpoint reader hands each
//     envelope's data to one deserializer, aliasdecode.go for records, and
//     drops the batch).
//
// Smaller messages, and any other message type, go through grpc-go's own
// proto codec. RemoteConfig installs the codec on the remote's gRPC server
// (grpc.ForceServerCodecV2) and dialed connections (grpc.ForceCodecV2)
// only: other gRPC users in the process (etcd) keep grpc-go's default.

package client

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/internal/frame"
)

// Field numbers of protoactor's remote.proto.
const (
	remoteMessageBatchNum = 1 // RemoteMessage.message_batch
	batchEnvelopesNum     = 3 // MessageBatch.envelopes
	envelopeDataNum       = 2 // MessageEnvelope.message_data
)

// aliasMinBytes is the size from which a batch's message_data (all its
// envelopes' together) is sent without being copied, and a received
// message decoded aliasing its one copy. Below it copying costs less than
// the extra pieces and bookkeeping. Counting the batch, not each envelope,
// matters for small producer batches: five requests of 16 KiB (a
// partition's five in flight at --batch-size 16384) leave the endpoint
// writer as one batch, which grpc-go's codec copied into a pooled 128 KiB
// buffer that its pool zeroes first (BenchmarkRemoteCodec/5x16KiB: 25 µs
// per batch that way, 11 µs in pieces).
const aliasMinBytes = 32 << 10

// pieceMinBytes is, in a batch sent in pieces, the size from which one
// envelope's message_data is a piece of its own instead of being copied
// with the small fields.
const pieceMinBytes = 4 << 10

// remoteCodec is the gRPC codec of the remote (see the file comment).
// With poolFetch (WithPooledFetchAnswers), or while fetchUsers counts
// more than zero (a client's consumers that reuse buffers:
// Client.PoolFetchAnswers), FetchResponse envelopes are received into
// pooled frames too (remotedecode.go).
type remoteCodec struct {
	poolFetch  bool
	fetchUsers *atomic.Int32
}

// poolsFetch reports whether fetch answers are received into pooled
// frames now.
func (c remoteCodec) poolsFetch() bool {
	return c.poolFetch || c.fetchUsers != nil && c.fetchUsers.Load() > 0
}

// defaultProtoCodec is grpc-go's proto codec, for everything remoteCodec
// does not handle itself.
var defaultProtoCodec = func() encoding.CodecV2 {
	c := encoding.GetCodecV2(grpcproto.Name)
	if c == nil {
		panic("client: grpc-go's proto codec is not registered")
	}
	return c
}()

// Name is grpc-go's proto codec's: the content-subtype on the wire stays
// the same, and so do the bytes.
func (remoteCodec) Name() string { return grpcproto.Name }

func (remoteCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(*remote.RemoteMessage)
	if !ok || !sendInPieces(m.GetMessageBatch()) {
		return defaultProtoCodec.Marshal(v)
	}
	out, err := marshalBatchMessage(m.GetMessageBatch())
	if err != nil {
		return nil, fmt.Errorf("client: remote codec: %w", err)
	}
	return out, nil
}

func (c remoteCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(*remote.RemoteMessage)
	if !ok || data.Len() < aliasMinBytes {
		return defaultProtoCodec.Unmarshal(data, v)
	}
	// Private copies: grpc-go recycles data's buffers once we return.
	if unmarshalStreamed(data, m, c.poolsFetch()) {
		return nil
	}
	b := materializeNoZero(data)
	if err := unmarshalRemoteMessage(b, m); err != nil {
		return fmt.Errorf("client: remote codec: %w", err)
	}
	return nil
}

// materializeNoZero copies data's bytes into one fresh slice, as
// data.Materialize does, but without zeroing the slice first
// (frame.NoZero): the copy writes every byte. Zeroing a fresh multi-MiB
// buffer was ~7 % of a host's CPU receiving 1 KiB produce batches and
// ~2.5 % of a consumer's.
func materializeNoZero(data mem.BufferSlice) []byte {
	b := frame.NoZero(data.Len())
	n := 0
	for _, buf := range data {
		n += copy(b[n:], buf.ReadOnlyData())
	}
	return b[:n:n]
}

// sendInPieces reports whether b is sent in pieces: its envelopes carry
// at least aliasMinBytes of message_data between them, or one of them is
// a pooled read frame (a host's fetch answer) of any size. A small answer
// takes a frame of the smallest class (17 KiB) all the same: copied by
// grpc-go's codec, that frame was garbage, 3.5 times the bytes of a
// follower's answer of 50 records of 100 B, and 55 % of what a leader
// allocated at 50,000 records/s with replication factor 3 (issue 15).
// Sent in pieces it goes back to its pool: the three hosts of that run
// allocated a third as much and collected half as often.
func sendInPieces(b *remote.MessageBatch) bool {
	n := 0
	for _, e := range b.GetEnvelopes() {
		if n += len(e.GetMessageData()); n >= aliasMinBytes || frame.Pooled(e.GetMessageData()) {
			return true
		}
	}
	return false
}

// piece is one part of an encoded message: small[from:to] of the shared
// small-field buffer, or data (a large message_data, sent as it is).
type piece struct {
	from, to int
	data     []byte
}

// marshalBatchMessage encodes RemoteMessage{message_batch: b}: the batch's
// fields but envelopes, then each envelope's fields but message_data
// followed by its message_data, each large message_data a piece of its own.
func marshalBatchMessage(b *remote.MessageBatch) (mem.BufferSlice, error) {
	head, err := proto.Marshal(batchHead(b))
	if err != nil {
		return nil, fmt.Errorf("marshal batch: %w", err)
	}
	envs := make([][]byte, len(b.Envelopes))
	batchLen := len(head)
	for i, e := range b.Envelopes {
		if e == nil {
			return nil, errors.New("marshal batch: nil envelope")
		}
		if envs[i], err = proto.Marshal(envelopeHead(e)); err != nil {
			return nil, fmt.Errorf("marshal envelope %d: %w", i, err)
		}
		batchLen += protowire.SizeTag(batchEnvelopesNum) + protowire.SizeBytes(envelopeLen(envs[i], e.MessageData))
	}

	small := make([]byte, 0, 64+len(head)+len(b.Envelopes)*32)
	small = protowire.AppendTag(small, remoteMessageBatchNum, protowire.BytesType)
	small = protowire.AppendVarint(small, uint64(batchLen))
	small = append(small, head...)
	var pieces []piece
	from := 0
	for i, e := range b.Envelopes {
		small = protowire.AppendTag(small, batchEnvelopesNum, protowire.BytesType)
		small = protowire.AppendVarint(small, uint64(envelopeLen(envs[i], e.MessageData)))
		small = append(small, envs[i]...)
		if len(e.MessageData) == 0 {
			continue
		}
		small = protowire.AppendTag(small, envelopeDataNum, protowire.BytesType)
		small = protowire.AppendVarint(small, uint64(len(e.MessageData)))
		if len(e.MessageData) < pieceMinBytes && !frame.Pooled(e.MessageData) {
			small = append(small, e.MessageData...)
			continue
		}
		pieces = append(pieces, piece{from: from, to: len(small)}, piece{data: e.MessageData})
		from = len(small)
	}
	pieces = append(pieces, piece{from: from, to: len(small)})

	out := make(mem.BufferSlice, 0, len(pieces))
	for _, p := range pieces {
		switch {
		case p.data != nil && frame.Pooled(p.data):
			// A host's read for a fetch answer (storage's pooled frame):
			// grpc-go frees its buffers once it has written them (or given
			// up), and nothing else reads a fetch answer's records after
			// the endpoint writer encoded it (see recycledFrames).
			d := p.data
			out = append(out, mem.NewBuffer(&d, recycledFrames{}))
		case p.data != nil:
			// Not pooled: Free leaves the envelope's bytes alone.
			out = append(out, mem.SliceBuffer(p.data))
		case p.to > p.from:
			out = append(out, mem.SliceBuffer(small[p.from:p.to:p.to]))
		}
	}
	return out, nil
}

// envelopeLen is the encoded length of an envelope whose fields but
// message_data encode to rest.
func envelopeLen(rest, data []byte) int {
	if len(data) == 0 {
		return len(rest)
	}
	return len(rest) + protowire.SizeTag(envelopeDataNum) + protowire.SizeBytes(len(data))
}

// batchHead is b without its envelopes, a shallow copy (the fields share
// b's values; unknown fields kept). TestCodecHeadsCopyEveryField holds it
// to every field of protoactor's MessageBatch but envelopes; copying by
// reflection cost ~2 µs per batch and envelope.
func batchHead(b *remote.MessageBatch) proto.Message {
	return withUnknown(&remote.MessageBatch{TypeNames: b.TypeNames, Targets: b.Targets, Senders: b.Senders}, b)
}

// envelopeHead is e without its message_data (see batchHead).
func envelopeHead(e *remote.MessageEnvelope) proto.Message {
	return withUnknown(&remote.MessageEnvelope{
		TypeId: e.TypeId, Target: e.Target, Sender: e.Sender, SerializerId: e.SerializerId,
		MessageHeader: e.MessageHeader, TargetRequestId: e.TargetRequestId, SenderRequestId: e.SenderRequestId,
	}, e)
}

// withUnknown gives dst src's unknown fields, if any, and returns it.
func withUnknown(dst, src proto.Message) proto.Message {
	if u := src.ProtoReflect().GetUnknown(); len(u) > 0 {
		dst.ProtoReflect().SetUnknown(u)
	}
	return dst
}

// unmarshalRemoteMessage decodes b into m as proto.Unmarshal does, except
// that when m is a message batch (its only field, once) each envelope's
// message_data is a slice of b. Any other shape is decoded by
// proto.Unmarshal, copying.
func unmarshalRemoteMessage(b []byte, m *remote.RemoteMessage) error {
	proto.Reset(m)
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 || num != remoteMessageBatchNum || typ != protowire.BytesType {
		return unmarshalCopy(b, m)
	}
	val, vn := protowire.ConsumeBytes(b[n:])
	if vn < 0 || n+vn != len(b) {
		return unmarshalCopy(b, m)
	}
	batch := &remote.MessageBatch{}
	if err := unmarshalBatch(val, batch); err != nil {
		return err
	}
	m.MessageType = &remote.RemoteMessage_MessageBatch{MessageBatch: batch}
	return nil
}

// unmarshalBatch decodes b into batch with each envelope's message_data a
// slice of b (unmarshalAliasing); the other fields are decoded by
// proto.Unmarshal from a copy.
func unmarshalBatch(b []byte, batch *remote.MessageBatch) error {
	var envs []*remote.MessageEnvelope
	rest := make([]byte, 0, 256)
	for in := b; len(in) > 0; {
		num, typ, n := protowire.ConsumeTag(in)
		if n < 0 {
			return unmarshalCopy(b, batch)
		}
		v := protowire.ConsumeFieldValue(num, typ, in[n:])
		if v < 0 {
			return unmarshalCopy(b, batch)
		}
		if num == batchEnvelopesNum && typ == protowire.BytesType {
			val, _ := protowire.ConsumeBytes(in[n:])
			e := &remote.MessageEnvelope{}
			if err := unmarshalAliasing(val, e, envelopeDataNum, &e.MessageData); err != nil {
				return fmt.Errorf("envelope %d: %w", len(envs), err)
			}
			envs = append(envs, e)
		} else {
			rest = append(rest, in[:n+v]...)
		}
		in = in[n+v:]
	}
	if err := proto.Unmarshal(rest, batch); err != nil {
		return fmt.Errorf("decode %s: %w", proto.MessageName(batch), err)
	}
	batch.Envelopes = envs
	return nil
}

func unmarshalCopy(b []byte, m proto.Message) error {
	if err := proto.Unmarshal(b, m); err != nil {
		return fmt.Errorf("decode %s: %w", proto.MessageName(m), err)
	}
	return nil
}

// recycledFrames is the mem.BufferPool of the pieces that are pooled
// frames (frame.AllocPooled: storage reads records for a fetch answer into
// one): Put gives the frame back to its pool. That is safe because of who
// holds a fetch answer's records: the replica reads them for that answer
// alone and drops the answer once it has sent it; protoactor's endpoint
// writer encodes it (messages/framed.go) into the one envelope, drops the
// message after Send and never sends it again (a failed Send stashes the
// batch and stops the writer); and grpc-go frees the buffers of a message
// it sent only when no reference is left (its retry buffer holds one until
// the stream commits). An answer delivered in process is never encoded,
// and its frame is left to the garbage collector.
type recycledFrames struct{}

// Get is not used: grpc-go takes buffers from the pool it was configured
// with, not from the pool of a buffer it was given.
func (recycledFrames) Get(n int) *[]byte {
	b := make([]byte, n)
	return &b
}

func (recycledFrames) Put(b *[]byte) {
	if frame.Recycle(*b) {
		fetchFramesRecycled.Add(1)
	}
}

// fetchFramesRecycled counts the frames recycledFrames gave back.
var fetchFramesRecycled atomic.Int64

// FetchFramesRecycled is how many read frames of fetch answers this
// process's remote gave back to their pools once grpc-go had sent them.
func FetchFramesRecycled() int64 { return fetchFramesRecycled.Load() }
