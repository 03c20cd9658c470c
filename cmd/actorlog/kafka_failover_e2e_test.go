// kafka_failover_e2e_test.go: Kafka clients through host failures (issue
// 13, rows 9 and 10), against three real `actorlog host` processes, each
// with its own Kafka listener.
//
// TestKafkaLeaderFailover: for each of franz-go (kgo), librdkafka
// (confluent-kafka-go) and sarama, an idempotent acks=all producer writes
// records with a unique id and a per-key sequence to a topic with
// replication factor 3 and min.insync.replicas=2, while a group consumer of
// the same client reads and commits; the host leading partition 0 is
// SIGKILLed mid-stream. Checked: every acknowledged record is in the log at
// its acknowledged offset, no record is in the log twice, each key's
// sequence only grows, the consumer reads every acknowledged record without
// a gap and never restarts below a commit it made, and the group's commits
// (polled with OffsetFetch) never go backwards, and the consumer commits
// everything it read after the failover. The time from the kill to the
// first acknowledgement through the new leader is logged per client
// ("kafka failover: ..."), with the longest stall of the partition's
// acknowledgements after the kill, beside actorlog's native producer
// measured on the same partition in the same kill (kgo round) and the
// README's native figure. The killed host is
// restarted before the next client's round. ACTORLOG_KAFKA_CLIENT_LOG_DIR
// keeps the sarama and kgo producers' own logs there, for debugging;
// ACTORLOG_KAFKA_FAILOVER_CLIENT=kgo|librdkafka|sarama runs one round only.
//
// TestKafkaCoordinatorFailover: one group of three members, one of each
// client (range assignment, the strategy all three share), commits as it
// consumes; the group coordinator's host is SIGKILLed. Checked: the group
// is Stable again with every partition owned by exactly one member
// (DescribeGroups through a surviving host), commits never go backwards,
// and every member and every partition keeps consuming.

package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/actors/producer"
	"github.com/actorlog/actorlog/internal/poll"
)

// kafkaTrio is three host processes forming one cluster, each with its
// own Kafka listener.
type kafkaTrio struct {
	t     *testing.T
	hosts []*hostProc
	addrs []string // Kafka address of hosts[i]
}

// startKafkaTrio starts three clustered hosts with per-host Kafka
// listeners (as TestKafkaThreeHosts does), stopped at cleanup.
func startKafkaTrio(t *testing.T) *kafkaTrio {
	t.Helper()
	hosts, addrs := startKafkaCluster(t)
	k := &kafkaTrio{t: t, hosts: hosts, addrs: addrs}
	return k
}

// index returns the index of the host whose Kafka listener is host:port.
func (k *kafkaTrio) index(host string, port int32) int {
	k.t.Helper()
	addr := net.JoinHostPort(host, strconv.Itoa(int(port)))
	i := slices.Index(k.addrs, addr)
	if i < 0 {
		k.t.Fatalf("no host has the Kafka address %s (%v)", addr, k.addrs)
	}
	return i
}

// except returns the Kafka addresses of every host but hosts[skip].
func (k *kafkaTrio) except(skip int) []string {
	var out []string
	for i, a := range k.addrs {
		if i != skip {
			out = append(out, a)
		}
	}
	return out
}

// createTopic creates topic (replication factor 3, min.insync.replicas=2)
// through hosts[via] and waits until each partition has a leader and a
// full ISR in Kafka metadata; it returns the metadata.
func (k *kafkaTrio) createTopic(via int, adm *kadm.Client, topic string, partitions int) kadm.TopicDetail {
	k.t.Helper()
	k.hosts[via].mustCLI("", "topics", "create", topic, "--partitions", strconv.Itoa(partitions),
		"--replication-factor", "3", "--config", "min.insync.replicas=2")
	return k.waitFullISR(adm, topic, partitions)
}

// waitFullISR waits until every partition of topic has a leader and an
// ISR of 3 in Kafka metadata.
func (k *kafkaTrio) waitFullISR(adm *kadm.Client, topic string, partitions int) kadm.TopicDetail {
	k.t.Helper()
	var td kadm.TopicDetail
	poll.Until(k.t, 60*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
		td = md.Topics[topic]
		if len(td.Partitions) != partitions {
			return fmt.Errorf("%d partitions of %s, want %d", len(td.Partitions), topic, partitions)
		}
		for _, p := range td.Partitions {
			if p.Err != nil || p.Leader < 0 || len(p.ISR) != 3 {
				return fmt.Errorf("%s-%d: leader %d ISR %v (%v)", topic, p.Partition, p.Leader, p.ISR, p.Err)
			}
		}
		return nil
	})
	return td
}

// leaderIndex returns the index of the host leading partition p of td.
func (k *kafkaTrio) leaderIndex(adm *kadm.Client, td kadm.TopicDetail, p int32) int {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	brokers, err := adm.ListBrokers(ctx)
	if err != nil {
		k.t.Fatalf("list brokers: %v", err)
	}
	leader := td.Partitions[p].Leader
	for _, b := range brokers {
		if b.NodeID == leader {
			return k.index(b.Host, b.Port)
		}
	}
	k.t.Fatalf("leader %d of %s-%d not among the brokers %v", leader, td.Topic, p, brokers)
	return -1
}

