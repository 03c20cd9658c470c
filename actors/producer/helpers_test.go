// This file holds helpers shared by the package's tests: a fake clock
// origin, accumulator construction, record values, and decoding of the
// batches the accumulator hands out.

package producer

import (
	"fmt"
	"testing"
	"time"

	"github.com/actorlog/actorlog/storage/record"
)

// t0 is the fake clock's origin; tests advance it with Add, never sleep.
var t0 = time.UnixMilli(1_700_000_000_000)

// ms returns t0 plus d milliseconds.
func ms(d int) time.Time { return t0.Add(time.Duration(d) * time.Millisecond) }

var tpA = TopicPartition{Topic: "a", Partition: 0}
var tpB = TopicPartition{Topic: "a", Partition: 1}
var tpC = TopicPartition{Topic: "c", Partition: 0}

// codecs is every codec, for tests that run across all of them.
var codecs = []record.Compression{
	record.CompressionNone, record.CompressionGzip, record.CompressionSnappy,
	record.CompressionLZ4, record.CompressionZstd,
}

// testPID is the producer id newAcc and newCore give an idempotent
// Accumulator.
const testPID = 1000

// newAcc returns an Accumulator with cfg; an idempotent one already has
// producer id testPID, epoch 0.
func newAcc(t testing.TB, cfg Config) *Accumulator {
	t.Helper()
	a, err := NewAccumulator(cfg)
	if err != nil {
		t.Fatalf("NewAccumulator: %v", err)
	}
	a.SetProducerID(testPID, 0)
	return a
}

// value returns n bytes that identify i.
func value(i, n int) []byte {
	b := make([]byte, n)
	s := fmt.Sprintf("v%d-", i)
	for j := range b {
		b[j] = s[j%len(s)]
	}
	return b
}

// mustAppend appends a keyless record with value(i, n) and report i.
func mustAppend(t testing.TB, a *Accumulator, now time.Time, tp TopicPartition, i, n int) AppendResult {
	t.Helper()
	res, err := a.Append(now, tp, record.Record{Value: value(i, n), Timestamp: 1}, i)
	if err != nil {
		t.Fatalf("Append #%d to %s: %v", i, tp, err)
	}
	return res
}

// decode returns the records of a ready batch, checking its framing.
func decode(t testing.TB, rb ReadyBatch) []record.Record {
	t.Helper()
	recs, err := record.Records(rb.Bytes, 1<<30)
	if err != nil {
		t.Fatalf("batch %d of %s: %v", rb.ID, rb.TopicPartition, err)
	}
	if len(recs) != rb.Records || len(rb.Reports) != rb.Records {
		t.Fatalf("batch %d: %d records decoded, Records %d, %d reports", rb.ID, len(recs), rb.Records, len(rb.Reports))
	}
	return recs
}

// reportInts returns the int reports of a ready batch.
func reportInts(rb ReadyBatch) []int {
	out := make([]int, len(rb.Reports))
	for i, r := range rb.Reports {
		out[i] = r.(int)
	}
	return out
}

// deliveredInts returns the int reports of deliveries.
func deliveredInts(ds []Delivery) []int {
	out := make([]int, len(ds))
	for i, d := range ds {
		out[i] = d.Report.(int)
	}
	return out
}

// readyCopy returns a copy of Ready's result, which the next Ready reuses.
func readyCopy(a *Accumulator, now time.Time) []ReadyBatch {
	return append([]ReadyBatch(nil), a.Ready(now)...)
}
