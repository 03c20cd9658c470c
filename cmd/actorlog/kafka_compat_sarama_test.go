// kafka_compat_sarama_test.go: IBM/sarama (the most used pure-Go Kafka
// client) against real `actorlog host` processes, backing the sarama rows
// of issue 13's compatibility table:
//   - bootstrap and metadata with one host and with three: every host's
//     Kafka address is a broker whose node id is the host id, and each
//     partition's leader, replicas and ISR are what `actorlog topics
//     describe --output json` reports;
//   - produce → consume with the idempotent Sync and Async producers
//     (acks=all): keys, values, headers and timestamps come back
//     byte-identical, in per-partition order, exactly as many as were
//     acknowledged; and a sweep of sarama's protocol versions (0.11 up to
//     its newest, its default among them) for plain produce and consume;
//   - every codec sarama produces (none, gzip, snappy, lz4, zstd) reads
//     back identically and is stored as produced: raw Fetch responses
//     (franz-go's kmsg through kgo) carry batches with that codec;
//   - a 3-member range-assigned consumer group over 12 partitions: each
//     record processed once, a leaving member's partitions move, and after
//     a full stop the group resumes exactly at its committed offsets;
//   - ClusterAdmin: topic create (and its errors), list, describe, configs,
//     partitions, delete, and the group listing, description and offsets,
//     each checked against the CLI's own view.
//
// The single host is reached through a small proxy it advertises, which
// records the API versions sarama negotiates (logged per sarama version).

package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/internal/poll"
)

// saramaProxy forwards Kafka connections to a host's listener and records,
// per label, the (API key, version) of every request that passes.
type saramaProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	label string
	seen  map[string]map[int16]map[int16]bool // label -> key -> versions
	conns []net.Conn
	wg    sync.WaitGroup
}

func newSaramaProxy(t *testing.T, target string) *saramaProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &saramaProxy{ln: ln, target: target, seen: map[string]map[int16]map[int16]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *saramaProxy) addr() string { return p.ln.Addr().String() }

// setLabel files the requests from now on under label.
func (p *saramaProxy) setLabel(label string) {
	p.mu.Lock()
	p.label = label
	p.mu.Unlock()
}

// versions returns, for label, each API key's versions seen.
func (p *saramaProxy) versions(label string) map[int16][]int16 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[int16][]int16{}
	for k, vs := range p.seen[label] {
		out[k] = slices.Sorted(maps.Keys(vs))
	}
	return out
}

func (p *saramaProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() {
			defer p.wg.Done()
			_, _ = io.Copy(c, s) // a closed connection ends the copy: nothing to report
			c.Close()
		}()
		go func() {
			defer p.wg.Done()
			p.forward(c, s)
			s.Close()
		}()
	}
}

// forward copies client requests to the server frame by frame, noting
// each request's key and version.
func (p *saramaProxy) forward(c, s net.Conn) {
	var size [4]byte
	for {
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(size[:])
		if n > 64<<20 {
			return
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(c, body); err != nil {
			return
		}
		if n >= 4 {
			key, ver := int16(binary.BigEndian.Uint16(body[0:2])), int16(binary.BigEndian.Uint16(body[2:4]))
			p.mu.Lock()
			byKey := p.seen[p.label]
			if byKey == nil {
				byKey = map[int16]map[int16]bool{}
				p.seen[p.label] = byKey
			}
			if byKey[key] == nil {
				byKey[key] = map[int16]bool{}
			}
			byKey[key][ver] = true
			p.mu.Unlock()
		}
		if _, err := s.Write(append(size[:], body...)); err != nil {
			return
		}
	}
}

func (p *saramaProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// saramaVersionsText renders a label's versions as "Produce v9, Fetch v12...".
func saramaVersionsText(vs map[int16][]int16) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(vs)) {
		var v []string
		for _, x := range vs[k] {
			v = append(v, "v"+strconv.Itoa(int(x)))
		}
		parts = append(parts, kmsg.NameForKey(k)+" "+strings.Join(v, "/"))
	}
	return strings.Join(parts, ", ")
}

// saramaConfig is a sarama config at version v with retries and timeouts
// suited to a test.
func saramaConfig(v sarama.KafkaVersion) *sarama.Config {
	c := sarama.NewConfig()
	c.Version = v
	c.ClientID = "actorlog-sarama-compat"
	c.Metadata.Retry.Max = 40
	c.Metadata.Retry.Backoff = 100 * time.Millisecond
	c.Producer.Retry.Max = 20
	c.Producer.Retry.Backoff = 100 * time.Millisecond
	c.Producer.Return.Successes = true
	c.Consumer.Return.Errors = true
	c.Consumer.MaxWaitTime = 200 * time.Millisecond
	c.Admin.Timeout = 15 * time.Second
	c.Admin.Retry.Backoff = 200 * time.Millisecond
	c.Admin.Retry.Max = 20
	return c
}

// saramaIdempotent makes c an idempotent acks=all producer config.
func saramaIdempotent(c *sarama.Config) *sarama.Config {
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Idempotent = true
	c.Net.MaxOpenRequests = 1
	return c
}

// saramaCLI is h with CLI failures reported on t (a subtest).
func saramaCLI(t *testing.T, h *hostProc) *hostProc {
	c := *h
	c.t = t
	return &c
}

// saramaRec is a record sarama produced and where it was acknowledged.
type saramaRec struct {
	key, value []byte
	headers    []sarama.RecordHeader
	ts         time.Time
	partition  int32
	offset     int64
}

// saramaMessage is r as a ProducerMessage (partition set for a manual
// partitioner).
func (r *saramaRec) message(topic string) *sarama.ProducerMessage {
	m := &sarama.ProducerMessage{Topic: topic, Partition: r.partition, Headers: r.headers, Timestamp: r.ts, Metadata: r}
	if r.key != nil {
		m.Key = sarama.ByteEncoder(r.key)
	}
	if r.value != nil {
		m.Value = sarama.ByteEncoder(r.value)
	}
	return m
}

