// kafka_test.go: the host's Kafka listener — its address settings as a
// table, the default address skipped when busy and an explicit one refused,
// Metadata through franz-go (kgo + kadm) and kcat against a real in-process
// host (hosts, topics, partitions, leaders, ISR, controller, a cluster id
// kept across a restart over the same data directory), and the mapping of
// the broker's cache to the listener's structs as a pure table.

package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/actorlog/actorlog/actors/broker"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/kafka"
	"github.com/actorlog/actorlog/messages"
)

func TestKafkaConfig(t *testing.T) {
	tests := []struct {
		name                   string
		in                     Config
		listen, advertise, err string
		optional               bool
	}{
		{name: "default", in: Config{}, listen: DefaultKafkaListen, advertise: DefaultKafkaListen, optional: true},
		{name: "off", in: Config{KafkaListen: KafkaOff}, listen: KafkaOff},
		{name: "explicit", in: Config{KafkaListen: "127.0.0.2:9192"}, listen: "127.0.0.2:9192", advertise: "127.0.0.2:9192"},
		{name: "explicit with advertise", in: Config{KafkaListen: "127.0.0.1:9192", KafkaAdvertise: "kafka.example:19192"},
			listen: "127.0.0.1:9192", advertise: "kafka.example:19192"},
		{name: "port 0 keeps port 0 until bound", in: Config{KafkaListen: "127.0.0.1:0"}, listen: "127.0.0.1:0", advertise: "127.0.0.1:0"},
		{name: "every interface takes the host of --advertise", in: Config{KafkaListen: "0.0.0.0:9092", Advertise: "host1:7070"},
			listen: "0.0.0.0:9092", advertise: "host1:9092"},
		{name: "every interface, IPv6, with advertise", in: Config{KafkaListen: "[::]:9092", KafkaAdvertise: "[::1]:9092"},
			listen: "[::]:9092", advertise: "[::1]:9092"},
		{name: "every interface and no name", in: Config{KafkaListen: "0.0.0.0:9092", Listen: "0.0.0.0:7070"}, err: "give --kafka-advertise"},
		{name: "empty host is every interface", in: Config{KafkaListen: ":9092"}, listen: ":9092", advertise: "127.0.0.1:9092"},
		{name: "no port", in: Config{KafkaListen: "127.0.0.1"}, err: "--kafka-listen"},
		{name: "port out of range", in: Config{KafkaListen: "127.0.0.1:70000"}, err: "port in 0-65535"},
		{name: "advertise unspecified", in: Config{KafkaAdvertise: "0.0.0.0:9092"}, err: "--kafka-advertise"},
		{name: "advertise port 0", in: Config{KafkaAdvertise: "h:0"}, err: "--kafka-advertise"},
		{name: "advertise without a listener", in: Config{KafkaListen: KafkaOff, KafkaAdvertise: "h:9092"}, err: "without a Kafka listener"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.in.withDefaults()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("withDefaults: %v, want an error mentioning %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("withDefaults: %v", err)
			}
			if c.KafkaListen != tt.listen || c.KafkaAdvertise != tt.advertise || c.kafkaDefault != tt.optional {
				t.Fatalf("listen %q advertise %q default %v; want %q %q %v", c.KafkaListen, c.KafkaAdvertise, c.kafkaDefault, tt.listen, tt.advertise, tt.optional)
			}
		})
	}
}

// busyPort holds a loopback port for the test and returns its address.
func busyPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ln.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return ln.Addr().String()
}

func TestKafkaDefaultAddressBusyRunsWithout(t *testing.T) {
	busy := busyPort(t)
	// As if --kafka-listen were not given and its default were busy.
	h := startTestHost(t, func(c *Config) { c.KafkaListen, c.kafkaDefault = busy, true })
	if h.KafkaAddress() != "" || h.kafkaLn != nil {
		t.Fatalf("Kafka address %q with the default address busy; want none", h.KafkaAddress())
	}
	hosts, err := h.store.ListHosts(context.Background())
	if err != nil || len(hosts) != 1 || hosts[0].GetKafkaAddress() != "" {
		t.Fatalf("registrations %v, %v; want one without a Kafka address", hosts, err)
	}
}

func TestKafkaExplicitAddressBusyFailsStart(t *testing.T) {
	busy := busyPort(t)
	cfg := Config{
		Name: "host-1", DataDir: t.TempDir(), Listen: net.JoinHostPort("127.0.0.1", strconv.Itoa(clustertest.FreePortBase(t))), HTTP: "off",
		KafkaListen: busy, EtcdUnsafeNoFsync: true, Logger: clustertest.Logger(t).Logger,
	}
	ctx, cancel := context30s()
	defer cancel()
	h, err := Start(ctx, cfg)
	if err == nil {
		if serr := h.Shutdown(ctx); serr != nil {
			t.Errorf("shutdown: %v", serr)
		}
		t.Fatal("started with its explicit Kafka address in use")
	}
	if !strings.Contains(err.Error(), "--kafka-listen "+busy) {
		t.Fatalf("start: %v; want the --kafka-listen address named", err)
	}
}

