// kafka_retries_e2e_test.go: idempotent Kafka producers whose Produce
// responses are lost (issue 13, row 4), against a real `actorlog host`
// process. A fault-injecting TCP proxy sits between the clients and the
// host (the host advertises the proxy's address, so Metadata routes every
// client connection through it); for a fraction of Produce requests it
// forwards the request, lets the host append the batch, and cuts the
// connection before the response reaches the client. The client cannot
// know whether the batch was written and must send it again with the same
// producer id, epoch and sequence numbers; the host must recognise the
// duplicate and answer it with the original offsets instead of appending it
// twice. Checked for franz-go (kgo) and librdkafka (confluent-kafka-go,
// enable.idempotence=true): every acknowledged record is in the log
// exactly once, at the offset acknowledged, in produce order per
// partition, and connections were really cut.
//
// Then transactions, which actorlog does not serve (DESIGN §9): a
// transactional id fails kgo and librdkafka fatally (not an endless retry)
// and the host keeps serving other clients afterwards.

package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceCutProxy forwards Kafka connections to a host and cuts some of
// them right after the host answered a Produce request, before the answer
// reaches the client.
type produceCutProxy struct {
	t      *testing.T
	ln     net.Listener
	target string
	every  int64 // cut after every every-th Produce request ...
	limit  int64 // ... at most limit times

	enabled  atomic.Bool
	produces atomic.Int64 // Produce requests seen
	cuts     atomic.Int64 // connections cut

	mu    sync.Mutex
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

func newProduceCutProxy(t *testing.T, addr, target string, every, limit int64) *produceCutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p := &produceCutProxy{t: t, ln: ln, target: target, every: every, limit: limit, conns: map[net.Conn]bool{}}
	p.enabled.Store(true)
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *produceCutProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil // later connections are closed at once
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *produceCutProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		return false
	}
	p.conns[c] = true
	return true
}

func (p *produceCutProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue // the host is down: the client sees a refused-like close
		}
		if !p.track(client) || !p.track(server) {
			client.Close()
			server.Close()
			return
		}
		p.wg.Add(1)
		go p.serve(client, server)
	}
}

// proxyReadFrame reads one size-prefixed Kafka frame (the prefix included).
func proxyReadFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 64<<20 {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	buf := make([]byte, 4+n)
	copy(buf, size[:])
	if _, err := io.ReadFull(r, buf[4:]); err != nil {
		return nil, err
	}
	return buf, nil
}

// serve relays one connection: requests (api key at bytes 4-6,
// correlation id at 8-12 of the frame) to the host, responses
// (correlation id at 4-8) back; the response to a request picked for a
// cut closes both sides instead of being relayed.
func (p *produceCutProxy) serve(client, server net.Conn) {
	defer p.wg.Done()
	var cutMu sync.Mutex
	cut := map[uint32]bool{}
	shut := func() {
		client.Close()
		server.Close()
		p.mu.Lock()
		if p.conns != nil {
			delete(p.conns, client)
			delete(p.conns, server)
		}
		p.mu.Unlock()
	}
	done := make(chan struct{})
	go func() { // client -> host
		defer close(done)
		for {
			f, err := proxyReadFrame(client)
			if err != nil || len(f) < 12 {
				shut()
				return
			}
			if binary.BigEndian.Uint16(f[4:6]) == 0 && p.enabled.Load() { // Produce
				if n := p.produces.Add(1); n%p.every == 0 && p.cuts.Load() < p.limit {
					cutMu.Lock()
					cut[binary.BigEndian.Uint32(f[8:12])] = true
					cutMu.Unlock()
				}
			}
			if _, err := server.Write(f); err != nil {
				shut()
				return
			}
		}
	}()
	for { // host -> client
		f, err := proxyReadFrame(server)
		if err != nil || len(f) < 8 {
			break
		}
		cutMu.Lock()
		drop := cut[binary.BigEndian.Uint32(f[4:8])]
		cutMu.Unlock()
		if drop {
			p.cuts.Add(1)
			break
		}
		if _, err := client.Write(f); err != nil {
			break
		}
	}
	shut()
	<-done
}

// retryAcked is one acknowledged record of a producer, in produce order.
type retryAcked struct {
	seq       int // produce-call order
	partition int32
	offset    int64
	key       string
	value     string
}