// saramaRecords makes n records whose keys, values and headers exercise
// the encoding: binary bytes, empty and null keys, empty and duplicate
// headers, distinct millisecond timestamps.
func saramaRecords(prefix string, n int) []*saramaRec {
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	recs := make([]*saramaRec, n)
	for i := range recs {
		r := &saramaRec{
			value: []byte(fmt.Sprintf("%s-%05d-\x00\xff\xfe-%s", prefix, i, strings.Repeat("v", i%50))),
			ts:    base.Add(time.Duration(i) * time.Millisecond),
			headers: []sarama.RecordHeader{
				{Key: []byte("seq"), Value: []byte(strconv.Itoa(i))},
				{Key: []byte("bin"), Value: []byte{0, 1, 2, 0xff}},
				{Key: []byte("seq"), Value: []byte("dup")},
				{Key: []byte("empty"), Value: []byte{}},
			},
		}
		switch i % 7 {
		case 0: // null key
		case 1:
			r.key = []byte{}
		default:
			r.key = []byte(fmt.Sprintf("key-%d-\x00\x01", i%11))
		}
		recs[i] = r
	}
	return recs
}

// saramaReadPartitions reads want[p] records of each partition p of topic
// from offset from[p] (0 when absent) with a sarama consumer at cfg and
// returns them by partition.
func saramaReadPartitions(t *testing.T, addr string, cfg *sarama.Config, topic string, from, want map[int32]int64) map[int32][]*sarama.ConsumerMessage {
	t.Helper()
	cons, err := sarama.NewConsumer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("sarama consumer: %v", err)
	}
	defer func() {
		if err := cons.Close(); err != nil {
			t.Errorf("close sarama consumer: %v", err)
		}
	}()
	out := map[int32][]*sarama.ConsumerMessage{}
	deadline := time.After(30 * time.Second)
	for p, n := range want {
		if n == 0 {
			continue
		}
		start := from[p]
		if start == 0 {
			start = sarama.OffsetOldest
		}
		pc, err := cons.ConsumePartition(topic, p, start)
		if err != nil {
			t.Fatalf("consume %s-%d: %v", topic, p, err)
		}
		for int64(len(out[p])) < n {
			select {
			case m := <-pc.Messages():
				out[p] = append(out[p], m)
			case err := <-pc.Errors():
				t.Fatalf("consume %s-%d: %v", topic, p, err)
			case <-deadline:
				t.Fatalf("consume %s-%d: %d of %d records in 30 s", topic, p, len(out[p]), n)
			}
		}
		// Nothing beyond what was acknowledged.
		select {
		case m := <-pc.Messages():
			t.Fatalf("%s-%d: unexpected record at offset %d beyond the %d acknowledged", topic, p, m.Offset, n)
		case <-time.After(100 * time.Millisecond):
		}
		if err := pc.Close(); err != nil {
			t.Fatalf("close partition consumer: %v", err)
		}
	}
	return out
}

// saramaCheckReadBack reads topic back with cfg and checks it holds
// exactly recs: at their acknowledged offsets, in per-partition order,
// byte-identical.
func saramaCheckReadBack(t *testing.T, addr string, cfg *sarama.Config, topic string, recs []*saramaRec) {
	t.Helper()
	byPart := map[int32][]*saramaRec{}
	for _, r := range recs {
		byPart[r.partition] = append(byPart[r.partition], r)
	}
	want := map[int32]int64{}
	for p, rs := range byPart {
		sort.Slice(rs, func(i, j int) bool { return rs[i].offset < rs[j].offset })
		want[p] = int64(len(rs))
		for i, r := range rs {
			if r.offset != int64(i) {
				t.Fatalf("%s-%d: acknowledged offsets %d..: not contiguous from 0 (at %d: %d)", topic, p, rs[0].offset, i, r.offset)
			}
		}
	}
	got := saramaReadPartitions(t, addr, cfg, topic, nil, want)
	n := 0
	for p, ms := range got {
		for i, m := range ms {
			r := byPart[p][i]
			if m.Offset != r.offset {
				t.Fatalf("%s-%d: record %d at offset %d, acknowledged at %d", topic, p, i, m.Offset, r.offset)
			}
			if !bytes.Equal(m.Key, r.key) || (m.Key == nil) != (r.key == nil) {
				t.Fatalf("%s-%d@%d: key %q (nil %v), produced %q (nil %v)", topic, p, m.Offset, m.Key, m.Key == nil, r.key, r.key == nil)
			}
			if !bytes.Equal(m.Value, r.value) {
				t.Fatalf("%s-%d@%d: value %q, produced %q", topic, p, m.Offset, m.Value, r.value)
			}
			if !m.Timestamp.Equal(r.ts) {
				t.Fatalf("%s-%d@%d: timestamp %v, produced %v", topic, p, m.Offset, m.Timestamp, r.ts)
			}
			if len(m.Headers) != len(r.headers) {
				t.Fatalf("%s-%d@%d: %d headers, produced %d", topic, p, m.Offset, len(m.Headers), len(r.headers))
			}
			for j, h := range m.Headers {
				if !bytes.Equal(h.Key, r.headers[j].Key) || !bytes.Equal(h.Value, r.headers[j].Value) {
					t.Fatalf("%s-%d@%d: header %d %q=%q, produced %q=%q", topic, p, m.Offset, j, h.Key, h.Value, r.headers[j].Key, r.headers[j].Value)
				}
			}
			n++
		}
	}
	if n != len(recs) {
		t.Fatalf("read %d records of %s, want exactly the %d produced", n, topic, len(recs))
	}
}

// saramaSyncProduce sends recs with a SyncProducer at cfg (partitions
// chosen by cfg's partitioner unless manual) and fills in where each was
// acknowledged.
func saramaSyncProduce(t *testing.T, addr string, cfg *sarama.Config, topic string, recs []*saramaRec, oneByOne bool) {
	t.Helper()
	prod, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("sarama sync producer: %v", err)
	}
	defer func() {
		if err := prod.Close(); err != nil {
			t.Errorf("close sync producer: %v", err)
		}
	}()
	msgs := make([]*sarama.ProducerMessage, len(recs))
	for i, r := range recs {
		msgs[i] = r.message(topic)
	}
	if oneByOne {
		for i, m := range msgs {
			p, o, err := prod.SendMessage(m)
			if err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
			recs[i].partition, recs[i].offset = p, o
		}
		return
	}
	if err := prod.SendMessages(msgs); err != nil {
		t.Fatalf("send %d messages: %v", len(msgs), err)
	}
	for i, m := range msgs {
		recs[i].partition, recs[i].offset = m.Partition, m.Offset
	}
}

