// config_test.go: Config.withDefaults as tables — every default it fills in
// for a zero Config, every explicit value it keeps (or normalizes), the
// defaults that follow from other fields, and the values it refuses.

package host

import (
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/cluster/netlimit"
)

func TestConfigDefaults(t *testing.T) {
	c, err := Config{}.withDefaults()
	if err != nil {
		t.Fatalf("zero Config: %v", err)
	}
	maxConns := netlimit.HostMaxConnections()
	tests := []struct {
		field     string
		got, want any
	}{
		{"Name", c.Name, "host-1"},
		{"HostID", c.HostID, int32(0)},
		{"DataDir", c.DataDir, "./data"},
		{"Listen", c.Listen, "127.0.0.1:7070"},
		{"Advertise", c.Advertise, "127.0.0.1:7070"},
		{"HTTP", c.HTTP, "127.0.0.1:7080"},
		{"PProf", c.PProf, false},
		{"EtcdPeer", c.EtcdPeer, "http://127.0.0.1:7071"},
		{"EtcdClient", c.EtcdClient, "http://127.0.0.1:7072"},
		{"EtcdInitialCluster", c.EtcdInitialCluster, ""},
		{"LeaseTTL", c.LeaseTTL, DefaultLeaseTTL},
		{"Logger", c.Logger, logrus.StandardLogger()},
		{"MaxConnections", c.MaxConnections, maxConns},
		{"MaxConnectionsPerIP", c.MaxConnectionsPerIP, netlimit.DefaultMaxConnectionsPerIP(maxConns)},
		// Zero here; the broker, controller and supervisor that read
		// them apply their own defaults.
		{"ReplicaLagTimeMax", c.ReplicaLagTimeMax, time.Duration(0)},
		{"MaxOpeningReplicas", c.MaxOpeningReplicas, 0},
		{"LeaderImbalanceCheckInterval", c.LeaderImbalanceCheckInterval, time.Duration(0)},
		{"OffsetsTopicPartitions", c.OffsetsTopicPartitions, int32(0)},
		{"GroupInitialRebalanceDelay", c.GroupInitialRebalanceDelay, time.Duration(0)},
		{"GroupMinSessionTimeout", c.GroupMinSessionTimeout, time.Duration(0)},
		{"OffsetsRetention", c.OffsetsRetention, time.Duration(0)},
		{"OffsetsRetentionCheckInterval", c.OffsetsRetentionCheckInterval, time.Duration(0)},
		{"RestartBackoff", c.RestartBackoff, time.Duration(0)},
		{"RestartBackoffMax", c.RestartBackoffMax, time.Duration(0)},
		{"HealthDescriptorRatio", c.HealthDescriptorRatio, 0.0},
		// Kafka's auto.create.topics.enable (off here, unlike Kafka),
		// num.partitions and default.replication.factor.
		{"AutoCreateTopics", c.AutoCreateTopics, false},
		{"NumPartitions", c.NumPartitions, int32(1)},
		{"DefaultReplicationFactor", c.DefaultReplicationFactor, int16(1)},
		// Kafka's log.cleaner.* defaults.
		{"LogCleanerThreads", c.LogCleanerThreads, 1},
		{"LogCleanerBackoff", c.LogCleanerBackoff, 15 * time.Second},
		{"LogCleanerDedupeBufferSize", c.LogCleanerDedupeBufferSize, int64(128 << 20)},
		{"LogCleanerIOMaxBytesPerSecond", c.LogCleanerIOMaxBytesPerSecond, int64(0)},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("%s = %v, want %v", tt.field, tt.got, tt.want)
			}
		})
	}
	if c.EtcdEndpoints != nil {
		t.Errorf("EtcdEndpoints = %v, want none", c.EtcdEndpoints)
	}
}

