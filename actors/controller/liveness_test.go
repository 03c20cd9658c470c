// liveness_test.go: the controller actor — hosts whose registrations go
// and come back move partition leadership — and the helpers of the actor
// tests. They run on a cluster.MemStore; TestHostLeavesAndReturns also on
// a real embedded etcd (integration), as do the tests that write records
// straight into etcd (limits_actor_test.go).

package controller_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/actors/controller"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/internal/poll"
	"github.com/actorlog/actorlog/messages"
)

// hostReg is a fake host's registration: Close ends it, as a host that
// stops (or whose lease expires) does.
type hostReg interface{ Close() error }

// memReg is a MemStore registration.
type memReg struct {
	m  *cluster.MemStore
	id int32
}

func (r memReg) Close() error {
	r.m.ExpireHost(r.id)
	return nil
}

// fixture is the metadata a controller test runs on: a MemStore, or a
// Store on a real embedded etcd.
type fixture struct {
	cluster.MetadataStore
	mem  *cluster.MemStore // set on MemStore
	etcd *cluster.Store    // set on etcd
	e    *cluster.Etcd     // set on etcd
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
	s, e := clustertest.NewStore(t)
	return &fixture{MetadataStore: s, etcd: s, e: e}
}

// fixtures are the stores a test runs on with onEach.
var fixtures = []struct {
	name string
	new  func(t *testing.T) *fixture
}{{"memory", newMem}, {"etcd", newEtcd}}

// onEach runs test as a subtest on every fixture.
func onEach(t *testing.T, test func(t *testing.T, s *fixture)) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) { test(t, f.new(t)) })
	}
}

// register registers fake host id (its address hostAddr(id)), closed at
// cleanup.
func register(t *testing.T, s *fixture, id int32) hostReg {
	t.Helper()
	if s.etcd != nil {
		return clustertest.Register(t, s.etcd, id, 17000+int(id))
	}
	clustertest.RegisterMem(t, s.mem, id, 17000+int(id))
	return memReg{s.mem, id}
}

// hostAddr is the advertised address register gives host id: requests
// sent from it (clustertest.RequestAs) come from that host.
func hostAddr(id int32) string { return clustertest.HostAddress(17000 + int(id)) }

// spawnController starts a controller actor on s in its own actor system
// and stops it at cleanup (or earlier, through the returned func).
func spawnController(t *testing.T, s cluster.MetadataStore, maxRF int32) (*actor.ActorSystem, *actor.PID, func()) {
	t.Helper()
	return spawnControllerWith(t, controller.Config{HostID: 1, Store: s, RequestTimeout: 5 * time.Second, MaxReplicationFactor: maxRF})
}

// spawnControllerWith is spawnController with a config of the test's
// choosing (its Logger is set here).
func spawnControllerWith(t *testing.T, cfg controller.Config) (*actor.ActorSystem, *actor.PID, func()) {
	t.Helper()
	cfg.Logger = clustertest.Logger(t)
	sys := actor.NewActorSystem()
	clustertest.RouteFakeSenders(sys)
	pid := sys.Root.Spawn(controller.Props(cfg))
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		if err := sys.Root.StopFuture(pid).Wait(); err != nil {
			t.Errorf("stop controller: %v", err)
		}
		sys.Shutdown()
	}
	t.Cleanup(stop)
	return sys, pid, stop
}

// waitPartitions polls the stored topic until check passes for every
// partition, and returns the topic.
func waitPartitions(t *testing.T, s cluster.MetadataStore, name string, check func(p *messages.PartitionState) error) *messages.TopicMetadata {
	t.Helper()
	var topic *messages.TopicMetadata
	poll.Until(t, 10*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		tp, _, err := s.GetTopic(ctx, name)
		if err != nil {
			return err
		}
		for _, p := range tp.Partitions {
			if err := check(p); err != nil {
				return fmt.Errorf("partition %d (%v): %w", p.Partition, p, err)
			}
		}
		topic = tp
		return nil
	})
	return topic
}

// state checks one partition: which leader and epochs a host's partitions
// should have, by the host that owns them (RF=1).
func state(want map[int32][3]int32) func(p *messages.PartitionState) error {
	return func(p *messages.PartitionState) error {
		w := want[p.Replicas[0]]
		if p.Leader != w[0] || p.LeaderEpoch != w[1] || p.PartitionEpoch != w[2] {
			return fmt.Errorf("leader %d, epochs %d/%d; want leader %d, epochs %d/%d",
				p.Leader, p.LeaderEpoch, p.PartitionEpoch, w[0], w[1], w[2])
		}
		if len(p.Isr) != 1 || p.Isr[0] != p.Replicas[0] {
			return fmt.Errorf("ISR %v, want [%d]", p.Isr, p.Replicas[0])
		}
		return nil
	}
}

