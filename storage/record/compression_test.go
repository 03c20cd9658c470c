// This file tests the codecs: round trips, append semantics, the snappy
// framings, size limits against decompression bombs, and corrupt input.

package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// noise returns n deterministic incompressible bytes.
func noise(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestCompressRoundTrip(t *testing.T) {
	inputs := []struct {
		name string
		in   []byte
	}{
		{"empty", []byte{}},
		{"one byte", []byte{7}},
		{"text", payload(10<<10, 3)},
		{"xerial block boundary", payload(xerialBlockSize, 4)},
		{"several xerial blocks", payload(3*xerialBlockSize+17, 5)},
		{"1 MiB noise", noise(1 << 20)},
	}
	for _, c := range codecs {
		for _, in := range inputs {
			t.Run(c.String()+"/"+in.name, func(t *testing.T) {
				prefix := []byte("keep")
				comp, err := Compress(c, bytes.Clone(prefix), in.in)
				if err != nil {
					t.Fatalf("Compress: %v", err)
				}
				if !bytes.HasPrefix(comp, prefix) {
					t.Fatal("Compress did not append to dst")
				}
				out, err := Decompress(c, bytes.Clone(prefix), comp[len(prefix):], len(in.in))
				if err != nil {
					t.Fatalf("Decompress: %v", err)
				}
				if !bytes.HasPrefix(out, prefix) || !bytes.Equal(out[len(prefix):], in.in) {
					t.Fatal("round trip changed the data")
				}
				if len(in.in) > 0 {
					if _, err := Decompress(c, nil, comp[len(prefix):], len(in.in)-1); !errors.Is(err, ErrTooLarge) {
						t.Fatalf("Decompress with limit one below the size: %v, want ErrTooLarge", err)
					}
				}
			})
		}
	}
	if _, err := Compress(Compression(6), nil, []byte("x")); err == nil {
		t.Error("Compress with codec 6 succeeded")
	}
	if _, err := Decompress(Compression(6), nil, []byte("x"), 10); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Decompress with codec 6: %v, want ErrCorrupt", err)
	}
	if _, err := Decompress(CompressionGzip, nil, []byte("x"), -1); err == nil {
		t.Error("Decompress with a negative limit succeeded")
	}
}

func TestSnappyFraming(t *testing.T) {
	in := payload(3*xerialBlockSize+100, 9)
	comp, err := Compress(CompressionSnappy, nil, in)
	if err != nil {
		t.Fatal(err)
	}
	wantHeader := []byte{130, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}
	if !bytes.HasPrefix(comp, wantHeader) {
		t.Fatalf("header % x, want % x", comp[:16], wantHeader)
	}
	// Walk the blocks: each a big-endian length and a raw snappy block
	// of at most 32 KiB, together decoding to the input.
	var joined []byte
	blocks := 0
	for rest := comp[16:]; len(rest) > 0; blocks++ {
		n := int(binary.BigEndian.Uint32(rest))
		block := rest[4 : 4+n]
		rest = rest[4+n:]
		dec, err := snappy.Decode(nil, block)
		if err != nil {
			t.Fatalf("block %d: %v", blocks, err)
		}
		if len(dec) > xerialBlockSize {
			t.Fatalf("block %d decodes to %d bytes, above 32 KiB", blocks, len(dec))
		}
		joined = append(joined, dec...)
	}
	if blocks != 4 || !bytes.Equal(joined, in) {
		t.Fatalf("%d blocks decode to %d bytes, want 4 blocks, %d bytes", blocks, len(joined), len(in))
	}

	tests := []struct {
		name string
		in   []byte
	}{
		{"xerial (ours)", comp},
		{"raw block (klauspost snappy)", snappy.Encode(nil, in)},
		{"raw block (s2 EncodeSnappy, as kgo writes)", s2.EncodeSnappy(nil, in)},
		{"xerial header only", wantHeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Decompress(CompressionSnappy, nil, tt.in, len(in))
			if err != nil {
				t.Fatal(err)
			}
			want := in
			if len(tt.in) == len(wantHeader) {
				want = nil
			}
			if !bytes.Equal(out, want) {
				t.Fatal("decoded to different bytes")
			}
		})
	}
}

