// reassign_actor_test.go: the controller actor on a MemStore — a
// reassignment is recorded, completed by the leader's ISR proposal that
// takes the new replica in, and cancelled; bad requests change nothing.

package controller_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
)

func getTopic(t *testing.T, s cluster.MetadataStore, name string) *messages.TopicMetadata {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	topic, _, err := s.GetTopic(ctx, name)
	if err != nil {
		t.Fatalf("get topic %q: %v", name, err)
	}
	return topic
}

func reassign(topic string, partition int32, replicas ...int32) *messages.ReassignPartitionsRequest {
	return &messages.ReassignPartitionsRequest{Topic: topic, Partitions: []*messages.PartitionReassignment{{Partition: partition, Replicas: replicas}}}
}

// results returns a response's per-partition codes.
func results(rs []*messages.PartitionResult) []messages.ErrorCode {
	out := make([]messages.ErrorCode, len(rs))
	for i, r := range rs {
		out[i] = r.ErrorCode
	}
	return out
}

func TestReassignPartition(t *testing.T) {
	s := newMem(t)
	for id := int32(1); id <= 3; id++ {
		register(t, s, id)
	}
	sys, pid, _ := spawnController(t, s, 3)
	created := clustertest.CreateTopic(t, sys, pid, &messages.CreateTopicRequest{Name: "events", Partitions: 2, ReplicationFactor: 2})
	p0 := created.Partitions[0]
	leader, follower := p0.Replicas[0], p0.Replicas[1]
	var third int32 = 6 - leader - follower

	// Bad requests change nothing.
	bad := []struct {
		name string
		req  *messages.ReassignPartitionsRequest
		want []messages.ErrorCode
	}{
		{"unknown host", reassign("events", 0, third, 9), []messages.ErrorCode{messages.ErrorCode_ERROR_CODE_INVALID_REQUEST}},
		{"duplicate host", reassign("events", 0, third, third), []messages.ErrorCode{messages.ErrorCode_ERROR_CODE_INVALID_REQUEST}},
		{"replication factor", reassign("events", 0, third), []messages.ErrorCode{messages.ErrorCode_ERROR_CODE_INVALID_REPLICATION_FACTOR}},
		{"unknown partition", reassign("events", 5, third, follower), []messages.ErrorCode{messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION}},
		{"unknown topic", reassign("nope", 0, third, follower), []messages.ErrorCode{messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION}},
		{"nothing to cancel", reassign("events", 0), []messages.ErrorCode{messages.ErrorCode_ERROR_CODE_NO_REASSIGNMENT_IN_PROGRESS}},
		{"one bad partition", &messages.ReassignPartitionsRequest{Topic: "events", Partitions: []*messages.PartitionReassignment{
			{Partition: 1, Replicas: []int32{third, leader}}, {Partition: 0, Replicas: []int32{9, 8}},
		}}, []messages.ErrorCode{messages.ErrorCode_ERROR_CODE_INVALID_REQUEST, messages.ErrorCode_ERROR_CODE_INVALID_REQUEST}},
	}
	for _, b := range bad {
		resp := ask[*messages.ReassignPartitionsResponse](t, sys, pid, b.req)
		if got := results(resp.Results); !slices.Equal(got, b.want) {
			t.Fatalf("%s: results %v, want %v", b.name, resp.Results, b.want)
		}
	}
	if now := getTopic(t, s, "events"); !proto.Equal(now, created) {
		t.Fatalf("bad requests changed the topic:\n%v\nwas\n%v", now, created)
	}

	// Move partition 0 from (leader, follower) to (third, follower).
	resp := ask[*messages.ReassignPartitionsResponse](t, sys, pid, reassign("events", 0, third, follower))
	if got := results(resp.Results); !slices.Equal(got, []messages.ErrorCode{0}) {
		t.Fatalf("reassign: %v", resp.Results)
	}
	p := getTopic(t, s, "events").Partitions[0]
	if !slices.Equal(p.Replicas, []int32{third, follower, leader}) || !slices.Equal(p.AddingReplicas, []int32{third}) ||
		!slices.Equal(p.RemovingReplicas, []int32{leader}) || p.Leader != leader || p.LeaderEpoch != 1 || p.PartitionEpoch != 1 {
		t.Fatalf("reassignment recorded as %v", p)
	}
	// Another target meanwhile is refused; the same one again is fine.
	resp = ask[*messages.ReassignPartitionsResponse](t, sys, pid, reassign("events", 0, leader, third))
	if got := results(resp.Results); !slices.Equal(got, []messages.ErrorCode{messages.ErrorCode_ERROR_CODE_REASSIGNMENT_IN_PROGRESS}) {
		t.Fatalf("second target: %v", resp.Results)
	}
	resp = ask[*messages.ReassignPartitionsResponse](t, sys, pid, reassign("events", 0, third, follower))
	if got := results(resp.Results); !slices.Equal(got, []messages.ErrorCode{0}) {
		t.Fatalf("same target again: %v", resp.Results)
	}

	// The leader's proposal that takes the new replica in completes it.
	alter := askAs[*messages.AlterPartitionResponse](t, sys, pid, hostAddr(leader), &messages.AlterPartitionRequest{Topic: "events", Partition: 0,
		LeaderId: leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewIsr: append(slices.Clone(p.Isr), third)})
	done := alter.Partition
	if !slices.Equal(done.Replicas, []int32{third, follower}) || len(done.AddingReplicas)+len(done.RemovingReplicas) != 0 ||
		done.Leader != third || !slices.Equal(done.Isr, []int32{follower, third}) || done.LeaderEpoch != 2 || done.PartitionEpoch != 3 {
		t.Fatalf("after the new replica joined the ISR: %v", done)
	}
	if p := getTopic(t, s, "events").Partitions[0]; !proto.Equal(p, done) {
		t.Fatalf("stored %v, answered %v", p, done)
	}

	// Start again and cancel: back to the replicas before, in the order
	// they have in the union (as Kafka reverts: the target's order first).
	ask[*messages.ReassignPartitionsResponse](t, sys, pid, reassign("events", 0, leader, follower))
	resp = ask[*messages.ReassignPartitionsResponse](t, sys, pid, reassign("events", 0))
	if got := results(resp.Results); !slices.Equal(got, []messages.ErrorCode{0}) {
		t.Fatalf("cancel: %v", resp.Results)
	}
	waitPartitions(t, s, "events", func(p *messages.PartitionState) error {
		if p.Partition == 0 && (!slices.Equal(p.Replicas, []int32{follower, third}) || p.Leader != third || len(p.AddingReplicas)+len(p.RemovingReplicas) != 0) {
			return fmt.Errorf("not reverted")
		}
		return nil
	})
}

