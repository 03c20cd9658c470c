// This file checks the in-place build (TakeBatch): its bytes are those of
// AppendBatch and Build for every codec and record set, and those the
// Builder wrote before the in-place path existed (golden digests of the
// uncompressed batches); the builder takes the buffer it is given and
// reuses it for the next batch.

package record

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
)

// inPlaceOpts are builder options covering plain and idempotent batches.
var inPlaceOpts = []BuilderOptions{
	{},
	{Idempotent: true, ProducerID: 4242, ProducerEpoch: 7, BaseSequence: 123456},
}

// goldenNone is the SHA-256 of the uncompressed batch of each record set
// (recordSets) with each of inPlaceOpts, as Build wrote it before TakeBatch
// existed (copying the records behind the header). Compressed batches are
// checked against these through their records area (TestTakeBatchCodecs),
// so the test does not depend on the codec libraries' exact output.
var goldenNone = map[string]string{
	"null key and value/0":      "f1a7dd57a9140598bffb74cd73dcbcb71930de8157ce7b72dd0c05ff96c37ec5",
	"null key and value/1":      "7f0d61a8da5a5e8c1e934e425f5a2060096a9d4c8bd57a1949c90b6102b67fca",
	"empty key and value/0":     "0ff7b95b1af58f9ee85c8cf088c4f175a11c72c6a046c5ddd1fcda7459a714f8",
	"empty key and value/1":     "3c681096419c252aaffba5c0e7346ecfc77c653c022e958b0c4374a45233dcd2",
	"null key empty value/0":    "9c6826f392924fda980789a50530bb37d674c82db245a6b7fbb2fe8134c4d49e",
	"null key empty value/1":    "c783fa17b5c08afaf815cc8a9679577e570e9ae853b3c7b78160c43f768473db",
	"headers/0":                 "a5d4be55b3988269fb373122eb127a3bb8ce0b9bcd9ddaee1272fbb6f8da0b1b",
	"headers/1":                 "e7ead225a189b5b83e8f9959b2f599110046b83dbff422215e0146c2f100e1eb",
	"timestamps out of order/0": "a1b675e7fff5e7c9dc052dbb1c53f0df9c473da0ee355e9e873730ebca60a975",
	"timestamps out of order/1": "c16b06dd541b2fd3eefd49c25db6003330976e46083d2343236d42748ba12b26",
	"large value/0":             "b4feb7bdf7e4fb21ed692a73f2918e8556a75ae6a3be1a29c3b9d0659be661a3",
	"large value/1":             "6145e62ac70790bfc3a70e39ecf6e6ba4e9097689934b6da15e4291ba2a9c5b5",
	"many small/0":              "d4bb6732df8db24ed3207847eb46478f87f43c24eac7a45898ba1f8fbd96c1b6",
	"many small/1":              "3ee70a280c7f6e6f53259a96b1cad3774e171b31cc16a56057ca634af3cf0b56",
}

func buildWith(b *Builder, recs []Record) {
	for _, r := range recs {
		b.Append(r)
	}
}

func TestTakeBatchGoldenNone(t *testing.T) {
	for _, rs := range recordSets() {
		for i, o := range inPlaceOpts {
			name := fmt.Sprintf("%s/%d", rs.name, i)
			want, ok := goldenNone[name]
			if !ok {
				t.Fatalf("%s: no golden digest", name)
			}
			b := NewBuilder(o)
			// Twice: the second batch is built in the buffer given back
			// by the first TakeBatch, full of the first batch's bytes.
			next := bytes.Repeat([]byte{0xAA}, 1<<10)
			for round := range 2 {
				buildWith(b, rs.recs)
				built, err := b.Build()
				if err != nil {
					t.Fatalf("%s: Build: %v", name, err)
				}
				taken, err := b.TakeBatch(next)
				if err != nil {
					t.Fatalf("%s: TakeBatch: %v", name, err)
				}
				if b.Len() != 0 || b.EstimatedSize() != HeaderSize {
					t.Fatalf("%s: builder not reset after TakeBatch: %d records, size %d", name, b.Len(), b.EstimatedSize())
				}
				for what, out := range map[string][]byte{"Build": built, "TakeBatch": taken} {
					sum := sha256.Sum256(out)
					if got := hex.EncodeToString(sum[:]); got != want {
						t.Fatalf("%s round %d: %s digest %s, want %s (the bytes changed)", name, round, what, got, want)
					}
				}
				if _, err := CheckFrame(taken); err != nil {
					t.Fatalf("%s: TakeBatch output: %v", name, err)
				}
				next = taken // recycle it, as the producer does
			}
		}
	}
}

