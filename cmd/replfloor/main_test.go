package main

import (
	"encoding/binary"
	"hash/crc32"
	"path/filepath"
	"testing"
	"time"
)

// TestRunReplicates: a short RF=3 run with each follower read acknowledges
// batches, and every follower's file is a prefix of its leader's holding
// all of them (verify); RF=1 acknowledges too.
func TestRunReplicates(t *testing.T) {
	for _, c := range []struct {
		rf       int
		sendfile bool
	}{{1, false}, {3, true}, {3, false}} {
		cfg := config{dir: filepath.Join(t.TempDir(), "floor"), rf: c.rf, duration: 200 * time.Millisecond,
			batch: 64 << 10, inFlight: 4, partitions: 3, sendfile: c.sendfile, verify: true}
		res, err := run(cfg)
		if err != nil {
			t.Fatalf("rf=%d sendfile=%v: %v", c.rf, c.sendfile, err)
		}
		if res.acked == 0 || res.acked%int64(cfg.batch) != 0 {
			t.Fatalf("rf=%d sendfile=%v: %d bytes acknowledged, want whole batches and some", c.rf, c.sendfile, res.acked)
		}
	}
}

// TestCheckBatchesFindsAFlippedByte: the CRC check the leader and the
// followers make is a real one.
func TestCheckBatchesFindsAFlippedByte(t *testing.T) {
	b := make([]byte, 2*(header+100))
	for i := range 2 {
		s := b[i*(header+100):]
		binary.BigEndian.PutUint32(s, 100)
		binary.BigEndian.PutUint32(s[4:], crc32.Checksum(s[header:header+100], castagnoli))
	}
	if err := checkBatches(b); err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 1
	if err := checkBatches(b); err == nil {
		t.Fatal("a flipped byte in the second batch went unnoticed")
	}
	if err := checkBatches(b[:header+50]); err == nil {
		t.Fatal("a batch cut short went unnoticed")
	}
}