// foAdmin returns a kadm client seeded with addrs, closed at cleanup.
func foAdmin(t *testing.T, addrs ...string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.MetadataMinAge(100*time.Millisecond), kgo.RequestTimeoutOverhead(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// foAck is one acknowledged record.
type foAck struct {
	partition int32
	offset    int64
	value     string
	at        time.Time
}

// foRecord is a record's value parsed: "<id>|<key>|<seq>".
type foRecord struct {
	id, key string
	seq     int
}

func foValue(id, key string, seq int) string { return id + "|" + key + "|" + strconv.Itoa(seq) }

func parseFoValue(v string) (foRecord, bool) {
	f := strings.Split(v, "|")
	if len(f) != 3 {
		return foRecord{}, false
	}
	seq, err := strconv.Atoi(f[2])
	if err != nil {
		return foRecord{}, false
	}
	return foRecord{id: f[0], key: f[1], seq: seq}, true
}

// foRound is what one client's round saw: acknowledgements, failures,
// consumption and commits, with the consumer-side checks done as records
// arrive.
type foRound struct {
	name  string
	topic string
	// shared: one of several members of a group, whose partitions move
	// between members: the per-partition order checks do not apply.
	shared bool

	mu         sync.Mutex
	acks       []foAck          // the Kafka client's, in acknowledgement order
	native     []foAck          // the native producer's
	acked      map[string]foAck // by value, both producers
	failures   []error          // produce failures
	seen       map[string]bool  // values consumed
	atOffset   map[int32]map[int64]string
	last       map[int32]int64 // last offset consumed, per partition
	commit     map[int32]int64 // highest commit known made, per partition
	observed   map[int32]int64 // highest commit OffsetFetch returned
	violations []string
	// clientErrs are the last errors the clients reported while retrying
	// (shown when a check fails).
	clientErrs []string
	consumed   int
	commits    int
}

func newFoRound(name, topic string) *foRound {
	return &foRound{name: name, topic: topic, acked: map[string]foAck{}, seen: map[string]bool{},
		atOffset: map[int32]map[int64]string{}, last: map[int32]int64{}, commit: map[int32]int64{}, observed: map[int32]int64{}}
}

func (r *foRound) violate(format string, args ...any) {
	if len(r.violations) < 20 {
		r.violations = append(r.violations, fmt.Sprintf(format, args...))
	}
}

// ack records an acknowledgement of the Kafka client (native false) or of
// the native producer.
func (r *foRound) ack(p int32, off int64, value string, native bool) {
	a := foAck{partition: p, offset: off, value: value, at: time.Now()}
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, dup := r.acked[value]; dup {
		r.violate("%s acknowledged twice: %s-%d@%d and @%d", value, r.topic, p, prev.offset, off)
	}
	r.acked[value] = a
	if native {
		r.native = append(r.native, a)
	} else {
		r.acks = append(r.acks, a)
	}
}

// note keeps an error a client reported and retried.
func (r *foRound) note(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.clientErrs) == 20 { // the first 10 and the last 10
		r.clientErrs = append(r.clientErrs[:10], r.clientErrs[11:]...)
	}
	r.clientErrs = append(r.clientErrs, time.Now().Format("15:04:05.000 ")+err.Error())
}

func (r *foRound) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.failures) < 20 {
		r.failures = append(r.failures, err)
	}
}

// consume checks one delivered record: no gap after the last one of its
// partition, not below a commit made, the same record wherever an offset
// is read again.
func (r *foRound) consume(p int32, off int64, value string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.consumed++
	last, ok := r.last[p]
	if !ok {
		last = -1
	}
	if off > last+1 && !r.shared {
		r.violate("%s-%d: offset %d consumed after %d: a gap", r.topic, p, off, last)
	}
	if c := max(r.commit[p], r.observed[p]); off < c && !r.shared {
		r.violate("%s-%d: offset %d consumed after offset %d was committed", r.topic, p, off, c)
	}
	if r.atOffset[p] == nil {
		r.atOffset[p] = map[int64]string{}
	}
	if v, ok := r.atOffset[p][off]; ok && v != value {
		r.violate("%s-%d offset %d read as %q, earlier as %q", r.topic, p, off, value, v)
	}
	r.atOffset[p][off] = value
	r.last[p] = off
	r.seen[value] = true
}

// committed records a commit of next offset off for p that the client
// reported successful.
func (r *foRound) committed(p int32, off int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.commits++
	r.commit[p] = max(r.commit[p], off)
}

// observe records a committed offset OffsetFetch returned: it never goes
// backwards.
func (r *foRound) observe(p int32, off int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, ok := r.observed[p]; ok && off < prev {
		r.violate("%s-%d: committed offset went back from %d to %d", r.topic, p, prev, off)
	}
	r.observed[p] = max(r.observed[p], off)
}

// watchCommits polls the group's committed offsets through addrs until
// ctx ends. After a failed poll it starts over with a new client: kgo keeps
// a group's coordinator cached through dial errors of sharded requests
// (OffsetFetch, DescribeGroups), so a client that learnt of a coordinator
// that then died would keep dialing it.
func (r *foRound) watchCommits(ctx context.Context, addrs []string, group string) {
	var cl *kgo.Client
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	for ctx.Err() == nil {
		if cl == nil {
			var err error
			if cl, err = kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.MetadataMinAge(100*time.Millisecond)); err != nil {
				r.note(fmt.Errorf("offset fetch client: %w", err))
				return
			}
		}
		fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		res, err := kadm.NewClient(cl).FetchOffsets(fctx, group)
		cancel()
		if err != nil {
			r.note(fmt.Errorf("offset fetch: %w", err))
			cl.Close()
			cl = nil
		} else {
			res.Each(func(o kadm.OffsetResponse) {
				switch {
				case o.Err != nil:
					r.note(fmt.Errorf("offset fetch %s-%d: %w", o.Topic, o.Partition, o.Err))
				case o.Topic == r.topic && o.At >= 0:
					r.observe(o.Partition, o.At)
				}
			})
		}
		select {
		case <-ctx.Done():
		case <-time.After(150 * time.Millisecond):
		}
	}
}

// counts returns the Kafka client's acknowledgements, those of partition p
// after t0, and how many records were consumed.
func (r *foRound) counts(p int32, t0 time.Time) (acks, after, consumed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.acks {
		if a.partition == p && a.at.After(t0) {
			after++
		}
	}
	return len(r.acks), after, r.consumed
}

