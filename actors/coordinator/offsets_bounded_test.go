// offsets_bounded_test.go: the offsets topic stays bounded under a flood of
// commits (issue 14's acceptance check). One group commits 1,000,000
// offsets (4 partitions per OffsetCommit, 250,000 pipelined requests)
// through a real coordinator and leader replica of its offsets topic
// partition, whose log has the offsets topic's configs (cleanup.policy
// compact, no retention; segment.bytes lowered to the cluster's minimum,
// 1 MiB, as OffsetsTopicSegmentBytes is 100 MiB and the active segment is
// never cleaned) and is registered with a running host log cleaner of
// short backoff. Checked: once the cleaner caught up, the partition's
// directory holds less than 10 MiB (the raw commit batches are reported);
// a coordinator failover (pair stopped, a new replica and coordinator at
// the next leader epoch on the same log) loads in under a second and
// serves the last committed offsets. ACTORLOG_OFFSETS_COMMITS=<n> changes
// how many offsets are committed.

package coordinator_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/actors/controller"
	"github.com/actorlog/actorlog/actors/coordinator"
	"github.com/actorlog/actorlog/actors/replica"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage"
)

const (
	// boundedCommitPartitions is how many partitions of "events" each
	// commit carries.
	boundedCommitPartitions = 4
	// boundedCommitWindow is how many commits are in flight at once.
	boundedCommitWindow = 256
	// boundedDiskLimit is the bound on the cleaned partition's directory.
	boundedDiskLimit = 10 << 20
	// boundedLoadLimit bounds the load after failover.
	boundedLoadLimit = time.Second
)

// produceMeter counts the bytes the replica appended (replica.Metrics).
type produceMeter struct{ records, bytes atomic.Int64 }

func (m *produceMeter) Produced(topic string, _ int32, records, bytes int, _ time.Duration, code messages.ErrorCode) {
	if topic == messages.OffsetsTopic && code == 0 {
		m.records.Add(int64(records))
		m.bytes.Add(int64(bytes))
	}
}
func (*produceMeter) Fetched(string, int32, int, time.Duration, messages.ErrorCode) {}
func (*produceMeter) LogEndOffset(string, int32, int64)                             {}

// cleanMeter records the cleaner's cleanings (storage.CleanerObserver).
type cleanMeter struct {
	mu        sync.Mutex
	cleanings int
	recordsIn int64
	endOffset int64 // the checkpoint of the last cleaning
}

func (m *cleanMeter) LogCleaned(_ string, _ int32, s storage.CompactStats, _ time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cleanings++
	m.recordsIn += s.RecordsIn
	m.endOffset = max(m.endOffset, s.EndOffset)
}
func (*cleanMeter) DirtyRatio(string, int32, float64) {}
func (*cleanMeter) ForgetLog(string, int32)           {}

func (m *cleanMeter) snapshot() (cleanings int, recordsIn, endOffset int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cleanings, m.recordsIn, m.endOffset
}

// dirUsage is what a partition directory holds: the bytes of all its
// files, of its .log files, the .log count and the newest segment's base.
type dirUsage struct {
	total, logs int64
	segments    int
	activeBase  int64
	// logFiles lists the .log files as name:size.
	logFiles []string
}

// usage reads dir; files the cleaner deletes meanwhile are skipped.
func usage(dir string) (dirUsage, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return dirUsage{}, fmt.Errorf("list %s: %w", dir, err)
	}
	var u dirUsage
	for _, e := range entries {
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return dirUsage{}, fmt.Errorf("stat %s: %w", e.Name(), err)
		}
		if !info.Mode().IsRegular() {
			continue
		}
		u.total += info.Size()
		if filepath.Ext(e.Name()) == ".log" {
			u.logs += info.Size()
			u.segments++
			u.logFiles = append(u.logFiles, fmt.Sprintf("%s:%d", e.Name(), info.Size()))
			if base, err := strconv.ParseInt(e.Name()[:len(e.Name())-len(".log")], 10, 64); err == nil {
				u.activeBase = max(u.activeBase, base)
			}
		}
	}
	return u, nil
}

// boundedOffsetsLog is the offsets topic's log config, as the controller
// creates the topic, with the smallest segment.bytes a topic may have.
func boundedOffsetsLog(t *testing.T) storage.Config {
	t.Helper()
	configs := controller.OffsetsTopicConfigs()
	configs[cluster.ConfigSegmentBytes] = fmt.Sprint(cluster.MinSegmentBytes)
	cfg, err := cluster.StorageConfig(configs)
	if err != nil {
		t.Fatalf("offsets topic configs %v: %v", configs, err)
	}
	if !cfg.CleanupPolicy.Compacts() {
		t.Fatalf("the offsets topic's configs %v do not compact", configs)
	}
	return cfg
}

