// Package record holds Kafka's RecordBatch v2 format (magic 2): the batch
// header the log reads and stamps on the hot path, and (in builder.go,
// reader.go, compression.go) the encoding of the records inside a batch.
//
// A batch on the wire and on disk is laid out exactly as in Kafka:
//
//	offset  size  field
//	0       8     base offset            (assigned by the broker)
//	8       4     batch length           (bytes after this field)
//	12      4     partition leader epoch (stamped by the broker)
//	16      1     magic (= 2)
//	17      4     CRC32C of bytes 21..end
//	21      2     attributes (compression, timestamp type, txn, control)
//	23      4     last offset delta
//	27      8     base timestamp
//	35      8     max timestamp
//	43      8     producer id
//	51      2     producer epoch
//	53      4     base sequence
//	57      4     record count
//	61      ...   records (compressed as a whole when attributes say so)
//
// Base offset and leader epoch lie outside the CRC, so the broker can set them
// without touching (or re-checksumming) the records.
package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// Byte offsets of the header fields.
const (
	offBaseOffset      = 0
	offLength          = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57

	// HeaderSize is the size of a v2 batch header; records start here.
	HeaderSize = 61
	// LogOverhead is the part of a batch not counted by its length field
	// (base offset and the length itself).
	LogOverhead = 12
	// Magic is the only batch format version actorlog reads or writes.
	Magic = 2
)

// Attribute bits.
const (
	compressionMask   = 0x07
	attrTimestampType = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
)

var (
	// ErrShortBuffer means fewer bytes are present than a header or the batch
	// length asks for: a torn or truncated frame.
	ErrShortBuffer = errors.New("record: batch truncated")
	// ErrCorrupt means a batch's framing or contents are not a valid v2 batch.
	ErrCorrupt = errors.New("record: corrupt batch")
	// ErrChecksum means a batch's CRC32C does not match its contents.
	ErrChecksum = errors.New("record: batch CRC mismatch")
	// ErrMagic means the batch is not magic 2.
	ErrMagic = errors.New("record: unsupported batch magic")
	// ErrEmptyBatch means the batch holds no records.
	ErrEmptyBatch = errors.New("record: batch has no records")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Compression is the codec of a batch, bits 0-2 of its attributes.
type Compression int8

// The codecs, numbered as in Kafka.
const (
	CompressionNone   Compression = 0
	CompressionGzip   Compression = 1
	CompressionSnappy Compression = 2
	CompressionLZ4    Compression = 3
	CompressionZstd   Compression = 4
)

// String returns Kafka's name of the codec.
func (c Compression) String() string {
	switch c {
	case CompressionNone:
		return "none"
	case CompressionGzip:
		return "gzip"
	case CompressionSnappy:
		return "snappy"
	case CompressionLZ4:
		return "lz4"
	case CompressionZstd:
		return "zstd"
	}
	return fmt.Sprintf("compression(%d)", int8(c))
}

// ParseCompression maps Kafka's codec names ("none", "gzip", "snappy",
// "lz4", "zstd") to a Compression.
func ParseCompression(s string) (Compression, error) {
	switch s {
	case "none", "":
		return CompressionNone, nil
	case "gzip":
		return CompressionGzip, nil
	case "snappy":
		return CompressionSnappy, nil
	case "lz4":
		return CompressionLZ4, nil
	case "zstd":
		return CompressionZstd, nil
	}
	return 0, fmt.Errorf("record: unknown compression %q (want none, gzip, snappy, lz4 or zstd)", s)
}

// Header is the decoded fixed header of a v2 batch.
type Header struct {
	BaseOffset      int64
	Length          int32 // bytes after the length field
	LeaderEpoch     int32
	Magic           int8
	CRC             uint32
	Attributes      int16
	LastOffsetDelta int32
	BaseTimestamp   int64
	MaxTimestamp    int64
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	RecordCount     int32
}

// Size is the whole batch size in bytes, header included.
func (h Header) Size() int { return int(h.Length) + LogOverhead }

// LastOffset is the offset of the batch's last record.
func (h Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset that follows the batch.
func (h Header) NextOffset() int64 { return h.LastOffset() + 1 }

// Compression is the batch's codec.
func (h Header) Compression() Compression { return Compression(h.Attributes & compressionMask) }

// LogAppendTime reports whether the timestamps are the broker's append time.
func (h Header) LogAppendTime() bool { return h.Attributes&attrTimestampType != 0 }

// Transactional reports whether the batch is part of a transaction.
func (h Header) Transactional() bool { return h.Attributes&attrTransactional != 0 }

// Control reports whether the batch holds control records.
func (h Header) Control() bool { return h.Attributes&attrControl != 0 }

// FrameSize returns the whole size of the batch that starts at b, reading only
// its length field. It fails with ErrShortBuffer when b is shorter than the
// offset+length prefix and ErrCorrupt when the length cannot be a v2 batch.
// It does not check that the whole batch is present.
func FrameSize(b []byte) (int, error) {
	if len(b) < LogOverhead {
		return 0, ErrShortBuffer
	}
	n := int32(binary.BigEndian.Uint32(b[offLength:]))
	if n < HeaderSize-LogOverhead {
		return 0, fmt.Errorf("%w: batch length %d below header size", ErrCorrupt, n)
	}
	if int64(n) > math.MaxInt-LogOverhead { // only on 32-bit platforms
		return 0, fmt.Errorf("%w: batch length %d too large for this platform", ErrCorrupt, n)
	}
	return int(n) + LogOverhead, nil
}

// ParseHeader decodes the header at the start of b. It checks that the header
// is present and that the length field is plausible; it checks neither magic
// nor CRC (see Validate).
func ParseHeader(b []byte) (Header, error) {
	var h Header
	if len(b) < HeaderSize {
		return h, ErrShortBuffer
	}
	if _, err := FrameSize(b); err != nil {
		return h, err
	}
	h.BaseOffset = int64(binary.BigEndian.Uint64(b[offBaseOffset:]))
	h.Length = int32(binary.BigEndian.Uint32(b[offLength:]))
	h.LeaderEpoch = int32(binary.BigEndian.Uint32(b[offLeaderEpoch:]))
	h.Magic = int8(b[offMagic])
	h.CRC = binary.BigEndian.Uint32(b[offCRC:])
	h.Attributes = int16(binary.BigEndian.Uint16(b[offAttributes:]))
	h.LastOffsetDelta = int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:]))
	h.BaseTimestamp = int64(binary.BigEndian.Uint64(b[offBaseTimestamp:]))
	h.MaxTimestamp = int64(binary.BigEndian.Uint64(b[offMaxTimestamp:]))
	h.ProducerID = int64(binary.BigEndian.Uint64(b[offProducerID:]))
	h.ProducerEpoch = int16(binary.BigEndian.Uint16(b[offProducerEpoch:]))
	h.BaseSequence = int32(binary.BigEndian.Uint32(b[offBaseSequence:]))
	h.RecordCount = int32(binary.BigEndian.Uint32(b[offRecordCount:]))
	return h, nil
}

