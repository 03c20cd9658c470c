// validate_test.go: table tests of topic name, config and topic validation
// and of the config-to-storage mapping.

package cluster_test

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage"
)

func TestValidateTopicName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"orders", true},
		{"Orders.v2_eu-west-1", true},
		{"a", true},
		{"...", true},
		{"__consumer_offsets", true},
		{strings.Repeat("x", 249), true},
		{strings.Repeat("x", 250), false},
		{"", false},
		{".", false},
		{"..", false},
		{"a/b", false},
		{"a b", false},
		{"topic!", false},
		{"tôpic", false},
		{"a\x00", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := cluster.ValidateTopicName(tt.name)
			if tt.ok && err != nil {
				t.Fatalf("ValidateTopicName(%q) = %v, want nil", tt.name, err)
			}
			if !tt.ok && !errors.Is(err, cluster.ErrInvalidTopic) {
				t.Fatalf("ValidateTopicName(%q) = %v, want ErrInvalidTopic", tt.name, err)
			}
		})
	}
}

// TestValidateTopicNameNamesTheCharacter: the error names the offending
// character itself, not the first byte of its UTF-8 encoding.
func TestValidateTopicNameNamesTheCharacter(t *testing.T) {
	for name, want := range map[string]string{
		"tôpic": "character 'ô' at byte 1",
		"a b":   "character ' ' at byte 1",
		"a\xff": `character "\xff" at byte 1`,
	} {
		if err := cluster.ValidateTopicName(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidateTopicName(%q) = %v, want it to say %s", name, err, want)
		}
	}
}

func TestValidateTopicConfigs(t *testing.T) {
	tests := []struct {
		key, value string
		ok         bool
	}{
		{"retention.ms", "-1", true},
		{"retention.ms", "1", true},
		{"retention.ms", "604800000", true},
		{"retention.ms", "9223372036854775807", true},
		{"retention.ms", "0", false},
		{"retention.ms", "-2", false},
		{"retention.ms", "1h", false},
		{"retention.ms", "", false},
		{"retention.bytes", "-1", true},
		{"retention.bytes", "0", true},
		{"retention.bytes", "1073741824", true},
		{"retention.bytes", "-2", false},
		// Kafka 4's minimum (KIP-1030): one segment per record would cost
		// three descriptors a record.
		{"segment.bytes", "1048576", true},
		{"segment.bytes", "1048575", false},
		{"segment.bytes", "65536", false},
		{"segment.bytes", "100", false},
		{"segment.bytes", "61", false},
		{"segment.bytes", "14", false},
		{"segment.bytes", "2147483647", true},
		{"segment.bytes", "2147483648", false},
		{"segment.ms", "1", true},
		{"segment.ms", "0", false},
		{"segment.ms", "-1", false},
		{"max.message.bytes", "1048588", true},
		{"max.message.bytes", "61", true},
		{"max.message.bytes", "60", false},
		{"max.message.bytes", "0", false},
		// A user may set at most MaxMessageBytesLimit (64 MiB): a batch
		// must fit one message of the actor remote.
		{"max.message.bytes", "67108864", true},
		{"max.message.bytes", "67108865", false},
		{"max.message.bytes", "2147483635", false},
		{"max.message.bytes", "2147483636", false},
		{"flush.policy", "never", true},
		{"flush.policy", "batch", true},
		{"flush.policy", "100ms", true},
		{"flush.policy", "0s", false},
		{"flush.policy", "-1s", false},
		{"flush.policy", "always", false},
		{"flush.policy", "", false},
		{"min.insync.replicas", "1", true},
		{"min.insync.replicas", "3", true},
		{"min.insync.replicas", "0", false},
		{"min.insync.replicas", "2147483648", false},
		{"message.timestamp.type", "CreateTime", true},
		{"message.timestamp.type", "LogAppendTime", true},
		{"message.timestamp.type", "createtime", false},
		{"unclean.leader.election.enable", "true", true},
		{"unclean.leader.election.enable", "False", true},
		{"unclean.leader.election.enable", "yes", false},
		{"unclean.leader.election.enable", "", false},
		{"cleanup.policies", "delete", false}, // unknown key (cleanup.policy: compaction_config_test.go)
		{"", "1", false},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			err := cluster.ValidateTopicConfigs(map[string]string{tt.key: tt.value})
			if tt.ok && err != nil {
				t.Fatalf("%s=%q: %v, want nil", tt.key, tt.value, err)
			}
			if !tt.ok && !errors.Is(err, cluster.ErrInvalidConfig) {
				t.Fatalf("%s=%q: %v, want ErrInvalidConfig", tt.key, tt.value, err)
			}
		})
	}
	if err := cluster.ValidateTopicConfigs(nil); err != nil {
		t.Fatalf("nil configs: %v", err)
	}
}

