// kafka_compat_librdkafka_test.go: librdkafka clients against real
// `actorlog host` processes (issue 13): confluent-kafka-go v2.11.1 (cgo,
// bundled librdkafka 2.11) and kcat (librdkafka 2.0.2). librdkafka is the
// strictest client about response details, so each row of the
// compatibility matrix is checked from what it sees:
//   - metadata: AdminClient.GetMetadata and `kcat -L -J` list every host's
//     Kafka address under its host id, and each partition's leader,
//     replicas and ISR as `topics describe` reports them (one host and
//     three); a raw ApiVersions v99 gets the v0 UNSUPPORTED_VERSION
//     fallback with the key list from the host process;
//   - round trip: an idempotent acks=all librdkafka producer and a
//     librdkafka consumer: keys, values (null and empty kept apart),
//     headers and timestamps byte-identical, per-partition order, exact
//     count, watermarks and OffsetsForTimes; `kcat -C -e` reads exactly
//     the records;
//   - compression: every codec produced by librdkafka 2.11, kcat 2.0.2 and
//     kgo reads back identically (through fetch limits smaller than one
//     batch), and the stored batches keep the codec (RecordBatch
//     attributes of a raw Fetch);
//   - consumer groups: three librdkafka consumers share twelve partitions
//     with commits (each record processed once, offsets contiguous), a
//     leaving member's partitions move, a restarted group resumes at its
//     commits (auto commit), a restarted static member (group.instance.id,
//     leader or not) gets its partitions back without a rebalance, and
//     cooperative-sticky members move only a leaver's partitions.
//
// Every librdkafka client's log is watched: a warning (librdkafka's way of
// saying a response looked wrong) fails the test. One host serves every
// single-host row, so the file stays within its time budget; librdkafka
// clients run with short timeouts, and the hosts with a short initial
// rebalance delay. ACTORLOG_RDK_DEBUG=cgrp,... prints librdkafka's debug
// log for diagnosis.

package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/internal/poll"
)

// rdkBase is the configuration every librdkafka client of this file
// starts from: short timeouts, so clients notice changes and close fast.
func rdkBase(addr string) ckafka.ConfigMap {
	// ACTORLOG_RDK_DEBUG=cgrp,fetch,... turns on librdkafka's debug
	// contexts; rdkWatchLogs then prints every line (diagnosis).
	if d := os.Getenv("ACTORLOG_RDK_DEBUG"); d != "" {
		return ckafka.ConfigMap{"bootstrap.servers": addr, "topic.metadata.refresh.interval.ms": 1000, "socket.timeout.ms": 10000,
			"reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500, "retry.backoff.ms": 50,
			"log_level": 7, "debug": d, "go.logs.channel.enable": true}
	}
	return ckafka.ConfigMap{
		"bootstrap.servers":                  addr,
		"topic.metadata.refresh.interval.ms": 1000,
		"socket.timeout.ms":                  10000,
		"reconnect.backoff.ms":               50,
		"reconnect.backoff.max.ms":           500,
		"retry.backoff.ms":                   50,
		"log_level":                          6, // notices and up: rdkWatchLogs fails on warnings
		"go.logs.channel.enable":             true,
	}
}

// rdkWatchLogs drains a librdkafka client's log channel (closed by the
// client's Close) and returns a function, to call after Close, that fails
// the test on any line at warning level or worse: librdkafka warns about
// responses it finds wrong (a protocol parse failure, an unexpected error
// code, a feature it turned off) even when it copes with them.
func rdkWatchLogs(t *testing.T, name string, logs chan ckafka.LogEvent) (check func(), recent func() string) {
	var bad []string
	var mu sync.Mutex
	var last []string // the last rdkRecentLogs lines, for a diagnosis
	done := make(chan struct{})
	go func() {
		defer close(done)
		debug := os.Getenv("ACTORLOG_RDK_DEBUG") != ""
		for e := range logs {
			line := fmt.Sprintf("%s %s %d|%s|%s", e.Timestamp.Format("15:04:05.000"), name, e.Level, e.Tag, e.Message)
			if debug {
				t.Log(line)
			}
			mu.Lock()
			if len(last) == rdkRecentLogs {
				last = append(last[:0], last[1:]...)
			}
			last = append(last, line)
			mu.Unlock()
			if e.Level <= 4 {
				bad = append(bad, fmt.Sprintf("%d|%s|%s", e.Level, e.Tag, e.Message))
			}
		}
	}()
	check = func() {
		t.Helper()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("%s: log channel not closed", name)
			return
		}
		if len(bad) > 0 {
			t.Errorf("%s: librdkafka logged warnings:\n%s", name, strings.Join(bad, "\n"))
		}
	}
	recent = func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(last, "\n")
	}
	return check, recent
}

// rdkRecentLogs is how many of a client's last log lines rdkWatchLogs keeps.
const rdkRecentLogs = 300

func rdkConfig(addr string, more ckafka.ConfigMap) *ckafka.ConfigMap {
	c := rdkBase(addr)
	for k, v := range more {
		c[k] = v
	}
	return &c
}

