// table_test.go: the pure parts — the offset table, replaying batches,
// commit validation, the write error mapping, fetch answers and group
// placement — table-driven, without actors.

package coordinator

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/actors/producer"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage/record"
)

type applyStep struct {
	key       OffsetKey
	offset    int64 // -1: tombstone
	logOffset int64
	changed   bool
}

func TestOffsetTableApply(t *testing.T) {
	a := OffsetKey{"g", "t", 0}
	b := OffsetKey{"g", "t", 1}
	h := OffsetKey{"h", "u", 0}
	tests := []struct {
		name  string
		steps []applyStep
		want  map[OffsetKey]int64 // committed offsets after the steps
	}{
		{"commits", []applyStep{{a, 5, 0, true}, {b, 7, 1, true}, {h, 1, 2, true}}, map[OffsetKey]int64{a: 5, b: 7, h: 1}},
		{"a later commit wins", []applyStep{{a, 5, 0, true}, {a, 9, 3, true}}, map[OffsetKey]int64{a: 9}},
		{"a commit acknowledged late loses to a later one", []applyStep{{a, 9, 3, true}, {a, 5, 2, false}}, map[OffsetKey]int64{a: 9}},
		{"a lower offset later in the log wins (a reset)", []applyStep{{a, 9, 3, true}, {a, 2, 4, true}}, map[OffsetKey]int64{a: 2}},
		{"tombstone deletes", []applyStep{{a, 5, 0, true}, {b, 6, 1, true}, {a, -1, 2, true}}, map[OffsetKey]int64{b: 6}},
		{"tombstone of nothing", []applyStep{{a, -1, 0, false}}, map[OffsetKey]int64{}},
		{"older tombstone ignored", []applyStep{{a, 5, 4, true}, {a, -1, 3, false}}, map[OffsetKey]int64{a: 5}},
		{"commit after tombstone", []applyStep{{a, 5, 0, true}, {a, -1, 1, true}, {a, 8, 2, true}}, map[OffsetKey]int64{a: 8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab := NewOffsetTable()
			for i, s := range tt.steps {
				var v *OffsetValue
				if s.offset >= 0 {
					v = &OffsetValue{Offset: s.offset, LeaderEpoch: -1}
				}
				if got := tab.Apply(s.key, v, s.logOffset); got != s.changed {
					t.Errorf("step %d: Apply = %v, want %v", i, got, s.changed)
				}
			}
			checkTable(t, tab, tt.want)
		})
	}
}

// checkTable compares every committed offset of tab with want.
func checkTable(t *testing.T, tab *OffsetTable, want map[OffsetKey]int64) {
	t.Helper()
	got := map[OffsetKey]int64{}
	for _, g := range tab.Groups() {
		for _, tp := range tab.Partitions(g) {
			c, ok := tab.Get(g, tp)
			if !ok {
				t.Fatalf("Partitions lists %v of %s, Get does not have it", tp, g)
			}
			got[OffsetKey{g, tp.Topic, tp.Partition}] = c.Offset
		}
	}
	if len(got) != len(want) || tab.Len() != len(want) {
		t.Fatalf("table %v (Len %d), want %v", got, tab.Len(), want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("table %v, want %v", got, want)
		}
	}
}

// recordingMembership records the group metadata records replayed.
type recordingMembership struct {
	AllowAll
	groups []string
}

func (m *recordingMembership) ReplayGroup(group string, value []byte, offset int64) {
	m.groups = append(m.groups, fmt.Sprintf("%s@%d:%x", group, offset, value))
}

// batchAt builds a batch of recs whose base offset is base.
func batchAt(t *testing.T, base int64, recs ...record.Record) []byte {
	t.Helper()
	b, err := record.BuildBatch(record.CompressionNone, recs...)
	if err != nil {
		t.Fatalf("build batch: %v", err)
	}
	record.SetBaseOffset(b, base)
	return b
}

func commitRec(group, topic string, partition int32, offset int64) record.Record {
	return record.Record{Key: EncodeOffsetKey(OffsetKey{group, topic, partition}), Value: EncodeOffsetValue(OffsetValue{Offset: offset, LeaderEpoch: 1})}
}

func tombstoneRec(group, topic string, partition int32) record.Record {
	return record.Record{Key: EncodeOffsetKey(OffsetKey{group, topic, partition})}
}

