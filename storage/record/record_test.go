// This file tests the Builder and the readers: round trips across every
// codec, header fields, reuse without allocation, corruption and
// truncation, hand-framed malformed batches, and the batch scanner.

package record

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	for _, c := range codecs {
		for _, set := range recordSets() {
			t.Run(c.String()+"/"+set.name, func(t *testing.T) {
				batch := mustBuild(t, c, set.recs...)
				h, err := Validate(batch)
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				n := len(set.recs)
				if h.Compression() != c || h.RecordCount != int32(n) || h.LastOffsetDelta != int32(n-1) {
					t.Fatalf("header %+v: want codec %v, %d records", h, c, n)
				}
				if h.BaseOffset != 0 || h.LeaderEpoch != -1 || h.Magic != Magic || h.LogAppendTime() || h.Control() || h.Transactional() {
					t.Fatalf("header %+v: bad defaults", h)
				}
				if h.ProducerID != -1 || h.ProducerEpoch != -1 || h.BaseSequence != -1 {
					t.Fatalf("header %+v: producer fields not -1", h)
				}
				maxTS := set.recs[0].Timestamp
				for _, r := range set.recs {
					maxTS = max(maxTS, r.Timestamp)
				}
				if h.BaseTimestamp != set.recs[0].Timestamp || h.MaxTimestamp != maxTS {
					t.Fatalf("timestamps base %d max %d, want %d %d", h.BaseTimestamp, h.MaxTimestamp, set.recs[0].Timestamp, maxTS)
				}

				got, err := Records(batch, 4<<20)
				if err != nil {
					t.Fatalf("Records: %v", err)
				}
				compareRecords(t, set.recs, got, 0)

				// The broker stamps a base offset; offsets follow.
				SetBaseOffset(batch, 1000)
				SetLeaderEpoch(batch, 7)
				br, err := NewBatchReader(batch, 4<<20)
				if err != nil {
					t.Fatalf("NewBatchReader: %v", err)
				}
				var all []Record
				var rec Record
				for br.Next(&rec) {
					r := rec
					r.Headers = append([]RecordHeader(nil), rec.Headers...)
					all = append(all, r)
				}
				if err := br.Err(); err != nil {
					t.Fatalf("BatchReader: %v", err)
				}
				compareRecords(t, set.recs, all, 1000)
			})
		}
	}
}

func TestLogAppendTime(t *testing.T) {
	for _, c := range codecs {
		t.Run(c.String(), func(t *testing.T) {
			batch := mustBuild(t, c, Record{Value: []byte("a"), Timestamp: 10}, Record{Value: []byte("b"), Timestamp: 20})
			SetLogAppendTime(batch, 99)
			if _, err := Validate(batch); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			recs, err := Records(batch, 1<<20)
			if err != nil {
				t.Fatalf("Records: %v", err)
			}
			for i, r := range recs {
				if r.Timestamp != 99 {
					t.Errorf("record %d: timestamp %d, want the batch max timestamp 99", i, r.Timestamp)
				}
			}
		})
	}
}

func TestBuilderOptions(t *testing.T) {
	tests := []struct {
		name                string
		opts                BuilderOptions
		wantPID             int64
		wantEpoch           int16
		wantSeq             int32
		wantCodec           Compression
		wantTransactionalNo bool
	}{
		{"default", BuilderOptions{}, -1, -1, -1, CompressionNone, true},
		{"fields ignored unless idempotent", BuilderOptions{ProducerID: 5, ProducerEpoch: 2, BaseSequence: 9}, -1, -1, -1, CompressionNone, true},
		{"idempotent zeroes", BuilderOptions{Idempotent: true}, 0, 0, 0, CompressionNone, true},
		{"idempotent", BuilderOptions{Compression: CompressionZstd, Idempotent: true, ProducerID: 1 << 40, ProducerEpoch: 3, BaseSequence: 1000}, 1 << 40, 3, 1000, CompressionZstd, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBuilder(tt.opts)
			b.Append(Record{Value: []byte("x"), Timestamp: 1})
			batch, err := b.Build()
			if err != nil {
				t.Fatal(err)
			}
			h, err := Validate(batch)
			if err != nil {
				t.Fatal(err)
			}
			if h.ProducerID != tt.wantPID || h.ProducerEpoch != tt.wantEpoch || h.BaseSequence != tt.wantSeq || h.Compression() != tt.wantCodec {
				t.Fatalf("header %+v, want pid %d epoch %d seq %d codec %v", h, tt.wantPID, tt.wantEpoch, tt.wantSeq, tt.wantCodec)
			}
		})
	}
}

