// kafkadata_maxts_test.go: ListOffsets MAX_TIMESTAMP (-3, KIP-734) against
// a real in-process host: franz-go produces records whose timestamps are
// out of order within and across batches (the largest twice, the first of
// them mid-batch); kadm.ListMaxTimestampOffsets and a raw v7 request answer
// the first record with the largest timestamp, an empty partition answers
// offset -1 and timestamp -1 with no error, and a v6 request asking -3 is
// UNSUPPORTED_VERSION for that partition, as Kafka and kfake answer. The
// host's data backend answers the same through the replica's native
// look-up (messages.MaxTimestamp).

package host

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/actorlog/actorlog/kafka"
)

func TestKafkaListMaxTimestampOffsets(t *testing.T) {
	h, addr := kafkaDataHost(t, "maxts", 2)
	cl := kafkaClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	// Each ProduceSync is one batch on partition 0. Offsets and
	// timestamps (ms after base):
	//   batch 1: 0:500 1:100 2:300
	//   batch 2: 3:200 4:900 5:50     <- the first 900
	//   batch 3: 6:900 7:10           <- an equal one later
	//   batch 4: 8:400
	for _, batch := range [][]int{{500, 100, 300}, {200, 900, 50}, {900, 10}, {400}} {
		var recs []*kgo.Record
		for _, ms := range batch {
			recs = append(recs, &kgo.Record{Topic: "maxts", Partition: 0, Value: []byte("v"), Timestamp: at(ms)})
		}
		produceAll(t, cl, recs)
	}
	wantTS := at(900).UnixMilli()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	listed, err := adm.ListMaxTimestampOffsets(ctx, "maxts")
	if err != nil {
		t.Fatalf("kadm ListMaxTimestampOffsets: %v", err)
	}
	if o, ok := listed.Lookup("maxts", 0); !ok || o.Err != nil || o.Offset != 4 || o.Timestamp != wantTS {
		t.Fatalf("partition 0: %+v, want offset 4 timestamp %d", o, wantTS)
	}
	if o, ok := listed.Lookup("maxts", 1); !ok || o.Err != nil || o.Offset != -1 || o.Timestamp != -1 {
		t.Fatalf("empty partition 1: %+v, want offset -1 timestamp -1", o)
	}

	// Raw v7, and v6 (a client capped at Kafka 2.8, before KIP-734).
	raw := func(cl *kgo.Client, version int16) *kmsg.ListOffsetsResponse {
		t.Helper()
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(version)
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "maxts"
		for p := int32(0); p < 2; p++ {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, kafka.ListMaxTimestamp, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("ListOffsets v%d: %v", version, err)
		}
		if resp.Version != version || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
			t.Fatalf("ListOffsets v%d answered v%d: %+v", version, resp.Version, resp.Topics)
		}
		return resp
	}
	ps := raw(cl, 7).Topics[0].Partitions
	if p := ps[0]; p.ErrorCode != 0 || p.Offset != 4 || p.Timestamp != wantTS || p.LeaderEpoch < 0 {
		t.Errorf("v7 partition 0: %+v, want offset 4 timestamp %d", p, wantTS)
	}
	if p := ps[1]; p.ErrorCode != 0 || p.Offset != -1 || p.Timestamp != -1 {
		t.Errorf("v7 partition 1: %+v, want offset -1 timestamp -1 and no error", p)
	}
	old := kafkaClient(t, addr, kgo.MaxVersions(kversion.V2_8_0()))
	for _, p := range raw(old, 6).Topics[0].Partitions {
		if p.ErrorCode != kerr.UnsupportedVersion.Code {
			t.Errorf("v6 partition %d: %+v, want UNSUPPORTED_VERSION", p.Partition, p)
		}
	}

	// The data backend itself, through the replica's native look-up.
	d := testKafkaData(t, h)
	res, err := d.ListOffset(ctx, kafka.ListOffsetQuery{Topic: "maxts", Partition: 0, Timestamp: kafka.ListMaxTimestamp, CurrentLeaderEpoch: -1})
	if err != nil || res.ErrorCode != 0 || res.Offset != 4 || res.Timestamp != wantTS {
		t.Fatalf("backend: %+v, %v; want offset 4 timestamp %d", res, err, wantTS)
	}
	res, err = d.ListOffset(ctx, kafka.ListOffsetQuery{Topic: "maxts", Partition: 1, Timestamp: kafka.ListMaxTimestamp, CurrentLeaderEpoch: -1})
	if err != nil || res.ErrorCode != 0 || res.Offset != -1 || res.Timestamp != -1 || res.LeaderEpoch != -1 {
		t.Fatalf("backend, empty partition: %+v, %v; want -1/-1/-1", res, err)
	}
}