// saramaBrokers returns the brokers sarama knows, id -> address.
func saramaBrokers(cl sarama.Client) map[int32]string {
	out := map[int32]string{}
	for _, b := range cl.Brokers() {
		out[b.ID()] = b.Addr()
	}
	return out
}

// saramaCheckMetadata checks, through a fresh sarama client bootstrapped
// at seed, that the brokers are exactly brokers (host id -> Kafka address)
// and that each partition of topic has the leader, replicas and ISR that
// `topics describe` reports through h. It returns what is different.
func saramaCheckMetadata(h *hostProc, seed string, brokers map[int32]string, topic string) error {
	cfg := saramaConfig(sarama.V3_6_0_0)
	cfg.Metadata.Retry.Max = 3
	cl, err := sarama.NewClient([]string{seed}, cfg)
	if err != nil {
		return fmt.Errorf("sarama client: %w", err)
	}
	defer cl.Close()
	if got := saramaBrokers(cl); !maps.Equal(got, brokers) {
		return fmt.Errorf("sarama brokers %v, want %v", got, brokers)
	}
	if err := cl.RefreshMetadata(topic); err != nil {
		return fmt.Errorf("metadata of %s: %w", topic, err)
	}
	td, err := h.describeTopic(topic)
	if err != nil {
		return err
	}
	parts, err := cl.Partitions(topic)
	if err != nil {
		return fmt.Errorf("partitions of %s: %w", topic, err)
	}
	if len(parts) != len(td.Partitions) {
		return fmt.Errorf("sarama sees %d partitions of %s, describe %d", len(parts), topic, len(td.Partitions))
	}
	for _, p := range td.Partitions {
		if p.LeaderStatus != leaderAvailable {
			return fmt.Errorf("%s-%d: leader %s", topic, p.Partition, p.LeaderStatus)
		}
		leader, err := cl.Leader(topic, p.Partition)
		if err != nil {
			return fmt.Errorf("leader of %s-%d: %w", topic, p.Partition, err)
		}
		if leader.ID() != p.Leader || leader.Addr() != brokers[p.Leader] {
			return fmt.Errorf("%s-%d: sarama leader %d at %s, describe %d (at %s)", topic, p.Partition, leader.ID(), leader.Addr(), p.Leader, brokers[p.Leader])
		}
		replicas, err := cl.Replicas(topic, p.Partition)
		if err != nil {
			return fmt.Errorf("replicas of %s-%d: %w", topic, p.Partition, err)
		}
		isr, err := cl.InSyncReplicas(topic, p.Partition)
		if err != nil {
			return fmt.Errorf("ISR of %s-%d: %w", topic, p.Partition, err)
		}
		if !slices.Equal(replicas, p.Replicas) || !slices.Equal(slices.Sorted(slices.Values(isr)), slices.Sorted(slices.Values(p.ISR))) {
			return fmt.Errorf("%s-%d: sarama replicas %v ISR %v, describe replicas %v ISR %v", topic, p.Partition, replicas, isr, p.Replicas, p.ISR)
		}
	}
	return nil
}

