// clusterid_test.go: the cluster id on etcd — kept across a new Store over
// the same etcd, a corrupt stored id refused, not replaced — and host
// registrations with bad addresses written straight into etcd treated as
// absent; ValidateHostInfo as a table.

package cluster_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
)

func TestClusterIDKeptAndCorruptRefused(t *testing.T) {
	t.Parallel()
	store, e := clustertest.NewStore(t)
	ctx := testCtx(t, 20*time.Second)
	id, err := store.ClusterID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Another Store over the same etcd and prefix (another host, or this
	// one restarted) reads the same id.
	other := cluster.NewStore(e.Client(), store.Keys().Prefix(), clustertest.Logger(t))
	if again, err := other.ClusterID(ctx); err != nil || again != id {
		t.Fatalf("cluster id through another store = %q, %v; want %q", again, err, id)
	}
	if _, err := e.Client().Put(ctx, store.Keys().ClusterID(), "not-an-id"); err != nil {
		t.Fatal(err)
	}
	_, err = store.ClusterID(ctx)
	wantErr(t, err, cluster.ErrCorruptMetadata)
	if resp, err := e.Client().Get(ctx, store.Keys().ClusterID()); err != nil || string(resp.Kvs[0].Value) != "not-an-id" {
		t.Fatalf("the corrupt id was replaced: %v, %v", resp, err)
	}
}

func TestHostRecordWithBadAddressIsAbsent(t *testing.T) {
	t.Parallel()
	store, e := clustertest.NewStore(t)
	ctx := testCtx(t, 20*time.Second)
	reg, err := store.Register(ctx, &messages.HostInfo{HostId: 1, AdvertisedAddress: "127.0.0.1:7070", KafkaAddress: "127.0.0.1:9092"}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := reg.Close(); err != nil {
			t.Errorf("close registration: %v", err)
		}
	})
	for id, addr := range map[int32]string{2: "0.0.0.0:9092", 3: "nohost", 4: "h:65536"} {
		val, err := proto.Marshal(&messages.HostInfo{HostId: id, AdvertisedAddress: "h:1", KafkaAddress: addr})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Client().Put(ctx, store.Keys().Host(id), string(val)); err != nil {
			t.Fatal(err)
		}
	}
	hosts, err := store.ListHosts(ctx)
	if err != nil || len(hosts) != 1 || hosts[0].GetHostId() != 1 || hosts[0].GetKafkaAddress() != "127.0.0.1:9092" {
		t.Fatalf("list hosts = %v, %v; want host 1 only", hosts, err)
	}
	snap, err := store.Snapshot(ctx)
	if err != nil || len(snap.Hosts) != 1 {
		t.Fatalf("snapshot hosts = %v, %v; want host 1 only", snap.Hosts, err)
	}
}

func TestValidateHostInfo(t *testing.T) {
	tests := []struct {
		name string
		info *messages.HostInfo
		ok   bool
	}{
		{"no addresses", &messages.HostInfo{HostId: 1}, true},
		{"all set", &messages.HostInfo{HostId: 1, AdvertisedAddress: "host1:7070", HttpAddress: "0.0.0.0:7080", KafkaAddress: "host1:9092"}, true},
		{"http off", &messages.HostInfo{HostId: 1, HttpAddress: "off"}, true},
		{"IPv6 Kafka address", &messages.HostInfo{HostId: 1, KafkaAddress: "[::1]:9092"}, true},
		{"advertised without port", &messages.HostInfo{HostId: 1, AdvertisedAddress: "host1"}, false},
		{"advertised without host", &messages.HostInfo{HostId: 1, AdvertisedAddress: ":7070"}, false},
		{"http port out of range", &messages.HostInfo{HostId: 1, HttpAddress: "h:70000"}, false},
		{"Kafka port 0", &messages.HostInfo{HostId: 1, KafkaAddress: "h:0"}, false},
		{"Kafka unspecified IPv4", &messages.HostInfo{HostId: 1, KafkaAddress: "0.0.0.0:9092"}, false},
		{"Kafka unspecified IPv6", &messages.HostInfo{HostId: 1, KafkaAddress: "[::]:9092"}, false},
		{"Kafka host with a space", &messages.HostInfo{HostId: 1, KafkaAddress: "a b:9092"}, false},
		{"Kafka port not a number", &messages.HostInfo{HostId: 1, KafkaAddress: "h:x"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := cluster.ValidateHostInfo(tt.info)
			if tt.ok && err != nil {
				t.Fatalf("ValidateHostInfo: %v", err)
			}
			if !tt.ok {
				wantErr(t, err, cluster.ErrInvalidHostAddress)
			}
		})
	}
}