// foDrainSlack is how long after a kill acknowledgements may still be
// answers the dead host sent before it died, drained from the client's
// socket: a new leader cannot be in place that soon (a dead host is noticed
// after two refused dials 400 ms apart, at the earliest).
const foDrainSlack = 100 * time.Millisecond

// foRecovery returns when writes to partition p succeeded again after the
// kill at t0: the first acknowledgement of p later than t0 + foDrainSlack.
// ok is false when there is none yet.
func foRecovery(acks []foAck, p int32, t0 time.Time) (at time.Time, ok bool) {
	for _, a := range acks {
		if a.partition == p && a.at.After(t0.Add(foDrainSlack)) {
			return a.at, true
		}
	}
	return time.Time{}, false
}

// foLongestStall returns the longest time partition p went without an
// acknowledgement between t0 and its last one.
func foLongestStall(acks []foAck, p int32, t0 time.Time) time.Duration {
	prev, stall := t0, time.Duration(0)
	for _, a := range acks {
		if a.partition != p || !a.at.After(t0) {
			continue
		}
		stall = max(stall, a.at.Sub(prev))
		prev = a.at
	}
	return stall
}

// allConsumed reports whether every acknowledged record was consumed, and
// how many were not.
func (r *foRound) allConsumed() (bool, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	missing := 0
	for v := range r.acked {
		if !r.seen[v] {
			missing++
		}
	}
	return missing == 0, missing
}

// committedAll reports a partition whose committed offset (as OffsetFetch
// returns it) is not past the last record consumed from it.
func (r *foRound) committedAll() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for p, offs := range r.atOffset {
		end := int64(-1)
		for off := range offs {
			end = max(end, off)
		}
		if r.observed[p] <= end {
			return fmt.Errorf("%s: %s-%d consumed up to %d, committed %d; last client errors: %v", r.name, r.topic, p, end, r.observed[p], r.clientErrs)
		}
	}
	return nil
}

// check fails the test on a violation seen while the round ran.
func (r *foRound) check(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.violations) > 0 {
		t.Fatalf("%s: %d violations, first: %s; last client errors: %v", r.name, len(r.violations), strings.Join(r.violations, "; "), r.clientErrs)
	}
}

// verifyLog reads topic from the start to its end through addrs and
// checks that every acknowledged record is at its acknowledged offset, no
// record is written twice, and each key's sequence grows in its
// partition.
func (r *foRound) verifyLog(t *testing.T, addrs []string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(r.topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, r.topic)
	if err != nil {
		t.Fatalf("list end offsets of %s: %v", r.topic, err)
	}
	end := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { end[o.Partition] = o.Offset })
	r.mu.Lock()
	acked := maps.Clone(r.acked)
	r.mu.Unlock()
	for _, a := range acked {
		if a.offset >= end[a.partition] {
			t.Fatalf("%s: %s acknowledged at %s-%d@%d, past the end offset %d", r.name, a.value, r.topic, a.partition, a.offset, end[a.partition])
		}
	}
	next := map[int32]int64{}
	written := map[string]int64{}
	seq := map[string]int{} // key -> last sequence
	found := 0
	for {
		done := true
		for p, e := range end {
			if next[p] < e {
				done = false
			}
		}
		if done {
			break
		}
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s: read %s up to %v, got to %v: %v", r.name, r.topic, end, next, ctx.Err())
		}
		fs.EachRecord(func(rec *kgo.Record) {
			if rec.Offset != next[rec.Partition] {
				t.Fatalf("%s: %s-%d offset %d read after %d", r.name, r.topic, rec.Partition, rec.Offset, next[rec.Partition]-1)
			}
			next[rec.Partition] = rec.Offset + 1
			v := string(rec.Value)
			if off, dup := written[v]; dup {
				t.Fatalf("%s: %q written twice in %s-%d, at %d and %d", r.name, v, r.topic, rec.Partition, off, rec.Offset)
			}
			written[v] = rec.Offset
			if a, ok := acked[v]; ok {
				if a.partition != rec.Partition || a.offset != rec.Offset {
					t.Fatalf("%s: %q acknowledged at %s-%d@%d, in the log at %d@%d", r.name, v, r.topic, a.partition, a.offset, rec.Partition, rec.Offset)
				}
				found++
			}
			if fr, ok := parseFoValue(v); ok {
				if string(rec.Key) != fr.key {
					t.Fatalf("%s: %q has key %q", r.name, v, rec.Key)
				}
				if last, ok := seq[fr.key]; ok && fr.seq <= last {
					t.Fatalf("%s: key %s: sequence %d after %d in %s-%d@%d", r.name, fr.key, fr.seq, last, r.topic, rec.Partition, rec.Offset)
				}
				seq[fr.key] = fr.seq
			}
		})
	}
	if found != len(acked) {
		t.Fatalf("%s: %d of %d acknowledged records found in %s", r.name, found, len(acked), r.topic)
	}
	return len(written)
}

// foDur formats a measured duration, "not measured" for a negative one.
func foDur(d time.Duration) string {
	if d < 0 {
		return "not measured"
	}
	return d.Round(10 * time.Millisecond).String()
}

// foClient is one Kafka client library under test: an idempotent acks=all
// producer and a group consumer that commits as it consumes, both
// reporting to a round.
type foClient struct {
	name        string
	newProducer func(t *testing.T, addrs []string, r *foRound) (foProducer, error)
	newConsumer func(t *testing.T, addrs []string, topic, group, member string, r *foRound) (io.Closer, error)
}

// foProducer produces records asynchronously; close flushes and waits.
type foProducer interface {
	produce(topic, key, value string) error
	close(ctx context.Context) error
}

var foClients = []foClient{
	{name: "kgo", newProducer: newKgoFoProducer, newConsumer: newKgoFoConsumer},
	{name: "librdkafka", newProducer: newRdFoProducer, newConsumer: newRdFoConsumer},
	{name: "sarama", newProducer: newSaramaFoProducer, newConsumer: newSaramaFoConsumer},
}

