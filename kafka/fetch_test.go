// fetch_test.go: Fetch over the fake: the long poll (woken by a write to
// another partition within a few milliseconds, else waiting max_wait,
// watches dropped afterwards), max_bytes across partitions with the first
// batch always returned, sessionless fetch sessions, errors answered at
// once, and a kgo consumer reading back what kgo producers wrote, byte for
// byte, with every codec and acks setting.

package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/internal/poll"
	"github.com/actorlog/actorlog/storage/record"
)

// fetchReq is a Fetch request at version v for partitions of topic, each
// from its offset in offsets.
func fetchReq(v int16, topic string, offsets []int64, maxWait, minBytes, maxBytes, partMax int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(v)
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = maxWait, minBytes, maxBytes
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	for p, off := range offsets {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = int32(p), off, partMax
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// fetch sends req on c and returns its response and how long it took.
func fetch(t *testing.T, c net.Conn, req *kmsg.FetchRequest, corr int32) (*kmsg.FetchResponse, time.Duration) {
	t.Helper()
	resp, took, err := fetchE(c, req, corr)
	if err != nil {
		t.Fatal(err)
	}
	return resp, took
}

// fetchE is fetch for any goroutine: failures are returned.
func fetchE(c net.Conn, req *kmsg.FetchRequest, corr int32) (*kmsg.FetchResponse, time.Duration, error) {
	start := time.Now()
	if _, err := c.Write(frame(req, corr)); err != nil {
		return nil, 0, fmt.Errorf("write: %w", err)
	}
	got, body, err := readResponseFrame(c)
	if err != nil {
		return nil, 0, err
	}
	took := time.Since(start)
	if got != corr {
		return nil, took, fmt.Errorf("correlation id %d, want %d", got, corr)
	}
	if len(body) > 0 && req.IsFlexible() {
		body = body[1:] // the response header's empty tag section
	}
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if err := resp.ReadFrom(body); err != nil {
		return nil, took, fmt.Errorf("decode fetch response v%d: %w", req.Version, err)
	}
	return resp, took, nil
}

// appendTo appends a batch of n records to a partition through the fake.
func appendTo(t testing.TB, d *fakeData, topic string, partition int32, n int) AppendResult {
	t.Helper()
	res := <-d.Append(context.Background(), AppendRequest{Topic: topic, Partition: partition, Acks: -1, Batch: testBatch(t, n, record.CompressionNone)})
	if res.ErrorCode != 0 {
		t.Fatalf("append to %s/%d: %v", topic, partition, kerr.ErrorForCode(res.ErrorCode))
	}
	return res
}

// batchCounts is the number of batches per partition of resp.
func batchCounts(t *testing.T, resp *kmsg.FetchResponse) []int {
	t.Helper()
	var out []int
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			n := 0
			s := record.Batches(rp.RecordBatches)
			for s.Next() {
				n++
			}
			if s.Err() != nil || s.Consumed() != len(rp.RecordBatches) {
				t.Fatalf("%s/%d: records are not whole batches: %v", rt.Topic, rp.Partition, s.Err())
			}
			out = append(out, n)
		}
	}
	return out
}