// startBoundedPair starts the leader replica of the group's offsets topic
// partition over dir at epoch, registered with cleaner, waits for it to
// open its log, then starts a coordinator beside it.
func startBoundedPair(t *testing.T, sys *actor.ActorSystem, dir string, epoch int32, cleaner *storage.Cleaner, metrics replica.Metrics) pair {
	t.Helper()
	rep, err := sys.Root.SpawnNamed(replica.Props(replica.Config{
		Topic: messages.OffsetsTopic, Partition: partition, Dir: dir, LeaderEpoch: epoch, Self: 1,
		Internal: true, Logger: clustertest.Logger(t), Log: boundedOffsetsLog(t), Cleaner: cleaner, Metrics: metrics,
	}), "replica")
	if err != nil {
		t.Fatalf("spawn replica: %v", err)
	}
	if st := request[replica.State](t, sys, rep, replica.GetState); st.LeaderEpoch != epoch {
		t.Fatalf("replica state %+v, want leader epoch %d", st, epoch)
	}
	crd := sys.Root.Spawn(coordinator.Props(coordinator.Config{
		Partition: partition, Partitions: partitions, LeaderEpoch: epoch, Replica: rep,
		Topics: map[string]int32{"events": boundedCommitPartitions}, Logger: clustertest.Logger(t),
	}))
	return pair{sys: sys, replica: rep, crd: crd}
}

// commitRequest commits offset off for every partition, as fetched
// expects it (metadata "m<offset>", leader epoch 4).
func commitRequest(off int64, id int64) *messages.OffsetCommitRequest {
	ct := &messages.OffsetCommitTopic{Topic: "events"}
	for part := int32(0); part < boundedCommitPartitions; part++ {
		ct.Partitions = append(ct.Partitions, &messages.OffsetCommitPartition{Partition: part, Offset: off, LeaderEpoch: 4, Metadata: fmt.Sprintf("m%d", off)})
	}
	return &messages.OffsetCommitRequest{GroupId: group, GenerationId: -1, Topics: []*messages.OffsetCommitTopic{ct}, CorrelationId: id}
}

// checkCommitted fails unless res is a successful answer to commit id.
func checkCommitted(res any, err error, id int64) error {
	if err != nil {
		return fmt.Errorf("commit %d: %w", id, err)
	}
	resp, ok := res.(*messages.OffsetCommitResponse)
	if !ok {
		return fmt.Errorf("commit %d: answer %T (%v)", id, res, res)
	}
	if err := resp.Err(); err != nil || resp.CorrelationId != id || len(resp.Results) != boundedCommitPartitions {
		return fmt.Errorf("commit %d: %v, correlation %d, results %v", id, err, resp.CorrelationId, resp.Results)
	}
	for _, r := range resp.Results {
		if r.ErrorCode != 0 {
			return fmt.Errorf("commit %d of %s-%d: %w", id, r.Topic, r.Partition, r.ErrorCode.Err(r.ErrorMessage))
		}
	}
	return nil
}

