// coordinators_test.go: FindCoordinator through a broker (on a MemStore)
// — the first request has the offsets topic created, the answer names the
// coordinator the broker runs beside the partition's leader, commits go
// through it, ListGroups lists its groups, users cannot delete or reshape
// the topic, and when the host's leadership lapses and comes back the new
// coordinator has the commits.

package broker_test

import (
	"errors"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/actors/broker"
	"github.com/actorlog/actorlog/actors/controller"
	"github.com/actorlog/actorlog/actors/coordinator"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
)

// findCoordinator asks the broker for group's coordinator until it
// answers without error.
func findCoordinator(t *testing.T, h host1, group string) *messages.FindCoordinatorResponse {
	t.Helper()
	var resp *messages.FindCoordinatorResponse
	clustertest.WaitFor(t, 15*time.Second, func() error {
		var err error
		resp, err = request[*messages.FindCoordinatorResponse](t, h.sys, h.brk, &messages.FindCoordinatorRequest{GroupId: group, CorrelationId: 5})
		if err != nil {
			return err
		}
		return resp.Err()
	})
	return resp
}

// offsetsOf fetches group's committed offsets from the coordinator at id
// until it has loaded.
func offsetsOf(t *testing.T, h host1, id, group string) *messages.OffsetFetchResponse {
	t.Helper()
	var resp *messages.OffsetFetchResponse
	clustertest.WaitFor(t, 15*time.Second, func() error {
		var err error
		resp, err = request[*messages.OffsetFetchResponse](t, h.sys, actor.NewPID(h.sys.Address(), id), &messages.OffsetFetchRequest{GroupId: group})
		if err != nil {
			return err
		}
		return resp.Err()
	})
	return resp
}

func TestFindCoordinatorCreatesTheOffsetsTopic(t *testing.T) {
	s := clustertest.NewMemStore(t)
	clustertest.RegisterMem(t, s, 1, 17121)
	h := startHost1(t, s, "127.0.0.1:17121", func(c *broker.Config) { c.OffsetsTopicPartitions = 3 })
	clustertest.CreateTopic(t, h.sys, h.brk, &messages.CreateTopicRequest{Name: "events", Partitions: 2, ReplicationFactor: 1})

	const group = "billing"
	first, err := request[*messages.FindCoordinatorResponse](t, h.sys, h.brk, &messages.FindCoordinatorRequest{GroupId: group, CorrelationId: 4})
	if err != nil {
		t.Fatalf("find coordinator: %v", err)
	}
	if first.ErrorCode != messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE || first.CorrelationId != 4 {
		t.Fatalf("first find coordinator: %v, want COORDINATOR_NOT_AVAILABLE while the topic is created", first)
	}
	resp := findCoordinator(t, h, group)
	part := coordinator.PartitionFor(group, 3)
	if resp.HostId != 1 || resp.Address != "127.0.0.1:17121" || resp.Partition != part || resp.ActorId != messages.CoordinatorActorID(part) {
		t.Fatalf("coordinator %v, want host 1 at 127.0.0.1:17121, partition %d", resp, part)
	}
	md, err := request[*messages.MetadataResponse](t, h.sys, h.brk, &messages.MetadataRequest{Topics: []string{messages.OffsetsTopic}})
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	topic := md.Topics[0]
	if len(topic.Partitions) != 3 || topic.ReplicationFactor != 1 || topic.Configs[cluster.ConfigRetentionMs] != "-1" || topic.Configs[cluster.ConfigRetentionBytes] != "-1" {
		t.Fatalf("offsets topic %v, want 3 partitions, one replica (one live host), no retention", topic)
	}
	if bad, err := request[*messages.FindCoordinatorResponse](t, h.sys, h.brk, &messages.FindCoordinatorRequest{}); err != nil || bad.ErrorCode != messages.ErrorCode_ERROR_CODE_INVALID_GROUP_ID {
		t.Fatalf("find coordinator of an empty group id: %v, %v; want INVALID_GROUP_ID", bad, err)
	}

	// Users cannot delete the topic, create it, or add partitions.
	for _, req := range []any{
		&messages.DeleteTopicRequest{Name: messages.OffsetsTopic},
		&messages.CreateTopicRequest{Name: messages.OffsetsTopic, Partitions: 1, ReplicationFactor: 1},
		&messages.CreatePartitionsRequest{Name: messages.OffsetsTopic, Total: 5},
	} {
		ar, err := request[*messages.AdminResponse](t, h.sys, h.brk, req)
		if err != nil || ar.ErrorCode != messages.ErrorCode_ERROR_CODE_INVALID_TOPIC_EXCEPTION {
			t.Fatalf("%T on the offsets topic: %v, %v; want INVALID_TOPIC_EXCEPTION", req, ar, err)
		}
	}

	// A commit through the coordinator the broker runs.
	crd := actor.NewPID(h.sys.Address(), resp.ActorId)
	clustertest.WaitFor(t, 15*time.Second, func() error {
		cr, err := request[*messages.OffsetCommitResponse](t, h.sys, crd, &messages.OffsetCommitRequest{
			GroupId: group, GenerationId: -1,
			Topics: []*messages.OffsetCommitTopic{{Topic: "events", Partitions: []*messages.OffsetCommitPartition{{Partition: 1, Offset: 42, LeaderEpoch: -1, Metadata: "m"}}}},
		})
		if err != nil {
			return err
		}
		if err := cr.Err(); err != nil {
			return err
		}
		if len(cr.Results) != 1 || cr.Results[0].ErrorCode != 0 {
			t.Fatalf("commit results %v", cr.Results)
		}
		return nil
	})

	// The broker lists the groups of its coordinators: billing, Empty
	// (committed offsets, no members), once its other coordinators have
	// loaded too.
	clustertest.WaitFor(t, 15*time.Second, func() error {
		lr, err := request[*messages.ListGroupsResponse](t, h.sys, h.brk, &messages.ListGroupsRequest{CorrelationId: 6})
		if err != nil {
			return err
		}
		if err := lr.Err(); err != nil {
			return err
		}
		if lr.CorrelationId != 6 || len(lr.Groups) != 1 || lr.Groups[0].GroupId != group || lr.Groups[0].GroupState != "Empty" {
			t.Fatalf("list groups: %v; want billing, Empty", lr)
		}
		return nil
	})
	if lr, err := request[*messages.ListGroupsResponse](t, h.sys, h.brk, &messages.ListGroupsRequest{StatesFilter: []string{"Stable"}}); err != nil || len(lr.Groups) != 0 {
		t.Fatalf("list stable groups: %v, %v; want none", lr, err)
	}

	// Host 1's lease goes: the partition has no leader, the coordinator
	// stops; when it returns it leads at a new epoch and its new
	// coordinator replays the commit.
	if !s.ExpireHost(1) {
		t.Fatal("host 1 was not registered")
	}
	clustertest.WaitFor(t, 15*time.Second, func() error {
		fr, err := request[*messages.FindCoordinatorResponse](t, h.sys, h.brk, &messages.FindCoordinatorRequest{GroupId: group})
		if err != nil {
			return err
		}
		if fr.ErrorCode != messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE {
			return errors.New("the coordinator is still placed on host 1")
		}
		if _, ok := h.sys.ProcessRegistry.GetLocal(resp.ActorId); ok {
			return errors.New("the coordinator is still running")
		}
		return nil
	})
	clustertest.RegisterMem(t, s, 1, 17121)
	again := findCoordinator(t, h, group)
	if again.LeaderEpoch <= resp.LeaderEpoch || again.ActorId != resp.ActorId {
		t.Fatalf("coordinator after the host returned: %v, want %s at an epoch above %d", again, resp.ActorId, resp.LeaderEpoch)
	}
	fetched := offsetsOf(t, h, again.ActorId, group)
	if len(fetched.Topics) != 1 || fetched.Topics[0].Topic != "events" || len(fetched.Topics[0].Partitions) != 1 ||
		fetched.Topics[0].Partitions[0].Offset != 42 || fetched.Topics[0].Partitions[0].Metadata != "m" {
		t.Fatalf("offsets after the coordinator moved: %v, want events-1 at 42", fetched)
	}
}

