// assign_test.go: table tests of Kafka-style replica assignment.

package cluster_test

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/actorlog/actorlog/cluster"
)

func TestAssignReplicas(t *testing.T) {
	tests := []struct {
		name       string
		hosts      []int32
		partitions int
		rf         int
		start      int
		want       [][]int32
		wantErr    error
	}{
		{
			// The example in Kafka's AdminUtils.assignReplicasToBrokers doc
			// comment: 5 brokers, 10 partitions, RF 3, start index 0 (host
			// ids here are Kafka's broker indexes + 1).
			name: "kafka doc example", hosts: []int32{1, 2, 3, 4, 5}, partitions: 10, rf: 3, start: 0,
			want: [][]int32{
				{1, 2, 3}, {2, 3, 4}, {3, 4, 5}, {4, 5, 1}, {5, 1, 2},
				{1, 3, 4}, {2, 4, 5}, {3, 5, 1}, {4, 1, 2}, {5, 2, 3},
			},
		},
		{
			name: "unsorted hosts are sorted", hosts: []int32{30, 10, 20}, partitions: 4, rf: 2, start: 0,
			want: [][]int32{{10, 20}, {20, 30}, {30, 10}, {10, 30}},
		},
		{
			name: "start index shifts leader and followers", hosts: []int32{1, 2, 3}, partitions: 3, rf: 2, start: 1,
			want: [][]int32{{2, 1}, {3, 2}, {1, 3}},
		},
		{
			name: "start index wraps", hosts: []int32{1, 2, 3}, partitions: 3, rf: 2, start: 4,
			want: [][]int32{{2, 1}, {3, 2}, {1, 3}},
		},
		{name: "rf 1", hosts: []int32{1, 2}, partitions: 3, rf: 1, start: 0, want: [][]int32{{1}, {2}, {1}}},
		{name: "one host", hosts: []int32{7}, partitions: 2, rf: 1, start: 0, want: [][]int32{{7}, {7}}},
		{name: "rf = hosts", hosts: []int32{1, 2, 3}, partitions: 1, rf: 3, start: 0, want: [][]int32{{1, 2, 3}}},
		{name: "rf > hosts", hosts: []int32{1, 2}, partitions: 1, rf: 3, wantErr: cluster.ErrInvalidReplicationFactor},
		{name: "no hosts", hosts: nil, partitions: 1, rf: 1, wantErr: cluster.ErrInvalidReplicationFactor},
		{name: "rf 0", hosts: []int32{1}, partitions: 1, rf: 0, wantErr: cluster.ErrInvalidReplicationFactor},
		{name: "0 partitions", hosts: []int32{1}, partitions: 0, rf: 1, wantErr: cluster.ErrInvalidPartitions},
		{name: "duplicate host", hosts: []int32{1, 2, 1}, partitions: 1, rf: 1, wantErr: cluster.ErrInvalidReplicaAssignment},
		{name: "host 0", hosts: []int32{0, 1}, partitions: 1, rf: 1, wantErr: cluster.ErrInvalidReplicaAssignment},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hosts := slices.Clone(tt.hosts)
			got, err := cluster.AssignReplicas(tt.hosts, tt.partitions, tt.rf, tt.start)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("AssignReplicas: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("AssignReplicas = %v, want %v", got, tt.want)
			}
			if !slices.Equal(hosts, tt.hosts) {
				t.Fatalf("hosts modified: %v, was %v", tt.hosts, hosts)
			}
		})
	}
}

// TestAssignReplicasSpread checks Kafka's balance properties for random
// start indexes: every list has distinct hosts, and with partitions a
// multiple of hosts every host leads and holds the same number of replicas.
func TestAssignReplicasSpread(t *testing.T) {
	hosts := []int32{1, 2, 3, 4, 5, 6}
	for i := 0; i < 50; i++ {
		got, err := cluster.AssignReplicas(hosts, 12, 3, -1)
		if err != nil {
			t.Fatalf("AssignReplicas: %v", err)
		}
		leaders, replicas := map[int32]int{}, map[int32]int{}
		for p, list := range got {
			if len(list) != 3 {
				t.Fatalf("partition %d: %v", p, list)
			}
			for j, h := range list {
				if slices.Contains(list[:j], h) {
					t.Fatalf("partition %d: duplicate host in %v", p, list)
				}
				replicas[h]++
			}
			leaders[list[0]]++
		}
		for _, h := range hosts {
			if leaders[h] != 2 || replicas[h] != 6 {
				t.Fatalf("host %d leads %d, holds %d; want 2 and 6 (%v)", h, leaders[h], replicas[h], got)
			}
		}
	}
}
