// kafka_e2e_test.go: Kafka clients against a real `actorlog host` process
// (issue 13): franz-go produces (idempotent, acks=all) to a topic created
// with the CLI, kcat reads it back with -C -e (kgo when kcat is missing);
// then the host is SIGKILLed while kgo produces, restarted over the same
// data directory and ports, and every acknowledged record is checked to be
// at the offset it was acknowledged at, unchanged. Then three hosts: kgo
// routes itself across their Kafka listeners, and a follower answers
// NOT_LEADER_OR_FOLLOWER.

package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/internal/poll"
)

// kafkaAcked is a record Kafka acknowledged, where it was acknowledged.
type kafkaAcked struct {
	partition int32
	offset    int64
	key       string
	value     string
}

func TestKafkaClientsAgainstHostProcess(t *testing.T) {
	const topic, first = "kafka-e2e", 2000
	kafkaAddr := "127.0.0.1:" + strconv.Itoa(freeBase(t))
	h := startHost(t, t.TempDir(), freeBase(t), "--kafka-listen", kafkaAddr)
	h.mustCLI("", "topics", "create", topic, "--partitions", "3")

	var mu sync.Mutex
	var acked []kafkaAcked
	prod, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.DefaultProduceTopic(topic), kgo.MetadataMinAge(100*time.Millisecond),
		kgo.RecordRetries(5), kgo.RecordDeliveryTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	produce := func(ctx context.Context, i int) {
		r := &kgo.Record{Key: []byte("k" + strconv.Itoa(i%13)), Value: []byte(fmt.Sprintf("value-%06d", i))}
		prod.Produce(ctx, r, func(r *kgo.Record, err error) {
			if err != nil {
				return
			}
			mu.Lock()
			acked = append(acked, kafkaAcked{partition: r.Partition, offset: r.Offset, key: string(r.Key), value: string(r.Value)})
			mu.Unlock()
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The topic's leaders may take a moment: kgo retries until then.
	for i := range first {
		produce(ctx, i)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	mu.Lock()
	produced := slices.Clone(acked)
	mu.Unlock()
	if len(produced) != first {
		t.Fatalf("%d of %d records acknowledged", len(produced), first)
	}

	// Read back: kcat -C -e reads exactly what was produced.
	want := make([]string, 0, first)
	for _, a := range produced {
		want = append(want, a.value)
	}
	if kcat, err := exec.LookPath("kcat"); err == nil {
		cmd := exec.CommandContext(ctx, kcat, "-b", kafkaAddr, "-t", topic, "-C", "-e", "-o", "beginning", "-f", "%s\n")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("kcat -C -e: %v: %s", err, stderr.String())
		}
		got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("kcat -C -e read %d records, want exactly the %d produced", len(got), first)
		}
		t.Logf("kcat -C -e read %d records", len(got))
	} else {
		checkAcked(t, kafkaAddr, topic, produced)
		t.Log("kcat not installed: read back with kgo")
	}

	// SIGKILL while producing, restart, and check every acknowledged
	// record.
	pctx, pcancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := first; pctx.Err() == nil; i++ {
			produce(pctx, i)
			if i%100 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	}()
	poll.Until(t, 30*time.Second, func() error {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n < first+2000 {
			return fmt.Errorf("%d records acknowledged, want %d before the kill", n, first+2000)
		}
		return nil
	})
	if code := h.stop(syscall.SIGKILL); code != -int(syscall.SIGKILL) {
		t.Fatalf("host exit %d, want killed", code)
	}
	pcancel()
	<-done
	prod.Close() // fails what was not acknowledged
	mu.Lock()
	final := slices.Clone(acked)
	mu.Unlock()
	h.start()
	checkAcked(t, kafkaAddr, topic, final)
	t.Logf("%d acknowledged records all present after SIGKILL and restart", len(final))
}

// checkAcked reads topic from the start through Kafka (kgo, no group) up
// to the largest acknowledged offset of each partition and checks that
// every acknowledged record is at its offset, unchanged, and nowhere else.
func checkAcked(t *testing.T, addr, topic string, acked []kafkaAcked) {
	t.Helper()
	end := map[int32]int64{}
	byOffset := map[int32]map[int64]kafkaAcked{}
	values := make(map[string]bool, len(acked))
	for _, a := range acked {
		values[a.value] = true
		end[a.partition] = max(end[a.partition], a.offset+1)
		if byOffset[a.partition] == nil {
			byOffset[a.partition] = map[int64]kafkaAcked{}
		}
		if _, dup := byOffset[a.partition][a.offset]; dup {
			t.Fatalf("two records acknowledged at %s-%d offset %d", topic, a.partition, a.offset)
		}
		byOffset[a.partition][a.offset] = a
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(time.Second), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	next := map[int32]int64{}
	found := 0
	for done := false; !done; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read up to %v of %s, got to %v (%d of %d acknowledged records found): %v", end, topic, next, found, len(acked), ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next[r.Partition] {
				t.Fatalf("%s-%d: offset %d read after %d", topic, r.Partition, r.Offset, next[r.Partition]-1)
			}
			next[r.Partition] = r.Offset + 1
			if a, ok := byOffset[r.Partition][r.Offset]; ok {
				if a.key != string(r.Key) || a.value != string(r.Value) {
					t.Fatalf("%s-%d offset %d holds %q=%q, acknowledged %q=%q", topic, r.Partition, r.Offset, r.Key, r.Value, a.key, a.value)
				}
				found++
			} else if values[string(r.Value)] {
				// An idempotent producer's retry must not write an
				// acknowledged record a second time.
				t.Fatalf("%s-%d offset %d: acknowledged record %q written twice", topic, r.Partition, r.Offset, r.Value)
			}
		})
		done = true
		for p, e := range end {
			if next[p] < e {
				done = false
			}
		}
	}
	if found != len(acked) {
		t.Fatalf("%d of %d acknowledged records found", found, len(acked))
	}
}