// rdkProduce produces msgs with a librdkafka producer configured with
// more (acks=all and idempotence unless more says otherwise) and returns
// msgs in delivery order, each with the partition and offset of its
// delivery report, failing on any error.
func rdkProduce(t *testing.T, addr string, more ckafka.ConfigMap, msgs []*ckafka.Message) []*ckafka.Message {
	t.Helper()
	cfg := rdkConfig(addr, ckafka.ConfigMap{"acks": "all", "enable.idempotence": true, "linger.ms": 5, "message.timeout.ms": 30000})
	for k, v := range more {
		(*cfg)[k] = v
	}
	p, err := ckafka.NewProducer(cfg)
	if err != nil {
		t.Fatalf("new producer: %v", err)
	}
	checkLogs, _ := rdkWatchLogs(t, "producer", p.Logs())
	defer checkLogs()
	defer p.Close()
	// Errors the client reports outside the delivery reports (e.g. a fatal
	// idempotence error).
	var evErr atomicError
	go func() {
		for ev := range p.Events() {
			if e, ok := ev.(ckafka.Error); ok && (e.IsFatal() || e.Code() != ckafka.ErrTransport) {
				evErr.set(fmt.Errorf("producer event: %w", e))
			}
		}
	}()
	reports := make(chan ckafka.Event, len(msgs))
	for i, m := range msgs {
		m.Opaque = i // delivery reports carry neither headers nor timestamps: pair them with msgs
		if err := p.Produce(m, reports); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	delivered := make([]*ckafka.Message, 0, len(msgs))
	timeout := time.After(45 * time.Second)
	for len(delivered) < len(msgs) {
		select {
		case ev := <-reports:
			m, ok := ev.(*ckafka.Message)
			if !ok {
				t.Fatalf("delivery report %T %v", ev, ev)
			}
			if m.TopicPartition.Error != nil {
				t.Fatalf("delivery of %q to %v: %v", m.Value, m.TopicPartition, m.TopicPartition.Error)
			}
			i, ok := m.Opaque.(int)
			if !ok || i < 0 || i >= len(msgs) {
				t.Fatalf("delivery report with opaque %v", m.Opaque)
			}
			orig := *msgs[i]
			orig.TopicPartition = m.TopicPartition
			delivered = append(delivered, &orig)
		case <-timeout:
			t.Fatalf("%d of %d messages delivered", len(delivered), len(msgs))
		}
	}
	if err := evErr.get(); err != nil {
		t.Fatal(err)
	}
	return delivered
}

// rdkRead reads want records from the given partitions of topic with a
// librdkafka consumer assigned (no subscription) from the beginning, and
// returns them by partition in the order read; more is more consumer
// configuration, and check, when not nil, then runs with the consumer.
func rdkRead(t *testing.T, addr, topic string, parts []int32, want int, more ckafka.ConfigMap, check func(*ckafka.Consumer)) map[int32][]*ckafka.Message {
	t.Helper()
	cfg := rdkConfig(addr, ckafka.ConfigMap{"group.id": "rdk-reader-" + topic, "enable.auto.commit": false,
		"fetch.wait.max.ms": 100, "check.crcs": true})
	for k, v := range more {
		(*cfg)[k] = v
	}
	c, err := ckafka.NewConsumer(cfg)
	if err != nil {
		t.Fatalf("new consumer: %v", err)
	}
	checkLogs, _ := rdkWatchLogs(t, "consumer", c.Logs())
	defer checkLogs()
	defer c.Close()
	var tps []ckafka.TopicPartition
	for _, p := range parts {
		tps = append(tps, ckafka.TopicPartition{Topic: &topic, Partition: p, Offset: ckafka.OffsetBeginning})
	}
	if err := c.Assign(tps); err != nil {
		t.Fatalf("assign: %v", err)
	}
	got := map[int32][]*ckafka.Message{}
	n := 0
	deadline := time.Now().Add(45 * time.Second)
	for n < want {
		if time.Now().After(deadline) {
			t.Fatalf("read %d of %d records of %s", n, want, topic)
		}
		m, err := c.ReadMessage(200 * time.Millisecond)
		var kerr ckafka.Error
		if errors.As(err, &kerr) && kerr.IsTimeout() {
			continue
		}
		if err != nil {
			t.Fatalf("read %s: %v", topic, err)
		}
		got[m.TopicPartition.Partition] = append(got[m.TopicPartition.Partition], m)
		n++
	}
	// Nothing beyond: a short extra read finds no more records.
	if m, err := c.ReadMessage(300 * time.Millisecond); err == nil {
		t.Fatalf("read a record beyond the %d produced: %v %q", want, m.TopicPartition, m.Value)
	}
	if check != nil {
		check(c)
	}
	return got
}

// rdkKcat runs kcat with args and stdin and returns its stdout and stderr.
func rdkKcat(t *testing.T, stdin []byte, args ...string) (string, string) {
	t.Helper()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %v: %v\nstderr: %s", args, err, stderr.String())
	}
	return stdout.String(), stderr.String()
}

// rdkBroker is a host as Kafka metadata must list it.
type rdkBroker struct {
	id   int32
	addr string
}

// rdkHostBrokers returns, by `cluster describe`, each host's id paired with
// its Kafka listener (kafkaAddrs by host name; "" for a single unnamed
// host).
func rdkHostBrokers(t *testing.T, h *hostProc, kafkaAddrs map[string]string) []rdkBroker {
	t.Helper()
	var out []rdkBroker
	poll.Until(t, 30*time.Second, func() error {
		var cd clusterDescription
		if err := h.describeJSON(&cd, "cluster", "describe"); err != nil {
			return err
		}
		out = out[:0]
		for _, hd := range cd.Hosts {
			if !hd.Alive {
				return fmt.Errorf("host %s (%d) not alive", hd.Name, hd.ID)
			}
			addr, ok := kafkaAddrs[hd.Name]
			if !ok && len(kafkaAddrs) == 1 && len(cd.Hosts) == 1 {
				for _, a := range kafkaAddrs {
					addr, ok = a, true
				}
			}
			if !ok {
				return fmt.Errorf("host %q (%d) has no Kafka listener here", hd.Name, hd.ID)
			}
			out = append(out, rdkBroker{id: hd.ID, addr: addr})
		}
		if len(out) != len(kafkaAddrs) {
			return fmt.Errorf("%d hosts described, want %d", len(out), len(kafkaAddrs))
		}
		return nil
	})
	slices.SortFunc(out, func(a, b rdkBroker) int { return int(a.id - b.id) })
	return out
}

// rdkPartition is a partition as Kafka metadata must list it.
type rdkPartition struct {
	partition, leader int32
	replicas, isr     []int32
}

func (p rdkPartition) String() string {
	return fmt.Sprintf("p%d leader %d replicas %v isr %v", p.partition, p.leader, p.replicas, p.isr)
}

func rdkSorted(xs []int32) []int32 {
	out := slices.Clone(xs)
	slices.Sort(out)
	return out
}

// rdkDescribed is topic as `topics describe` reports it, once every
// partition has an available leader and a full ISR.
func rdkDescribed(h *hostProc, topic string) ([]rdkPartition, error) {
	td, err := h.describeTopic(topic)
	if err != nil {
		return nil, err
	}
	var out []rdkPartition
	for _, p := range td.Partitions {
		if p.LeaderStatus != leaderAvailable || len(p.ISR) != int(td.ReplicationFactor) {
			return nil, fmt.Errorf("%s-%d: leader %d (%s) ISR %v", topic, p.Partition, p.Leader, p.LeaderStatus, p.ISR)
		}
		out = append(out, rdkPartition{partition: p.Partition, leader: p.Leader, replicas: p.Replicas, isr: rdkSorted(p.ISR)})
	}
	return out, nil
}

// rdkKcatMeta is the part of `kcat -L -J` this file reads.
type rdkKcatMeta struct {
	Brokers []struct {
		ID   int32  `json:"id"`
		Name string `json:"name"`
	} `json:"brokers"`
	Topics []struct {
		Topic      string `json:"topic"`
		Error      string `json:"error"`
		Partitions []struct {
			Partition int32  `json:"partition"`
			Leader    int32  `json:"leader"`
			Error     string `json:"error"`
			Replicas  []struct {
				ID int32 `json:"id"`
			} `json:"replicas"`
			ISRs []struct {
				ID int32 `json:"id"`
			} `json:"isrs"`
		} `json:"partitions"`
	} `json:"topics"`
}

