// kafka_fuzz_e2e_test.go: structured random Kafka requests against a real
// `actorlog host` process. kafka/fuzz_test.go feeds random bytes to the
// listener in-process (over a fake backend, where most requests fail to
// decode); here every request is well-formed — any API key and version the
// host advertises, built by kmsg — but its fields are random: names from a
// pool mixing the host's real topics and groups with invalid, internal,
// over-long and garbage names; numbers at their edges; arrays empty, nil
// or several long; record batches valid, corrupted or random bytes. So
// each request gets past decoding into a handler and on into the host's
// controller, replicas and group coordinators, as an attacker's would.

package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/storage/record"
)

// TestKafkaFuzzAgainstHost sends structured random requests (see the file
// comment) to a host's Kafka listener for ACTORLOG_FUZZ_DURATION (default
// 10 s; ACTORLOG_FUZZ_SEED replays a run) and asserts:
//   - every answer decodes as the response of the request's key and
//     version and carries its correlation id;
//   - no handler panicked or failed (no handler_panic or handler_error in
//     the host's log), and most advertised APIs were answered at least
//     once (the fuzzer reaches the handlers);
//   - afterwards the host passes the hardening post-checks (alive,
//     healthy, the ledger intact and writable, a new topic served), and a
//     kgo client produces to and consumes from a new topic over the Kafka
//     port.
//
// It runs twice: against an open listener, and against one that enforces
// ACLs (--authorizer acl) where the anonymous principal may use the
// fuzzer's own topics and group and describe the cluster, so that every
// request also passes the authorizer, which answers or narrows it.
func TestKafkaFuzzAgainstHost(t *testing.T) {
	t.Run("open", func(t *testing.T) { kafkaFuzzAgainstHost(t, false) })
	t.Run("acl", func(t *testing.T) { kafkaFuzzAgainstHost(t, true) })
}

func kafkaFuzzAgainstHost(t *testing.T, acls bool) {
	kafkaAddr := "127.0.0.1:" + strconv.Itoa(freeBase(t))
	extra := []string{"--kafka-listen", kafkaAddr}
	if acls {
		extra = append(extra, "--authorizer", "acl")
	}
	e := newHardenEnv(t, extra...)
	if acls {
		etcd := "http://127.0.0.1:" + strconv.Itoa(e.h.base+2)
		e.h.mustCLI("", "acls", "add", "--etcd-endpoints", etcd, "--allow-principal", "User:ANONYMOUS", "--operation", "all",
			"--topic", kafkaFuzzTopic, "--topic", "after-", "--group", kafkaFuzzTopic, "--resource-pattern-type", "prefixed")
		e.h.mustCLI("", "acls", "add", "--etcd-endpoints", etcd, "--allow-principal", "User:ANONYMOUS",
			"--operation", "describe", "--operation", "idempotent-write", "--cluster")
	}
	seed := fuzzSeed(t)

	// A topic and a group of the fuzzer's own, which its names include.
	kc, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	createKafkaTopic(t, kc, kafkaFuzzTopic, 3)
	produceKafka(t, kc, kafkaFuzzTopic, "seed", 5)

	versions := advertisedVersions(t, kafkaAddr)
	f := newKafkaFuzzer(rand.New(rand.NewPCG(seed, 13)))
	stats := map[int16]*kafkaFuzzStat{}
	var c *kafkaFuzzConn
	defer func() {
		if c != nil {
			c.nc.Close()
		}
	}()
	deadline := time.Now().Add(fuzzDuration(t))
	sent := 0
	var prev kmsg.Request // the request before
	for time.Now().Before(deadline) {
		if c == nil {
			nc, err := net.Dial("tcp", kafkaAddr)
			if err != nil {
				e.alive(t)
				t.Fatalf("dial the Kafka port after %d requests (the last: %+v): %v; fences and errors in the log:\n%s\nlog:\n%s",
					sent, prev, err, grepLog(e.h.log(), "fenced", "level=error"), tail(e.h.log()))
			}
			c = &kafkaFuzzConn{nc: nc}
		}
		key := versions[f.rng.IntN(len(versions))]
		req := f.request(key.ApiKey, key.MinVersion+int16(f.rng.IntN(int(key.MaxVersion-key.MinVersion)+1)))
		st := stats[key.ApiKey]
		if st == nil {
			st = &kafkaFuzzStat{}
			stats[key.ApiKey] = st
		}
		st.sent++
		sent++
		switch err := c.roundTrip(req); {
		case err == nil:
			st.answered++
		case errors.Is(err, errNoAnswerWanted):
			st.noAnswer++
		case errors.Is(err, os.ErrDeadlineExceeded):
			// A long poll, a join waiting for its group: the connection
			// goes, the next request gets another.
			st.timedOut++
			c.nc.Close()
			c = nil
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
			st.closed++
			c.nc.Close()
			c = nil
		default:
			t.Fatalf("%s v%d (request %d): %v\nrequest: %+v\nthe request before (on this connection unless it closed): %+v", kmsg.NameForKey(req.Key()), req.GetVersion(), sent, err, req, prev)
		}
		prev = req
	}

	answeredKeys := 0
	var table strings.Builder
	for _, v := range versions {
		st := stats[v.ApiKey]
		if st == nil {
			st = &kafkaFuzzStat{}
		}
		if st.answered > 0 {
			answeredKeys++
		}
		fmt.Fprintf(&table, "  %-28s sent %4d answered %4d no-answer %3d timed-out %3d closed %3d\n",
			kmsg.NameForKey(v.ApiKey), st.sent, st.answered, st.noAnswer, st.timedOut, st.closed)
	}
	t.Logf("%d requests over %d APIs:\n%s", sent, len(versions), table.String())
	if sent < 100 {
		t.Errorf("only %d requests were sent", sent)
	}
	// A short run may miss a key; far fewer answered means requests never
	// reach the handlers.
	if answeredKeys < len(versions)*3/4 {
		t.Errorf("only %d of %d APIs answered any request:\n%s", answeredKeys, len(versions), table.String())
	}
	closes := map[string]int{} // the host's reasons for closing connections
	for _, line := range strings.Split(e.h.log(), "\n") {
		if strings.Contains(line, "reason=handler_panic") || strings.Contains(line, "reason=handler_error") {
			t.Errorf("a handler failed: %s", line)
		}
		if _, after, ok := strings.Cut(line, " reason="); ok && strings.Contains(line, "closing Kafka connection") {
			reason, _, _ := strings.Cut(after, " ")
			closes[reason]++
		}
	}
	t.Logf("the host's logged reasons for closing connections (rate-limited): %v", closes)

	e.postChecks(t, "kafka-fuzz")
	// A topic name no fuzzed request uses: created, written and read over
	// the Kafka port.
	createKafkaTopic(t, kc, "after-kafka-fuzz", 2)
	produceKafka(t, kc, "after-kafka-fuzz", "after", 20)
	consumeKafka(t, kafkaAddr, "after-kafka-fuzz", 20)
}