func TestFetchLongPoll(t *testing.T) {
	ds := startDataServer(t, map[string]int{"t": 3}, nil)
	for p := int32(0); p < 3; p++ {
		appendTo(t, ds.data, "t", p, 2)
	}
	c, producer := ds.dial(t), ds.dial(t)
	const maxWait = 2000 * time.Millisecond
	var latencies []time.Duration
	offsets := []int64{2, 2, 2}
	for round := 0; round < 6; round++ {
		// Every partition at its end: the fetch waits.
		req := fetchReq(12, "t", offsets, int32(maxWait/time.Millisecond), 1, 50<<20, 1<<20)
		type answer struct {
			resp *kmsg.FetchResponse
			took time.Duration
			err  error
		}
		done := make(chan answer, 1)
		go func() {
			resp, took, err := fetchE(c, req, int32(round))
			done <- answer{resp, took, err}
		}()
		// Once the fetch is parked (its watch registered), produce to
		// one of its partitions over another connection, in turn.
		poll.Until(t, 5*time.Second, func() error {
			if ds.data.liveWatchs.Load() == 0 {
				return errors.New("fetch not waiting yet")
			}
			return nil
		})
		target := int32(round % 3)
		wrote := time.Now()
		if _, err := producer.Write(frame(produceReq(9, 1, "t", map[int32][]byte{target: testBatch(t, 1, record.CompressionNone)}), int32(round))); err != nil {
			t.Fatalf("write produce: %v", err)
		}
		var a answer
		select {
		case a = <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("no fetch response")
		}
		latency := time.Since(wrote)
		if a.err != nil {
			t.Fatalf("round %d: %v", round, a.err)
		}
		pr := kmsg.NewPtrProduceResponse()
		pr.SetVersion(9)
		readResponse(t, producer, pr)
		latencies = append(latencies, latency)
		if latency >= maxWait/2 || a.took >= maxWait/2 {
			t.Fatalf("round %d: answered %v after the produce (%v in all), want well below max_wait %v", round, latency, a.took, maxWait)
		}
		want := []int{0, 0, 0}
		want[target] = 1
		if got := batchCounts(t, a.resp); !slices.Equal(got, want) {
			t.Fatalf("round %d: batches %v, want %v", round, got, want)
		}
		offsets[target]++
	}
	slices.Sort(latencies)
	t.Logf("3-partition long poll answered %v (median %v, max %v) after a produce to one of them on another connection; max_wait %v",
		latencies, latencies[len(latencies)/2], latencies[len(latencies)-1], maxWait)
	poll.Until(t, 5*time.Second, func() error {
		if n := ds.data.liveWatchs.Load(); n != 0 {
			return fmt.Errorf("%d watches still registered", n)
		}
		return nil
	})

	// Nothing arrives: the fetch waits about max_wait, reading only when
	// woken (once at the start and once at the deadline).
	const idleWait = 500 * time.Millisecond
	reads := ds.data.reads.Load()
	resp, took := fetch(t, c, fetchReq(12, "t", offsets, int32(idleWait/time.Millisecond), 1, 50<<20, 1<<20), 99)
	t.Logf("idle long poll answered after %v (max_wait %v)", took, idleWait)
	if took < idleWait*8/10 || took > idleWait+2*time.Second {
		t.Errorf("idle fetch answered after %v, want about max_wait %v", took, idleWait)
	}
	if got := batchCounts(t, resp); !slices.Equal(got, []int{0, 0, 0}) {
		t.Errorf("idle fetch: batches %v", got)
	}
	if n := ds.data.reads.Load() - reads; n != 6 {
		t.Errorf("idle fetch read %d partitions, want 6 (3 at the start, 3 at the deadline): no polling", n)
	}

	// min_bytes above what arrives keeps waiting; enough in all wakes it.
	go func() {
		time.Sleep(50 * time.Millisecond)
		ds.data.Append(context.Background(), AppendRequest{Topic: "t", Partition: 1, Batch: testBatch(t, 1, record.CompressionNone)})
		time.Sleep(50 * time.Millisecond)
		ds.data.Append(context.Background(), AppendRequest{Topic: "t", Partition: 2, Batch: testBatch(t, 40, record.CompressionNone)})
	}()
	resp, took = fetch(t, c, fetchReq(12, "t", offsets, 5000, 400, 50<<20, 1<<20), 100)
	if took > 2500*time.Millisecond {
		t.Errorf("min_bytes fetch answered after %v", took)
	}
	if got := batchCounts(t, resp); !slices.Equal(got, []int{0, 1, 1}) {
		t.Errorf("min_bytes fetch: batches %v", got)
	}
}