func TestBuilderReuse(t *testing.T) {
	for _, c := range codecs {
		t.Run(c.String(), func(t *testing.T) {
			b := NewBuilder(BuilderOptions{Compression: c})
			if _, err := b.Build(); !errors.Is(err, ErrEmptyBatch) {
				t.Fatalf("Build of no records: %v, want ErrEmptyBatch", err)
			}
			var prev []byte
			for round := range 3 {
				b.Reset()
				if b.Len() != 0 || b.EstimatedSize() != HeaderSize {
					t.Fatalf("after Reset: Len %d EstimatedSize %d", b.Len(), b.EstimatedSize())
				}
				recs := recordSets()[3].recs // headers
				for _, r := range recs {
					b.Append(r)
				}
				if b.Len() != len(recs) {
					t.Fatalf("Len %d, want %d", b.Len(), len(recs))
				}
				batch, err := b.Build()
				if err != nil {
					t.Fatal(err)
				}
				if c == CompressionNone && b.EstimatedSize() != len(batch) {
					t.Fatalf("EstimatedSize %d, uncompressed batch is %d", b.EstimatedSize(), len(batch))
				}
				if round > 0 && !bytes.Equal(batch, prev) {
					t.Fatalf("round %d built different bytes after Reset", round)
				}
				prev = batch
				// The built batch is the caller's: a reset and rebuild
				// must not touch it.
				keep := bytes.Clone(batch)
				b.Reset()
				b.Append(Record{Value: []byte("other")})
				if _, err := b.Build(); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(keep, batch) {
					t.Fatal("Build result changed after the builder was reused")
				}
			}
			b.ResetWith(BuilderOptions{Compression: c, Idempotent: true, ProducerID: 7, BaseSequence: 3})
			b.Append(Record{Value: []byte("v")})
			batch, err := b.Build()
			if err != nil {
				t.Fatal(err)
			}
			if h, err := Validate(batch); err != nil || h.ProducerID != 7 || h.BaseSequence != 3 {
				t.Fatalf("after ResetWith: %+v, %v", h, err)
			}
			dst := []byte("prefix")
			out, err := b.AppendBatch(dst)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(out, []byte("prefix")) || !bytes.Equal(out[len(dst):], batch) {
				t.Fatal("AppendBatch did not append the same batch after dst")
			}
		})
	}
}

func TestSteadyStateAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts")
	}
	recs := make([]Record, 160)
	for i := range recs {
		recs[i] = Record{Key: []byte("key"), Value: payload(100, i), Timestamp: int64(i),
			Headers: []RecordHeader{{Key: "h", Value: []byte("v")}}}
	}
	for _, c := range codecs {
		t.Run(c.String(), func(t *testing.T) {
			if raceEnabled && c != CompressionNone {
				t.Skip("the race detector makes sync.Pool drop codec state")
			}
			b := NewBuilder(BuilderOptions{Compression: c})
			var out []byte
			build := func() {
				b.Reset()
				for _, r := range recs {
					b.Append(r)
				}
				var err error
				if out, err = b.AppendBatch(out[:0]); err != nil {
					t.Fatal(err)
				}
			}
			// A GC during the run may empty the codec pools once, so
			// compressed builds may average a fraction of an allocation;
			// a per-record allocation would show as 160.
			limit := 0.0
			if c != CompressionNone {
				limit = 1
			}
			build()
			if a := testing.AllocsPerRun(50, build); a > limit {
				t.Errorf("Append+AppendBatch of %d records: %.1f allocs per batch, want at most %v", len(recs), a, limit)
			}
			var br BatchReader
			var rec Record
			read := func() {
				if err := br.Reset(out, 1<<20); err != nil {
					t.Fatal(err)
				}
				n := 0
				for br.Next(&rec) {
					n++
				}
				if br.Err() != nil || n != len(recs) {
					t.Fatalf("read %d records: %v", n, br.Err())
				}
			}
			read()
			if a := testing.AllocsPerRun(50, read); a > limit {
				t.Errorf("BatchReader over %d records: %.1f allocs per batch, want at most %v", len(recs), a, limit)
			}
		})
	}
}

