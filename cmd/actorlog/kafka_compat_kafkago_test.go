// kafka_compat_kafkago_test.go: segmentio/kafka-go (v0.4.51), a pure-Go
// Kafka client with its own protocol code and old request versions (its
// consumer groups use JoinGroup v1/v2, FindCoordinator v0, OffsetCommit
// v2), against real `actorlog host` processes (issue 13):
//
//   - Metadata: kafka.Dial, Conn.Brokers and Conn.ReadPartitions through
//     every host of a 1-host and a 3-host cluster list every host's Kafka
//     address under its host id, and each partition's leader, replicas and
//     ISR as `actorlog topics describe --output json` shows them.
//   - Round trip: a kafka.Writer (acks=all, kafka.Murmur2Balancer) and
//     kafka.Readers: keys, values, headers and timestamps come back byte
//     for byte, in order per partition, exactly once; every keyed record
//     is on the partition kgo and actorlog's own producer (CLI) put the
//     key on.
//   - Consumer group: three kafka.Readers with a GroupID share 12
//     partitions and commit each record; each record is processed once;
//     closed and restarted, the group resumes at the commits.
//   - Mixed group: actorlog's native consumer (actors/consumer over the
//     native protocol), a kgo group consumer and a kafka-go Reader in one
//     group (the "range" assignor, the one all three offer), joining one
//     by one with the native consumer or kafka-go first: each gets
//     partitions and every record is processed exactly once, commits
//     reaching the end offsets. (The native consumer as leader once
//     failed to decode kafka-go's short v1 subscription and the group
//     rebalanced forever; TestKafkaCompatKafkaGoSubscriptionDecodes pins
//     the fix.)

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/actorlog/actorlog/actors/consumer"
	"github.com/actorlog/actorlog/actors/group"
	"github.com/actorlog/actorlog/internal/poll"
	"github.com/actorlog/actorlog/messages"
)

// kafkaGoWaitLeaders waits until every one of topic's partitions has an
// available leader and a full ISR.
func kafkaGoWaitLeaders(t *testing.T, h *hostProc, topic string, partitions int) {
	t.Helper()
	poll.Until(t, 30*time.Second, func() error {
		td, err := h.describeTopic(topic)
		if err != nil {
			return err
		}
		if len(td.Partitions) != partitions || td.count(leaderAvailable) != partitions {
			return fmt.Errorf("%s: %d partitions, %d with a leader, want %d", topic, len(td.Partitions), td.count(leaderAvailable), partitions)
		}
		for _, p := range td.Partitions {
			if len(p.ISR) != int(td.ReplicationFactor) {
				return fmt.Errorf("%s-%d: ISR %v of replicas %v", topic, p.Partition, p.ISR, p.Replicas)
			}
		}
		return nil
	})
}

func kafkaGoBrokerIDs(bs []kafka.Broker) []int32 {
	ids := make([]int32, 0, len(bs))
	for _, b := range bs {
		ids = append(ids, int32(b.ID))
	}
	return ids
}

func kafkaGoBrokerAddr(b kafka.Broker) string { return net.JoinHostPort(b.Host, strconv.Itoa(b.Port)) }