// kafkaFuzzTopic and kafkaFuzzGroup are the fuzzer's own topic and group,
// among the names it uses.
const (
	kafkaFuzzTopic = "kfz"
	kafkaFuzzGroup = "kfz-group"
)

// kafkaFuzzStat counts one API's requests by outcome.
type kafkaFuzzStat struct{ sent, answered, noAnswer, timedOut, closed int }

// errNoAnswerWanted is roundTrip's result for a request Kafka does not
// answer (a produce with acks=0).
var errNoAnswerWanted = errors.New("no answer expected")

// kafkaFuzzFormatter frames the fuzzer's requests (client id "kfz").
var kafkaFuzzFormatter = kmsg.NewRequestFormatter(kmsg.FormatterClientID("kfz"))

// kafkaFuzzConn is one connection to the Kafka port.
type kafkaFuzzConn struct {
	nc   net.Conn
	corr int32
}

// roundTrip sends req and reads its answer, which must carry the request's
// correlation id and decode as its response. A read that takes more than
// two seconds returns os.ErrDeadlineExceeded (wrapped).
func (c *kafkaFuzzConn) roundTrip(req kmsg.Request) error {
	c.corr++
	frame := kafkaFuzzFormatter.AppendRequest(nil, req, c.corr)
	if err := c.nc.SetDeadline(time.Now().Add(2 * time.Second)); err != nil {
		return fmt.Errorf("set deadline: %w", err)
	}
	if _, err := c.nc.Write(frame); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		return errNoAnswerWanted
	}
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		return fmt.Errorf("read the answer's length: %w", err)
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 256<<20 {
		return fmt.Errorf("answer length %d: the host wrote a broken frame", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c.nc, body); err != nil {
		return fmt.Errorf("read an answer of %d bytes: %w", n, err)
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != c.corr {
		return fmt.Errorf("answer has correlation id %d, want %d: the host answered out of order", got, c.corr)
	}
	body = body[4:]
	if req.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() { // response header v1: tagged fields
		var err error
		if body, err = skipTags(body); err != nil {
			return fmt.Errorf("answer's header: %w", err)
		}
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if req.Key() == kmsg.ApiVersions.Int16() && len(body) >= 2 && int16(binary.BigEndian.Uint16(body)) == kerr.UnsupportedVersion.Code {
		resp.SetVersion(0) // KIP-511: an unsupported version is answered at v0
	}
	if err := resp.ReadFrom(body); err != nil {
		return fmt.Errorf("the answer does not decode as a v%d response: %w (%d bytes)", resp.GetVersion(), err, len(body))
	}
	return nil
}

// skipTags returns b after a tagged-field section at its start.
func skipTags(b []byte) ([]byte, error) {
	n, l := binary.Uvarint(b)
	if l <= 0 {
		return nil, errors.New("bad tag count")
	}
	b = b[l:]
	for range n {
		if _, l = binary.Uvarint(b); l <= 0 {
			return nil, errors.New("bad tag")
		}
		b = b[l:]
		size, l := binary.Uvarint(b)
		if l <= 0 || uint64(len(b)-l) < size {
			return nil, errors.New("bad tag size")
		}
		b = b[l+int(size):]
	}
	return b, nil
}

// advertisedVersions is the host's ApiVersions answer: every key and
// version range it serves.
func advertisedVersions(t *testing.T, addr string) []kmsg.ApiVersionsResponseApiKey {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "kfz", "1"
	frame := kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)
	if _, err := nc.Write(frame); err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	readKafkaResponse(t, nc, 1, resp)
	if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		t.Fatalf("ApiVersions: error %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
	}
	return resp.ApiKeys
}

// kafkaFuzzer builds random requests.
type kafkaFuzzer struct {
	rng     *rand.Rand
	strs    []string // every string field's values
	batches [][]byte // valid record batches, some compressed
}

func newKafkaFuzzer(rng *rand.Rand) *kafkaFuzzer {
	f := &kafkaFuzzer{rng: rng}
	f.strs = []string{
		kafkaFuzzTopic, kafkaFuzzTopic, kafkaFuzzTopic, kafkaFuzzGroup, kafkaFuzzGroup,
		"kfz-new", "kfz-other", "", ".", "..", "a/b", "a b", "__consumer_offsets", "__kfz",
		strings.Repeat("t", 249), strings.Repeat("u", 250), strings.Repeat("v", 4000),
		"consumer", "range", "cooperative-sticky", "roundrobin", "PLAIN", "SCRAM-SHA-256", "GSSAPI",
		"retention.ms", "cleanup.policy", "compact", "delete", "compact,delete", "min.insync.replicas",
		"segment.bytes", "max.message.bytes", "message.timestamp.type", "LogAppendTime",
		"-1", "0", "1", "9223372036854775807", "-9223372036854775808", "1e99", "NaN", "abc",
		"User:*", "User:kfz", "*", "\x00", "\xff\xfe", "kfz\n", "ünïcödé",
	}
	// Alphanumeric garbage: valid names, so a fixed few are created at
	// most (auto-creation, CreateTopics), never an unbounded number.
	for range 6 {
		f.strs = append(f.strs, "kfz-"+strconv.FormatUint(rng.Uint64(), 36))
	}
	now := time.Now().UnixMilli()
	for _, c := range []record.Compression{record.CompressionNone, record.CompressionGzip, record.CompressionZstd, record.CompressionLZ4, record.CompressionSnappy} {
		recs := make([]record.Record, 1+rng.IntN(20))
		for i := range recs {
			recs[i] = record.Record{Key: []byte("k" + strconv.Itoa(i)), Value: []byte(strings.Repeat("v", rng.IntN(300))), Timestamp: now}
		}
		b, err := record.BuildBatch(c, recs...)
		if err != nil {
			panic(fmt.Sprintf("build a %v batch: %v", c, err))
		}
		f.batches = append(f.batches, b)
	}
	return f
}

// request is a request for key at version with random fields.
func (f *kafkaFuzzer) request(key, version int16) kmsg.Request {
	req := kmsg.RequestForKey(key)
	f.fill(reflect.ValueOf(req).Elem(), "", 0)
	req.SetVersion(version)
	if p, ok := req.(*kmsg.ProduceRequest); ok {
		p.Acks = []int16{-1, -1, 1, 0, 2, -2}[f.rng.IntN(6)]
		p.TransactionID = nil
	}
	return req
}

var tagsType = reflect.TypeFor[kmsg.Tags]()

// sizeFields are the fields that size a topic (CreateTopics'
// NumPartitions and ReplicationFactor, CreatePartitions' Count): a few
// partitions, or a refused count (above the 10,000 a topic may have, or
// negative), never hundreds. A topic of hundreds of partitions is valid;
// starting its replicas on a race-built host that shares two cores with
// other test processes starved the host's etcd lease renewals for a TTL,
// and the host was fenced and restarted: a load test, which this is not
// (scripts/partitions-bench.sh measures 1,000 partitions on one host).
var sizeFields = map[string]bool{"NumPartitions": true, "ReplicationFactor": true, "Count": true}

// fill sets v (and what it holds) to random values; name is its field's.
func (f *kafkaFuzzer) fill(v reflect.Value, name string, depth int) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == tagsType {
			return
		}
		for i := range v.NumField() {
			fv, fname := v.Field(i), v.Type().Field(i).Name
			if fv.CanSet() && fname != "Version" {
				f.fill(fv, fname, depth+1)
			}
		}
	case reflect.Pointer:
		if f.rng.IntN(4) == 0 {
			v.SetZero()
			return
		}
		p := reflect.New(v.Type().Elem())
		f.fill(p.Elem(), name, depth+1)
		v.Set(p)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes(f.bytes(name))
			return
		}
		n := []int{0, 1, 1, 2, 3, 5}[f.rng.IntN(6)]
		if depth > 6 || f.rng.IntN(8) == 0 {
			v.SetZero() // nil: null where the field is nullable
			return
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			f.fill(s.Index(i), name, depth+1)
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			f.fill(v.Index(i), name, depth+1)
		}
		if f.rng.IntN(2) == 0 {
			v.SetZero() // a zero topic ID: "by name"
		}
	case reflect.String:
		v.SetString(f.strs[f.rng.IntN(len(f.strs))])
	case reflect.Bool:
		v.SetBool(f.rng.IntN(2) == 0)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if sizeFields[name] {
			v.SetInt([]int64{-2, -1, 0, 1, 2, 3, 5, 8, 10001, math.MaxInt32, math.MinInt32}[f.rng.IntN(11)])
			return
		}
		v.SetInt(f.int(v.Type().Bits()))
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(f.rng.Uint64() >> (64 - v.Type().Bits()))
	case reflect.Float64:
		v.SetFloat([]float64{0, 1, -1, 0.5, math.Inf(1), math.NaN(), math.MaxFloat64}[f.rng.IntN(7)])
	}
}

