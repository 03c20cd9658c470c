// This file holds the per-batch codecs in Kafka's framing: Compress and
// Decompress for gzip, snappy (xerial framing written, xerial or raw block
// read), lz4 (frame format) and zstd (standard frames). The codecs come from
// github.com/klauspost/compress and github.com/pierrec/lz4/v4; this file only
// frames them, pools their state and bounds their output.

package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// ErrTooLarge means a compressed record area would inflate beyond the limit
// the caller passed to Decompress (or Records): a decompression bomb, or a
// batch bigger than this consumer accepts.
var ErrTooLarge = errors.New("record: decompressed batch exceeds size limit")

// Compress appends src, compressed with codec c in Kafka's framing, to dst
// and returns the extended slice. CompressionNone appends src unchanged.
// Snappy is written in the xerial framing the Java producer uses.
//
// Compress is safe for concurrent use; codec state is pooled, so in steady
// state it allocates only when dst must grow.
func Compress(c Compression, dst, src []byte) ([]byte, error) {
	switch c {
	case CompressionNone:
		return append(dst, src...), nil
	case CompressionGzip:
		return compressGzip(dst, src)
	case CompressionSnappy:
		return appendXerial(dst, src)
	case CompressionLZ4:
		return compressLZ4(dst, src)
	case CompressionZstd:
		enc, err := zstdEncoder()
		if err != nil {
			return dst, fmt.Errorf("record: zstd compress: %w", err)
		}
		return enc.EncodeAll(src, dst), nil
	}
	return dst, fmt.Errorf("record: compress: unknown codec %d", int8(c))
}

// Decompress appends the inflated form of src, compressed with codec c, to
// dst and returns the extended slice. At most maxSize bytes are appended:
// input that would inflate further fails with an error wrapping ErrTooLarge,
// and memory use stays within a small multiple of maxSize whatever src
// claims. Malformed input fails with an error wrapping ErrUndecodable, and
// so ErrCorrupt (and the codec's own error). On error the returned slice is
// dst, unextended.
//
// Snappy input may be xerial framed (as the Java producer writes it) or a
// raw snappy block (as franz-go's non-streaming compressor writes it).
//
// Decompress is safe for concurrent use. The output never aliases src.
func Decompress(c Compression, dst, src []byte, maxSize int) ([]byte, error) {
	if maxSize < 0 {
		return dst, fmt.Errorf("record: %s decompress: negative size limit %d", c, maxSize)
	}
	if c != CompressionNone && len(src) == 0 {
		return dst, fmt.Errorf("record: %s decompress: %w: no compressed data", c, ErrUndecodable)
	}
	var (
		out []byte
		err error
	)
	switch c {
	case CompressionNone:
		if len(src) > maxSize {
			err = fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(src), maxSize)
			break
		}
		out = append(dst, src...)
	case CompressionGzip:
		out, err = decompressGzip(dst, src, maxSize)
	case CompressionSnappy:
		out, err = decompressSnappy(dst, src, maxSize)
	case CompressionLZ4:
		out, err = decompressLZ4(dst, src, maxSize)
	case CompressionZstd:
		out, err = decompressZstd(dst, src, maxSize)
	default:
		err = fmt.Errorf("%w: unknown codec %d", ErrCorrupt, int8(c))
	}
	if err != nil {
		return dst, fmt.Errorf("record: %s decompress: %w", c, err)
	}
	return out, nil
}

// corrupt wraps a codec library's error so that it matches ErrUndecodable
// (and so ErrCorrupt) while keeping the library's message and identity.
func corrupt(err error) error {
	if errors.Is(err, ErrTooLarge) || errors.Is(err, ErrCorrupt) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUndecodable, err)
}