func TestOffsetsTopicStaysBoundedUnderAMillionCommits(t *testing.T) {
	offsets := int64(1_000_000)
	if v := os.Getenv("ACTORLOG_OFFSETS_COMMITS"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < boundedCommitPartitions {
			t.Fatalf("ACTORLOG_OFFSETS_COMMITS=%q: want at least %d offsets", v, boundedCommitPartitions)
		}
		offsets = n
	}
	requests := offsets / boundedCommitPartitions

	sys := actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	dir := t.TempDir()
	cleaned := &cleanMeter{}
	cleaner, err := storage.NewCleaner(storage.CleanerConfig{
		Backoff: 50 * time.Millisecond, DedupeBufferBytes: 4 << 20, Observer: cleaned, Logger: clustertest.Logger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	cleaner.Start()
	t.Cleanup(cleaner.Stop)
	produced := &produceMeter{}

	p := startBoundedPair(t, sys, dir, 0, cleaner, produced)
	waitState(t, sys, p.crd, loaded)

	// Sample the directory while committing: its peak is reported.
	var peak atomic.Int64
	stopSampling := make(chan struct{})
	sampled := make(chan error, 1)
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			u, err := usage(dir)
			if err != nil {
				sampled <- err
				return
			}
			if u.total > peak.Load() {
				peak.Store(u.total)
			}
			select {
			case <-stopSampling:
				sampled <- nil
				return
			case <-tick.C:
			}
		}
	}()

	// Commit offset i of every partition with request i, at most
	// boundedCommitWindow in flight; the coordinator writes them in
	// mailbox order, so the last request's offsets are the committed ones.
	start := time.Now()
	window := make([]*actor.Future, 0, boundedCommitWindow)
	ids := make([]int64, 0, boundedCommitWindow)
	for i := int64(1); i <= requests; i++ {
		if len(window) == boundedCommitWindow {
			res, err := window[0].Result()
			if err := checkCommitted(res, err, ids[0]); err != nil {
				t.Fatal(err)
			}
			window, ids = window[1:], ids[1:]
		}
		window = append(window, sys.Root.RequestFuture(p.crd, commitRequest(i, i), timeout))
		ids = append(ids, i)
	}
	for j, f := range window {
		res, err := f.Result()
		if err := checkCommitted(res, err, ids[j]); err != nil {
			t.Fatal(err)
		}
	}
	took := time.Since(start)
	want := map[int32]int64{}
	for part := int32(0); part < boundedCommitPartitions; part++ {
		want[part] = requests
	}
	committed := requests * boundedCommitPartitions
	t.Logf("committed %d offsets in %d requests in %v: %.0f offsets/s, %.0f requests/s; %d records (%d bytes) appended",
		committed, requests, took.Round(time.Millisecond), float64(committed)/took.Seconds(), float64(requests)/took.Seconds(),
		produced.records.Load(), produced.bytes.Load())
	if got := produced.records.Load(); got != committed {
		t.Fatalf("the replica appended %d records, want %d", got, committed)
	}
	if got := fetched(t, p); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("fetched %v, want %v", got, want)
	}

	// The cleaner catches up: every sealed segment cleaned (the high
	// watermark checkpoint, which bounds it, moves every 5 s).
	before, err := usage(dir)
	if err != nil {
		t.Fatal(err)
	}
	var after dirUsage
	clustertest.WaitFor(t, 30*time.Second, func() error {
		u, err := usage(dir)
		if err != nil {
			return err
		}
		after = u
		_, _, end := cleaned.snapshot()
		if end < u.activeBase || u.total >= boundedDiskLimit {
			return fmt.Errorf("cleaner at offset %d, active segment at %d; directory %d bytes", end, u.activeBase, u.total)
		}
		return nil
	})
	close(stopSampling)
	if err := <-sampled; err != nil {
		t.Fatalf("sampling %s: %v", dir, err)
	}
	cleanings, recordsIn, _ := cleaned.snapshot()
	t.Logf("on disk: %d bytes raw commit batches; directory %d bytes (%d in %d .log files) when the commits ended, %d bytes (%d in %d .log files) once cleaned; peak %d bytes sampled while committing; %d cleanings read %d records",
		produced.bytes.Load(), before.total, before.logs, before.segments, after.total, after.logs, after.segments, peak.Load(), cleanings, recordsIn)
	t.Logf("cleaned segments: %v", after.logFiles)
	if after.total >= boundedDiskLimit {
		t.Fatalf("the offsets partition holds %d bytes once cleaned, want < %d", after.total, boundedDiskLimit)
	}
	if produced.bytes.Load() <= 2*boundedDiskLimit && offsets >= 1_000_000 {
		t.Fatalf("only %d raw bytes committed: the bound proves nothing", produced.bytes.Load())
	}
	p.stop(t)

	// Failover: a new leadership (epoch 1) on the same log; the cleaner
	// goes on.
	startFailover := time.Now()
	p = startBoundedPair(t, sys, dir, 1, cleaner, produced)
	crdStart := time.Now()
	var st coordinator.State
	for {
		st = request[coordinator.State](t, sys, p.crd, coordinator.GetState)
		if st.Loaded || time.Since(crdStart) > 10*time.Second {
			break
		}
		time.Sleep(time.Millisecond)
	}
	load, failover := time.Since(crdStart), time.Since(startFailover)
	t.Logf("failover: coordinator loaded in %v (%v with the replica's start), replaying %d records; state %+v",
		load.Round(time.Millisecond), failover.Round(time.Millisecond), st.LoadedRecords, st)
	if !st.Loaded {
		t.Fatalf("the new coordinator did not load: %+v", st)
	}
	if failover >= boundedLoadLimit {
		t.Fatalf("failover load took %v, want < %v", failover, boundedLoadLimit)
	}
	if st.Offsets != boundedCommitPartitions || st.Groups != 1 || (offsets >= 1_000_000 && int64(st.LoadedRecords) >= committed/10) {
		t.Fatalf("state after failover %+v: want %d offsets of 1 group from far fewer than %d records", st, boundedCommitPartitions, committed)
	}
	if got := fetched(t, p); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("fetched after failover %v, want %v", got, want)
	}
	p.stop(t)
}