// checkRdkMetadata compares what librdkafka 2.11 (AdminClient.GetMetadata)
// and kcat 2.0.2 (-L -J) see, bootstrapped from bootstrap, with the hosts
// and `topics describe` of topic (polled until the three agree: the ISR
// may still be settling).
func checkRdkMetadata(t *testing.T, h *hostProc, bootstrap, topic string, brokers []rdkBroker) {
	t.Helper()
	// A standalone admin client cannot log to a channel: derive it from a
	// producer, whose logs are watched.
	prod, err := ckafka.NewProducer(rdkConfig(bootstrap, nil))
	if err != nil {
		t.Fatalf("producer for the admin client: %v", err)
	}
	checkLogs, _ := rdkWatchLogs(t, "admin client", prod.Logs())
	defer checkLogs()
	defer prod.Close()
	adm, err := ckafka.NewAdminClientFromProducer(prod)
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	defer adm.Close()
	_, haveKcat := exec.LookPath("kcat")
	poll.Until(t, 30*time.Second, func() error {
		want, err := rdkDescribed(h, topic)
		if err != nil {
			return err
		}
		md, err := adm.GetMetadata(&topic, false, 5000)
		if err != nil {
			return fmt.Errorf("librdkafka metadata: %w", err)
		}
		var gotBrokers []rdkBroker
		for _, b := range md.Brokers {
			gotBrokers = append(gotBrokers, rdkBroker{id: b.ID, addr: net.JoinHostPort(b.Host, strconv.Itoa(b.Port))})
		}
		slices.SortFunc(gotBrokers, func(a, b rdkBroker) int { return int(a.id - b.id) })
		if !slices.Equal(gotBrokers, brokers) {
			return fmt.Errorf("librdkafka brokers %v, want %v", gotBrokers, brokers)
		}
		tm, ok := md.Topics[topic]
		if !ok || tm.Error.Code() != ckafka.ErrNoError {
			return fmt.Errorf("librdkafka topic %s: %v %v", topic, ok, tm.Error)
		}
		var got []rdkPartition
		for _, p := range tm.Partitions {
			if p.Error.Code() != ckafka.ErrNoError {
				return fmt.Errorf("librdkafka %s-%d: %v", topic, p.ID, p.Error)
			}
			got = append(got, rdkPartition{partition: p.ID, leader: p.Leader, replicas: p.Replicas, isr: rdkSorted(p.Isrs)})
		}
		slices.SortFunc(got, func(a, b rdkPartition) int { return int(a.partition - b.partition) })
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("librdkafka sees %v, topics describe %v", got, want)
		}
		if haveKcat != nil {
			return nil
		}
		out, _ := rdkKcat(t, nil, "-b", bootstrap, "-L", "-J", "-t", topic, "-m", "10")
		var km rdkKcatMeta
		if err := json.Unmarshal([]byte(out), &km); err != nil {
			return fmt.Errorf("kcat -L -J output %q: %w", out, err)
		}
		gotBrokers = gotBrokers[:0]
		for _, b := range km.Brokers {
			gotBrokers = append(gotBrokers, rdkBroker{id: b.ID, addr: b.Name})
		}
		slices.SortFunc(gotBrokers, func(a, b rdkBroker) int { return int(a.id - b.id) })
		if !slices.Equal(gotBrokers, brokers) {
			return fmt.Errorf("kcat brokers %v, want %v", gotBrokers, brokers)
		}
		if len(km.Topics) != 1 || km.Topics[0].Topic != topic || km.Topics[0].Error != "" {
			return fmt.Errorf("kcat topics: %s", out)
		}
		got = got[:0]
		for _, p := range km.Topics[0].Partitions {
			if p.Error != "" {
				return fmt.Errorf("kcat %s-%d: %s", topic, p.Partition, p.Error)
			}
			pw := rdkPartition{partition: p.Partition, leader: p.Leader}
			for _, r := range p.Replicas {
				pw.replicas = append(pw.replicas, r.ID)
			}
			for _, r := range p.ISRs {
				pw.isr = append(pw.isr, r.ID)
			}
			pw.isr = rdkSorted(pw.isr)
			got = append(got, pw)
		}
		slices.SortFunc(got, func(a, b rdkPartition) int { return int(a.partition - b.partition) })
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("kcat sees %v, topics describe %v", got, want)
		}
		return nil
	})
}

// rdkApiVersionsFallback sends a raw ApiVersions v99 to addr: the host
// answers v0 with UNSUPPORTED_VERSION and the key list a valid request
// (v3, same connection) gets, so a newer client retries at a version the
// host knows.
func rdkApiVersionsFallback(t *testing.T, addr string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	formatter := kmsg.NewRequestFormatter(kmsg.FormatterClientID("compat-rdk"))
	roundTrip := func(version int16, corr int32) *kmsg.ApiVersionsResponse {
		t.Helper()
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(version)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "compat-rdk", "1.0"
		if _, err := conn.Write(formatter.AppendRequest(nil, req, corr)); err != nil {
			t.Fatalf("write ApiVersions v%d: %v", version, err)
		}
		var hdr [8]byte
		if _, err := io.ReadFull(conn, hdr[:]); err != nil {
			t.Fatalf("read ApiVersions v%d response: %v", version, err)
		}
		size, gotCorr := int32(binary.BigEndian.Uint32(hdr[:4])), int32(binary.BigEndian.Uint32(hdr[4:]))
		if gotCorr != corr || size < 4 || size > 1<<20 {
			t.Fatalf("ApiVersions v%d: response size %d correlation id %d, want %d", version, size, gotCorr, corr)
		}
		body := make([]byte, size-4)
		if _, err := io.ReadFull(conn, body); err != nil {
			t.Fatalf("read ApiVersions v%d body: %v", version, err)
		}
		resp := kmsg.NewPtrApiVersionsResponse()
		// The answer to an unknown version is v0 (the only one every
		// client can parse); a known one is answered at its version (the
		// response header of ApiVersions is never flexible).
		resp.SetVersion(version)
		if version > 3 {
			resp.SetVersion(0)
		}
		if err := resp.ReadFrom(body); err != nil {
			t.Fatalf("decode ApiVersions v%d response: %v", resp.GetVersion(), err)
		}
		return resp
	}
	fallback := roundTrip(99, 99)
	if fallback.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("ApiVersions v99: error code %d, want UNSUPPORTED_VERSION (35)", fallback.ErrorCode)
	}
	valid := roundTrip(3, 3)
	if valid.ErrorCode != 0 {
		t.Fatalf("ApiVersions v3: error code %d", valid.ErrorCode)
	}
	keys := func(r *kmsg.ApiVersionsResponse) string {
		var ks []string
		for _, k := range r.ApiKeys {
			ks = append(ks, fmt.Sprintf("%d:%d-%d", k.ApiKey, k.MinVersion, k.MaxVersion))
		}
		return strings.Join(ks, " ")
	}
	if keys(fallback) != keys(valid) || len(valid.ApiKeys) < 10 {
		t.Fatalf("ApiVersions v99 fallback keys %s, v3 keys %s", keys(fallback), keys(valid))
	}
}

