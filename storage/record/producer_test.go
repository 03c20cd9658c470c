// This file tests SetProducer: the rewritten fields read back, the CRC
// stays valid, and the batch equals one built with the same options.

package record

import (
	"bytes"
	"math"
	"testing"
)

func TestSetProducer(t *testing.T) {
	recs := []Record{{Value: []byte("a"), Timestamp: 10}, {Key: []byte("k"), Value: []byte("b"), Timestamp: 20}}
	tests := []struct {
		name  string
		pid   int64
		epoch int16
		seq   int32
	}{
		{"zeroes", 0, 0, 0},
		{"large", 1 << 40, math.MaxInt16, math.MaxInt32},
		{"none", -1, -1, -1},
	}
	for _, c := range codecs {
		for _, tt := range tests {
			t.Run(c.String()+"/"+tt.name, func(t *testing.T) {
				batch := mustBuild(t, c, recs...)
				SetProducer(batch, tt.pid, tt.epoch, tt.seq)
				h, err := Validate(batch)
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				if h.ProducerID != tt.pid || h.ProducerEpoch != tt.epoch || h.BaseSequence != tt.seq || h.RecordCount != 2 {
					t.Fatalf("header %+v", h)
				}
				b := NewBuilder(BuilderOptions{Compression: c, Idempotent: true, ProducerID: tt.pid, ProducerEpoch: tt.epoch, BaseSequence: tt.seq})
				for _, r := range recs {
					b.Append(r)
				}
				want, err := b.Build()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(batch, want) {
					t.Errorf("re-stamped batch differs from one built with the same producer fields")
				}
			})
		}
	}
}

// TestNoChecksumThenSetProducer: a batch built with NoChecksum fails
// validation (its CRC is left zero) until SetProducer stamps it, after
// which it is byte for byte the batch built with those fields and a CRC.
func TestNoChecksumThenSetProducer(t *testing.T) {
	recs := []Record{{Value: []byte("a"), Timestamp: 10}, {Key: []byte("k"), Value: []byte("b"), Timestamp: 20}}
	for _, c := range codecs {
		t.Run(c.String(), func(t *testing.T) {
			nb := NewBuilder(BuilderOptions{Compression: c, NoChecksum: true})
			wb := NewBuilder(BuilderOptions{Compression: c, Idempotent: true, ProducerID: 7, ProducerEpoch: 1, BaseSequence: 40})
			for _, r := range recs {
				nb.Append(r)
				wb.Append(r)
			}
			batch, err := nb.Build()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Validate(batch); err == nil {
				t.Fatal("a NoChecksum batch validated before it was stamped")
			}
			SetProducer(batch, 7, 1, 40)
			if _, err := Validate(batch); err != nil {
				t.Fatalf("stamped batch: %v", err)
			}
			want, err := wb.Build()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(batch, want) {
				t.Error("stamped NoChecksum batch differs from one built with the producer fields")
			}
		})
	}
}
