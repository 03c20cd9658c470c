// This file holds the benchmarks: Append of 100-byte records into 16 KiB
// batches (each codec), Core.Send of keyed and keyless records, and the
// cost of idempotence (a plain and an idempotent Accumulator timed in the
// same run), with every full batch sent and completed at once so memory
// stays bounded.

package producer

import (
	"fmt"
	"testing"
	"time"

	"github.com/actorlog/actorlog/storage/record"
)

// drain sends and completes every ready batch.
func drain(a *Accumulator, now time.Time) {
	for _, b := range a.Ready(now) {
		drainScratch = a.CompleteAppend(drainScratch[:0], b.ID, 0, nil) // as the actor reuses its slice
		clear(drainScratch)
	}
}

var drainScratch []Delivery

func BenchmarkAppend(b *testing.B) {
	for _, c := range codecs {
		b.Run(c.String(), func(b *testing.B) {
			a := newAcc(b, Config{BatchSize: 16 << 10, Linger: time.Hour, DeliveryTimeout: 2 * time.Hour, Compression: c})
			v := value(0, 100)
			report := new(int) // a pointer report costs no allocation
			now := t0
			b.SetBytes(int64(len(v)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := a.Append(now, tpA, record.Record{Value: v, Timestamp: 1}, report)
				if err != nil {
					b.Fatal(err)
				}
				if res.BatchFull {
					drain(a, now)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mrecords/s")
		})
	}
}

func BenchmarkSend(b *testing.B) {
	const partitions = 12
	for _, keyed := range []bool{false, true} {
		b.Run(fmt.Sprintf("keyed=%v", keyed), func(b *testing.B) {
			c := newCore(b, Config{BatchSize: 16 << 10, Linger: time.Hour, DeliveryTimeout: 2 * time.Hour})
			v := value(0, 100)
			keys := make([][]byte, 64)
			for i := range keys {
				keys[i] = []byte(fmt.Sprintf("user-%04d", i))
			}
			report := new(int)
			now := t0
			b.SetBytes(int64(len(v)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rec := record.Record{Value: v, Timestamp: 1}
				if keyed {
					rec.Key = keys[i%len(keys)]
				}
				_, res, err := c.Send(now, "topic", partitions, AnyPartition, rec, report)
				if err != nil {
					b.Fatal(err)
				}
				if res.BatchFull {
					drain(c.Accumulator, now)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mrecords/s")
		})
	}
}

// appendRecords appends n 100-byte records to a, sending and completing
// every full batch, and returns the time it took.
func appendRecords(b *testing.B, a *Accumulator, n int) time.Duration {
	v := value(0, 100)
	report := new(int)
	start := time.Now()
	for i := 0; i < n; i++ {
		res, err := a.Append(t0, tpA, record.Record{Value: v, Timestamp: 1}, report)
		if err != nil {
			b.Fatal(err)
		}
		if res.BatchFull {
			drain(a, t0)
		}
	}
	return time.Since(start)
}

// BenchmarkIdempotence times the same records through a plain and an
// idempotent Accumulator, alternating rounds so both see the same machine
// load, and reports each one's rate and their ratio (idem/plain: 1 means
// idempotence costs nothing). The idempotent one stamps each batch's
// producer id and sequence when it is sent, which rewrites the header and
// recomputes the CRC.
func BenchmarkIdempotence(b *testing.B) {
	for _, c := range []record.Compression{record.CompressionNone, record.CompressionZstd} {
		b.Run(c.String(), func(b *testing.B) {
			cfg := Config{BatchSize: 16 << 10, Linger: time.Hour, DeliveryTimeout: 2 * time.Hour, Compression: c}
			cfg.Idempotence = IdempotenceOff
			plain := newAcc(b, cfg)
			cfg.Idempotence = IdempotenceOn
			idem := newAcc(b, cfg)
			appendRecords(b, plain, 10_000) // warm the free lists
			appendRecords(b, idem, 10_000)
			var tPlain, tIdem time.Duration
			b.SetBytes(200) // each op appends one record to each
			b.ReportAllocs()
			b.ResetTimer()
			const round = 20_000
			for done, r := 0, 0; done < b.N; r++ {
				n := min(round, b.N-done)
				if r%2 == 0 {
					tPlain += appendRecords(b, plain, n)
					tIdem += appendRecords(b, idem, n)
				} else {
					tIdem += appendRecords(b, idem, n)
					tPlain += appendRecords(b, plain, n)
				}
				done += n
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/tPlain.Seconds()/1e6, "plain-Mrecords/s")
			b.ReportMetric(float64(b.N)/tIdem.Seconds()/1e6, "idem-Mrecords/s")
			b.ReportMetric(tPlain.Seconds()/tIdem.Seconds(), "idem/plain")
		})
	}
}

// BenchmarkAppendFull is issue 15's client load on the Accumulator alone:
// 1 KiB records into 1 MiB uncompressed batches, RecycleSent as the
// producer actor sets it, and the partition's MaxInFlight batches answered
// in a burst whenever all are in flight. B/op shows the batch buffers
// allocated per record (0 once the free list holds every batch in flight).
func BenchmarkAppendFull(b *testing.B) {
	a := newAcc(b, Config{BatchSize: 1 << 20, Linger: time.Hour, DeliveryTimeout: 2 * time.Hour, RecycleSent: true})
	v := value(0, 1<<10)
	report := new(int)
	var inflight []BatchID
	step := func() {
		res, err := a.Append(t0, tpA, record.Record{Value: v, Timestamp: 1}, report)
		if err != nil {
			b.Fatal(err)
		}
		if !res.BatchFull {
			return
		}
		if len(inflight) >= a.Config().MaxInFlight {
			for _, id := range inflight {
				a.Complete(id, 0, nil)
			}
			inflight = inflight[:0]
		}
		for _, rb := range a.Ready(t0) {
			inflight = append(inflight, rb.ID)
		}
	}
	for range 20_000 { // warm the free lists
		step()
	}
	b.SetBytes(int64(len(v)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		step()
	}
}