// Checksum computes the CRC32C that a batch's CRC field must hold: over the
// bytes from the attributes to the end of the batch.
func Checksum(batch []byte) uint32 { return crc32.Checksum(batch[offAttributes:], castagnoli) }

// CheckFrame validates one batch that starts at b (which may hold more bytes
// after it): the whole frame is present, magic is 2, the CRC32C matches and
// the offset delta is sane. It returns the header; the batch is b[:h.Size()].
func CheckFrame(b []byte) (Header, error) {
	h, err := CheckFrameNoChecksum(b)
	if err != nil {
		return h, err
	}
	return h, VerifyChecksum(b[:h.Size()], &h)
}

// CheckFrameNoChecksum is CheckFrame without the CRC32C, for a batch whose
// checksum has passed before (a log serving bytes it checked when they
// were appended).
func CheckFrameNoChecksum(b []byte) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	if len(b) < h.Size() {
		return h, ErrShortBuffer
	}
	if h.Magic != Magic {
		return h, fmt.Errorf("%w: magic %d", ErrMagic, h.Magic)
	}
	if h.LastOffsetDelta < 0 {
		return h, fmt.Errorf("%w: negative last offset delta %d", ErrCorrupt, h.LastOffsetDelta)
	}
	return h, nil
}

// VerifyChecksum checks batch (exactly one batch, header h) against its
// CRC32C.
func VerifyChecksum(batch []byte, h *Header) error {
	if got := Checksum(batch); got != h.CRC {
		return fmt.Errorf("%w: stored %08x, computed %08x", ErrChecksum, h.CRC, got)
	}
	return nil
}

// Validate checks that b is exactly one well-formed v2 batch as a producer
// sends it, cheaply enough for the broker's append path: the length field
// matches len(b), magic is 2, the CRC32C matches, it holds at least one
// record, the last offset delta agrees with the record count, the codec is
// known, and (for uncompressed batches) the records' length prefixes tile the
// record area exactly recordCount times. It does not parse the inside of each
// record (ValidateRecords does) nor inflate compressed record areas;
// ValidateFull and CheckRecords, the broker's append check, do both.
// Validate allocates nothing.
func Validate(b []byte) (Header, error) {
	h, err := ValidateHeader(b)
	if err != nil {
		return h, err
	}
	return h, ValidateBody(b, &h)
}