// TestKafkaThreeHosts: three host processes, each with its own Kafka
// listener; a topic with replication factor 3 whose leaders spread over
// the hosts. A kgo client bootstrapped to one host produces (idempotent,
// acks=all) and reads back through all three, and a host that only
// follows a partition answers NOT_LEADER_OR_FOLLOWER for it.
func TestKafkaThreeHosts(t *testing.T) {
	const topic, n = "kafka-spread", 900
	hosts, kafkaAddrs := startKafkaCluster(t)
	hosts[0].mustCLI("", "topics", "create", topic, "--partitions", "6", "--replication-factor", "3")

	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddrs[0]), kgo.DefaultProduceTopic(topic), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Wait for every partition to have a leader with a Kafka listener and
	// a full ISR.
	adm := kadm.NewClient(cl)
	var md kadm.Metadata
	poll.Until(t, 30*time.Second, func() error {
		if md, err = adm.Metadata(ctx, topic); err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
		td := md.Topics[topic]
		if len(md.Brokers) != 3 || len(td.Partitions) != 6 {
			return fmt.Errorf("%d brokers, %d partitions of %s", len(md.Brokers), len(td.Partitions), topic)
		}
		for _, p := range td.Partitions {
			if p.Err != nil || p.Leader < 0 || len(p.ISR) != 3 {
				return fmt.Errorf("%s-%d: leader %d ISR %v (%v)", topic, p.Partition, p.Leader, p.ISR, p.Err)
			}
		}
		return nil
	})
	leaders := map[int32]bool{}
	for _, p := range md.Topics[topic].Partitions {
		leaders[p.Leader] = true
	}
	t.Logf("leaders of %s: %v", topic, leaders)

	var mu sync.Mutex
	var acked []kafkaAcked
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Key: []byte("k" + strconv.Itoa(i)), Value: []byte(fmt.Sprintf("spread-%05d", i))}, func(r *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
				return
			}
			mu.Lock()
			acked = append(acked, kafkaAcked{partition: r.Partition, offset: r.Offset, key: string(r.Key), value: string(r.Value)})
			mu.Unlock()
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	mu.Lock()
	got := slices.Clone(acked)
	mu.Unlock()
	if len(got) != n {
		t.Fatalf("%d of %d records acknowledged", len(got), n)
	}
	checkAcked(t, kafkaAddrs[0], topic, got)

	// A host that follows partition 0 answers NOT_LEADER_OR_FOLLOWER.
	p0 := md.Topics[topic].Partitions[0]
	follower := int32(-1)
	for _, r := range p0.Replicas {
		if r != p0.Leader {
			follower = r
			break
		}
	}
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = 0, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	res, err := cl.Broker(int(follower)).Request(ctx, req)
	if err != nil {
		t.Fatalf("list offsets on the follower: %v", err)
	}
	lo := res.(*kmsg.ListOffsetsResponse)
	if code := lo.Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("list offsets of %s-0 on follower %d (leader %d): error code %d, want NOT_LEADER_OR_FOLLOWER", topic, follower, p0.Leader, code)
	}
}

// startKafkaHost starts one host with a Kafka listener on a free loopback
// port (extra flags go to the host); it returns the host and the
// listener's address.
func startKafkaHost(t *testing.T, extra ...string) (*hostProc, string) {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(freeBase(t))
	return startHost(t, t.TempDir(), freeBase(t), append([]string{"--kafka-listen", addr}, extra...)...), addr
}

// startKafkaCluster starts three host processes that form one cluster,
// each with its own Kafka listener (node id = host id, assigned by the
// cluster: not necessarily position + 1, find a host by its Kafka
// address); extra flags go to every host. It returns the hosts and their Kafka
// addresses, in the same order.
func startKafkaCluster(t *testing.T, extra ...string) ([]*hostProc, []string) {
	t.Helper()
	bases := make([]int, 3)
	kafkaAddrs := make([]string, 3)
	var peers []string
	for i := range bases {
		bases[i] = freeBase(t)
		kafkaAddrs[i] = "127.0.0.1:" + strconv.Itoa(freeBase(t))
		peers = append(peers, fmt.Sprintf("host%d=http://127.0.0.1:%d", i+1, bases[i]+1))
	}
	hosts := make([]*hostProc, 3)
	for i := range hosts {
		flags := []string{"--name", fmt.Sprintf("host%d", i+1), "--initial-cluster", strings.Join(peers, ","), "--kafka-listen", kafkaAddrs[i]}
		hosts[i] = &hostProc{t: t, dir: t.TempDir(), base: bases[i], logPath: hostLogPath(t, bases[i]), bin: clusterBinPath,
			extra: append(flags, extra...)}
	}
	var wg sync.WaitGroup
	for _, h := range hosts { // the members wait for each other's etcd
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.start()
		}()
	}
	wg.Wait()
	for _, h := range hosts {
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("host %s log (warnings and up):\n%s", h.addr(), grepLog(h.log(), "level=warn", "level=error", "level=fatal"))
			}
			if code := h.stop(syscall.SIGTERM); code > 0 {
				t.Errorf("host exited with %d on SIGTERM; log:\n%s", code, h.log())
			}
		})
	}
	return hosts, kafkaAddrs
}
