// limits.go holds the cluster's limits on what one admin request, or one
// metadata record read from etcd, may ask of a host, so that none can take
// it down (issue 11):
//
//   - MaxPartitionsPerTopic (10000): a topic's partition count, checked by
//     ValidateTopic (writes and reads), AssignReplicas and the controller
//     before anything is allocated;
//   - the partition replicas one host may hold, derived from the process's
//     RLIMIT_NOFILE (PartitionCapacity): every replica keeps
//     DescriptorsPerPartition descriptors open, and ReservedDescriptors
//     stay free for the embedded etcd (which exits on EMFILE), client
//     connections and everything else. The controller refuses topics and
//     partitions that would take a host past it (CheckHostCapacity); each
//     broker runs at most that many replicas whatever the metadata says;
//   - the connections a process holds open (netlimit.DefaultMaxConnections),
//     half of the reserved descriptors, enforced by cluster/netlimit on
//     every listener;
//   - MinSegmentBytes (1 MiB, Kafka 4's minimum, KIP-1030): the smallest
//     segment.bytes a topic may have, so a topic cannot hold one segment
//     (three descriptors) per record;
//   - MaxMessageBytesLimit (64 MiB): the largest max.message.bytes a user
//     may set, so every batch a leader accepts can cross the actor remote.
//
// Everything here is pure, except HostPartitionCapacity (reads the
// process's limit) and the test escape hatch SetMinSegmentBytes.

package cluster

import (
	"fmt"
	"math"
	"slices"
	"sync/atomic"

	"github.com/actorlog/actorlog/cluster/netlimit"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage/record"
)

// minStorageSegmentBytes is the smallest segment the log itself accepts.
const minStorageSegmentBytes = record.HeaderSize

// MaxPartitionsPerTopic is the largest partition count a topic may have
// (actorlog's limit; Kafka has none, and a request for 2^31-1 partitions
// took a host out of memory). Topics and CreatePartitions beyond it are
// refused with INVALID_PARTITIONS; a stored topic beyond it is ignored.
const MaxPartitionsPerTopic = 10000

// DescriptorsPerPartition is the number of descriptors one partition
// replica keeps open: its active segment's log, offset index and time
// index.
const DescriptorsPerPartition = 3

// ReservedDescriptors is the part of RLIMIT_NOFILE kept out of the
// partition capacity, for the embedded etcd (its WAL, snapshots, bbolt
// file, peer and client connections: EMFILE is fatal to it), remote
// connections, HTTP and rolled segments. When the limit is below twice
// this, half the limit is reserved instead.
const ReservedDescriptors = netlimit.ReservedDescriptors

// PartitionCapacity is the number of partition replicas a process whose
// descriptor limit is nofile may hold: (nofile - reserved) /
// DescriptorsPerPartition, reserved being ReservedDescriptors or, below
// 2*ReservedDescriptors, nofile/2. With Linux's usual limits: 1024 -> 170,
// 20000 -> 6325, 1048576 -> 349184. At most math.MaxInt32.
func PartitionCapacity(nofile uint64) int {
	reserved := min(uint64(ReservedDescriptors), nofile/2)
	n := (nofile - reserved) / DescriptorsPerPartition
	return int(min(n, math.MaxInt32))
}

// HostPartitionCapacity is PartitionCapacity of this process's current
// RLIMIT_NOFILE (Go raises the soft limit to the hard one at start-up).
// When the limit cannot be read, it assumes 1024.
func HostPartitionCapacity() int {
	n, ok := netlimit.DescriptorLimit()
	if !ok {
		n = 1024
	}
	return PartitionCapacity(n)
}

// ReplicaLoad counts the partition replicas each host holds in topics,
// adding replicas of reassignments included (they are in the replica
// lists).
func ReplicaLoad(topics []*messages.TopicMetadata) map[int32]int {
	load := map[int32]int{}
	for _, t := range topics {
		for _, p := range t.GetPartitions() {
			for _, r := range p.GetReplicas() {
				load[r]++
			}
		}
	}
	return load
}

// CheckHostCapacity checks that adding the replica lists of assign to the
// hosts' current load keeps every host at or below capacity replicas. The
// error wraps ErrPolicyViolation and names the first host (lowest id) over
// it; load is not changed.
func CheckHostCapacity(load map[int32]int, assign [][]int32, capacity int) error {
	added := map[int32]int{}
	for _, replicas := range assign {
		for _, r := range replicas {
			added[r]++
		}
	}
	hosts := make([]int32, 0, len(added))
	for h := range added {
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)
	for _, h := range hosts {
		if total := load[h] + added[h]; total > capacity {
			return fmt.Errorf("%w: host %d would hold %d partition replicas (%d now, %d new), above its capacity of %d "+
				"(RLIMIT_NOFILE less %d reserved descriptors, %d descriptors per replica)",
				ErrPolicyViolation, h, total, load[h], added[h], capacity, ReservedDescriptors, DescriptorsPerPartition)
		}
	}
	return nil
}

// MaxMessageBytesLimit is the largest max.message.bytes a user may give a
// topic (create or alter; more is refused with INVALID_CONFIG). A fetch
// response always carries its first batch whole, and one gRPC message of
// the actor remote is at most client.MaxWireMessage (128 MiB), so a batch
// beyond that could be appended but never delivered to a consumer or a
// follower. 64 MiB stays well below it, with room for the response's other
// fields and for a remote batch of several responses; Kafka's own bound on
// a request, socket.request.max.bytes, is 100 MiB.
//
// A topic record read from etcd is held to the older bound (2^31-13):
// refusing it would leave its partitions unserved. Its larger value is
// clamped to this limit when the logs are configured (StorageConfig;
// MaxMessageBytesOverLimit reports it, for a warning).
const MaxMessageBytesLimit = 64 << 20

// MinSegmentBytes is the smallest segment.bytes a topic may have: Kafka
// 4's minimum (KIP-1030). Lower values are refused with INVALID_CONFIG,
// from users and in stored records alike. Tests may lower it for their
// process with SetMinSegmentBytes.
const MinSegmentBytes = 1 << 20

// minSegmentBytes is the minimum in force in this process.
var minSegmentBytes atomic.Int64

func init() { minSegmentBytes.Store(MinSegmentBytes) }

// SetMinSegmentBytes changes the segment.bytes minimum of this process
// (MinSegmentBytes by default), for tests that want many small segments
// through a topic config: the host's hidden --unsafe-min-segment-bytes
// flag. It is clamped to the storage minimum, one batch header
// (record.HeaderSize). Every host of a cluster must use the same value, as
// each validates the topic records it reads. Never lower it in
// production: a small segment size costs three descriptors per segment.
// Safe for concurrent use.
func SetMinSegmentBytes(n int64) {
	minSegmentBytes.Store(max(n, minStorageSegmentBytes))
}

// CurrentMinSegmentBytes returns the segment.bytes minimum in force in
// this process (MinSegmentBytes unless a test changed it).
func CurrentMinSegmentBytes() int64 { return minSegmentBytes.Load() }