// appendWriter is an io.Writer appending to a slice; pooled with a codec
// writer so that streaming into dst allocates nothing.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// readLimited appends everything r yields to dst, failing with ErrTooLarge
// once more than maxSize bytes arrive. The buffer grows geometrically from
// guess, so a bomb costs at most about twice maxSize before it is stopped.
func readLimited(dst []byte, r io.Reader, maxSize, guess int) ([]byte, error) {
	start := len(dst)
	// Read at most maxSize+1 bytes: the extra byte tells "exactly at the
	// limit" from "beyond it".
	limit := maxSize + 1
	if limit <= 0 { // maxSize == MaxInt
		limit = maxSize
	}
	guess = max(min(guess, limit), 512)
	for stalled := 0; ; {
		got := len(dst) - start
		if got > maxSize {
			return dst[:start], fmt.Errorf("%w: limit %d", ErrTooLarge, maxSize)
		}
		if len(dst) == cap(dst) {
			grow := max(guess, got)
			grow = min(grow, limit-got)
			if grow <= 0 {
				grow = 1
			}
			dst = slices.Grow(dst, grow)
		}
		room := dst[len(dst):cap(dst)]
		if rest := limit - got; len(room) > rest {
			room = room[:rest]
		}
		n, err := r.Read(room)
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			if len(dst)-start > maxSize {
				return dst[:start], fmt.Errorf("%w: limit %d", ErrTooLarge, maxSize)
			}
			return dst, nil
		}
		if err != nil {
			return dst[:start], corrupt(err)
		}
		if n > 0 {
			stalled = 0
		} else if stalled++; stalled == 100 {
			return dst[:start], corrupt(io.ErrNoProgress)
		}
	}
}

// --- gzip ---

type gzipWriter struct {
	w  *gzip.Writer
	aw appendWriter
}

type gzipReader struct {
	r   gzip.Reader
	src bytes.Reader
}

var (
	gzipWriters = sync.Pool{New: func() any {
		gw := new(gzipWriter)
		gw.w = gzip.NewWriter(&gw.aw) // default level, as Kafka's producer
		return gw
	}}
	gzipReaders = sync.Pool{New: func() any { return new(gzipReader) }}
)

func compressGzip(dst, src []byte) ([]byte, error) {
	gw := gzipWriters.Get().(*gzipWriter)
	defer gzipWriters.Put(gw)
	gw.aw.b = dst
	defer func() { gw.aw.b = nil }() // do not pin dst in the pool
	gw.w.Reset(&gw.aw)
	if _, err := gw.w.Write(src); err != nil {
		return dst, fmt.Errorf("record: gzip compress: %w", err)
	}
	if err := gw.w.Close(); err != nil {
		return dst, fmt.Errorf("record: gzip compress: %w", err)
	}
	return gw.aw.b, nil
}

func decompressGzip(dst, src []byte, maxSize int) ([]byte, error) {
	gr := gzipReaders.Get().(*gzipReader)
	defer gzipReaders.Put(gr)
	gr.src.Reset(src)
	defer gr.src.Reset(nil)
	if err := gr.r.Reset(&gr.src); err != nil {
		return dst, corrupt(err)
	}
	return readLimited(dst, &gr.r, maxSize, 4*len(src))
}

// --- lz4 ---

type lz4Writer struct {
	w  *lz4.Writer
	aw appendWriter
}

type lz4Reader struct {
	r   *lz4.Reader
	src bytes.Reader
}

var (
	lz4Writers = sync.Pool{New: func() any {
		lw := new(lz4Writer)
		lw.w = lz4.NewWriter(&lw.aw)
		// 64 KiB blocks, as Kafka's Java producer writes: a quarter of the
		// library default, so pooled writers hold less memory. Apply only
		// fails on invalid options.
		if err := lw.w.Apply(lz4.BlockSizeOption(lz4.Block64Kb)); err != nil {
			panic(fmt.Sprintf("record: lz4 writer options: %v", err))
		}
		return lw
	}}
	lz4Readers = sync.Pool{New: func() any {
		return &lz4Reader{r: lz4.NewReader(nil)}
	}}
)

func compressLZ4(dst, src []byte) ([]byte, error) {
	lw := lz4Writers.Get().(*lz4Writer)
	defer lz4Writers.Put(lw)
	lw.aw.b = dst
	lw.w.Reset(&lw.aw)
	defer func() { lw.aw.b = nil }()
	if _, err := lw.w.Write(src); err != nil {
		return dst, fmt.Errorf("record: lz4 compress: %w", err)
	}
	if err := lw.w.Close(); err != nil {
		return dst, fmt.Errorf("record: lz4 compress: %w", err)
	}
	return lw.aw.b, nil
}

