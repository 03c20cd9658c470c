// remotedecode.go: decoding a received message batch straight from the
// buffers grpc-go hands the codec, each large envelope's message_data
// copied once into a buffer of its own.
//
// The codec used to copy the whole message into one fresh buffer
// (materializeNoZero) and let every envelope alias it. A host receiving
// 1 KiB produce batches spent ~18 % of its CPU in that copy (profile of
// `perf inprocess` at 1 KiB, issue 15): writing fresh memory, page
// faults and all, at the producers' pace. With one buffer per envelope a
// produce request's buffer belongs to that request alone, so it can come
// from frame's pools and go back once the replica has appended the batch
// (actors/replica: produce.go) — memory already mapped and in cache.
//
// unmarshalStreamed decodes what unmarshalRemoteMessage decodes and
// nothing else: it reads the batch's and each envelope's fields from the
// buffers, copies every field but envelopes and message_data into small
// scratch buffers that proto.Unmarshal decodes (its validation is
// protobuf's own), and copies each message_data into:
//
//   - a pooled frame (frame.AllocPooled) when it is pieceMinBytes or more
//     and the envelope carries a ProduceRequest, or a FetchResponse on a
//     host (WithPooledFetchAnswers) (its type, looked up in the batch's
//     type names, is known before its data: protobuf writes fields in
//     number order and the codec's Marshal writes message_data last);
//     that frame reaches the replica as the request's records (the
//     follower as the answer's), whose capacity ends at the frame's
//     trailer when the records are the message's last field
//     (aliasdecode.go), as messages/framed.go writes them;
//   - a fresh, not zeroed buffer of its size otherwise (a fetch answer in
//     the same batch, on a client);
//   - a shared chunk of small copies below pieceMinBytes.
//
// A host's follower replicas receive the leader's fetch answers this way
// and give each frame back once appended (actors/replica: follower.go).
// At 1 KiB records with replication factor 3 the copy of those answers
// into fresh memory was 17–21 % of every host's CPU (CPU profiles of
// scripts/replication-bench.sh, issue 15): on this project's VMs memory
// the process has not touched lately costs several times more to write.
//
// A batch whose type names (written before its envelopes) hold nothing to
// pool — what a consumer receives — is left to the materialized decode:
// nothing in it would go back to a pool, and a consumer decoding fetch
// answers envelope by envelope ran 10–25 % slower than with one buffer for
// the batch (perf consume, 1 KiB, A/B in one run; more GC and system time
// for the same collections). A client whose consumers reuse buffers
// (Client.PoolFetchAnswers, consumer.Config.ReuseBuffers) pools fetch
// answers as a host does: each consumer gives its answer's frame back once
// the records were handled, and the next answer lands in memory already in
// use (perf consume at 1 KiB: ~1.5x the records per second on ~45 % less
// client CPU).
//
// Anything unexpected — a group, a field that runs past its message, a
// batch that is not the message's only field — makes it give up before
// touching the message, and the codec decodes the materialized message as
// before, which yields protobuf's answer for it (an error or the decoded
// message). Frames taken for an attempt that gives up are left to the
// garbage collector.

package client

import (
	"slices"

	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/internal/frame"
	"github.com/actorlog/actorlog/messages"
)

// Field numbers of protoactor's remote.proto used only here.
const (
	batchTypeNamesNum = 1 // MessageBatch.type_names
	envelopeTypeIDNum = 1 // MessageEnvelope.type_id
)

// chunkReader reads a message from the buffers it arrived in.
type chunkReader struct {
	bufs [][]byte // the buffers not yet started
	cur  []byte   // what is left of the current one
	pos  int      // bytes read so far
	size int      // bytes in all
	// poolFetch: FetchResponse envelopes get pooled frames too
	// (WithPooledFetchAnswers).
	poolFetch bool
}

func newChunkReader(data mem.BufferSlice) chunkReader {
	r := chunkReader{bufs: make([][]byte, 0, len(data))}
	for _, b := range data {
		if d := b.ReadOnlyData(); len(d) > 0 {
			r.bufs = append(r.bufs, d)
			r.size += len(d)
		}
	}
	return r
}

// fill makes cur non-empty unless everything has been read.
func (r *chunkReader) fill() bool {
	for len(r.cur) == 0 {
		if len(r.bufs) == 0 {
			return false
		}
		r.cur, r.bufs = r.bufs[0], r.bufs[1:]
	}
	return true
}

