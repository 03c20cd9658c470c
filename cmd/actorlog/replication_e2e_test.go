// replication_e2e_test.go: a replicated topic (RF=3, min.insync.replicas=2)
// on three loopback hosts. A producer with acks=all records exactly which
// records were acknowledged while the host leading a partition is killed
// mid-stream; afterwards every acknowledged record is in the log, in
// acknowledgement order per partition, and once the killed host is back and
// in sync, all three replicas' logs are byte-for-byte identical.

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/actors/producer"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage"
)

// partitionRow is one line of `topics describe`.
type partitionRow struct {
	partition, leader int
	isr               []string
}

// describePartitions runs `topics describe --output json` through h; a
// partition whose leader is offline or unavailable is an error.
func describePartitions(t *testing.T, h *hostProc, topic string) ([]partitionRow, error) {
	td, err := h.describeTopic(topic)
	if err != nil {
		return nil, err
	}
	var rows []partitionRow
	for _, p := range td.Partitions {
		if p.LeaderStatus != leaderAvailable {
			return nil, fmt.Errorf("partition %d: leader %d %s: no usable leader", p.Partition, p.Leader, p.LeaderStatus)
		}
		var isr []string
		for _, id := range p.ISR {
			isr = append(isr, strconv.Itoa(int(id)))
		}
		rows = append(rows, partitionRow{partition: int(p.Partition), leader: int(p.Leader), isr: isr})
	}
	return rows, nil
}

