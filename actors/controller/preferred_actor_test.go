// preferred_actor_test.go: the controller actor on a MemStore — preferred
// leader elections on request and by the automatic leader balance check.

package controller_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/actors/controller"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/internal/poll"
	"github.com/actorlog/actorlog/messages"
)

// response is what ask accepts: a response with a top-level error code.
type response interface {
	GetErrorCode() messages.ErrorCode
	GetErrorMessage() string
}

// ask sends req to pid until the answer has no retriable top-level code
// (NOT_CONTROLLER, REQUEST_TIMED_OUT: the controller is not elected, or
// has not read the hosts yet) and returns it; another top-level code
// fails the test.
func ask[T response](t *testing.T, sys *actor.ActorSystem, pid *actor.PID, req proto.Message) T {
	t.Helper()
	return askAs[T](t, sys, pid, "", req)
}

// askAs is ask with req sent from address from (clustertest.RequestAs;
// "": from sys itself, i.e. from the controller's own host).
func askAs[T response](t *testing.T, sys *actor.ActorSystem, pid *actor.PID, from string, req proto.Message) T {
	t.Helper()
	var resp T
	poll.Until(t, 15*time.Second, func() error {
		var res any
		var err error
		if from == "" {
			res, err = sys.Root.RequestFuture(pid, req, 5*time.Second).Result()
		} else {
			res, err = clustertest.RequestAs(sys, pid, from, req, 5*time.Second)
		}
		if err != nil {
			return err
		}
		r, ok := res.(T)
		if !ok {
			t.Fatalf("answer %T to %T", res, req)
		}
		switch r.GetErrorCode() {
		case messages.ErrorCode_ERROR_CODE_NOT_CONTROLLER, messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT:
			return r.GetErrorCode().Err(r.GetErrorMessage())
		case 0:
			resp = r
			return nil
		}
		t.Fatalf("%T refused: %v", req, r.GetErrorCode().Err(r.GetErrorMessage()))
		return nil
	})
	return resp
}

// leaders polls until every partition's leader is want[partition].
func leaders(t *testing.T, s cluster.MetadataStore, topic string, want map[int32]int32) *messages.TopicMetadata {
	t.Helper()
	return waitPartitions(t, s, topic, func(p *messages.PartitionState) error {
		if w, ok := want[p.Partition]; ok && p.Leader != w {
			return fmt.Errorf("leader %d, want %d", p.Leader, w)
		}
		return nil
	})
}

// preferredLeadersMoved creates an RF=2 topic over hosts 1 and 2, takes
// host 1 away and back, and returns the topic with the partitions that
// host 1 prefers now led by host 2.
func preferredLeadersMoved(t *testing.T, s *fixture, sys *actor.ActorSystem, pid *actor.PID, r1 hostReg) *messages.TopicMetadata {
	t.Helper()
	created := clustertest.CreateTopic(t, sys, pid, &messages.CreateTopicRequest{Name: "events", Partitions: 4, ReplicationFactor: 2})
	away := map[int32]int32{}
	for _, p := range created.Partitions {
		away[p.Partition] = 2
	}
	if err := r1.Close(); err != nil {
		t.Fatalf("close host 1: %v", err)
	}
	leaders(t, s, "events", away)
	register(t, s, 1)
	// The ISR does not take host 1 back by itself here (no leader replica
	// runs to propose it): put it back as a leader's proposal would, once
	// the controller has seen host 1 return (INELIGIBLE_REPLICA until then).
	for _, p := range created.Partitions {
		poll.Until(t, 10*time.Second, func() error {
			cur := leaders(t, s, "events", nil).Partitions[p.Partition]
			// From the leader's host: only it may propose.
			res, err := clustertest.RequestAs(sys, pid, hostAddr(cur.Leader), &messages.AlterPartitionRequest{Topic: "events", Partition: p.Partition,
				LeaderId: cur.Leader, LeaderEpoch: cur.LeaderEpoch, PartitionEpoch: cur.PartitionEpoch, NewIsr: []int32{2, 1}}, 5*time.Second)
			if err != nil {
				return err
			}
			if r, ok := res.(*messages.AlterPartitionResponse); !ok || r.ErrorCode != 0 || len(r.Partition.GetIsr()) != 2 {
				return fmt.Errorf("ISR expansion of partition %d: %v", p.Partition, res)
			}
			return nil
		})
	}
	return created
}

func TestElectLeadersRequest(t *testing.T) {
	s := newMem(t)
	r1 := register(t, s, 1)
	register(t, s, 2)
	sys, pid, _ := spawnController(t, s, 2)
	created := preferredLeadersMoved(t, s, sys, pid, r1)

	// Named partitions, one of them unknown.
	var prefers1, prefers2 int32 = -1, -1
	for _, p := range created.Partitions {
		if p.Replicas[0] == 1 {
			prefers1 = p.Partition
		} else {
			prefers2 = p.Partition
		}
	}
	if prefers1 < 0 || prefers2 < 0 {
		t.Fatalf("assignment does not prefer both hosts: %v", created.Partitions)
	}
	resp := ask[*messages.ElectLeadersResponse](t, sys, pid, &messages.ElectLeadersRequest{Partitions: []*messages.TopicPartitions{
		{Topic: "events", Partitions: []int32{prefers1, prefers2, 9}}, {Topic: "nope"},
	}})
	want := []messages.ErrorCode{0, messages.ErrorCode_ERROR_CODE_ELECTION_NOT_NEEDED,
		messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION, messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION}
	if len(resp.Results) != len(want) {
		t.Fatalf("results %v", resp.Results)
	}
	for i, r := range resp.Results {
		if r.ErrorCode != want[i] {
			t.Fatalf("result %d: %v, want %v", i, r, want[i])
		}
	}
	after := leaders(t, s, "events", map[int32]int32{prefers1: 1})
	if p := after.Partitions[prefers1]; p.LeaderEpoch != created.Partitions[prefers1].LeaderEpoch+2 {
		t.Fatalf("leader epoch %d after two leader changes from %d", p.LeaderEpoch, created.Partitions[prefers1].LeaderEpoch)
	}

	// All partitions: the rest move; those already preferred are left out.
	resp = ask[*messages.ElectLeadersResponse](t, sys, pid, &messages.ElectLeadersRequest{})
	for _, r := range resp.Results {
		if r.ErrorCode != 0 || r.Topic != "events" || r.Partition == prefers1 {
			t.Fatalf("all-partition result %v", r)
		}
	}
	all := map[int32]int32{}
	for _, p := range created.Partitions {
		all[p.Partition] = p.Replicas[0]
	}
	leaders(t, s, "events", all)
	if resp = ask[*messages.ElectLeadersResponse](t, sys, pid, &messages.ElectLeadersRequest{}); len(resp.Results) != 0 {
		t.Fatalf("balanced cluster: results %v", resp.Results)
	}
}

func TestAutomaticLeaderRebalance(t *testing.T) {
	s := newMem(t)
	r1 := register(t, s, 1)
	register(t, s, 2)
	sys, pid, _ := spawnControllerWith(t, controller.Config{HostID: 1, Store: s, RequestTimeout: 5 * time.Second,
		LeaderImbalanceCheckInterval: 200 * time.Millisecond})
	created := preferredLeadersMoved(t, s, sys, pid, r1)
	all := map[int32]int32{}
	for _, p := range created.Partitions {
		all[p.Partition] = p.Replicas[0]
	}
	leaders(t, s, "events", all)
}