// kafkaGoCheckMetadata dials every Kafka address with kafka-go and checks
// that Conn.Brokers lists each host's Kafka address under the host id
// `cluster describe` gives it, and that Conn.ReadPartitions gives each of
// topic's partitions the leader, replicas and ISR `topics describe` shows.
func kafkaGoCheckMetadata(t *testing.T, hosts []*hostProc, kafkaAddrs []string, topic string, partitions int) {
	t.Helper()
	kafkaGoWaitLeaders(t, hosts[0], topic, partitions)
	var cd clusterDescription
	if err := hosts[0].describeJSON(&cd, "cluster", "describe"); err != nil {
		t.Fatal(err)
	}
	want := map[int32]string{} // host id -> Kafka address
	for _, hd := range cd.Hosts {
		for i, h := range hosts {
			if h.addr() == hd.Address {
				want[hd.ID] = kafkaAddrs[i]
			}
		}
	}
	if len(want) != len(hosts) {
		t.Fatalf("cluster describe %+v: want the %d hosts", cd.Hosts, len(hosts))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, addr := range kafkaAddrs {
		poll.Until(t, 30*time.Second, func() error {
			conn, err := kafka.DialContext(ctx, "tcp", addr)
			if err != nil {
				return fmt.Errorf("dial %s: %w", addr, err)
			}
			defer conn.Close()
			brokers, err := conn.Brokers()
			if err != nil {
				return fmt.Errorf("brokers through %s: %w", addr, err)
			}
			got := map[int32]string{}
			for _, b := range brokers {
				got[int32(b.ID)] = kafkaGoBrokerAddr(b)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("Conn.Brokers through %s: %v, want %v", addr, got, want)
			}
			ps, err := conn.ReadPartitions(topic)
			if err != nil {
				return fmt.Errorf("read partitions through %s: %w", addr, err)
			}
			td, err := hosts[0].describeTopic(topic)
			if err != nil {
				return err
			}
			if len(ps) != len(td.Partitions) {
				return fmt.Errorf("ReadPartitions through %s: %d partitions, describe %d", addr, len(ps), len(td.Partitions))
			}
			slices.SortFunc(ps, func(a, b kafka.Partition) int { return a.ID - b.ID })
			for i, p := range ps {
				d := td.Partitions[i]
				if p.Topic != topic || int32(p.ID) != d.Partition || int32(p.Leader.ID) != d.Leader ||
					!slices.Equal(kafkaGoBrokerIDs(p.Replicas), d.Replicas) || !slices.Equal(kafkaGoBrokerIDs(p.Isr), d.ISR) {
					return fmt.Errorf("ReadPartitions through %s: %s-%d leader %d replicas %v ISR %v; describe: leader %d replicas %v ISR %v",
						addr, p.Topic, p.ID, p.Leader.ID, kafkaGoBrokerIDs(p.Replicas), kafkaGoBrokerIDs(p.Isr), d.Leader, d.Replicas, d.ISR)
				}
				if kafkaGoBrokerAddr(p.Leader) != want[d.Leader] {
					return fmt.Errorf("ReadPartitions through %s: %s-%d leader at %s, want %s", addr, topic, p.ID, kafkaGoBrokerAddr(p.Leader), want[d.Leader])
				}
			}
			return nil
		})
	}
}

func TestKafkaCompatKafkaGoMetadata(t *testing.T) {
	t.Run("one host", func(t *testing.T) {
		const topic = "kafkago-md1"
		h, addr := startKafkaHost(t)
		h.mustCLI("", "topics", "create", topic, "--partitions", "3")
		kafkaGoCheckMetadata(t, []*hostProc{h}, []string{addr}, topic, 3)
	})
	t.Run("three hosts", func(t *testing.T) {
		const topic = "kafkago-md3"
		hosts, addrs := startKafkaCluster(t)
		hosts[1].mustCLI("", "topics", "create", topic, "--partitions", "6", "--replication-factor", "3")
		kafkaGoCheckMetadata(t, hosts, addrs, topic, 6)
		// Leaders are spread: kafka-go must route to more than one host.
		td := hosts[0].mustDescribeTopic(topic)
		leaders := map[int32]bool{}
		for _, p := range td.Partitions {
			leaders[p.Leader] = true
		}
		if len(leaders) < 2 {
			t.Errorf("all of %s's partitions led by %v: want them spread", topic, leaders)
		}
	})
}

// kafkaGoHeaders are the headers of round-trip record i, binary values
// included.
func kafkaGoHeaders(i int) []kafka.Header {
	hs := []kafka.Header{{Key: "trace", Value: []byte(fmt.Sprintf("t-%d", i))}}
	if i%3 == 0 {
		hs = append(hs, kafka.Header{Key: "bin", Value: []byte{0, 0xff, byte(i), '\n'}})
	}
	if i%5 == 0 { // a repeated header key is kept, in order
		hs = append(hs, kafka.Header{Key: "trace", Value: []byte("again")})
	}
	return hs
}

func kafkaGoHeadersEqual(a, b []kafka.Header) bool {
	return slices.EqualFunc(a, b, func(x, y kafka.Header) bool { return x.Key == y.Key && bytes.Equal(x.Value, y.Value) })
}

func TestKafkaCompatKafkaGoRoundTrip(t *testing.T) {
	const topic, partitions, n, keys = "kafkago-rt", 4, 400, 17
	h, addr := startKafkaHost(t)
	h.mustCLI("", "topics", "create", topic, "--partitions", strconv.Itoa(partitions))
	kafkaGoWaitLeaders(t, h, topic, partitions)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// actorlog's own producer (the CLI) places one record per key first.
	var in strings.Builder
	for k := range keys {
		fmt.Fprintf(&in, "key-%d:cli-%d\n", k, k)
	}
	h.mustCLI(in.String(), "produce", topic, "--key-separator", ":", "--acks", "all")

	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: topic, Balancer: &kafka.Murmur2Balancer{}, RequiredAcks: kafka.RequireAll,
		BatchSize: 100, BatchTimeout: 5 * time.Millisecond, MaxAttempts: 5}
	defer w.Close()
	base := time.Now().Add(-time.Hour).UnixMilli()
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		msgs[i] = kafka.Message{Key: []byte(fmt.Sprintf("key-%d", i%keys)), Value: []byte(fmt.Sprintf("value-%04d\x00\xfe", i)),
			Headers: kafkaGoHeaders(i), Time: time.UnixMilli(base + int64(i)*7)}
	}
	// Sequential calls of at most BatchSize records keep each partition's
	// records in call order.
	for lo := 0; lo < n; lo += 100 {
		if err := w.WriteMessages(ctx, msgs[lo:lo+100]...); err != nil {
			t.Fatalf("write messages %d..: %v", lo, err)
		}
	}

	// Where each record must be: murmur2 as kgo and actorlog compute it,
	// after the CLI's record of its key.
	kp := kgo.StickyKeyPartitioner(nil).ForTopic(topic)
	want := make([][]kafka.Message, partitions)
	for k := range keys {
		key := []byte(fmt.Sprintf("key-%d", k))
		p := messages.KeyPartition(key, partitions)
		if q := kp.Partition(&kgo.Record{Key: key}, partitions); int32(q) != p {
			t.Fatalf("key %s: actorlog places it on %d, kgo on %d", key, p, q)
		}
		want[p] = append(want[p], kafka.Message{Key: key, Value: []byte(fmt.Sprintf("cli-%d", k))})
	}
	for _, m := range msgs {
		p := messages.KeyPartition(m.Key, partitions)
		want[p] = append(want[p], m)
	}
	ends := h.endOffsets(topic)
	for p := range partitions {
		if ends[p] != int64(len(want[p])) {
			t.Errorf("%s-%d: end offset %d, want %d (the records whose key murmur2 puts there)", topic, p, ends[p], len(want[p]))
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	for p := range partitions {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: topic, Partition: p, MinBytes: 1, MaxBytes: 1 << 20,
			MaxWait: 200 * time.Millisecond, ReadLagInterval: -1})
		for i, wm := range want[p] {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				t.Fatalf("%s-%d: read record %d of %d: %v", topic, p, i, len(want[p]), err)
			}
			if m.Partition != p || m.Offset != int64(i) || !bytes.Equal(m.Key, wm.Key) || !bytes.Equal(m.Value, wm.Value) {
				t.Fatalf("%s-%d offset %d: read %s-%d@%d %q=%q, want %q=%q", topic, p, i, m.Topic, m.Partition, m.Offset, m.Key, m.Value, wm.Key, wm.Value)
			}
			if bytes.HasPrefix(wm.Value, []byte("cli-")) { // the CLI's: no headers, stamped when produced
				if len(m.Headers) != 0 {
					t.Fatalf("%s-%d offset %d: CLI record with headers %v", topic, p, i, m.Headers)
				}
				continue
			}
			if !kafkaGoHeadersEqual(m.Headers, wm.Headers) {
				t.Fatalf("%s-%d offset %d: headers %v, want %v", topic, p, i, m.Headers, wm.Headers)
			}
			if m.Time.UnixMilli() != wm.Time.UnixMilli() {
				t.Fatalf("%s-%d offset %d: timestamp %d, want %d", topic, p, i, m.Time.UnixMilli(), wm.Time.UnixMilli())
			}
		}
		if err := r.Close(); err != nil {
			t.Errorf("close reader: %v", err)
		}
	}
	// Nothing past the end offsets: the count is exact.
	if got := h.endOffsets(topic); !slices.Equal(got, ends) {
		t.Fatalf("end offsets moved from %v to %v", ends, got)
	}
	t.Logf("%d kafka-go records and %d CLI records read back byte for byte on their murmur2 partitions", n, keys)
}

