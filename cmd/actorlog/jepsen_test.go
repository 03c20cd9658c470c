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
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/actors/consumer"
	"github.com/actorlog/actorlog/actors/producer"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/internal/tlsconf"
	"github.com/actorlog/actorlog/messages"
)

// workload produces to every partition of a topic at a steady rate and
// tails it, keeping a bounded history (history_test.go) per partition: a
// long run measures the system, not the harness. The producer's callbacks
// and the consumer's handler never share a lock.
type workload struct {
	t     *testing.T
	topic string
	parts []*partHistory
	c     *client.Client
	p     *producer.Producer
	cons  *actor.PID

	stop chan struct{}
	wg   sync.WaitGroup
}

// partHistory is one partition's history. The producer side is touched by
// delivery callbacks (on the producer actor), the consumer side by the
// handler (on the consumer actor); each has its own lock.
type partHistory struct {
	nextSeq     int64        // next sequence to send (the produce loop's own)
	outstanding atomic.Int64 // sent, fate not yet known
	nAcked      atomic.Int64
	nFailed     atomic.Int64
	lastAck     atomic.Int64 // when the last acknowledgement came (Unix ns)
	maxGap      atomic.Int64 // the longest time between two acknowledgements (ns) since takeMaxGap
	maxGapEnd   atomic.Int64 // when that pause ended (Unix ns)

	ackMu sync.Mutex
	acked offsetRuns // offset -> sequence, as acknowledged

	readMu    sync.Mutex
	read      offsetRuns // offset -> sequence, as the consumer read it
	lastSeq   int64      // the highest sequence read
	anomalies []string   // what the consumer read that cannot be (first few)
	nAnomaly  int
	nextRead  atomic.Int64 // one past the highest offset read
}

func value(part int32, seq int) string { return fmt.Sprintf("%d-%08d", part, seq) }

// Workload pacing: soakRate records a second over all partitions
// (ACTORLOG_SOAK_RATE), at most maxOutstanding unacknowledged records per
// partition: a partition without a leader stops taking records while the
// others go on, as an app with a bounded buffer would behave.
const (
	defaultSoakRate = 3000
	maxOutstanding  = 3000
)

// startWorkload starts producing (paced, round robin over the partitions)
// and consuming from the earliest offset.
func startWorkload(t *testing.T, hosts []*hostProc, topic string, parts int) *workload {
	t.Helper()
	return startWorkloadTLS(t, hosts, topic, parts, nil)
}

