// produce_test.go: Produce and InitProducerId: the batch checks as a
// table, the refusals (v0-2, transactions, bad acks) on the wire, acks=0
// keeping its place among pipelined requests, and franz-go's producer
// (idempotent acks=all, acks=0, every codec) writing what the fake stores.

package kafka

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/internal/poll"
	"github.com/actorlog/actorlog/storage/record"
)

// testBatch builds one batch of n records with codec c.
func testBatch(t testing.TB, n int, c record.Compression) []byte {
	t.Helper()
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{Key: fmt.Appendf(nil, "k%d", i), Value: bytes.Repeat([]byte{byte('a' + i%26)}, 10+i),
			Timestamp: 1_700_000_000_000 + int64(i)}
	}
	b, err := record.BuildBatch(c, recs...)
	if err != nil {
		t.Fatalf("build batch: %v", err)
	}
	return b
}

// withCRC recomputes b's CRC after a header edit.
func withCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[17:], record.Checksum(b))
	return b
}

// produceReq is a Produce request at version v with one batch per
// partition of topic.
func produceReq(v, acks int16, topic string, batches map[int32][]byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(v)
	req.Acks = acks
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	parts := make([]int32, 0, len(batches))
	for p := range batches {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	for _, p := range parts {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, batches[p]
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func TestCheckProducedBatch(t *testing.T) {
	good := testBatch(t, 3, record.CompressionNone)
	mut := func(f func(b []byte) []byte) []byte { return f(slices.Clone(good)) }
	zstd := testBatch(t, 3, record.CompressionZstd)
	for _, tc := range []struct {
		name    string
		version int16
		b       []byte
		code    int16
	}{
		{"good", 9, good, 0},
		{"good gzip", 3, testBatch(t, 3, record.CompressionGzip), 0},
		{"zstd v7", 7, zstd, 0},
		{"zstd v6", 6, zstd, kerr.UnsupportedCompressionType.Code},
		{"no records", 9, nil, kerr.InvalidRecord.Code},
		{"magic 1", 9, mut(func(b []byte) []byte { b[16] = 1; return b }), kerr.InvalidRecord.Code},
		{"magic 0 message set", 9, mut(func(b []byte) []byte { b[16] = 0; return b[:30] }), kerr.InvalidRecord.Code},
		{"two batches", 9, append(slices.Clone(good), good...), kerr.InvalidRecord.Code},
		{"truncated", 9, good[:len(good)-1], kerr.CorruptMessage.Code},
		{"short", 9, good[:20], kerr.CorruptMessage.Code},
		{"crc", 9, mut(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), kerr.CorruptMessage.Code},
		{"control", 9, mut(func(b []byte) []byte { b[22] |= 0x20; return withCRC(b) }), kerr.InvalidRecord.Code},
		{"transactional", 9, mut(func(b []byte) []byte { b[22] |= 0x10; return withCRC(b) }), transactionalBatch},
	} {
		if code, msg := checkProducedBatch(tc.version, tc.b); code != tc.code {
			t.Errorf("%s: code %d (%s), want %d", tc.name, code, msg, tc.code)
		}
	}
}

func TestPlanProduceRefusesWholeRequests(t *testing.T) {
	good := testBatch(t, 1, record.CompressionNone)
	txn := withCRC(slices.Clone(good))
	txn[22] |= 0x10
	txn = withCRC(txn)
	for _, tc := range []struct {
		name string
		req  *kmsg.ProduceRequest
		code int16
	}{
		{"transactional id", func() *kmsg.ProduceRequest {
			r := produceReq(9, -1, "t", map[int32][]byte{0: good, 1: good})
			r.TransactionID = kmsg.StringPtr("txn")
			return r
		}(), kerr.TransactionalIDAuthorizationFailed.Code},
		{"transactional batch", produceReq(9, -1, "t", map[int32][]byte{0: good, 1: txn}), kerr.TransactionalIDAuthorizationFailed.Code},
		{"acks 2", produceReq(9, 2, "t", map[int32][]byte{0: good, 1: good}), kerr.InvalidRequiredAcks.Code},
	} {
		plan := planProduce(tc.req)
		if len(plan) != 2 {
			t.Fatalf("%s: %d parts", tc.name, len(plan))
		}
		for _, p := range plan {
			if p.code != tc.code || p.batch != nil {
				t.Errorf("%s: partition %d code %d, want %d", tc.name, p.partition, p.code, tc.code)
			}
		}
	}
}

func TestInitProducerIDRefusal(t *testing.T) {
	req := kmsg.NewPtrInitProducerIDRequest()
	if code := initProducerIDRefusal(req); code != 0 {
		t.Errorf("idempotent: %d", code)
	}
	req.TransactionalID = kmsg.StringPtr("")
	if code := initProducerIDRefusal(req); code != kerr.InvalidRequest.Code {
		t.Errorf("empty transactional id: %d", code)
	}
	req.TransactionalID = kmsg.StringPtr("t1")
	if code := initProducerIDRefusal(req); code != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Errorf("transactional id: %d", code)
	}
}

func TestProduceOnTheWire(t *testing.T) {
	ds := startDataServer(t, map[string]int{"t": 2}, nil)
	c := ds.dial(t)
	good := testBatch(t, 3, record.CompressionNone)
	send := func(req kmsg.Request, corr int32) kmsg.Response {
		t.Helper()
		if _, err := c.Write(frame(req, corr)); err != nil {
			t.Fatalf("write: %v", err)
		}
		resp := req.ResponseKind()
		if got := readResponse(t, c, resp); got != corr {
			t.Fatalf("correlation id %d, want %d", got, corr)
		}
		return resp
	}
	codes := func(resp kmsg.Response) []int16 {
		var out []int16
		for _, rt := range resp.(*kmsg.ProduceResponse).Topics {
			for _, rp := range rt.Partitions {
				out = append(out, rp.ErrorCode)
			}
		}
		return out
	}

	// Every served version appends; base offsets follow.
	next := int64(0)
	for v := int16(3); v <= 12; v++ {
		resp := send(produceReq(v, 1, "t", map[int32][]byte{0: good}), int32(v)).(*kmsg.ProduceResponse)
		rp := resp.Topics[0].Partitions[0]
		if rp.ErrorCode != 0 || rp.BaseOffset != next || rp.LogAppendTime != -1 {
			t.Fatalf("v%d: %+v, want base offset %d", v, rp, next)
		}
		if v >= 5 && rp.LogStartOffset != 0 {
			t.Errorf("v%d: log start %d", v, rp.LogStartOffset)
		}
		next += 3
	}
	// v0-2: UNSUPPORTED_VERSION per partition, nothing appended.
	for v := int16(0); v <= 2; v++ {
		resp := send(produceReq(v, 1, "t", map[int32][]byte{0: good, 1: good}), 100+int32(v))
		if got := codes(resp); !slices.Equal(got, []int16{35, 35}) {
			t.Errorf("v%d: codes %v, want UNSUPPORTED_VERSION", v, got)
		}
	}
	// Transactional: refused for every partition.
	txn := produceReq(9, -1, "t", map[int32][]byte{0: good, 1: good})
	txn.TransactionID = kmsg.StringPtr("my-txn")
	if got := codes(send(txn, 200)); !slices.Equal(got, []int16{53, 53}) {
		t.Errorf("transactional: codes %v", got)
	}
	// Routing errors come from the backend, per partition; v8+ carries
	// the messages of refusals.
	ds.data.setCode("t", 1, kerr.NotLeaderForPartition.Code)
	bad := slices.Clone(good)
	bad[len(bad)-1] ^= 1
	mixed := produceReq(9, -1, "t", map[int32][]byte{0: bad, 1: good})
	mixed.Topics = append(mixed.Topics, produceReq(9, -1, "nope", map[int32][]byte{0: good}).Topics...)
	resp := send(mixed, 201).(*kmsg.ProduceResponse)
	if got := codes(resp); !slices.Equal(got, []int16{2, 6, 3}) {
		t.Errorf("mixed: codes %v, want CORRUPT_MESSAGE, NOT_LEADER, UNKNOWN_TOPIC", got)
	}
	if m := resp.Topics[0].Partitions[0].ErrorMessage; m == nil || !strings.Contains(*m, "CRC") {
		t.Errorf("corrupt batch message %v", m)
	}
	if n := len(ds.data.stored("t", 0)); n != 10 {
		t.Errorf("stored %d batches, want 10", n)
	}

	// InitProducerId: idempotent served, transactional refused.
	ipid := kmsg.NewPtrInitProducerIDRequest()
	ipid.SetVersion(4)
	pr := send(ipid, 300).(*kmsg.InitProducerIDResponse)
	if pr.ErrorCode != 0 || pr.ProducerID <= 0 || pr.ProducerEpoch != 0 {
		t.Errorf("init producer id: %+v", pr)
	}
	ipid.TransactionalID = kmsg.StringPtr("my-txn")
	if pr := send(ipid, 301).(*kmsg.InitProducerIDResponse); pr.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code || pr.ProducerID != -1 {
		t.Errorf("transactional init producer id: %+v", pr)
	}
}

// TestAcksZeroKeepsItsPlace: an acks=0 produce writes nothing, the request
// behind it is answered in its turn (after the append, even a slow one),
// and a pipeline of produces reaches the partition in request order.
func TestAcksZeroKeepsItsPlace(t *testing.T) {
	ds := startDataServer(t, map[string]int{"t": 1}, nil)
	ds.data.appendDelay = 50 * time.Millisecond
	c := ds.dial(t)
	var msg []byte
	for i := int32(0); i < 5; i++ {
		msg = append(msg, frame(produceReq(9, 0, "t", map[int32][]byte{0: testBatch(t, int(i)+1, record.CompressionNone)}), i)...)
	}
	msg = append(msg, frame(metadataReq(9, "t"), 5)...)
	msg = append(msg, frame(produceReq(12, -1, "t", map[int32][]byte{0: testBatch(t, 1, record.CompressionNone)}), 6)...)
	start := time.Now()
	if _, err := c.Write(msg); err != nil {
		t.Fatalf("write: %v", err)
	}
	md := kmsg.NewPtrMetadataResponse()
	md.SetVersion(9)
	if corr := readResponse(t, c, md); corr != 5 {
		t.Fatalf("first response has correlation id %d, want 5 (acks=0 answers nothing)", corr)
	}
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Errorf("metadata answered after %v, before the acks=0 appends ahead of it", took)
	}
	pr := kmsg.NewPtrProduceResponse()
	pr.SetVersion(12)
	if corr := readResponse(t, c, pr); corr != 6 {
		t.Fatalf("correlation id %d, want 6", corr)
	}
	// 1+2+3+4+5 records before it.
	if rp := pr.Topics[0].Partitions[0]; rp.ErrorCode != 0 || rp.BaseOffset != 15 {
		t.Errorf("produce after the acks=0 ones: %+v, want base offset 15", rp)
	}
	var counts []int32
	for _, b := range ds.data.stored("t", 0) {
		h, err := record.ParseHeader(b)
		if err != nil {
			t.Fatalf("stored batch: %v", err)
		}
		counts = append(counts, h.RecordCount)
	}
	if !slices.Equal(counts, []int32{1, 2, 3, 4, 5, 1}) {
		t.Errorf("stored batches of %v records, want 1 2 3 4 5 1 (request order)", counts)
	}

	// An acks=0 produce that fails closes the connection (Kafka does, so
	// the client refreshes its metadata); the server serves others.
	c2 := ds.dial(t)
	if _, err := c2.Write(frame(produceReq(9, 0, "nope", map[int32][]byte{0: testBatch(t, 1, record.CompressionNone)}), 1)); err != nil {
		t.Fatalf("write: %v", err)
	}
	expectClosed(t, c2)
	ds.waitLog(t, reasonAcksZeroError)
	ds.expectServed(t)

	// So does an acks=0 produce at an unserved version (v0-2), even with
	// no partitions: its UNSUPPORTED_VERSION answer would be read as the
	// answer to the client's next request (found by
	// TestKafkaFuzzAgainstHost).
	for v := int16(0); v <= 2; v++ {
		ds.hook.Reset()
		c3 := ds.dial(t)
		req := produceReq(v, 0, "t", map[int32][]byte{0: testBatch(t, 1, record.CompressionNone)})
		if v == 2 {
			req.Topics = nil
		}
		if _, err := c3.Write(frame(req, 1)); err != nil {
			t.Fatalf("write: %v", err)
		}
		expectClosed(t, c3)
		ds.waitLog(t, reasonAcksZeroError)
	}
	if got := ds.data.stored("t", 0); len(got) != 6 {
		t.Errorf("%d batches stored after the v0-2 acks=0 produces, want the 6 before", len(got))
	}
	ds.expectServed(t)
}

// TestProduceUnansweredAppend: a backend that never answers an append
// still gets the client an answer, REQUEST_TIMED_OUT, after timeout_ms and
// a grace period, with a log line.
func TestProduceUnansweredAppend(t *testing.T) {
	defer func(g time.Duration) { appendGrace = g }(appendGrace)
	appendGrace = 100 * time.Millisecond
	ds := startDataServer(t, map[string]int{"t": 1}, nil)
	ds.data.silent = true
	c := ds.dial(t)
	req := produceReq(9, -1, "t", map[int32][]byte{0: testBatch(t, 1, record.CompressionNone)})
	req.TimeoutMillis = 100
	start := time.Now()
	if _, err := c.Write(frame(req, 1)); err != nil {
		t.Fatal(err)
	}
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	readResponse(t, c, resp)
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Errorf("answered after %v, before timeout_ms and the grace", took)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.RequestTimedOut.Code {
		t.Errorf("code %d, want REQUEST_TIMED_OUT", code)
	}
	poll.Until(t, 5*time.Second, func() error {
		for _, e := range ds.hook.AllEntries() {
			if strings.Contains(e.Message, "did not answer an append") && e.Data["topic"] == "t" {
				return nil
			}
		}
		return errors.New("no log line")
	})
}

// produceClient is a kgo producer for the data server.
func produceClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(3), kgo.RetryTimeout(10 * time.Second),
		kgo.ProduceRequestTimeout(10 * time.Second), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatalf("new kgo client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// testRecords are n records spread over partitions, with keys, values,
// headers and distinct timestamps.
func testRecords(topic string, n, partitions int) []*kgo.Record {
	base := time.UnixMilli(1_700_000_000_000)
	out := make([]*kgo.Record, n)
	for i := range out {
		out[i] = &kgo.Record{
			Topic:     topic,
			Partition: int32(i % partitions),
			Key:       fmt.Appendf(nil, "key-%d", i),
			Value:     bytes.Repeat(fmt.Appendf(nil, "value-%d|", i), 1+i%7),
			Headers:   []kgo.RecordHeader{{Key: "h", Value: fmt.Appendf(nil, "%d", i)}, {Key: "empty"}},
			Timestamp: base.Add(time.Duration(i) * time.Millisecond),
		}
		if i%5 == 0 {
			out[i].Key = nil
		}
	}
	return out
}

// storedRecords decodes every record the fake holds for topic, by
// partition.
func storedRecords(t *testing.T, d *fakeData, topic string, partitions int) map[int32][]record.Record {
	t.Helper()
	out := map[int32][]record.Record{}
	for p := int32(0); p < int32(partitions); p++ {
		for _, b := range d.stored(topic, p) {
			recs, err := record.Records(b, 64<<20)
			if err != nil {
				t.Fatalf("stored batch of %s/%d: %v", topic, p, err)
			}
			out[p] = append(out[p], recs...)
		}
	}
	return out
}

// sameRecord compares what a producer sent with what came back.
func sameRecord(want *kgo.Record, key, value []byte, headers []kgo.RecordHeader, ts time.Time) error {
	if !bytes.Equal(key, want.Key) || (key == nil) != (want.Key == nil) || !bytes.Equal(value, want.Value) || !ts.Equal(want.Timestamp) {
		return fmt.Errorf("key %q value %q ts %v, want %q %q %v", key, value, ts, want.Key, want.Value, want.Timestamp)
	}
	if len(headers) != len(want.Headers) {
		return fmt.Errorf("headers %v, want %v", headers, want.Headers)
	}
	for i, h := range headers {
		if h.Key != want.Headers[i].Key || !bytes.Equal(h.Value, want.Headers[i].Value) {
			return fmt.Errorf("header %d %v, want %v", i, h, want.Headers[i])
		}
	}
	return nil
}

// checkStored checks the fake holds sent, in per-partition order.
func checkStored(t *testing.T, d *fakeData, topic string, partitions int, sent []*kgo.Record) {
	t.Helper()
	got := storedRecords(t, d, topic, partitions)
	idx := map[int32]int{}
	for _, w := range sent {
		p := w.Partition
		if idx[p] >= len(got[p]) {
			t.Fatalf("%s/%d: only %d records stored", topic, p, len(got[p]))
		}
		r := got[p][idx[p]]
		var hs []kgo.RecordHeader
		for _, h := range r.Headers {
			hs = append(hs, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		if err := sameRecord(w, r.Key, r.Value, hs, time.UnixMilli(r.Timestamp)); err != nil {
			t.Fatalf("%s/%d offset %d: %v", topic, p, r.Offset, err)
		}
		if r.Offset != int64(idx[p]) {
			t.Fatalf("%s/%d: record %d at offset %d", topic, p, idx[p], r.Offset)
		}
		idx[p]++
	}
	for p, recs := range got {
		if idx[p] != len(recs) {
			t.Errorf("%s/%d: %d records stored, %d sent", topic, p, len(recs), idx[p])
		}
	}
}

func TestKgoProducer(t *testing.T) {
	const n, partitions = 300, 3
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
			if err := cl.ProduceSync(ctx, sent...).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			if strings.HasPrefix(tc.name, "acks=0") {
				poll.Until(t, 10*time.Second, func() error {
					if got := storedRecords(t, ds.data, "t", partitions); len(got[0])+len(got[1])+len(got[2]) != n {
						return errors.New("not all stored yet")
					}
					return nil
				})
			}
			checkStored(t, ds.data, "t", partitions, sent)
		})
	}
}