// TestKafkaCompatLibrdkafkaThreeHosts: three host processes, each with
// its own Kafka listener. Bootstrapped from any one host, librdkafka and
// kcat list all three under their host ids and each partition as `topics
// describe` has it; an idempotent librdkafka producer writes through all
// the leaders and a librdkafka consumer reads everything back, once
// assigned and once in a group (whose coordinator may be any host) that
// commits to the end.
func TestKafkaCompatLibrdkafkaThreeHosts(t *testing.T) {
	const topic, n = "rdk-spread", 300
	hosts, addrs := startKafkaCluster(t, "--group-initial-rebalance-delay", "500ms")
	kafkaAddrs := map[string]string{}
	for i, addr := range addrs {
		kafkaAddrs[fmt.Sprintf("host%d", i+1)] = addr
	}
	hosts[0].mustCLI("", "topics", "create", topic, "--partitions", "6", "--replication-factor", "3")
	brokers := rdkHostBrokers(t, hosts[0], kafkaAddrs)
	for i, name := range []string{"host1", "host2", "host3"} {
		// Every host bootstraps the same view.
		checkRdkMetadata(t, hosts[i], kafkaAddrs[name], topic, brokers)
	}
	want, err := rdkDescribed(hosts[0], topic)
	if err != nil {
		t.Fatal(err)
	}
	leaders := map[int32]bool{}
	for _, p := range want {
		leaders[p.leader] = true
	}
	t.Logf("leaders of %s: %v", topic, leaders)

	msgs := make([]*ckafka.Message, n)
	tp := topic
	for i := range msgs {
		msgs[i] = &ckafka.Message{TopicPartition: ckafka.TopicPartition{Topic: &tp, Partition: int32(i % 6)},
			Key: []byte("k" + strconv.Itoa(i)), Value: []byte(fmt.Sprintf("spread-%04d", i))}
	}
	delivered := rdkProduce(t, kafkaAddrs["host2"], nil, msgs)
	got := rdkRead(t, kafkaAddrs["host3"], topic, []int32{0, 1, 2, 3, 4, 5}, n, nil, nil)
	rdkCheckOrder(t, delivered, got)

	// A group consumer bootstrapped from host1 finds its coordinator
	// (whichever host that is), processes every record once and commits
	// to the end of every partition.
	const group = "rdk-spread-g"
	l := newRdkLedger()
	m := rdkStartMember(t, kafkaAddrs["host1"], group, topic, "g1", "", false, l)
	var values []string
	for _, d := range delivered {
		values = append(values, string(d.Value))
	}
	poll.Until(t, 40*time.Second, func() error { return l.check(values) })
	m.close(t)
	var gd groupDescription
	if err := hosts[1].describeJSON(&gd, "groups", "describe", group); err != nil {
		t.Fatal(err)
	}
	if len(gd.Offsets) != 6 {
		t.Fatalf("group %s offsets %+v, want 6 partitions", group, gd.Offsets)
	}
	for _, o := range gd.Offsets {
		if o.CommittedOffset == nil || o.LogEndOffset == nil || *o.CommittedOffset != *o.LogEndOffset {
			t.Errorf("%s-%d: committed %v, end %v", o.Topic, o.Partition, o.CommittedOffset, o.LogEndOffset)
		}
	}
}

// rdkCheckOrder checks that got (by partition, in read order) holds exactly
// the delivered messages at their delivered offsets, byte-identical.
func rdkCheckOrder(t *testing.T, delivered []*ckafka.Message, got map[int32][]*ckafka.Message) {
	t.Helper()
	byPart := map[int32][]*ckafka.Message{}
	for _, m := range delivered {
		byPart[m.TopicPartition.Partition] = append(byPart[m.TopicPartition.Partition], m)
	}
	for p, ms := range byPart {
		slices.SortFunc(ms, func(a, b *ckafka.Message) int { return int(a.TopicPartition.Offset - b.TopicPartition.Offset) })
		if len(got[p]) != len(ms) {
			t.Fatalf("partition %d: read %d records, %d delivered", p, len(got[p]), len(ms))
		}
		for i, m := range ms {
			r := got[p][i]
			if r.TopicPartition.Offset != m.TopicPartition.Offset {
				t.Fatalf("partition %d record %d: offset %d, delivered at %d", p, i, r.TopicPartition.Offset, m.TopicPartition.Offset)
			}
			if err := rdkSameMessage(m, r); err != nil {
				t.Fatalf("partition %d offset %d: %v", p, r.TopicPartition.Offset, err)
			}
		}
	}
}

// rdkSameMessage reports how read differs from produced: key and value
// bytes and null-ness, headers in order (null values kept apart from
// empty ones), and the timestamp when produced set one.
func rdkSameMessage(produced, read *ckafka.Message) error {
	if !bytes.Equal(produced.Key, read.Key) || (produced.Key == nil) != (read.Key == nil) {
		return fmt.Errorf("key %q (null %v), produced %q (null %v)", read.Key, read.Key == nil, produced.Key, produced.Key == nil)
	}
	if !bytes.Equal(produced.Value, read.Value) || (produced.Value == nil) != (read.Value == nil) {
		return fmt.Errorf("value %q (null %v), produced %q (null %v)", read.Value, read.Value == nil, produced.Value, produced.Value == nil)
	}
	if len(produced.Headers) != len(read.Headers) {
		return fmt.Errorf("headers %v, produced %v", read.Headers, produced.Headers)
	}
	for i, h := range produced.Headers {
		r := read.Headers[i]
		if h.Key != r.Key || !bytes.Equal(h.Value, r.Value) || (h.Value == nil) != (r.Value == nil) {
			return fmt.Errorf("header %d: %v, produced %v", i, r, h)
		}
	}
	if !produced.Timestamp.IsZero() {
		if !read.Timestamp.Equal(produced.Timestamp) || read.TimestampType != ckafka.TimestampCreateTime {
			return fmt.Errorf("timestamp %v (%v), produced %v", read.Timestamp, read.TimestampType, produced.Timestamp)
		}
	}
	return nil
}

// TestKafkaCompatLibrdkafka: one host process with a Kafka listener, and
// every single-host row of the librdkafka matrix against it.
func TestKafkaCompatLibrdkafka(t *testing.T) {
	kafkaAddr := "127.0.0.1:" + strconv.Itoa(freeBase(t))
	// A short initial rebalance delay (Kafka's is 3s, extended by each
	// joining member) keeps the group rows quick.
	h := startHost(t, t.TempDir(), freeBase(t), "--kafka-listen", kafkaAddr, "--group-initial-rebalance-delay", "500ms")

	t.Run("Metadata", func(t *testing.T) {
		const topic = "rdk-md"
		h.mustCLI("", "topics", "create", topic, "--partitions", "4")
		brokers := rdkHostBrokers(t, h, map[string]string{"": kafkaAddr})
		checkRdkMetadata(t, h, kafkaAddr, topic, brokers)
		rdkApiVersionsFallback(t, kafkaAddr)
	})
	t.Run("RoundTrip", func(t *testing.T) { rdkRoundTrip(t, h, kafkaAddr) })
	t.Run("Compression", func(t *testing.T) { rdkCompression(t, h, kafkaAddr) })
	t.Run("Groups", func(t *testing.T) { rdkGroups(t, h, kafkaAddr) })
}