// int is a random signed integer of the given width, mostly at an edge.
func (f *kafkaFuzzer) int(bits int) int64 {
	lo, hi := int64(-1)<<(bits-1), int64(1)<<(bits-1)-1
	switch f.rng.IntN(10) {
	case 0:
		return lo
	case 1:
		return hi
	case 2:
		return -1
	case 3:
		return 0
	case 4, 5:
		return int64(f.rng.IntN(4))
	case 6:
		return int64(f.rng.IntN(1000))
	case 7:
		return time.Now().UnixMilli() & hi // a timestamp, where 64 bits
	default:
		return int64(f.rng.Uint64()>>(64-bits)) + lo
	}
}

// bytes is a random byte field: a record batch (valid, corrupted, two in
// a row) where the field holds records, else short random bytes or nil.
func (f *kafkaFuzzer) bytes(name string) []byte {
	if name == "Records" {
		b := slices.Clone(f.batches[f.rng.IntN(len(f.batches))])
		switch f.rng.IntN(6) {
		case 0:
			b[f.rng.IntN(len(b))] ^= byte(1 + f.rng.IntN(255)) // a flipped byte: CRC or header
		case 1:
			b = b[:f.rng.IntN(len(b))] // truncated
		case 2:
			b = append(b, f.batches[f.rng.IntN(len(f.batches))]...)
		case 3:
			binary.BigEndian.PutUint32(b[8:], uint32(f.int(32))) // length field
		}
		return b
	}
	switch f.rng.IntN(4) {
	case 0:
		return nil
	case 1:
		return []byte{}
	default:
		b := make([]byte, f.rng.IntN(64))
		for i := range b {
			b[i] = byte(f.rng.Uint32())
		}
		return b
	}
}

// createKafkaTopic creates topic (replication factor 1) over the Kafka
// port.
func createKafkaTopic(t *testing.T, kc *kgo.Client, topic string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(kc).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
}

// produceKafka writes n records tagged tag to topic, acks=all.
func produceKafka(t *testing.T, kc *kgo.Client, topic, tag string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Value: []byte(tag + "-" + strconv.Itoa(i))}
	}
	if err := kc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce %d records to %s: %v", n, topic, err)
	}
}

// consumeKafka reads topic from the start with a fresh kgo client until it
// has n records.
func consumeKafka(t *testing.T, addr, topic string, n int) {
	t.Helper()
	kc, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	got := 0
	for got < n {
		fs := kc.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records of %s: %v", got, n, topic, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s-%d: %v", topic, p, err) })
		got += fs.NumRecords()
	}
}