func TestCorruptByte(t *testing.T) {
	for _, c := range codecs {
		t.Run(c.String(), func(t *testing.T) {
			batch := mustBuild(t, c, recordSets()[3].recs...)
			// Every byte from the CRC field on is covered by the CRC (the
			// CRC field itself trivially).
			for i := offCRC; i < len(batch); i++ {
				bad := bytes.Clone(batch)
				bad[i] ^= 0x41
				if _, err := CheckFrame(bad); !errors.Is(err, ErrChecksum) {
					t.Fatalf("byte %d flipped: CheckFrame %v, want ErrChecksum", i, err)
				}
				if _, err := Records(bad, 1<<20); !errors.Is(err, ErrChecksum) {
					t.Fatalf("byte %d flipped: Records %v, want ErrChecksum", i, err)
				}
			}
			bad := bytes.Clone(batch)
			bad[offMagic] = 1
			if _, err := CheckFrame(bad); !errors.Is(err, ErrMagic) {
				t.Fatalf("magic 1: %v, want ErrMagic", err)
			}
		})
	}
}

func TestTruncated(t *testing.T) {
	for _, c := range codecs {
		t.Run(c.String(), func(t *testing.T) {
			batch := mustBuild(t, c, recordSets()[3].recs...)
			for n := range len(batch) {
				if _, err := CheckFrame(batch[:n]); !errors.Is(err, ErrShortBuffer) {
					t.Fatalf("%d of %d bytes: CheckFrame %v, want ErrShortBuffer", n, len(batch), err)
				}
				if _, err := Records(batch[:n], 1<<20); !errors.Is(err, ErrShortBuffer) {
					t.Fatalf("%d of %d bytes: Records %v, want ErrShortBuffer", n, len(batch), err)
				}
				s := Batches(batch[:n])
				if s.Next() || s.Err() != nil || s.Consumed() != 0 {
					t.Fatalf("%d of %d bytes: Batches returned a batch or error %v", n, len(batch), s.Err())
				}
			}
		})
	}
}