// hostByID maps host ids to processes through `cluster describe`.
func hostByID(t *testing.T, hosts []*hostProc, id int) *hostProc {
	t.Helper()
	lines, err := describe(hosts[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if l.id == id {
			return byAddr(t, hosts, l.addr)
		}
	}
	t.Fatalf("no host %d in %+v", id, lines)
	return nil
}

func TestReplicatedTopicSurvivesLeaderKill(t *testing.T) {
	hosts := startCluster(t)
	const topic, parts = "rep", 3
	hosts[0].mustCLI("", "topics", "create", topic, "--partitions", strconv.Itoa(parts), "--replication-factor", "3", "--config", "min.insync.replicas=2")

	l := logrus.New()
	l.SetOutput(io.Discard)
	var boot []string
	for _, h := range hosts {
		boot = append(boot, h.addr())
	}
	c, err := client.New(client.Config{Bootstrap: boot, Logger: logrus.NewEntry(l), RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := producer.New(c, producer.ActorConfig{Acks: messages.Acks_ACKS_ALL, Config: producer.Config{MaxInFlight: 1, DeliveryTimeout: 2 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	acked := map[int32][]string{}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, v := range acked {
			n += len(v)
		}
		return n
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := fmt.Sprintf("v%07d", i)
			part := int32(i % parts)
			p.ProduceAsync(&producer.Send{Topic: topic, Partition: part, Value: []byte(v), Callback: func(d producer.Delivered) {
				if d.Err == nil {
					mu.Lock()
					acked[d.Partition] = append(acked[d.Partition], v)
					mu.Unlock()
				}
			}})
			if i%100 == 99 {
				time.Sleep(2 * time.Millisecond) // pacing: a steady load, not a flood
			}
		}
	}()
	waitAcked := func(n int) {
		t.Helper()
		clustertest.WaitFor(t, 90*time.Second, func() error {
			if got := count(); got < n {
				return fmt.Errorf("%d of %d records acknowledged", got, n)
			}
			return nil
		})
	}
	waitAcked(3000)

	// Kill the host leading partition 0, mid-stream.
	rows, err := describePartitions(t, hosts[0], topic)
	if err != nil {
		t.Fatal(err)
	}
	victim := hostByID(t, hosts, rows[0].leader)
	before := count()
	victim.stop(syscall.SIGKILL)
	killed := time.Now()
	waitAcked(before + 3000)
	t.Logf("host %d (leader of partition 0) killed after %d acknowledged records; %d more acknowledged %v later",
		rows[0].leader, before, count()-before, time.Since(killed).Round(time.Millisecond))
	close(stop)
	wg.Wait()
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Close(gone); err != nil && !errors.Is(err, context.Canceled) {
		t.Logf("closing the producer: %v", err)
	}

	// The killed host comes back and catches up: every ISR is full again.
	victim.start()
	survivor := others(hosts, victim)[0]
	clustertest.WaitFor(t, 60*time.Second, func() error {
		rows, err := describePartitions(t, survivor, topic)
		if err != nil {
			return err
		}
		for _, r := range rows {
			if len(r.isr) != 3 || r.leader < 0 {
				return fmt.Errorf("partition %d: leader %d, ISR %v", r.partition, r.leader, r.isr)
			}
		}
		return nil
	})

	// Every acknowledged record is there, in acknowledgement order.
	ends := survivor.endOffsets(topic)
	var total int64
	for _, e := range ends {
		total += e
	}
	recs := survivor.consumeAll(topic, int(total))
	byPart := map[int32][]string{}
	for _, r := range recs {
		byPart[r.partition] = append(byPart[r.partition], r.value)
	}
	dups := 0
	n := count()
	mu.Lock()
	defer mu.Unlock()
	for part, want := range acked {
		seen := map[string]bool{}
		pos := 0
		for _, v := range byPart[part] {
			if seen[v] {
				dups++
				continue
			}
			seen[v] = true
			if pos < len(want) && v == want[pos] {
				pos++
			}
		}
		if pos != len(want) {
			t.Fatalf("partition %d: %d of %d acknowledged records found in order", part, pos, len(want))
		}
	}
	t.Logf("%d records acknowledged, %d in the log, %d duplicates (retries without the idempotent producer)", n, len(recs), dups)

	// Stop the hosts and compare the replicas' logs byte for byte.
	for _, h := range hosts {
		if code := h.stop(syscall.SIGTERM); code != 0 {
			t.Fatalf("host %s exited with %d", h.addr(), code)
		}
	}
	for part := 0; part < parts; part++ {
		var first []byte
		for i, h := range hosts {
			b := readLog(t, filepath.Join(h.dir, fmt.Sprintf("%s-%d", topic, part)))
			if i == 0 {
				first = b
			} else if !bytes.Equal(first, b) {
				t.Fatalf("partition %d: replica on %s differs from the one on %s (%d vs %d bytes)", part, h.addr(), hosts[0].addr(), len(b), len(first))
			}
		}
		if len(first) == 0 {
			t.Fatalf("partition %d is empty", part)
		}
	}
}

// readLog returns every batch of a stopped partition log.
func readLog(t *testing.T, dir string) []byte {
	t.Helper()
	b, err := storage.ReadAllDir(dir, storage.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFrozenFollowerLeavesTheISR(t *testing.T) {
	hosts := startCluster(t, "--replica-lag-time-max", "2s")
	const topic = "frozen-follower"
	hosts[0].mustCLI("", "topics", "create", topic, "--partitions", "1", "--replication-factor", "3", "--config", "min.insync.replicas=2")
	rows, err := describePartitions(t, hosts[0], topic)
	if err != nil {
		t.Fatal(err)
	}
	leader := hostByID(t, hosts, rows[0].leader)
	// Freeze a follower whose etcd member is not the raft leader: resuming
	// a frozen raft leader makes etcd (3.6) revoke every lease it thinks
	// expired before it learns it was replaced — its leadership check is
	// skipped when its raft ticker has just fired, which it does at once
	// after SIGCONT — so every host re-registers. That case has its own
	// test (TestFrozenEtcdLeaderDoesNotSplitTheCluster); this one is about
	// the ISR.
	var follower *hostProc
	for _, h := range others(hosts, leader) {
		if isLeader, err := h.etcdLeader(); err == nil && !isLeader {
			follower = h
			break
		}
	}
	if follower == nil {
		t.Fatal("no follower host without the etcd raft leadership")
	}
	before := leader.endOffsets(topic)[0]

	// Freeze a follower: acks=all writes wait until the leader drops it
	// from the ISR (min.insync.replicas=2 still holds), then go on.
	follower.signal(syscall.SIGSTOP)
	frozen := time.Now()
	var in strings.Builder
	for i := 0; i < 500; i++ {
		fmt.Fprintf(&in, "during-%d\n", i)
	}
	leader.mustCLI(in.String(), "produce", topic, "--acks", "all")
	t.Logf("500 acks=all records written %v after the follower froze", time.Since(frozen).Round(time.Millisecond))
	clustertest.WaitFor(t, 10*time.Second, func() error {
		rows, err := describePartitions(t, leader, topic)
		if err != nil {
			return err
		}
		if len(rows[0].isr) != 2 {
			return fmt.Errorf("ISR with a frozen follower: %v", rows[0].isr)
		}
		return nil
	})

	// Resumed (re-registered if its lease lapsed meanwhile), it catches up
	// and rejoins the ISR.
	follower.signal(syscall.SIGCONT)
	clustertest.WaitFor(t, 60*time.Second, func() error {
		rows, err := describePartitions(t, leader, topic)
		if err != nil {
			return err
		}
		if len(rows[0].isr) != 3 {
			return fmt.Errorf("ISR %v", rows[0].isr)
		}
		return nil
	})
	if end := leader.endOffsets(topic)[0]; end != before+500 {
		t.Fatalf("log end %d, want %d", end, before+500)
	}
	for _, h := range hosts {
		if code := h.stop(syscall.SIGTERM); code != 0 {
			t.Fatalf("host %s exited with %d", h.addr(), code)
		}
	}
	want := readLog(t, filepath.Join(hosts[0].dir, topic+"-0"))
	for _, h := range hosts[1:] {
		if got := readLog(t, filepath.Join(h.dir, topic+"-0")); !bytes.Equal(got, want) {
			t.Fatalf("replica on %s differs (%d vs %d bytes)", h.addr(), len(got), len(want))
		}
	}
}

func TestControlledShutdownMovesLeadership(t *testing.T) {
	hosts := startCluster(t)
	const topic = "rolling"
	hosts[0].mustCLI("", "topics", "create", topic, "--partitions", "2", "--replication-factor", "3", "--config", "min.insync.replicas=2")
	hosts[0].mustCLI("a\nb\nc\n", "produce", topic, "--acks", "all")
	rows, err := describePartitions(t, hosts[0], topic)
	if err != nil {
		t.Fatal(err)
	}
	victim := hostByID(t, hosts, rows[0].leader)
	survivor := others(hosts, victim)[0]

	// SIGTERM: before its replicas stop, the host hands leadership over.
	if code := victim.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("host exited with %d", code)
	}
	if !strings.Contains(victim.log(), "controlled shutdown: leadership moved") {
		t.Fatalf("no controlled shutdown in the host log:\n%s", grepLog(victim.log(), "shutdown", "level=warn"))
	}
	after, err := describePartitions(t, survivor, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range after {
		if r.leader == rows[0].leader || len(r.isr) != 2 {
			t.Fatalf("after the controlled shutdown: partition %d leader %d ISR %v", r.partition, r.leader, r.isr)
		}
	}
	// Writes go on at once, acks=all with the two remaining replicas (the
	// host's followers, still fetching while it drained, must not have
	// been taken back into the ISRs).
	for part := 0; part < 2; part++ {
		start := time.Now()
		survivor.mustCLI("d\n", "produce", topic, "--acks", "all", "--partition", strconv.Itoa(part))
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("acks=all to partition %d took %v after the controlled shutdown", part, took)
		}
	}
	victim.start()
	clustertest.WaitFor(t, 60*time.Second, func() error {
		rows, err := describePartitions(t, survivor, topic)
		if err != nil {
			return err
		}
		for _, r := range rows {
			if len(r.isr) != 3 {
				return fmt.Errorf("partition %d ISR %v", r.partition, r.isr)
			}
		}
		return nil
	})
	if recs := survivor.consumeAll(topic, 5); len(recs) != 5 {
		t.Fatalf("%d of 5 records after the restart", len(recs))
	}
}