// appendVarint reads one varint as it is encoded, appends its bytes to
// dst and returns its value; ok is false if the input ends first or the
// varint is longer than protobuf allows.
func (r *chunkReader) appendVarint(dst []byte) (out []byte, v uint64, ok bool) {
	start := len(dst)
	for i := 0; i < protowire.SizeVarint(1<<63); i++ {
		if !r.fill() {
			return dst, 0, false
		}
		c := r.cur[0]
		r.cur, r.pos = r.cur[1:], r.pos+1
		dst = append(dst, c)
		if c < 0x80 {
			v, n := protowire.ConsumeVarint(dst[start:])
			return dst, v, n > 0
		}
	}
	return dst, 0, false
}

// read fills dst from the input.
func (r *chunkReader) read(dst []byte) bool {
	for len(dst) > 0 {
		if !r.fill() {
			return false
		}
		n := copy(dst, r.cur)
		dst, r.cur, r.pos = dst[n:], r.cur[n:], r.pos+n
	}
	return true
}

// appendN appends the next n bytes of input to dst.
func (r *chunkReader) appendN(dst []byte, n int) ([]byte, bool) {
	if n > r.size-r.pos {
		return dst, false
	}
	at := len(dst)
	dst = append(dst, make([]byte, n)...)
	return dst, r.read(dst[at:])
}

// field is one field's tag, read by readTag.
type field struct {
	num protowire.Number
	typ protowire.Type
	raw []byte // the tag's bytes, as appended to the scratch buffer
}

// readTag reads a field's tag into scratch (appended) as protobuf does;
// ok is false for a tag protobuf would refuse or a group (not in
// remote.proto: left to the fallback).
func (r *chunkReader) readTag(scratch []byte) ([]byte, field, bool) {
	at := len(scratch)
	scratch, _, ok := r.appendVarint(scratch)
	if !ok {
		return scratch, field{}, false
	}
	num, typ, n := protowire.ConsumeTag(scratch[at:])
	if n < 0 || typ == protowire.StartGroupType || typ == protowire.EndGroupType {
		return scratch, field{}, false
	}
	return scratch, field{num: num, typ: typ, raw: scratch[at:]}, true
}

// appendValue reads the value of a field of type typ (not a group) that
// must end by end, appending its encoding to dst; v is a varint's value.
func (r *chunkReader) appendValue(dst []byte, typ protowire.Type, end int) (out []byte, v uint64, ok bool) {
	switch typ {
	case protowire.VarintType:
		dst, v, ok = r.appendVarint(dst)
	case protowire.Fixed32Type:
		dst, ok = r.appendN(dst, 4)
	case protowire.Fixed64Type:
		dst, ok = r.appendN(dst, 8)
	case protowire.BytesType:
		var n uint64
		if dst, n, ok = r.appendVarint(dst); ok && n <= uint64(end-r.pos) {
			dst, ok = r.appendN(dst, int(n))
		} else {
			ok = false
		}
	default:
		ok = false
	}
	return dst, v, ok && r.pos <= end
}

// readLen reads a length that must end by end.
func (r *chunkReader) readLen(end int) (int, bool) {
	var tmp [10]byte
	_, n, ok := r.appendVarint(tmp[:0])
	if !ok || n > uint64(end-r.pos) {
		return 0, false
	}
	return int(n), true
}

// smallCopies hands out copies of small message_data from shared chunks
// (a chunk filled is left to its slices; the next is fresh).
type smallCopies struct{ chunk []byte }

func (s *smallCopies) take(n int) []byte {
	if n > cap(s.chunk)-len(s.chunk) {
		s.chunk = make([]byte, 0, max(n, 4<<10))
	}
	at := len(s.chunk)
	s.chunk = s.chunk[:at+n]
	return s.chunk[at : at+n : at+n]
}

// unmarshalStreamed decodes data into m (see the file comment); ok is
// false if it gave up, m untouched.
func unmarshalStreamed(data mem.BufferSlice, m *remote.RemoteMessage, poolFetch bool) (ok bool) {
	r := newChunkReader(data)
	r.poolFetch = poolFetch
	var scratch [16]byte
	_, top, ok := r.readTag(scratch[:0])
	if !ok || top.num != remoteMessageBatchNum || top.typ != protowire.BytesType {
		return false
	}
	n, ok := r.readLen(r.size)
	if !ok || r.pos+n != r.size {
		return false
	}
	batch, ok := r.readBatch(r.size)
	if !ok {
		return false
	}
	proto.Reset(m)
	m.MessageType = &remote.RemoteMessage_MessageBatch{MessageBatch: batch}
	return true
}

