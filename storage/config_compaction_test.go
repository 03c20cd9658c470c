// config_compaction_test.go: the compaction settings of Config
// (cleanup.policy, min.cleanable.dirty.ratio, min/max.compaction.lag.ms,
// delete.retention.ms): ParseCleanupPolicy and its canonical String, the
// zero-means-default and negative-means-zero forms read through the
// Effective methods, and withDefaults' validation (which must also accept
// a Config it filled itself).

package storage

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestParseCleanupPolicy(t *testing.T) {
	tests := []struct {
		in      string
		want    CleanupPolicy
		ok      bool
		compact bool
		deletes bool
		canon   string
	}{
		{"delete", CleanupDelete, true, false, true, "delete"},
		{"compact", CleanupCompact, true, true, false, "compact"},
		{"compact,delete", CleanupCompact | CleanupDelete, true, true, true, "compact,delete"},
		{"delete,compact", CleanupCompact | CleanupDelete, true, true, true, "compact,delete"},
		{" compact , delete ", CleanupCompact | CleanupDelete, true, true, true, "compact,delete"},
		{"delete,delete", CleanupDelete, true, false, true, "delete"},
		{"", 0, false, false, false, ""},
		{",", 0, false, false, false, ""},
		{"compact,", 0, false, false, false, ""},
		{"COMPACT", 0, false, false, false, ""},
		{"compact;delete", 0, false, false, false, ""},
	}
	for _, tt := range tests {
		p, err := ParseCleanupPolicy(tt.in)
		if !tt.ok {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("ParseCleanupPolicy(%q) = %v, %v; want ErrInvalidConfig", tt.in, p, err)
			}
			continue
		}
		if err != nil || p != tt.want || p.Compacts() != tt.compact || p.Deletes() != tt.deletes || p.String() != tt.canon {
			t.Errorf("ParseCleanupPolicy(%q) = %v (compacts %v, deletes %v, %q), %v; want %v", tt.in, p, p.Compacts(), p.Deletes(), p.String(), err, tt.want)
		}
	}
	var zero CleanupPolicy
	if !zero.Deletes() || zero.Compacts() || zero.String() != "delete" {
		t.Fatalf("the zero policy is not delete: deletes %v compacts %v %q", zero.Deletes(), zero.Compacts(), zero.String())
	}
}

func TestCompactionConfigDefaultsAndValidation(t *testing.T) {
	c, err := Config{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.CleanupPolicy.Compacts() || c.EffectiveMinCleanableDirtyRatio() != 0.5 || c.MinCompactionLag != 0 ||
		c.EffectiveMaxCompactionLag() != math.MaxInt64 || c.EffectiveDeleteRetention() != 24*time.Hour {
		t.Fatalf("defaults: %+v", c)
	}
	// Negative forms mean 0 and survive a second fill.
	c, err = Config{MinCleanableDirtyRatio: -1, DeleteRetention: -1}.withDefaults()
	if err == nil {
		c, err = c.withDefaults()
	}
	if err != nil || c.EffectiveMinCleanableDirtyRatio() != 0 || c.EffectiveDeleteRetention() != 0 {
		t.Fatalf("zero forms: ratio %v tombstones %v, %v", c.EffectiveMinCleanableDirtyRatio(), c.EffectiveDeleteRetention(), err)
	}
	bad := []Config{
		{CleanupPolicy: 4},
		{MinCleanableDirtyRatio: 1.5},
		{MinCleanableDirtyRatio: math.NaN()},
		{MinCompactionLag: -time.Second},
		{MaxCompactionLag: -time.Second},
		{MaxCompactionLag: time.Microsecond},
		{MinCompactionLag: time.Hour, MaxCompactionLag: time.Minute},
	}
	for _, b := range bad {
		if _, err := b.withDefaults(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: %v, want ErrInvalidConfig", b, err)
		}
	}
	good := []Config{
		{CleanupPolicy: CleanupCompact | CleanupDelete, MinCleanableDirtyRatio: 1, MinCompactionLag: time.Minute, MaxCompactionLag: time.Minute, DeleteRetention: time.Second},
		{MinCompactionLag: time.Hour}, // the default max lag has no bound
	}
	for _, g := range good {
		if _, err := g.withDefaults(); err != nil {
			t.Errorf("%+v: %v", g, err)
		}
	}
}