// TestTakeBatchCodecs checks that every codec's batch is the same through
// AppendBatch, Build and TakeBatch, and that its records area inflates to
// the uncompressed batch's.
func TestTakeBatchCodecs(t *testing.T) {
	for _, rs := range recordSets() {
		for i, o := range inPlaceOpts {
			o.Compression = CompressionNone
			plain := NewBuilder(o)
			buildWith(plain, rs.recs)
			none, err := plain.Build()
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range codecs {
				name := fmt.Sprintf("%s/%d/%s", rs.name, i, c)
				o.Compression = c
				b := NewBuilder(o)
				buildWith(b, rs.recs)
				appended, err := b.AppendBatch([]byte("prefix"))
				if err != nil {
					t.Fatalf("%s: AppendBatch: %v", name, err)
				}
				if string(appended[:6]) != "prefix" {
					t.Fatalf("%s: AppendBatch overwrote dst", name)
				}
				appended = appended[6:]
				built, err := b.Build()
				if err != nil {
					t.Fatalf("%s: Build: %v", name, err)
				}
				taken, err := b.TakeBatch(make([]byte, 10, 64))
				if err != nil {
					t.Fatalf("%s: TakeBatch: %v", name, err)
				}
				if !bytes.Equal(appended, built) || !bytes.Equal(taken, built) {
					t.Fatalf("%s: AppendBatch, Build and TakeBatch differ (%d, %d, %d bytes)", name, len(appended), len(built), len(taken))
				}
				h, err := CheckFrame(taken)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if h.Compression() != c {
					t.Fatalf("%s: header says %s", name, h.Compression())
				}
				inflated, err := Decompress(c, nil, taken[HeaderSize:], 4<<20)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !bytes.Equal(inflated, none[HeaderSize:]) {
					t.Fatalf("%s: records area differs from the uncompressed batch's", name)
				}
				// Header fields other than length, attributes and CRC
				// match the uncompressed batch's.
				for _, r := range [][2]int{{0, offLength}, {offLeaderEpoch, offCRC}, {offLastOffsetDelta, HeaderSize}} {
					if !bytes.Equal(taken[r[0]:r[1]], none[r[0]:r[1]]) {
						t.Fatalf("%s: header bytes [%d,%d) differ from the uncompressed batch's", name, r[0], r[1])
					}
				}
				got, err := Records(taken, 4<<20)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				compareRecords(t, rs.recs, got, 0)
			}
		}
	}
}

// TestTakeBatchInPlace checks that an uncompressed TakeBatch copies
// nothing: the batch is the buffer the builder was given before, and the
// next batch is encoded into the buffer given now.
func TestTakeBatchInPlace(t *testing.T) {
	recs := []Record{{Key: []byte("k"), Value: payload(300, 1), Timestamp: 5}, {Value: payload(200, 2), Timestamp: 9}}
	b := NewBuilder(BuilderOptions{})
	buildWith(b, recs)
	given := make([]byte, 0, 4<<10)
	first, err := b.TakeBatch(given)
	if err != nil {
		t.Fatal(err)
	}
	second, err := b.TakeBatch(make([]byte, 0, 4<<10))
	if !errors.Is(err, ErrEmptyBatch) || second != nil {
		t.Fatalf("TakeBatch of an empty batch: %d bytes, %v; want ErrEmptyBatch", len(second), err)
	}
	buildWith(b, recs)
	if second, err = b.TakeBatch(nil); err != nil {
		t.Fatal(err)
	}
	if &second[:1][0] != &given[:1][0] {
		t.Fatal("the second batch is not in the buffer given to the first TakeBatch (a failed TakeBatch must not take its buffer)")
	}
	if !bytes.Equal(first, second) {
		t.Fatal("the same records built twice differ")
	}
	got, err := Records(second, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	compareRecords(t, recs, got, 0)
	// A buffer of exactly the batch's size is not outgrown.
	exact := make([]byte, 0, len(first))
	b.SetBuffer(exact)
	buildWith(b, recs)
	fourth, err := b.TakeBatch(nil)
	if err != nil || !bytes.Equal(fourth, first) {
		t.Fatalf("batch in an exact buffer: %v, equal %v", err, bytes.Equal(fourth, first))
	}
	if &fourth[:1][0] != &exact[:1][0] {
		t.Fatal("a buffer of exactly the batch's size was outgrown")
	}
	// The builder was given nil: it grows a buffer of its own.
	buildWith(b, recs)
	third, err := b.TakeBatch(nil)
	if err != nil || !bytes.Equal(third, first) {
		t.Fatalf("third batch: %v, equal %v", err, bytes.Equal(third, first))
	}
}

// TestTakeBatchAllocs checks that building uncompressed batches with
// TakeBatch, recycling each batch as the next one's buffer, allocates
// nothing in steady state.
func TestTakeBatchAllocs(t *testing.T) {
	recs := benchRecords()
	b := NewBuilder(BuilderOptions{})
	var spare []byte
	round := func() {
		for _, r := range recs {
			b.Append(r)
		}
		out, err := b.TakeBatch(spare)
		if err != nil {
			t.Fatal(err)
		}
		spare = out
	}
	round()
	round()
	if n := testing.AllocsPerRun(20, round); n != 0 {
		t.Fatalf("TakeBatch round allocates %.1f times, want 0", n)
	}
}