// kafkaGoSeen counts what consumers processed, by partition and offset.
type kafkaGoSeen struct {
	mu    sync.Mutex
	count map[[2]int64]int // {partition, offset} -> times processed
	by    map[string]int   // consumer -> records processed
	first map[int32]int64  // partition -> first offset processed
}

func newKafkaGoSeen() *kafkaGoSeen {
	return &kafkaGoSeen{count: map[[2]int64]int{}, by: map[string]int{}, first: map[int32]int64{}}
}

func (s *kafkaGoSeen) add(who string, p int32, off int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count[[2]int64{int64(p), off}]++
	s.by[who]++
	if f, ok := s.first[p]; !ok || off < f {
		s.first[p] = off
	}
}

func (s *kafkaGoSeen) distinct() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.count)
}

// check fails t unless exactly n distinct records were each processed
// once, and every consumer in who processed some.
func (s *kafkaGoSeen) check(t *testing.T, n int, who ...string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, c := range s.count {
		if c != 1 {
			t.Errorf("record %d@%d processed %d times", k[0], k[1], c)
		}
	}
	if len(s.count) != n {
		t.Errorf("%d distinct records processed, want %d", len(s.count), n)
	}
	for _, w := range who {
		if s.by[w] == 0 {
			t.Errorf("%s processed nothing (by consumer: %v)", w, s.by)
		}
	}
}

