// hwcheckpoint_e2e_test.go: reading a host's shared high-watermark
// checkpoint (storage.ReadReplicationOffsetCheckpoint) in the end-to-end
// tests that stop, kill and restart hosts.

package main

import (
	"fmt"
	"testing"

	"github.com/actorlog/actorlog/storage"
)

// sharedHighWatermarks reads the shared high-watermark checkpoint of a
// host's data dir, failing the test if it is damaged.
func sharedHighWatermarks(t *testing.T, dataDir string) map[storage.TopicPartition]int64 {
	t.Helper()
	hws, err := storage.ReadReplicationOffsetCheckpoint(nil, dataDir)
	if err != nil {
		t.Fatalf("shared high-watermark checkpoint of %s: %v", dataDir, err)
	}
	return hws
}

// sharedHighWatermarksAtLeast reports whether the shared checkpoint of
// dataDir holds, for topic's partitions, high watermarks summing to at
// least want.
func sharedHighWatermarksAtLeast(t *testing.T, dataDir, topic string, want int64) error {
	t.Helper()
	var sum int64
	for k, hw := range sharedHighWatermarks(t, dataDir) {
		if k.Topic == topic {
			sum += hw
		}
	}
	if sum < want {
		return fmt.Errorf("shared checkpoint holds %d of %s's records, want at least %d", sum, topic, want)
	}
	return nil
}