func TestStorageConfig(t *testing.T) {
	tests := []struct {
		name    string
		configs map[string]string
		want    storage.Config
		minISR  int
	}{
		{name: "defaults", configs: nil, want: storage.Config{}, minISR: 1},
		{
			name: "all",
			configs: map[string]string{
				"retention.ms": "3600000", "retention.bytes": "1000000", "segment.bytes": "1048576",
				"segment.ms": "60000", "max.message.bytes": "2048", "flush.policy": "250ms",
				"min.insync.replicas": "2", "message.timestamp.type": "LogAppendTime",
			},
			want: storage.Config{
				Retention: time.Hour, RetentionBytes: 1000000, SegmentBytes: 1 << 20, SegmentAge: time.Minute,
				MaxMessageBytes: 2048, Flush: storage.FlushPolicy{Mode: storage.FlushInterval, Interval: 250 * time.Millisecond},
				LogAppendTime: true,
			},
			minISR: 2,
		},
		{
			name:    "forever",
			configs: map[string]string{"retention.ms": "-1", "retention.bytes": "-1", "flush.policy": "batch"},
			want:    storage.Config{Retention: -time.Millisecond, RetentionBytes: -1, Flush: storage.FlushPolicy{Mode: storage.FlushEveryBatch}},
			minISR:  1,
		},
		{
			name:    "saturating and zero bytes",
			configs: map[string]string{"retention.ms": "9223372036854775807", "retention.bytes": "0", "message.timestamp.type": "CreateTime"},
			want:    storage.Config{Retention: math.MaxInt64, RetentionBytes: 1},
			minISR:  1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cluster.StorageConfig(tt.configs)
			if err != nil {
				t.Fatalf("StorageConfig: %v", err)
			}
			if got.Retention != tt.want.Retention || got.RetentionBytes != tt.want.RetentionBytes ||
				got.SegmentBytes != tt.want.SegmentBytes || got.SegmentAge != tt.want.SegmentAge ||
				got.MaxMessageBytes != tt.want.MaxMessageBytes || got.Flush != tt.want.Flush ||
				got.LogAppendTime != tt.want.LogAppendTime {
				t.Fatalf("StorageConfig = %+v, want %+v", got, tt.want)
			}
			minISR, err := cluster.MinInsyncReplicas(tt.configs)
			if err != nil || minISR != tt.minISR {
				t.Fatalf("MinInsyncReplicas = %d, %v; want %d", minISR, err, tt.minISR)
			}
		})
	}
	if _, err := cluster.StorageConfig(map[string]string{"segment.bytes": "1"}); !errors.Is(err, cluster.ErrInvalidConfig) {
		t.Fatalf("StorageConfig(bad) = %v, want ErrInvalidConfig", err)
	}
}