// TestMalformed feeds hand-framed batches with a correct CRC but broken
// contents: ValidateRecords (for uncompressed batches) and Records must both
// reject them with ErrCorrupt.
func TestMalformed(t *testing.T) {
	records := func(specs ...rawRecordSpec) []byte {
		var b []byte
		for _, s := range specs {
			b = append(b, s.encode()...)
		}
		return b
	}
	three := records(okRecord(0), okRecord(1), okRecord(2))
	headerArea := func(h ...[]byte) []byte { return bytes.Join(h, nil) }
	tests := []struct {
		name string
		rb   rawBatch
	}{
		{"count above records", rawBatch{lastOffsetDelta: 3, count: 4, area: three}},
		{"count below records", rawBatch{lastOffsetDelta: 1, count: 2, area: three}},
		{"count huge", rawBatch{lastOffsetDelta: 1<<30 - 1, count: 1 << 30, area: three}},
		{"count negative", rawBatch{lastOffsetDelta: -2, count: -1, area: three}},
		{"offset deltas repeat", rawBatch{lastOffsetDelta: 2, count: 3, area: records(okRecord(0), okRecord(0), okRecord(2))}},
		{"offset deltas skip", rawBatch{lastOffsetDelta: 2, count: 3, area: records(okRecord(0), okRecord(2), okRecord(3))}},
		{"offset delta negative", rawBatch{lastOffsetDelta: 0, count: 1, area: records(okRecord(-1))}},
		{"trailing junk after records", rawBatch{lastOffsetDelta: 2, count: 3, area: append(bytes.Clone(three), 0)}},
		{"record length past end", rawBatch{count: 1, area: records(rawRecordSpec{keyLen: -1, valueLen: -1, lenAdjust: 5})}},
		{"record length short", rawBatch{count: 1, area: records(rawRecordSpec{keyLen: -1, valueLen: 3, value: []byte("abc"), lenAdjust: -2})}},
		{"record length negative", rawBatch{count: 1, area: []byte{1, 0, 0, 0, 1, 1, 0}}},
		{"junk inside record", rawBatch{count: 1, area: records(rawRecordSpec{keyLen: -1, valueLen: -1, extra: []byte{1, 2}})}},
		{"key length past record", rawBatch{count: 1, area: records(rawRecordSpec{keyLen: 100, valueLen: -1})}},
		{"key length below -1", rawBatch{count: 1, area: records(rawRecordSpec{keyLen: -2, valueLen: -1})}},
		{"value length past record", rawBatch{count: 1, area: records(rawRecordSpec{keyLen: -1, valueLen: 4, value: []byte("abc")})}},
		{"header count negative", rawBatch{count: 1, area: records(rawRecordSpec{keyLen: -1, valueLen: -1, nHeaders: -1})}},
		{"header count huge", rawBatch{count: 1, area: records(rawRecordSpec{keyLen: -1, valueLen: -1, nHeaders: 1 << 30})}},
		{"header null key", rawBatch{count: 1, area: records(rawRecordSpec{keyLen: -1, valueLen: -1, nHeaders: 1,
			headers: headerArea([]byte{1}, []byte{0})})}},
		{"header value past record", rawBatch{count: 1, area: records(rawRecordSpec{keyLen: -1, valueLen: -1, nHeaders: 1,
			headers: headerArea([]byte{2, 'k'}, []byte{8, 'v'})})}},
		{"offset delta beyond int32", rawBatch{count: 1, area: records(rawRecordSpec{offDelta: 1 << 33, keyLen: -1, valueLen: -1})}},
		{"overlong varint", rawBatch{count: 1, area: []byte{22, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 1, 1, 0}}},
		{"empty area", rawBatch{count: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			batch := tt.rb.frame()
			if _, err := CheckFrame(batch); err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("CheckFrame: %v", err)
			}
			if _, err := ValidateRecords(batch); err == nil {
				t.Error("ValidateRecords accepted it")
			}
			if _, err := Records(batch, 1<<20); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Records: %v, want ErrCorrupt", err)
			}
			var br BatchReader
			var rec Record
			if br.Reset(batch, 1<<20) == nil {
				for br.Next(&rec) {
				}
			}
			if !errors.Is(br.Err(), ErrCorrupt) {
				t.Errorf("BatchReader: %v, want ErrCorrupt", br.Err())
			}

			// The same records compressed: Validate does not inflate, so
			// only Records and BatchReader see the damage.
			if len(tt.rb.area) == 0 || tt.rb.count < 0 || tt.rb.lastOffsetDelta < 0 {
				return
			}
			rb := tt.rb
			var err error
			if rb.area, err = Compress(CompressionZstd, nil, tt.rb.area); err != nil {
				t.Fatal(err)
			}
			rb.attrs = int16(CompressionZstd)
			batch = rb.frame()
			if _, err := Records(batch, 1<<20); !errors.Is(err, ErrCorrupt) {
				t.Errorf("zstd: Records: %v, want ErrCorrupt", err)
			}
		})
	}

	t.Run("valid hand-framed batch", func(t *testing.T) {
		batch := rawBatch{lastOffsetDelta: 2, count: 3, area: three}.frame()
		if _, err := Validate(batch); err != nil {
			t.Fatalf("Validate: %v", err)
		}
		if recs, err := Records(batch, 1<<20); err != nil || len(recs) != 3 {
			t.Fatalf("Records: %d, %v", len(recs), err)
		}
	})

	t.Run("compacted batch", func(t *testing.T) {
		// Compaction leaves gaps in offset deltas and keeps the last
		// offset delta: Records reads it, Validate (producer batches)
		// does not accept it.
		batch := rawBatch{baseOffset: 100, lastOffsetDelta: 9, count: 2, area: records(okRecord(3), okRecord(7))}.frame()
		recs, err := Records(batch, 1<<20)
		if err != nil || len(recs) != 2 || recs[0].Offset != 103 || recs[1].Offset != 107 {
			t.Fatalf("Records: %+v, %v", recs, err)
		}
		if _, err := Validate(batch); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Validate: %v, want ErrCorrupt", err)
		}
	})

	t.Run("empty batch", func(t *testing.T) {
		batch := rawBatch{lastOffsetDelta: 0, count: 0}.frame()
		if recs, err := Records(batch, 1<<20); err != nil || len(recs) != 0 {
			t.Fatalf("Records: %d, %v", len(recs), err)
		}
		if _, err := Validate(batch); !errors.Is(err, ErrEmptyBatch) {
			t.Fatalf("Validate: %v, want ErrEmptyBatch", err)
		}
	})

	t.Run("unknown codec", func(t *testing.T) {
		batch := rawBatch{attrs: 5, count: 3, lastOffsetDelta: 2, area: three}.frame()
		if _, err := Validate(batch); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Validate: %v", err)
		}
		if _, err := Records(batch, 1<<20); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Records: %v", err)
		}
	})

	t.Run("size limit", func(t *testing.T) {
		batch := mustBuild(t, CompressionGzip, Record{Value: make([]byte, 1<<20)})
		if _, err := Records(batch, 64<<10); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("Records: %v, want ErrTooLarge", err)
		}
	})
}

