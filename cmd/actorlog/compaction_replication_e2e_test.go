// compaction_replication_e2e_test.go: a compacted topic with replication
// factor 3 through a SIGKILL of its leader (issue 14: "a compacted RF=3
// topic through a leader SIGKILL: followers' reads give the same
// latest-value map as the leader"), against three real `actorlog host`
// processes with Kafka listeners.
//
// TestCompactedTopicReplicationLeaderKill: hosts with a 100 ms
// --log-cleaner-backoff and 1 KiB minimum segments serve one partition,
// cleanup.policy=compact, segment.bytes=16384, min.cleanable.dirty.ratio=
// 0.01, min.insync.replicas=2 and the default delete.retention.ms (one
// day: every tombstone stays, so the latest-value map holds each deleted
// key as a tombstone at a known offset, the same on every replica whatever
// each cleaner did, and a cleaner that dropped a tombstone, or the older
// value under it, would show). An idempotent acks=all kgo producer writes
// updates to 30 hot keys and, every 50th record, to one of 20 cold keys
// (whose records stay scattered in the cleaned segments), with
// tombstones among both; the expected map is built from acknowledgements
// only (per key, the record at its highest acknowledged offset). Once the
// leader's cleaner has cleaned, the leader is SIGKILLed mid-stream;
// production goes on through the failover.
// Checked:
//   - after the failover, a consumer reading the new leader from the start
//     gets exactly the expected map (each key's newest record at its
//     acknowledged offset, tombstones included), at strictly increasing
//     offsets with gaps (the new leader's log is compacted);
//   - the killed host restarts and rejoins the ISR, more updates are
//     written with all three in the ISR, and every host's cleaner cleans
//     (actorlog_log_cleaner_cleanings_total > 0 on each, the restarted one
//     counting from its restart);
//   - then all three are SIGKILLed and each replica's own log, opened
//     offline with the storage package, ends at the same offset as the
//     leader's high watermark and gives the same map as the others and as
//     the expected one, holds fewer records than were written, and its
//     cleaner checkpoint is past the first offset written after the
//     restart: each replica cleaned its own log, followers included.
//
// A produce that fails leaves its key uncertain: that key may hold either
// the acknowledged value or a failed one (kgo retries through a failover,
// so none is expected to fail); the replicas must still agree exactly.

package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/actorlog/actorlog/actors/replica"
	"github.com/actorlog/actorlog/internal/poll"
	"github.com/actorlog/actorlog/storage"
	"github.com/actorlog/actorlog/storage/record"
)

const crTopic = "compacted-rf3"

// crEntry is a key's newest record: its offset and value (tomb: a
// tombstone, val empty).
type crEntry struct {
	off  int64
	val  string
	tomb bool
}

func (e crEntry) String() string {
	if e.tomb {
		return fmt.Sprintf("tombstone@%d", e.off)
	}
	return fmt.Sprintf("%.12q@%d", e.val, e.off)
}

// crWrite is one produced record and its outcome.
type crWrite struct {
	key  string
	val  string
	tomb bool
	off  int64
	at   time.Time
	err  error
}

// crProducer is an idempotent acks=all kgo producer of updates and
// tombstones to 50 keys, keeping every outcome.
type crProducer struct {
	cl    *kgo.Client
	mu    sync.Mutex
	next  int // index of the next record
	acked []crWrite
	fails []crWrite
}

func newCrProducer(t *testing.T, addrs []string) *crProducer {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(crTopic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), // uncompressed: segments roll by the record bytes
		kgo.ProducerLinger(5*time.Millisecond), kgo.MetadataMinAge(100*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &crProducer{cl: cl}
}

// produceOne sends record number i: every 50th goes to one of 20 cold
// keys (written rarely: their records stay scattered in the cleaned
// segments), the others to one of 30 hot keys; every 13th hot record and
// every 7th cold one is a tombstone.
func (p *crProducer) produceOne(i int) {
	var w crWrite
	if i%50 == 0 {
		w = crWrite{key: fmt.Sprintf("cold-%02d", (i/50)%20), tomb: (i/50)%7 == 3}
	} else {
		w = crWrite{key: fmt.Sprintf("hot-%02d", i%30), tomb: i%13 == 0}
	}
	rec := &kgo.Record{Key: []byte(w.key)}
	if !w.tomb {
		w.val = fmt.Sprintf("%s=v%06d-%s", w.key, i, strings.Repeat("x", 80))
		rec.Value = []byte(w.val)
	}
	p.cl.Produce(context.Background(), rec, func(r *kgo.Record, err error) {
		w.off, w.at, w.err = r.Offset, time.Now(), err
		p.mu.Lock()
		defer p.mu.Unlock()
		if err != nil {
			p.fails = append(p.fails, w)
			return
		}
		p.acked = append(p.acked, w)
	})
}

// run produces one record a millisecond until stop is closed, then
// flushes.
func (p *crProducer) run(t *testing.T, stop <-chan struct{}) {
	t.Helper()
	for {
		select {
		case <-stop:
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := p.cl.Flush(ctx); err != nil {
				t.Errorf("flush the producer: %v", err)
			}
			return
		default:
		}
		p.produceOne(p.next)
		p.next++
		time.Sleep(time.Millisecond)
	}
}

// start produces in the background until the returned stop is called,
// which flushes.
func (p *crProducer) start(t *testing.T) (stop func()) {
	t.Helper()
	stopc := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.run(t, stopc)
	}()
	return sync.OnceFunc(func() {
		close(stopc)
		<-done
	})
}