// TestMinSegmentBytesEscapeHatch checks the tests-only lowering of the
// segment.bytes minimum (the host's hidden --unsafe-min-segment-bytes):
// it takes effect, never goes below one batch header, and is undone. Not
// parallel: it changes a process-wide setting.
func TestMinSegmentBytesEscapeHatch(t *testing.T) {
	t.Cleanup(func() { cluster.SetMinSegmentBytes(cluster.MinSegmentBytes) })
	small := map[string]string{"segment.bytes": "65536"}
	if err := cluster.ValidateTopicConfigs(small); !errors.Is(err, cluster.ErrInvalidConfig) {
		t.Fatalf("65536 by default: %v, want ErrInvalidConfig", err)
	}
	cluster.SetMinSegmentBytes(65536)
	if err := cluster.ValidateTopicConfigs(small); err != nil {
		t.Fatalf("65536 with the minimum lowered: %v", err)
	}
	if err := cluster.ValidateTopicConfigs(map[string]string{"segment.bytes": "65535"}); !errors.Is(err, cluster.ErrInvalidConfig) {
		t.Fatalf("65535 below the lowered minimum: %v", err)
	}
	cluster.SetMinSegmentBytes(1)
	if got := cluster.CurrentMinSegmentBytes(); got != 61 {
		t.Fatalf("minimum lowered to 1: %d, want the storage minimum 61", got)
	}
	cluster.SetMinSegmentBytes(cluster.MinSegmentBytes)
	if err := cluster.ValidateTopicConfigs(small); !errors.Is(err, cluster.ErrInvalidConfig) {
		t.Fatalf("65536 after restoring: %v", err)
	}
}

func TestUncleanLeaderElection(t *testing.T) {
	tests := []struct {
		configs map[string]string
		want    bool
	}{
		{nil, false},
		{map[string]string{"unclean.leader.election.enable": "false"}, false},
		{map[string]string{"unclean.leader.election.enable": "true"}, true},
		{map[string]string{"unclean.leader.election.enable": " TRUE "}, true},
	}
	for _, tt := range tests {
		got, err := cluster.UncleanLeaderElection(tt.configs)
		if err != nil || got != tt.want {
			t.Errorf("UncleanLeaderElection(%v) = %v, %v; want %v", tt.configs, got, err, tt.want)
		}
	}
	if _, err := cluster.UncleanLeaderElection(map[string]string{"unclean.leader.election.enable": "1"}); !errors.Is(err, cluster.ErrInvalidConfig) {
		t.Fatalf("UncleanLeaderElection(bad) = %v, want ErrInvalidConfig", err)
	}
}

// TestStorageConfigOpens checks that what StorageConfig maps is accepted by
// storage itself, at the edges of every range.
func TestStorageConfigOpens(t *testing.T) {
	for _, configs := range []map[string]string{
		{"segment.bytes": "1048576", "max.message.bytes": "61", "retention.ms": "-1", "retention.bytes": "0"},
		{"segment.bytes": "2147483647", "max.message.bytes": "2147483635", "segment.ms": "1", "flush.policy": "batch"},
	} {
		cfg, err := cluster.StorageConfig(configs)
		if err != nil {
			t.Fatalf("StorageConfig(%v): %v", configs, err)
		}
		l, err := storage.Open(t.TempDir(), cfg)
		if err != nil {
			t.Fatalf("storage.Open with %v: %v", configs, err)
		}
		if err := l.Close(); err != nil {
			t.Fatalf("close log: %v", err)
		}
	}
}

