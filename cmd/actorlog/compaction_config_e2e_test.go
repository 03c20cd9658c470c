// compaction_config_e2e_test.go: the compaction topic configs and the key
// rule of compacted topics through the CLI and the native client against
// a host process: `topics create --config cleanup.policy=delete,compact`
// stores and describes it as compact,delete (with the other compaction
// keys), bad values are one INVALID_CONFIG line naming the key (create and
// alter), a keyless record produced natively to a compacted topic is
// refused with INVALID_RECORD ("compacted topic requires a key") and not
// written while keyed records are, and the offsets topic the first group
// creates has cleanup.policy=compact.

package main

import (
	"strings"
	"testing"
)

func TestCompactionConfigsCLI(t *testing.T) {
	h := startHost(t, t.TempDir(), freeBase(t))
	h.mustCLI("", "topics", "create", "changelog", "--config", "cleanup.policy=delete,compact",
		"--config", "min.compaction.lag.ms=1000", "--config", "delete.retention.ms=0", "--config", "min.cleanable.dirty.ratio=0.1")
	td := h.mustDescribeTopic("changelog")
	want := map[string]string{"cleanup.policy": "compact,delete", "min.compaction.lag.ms": "1000", "delete.retention.ms": "0", "min.cleanable.dirty.ratio": "0.1"}
	for k, v := range want {
		if td.Configs[k] != v {
			t.Errorf("describe: %s=%q, want %q (configs %v)", k, td.Configs[k], v, td.Configs)
		}
	}
	if out := h.mustCLI("", "topics", "describe", "changelog"); !strings.Contains(out, "cleanup.policy=compact,delete") {
		t.Errorf("text describe lacks the policy: %q", out)
	}

	bad := [][]string{
		{"topics", "create", "b1", "--config", "cleanup.policy=retain"},
		{"topics", "create", "b2", "--config", "min.cleanable.dirty.ratio=2"},
		{"topics", "create", "b3", "--config", "min.compaction.lag.ms=-5"},
		{"topics", "create", "b4", "--config", "max.compaction.lag.ms=0"},
		{"topics", "create", "b5", "--config", "delete.retention.ms=soon"},
		{"topics", "create", "b6", "--config", "min.compaction.lag.ms=10", "--config", "max.compaction.lag.ms=5"},
		{"topics", "alter", "changelog", "--config", "cleanup.policy=compact;delete"},
	}
	for _, args := range bad {
		_, errOut, err := h.cli("", args...)
		key := strings.SplitN(args[len(args)-1], "=", 2)[0]
		if lines := strings.Count(strings.TrimSpace(errOut), "\n") + 1; err == nil || !strings.Contains(errOut, "INVALID_CONFIG") || !strings.Contains(errOut, key) || lines != 1 {
			t.Errorf("actorlog %v: %v, stderr %q; want one INVALID_CONFIG line naming %s", args, err, errOut, key)
		}
	}
	if td := h.mustDescribeTopic("changelog"); td.Configs["cleanup.policy"] != "compact,delete" {
		t.Fatalf("configs after refused alter: %v", td.Configs)
	}

	// The native producer: a keyless record is refused, keyed ones go in.
	_, errOut, err := h.cli("no-key\n", "produce", "changelog")
	if err == nil || !strings.Contains(errOut, "INVALID_RECORD") || !strings.Contains(errOut, "compacted topic requires a key") {
		t.Fatalf("keyless produce: %v, stderr %q; want INVALID_RECORD naming the rule", err, errOut)
	}
	h.mustCLI("k1:v1\nk2:v2\n", "produce", "changelog", "--key-separator", ":")
	out := h.mustCLI("", "consume", "changelog", "--from-beginning", "--print-key", "--print-offset", "--max-messages", "2", "--timeout", "10s")
	if out != "0:0\tk1\tv1\n0:1\tk2\tv2\n" {
		t.Fatalf("consumed %q; want the two keyed records at offsets 0 and 1", out)
	}

	// The offsets topic, created by the first group, is compacted.
	h.mustCLI("", "consume", "changelog", "--group", "g", "--from-beginning", "--max-messages", "2", "--timeout", "10s")
	if td := h.mustDescribeTopic("__consumer_offsets"); td.Configs["cleanup.policy"] != "compact" {
		t.Fatalf("__consumer_offsets configs %v, want cleanup.policy=compact", td.Configs)
	}
}