func TestKafkaLeaderFailover(t *testing.T) {
	k := startKafkaTrio(t)
	adm := foAdmin(t, k.addrs...)
	var summary []string
	native := time.Duration(-1)
	for i, c := range foClients {
		if only := os.Getenv("ACTORLOG_KAFKA_FAILOVER_CLIENT"); only != "" && only != c.name {
			continue // one client only, when debugging
		}
		took, nat := k.failoverRound(t, adm, c, i == 0)
		summary = append(summary, fmt.Sprintf("%s %v", c.name, took.Round(10*time.Millisecond)))
		if nat >= 0 {
			native = nat
		}
	}
	t.Logf("kafka failover: acks=all writes to the killed leader's partition acknowledged again after: %s; native producer in the same kill: %s "+
		"(README: native median 2.27 s, max 2.60 s over the long fault runs' 200 leader kills)",
		strings.Join(summary, ", "), foDur(native))
}

// failoverRound runs one client's round (see the file comment) and
// returns the client's failover time and, with withNative, the native
// producer's in the same kill (else -1).
func (k *kafkaTrio) failoverRound(t *testing.T, adm *kadm.Client, c foClient, withNative bool) (time.Duration, time.Duration) {
	t.Helper()
	const hot = int32(0)
	topic, group := "failover-"+c.name, "failover-group-"+c.name
	td := k.createTopic(0, adm, topic, 3)
	victim := k.leaderIndex(adm, td, hot)
	r := newFoRound(c.name, topic)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var bg sync.WaitGroup
	defer bg.Wait()
	defer cancel()
	bg.Add(1)
	go func() {
		defer bg.Done()
		r.watchCommits(ctx, k.addrs, group)
	}()
	cons, err := c.newConsumer(t, k.addrs, topic, group, c.name+"-consumer", r)
	if err != nil {
		t.Fatalf("%s consumer: %v", c.name, err)
	}
	consOpen := true
	defer func() {
		if consOpen {
			if err := cons.Close(); err != nil {
				t.Logf("%s consumer close: %v", c.name, err)
			}
		}
	}()
	prod, err := c.newProducer(t, k.addrs, r)
	if err != nil {
		t.Fatalf("%s producer: %v", c.name, err)
	}
	// The producers stop (pstop, then wait for producing) before the
	// Kafka producer closes: sarama's input channel must not be written
	// once it is closed.
	pctx, pstop := context.WithCancel(ctx)
	var producing sync.WaitGroup
	prodOpen := true
	defer func() {
		pstop()
		producing.Wait()
		if prodOpen {
			cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer ccancel()
			if err := prod.close(cctx); err != nil {
				t.Logf("%s producer close: %v", c.name, err)
			}
		}
	}()

	// The producer: 16 keys, one record every 2 ms until stopped.
	var produced atomic.Int64
	producing.Add(1)
	go func() {
		defer producing.Done()
		seqs := map[string]int{}
		for i := 0; pctx.Err() == nil; i++ {
			key := fmt.Sprintf("key-%02d", i%16)
			v := foValue(fmt.Sprintf("%s-%06d", c.name, i), key, seqs[key])
			seqs[key]++
			if err := prod.produce(topic, key, v); err != nil {
				r.fail(fmt.Errorf("produce %s: %w", v, err))
				return
			}
			produced.Add(1)
			time.Sleep(2 * time.Millisecond)
		}
	}()
	// The native producer, on the same partition: sequential blocking
	// sends, so an acknowledgement after the kill is a write through the
	// new leader.
	if withNative {
		nc := newClient(t, k.hosts[0].addr(), k.hosts[1].addr(), k.hosts[2].addr())
		np, err := producer.New(nc, producer.ActorConfig{})
		if err != nil {
			t.Fatal(err)
		}
		producing.Add(1)
		go func() {
			defer producing.Done()
			defer func() {
				cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer ccancel()
				if err := np.Close(cctx); err != nil {
					r.fail(fmt.Errorf("close the native producer: %w", err))
				}
			}()
			for i := 0; pctx.Err() == nil; i++ {
				v := fmt.Sprintf("native-%06d", i)
				off, err := np.Produce(ctx, producer.Send{Topic: topic, Partition: hot, Value: []byte(v)})
				if err != nil {
					if ctx.Err() == nil {
						r.fail(fmt.Errorf("native produce %s: %w", v, err))
					}
					return
				}
				r.ack(hot, off, v, true)
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}

	// Mid-stream: the producer is acknowledged and the consumer reads.
	poll.Until(t, 60*time.Second, func() error {
		acks, hotAcks, consumed := r.counts(hot, time.Time{})
		if acks < 1000 || hotAcks < 100 || consumed < 500 {
			return fmt.Errorf("%s: %d acknowledged (%d in partition %d), %d consumed; want 1000, 100 and 500 before the kill (failures %v)",
				c.name, acks, hotAcks, hot, consumed, r.failures)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.observed) != 3 {
			return fmt.Errorf("%s: commits of %d partitions seen; want all 3 committed before the kill", c.name, len(r.observed))
		}
		return nil
	})
	if code := k.hosts[victim].stop(syscall.SIGKILL); code != -int(syscall.SIGKILL) {
		t.Fatalf("host exit %d, want killed", code)
	}
	killed := time.Now()
	// Writes to the partition succeed again, then keep going a while.
	poll.Until(t, 90*time.Second, func() error {
		r.mu.Lock()
		at, ok := foRecovery(r.acks, hot, killed)
		r.mu.Unlock()
		_, after, _ := r.counts(hot, at)
		if !ok || after < 100 {
			return fmt.Errorf("%s: %d acknowledgements in partition %d after it recovered (%v after the kill); failures %v", c.name, after, hot, at.Sub(killed), r.failures)
		}
		return nil
	})
	pstop()
	producing.Wait()
	cctx, ccancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer ccancel()
	prodOpen = false
	if err := prod.close(cctx); err != nil {
		t.Fatalf("%s: close the producer: %v", c.name, err)
	}
	r.mu.Lock()
	failures := slices.Clone(r.failures)
	kafkaAcks := len(r.acks)
	took := time.Duration(-1)
	if at, ok := foRecovery(r.acks, hot, killed); ok {
		took = at.Sub(killed)
	}
	nativeTook := time.Duration(-1)
	if at, ok := foRecovery(r.native, hot, killed); ok {
		nativeTook = at.Sub(killed)
	}
	stall := foLongestStall(r.acks, hot, killed)
	r.mu.Unlock()
	if len(failures) > 0 {
		t.Fatalf("%s: %d of %d records failed, first: %v", c.name, len(failures), produced.Load(), failures)
	}
	if int64(kafkaAcks) != produced.Load() {
		t.Fatalf("%s: %d of %d records acknowledged after the producer closed", c.name, kafkaAcks, produced.Load())
	}
	// The consumer reads every acknowledged record.
	poll.Until(t, 60*time.Second, func() error {
		if ok, missing := r.allConsumed(); !ok {
			return fmt.Errorf("%s: %d acknowledged records not consumed yet", c.name, missing)
		}
		return nil
	})
	// ... and commits it all: commits resumed after the failover.
	poll.Until(t, 60*time.Second, func() error { return r.committedAll() })
	consOpen = false
	if err := cons.Close(); err != nil {
		t.Logf("%s consumer close: %v", c.name, err)
	}
	cancel()
	bg.Wait()
	r.check(t)
	inLog := r.verifyLog(t, k.except(victim))
	t.Logf("%s: host%d (leader of %s-%d) SIGKILLed; %d records acknowledged (%d native), %d in the log, %d consumed; first ack through the new leader after %v (native %s), longest stall of the partition's acks after the kill %v",
		c.name, victim+1, topic, hot, kafkaAcks, len(r.native), inLog, r.consumed, took.Round(10*time.Millisecond), foDur(nativeTook), stall.Round(10*time.Millisecond))
	if took <= 0 {
		t.Fatalf("%s: no failover time measured", c.name)
	}

	// The killed host comes back for the next round.
	k.hosts[victim].start()
	k.waitFullISR(adm, topic, 3)
	return took, nativeTook
}

// --- franz-go (kgo) ---

type kgoFoProducer struct {
	cl *kgo.Client
	r  *foRound
}

func newKgoFoProducer(t *testing.T, addrs []string, r *foRound) (foProducer, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(addrs...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MetadataMinAge(100 * time.Millisecond),
		kgo.ProducerLinger(5 * time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond })}
	if f := foClientLog(fmt.Sprintf("kgo-producer-%s.log", r.topic)); f != nil {
		opts = append(opts, kgo.WithLogger(kgo.BasicLogger(f, kgo.LogLevelDebug, func() string { return time.Now().Format("15:04:05.000000 ") })))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kgo producer: %w", err)
	}
	return &kgoFoProducer{cl: cl, r: r}, nil
}

func (p *kgoFoProducer) produce(topic, key, value string) error {
	p.cl.Produce(context.Background(), &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(value)}, func(rec *kgo.Record, err error) {
		if err != nil {
			p.r.fail(fmt.Errorf("kgo: %s: %w", rec.Value, err))
			return
		}
		p.r.ack(rec.Partition, rec.Offset, string(rec.Value), false)
	})
	return nil
}

