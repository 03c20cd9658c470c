// kafkadata_test.go: the Kafka listener's data APIs against a real
// in-process host, over its local replicas: franz-go (kgo, idempotent
// acks=all by default) produces keyed records with headers to a
// 3-partition topic and reads them back byte-identical in per-partition
// order without a group; records produced natively read through Kafka and
// the other way round; a long poll answers promptly after a produce;
// kadm's start, end, by-time and leader-epoch offsets match; acks=0; kcat
// -P then kcat -C -e; and, on the backend itself, the routing answers for
// partitions this host has no replica of, the diverging-epoch check, and
// shared watches.

package host

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/actorlog/actorlog/actors/replica"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/kafka"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage/record"
)

// kafkaDataHost starts a host with a Kafka listener on a free port and
// creates topic with n partitions, waiting until Kafka metadata shows
// every partition led.
func kafkaDataHost(t *testing.T, topic string, n int32) (*Host, string) {
	t.Helper()
	h := startTestHost(t, func(c *Config) { c.KafkaListen = "127.0.0.1:0" })
	createKafkaTopic(t, h, topic, n)
	return h, h.KafkaAddress()
}

// createKafkaTopic creates topic with n partitions through the broker
// (CreateTopics is not served on the Kafka port yet) and waits until
// Kafka metadata shows every partition led by h.
func createKafkaTopic(t *testing.T, h *Host, topic string, n int32) {
	t.Helper()
	brk := actor.NewPID(h.system.Address(), messages.BrokerActorID)
	clustertest.CreateTopic(t, h.system, brk, &messages.CreateTopicRequest{Name: topic, Partitions: n, ReplicationFactor: 1})
	id := h.hostID.Load()
	adm := kafkaAdmin(t, h.KafkaAddress())
	waitKafkaMetadata(t, adm, func(md kadm.Metadata) error {
		td, ok := md.Topics[topic]
		if !ok || len(td.Partitions) != int(n) {
			return fmt.Errorf("topics %v: want %s with %d partitions", md.Topics.Names(), topic, n)
		}
		for _, p := range td.Partitions {
			if p.Leader != id || p.Err != nil {
				return fmt.Errorf("%s-%d led by %d (%v)", topic, p.Partition, p.Leader, p.Err)
			}
		}
		return nil
	})
	// Metadata can name h the leader a moment before the replica has
	// taken leadership (it answers NOT_LEADER_OR_FOLLOWER until then):
	// wait until every partition answers a list-offsets as leader.
	clustertest.WaitFor(t, 20*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		listed, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return fmt.Errorf("list end offsets: %w", err)
		}
		for p := int32(0); p < n; p++ {
			o, ok := listed.Lookup(topic, p)
			if !ok {
				return fmt.Errorf("%s-%d: no end offset listed", topic, p)
			}
			if o.Err != nil {
				return fmt.Errorf("%s-%d: %w", topic, p, o.Err)
			}
		}
		return nil
	})
}

// kafkaClient returns a kgo client bootstrapped to addr, closed at cleanup.
func kafkaClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.MetadataMinAge(10 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatalf("kgo client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// testRecords returns n keyed records with headers and distinct
// millisecond timestamps for topic.
func testRecords(topic string, n int) []*kgo.Record {
	base := time.UnixMilli(time.Now().Add(-time.Hour).UnixMilli())
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{
			Topic: topic, Key: []byte("key-" + strconv.Itoa(i%17)), Value: []byte(fmt.Sprintf("value %d %s", i, strings.Repeat("x", i%50))),
			Headers:   []kgo.RecordHeader{{Key: "i", Value: []byte(strconv.Itoa(i))}, {Key: "empty", Value: []byte{}}},
			Timestamp: base.Add(time.Duration(i) * time.Millisecond),
		}
	}
	return recs
}

// produceAll produces recs synchronously through cl and returns them with
// their partitions and offsets filled in.
func produceAll(t *testing.T, cl *kgo.Client, recs []*kgo.Record) {
	t.Helper()
	ctx, cancel := context30s()
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// consumeN reads n records of topic from the start of every partition,
// without a group, and fails past 30 s.
func consumeN(t *testing.T, addr, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := kafkaClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(time.Second))
	ctx, cancel := context30s()
	defer cancel()
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records: %v", len(got), n, ctx.Err())
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s-%d: %v", topic, p, err) })
		got = append(got, fs.Records()...)
	}
	if len(got) != n {
		t.Fatalf("consumed %d records, want %d", len(got), n)
	}
	return got
}