// rdkRoundTrip: an idempotent acks=all librdkafka producer writes records
// with every shape of key, value and header; a librdkafka consumer reads
// them back byte-identical, in order per partition, exactly; kcat -C -e
// reads exactly as many.
func rdkRoundTrip(t *testing.T, h *hostProc, addr string) {
	const topic, n = "rdk-rt", 600
	h.mustCLI("", "topics", "create", topic, "--partitions", "3")
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	tp := topic
	msgs := make([]*ckafka.Message, n)
	for i := range msgs {
		m := &ckafka.Message{TopicPartition: ckafka.TopicPartition{Topic: &tp, Partition: ckafka.PartitionAny},
			Key: []byte(fmt.Sprintf("key-%d", i%17)), Value: []byte(fmt.Sprintf("value-%04d-%s", i, strings.Repeat("v", i%40))),
			Timestamp: base.Add(time.Duration(i) * time.Millisecond)}
		switch i % 10 {
		case 1:
			m.Key = nil // null key: partitioned at random
		case 2:
			m.Value = nil // null value (tombstone)
		case 3:
			m.Key, m.Value = []byte{}, []byte{} // empty, not null
		case 4:
			m.Value = append([]byte{0, 0xff, '\n', 0x80}, m.Value...) // binary
		}
		if i%3 == 0 {
			m.Headers = []ckafka.Header{{Key: "h1", Value: []byte("one-" + strconv.Itoa(i))}, {Key: "null", Value: nil},
				{Key: "empty", Value: []byte{}}, {Key: "h1", Value: []byte{0, 1, 2}}}
		}
		msgs[i] = m
	}
	delivered := rdkProduce(t, addr, nil, msgs)
	byPart := map[int32][]*ckafka.Message{}
	for _, m := range delivered {
		byPart[m.TopicPartition.Partition] = append(byPart[m.TopicPartition.Partition], m)
	}
	got := rdkRead(t, addr, topic, []int32{0, 1, 2}, n, nil, func(c *ckafka.Consumer) {
		// Watermarks and OffsetsForTimes (ListOffsets) agree with what
		// was delivered.
		var query []ckafka.TopicPartition
		for p, ms := range byPart {
			low, high, err := c.QueryWatermarkOffsets(topic, p, 5000)
			if err != nil || low != 0 || high != int64(len(ms)) {
				t.Errorf("partition %d watermarks %d-%d (%v), want 0-%d", p, low, high, err, len(ms))
			}
			mid := ms[len(ms)/2]
			query = append(query, ckafka.TopicPartition{Topic: &tp, Partition: p, Offset: ckafka.Offset(mid.Timestamp.UnixMilli())})
		}
		offs, err := c.OffsetsForTimes(query, 5000)
		if err != nil {
			t.Fatalf("offsets for times: %v", err)
		}
		for _, o := range offs {
			ms := byPart[o.Partition]
			slices.SortFunc(ms, func(a, b *ckafka.Message) int { return int(a.TopicPartition.Offset - b.TopicPartition.Offset) })
			if want := ms[len(ms)/2].TopicPartition.Offset; o.Error != nil || o.Offset != want {
				t.Errorf("partition %d: offset for time %v, want %d", o.Partition, o, want)
			}
		}
	})
	rdkCheckOrder(t, delivered, got)
	for p, ms := range got {
		if len(ms) == 0 {
			t.Errorf("partition %d got nothing: keys should spread", p)
		}
	}

	// kcat -C -e reads exactly n records (the null value ones print
	// empty: count lines of offsets).
	out, _ := rdkKcat(t, nil, "-b", addr, "-t", topic, "-C", "-e", "-o", "beginning", "-q", "-f", "%p:%o\n")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	seen := map[string]bool{}
	for _, l := range lines {
		seen[l] = true
	}
	if len(lines) != n || len(seen) != n {
		t.Fatalf("kcat -C -e read %d records (%d distinct), want exactly %d", len(lines), len(seen), n)
	}
	for _, m := range delivered {
		if k := fmt.Sprintf("%d:%d", m.TopicPartition.Partition, m.TopicPartition.Offset); !seen[k] {
			t.Fatalf("kcat did not read %s", k)
		}
	}
}

// rdkCodecs are the compression rdkCodecs, by name, and their RecordBatch
// attribute bits.
var rdkCodecs = []struct {
	name string
	attr int16
	kgo  kgo.CompressionCodec
}{
	{"none", 0, kgo.NoCompression()},
	{"gzip", 1, kgo.GzipCompression()},
	{"snappy", 2, kgo.SnappyCompression()},
	{"lz4", 3, kgo.Lz4Compression()},
	{"zstd", 4, kgo.ZstdCompression()},
}

// rdkCompression: for each codec, librdkafka 2.11, kcat 2.0.2 and kgo
// each produce compressible records to their own partition; a librdkafka
// consumer reads every partition back identically, and a raw Fetch shows
// the stored batches kept the producer's codec.
func rdkCompression(t *testing.T, h *hostProc, addr string) {
	const topic, n = "rdk-rdkCodecs", 200
	producers := []string{"librdkafka", "kcat", "kgo"}
	parts := int32(len(rdkCodecs) * len(producers))
	h.mustCLI("", "topics", "create", topic, "--partitions", strconv.Itoa(int(parts)))
	values := func(p int32) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("p%02d-%04d-%s", p, i, strings.Repeat("compressible ", 3+i%20))
		}
		return out
	}
	kcl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MetadataMinAge(100*time.Millisecond), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer kcl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// Each partition's producer and codec: partition ci*3 + pi.
	for ci, c := range rdkCodecs {
		for pi, prod := range producers {
			p := int32(ci*len(producers) + pi)
			vals := values(p)
			switch prod {
			case "librdkafka":
				tp := topic
				msgs := make([]*ckafka.Message, n)
				for i, v := range vals {
					msgs[i] = &ckafka.Message{TopicPartition: ckafka.TopicPartition{Topic: &tp, Partition: p}, Value: []byte(v)}
				}
				rdkProduce(t, addr, ckafka.ConfigMap{"compression.type": c.name, "linger.ms": 20}, msgs)
			case "kcat":
				stdin := []byte(strings.Join(vals, "\n") + "\n")
				_, stderr := rdkKcat(t, stdin, "-b", addr, "-P", "-t", topic, "-p", strconv.Itoa(int(p)), "-z", c.name,
					"-X", "enable.idempotence=true", "-X", "linger.ms=20", "-d", "broker,feature")
				for _, bad := range []string{"does not support compression", "Disabling feature MsgVer2", "Disabling feature LZ4",
					"Disabling feature ZSTD", "not compressing", "sending uncompressed"} {
					if strings.Contains(stderr, bad) {
						t.Errorf("kcat -z %s: librdkafka 2.0.2 logged %q:\n%s", c.name, bad, rdkGrepLines(stderr, bad))
					}
				}
			case "kgo":
				pcl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MetadataMinAge(100*time.Millisecond), kgo.RecordPartitioner(kgo.ManualPartitioner()),
					kgo.ProducerBatchCompression(c.kgo), kgo.ProducerLinger(20*time.Millisecond))
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range vals {
					pcl.Produce(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)}, func(r *kgo.Record, err error) {
						if err != nil {
							t.Errorf("kgo %s produce: %v", c.name, err)
						}
					})
				}
				if err := pcl.Flush(ctx); err != nil {
					t.Fatalf("kgo flush: %v", err)
				}
				pcl.Close()
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	all := make([]int32, parts)
	for i := range all {
		all[i] = int32(i)
	}
	// Fetch limits far below a batch's size: the host must still return
	// each partition's first batch whole (KIP-74), or librdkafka stalls.
	got := rdkRead(t, addr, topic, all, int(parts)*n, ckafka.ConfigMap{"fetch.max.bytes": 1024, "message.max.bytes": 1000, "max.partition.fetch.bytes": 512}, nil)
	for ci, c := range rdkCodecs {
		for pi, prod := range producers {
			p := int32(ci*len(producers) + pi)
			want := values(p)
			var read []string
			for _, m := range got[p] {
				read = append(read, string(m.Value))
			}
			if !slices.Equal(read, want) {
				t.Errorf("%s -z %s (partition %d): read %d records, not the %d produced in order", prod, c.name, p, len(read), len(want))
			}
			attrs := rdkStoredCodecs(t, ctx, kcl, topic, p)
			if len(attrs) == 0 || slices.ContainsFunc(attrs, func(a int16) bool { return a != c.attr }) {
				t.Errorf("%s -z %s (partition %d): stored batch rdkCodecs %v, want all %d", prod, c.name, p, attrs, c.attr)
			}
		}
	}
}

