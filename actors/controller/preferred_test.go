// preferred_test.go: ElectPreferred and RebalancePlan, table-driven.

package controller

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/actorlog/actorlog/messages"
)

func TestElectPreferred(t *testing.T) {
	allLive := map[int32]bool{1: true, 2: true, 3: true}
	cases := []struct {
		name   string
		leader int32
		isr    []int32
		live   map[int32]bool
		code   messages.ErrorCode
		want   int32 // leader after
	}{
		{"moves back to the preferred replica", 2, []int32{1, 2, 3}, allLive, 0, 1},
		{"from an offline partition", -1, []int32{1}, allLive, 0, 1},
		{"already preferred", 1, []int32{1, 2, 3}, allLive, messages.ErrorCode_ERROR_CODE_ELECTION_NOT_NEEDED, 1},
		{"preferred not live", 2, []int32{1, 2, 3}, map[int32]bool{2: true, 3: true}, messages.ErrorCode_ERROR_CODE_PREFERRED_LEADER_NOT_AVAILABLE, 2},
		{"preferred out of the ISR", 2, []int32{2, 3}, allLive, messages.ErrorCode_ERROR_CODE_PREFERRED_LEADER_NOT_AVAILABLE, 2},
		{"no live set", 2, []int32{1, 2, 3}, nil, messages.ErrorCode_ERROR_CODE_PREFERRED_LEADER_NOT_AVAILABLE, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &messages.PartitionState{Replicas: []int32{1, 2, 3}, Leader: c.leader, LeaderEpoch: 5, Isr: slices.Clone(c.isr), PartitionEpoch: 9}
			code, msg := ElectPreferred(p, c.live)
			if code != c.code {
				t.Fatalf("code %v (%s), want %v", code, msg, c.code)
			}
			wantLE, wantPE := int32(5), int32(9)
			if code == 0 {
				wantLE, wantPE = 6, 10
			}
			if p.Leader != c.want || p.LeaderEpoch != wantLE || p.PartitionEpoch != wantPE || !slices.Equal(p.Isr, c.isr) {
				t.Fatalf("after: %v; want leader %d, epochs %d/%d, ISR %v", p, c.want, wantLE, wantPE, c.isr)
			}
		})
	}
	if code, _ := ElectPreferred(&messages.PartitionState{Leader: -1}, allLive); code != messages.ErrorCode_ERROR_CODE_PREFERRED_LEADER_NOT_AVAILABLE {
		t.Fatalf("no replicas: %v", code)
	}
}

func TestRebalancePlan(t *testing.T) {
	// part builds a partition whose replicas are (preferred, other) and
	// whose leader is leader, with both in the ISR.
	part := func(i, preferred, other, leader int32) *messages.PartitionState {
		return &messages.PartitionState{Partition: i, Replicas: []int32{preferred, other}, Leader: leader, Isr: []int32{preferred, other}}
	}
	// topic has n partitions preferring host 1 (others: host 2); the first
	// notLed of them are led by host 2.
	topic := func(name string, n, notLed int) *messages.TopicMetadata {
		t := &messages.TopicMetadata{Name: name, ReplicationFactor: 2}
		for i := range n {
			leader := int32(1)
			if i < notLed {
				leader = 2
			}
			t.Partitions = append(t.Partitions, part(int32(i), 1, 2, leader))
		}
		return t
	}
	allLive := map[int32]bool{1: true, 2: true, 3: true}
	tp := func(name string, parts ...int32) *messages.TopicPartitions {
		return &messages.TopicPartitions{Topic: name, Partitions: parts}
	}
	cases := []struct {
		name    string
		topics  []*messages.TopicMetadata
		live    map[int32]bool
		percent float64
		want    []*messages.TopicPartitions
	}{
		{"balanced", []*messages.TopicMetadata{topic("a", 4, 0)}, allLive, 10, nil},
		{"one of ten is not above 10%", []*messages.TopicMetadata{topic("a", 10, 1)}, allLive, 10, nil},
		{"one of nine is above 10%", []*messages.TopicMetadata{topic("a", 9, 1)}, allLive, 10, []*messages.TopicPartitions{tp("a", 0)}},
		{"all moved away", []*messages.TopicMetadata{topic("a", 3, 3)}, allLive, 10, []*messages.TopicPartitions{tp("a", 0, 1, 2)}},
		{"counted across topics", []*messages.TopicMetadata{topic("b", 5, 1), topic("a", 5, 0)}, allLive, 10, nil},
		{"counted across topics, above", []*messages.TopicMetadata{topic("b", 4, 1), topic("a", 4, 1)}, allLive, 10, []*messages.TopicPartitions{tp("a", 0), tp("b", 0)}},
		{"zero threshold moves any", []*messages.TopicMetadata{topic("a", 100, 1)}, allLive, 0, []*messages.TopicPartitions{tp("a", 0)}},
		{"preferred host not live", []*messages.TopicMetadata{topic("a", 3, 3)}, map[int32]bool{2: true}, 10, nil},
		{"preferred out of the ISR", []*messages.TopicMetadata{func() *messages.TopicMetadata {
			t := topic("a", 2, 2)
			t.Partitions[1].Isr = []int32{2}
			return t
		}()}, allLive, 10, []*messages.TopicPartitions{tp("a", 0)}},
		{"offline partition counts and moves", []*messages.TopicMetadata{func() *messages.TopicMetadata {
			t := topic("a", 2, 0)
			t.Partitions[1].Leader = -1
			return t
		}()}, allLive, 10, []*messages.TopicPartitions{tp("a", 1)}},
		{"topic being deleted", []*messages.TopicMetadata{func() *messages.TopicMetadata {
			t := topic("a", 3, 3)
			t.Deleting = true
			return t
		}()}, allLive, 10, nil},
		{"partition being reassigned", []*messages.TopicMetadata{func() *messages.TopicMetadata {
			t := topic("a", 2, 2)
			p := t.Partitions[0]
			p.Replicas, p.AddingReplicas, p.RemovingReplicas = []int32{1, 3, 2}, []int32{3}, []int32{2}
			return t
		}()}, allLive, 10, []*messages.TopicPartitions{tp("a", 1)}},
		{"per host", []*messages.TopicMetadata{{Name: "a", ReplicationFactor: 2, Partitions: []*messages.PartitionState{
			part(0, 1, 2, 1), part(1, 1, 2, 1), part(2, 2, 1, 1), part(3, 3, 1, 3),
		}}}, allLive, 10, []*messages.TopicPartitions{tp("a", 2)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := fmt.Sprint(c.topics)
			got := RebalancePlan(c.topics, c.live, c.percent)
			if !reflect.DeepEqual(planText(got), planText(c.want)) {
				t.Fatalf("plan %v, want %v", planText(got), planText(c.want))
			}
			if fmt.Sprint(c.topics) != before {
				t.Fatalf("topics modified")
			}
		})
	}
}
