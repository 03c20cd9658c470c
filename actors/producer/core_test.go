// This file tests Core.Send: KIP-480 stickiness of keyless records across
// batches, and that keyed and explicit records keep their partitions.

package producer

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/actorlog/actorlog/storage/record"
)

func newCore(t testing.TB, cfg Config) *Core {
	t.Helper()
	c, err := NewCore(cfg, rand.New(rand.NewPCG(11, 12)))
	if err != nil {
		t.Fatalf("NewCore: %v", err)
	}
	c.Accumulator.SetProducerID(testPID, 0)
	return c
}

func TestSendStickySwitchesOnlyOnNewBatch(t *testing.T) {
	const perBatch, n = 10, 6
	c := newCore(t, Config{BatchSize: record.HeaderSize + perBatch*size100, Linger: time.Hour, DeliveryTimeout: 2 * time.Hour})
	var parts []int32 // partition of each record
	for i := 0; i < 5*perBatch+3; i++ {
		tp, res, err := c.Send(t0, "t", n, AnyPartition, record.Record{Value: value(i, 100), Timestamp: 1}, i)
		if err != nil {
			t.Fatal(err)
		}
		if res.NewBatch != (i%perBatch == 0) || res.BatchFull != (i%perBatch == perBatch-1) {
			t.Fatalf("record %d on %s: %+v", i, tp, res)
		}
		parts = append(parts, tp.Partition)
	}
	for i := 1; i < len(parts); i++ {
		same := parts[i] == parts[i-1]
		if newBatch := i%perBatch == 0; same == newBatch {
			t.Fatalf("record %d went to %d after %d (new batch: %v): partitions %v", i, parts[i], parts[i-1], newBatch, parts)
		}
	}
	// Every closed batch is full: no record was stranded in a batch of its
	// own on the old sticky partition.
	for _, b := range c.Accumulator.Ready(t0) {
		if b.Records != perBatch {
			t.Errorf("batch on %s with %d records", b.TopicPartition, b.Records)
		}
	}
}

func TestSendStickyMovesAfterLinger(t *testing.T) {
	c := newCore(t, Config{Linger: 10 * time.Millisecond})
	tp1, _, _ := c.Send(t0, "t", 4, AnyPartition, record.Record{Value: []byte("a")}, 0)
	tp2, res, _ := c.Send(ms(1), "t", 4, AnyPartition, record.Record{Value: []byte("b")}, 1)
	if tp2 != tp1 || res.NewBatch {
		t.Fatalf("second record went to %s (first %s), %+v", tp2, tp1, res)
	}
	if rb := c.Accumulator.Ready(ms(10)); len(rb) != 1 || rb[0].Records != 2 {
		t.Fatalf("Ready: %+v", rb)
	}
	// The sticky partition's batch was sent: the next record starts a new
	// batch, so it moves to another partition.
	tp3, res, _ := c.Send(ms(11), "t", 4, AnyPartition, record.Record{Value: []byte("c")}, 2)
	if tp3 == tp1 || !res.NewBatch {
		t.Errorf("after the batch was sent, record went to %s (was %s), %+v", tp3, tp1, res)
	}
}

func TestSendKeyedAndExplicit(t *testing.T) {
	c := newCore(t, Config{BatchSize: 1000, Linger: time.Hour, DeliveryTimeout: 2 * time.Hour})
	sticky, _, _ := c.Send(t0, "t", 12, AnyPartition, record.Record{Value: value(0, 10)}, 0)
	if sticky.Partition == 6 {
		t.Fatal("the seeded sticky partition is the key's: pick another seed")
	}
	for i := 0; i < 20; i++ { // closes several batches on partition 6
		tp, _, err := c.Send(t0, "t", 12, AnyPartition, record.Record{Key: []byte("foobar"), Value: value(i, 150)}, i)
		if err != nil || tp.Partition != 6 {
			t.Fatalf("keyed record %d: %s, %v", i, tp, err)
		}
	}
	tp, _, err := c.Send(t0, "t", 12, 3, record.Record{Key: []byte("foobar")}, 0)
	if err != nil || tp.Partition != 3 {
		t.Fatalf("explicit: %s, %v", tp, err)
	}
	// Keyed and explicit traffic did not move the sticky partition; the
	// sticky batch is still open and has room, so the record joins it.
	if got, _, _ := c.Send(t0, "t", 12, AnyPartition, record.Record{Value: []byte("x")}, 0); got != sticky {
		t.Errorf("keyless record went to %s, sticky was %s", got, sticky)
	}
	if _, _, err := c.Send(t0, "t", 12, 12, record.Record{}, 0); !errors.Is(err, ErrInvalidPartition) {
		t.Errorf("partition 12 of 12: %v", err)
	}
	if _, _, err := c.Send(t0, "t", 0, AnyPartition, record.Record{}, 0); !errors.Is(err, ErrNoPartitions) {
		t.Errorf("no partitions: %v", err)
	}
	if _, _, err := c.Send(t0, "t", 12, AnyPartition, record.Record{Value: make([]byte, 2<<20)}, 0); !errors.Is(err, ErrRecordTooLarge) {
		t.Errorf("2 MiB record: %v", err)
	}
}

func TestSendRecordThatDoesNotFitMovesOn(t *testing.T) {
	c := newCore(t, Config{BatchSize: record.HeaderSize + 10*size100, Linger: time.Hour, LingerWhenIdle: true, DeliveryTimeout: 2 * time.Hour})
	var first TopicPartition
	for i := 0; i < 9; i++ {
		tp, res, err := c.Send(t0, "t", 8, AnyPartition, record.Record{Value: value(i, 100), Timestamp: 1}, i)
		if err != nil || res.BatchFull || (i > 0 && tp != first) {
			t.Fatalf("record %d: %s, %+v, %v", i, tp, res, err)
		}
		first = tp
	}
	// 300 bytes do not fit in the 108 left: the batch closes (as Kafka's
	// tryAppend closes it) and the record opens a batch elsewhere.
	tp, res, err := c.Send(t0, "t", 8, AnyPartition, record.Record{Value: value(9, 300), Timestamp: 1}, 9)
	if err != nil || tp == first || !res.BatchFull || !res.NewBatch {
		t.Fatalf("big record: %s (sticky was %s), %+v, %v", tp, first, res, err)
	}
	rb := c.Accumulator.Ready(t0)
	if len(rb) != 1 || rb[0].TopicPartition != first || rb[0].Records != 9 {
		t.Fatalf("Ready: %+v", rb)
	}
	// A record too large moves nothing.
	if _, _, err := c.Send(t0, "t", 8, AnyPartition, record.Record{Value: make([]byte, 2<<20)}, 0); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("2 MiB record: %v", err)
	}
	if got, res, _ := c.Send(t0, "t", 8, AnyPartition, record.Record{Value: []byte("x"), Timestamp: 1}, 10); got != tp || res.NewBatch {
		t.Errorf("after a rejected record the sticky partition is %s, want %s (%+v)", got, tp, res)
	}
}