// TestCreateTopicPlacesReplicasOnDistinctLiveHosts: replicas of a
// partition are on distinct hosts, all live; a replication factor above
// the live hosts is refused.
func TestCreateTopicPlacesReplicasOnDistinctLiveHosts(t *testing.T) {
	s := newMem(t)
	register(t, s, 1)
	register(t, s, 2)
	r3 := register(t, s, 3)
	if err := r3.Close(); err != nil {
		t.Fatalf("close host 3: %v", err)
	}
	sys, pid, _ := spawnController(t, s, 0)
	created := clustertest.CreateTopic(t, sys, pid, &messages.CreateTopicRequest{Name: "spread", Partitions: 6, ReplicationFactor: 2})
	for _, p := range created.Partitions {
		if len(p.Replicas) != 2 || p.Replicas[0] == p.Replicas[1] || slices.Contains(p.Replicas, 3) {
			t.Fatalf("partition %d replicas %v: want two distinct live hosts of 1, 2", p.Partition, p.Replicas)
		}
	}
	res, err := sys.Root.RequestFuture(pid, &messages.CreateTopicRequest{Name: "wide", Partitions: 1, ReplicationFactor: 3}, 5*time.Second).Result()
	if err != nil {
		t.Fatal(err)
	}
	if r := res.(*messages.AdminResponse); r.ErrorCode != messages.ErrorCode_ERROR_CODE_INVALID_REPLICATION_FACTOR {
		t.Fatalf("replication factor 3 on 2 live hosts: %v", r)
	}
}
