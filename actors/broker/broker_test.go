// broker_test.go: the broker actor with a controller against a real
// embedded etcd — a host whose registration goes loses its replicas but
// keeps its data; when it comes back and leads again, the log is intact.

package broker_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/actors/broker"
	"github.com/actorlog/actorlog/actors/controller"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage/record"
)

const timeout = 5 * time.Second

func request[T any](t *testing.T, sys *actor.ActorSystem, pid *actor.PID, msg any) (T, error) {
	t.Helper()
	var zero T
	res, err := sys.Root.RequestFuture(pid, msg, timeout).Result()
	if err != nil {
		return zero, err
	}
	v, ok := res.(T)
	if !ok {
		return zero, fmt.Errorf("answer %T, want %T", res, zero)
	}
	return v, nil
}

// host1 is a test host with id 1 at addr: a controller and a broker
// (over a new data directory) in one actor system, all stopped at cleanup.
type host1 struct {
	sys       *actor.ActorSystem
	ctrl, brk *actor.PID
	dataDir   string
}

func startHost1(t *testing.T, s *cluster.Store, addr string, opts ...func(*broker.Config)) host1 {
	t.Helper()
	h := host1{sys: actor.NewActorSystem(), dataDir: t.TempDir()}
	logger := clustertest.Logger(t)
	t.Cleanup(h.sys.Shutdown)
	h.ctrl = h.sys.Root.Spawn(controller.Props(controller.Config{HostID: 1, Store: s, RequestTimeout: timeout, Logger: logger}))
	cfg := broker.Config{
		HostID: 1, Address: addr, DataDir: h.dataDir, Store: s, Logger: logger,
		Controller: func() *actor.PID { return h.ctrl },
	}
	for _, o := range opts {
		o(&cfg)
	}
	var err error
	h.brk, err = h.sys.Root.SpawnNamed(broker.Props(cfg), messages.BrokerActorID)
	if err != nil {
		t.Fatalf("spawn broker: %v", err)
	}
	t.Cleanup(func() {
		for _, pid := range []*actor.PID{h.brk, h.ctrl} {
			if err := h.sys.Root.StopFuture(pid).Wait(); err != nil {
				t.Errorf("stop %v: %v", pid, err)
			}
		}
	})
	return h
}

// partitionOn1 creates topic "events" (2 partitions, RF=1) through the
// broker, once a controller is elected, and returns a partition on host 1.
func (h host1) partitionOn1(t *testing.T) int32 {
	t.Helper()
	topic := clustertest.CreateTopic(t, h.sys, h.brk, &messages.CreateTopicRequest{Name: "events", Partitions: 2, ReplicationFactor: 1})
	for _, p := range topic.Partitions {
		if p.Replicas[0] == 1 {
			return p.Partition
		}
	}
	t.Fatalf("no partition on host 1: %v", topic.Partitions)
	return -1
}

func TestOfflinePartitionKeepsItsData(t *testing.T) {
	s, _ := clustertest.NewStore(t)
	r1 := clustertest.Register(t, s, 1, 17101)
	clustertest.Register(t, s, 2, 17102)
	h := startHost1(t, s, "127.0.0.1:17101")
	sys, brk, dataDir := h.sys, h.brk, h.dataDir
	part := h.partitionOn1(t)
	replicaID := messages.ReplicaActorID("events", part)
	replicaPID := actor.NewPID(sys.Address(), replicaID)

	// Produce three records to host 1's partition.
	recs := make([]record.Record, 3)
	for i := range recs {
		recs[i] = record.Record{Value: []byte(fmt.Sprintf("v%d", i)), Timestamp: 1000}
	}
	b, err := record.BuildBatch(record.CompressionNone, recs...)
	if err != nil {
		t.Fatalf("build batch: %v", err)
	}
	clustertest.WaitFor(t, 10*time.Second, func() error {
		resp, err := request[*messages.ProduceResponse](t, sys, replicaPID, &messages.ProduceRequest{
			Topic: "events", Partition: part, Acks: messages.Acks_ACKS_LEADER, Records: b, CurrentLeaderEpoch: 0,
		})
		if err != nil {
			return err
		}
		if resp.ErrorCode != 0 {
			return resp.ErrorCode.Err(resp.ErrorMessage)
		}
		return nil
	})

	// Host 1 goes: its partition goes offline, its replica stops, its
	// data stays, and metadata says LEADER_NOT_AVAILABLE.
	if err := r1.Close(); err != nil {
		t.Fatalf("close host 1: %v", err)
	}
	clustertest.WaitFor(t, 10*time.Second, func() error {
		md, err := request[*messages.MetadataResponse](t, sys, brk, &messages.MetadataRequest{Topics: []string{"events"}})
		if err != nil {
			return err
		}
		pm := md.Topics[0].Partitions[part]
		if pm.Leader != -1 || pm.LeaderEpoch != 1 || pm.ErrorCode != messages.ErrorCode_ERROR_CODE_LEADER_NOT_AVAILABLE || pm.LeaderAddress != "" {
			return fmt.Errorf("partition metadata %v, want leader -1, epoch 1, LEADER_NOT_AVAILABLE", pm)
		}
		if _, ok := sys.ProcessRegistry.GetLocal(replicaID); ok {
			return errors.New("replica still running")
		}
		return nil
	})
	if _, err := os.Stat(filepath.Join(dataDir, fmt.Sprintf("events-%d", part), "partition.metadata")); err != nil {
		t.Fatalf("partition directory of the offline partition: %v", err)
	}

	// Host 1 returns: it leads again at epoch 2, with its three records.
	clustertest.Register(t, s, 1, 17101)
	clustertest.WaitFor(t, 10*time.Second, func() error {
		resp, err := request[*messages.ListOffsetsResponse](t, sys, replicaPID, &messages.ListOffsetsRequest{
			Topic: "events", Partition: part, Timestamp: -1, CurrentLeaderEpoch: 2,
		})
		if err != nil {
			return err
		}
		if resp.ErrorCode != 0 {
			return resp.ErrorCode.Err(resp.ErrorMessage)
		}
		if resp.Offset != 3 {
			t.Fatalf("log end offset after the host returned: %d, want 3", resp.Offset)
		}
		return nil
	})
}
