// assign.go holds replica assignment for new topics: Kafka's rack-unaware
// round robin (AdminUtils.assignReplicasToBrokers). Hosts are sorted; the
// first replica of partition p is host (p + start) mod n; the followers
// follow it at a shift that grows by one every n partitions, so that
// leadership and follower load both spread evenly. Pure functions.

package cluster

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// AssignReplicas assigns replicationFactor replicas to each of partitions
// partitions over hosts (host ids; order does not matter, they are sorted
// first), as Kafka does. startIndex fixes the first partition's first
// replica and the initial follower shift (Kafka's fixedStartIndex); a
// negative startIndex picks both at random, as Kafka does for new topics so
// that small topics do not all lead on the same host. The first replica of
// each list is the preferred leader.
//
// It allocates in proportion to partitions*replicationFactor, so both are
// bounded first: partitions by MaxPartitionsPerTopic, replicationFactor by
// the number of hosts.
//
// Errors: ErrInvalidPartitions when partitions < 1 or above
// MaxPartitionsPerTopic;
// ErrInvalidReplicationFactor when replicationFactor < 1 or exceeds the
// number of hosts; ErrInvalidReplicaAssignment when hosts holds duplicates
// or ids < 1.
func AssignReplicas(hosts []int32, partitions, replicationFactor int, startIndex int) ([][]int32, error) {
	if partitions < 1 || partitions > MaxPartitionsPerTopic {
		return nil, fmt.Errorf("%w: %d, want 1 to %d", ErrInvalidPartitions, partitions, MaxPartitionsPerTopic)
	}
	if replicationFactor < 1 {
		return nil, fmt.Errorf("%w: %d, want >= 1", ErrInvalidReplicationFactor, replicationFactor)
	}
	if replicationFactor > len(hosts) {
		return nil, fmt.Errorf("%w: %d is larger than the %d available hosts", ErrInvalidReplicationFactor, replicationFactor, len(hosts))
	}
	sorted := slices.Clone(hosts)
	slices.Sort(sorted)
	for i, h := range sorted {
		if h < 1 {
			return nil, fmt.Errorf("%w: host id %d, want >= 1", ErrInvalidReplicaAssignment, h)
		}
		if i > 0 && sorted[i-1] == h {
			return nil, fmt.Errorf("%w: host %d listed twice", ErrInvalidReplicaAssignment, h)
		}
	}
	n := len(sorted)
	start, shift := startIndex%n, startIndex%n
	if startIndex < 0 {
		start, shift = rand.IntN(n), rand.IntN(n)
	}
	out := make([][]int32, partitions)
	for p := 0; p < partitions; p++ {
		if p > 0 && p%n == 0 {
			shift++
		}
		first := (p + start) % n
		replicas := make([]int32, 0, replicationFactor)
		replicas = append(replicas, sorted[first])
		for j := 0; j < replicationFactor-1; j++ {
			// n > 1 here: replicationFactor <= n and the loop runs only
			// when replicationFactor >= 2.
			replicas = append(replicas, sorted[(first+1+(shift+j)%(n-1))%n])
		}
		out[p] = replicas
	}
	return out, nil
}