// TestKafkaCompatSaramaSingleHost runs sarama against one host process,
// through the recording proxy.
func TestKafkaCompatSaramaSingleHost(t *testing.T) {
	kafkaAddr := "127.0.0.1:" + strconv.Itoa(freeBase(t))
	proxy := newSaramaProxy(t, kafkaAddr)
	addr := proxy.addr()
	h := startHost(t, t.TempDir(), freeBase(t), "--kafka-listen", kafkaAddr, "--kafka-advertise", addr,
		"--group-initial-rebalance-delay", "1s", "--offsets-topic-partitions", "3")

	t.Run("Metadata", func(t *testing.T) {
		h := saramaCLI(t, h)
		h.mustCLI("", "topics", "create", "sarama-md", "--partitions", "3")
		var cd clusterDescription
		if err := h.describeJSON(&cd, "cluster", "describe"); err != nil || len(cd.Hosts) != 1 {
			t.Fatalf("cluster describe: %+v, %v", cd, err)
		}
		// The one broker is the host, at its advertised Kafka address.
		poll.Until(t, 20*time.Second, func() error {
			return saramaCheckMetadata(h, addr, map[int32]string{cd.Hosts[0].ID: addr}, "sarama-md")
		})
	})

	t.Run("ProduceConsumeIdempotent", func(t *testing.T) {
		h := saramaCLI(t, h)
		const topic = "sarama-rt"
		h.mustCLI("", "topics", "create", topic, "--partitions", "4")
		proxy.setLabel("V3_6_0_0 idempotent")
		cfg := saramaIdempotent(saramaConfig(sarama.V3_6_0_0))

		// SyncProducer, one record at a time and then as one batch.
		syncRecs := saramaRecords("sync", 200)
		saramaSyncProduce(t, addr, cfg, topic, syncRecs[:50], true)
		saramaSyncProduce(t, addr, cfg, topic, syncRecs[50:], false)

		// AsyncProducer: successes come back with their offsets.
		asyncRecs := saramaRecords("async", 600)
		prod, err := sarama.NewAsyncProducer([]string{addr}, cfg)
		if err != nil {
			t.Fatalf("sarama async producer: %v", err)
		}
		go func() {
			for _, r := range asyncRecs {
				prod.Input() <- r.message(topic)
			}
		}()
		timeout := time.After(30 * time.Second)
		for done := 0; done < len(asyncRecs); done++ {
			select {
			case m := <-prod.Successes():
				r := m.Metadata.(*saramaRec)
				r.partition, r.offset = m.Partition, m.Offset
			case perr := <-prod.Errors():
				t.Fatalf("async produce: %v", perr.Err)
			case <-timeout:
				t.Fatalf("%d of %d async records acknowledged in 30 s", done, len(asyncRecs))
			}
		}
		if err := prod.Close(); err != nil {
			t.Fatalf("close async producer: %v", err)
		}
		all := append(slices.Clone(syncRecs), asyncRecs...)
		// Per partition, the acknowledged offsets follow the send order.
		last := map[int32]int64{}
		for i, r := range all {
			if prev, ok := last[r.partition]; ok && r.offset <= prev {
				t.Fatalf("record %d acknowledged at %s-%d offset %d after offset %d: send order not kept", i, topic, r.partition, r.offset, prev)
			}
			last[r.partition] = r.offset
		}
		saramaCheckReadBack(t, addr, cfg, topic, all)
		// The log ends where the acknowledged records end.
		ends := h.endOffsets(topic)
		for p, e := range ends {
			if want := last[int32(p)] + 1; e != want {
				t.Fatalf("%s-%d: log end %d, want %d (no duplicate from retries)", topic, p, e, want)
			}
		}
		t.Logf("sarama V3_6_0_0 idempotent acks=all: %s", saramaVersionsText(proxy.versions("V3_6_0_0 idempotent")))
	})

	t.Run("Versions", func(t *testing.T) {
		h := saramaCLI(t, h)
		versions := []struct {
			name string
			v    sarama.KafkaVersion
		}{
			{"V0_11_0_0", sarama.V0_11_0_0}, {"V1_0_0_0", sarama.V1_0_0_0}, {"V2_1_0_0", sarama.V2_1_0_0},
			{"DefaultVersion", sarama.DefaultVersion}, {"V3_6_0_0", sarama.V3_6_0_0}, {"MaxVersion", sarama.MaxVersion},
		}
		for _, tc := range versions {
			topic := "sarama-ver-" + strings.ToLower(tc.name)
			h.mustCLI("", "topics", "create", topic, "--partitions", "2")
			proxy.setLabel(tc.name)
			cfg := saramaConfig(tc.v)
			if tc.name == "DefaultVersion" {
				// sarama's defaults as an application takes them, but
				// for Return.Successes (a SyncProducer needs it).
				cfg = sarama.NewConfig()
				cfg.Producer.Return.Successes = true
				saramaWaitLeaders(t, h, topic)
			}
			recs := saramaRecords(tc.name, 40)
			saramaSyncProduce(t, addr, cfg, topic, recs, false)
			saramaCheckReadBack(t, addr, cfg, topic, recs)
			t.Logf("sarama %s (%s): %s", tc.name, cfg.Version, saramaVersionsText(proxy.versions(tc.name)))
		}
	})

	t.Run("Compression", func(t *testing.T) {
		h := saramaCLI(t, h)
		const topic = "sarama-codec"
		codecs := []sarama.CompressionCodec{sarama.CompressionNone, sarama.CompressionGZIP, sarama.CompressionSnappy, sarama.CompressionLZ4, sarama.CompressionZSTD}
		h.mustCLI("", "topics", "create", topic, "--partitions", strconv.Itoa(len(codecs)))
		proxy.setLabel("compression")
		all := map[int32][]*saramaRec{}
		for i, codec := range codecs {
			cfg := saramaIdempotent(saramaConfig(sarama.V3_6_0_0))
			cfg.Producer.Compression = codec
			cfg.Producer.Partitioner = sarama.NewManualPartitioner
			recs := saramaRecords("codec-"+codec.String(), 100)
			for _, r := range recs {
				r.partition = int32(i)
			}
			saramaSyncProduce(t, addr, cfg, topic, recs, false)
			saramaCheckReadBack(t, addr, cfg, topic, recs)
			all[int32(i)] = recs
		}

		// Raw Fetch: the stored batches carry the codec they were
		// produced with.
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = -1, 100, 1, 16<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		for i := range codecs {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.LogStartOffset, rp.CurrentLeaderEpoch = int32(i), 0, 4<<20, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("raw fetch: %v", err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != len(codecs) {
			t.Fatalf("raw fetch answered %d topics", len(resp.Topics))
		}
		for _, rp := range resp.Topics[0].Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("raw fetch %s-%d: error code %d", topic, rp.Partition, rp.ErrorCode)
			}
			codec := codecs[rp.Partition]
			batches, records, err := saramaBatchCodecs(rp.RecordBatches)
			if err != nil {
				t.Fatalf("%s-%d: %v", topic, rp.Partition, err)
			}
			if records != len(all[rp.Partition]) || len(batches) == 0 {
				t.Fatalf("%s-%d: raw fetch holds %d records in %d batches, want %d", topic, rp.Partition, records, len(batches), len(all[rp.Partition]))
			}
			for _, c := range batches {
				if c != int8(codec) {
					t.Fatalf("%s-%d: a batch produced with %s is stored with codec %d (batches: %v)", topic, rp.Partition, codec, c, batches)
				}
			}
			t.Logf("%s: %d records in %d batches, stored with codec %d", codec, records, len(batches), codec)
		}
	})

	t.Run("ConsumerGroup", func(t *testing.T) {
		proxy.setLabel("group")
		saramaGroupTest(t, saramaCLI(t, h), addr)
		t.Logf("sarama V3_6_0_0 consumer group and group admin: %s", saramaVersionsText(proxy.versions("group")))
	})

	t.Run("Admin", func(t *testing.T) {
		proxy.setLabel("admin")
		saramaAdminTest(t, saramaCLI(t, h), addr)
		t.Logf("sarama V3_6_0_0 ClusterAdmin: %s", saramaVersionsText(proxy.versions("admin")))
	})
}

// saramaWaitLeaders waits until every partition of topic has a leader.
func saramaWaitLeaders(t *testing.T, h *hostProc, topic string) {
	t.Helper()
	poll.Until(t, 20*time.Second, func() error {
		td, err := h.describeTopic(topic)
		if err != nil {
			return err
		}
		if n := td.count(leaderAvailable); n != len(td.Partitions) {
			return fmt.Errorf("%s: %d of %d partitions have a leader", topic, n, len(td.Partitions))
		}
		return nil
	})
}

