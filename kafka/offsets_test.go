// offsets_test.go: ListOffsets (the refusals as a table, then -1, -2, -3
// and by timestamp through kadm) and OffsetForLeaderEpoch over the fake.

package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestPlanListOffsets(t *testing.T) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(6)
	req.IsolationLevel = 1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "t"
	for i, ts := range []int64{-1, -2, -3, -4, 1234, -1} {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = int32(i), ts, 7
		if i == 5 {
			rp.Partition = 0 // asked twice
		}
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	plan := planListOffsets(req)
	want := []int16{kerr.InvalidRequest.Code, 0, kerr.UnsupportedVersion.Code, kerr.UnsupportedVersion.Code, 0, kerr.InvalidRequest.Code}
	for i, p := range plan {
		if p.code != want[i] {
			t.Errorf("partition entry %d (timestamp %d): code %d, want %d", i, p.q.Timestamp, p.code, want[i])
		}
		if !p.q.ReadCommitted || p.q.CurrentLeaderEpoch != 7 || p.index != i {
			t.Errorf("entry %d: %+v", i, p)
		}
	}
	req.SetVersion(7)
	if plan := planListOffsets(req); plan[2].code != 0 {
		t.Errorf("-3 at v7: code %d", plan[2].code)
	}
	req.SetVersion(3)
	if plan := planListOffsets(req); plan[1].q.CurrentLeaderEpoch != -1 {
		t.Errorf("v3 passed a leader epoch on: %+v", plan[1].q)
	}
}

func TestKadmListOffsets(t *testing.T) {
	ds := startDataServer(t, map[string]int{"t": 2}, nil)
	cl := produceClient(t, ds.addr, kgo.ProducerBatchCompression(kgo.NoCompression()))
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Partition 0: timestamps 1000, 3000, 2000 (the max is not last);
	// partition 1 stays empty.
	for i, ms := range []int64{1000, 3000, 2000} {
		r := &kgo.Record{Topic: "t", Partition: 0, Value: []byte{byte(i)}, Timestamp: time.UnixMilli(ms)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	check := func(name string, got kadm.ListedOffsets, err error, want map[int32][2]int64) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for p, w := range want {
			o, ok := got.Lookup("t", p)
			if !ok || o.Err != nil || o.Offset != w[0] || o.Timestamp != w[1] {
				t.Errorf("%s: partition %d: %+v, want offset %d timestamp %d", name, p, o, w[0], w[1])
			}
			if ok && o.Err == nil && w[0] >= 0 && o.LeaderEpoch != 3 {
				t.Errorf("%s: partition %d: leader epoch %d", name, p, o.LeaderEpoch)
			}
		}
	}
	end, err := adm.ListEndOffsets(ctx, "t")
	check("end", end, err, map[int32][2]int64{0: {3, -1}, 1: {0, -1}})
	start, err := adm.ListStartOffsets(ctx, "t")
	check("start", start, err, map[int32][2]int64{0: {0, -1}, 1: {0, -1}})
	maxTS, err := adm.ListMaxTimestampOffsets(ctx, "t")
	check("max timestamp", maxTS, err, map[int32][2]int64{0: {1, 3000}, 1: {-1, -1}})
	after, err := adm.ListOffsetsAfterMilli(ctx, 1500, "t")
	check("after 1500", after, err, map[int32][2]int64{0: {1, 3000}})
	after, err = adm.ListOffsetsAfterMilli(ctx, 1000, "t")
	check("after 1000", after, err, map[int32][2]int64{0: {0, 1000}})
	// Nothing at or after: kadm reports the end offset, as Kafka's -1
	// answer leads it to.
	if after, err = adm.ListOffsetsAfterMilli(ctx, 5000, "t"); err != nil {
		t.Fatalf("after 5000: %v", err)
	} else if o, _ := after.Lookup("t", 0); o.Err != nil || o.Offset != 3 {
		t.Errorf("after 5000: %+v", o)
	}

	// Routing errors come from the backend.
	ds.data.setCode("t", 1, kerr.NotLeaderForPartition.Code)
	c := ds.dial(t)
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(7)
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "t"
	for p := int32(0); p < 2; p++ {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	if _, err := c.Write(frame(req, 1)); err != nil {
		t.Fatal(err)
	}
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	readResponse(t, c, resp)
	ps := resp.Topics[0].Partitions
	if ps[0].ErrorCode != 0 || ps[0].Offset != 3 || ps[1].ErrorCode != kerr.NotLeaderForPartition.Code || ps[1].Offset != -1 {
		t.Errorf("list offsets with a routing error: %+v", ps)
	}
}

func TestOffsetForLeaderEpoch(t *testing.T) {
	ds := startDataServer(t, map[string]int{"t": 1}, nil)
	appendTo(t, ds.data, "t", 0, 5) // epoch 3: 0-4
	ds.data.bumpEpoch("t", 0)
	appendTo(t, ds.data, "t", 0, 2) // epoch 4: 5-6
	c := ds.dial(t)
	for i, tc := range []struct {
		v              int16
		epoch, current int32
		code           int16
		wantEpoch      int32
		wantEnd        int64
	}{
		{4, 3, -1, 0, 3, 5},
		{4, 4, 4, 0, 4, 7},
		{3, 9, -1, 0, 4, 7},
		{2, 2, -1, 0, -1, -1},
		{4, 3, 3, kerr.FencedLeaderEpoch.Code, -1, -1},
		{4, 3, 5, kerr.UnknownLeaderEpoch.Code, -1, -1},
	} {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.SetVersion(tc.v)
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.LeaderEpoch, rp.CurrentLeaderEpoch = tc.epoch, tc.current
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		if _, err := c.Write(frame(req, int32(i))); err != nil {
			t.Fatal(err)
		}
		resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
		if corr := readResponse(t, c, resp); corr != int32(i) {
			t.Fatalf("correlation id %d", corr)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != tc.code || p.LeaderEpoch != tc.wantEpoch || p.EndOffset != tc.wantEnd {
			t.Errorf("case %d: %+v, want code %d epoch %d end %d", i, p, tc.code, tc.wantEpoch, tc.wantEnd)
		}
	}
}