func (p *kgoFoProducer) close(ctx context.Context) error {
	defer p.cl.Close()
	if err := p.cl.Flush(ctx); err != nil {
		return fmt.Errorf("kgo flush: %w", err)
	}
	return nil
}

// kgoFoConsumer consumes in a group and commits each poll's records
// synchronously.
type kgoFoConsumer struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

func newKgoFoConsumer(t *testing.T, addrs []string, topic, group, member string, r *foRound) (io.Closer, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ClientID(member),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.Balancers(kgo.RangeBalancer()),
		kgo.FetchMaxWait(300*time.Millisecond), kgo.MetadataMinAge(100*time.Millisecond), kgo.SessionTimeout(10*time.Second),
		kgo.HeartbeatInterval(time.Second), kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	if err != nil {
		return nil, fmt.Errorf("kgo consumer: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &kgoFoConsumer{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			var recs []*kgo.Record
			fs.EachRecord(func(rec *kgo.Record) {
				r.consume(rec.Partition, rec.Offset, string(rec.Value))
				recs = append(recs, rec)
			})
			if len(recs) == 0 {
				continue
			}
			next := map[int32]int64{}
			for _, rec := range recs {
				next[rec.Partition] = max(next[rec.Partition], rec.Offset+1)
			}
			cctx, ccancel := context.WithTimeout(ctx, 15*time.Second)
			err := cl.CommitRecords(cctx, recs...)
			ccancel()
			if err != nil {
				r.note(fmt.Errorf("kgo commit: %w", err))
				continue
			}
			for p, off := range next {
				r.committed(p, off)
			}
		}
	}()
	return c, nil
}

func (c *kgoFoConsumer) Close() error {
	c.cancel()
	<-c.done
	c.cl.Close()
	return nil
}

// --- librdkafka (confluent-kafka-go) ---

type rdFoProducer struct {
	p    *ckafka.Producer
	done chan struct{}
}