// kafkaAdmin returns a kadm client bootstrapped to addr, closed at cleanup.
func kafkaAdmin(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MetadataMinAge(10*time.Millisecond))
	if err != nil {
		t.Fatalf("kgo client: %v", err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// waitKafkaMetadata polls Metadata through adm until check accepts it.
func waitKafkaMetadata(t *testing.T, adm *kadm.Client, check func(kadm.Metadata) error) kadm.Metadata {
	t.Helper()
	var md kadm.Metadata
	clustertest.WaitFor(t, 20*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		if md, err = adm.Metadata(ctx); err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
		return check(md)
	})
	return md
}

func TestKafkaMetadataFromRealHost(t *testing.T) {
	var cfg Config
	h := startTestHost(t, func(c *Config) {
		c.KafkaListen = "127.0.0.1:0"
		cfg = *c
	})
	addr := h.KafkaAddress()
	if addr == "" || strings.HasSuffix(addr, ":0") {
		t.Fatalf("Kafka address %q: want the bound port", addr)
	}
	if err := cluster.ValidateClusterID(h.ClusterID()); err != nil {
		t.Fatalf("cluster id: %v", err)
	}
	brk := actor.NewPID(h.system.Address(), messages.BrokerActorID)
	clustertest.CreateTopic(t, h.system, brk, &messages.CreateTopicRequest{Name: "orders", Partitions: 3, ReplicationFactor: 1})
	id := h.hostID.Load()

	adm := kafkaAdmin(t, addr)
	md := waitKafkaMetadata(t, adm, func(md kadm.Metadata) error {
		td, ok := md.Topics["orders"]
		if !ok || len(td.Partitions) != 3 {
			return fmt.Errorf("topics %v: want orders with 3 partitions", md.Topics.Names())
		}
		for _, p := range td.Partitions {
			if p.Leader != id || p.Err != nil {
				return fmt.Errorf("orders-%d led by %d (%v), want %d", p.Partition, p.Leader, p.Err, id)
			}
		}
		return nil
	})
	if md.Cluster != h.ClusterID() {
		t.Fatalf("cluster id %q, want %q", md.Cluster, h.ClusterID())
	}
	if md.Controller != id {
		t.Fatalf("controller %d, want %d", md.Controller, id)
	}
	if len(md.Brokers) != 1 || md.Brokers[0].NodeID != id || net.JoinHostPort(md.Brokers[0].Host, strconv.Itoa(int(md.Brokers[0].Port))) != addr {
		t.Fatalf("brokers %+v, want node %d at %s", md.Brokers, id, addr)
	}
	td := md.Topics["orders"]
	if td.ID.String() == "" || td.IsInternal {
		t.Fatalf("topic %+v: want an id, not internal", td)
	}
	for _, p := range td.Partitions.Sorted() {
		if !slices.Equal(p.Replicas, []int32{id}) || !slices.Equal(p.ISR, []int32{id}) || len(p.OfflineReplicas) != 0 || p.LeaderEpoch < 0 {
			t.Fatalf("partition %+v: want replicas and ISR [%d], none offline", p, id)
		}
	}
	// A name the cluster does not know.
	ctx, cancel := context30s()
	defer cancel()
	unknown, err := adm.Metadata(ctx, "nope")
	if err != nil {
		t.Fatalf("metadata of an unknown topic: %v", err)
	}
	if td, ok := unknown.Topics["nope"]; !ok || td.Err == nil {
		t.Fatalf("unknown topic answered %+v; want UNKNOWN_TOPIC_OR_PARTITION", td)
	}

	if path, err := exec.LookPath("kcat"); err == nil {
		kcatLists(t, path, addr, "orders", 3, id)
	} else {
		t.Log("kcat not installed: kcat -L not checked")
	}

	// Restarted over the same data directory and etcd: the same cluster
	// id, and its Kafka listener serves again.
	clusterID := h.ClusterID()
	if err := h.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	again, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context30s()
		defer cancel()
		if err := again.Shutdown(ctx); err != nil {
			t.Errorf("shut the restarted host down: %v", err)
		}
	})
	if again.ClusterID() != clusterID {
		t.Fatalf("cluster id after a restart %q, want %q", again.ClusterID(), clusterID)
	}
	md = waitKafkaMetadata(t, kafkaAdmin(t, again.KafkaAddress()), func(md kadm.Metadata) error {
		if td, ok := md.Topics["orders"]; !ok || len(td.Partitions) != 3 {
			return fmt.Errorf("topics %v after the restart", md.Topics.Names())
		}
		return nil
	})
	if md.Cluster != clusterID {
		t.Fatalf("cluster id through Kafka after a restart %q, want %q", md.Cluster, clusterID)
	}
}