func decompressLZ4(dst, src []byte, maxSize int) ([]byte, error) {
	lr := lz4Readers.Get().(*lz4Reader)
	defer lz4Readers.Put(lr)
	lr.src.Reset(src)
	lr.r.Reset(&lr.src)
	defer func() {
		lr.r.Reset(nil)
		lr.src.Reset(nil)
	}()
	return readLimited(dst, lr.r, maxSize, 4*len(src))
}

// --- snappy ---

// xerialMagic opens a xerial snappy stream.
var xerialMagic = []byte{130, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	// xerialHeaderSize is the magic plus version and compatible version.
	xerialHeaderSize = 16
	// xerialBlockSize is the block size Java's SnappyOutputStream writes.
	xerialBlockSize = 32 << 10
)

// appendXerial appends src in xerial framing: the magic, version 1 and
// minimum compatible version 1 (big-endian int32s; Java rejects lower), then
// per block of at most 32 KiB a big-endian int32 length and a raw snappy
// block.
func appendXerial(dst, src []byte) ([]byte, error) {
	if len(src) > math.MaxInt32 {
		return dst, fmt.Errorf("record: snappy compress: %d bytes is too large", len(src))
	}
	blocks := (len(src) + xerialBlockSize - 1) / xerialBlockSize
	dst = slices.Grow(dst, xerialHeaderSize+blocks*(4+s2.MaxEncodedLen(xerialBlockSize)))
	dst = append(dst, xerialMagic...)
	dst = binary.BigEndian.AppendUint32(dst, 1)
	dst = binary.BigEndian.AppendUint32(dst, 1)
	for len(src) > 0 {
		n := min(len(src), xerialBlockSize)
		at := len(dst)
		// EncodeSnappy writes in place when given the room, which the
		// Grow above reserved.
		block := s2.EncodeSnappy(dst[at+4:cap(dst)], src[:n])
		binary.BigEndian.PutUint32(dst[at:at+4], uint32(len(block)))
		dst = dst[:at+4+len(block)]
		src = src[n:]
	}
	return dst, nil
}

func decompressSnappy(dst, src []byte, maxSize int) ([]byte, error) {
	if len(src) >= xerialHeaderSize && bytes.HasPrefix(src, xerialMagic) {
		return decodeXerial(dst, src[xerialHeaderSize:], maxSize)
	}
	l, err := s2.DecodedLen(src)
	if err != nil {
		return dst, corrupt(err)
	}
	if l > maxSize {
		return dst, fmt.Errorf("%w: snappy block claims %d bytes, limit %d", ErrTooLarge, l, maxSize)
	}
	return decodeSnappyBlock(dst, src, l)
}

// decodeSnappyBlock appends the l-byte decoding of one raw snappy block.
func decodeSnappyBlock(dst, block []byte, l int) ([]byte, error) {
	dst = slices.Grow(dst, l)
	at := len(dst)
	// Decode writes into dst's spare room when it holds the decoded length.
	if _, err := s2.Decode(dst[at:at+l], block); err != nil {
		return dst[:at], corrupt(err)
	}
	return dst[:at+l], nil
}

// decodeXerial decodes the blocks after a xerial header. It walks the block
// lengths first, checking framing and the claimed output against maxSize, so
// that dst grows once and a bomb allocates nothing.
func decodeXerial(dst, src []byte, maxSize int) ([]byte, error) {
	var total int
	for rem := src; len(rem) > 0; {
		if len(rem) < 4 {
			return dst, fmt.Errorf("%w: xerial block length truncated", ErrUndecodable)
		}
		size := binary.BigEndian.Uint32(rem)
		rem = rem[4:]
		if uint64(size) > uint64(len(rem)) {
			return dst, fmt.Errorf("%w: xerial block of %d bytes, %d left", ErrUndecodable, size, len(rem))
		}
		l, err := s2.DecodedLen(rem[:size])
		if err != nil {
			return dst, corrupt(err)
		}
		if l > maxSize-total {
			return dst, fmt.Errorf("%w: xerial blocks claim over %d bytes", ErrTooLarge, maxSize)
		}
		total += l
		rem = rem[size:]
	}
	start := len(dst)
	dst = slices.Grow(dst, total)
	for len(src) > 0 {
		size := binary.BigEndian.Uint32(src)
		block := src[4 : 4+size]
		src = src[4+size:]
		l, err := s2.DecodedLen(block)
		if err != nil {
			return dst[:start], corrupt(err)
		}
		if dst, err = decodeSnappyBlock(dst, block, l); err != nil {
			return dst[:start], err
		}
	}
	return dst, nil
}