// readBatch reads a MessageBatch that ends at end.
func (r *chunkReader) readBatch(end int) (*remote.MessageBatch, bool) {
	var (
		envs    []*remote.MessageEnvelope
		names   []string
		rest    = make([]byte, 0, 256)
		envRest = make([]byte, 0, 256)
		smalls  smallCopies
		f       field
		ok      bool
	)
	for r.pos < end {
		if rest, f, ok = r.readTag(rest); !ok {
			return nil, false
		}
		if f.num == batchEnvelopesNum && f.typ == protowire.BytesType {
			if len(envs) == 0 && !slices.ContainsFunc(names, r.pooledType) {
				return nil, false // nothing to pool: decode it materialized
			}
			rest = rest[:len(rest)-len(f.raw)]
			n, ok := r.readLen(end)
			if !ok {
				return nil, false
			}
			var e *remote.MessageEnvelope
			if e, envRest, ok = r.readEnvelope(r.pos+n, names, envRest[:0], &smalls); !ok {
				return nil, false
			}
			envs = append(envs, e)
			continue
		}
		at := len(rest)
		if rest, _, ok = r.appendValue(rest, f.typ, end); !ok {
			return nil, false
		}
		if f.num == batchTypeNamesNum && f.typ == protowire.BytesType {
			name, _ := protowire.ConsumeBytes(rest[at:])
			names = append(names, string(name))
		}
	}
	if r.pos != end {
		return nil, false
	}
	batch := &remote.MessageBatch{}
	if err := proto.Unmarshal(rest, batch); err != nil {
		return nil, false
	}
	batch.Envelopes = envs
	return batch, true
}

// readEnvelope reads a MessageEnvelope that ends at end; names are the
// batch's type names read so far, scratch a buffer for its other fields.
func (r *chunkReader) readEnvelope(end int, names []string, scratch []byte, smalls *smallCopies) (*remote.MessageEnvelope, []byte, bool) {
	var (
		data   []byte
		seen   bool
		typeID = int32(0) // protobuf's default, when the field is absent
		f      field
		ok     bool
	)
	for r.pos < end {
		if scratch, f, ok = r.readTag(scratch); !ok {
			return nil, scratch, false
		}
		if f.num == envelopeDataNum && f.typ == protowire.BytesType {
			scratch = scratch[:len(scratch)-len(f.raw)]
			n, ok := r.readLen(end)
			if !ok {
				return nil, scratch, false
			}
			switch {
			case n < pieceMinBytes:
				data = smalls.take(n)
			case int(typeID) >= 0 && int(typeID) < len(names) && r.pooledType(names[typeID]):
				data = frame.AllocPooled(n)
			default:
				data = frame.NoZero(n)
			}
			if !r.read(data[:n]) {
				return nil, scratch, false
			}
			seen = true
			continue
		}
		var v uint64
		if scratch, v, ok = r.appendValue(scratch, f.typ, end); !ok {
			return nil, scratch, false
		}
		if f.num == envelopeTypeIDNum && f.typ == protowire.VarintType {
			typeID = int32(v) // as protobuf decodes an int32
		}
	}
	if r.pos != end {
		return nil, scratch, false
	}
	e := &remote.MessageEnvelope{}
	if err := proto.Unmarshal(scratch, e); err != nil {
		return nil, scratch, false
	}
	if seen {
		e.MessageData = data
	}
	return e, scratch, true
}

// pooledType reports whether envelopes of the named type are received
// into pooled frames: produce requests, and with poolFetch fetch answers.
func (r *chunkReader) pooledType(name string) bool {
	return name == produceRequestName || (r.poolFetch && name == fetchResponseName)
}

// produceRequestName must be the full name of the message whose envelopes
// get pooled frames.
var _ = func() bool {
	if string(proto.MessageName(&messages.ProduceRequest{})) != produceRequestName {
		panic("client: produceRequestName is not messages.ProduceRequest's name")
	}
	return true
}()
