// This file holds the benchmarks: Append of 100-byte records into 16 KiB
// batches (each codec), and Core.Send of keyed and keyless records, with
// every full batch sent and completed at once so memory stays bounded.

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
		a.Complete(b.ID, 0, nil)
	}
}

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
