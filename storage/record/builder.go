// This file holds the record type and the Builder that encodes records into
// one v2 batch, for producers and tests.

package record

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// Record is one record of a batch.
//
// A nil Key or Value is Kafka's null (length -1); an empty non-nil slice is a
// zero-length value. Records returned by a reader may alias the batch or the
// reader's decompression buffer: see Records and BatchReader.
type Record struct {
	Key     []byte
	Value   []byte
	Headers []RecordHeader
	// Timestamp is milliseconds since the Unix epoch. The Builder writes it
	// as given (it does not fill in the current time).
	Timestamp int64
	// Offset is the record's absolute offset. Readers fill it in (batch base
	// offset plus the record's offset delta); the Builder ignores it and
	// numbers records by their position.
	Offset int64
}

// RecordHeader is one header of a record: a non-null key and a value that
// may be null (nil).
type RecordHeader struct {
	Key   string
	Value []byte
}

// BuilderOptions configure a Builder.
type BuilderOptions struct {
	// Compression is the codec of the records area.
	Compression Compression
	// Idempotent says the batch comes from an idempotent or transactional
	// producer: the three fields below are written as given. When false
	// they are written as -1 (no producer id, no epoch, no sequence), as a
	// plain Kafka producer does, whatever they hold. The flag exists
	// because 0 is a valid producer id, epoch and sequence.
	Idempotent bool
	// ProducerID is the producer id (-1 when not Idempotent).
	ProducerID int64
	// ProducerEpoch is the producer epoch (-1 when not Idempotent).
	ProducerEpoch int16
	// BaseSequence is the sequence number of the batch's first record (-1
	// when not Idempotent).
	BaseSequence int32
	// NoChecksum leaves the CRC field zero instead of computing it: for a
	// caller that always writes the producer fields afterwards with
	// SetProducer, which computes it (an idempotent producer stamps each
	// batch when it first sends it), so the records are not checksummed
	// twice. A batch built with it is invalid until then.
	NoChecksum bool
}

// Builder encodes records into one v2 batch. Append encodes each record
// straight into an internal buffer, behind room for the batch header; Build
// frames (and compresses) them. A Builder is reused across batches with
// Reset or ResetWith, keeping its buffers, so that in steady state Append
// allocates nothing. TakeBatch completes an uncompressed batch in that
// buffer itself, copying nothing.
//
// A Builder is not safe for concurrent use.
type Builder struct {
	opts BuilderOptions
	// buf is HeaderSize bytes of room for the header (contents undefined
	// until the batch is built), then the encoded records, uncompressed;
	// empty until the first Append after a reset.
	buf     []byte
	n       int    // records appended
	baseTS  int64  // first record's timestamp
	maxTS   int64  // largest timestamp appended
	scratch []byte // compressed builds, before copying out in Build
}

// NewBuilder returns an empty Builder for a batch with the given options.
func NewBuilder(opts BuilderOptions) *Builder {
	return &Builder{opts: opts}
}

// Reset empties the builder for a new batch with the same options, keeping
// its buffers.
func (b *Builder) Reset() {
	b.buf = b.buf[:0]
	b.n = 0
	b.baseTS, b.maxTS = 0, 0
}

// ResetWith empties the builder for a new batch with new options (for
// example the next base sequence), keeping its buffers.
func (b *Builder) ResetWith(opts BuilderOptions) {
	b.Reset()
	b.opts = opts
}

// Len is the number of records appended since the last reset.
func (b *Builder) Len() int { return b.n }

// EstimatedSize is the size the batch would have uncompressed: the header
// plus the records encoded so far. For a compressed batch it is an estimate
// (usually an over-estimate) of the built size.
func (b *Builder) EstimatedSize() int { return max(len(b.buf), HeaderSize) }

// records is the encoded records appended since the last reset.
func (b *Builder) records() []byte {
	if len(b.buf) < HeaderSize {
		return nil
	}
	return b.buf[HeaderSize:]
}

// varintSize is the length of v as a zigzag varint.
func varintSize(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	return (bits.Len64(u|1) + 6) / 7
}

// bytesSize is the encoded size of a nullable byte string.
func bytesSize(b []byte) int {
	if b == nil {
		return 1 // varint -1
	}
	return varintSize(int64(len(b))) + len(b)
}

func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

