// compaction_config_test.go: table tests of the compaction topic configs
// (cleanup.policy, min.cleanable.dirty.ratio, min/max.compaction.lag.ms,
// delete.retention.ms): Kafka's names, ranges and cross-check (max lag not
// below min lag), their mapping to storage.Config (0 values kept apart from
// "default" through storage's negative form), and the normalization of
// cleanup.policy to its canonical value.

package cluster_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/storage"
)

func TestValidateCompactionConfigs(t *testing.T) {
	tests := []struct {
		configs map[string]string
		ok      bool
	}{
		{map[string]string{"cleanup.policy": "delete"}, true},
		{map[string]string{"cleanup.policy": "compact"}, true},
		{map[string]string{"cleanup.policy": "compact,delete"}, true},
		{map[string]string{"cleanup.policy": "delete,compact"}, true},
		{map[string]string{"cleanup.policy": "compact, delete"}, true},
		{map[string]string{"cleanup.policy": ""}, false},
		{map[string]string{"cleanup.policy": "compact,"}, false},
		{map[string]string{"cleanup.policy": "Compact"}, false},
		{map[string]string{"cleanup.policy": "retain"}, false},
		{map[string]string{"min.cleanable.dirty.ratio": "0"}, true},
		{map[string]string{"min.cleanable.dirty.ratio": "0.5"}, true},
		{map[string]string{"min.cleanable.dirty.ratio": "1"}, true},
		{map[string]string{"min.cleanable.dirty.ratio": "1.01"}, false},
		{map[string]string{"min.cleanable.dirty.ratio": "-0.1"}, false},
		{map[string]string{"min.cleanable.dirty.ratio": "NaN"}, false},
		{map[string]string{"min.cleanable.dirty.ratio": "half"}, false},
		{map[string]string{"min.compaction.lag.ms": "0"}, true},
		{map[string]string{"min.compaction.lag.ms": "60000"}, true},
		{map[string]string{"min.compaction.lag.ms": "-1"}, false},
		{map[string]string{"min.compaction.lag.ms": "1m"}, false},
		{map[string]string{"max.compaction.lag.ms": "1"}, true},
		{map[string]string{"max.compaction.lag.ms": "9223372036854775807"}, true},
		{map[string]string{"max.compaction.lag.ms": "0"}, false},
		{map[string]string{"max.compaction.lag.ms": "-1"}, false},
		{map[string]string{"delete.retention.ms": "0"}, true},
		{map[string]string{"delete.retention.ms": "86400000"}, true},
		{map[string]string{"delete.retention.ms": "-1"}, false},
		{map[string]string{"delete.retention.ms": ""}, false},
		{map[string]string{"min.compaction.lag.ms": "1000", "max.compaction.lag.ms": "1000"}, true},
		{map[string]string{"min.compaction.lag.ms": "1001", "max.compaction.lag.ms": "1000"}, false},
		{map[string]string{"min.compaction.lag.ms": "9223372036854775807"}, true}, // max is unbounded by default
	}
	for _, tt := range tests {
		err := cluster.ValidateTopicConfigs(tt.configs)
		if tt.ok && err != nil {
			t.Errorf("%v: %v, want nil", tt.configs, err)
		}
		if !tt.ok && !errors.Is(err, cluster.ErrInvalidConfig) {
			t.Errorf("%v: %v, want ErrInvalidConfig", tt.configs, err)
		}
	}
	// The error names the key and what it wants.
	err := cluster.ValidateTopicConfigs(map[string]string{"cleanup.policy": "retain"})
	if err == nil || !strings.Contains(err.Error(), "cleanup.policy") || !strings.Contains(err.Error(), "compact,delete") {
		t.Fatalf("cleanup.policy=retain: %v, want an error naming the key and the values", err)
	}
	err = cluster.ValidateTopicConfigs(map[string]string{"min.compaction.lag.ms": "5", "max.compaction.lag.ms": "4"})
	if err == nil || !strings.Contains(err.Error(), "max.compaction.lag.ms") || !strings.Contains(err.Error(), "min.compaction.lag.ms") {
		t.Fatalf("max below min: %v, want an error naming both keys", err)
	}
	keys := strings.Join(cluster.TopicConfigKeys(), " ")
	for _, k := range []string{"cleanup.policy", "min.cleanable.dirty.ratio", "min.compaction.lag.ms", "max.compaction.lag.ms", "delete.retention.ms"} {
		if !strings.Contains(keys, k) {
			t.Errorf("TopicConfigKeys lacks %s: %s", k, keys)
		}
	}
}