func newRdFoProducer(t *testing.T, addrs []string, r *foRound) (foProducer, error) {
	p, err := ckafka.NewProducer(&ckafka.ConfigMap{
		"bootstrap.servers":                  strings.Join(addrs, ","),
		"enable.idempotence":                 true,
		"acks":                               "all",
		"linger.ms":                          5,
		"retry.backoff.ms":                   100,
		"reconnect.backoff.ms":               100,
		"reconnect.backoff.max.ms":           500,
		"topic.metadata.refresh.interval.ms": 1000,
		"message.timeout.ms":                 90000,
		"log_level":                          2, // connection refusals of the killed host are expected
	})
	if err != nil {
		return nil, fmt.Errorf("librdkafka producer: %w", err)
	}
	rp := &rdFoProducer{p: p, done: make(chan struct{})}
	go func() {
		defer close(rp.done)
		for ev := range p.Events() {
			switch e := ev.(type) {
			case *ckafka.Message:
				if e.TopicPartition.Error != nil {
					r.fail(fmt.Errorf("librdkafka: %s: %w", e.Value, e.TopicPartition.Error))
					continue
				}
				r.ack(e.TopicPartition.Partition, int64(e.TopicPartition.Offset), string(e.Value), false)
			case ckafka.Error:
				if e.IsFatal() {
					r.fail(fmt.Errorf("librdkafka fatal error: %w", e))
				}
			}
		}
	}()
	return rp, nil
}

func (p *rdFoProducer) produce(topic, key, value string) error {
	for {
		err := p.p.Produce(&ckafka.Message{TopicPartition: ckafka.TopicPartition{Topic: &topic, Partition: ckafka.PartitionAny},
			Key: []byte(key), Value: []byte(value)}, nil)
		var kerr ckafka.Error
		if errors.As(err, &kerr) && kerr.Code() == ckafka.ErrQueueFull {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if err != nil {
			return fmt.Errorf("librdkafka produce: %w", err)
		}
		return nil
	}
}

func (p *rdFoProducer) close(ctx context.Context) error {
	ms := 60000
	if dl, ok := ctx.Deadline(); ok {
		ms = int(time.Until(dl).Milliseconds())
	}
	left := p.p.Flush(ms)
	p.p.Close() // closes Events: the reader ends
	<-p.done
	if left > 0 {
		return fmt.Errorf("librdkafka: %d records still unacknowledged after the flush", left)
	}
	return nil
}

// rdFoConsumer polls in a group and commits what it read every 100 ms.
type rdFoConsumer struct {
	c    *ckafka.Consumer
	stop atomic.Bool
	done chan struct{}
}

func newRdFoConsumer(t *testing.T, addrs []string, topic, group, member string, r *foRound) (io.Closer, error) {
	c, err := ckafka.NewConsumer(&ckafka.ConfigMap{
		"bootstrap.servers":                  strings.Join(addrs, ","),
		"group.id":                           group,
		"client.id":                          member,
		"auto.offset.reset":                  "earliest",
		"enable.auto.commit":                 false,
		"partition.assignment.strategy":      "range",
		"session.timeout.ms":                 10000,
		"heartbeat.interval.ms":              1000,
		"fetch.wait.max.ms":                  300,
		"reconnect.backoff.ms":               100,
		"reconnect.backoff.max.ms":           500,
		"topic.metadata.refresh.interval.ms": 1000,
		"log_level":                          2,
	})
	if err != nil {
		return nil, fmt.Errorf("librdkafka consumer: %w", err)
	}
	if err := c.SubscribeTopics([]string{topic}, nil); err != nil {
		c.Close()
		return nil, fmt.Errorf("librdkafka subscribe: %w", err)
	}
	rc := &rdFoConsumer{c: c, done: make(chan struct{})}
	go func() {
		defer close(rc.done)
		next := map[int32]int64{}
		lastCommit := time.Now()
		for !rc.stop.Load() {
			switch e := c.Poll(100).(type) {
			case *ckafka.Message:
				if e.TopicPartition.Error != nil {
					continue
				}
				r.consume(e.TopicPartition.Partition, int64(e.TopicPartition.Offset), string(e.Value))
				next[e.TopicPartition.Partition] = int64(e.TopicPartition.Offset) + 1
			case ckafka.AssignedPartitions, ckafka.RevokedPartitions:
				clear(next) // a new assignment: commit only what is read from now on
			}
			if len(next) == 0 || time.Since(lastCommit) < 100*time.Millisecond {
				continue
			}
			lastCommit = time.Now()
			var tps []ckafka.TopicPartition
			for p, off := range next {
				tps = append(tps, ckafka.TopicPartition{Topic: &topic, Partition: p, Offset: ckafka.Offset(off)})
			}
			done, err := c.CommitOffsets(tps)
			if err != nil {
				r.note(fmt.Errorf("librdkafka commit: %w", err))
				continue
			}
			for _, tp := range done {
				if tp.Error == nil {
					r.committed(tp.Partition, int64(tp.Offset))
				}
			}
			clear(next)
		}
	}()
	return rc, nil
}

func (c *rdFoConsumer) Close() error {
	c.stop.Store(true)
	<-c.done
	if err := c.c.Close(); err != nil {
		return fmt.Errorf("librdkafka consumer close: %w", err)
	}
	return nil
}

// --- sarama ---

// foClientLog returns a file named name in ACTORLOG_KAFKA_CLIENT_LOG_DIR
// for a client library's own log, or nil when the variable is not set (or
// the file cannot be created): a debugging aid.
func foClientLog(name string) *os.File {
	dir := os.Getenv("ACTORLOG_KAFKA_CLIENT_LOG_DIR")
	if dir == "" {
		return nil
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return nil
	}
	return f
}

func init() {
	if f := foClientLog("sarama.log"); f != nil {
		sarama.Logger = log.New(f, "", log.Lmicroseconds)
	}
}

func saramaFoConfig(client string) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.ClientID = client
	cfg.Version = sarama.V3_0_0_0
	cfg.Metadata.RefreshFrequency = time.Second
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	cfg.Metadata.Retry.Max = 100
	return cfg
}

type saramaFoProducer struct {
	p    sarama.AsyncProducer
	done chan struct{}
}

