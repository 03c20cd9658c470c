// This file holds the Partitioner: Kafka's default partitioning of records,
// murmur2 for keyed records (through franz-go's kgo, which implements the
// Java client's function) and a per-topic sticky partition for keyless ones
// (KIP-480).

package producer

import (
	"fmt"
	"math/rand/v2"

	"github.com/actorlog/actorlog/messages"
)

// Partitioner chooses the partition of each record as Kafka's Java producer
// does by default:
//
//   - an explicit partition wins (it must be in [0, numPartitions));
//   - a keyed record (non-nil key, including an empty one) goes to
//     toPositive(murmur2(key)) % numPartitions, so that keys land where
//     Kafka would put them (Kafka's DefaultPartitioner and, since 3.3,
//     BuiltInPartitioner.partitionForKey);
//   - a keyless record goes to its topic's sticky partition, which changes
//     only when OnNewBatch reports that a batch for it is complete (KIP-480,
//     Kafka 2.4-3.2; Kafka 3.3's KIP-794 instead switches after batch.size
//     bytes, weighted by queue length, which this Partitioner does not do).
//
// Keyed placement is messages.KeyPartitioner (murmur2 from franz-go's kgo),
// shared with the group coordinators, which place groups the same way.
//
// The zero Partitioner is not usable; call NewPartitioner. A Partitioner is
// not safe for concurrent use: it is owned by the producer actor.
type Partitioner struct {
	keyed  *messages.KeyPartitioner
	rnd    *rand.Rand // nil: math/rand/v2's global source
	sticky map[string]*int32
	// last and lastSticky remember the last topic asked about: a producer
	// mostly writes one topic, and a map lookup per record was a
	// noticeable part of its CPU.
	last       string
	lastSticky *int32
}

// NewPartitioner returns a Partitioner that draws keyless partitions from rnd
// (inject a seeded source in tests), or from math/rand/v2's randomly seeded
// global source when rnd is nil.
func NewPartitioner(rnd *rand.Rand) *Partitioner {
	return &Partitioner{
		keyed:  messages.NewKeyPartitioner(),
		rnd:    rnd,
		sticky: make(map[string]*int32),
	}
}

// stickyOf returns topic's sticky partition cell, nil if it has none.
func (p *Partitioner) stickyOf(topic string) *int32 {
	if p.lastSticky != nil && topic == p.last {
		return p.lastSticky
	}
	cur := p.sticky[topic]
	if cur != nil {
		p.last, p.lastSticky = topic, cur
	}
	return cur
}

// setSticky makes part topic's sticky partition.
func (p *Partitioner) setSticky(topic string, part int32) {
	if cur := p.stickyOf(topic); cur != nil {
		*cur = part
		return
	}
	p.sticky[topic] = &part
}

// Partition returns the partition of a record of topic with the given key:
// explicit when it is not AnyPartition, else by key, else the topic's sticky
// partition (chosen at random on the topic's first keyless record, or when
// the partition count shrank below it). A nil key is Kafka's null key; an
// empty non-nil key is hashed.
//
// It fails with an error wrapping ErrNoPartitions when numPartitions < 1, and
// ErrInvalidPartition when explicit is neither AnyPartition nor in
// [0, numPartitions).
func (p *Partitioner) Partition(topic string, key []byte, explicit int32, numPartitions int) (int32, error) {
	if numPartitions < 1 {
		return 0, fmt.Errorf("%w: topic %q has %d", ErrNoPartitions, topic, numPartitions)
	}
	if explicit != AnyPartition {
		if explicit < 0 || int64(explicit) >= int64(numPartitions) {
			return 0, fmt.Errorf("%w: partition %d of topic %q, which has %d", ErrInvalidPartition, explicit, topic, numPartitions)
		}
		return explicit, nil
	}
	if key != nil {
		return p.KeyPartition(key, numPartitions), nil
	}
	if cur := p.stickyOf(topic); cur != nil && int(*cur) < numPartitions {
		return *cur, nil
	}
	cur := int32(p.intN(numPartitions))
	p.setSticky(topic, cur)
	return cur, nil
}

// KeyPartition returns Kafka's partition for key among numPartitions (> 0):
// toPositive(murmur2(key)) % numPartitions. It panics if numPartitions < 1.
func (p *Partitioner) KeyPartition(key []byte, numPartitions int) int32 {
	return p.keyed.Partition(key, numPartitions)
}

// OnNewBatch tells the Partitioner that the batch on partition prev of topic
// is complete and a keyless record would have to open a new one. If prev is
// the topic's sticky partition (or the topic has none), the sticky partition
// moves to a partition drawn uniformly from the others (KIP-480's
// StickyPartitionCache.nextPartition); otherwise it has already moved and
// nothing changes. With one partition it stays 0.
//
// Core.Send calls it at the right moment; a shell that uses the Partitioner
// on its own calls it when a keyless record's sticky partition has no open
// batch that the record fits into.
func (p *Partitioner) OnNewBatch(topic string, prev int32, numPartitions int) {
	if numPartitions < 1 {
		return
	}
	if cur := p.stickyOf(topic); cur != nil && *cur != prev {
		return
	}
	next := int32(0)
	switch {
	case prev < 0 || int(prev) >= numPartitions:
		next = int32(p.intN(numPartitions))
	case numPartitions > 1:
		// Uniform over the numPartitions-1 partitions other than prev.
		next = int32(p.intN(numPartitions - 1))
		if next >= prev {
			next++
		}
	}
	p.setSticky(topic, next)
}

// Forget drops topic's sticky partition (for example when the topic is
// deleted), so that the map of sticky partitions does not grow without end.
func (p *Partitioner) Forget(topic string) {
	delete(p.sticky, topic)
	if topic == p.last {
		p.last, p.lastSticky = "", nil
	}
}

func (p *Partitioner) intN(n int) int {
	if p.rnd == nil {
		return rand.IntN(n)
	}
	return p.rnd.IntN(n)
}