// until polls cond with the producer's lock held.
func (p *crProducer) until(t *testing.T, timeout time.Duration, cond func() error) {
	t.Helper()
	poll.Until(t, timeout, func() error {
		p.mu.Lock()
		defer p.mu.Unlock()
		return cond()
	})
}

// expected returns the latest-value map built from the acknowledgements,
// and the keys a failed produce leaves uncertain with the failed records.
func (p *crProducer) expected() (map[string]crEntry, map[string][]crWrite) {
	p.mu.Lock()
	defer p.mu.Unlock()
	want := map[string]crEntry{}
	for _, w := range p.acked {
		if e, ok := want[w.key]; !ok || w.off > e.off {
			want[w.key] = crEntry{off: w.off, val: w.val, tomb: w.tomb}
		}
	}
	uncertain := map[string][]crWrite{}
	for _, w := range p.fails {
		uncertain[w.key] = append(uncertain[w.key], w)
	}
	return want, uncertain
}

// crCheckMap compares a replica's map with the expected one: exact for
// every key, except that an uncertain key may hold one of its failed
// values instead.
func crCheckMap(got, want map[string]crEntry, uncertain map[string][]crWrite) error {
	var bad []string
	for k := range crKeySet(got, want) {
		g, gok := got[k]
		w, wok := want[k]
		if gok && wok && g == w {
			continue
		}
		if fails, ok := uncertain[k]; ok && gok && slices.ContainsFunc(fails, func(f crWrite) bool { return f.tomb == g.tomb && f.val == g.val }) {
			continue
		}
		switch {
		case !gok:
			bad = append(bad, fmt.Sprintf("%s: missing, want %v", k, w))
		case !wok:
			bad = append(bad, fmt.Sprintf("%s: %v, never acknowledged", k, g))
		default:
			bad = append(bad, fmt.Sprintf("%s: %v, want %v", k, g, w))
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return fmt.Errorf("%d keys differ: %s", len(bad), strings.Join(bad[:min(len(bad), 10)], "; "))
	}
	return nil
}

func crKeySet(ms ...map[string]crEntry) map[string]bool {
	out := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			out[k] = true
		}
	}
	return out
}

// crScan is what one read of the partition found.
type crScan struct {
	latest  map[string]crEntry
	records int
	gaps    int // places where an offset was skipped
}

// add takes the next record read (crOrder checks the offsets).
func (s *crScan) add(off int64, key, val []byte) error {
	if s.latest == nil {
		s.latest = map[string]crEntry{}
	}
	if key == nil {
		return fmt.Errorf("offset %d: a record without a key", off)
	}
	s.records++
	s.latest[string(key)] = crEntry{off: off, val: string(val), tomb: val == nil}
	return nil
}

// crOrder checks strictly increasing offsets and counts the gaps; last
// starts one below the log start offset, so that a first record past the
// log start (everything before it cleaned away) counts as a gap.
type crOrder struct{ last int64 }

func (o *crOrder) next(off int64) (gap bool, err error) {
	if off <= o.last {
		return false, fmt.Errorf("offset %d after %d", off, o.last)
	}
	gap = off > o.last+1
	o.last = off
	return gap, nil
}

// crConsume reads partition 0 from the start up to end (exclusive)
// through a fresh kgo consumer seeded with addrs (a Kafka consumer reads
// the leader).
func crConsume(t *testing.T, addrs []string, end int64) (*crScan, error) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.MetadataMinAge(100*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{crTopic: {0: kgo.NewOffset().AtStart()}}), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("consumer: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := &crScan{}
	order := crOrder{last: -1} // the log start: 0, nothing deletes segments of a compacted topic
	for order.last < end-1 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("read up to offset %d of %d: %w", order.last, end, ctx.Err())
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch %s-0: %v", crTopic, err) })
		fs.EachRecord(func(rec *kgo.Record) {
			if ferr != nil || rec.Offset >= end {
				return
			}
			gap, err := order.next(rec.Offset)
			if err != nil {
				ferr = err
				return
			}
			if gap {
				s.gaps++
			}
			ferr = s.add(rec.Offset, rec.Key, rec.Value)
		})
		if ferr != nil {
			return nil, ferr
		}
	}
	return s, nil
}