func TestCompactionStorageConfig(t *testing.T) {
	tests := []struct {
		name    string
		configs map[string]string
		policy  storage.CleanupPolicy
		ratio   float64
		minLag  time.Duration
		maxLag  time.Duration
		tomb    time.Duration
	}{
		{"defaults", nil, 0, 0.5, 0, math.MaxInt64, 24 * time.Hour},
		{"compact", map[string]string{"cleanup.policy": "compact"}, storage.CleanupCompact, 0.5, 0, math.MaxInt64, 24 * time.Hour},
		{"both, reversed", map[string]string{"cleanup.policy": "delete,compact"}, storage.CleanupCompact | storage.CleanupDelete, 0.5, 0, math.MaxInt64, 24 * time.Hour},
		{"zeros", map[string]string{"min.cleanable.dirty.ratio": "0", "delete.retention.ms": "0", "max.compaction.lag.ms": "1"},
			0, 0, 0, time.Millisecond, 0},
		{"values", map[string]string{"min.cleanable.dirty.ratio": "0.25", "min.compaction.lag.ms": "1000", "max.compaction.lag.ms": "60000", "delete.retention.ms": "5000"},
			0, 0.25, time.Second, time.Minute, 5 * time.Second},
		{"saturating", map[string]string{"max.compaction.lag.ms": "9223372036854775807", "delete.retention.ms": "9223372036854775807"},
			0, 0.5, 0, math.MaxInt64, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := cluster.StorageConfig(tt.configs)
			if err != nil {
				t.Fatalf("StorageConfig: %v", err)
			}
			if c.CleanupPolicy != tt.policy || c.EffectiveMinCleanableDirtyRatio() != tt.ratio || c.MinCompactionLag != tt.minLag ||
				c.EffectiveMaxCompactionLag() != tt.maxLag || c.EffectiveDeleteRetention() != tt.tomb {
				t.Fatalf("got policy %v ratio %v lags %v..%v tombstones %v; want %v %v %v..%v %v", c.CleanupPolicy,
					c.EffectiveMinCleanableDirtyRatio(), c.MinCompactionLag, c.EffectiveMaxCompactionLag(), c.EffectiveDeleteRetention(),
					tt.policy, tt.ratio, tt.minLag, tt.maxLag, tt.tomb)
			}
		})
	}
}

func TestNormalizeTopicConfigs(t *testing.T) {
	in := map[string]string{"cleanup.policy": "delete, compact", "retention.ms": "1000"}
	out := cluster.NormalizeTopicConfigs(in)
	if out["cleanup.policy"] != "compact,delete" || out["retention.ms"] != "1000" || len(out) != 2 {
		t.Fatalf("normalized %v", out)
	}
	if in["cleanup.policy"] != "delete, compact" {
		t.Fatalf("the input was modified: %v", in)
	}
	for v, want := range map[string]string{"compact": "compact", "delete": "delete", "compact,compact": "compact", "bad": "bad"} {
		if got := cluster.NormalizeTopicConfigs(map[string]string{"cleanup.policy": v})["cleanup.policy"]; got != want {
			t.Errorf("cleanup.policy=%q normalized to %q, want %q", v, got, want)
		}
	}
	if cluster.NormalizeTopicConfigs(nil) != nil {
		t.Fatal("nil configs normalized to non-nil")
	}
}