// saramaBatchCodecs splits a fetched record set into its batches and
// returns each one's codec (attributes & 0x7) and the number of records.
func saramaBatchCodecs(b []byte) ([]int8, int, error) {
	var codecs []int8
	records := 0
	for len(b) > 0 {
		if len(b) < 12 {
			return nil, 0, fmt.Errorf("%d trailing bytes: not a batch", len(b))
		}
		n := int(binary.BigEndian.Uint32(b[8:12])) + 12
		if n > len(b) {
			break // a partial batch at the end of a response is allowed
		}
		var batch kmsg.RecordBatch
		if err := batch.ReadFrom(b[:n]); err != nil {
			return nil, 0, fmt.Errorf("read batch: %w", err)
		}
		if batch.Magic != 2 {
			return nil, 0, fmt.Errorf("batch magic %d, want 2", batch.Magic)
		}
		codecs = append(codecs, int8(batch.Attributes&0x7))
		records += int(batch.NumRecords)
		b = b[n:]
	}
	return codecs, records, nil
}

// saramaGroupMember is one sarama ConsumerGroup consuming in a loop.
type saramaGroupMember struct {
	name   string
	cg     sarama.ConsumerGroup
	cancel context.CancelFunc
	done   chan struct{}
}

// saramaGroupState is what the members of a test group saw.
type saramaGroupState struct {
	mu sync.Mutex
	// processed counts each value's deliveries.
	processed map[string]int
	// firstOffset is, per phase, the first offset delivered per partition.
	phase       int
	firstOffset map[int]map[int32]int64
	// claims is each member's latest claims, and its generation.
	claims     map[string][]int32
	generation map[string]int32
	errs       []error
}

type saramaGroupHandler struct {
	name  string
	topic string
	st    *saramaGroupState
}

func (g *saramaGroupHandler) Setup(s sarama.ConsumerGroupSession) error {
	g.st.mu.Lock()
	defer g.st.mu.Unlock()
	g.st.claims[g.name] = slices.Sorted(slices.Values(s.Claims()[g.topic]))
	g.st.generation[g.name] = s.GenerationID()
	return nil
}

func (g *saramaGroupHandler) Cleanup(s sarama.ConsumerGroupSession) error {
	s.Commit()
	g.st.mu.Lock()
	defer g.st.mu.Unlock()
	delete(g.st.claims, g.name)
	return nil
}

func (g *saramaGroupHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		g.st.mu.Lock()
		g.st.processed[string(m.Value)]++
		fo := g.st.firstOffset[g.st.phase]
		if _, ok := fo[m.Partition]; !ok {
			fo[m.Partition] = m.Offset
		}
		g.st.mu.Unlock()
		s.MarkMessage(m, "")
	}
	return nil
}