// --- zstd ---

var (
	zstdEncOnce sync.Once
	zstdEnc     *zstd.Encoder
	zstdEncErr  error
)

// zstdEncoder returns the shared encoder. EncodeAll is safe for concurrent
// use; the encoder keeps up to GOMAXPROCS encoder states for that.
func zstdEncoder() (*zstd.Encoder, error) {
	zstdEncOnce.Do(func() {
		zstdEnc, zstdEncErr = zstd.NewWriter(nil,
			zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)),
			zstd.WithZeroFrames(true), // an empty input still yields a frame
		)
	})
	return zstdEnc, zstdEncErr
}

// zstdMaxWindow is the largest frame window accepted: 2^27, the default
// limit of the zstd library Java's Kafka client uses. DecodeAll uses its
// output as history, so the window costs no memory of its own.
const zstdMaxWindow = 1 << 27

// zstdDecoder returns the shared decoder. DecodeAll is safe for concurrent
// use (up to GOMAXPROCS at once). It is set to stop at the capacity of the
// slice it decodes into, which is how Decompress bounds each call's output
// by that call's limit.
var zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0),
		zstd.WithDecodeAllCapLimit(true),
		zstd.WithDecoderMaxWindow(zstdMaxWindow),
	)
})

// zstdBlockRoom is the most a single zstd block decodes to, plus the
// library's over-allocation margin.
const zstdBlockRoom = 128<<10 + 64

// decompressZstd decodes into dst's spare room, capped at a guess of the
// output size: the declared content size when the first frame has one,
// else a multiple of the input. A frame that outgrows the cap is decoded
// again with a larger one (at most maxSize), so output and memory never
// exceed the limit; frames without a content size (Java's streaming
// producer writes those) may cost a few partial decodes when they compress
// better than 8:1.
//
// When the cap runs out inside a block the library reports a generic error,
// so an error is taken for "cap too small" when the partial output came
// within one block of the cap, and for corruption otherwise.
func decompressZstd(dst, src []byte, maxSize int) ([]byte, error) {
	dec, err := zstdDecoder()
	if err != nil {
		return dst, fmt.Errorf("new decoder: %w", err)
	}
	guess := min(max(8*len(src), 64<<10), maxSize)
	var zh zstd.Header
	if err := zh.Decode(src); err != nil {
		return dst, corrupt(err)
	}
	if !zh.Skippable && zh.HasFCS {
		if zh.FrameContentSize > uint64(maxSize) {
			return dst, fmt.Errorf("%w: frame declares %d bytes, limit %d", ErrTooLarge, zh.FrameContentSize, maxSize)
		}
		guess = int(zh.FrameContentSize)
	}
	start := len(dst)
	for {
		grown := slices.Grow(dst, guess)
		out, err := dec.DecodeAll(src, grown[start:start:start+guess])
		if err == nil {
			// With the cap limit a successful decode never reallocates,
			// so out is grown's tail; check rather than assume.
			if cap(out) == guess && len(out) <= guess {
				return grown[:start+len(out)], nil
			}
			return append(grown[:start], out...), nil
		}
		dst = grown[:start]
		outOfRoom := errors.Is(err, zstd.ErrDecoderSizeExceeded) || len(out)+zstdBlockRoom > guess
		switch {
		case errors.Is(err, zstd.ErrWindowSizeExceeded):
			return dst, fmt.Errorf("%w: window above %d bytes: %w", ErrTooLarge, zstdMaxWindow, err)
		case !outOfRoom:
			return dst, corrupt(err)
		case guess < maxSize:
			// Grow even from a declared size of 0 (a frame that lied,
			// or more frames after it).
			guess = int(min(max(int64(guess)*4, 64<<10), int64(maxSize)))
		default:
			return dst, fmt.Errorf("%w: limit %d: %w", ErrTooLarge, maxSize, err)
		}
	}
}