// ValidateHeader is the part of Validate that reads only the header: length,
// magic, record count, last offset delta and codec. ValidateBody does the
// rest, so a caller may run the two apart (the log overlaps ValidateBody of
// a large batch with its write).
func ValidateHeader(b []byte) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	if h.Size() != len(b) {
		return h, fmt.Errorf("%w: batch length field says %d bytes, got %d", ErrCorrupt, h.Size(), len(b))
	}
	if h.Magic != Magic {
		return h, fmt.Errorf("%w: magic %d", ErrMagic, h.Magic)
	}
	if h.RecordCount <= 0 {
		return h, ErrEmptyBatch
	}
	if h.Control() {
		// Control batches (transaction markers) are the broker's own.
		if int64(h.LastOffsetDelta) < int64(h.RecordCount)-1 {
			return h, fmt.Errorf("%w: last offset delta %d below record count %d", ErrCorrupt, h.LastOffsetDelta, h.RecordCount)
		}
	} else if int64(h.LastOffsetDelta) != int64(h.RecordCount)-1 {
		return h, fmt.Errorf("%w: last offset delta %d does not match record count %d", ErrCorrupt, h.LastOffsetDelta, h.RecordCount)
	}
	if h.Compression() > CompressionZstd {
		return h, fmt.Errorf("%w: unknown compression codec %d", ErrCorrupt, h.Compression())
	}
	return h, nil
}

// ValidateBody checks what ValidateHeader does not: the CRC32C, and for an
// uncompressed batch that its records' length prefixes tile the record area
// exactly h.RecordCount times. b is the whole batch whose header is h.
func ValidateBody(b []byte, h *Header) error {
	if len(b) < HeaderSize || len(b) != h.Size() {
		return ErrShortBuffer
	}
	if err := VerifyChecksum(b, h); err != nil {
		return err
	}
	if h.Compression() == CompressionNone {
		return tileRecords(b[HeaderSize:], h.RecordCount)
	}
	return nil
}

// ValidateRecords is Validate plus a full parse of every record of an
// uncompressed batch (lengths, offset deltas 0..n-1, keys, values, headers),
// as Records parses them: Records succeeds on any uncompressed batch that
// ValidateRecords accepts.
func ValidateRecords(b []byte) (Header, error) {
	h, err := Validate(b)
	if err != nil {
		return h, err
	}
	if h.Compression() == CompressionNone {
		if err := checkRecords(&h, b[HeaderSize:]); err != nil {
			return h, err
		}
	}
	return h, nil
}

// tileRecords checks that area is exactly n records by their length
// prefixes alone. It is on the append path of every batch, so it walks
// positions instead of re-slicing and decodes the one- and two-byte varint
// forms (records under 8 KiB) inline.
func tileRecords(area []byte, n int32) error {
	var seen int32
	pos, end := 0, len(area)
	for pos < end && seen < n {
		var l int64
		var w int
		c := area[pos]
		switch {
		case c < 0x80:
			l, w = int64(c>>1)^-int64(c&1), 1
		case pos+1 < end && area[pos+1] < 0x80:
			u := uint64(c&0x7f) | uint64(area[pos+1])<<7
			l, w = int64(u>>1)^-int64(u&1), 2
		default:
			l, w = binary.Varint(area[pos:])
		}
		if w <= 0 || l <= 0 || int64(end-pos-w) < l {
			return fmt.Errorf("%w: record %d has a bad length prefix", ErrCorrupt, seen)
		}
		pos += w + int(l)
		seen++
	}
	if seen != n || pos != end {
		return fmt.Errorf("%w: header says %d records, the record area holds %d and %d more bytes", ErrCorrupt, n, seen, end-pos)
	}
	return nil
}

// SetBaseOffset writes the base offset into a batch header in place. The CRC
// does not cover it, so the batch stays valid.
func SetBaseOffset(b []byte, offset int64) {
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(offset))
}

// SetLeaderEpoch writes the partition leader epoch into a batch header in place.
func SetLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
}

// SetLogAppendTime marks the batch's timestamps as the broker's append time
// and sets its max timestamp to ts, recomputing the CRC (these fields are
// covered by it), as Kafka does for message.timestamp.type=LogAppendTime.
func SetLogAppendTime(b []byte, ts int64) {
	attrs := binary.BigEndian.Uint16(b[offAttributes:]) | attrTimestampType
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint32(b[offCRC:], Checksum(b))
}
