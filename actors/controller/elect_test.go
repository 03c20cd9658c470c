// elect_test.go: table tests of the pure leader election (elect.go).

package controller

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/messages"
)

func hostSet(ids ...int32) map[int32]bool {
	m := make(map[int32]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// part builds a partition state: replicas, leader, ISR, leader epoch,
// partition epoch.
func part(replicas []int32, leader int32, isr []int32, leaderEpoch, partitionEpoch int32) *messages.PartitionState {
	return &messages.PartitionState{Replicas: replicas, Leader: leader, Isr: isr, LeaderEpoch: leaderEpoch, PartitionEpoch: partitionEpoch}
}

func ids(xs ...int32) []int32 { return xs }

func TestElectLeader(t *testing.T) {
	tests := []struct {
		name    string
		in      *messages.PartitionState
		live    map[int32]bool
		unclean bool
		want    *messages.PartitionState
		changed bool
	}{
		{
			name: "RF=1 leader alive: nothing changes",
			in:   part(ids(1), 1, ids(1), 0, 0), live: hostSet(1, 2),
			want: part(ids(1), 1, ids(1), 0, 0),
		},
		{
			name: "RF=1 host dies: offline, ISR kept",
			in:   part(ids(1), 1, ids(1), 0, 0), live: hostSet(2),
			want: part(ids(1), -1, ids(1), 1, 1), changed: true,
		},
		{
			name: "RF=1 offline, host still dead: nothing changes",
			in:   part(ids(1), -1, ids(1), 1, 1), live: hostSet(2),
			want: part(ids(1), -1, ids(1), 1, 1),
		},
		{
			name: "RF=1 host returns: leader again",
			in:   part(ids(1), -1, ids(1), 1, 1), live: hostSet(1, 2),
			want: part(ids(1), 1, ids(1), 2, 2), changed: true,
		},
		{
			name: "RF=3 leader alive, follower dies: ISR shrinks, leader epoch kept",
			in:   part(ids(1, 2, 3), 1, ids(1, 2, 3), 4, 7), live: hostSet(1, 3),
			want: part(ids(1, 2, 3), 1, ids(1, 3), 4, 8), changed: true,
		},
		{
			name: "RF=3 dead follower already out of the ISR: nothing changes",
			in:   part(ids(1, 2, 3), 1, ids(1, 3), 4, 8), live: hostSet(1, 3),
			want: part(ids(1, 2, 3), 1, ids(1, 3), 4, 8),
		},
		{
			name: "RF=3 leader dies: next ISR replica leads",
			in:   part(ids(1, 2, 3), 1, ids(1, 2, 3), 0, 0), live: hostSet(2, 3),
			want: part(ids(1, 2, 3), 2, ids(2, 3), 1, 1), changed: true,
		},
		{
			name: "RF=3 leader dies: replica order decides, not ISR order",
			in:   part(ids(1, 2, 3), 1, ids(3, 1, 2), 5, 9), live: hostSet(2, 3),
			want: part(ids(1, 2, 3), 2, ids(3, 2), 6, 10), changed: true,
		},
		{
			name: "RF=3 leader dies: a live replica outside the ISR is skipped",
			in:   part(ids(1, 2, 3), 1, ids(1, 3), 0, 0), live: hostSet(2, 3),
			want: part(ids(1, 2, 3), 3, ids(3), 1, 1), changed: true,
		},
		{
			name: "RF=3 all ISR members dead: offline, ISR kept",
			in:   part(ids(1, 2, 3), 1, ids(1, 2), 2, 3), live: hostSet(3),
			want: part(ids(1, 2, 3), -1, ids(1, 2), 3, 4), changed: true,
		},
		{
			name: "RF=3 all replicas dead: offline, ISR kept",
			in:   part(ids(1, 2, 3), 2, ids(2, 3), 2, 3), live: hostSet(),
			want: part(ids(1, 2, 3), -1, ids(2, 3), 3, 4), changed: true,
		},
		{
			name: "RF=3 unclean on: live non-ISR replica leads alone",
			in:   part(ids(1, 2, 3), 1, ids(1, 2), 2, 3), live: hostSet(3), unclean: true,
			want: part(ids(1, 2, 3), 3, ids(3), 3, 4), changed: true,
		},
		{
			name: "RF=3 unclean on but an ISR member is alive: clean election",
			in:   part(ids(1, 2, 3), 1, ids(1, 3), 0, 0), live: hostSet(2, 3), unclean: true,
			want: part(ids(1, 2, 3), 3, ids(3), 1, 1), changed: true,
		},
		{
			name: "RF=3 unclean on, nothing alive: offline",
			in:   part(ids(1, 2, 3), 1, ids(1), 0, 0), live: hostSet(), unclean: true,
			want: part(ids(1, 2, 3), -1, ids(1), 1, 1), changed: true,
		},
		{
			name: "RF=3 offline, last ISR member returns: it leads",
			in:   part(ids(1, 2, 3), -1, ids(2), 3, 4), live: hostSet(1, 2, 3),
			want: part(ids(1, 2, 3), 2, ids(2), 4, 5), changed: true,
		},
		{
			name: "RF=3 offline, only non-ISR replicas return: still offline",
			in:   part(ids(1, 2, 3), -1, ids(2), 3, 4), live: hostSet(1, 3),
			want: part(ids(1, 2, 3), -1, ids(2), 3, 4),
		},
		{
			name: "RF=3 offline, kept ISR partly back: the live ones stay",
			in:   part(ids(1, 2, 3), -1, ids(1, 2), 3, 4), live: hostSet(2),
			want: part(ids(1, 2, 3), 2, ids(2), 4, 5), changed: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := proto.Clone(tt.in).(*messages.PartitionState)
			before := slices.Clone(p.Isr)
			got := ElectLeader(p, tt.live, tt.unclean)
			if got != tt.changed {
				t.Errorf("changed = %v, want %v", got, tt.changed)
			}
			if !proto.Equal(p, tt.want) {
				t.Errorf("got  %v\nwant %v", p, tt.want)
			}
			if !slices.Equal(tt.in.Isr, before) {
				t.Errorf("input ISR slice modified: %v, was %v", tt.in.Isr, before)
			}
		})
	}
}

func TestElectLeadersTopic(t *testing.T) {
	topic := func() *messages.TopicMetadata {
		return &messages.TopicMetadata{Name: "t", ReplicationFactor: 1, Partitions: []*messages.PartitionState{
			{Partition: 0, Replicas: ids(1), Leader: 1, Isr: ids(1)},
			{Partition: 1, Replicas: ids(2), Leader: 2, Isr: ids(2)},
		}}
	}
	t.Run("nothing changed", func(t *testing.T) {
		tp := topic()
		if ElectLeaders(tp, hostSet(1, 2), false) {
			t.Fatal("changed = true with every host alive")
		}
		if !proto.Equal(tp, topic()) {
			t.Fatalf("topic modified: %v", tp)
		}
	})
	t.Run("one host dies, then returns", func(t *testing.T) {
		tp := topic()
		if !ElectLeaders(tp, hostSet(1), false) {
			t.Fatal("changed = false after host 2 died")
		}
		p0, p1 := tp.Partitions[0], tp.Partitions[1]
		if p0.Leader != 1 || p0.LeaderEpoch != 0 || p0.PartitionEpoch != 0 {
			t.Fatalf("partition 0 on the live host changed: %v", p0)
		}
		if p1.Leader != -1 || p1.LeaderEpoch != 1 || p1.PartitionEpoch != 1 || !slices.Equal(p1.Isr, ids(2)) {
			t.Fatalf("partition 1 after its host died: %v", p1)
		}
		if ElectLeaders(tp, hostSet(1), false) {
			t.Fatal("changed = true on a second call with the same live set")
		}
		if !ElectLeaders(tp, hostSet(1, 2), false) {
			t.Fatal("changed = false after host 2 returned")
		}
		if p1.Leader != 2 || p1.LeaderEpoch != 2 || p1.PartitionEpoch != 2 {
			t.Fatalf("partition 1 after its host returned: %v", p1)
		}
	})
}