func TestReplay(t *testing.T) {
	gkey := []byte{0, 2, 0, 1, 'g'}
	var log []byte
	log = append(log, batchAt(t, 0, commitRec("g", "t", 0, 10), commitRec("g", "t", 1, 20))...)
	log = append(log, batchAt(t, 2, record.Record{Key: gkey, Value: []byte{0xab}}, record.Record{Key: []byte{0, 7}, Value: []byte{1}})...)
	log = append(log, batchAt(t, 4, commitRec("g", "t", 0, 11), tombstoneRec("g", "t", 1), commitRec("h", "u", 3, 5))...)
	tests := []struct {
		name        string
		buf         []byte
		from        int64
		wantNext    int64
		wantRecords int
		wantSkipped int
		wantGroups  []string
		want        map[OffsetKey]int64
		wantErr     bool
	}{
		{"whole log", log, 0, 7, 6, 1, []string{"g@2:ab"}, map[OffsetKey]int64{{"g", "t", 0}: 11, {"h", "u", 3}: 5}, false},
		{"from the middle of the first batch", log, 1, 7, 5, 1, []string{"g@2:ab"}, map[OffsetKey]int64{{"g", "t", 0}: 11, {"h", "u", 3}: 5}, false},
		{"from the last batch", log, 4, 7, 3, 0, nil, map[OffsetKey]int64{{"g", "t", 0}: 11, {"h", "u", 3}: 5}, false},
		{"nothing", nil, 3, 3, 0, 0, nil, map[OffsetKey]int64{}, false},
		{"a partial trailing batch is left for the next fetch", log[:len(log)-10], 0, 4, 3, 1, []string{"g@2:ab"},
			map[OffsetKey]int64{{"g", "t", 0}: 10, {"g", "t", 1}: 20}, false},
		{"a corrupt batch stops replay", append(append([]byte{}, log[:20]...), bytes0xff(len(log)-20)...), 0, 0, 0, 0, nil, map[OffsetKey]int64{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab, m := NewOffsetTable(), &recordingMembership{}
			res, err := replay(tt.buf, tt.from, tab, m)
			if (err != nil) != tt.wantErr {
				t.Fatalf("replay error %v, want error %v", err, tt.wantErr)
			}
			if res.Next != tt.wantNext || res.Records != tt.wantRecords || len(res.Skipped) != tt.wantSkipped {
				t.Fatalf("replay = next %d, %d records, skipped %v; want next %d, %d records, %d skipped",
					res.Next, res.Records, res.Skipped, tt.wantNext, tt.wantRecords, tt.wantSkipped)
			}
			for _, e := range res.Skipped {
				if !errors.Is(e, ErrBadRecord) || !strings.Contains(e.Error(), "offset 3") {
					t.Errorf("skipped %v, want the bad record at offset 3", e)
				}
			}
			if fmt.Sprint(m.groups) != fmt.Sprint(tt.wantGroups) {
				t.Errorf("group records %v, want %v", m.groups, tt.wantGroups)
			}
			checkTable(t, tab, tt.want)
		})
	}
}

func bytes0xff(n int) []byte { return []byte(strings.Repeat("\xff", n)) }

func TestPlanCommit(t *testing.T) {
	topics := map[string]int32{"t": 2, "u": 1}
	req := &messages.OffsetCommitRequest{GroupId: "g", Topics: []*messages.OffsetCommitTopic{
		{Topic: "t", Partitions: []*messages.OffsetCommitPartition{
			{Partition: 0, Offset: 10, LeaderEpoch: 3, Metadata: "ok"},
			{Partition: 2, Offset: 1},
			{Partition: -1, Offset: 1},
			{Partition: 1, Offset: -1},
		}},
		{Topic: "missing", Partitions: []*messages.OffsetCommitPartition{{Partition: 0, Offset: 1}}},
		{Topic: "u", Partitions: []*messages.OffsetCommitPartition{
			{Partition: 0, Offset: 0, LeaderEpoch: -1, Metadata: strings.Repeat("m", 8)},
			{Partition: 0, Offset: 5, Metadata: strings.Repeat("m", 9)},
		}},
	}}
	writes, results := planCommit(req, topics, 8, 1234)
	wantWrites := []write{
		{OffsetKey{"g", "t", 0}, OffsetValue{Offset: 10, LeaderEpoch: 3, Metadata: "ok", CommitTimestamp: 1234}},
		{OffsetKey{"g", "u", 0}, OffsetValue{Offset: 0, LeaderEpoch: -1, Metadata: "mmmmmmmm", CommitTimestamp: 1234}},
	}
	if fmt.Sprint(writes) != fmt.Sprint(wantWrites) {
		t.Errorf("writes %v, want %v", writes, wantWrites)
	}
	const (
		ok      = messages.ErrorCode_ERROR_CODE_UNSPECIFIED
		unknown = messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION
		invalid = messages.ErrorCode_ERROR_CODE_INVALID_REQUEST
		large   = messages.ErrorCode_ERROR_CODE_OFFSET_METADATA_TOO_LARGE
	)
	want := []struct {
		topic string
		part  int32
		code  messages.ErrorCode
	}{{"t", 0, ok}, {"t", 2, unknown}, {"t", -1, unknown}, {"t", 1, invalid}, {"missing", 0, unknown}, {"u", 0, ok}, {"u", 0, large}}
	if len(results) != len(want) {
		t.Fatalf("results %v, want %d", results, len(want))
	}
	for i, w := range want {
		r := results[i]
		if r.Topic != w.topic || r.Partition != w.part || r.ErrorCode != w.code || (r.ErrorCode != 0) != (r.ErrorMessage != "") {
			t.Errorf("result %d = %v, want %s-%d %v with a message for errors", i, r, w.topic, w.part, w.code)
		}
	}
}