// rdkGrepLines returns the lines of s that contain word.
func rdkGrepLines(s, word string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// rdkStoredCodecs fetches partition p of topic raw, from offset 0, and
// returns each stored RecordBatch's codec (attributes & 7).
func rdkStoredCodecs(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, p int32) []int16 {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 16<<20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = p, 0, 16<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	res, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("fetch %s-%d: %v", topic, p, err)
	}
	if len(res.Topics) != 1 || len(res.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch %s-%d: %d topics", topic, p, len(res.Topics))
	}
	fp := res.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(fp.ErrorCode); err != nil {
		t.Fatalf("fetch %s-%d: %v", topic, p, err)
	}
	var attrs []int16
	b := fp.RecordBatches
	for len(b) > 0 {
		if len(b) < 12 {
			t.Fatalf("fetch %s-%d: %d trailing bytes", topic, p, len(b))
		}
		size := 12 + int(int32(binary.BigEndian.Uint32(b[8:12])))
		if size > len(b) {
			break // a partial batch at the end (max bytes)
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b[:size]); err != nil {
			t.Fatalf("fetch %s-%d: batch: %v", topic, p, err)
		}
		if rb.Magic != 2 {
			t.Fatalf("fetch %s-%d: batch magic %d", topic, p, rb.Magic)
		}
		if rb.ProducerID < 0 {
			// All three producers here are idempotent.
			t.Errorf("fetch %s-%d: batch at %d without a producer id", topic, p, rb.FirstOffset)
		}
		attrs = append(attrs, rb.Attributes&7)
		b = b[size:]
	}
	return attrs
}

// rdkMember is one librdkafka group consumer run by its own goroutine
// (librdkafka's consumer is polled by one goroutine).
type rdkMember struct {
	name   string
	stop   chan struct{}
	done   chan error
	mu     sync.Mutex
	parts  []int32 // current assignment
	assign int     // assignments seen
	revoke int     // revocations seen

	checkLogs  func()        // after the consumer closed
	recentLogs func() string // its last log lines, group debugging on
	phase      atomic.Value  // string: where its goroutine is
}

func (m *rdkMember) state() ([]int32, int, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.parts), m.assign, m.revoke
}

// rdkLedger records what group members processed.
type rdkLedger struct {
	mu   sync.Mutex
	seen map[string]int    // value -> times processed
	by   map[string]string // value -> member that processed it
	last map[int32]int64   // partition -> last offset processed
	err  error
	// reader is, by partition, the member that last processed it.
	reader map[int32]string
	// trace is what the members did (assignments, revocations, commits,
	// first offsets), for a failure to show.
	trace []string
}

func (l *rdkLedger) event(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.trace = append(l.trace, time.Now().Format("15:04:05.000 ")+fmt.Sprintf(format, args...))
}

func newRdkLedger() *rdkLedger {
	return &rdkLedger{seen: map[string]int{}, by: map[string]string{}, last: map[int32]int64{}, reader: map[int32]string{}}
}

// record notes that member processed m. Every topic these groups read
// starts at offset 0 and each record is processed once, so each
// partition's offsets must come in as 0, 1, 2, ... whoever reads them.
func (l *rdkLedger) record(member string, m *ckafka.Message) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, o := m.TopicPartition.Partition, int64(m.TopicPartition.Offset)
	last, ok := l.last[p]
	if !ok {
		last = -1
	}
	if o != last+1 && l.err == nil {
		l.err = fmt.Errorf("%s read partition %d offset %d after %d; trace:\n%s", member, p, o, last, strings.Join(l.trace, "\n"))
	}
	if l.reader[p] != member {
		l.reader[p] = member
		l.trace = append(l.trace, time.Now().Format("15:04:05.000 ")+fmt.Sprintf("%s reads p%d from %d", member, p, o))
	}
	l.last[p] = o
	l.seen[string(m.Value)]++
	l.by[string(m.Value)] = member
}

// check reports whether every one of want was processed exactly once.
func (l *rdkLedger) check(want []string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	var missing []string
	for _, v := range want {
		switch c := l.seen[v]; {
		case c > 1:
			return fmt.Errorf("%s processed %d times", v, c)
		case c == 0:
			missing = append(missing, v)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%d of %d records not processed yet (%v...; last offset processed by partition %v); trace:\n%s",
			len(missing), len(want), missing[:min(len(missing), 8)], l.last, strings.Join(l.trace, "\n"))
	}
	if len(l.seen) != len(want) {
		return fmt.Errorf("%d distinct records processed, %d produced", len(l.seen), len(want))
	}
	return nil
}

// rdkStartMember starts a librdkafka consumer in group subscribed to topic.
// Manual commits (autoCommit false) commit after every 25 records and on
// every revocation, so a partition that moves resumes after what was
// processed; instance, when set, is the static group.instance.id.
func rdkStartMember(t *testing.T, addr, group, topic, name, instance string, autoCommit bool, l *rdkLedger) *rdkMember {
	t.Helper()
	return rdkStartMemberWith(t, addr, group, topic, name, instance, autoCommit, "range", l)
}