// sameRecords checks got (consumed) against want (produced, with offsets):
// each partition in produce order, byte-identical.
func sameRecords(t *testing.T, want, got []*kgo.Record) {
	t.Helper()
	byPart := func(rs []*kgo.Record) map[int32][]*kgo.Record {
		m := map[int32][]*kgo.Record{}
		for _, r := range rs {
			m[r.Partition] = append(m[r.Partition], r)
		}
		return m
	}
	w, g := byPart(want), byPart(got)
	if len(w) != len(g) {
		t.Fatalf("records in %d partitions, want %d", len(g), len(w))
	}
	for p, ws := range w {
		gs := g[p]
		if len(gs) != len(ws) {
			t.Fatalf("partition %d: %d records, want %d", p, len(gs), len(ws))
		}
		for i := range ws {
			a, b := ws[i], gs[i]
			if a.Offset != b.Offset || !bytes.Equal(a.Key, b.Key) || !bytes.Equal(a.Value, b.Value) ||
				!a.Timestamp.Equal(b.Timestamp) || !slices.EqualFunc(a.Headers, b.Headers, func(x, y kgo.RecordHeader) bool {
				return x.Key == y.Key && bytes.Equal(x.Value, y.Value)
			}) {
				t.Fatalf("partition %d record %d: got offset %d key %q value %q ts %v headers %v; want offset %d key %q value %q ts %v headers %v",
					p, i, b.Offset, b.Key, b.Value, b.Timestamp, b.Headers, a.Offset, a.Key, a.Value, a.Timestamp, a.Headers)
			}
		}
	}
}