// TestOffsetsTopicReplicationFactor: min(3, live hosts), as Kafka's
// offsets.topic.replication.factor with fewer brokers. Hosts 2 to 4
// listen, so the controller's prober leaves them live.
func TestOffsetsTopicReplicationFactor(t *testing.T) {
	s := clustertest.NewMemStore(t)
	clustertest.RegisterMem(t, s, 1, 17131)
	for id := int32(2); id <= 4; id++ {
		clustertest.RegisterMem(t, s, id, listenHost(t))
	}
	sys := actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	ctrl := sys.Root.Spawn(controller.Props(controller.Config{HostID: 1, Store: s, RequestTimeout: timeout, Logger: clustertest.Logger(t)}))
	t.Cleanup(func() {
		if err := sys.Root.StopFuture(ctrl).Wait(); err != nil {
			t.Errorf("stop controller: %v", err)
		}
	})
	var topic *messages.TopicMetadata
	clustertest.WaitFor(t, 15*time.Second, func() error {
		ar, err := request[*messages.AdminResponse](t, sys, ctrl, &messages.CreateOffsetsTopicRequest{Partitions: 4})
		if err != nil {
			return err
		}
		if err := ar.ErrorCode.Err(ar.ErrorMessage); err != nil {
			return err
		}
		topic = ar.Topic
		return nil
	})
	if topic.ReplicationFactor != 3 || len(topic.Partitions) != 4 {
		t.Fatalf("offsets topic %v, want 4 partitions of 3 replicas with 4 live hosts", topic)
	}
	// Asked again (another broker), the topic is returned as it is.
	ar, err := request[*messages.AdminResponse](t, sys, ctrl, &messages.CreateOffsetsTopicRequest{Partitions: 9})
	if err != nil || ar.ErrorCode != 0 || ar.Topic.TopicId != topic.TopicId || len(ar.Topic.Partitions) != 4 {
		t.Fatalf("second creation: %v, %v; want the same topic", ar, err)
	}
}
