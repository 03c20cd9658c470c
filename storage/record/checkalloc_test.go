// This file measures what the leader's append check (CheckRecords) costs
// and allocates on the batches a franz-go producer sends by default: about
// 1 MiB of 1 KiB incompressible records, snappy compressed as a raw block
// (kgo) or in xerial framing (Java, our Builder). The decompression buffer
// is pooled, so steady state must allocate nothing; the test below keeps
// that from regressing (issue 13's profile: GC was the host's top cost).

package record

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// kgoBatchRecords is n records of size random (incompressible) bytes, as
// kafkabench produces them.
func kgoBatchRecords(n, size int) []Record {
	rng := rand.New(rand.NewPCG(13, 1))
	recs := make([]Record, n)
	for i := range recs {
		v := make([]byte, size)
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		recs[i] = Record{Value: v, Timestamp: 1_700_000_000_000 + int64(i)}
	}
	return recs
}

// snappyCheckBatches are the two snappy framings of ~1 MiB of 1 KiB records.
func snappyCheckBatches(tb testing.TB) map[string][]byte {
	recs := kgoBatchRecords(1000, 1024)
	return map[string][]byte{
		"kgo-raw-block": kmsgBatch(tb, CompressionSnappy, recs),
		"xerial":        mustBuild(tb, CompressionSnappy, recs...),
	}
}

// BenchmarkCheckRecordsSnappy1KiB is CheckRecords on one ~1 MiB snappy
// batch of 1 KiB records, as Log.Append runs it on every produced batch.
func BenchmarkCheckRecordsSnappy1KiB(b *testing.B) {
	for name, batch := range snappyCheckBatches(b) {
		b.Run(name, func(b *testing.B) {
			h, err := ValidateHeader(batch)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				if err := CheckRecords(batch, &h, MaxInflatedBytes); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCheckRecordsSnappy1KiBParallel is the same check from every
// core at once, as concurrent partitions' appends run it: the pool must
// serve each its own buffer.
func BenchmarkCheckRecordsSnappy1KiBParallel(b *testing.B) {
	batch := snappyCheckBatches(b)["kgo-raw-block"]
	h, err := ValidateHeader(batch)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := CheckRecords(batch, &h, MaxInflatedBytes); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// TestCheckRecordsSnappyAllocatesNothing: once the pool holds a buffer,
// checking a ~1 MiB snappy batch (either framing) allocates nothing, and
// a batch with one damaged record is still refused through the pooled
// buffer. Skipped under -race, whose sync.Pool drops items at random.
func TestCheckRecordsSnappyAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under -race")
	}
	for name, batch := range snappyCheckBatches(t) {
		h, err := ValidateHeader(batch)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckRecords(batch, &h, MaxInflatedBytes); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// 20 rounds: a garbage collection during the run may empty the
		// pool once (one allocation, 0.05 on average).
		allocs := testing.AllocsPerRun(20, func() {
			if err := CheckRecords(batch, &h, MaxInflatedBytes); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		})
		if allocs > 0.1 {
			t.Errorf("%s: CheckRecords of a %d-byte snappy batch: %.2f allocations on average, want 0", name, len(batch), allocs)
		}
		// A header claiming one record fewer than the inflated area
		// holds is refused, and the pooled buffer serves the next
		// check unharmed.
		short := h
		short.RecordCount--
		short.LastOffsetDelta--
		if err := CheckRecords(batch, &short, MaxInflatedBytes); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: a record count one short: %v, want ErrCorrupt", name, err)
		}
		if err := CheckRecords(batch, &h, MaxInflatedBytes); err != nil {
			t.Errorf("%s: after a refused batch: %v", name, err)
		}
	}
}
