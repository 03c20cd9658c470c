// compacted_test.go: a leader whose topic is compacted (cleanup.policy
// compact or compact,delete) refuses a producer batch holding a record
// without a key — uncompressed or compressed, the keyless record first,
// last or alone — with INVALID_RECORD and a message naming the rule, and
// writes nothing of it; keyed batches (an empty key is a key) append, and
// a topic with cleanup.policy=delete takes keyless records as before.

package replica

import (
	"strings"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage"
	"github.com/actorlog/actorlog/storage/record"
)

// newPolicyHarness is newHarness with the log's cleanup.policy set.
func newPolicyHarness(t *testing.T, p storage.CleanupPolicy) *harness {
	t.Helper()
	h := &harness{t: t, system: actor.NewActorSystem(), dir: t.TempDir()}
	h.pid = h.system.Root.Spawn(Props(Config{Topic: "t", Partition: 0, Dir: h.dir, LeaderEpoch: 3, Logger: quiet(),
		Log: storage.Config{CleanupPolicy: p}}))
	t.Cleanup(h.stop)
	return h
}

// keyedBatch builds a batch of one record per key; a nil key is a null
// key.
func keyedBatch(t *testing.T, c record.Compression, keys ...[]byte) []byte {
	t.Helper()
	recs := make([]record.Record, len(keys))
	for i, k := range keys {
		recs[i] = record.Record{Key: k, Value: []byte("v"), Timestamp: 1000 + int64(i)}
	}
	b, err := record.BuildBatch(c, recs...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCompactedTopicRefusesRecordsWithoutKey(t *testing.T) {
	k := func(s string) []byte { return []byte(s) }
	for _, policy := range []storage.CleanupPolicy{storage.CleanupCompact, storage.CleanupCompact | storage.CleanupDelete} {
		t.Run(policy.String(), func(t *testing.T) {
			h := newPolicyHarness(t, policy)
			refused := []struct {
				name  string
				batch []byte
			}{
				{"one keyless record", keyedBatch(t, record.CompressionNone, nil)},
				{"keyless last", keyedBatch(t, record.CompressionNone, k("a"), k("b"), nil)},
				{"keyless first, lz4", keyedBatch(t, record.CompressionLZ4, nil, k("a"))},
				{"keyless middle, zstd", keyedBatch(t, record.CompressionZstd, k("a"), nil, k("b"))},
			}
			for _, tc := range refused {
				for _, acks := range []messages.Acks{messages.Acks_ACKS_LEADER, messages.Acks_ACKS_ALL} {
					r := h.produce(tc.batch, acks)
					if r.ErrorCode != messages.ErrorCode_ERROR_CODE_INVALID_RECORD || r.BaseOffset != -1 ||
						!strings.Contains(r.ErrorMessage, "compacted topic requires a key") {
						t.Errorf("%s (acks %v): code %v, base offset %d, message %q; want INVALID_RECORD naming the rule",
							tc.name, acks, r.ErrorCode, r.BaseOffset, r.ErrorMessage)
					}
				}
			}
			if st := h.request(GetState).(State); st.LogEndOffset != 0 {
				t.Fatalf("refused batches changed the log: %+v", st)
			}
			// Keyed batches, an empty key among them, append.
			if r := h.produce(keyedBatch(t, record.CompressionNone, k("a"), k("")), messages.Acks_ACKS_ALL); r.ErrorCode != 0 || r.BaseOffset != 0 {
				t.Fatalf("keyed produce: %+v", r)
			}
			if r := h.produce(keyedBatch(t, record.CompressionZstd, k("b")), messages.Acks_ACKS_LEADER); r.ErrorCode != 0 || r.BaseOffset != 2 {
				t.Fatalf("keyed zstd produce: %+v", r)
			}
			recs := decode(t, h.fetch(0, 0).Records)
			if len(recs) != 3 || string(recs[0].Key) != "a" || recs[1].Key == nil || len(recs[1].Key) != 0 || string(recs[2].Key) != "b" {
				t.Fatalf("fetched %d records: %+v", len(recs), recs)
			}
		})
	}
}

// TestDeletePolicyTakesKeylessRecords: the check applies to compaction
// only.
func TestDeletePolicyTakesKeylessRecords(t *testing.T) {
	for _, policy := range []storage.CleanupPolicy{0, storage.CleanupDelete} {
		h := newPolicyHarness(t, policy)
		if r := h.produce(keyedBatch(t, record.CompressionNone, nil, nil), messages.Acks_ACKS_ALL); r.ErrorCode != 0 || r.BaseOffset != 0 {
			t.Fatalf("policy %v: keyless produce: %+v", policy, r)
		}
	}
}

// TestCompactedTopicCorruptBatchKeepsItsCode: a batch the key check cannot
// decode is refused by the log's own check, with its code.
func TestCompactedTopicCorruptBatchKeepsItsCode(t *testing.T) {
	h := newPolicyHarness(t, storage.CleanupCompact)
	good := keyedBatch(t, record.CompressionZstd, []byte("a"), []byte("b"))
	garbage := make([]byte, len(good)-record.HeaderSize)
	for i := range garbage {
		garbage[i] = byte(i*37 + 11)
	}
	if r := h.produce(reframe(good, garbage, 0), messages.Acks_ACKS_LEADER); r.ErrorCode != messages.ErrorCode_ERROR_CODE_CORRUPT_MESSAGE {
		t.Fatalf("garbage zstd body: %v (%s), want CORRUPT_MESSAGE", r.ErrorCode, r.ErrorMessage)
	}
}