// TestFetchWokenByLeaderChange: a partition that stops being led here wakes
// the waiting fetch, which answers its error at once.
func TestFetchWokenByLeaderChange(t *testing.T) {
	ds := startDataServer(t, map[string]int{"t": 2}, nil)
	c := ds.dial(t)
	go func() {
		for deadline := time.Now().Add(5 * time.Second); ds.data.liveWatchs.Load() == 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		ds.data.setCode("t", 1, kerr.NotLeaderForPartition.Code)
	}()
	resp, took := fetch(t, c, fetchReq(11, "t", []int64{0, 0}, 5000, 1, 50<<20, 1<<20), 1)
	if took > 2500*time.Millisecond {
		t.Errorf("answered after %v", took)
	}
	if p := resp.Topics[0].Partitions[1]; p.ErrorCode != kerr.NotLeaderForPartition.Code || p.HighWatermark != -1 {
		t.Errorf("partition 1: %+v", p)
	}
	// An error is answered without waiting at all.
	_, took = fetch(t, c, fetchReq(11, "t", []int64{0, 0}, 5000, 1, 50<<20, 1<<20), 2)
	if took > time.Second {
		t.Errorf("error answered after %v", took)
	}
	// So is an out-of-range offset, and a fenced epoch.
	req := fetchReq(9, "t", []int64{5}, 5000, 1, 50<<20, 1<<20)
	resp, _ = fetch(t, c, req, 3)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.OffsetOutOfRange.Code {
		t.Errorf("offset out of range: %d", code)
	}
	req = fetchReq(9, "t", []int64{0}, 5000, 1, 50<<20, 1<<20)
	req.Topics[0].Partitions[0].CurrentLeaderEpoch = 2
	resp, _ = fetch(t, c, req, 4)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.FencedLeaderEpoch.Code {
		t.Errorf("fenced epoch: %d", code)
	}
}

func TestFetchMaxBytesAcrossPartitions(t *testing.T) {
	ds := startDataServer(t, map[string]int{"t": 3}, nil)
	for p := int32(0); p < 3; p++ {
		for i := 0; i < 3; i++ {
			appendTo(t, ds.data, "t", p, 10)
		}
	}
	size := len(ds.data.stored("t", 0)[0])
	c := ds.dial(t)
	for i, tc := range []struct {
		name             string
		maxBytes, pMax   int32
		want             []int
		partitionOffsets []int64
	}{
		{"everything", 50 << 20, 1 << 20, []int{3, 3, 3}, nil},
		{"max_bytes spans partitions", int32(size*5 + size/2), 1 << 20, []int{3, 2, 0}, nil},
		{"first batch always", 10, 1 << 20, []int{1, 0, 0}, nil},
		{"partition max", 50 << 20, int32(size + size/2), []int{1, 1, 1}, nil},
		{"tiny partition max: first batch only", 50 << 20, 10, []int{1, 0, 0}, nil},
		{"first non-empty partition", 10, 1 << 20, []int{0, 1, 0}, []int64{30, 0, 0}},
		{"mid-batch offset", 50 << 20, 1 << 20, []int{2, 3, 3}, []int64{15, 0, 0}},
	} {
		offsets := tc.partitionOffsets
		if offsets == nil {
			offsets = []int64{0, 0, 0}
		}
		resp, _ := fetch(t, c, fetchReq(12, "t", offsets, 0, 0, tc.maxBytes, tc.pMax), int32(i))
		if got := batchCounts(t, resp); !slices.Equal(got, tc.want) {
			t.Errorf("%s: batches %v, want %v (batch size %d)", tc.name, got, tc.want, size)
		}
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != 0 || p.HighWatermark != 30 || p.LastStableOffset != 30 || p.LogStartOffset != 0 {
				t.Errorf("%s: partition %+v", tc.name, p)
			}
		}
	}
}

func TestFetchSessionsAreSessionless(t *testing.T) {
	ds := startDataServer(t, map[string]int{"t": 1}, nil)
	c := ds.dial(t)
	req := fetchReq(7, "t", []int64{0}, 0, 0, 1<<20, 1<<20)
	req.SessionEpoch = 0 // asks for a new session
	if resp, _ := fetch(t, c, req, 1); resp.ErrorCode != 0 || resp.SessionID != 0 || len(resp.Topics) != 1 {
		t.Errorf("new session: error %d session %d topics %d, want a sessionless full answer", resp.ErrorCode, resp.SessionID, len(resp.Topics))
	}
	req.SessionID, req.SessionEpoch = 12, 1 // an incremental fetch
	if resp, _ := fetch(t, c, req, 2); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code || len(resp.Topics) != 0 {
		t.Errorf("incremental: error %d topics %d, want FETCH_SESSION_ID_NOT_FOUND", resp.ErrorCode, len(resp.Topics))
	}
	for v := int16(4); v <= 12; v++ {
		if resp, _ := fetch(t, c, fetchReq(v, "t", []int64{0}, 0, 0, 1<<20, 1<<20), int32(10+v)); resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Errorf("v%d: %+v", v, resp)
		}
	}
}