// startSaramaMember starts a group member consuming topic until stopped.
func startSaramaMember(t *testing.T, addr, group, topic, name string, st *saramaGroupState) *saramaGroupMember {
	t.Helper()
	cfg := saramaConfig(sarama.V3_6_0_0)
	cfg.ClientID = name
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	cfg.Consumer.Group.Heartbeat.Interval = 300 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = 6 * time.Second
	cfg.Consumer.Group.Rebalance.Retry.Backoff = 200 * time.Millisecond
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	cg, err := sarama.NewConsumerGroup([]string{addr}, group, cfg)
	if err != nil {
		t.Fatalf("sarama consumer group %s: %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &saramaGroupMember{name: name, cg: cg, cancel: cancel, done: make(chan struct{})}
	h := &saramaGroupHandler{name: name, topic: topic, st: st}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, h); err != nil && ctx.Err() == nil {
				st.mu.Lock()
				st.errs = append(st.errs, fmt.Errorf("%s: %w", name, err))
				st.mu.Unlock()
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	go func() {
		for err := range cg.Errors() {
			st.mu.Lock()
			st.errs = append(st.errs, fmt.Errorf("%s: %w", name, err))
			st.mu.Unlock()
		}
	}()
	return m
}

// stop leaves the group (committing what was marked) and waits.
func (m *saramaGroupMember) stop(t *testing.T) {
	t.Helper()
	m.cancel()
	<-m.done
	if err := m.cg.Close(); err != nil {
		t.Errorf("close member %s: %v", m.name, err)
	}
}

// saramaProduceSpread writes per records to each of parts partitions of
// topic (manual partitioner, idempotent), values prefix-P-I.
func saramaProduceSpread(t *testing.T, addr, topic, prefix string, parts, per int) []string {
	t.Helper()
	cfg := saramaIdempotent(saramaConfig(sarama.V3_6_0_0))
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	var recs []*saramaRec
	var values []string
	for p := range parts {
		for i := range per {
			v := fmt.Sprintf("%s-%02d-%04d", prefix, p, i)
			recs = append(recs, &saramaRec{partition: int32(p), value: []byte(v), key: []byte(strconv.Itoa(i))})
			values = append(values, v)
		}
	}
	saramaSyncProduce(t, addr, cfg, topic, recs, false)
	return values
}

// saramaCommitted returns the group's committed offsets of topic's parts
// partitions through ClusterAdmin (-1 for none).
func saramaCommitted(adm sarama.ClusterAdmin, group, topic string, parts int) (map[int32]int64, error) {
	ps := make([]int32, parts)
	for i := range ps {
		ps[i] = int32(i)
	}
	resp, err := adm.ListConsumerGroupOffsets(group, map[string][]int32{topic: ps})
	if err != nil {
		return nil, fmt.Errorf("list group offsets: %w", err)
	}
	out := map[int32]int64{}
	for _, p := range ps {
		b := resp.GetBlock(topic, p)
		if b == nil {
			return nil, fmt.Errorf("no offset block for %s-%d", topic, p)
		}
		if !errors.Is(b.Err, sarama.ErrNoError) {
			return nil, fmt.Errorf("offset of %s-%d: %w", topic, p, b.Err)
		}
		out[p] = b.Offset
	}
	return out, nil
}

// saramaWaitCommitted waits until every partition's committed offset is want.
func saramaWaitCommitted(t *testing.T, adm sarama.ClusterAdmin, group, topic string, parts int, want int64) {
	t.Helper()
	poll.Until(t, 20*time.Second, func() error {
		got, err := saramaCommitted(adm, group, topic, parts)
		if err != nil {
			return err
		}
		for p, o := range got {
			if o != want {
				return fmt.Errorf("committed offsets %v, want %d everywhere (%s-%d)", got, want, topic, p)
			}
		}
		return nil
	})
}

// saramaWaitProcessed waits until every value was processed, and fails
// when any value was processed more than once.
func saramaWaitProcessed(t *testing.T, st *saramaGroupState, values []string) {
	t.Helper()
	poll.Until(t, 30*time.Second, func() error {
		st.mu.Lock()
		defer st.mu.Unlock()
		missing := 0
		for _, v := range values {
			if st.processed[v] == 0 {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d of %d records not processed yet (member errors: %v)", missing, len(values), st.errs)
		}
		return nil
	})
	st.mu.Lock()
	defer st.mu.Unlock()
	for v, n := range st.processed {
		if n != 1 {
			t.Fatalf("record %q processed %d times", v, n)
		}
	}
}

// saramaWaitClaims waits until the members' claims are members (names)
// dividing parts partitions by the range assignor, and returns them.
func saramaWaitClaims(t *testing.T, st *saramaGroupState, members []string, parts int) map[string][]int32 {
	t.Helper()
	var claims map[string][]int32
	poll.Until(t, 30*time.Second, func() error {
		st.mu.Lock()
		defer st.mu.Unlock()
		claims = maps.Clone(st.claims)
		if got := slices.Sorted(maps.Keys(claims)); !slices.Equal(got, members) {
			return fmt.Errorf("members with claims %v, want %v (errors: %v)", got, members, st.errs)
		}
		gens := map[int32]bool{}
		for _, m := range members {
			gens[st.generation[m]] = true
		}
		if len(gens) != 1 {
			return fmt.Errorf("members in generations %v", gens)
		}
		// Range: contiguous blocks of parts/len(members) partitions.
		var all []int32
		for _, m := range members {
			c := claims[m]
			if len(c) != parts/len(members) || c[len(c)-1]-c[0] != int32(len(c)-1) {
				return fmt.Errorf("claims %v: not a range assignment of %d partitions", claims, parts)
			}
			all = append(all, c...)
		}
		slices.Sort(all)
		for i, p := range all {
			if p != int32(i) {
				return fmt.Errorf("claims %v do not cover partitions 0-%d once", claims, parts-1)
			}
		}
		return nil
	})
	return claims
}

// saramaGroupTest: row 5 (a 3-member range group over 12 partitions) and
// the group half of row 7 (ClusterAdmin's group views against the CLI's).
func saramaGroupTest(t *testing.T, h *hostProc, addr string) {
	const topic, group, parts = "sarama-group", "sarama-group", 12
	h.mustCLI("", "topics", "create", topic, "--partitions", strconv.Itoa(parts))
	adm, err := sarama.NewClusterAdmin([]string{addr}, saramaConfig(sarama.V3_6_0_0))
	if err != nil {
		t.Fatalf("cluster admin: %v", err)
	}
	defer adm.Close()
	st := &saramaGroupState{processed: map[string]int{}, firstOffset: map[int]map[int32]int64{0: {}}, claims: map[string][]int32{}, generation: map[string]int32{}}

	// Phase 0: three members, each record processed once and committed.
	values := saramaProduceSpread(t, addr, topic, "a", parts, 100)
	names := []string{"m1", "m2", "m3"}
	members := map[string]*saramaGroupMember{}
	for _, n := range names {
		members[n] = startSaramaMember(t, addr, group, topic, n, st)
	}
	defer func() {
		for _, m := range members {
			m.stop(t)
		}
	}()
	claims := saramaWaitClaims(t, st, names, parts)
	saramaWaitProcessed(t, st, values)
	saramaWaitCommitted(t, adm, group, topic, parts, 100)
	t.Logf("range assignment of 3 members: %v", claims)

	// ClusterAdmin's view of the group equals the CLI's.
	poll.Until(t, 20*time.Second, func() error { return saramaCompareGroup(h, adm, group, topic, parts, "Stable") })
	listed, err := adm.ListConsumerGroups()
	if err != nil {
		t.Fatalf("list consumer groups: %v", err)
	}
	if listed[group] != "consumer" {
		t.Fatalf("ListConsumerGroups: %v, want %s with protocol type consumer", listed, group)
	}
	if out := h.mustCLI("", "groups", "list"); !strings.Contains(out, group) {
		t.Fatalf("groups list does not show %s: %q", group, out)
	}

	// Phase 1: the member holding the last partitions leaves while
	// records arrive (it commits what it processed as it leaves); the other
	// two take its partitions and go on from there.
	values = append(values, saramaProduceSpread(t, addr, topic, "b", parts, 50)...)
	var leaving string
	for n, c := range claims {
		if slices.Contains(c, parts-1) {
			leaving = n
		}
	}
	moved := claims[leaving]
	members[leaving].stop(t)
	delete(members, leaving)
	rest := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == leaving })
	claims = saramaWaitClaims(t, st, rest, parts)
	for _, p := range moved {
		if !slices.Contains(claims[rest[0]], p) && !slices.Contains(claims[rest[1]], p) {
			t.Fatalf("after %s left, its partition %d is not claimed: %v", leaving, p, claims)
		}
	}
	t.Logf("after %s left: %v", leaving, claims)
	values = append(values, saramaProduceSpread(t, addr, topic, "b2", parts, 50)...)
	saramaWaitProcessed(t, st, values)
	saramaWaitCommitted(t, adm, group, topic, parts, 200)

	// Phase 2: everyone stops; records written meanwhile are read by a
	// restarted group from exactly the committed offsets.
	for _, m := range members {
		m.stop(t)
	}
	clear(members)
	poll.Until(t, 20*time.Second, func() error { return saramaCompareGroup(h, adm, group, topic, parts, "Empty") })
	values = append(values, saramaProduceSpread(t, addr, topic, "c", parts, 50)...)
	st.mu.Lock()
	st.phase = 2
	st.firstOffset[2] = map[int32]int64{}
	st.mu.Unlock()
	for _, n := range names {
		members[n] = startSaramaMember(t, addr, group, topic, n+"-again", st)
	}
	saramaWaitProcessed(t, st, values)
	saramaWaitCommitted(t, adm, group, topic, parts, 250)
	st.mu.Lock()
	first := maps.Clone(st.firstOffset[2])
	st.mu.Unlock()
	st.mu.Lock()
	t.Logf("member errors over the test (retried by sarama): %v", st.errs)
	st.mu.Unlock()
	for p := range int32(parts) {
		if first[p] != 200 {
			t.Fatalf("after the restart %s-%d resumed at %d, committed 200 (all first offsets: %v)", topic, p, first[p], first)
		}
	}
}

// saramaCompareGroup checks DescribeConsumerGroups and
// ListConsumerGroupOffsets against `groups describe --output json`.
func saramaCompareGroup(h *hostProc, adm sarama.ClusterAdmin, group, topic string, parts int, state string) error {
	var gd groupDescription
	if err := h.describeJSON(&gd, "groups", "describe", group); err != nil {
		return err
	}
	ds, err := adm.DescribeConsumerGroups([]string{group})
	if err != nil {
		return fmt.Errorf("describe consumer groups: %w", err)
	}
	if len(ds) != 1 {
		return fmt.Errorf("DescribeConsumerGroups returned %d groups", len(ds))
	}
	d := ds[0]
	if d.State != state || gd.State != state {
		return fmt.Errorf("group state: sarama %q, CLI %q, want %q", d.State, gd.State, state)
	}
	if d.GroupId != gd.GroupID || d.ProtocolType != gd.ProtocolType || d.Protocol != gd.Protocol {
		return fmt.Errorf("sarama %s %s/%s, CLI %s %s/%s", d.GroupId, d.ProtocolType, d.Protocol, gd.GroupID, gd.ProtocolType, gd.Protocol)
	}
	if state == "Stable" && (d.ProtocolType != "consumer" || d.Protocol != "range") {
		return fmt.Errorf("protocol %s/%s, want consumer/range", d.ProtocolType, d.Protocol)
	}
	if len(d.Members) != len(gd.Members) {
		return fmt.Errorf("sarama %d members, CLI %d", len(d.Members), len(gd.Members))
	}
	for _, cm := range gd.Members {
		sm := d.Members[cm.MemberID]
		if sm == nil {
			return fmt.Errorf("member %s of the CLI unknown to sarama", cm.MemberID)
		}
		if sm.ClientId != cm.ClientID || sm.ClientHost != cm.ClientHost {
			return fmt.Errorf("member %s: sarama client %s@%s, CLI %s@%s", cm.MemberID, sm.ClientId, sm.ClientHost, cm.ClientID, cm.ClientHost)
		}
		a, err := sm.GetMemberAssignment()
		if err != nil {
			return fmt.Errorf("member %s assignment: %w", cm.MemberID, err)
		}
		var want []int32
		for _, tp := range cm.Assignment {
			if tp.Topic == topic {
				want = tp.Partitions
			}
		}
		if a == nil || !slices.Equal(slices.Sorted(slices.Values(a.Topics[topic])), want) {
			return fmt.Errorf("member %s: sarama assignment %v, CLI %v", cm.MemberID, a, cm.Assignment)
		}
	}
	committed, err := saramaCommitted(adm, group, topic, parts)
	if err != nil {
		return err
	}
	cli := map[int32]int64{}
	for _, o := range gd.Offsets {
		if o.Topic == topic && o.CommittedOffset != nil {
			cli[o.Partition] = *o.CommittedOffset
		}
	}
	if !maps.Equal(committed, cli) {
		return fmt.Errorf("committed offsets: sarama %v, CLI %v", committed, cli)
	}
	return nil
}

// saramaAdminTest: the topic half of row 7, each answer against the CLI.
func saramaAdminTest(t *testing.T, h *hostProc, addr string) {
	const topic = "sarama-admin"
	adm, err := sarama.NewClusterAdmin([]string{addr}, saramaConfig(sarama.V3_6_0_0))
	if err != nil {
		t.Fatalf("cluster admin: %v", err)
	}
	defer adm.Close()
	retention := "3600000"
	err = adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1, ConfigEntries: map[string]*string{"retention.ms": &retention}}, false)
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1}, false); !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		t.Fatalf("create an existing topic: %v, want ErrTopicAlreadyExists", err)
	}
	for _, bad := range []string{"bad name", "..", strings.Repeat("x", 250)} {
		if err := adm.CreateTopic(bad, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); !errors.Is(err, sarama.ErrInvalidTopic) {
			t.Fatalf("create topic %.20q: %v, want ErrInvalidTopic", bad, err)
		}
	}
	td := h.mustDescribeTopic(topic)
	if len(td.Partitions) != 3 || td.ReplicationFactor != 1 || td.Configs["retention.ms"] != retention {
		t.Fatalf("describe after CreateTopic: %+v", td)
	}

	// ListTopics: the CLI's topics, with their partitions, replication
	// factor and overrides.
	listed, err := adm.ListTopics()
	if err != nil {
		t.Fatalf("list topics: %v", err)
	}
	cliTopics := strings.Fields(h.mustCLI("", "topics", "list"))
	var saramaTopics []string
	for name := range listed {
		if !strings.HasPrefix(name, "__") {
			saramaTopics = append(saramaTopics, name)
		}
	}
	slices.Sort(saramaTopics)
	cliTopics = slices.DeleteFunc(cliTopics, func(n string) bool { return strings.HasPrefix(n, "__") })
	slices.Sort(cliTopics)
	if !slices.Equal(saramaTopics, cliTopics) {
		t.Fatalf("ListTopics %v, topics list %v", saramaTopics, cliTopics)
	}
	if d := listed[topic]; d.NumPartitions != 3 || d.ReplicationFactor != 1 || d.ConfigEntries["retention.ms"] == nil || *d.ConfigEntries["retention.ms"] != retention {
		t.Fatalf("ListTopics[%s] = %+v", topic, d)
	}

	// DescribeTopics: leaders, replicas and ISR as `topics describe`.
	saramaCompareDescribe(t, h, adm, topic)

	// DescribeConfig: the overrides are the CLI's configs.
	entries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
	if err != nil {
		t.Fatalf("describe config: %v", err)
	}
	overrides := map[string]string{}
	for _, e := range entries {
		if e.Source == sarama.SourceTopic {
			overrides[e.Name] = e.Value
		}
	}
	if !maps.Equal(overrides, td.Configs) || overrides["retention.ms"] != retention {
		t.Fatalf("DescribeConfig overrides %v, describe %v", overrides, td.Configs)
	}

	// CreatePartitions: 3 -> 5, seen by the CLI and by sarama's metadata.
	if err := adm.CreatePartitions(topic, 5, nil, false); err != nil {
		t.Fatalf("create partitions: %v", err)
	}
	poll.Until(t, 20*time.Second, func() error {
		td, err := h.describeTopic(topic)
		if err != nil {
			return err
		}
		if len(td.Partitions) != 5 || td.count(leaderAvailable) != 5 {
			return fmt.Errorf("describe after CreatePartitions: %d partitions, %d with a leader", len(td.Partitions), td.count(leaderAvailable))
		}
		return nil
	})
	saramaCompareDescribe(t, h, adm, topic)

	// DeleteTopic: gone for the CLI and for sarama.
	if err := adm.DeleteTopic(topic); err != nil {
		t.Fatalf("delete topic: %v", err)
	}
	poll.Until(t, 20*time.Second, func() error {
		if _, err := h.describeTopic(topic); err == nil || !strings.Contains(err.Error(), "UNKNOWN_TOPIC_OR_PARTITION") {
			return fmt.Errorf("describe after DeleteTopic: %v", err)
		}
		listed, err := adm.ListTopics()
		if err != nil {
			return fmt.Errorf("list topics: %w", err)
		}
		if _, ok := listed[topic]; ok {
			return fmt.Errorf("ListTopics still lists %s", topic)
		}
		return nil
	})
	if err := adm.DeleteTopic(topic); !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		t.Fatalf("delete a deleted topic: %v, want ErrUnknownTopicOrPartition", err)
	}
}

