// broker_test.go: the broker actor with a controller — a host whose
// registration goes loses its replicas but keeps its data; when it comes
// back and leads again, the log is intact — and the helpers of the actor
// tests. They run on a cluster.MemStore; TestOfflinePartitionKeepsItsData
// also on a real embedded etcd (integration: real leases and watches), as
// does the test that writes records straight into etcd
// (limits_actor_test.go).

package broker_test

import (
	"errors"
	"fmt"
	"net"
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

// fixture is the metadata a broker test runs on: a MemStore, or a Store
// on a real embedded etcd.
type fixture struct {
	cluster.MetadataStore
	mem  *cluster.MemStore // set on MemStore
	etcd *cluster.Store    // set on etcd
}

// newMem returns a fixture on a MemStore.
func newMem(t *testing.T) *fixture {
	t.Helper()
	m := clustertest.NewMemStore(t)
	return &fixture{MetadataStore: m, mem: m}
}

// newEtcd returns a fixture on a real embedded etcd.
func newEtcd(t *testing.T) *fixture {
	t.Helper()
	s, _ := clustertest.NewStore(t)
	return &fixture{MetadataStore: s, etcd: s}
}

// onEach runs test as a subtest on a MemStore and on a real etcd.
func onEach(t *testing.T, test func(t *testing.T, s *fixture)) {
	for _, f := range []struct {
		name string
		new  func(t *testing.T) *fixture
	}{{"memory", newMem}, {"etcd", newEtcd}} {
		t.Run(f.name, func(t *testing.T) { test(t, f.new(t)) })
	}
}

// register registers fake host id at clustertest.HostAddress(port) until
// cleanup; leave ends the registration earlier, as an expired lease
// would.
func (s *fixture) register(t *testing.T, id int32, port int) (leave func() error) {
	t.Helper()
	if s.etcd != nil {
		return clustertest.Register(t, s.etcd, id, port).Close
	}
	clustertest.RegisterMem(t, s.mem, id, port)
	return func() error {
		if !s.mem.ExpireHost(id) {
			return fmt.Errorf("host %d was not registered", id)
		}
		return nil
	}
}

// listenHost listens on a free loopback port, accepting and closing
// connections until cleanup, and returns the port: a host registered
// there is one whose process is up (the controller's prober, which
// revokes the registration of a host whose dials are refused, leaves it
// be) though it runs no broker.
func listenHost(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ln.Close(); err != nil {
			t.Errorf("close listener %v: %v", ln.Addr(), err)
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed
			}
			_ = c.Close() // a probe's connection: nothing to say
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// host1 is a test host with id 1 at addr: a controller and a broker
// (over a new data directory) in one actor system, all stopped at cleanup.
type host1 struct {
	sys       *actor.ActorSystem
	ctrl, brk *actor.PID
	dataDir   string
}

func startHost1(t *testing.T, s cluster.MetadataStore, addr string, opts ...func(*broker.Config)) host1 {
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

func TestOfflinePartitionKeepsItsData(t *testing.T) { onEach(t, testOfflinePartitionKeepsItsData) }

func testOfflinePartitionKeepsItsData(t *testing.T, s *fixture) {
	leave1 := s.register(t, 1, 17101)
	s.register(t, 2, 17102)
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
	if err := leave1(); err != nil {
		t.Fatalf("host 1 leaves: %v", err)
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
	s.register(t, 1, 17101)
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
