// listoffsets_maxts_test.go: ListOffsets timestamp -3 (MAX_TIMESTAMP,
// KIP-734) end to end through the handler's pure halves: at v7 the query
// reaches the backend as ListMaxTimestamp and its answer (found, none, an
// error) maps onto the partition as Kafka sends it; below v7 the -3 entry
// alone is UNSUPPORTED_VERSION while its neighbours are still asked, as
// kfake and Kafka (ReplicaManager.timestampMinSupportedVersion) answer.

package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func maxTSRequest(version int16, timestamps ...int64) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(version)
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "t"
	for i, ts := range timestamps {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = int32(i), ts, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func TestListOffsetsMaxTimestampMapping(t *testing.T) {
	req := maxTSRequest(7, ListMaxTimestamp, ListMaxTimestamp, ListMaxTimestamp)
	plan := planListOffsets(req)
	for i, p := range plan {
		if p.code != 0 || p.q.Timestamp != ListMaxTimestamp || p.q.Partition != int32(i) {
			t.Fatalf("v7 plan entry %d: %+v", i, p)
		}
	}
	results := []ListOffsetResult{
		{Offset: 4, Timestamp: 9000, LeaderEpoch: 3},
		{Offset: -1, Timestamp: -1, LeaderEpoch: -1}, // an empty partition
		{Offset: -1, Timestamp: -1, LeaderEpoch: -1, ErrorCode: kerr.NotLeaderForPartition.Code},
	}
	resp := listOffsetsResponse(req, plan, results)
	ps := resp.Topics[0].Partitions
	if p := ps[0]; p.ErrorCode != 0 || p.Offset != 4 || p.Timestamp != 9000 || p.LeaderEpoch != 3 {
		t.Errorf("found: %+v", p)
	}
	if p := ps[1]; p.ErrorCode != 0 || p.Offset != -1 || p.Timestamp != -1 || p.LeaderEpoch != -1 {
		t.Errorf("empty partition: %+v, want offset -1 timestamp -1 and no error", p)
	}
	if p := ps[2]; p.ErrorCode != kerr.NotLeaderForPartition.Code || p.Offset != -1 || p.Timestamp != -1 {
		t.Errorf("backend error: %+v", p)
	}
}

func TestListOffsetsMaxTimestampBelowV7(t *testing.T) {
	for _, v := range []int16{1, 4, 6} {
		req := maxTSRequest(v, ListLatest, ListMaxTimestamp)
		plan := planListOffsets(req)
		if plan[0].code != 0 || plan[1].code != kerr.UnsupportedVersion.Code {
			t.Fatalf("v%d: codes %d %d, want 0 and UNSUPPORTED_VERSION", v, plan[0].code, plan[1].code)
		}
		// The refused entry is never asked: its result slot stays zero.
		resp := listOffsetsResponse(req, plan, []ListOffsetResult{{Offset: 10, Timestamp: -1, LeaderEpoch: 2}, {}})
		ps := resp.Topics[0].Partitions
		if ps[0].ErrorCode != 0 || ps[0].Offset != 10 {
			t.Errorf("v%d latest: %+v", v, ps[0])
		}
		if ps[1].ErrorCode != kerr.UnsupportedVersion.Code || ps[1].Offset != -1 || ps[1].Timestamp != -1 {
			t.Errorf("v%d max timestamp: %+v, want UNSUPPORTED_VERSION with offset and timestamp -1", v, ps[1])
		}
	}
}