func TestConfigOverrides(t *testing.T) {
	logger := logrus.New()
	tests := []struct {
		name      string
		in        Config
		field     func(Config) any
		want      any
		unchanged []string // other fields that must keep their defaults
	}{
		{"Name", Config{Name: "alpha"}, func(c Config) any { return c.Name }, "alpha", nil},
		{"HostID names the host", Config{HostID: 3}, func(c Config) any { return c.Name }, "host-3", nil},
		{"HostID with a Name", Config{HostID: 3, Name: "alpha"}, func(c Config) any { return c.Name }, "alpha", nil},
		{"HostID kept", Config{HostID: 3}, func(c Config) any { return c.HostID }, int32(3), nil},
		{"DataDir", Config{DataDir: "/var/lib/actorlog"}, func(c Config) any { return c.DataDir }, "/var/lib/actorlog", nil},
		{"Listen", Config{Listen: "0.0.0.0:9000"}, func(c Config) any { return c.Listen }, "0.0.0.0:9000", nil},
		{"Listen sets Advertise", Config{Listen: "0.0.0.0:9000"}, func(c Config) any { return c.Advertise }, "0.0.0.0:9000", nil},
		{"Listen sets EtcdPeer", Config{Listen: "10.0.0.5:9000"}, func(c Config) any { return c.EtcdPeer }, "http://10.0.0.5:9001", nil},
		{"Listen sets EtcdClient", Config{Listen: "10.0.0.5:9000"}, func(c Config) any { return c.EtcdClient }, "http://10.0.0.5:9002", nil},
		{"Advertise", Config{Advertise: "h1.example:7070"}, func(c Config) any { return c.Advertise }, "h1.example:7070", []string{"Listen"}},
		{"HTTP", Config{HTTP: "off"}, func(c Config) any { return c.HTTP }, "off", nil},
		{"PProf", Config{PProf: true}, func(c Config) any { return c.PProf }, true, nil},
		{"EtcdPeer", Config{EtcdPeer: "http://10.0.0.5:2380"}, func(c Config) any { return c.EtcdPeer }, "http://10.0.0.5:2380", []string{"EtcdClient"}},
		{"EtcdPeer without a scheme", Config{EtcdPeer: "10.0.0.5:2380"}, func(c Config) any { return c.EtcdPeer }, "http://10.0.0.5:2380", nil},
		{"EtcdClient", Config{EtcdClient: "http://10.0.0.5:2379"}, func(c Config) any { return c.EtcdClient }, "http://10.0.0.5:2379", []string{"EtcdPeer"}},
		{"EtcdInitialCluster gives the peer", Config{Name: "b", EtcdInitialCluster: "a=http://h1:7071,b=http://h2:7071"},
			func(c Config) any { return c.EtcdPeer }, "http://h2:7071", []string{"EtcdClient"}},
		{"EtcdInitialCluster agreeing with EtcdPeer", Config{Name: "b", EtcdInitialCluster: "a=http://h1:7071,b=http://h2:7071", EtcdPeer: "http://h2:7071/"},
			func(c Config) any { return c.EtcdPeer }, "http://h2:7071/", nil},
		{"EtcdEndpoints skip the member URLs", Config{EtcdEndpoints: []string{"http://etcd:2379"}},
			func(c Config) any { return c.EtcdPeer + c.EtcdClient }, "", nil},
		{"EtcdUnsafeNoFsync", Config{EtcdUnsafeNoFsync: true}, func(c Config) any { return c.EtcdUnsafeNoFsync }, true, nil},
		{"LeaseTTL", Config{LeaseTTL: 10 * time.Second}, func(c Config) any { return c.LeaseTTL }, 10 * time.Second, nil},
		{"LeaseTTL at etcd's minimum", Config{LeaseTTL: 2 * time.Second}, func(c Config) any { return c.LeaseTTL }, 2 * time.Second, nil},
		{"negative LeaseTTL is the default", Config{LeaseTTL: -time.Second}, func(c Config) any { return c.LeaseTTL }, DefaultLeaseTTL, nil},
		{"ReplicaLagTimeMax", Config{ReplicaLagTimeMax: 5 * time.Second}, func(c Config) any { return c.ReplicaLagTimeMax }, 5 * time.Second, nil},
		{"MaxOpeningReplicas", Config{MaxOpeningReplicas: 4}, func(c Config) any { return c.MaxOpeningReplicas }, 4, nil},
		{"LeaderImbalanceCheckInterval", Config{LeaderImbalanceCheckInterval: time.Minute}, func(c Config) any { return c.LeaderImbalanceCheckInterval }, time.Minute, nil},
		{"OffsetsTopicPartitions", Config{OffsetsTopicPartitions: 4}, func(c Config) any { return c.OffsetsTopicPartitions }, int32(4), nil},
		{"GroupInitialRebalanceDelay", Config{GroupInitialRebalanceDelay: time.Second}, func(c Config) any { return c.GroupInitialRebalanceDelay }, time.Second, nil},
		{"GroupMinSessionTimeout", Config{GroupMinSessionTimeout: time.Second}, func(c Config) any { return c.GroupMinSessionTimeout }, time.Second, nil},
		{"OffsetsRetention", Config{OffsetsRetention: 48 * time.Hour}, func(c Config) any { return c.OffsetsRetention }, 48 * time.Hour, nil},
		{"OffsetsRetentionCheckInterval", Config{OffsetsRetentionCheckInterval: time.Minute}, func(c Config) any { return c.OffsetsRetentionCheckInterval }, time.Minute, nil},
		{"MaxConnections", Config{MaxConnections: 100}, func(c Config) any { return c.MaxConnections }, 100, nil},
		{"MaxConnections sets the per-IP default", Config{MaxConnections: 100}, func(c Config) any { return c.MaxConnectionsPerIP }, 50, nil},
		{"MaxConnectionsPerIP", Config{MaxConnectionsPerIP: 7}, func(c Config) any { return c.MaxConnectionsPerIP }, 7, []string{"MaxConnections"}},
		{"RestartBackoff", Config{RestartBackoff: time.Second, RestartBackoffMax: time.Minute},
			func(c Config) any { return [2]time.Duration{c.RestartBackoff, c.RestartBackoffMax} }, [2]time.Duration{time.Second, time.Minute}, nil},
		{"HealthDescriptorRatio", Config{HealthDescriptorRatio: 0.8}, func(c Config) any { return c.HealthDescriptorRatio }, 0.8, nil},
		{"Logger", Config{Logger: logger}, func(c Config) any { return c.Logger }, logger, nil},
		{"AutoCreateTopics", Config{AutoCreateTopics: true}, func(c Config) any { return c.AutoCreateTopics }, true, nil},
		{"NumPartitions", Config{NumPartitions: 6}, func(c Config) any { return c.NumPartitions }, int32(6), nil},
		{"DefaultReplicationFactor", Config{DefaultReplicationFactor: 3}, func(c Config) any { return c.DefaultReplicationFactor }, int16(3), nil},
		{"LogCleanerThreads", Config{LogCleanerThreads: 4}, func(c Config) any { return c.LogCleanerThreads }, 4, nil},
		{"LogCleanerBackoff", Config{LogCleanerBackoff: time.Second}, func(c Config) any { return c.LogCleanerBackoff }, time.Second, nil},
		{"LogCleanerDedupeBufferSize", Config{LogCleanerDedupeBufferSize: 1 << 20}, func(c Config) any { return c.LogCleanerDedupeBufferSize }, int64(1 << 20), nil},
		{"LogCleanerIOMaxBytesPerSecond", Config{LogCleanerIOMaxBytesPerSecond: 1 << 20}, func(c Config) any { return c.LogCleanerIOMaxBytesPerSecond }, int64(1 << 20), nil},
	}
	defaults, err := Config{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]func(Config) any{
		"Listen":         func(c Config) any { return c.Listen },
		"EtcdPeer":       func(c Config) any { return c.EtcdPeer },
		"EtcdClient":     func(c Config) any { return c.EtcdClient },
		"MaxConnections": func(c Config) any { return c.MaxConnections },
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.in.withDefaults()
			if err != nil {
				t.Fatalf("withDefaults: %v", err)
			}
			if got := tt.field(c); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			for _, f := range tt.unchanged {
				if got, want := fields[f](c), fields[f](defaults); got != want {
					t.Errorf("%s = %v, want the default %v", f, got, want)
				}
			}
		})
	}
}

