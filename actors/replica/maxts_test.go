// maxts_test.go: ListOffsets with timestamp -3 (messages.MaxTimestamp,
// Kafka's MAX_TIMESTAMP): an empty partition answers -1/-1 with no error,
// out-of-order timestamps answer the first record with the largest, the
// answer survives a restart of the replica, and a leader answers only from
// below its high watermark (a newer record a follower has not fetched yet
// does not count until it has).

package replica

import (
	"testing"

	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage/record"
)

// tsBatch builds one uncompressed batch whose records carry timestamps ts.
func tsBatch(t *testing.T, ts ...int64) []byte {
	t.Helper()
	recs := make([]record.Record, len(ts))
	for i, x := range ts {
		recs[i] = record.Record{Value: []byte("v"), Timestamp: x}
	}
	b, err := record.BuildBatch(record.CompressionNone, recs...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (h *harness) listMaxTS() *messages.ListOffsetsResponse {
	h.t.Helper()
	return h.request(&messages.ListOffsetsRequest{Topic: "t", Partition: 0, Timestamp: messages.MaxTimestamp, CurrentLeaderEpoch: -1, CorrelationId: 9}).(*messages.ListOffsetsResponse)
}

func TestListOffsetsMaxTimestamp(t *testing.T) {
	h := newHarness(t, t.TempDir())
	if r := h.listMaxTS(); r.ErrorCode != 0 || r.Offset != -1 || r.Timestamp != -1 || r.CorrelationId != 9 {
		t.Fatalf("empty partition: %+v, want offset -1 timestamp -1 and no error", r)
	}
	for _, b := range [][]byte{tsBatch(t, 500, 900, 100), tsBatch(t, 300, 950, 950, 10), tsBatch(t, 950, 20)} {
		if r := h.produce(b, messages.Acks_ACKS_LEADER); r.ErrorCode != 0 {
			t.Fatalf("produce: %+v", r)
		}
	}
	// Offsets: 0..2 (500 900 100), 3..6 (300 950 950 10), 7..8 (950 20).
	if r := h.listMaxTS(); r.ErrorCode != 0 || r.Offset != 4 || r.Timestamp != 950 || r.LeaderEpoch != 3 {
		t.Fatalf("max timestamp: %+v, want offset 4 timestamp 950", r)
	}
	// Below -3 stays refused.
	bad := h.request(&messages.ListOffsetsRequest{Topic: "t", Partition: 0, Timestamp: -4, CurrentLeaderEpoch: -1}).(*messages.ListOffsetsResponse)
	if bad.ErrorCode != messages.ErrorCode_ERROR_CODE_INVALID_REQUEST {
		t.Fatalf("timestamp -4: %+v, want INVALID_REQUEST", bad)
	}
	h.stop()
	h.start()
	if r := h.listMaxTS(); r.ErrorCode != 0 || r.Offset != 4 || r.Timestamp != 950 {
		t.Fatalf("after restart: %+v, want offset 4 timestamp 950", r)
	}
}

func TestListOffsetsMaxTimestampBelowHighWatermark(t *testing.T) {
	h := startLeader(t, &proposals{}, 0)
	if r := h.produce(tsBatch(t, 100, 700, 200), messages.Acks_ACKS_LEADER); r.ErrorCode != 0 {
		t.Fatalf("produce: %+v", r)
	}
	if r := h.listMaxTS(); r.ErrorCode != 0 || r.Offset != -1 || r.Timestamp != -1 {
		t.Fatalf("nothing below the high watermark yet: %+v", r)
	}
	if f := h.followerFetch(2, 3, 3); f.ErrorCode != 0 || f.HighWatermark != 3 {
		t.Fatalf("follower at 3: %v, hw %d", f.ErrorCode, f.HighWatermark)
	}
	if r := h.produce(tsBatch(t, 50, 9000), messages.Acks_ACKS_LEADER); r.ErrorCode != 0 {
		t.Fatalf("produce: %+v", r)
	}
	// The 9000 at offset 4 is not replicated: the answer is the 700.
	if r := h.listMaxTS(); r.ErrorCode != 0 || r.Offset != 1 || r.Timestamp != 700 {
		t.Fatalf("below hw 3: %+v, want offset 1 timestamp 700", r)
	}
	if f := h.followerFetch(2, 5, 3); f.ErrorCode != 0 || f.HighWatermark != 5 {
		t.Fatalf("follower at 5: %v, hw %d", f.ErrorCode, f.HighWatermark)
	}
	if r := h.listMaxTS(); r.ErrorCode != 0 || r.Offset != 4 || r.Timestamp != 9000 {
		t.Fatalf("below hw 5: %+v, want offset 4 timestamp 9000", r)
	}
}