// kafkaGoGroupReader runs a kafka-go group Reader that processes each
// record into seen and commits it synchronously; stop closes it.
func kafkaGoGroupReader(t *testing.T, addr, groupID, topic, who string, seen *kafkaGoSeen, balancers ...kafka.GroupBalancer) (stop func()) {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, GroupID: groupID, Topic: topic,
		Dialer:   &kafka.Dialer{ClientID: who, Timeout: 10 * time.Second, DualStack: true},
		MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 300 * time.Millisecond, ReadLagInterval: -1,
		HeartbeatInterval: 300 * time.Millisecond, SessionTimeout: 10 * time.Second, RebalanceTimeout: 5 * time.Second,
		JoinGroupBackoff: 200 * time.Millisecond, StartOffset: kafka.FirstOffset, GroupBalancers: balancers,
		ErrorLogger: kafka.LoggerFunc(func(f string, args ...any) { t.Logf(who+": "+f, args...) })})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			m, err := r.FetchMessage(ctx)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				// kafka-go hands over errors its group loop goes on
				// from (a JoinGroup or SyncGroup refused while members
				// come and go); its FetchMessage is called again.
				t.Logf("%s: fetch: %v", who, err)
				time.Sleep(100 * time.Millisecond)
				continue
			}
			seen.add(who, int32(m.Partition), m.Offset)
			if err := r.CommitMessages(ctx, m); err != nil && ctx.Err() == nil {
				t.Errorf("%s: commit %d@%d: %v", who, m.Partition, m.Offset, err)
			}
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
			if err := r.Close(); err != nil {
				t.Errorf("%s: close: %v", who, err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// kafkaGoWaitGroup waits until group is Stable with members members,
// each assigned at least one of topic's partitions and all partitions
// assigned once.
func kafkaGoWaitGroup(t *testing.T, adm *kadm.Client, groupID, topic string, members, partitions int) {
	t.Helper()
	poll.Until(t, 45*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		dgs, err := adm.DescribeGroups(ctx, groupID)
		if err != nil {
			return fmt.Errorf("describe %s: %w", groupID, err)
		}
		dg := dgs[groupID]
		if dg.Err != nil || dg.State != "Stable" || len(dg.Members) != members {
			return fmt.Errorf("group %s: state %s, %d members (%v), want Stable with %d", groupID, dg.State, len(dg.Members), dg.Err, members)
		}
		owned := map[int32]int{}
		for _, m := range dg.Members {
			a, ok := m.Assigned.AsConsumer()
			if !ok {
				return fmt.Errorf("member %s (%s): no consumer assignment", m.MemberID, m.ClientID)
			}
			n := 0
			for _, at := range a.Topics {
				if at.Topic == topic {
					for _, p := range at.Partitions {
						owned[p]++
						n++
					}
				}
			}
			if n == 0 {
				return fmt.Errorf("member %s (%s) owns none of %s", m.MemberID, m.ClientID, topic)
			}
		}
		if len(owned) != partitions {
			return fmt.Errorf("%d of %d partitions assigned: %v", len(owned), partitions, owned)
		}
		for p, c := range owned {
			if c != 1 {
				return fmt.Errorf("partition %d assigned %d times", p, c)
			}
		}
		return nil
	})
}

// kafkaGoProduce produces n keyed records to topic with kgo (acks=all,
// idempotent); values are prefix-i.
func kafkaGoProduce(t *testing.T, addr, topic, prefix string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// kafkaGoCommitted checks that group's committed offsets on topic equal
// the partitions' end offsets (polling: a closing member's last commits
// may still be on their way) and returns them.
func kafkaGoCommitted(t *testing.T, adm *kadm.Client, h *hostProc, groupID, topic string) []int64 {
	t.Helper()
	ends := h.endOffsets(topic)
	got := make([]int64, len(ends))
	poll.Until(t, 20*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		offs, err := adm.FetchOffsets(ctx, groupID)
		if err != nil {
			return fmt.Errorf("fetch offsets of %s: %w", groupID, err)
		}
		for p := range ends {
			o, ok := offs.Lookup(topic, int32(p))
			if !ok || o.Err != nil || o.At != ends[p] {
				return fmt.Errorf("%s committed %s-%d at %+v, want the end offset %d", groupID, topic, p, o, ends[p])
			}
			got[p] = o.At
		}
		return nil
	})
	return got
}

func TestKafkaCompatKafkaGoGroup(t *testing.T) {
	const topic, groupID, partitions, n1, n2 = "kafkago-group", "kafkago-readers", 12, 600, 300
	h, addr := startKafkaHost(t)
	h.mustCLI("", "topics", "create", topic, "--partitions", strconv.Itoa(partitions))
	kafkaGoWaitLeaders(t, h, topic, partitions)
	admCl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)

	// Three readers share the 12 partitions; records are produced once
	// the group is stable, so no rebalance moves a record between its
	// processing and its commit.
	run := func(phase string, n int, prefix string) *kafkaGoSeen {
		seen := newKafkaGoSeen()
		var stops []func()
		var who []string
		for i := range 3 {
			name := fmt.Sprintf("%s-reader-%d", phase, i)
			who = append(who, name)
			stops = append(stops, kafkaGoGroupReader(t, addr, groupID, topic, name, seen))
		}
		kafkaGoWaitGroup(t, adm, groupID, topic, 3, partitions)
		kafkaGoProduce(t, addr, topic, prefix, n)
		poll.Until(t, 30*time.Second, func() error {
			if d := seen.distinct(); d < n {
				return fmt.Errorf("%s: %d of %d records processed", phase, d, n)
			}
			return nil
		})
		for _, stop := range stops {
			stop()
		}
		seen.check(t, n, who...)
		return seen
	}
	run("first", n1, "first")
	committed := kafkaGoCommitted(t, adm, h, groupID, topic)
	if sum(committed) != n1 {
		t.Fatalf("committed %v, want %d records in all", committed, n1)
	}

	// Restarted, the group reads only the new records, from the commits.
	seen := run("second", n2, "second")
	for p, c := range committed {
		if f, ok := seen.first[int32(p)]; ok && f != c {
			t.Errorf("%s-%d: restarted group read from %d, committed %d", topic, p, f, c)
		}
	}
	final := kafkaGoCommitted(t, adm, h, groupID, topic)
	if sum(final) != n1+n2 {
		t.Fatalf("committed %v, want %d records in all", final, n1+n2)
	}
}