// crReplicaLog is one replica's log read offline.
type crReplicaLog struct {
	scan       *crScan
	start, end int64
	firstDirty int64 // the cleaner checkpoint
	segments   int
}

// crReadLog opens the partition log in dir (its host is dead) and reads
// it whole.
func crReadLog(t *testing.T, dir string) crReplicaLog {
	t.Helper()
	l, err := storage.Open(dir, storage.Config{})
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			t.Errorf("close %s: %v", dir, err)
		}
	}()
	fd, err := l.FirstDirtyOffset()
	if err != nil {
		t.Fatalf("%s: cleaner checkpoint: %v", dir, err)
	}
	out := crReplicaLog{scan: &crScan{}, start: l.LogStartOffset(), end: l.LogEndOffset(), firstDirty: fd, segments: l.NumSegments()}
	order := crOrder{last: out.start - 1}
	var rec record.Record
	for off := out.start; off < out.end; {
		res, err := l.Read(off, 1<<20, out.end)
		if err != nil {
			t.Fatalf("read %s at %d: %v", dir, off, err)
		}
		next := off
		for sc := record.Batches(res.Records); sc.Next(); {
			h := sc.Header()
			next = h.NextOffset()
			if h.Control() {
				continue
			}
			br, err := record.NewBatchReader(sc.Batch(), 64<<20)
			if err != nil {
				t.Fatalf("%s: batch at %d: %v", dir, h.BaseOffset, err)
			}
			for br.Next(&rec) {
				if rec.Offset < off {
					continue
				}
				gap, err := order.next(rec.Offset)
				if err != nil {
					t.Fatalf("%s: %v", dir, err)
				}
				if gap {
					out.scan.gaps++
				}
				var val []byte
				if rec.Value != nil {
					val = slices.Clone(rec.Value)
				}
				if err := out.scan.add(rec.Offset, slices.Clone(rec.Key), val); err != nil {
					t.Fatalf("%s: %v", dir, err)
				}
			}
			if err := br.Err(); err != nil {
				t.Fatalf("%s: batch at %d: %v", dir, h.BaseOffset, err)
			}
		}
		if next <= off {
			t.Fatalf("%s: no batch at %d below the log end %d", dir, off, out.end)
		}
		off = next
	}
	return out
}

// crMetric reads one sample of a host's /metrics (false when absent).
func crMetric(h *hostProc, sample string) (float64, bool, error) {
	m, err := connLimitMetrics(h)
	if err != nil {
		return 0, false, err
	}
	v, ok := m[sample]
	return v, ok, nil
}

const (
	crCleanings  = "actorlog_log_cleaner_cleanings_total"
	crDirtyRatio = `actorlog_log_dirty_ratio{partition="0",topic="` + crTopic + `"}`
)

