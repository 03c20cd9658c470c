// jepsen_test.go: replication under faults, checked like Jepsen checks a
// history. Three loopback hosts, a topic with RF=3 and
// min.insync.replicas=2, an idempotent acks=all producer that records
// exactly which records were acknowledged, and a consumer tailing every
// partition that records what it saw at each offset. A nemesis kills or
// freezes hosts meanwhile. Afterwards:
//   - every acknowledged record is in the log exactly once, and each
//     partition's records are in produce order (no record appears twice at
//     all, acknowledged or not);
//   - the consumer never saw a record that is not in the final log at that
//     offset (nothing it read was later truncated);
//   - once every replica is back in sync, the replicas' logs are identical.
//
// ACTORLOG_KILL_CYCLES sets the leader-kill cycles (default 2, the bounded
// form CI runs); ACTORLOG_SOAK=<duration> keeps killing leaders for that
// long instead (a soak run).

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/actors/consumer"
	"github.com/actorlog/actorlog/actors/producer"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
)

// workload produces to every partition of a topic and tails it.
type workload struct {
	t     *testing.T
	topic string
	parts int
	c     *client.Client
	p     *producer.Producer
	cons  *actor.PID

	mu     sync.Mutex
	acked  map[int32][]int            // produce sequence numbers, in acknowledgement order
	failed map[int32]int              // records whose delivery failed (allowed; they may or may not be in the log)
	seen   map[int32]map[int64]string // what the consumer read at each offset
	reread []string                   // offsets the consumer read twice with different values

	stop chan struct{}
	wg   sync.WaitGroup
}

func value(part int32, seq int) string { return fmt.Sprintf("%d-%08d", part, seq) }