func TestValidateTopic(t *testing.T) {
	valid := func() *messages.TopicMetadata {
		return newTopic(t, "t", 3, 2, map[string]string{"retention.ms": "1000"})
	}
	tests := []struct {
		name   string
		mutate func(*messages.TopicMetadata)
		want   error
	}{
		{"valid", func(*messages.TopicMetadata) {}, nil},
		{"no leader", func(m *messages.TopicMetadata) { m.Partitions[0].Leader = -1 }, nil},
		{"shrunk isr", func(m *messages.TopicMetadata) { m.Partitions[1].Isr = m.Partitions[1].Isr[:1] }, nil},
		{"bad name", func(m *messages.TopicMetadata) { m.Name = "a/b" }, cluster.ErrInvalidTopic},
		{"bad config", func(m *messages.TopicMetadata) { m.Configs["nope"] = "1" }, cluster.ErrInvalidConfig},
		{"rf 0", func(m *messages.TopicMetadata) { m.ReplicationFactor = 0 }, cluster.ErrInvalidReplicationFactor},
		{"rf mismatch", func(m *messages.TopicMetadata) { m.ReplicationFactor = 3 }, cluster.ErrInvalidReplicationFactor},
		{"no partitions", func(m *messages.TopicMetadata) { m.Partitions = nil }, cluster.ErrInvalidPartitions},
		{"too many partitions", func(m *messages.TopicMetadata) {
			for i := len(m.Partitions); i <= cluster.MaxPartitionsPerTopic; i++ {
				m.Partitions = append(m.Partitions, &messages.PartitionState{Partition: int32(i), Replicas: []int32{1, 2}, Leader: 1, Isr: []int32{1, 2}})
			}
		}, cluster.ErrInvalidPartitions},
		{"most partitions", func(m *messages.TopicMetadata) {
			for i := len(m.Partitions); i < cluster.MaxPartitionsPerTopic; i++ {
				m.Partitions = append(m.Partitions, &messages.PartitionState{Partition: int32(i), Replicas: []int32{1, 2}, Leader: 1, Isr: []int32{1, 2}})
			}
		}, nil},
		{"tiny segments", func(m *messages.TopicMetadata) { m.Configs["segment.bytes"] = "100" }, cluster.ErrInvalidConfig},
		{"long duplicate replica list", func(m *messages.TopicMetadata) {
			p := m.Partitions[0]
			p.Replicas = []int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 3}
			m.ReplicationFactor = int32(len(p.Replicas))
			p.Isr, p.Leader = []int32{1}, 1
		}, cluster.ErrInvalidReplicaAssignment},
		{"long isr outside replicas", func(m *messages.TopicMetadata) {
			m.Partitions = m.Partitions[:1]
			p := m.Partitions[0]
			p.Replicas = []int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
			m.ReplicationFactor = int32(len(p.Replicas))
			p.Isr, p.Leader = []int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 99}, 1
		}, cluster.ErrInvalidReplicaAssignment},
		{"long lists", func(m *messages.TopicMetadata) {
			m.Partitions = m.Partitions[:1]
			p := m.Partitions[0]
			p.Replicas = []int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
			m.ReplicationFactor = int32(len(p.Replicas))
			p.Isr, p.Leader = []int32{12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, 1
		}, nil},
		{"misnumbered", func(m *messages.TopicMetadata) { m.Partitions[1].Partition = 2 }, cluster.ErrInvalidPartitions},
		{"nil partition", func(m *messages.TopicMetadata) { m.Partitions[2] = nil }, cluster.ErrInvalidPartitions},
		{"duplicate replica", func(m *messages.TopicMetadata) {
			p := m.Partitions[0]
			p.Replicas[1] = p.Replicas[0]
			p.Isr = p.Isr[:1]
		}, cluster.ErrInvalidReplicaAssignment},
		{"unset host", func(m *messages.TopicMetadata) { m.Partitions[0].Replicas[1] = 0 }, cluster.ErrInvalidReplicaAssignment},
		{"leader 0", func(m *messages.TopicMetadata) { m.Partitions[0].Leader = 0 }, cluster.ErrInvalidReplicaAssignment},
		{"leader outside isr", func(m *messages.TopicMetadata) {
			p := m.Partitions[0]
			p.Isr = []int32{p.Replicas[1]}
		}, cluster.ErrInvalidReplicaAssignment},
		{"isr outside replicas", func(m *messages.TopicMetadata) { m.Partitions[0].Isr = append(m.Partitions[0].Isr, 99) }, cluster.ErrInvalidReplicaAssignment},
		{"duplicate isr", func(m *messages.TopicMetadata) {
			m.Partitions[0].Isr = append(m.Partitions[0].Isr, m.Partitions[0].Isr[0])
		}, cluster.ErrInvalidReplicaAssignment},
		{"negative epoch", func(m *messages.TopicMetadata) { m.Partitions[0].LeaderEpoch = -1 }, cluster.ErrInvalidReplicaAssignment},
		{"reassigning", func(m *messages.TopicMetadata) { reassigning(m.Partitions[0], 9) }, nil},
		{"reassigning without adding", func(m *messages.TopicMetadata) {
			reassigning(m.Partitions[0], 9)
			m.Partitions[0].AddingReplicas = nil
		}, cluster.ErrInvalidReplicationFactor},
		{"adding outside replicas", func(m *messages.TopicMetadata) {
			reassigning(m.Partitions[0], 9)
			m.Partitions[0].AddingReplicas = []int32{8}
		}, cluster.ErrInvalidReplicaAssignment},
		{"added and removed", func(m *messages.TopicMetadata) {
			reassigning(m.Partitions[0], 9)
			m.Partitions[0].AddingReplicas = m.Partitions[0].RemovingReplicas
		}, cluster.ErrInvalidReplicaAssignment},
		{"duplicate removing", func(m *messages.TopicMetadata) {
			p := m.Partitions[0]
			p.Replicas = append(p.Replicas, 9, 8)
			p.AddingReplicas, p.RemovingReplicas = []int32{9, 8}, []int32{p.Replicas[0], p.Replicas[0]}
		}, cluster.ErrInvalidReplicaAssignment},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := valid()
			tt.mutate(m)
			err := cluster.ValidateTopic(m)
			if tt.want == nil && err != nil {
				t.Fatalf("ValidateTopic: %v, want nil", err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("ValidateTopic: %v, want %v", err, tt.want)
			}
		})
	}
	if err := cluster.ValidateTopic(nil); !errors.Is(err, cluster.ErrInvalidTopic) {
		t.Fatalf("ValidateTopic(nil) = %v", err)
	}
}

