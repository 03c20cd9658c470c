// placement.go holds where a keyed record goes: Kafka's
// toPositive(murmur2(key)) % partitions. The producer places keyed records
// with it and the group coordinators place groups on the offsets topic with
// it (DESIGN §6), so both live here, below client and server packages.

package messages

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// KeyPartitioner computes Kafka's partition for a key. murmur2 comes from
// franz-go: kgo.StickyKeyPartitioner(nil) hashes keys with its internal
// murmur2 and Kafka's toPositive-then-mod, and its tests pin Kafka's own
// UtilsTest.testMurmur2 vectors. kgo does not export murmur2 itself, so a
// KeyPartitioner keeps one kgo TopicPartitioner (keyed placement ignores
// the topic) and a scratch kgo.Record whose Key it sets for each call,
// which keeps the call free of allocations.
//
// The zero KeyPartitioner is not usable; call NewKeyPartitioner. It is not
// safe for concurrent use.
type KeyPartitioner struct {
	keyed   kgo.TopicPartitioner
	scratch kgo.Record // Key set for the duration of one call
}

// NewKeyPartitioner returns a KeyPartitioner.
func NewKeyPartitioner() *KeyPartitioner {
	return &KeyPartitioner{keyed: kgo.StickyKeyPartitioner(nil).ForTopic("")}
}

// Partition returns Kafka's partition for key among numPartitions:
// toPositive(murmur2(key)) % numPartitions. It panics if numPartitions < 1.
func (p *KeyPartitioner) Partition(key []byte, numPartitions int) int32 {
	if numPartitions < 1 {
		panic("messages: KeyPartition with no partitions")
	}
	p.scratch.Key = key
	n := p.keyed.Partition(&p.scratch, numPartitions)
	p.scratch.Key = nil
	return int32(n)
}

// keyPartitioners recycles KeyPartitioners for KeyPartition: a new one
// costs a kgo partitioner's allocations, and the group coordinators place
// a group at every commit.
var keyPartitioners = sync.Pool{New: func() any { return NewKeyPartitioner() }}

// KeyPartition is NewKeyPartitioner().Partition(key, numPartitions) with a
// pooled partitioner: safe for concurrent use, free of allocations. It
// panics if numPartitions < 1.
func KeyPartition(key []byte, numPartitions int) int32 {
	if numPartitions < 1 {
		panic("messages: KeyPartition with no partitions")
	}
	p := keyPartitioners.Get().(*KeyPartitioner)
	defer keyPartitioners.Put(p)
	return p.Partition(key, numPartitions)
}
