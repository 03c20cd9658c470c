// This file holds BenchmarkWakePartitions: the producer actor's per-record
// path (Append, then the wake sequence Expire, Ready, NextDeadline) on a
// fake clock at a fixed rate, spread over 3 or 1,000 partitions, to show
// that its cost does not grow with the number of partitions.

package producer

import (
	"fmt"
	"testing"
	"time"

	"github.com/actorlog/actorlog/storage/record"
)

// BenchmarkWakePartitions appends 100-byte records at 20,000 records/s of
// fake time, round-robin over the partitions (as keyed records spread by
// murmur2), with the default config (5 ms linger, idempotent) and a fake
// leader that answers every send 1 ms after it. Each record is followed
// by what the producer actor does for one Send message: Ready on a full
// batch, NextDeadline on a new one, then wake's Expire, Ready and
// NextDeadline.
func BenchmarkWakePartitions(b *testing.B) {
	for _, parts := range []int{3, 1000} {
		b.Run(fmt.Sprintf("partitions=%d", parts), func(b *testing.B) {
			a := newAcc(b, Config{})
			tps := make([]TopicPartition, parts)
			for i := range tps {
				tps[i] = TopicPartition{Topic: "t", Partition: int32(i)}
			}
			v := value(0, 100)
			report := new(int)
			type sent struct {
				id BatchID
				at time.Time
			}
			var flight []sent
			now := t0
			const step = 50 * time.Microsecond // 20,000 records/s
			send := func() {
				for _, rb := range a.Ready(now) {
					flight = append(flight, sent{rb.ID, now})
				}
			}
			b.SetBytes(int64(len(v)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				now = now.Add(step)
				n := 0
				for n < len(flight) && !now.Before(flight[n].at.Add(time.Millisecond)) {
					if d := a.Complete(flight[n].id, 0, nil); d == nil {
						b.Fatalf("send %d: no deliveries", flight[n].id)
					}
					n++
				}
				flight = flight[:copy(flight, flight[n:])]
				res, err := a.Append(now, tps[i%parts], record.Record{Value: v, Timestamp: 1}, report)
				if err != nil {
					b.Fatal(err)
				}
				switch {
				case res.BatchFull:
					send()
				case res.NewBatch:
					a.NextDeadline()
				}
				if d := a.Expire(now); d != nil {
					b.Fatalf("%d records expired", len(d))
				}
				send()
				if _, ok := a.NextDeadline(); !ok && a.Pending() > 0 {
					b.Fatal("records pending without a deadline")
				}
			}
		})
	}
}