// rdkStartMemberWith is rdkStartMember with the partition assignment
// strategy (e.g. cooperative-sticky, whose rebalances are incremental).
func rdkStartMemberWith(t *testing.T, addr, group, topic, name, instance string, autoCommit bool, strategy string, l *rdkLedger) *rdkMember {
	t.Helper()
	cfg := rdkConfig(addr, ckafka.ConfigMap{
		"group.id": group, "client.id": name, "auto.offset.reset": "earliest",
		"session.timeout.ms": 6000, "heartbeat.interval.ms": 300, "max.poll.interval.ms": 10000,
		"fetch.wait.max.ms": 100, "enable.auto.commit": autoCommit, "auto.commit.interval.ms": 100,
		"partition.assignment.strategy": strategy,
		// Offsets are stored for commit once processed, not when polled:
		// Close polls (and drops) whatever is still queued, which would
		// otherwise advance the offsets the final commit writes past
		// records nobody processed.
		"enable.auto.offset.store": false,
	})
	if instance != "" {
		(*cfg)["group.instance.id"] = instance
	}
	if os.Getenv("ACTORLOG_RDK_DEBUG") == "" {
		// The group's debug lines go to rdkWatchLogs' ring only, so a
		// member that does not close says where its group state was.
		(*cfg)["debug"], (*cfg)["log_level"] = "cgrp", 7
	}
	c, err := ckafka.NewConsumer(cfg)
	if err != nil {
		t.Fatalf("new consumer %s: %v", name, err)
	}
	m := &rdkMember{name: name, stop: make(chan struct{}), done: make(chan error, 1)}
	m.checkLogs, m.recentLogs = rdkWatchLogs(t, name, c.Logs())
	m.phase.Store("consuming")
	commit := func() error {
		if autoCommit {
			return nil
		}
		tps, err := c.Commit()
		if err != nil {
			var ke ckafka.Error
			if errors.As(err, &ke) && ke.Code() == ckafka.ErrNoOffset {
				return nil
			}
			return fmt.Errorf("%s commit: %w", name, err)
		}
		var cs []string
		for _, tp := range tps {
			cs = append(cs, fmt.Sprintf("p%d@%d", tp.Partition, tp.Offset))
		}
		l.event("%s committed %v", name, cs)
		return nil
	}
	var cbErr error
	rebalance := func(c *ckafka.Consumer, ev ckafka.Event) error {
		switch e := ev.(type) {
		// Eager protocols revoke everything, then assign; cooperative ones
		// add and remove partitions incrementally: keep the union.
		case ckafka.AssignedPartitions:
			l.event("%s assigned %v", name, e.Partitions)
			m.mu.Lock()
			for _, tp := range e.Partitions {
				if !slices.Contains(m.parts, tp.Partition) {
					m.parts = append(m.parts, tp.Partition)
				}
			}
			slices.Sort(m.parts)
			m.assign++
			m.mu.Unlock()
		case ckafka.RevokedPartitions:
			l.event("%s revoked %v", name, e.Partitions)
			if err := commit(); err != nil && cbErr == nil {
				cbErr = err
			}
			m.mu.Lock()
			m.parts = slices.DeleteFunc(m.parts, func(p int32) bool {
				return slices.ContainsFunc(e.Partitions, func(tp ckafka.TopicPartition) bool { return tp.Partition == p })
			})
			if len(e.Partitions) > 0 {
				m.revoke++
			}
			m.mu.Unlock()
		}
		return nil
	}
	if err := c.SubscribeTopics([]string{topic}, rebalance); err != nil {
		t.Fatalf("subscribe %s: %v", name, err)
	}
	go func() {
		var runErr error
		uncommitted := 0
	loop:
		for {
			select {
			case <-m.stop:
				break loop
			default:
			}
			switch e := c.Poll(50).(type) {
			case *ckafka.Message:
				if e.TopicPartition.Error != nil {
					runErr = fmt.Errorf("%s: message error: %w", name, e.TopicPartition.Error)
					break loop
				}
				l.record(name, e)
				if _, err := c.StoreMessage(e); err != nil {
					runErr = fmt.Errorf("%s: store offset: %w", name, err)
					break loop
				}
				if uncommitted++; uncommitted >= 25 {
					if runErr = commit(); runErr != nil {
						break loop
					}
					uncommitted = 0
				}
			case ckafka.Error:
				if e.IsFatal() {
					runErr = fmt.Errorf("%s: %w", name, e)
					break loop
				}
				t.Logf("%s: consumer error event: %v", name, e)
			}
		}
		if runErr == nil {
			m.phase.Store("its last commit")
			runErr = commit()
		}
		m.phase.Store("Close")
		// Close revokes (committing, in the callback) and leaves the
		// group (a static member does not leave).
		if err := c.Close(); err != nil && runErr == nil {
			runErr = fmt.Errorf("%s close: %w", name, err)
		}
		if runErr == nil {
			runErr = cbErr
		}
		m.done <- runErr
	}()
	t.Cleanup(func() { m.close(t) })
	return m
}

// close stops the member (committing, then closing); it is a no-op the
// second time.
func (m *rdkMember) close(t *testing.T) {
	t.Helper()
	select {
	case <-m.stop:
		return
	default:
	}
	close(m.stop)
	select {
	case err := <-m.done:
		if err != nil {
			t.Errorf("consumer %s: %v", m.name, err)
		}
		m.checkLogs()
	case <-time.After(30 * time.Second):
		t.Errorf("consumer %s did not close in 30 s, stuck in %v; its last librdkafka log lines:\n%s", m.name, m.phase.Load(), m.recentLogs())
	}
}

// rdkWaitAssigned waits until members hold disjoint assignments covering all
// parts partitions, sizes as want (sorted), and returns the assignments.
func rdkWaitAssigned(t *testing.T, members []*rdkMember, parts int, want []int) [][]int32 {
	t.Helper()
	out := make([][]int32, len(members))
	poll.Until(t, 40*time.Second, func() error {
		union := map[int32]bool{}
		var sizes []int
		for i, m := range members {
			ps, _, _ := m.state()
			out[i] = ps
			sizes = append(sizes, len(ps))
			for _, p := range ps {
				if union[p] {
					return fmt.Errorf("partition %d assigned twice: %v", p, out)
				}
				union[p] = true
			}
		}
		slices.Sort(sizes)
		if len(union) != parts || !slices.Equal(sizes, want) {
			return fmt.Errorf("assignments %v, want sizes %v covering %d partitions", out, want, parts)
		}
		return nil
	})
	return out
}

// rdkProduceGroup writes count records (values prefix-i) spread over
// all parts partitions with kgo, and returns the values.
func rdkProduceGroup(t *testing.T, addr, topic, prefix string, parts, count int) []string {
	t.Helper()
	msgs := make([]*ckafka.Message, count)
	vals := make([]string, count)
	tp := topic
	for i := range msgs {
		vals[i] = fmt.Sprintf("%s-%04d", prefix, i)
		msgs[i] = &ckafka.Message{TopicPartition: ckafka.TopicPartition{Topic: &tp, Partition: int32(i % parts)}, Value: []byte(vals[i])}
	}
	rdkProduce(t, addr, nil, msgs)
	return vals
}