// checkRetried checks that topic holds every acknowledged record exactly
// once, at its acknowledged offset, and that each partition's records
// are in produce order, reading with kgo through addr; and that the log
// holds nothing else (its end offsets add up to the records acknowledged).
func checkRetried(t *testing.T, h *hostProc, addr, topic string, acked []retryAcked) {
	t.Helper()
	if ends := h.endOffsets(topic); sum(ends) != int64(len(acked)) {
		t.Fatalf("%s: end offsets %v, %d records in all; %d acknowledged", topic, ends, sum(ends), len(acked))
	}
	ka := make([]kafkaAcked, 0, len(acked))
	byPart := map[int32][]retryAcked{}
	for _, a := range acked {
		ka = append(ka, kafkaAcked{partition: a.partition, offset: a.offset, key: a.key, value: a.value})
		byPart[a.partition] = append(byPart[a.partition], a)
	}
	checkAcked(t, addr, topic, ka) // at its offset, nowhere else
	for p, as := range byPart {
		slices.SortFunc(as, func(a, b retryAcked) int { return int(a.offset - b.offset) })
		for i := 1; i < len(as); i++ {
			if as[i].seq < as[i-1].seq {
				t.Fatalf("%s-%d: record %d (offset %d) before record %d (offset %d): out of produce order",
					topic, p, as[i-1].seq, as[i-1].offset, as[i].seq, as[i].offset)
			}
		}
	}
}

// retryHost starts a host whose Kafka listener is advertised at a proxy
// cutting after every every-th Produce request (at most limit times).
func retryHost(t *testing.T, every, limit int64) (*hostProc, *produceCutProxy, string) {
	t.Helper()
	listen := "127.0.0.1:" + strconv.Itoa(freeBase(t))
	advertise := "127.0.0.1:" + strconv.Itoa(freeBase(t))
	h := startHost(t, t.TempDir(), freeBase(t), "--kafka-listen", listen, "--kafka-advertise", advertise)
	return h, newProduceCutProxy(t, advertise, listen, every, limit), advertise
}

const retryRecords = 3000

func TestKafkaRetriesIdempotentKgo(t *testing.T) {
	const topic = "retries-kgo"
	h, proxy, addr := retryHost(t, 3, 12)
	h.mustCLI("", "topics", "create", topic, "--partitions", "3")

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(2*time.Millisecond), kgo.MetadataMinAge(100*time.Millisecond), kgo.RecordDeliveryTimeout(60*time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	var acked []retryAcked
	var failed []error
	for i := range retryRecords {
		r := &kgo.Record{Key: []byte("k" + strconv.Itoa(i%29)), Value: []byte(fmt.Sprintf("kgo-%05d", i))}
		cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, err)
				return
			}
			acked = append(acked, retryAcked{seq: i, partition: r.Partition, offset: r.Offset, key: string(r.Key), value: string(r.Value)})
		})
		if i%25 == 24 { // many smaller produce requests, not a few large ones
			time.Sleep(4 * time.Millisecond)
		}
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	proxy.enabled.Store(false)
	mu.Lock()
	defer mu.Unlock()
	if len(failed) > 0 || len(acked) != retryRecords {
		t.Fatalf("%d of %d records acknowledged, %d failed (first: %v)", len(acked), retryRecords, len(failed), append(failed, nil)[0])
	}
	cuts := proxy.cuts.Load()
	t.Logf("kgo: %d produce requests, %d connections cut after the host answered", proxy.produces.Load(), cuts)
	if cuts == 0 {
		t.Fatal("no connection was cut: the retries were not exercised")
	}
	checkRetried(t, h, addr, topic, acked)
}

