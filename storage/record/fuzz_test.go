// This file holds the fuzz test of the decoders: Validate, ValidateFull,
// CheckFrame, Records, BatchReader and Batches on arbitrary input, checking
// invariants rather than outputs.

package record

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// fuzzLimit bounds decompression in the fuzz body.
const fuzzLimit = 4 << 20

func FuzzRecords(f *testing.F) {
	seeds := [][]Record{
		{{Key: []byte("k"), Value: []byte("v"), Timestamp: 1}},
		recordSets()[3].recs, // headers, null and empty values
		recordSets()[4].recs, // timestamps out of order
		{{}, {Key: []byte{}, Value: []byte{}}, {Value: payload(300, 1)}},
	}
	for _, c := range codecs {
		for _, recs := range seeds {
			b := mustBuild(f, c, recs...)
			f.Add(b)
			f.Add(b[:len(b)-1])                 // truncated
			f.Add(b[:HeaderSize+3])             // truncated in the records
			f.Add(append(bytes.Clone(b), b...)) // two batches
			g := bytes.Clone(b)                 // garbled records, CRC fixed
			for i := HeaderSize; i < len(g); i += 7 {
				g[i] ^= 0x5a
			}
			copy(g[offCRC:], be32(Checksum(g)))
			f.Add(g)
			la := bytes.Clone(b)
			SetLogAppendTime(la, 1234)
			f.Add(la)
		}
	}
	for _, c := range codecs {
		f.Add(kmsgBatch(f, c, seeds[1])) // franz-go framing (raw snappy block)
	}
	zs := zstdStream(f, append(okRecord(0).encode(), okRecord(1).encode()...)) // no content size
	f.Add(rawBatch{attrs: int16(CompressionZstd), lastOffsetDelta: 1, count: 2, area: zs}.frame())
	f.Add(rawBatch{lastOffsetDelta: 9, count: 2, area: append(okRecord(3).encode(), okRecord(7).encode()...)}.frame())
	f.Add(rawBatch{count: 0}.frame())
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, in []byte) {
		checkDecoders(t, in)
		// Most mutations break the CRC and stop at CheckFrame. Repair the
		// frame (magic, length, CRC) so that they reach the records and
		// the codecs too.
		if len(in) >= HeaderSize {
			fixed := bytes.Clone(in)
			fixed[offMagic] = Magic
			copy(fixed[offLength:], be32(uint32(len(fixed)-LogOverhead)))
			copy(fixed[offCRC:], be32(Checksum(fixed)))
			checkDecoders(t, fixed)
		}
	})
}