func newSaramaFoProducer(t *testing.T, addrs []string, r *foRound) (foProducer, error) {
	cfg := saramaFoConfig("sarama-producer")
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Net.MaxOpenRequests = 1 // sarama's rule for idempotence
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Producer.Retry.Max = 300
	cfg.Producer.Retry.Backoff = 100 * time.Millisecond
	cfg.Producer.Flush.Frequency = 5 * time.Millisecond
	p, err := sarama.NewAsyncProducer(addrs, cfg)
	if err != nil {
		return nil, fmt.Errorf("sarama producer: %w", err)
	}
	sp := &saramaFoProducer{p: p, done: make(chan struct{})}
	go func() {
		defer close(sp.done)
		succ, errs := p.Successes(), p.Errors()
		for succ != nil || errs != nil {
			select {
			case m, ok := <-succ:
				if !ok {
					succ = nil
					continue
				}
				r.ack(m.Partition, m.Offset, string(m.Value.(sarama.StringEncoder)), false)
			case e, ok := <-errs:
				if !ok {
					errs = nil
					continue
				}
				r.fail(fmt.Errorf("sarama: %v: %w", e.Msg.Value, e.Err))
			}
		}
	}()
	return sp, nil
}

func (p *saramaFoProducer) produce(topic, key, value string) error {
	p.p.Input() <- &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(key), Value: sarama.StringEncoder(value)}
	return nil
}

func (p *saramaFoProducer) close(ctx context.Context) error {
	p.p.AsyncClose() // sends what is buffered, then closes the channels
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sarama producer close: %w", ctx.Err())
	}
}

// saramaFoConsumer consumes in a group, marking each record and
// committing every 100 ms.
type saramaFoConsumer struct {
	cg     sarama.ConsumerGroup
	cancel context.CancelFunc
	done   chan struct{}
}

type saramaFoHandler struct {
	r  *foRound
	wg sync.WaitGroup // the session's committer
}

func (h *saramaFoHandler) Setup(sess sarama.ConsumerGroupSession) error {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-sess.Context().Done():
				return
			case <-tick.C:
				sess.Commit()
			}
		}
	}()
	return nil
}

func (h *saramaFoHandler) Cleanup(sess sarama.ConsumerGroupSession) error {
	h.wg.Wait()
	return nil
}

func (h *saramaFoHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			h.r.consume(m.Partition, m.Offset, string(m.Value))
			sess.MarkMessage(m, "")
		case <-sess.Context().Done():
			return nil
		}
	}
}