// kcatLists runs `kcat -L -J` against addr and checks it lists topic with
// n partitions led by leader.
func kcatLists(t *testing.T, kcat, addr, topic string, n int, leader int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, kcat, "-b", addr, "-L", "-J", "-m", "10").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("kcat -L: %v: %s", err, ee.Stderr)
		}
		t.Fatalf("kcat -L: %v", err)
	}
	var md struct {
		Brokers []struct {
			ID   int32  `json:"id"`
			Name string `json:"name"`
		} `json:"brokers"`
		Topics []struct {
			Topic      string `json:"topic"`
			Partitions []struct {
				Partition int32 `json:"partition"`
				Leader    int32 `json:"leader"`
			} `json:"partitions"`
		} `json:"topics"`
	}
	if err := json.Unmarshal(out, &md); err != nil {
		t.Fatalf("kcat -L -J output %q: %v", out, err)
	}
	if len(md.Brokers) != 1 || md.Brokers[0].ID != leader || md.Brokers[0].Name != addr {
		t.Fatalf("kcat brokers %+v, want %d at %s", md.Brokers, leader, addr)
	}
	for _, tp := range md.Topics {
		if tp.Topic != topic {
			continue
		}
		if len(tp.Partitions) != n {
			t.Fatalf("kcat lists %s with %d partitions, want %d", topic, len(tp.Partitions), n)
		}
		for _, p := range tp.Partitions {
			if p.Leader != leader {
				t.Fatalf("kcat: %s-%d led by %d, want %d", topic, p.Partition, p.Leader, leader)
			}
		}
		return
	}
	t.Fatalf("kcat -L lists no topic %s: %s", topic, out)
}

func TestToClusterMetadata(t *testing.T) {
	const id = "AAAAAAAAAAAAAAAAAAAAAQ" // 15 zero bytes and a 1
	md := &broker.KafkaMetadata{
		Synced: true,
		Hosts: []*messages.HostInfo{
			{HostId: 1, KafkaAddress: "k1:9092", Rack: "r1"},
			{HostId: 2}, // live, no Kafka listener
			{HostId: 4, KafkaAddress: "[::1]:19092"},
		},
		Topics: []*messages.TopicMetadata{
			{Name: "a", TopicId: id, Partitions: []*messages.PartitionState{
				{Partition: 0, Leader: 1, LeaderEpoch: 3, Replicas: []int32{1, 2, 3}, Isr: []int32{1, 2}},
				{Partition: 1, Leader: 2, LeaderEpoch: 1, Replicas: []int32{2, 1}, Isr: []int32{2}},
			}},
			{Name: "gone", Deleting: true, Partitions: []*messages.PartitionState{{Partition: 0, Leader: 1, Replicas: []int32{1}, Isr: []int32{1}}}},
			{Name: messages.OffsetsTopic, TopicId: "bad id", Partitions: []*messages.PartitionState{{Partition: 0, Leader: -1, Replicas: []int32{3}}}},
		},
	}
	got := toClusterMetadata(md, logrus.NewEntry(logrus.New()))
	wantBrokers := []kafka.Broker{{NodeID: 1, Host: "k1", Port: 9092, Rack: "r1"}, {NodeID: 4, Host: "::1", Port: 19092}}
	if !slices.Equal(got.Brokers, wantBrokers) {
		t.Fatalf("brokers %+v, want %+v", got.Brokers, wantBrokers)
	}
	if len(got.Topics) != 2 || got.Topics[0].Name != "a" || got.Topics[1].Name != messages.OffsetsTopic {
		t.Fatalf("topics %+v: want a and %s, not the one being deleted", got.Topics, messages.OffsetsTopic)
	}
	a := got.Topics[0]
	if a.ID.String() != id || a.Internal {
		t.Fatalf("topic a: id %s internal %v", a.ID, a.Internal)
	}
	p0, p1 := a.Partitions[0], a.Partitions[1]
	if p0.Leader != 1 || p0.LeaderEpoch != 3 || !slices.Equal(p0.Replicas, []int32{1, 2, 3}) || !slices.Equal(p0.ISR, []int32{1, 2}) || !slices.Equal(p0.Offline, []int32{3}) {
		t.Fatalf("a-0 %+v: want leader 1 epoch 3, replica 3 offline", p0)
	}
	// Led by a live host without a Kafka listener: passed through (the
	// listener reports it LEADER_NOT_AVAILABLE, its leader not a broker).
	if p1.Leader != 2 || len(p1.Offline) != 0 {
		t.Fatalf("a-1 %+v", p1)
	}
	off := got.Topics[1]
	if !off.Internal || !off.ID.IsZero() || off.Partitions[0].Leader != -1 || off.Partitions[0].ISR == nil {
		t.Fatalf("offsets topic %+v: internal, no id (malformed), no leader, empty ISR", off)
	}
}
