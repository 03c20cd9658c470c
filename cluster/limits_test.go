// limits_test.go: table tests of the partition limits — the capacity a
// descriptor limit allows, the host capacity check of an assignment, and
// an assignment request far past the per-topic cap refused before it
// allocates.

package cluster_test

import (
	"errors"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/netlimit"
	"github.com/actorlog/actorlog/messages"
)

func TestPartitionCapacity(t *testing.T) {
	tests := []struct {
		nofile uint64
		want   int
	}{
		{0, 0},
		{3, 0},
		{64, 10},      // half reserved: (64-32)/3
		{1024, 170},   // half reserved: (1024-512)/3
		{2048, 341},   // (2048-1024)/3
		{20000, 6325}, // (20000-1024)/3
		{1 << 20, 349184},
		{math.MaxUint64, math.MaxInt32},
	}
	for _, tt := range tests {
		if got := cluster.PartitionCapacity(tt.nofile); got != tt.want {
			t.Errorf("PartitionCapacity(%d) = %d, want %d", tt.nofile, got, tt.want)
		}
	}
}

func TestReplicaLoad(t *testing.T) {
	a := newTopic(t, "a", 3, 2, nil) // hosts 1..3, 6 replicas
	b := newTopic(t, "b", 1, 3, nil)
	load := cluster.ReplicaLoad([]*messages.TopicMetadata{a, b})
	if load[1]+load[2]+load[3] != 9 || len(load) != 3 {
		t.Fatalf("ReplicaLoad = %v, want 9 replicas over hosts 1..3", load)
	}
	for h, n := range load {
		if n != 3 {
			t.Errorf("host %d holds %d replicas, want 3 (%v)", h, n, load)
		}
	}
}

func TestCheckHostCapacity(t *testing.T) {
	tests := []struct {
		name     string
		load     map[int32]int
		assign   [][]int32
		capacity int
		ok       bool
	}{
		{"empty cluster", nil, [][]int32{{1, 2}, {2, 1}}, 2, true},
		{"exactly full", map[int32]int{1: 8}, [][]int32{{1}, {1}}, 10, true},
		{"one over", map[int32]int{1: 9}, [][]int32{{1}, {1}}, 10, false},
		{"follower over", map[int32]int{2: 10}, [][]int32{{1, 2}}, 10, false},
		{"other host full", map[int32]int{3: 10}, [][]int32{{1, 2}}, 10, true},
		{"nothing new", map[int32]int{1: 11}, nil, 10, true},
		{"zero capacity", nil, [][]int32{{1}}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := cluster.CheckHostCapacity(tt.load, tt.assign, tt.capacity)
			if tt.ok && err != nil {
				t.Fatalf("CheckHostCapacity: %v, want nil", err)
			}
			if !tt.ok && !errors.Is(err, cluster.ErrPolicyViolation) {
				t.Fatalf("CheckHostCapacity: %v, want ErrPolicyViolation", err)
			}
		})
	}
}

// TestAssignReplicasRefusesHugeRequests: 2^31-1 partitions ran a host out
// of memory; past MaxPartitionsPerTopic the request is refused at once,
// allocating nothing in proportion to it.
func TestAssignReplicasRefusesHugeRequests(t *testing.T) {
	hosts := []int32{1, 2, 3}
	for _, n := range []int{math.MaxInt32, cluster.MaxPartitionsPerTopic + 1} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		_, err := cluster.AssignReplicas(hosts, n, 3, -1)
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, cluster.ErrInvalidPartitions) {
			t.Fatalf("AssignReplicas(%d partitions) = %v, want ErrInvalidPartitions", n, err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 || took > time.Second {
			t.Fatalf("AssignReplicas(%d partitions) allocated %d bytes in %v before refusing", n, grew, took)
		}
	}
	got, err := cluster.AssignReplicas(hosts, cluster.MaxPartitionsPerTopic, 3, 0)
	if err != nil || len(got) != cluster.MaxPartitionsPerTopic {
		t.Fatalf("AssignReplicas(MaxPartitionsPerTopic) = %d lists, %v", len(got), err)
	}
}

// The connection default is half the descriptors the partition capacity
// keeps in reserve, so partitions at capacity plus connections at their
// limit leave the other half for etcd and the rest.
func TestDefaultMaxConnections(t *testing.T) {
	tests := []struct {
		nofile       uint64
		total, perIP int
	}{
		{64, 16, 8},
		{1024, 256, 128},
		{2048, 512, 256},
		{20000, 512, 256},
		{1 << 20, 512, 256},
		{math.MaxUint64, 512, 256},
	}
	for _, tt := range tests {
		total := netlimit.DefaultMaxConnections(tt.nofile)
		if total != tt.total {
			t.Errorf("DefaultMaxConnections(%d) = %d, want %d", tt.nofile, total, tt.total)
		}
		if got := netlimit.DefaultMaxConnectionsPerIP(total); got != tt.perIP {
			t.Errorf("DefaultMaxConnectionsPerIP(%d) = %d, want %d", total, got, tt.perIP)
		}
		if tt.nofile > 1<<40 {
			continue
		}
		used := uint64(cluster.PartitionCapacity(tt.nofile))*cluster.DescriptorsPerPartition + uint64(total)
		reserve := min(uint64(cluster.ReservedDescriptors), tt.nofile/2)
		if left := tt.nofile - used; left < reserve/2 {
			t.Errorf("nofile %d: partitions at capacity and %d connections leave %d descriptors, want at least %d", tt.nofile, total, left, reserve/2)
		}
	}
	if got := netlimit.DefaultMaxConnectionsPerIP(1); got != 1 {
		t.Errorf("DefaultMaxConnectionsPerIP(1) = %d, want 1", got)
	}
}