// zstdStream compresses data with the zstd stream writer: frames with no
// declared content size, as Java's streaming producer writes them.
func zstdStream(tb testing.TB, data []byte) []byte {
	tb.Helper()
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1))
	if err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < len(data); i += 1 << 20 {
		if _, err := w.Write(data[i:min(len(data), i+1<<20)]); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// bomb returns size zero bytes compressed with c; the zstd variant is a
// streamed frame with no declared content size.
func bomb(tb testing.TB, c Compression, size int) []byte {
	tb.Helper()
	zeros := make([]byte, size)
	if c == CompressionZstd {
		return zstdStream(tb, zeros)
	}
	out, err := Compress(c, nil, zeros)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func TestDecompressBomb(t *testing.T) {
	const size = 64 << 20
	const limit = 1 << 20
	for _, c := range codecs[1:] {
		t.Run(c.String(), func(t *testing.T) {
			src := bomb(t, c, size)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			out, err := Decompress(c, nil, src, limit)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("%d compressed bytes inflating to %d with limit %d: %v, want ErrTooLarge", len(src), size, limit, err)
			}
			if out != nil {
				t.Fatalf("returned %d bytes with the error", len(out))
			}
			// Pooled codec state may be created here; the output buffer
			// must stay near the limit, far below the bomb's size.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
				t.Fatalf("allocated %d MiB for a %d MiB limit", alloc>>20, limit>>20)
			}
		})
	}

	t.Run("snappy raw block claiming 4 GiB", func(t *testing.T) {
		src := binary.AppendUvarint(nil, 1<<32-1)
		src = append(src, 0, 0, 0)
		if _, err := Decompress(CompressionSnappy, nil, src, limit); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("%v, want ErrTooLarge", err)
		}
	})
	t.Run("xerial blocks claiming more than the limit", func(t *testing.T) {
		src := append([]byte{}, xerialMagic...)
		src = append(src, 0, 0, 0, 1, 0, 0, 0, 1)
		block := binary.AppendUvarint(nil, 1<<31)
		for range 4 {
			src = binary.BigEndian.AppendUint32(src, uint32(len(block)))
			src = append(src, block...)
		}
		if _, err := Decompress(CompressionSnappy, nil, src, 1<<32); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("%v, want ErrTooLarge", err)
		}
	})
	t.Run("zstd frame declaring 8 MiB", func(t *testing.T) {
		enc, err := zstd.NewWriter(nil)
		if err != nil {
			t.Fatal(err)
		}
		src := enc.EncodeAll(make([]byte, 8<<20), nil)
		if _, err := Decompress(CompressionZstd, nil, src, limit); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("%v, want ErrTooLarge", err)
		}
		// The same decoder, with a limit that fits, still decodes.
		if out, err := Decompress(CompressionZstd, nil, src, 8<<20); err != nil || len(out) != 8<<20 {
			t.Fatalf("with a fitting limit: %d bytes, %v", len(out), err)
		}
	})
	t.Run("zero limit", func(t *testing.T) {
		for _, c := range codecs {
			src, err := Compress(c, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if out, err := Decompress(c, nil, src, 0); err != nil || len(out) != 0 {
				t.Errorf("%v: empty input with limit 0: %d bytes, %v", c, len(out), err)
			}
			src, err = Compress(c, nil, []byte("x"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Decompress(c, nil, src, 0); !errors.Is(err, ErrTooLarge) {
				t.Errorf("%v: one byte with limit 0: %v, want ErrTooLarge", c, err)
			}
		}
	})
}

func TestDecompressCorrupt(t *testing.T) {
	in := payload(50<<10, 11)
	for _, c := range codecs[1:] {
		t.Run(c.String(), func(t *testing.T) {
			comp, err := Compress(c, nil, in)
			if err != nil {
				t.Fatal(err)
			}
			cases := map[string][]byte{
				"empty":     {},
				"garbage":   []byte("this is not compressed data at all, not in any codec"),
				"truncated": comp[:len(comp)/2],
			}
			if c != CompressionSnappy {
				// gzip, lz4 and zstd carry checksums; flipping a byte
				// in the middle must fail. Snappy blocks do not, so a
				// flip may decode to other bytes.
				flipped := bytes.Clone(comp)
				flipped[len(flipped)/2] ^= 0xff
				cases["flipped"] = flipped
				cases["trailing garbage"] = append(bytes.Clone(comp), "junk"...)
			}
			for name, src := range cases {
				out, err := Decompress(c, []byte("dst"), src, 1<<20)
				if !errors.Is(err, ErrCorrupt) {
					t.Errorf("%s: %v, want ErrCorrupt", name, err)
				}
				if string(out) != "dst" {
					t.Errorf("%s: dst changed to %d bytes on error", name, len(out))
				}
			}
		})
	}
}

// TestForeignFrames decodes streams written by the codec libraries' own
// stream writers, as other clients may produce them.
func TestForeignFrames(t *testing.T) {
	in := payload(300<<10, 13)
	var gz bytes.Buffer
	gw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gw.Write(in); err != nil {
		t.Fatal(err)
	}
	if err := gw.Close(); err != nil {
		t.Fatal(err)
	}
	var lz bytes.Buffer
	lw := lz4.NewWriter(&lz)
	if err := lw.Apply(lz4.BlockSizeOption(lz4.Block4Mb), lz4.ChecksumOption(false), lz4.BlockChecksumOption(true)); err != nil {
		t.Fatal(err)
	}
	if _, err := lw.Write(in); err != nil {
		t.Fatal(err)
	}
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		c    Compression
		src  []byte
	}{
		{"gzip best", CompressionGzip, gz.Bytes()},
		{"lz4 4MB blocks", CompressionLZ4, lz.Bytes()},
		{"zstd stream", CompressionZstd, zstdStream(t, in)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Decompress(tt.c, nil, tt.src, len(in))
			if err != nil || !bytes.Equal(out, in) {
				t.Fatalf("%d bytes, %v", len(out), err)
			}
		})
	}
}

// TestZstdFrames covers inputs of several frames, where the first frame's
// declared content size is not the whole output.
func TestZstdFrames(t *testing.T) {
	enc, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true))
	if err != nil {
		t.Fatal(err)
	}
	a, b := payload(1000, 1), payload(300<<10, 2)
	skippable := []byte{0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 1, 2, 3, 4}
	tests := []struct {
		name string
		src  []byte
		want []byte
	}{
		{"empty frame then data", append(enc.EncodeAll(nil, nil), enc.EncodeAll(b, nil)...), b},
		{"small frame then large", append(enc.EncodeAll(a, nil), enc.EncodeAll(b, nil)...), append(bytes.Clone(a), b...)},
		{"stream then frame", append(zstdStream(t, b), enc.EncodeAll(a, nil)...), append(bytes.Clone(b), a...)},
		{"skippable frame first", append(bytes.Clone(skippable), enc.EncodeAll(a, nil)...), a},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Decompress(CompressionZstd, nil, tt.src, len(tt.want))
			if err != nil || !bytes.Equal(out, tt.want) {
				t.Fatalf("%d bytes, %v; want %d", len(out), err, len(tt.want))
			}
			if _, err := Decompress(CompressionZstd, nil, tt.src, len(tt.want)-1); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("limit one below: %v, want ErrTooLarge", err)
			}
		})
	}
}