func TestKafkaRetriesIdempotentLibrdkafka(t *testing.T) {
	const topic = "retries-rdkafka"
	h, proxy, addr := retryHost(t, 3, 12)
	h.mustCLI("", "topics", "create", topic, "--partitions", "3")

	p, err := ckafka.NewProducer(&ckafka.ConfigMap{"bootstrap.servers": addr, "enable.idempotence": true, "acks": "all",
		"linger.ms": 2, "retry.backoff.ms": 50, "reconnect.backoff.ms": 20, "message.timeout.ms": 60000,
		"topic.metadata.refresh.interval.ms": 1000, "log_level": 4})
	if err != nil {
		t.Fatalf("librdkafka producer: %v", err)
	}
	defer p.Close()
	topicName := topic
	deliveries := make(chan ckafka.Event, retryRecords)
	for i := range retryRecords {
		m := &ckafka.Message{TopicPartition: ckafka.TopicPartition{Topic: &topicName, Partition: ckafka.PartitionAny},
			Key: []byte("k" + strconv.Itoa(i%29)), Value: []byte(fmt.Sprintf("rdk-%05d", i)), Opaque: i}
		if err := p.Produce(m, deliveries); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		if i%25 == 24 {
			time.Sleep(4 * time.Millisecond)
		}
	}
	var acked []retryAcked
	timeout := time.After(60 * time.Second)
	for len(acked) < retryRecords {
		select {
		case ev := <-deliveries:
			m, ok := ev.(*ckafka.Message)
			if !ok {
				t.Fatalf("delivery event %T: %v", ev, ev)
			}
			if m.TopicPartition.Error != nil {
				t.Fatalf("record %v not delivered: %v", m.Opaque, m.TopicPartition.Error)
			}
			acked = append(acked, retryAcked{seq: m.Opaque.(int), partition: m.TopicPartition.Partition,
				offset: int64(m.TopicPartition.Offset), key: string(m.Key), value: string(m.Value)})
		case <-timeout:
			t.Fatalf("%d of %d records acknowledged in 60 s", len(acked), retryRecords)
		}
	}
	proxy.enabled.Store(false)
	cuts := proxy.cuts.Load()
	t.Logf("librdkafka: %d produce requests, %d connections cut after the host answered", proxy.produces.Load(), cuts)
	if cuts == 0 {
		t.Fatal("no connection was cut: the retries were not exercised")
	}
	checkRetried(t, h, addr, topic, acked)
}

// TestKafkaRetriesTransactionsRefused: a transactional producer fails
// fatally, with kgo and with librdkafka, and the host keeps serving.
func TestKafkaRetriesTransactionsRefused(t *testing.T) {
	const topic = "retries-txn"
	addr := "127.0.0.1:" + strconv.Itoa(freeBase(t))
	h := startHost(t, t.TempDir(), freeBase(t), "--kafka-listen", addr)
	h.mustCLI("", "topics", "create", topic, "--partitions", "2")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// kgo: the transaction begins locally; its first produce needs a
	// producer id for the transactional id, which is refused.
	txcl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.TransactionalID("actorlog-txn"),
		kgo.RecordDeliveryTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer txcl.Close()
	var kgoErr error
	if err := txcl.BeginTransaction(); err != nil {
		kgoErr = err
	} else {
		kgoErr = txcl.ProduceSync(ctx, &kgo.Record{Value: []byte("in a transaction")}).FirstErr()
	}
	if !errors.Is(kgoErr, kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("kgo transactional produce: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", kgoErr)
	}
	if ctx.Err() != nil {
		t.Fatal("kgo retried until the deadline instead of failing")
	}
	t.Logf("kgo: %v", kgoErr)

	// librdkafka: InitTransactions fails fatally.
	p, err := ckafka.NewProducer(&ckafka.ConfigMap{"bootstrap.servers": addr, "transactional.id": "actorlog-txn-rdk", "log_level": 3})
	if err != nil {
		t.Fatalf("librdkafka producer: %v", err)
	}
	ictx, icancel := context.WithTimeout(ctx, 30*time.Second)
	err = p.InitTransactions(ictx)
	icancel()
	p.Close()
	var kerrc ckafka.Error
	if !errors.As(err, &kerrc) || !kerrc.IsFatal() || kerrc.Code() != ckafka.ErrTransactionalIDAuthorizationFailed {
		t.Fatalf("librdkafka InitTransactions: %v, want a fatal TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
	}
	t.Logf("librdkafka: %v (fatal %v, code %v)", err, kerrc.IsFatal(), kerrc.Code())

	// The host keeps serving: an idempotent producer and a reader.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := range 20 {
		recs = append(recs, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(fmt.Sprintf("after-%d", i))})
	}
	res := cl.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		t.Fatalf("produce after the refused transactions: %v", err)
	}
	var acked []kafkaAcked
	for _, r := range res {
		acked = append(acked, kafkaAcked{partition: r.Record.Partition, offset: r.Record.Offset, key: string(r.Record.Key), value: string(r.Record.Value)})
	}
	checkAcked(t, addr, topic, acked)
}