// consumeAll reads n records of topic from the start with a kgo consumer.
func consumeAll(t *testing.T, addr, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.FetchMaxBytes(64<<10), kgo.RetryTimeout(10*time.Second))
	if err != nil {
		t.Fatalf("new consumer: %v", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(got), n, err)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("fetch %s/%d: %v", topic, p, err)
		})
		got = append(got, fs.Records()...)
	}
	return got
}

// checkConsumed checks got holds sent exactly, in per-partition order.
func checkConsumed(t *testing.T, sent, got []*kgo.Record) {
	t.Helper()
	if len(got) != len(sent) {
		t.Fatalf("consumed %d records, sent %d", len(got), len(sent))
	}
	byPartition := map[int32][]*kgo.Record{}
	for _, r := range got {
		byPartition[r.Partition] = append(byPartition[r.Partition], r)
	}
	idx := map[int32]int{}
	for _, w := range sent {
		r := byPartition[w.Partition][idx[w.Partition]]
		if r.Offset != int64(idx[w.Partition]) {
			t.Fatalf("%d/%d: offset %d", w.Partition, idx[w.Partition], r.Offset)
		}
		if err := sameRecord(w, r.Key, r.Value, r.Headers, r.Timestamp); err != nil {
			t.Fatalf("partition %d offset %d: %v", w.Partition, r.Offset, err)
		}
		idx[w.Partition]++
	}
}

func TestKgoRoundTrip(t *testing.T) {
	const n, partitions = 400, 3
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"idempotent acks=all", nil},
		{"acks=0", []kgo.Opt{kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite()}},
		{"gzip", []kgo.Opt{kgo.ProducerBatchCompression(kgo.GzipCompression())}},
		{"snappy", []kgo.Opt{kgo.ProducerBatchCompression(kgo.SnappyCompression())}},
		{"lz4", []kgo.Opt{kgo.ProducerBatchCompression(kgo.Lz4Compression())}},
		{"zstd", []kgo.Opt{kgo.ProducerBatchCompression(kgo.ZstdCompression())}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := startDataServer(t, map[string]int{"t": partitions}, nil)
			cl := produceClient(t, ds.addr, tc.opts...)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			sent := testRecords("t", n, partitions)
			// Two rounds, so batches stack up and fetches span several.
			if err := cl.ProduceSync(ctx, sent[:n/2]...).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			if err := cl.ProduceSync(ctx, sent[n/2:]...).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			checkConsumed(t, sent, consumeAll(t, ds.addr, "t", n))
		})
	}
}

func TestPlanFetch(t *testing.T) {
	req := fetchReq(8, "t", []int64{5, 9}, 100, 1, 1000, 4000)
	req.IsolationLevel = 1
	for i := range req.Topics[0].Partitions {
		req.Topics[0].Partitions[i].CurrentLeaderEpoch = 6
		req.Topics[0].Partitions[i].LastFetchedEpoch = 5
	}
	for _, tc := range []struct {
		v              int16
		current, lastF int32
	}{{8, -1, -1}, {9, 6, -1}, {11, 6, -1}, {12, 6, 5}} {
		req.SetVersion(tc.v)
		parts, code := planFetch(req)
		if code != 0 || len(parts) != 2 {
			t.Fatalf("v%d: %d parts, code %d", tc.v, len(parts), code)
		}
		q := parts[1].q
		if q.Offset != 9 || q.MaxBytes != 1000 || parts[1].partMax != 4000 || !q.ReadCommitted ||
			q.CurrentLeaderEpoch != tc.current || q.LastFetchedEpoch != tc.lastF {
			t.Errorf("v%d: %+v", tc.v, parts[1])
		}
	}
	req.SetVersion(7)
	req.SessionID, req.SessionEpoch = 3, 2
	if _, code := planFetch(req); code != kerr.FetchSessionIDNotFound.Code {
		t.Errorf("incremental session: code %d", code)
	}
	ws := fetchWatches([]fetchPart{{q: ReadQuery{Topic: "t", Offset: 3}}, {q: ReadQuery{Topic: "t", Partition: 1, Offset: 9}}},
		[]ReadResult{{HighWatermark: 7}, {HighWatermark: 7}})
	if ws[0].Above != 7 || ws[1].Above != 9 || ws[1].Partition != 1 {
		t.Errorf("watches %+v", ws)
	}
}
