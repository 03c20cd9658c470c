// validate_test.go: the leader refuses a batch whose records no reader
// could decode — a compressed body that is no valid stream (valid CRC), a
// decompression bomb, a record count that does not match — with Kafka's
// error code and writes nothing, and a valid produce and fetch work after
// it; a follower replicating an undecodable batch (one an older leader
// accepted) copies it without decoding it, and does not crash.

package replica

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage"
	"github.com/actorlog/actorlog/storage/record"
)

// zstdBatch is a zstd batch of n records.
func zstdBatch(t *testing.T, n int, prefix string) []byte {
	t.Helper()
	recs := decode(t, batch(t, n, prefix))
	b, err := record.BuildBatch(record.CompressionZstd, recs...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// reframe returns batch with its records area replaced by area, its
// record count and last offset delta set from count (when > 0), and its
// length and CRC fixed.
func reframe(batch, area []byte, count int32) []byte {
	b := append(bytes.Clone(batch[:record.HeaderSize]), area...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-record.LogOverhead))
	if count > 0 {
		binary.BigEndian.PutUint32(b[57:], uint32(count))
		binary.BigEndian.PutUint32(b[23:], uint32(count-1))
	}
	binary.BigEndian.PutUint32(b[17:], record.Checksum(b))
	return b
}

// zstdBomb is a zstd batch of one record whose value is size zero bytes,
// compressed as a stream (a few KiB per 64 MiB).
func zstdBomb(t *testing.T, like []byte, size int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	body := binary.AppendVarint([]byte{0, 0, 0, 1}, int64(size)) // attributes, ts delta, offset delta, null key, value length
	if _, err := w.Write(append(binary.AppendVarint(nil, int64(len(body)+size+1)), body...)); err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	for left := size; left > 0; left -= len(zeros) {
		if _, err := w.Write(zeros[:min(left, len(zeros))]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Write([]byte{0}); err != nil { // no headers
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return reframe(like, buf.Bytes(), 1)
}

func TestLeaderRefusesUndecodableBatches(t *testing.T) {
	h := newHarness(t, t.TempDir())
	if r := h.produce(zstdBatch(t, 1, "before"), messages.Acks_ACKS_LEADER); r.ErrorCode != 0 || r.BaseOffset != 0 {
		t.Fatalf("valid produce: %+v", r)
	}
	good := zstdBatch(t, 4, "good")
	area := good[record.HeaderSize:]
	garbage := make([]byte, len(area))
	for i := range garbage {
		garbage[i] = byte(i*37 + 11)
	}
	tests := []struct {
		name  string
		batch []byte
		want  messages.ErrorCode
	}{
		{"garbage body, valid CRC", reframe(good, garbage, 0), messages.ErrorCode_ERROR_CODE_CORRUPT_MESSAGE},
		{"truncated body", reframe(good, area[:len(area)-5], 0), messages.ErrorCode_ERROR_CODE_CORRUPT_MESSAGE},
		{"record count above the records", reframe(good, area, 5), messages.ErrorCode_ERROR_CODE_INVALID_RECORD},
		{"bomb: 128 MiB of zeros", zstdBomb(t, good, 128<<20), messages.ErrorCode_ERROR_CODE_MESSAGE_TOO_LARGE},
	}
	for _, tc := range tests {
		for _, acks := range []messages.Acks{messages.Acks_ACKS_LEADER, messages.Acks_ACKS_ALL} {
			r := h.produce(tc.batch, acks)
			if r.ErrorCode != tc.want || r.BaseOffset != -1 {
				t.Errorf("%s (acks %v): code %v, base offset %d (%s); want %v", tc.name, acks, r.ErrorCode, r.BaseOffset, r.ErrorMessage, tc.want)
			}
		}
	}
	if st := h.request(GetState).(State); st.LogEndOffset != 1 {
		t.Fatalf("refused batches changed the log: %+v", st)
	}
	if r := h.produce(good, messages.Acks_ACKS_ALL); r.ErrorCode != 0 || r.BaseOffset != 1 {
		t.Fatalf("valid produce after the refusals: %+v", r)
	}
	f := h.fetch(0, 0)
	recs := decode(t, f.Records)
	if f.ErrorCode != 0 || len(recs) != 5 || string(recs[0].Value) != "before-v0" || string(recs[4].Value) != "good-v3" || recs[4].Offset != 4 {
		t.Fatalf("fetch: %v, %d records", f.ErrorCode, len(recs))
	}
}

// TestFollowerCopiesAnUndecodableBatch: a leader whose log holds an
// undecodable batch (written before validation, or by a leader without it)
// replicates it like any other; the follower does not decode it, stays
// alive, and keeps replicating what follows.
func TestFollowerCopiesAnUndecodableBatch(t *testing.T) {
	leaderDir, followerDir := t.TempDir(), t.TempDir()
	good := zstdBatch(t, 4, "good")
	area := good[record.HeaderSize:]
	bad := reframe(good, bytes.Repeat([]byte{0x5a}, len(area)), 0)
	l, err := storage.Open(leaderDir, storage.Config{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.AssignEpoch(3, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(batch(t, 2, "first"), 3); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(bytes.Clone(bad), 3); err == nil {
		t.Fatal("the leader's log accepted the bad batch: this test needs it written as a replica would")
	}
	record.SetBaseOffset(bad, 2)
	record.SetLeaderEpoch(bad, 3)
	if _, err := l.AppendReplicated(bad); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	p := startPair(t, leaderDir, followerDir, 3)
	if r := p.leader.request(&messages.ProduceRequest{Topic: "t", Partition: 0, Acks: messages.Acks_ACKS_ALL,
		Records: batch(t, 3, "after"), CurrentLeaderEpoch: -1}).(*messages.ProduceResponse); r.ErrorCode != 0 || r.BaseOffset != 6 {
		t.Fatalf("produce after the bad batch: %+v", r)
	}
	if st := p.waitSame(); st.LogEndOffset != 9 {
		t.Fatalf("replicas: %+v", st)
	}
	p.follower.stop()
	p.leader.stop()
	if a, b := logBytes(t, leaderDir), logBytes(t, followerDir); !bytes.Equal(a, b) || !bytes.Contains(b, bad[record.HeaderSize:]) {
		t.Fatalf("logs differ or lack the batch: leader %d bytes, follower %d bytes", len(a), len(b))
	}
}