// saramaCompareDescribe checks DescribeTopics against `topics describe`.
func saramaCompareDescribe(t *testing.T, h *hostProc, adm sarama.ClusterAdmin, topic string) {
	t.Helper()
	poll.Until(t, 20*time.Second, func() error {
		md, err := adm.DescribeTopics([]string{topic})
		if err != nil {
			return fmt.Errorf("describe topics: %w", err)
		}
		td, err := h.describeTopic(topic)
		if err != nil {
			return err
		}
		if len(md) != 1 || !errors.Is(md[0].Err, sarama.ErrNoError) || md[0].Name != topic || md[0].IsInternal {
			return fmt.Errorf("DescribeTopics: %+v", md)
		}
		if len(md[0].Partitions) != len(td.Partitions) {
			return fmt.Errorf("DescribeTopics: %d partitions, describe %d", len(md[0].Partitions), len(td.Partitions))
		}
		sort.Slice(md[0].Partitions, func(i, j int) bool { return md[0].Partitions[i].ID < md[0].Partitions[j].ID })
		for i, sp := range md[0].Partitions {
			cp := td.Partitions[i]
			if sp.ID != cp.Partition || sp.Leader != cp.Leader || !slices.Equal(sp.Replicas, cp.Replicas) ||
				!slices.Equal(slices.Sorted(slices.Values(sp.Isr)), slices.Sorted(slices.Values(cp.ISR))) || !errors.Is(sp.Err, sarama.ErrNoError) {
				return fmt.Errorf("partition %d: sarama leader %d replicas %v ISR %v (%v), describe leader %d replicas %v ISR %v",
					sp.ID, sp.Leader, sp.Replicas, sp.Isr, sp.Err, cp.Leader, cp.Replicas, cp.ISR)
			}
		}
		return nil
	})
}