func TestKafkaProduceConsumeRoundTrip(t *testing.T) {
	const topic, n = "events", 600
	h, addr := kafkaDataHost(t, topic, 3)

	prod := kafkaClient(t, addr) // acks=all, idempotent: franz-go's defaults
	recs := testRecords(topic, n)
	produceAll(t, prod, recs)
	parts := map[int32]int{}
	for _, r := range recs {
		parts[r.Partition]++
	}
	if len(parts) != 3 {
		t.Fatalf("records went to partitions %v; want all 3", parts)
	}
	got := consumeN(t, addr, topic, n)
	sameRecords(t, recs, got)
	t.Logf("%d records produced and consumed through Kafka, per partition %v", n, parts)

	// Kafka-produced records read natively, byte-identical.
	var p0 []*kgo.Record
	for _, r := range recs {
		if r.Partition == 0 {
			p0 = append(p0, r)
		}
	}
	native := nativeRead(t, h, topic, 0, int64(len(p0)))
	for i, r := range native {
		w := p0[i]
		if r.Offset != w.Offset || !bytes.Equal(r.Key, w.Key) || !bytes.Equal(r.Value, w.Value) || r.Timestamp != w.Timestamp.UnixMilli() || len(r.Headers) != len(w.Headers) {
			t.Fatalf("native read of %s-0 record %d: %+v, want %+v", topic, i, r, w)
		}
	}

	// Natively produced records read through Kafka.
	base := time.Now().UnixMilli()
	nrecs := []record.Record{
		{Key: []byte("native-a"), Value: []byte("one"), Headers: []record.RecordHeader{{Key: "h", Value: []byte("v")}}, Timestamp: base},
		{Key: nil, Value: []byte("two"), Timestamp: base + 1},
	}
	batch, err := record.BuildBatch(record.CompressionNone, nrecs...)
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.system.Root.RequestFuture(actor.NewPID(h.system.Address(), messages.ReplicaActorID(topic, 1)),
		&messages.ProduceRequest{Topic: topic, Partition: 1, Acks: messages.Acks_ACKS_ALL, TimeoutMs: 5000, Records: batch, CurrentLeaderEpoch: -1}, 10*time.Second).Result()
	if err != nil {
		t.Fatalf("native produce: %v", err)
	}
	pr := res.(*messages.ProduceResponse)
	if pr.ErrorCode != 0 || pr.BaseOffset != int64(parts[1]) {
		t.Fatalf("native produce: %v at %d, want offset %d", pr.ErrorCode, pr.BaseOffset, parts[1])
	}
	cl := kafkaClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {1: kgo.NewOffset().At(pr.BaseOffset)}}))
	ctx, cancel := context30s()
	defer cancel()
	var back []*kgo.Record
	for len(back) < len(nrecs) && ctx.Err() == nil {
		back = append(back, cl.PollFetches(ctx).Records()...)
	}
	if len(back) != len(nrecs) {
		t.Fatalf("read %d natively produced records through Kafka, want %d", len(back), len(nrecs))
	}
	for i, r := range back {
		w := nrecs[i]
		if r.Offset != pr.BaseOffset+int64(i) || !bytes.Equal(r.Key, w.Key) || (r.Key == nil) != (w.Key == nil) || !bytes.Equal(r.Value, w.Value) || r.Timestamp.UnixMilli() != w.Timestamp || len(r.Headers) != len(w.Headers) {
			t.Fatalf("natively produced record %d read as %+v, want %+v", i, r, w)
		}
	}

	// kadm's start and end offsets.
	adm := kadm.NewClient(prod)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list end offsets: %v", err)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list start offsets: %v", err)
	}
	for p := range int32(3) {
		want := int64(parts[p])
		if p == 1 {
			want += int64(len(nrecs))
		}
		e, ok := ends.Lookup(topic, p)
		if !ok || e.Err != nil || e.Offset != want {
			t.Fatalf("end offset of %s-%d: %+v, want %d", topic, p, e, want)
		}
		s, ok := starts.Lookup(topic, p)
		if !ok || s.Err != nil || s.Offset != 0 {
			t.Fatalf("start offset of %s-%d: %+v, want 0", topic, p, s)
		}
	}
	// By timestamp: the first record at or after recs[10]'s timestamp in
	// its partition; none after everything.
	after, err := adm.ListOffsetsAfterMilli(ctx, recs[10].Timestamp.UnixMilli(), topic)
	if err != nil {
		t.Fatalf("list offsets after milli: %v", err)
	}
	if o, ok := after.Lookup(topic, recs[10].Partition); !ok || o.Err != nil || o.Offset > recs[10].Offset {
		t.Fatalf("offset after %v in %s-%d: %+v, want at most %d", recs[10].Timestamp, topic, recs[10].Partition, o, recs[10].Offset)
	}
	// OffsetForLeaderEpoch: the current epoch ends at the log end.
	epochs, err := adm.OffsetForLeaderEpoch(ctx, kadm.OffsetForLeaderEpochRequest{topic: {0: e0(t, adm, topic)}})
	if err != nil {
		t.Fatalf("offset for leader epoch: %v", err)
	}
	if o, ok := epochs[topic][0]; !ok || o.Err != nil || o.EndOffset != int64(parts[0]) {
		t.Fatalf("offset for leader epoch of %s-0: %+v, want end %d", topic, o, parts[0])
	}
}

// e0 is the leader epoch of topic's partition 0 from Kafka metadata.
func e0(t *testing.T, adm *kadm.Client, topic string) int32 {
	t.Helper()
	ctx, cancel := context30s()
	defer cancel()
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	return md.Topics[topic].Partitions[0].LeaderEpoch
}

// nativeRead fetches topic-partition from offset 0 to end through the
// local replica actor and decodes the records.
func nativeRead(t *testing.T, h *Host, topic string, partition int32, end int64) []record.Record {
	t.Helper()
	var out []record.Record
	for next := int64(0); next < end; {
		res, err := h.system.Root.RequestFuture(actor.NewPID(h.system.Address(), messages.ReplicaActorID(topic, partition)),
			&messages.FetchRequest{Topic: topic, Partition: partition, FetchOffset: next, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, ReplicaId: -1, LogStartOffset: -1, LastFetchedEpoch: -1},
			10*time.Second).Result()
		if err != nil {
			t.Fatalf("native fetch: %v", err)
		}
		fr := res.(*messages.FetchResponse)
		if fr.ErrorCode != 0 || len(fr.Records) == 0 {
			t.Fatalf("native fetch of %s-%d at %d: %v, %d bytes", topic, partition, next, fr.ErrorCode, len(fr.Records))
		}
		for s := record.Batches(fr.Records); s.Next(); {
			rs, err := record.Records(s.Batch(), 64<<20)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			for _, r := range rs {
				if r.Offset >= next {
					out = append(out, r)
					next = r.Offset + 1
				}
			}
		}
	}
	return out
}

