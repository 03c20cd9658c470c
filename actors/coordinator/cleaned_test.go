// cleaned_test.go: a coordinator replays an offsets topic partition the
// log cleaner compacted (issue 14: __consumer_offsets is cleanup.policy
// compact and the host's cleaner now cleans it). Many commits of the same
// few offsets go to a compacted log of small segments; with the pair
// stopped the log is cleaned (the offset commits superseded by later ones
// go, leaving offset gaps and maybe empty batches); a new pair on it loads
// across the gaps, with fewer records replayed than written, and serves
// the newest committed offsets.

package coordinator_test

import (
	"fmt"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/actors/replica"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage"
)

// compactedOffsetsLog is the offsets partition's log config here: compacted,
// small segments.
func compactedOffsetsLog() storage.Config {
	return storage.Config{CleanupPolicy: storage.CleanupCompact, SegmentBytes: 1024}
}

func startCompactedPair(t *testing.T, sys *actor.ActorSystem, dir string, epoch int32) pair {
	t.Helper()
	rep, err := sys.Root.SpawnNamed(replica.Props(replica.Config{
		Topic: messages.OffsetsTopic, Partition: partition, Dir: dir, LeaderEpoch: epoch, Self: 1,
		Internal: true, Logger: clustertest.Logger(t), Log: compactedOffsetsLog(),
	}), "replica")
	if err != nil {
		t.Fatalf("spawn replica: %v", err)
	}
	return pair{sys: sys, replica: rep, crd: startCoordinator(t, sys, rep, epoch, nil)}
}

func TestCoordinatorLoadsACleanedOffsetsLog(t *testing.T) {
	sys := actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	dir := t.TempDir()

	p := startCompactedPair(t, sys, dir, 0)
	waitState(t, sys, p.crd, loaded)
	want := map[int32]int64{}
	const commits = 120
	for i := 0; i < commits; i++ {
		offs := map[int32]int64{int32(i % 3): int64(i)}
		mustCommit(t, p, offs)
		for k, v := range offs {
			want[k] = v
		}
	}
	p.stop(t)

	cfg := compactedOffsetsLog()
	cfg.Logger = clustertest.Logger(t)
	l, err := storage.Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	stats, err := l.Clean(storage.CleanOptions{HighWatermark: -1})
	if err != nil {
		t.Fatalf("clean: %v", err)
	}
	if stats.Groups == 0 || stats.RecordsKept >= stats.RecordsIn {
		t.Fatalf("the cleaning removed nothing: %+v", stats)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	p = startCompactedPair(t, sys, dir, 1)
	st := waitState(t, sys, p.crd, loaded)
	if st.LoadedRecords >= commits || st.Offsets != 3 || st.Groups != 1 {
		t.Fatalf("state after loading the cleaned log %+v: want fewer than %d records, 3 offsets of 1 group", st, commits)
	}
	if got := fetched(t, p); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("fetched after loading the cleaned log %v, want %v", got, want)
	}
	mustCommit(t, p, map[int32]int64{0: 1000})
	want[0] = 1000
	if got := fetched(t, p); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("fetched after a new commit %v, want %v", got, want)
	}
	p.stop(t)
}