func TestCompactedTopicReplicationLeaderKill(t *testing.T) {
	t0 := time.Now()
	hosts, addrs := startKafkaCluster(t, "--log-cleaner-backoff", "100ms", "--unsafe-min-segment-bytes", "1024")
	k := &kafkaTrio{t: t, hosts: hosts, addrs: addrs}
	adm := foAdmin(t, k.addrs...)
	k.hosts[0].mustCLI("", "topics", "create", crTopic, "--partitions", "1", "--replication-factor", "3",
		"--config", "min.insync.replicas=2", "--config", "cleanup.policy=compact", "--config", "segment.bytes=16384",
		"--config", "min.cleanable.dirty.ratio=0.01")
	td := k.waitFullISR(adm, crTopic, 1)
	victim := k.leaderIndex(adm, td, 0)
	p := newCrProducer(t, k.addrs)

	// Phase 1: updates until the leader's cleaner has cleaned (up to its
	// high watermark).
	stop := p.start(t)
	defer stop()
	p.until(t, 40*time.Second, func() error {
		n, ok, err := crMetric(k.hosts[victim], crCleanings)
		if err != nil || !ok || n == 0 || len(p.acked) < 2000 {
			return fmt.Errorf("%d acknowledged (want 2000), leader host%d cleanings %v (%v); failures %d", len(p.acked), victim+1, n, err, len(p.fails))
		}
		return nil
	})
	p.mu.Lock()
	before := len(p.acked)
	p.mu.Unlock()

	// Phase 2: the leader is SIGKILLed while the producer runs; it goes
	// on until 1500 records are acknowledged through the new leader.
	p.until(t, 30*time.Second, func() error {
		if len(p.acked) < before+300 {
			return fmt.Errorf("%d acknowledged since the leader cleaned", len(p.acked)-before)
		}
		return nil
	})
	if code := k.hosts[victim].stop(syscall.SIGKILL); code != -int(syscall.SIGKILL) {
		t.Fatalf("host exit %d, want killed", code)
	}
	killed := time.Now()
	p.mu.Lock()
	atKill := len(p.acked)
	p.mu.Unlock()
	var failover time.Duration
	p.until(t, 60*time.Second, func() error {
		after := 0
		for _, w := range p.acked {
			if w.at.After(killed.Add(foDrainSlack)) {
				if after == 0 {
					failover = w.at.Sub(killed)
				}
				after++
			}
		}
		if after < 1500 {
			return fmt.Errorf("%d acknowledged after the kill (failover %v); failures %d", after, failover, len(p.fails))
		}
		return nil
	})
	stop()
	survivors := k.except(victim)
	sadm := foAdmin(t, survivors...)
	// The new leader, found by its Kafka address (host ids follow the
	// order the hosts registered in, not their names).
	var newLeader int
	poll.Until(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		md, err := sadm.Metadata(ctx, crTopic)
		if err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
		p0, ok := md.Topics[crTopic].Partitions[0]
		if !ok || p0.Err != nil || p0.Leader < 0 {
			return fmt.Errorf("partition 0 of %s: %+v", crTopic, md.Topics[crTopic].Partitions)
		}
		for _, b := range md.Brokers {
			if b.NodeID != p0.Leader {
				continue
			}
			i := slices.Index(k.addrs, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
			if i < 0 || i == victim {
				return fmt.Errorf("%s-0 led by node %d at %s:%d (killed host%d at %s)", crTopic, p0.Leader, b.Host, b.Port, victim+1, k.addrs[victim])
			}
			newLeader = i
			return nil
		}
		return fmt.Errorf("%s-0 led by node %d, not among the brokers %v", crTopic, p0.Leader, md.Brokers)
	})

	// (1) The new leader's log read from the start: the expected map, at
	// increasing offsets, with gaps.
	want, uncertain := p.expected()
	ends, err := sadm.ListEndOffsets(context.Background(), crTopic)
	if err != nil {
		t.Fatalf("end offsets: %v", err)
	}
	end1, ok := ends.Lookup(crTopic, 0)
	if !ok || end1.Err != nil {
		t.Fatalf("end offset of %s-0: %+v", crTopic, end1)
	}
	var read1 *crScan
	poll.Until(t, 30*time.Second, func() error {
		s, err := crConsume(t, survivors, end1.Offset)
		if err != nil {
			return err
		}
		if err := crCheckMap(s.latest, want, uncertain); err != nil {
			t.Fatalf("new leader host%d read from the start up to %d: %v", newLeader+1, end1.Offset, err)
		}
		if s.gaps == 0 || int64(s.records) >= end1.Offset {
			return fmt.Errorf("new leader host%d: %d records up to %d, %d gaps: not compacted yet", newLeader+1, s.records, end1.Offset, s.gaps)
		}
		read1 = s
		return nil
	})

	// (2) The killed host comes back and rejoins the ISR; more updates
	// with all three in the ISR, for every cleaner to clean.
	k.hosts[victim].start()
	k.waitFullISR(adm, crTopic, 1)
	p.mu.Lock()
	phaseStart := len(p.acked)
	p.mu.Unlock()
	stop = p.start(t)
	defer stop()
	p.until(t, 60*time.Second, func() error {
		if len(p.acked) < phaseStart+2000 {
			return fmt.Errorf("%d acknowledged after the restart", len(p.acked)-phaseStart)
		}
		return nil
	})
	stop()
	firstAfterRestart := int64(-1)
	lastAck := time.Time{}
	p.mu.Lock()
	for _, w := range p.acked[phaseStart:] {
		if firstAfterRestart < 0 || w.off < firstAfterRestart {
			firstAfterRestart = w.off
		}
	}
	for _, w := range p.acked {
		if w.at.After(lastAck) {
			lastAck = w.at
		}
	}
	written := p.next
	acked, failed := len(p.acked), len(p.fails)
	p.mu.Unlock()
	want, uncertain = p.expected()
	ends, err = adm.ListEndOffsets(context.Background(), crTopic)
	if err != nil {
		t.Fatalf("end offsets: %v", err)
	}
	end2, ok := ends.Lookup(crTopic, 0)
	if !ok || end2.Err != nil {
		t.Fatalf("end offset of %s-0: %+v", crTopic, end2)
	}
	// Every replica's high watermark checkpoint (5 s ticks; the offline
	// check below reads each log up to it) reaches the end and its
	// cleaner cleans what is below: wait past one tick after the last
	// write, then until every host has cleaned and sees nothing worth
	// cleaning, twice in a row.
	time.Sleep(time.Until(lastAck.Add(replicaHWCheckpointWait)))
	var cleanings [3]float64
	settled := 0
	poll.Until(t, 30*time.Second, func() error {
		for i, h := range k.hosts {
			n, ok, err := crMetric(h, crCleanings)
			if err != nil || !ok || n == 0 {
				settled = 0
				return fmt.Errorf("host%d: %s %v (%v)", i+1, crCleanings, n, err)
			}
			r, ok, err := crMetric(h, crDirtyRatio)
			if err != nil || !ok || r >= 0.01 {
				settled = 0
				return fmt.Errorf("host%d: dirty ratio of %s-0 %v (present %v, %v)", i+1, crTopic, r, ok, err)
			}
			if n != cleanings[i] {
				settled = 0
			}
			cleanings[i] = n
		}
		if settled++; settled < 2 {
			time.Sleep(300 * time.Millisecond)
			return fmt.Errorf("cleanings %v: not settled yet", cleanings)
		}
		return nil
	})

	tombs := 0
	for _, e := range want {
		if e.tomb {
			tombs++
		}
	}
	if tombs == 0 { // some key's last write is always a tombstone (see produceOne)
		t.Fatalf("no deleted key in the expected map of %d keys", len(want))
	}

	// All three die; each replica's own log, read offline.
	for i, h := range k.hosts {
		if code := h.stop(syscall.SIGKILL); code != -int(syscall.SIGKILL) {
			t.Fatalf("host%d exit %d, want killed", i+1, code)
		}
	}
	logs := make([]crReplicaLog, len(k.hosts))
	for i, h := range k.hosts {
		dir := filepath.Join(h.dir, crTopic+"-0")
		lg := crReadLog(t, dir)
		logs[i] = lg
		if lg.end != end2.Offset {
			t.Errorf("host%d: log ends at %d, the high watermark was %d", i+1, lg.end, end2.Offset)
		}
		if err := crCheckMap(lg.scan.latest, want, uncertain); err != nil {
			t.Errorf("host%d's log: %v", i+1, err)
		}
		if err := crCheckMap(lg.scan.latest, logs[0].scan.latest, nil); i > 0 && err != nil {
			t.Errorf("host%d's log against host1's: %v", i+1, err)
		}
		if lg.scan.records >= acked || lg.scan.gaps == 0 {
			t.Errorf("host%d: %d records with %d gaps, %d acknowledged: not compacted", i+1, lg.scan.records, lg.scan.gaps, acked)
		}
		if lg.firstDirty <= firstAfterRestart {
			t.Errorf("host%d: cleaner checkpoint %d, not past offset %d, the first written after host%d restarted", i+1, lg.firstDirty, firstAfterRestart, victim+1)
		}
	}
	var per []string
	for i, lg := range logs {
		role := "follower"
		switch i {
		case victim:
			role = "killed leader, restarted"
		case newLeader:
			role = "new leader"
		}
		per = append(per, fmt.Sprintf("host%d (%s): %d records in [%d, %d), %d segments, cleaner checkpoint %d, %v cleanings",
			i+1, role, lg.scan.records, lg.start, lg.end, lg.segments, lg.firstDirty, cleanings[i]))
	}
	t.Logf("compacted RF=3: %d records written (%d acknowledged, %d failed, %d before the kill), %d keys (%d deleted, %d uncertain); host%d SIGKILLed, "+
		"writes acknowledged again after %v; new leader host%d read %d records up to %d; per replica: %s; took %v",
		written, acked, failed, atKill, len(want), tombs, len(uncertain), victim+1, failover.Round(10*time.Millisecond), newLeader+1,
		read1.records, end1.Offset, strings.Join(per, "; "), time.Since(t0).Round(100*time.Millisecond))
}

// replicaHWCheckpointWait is how long after the last write every replica
// has checkpointed its final high watermark: a follower learns it on its
// next fetch, then checkpoints within replica.HighWatermarkCheckpointInterval
// (5 s).
const replicaHWCheckpointWait = replica.HighWatermarkCheckpointInterval + 1500*time.Millisecond