func newSaramaFoConsumer(t *testing.T, addrs []string, topic, group, member string, r *foRound) (io.Closer, error) {
	cfg := saramaFoConfig(member)
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	cfg.Consumer.Group.Session.Timeout = 10 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = time.Second
	cfg.Consumer.MaxWaitTime = 300 * time.Millisecond
	cfg.Consumer.Retry.Backoff = 100 * time.Millisecond
	cg, err := sarama.NewConsumerGroup(addrs, group, cfg)
	if err != nil {
		return nil, fmt.Errorf("sarama consumer group: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &saramaFoConsumer{cg: cg, cancel: cancel, done: make(chan struct{})}
	go func() {
		for err := range cg.Errors() { // retried by sarama; the checks are on what is consumed
			r.note(fmt.Errorf("sarama consumer group: %w", err))
		}
	}()
	go func() {
		defer close(c.done)
		h := &saramaFoHandler{r: r}
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, h); err != nil && ctx.Err() == nil {
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	return c, nil
}

func (c *saramaFoConsumer) Close() error {
	c.cancel()
	<-c.done
	if err := c.cg.Close(); err != nil {
		return fmt.Errorf("sarama consumer group close: %w", err)
	}
	return nil
}

func TestKafkaCoordinatorFailover(t *testing.T) {
	const topic, group, parts = "coord-failover", "coord-group", 6
	k := startKafkaTrio(t)
	adm := foAdmin(t, k.addrs...)
	k.createTopic(0, adm, topic, parts)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var bg sync.WaitGroup
	defer bg.Wait()
	defer cancel()
	// The group's commits, polled: they never go backwards.
	w := newFoRound("offset-fetch", topic)
	bg.Add(1)
	go func() {
		defer bg.Done()
		w.watchCommits(ctx, k.addrs, group)
	}()
	// A kgo producer keeps every partition fed.
	pr := newFoRound("producer", topic)
	prod, err := newKgoFoProducer(t, k.addrs, pr)
	if err != nil {
		t.Fatal(err)
	}
	var producing sync.WaitGroup
	pctx, pstop := context.WithCancel(ctx)
	producing.Add(1)
	go func() {
		defer producing.Done()
		for i := 0; pctx.Err() == nil; i++ {
			key := fmt.Sprintf("key-%02d", i%24)
			if err := prod.produce(topic, key, foValue(fmt.Sprintf("coord-%06d", i), key, i)); err != nil {
				pr.fail(err)
				return
			}
			time.Sleep(3 * time.Millisecond)
		}
	}()
	defer func() {
		pstop()
		producing.Wait()
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		if err := prod.close(cctx); err != nil {
			t.Logf("producer close: %v", err)
		}
	}()
	// One member of each client, in one group.
	members := make([]*foRound, len(foClients))
	for i, c := range foClients {
		members[i] = newFoRound(c.name, topic)
		members[i].shared = true
		m, err := c.newConsumer(t, k.addrs, topic, group, c.name+"-member", members[i])
		if err != nil {
			t.Fatalf("%s member: %v", c.name, err)
		}
		defer func() {
			if err := m.Close(); err != nil {
				t.Logf("%s member close: %v", c.name, err)
			}
		}()
	}
	consumedBy := func() []int {
		var n []int
		for _, m := range members {
			m.mu.Lock()
			n = append(n, m.consumed)
			m.mu.Unlock()
		}
		return n
	}
	// balanced: the group is Stable, has the three members and each
	// partition is owned by exactly one of them; the coordinator is not
	// host index not.
	balanced := func(addrs []string, not int) error {
		// A new client each time: see watchCommits.
		cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
		if err != nil {
			return fmt.Errorf("describe %s: %w", group, err)
		}
		defer cl.Close()
		dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
		defer dcancel()
		dg, err := kadm.NewClient(cl).DescribeGroups(dctx, group)
		if err != nil {
			return fmt.Errorf("describe %s: %w", group, err)
		}
		g := dg[group]
		if g.Err != nil {
			return fmt.Errorf("describe %s: %w", group, g.Err)
		}
		if not >= 0 && net.JoinHostPort(g.Coordinator.Host, strconv.Itoa(int(g.Coordinator.Port))) == k.addrs[not] {
			return fmt.Errorf("%s still coordinated by the killed host %d", group, not+1)
		}
		if g.State != "Stable" || len(g.Members) != len(foClients) {
			return fmt.Errorf("%s: state %s, %d members", group, g.State, len(g.Members))
		}
		owners := map[int32][]string{}
		for _, m := range g.Members {
			a, ok := m.Assigned.AsConsumer()
			if !ok {
				return fmt.Errorf("%s: member %s has no consumer assignment", group, m.ClientID)
			}
			for _, at := range a.Topics {
				for _, p := range at.Partitions {
					owners[p] = append(owners[p], m.ClientID)
				}
			}
		}
		for p := int32(0); p < parts; p++ {
			if len(owners[p]) != 1 {
				return fmt.Errorf("%s: partition %d owned by %v", group, p, owners[p])
			}
		}
		if len(owners) != parts {
			return fmt.Errorf("%s: owners %v", group, owners)
		}
		return nil
	}
	// observedAbove reports a partition whose observed commit is not above
	// before's.
	observedAbove := func(before map[int32]int64) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		for p := int32(0); p < parts; p++ {
			if now, ok := w.observed[p]; !ok || now <= before[p] {
				return fmt.Errorf("partition %d: committed offset %d (was %d)", p, now, before[p])
			}
		}
		return nil
	}
	poll.Until(t, 60*time.Second, func() error {
		if err := balanced(k.addrs, -1); err != nil {
			return err
		}
		if err := observedAbove(map[int32]int64{}); err != nil {
			return fmt.Errorf("before the kill: %w", err)
		}
		for i, n := range consumedBy() {
			if n == 0 {
				return fmt.Errorf("%s consumed nothing yet", foClients[i].name)
			}
		}
		return nil
	})
	fctx, fcancel := context.WithTimeout(ctx, 10*time.Second)
	fc := adm.FindGroupCoordinators(fctx, group)
	fcancel()
	co, ok := fc[group]
	if !ok || co.Err != nil {
		t.Fatalf("find the coordinator of %s: %+v", group, fc)
	}
	victim := k.index(co.Host, co.Port)
	// Node id = host id: the host `cluster describe` gives that id is the
	// one at the coordinator's Kafka address.
	if h := hostByID(t, k.hosts, int(co.NodeID)); h != k.hosts[victim] {
		t.Fatalf("coordinator node %d at %s:%d, but host %d is %s", co.NodeID, co.Host, co.Port, co.NodeID, h.addr())
	}
	w.mu.Lock()
	before := maps.Clone(w.observed)
	w.mu.Unlock()
	consumedBefore := consumedBy()
	if code := k.hosts[victim].stop(syscall.SIGKILL); code != -int(syscall.SIGKILL) {
		t.Fatalf("host exit %d, want killed", code)
	}
	killed := time.Now()
	var stable time.Duration
	poll.Until(t, 90*time.Second, func() error {
		if err := balanced(k.except(victim), victim); err != nil {
			var answers []string
			for _, addr := range k.except(victim) {
				answers = append(answers, addr+": "+findCoordinatorAt(addr, group))
			}
			return fmt.Errorf("%w; FindCoordinator answers of the survivors: %v", err, answers)
		}
		if stable == 0 {
			stable = time.Since(killed)
		}
		if err := observedAbove(before); err != nil {
			return fmt.Errorf("after the kill: %w", err)
		}
		for i, n := range consumedBy() {
			if n <= consumedBefore[i] {
				return fmt.Errorf("%s consumed nothing since the kill", foClients[i].name)
			}
		}
		return nil
	})
	resumed := time.Since(killed)
	w.check(t)
	for _, m := range members {
		m.check(t)
	}
	pr.mu.Lock()
	failures := slices.Clone(pr.failures)
	pr.mu.Unlock()
	if len(failures) > 0 {
		t.Fatalf("producer failures: %v", failures)
	}
	t.Logf("coordinator host%d (node id %d) SIGKILLed: group Stable again through the survivors after %v, every partition's commit advanced and every member consumed again after %v; consumed per member %v",
		victim+1, co.NodeID, stable.Round(10*time.Millisecond), resumed.Round(10*time.Millisecond), consumedBy())
}

// findCoordinatorAt asks the Kafka listener at addr itself (not a client
// that may route elsewhere) where group's coordinator is, for failure
// messages.
func findCoordinatorAt(addr, group string) string {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err.Error()
	}
	defer c.Close()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.SetVersion(2)
	req.CoordinatorKey = group
	if _, err := c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)); err != nil {
		return err.Error()
	}
	if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return err.Error()
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return err.Error()
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, body); err != nil {
		return err.Error()
	}
	resp := kmsg.NewPtrFindCoordinatorResponse()
	resp.SetVersion(2)
	if err := resp.ReadFrom(body[4:]); err != nil {
		return err.Error()
	}
	return fmt.Sprintf("node %d at %s:%d, error %d", resp.NodeID, resp.Host, resp.Port, resp.ErrorCode)
}