// rdkGroups: three librdkafka consumers in a group share twelve
// partitions (range: four each) with manual commits and process every
// record once; one leaves and its partitions move to the other two, still
// once; all stop, records arrive meanwhile, and two new auto-committing
// consumers resume at the commits (nothing processed twice) and commit to
// the end. Then three static members: one restarts within
// session.timeout.ms and gets its partitions back, with no other member
// revoked and the group's generation unchanged.
func rdkGroups(t *testing.T, h *hostProc, addr string) {
	const topic, group, parts = "rdk-group", "rdk-g", 12
	h.mustCLI("", "topics", "create", topic, "--partitions", strconv.Itoa(parts))
	start := time.Now()
	l := newRdkLedger()
	c1 := rdkStartMember(t, addr, group, topic, "c1", "", false, l)
	c2 := rdkStartMember(t, addr, group, topic, "c2", "", false, l)
	c3 := rdkStartMember(t, addr, group, topic, "c3", "", false, l)
	assigned := rdkWaitAssigned(t, []*rdkMember{c1, c2, c3}, parts, []int{4, 4, 4})
	t.Logf("%v: three members: %v", time.Since(start), assigned)
	want := rdkProduceGroup(t, addr, topic, "first", parts, 600)
	poll.Until(t, 40*time.Second, func() error { return l.check(want) })
	// Each record went to the member assigned its partition.
	owner := map[int32]string{}
	for i, m := range []*rdkMember{c1, c2, c3} {
		for _, p := range assigned[i] {
			owner[p] = m.name
		}
	}
	l.mu.Lock()
	for i, v := range want {
		if by := l.by[v]; by != owner[int32(i%parts)] {
			t.Errorf("%s (partition %d) processed by %s, assigned to %s", v, i%parts, by, owner[int32(i%parts)])
		}
	}
	l.mu.Unlock()

	// c3 leaves: its partitions move to c1 and c2.
	c3.close(t)
	assigned = rdkWaitAssigned(t, []*rdkMember{c1, c2}, parts, []int{6, 6})
	t.Logf("%v: after c3 left: %v", time.Since(start), assigned)
	want = append(want, rdkProduceGroup(t, addr, topic, "second", parts, 300)...)
	poll.Until(t, 40*time.Second, func() error { return l.check(want) })

	// Everyone stops (committing); records arrive meanwhile; a restarted
	// group (auto commit) resumes at the commits.
	c1.close(t)
	c2.close(t)
	want = append(want, rdkProduceGroup(t, addr, topic, "third", parts, 300)...)
	c4 := rdkStartMember(t, addr, group, topic, "c4", "", true, l)
	c5 := rdkStartMember(t, addr, group, topic, "c5", "", true, l)
	poll.Until(t, 40*time.Second, func() error { return l.check(want) })
	rdkWaitAssigned(t, []*rdkMember{c4, c5}, parts, []int{6, 6})
	// Auto commit reaches the end of every partition.
	poll.Until(t, 20*time.Second, func() error {
		var gd groupDescription
		if err := h.describeJSON(&gd, "groups", "describe", group); err != nil {
			return err
		}
		if len(gd.Offsets) != parts {
			return fmt.Errorf("%d partitions in the group's offsets, want %d", len(gd.Offsets), parts)
		}
		for _, o := range gd.Offsets {
			if o.CommittedOffset == nil || o.LogEndOffset == nil || *o.CommittedOffset != *o.LogEndOffset {
				return fmt.Errorf("%s-%d: committed %v, end %v", o.Topic, o.Partition, o.CommittedOffset, o.LogEndOffset)
			}
		}
		return nil
	})
	c4.close(t)
	c5.close(t)
	t.Logf("%v: restarted group resumed at its commits", time.Since(start))

	rdkStaticMembers(t, h, addr, topic, parts)
	t.Logf("%v: static members done", time.Since(start))
	rdkCooperative(t, addr, topic, parts)
	t.Logf("%v: cooperative members done", time.Since(start))
}

// rdkCooperative: three cooperative-sticky members (KIP-429: incremental
// rebalances over the classic JoinGroup/SyncGroup) process every record
// once; when one leaves, only its partitions move: the others keep theirs
// and are revoked nothing.
func rdkCooperative(t *testing.T, addr, topic string, parts int) {
	const group = "rdk-coop"
	l := newRdkLedger()
	var list []*rdkMember
	for _, id := range []string{"k1", "k2", "k3"} {
		list = append(list, rdkStartMemberWith(t, addr, group, topic, id, "", false, "cooperative-sticky", l))
	}
	before := rdkWaitAssigned(t, list, parts, []int{4, 4, 4})
	_, _, r0 := list[0].state()
	_, _, r1 := list[1].state()
	list[2].close(t)
	after := rdkWaitAssigned(t, list[:2], parts, []int{6, 6})
	for i := range 2 {
		for _, p := range before[i] {
			if !slices.Contains(after[i], p) {
				t.Errorf("cooperative member %s lost partition %d when another left: %v -> %v", list[i].name, p, before[i], after[i])
			}
		}
	}
	if _, _, r := list[0].state(); r != r0 {
		t.Errorf("cooperative member k1 revoked %d times when k3 left", r-r0)
	}
	if _, _, r := list[1].state(); r != r1 {
		t.Errorf("cooperative member k2 revoked %d times when k3 left", r-r1)
	}
	// The group read the topic from the start (auto.offset.reset
	// earliest): every record once.
	var want []string
	for _, prefix := range []struct {
		name string
		n    int
	}{{"first", 600}, {"second", 300}, {"third", 300}} {
		for i := range prefix.n {
			want = append(want, fmt.Sprintf("%s-%04d", prefix.name, i))
		}
	}
	poll.Until(t, 40*time.Second, func() error { return l.check(want) })
}

// rdkStaticMembers: three static members (group.instance.id); a
// non-leader one closes (a static member does not leave the group) and a
// new consumer with its instance id joins within session.timeout.ms: it
// gets the same partitions, the others are not revoked, and the
// generation stays. Then the same for the leader.
func rdkStaticMembers(t *testing.T, h *hostProc, addr, topic string, parts int) {
	const group = "rdk-static"
	l := newRdkLedger()
	members := map[string]*rdkMember{}
	var list []*rdkMember
	for _, id := range []string{"s1", "s2", "s3"} {
		members[id] = rdkStartMember(t, addr, group, topic, id, "static-"+id, true, l)
		list = append(list, members[id])
	}
	rdkWaitAssigned(t, list, parts, []int{4, 4, 4})
	var gd groupDescription
	poll.Until(t, 20*time.Second, func() error {
		if err := h.describeJSON(&gd, "groups", "describe", group); err != nil {
			return err
		}
		if gd.State != "Stable" || len(gd.Members) != 3 {
			return fmt.Errorf("group %s %s with %d members", group, gd.State, len(gd.Members))
		}
		return nil
	})
	// Restart a member that is not the leader, then the leader (whose
	// rejoin must not make it reassign the group either).
	for _, leader := range []bool{false, true} {
		var restart string
		for _, m := range gd.Members {
			if (m.MemberID == gd.Leader) == leader {
				restart = strings.TrimPrefix(m.GroupInstanceID, "static-")
				break
			}
		}
		old := members[restart]
		if old == nil {
			t.Fatalf("no static member %q in %+v", restart, gd.Members)
		}
		oldParts, _, _ := old.state()
		others := map[string][2]int{}
		for id, m := range members {
			if id != restart {
				_, a, r := m.state()
				others[id] = [2]int{a, r}
			}
		}
		t.Logf("generation %d; restarting static member %s (leader %v, partitions %v)", gd.Generation, restart, leader, oldParts)
		old.close(t)
		back := rdkStartMember(t, addr, group, topic, restart+"-again", "static-"+restart, true, l)
		members[restart] = back
		poll.Until(t, 5*time.Second, func() error { // well within session.timeout.ms
			if ps, _, _ := back.state(); !slices.Equal(ps, oldParts) {
				return fmt.Errorf("restarted static member %s has %v, had %v", restart, ps, oldParts)
			}
			return nil
		})
		// Give a rebalance, if one were coming, time to show.
		time.Sleep(time.Second)
		for id, was := range others {
			if _, a, r := members[id].state(); a != was[0] || r != was[1] {
				t.Errorf("static member %s: assignments %d revocations %d after %s restarted, were %d and %d", id, a, r, restart, was[0], was[1])
			}
		}
		var after groupDescription
		if err := h.describeJSON(&after, "groups", "describe", group); err != nil {
			t.Fatal(err)
		}
		if after.Generation != gd.Generation || after.State != "Stable" || len(after.Members) != 3 {
			t.Fatalf("after %s restarted: generation %d %s with %d members, was generation %d", restart, after.Generation, after.State, len(after.Members), gd.Generation)
		}
		gd = after
	}
}
