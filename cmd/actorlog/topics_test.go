// topics_test.go: how `topics describe` renders a partition's leader, and
// how `topics alter --replicas` reads its argument.

package main

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/messages"
)

func TestLeaderText(t *testing.T) {
	tests := []struct {
		p    *messages.PartitionMetadata
		want string
	}{
		{&messages.PartitionMetadata{Leader: 2, LeaderAddress: "h2:7070"}, "2"},
		{&messages.PartitionMetadata{Leader: -1, ErrorCode: messages.ErrorCode_ERROR_CODE_LEADER_NOT_AVAILABLE}, "none (offline)"},
		{&messages.PartitionMetadata{Leader: 3, ErrorCode: messages.ErrorCode_ERROR_CODE_LEADER_NOT_AVAILABLE}, "3 (unavailable)"},
	}
	for _, tt := range tests {
		if got := leaderText(newPartitionDescription(tt.p, nil, nil)); got != tt.want {
			t.Errorf("leaderText(%v) = %q, want %q", tt.p, got, tt.want)
		}
	}
}

func TestParseReplicas(t *testing.T) {
	cluster := &messages.DescribeClusterResponse{
		Hosts:     []*messages.HostInfo{{HostId: 1, Name: "host1"}, {HostId: 2, Name: "host2"}},
		DownHosts: []*messages.HostInfo{{HostId: 3, Name: "host3"}},
	}
	resolve := func(s string) (int32, error) { return client.ResolveHost(cluster, s) }
	tests := []struct {
		spec string
		want string // partition:replicas..., or the error's text
	}{
		{"0=1,2,3;1=2,3,1", "0:[1 2 3] 1:[2 3 1]"},
		{" 0 = host2, host3 ; ", "0:[2 3]"},
		{"2=host1,7", "2:[1 7]"},
		{"", "no partitions given"},
		{"0=1;0=2", "partition 0 given twice"},
		{"0=", "partition 0 has no hosts"},
		{"x=1", "want PARTITION=HOST"},
		{"-1=1", "want PARTITION=HOST"},
		{"0:1,2", "want PARTITION=HOST"},
		{"0=host9", `no host named "host9"`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			rs, err := parseReplicas(tt.spec, resolve)
			var got []string
			for _, r := range rs {
				got = append(got, fmt.Sprintf("%d:%v", r.Partition, r.Replicas))
			}
			if err != nil {
				if !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("error %q, want one mentioning %q", err, tt.want)
				}
				return
			}
			if !reflect.DeepEqual(strings.Join(got, " "), tt.want) {
				t.Fatalf("parsed %v, want %s", got, tt.want)
			}
		})
	}
}