func TestKafkaLongPollAnswersOnProduce(t *testing.T) {
	const topic = "poll"
	const maxWait = 6 * time.Second
	h, addr := kafkaDataHost(t, topic, 3)
	cons := kafkaClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()), kgo.FetchMaxWait(maxWait))
	prod := kafkaClient(t, addr, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	// Warm up, not timed: kgo adds a partition to its fetches once it has
	// listed its offset, so its very first fetch may lack one. One record
	// to each partition, consumed, and every partition is in the loop.
	for p := range int32(3) {
		produceAll(t, prod, []*kgo.Record{{Topic: topic, Partition: p, Value: []byte("warm-up")}})
	}
	ctx, cancel := context30s()
	for n := 0; n < 3 && ctx.Err() == nil; {
		n += len(cons.PollFetches(ctx).Records())
	}
	cancel()
	var worst time.Duration
	for i := range 5 {
		time.Sleep(300 * time.Millisecond) // the fetch is parked by now
		polled := make(chan time.Time, 1)
		go func() {
			ctx, cancel := context30s()
			defer cancel()
			for len(cons.PollFetches(ctx).Records()) == 0 && ctx.Err() == nil {
			}
			polled <- time.Now()
		}()
		time.Sleep(300 * time.Millisecond)
		start := time.Now()
		produceAll(t, prod, []*kgo.Record{{Topic: topic, Partition: int32(i % 3), Value: []byte("wake " + strconv.Itoa(i))}})
		took := (<-polled).Sub(start)
		t.Logf("poll %d answered %v after the produce", i, took)
		worst = max(worst, took)
		if took > maxWait/2 {
			t.Fatalf("long poll answered %v after the produce; want < %v (max_wait %v)", took, maxWait/2, maxWait)
		}
	}
	t.Logf("long poll answered at most %v after a produce (max_wait %v)", worst, maxWait)
	// The shared watches end with the fetches: no fetch is left parked
	// at the replicas once the consumer is closed and their waits ended.
	cons.Close()
	clustertest.WaitFor(t, maxWait+5*time.Second, func() error {
		for p := range int32(3) {
			res, err := h.system.Root.RequestFuture(actor.NewPID(h.system.Address(), messages.ReplicaActorID(topic, p)), replica.GetState, 5*time.Second).Result()
			if err != nil {
				return fmt.Errorf("replica state: %w", err)
			}
			if st := res.(replica.State); st.ParkedFetches != 0 || st.FetchesNotParked != 0 {
				return fmt.Errorf("%s-%d: %d fetches parked, %d not parked", topic, p, st.ParkedFetches, st.FetchesNotParked)
			}
		}
		return nil
	})
}

// testKafkaData is a data backend over h's local replicas and broker, as
// the listener's.
func testKafkaData(t *testing.T, h *Host) *kafkaData {
	log := clustertest.Logger(t)
	meta := &kafkaBackend{clusterID: h.clusterID, root: h.system.Root, broker: h.brokerPID, log: log}
	return newKafkaData(meta, h.system.Root, h.system.Address(), log)
}

func TestKafkaAcksZero(t *testing.T) {
	const topic, n = "fire", 200
	_, addr := kafkaDataHost(t, topic, 3)
	prod := kafkaClient(t, addr, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	recs := testRecords(topic, n)
	produceAll(t, prod, recs)
	adm := kafkaAdmin(t, addr)
	clustertest.WaitFor(t, 20*time.Second, func() error {
		ctx, cancel := context30s()
		defer cancel()
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return fmt.Errorf("list end offsets: %w", err)
		}
		var total int64
		ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
		if total != n {
			return fmt.Errorf("%d records stored, want %d", total, n)
		}
		return nil
	})
	if got := consumeN(t, addr, topic, n); len(got) != n {
		t.Fatalf("consumed %d, want %d", len(got), n)
	}
}