func TestKafkaCompatKafkaGoMixedGroup(t *testing.T) {
	const partitions, n = 6, 600
	h, addr := startKafkaHost(t)
	admCl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	c := newClient(t, h.addr()) // the native consumers' client, with its own remote

	// The members join one at a time. With the native consumer first, it
	// stays the group's leader and assigns partitions to kgo's v3 and
	// kafka-go's short v1 subscriptions. kafka-go cannot lead kgo's or
	// actorlog's v3 subscriptions (v0.4.51 refuses member metadata with
	// bytes after the user data, as Java clients' v1+ have): first, it
	// fails its join as leader once kgo joins, leaves and rejoins, and the
	// group must settle with kgo leading.
	for _, order := range [][]string{{"native", "kgo", "kafka-go"}, {"kafka-go", "kgo", "native"}} {
		t.Run(order[0]+" first", func(t *testing.T) {
			topic := "kafkago-mixed-" + order[0]
			groupID := topic
			h.mustCLI("", "topics", "create", topic, "--partitions", strconv.Itoa(partitions))
			kafkaGoWaitLeaders(t, h, topic, partitions)
			seen := newKafkaGoSeen()
			start := map[string]func() (stop func()){
				// actorlog's native consumer, over the native protocol
				// from this process. "range" is the assignor kafka-go,
				// kgo and it all offer.
				"native": func() func() {
					props, err := consumer.Props(consumer.Config{Client: c, GroupID: groupID, Topics: []string{topic}, Start: consumer.Earliest(),
						Assignors: []group.Assignor{group.Range()}, ClientID: "native", HeartbeatInterval: 300 * time.Millisecond,
						AutoCommitInterval: 200 * time.Millisecond, MaxWait: 300 * time.Millisecond,
						Handler: func(ms []consumer.Message) {
							for _, m := range ms {
								seen.add("native", m.Partition, m.Offset)
							}
						}})
					if err != nil {
						t.Fatalf("native consumer: %v", err)
					}
					root := c.System().Root
					pid := root.Spawn(props)
					var once sync.Once
					stop := func() {
						once.Do(func() {
							ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
							defer cancel()
							if err := consumer.CloseAndStop(ctx, root, pid); err != nil {
								t.Errorf("close the native consumer: %v", err)
							}
						})
					}
					t.Cleanup(stop)
					return stop
				},
				// A kgo group member, committing what each poll returned.
				"kgo": func() func() {
					kcl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("kgo"), kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic),
						kgo.Balancers(kgo.RangeBalancer()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
						kgo.BlockRebalanceOnPoll(), kgo.FetchMaxWait(300*time.Millisecond), kgo.HeartbeatInterval(300*time.Millisecond))
					if err != nil {
						t.Fatal(err)
					}
					ctx, cancel := context.WithCancel(context.Background())
					done := make(chan struct{})
					go func() {
						defer close(done)
						for ctx.Err() == nil {
							pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
							fs := kcl.PollFetches(pctx)
							pcancel()
							fs.EachError(func(topic string, p int32, err error) {
								if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
									t.Errorf("kgo: fetch %s-%d: %v", topic, p, err)
								}
							})
							fs.EachRecord(func(r *kgo.Record) { seen.add("kgo", r.Partition, r.Offset) })
							if err := kcl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
								t.Errorf("kgo: commit: %v", err)
							}
							kcl.AllowRebalance()
						}
					}()
					var once sync.Once
					stop := func() {
						once.Do(func() {
							cancel()
							<-done
							kcl.Close() // leaves the group
						})
					}
					t.Cleanup(stop)
					return stop
				},
				"kafka-go": func() func() {
					return kafkaGoGroupReader(t, addr, groupID, topic, "kafka-go", seen, kafka.RangeGroupBalancer{})
				},
			}
			var stops []func()
			for i, who := range order {
				stops = append(stops, start[who]())
				kafkaGoWaitGroup(t, adm, groupID, topic, i+1, partitions)
			}

			kafkaGoProduce(t, addr, topic, "mixed", n)
			poll.Until(t, 30*time.Second, func() error {
				if d := seen.distinct(); d < n {
					return fmt.Errorf("%d of %d records processed", d, n)
				}
				return nil
			})
			// Commits of all three reach the end offsets while they still
			// run (the native consumer auto-commits).
			kafkaGoCommitted(t, adm, h, groupID, topic)
			for _, stop := range stops {
				stop()
			}
			seen.check(t, n, "native", "kgo", "kafka-go")
			t.Logf("records by consumer: %v", seen.by)
		})
	}
}

// TestKafkaCompatKafkaGoSubscriptionDecodes: kafka-go's JoinGroup
// subscription claims version 1 but stops before the owned partitions
// (25 bytes for one 13-byte topic); actorlog's native consumer, as group
// leader, must read it as v0 (as kgo and Sarama do), or it never assigns
// and the mixed group rebalances forever. Regression test for
// actors/group.DecodeSubscription.
func TestKafkaCompatKafkaGoSubscriptionDecodes(t *testing.T) {
	b := []byte{0, 1, 0, 0, 0, 1, 0, 13}
	b = append(b, "kafkago-mixed"...)
	b = append(b, 0, 0, 0, 0) // empty user data
	s, err := group.DecodeSubscription(b)
	if err != nil {
		t.Fatalf("decode kafka-go's subscription: %v", err)
	}
	if !slices.Equal(s.Topics, []string{"kafkago-mixed"}) || len(s.Owned) != 0 || s.Generation != -1 {
		t.Fatalf("decoded %+v, want topic kafkago-mixed, nothing owned, generation -1", s)
	}
	if b[1] != 1 {
		t.Fatal("the input was modified")
	}
	if _, err := group.DecodeSubscription(b[:20]); err == nil {
		t.Fatal("a truncated subscription decoded")
	}
}
