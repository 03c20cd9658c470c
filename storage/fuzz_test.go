// fuzz_test.go: fuzz targets of the decoders of the files a log reads back
// at open — producer-state snapshots (decodeSnapshot), the single-offset
// checkpoints (recovery point, high watermark: parseOffsetCheckpoint) and
// the leader-epoch checkpoint (parseEpochCheckpoint). Each checks that
// garbage never panics, that a refusal wraps the package's corruption error
// and returns no partial result, and that what decodes re-encodes to bytes
// that decode to the same thing.

package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"reflect"
	"slices"
	"testing"
)

func FuzzDecodeSnapshot(f *testing.F) {
	for _, ps := range []*producerState{newProducerState(), sampleProducerState()} {
		for _, off := range []int64{200, math.MaxInt64} {
			data := ps.encodeSnapshot(off)
			f.Add(data, off)
			f.Add(data[:len(data)-1], off)             // truncated
			f.Add(data, off-1)                         // the wrong file name
			f.Add(append(bytes.Clone(data), 0), off)   // a trailing byte
			f.Add(data[:snapshotHeaderSize], int64(0)) // header only
		}
	}
	f.Add([]byte{}, int64(0))

	f.Fuzz(func(t *testing.T, data []byte, offset int64) {
		checkSnapshot(t, data, offset)
		// Most inputs stop at the version, the CRC or the offset; fix
		// them so that they reach the producers too.
		if len(data) >= snapshotHeaderSize {
			be := binary.BigEndian
			fixed := bytes.Clone(data)
			be.PutUint16(fixed, snapshotVersion)
			be.PutUint64(fixed[6:], uint64(offset))
			be.PutUint32(fixed[2:], crc32.Checksum(fixed[6:], castagnoli))
			checkSnapshot(t, fixed, offset)
		}
	})
}

// checkSnapshot decodes data as the snapshot at offset and checks the
// invariants of the result.
func checkSnapshot(t *testing.T, data []byte, offset int64) {
	t.Helper()
	ps, err := decodeSnapshot(data, offset)
	if err != nil {
		if ps != nil {
			t.Fatalf("decode error %v came with a state", err)
		}
		if !errors.Is(err, errCorruptSnapshot) {
			t.Fatalf("decode error %v does not wrap errCorruptSnapshot", err)
		}
		return
	}
	for pid, e := range ps.producers {
		x := e.export(pid)
		if pid < 0 || len(e.batches) > ProducerBatchesRetained || x.LastOffset >= offset {
			t.Fatalf("decoded producer %+v of a snapshot at %d", x, offset)
		}
		for _, b := range x.Batches {
			if b.FirstOffset > b.LastOffset || b.LastOffset > x.LastOffset {
				t.Fatalf("decoded producer %+v has batch %+v", x, b)
			}
		}
	}
	// Re-encoded, it is as long as the input (no trailing bytes are
	// accepted) and decodes to the same producers; encoding is canonical.
	again := ps.encodeSnapshot(offset)
	if len(again) != len(data) {
		t.Fatalf("re-encoded to %d bytes, decoded from %d", len(again), len(data))
	}
	ps2, err := decodeSnapshot(again, offset)
	if err != nil {
		t.Fatalf("re-encoded snapshot does not decode: %v", err)
	}
	if len(ps2.producers) != len(ps.producers) {
		t.Fatalf("round trip: %d producers, want %d", len(ps2.producers), len(ps.producers))
	}
	for pid := range ps.producers {
		want, _ := ps.get(pid)
		if got, _ := ps2.get(pid); !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip of producer %d\n got %+v\nwant %+v", pid, got, want)
		}
	}
	if third := ps2.encodeSnapshot(offset); !bytes.Equal(third, again) {
		t.Fatal("encoding is not canonical: two encodings of one state differ")
	}
}

func FuzzParseOffsetCheckpoint(f *testing.F) {
	for _, off := range []int64{0, 1, 4096, math.MaxInt64} {
		b := formatOffsetCheckpoint(off)
		f.Add(b)
		f.Add(b[:len(b)-2]) // torn
	}
	f.Add([]byte("0\n-1\n"))
	f.Add([]byte("1\n5\n"))
	f.Add([]byte(" 0\n 7 \n\n"))
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, raw []byte) {
		off, err := parseOffsetCheckpoint(raw)
		if err != nil {
			if off != 0 {
				t.Fatalf("error %v came with offset %d", err, off)
			}
			if !errors.Is(err, ErrCorruptCheckpoint) {
				t.Fatalf("error %v does not wrap ErrCorruptCheckpoint", err)
			}
			return
		}
		if off < 0 {
			t.Fatalf("parsed a negative offset %d from %q", off, raw)
		}
		if again, err := parseOffsetCheckpoint(formatOffsetCheckpoint(off)); err != nil || again != off {
			t.Fatalf("round trip of %d: %d, %v", off, again, err)
		}
	})
}

func FuzzParseEpochCheckpoint(f *testing.F) {
	for _, entries := range [][]EpochEntry{
		nil,
		{{Epoch: 0, StartOffset: 0}},
		{{Epoch: 0, StartOffset: 0}, {Epoch: 2, StartOffset: 100}, {Epoch: 3, StartOffset: 100}, {Epoch: 7, StartOffset: 4096}},
		{{Epoch: math.MaxInt32, StartOffset: math.MaxInt64}},
	} {
		b := formatEpochCheckpoint(entries)
		f.Add(b)
		f.Add(b[:len(b)-1]) // no final newline
		f.Add(b[:len(b)/2]) // torn
	}
	f.Add([]byte("0\n2\n1 5\n1 6\n")) // epochs not increasing
	f.Add([]byte("0\n2\n2 5\n3 4\n")) // offsets decreasing
	f.Add([]byte("0\n1\n-1 0\n"))
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, raw []byte) {
		entries, err := parseEpochCheckpoint(raw)
		if err != nil {
			if entries != nil {
				t.Fatalf("error %v came with entries %v", err, entries)
			}
			if !errors.Is(err, ErrCorruptCheckpoint) {
				t.Fatalf("error %v does not wrap ErrCorruptCheckpoint", err)
			}
			return
		}
		for i, e := range entries {
			if e.Epoch < 0 || e.StartOffset < 0 {
				t.Fatalf("entry %+v is negative", e)
			}
			if i > 0 && (e.Epoch <= entries[i-1].Epoch || e.StartOffset < entries[i-1].StartOffset) {
				t.Fatalf("entries out of order: %v", entries)
			}
		}
		again, err := parseEpochCheckpoint(formatEpochCheckpoint(entries))
		if err != nil {
			t.Fatalf("re-encoded %v does not parse: %v", entries, err)
		}
		if !slices.Equal(again, entries) {
			t.Fatalf("round trip: %v, want %v", again, entries)
		}
	})
}