func TestKafkaKcatProduceConsume(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat not installed")
	}
	const topic, n = "lines", 1000
	_, addr := kafkaDataHost(t, topic, 3)
	var in strings.Builder
	want := make([]string, n)
	for i := range want {
		want[i] = "line " + strconv.Itoa(i)
		in.WriteString(want[i] + "\n")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod := exec.CommandContext(ctx, kcat, "-b", addr, "-t", topic, "-P")
	prod.Stdin = strings.NewReader(in.String())
	if out, err := prod.CombinedOutput(); err != nil {
		t.Fatalf("kcat -P: %v: %s", err, out)
	}
	cons := exec.CommandContext(ctx, kcat, "-b", addr, "-t", topic, "-C", "-e", "-o", "beginning", "-f", "%s\n")
	var stderr bytes.Buffer
	cons.Stderr = &stderr
	out, err := cons.Output()
	if err != nil {
		t.Fatalf("kcat -C -e: %v: %s", err, stderr.String())
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("kcat -C -e read %d lines, want exactly the %d produced (stderr %s)", len(got), n, stderr.String())
	}
	t.Logf("kcat -P then kcat -C -e: %d lines", len(got))
}

func TestKafkaDataBackend(t *testing.T) {
	h, _ := kafkaDataHost(t, "here", 1)
	d := testKafkaData(t, h)
	ctx, cancel := context30s()
	defer cancel()
	// No such topic: unknown.
	res, err := d.Read(ctx, kafka.ReadQuery{Topic: "nowhere", Partition: 0, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1})
	if err != nil || res.ErrorCode != int16(messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION) {
		t.Fatalf("read of an unknown topic: %+v, %v; want UNKNOWN_TOPIC_OR_PARTITION", res, err)
	}
	app := <-d.Append(ctx, kafka.AppendRequest{Topic: "here", Partition: 7, Acks: -1, Timeout: time.Second, Batch: mustBatch(t)})
	if app.ErrorCode != int16(messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION) {
		t.Fatalf("append to a partition the topic does not have: %+v; want UNKNOWN_TOPIC_OR_PARTITION", app)
	}
	// With no replica here, a partition the metadata knows (led
	// elsewhere, or moving) is NOT_LEADER_OR_FOLLOWER, one it does not
	// know UNKNOWN_TOPIC_OR_PARTITION.
	if code := d.routingCode(ctx, "here", 0); code != int16(messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER) {
		t.Fatalf("routing code of a known partition: %d, want NOT_LEADER_OR_FOLLOWER", code)
	}
	if code := d.routingCode(ctx, "here", 1); code != int16(messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION) {
		t.Fatalf("routing code of a partition the topic does not have: %d, want UNKNOWN_TOPIC_OR_PARTITION", code)
	}
	lo, err := d.ListOffset(ctx, kafka.ListOffsetQuery{Topic: "here", Partition: 0, Timestamp: kafka.ListLatest, CurrentLeaderEpoch: -1})
	if err != nil || lo.ErrorCode != 0 || lo.Offset != 0 {
		t.Fatalf("latest offset of an empty partition: %+v, %v", lo, err)
	}
	// An old leader epoch is fenced by the replica.
	lo, err = d.ListOffset(ctx, kafka.ListOffsetQuery{Topic: "here", Partition: 0, Timestamp: kafka.ListEarliest, CurrentLeaderEpoch: 1 << 20})
	if err != nil || lo.ErrorCode != int16(messages.ErrorCode_ERROR_CODE_UNKNOWN_LEADER_EPOCH) {
		t.Fatalf("list offsets with a future leader epoch: %+v, %v; want UNKNOWN_LEADER_EPOCH", lo, err)
	}
	pid, err := d.InitProducerID(ctx, kafka.ProducerIDQuery{ProducerID: -1, ProducerEpoch: -1})
	if err != nil || pid.ErrorCode != 0 || pid.ProducerID < 0 || pid.ProducerEpoch != 0 {
		t.Fatalf("init producer id: %+v, %v", pid, err)
	}
	// Diverging epochs (KIP-320) for a consumer's read: a batch appended
	// in the current epoch, then reads claiming that epoch (no
	// divergence) and a later one the leader never had (diverged at the
	// end of the current epoch).
	app = <-d.Append(ctx, kafka.AppendRequest{Topic: "here", Partition: 0, Acks: -1, Timeout: time.Second, Batch: mustBatch(t)})
	if app.ErrorCode != 0 || app.BaseOffset != 0 {
		t.Fatalf("append: %+v", app)
	}
	st, err := h.system.Root.RequestFuture(actor.NewPID(h.system.Address(), messages.ReplicaActorID("here", 0)), replica.GetState, 5*time.Second).Result()
	if err != nil {
		t.Fatal(err)
	}
	epoch := st.(replica.State).LeaderEpoch
	res, err = d.Read(ctx, kafka.ReadQuery{Topic: "here", Partition: 0, Offset: 1, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: epoch})
	if err != nil || res.ErrorCode != 0 || res.Diverging != nil || res.HighWatermark != 1 || len(res.Records) != 0 {
		t.Fatalf("read at the end with the current epoch: %+v, %v; want no divergence, empty records", res, err)
	}
	res, err = d.Read(ctx, kafka.ReadQuery{Topic: "here", Partition: 0, Offset: 5, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: epoch})
	if err != nil || res.ErrorCode != 0 || res.Diverging == nil || *res.Diverging != (kafka.EpochEndOffset{LeaderEpoch: epoch, EndOffset: 1}) || len(res.Records) != 0 {
		t.Fatalf("read past the end of the last fetched epoch: %+v, %v; want diverging at epoch %d offset 1", res, err, epoch)
	}
	res, err = d.Read(ctx, kafka.ReadQuery{Topic: "here", Partition: 0, Offset: 1, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: epoch + 3})
	if err != nil || res.ErrorCode != int16(messages.ErrorCode_ERROR_CODE_OFFSET_OUT_OF_RANGE) || res.Diverging != nil {
		t.Fatalf("read with a last fetched epoch the leader never had: %+v, %v; want OFFSET_OUT_OF_RANGE (as Kafka)", res, err)
	}

	// Watches: one whose mark is already passed notifies at once; two of
	// one partition and mark share a parked fetch, and the second is
	// still notified on an append after the first ended.
	notified := func(ws []kafka.WatchPartition, wctx context.Context) chan struct{} {
		ch := make(chan struct{})
		var once sync.Once
		d.WatchHighWatermarks(wctx, ws, func() { once.Do(func() { close(ch) }) })
		return ch
	}
	wctx1, wcancel1 := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel1()
	select {
	case <-notified([]kafka.WatchPartition{{Topic: "here", Partition: 0, Above: 0}}, wctx1):
	case <-time.After(2 * time.Second):
		t.Fatal("a watch whose mark was already passed was not notified at once")
	}
	w1ctx, w1cancel := context.WithTimeout(ctx, 10*time.Second)
	w1 := notified([]kafka.WatchPartition{{Topic: "here", Partition: 0, Above: 1}}, w1ctx)
	w2ctx, w2cancel := context.WithTimeout(ctx, 10*time.Second)
	defer w2cancel()
	w2 := notified([]kafka.WatchPartition{{Topic: "here", Partition: 0, Above: 1}}, w2ctx)
	if n := d.watches.size(); n != 1 {
		t.Fatalf("%d watch keys for two watches of one partition and mark; want 1", n)
	}
	w1cancel()
	time.Sleep(100 * time.Millisecond)
	select {
	case <-w1:
		t.Fatal("a watch was notified with nothing appended")
	case <-w2:
		t.Fatal("a watch was notified with nothing appended")
	default:
	}
	start := time.Now()
	if app := <-d.Append(ctx, kafka.AppendRequest{Topic: "here", Partition: 0, Acks: 1, Timeout: time.Second, Batch: mustBatch(t)}); app.ErrorCode != 0 {
		t.Fatalf("append: %+v", app)
	}
	select {
	case <-w2:
		t.Logf("watch notified %v after the append", time.Since(start))
	case <-time.After(2 * time.Second):
		t.Fatal("the remaining watch was not notified of the append")
	}

	// A watch of a partition with no replica here notifies at once.
	woke := make(chan struct{})
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	defer wcancel()
	start = time.Now()
	d.WatchHighWatermarks(wctx, []kafka.WatchPartition{{Topic: "nowhere", Partition: 0, Above: 0}}, func() { close(woke) })
	select {
	case <-woke:
	case <-wctx.Done():
		t.Fatal("a watch of a partition with no replica here was never notified")
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("watch of a missing replica notified after %v", took)
	}
}

// mustBatch is a one-record batch.
func mustBatch(t *testing.T) []byte {
	t.Helper()
	b, err := record.BuildBatch(record.CompressionNone, record.Record{Value: []byte("v"), Timestamp: time.Now().UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
