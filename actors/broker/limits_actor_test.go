// limits_actor_test.go: the broker actor is not steered by topic records
// written straight into etcd — one named "../victim" creates nothing and
// removes nothing outside the data dir, a valid topic whose record goes
// bad runs on with its data (on a real embedded etcd: a MemStore validates
// every write, so it never holds such a record) — and it runs no more
// replicas than its capacity (on a MemStore).

package broker_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/actors/broker"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
)

// putRaw writes a topic record straight into etcd, as anyone who reaches
// its client port could.
func putRaw(t *testing.T, c *clientv3.Client, s *cluster.Store, topic *messages.TopicMetadata) {
	t.Helper()
	val, err := proto.Marshal(topic)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(t.Context(), s.Keys().Topic(topic.Name), string(val)); err != nil {
		t.Fatal(err)
	}
}

// onHost1 is a one-partition topic record led by host 1.
func onHost1(name, id string) *messages.TopicMetadata {
	return &messages.TopicMetadata{Name: name, TopicId: id, ReplicationFactor: 1, Partitions: []*messages.PartitionState{
		{Partition: 0, Replicas: []int32{1}, Leader: 1, Isr: []int32{1}},
	}}
}

// running reports whether the replica actor of topic-partition runs.
func running(sys *actor.ActorSystem, topic string, partition int32) bool {
	_, ok := sys.ProcessRegistry.GetLocal(messages.ReplicaActorID(topic, partition))
	return ok
}

// createAndWait creates a topic of one partition through the broker and
// waits for its replica: every metadata event before it has then been
// handled.
func createAndWait(t *testing.T, h host1, name string) {
	t.Helper()
	clustertest.CreateTopic(t, h.sys, h.brk, &messages.CreateTopicRequest{Name: name, Partitions: 1, ReplicationFactor: 1})
	clustertest.WaitFor(t, 10*time.Second, func() error {
		if !running(h.sys, name, 0) {
			return fmt.Errorf("replica of %s-0 not running", name)
		}
		return nil
	})
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestCraftedTopicRecordsAreNeverActedOn(t *testing.T) {
	s, e := clustertest.NewStore(t)
	clustertest.Register(t, s, 1, 17121)
	root := t.TempDir()
	dataDir := filepath.Join(root, "data")
	// A directory outside the data dir that a record named "../victim"
	// points at, claimed by that record's topic id.
	victimID := cluster.NewTopicID()
	victim := filepath.Join(root, "victim-0")
	if err := os.MkdirAll(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"partition.metadata": "topic_id: " + victimID + "\n", "keep": "precious"} {
		if err := os.WriteFile(filepath.Join(victim, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Written before the host starts (read in its first snapshot) ...
	putRaw(t, e.Client(), s, onHost1("../victim", victimID))
	h := startHost1(t, s, "127.0.0.1:17121", func(c *broker.Config) { c.DataDir = dataDir })
	createAndWait(t, h, "events")
	eventsPID, _ := h.sys.ProcessRegistry.GetLocal(messages.ReplicaActorID("events", 0))

	// ... and while it runs (read from the watch): another escape, and a
	// valid topic's record overwritten with one the CLI would refuse.
	putRaw(t, e.Client(), s, onHost1("../watched", cluster.NewTopicID()))
	events, _, err := s.GetTopic(t.Context(), "events")
	if err != nil {
		t.Fatal(err)
	}
	broken := proto.Clone(events).(*messages.TopicMetadata)
	broken.Configs = map[string]string{"segment.bytes": "100"}
	putRaw(t, e.Client(), s, broken)
	createAndWait(t, h, "after")

	for _, name := range []string{"../victim", "../watched"} {
		if running(h.sys, name, 0) {
			t.Fatalf("a replica runs for the record %q", name)
		}
	}
	if got := dirNames(t, victim); !slices.Equal(got, []string{"keep", "partition.metadata"}) {
		t.Fatalf("the directory outside the data dir was written to: %v", got)
	}
	if _, err := os.Stat(filepath.Join(root, "watched-0")); !os.IsNotExist(err) {
		t.Fatalf("a directory was created outside the data dir: %v", err)
	}
	if now, ok := h.sys.ProcessRegistry.GetLocal(messages.ReplicaActorID("events", 0)); !ok || now != eventsPID {
		t.Fatal("the replica of a topic whose record went bad was stopped or restarted")
	}
	md, err := request[*messages.MetadataResponse](t, h.sys, h.brk, &messages.MetadataRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tm := range md.Topics {
		names = append(names, tm.Name)
	}
	if !slices.Equal(names, []string{"after", "events"}) {
		t.Fatalf("metadata lists topics %v, want [after events]", names)
	}

	// Deleting the bad records removes nothing outside the data dir.
	for _, name := range []string{"../victim", "../watched"} {
		if _, err := e.Client().Delete(t.Context(), s.Keys().Topic(name)); err != nil {
			t.Fatal(err)
		}
	}
	createAndWait(t, h, "later")
	if got := dirNames(t, victim); !slices.Equal(got, []string{"keep", "partition.metadata"}) {
		t.Fatalf("the directory outside the data dir after the delete: %v", got)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "events-0", "partition.metadata")); err != nil {
		t.Fatalf("the data of a topic whose record went bad: %v", err)
	}
}

func TestBrokerRunsNoMoreReplicasThanItsCapacity(t *testing.T) {
	s := clustertest.NewMemStore(t)
	clustertest.RegisterMem(t, s, 1, 17122)
	h := startHost1(t, s, "127.0.0.1:17122", func(c *broker.Config) { c.MaxPartitionsPerHost = 2 })
	// The controller (its own capacity) accepts 3 partitions; this
	// broker runs 2 of them.
	clustertest.CreateTopic(t, h.sys, h.brk, &messages.CreateTopicRequest{Name: "events", Partitions: 3, ReplicationFactor: 1})
	clustertest.WaitFor(t, 10*time.Second, func() error {
		if !running(h.sys, "events", 0) || !running(h.sys, "events", 1) {
			return fmt.Errorf("partitions 0 and 1 not both running")
		}
		return nil
	})
	// All three came in one metadata event, handled in one reconcile that
	// spawned 0 and 1: a third would be running by now.
	if running(h.sys, "events", 2) {
		t.Fatal("a third replica runs on a host of capacity 2")
	}
}