// Append encodes r as the next record of the batch: its offset delta is its
// position and its timestamp delta is relative to the first record's
// timestamp. r's slices are copied; r.Offset is ignored. A batch that grows
// beyond what a v2 batch can hold (2 GiB) is reported by Build.
func (b *Builder) Append(r Record) {
	if b.n == 0 {
		b.baseTS, b.maxTS = r.Timestamp, r.Timestamp
	} else if r.Timestamp > b.maxTS {
		b.maxTS = r.Timestamp
	}
	tsDelta := r.Timestamp - b.baseTS
	offDelta := int64(b.n)

	size := 1 + varintSize(tsDelta) + varintSize(offDelta) +
		bytesSize(r.Key) + bytesSize(r.Value) + varintSize(int64(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		size += varintSize(int64(len(h.Key))) + len(h.Key) + bytesSize(h.Value)
	}

	// Grow by exactly the record's size, so that a buffer of the batch's
	// final size (see SetBuffer) is never outgrown.
	buf := b.buf
	if b.n == 0 {
		buf = buf[:0]
		buf = slices.Grow(buf, HeaderSize+varintSize(int64(size))+size)[:HeaderSize]
	} else {
		buf = slices.Grow(buf, varintSize(int64(size))+size)
	}
	buf = binary.AppendVarint(buf, int64(size))
	buf = append(buf, 0) // attributes
	buf = binary.AppendVarint(buf, tsDelta)
	buf = binary.AppendVarint(buf, offDelta)
	buf = appendBytes(buf, r.Key)
	buf = appendBytes(buf, r.Value)
	buf = binary.AppendVarint(buf, int64(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		buf = binary.AppendVarint(buf, int64(len(h.Key)))
		buf = append(buf, h.Key...)
		buf = appendBytes(buf, h.Value)
	}
	b.buf = buf
	b.n++
}

// AppendBatch appends the complete batch to dst and returns the extended
// slice: base offset 0, leader epoch -1, magic 2, CreateTime timestamps, the
// builder's codec and producer fields, and the CRC32C. It fails with an
// error wrapping ErrEmptyBatch when no record was appended, and with an
// error when the batch exceeds the 2 GiB a v2 length field allows. The
// builder is left as it was: call Reset to start the next batch.
func (b *Builder) AppendBatch(dst []byte) ([]byte, error) {
	if b.n == 0 {
		return dst, fmt.Errorf("record: build: %w", ErrEmptyBatch)
	}
	records := b.records()
	start := len(dst)
	dst = slices.Grow(dst, HeaderSize+len(records))
	dst = dst[:start+HeaderSize]
	var err error
	if dst, err = Compress(b.opts.Compression, dst, records); err != nil {
		return dst[:start], fmt.Errorf("record: build: %w", err)
	}
	if err := b.finish(dst[start:]); err != nil {
		return dst[:start], err
	}
	return dst, nil
}

// TakeBatch returns the complete batch (see AppendBatch) and resets the
// builder for the next batch.
//
// Without compression the records were encoded in place, behind room for
// the header: TakeBatch writes the header there and hands over the
// builder's buffer itself, copying nothing; the caller owns the result and
// the builder takes next (its contents ignored; nil is fine) as its buffer
// for the next batch. With a codec the batch is compressed into next[:0]
// (as AppendBatch) and the builder keeps its buffer.
//
// On error (see AppendBatch) the builder is left as it was and next is not
// used.
func (b *Builder) TakeBatch(next []byte) ([]byte, error) {
	if b.opts.Compression != CompressionNone {
		out, err := b.AppendBatch(next[:0])
		if err != nil {
			return nil, err
		}
		b.Reset()
		return out, nil
	}
	if b.n == 0 {
		return nil, fmt.Errorf("record: build: %w", ErrEmptyBatch)
	}
	batch := b.buf
	if err := b.finish(batch); err != nil {
		return nil, err
	}
	b.SetBuffer(next)
	return batch, nil
}

// SetBuffer empties the builder, as Reset, and makes buf (its contents
// ignored; nil is fine) the buffer the next records are encoded into: a
// batch of up to cap(buf) bytes then allocates nothing. The builder's
// previous buffer is dropped. The caller must not use buf afterwards.
func (b *Builder) SetBuffer(buf []byte) {
	b.buf = buf[:0]
	b.Reset()
}

// finish writes the header of batch, HeaderSize bytes of room followed by
// the (possibly compressed) records area, and its CRC.
func (b *Builder) finish(batch []byte) error {
	length := len(batch) - LogOverhead
	if length > math.MaxInt32 {
		return fmt.Errorf("record: build: batch of %d bytes exceeds the v2 limit", len(batch))
	}
	pid, epoch, seq := int64(-1), int16(-1), int32(-1)
	if b.opts.Idempotent {
		pid, epoch, seq = b.opts.ProducerID, b.opts.ProducerEpoch, b.opts.BaseSequence
	}
	be := binary.BigEndian
	be.PutUint64(batch[offBaseOffset:], 0)
	be.PutUint32(batch[offLength:], uint32(length))
	be.PutUint32(batch[offLeaderEpoch:], math.MaxUint32) // -1
	batch[offMagic] = Magic
	be.PutUint16(batch[offAttributes:], uint16(b.opts.Compression)&compressionMask)
	be.PutUint32(batch[offLastOffsetDelta:], uint32(b.n-1))
	be.PutUint64(batch[offBaseTimestamp:], uint64(b.baseTS))
	be.PutUint64(batch[offMaxTimestamp:], uint64(b.maxTS))
	be.PutUint64(batch[offProducerID:], uint64(pid))
	be.PutUint16(batch[offProducerEpoch:], uint16(epoch))
	be.PutUint32(batch[offBaseSequence:], uint32(seq))
	be.PutUint32(batch[offRecordCount:], uint32(b.n))
	crc := uint32(0)
	if !b.opts.NoChecksum {
		crc = Checksum(batch)
	}
	be.PutUint32(batch[offCRC:], crc)
	return nil
}

// Build returns the complete batch (see AppendBatch) in a newly allocated
// slice of exactly its size, which the caller owns: the builder may be Reset
// and reused at once.
func (b *Builder) Build() ([]byte, error) {
	if b.opts.Compression == CompressionNone {
		return b.AppendBatch(make([]byte, 0, b.EstimatedSize()))
	}
	out, err := b.AppendBatch(b.scratch[:0])
	if err != nil {
		return nil, err
	}
	b.scratch = out
	return slices.Clone(out), nil
}

// BuildBatch builds one batch of recs with codec c and no producer id.
func BuildBatch(c Compression, recs ...Record) ([]byte, error) {
	b := NewBuilder(BuilderOptions{Compression: c})
	for _, r := range recs {
		b.Append(r)
	}
	return b.Build()
}