func TestCommitErrorFor(t *testing.T) {
	tests := []struct{ in, want messages.ErrorCode }{
		{messages.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS, messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE},
		{messages.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS_AFTER_APPEND, messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE},
		{messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION, messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE},
		{messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER, messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR},
		{messages.ErrorCode_ERROR_CODE_FENCED_LEADER_EPOCH, messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR},
		{messages.ErrorCode_ERROR_CODE_UNKNOWN_LEADER_EPOCH, messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR},
		{messages.ErrorCode_ERROR_CODE_KAFKA_STORAGE_ERROR, messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR},
		{messages.ErrorCode_ERROR_CODE_MESSAGE_TOO_LARGE, messages.ErrorCode_ERROR_CODE_INVALID_COMMIT_OFFSET_SIZE},
		{messages.ErrorCode_ERROR_CODE_RECORD_LIST_TOO_LARGE, messages.ErrorCode_ERROR_CODE_INVALID_COMMIT_OFFSET_SIZE},
		{messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT, messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT},
		{messages.ErrorCode_ERROR_CODE_CORRUPT_MESSAGE, messages.ErrorCode_ERROR_CODE_CORRUPT_MESSAGE},
	}
	for _, tt := range tests {
		t.Run(tt.in.ShortName(), func(t *testing.T) {
			if got := commitErrorFor(tt.in); got != tt.want {
				t.Errorf("commitErrorFor(%v) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestCommittedOffsets(t *testing.T) {
	tab := NewOffsetTable()
	for i, k := range []OffsetKey{{"g", "b", 1}, {"g", "a", 0}, {"g", "b", 0}, {"other", "a", 0}} {
		tab.Apply(k, &OffsetValue{Offset: int64(100 + i), LeaderEpoch: 2, Metadata: "m"}, int64(i))
	}
	p := func(part int32, off int64) *messages.OffsetFetchPartition {
		if off < 0 {
			return &messages.OffsetFetchPartition{Partition: part, Offset: -1, LeaderEpoch: -1}
		}
		return &messages.OffsetFetchPartition{Partition: part, Offset: off, LeaderEpoch: 2, Metadata: "m"}
	}
	tests := []struct {
		name  string
		group string
		asked []*messages.TopicPartitions
		want  []*messages.OffsetFetchTopic
	}{
		{"all of the group", "g", nil, []*messages.OffsetFetchTopic{
			{Topic: "a", Partitions: []*messages.OffsetFetchPartition{p(0, 101)}},
			{Topic: "b", Partitions: []*messages.OffsetFetchPartition{p(0, 102), p(1, 100)}},
		}},
		{"listed, with one never committed", "g", []*messages.TopicPartitions{{Topic: "b", Partitions: []int32{1, 7}}, {Topic: "zz", Partitions: []int32{0}}}, []*messages.OffsetFetchTopic{
			{Topic: "b", Partitions: []*messages.OffsetFetchPartition{p(1, 100), p(7, -1)}},
			{Topic: "zz", Partitions: []*messages.OffsetFetchPartition{p(0, -1)}},
		}},
		{"a whole topic", "g", []*messages.TopicPartitions{{Topic: "b"}}, []*messages.OffsetFetchTopic{
			{Topic: "b", Partitions: []*messages.OffsetFetchPartition{p(0, 102), p(1, 100)}},
		}},
		{"unknown group", "nobody", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := committedOffsets(tab, tt.group, tt.asked)
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if !proto.Equal(got[i], tt.want[i]) {
					t.Fatalf("topic %d: got %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestPartitionFor checks that groups are placed with the producer's
// keyed partitioning, and that group ids are validated.
func TestPartitionFor(t *testing.T) {
	p := producer.NewPartitioner(nil)
	for _, g := range []string{"g", "orders-service", "", "ü"} {
		for _, n := range []int{1, 3, 50} {
			if got, want := PartitionFor(g, n), p.KeyPartition([]byte(g), n); got != want {
				t.Errorf("PartitionFor(%q, %d) = %d, want %d", g, n, got, want)
			}
		}
	}
	for _, tt := range []struct {
		group string
		code  messages.ErrorCode
	}{{"g", 0}, {"", messages.ErrorCode_ERROR_CODE_INVALID_GROUP_ID}, {strings.Repeat("g", MaxGroupIDLength+1), messages.ErrorCode_ERROR_CODE_INVALID_GROUP_ID}} {
		if code, _ := ValidateGroupID(tt.group); code != tt.code {
			t.Errorf("ValidateGroupID(%d bytes) = %v, want %v", len(tt.group), code, tt.code)
		}
	}
}