// startWorkloadTLS is startWorkload with a client speaking TLS with tlsr
// (hosts run with --remote-tls) when tlsr is set.
func startWorkloadTLS(t *testing.T, hosts []*hostProc, topic string, parts int, tlsr *tlsconf.Reloader) *workload {
	t.Helper()
	l := logrus.New()
	l.SetOutput(io.Discard)
	var boot []string
	for _, h := range hosts {
		boot = append(boot, h.addr())
	}
	c, err := client.New(client.Config{Bootstrap: boot, Logger: logrus.NewEntry(l), RequestTimeout: 5 * time.Second, TLS: tlsr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	p, err := producer.New(c, producer.ActorConfig{Acks: messages.Acks_ACKS_ALL, Config: producer.Config{DeliveryTimeout: 2 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	w := &workload{t: t, topic: topic, c: c, p: p, stop: make(chan struct{})}
	for i := 0; i < parts; i++ {
		w.parts = append(w.parts, &partHistory{lastSeq: -1})
	}
	props, err := consumer.Props(consumer.Config{Client: c, Topic: topic, Start: consumer.Earliest(), OnOutOfRange: consumer.Fail,
		OnError: func(error) {}, Handler: w.onConsumed})
	if err != nil {
		t.Fatal(err)
	}
	w.cons = c.System().Root.Spawn(props)
	rate := defaultSoakRate
	if v := os.Getenv("ACTORLOG_SOAK_RATE"); v != "" {
		if rate, err = strconv.Atoi(v); err != nil || rate < 100 {
			t.Fatalf("ACTORLOG_SOAK_RATE=%q: want at least 100 records a second", v)
		}
	}
	w.wg.Add(1)
	go w.produce(rate)
	return w
}

// produce sends rate records a second, round robin over the partitions
// that have room.
func (w *workload) produce(rate int) {
	defer w.wg.Done()
	const tick = 10 * time.Millisecond
	perTick := max(1, rate/int(time.Second/tick))
	tk := time.NewTicker(tick)
	defer tk.Stop()
	next := 0
	for {
		select {
		case <-w.stop:
			return
		case <-tk.C:
		}
		for sent, tried := 0, 0; sent < perTick && tried < perTick+len(w.parts); tried++ {
			part := int32(next % len(w.parts))
			next++
			ph := w.parts[part]
			if ph.outstanding.Load() >= maxOutstanding {
				continue
			}
			seq := ph.nextSeq
			ph.nextSeq++
			ph.outstanding.Add(1)
			sent++
			w.p.ProduceAsync(&producer.Send{Topic: w.topic, Partition: part, Value: []byte(value(part, int(seq))), Callback: func(d producer.Delivered) {
				ph.outstanding.Add(-1)
				if d.Err != nil {
					ph.nFailed.Add(1)
					return
				}
				ph.ackMu.Lock()
				if old, differs := ph.acked.add(d.Offset, seq); differs {
					// Two records acknowledged at one offset: kept for check.
					w.t.Errorf("partition %d offset %d acknowledged for %s and for %s", part, d.Offset, value(part, int(old)), value(part, int(seq)))
				}
				ph.ackMu.Unlock()
				ph.nAcked.Add(1)
				now := time.Now().UnixNano()
				if prev := ph.lastAck.Swap(now); prev != 0 && now-prev > ph.maxGap.Load() {
					ph.maxGap.Store(now - prev) // callbacks run one at a time
					ph.maxGapEnd.Store(now)
				}
			}})
		}
	}
}

func (w *workload) onConsumed(msgs []consumer.Message) {
	if len(msgs) == 0 {
		return
	}
	part := msgs[0].Partition
	ph := w.parts[part]
	prefix := strconv.Itoa(int(part)) + "-"
	ph.readMu.Lock()
	defer ph.readMu.Unlock()
	for _, m := range msgs {
		v := string(m.Value)
		seq, err := strconv.ParseInt(strings.TrimPrefix(v, prefix), 10, 64)
		if err != nil || !strings.HasPrefix(v, prefix) {
			ph.anomaly(fmt.Sprintf("partition %d offset %d: foreign value %q", part, m.Offset, v))
			continue
		}
		if m.Offset < ph.nextRead.Load() {
			if old, differs := ph.read.add(m.Offset, seq); differs {
				ph.anomaly(fmt.Sprintf("partition %d offset %d: read %s, later %s", part, m.Offset, value(part, int(old)), v))
			}
			continue
		}
		if seq <= ph.lastSeq {
			ph.anomaly(fmt.Sprintf("partition %d offset %d: read %s after %s (twice, or out of produce order)", part, m.Offset, v, value(part, int(ph.lastSeq))))
		}
		ph.lastSeq = max(ph.lastSeq, seq)
		ph.read.add(m.Offset, seq)
		ph.nextRead.Store(m.Offset + 1)
	}
}

// anomaly records something the consumer read that cannot be. Caller holds
// readMu.
func (ph *partHistory) anomaly(s string) {
	ph.nAnomaly++
	if len(ph.anomalies) < 20 {
		ph.anomalies = append(ph.anomalies, s)
	}
}

func (w *workload) ackedCount(part int32) int {
	if part >= 0 {
		return int(w.parts[part].nAcked.Load())
	}
	n := 0
	for _, ph := range w.parts {
		n += int(ph.nAcked.Load())
	}
	return n
}

// takeMaxGap returns the longest pause between two acknowledgements of any
// partition since the last call, that partition and when the pause ended,
// and starts measuring anew.
func (w *workload) takeMaxGap() (time.Duration, int32, time.Time) {
	var gap time.Duration
	var part int32
	var end time.Time
	for i, ph := range w.parts {
		if g := time.Duration(ph.maxGap.Swap(0)); g > gap {
			gap, part, end = g, int32(i), time.Unix(0, ph.maxGapEnd.Load())
		}
	}
	return gap, part, end
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
		for part, end := range ends {
			if n := w.parts[part].nextRead.Load(); n < end {
				return fmt.Errorf("consumer read up to %d of %d records of partition %d", n, end, part)
			}
		}
		return nil
	})
	w.c.System().Root.Stop(w.cons)
}

// check asserts the history against the final log: it stops every host,
// streams each partition's log from every replica's directory, checks the
// replicas are byte-identical and compares what was acknowledged and read
// with the log, offset by offset.
func (w *workload) check(hosts []*hostProc, via *hostProc) {
	w.t.Helper()
	t := w.t
	waitFullISR(t, via, w.topic)
	for _, h := range hosts {
		if code := h.stop(syscall.SIGTERM); code != 0 {
			t.Fatalf("host %s exited with %d", h.addr(), code)
		}
	}
	var totalAcked, totalFailed, totalRead, inLog int64
	for part, ph := range w.parts {
		scans := make([]*logScan, len(hosts))
		for i, h := range hosts {
			scans[i] = scanPartitionLog(t, filepath.Join(h.dir, fmt.Sprintf("%s-%d", w.topic, part)), int32(part))
			if i > 0 && !bytes.Equal(scans[i].digest, scans[0].digest) {
				t.Errorf("partition %d: the replica on %s differs from the one on %s (%d vs %d records)", part, h.addr(), hosts[0].addr(), scans[i].records, scans[0].records)
			}
		}
		log := scans[0]
		for _, p := range log.problems {
			t.Errorf("partition %d: %s", part, p)
		}
		ph.ackMu.Lock()
		if bad, n := ph.acked.mismatches(&log.runs, 10); n > 0 {
			t.Errorf("partition %d: %d acknowledged records are not in the log where they were acknowledged: %v", part, n, bad)
		}
		totalAcked += ph.acked.count()
		ph.ackMu.Unlock()
		ph.readMu.Lock()
		if bad, n := ph.read.mismatches(&log.runs, 10); n > 0 {
			t.Errorf("partition %d: %d records the consumer read are not in the final log at their offsets (truncated after they were read): %v", part, n, bad)
		}
		if ph.nAnomaly > 0 {
			t.Errorf("partition %d: the consumer read %d impossible records: %v", part, ph.nAnomaly, ph.anomalies)
		}
		totalRead += ph.read.count()
		ph.readMu.Unlock()
		totalFailed += ph.nFailed.Load()
		inLog += log.records
	}
	t.Logf("%d records acknowledged, %d failed, %d in the log; the consumer read %d", totalAcked, totalFailed, inLog, totalRead)
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

	var resumed, sustained, consumed []time.Duration
	res := newResourceLog(t, hosts, w)
	start := time.Now()
	for i := 0; (soak == 0 && i < cycles) || (soak > 0 && time.Since(start) < soak); i++ {
		part := int32(i % parts)
		rows, err := describePartitions(t, hosts[(i+1)%3], topic)
		if err != nil {
			t.Fatal(err)
		}
		victim := hostByID(t, hosts, rows[part].leader)
		before, readBefore := w.ackedCount(part), w.parts[part].nextRead.Load()
		victim.stop(syscall.SIGKILL)
		killed := time.Now()
		// Writes to the killed leader's partition resume on a new leader:
		// 100 acknowledgements (more than the answers that may have been on
		// their way from the killed leader), then 500.
		clustertest.WaitFor(t, 90*time.Second, func() error {
			if w.ackedCount(part) < before+100 {
				return fmt.Errorf("partition %d took no writes since its leader was killed", part)
			}
			return nil
		})
		resumed = append(resumed, time.Since(killed))
		// The same long-lived consumer reads on from the new leader.
		clustertest.WaitFor(t, 90*time.Second, func() error {
			if n := w.parts[part].nextRead.Load(); n < readBefore+100 {
				return fmt.Errorf("the consumer read %d records of partition %d since its leader was killed", n-readBefore, part)
			}
			return nil
		})
		consumed = append(consumed, time.Since(killed))
		w.waitAcked(part, 500, 90*time.Second)
		sustained = append(sustained, time.Since(killed))
		victim.start()
		waitFullISR(t, others(hosts, victim)[0], topic)
		w.waitAcked(-1, 1000, 60*time.Second)
		t.Logf("cycle %d: killed host %d (leader of partition %d); writes resumed after %v (100 acknowledged), 500 after %v; the consumer read 100 more after %v; %s",
			i+1, rows[part].leader, part, resumed[i].Round(10*time.Millisecond), sustained[i].Round(10*time.Millisecond), consumed[i].Round(10*time.Millisecond), res.sample(i+1))
		writeTestHeapProfile(t, i+1)
	}
	reportFailoverTrend(t, resumed, "writes resumed (100 acknowledged) after the kill")
	reportFailoverTrend(t, consumed, "the consumer read 100 more records of the partition after the kill")
	// A killed host's connections are refused: the survivors' probers
	// revoke its leases instead of waiting for them (actors/controller/probe.go).
	noticed := 0
	for _, h := range hosts {
		noticed += strings.Count(h.log(), "a host's process is gone")
	}
	if noticed < max(1, len(resumed)/2) {
		t.Errorf("the survivors noticed %d killed processes by refused connections over %d kills", noticed, len(resumed))
	}
	res.checkNoGrowth(len(resumed))
	via := hosts[0]
	w.finish(via)
	w.check(hosts, via)
}

// writeTestHeapProfile writes the test process's heap profile (after a
// collection) every 25 cycles to ACTORLOG_E2E_HEAP_PROFILE_DIR, when set:
// what a long run's client side holds, cycle by cycle (go tool pprof
// -diff_base).
func writeTestHeapProfile(t *testing.T, cycle int) {
	dir := os.Getenv("ACTORLOG_E2E_HEAP_PROFILE_DIR")
	if dir == "" || cycle%25 != 0 {
		return
	}
	runtime.GC()
	path := filepath.Join(dir, fmt.Sprintf("test-heap-cycle%03d.pprof", cycle))
	f, err := os.Create(path)
	if err != nil {
		t.Fatalf("heap profile: %v", err)
	}
	err = pprof.WriteHeapProfile(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("heap profile %s: %v", path, err)
	}
}

// reportFailoverTrend logs min/median/p90/max of the first and last
// quarter of a long run's cycles side by side, and with 100 cycles or
// more asserts there is no trend: a median of at most 8 s and a maximum of
// at most 12 s in both.
func reportFailoverTrend(t *testing.T, times []time.Duration, what string) {
	t.Helper()
	if len(times) == 0 {
		return
	}
	q := max(1, len(times)/4)
	early, late := times[:q], times[len(times)-q:]
	t.Logf("%s over %d cycles: all: %s", what, len(times), summarizeP90(times))
	t.Logf("  cycles 1–%d: %s", q, summarizeP90(early))
	t.Logf("  cycles %d–%d: %s", len(times)-q+1, len(times), summarizeP90(late))
	if len(times) < 100 {
		return
	}
	for _, half := range [][]time.Duration{early, late} {
		s := slices.Clone(half)
		slices.Sort(s)
		if med, mx := s[len(s)/2], s[len(s)-1]; med > 8*time.Second || mx > 12*time.Second {
			t.Errorf("%s: median %v, max %v; want at most 8 s and 12 s in every quarter", what, med, mx)
		}
	}
}

// summarizeP90 is summarize with the 90th percentile.
func summarizeP90(times []time.Duration) string {
	s := slices.Clone(times)
	slices.Sort(s)
	p90 := s[min(len(s)-1, len(s)*9/10)]
	return fmt.Sprintf("%s, p90 %v", summarize(times), p90.Round(10*time.Millisecond))
}

// resourceLog samples the test process and the hosts after every cycle.
//
// Growth is judged on medians over quarters of the run, not on single
// samples: a host's figures at any one cycle depend on how long ago it was
// last killed or restarted and on what transient state it holds (etcd peer
// streams being re-established, a follower catching up), which moves its
// live heap by ±4 MB and its RSS by more. A leak moves the median; noise
// does not.
type resourceLog struct {
	t     *testing.T
	hosts []*hostProc
	w     *workload               // its producer's stats are reported too (nil: none)
	prev  map[string]procSample   // by "test" or host address
	all   map[string][]procSample // every cycle's sample, from cycle 1
	// actors: the processes (actors and futures) in the test client's
	// registry at every cycle, from cycle 1 (w's client; nil without w).
	actors []int
}

func newResourceLog(t *testing.T, hosts []*hostProc, w *workload) *resourceLog {
	r := &resourceLog{t: t, hosts: hosts, w: w, prev: map[string]procSample{}, all: map[string][]procSample{}}
	if w != nil {
		warmRegistry(w.c.System())
	}
	r.sample(0)
	return r
}

// medianSample is the median RSS, live heap, descriptors and goroutines of
// samples, each taken on its own, and the largest file-backed RSS past its
// bound.
func medianSample(samples []procSample) procSample {
	med := func(get func(procSample) int64) int64 {
		v := make([]int64, len(samples))
		for i, s := range samples {
			v[i] = get(s)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	m := procSample{
		rssBytes:   med(func(s procSample) int64 { return s.rssBytes }),
		anonBytes:  med(func(s procSample) int64 { return s.anonBytes }),
		liveHeap:   med(func(s procSample) int64 { return s.liveHeap }),
		fds:        int(med(func(s procSample) int64 { return int64(s.fds) })),
		goroutines: int(med(func(s procSample) int64 { return int64(s.goroutines) })),
	}
	for i, s := range samples {
		if i == 0 || s.fileBytes-s.fileBound > m.fileBytes-m.fileBound {
			m.fileBytes, m.fileBound = s.fileBytes, s.fileBound
		}
	}
	return m
}

// sample reads every process and formats the reading.
func (r *resourceLog) sample(cycle int) string {
	var parts []string
	add := func(name string, s procSample, err error) {
		if err != nil {
			parts = append(parts, name+": "+err.Error())
			return
		}
		parts = append(parts, name+": "+s.format(r.prev[name]))
		r.prev[name] = s
		if cycle > 0 {
			r.all[name] = append(r.all[name], s)
		}
	}
	s, err := sampleSelf()
	add("test", s, err)
	if r.w != nil {
		n, kinds := registeredActors(r.w.c.System())
		if cycle > 0 {
			r.actors = append(r.actors, n)
		}
		parts = append(parts, fmt.Sprintf("client actors %d (%s)", n, topKinds(kinds, 3)))
		if st, err := r.w.p.Stats(); err != nil {
			parts = append(parts, "producer: "+err.Error())
		} else {
			parts = append(parts, fmt.Sprintf("producer: in flight %d pending %d sent %d retries %d delivered %d failed %d",
				st.InFlight, st.Pending, st.BatchesSent, st.Retries, st.RecordsDelivered, st.RecordsFailed))
		}
	}
	for _, h := range r.hosts {
		s, err := sampleHost(h)
		add(h.addr(), s, err)
	}
	return strings.Join(parts, "; ")
}

// checkNoGrowth compares, for every process, the medians of the first
// quarter of the run from cycle 10 on (the hosts have warmed up by then)
// with the medians of the last quarter: RSS, live heap, descriptors and
// goroutines may not grow by more than 10 %, and file-backed RSS must stay
// within the files mapped. Asserted for runs of 100 cycles or more,
// reported for shorter ones.
func (r *resourceLog) checkNoGrowth(cycles int) {
	for name, all := range r.all {
		if len(all) < 2 {
			continue
		}
		from := min(9, len(all)-1) // cycle 10
		q := max(1, min((len(all)-from)/2, len(all)/4))
		early, late := medianSample(all[from:from+q]), medianSample(all[len(all)-q:])
		r.t.Logf("%s: medians of cycles %d-%d: rss %dMB (anon %dMB) live heap %s fds %d goroutines %d; of cycles %d-%d: rss %dMB (anon %dMB) live heap %s fds %d goroutines %d; file-backed rss at most %dMB of %dMB mapped",
			name, from+1, from+q, early.rssBytes>>20, early.anonBytes>>20, mib(early.liveHeap), early.fds, early.goroutines,
			len(all)-q+1, len(all), late.rssBytes>>20, late.anonBytes>>20, mib(late.liveHeap), late.fds, late.goroutines, late.fileBytes>>20, late.fileBound>>20)
		grew := late.grewBeyond(early, 0.10)
		if name == "test" && len(r.actors) == len(all) {
			// The client's actors and futures: a leaked one grows the count.
			med := func(v []int) int { v = slices.Clone(v); slices.Sort(v); return v[len(v)/2] }
			a, b := med(r.actors[from:from+q]), med(r.actors[len(all)-q:])
			r.t.Logf("test client's registered actors and futures: median %d, then %d", a, b)
			if b > a+a/10+2 {
				grew = append(grew, fmt.Sprintf("registered actors %d, was %d", b, a))
			}
		}
		if len(grew) > 0 {
			if cycles >= 100 {
				r.t.Errorf("%s grew over %d cycles: %v", name, cycles, grew)
			} else {
				r.t.Logf("%s grew over %d cycles: %v", name, cycles, grew)
			}
		}
	}
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