func TestBatches(t *testing.T) {
	var buf []byte
	var want []int64
	next := int64(0)
	for i, c := range codecs {
		recs := make([]Record, i+1)
		for j := range recs {
			recs[j] = Record{Value: []byte(fmt.Sprintf("v%d-%d", i, j))}
		}
		b := mustBuild(t, c, recs...)
		SetBaseOffset(b, next)
		want = append(want, next)
		next += int64(len(recs))
		buf = append(buf, b...)
	}
	whole := len(buf)
	partial := mustBuild(t, CompressionNone, Record{Value: []byte("partial")})

	tests := []struct {
		name    string
		buf     []byte
		want    []int64
		consume int
		err     error
	}{
		{"whole batches", buf, want, whole, nil},
		{"empty", nil, nil, 0, nil},
		{"partial trailing batch", append(bytes.Clone(buf), partial[:len(partial)-1]...), want, whole, nil},
		{"partial length field", append(bytes.Clone(buf), partial[:5]...), want, whole, nil},
		{"partial header", append(bytes.Clone(buf), partial[:30]...), want, whole, nil},
		{"corrupt trailing batch", append(bytes.Clone(buf), func() []byte { p := bytes.Clone(partial); p[len(p)-1]++; return p }()...), want, whole, ErrChecksum},
		{"bad length field", append(bytes.Clone(buf), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5), want, whole, ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []int64
			s := Batches(tt.buf)
			for s.Next() {
				h := s.Header()
				if len(s.Batch()) != h.Size() {
					t.Fatalf("batch of %d bytes, header says %d", len(s.Batch()), h.Size())
				}
				if _, err := Validate(s.Batch()); err != nil {
					t.Fatalf("Validate: %v", err)
				}
				got = append(got, h.BaseOffset)
			}
			if !errors.Is(s.Err(), tt.err) || (tt.err == nil && s.Err() != nil) {
				t.Fatalf("Err %v, want %v", s.Err(), tt.err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("base offsets %v, want %v", got, tt.want)
			}
			if s.Consumed() != tt.consume {
				t.Fatalf("Consumed %d, want %d", s.Consumed(), tt.consume)
			}
			if s.Next() {
				t.Fatal("Next after the end returned true")
			}
		})
	}
}