// reassigning puts p in the middle of a reassignment that replaces its
// last replica with host id.
func reassigning(p *messages.PartitionState, id int32) {
	old := p.Replicas[len(p.Replicas)-1]
	p.Replicas = append([]int32{id}, p.Replicas...)
	p.AddingReplicas, p.RemovingReplicas = []int32{id}, []int32{old}
}

// TestMaxMessageBytesLimit: a user cannot set max.message.bytes above
// MaxMessageBytesLimit, but a stored record holding a larger value (the
// older bound, 2^31-13) stays valid — an ignored record's partitions would
// go unserved — and its logs get the limit instead.
func TestMaxMessageBytesLimit(t *testing.T) {
	const limit = cluster.MaxMessageBytesLimit
	if limit != 64<<20 {
		t.Fatalf("MaxMessageBytesLimit = %d, want 64 MiB", limit)
	}
	tests := []struct {
		value     string
		userOK    bool // ValidateTopicConfigs (create, alter)
		storedOK  bool // ValidateTopic (records read from etcd)
		logs      int  // storage.Config.MaxMessageBytes from StorageConfig
		overLimit bool // MaxMessageBytesOverLimit
	}{
		{"1048588", true, true, 1048588, false},
		{"67108864", true, true, limit, false},
		{"67108865", false, true, limit, true},
		{"104857600", false, true, limit, true},
		{"2147483635", false, true, limit, true},
		{"2147483636", false, false, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			configs := map[string]string{"max.message.bytes": tt.value}
			err := cluster.ValidateTopicConfigs(configs)
			if tt.userOK != (err == nil) || (err != nil && !errors.Is(err, cluster.ErrInvalidConfig)) {
				t.Fatalf("ValidateTopicConfigs: %v, want ok=%v (or ErrInvalidConfig)", err, tt.userOK)
			}
			if err != nil && tt.storedOK && !strings.Contains(err.Error(), "67108864") {
				t.Fatalf("the refusal does not name the limit: %v", err)
			}
			topic := newTopic(t, "t", 1, 1, configs)
			if err := cluster.ValidateTopic(topic); tt.storedOK != (err == nil) {
				t.Fatalf("ValidateTopic of a stored record: %v, want ok=%v", err, tt.storedOK)
			}
			cfg, err := cluster.StorageConfig(configs)
			if !tt.storedOK {
				if !errors.Is(err, cluster.ErrInvalidConfig) {
					t.Fatalf("StorageConfig: %v, want ErrInvalidConfig", err)
				}
				return
			}
			if err != nil || cfg.MaxMessageBytes != tt.logs {
				t.Fatalf("StorageConfig: max.message.bytes %d, %v; want %d", cfg.MaxMessageBytes, err, tt.logs)
			}
			n, over := cluster.MaxMessageBytesOverLimit(configs)
			if over != tt.overLimit || (over && strconv.Itoa(n) != tt.value) {
				t.Fatalf("MaxMessageBytesOverLimit = %d, %v; want %v", n, over, tt.overLimit)
			}
		})
	}
}