// checkDecoders runs every decoder on in and checks the invariants that
// hold whatever the input.
func checkDecoders(t *testing.T, in []byte) {
	t.Helper()
	{
		orig := bytes.Clone(in)
		vh, verr := ValidateRecords(in)
		_, ferr := CheckFrame(in)
		if verr == nil && ferr != nil {
			t.Fatalf("ValidateRecords passed, CheckFrame failed: %v", ferr)
		}
		if _, err := Validate(in); verr == nil && err != nil {
			t.Fatalf("ValidateRecords passed, Validate failed: %v", err)
		}

		recs, rerr := Records(in, fuzzLimit)
		if rerr == nil {
			h, err := CheckFrame(in)
			if err != nil {
				t.Fatalf("Records passed, CheckFrame failed: %v", err)
			}
			if len(recs) != int(h.RecordCount) {
				t.Fatalf("%d records, header says %d", len(recs), h.RecordCount)
			}
			for i, r := range recs {
				if i > 0 && r.Offset <= recs[i-1].Offset {
					t.Fatalf("offsets not increasing: %d after %d", r.Offset, recs[i-1].Offset)
				}
				if r.Offset < h.BaseOffset || r.Offset > h.LastOffset() {
					t.Fatalf("offset %d outside %d..%d", r.Offset, h.BaseOffset, h.LastOffset())
				}
				// Batches as producers write them (which Validate
				// demands) have consecutive offsets.
				if h.LastOffsetDelta == h.RecordCount-1 && r.Offset != h.BaseOffset+int64(i) {
					t.Fatalf("record %d: offset %d, want %d", i, r.Offset, h.BaseOffset+int64(i))
				}
				if h.LogAppendTime() && r.Timestamp != h.MaxTimestamp {
					t.Fatalf("LogAppendTime record timestamp %d, batch max %d", r.Timestamp, h.MaxTimestamp)
				}
			}
		} else if !errors.Is(rerr, ErrCorrupt) && !errors.Is(rerr, ErrShortBuffer) && !errors.Is(rerr, ErrChecksum) &&
			!errors.Is(rerr, ErrMagic) && !errors.Is(rerr, ErrTooLarge) {
			t.Fatalf("Records error matches no sentinel: %v", rerr)
		}
		if verr == nil && vh.Compression() == CompressionNone && rerr != nil {
			t.Fatalf("ValidateRecords passed an uncompressed batch, Records failed: %v", rerr)
		}
		if verr == nil && rerr == nil && len(recs) != int(vh.RecordCount) {
			t.Fatalf("ValidateRecords count %d, Records %d", vh.RecordCount, len(recs))
		}

		// The append path's record parser agrees with the readers', and
		// the readers' with its plain reference, field by field and
		// error by error.
		for _, b := range [][]byte{in, in[min(len(in), HeaderSize):]} {
			r, n, perr := parseRecord(b)
			ts, od, sn, serr := skimRecord(b)
			if (perr == nil) != (serr == nil) || (perr == nil && (n != sn || r.tsDelta != ts || r.offDelta != od)) {
				t.Fatalf("parseRecord: %d bytes, %v; skimRecord: %d bytes, %v", n, perr, sn, serr)
			}
			ref, rn, rerr := parseRecordRef(b)
			if fmt.Sprint(perr) != fmt.Sprint(rerr) || n != rn || !sameRaw(r, ref) {
				t.Fatalf("parseRecord: %+v, %d bytes, %v; reference: %+v, %d bytes, %v", r, n, perr, ref, rn, rerr)
			}
		}

		// The leader's full check accepts only what every reader decodes.
		if fh, err := ValidateFull(in, fuzzLimit); err == nil {
			if rerr != nil {
				t.Fatalf("ValidateFull passed, Records failed: %v", rerr)
			}
			if len(recs) != int(fh.RecordCount) {
				t.Fatalf("ValidateFull count %d, Records %d", fh.RecordCount, len(recs))
			}
			if _, err := Validate(in); err != nil {
				t.Fatalf("ValidateFull passed, Validate failed: %v", err)
			}
		} else if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrShortBuffer) && !errors.Is(err, ErrChecksum) &&
			!errors.Is(err, ErrMagic) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrEmptyBatch) {
			t.Fatalf("ValidateFull error matches no sentinel: %v", err)
		}

		// The iterator agrees with Records.
		var br BatchReader
		var rec Record
		n := 0
		if br.Reset(in, fuzzLimit) == nil {
			for br.Next(&rec) {
				if rerr == nil && (rec.Offset != recs[n].Offset || !sameBytes(rec.Value, recs[n].Value) || len(rec.Headers) != len(recs[n].Headers)) {
					t.Fatalf("BatchReader record %d differs from Records", n)
				}
				n++
			}
		}
		if (br.Err() == nil) != (rerr == nil) || (rerr == nil && n != len(recs)) {
			t.Fatalf("BatchReader: %d records, %v; Records: %d, %v", n, br.Err(), len(recs), rerr)
		}

		// Batches: whole batches only, never past the input.
		s := Batches(in)
		total := 0
		for s.Next() {
			b := s.Batch()
			total += len(b)
			if len(b) != s.Header().Size() || total != s.Consumed() {
				t.Fatalf("batch of %d bytes, header size %d, consumed %d/%d", len(b), s.Header().Size(), s.Consumed(), total)
			}
			if _, err := CheckFrame(b); err != nil {
				t.Fatalf("Batches returned a batch CheckFrame rejects: %v", err)
			}
		}
		if s.Consumed() > len(in) {
			t.Fatalf("consumed %d of %d bytes", s.Consumed(), len(in))
		}
		if ferr == nil && s.Consumed() == 0 {
			t.Fatal("CheckFrame accepts the first batch, Batches returned none")
		}

		if !bytes.Equal(in, orig) {
			t.Fatal("decoders modified their input")
		}
	}
}

func be32(v uint32) []byte { return []byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)} }

// sameRaw compares two parsed records, telling a nil key or value from an
// empty one.
func sameRaw(a, b rawRecord) bool {
	return a.tsDelta == b.tsDelta && a.offDelta == b.offDelta && a.nHeaders == b.nHeaders &&
		(a.key == nil) == (b.key == nil) && bytes.Equal(a.key, b.key) && cap(a.key) == cap(b.key) &&
		(a.value == nil) == (b.value == nil) && bytes.Equal(a.value, b.value) && cap(a.value) == cap(b.value) &&
		bytes.Equal(a.headers, b.headers)
}