// startWorkload starts producing (paced, round robin over the partitions)
// and consuming from the earliest offset.
func startWorkload(t *testing.T, hosts []*hostProc, topic string, parts int) *workload {
	t.Helper()
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
	t.Cleanup(c.Close)
	p, err := producer.New(c, producer.ActorConfig{Acks: messages.Acks_ACKS_ALL, Config: producer.Config{DeliveryTimeout: 2 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	w := &workload{t: t, topic: topic, parts: parts, c: c, p: p,
		acked: map[int32][]int{}, failed: map[int32]int{}, seen: map[int32]map[int64]string{}, stop: make(chan struct{})}
	for i := 0; i < parts; i++ {
		w.seen[int32(i)] = map[int64]string{}
	}
	props, err := consumer.Props(consumer.Config{Client: c, Topic: topic, Start: consumer.Earliest(), OnOutOfRange: consumer.Fail,
		OnError: func(error) {}, Handler: w.onConsumed})
	if err != nil {
		t.Fatal(err)
	}
	w.cons = c.System().Root.Spawn(props)
	w.wg.Add(1)
	go w.produce()
	return w
}

func (w *workload) produce() {
	defer w.wg.Done()
	for i := 0; ; i++ {
		select {
		case <-w.stop:
			return
		default:
		}
		part, seq := int32(i%w.parts), i/w.parts
		w.p.ProduceAsync(&producer.Send{Topic: w.topic, Partition: part, Value: []byte(value(part, seq)), Callback: func(d producer.Delivered) {
			w.mu.Lock()
			defer w.mu.Unlock()
			if d.Err != nil {
				w.failed[part]++
				return
			}
			w.acked[part] = append(w.acked[part], seq)
		}})
		if i%100 == 99 {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func (w *workload) onConsumed(msgs []consumer.Message) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range msgs {
		v := string(m.Value)
		if old, ok := w.seen[m.Partition][m.Offset]; ok && old != v {
			w.reread = append(w.reread, fmt.Sprintf("partition %d offset %d: read %q, later %q", m.Partition, m.Offset, old, v))
		}
		w.seen[m.Partition][m.Offset] = v
	}
}

func (w *workload) ackedCount(part int32) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if part >= 0 {
		return len(w.acked[part])
	}
	n := 0
	for _, a := range w.acked {
		n += len(a)
	}
	return n
}

// waitAcked waits until n more records (of part, or of all partitions when
// part < 0) are acknowledged.
func (w *workload) waitAcked(part int32, n int, within time.Duration) {
	w.t.Helper()
	target := w.ackedCount(part) + n
	clustertest.WaitFor(w.t, within, func() error {
		if got := w.ackedCount(part); got < target {
			return fmt.Errorf("%d of %d records acknowledged (partition %d)", got, target, part)
		}
		return nil
	})
}

// finish stops producing, waits for the outstanding records' fates and
// for the consumer to read up to the partitions' ends.
func (w *workload) finish(via *hostProc) {
	w.t.Helper()
	close(w.stop)
	w.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := w.p.Close(ctx); err != nil {
		w.t.Fatalf("closing the producer: %v", err)
	}
	ends := via.endOffsets(w.topic)
	clustertest.WaitFor(w.t, 60*time.Second, func() error {
		w.mu.Lock()
		defer w.mu.Unlock()
		for part, end := range ends {
			if n := int64(len(w.seen[int32(part)])); n < end {
				return fmt.Errorf("consumer read %d of %d records of partition %d", n, end, part)
			}
		}
		return nil
	})
	w.c.System().Root.Stop(w.cons)
}

// check asserts the history against the final log (read through via) and
// compares the replicas' logs once all hosts are stopped.
func (w *workload) check(hosts []*hostProc, via *hostProc) {
	w.t.Helper()
	t := w.t
	waitFullISR(t, via, w.topic)
	ends := via.endOffsets(w.topic)
	recs := via.consumeAll(w.topic, int(sum(ends)))
	log := map[int32][]consumed{}
	for _, r := range recs {
		log[r.partition] = append(log[r.partition], r)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.reread {
		t.Errorf("the consumer read a record that changed: %s", r)
	}
	totalAcked, totalFailed := 0, 0
	for part := int32(0); part < int32(w.parts); part++ {
		at := map[int64]string{}
		pos := map[int]int{} // produce seq -> index in the log
		last := -1
		for i, r := range log[part] {
			at[r.offset] = r.value
			seq, err := strconv.Atoi(strings.TrimPrefix(r.value, strconv.Itoa(int(part))+"-"))
			if err != nil || value(part, seq) != r.value {
				t.Fatalf("partition %d offset %d: foreign value %q", part, r.offset, r.value)
			}
			if _, dup := pos[seq]; dup {
				t.Errorf("partition %d: record %s is in the log twice (offsets %d and %d)", part, r.value, log[part][pos[seq]].offset, r.offset)
			}
			pos[seq] = i
			if seq <= last {
				t.Errorf("partition %d offset %d: record %s after %s (out of produce order)", part, r.offset, r.value, value(part, last))
			}
			last = max(last, seq)
		}
		for _, seq := range w.acked[part] {
			if _, ok := pos[seq]; !ok {
				t.Errorf("partition %d: acknowledged record %s is not in the log", part, value(part, seq))
			}
		}
		for off, v := range w.seen[part] {
			if at[off] != v {
				t.Errorf("partition %d offset %d: the consumer read %q, the log now holds %q (truncated after it was read)", part, off, v, at[off])
			}
		}
		totalAcked += len(w.acked[part])
		totalFailed += w.failed[part]
	}
	t.Logf("%d records acknowledged, %d failed, %d in the log; the consumer read %d", totalAcked, totalFailed, len(recs), w.seenCountLocked())

	for _, h := range hosts {
		if code := h.stop(syscall.SIGTERM); code != 0 {
			t.Fatalf("host %s exited with %d", h.addr(), code)
		}
	}
	for part := 0; part < w.parts; part++ {
		want := readLog(t, filepath.Join(hosts[0].dir, fmt.Sprintf("%s-%d", w.topic, part)))
		for _, h := range hosts[1:] {
			if got := readLog(t, filepath.Join(h.dir, fmt.Sprintf("%s-%d", w.topic, part))); !bytes.Equal(got, want) {
				t.Errorf("partition %d: the replica on %s differs from the one on %s (%d vs %d bytes)", part, h.addr(), hosts[0].addr(), len(got), len(want))
			}
		}
	}
}

func (w *workload) seenCountLocked() int {
	n := 0
	for _, s := range w.seen {
		n += len(s)
	}
	return n
}

// waitFullISR waits until every partition of topic has a leader and all
// three replicas in sync.
func waitFullISR(t *testing.T, via *hostProc, topic string) {
	t.Helper()
	clustertest.WaitFor(t, 90*time.Second, func() error {
		rows, err := describePartitions(t, via, topic)
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
}

// soakOrCycles returns how long to keep killing (0: use cycles) and the
// cycle count.
func soakOrCycles(t *testing.T) (time.Duration, int) {
	t.Helper()
	if v := os.Getenv("ACTORLOG_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("ACTORLOG_SOAK=%q: want a positive duration", v)
		}
		return d, 0
	}
	return 0, trialCount(t, "ACTORLOG_KILL_CYCLES", 2)
}

func TestRepeatedLeaderKillsLoseNothing(t *testing.T) {
	soak, cycles := soakOrCycles(t)
	hosts := startCluster(t)
	const topic, parts = "jepsen-kill", 3
	hosts[0].mustCLI("", "topics", "create", topic, "--partitions", strconv.Itoa(parts), "--replication-factor", "3", "--config", "min.insync.replicas=2")
	w := startWorkload(t, hosts, topic, parts)
	w.waitAcked(-1, 2000, 60*time.Second)

	start := time.Now()
	for i := 0; (soak == 0 && i < cycles) || (soak > 0 && time.Since(start) < soak); i++ {
		part := int32(i % parts)
		rows, err := describePartitions(t, hosts[(i+1)%3], topic)
		if err != nil {
			t.Fatal(err)
		}
		victim := hostByID(t, hosts, rows[part].leader)
		victim.stop(syscall.SIGKILL)
		killed := time.Now()
		// Writes to the killed leader's partition resume on a new leader.
		w.waitAcked(part, 500, 90*time.Second)
		t.Logf("cycle %d: killed host %d (leader of partition %d); its partition took writes again after %v",
			i+1, rows[part].leader, part, time.Since(killed).Round(10*time.Millisecond))
		victim.start()
		waitFullISR(t, others(hosts, victim)[0], topic)
		w.waitAcked(-1, 1000, 60*time.Second)
	}
	via := hosts[0]
	w.finish(via)
	w.check(hosts, via)
}

func TestFrozenLeaderCannotAcknowledgeLostRecords(t *testing.T) {
	hosts := startCluster(t)
	const topic, parts = "jepsen-freeze", 3
	hosts[0].mustCLI("", "topics", "create", topic, "--partitions", strconv.Itoa(parts), "--replication-factor", "3", "--config", "min.insync.replicas=2")
	w := startWorkload(t, hosts, topic, parts)
	w.waitAcked(-1, 2000, 60*time.Second)

	// Freeze the leader of a partition whose host is not the etcd raft
	// leader (resuming a frozen raft leader makes etcd revoke every lease;
	// TestFrozenEtcdLeaderDoesNotSplitTheCluster covers that).
	rows, err := describePartitions(t, hosts[0], topic)
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].partition < rows[j].partition })
	var victim *hostProc
	var part int32 = -1
	victimID := -1
	for _, r := range rows {
		h := hostByID(t, hosts, r.leader)
		if isLeader, err := h.etcdLeader(); err == nil && !isLeader {
			victim, part, victimID = h, int32(r.partition), r.leader
			break
		}
	}
	if victim == nil {
		t.Fatalf("every partition leader is the etcd raft leader: %+v", rows)
	}
	survivor := others(hosts, victim)[0]
	victim.signal(syscall.SIGSTOP)
	frozen := time.Now()
	// Past the lease, another replica leads the partition and takes writes.
	clustertest.WaitFor(t, 60*time.Second, func() error {
		rows, err := describePartitions(t, survivor, topic)
		if err != nil {
			return err
		}
		for _, r := range rows {
			if int32(r.partition) == part && (r.leader < 0 || r.leader == victimID) {
				return fmt.Errorf("partition %d still led by the frozen host", part)
			}
		}
		return nil
	})
	w.waitAcked(part, 500, 60*time.Second)
	t.Logf("partition %d took writes on a new leader %v after its leader froze", part, time.Since(frozen).Round(10*time.Millisecond))
	w.waitAcked(-1, 1000, 60*time.Second)

	// Resumed, the old leader still has the producer's requests from before
	// the freeze in its mailbox and believes it leads; nothing it answers
	// may be acknowledged and then lost (check verifies).
	victim.signal(syscall.SIGCONT)
	clustertest.WaitFor(t, 30*time.Second, func() error {
		if !strings.Contains(victim.log(), "fenced") {
			return fmt.Errorf("the resumed host has not noticed it was fenced")
		}
		return nil
	})
	waitFullISR(t, survivor, topic)
	w.waitAcked(-1, 1000, 60*time.Second)
	w.finish(survivor)
	w.check(hosts, survivor)
}