// TestKafkaCompatSaramaThreeHosts: three host processes, each with its
// own Kafka listener. sarama bootstrapped at any host sees all three with
// node id = host id; a replication-factor-3 topic created through
// ClusterAdmin has sarama's leaders, replicas and ISR equal to `topics
// describe`; and an idempotent acks=all round trip crosses the hosts.
func TestKafkaCompatSaramaThreeHosts(t *testing.T) {
	const topic = "sarama-spread"
	hosts, kafkaAddrs := startKafkaCluster(t)

	// Host ids by remote address, from the CLI.
	brokers := map[int32]string{}
	poll.Until(t, 30*time.Second, func() error {
		var cd clusterDescription
		if err := hosts[0].describeJSON(&cd, "cluster", "describe"); err != nil {
			return err
		}
		clear(brokers)
		for _, hd := range cd.Hosts {
			for i, h := range hosts {
				if hd.Alive && hd.Address == h.addr() {
					brokers[hd.ID] = kafkaAddrs[i]
				}
			}
		}
		if len(brokers) != 3 {
			return fmt.Errorf("cluster describe: %+v", cd.Hosts)
		}
		return nil
	})

	adm, err := sarama.NewClusterAdmin([]string{kafkaAddrs[1]}, saramaConfig(sarama.V3_6_0_0))
	if err != nil {
		t.Fatalf("cluster admin: %v", err)
	}
	defer adm.Close()
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 6, ReplicationFactor: 3}, false); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	// Every host's Kafka listener bootstraps the same view, equal to the
	// CLI's, once every partition has its full ISR.
	for i, seed := range kafkaAddrs {
		poll.Until(t, 30*time.Second, func() error {
			td, err := hosts[i].describeTopic(topic)
			if err != nil {
				return err
			}
			for _, p := range td.Partitions {
				if len(p.ISR) != 3 {
					return fmt.Errorf("%s-%d: ISR %v", topic, p.Partition, p.ISR)
				}
			}
			return saramaCheckMetadata(hosts[i], seed, brokers, topic)
		})
	}
	saramaCompareDescribe(t, hosts[2], adm, topic)
	leaders := map[int32]bool{}
	for _, p := range hosts[0].mustDescribeTopic(topic).Partitions {
		leaders[p.Leader] = true
	}
	if len(leaders) != 3 {
		t.Fatalf("leaders of %s on %v: not spread over the 3 hosts", topic, leaders)
	}

	// Produce through host 2's bootstrap, read back through host 3's.
	recs := saramaRecords("spread", 300)
	cfg := saramaIdempotent(saramaConfig(sarama.V3_6_0_0))
	saramaSyncProduce(t, kafkaAddrs[1], cfg, topic, recs, false)
	saramaCheckReadBack(t, kafkaAddrs[2], cfg, topic, recs)
}