func TestConfigRefusals(t *testing.T) {
	tests := []struct {
		name string
		in   Config
		want string // in the error
	}{
		{"negative HostID", Config{HostID: -1}, "must be positive"},
		{"bad Name", Config{Name: "no spaces"}, "--name"},
		{"LeaseTTL below etcd's minimum", Config{LeaseTTL: time.Second}, "below etcd's minimum"},
		{"negative MaxOpeningReplicas", Config{MaxOpeningReplicas: -1}, "--max-opening-replicas"},
		{"negative LeaderImbalanceCheckInterval", Config{LeaderImbalanceCheckInterval: -time.Second}, "--leader-imbalance-check-interval"},
		{"negative OffsetsTopicPartitions", Config{OffsetsTopicPartitions: -1}, "--offsets-topic-partitions"},
		{"negative GroupInitialRebalanceDelay", Config{GroupInitialRebalanceDelay: -time.Second}, "--group-initial-rebalance-delay"},
		{"negative GroupMinSessionTimeout", Config{GroupMinSessionTimeout: -time.Second}, "--group-min-session-timeout"},
		{"negative OffsetsRetention", Config{OffsetsRetention: -time.Hour}, "--offsets-retention -1h0m0s: want a positive duration"},
		{"negative OffsetsRetentionCheckInterval", Config{OffsetsRetentionCheckInterval: -time.Minute}, "--offsets-retention-check-interval -1m0s: want a positive duration"},
		{"negative RestartBackoff", Config{RestartBackoff: -time.Second}, "restart backoff"},
		{"negative RestartBackoffMax", Config{RestartBackoffMax: -time.Second}, "restart backoff"},
		{"HealthDescriptorRatio above 1", Config{HealthDescriptorRatio: 1.5}, "health descriptor ratio"},
		{"negative MaxConnections", Config{MaxConnections: -1}, "--max-connections"},
		{"negative MaxConnectionsPerIP", Config{MaxConnectionsPerIP: -1}, "--max-connections-per-ip"},
		{"negative NumPartitions", Config{NumPartitions: -1}, "--num-partitions"},
		{"negative LogCleanerThreads", Config{LogCleanerThreads: -1}, "--log-cleaner-threads"},
		{"negative LogCleanerBackoff", Config{LogCleanerBackoff: -time.Second}, "--log-cleaner-backoff"},
		{"negative LogCleanerDedupeBufferSize", Config{LogCleanerDedupeBufferSize: -1}, "--log-cleaner-dedupe-buffer-size -1"},
		{"LogCleanerDedupeBufferSize below 1 MiB a thread", Config{LogCleanerThreads: 4, LogCleanerDedupeBufferSize: 2 << 20}, "over 4 --log-cleaner-threads"},
		{"LogCleanerDedupeBufferSize above 2 GiB a thread", Config{LogCleanerDedupeBufferSize: 4 << 30}, "--log-cleaner-dedupe-buffer-size"},
		{"negative LogCleanerIOMaxBytesPerSecond", Config{LogCleanerIOMaxBytesPerSecond: -1}, "--log-cleaner-io-max-bytes-per-second"},
		{"NumPartitions above the topic limit", Config{NumPartitions: 10001}, "--num-partitions"},
		{"negative DefaultReplicationFactor", Config{DefaultReplicationFactor: -1}, "--default-replication-factor"},
		{"Listen without a port", Config{Listen: "127.0.0.1"}, "--listen"},
		{"Listen port too high", Config{Listen: "127.0.0.1:65534"}, "explicit port"},
		{"EtcdEndpoints with EtcdPeer", Config{EtcdEndpoints: []string{"http://etcd:2379"}, EtcdPeer: "http://h:2380"}, "excludes"},
		{"bad EtcdPeer", Config{EtcdPeer: "ftp://h:2380"}, "--etcd-peer"},
		{"bad EtcdClient", Config{EtcdClient: "http://h"}, "--etcd-client"},
		{"EtcdInitialCluster without this host", Config{Name: "c", EtcdInitialCluster: "a=http://h1:7071,b=http://h2:7071"}, "does not include this host"},
		{"EtcdInitialCluster naming a host twice", Config{Name: "a", EtcdInitialCluster: "a=http://h1:7071,a=http://h2:7071"}, "twice"},
		{"EtcdInitialCluster disagreeing with EtcdPeer", Config{Name: "a", EtcdInitialCluster: "a=http://h1:7071", EtcdPeer: "http://h9:7071"}, "but --etcd-peer is"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.in.withDefaults(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("withDefaults: %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}