func TestHostLeavesAndReturns(t *testing.T) { onEach(t, testHostLeavesAndReturns) }

func testHostLeavesAndReturns(t *testing.T, s *fixture) {
	register(t, s, 1)
	r2 := register(t, s, 2)
	sys, pid, _ := spawnController(t, s, 1)
	created := clustertest.CreateTopic(t, sys, pid, &messages.CreateTopicRequest{Name: "events", Partitions: 4, ReplicationFactor: 1})
	on := map[int32]int{}
	for _, p := range created.Partitions {
		on[p.Replicas[0]]++
	}
	if on[1] == 0 || on[2] == 0 {
		t.Fatalf("partitions not spread over both hosts: %v", created.Partitions)
	}

	if err := r2.Close(); err != nil {
		t.Fatalf("close host 2: %v", err)
	}
	waitPartitions(t, s, "events", state(map[int32][3]int32{1: {1, 0, 0}, 2: {-1, 1, 1}}))

	register(t, s, 2)
	waitPartitions(t, s, "events", state(map[int32][3]int32{1: {1, 0, 0}, 2: {2, 2, 2}}))
}

// TestElectionCatchesUp: a host that left while no controller was elected
// loses its leaderships as soon as a controller is.
func TestElectionCatchesUp(t *testing.T) {
	s := newMem(t)
	register(t, s, 1)
	r2 := register(t, s, 2)
	sys, pid, stop := spawnController(t, s, 1)
	clustertest.CreateTopic(t, sys, pid, &messages.CreateTopicRequest{Name: "events", Partitions: 2, ReplicationFactor: 1})
	stop()

	if err := r2.Close(); err != nil {
		t.Fatalf("close host 2: %v", err)
	}
	spawnController(t, s, 1)
	waitPartitions(t, s, "events", state(map[int32][3]int32{1: {1, 0, 0}, 2: {-1, 1, 1}}))
}

// TestUncleanElection: with RF=2, when both hosts leave in turn the
// partition goes offline keeping the last ISR member; the other host
// returning does not lead it (clean), until unclean election is enabled.
func TestUncleanElection(t *testing.T) {
	s := newMem(t)
	r1 := register(t, s, 1)
	r2 := register(t, s, 2)
	sys, pid, _ := spawnController(t, s, 2)
	created := clustertest.CreateTopic(t, sys, pid, &messages.CreateTopicRequest{Name: "events", Partitions: 1, ReplicationFactor: 2})
	first, second := created.Partitions[0].Replicas[0], created.Partitions[0].Replicas[1]
	regs := map[int32]hostReg{1: r1, 2: r2}
	want := func(leader int32, isr []int32, leaderEpoch, partitionEpoch int32) func(p *messages.PartitionState) error {
		return func(p *messages.PartitionState) error {
			if p.Leader != leader || !slices.Equal(p.Isr, isr) || p.LeaderEpoch != leaderEpoch || p.PartitionEpoch != partitionEpoch {
				return fmt.Errorf("want leader %d, ISR %v, epochs %d/%d", leader, isr, leaderEpoch, partitionEpoch)
			}
			return nil
		}
	}

	if err := regs[first].Close(); err != nil {
		t.Fatalf("close host %d: %v", first, err)
	}
	waitPartitions(t, s, "events", want(second, []int32{second}, 1, 1))
	if err := regs[second].Close(); err != nil {
		t.Fatalf("close host %d: %v", second, err)
	}
	waitPartitions(t, s, "events", want(-1, []int32{second}, 2, 2))

	register(t, s, first) // not in the ISR: stays offline
	alter(t, sys, pid, "events", map[string]string{cluster.ConfigUncleanLeaderElectionEnable: "false"})
	waitPartitions(t, s, "events", want(-1, []int32{second}, 2, 2))

	alter(t, sys, pid, "events", map[string]string{cluster.ConfigUncleanLeaderElectionEnable: "true"})
	waitPartitions(t, s, "events", want(first, []int32{first}, 3, 3))
}

func alter(t *testing.T, sys *actor.ActorSystem, pid *actor.PID, name string, configs map[string]string) {
	t.Helper()
	res, err := sys.Root.RequestFuture(pid, &messages.AlterTopicConfigsRequest{Name: name, Configs: configs}, 5*time.Second).Result()
	if err != nil {
		t.Fatalf("alter configs: %v", err)
	}
	if resp := res.(*messages.AdminResponse); resp.ErrorCode != 0 {
		t.Fatalf("alter configs: %v", resp.ErrorCode.Err(resp.ErrorMessage))
	}
}
