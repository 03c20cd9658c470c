// limits_actor_test.go: the controller actor refuses admin requests past the limits (issue 11) — partitions per topic
// (even 2^31-1, at once and without allocating), partition replicas per
// host, segment.bytes below 1 MiB, any config change of the internal
// offsets topic — with Kafka's codes, writing nothing (on a MemStore); and
// it goes on serving beside a topic record nobody could have created
// through it (on a real embedded etcd: the record is written straight
// into it).

package controller_test

import (
	"fmt"
	"math"
	"runtime"
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

// admin sends an admin request until a controller is elected and returns
// its answer, whatever the code.
func admin(t *testing.T, sys *actor.ActorSystem, pid *actor.PID, req proto.Message) *messages.AdminResponse {
	t.Helper()
	var resp *messages.AdminResponse
	poll.Until(t, 15*time.Second, func() error {
		res, err := sys.Root.RequestFuture(pid, req, 5*time.Second).Result()
		if err != nil {
			return err
		}
		r, ok := res.(*messages.AdminResponse)
		if !ok {
			t.Fatalf("answer %T to %T", res, req)
		}
		if r.ErrorCode == messages.ErrorCode_ERROR_CODE_NOT_CONTROLLER {
			return r.ErrorCode.Err(r.ErrorMessage)
		}
		resp = r
		return nil
	})
	return resp
}

func wantCode(t *testing.T, what string, resp *messages.AdminResponse, want messages.ErrorCode) {
	t.Helper()
	if resp.ErrorCode != want || resp.Topic != nil || resp.ErrorMessage == "" {
		t.Fatalf("%s: %v %q (topic %v), want %v with a message", what, resp.ErrorCode, resp.ErrorMessage, resp.Topic, want)
	}
}

func TestPartitionLimits(t *testing.T) {
	s := newMem(t)
	for id := int32(1); id <= 2; id++ {
		register(t, s, id)
	}
	// Two hosts of 10 replicas each.
	sys, pid, _ := spawnControllerWith(t, controller.Config{HostID: 1, Store: s, RequestTimeout: 5 * time.Second, MaxPartitionsPerHost: 10})
	created := clustertest.CreateTopic(t, sys, pid, &messages.CreateTopicRequest{Name: "events", Partitions: 4, ReplicationFactor: 2})

	// 2^31-1 partitions: refused at once, before any allocation.
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	resp := admin(t, sys, pid, &messages.CreateTopicRequest{Name: "huge", Partitions: math.MaxInt32, ReplicationFactor: 2})
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	wantCode(t, "2^31-1 partitions", resp, messages.ErrorCode_ERROR_CODE_INVALID_PARTITIONS)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 64<<20 || took > 2*time.Second {
		t.Fatalf("2^31-1 partitions refused after %v, heap grew %d bytes", took, grew)
	}

	refused := []struct {
		what string
		req  proto.Message
		want messages.ErrorCode
	}{
		{"one partition past the per-topic cap", &messages.CreateTopicRequest{Name: "big", Partitions: cluster.MaxPartitionsPerTopic + 1, ReplicationFactor: 1},
			messages.ErrorCode_ERROR_CODE_INVALID_PARTITIONS},
		{"a new total past the per-topic cap", &messages.CreatePartitionsRequest{Name: "events", Total: math.MaxInt32},
			messages.ErrorCode_ERROR_CODE_INVALID_PARTITIONS},
		// 8 replicas placed; 7 more partitions of RF 2 need 14 slots, 12 left.
		{"past the hosts' capacity", &messages.CreateTopicRequest{Name: "more", Partitions: 7, ReplicationFactor: 2},
			messages.ErrorCode_ERROR_CODE_POLICY_VIOLATION},
		{"new partitions past the hosts' capacity", &messages.CreatePartitionsRequest{Name: "events", Total: 11},
			messages.ErrorCode_ERROR_CODE_POLICY_VIOLATION},
		{"segment.bytes below 1 MiB", &messages.CreateTopicRequest{Name: "tiny", Partitions: 1, ReplicationFactor: 1, Configs: map[string]string{"segment.bytes": "100"}},
			messages.ErrorCode_ERROR_CODE_INVALID_CONFIG},
		{"segment.bytes altered below 1 MiB", &messages.AlterTopicConfigsRequest{Name: "events", Configs: map[string]string{"segment.bytes": "1048575"}},
			messages.ErrorCode_ERROR_CODE_INVALID_CONFIG},
	}
	for _, r := range refused {
		wantCode(t, r.what, admin(t, sys, pid, r.req), r.want)
	}
	for _, name := range []string{"huge", "big", "more", "tiny"} {
		if _, _, err := s.GetTopic(t.Context(), name); err == nil {
			t.Fatalf("refused topic %q was written", name)
		}
	}
	if now := getTopic(t, s, "events"); !proto.Equal(now, created) {
		t.Fatalf("refused requests changed the topic:\n%v\nwas\n%v", now, created)
	}

	// Up to the capacity is fine: 6 more partitions of RF 2 fill both hosts.
	if resp := admin(t, sys, pid, &messages.CreatePartitionsRequest{Name: "events", Total: 10}); resp.ErrorCode != 0 || len(resp.Topic.GetPartitions()) != 10 {
		t.Fatalf("growing to the capacity: %v %q", resp.ErrorCode, resp.ErrorMessage)
	}
	wantCode(t, "a full cluster", admin(t, sys, pid, &messages.CreateTopicRequest{Name: "one", Partitions: 1, ReplicationFactor: 1}),
		messages.ErrorCode_ERROR_CODE_POLICY_VIOLATION)
}

func TestOffsetsTopicConfigsAreReadOnly(t *testing.T) {
	s := newMem(t)
	register(t, s, 1)
	sys, pid, _ := spawnController(t, s, 0)
	var offsets *messages.TopicMetadata
	poll.Until(t, 15*time.Second, func() error {
		res, err := sys.Root.RequestFuture(pid, &messages.CreateOffsetsTopicRequest{Partitions: 3}, 5*time.Second).Result()
		if err != nil {
			return err
		}
		resp := res.(*messages.AdminResponse)
		if resp.ErrorCode != 0 {
			return fmt.Errorf("create offsets topic: %w", resp.ErrorCode.Err(resp.ErrorMessage))
		}
		offsets = resp.Topic
		return nil
	})
	for _, configs := range []map[string]string{
		{"retention.ms": "1"}, // would delete the committed offsets
		controller.OffsetsTopicConfigs(),
		nil,
	} {
		resp := admin(t, sys, pid, &messages.AlterTopicConfigsRequest{Name: messages.OffsetsTopic, Configs: configs})
		wantCode(t, fmt.Sprintf("alter %s configs %v", messages.OffsetsTopic, configs), resp, messages.ErrorCode_ERROR_CODE_POLICY_VIOLATION)
	}
	for _, req := range []proto.Message{
		&messages.DeleteTopicRequest{Name: messages.OffsetsTopic},
		&messages.CreatePartitionsRequest{Name: messages.OffsetsTopic, Total: 10},
		&messages.CreateTopicRequest{Name: messages.OffsetsTopic, Partitions: 1, ReplicationFactor: 1},
	} {
		wantCode(t, fmt.Sprintf("%T", req), admin(t, sys, pid, req), messages.ErrorCode_ERROR_CODE_INVALID_TOPIC_EXCEPTION)
	}
	if now := getTopic(t, s, messages.OffsetsTopic); !proto.Equal(now, offsets) {
		t.Fatalf("refused requests changed %s:\n%v\nwas\n%v", messages.OffsetsTopic, now, offsets)
	}
}

// TestControllerIgnoresInvalidRecords: a topic record written straight
// into etcd, which the controller would have refused, is never acted on
// (not re-elected, not rewritten) while the controller serves the valid
// topics beside it: a host that goes loses its leaderships there. So is
// one that does not decode (it failed every listing before).
func TestControllerIgnoresInvalidRecords(t *testing.T) {
	s := newEtcd(t) // writes records straight into etcd
	e := s.e
	register(t, s, 1)
	r2 := register(t, s, 2)
	sys, pid, _ := spawnController(t, s, 0)
	clustertest.CreateTopic(t, sys, pid, &messages.CreateTopicRequest{Name: "events", Partitions: 2, ReplicationFactor: 2})
	bad := &messages.TopicMetadata{Name: "../victim", TopicId: cluster.NewTopicID(), ReplicationFactor: 2, Partitions: []*messages.PartitionState{
		{Partition: 0, Replicas: []int32{2, 1}, Leader: 2, Isr: []int32{2, 1}},
	}}
	val, err := proto.Marshal(bad)
	if err != nil {
		t.Fatal(err)
	}
	key := s.etcd.Keys().Topic(bad.Name)
	if _, err := e.Client().Put(t.Context(), key, string(val)); err != nil {
		t.Fatal(err)
	}
	// And one that does not even decode.
	if _, err := e.Client().Put(t.Context(), s.etcd.Keys().Topic("junk"), "\xff\xff not a proto"); err != nil {
		t.Fatal(err)
	}
	if err := r2.Close(); err != nil {
		t.Fatal(err)
	}
	waitPartitions(t, s, "events", func(p *messages.PartitionState) error {
		if p.Leader != 1 {
			return fmt.Errorf("partition %d led by %d, want 1 once host 2 is gone", p.Partition, p.Leader)
		}
		return nil
	})
	got, err := e.Client().Get(t.Context(), key)
	if err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != string(val) {
		t.Fatalf("the invalid record was changed: %v, %v", got, err)
	}
	// Admin requests on other topics still work.
	clustertest.CreateTopic(t, sys, pid, &messages.CreateTopicRequest{Name: "after", Partitions: 1, ReplicationFactor: 1})
}

// TestMaxMessageBytesLimit: create and alter refuse a max.message.bytes
// above cluster.MaxMessageBytesLimit with INVALID_CONFIG and write
// nothing, but a topic record stored with a larger value (before the
// limit) is not ignored: the controller still moves its leaders when a
// host goes, and an alter that lowers the value is accepted.
func TestMaxMessageBytesLimit(t *testing.T) {
	s := newEtcd(t) // writes records straight into etcd
	e := s.e
	register(t, s, 1)
	r2 := register(t, s, 2)
	sys, pid, _ := spawnController(t, s, 0)
	over := map[string]string{"max.message.bytes": fmt.Sprint(cluster.MaxMessageBytesLimit + 1)}
	wantCode(t, "create above the limit", admin(t, sys, pid, &messages.CreateTopicRequest{Name: "huge-batches", Partitions: 1, ReplicationFactor: 1, Configs: over}),
		messages.ErrorCode_ERROR_CODE_INVALID_CONFIG)
	if _, _, err := s.GetTopic(t.Context(), "huge-batches"); err == nil {
		t.Fatal("the refused topic was written")
	}
	atLimit := clustertest.CreateTopic(t, sys, pid, &messages.CreateTopicRequest{Name: "at-limit", Partitions: 1, ReplicationFactor: 1,
		Configs: map[string]string{"max.message.bytes": fmt.Sprint(cluster.MaxMessageBytesLimit)}})
	wantCode(t, "alter above the limit", admin(t, sys, pid, &messages.AlterTopicConfigsRequest{Name: "at-limit", Configs: over}),
		messages.ErrorCode_ERROR_CODE_INVALID_CONFIG)
	if now := getTopic(t, s, "at-limit"); !proto.Equal(now, atLimit) {
		t.Fatalf("a refused alter changed the topic:\n%v\nwas\n%v", now, atLimit)
	}

	// A record written before the limit, with 2^31-13.
	old := clustertest.CreateTopic(t, sys, pid, &messages.CreateTopicRequest{Name: "old", Partitions: 2, ReplicationFactor: 2})
	old.Configs = map[string]string{"max.message.bytes": "2147483635"}
	val, err := proto.Marshal(old)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	if _, err := e.Client().Put(t.Context(), s.etcd.Keys().Topic(old.Name), string(val)); err != nil {
		t.Fatalf("put the old record: %v", err)
	}
	if got := getTopic(t, s, "old"); got.Configs["max.message.bytes"] != "2147483635" {
		t.Fatalf("the stored record reads back with configs %v", got.Configs)
	}
	if err := r2.Close(); err != nil {
		t.Fatalf("close host 2's registration: %v", err)
	}
	waitPartitions(t, s, "old", func(p *messages.PartitionState) error {
		if p.Leader != 1 {
			return fmt.Errorf("partition %d led by %d, want 1 once host 2 is gone", p.Partition, p.Leader)
		}
		return nil
	})
	if resp := admin(t, sys, pid, &messages.AlterTopicConfigsRequest{Name: "old", Configs: map[string]string{"max.message.bytes": "1048588"}}); resp.ErrorCode != 0 {
		t.Fatalf("lowering the old topic's max.message.bytes: %v %q", resp.ErrorCode, resp.ErrorMessage)
	}
	if got := getTopic(t, s, "old"); got.Configs["max.message.bytes"] != "1048588" {
		t.Fatalf("after the alter, configs %v", got.Configs)
	}
}