// TestValidateCountMismatch checks that the cheap Validate (length prefixes
// only) still catches record-count mismatches in uncompressed batches whose
// CRC was recomputed.
func TestValidateCountMismatch(t *testing.T) {
	three := append(append(okRecord(0).encode(), okRecord(1).encode()...), okRecord(2).encode()...)
	tests := []struct {
		name string
		rb   rawBatch
	}{
		{"count above records", rawBatch{lastOffsetDelta: 3, count: 4, area: three}},
		{"count below records", rawBatch{lastOffsetDelta: 1, count: 2, area: three}},
		{"count huge", rawBatch{lastOffsetDelta: 1<<31 - 2, count: 1<<31 - 1, area: three}},
		{"trailing byte", rawBatch{lastOffsetDelta: 2, count: 3, area: append(bytes.Clone(three), 0)}},
		{"length prefix past end", rawBatch{lastOffsetDelta: 0, count: 1, area: rawRecordSpec{keyLen: -1, valueLen: -1, lenAdjust: 5}.encode()}},
		{"no records", rawBatch{lastOffsetDelta: 0, count: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			batch := tt.rb.frame()
			if _, err := CheckFrame(batch); err != nil {
				t.Fatalf("CheckFrame: %v (the frame itself must be sound)", err)
			}
			if _, err := Validate(batch); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Validate: %v, want ErrCorrupt", err)
			}
		})
	}
}

// BatchScanner.Read reads each scanned batch as BatchReader.Reset does,
// for every codec, and refuses to read when there is no current batch.
func TestBatchScannerRead(t *testing.T) {
	var buf []byte
	var want [][]Record
	for i, c := range codecs {
		recs := []Record{{Key: []byte("k"), Value: []byte(fmt.Sprint("v", i)), Timestamp: 5,
			Headers: []RecordHeader{{Key: "h", Value: []byte("x")}}}, {Value: bytes.Repeat([]byte{byte(i)}, 300), Timestamp: 6}}
		b := mustBuild(t, c, recs...)
		got, err := Records(b, 1<<20)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		buf = append(buf, b...)
		want = append(want, got)
	}
	sc := Batches(buf)
	var br BatchReader
	if err := sc.Read(&br, 1<<20); err == nil || br.Next(new(Record)) {
		t.Fatal("Read before Next: no error, or a record")
	}
	n := 0
	for sc.Next() {
		if err := sc.Read(&br, 1<<20); err != nil {
			t.Fatalf("batch %d: %v", n, err)
		}
		if br.Header() != sc.Header() {
			t.Fatalf("batch %d: header %+v, scanned %+v", n, br.Header(), sc.Header())
		}
		var rec Record
		for i := 0; br.Next(&rec); i++ {
			w := want[n][i]
			if rec.Offset != w.Offset || !bytes.Equal(rec.Key, w.Key) || !bytes.Equal(rec.Value, w.Value) || len(rec.Headers) != len(w.Headers) {
				t.Fatalf("batch %d record %d: %+v, want %+v", n, i, rec, w)
			}
		}
		if br.Err() != nil {
			t.Fatalf("batch %d: %v", n, br.Err())
		}
		n++
	}
	if sc.Err() != nil || n != len(codecs) {
		t.Fatalf("%d batches, %v", n, sc.Err())
	}
	// Past the last batch there is none to read.
	if err := sc.Read(&br, 1<<20); err == nil {
		t.Fatal("Read after the last batch: no error")
	}
}
