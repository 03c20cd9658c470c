// coordinator_test.go: the coordinator actor beside a real leader replica
// of an offsets topic partition (one actor system, a log in a temporary
// directory): commits survive a restart of both on the same log, a
// coordinator whose replica moved to a newer epoch is fenced, the
// membership seam refuses commits, requests wait for the load, and users
// cannot produce to the topic. (Groups: groups_test.go.)

package coordinator_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/actors/coordinator"
	"github.com/actorlog/actorlog/actors/replica"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage/record"
)

const (
	timeout    = 5 * time.Second
	partitions = 5
	group      = "payments"
)

// partition is the offsets topic partition of group.
var partition = coordinator.PartitionFor(group, partitions)

func request[T any](t *testing.T, sys *actor.ActorSystem, pid *actor.PID, msg any) T {
	t.Helper()
	res, err := sys.Root.RequestFuture(pid, msg, timeout).Result()
	if err != nil {
		t.Fatalf("request %T: %v", msg, err)
	}
	v, ok := res.(T)
	if !ok {
		t.Fatalf("request %T: answer %T (%v)", msg, res, res)
	}
	return v
}

// pair is a leader replica of the group's offsets topic partition and a
// coordinator beside it.
type pair struct {
	sys          *actor.ActorSystem
	replica, crd *actor.PID
}

// startReplica starts the leader replica (host 1) of the partition over
// dir at epoch, with in-sync replicas isr (default: itself alone).
func startReplica(t *testing.T, sys *actor.ActorSystem, dir string, epoch int32, isr ...int32) *actor.PID {
	t.Helper()
	pid, err := sys.Root.SpawnNamed(replica.Props(replica.Config{
		Topic: messages.OffsetsTopic, Partition: partition, Dir: dir, LeaderEpoch: epoch, Self: 1,
		Replicas: isr, ISR: isr, Internal: true, Logger: clustertest.Logger(t),
		Hosts: map[int32]string{2: "nonhost"}, // host 2's fetches come from this actor system
	}), "replica") // one name, as the broker's: a restarted replica has the same PID
	if err != nil {
		t.Fatalf("spawn replica: %v", err)
	}
	return pid
}

// startCoordinator starts a coordinator at epoch beside rep.
func startCoordinator(t *testing.T, sys *actor.ActorSystem, rep *actor.PID, epoch int32, m coordinator.Membership) *actor.PID {
	t.Helper()
	return sys.Root.Spawn(coordinator.Props(coordinator.Config{
		Partition: partition, Partitions: partitions, LeaderEpoch: epoch, Replica: rep,
		Topics: map[string]int32{"events": 3}, Membership: m, CommitTimeout: 300 * time.Millisecond,
		Logger: clustertest.Logger(t),
	}))
}

func startPair(t *testing.T, sys *actor.ActorSystem, dir string, epoch int32) pair {
	t.Helper()
	rep := startReplica(t, sys, dir, epoch)
	return pair{sys: sys, replica: rep, crd: startCoordinator(t, sys, rep, epoch, nil)}
}

func (p pair) stop(t *testing.T) {
	t.Helper()
	for _, pid := range []*actor.PID{p.crd, p.replica} {
		if err := p.sys.Root.StopFuture(pid).Wait(); err != nil {
			t.Fatalf("stop %v: %v", pid, err)
		}
	}
}

func waitState(t *testing.T, sys *actor.ActorSystem, crd *actor.PID, cond func(coordinator.State) error) coordinator.State {
	t.Helper()
	var st coordinator.State
	clustertest.WaitFor(t, 10*time.Second, func() error {
		st = request[coordinator.State](t, sys, crd, coordinator.GetState)
		return cond(st)
	})
	return st
}

func loaded(st coordinator.State) error {
	if !st.Loaded {
		return fmt.Errorf("not loaded: %+v", st)
	}
	return nil
}

func commit(t *testing.T, p pair, grp string, offsets map[int32]int64) *messages.OffsetCommitResponse {
	t.Helper()
	ct := &messages.OffsetCommitTopic{Topic: "events"}
	for part := int32(0); part < 3; part++ {
		if off, ok := offsets[part]; ok {
			ct.Partitions = append(ct.Partitions, &messages.OffsetCommitPartition{Partition: part, Offset: off, LeaderEpoch: 4, Metadata: fmt.Sprintf("m%d", off)})
		}
	}
	return request[*messages.OffsetCommitResponse](t, p.sys, p.crd, &messages.OffsetCommitRequest{
		GroupId: grp, GenerationId: -1, Topics: []*messages.OffsetCommitTopic{ct}, CorrelationId: 9,
	})
}

// fetched returns the committed offsets of group's events partitions.
func fetched(t *testing.T, p pair) map[int32]int64 {
	t.Helper()
	resp := request[*messages.OffsetFetchResponse](t, p.sys, p.crd, &messages.OffsetFetchRequest{GroupId: group, CorrelationId: 3})
	if err := resp.Err(); err != nil || resp.CorrelationId != 3 {
		t.Fatalf("fetch: %v (correlation %d)", err, resp.CorrelationId)
	}
	got := map[int32]int64{}
	for _, tp := range resp.Topics {
		for _, pp := range tp.Partitions {
			if tp.Topic != "events" || pp.Metadata != fmt.Sprintf("m%d", pp.Offset) || pp.LeaderEpoch != 4 {
				t.Fatalf("fetched %s %v", tp.Topic, pp)
			}
			got[pp.Partition] = pp.Offset
		}
	}
	return got
}

func mustCommit(t *testing.T, p pair, offsets map[int32]int64) {
	t.Helper()
	resp := commit(t, p, group, offsets)
	if err := resp.Err(); err != nil || len(resp.Results) != len(offsets) {
		t.Fatalf("commit: %v, results %v", err, resp.Results)
	}
	for _, r := range resp.Results {
		if r.ErrorCode != 0 {
			t.Fatalf("commit of %s-%d: %v", r.Topic, r.Partition, r.ErrorCode.Err(r.ErrorMessage))
		}
	}
}

func TestCommitsSurviveCoordinatorRestart(t *testing.T) {
	sys := actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	dir := t.TempDir()

	p := startPair(t, sys, dir, 0)
	waitState(t, sys, p.crd, loaded)
	mustCommit(t, p, map[int32]int64{0: 5, 1: 7})
	mustCommit(t, p, map[int32]int64{0: 9})
	want := map[int32]int64{0: 9, 1: 7}
	if got := fetched(t, p); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("fetched %v, want %v", got, want)
	}
	// A group held by another partition is not this coordinator's.
	other := "other-0"
	for i := 0; coordinator.PartitionFor(other, partitions) == partition; i++ {
		other = fmt.Sprintf("other-%d", i)
	}
	if resp := commit(t, p, other, map[int32]int64{0: 1}); resp.ErrorCode != messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR {
		t.Fatalf("commit for a group of another partition: %v, want NOT_COORDINATOR", resp)
	}
	if resp := commit(t, p, "", map[int32]int64{0: 1}); resp.ErrorCode != messages.ErrorCode_ERROR_CODE_INVALID_GROUP_ID {
		t.Fatalf("commit with an empty group id: %v, want INVALID_GROUP_ID", resp)
	}
	p.stop(t)

	// Both restart on the same log (a new leadership, epoch 1): the new
	// coordinator replays the three commit records.
	p = startPair(t, sys, dir, 1)
	st := waitState(t, sys, p.crd, loaded)
	if st.LoadedRecords != 3 || st.Offsets != 2 || st.Groups != 1 {
		t.Fatalf("state after reload %+v, want 3 records, 2 offsets of 1 group", st)
	}
	if got := fetched(t, p); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("fetched after restart %v, want %v", got, want)
	}
	mustCommit(t, p, map[int32]int64{2: 1})
	want[2] = 1
	if got := fetched(t, p); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("fetched after a new commit %v, want %v", got, want)
	}
}

func TestCoordinatorIsFencedByTheLeaderEpoch(t *testing.T) {
	sys := actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	dir := t.TempDir()
	p := startPair(t, sys, dir, 1)
	waitState(t, sys, p.crd, loaded)
	mustCommit(t, p, map[int32]int64{0: 5})

	// The replica restarts for a newer leadership; the coordinator of
	// the old one is still there (its broker has not stopped it yet).
	if err := sys.Root.StopFuture(p.replica).Wait(); err != nil {
		t.Fatalf("stop replica: %v", err)
	}
	p.replica = startReplica(t, sys, dir, 2)
	stale := pair{sys: sys, replica: p.replica, crd: p.crd}
	if resp := commit(t, stale, group, map[int32]int64{0: 6}); resp.ErrorCode != messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR {
		t.Fatalf("commit through a stale coordinator: %v, want NOT_COORDINATOR", resp)
	}
	waitState(t, sys, p.crd, func(st coordinator.State) error {
		if !st.NotCoordinator {
			return fmt.Errorf("not fenced: %+v", st)
		}
		return nil
	})
	if resp := request[*messages.OffsetFetchResponse](t, sys, p.crd, &messages.OffsetFetchRequest{GroupId: group}); resp.ErrorCode != messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR {
		t.Fatalf("fetch from a fenced coordinator: %v, want NOT_COORDINATOR", resp)
	}

	// A coordinator started for an older epoch than the replica's never
	// serves.
	old := startCoordinator(t, sys, p.replica, 1, nil)
	waitState(t, sys, old, func(st coordinator.State) error {
		if !st.NotCoordinator || st.Loaded {
			return fmt.Errorf("state %+v, want fenced before loading", st)
		}
		return nil
	})

	// The coordinator of the new epoch has the first commit, not the
	// refused one.
	fresh := pair{sys: sys, replica: p.replica, crd: startCoordinator(t, sys, p.replica, 2, nil)}
	waitState(t, sys, fresh.crd, loaded)
	if got := fetched(t, fresh); fmt.Sprint(got) != fmt.Sprint(map[int32]int64{0: 5}) {
		t.Fatalf("fetched %v, want the first commit only", got)
	}
}

// generationCheck is a Membership that accepts only generation 3.
type generationCheck struct{ coordinator.AllowAll }

func (generationCheck) CanCommit(_, _, _ string, generation int32) (messages.ErrorCode, string) {
	if generation != 3 {
		return messages.ErrorCode_ERROR_CODE_ILLEGAL_GENERATION, fmt.Sprintf("generation %d is not the group's 3", generation)
	}
	return 0, ""
}

func TestMembershipRefusesStaleGenerations(t *testing.T) {
	sys := actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	rep := startReplica(t, sys, t.TempDir(), 0)
	p := pair{sys: sys, replica: rep, crd: startCoordinator(t, sys, rep, 0, generationCheck{})}
	waitState(t, sys, p.crd, loaded)
	req := func(gen int32) *messages.OffsetCommitResponse {
		return request[*messages.OffsetCommitResponse](t, sys, p.crd, &messages.OffsetCommitRequest{
			GroupId: group, GenerationId: gen, MemberId: "m-1",
			Topics: []*messages.OffsetCommitTopic{{Topic: "events", Partitions: []*messages.OffsetCommitPartition{{Partition: 0, Offset: 5, LeaderEpoch: 4, Metadata: "m5"}}}},
		})
	}
	if resp := req(2); resp.ErrorCode != messages.ErrorCode_ERROR_CODE_ILLEGAL_GENERATION || len(resp.Results) != 0 {
		t.Fatalf("commit at a stale generation: %v, want ILLEGAL_GENERATION and no results", resp)
	}
	if got := fetched(t, p); len(got) != 0 {
		t.Fatalf("a refused commit was stored: %v", got)
	}
	if resp := req(3); resp.Err() != nil || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("commit at the current generation: %v", resp)
	}
	if got := fetched(t, p); got[0] != 5 {
		t.Fatalf("fetched %v, want partition 0 at 5", got)
	}
}

func TestUsersCannotProduceToTheOffsetsTopic(t *testing.T) {
	sys := actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	rep := startReplica(t, sys, t.TempDir(), 0)
	b, err := record.BuildBatch(record.CompressionNone, record.Record{Key: []byte("k"), Value: []byte("v")})
	if err != nil {
		t.Fatalf("build batch: %v", err)
	}
	resp := request[*messages.ProduceResponse](t, sys, rep, &messages.ProduceRequest{
		Topic: messages.OffsetsTopic, Partition: partition, Acks: messages.Acks_ACKS_ALL, Records: b, CurrentLeaderEpoch: -1,
	})
	if resp.ErrorCode != messages.ErrorCode_ERROR_CODE_INVALID_TOPIC_EXCEPTION {
		t.Fatalf("produce to the offsets topic: %v, want INVALID_TOPIC_EXCEPTION", resp)
	}
}

// TestLoadWaitsForTheHighWatermark: a commit the in-sync replicas never
// acknowledged is not answered as committed nor stored; after a leader
// change the new coordinator waits (COORDINATOR_LOAD_IN_PROGRESS) until
// the high watermark passes everything in the log, then has it.
func TestLoadWaitsForTheHighWatermark(t *testing.T) {
	sys := actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	dir := t.TempDir()
	// Host 2 is in the ISR but never fetches: the commit is appended on
	// the leader and times out.
	rep := startReplica(t, sys, dir, 0, 1, 2)
	p := pair{sys: sys, replica: rep, crd: startCoordinator(t, sys, rep, 0, nil)}
	waitState(t, sys, p.crd, loaded)
	if resp := commit(t, p, group, map[int32]int64{0: 5}); resp.ErrorCode != messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT {
		t.Fatalf("commit without the in-sync replicas: %v, want REQUEST_TIMED_OUT", resp)
	}
	if got := fetched(t, p); len(got) != 0 {
		t.Fatalf("an unacknowledged commit is visible: %v", got)
	}
	p.stop(t)

	p = pair{sys: sys, replica: startReplica(t, sys, dir, 1, 1, 2)}
	p.crd = startCoordinator(t, sys, p.replica, 1, nil)
	st := request[coordinator.State](t, sys, p.crd, coordinator.GetState)
	if st.Loaded {
		t.Fatalf("loaded %+v before the high watermark passed the log end", st)
	}
	if resp := request[*messages.OffsetFetchResponse](t, sys, p.crd, &messages.OffsetFetchRequest{GroupId: group}); resp.ErrorCode != messages.ErrorCode_ERROR_CODE_COORDINATOR_LOAD_IN_PROGRESS {
		t.Fatalf("fetch while loading: %v, want COORDINATOR_LOAD_IN_PROGRESS", resp)
	}
	if resp := request[*messages.JoinGroupResponse](t, sys, p.crd, &messages.JoinGroupRequest{GroupId: group, ProtocolType: "consumer"}); resp.ErrorCode != messages.ErrorCode_ERROR_CODE_COORDINATOR_LOAD_IN_PROGRESS {
		t.Fatalf("join while loading: %v, want COORDINATOR_LOAD_IN_PROGRESS", resp)
	}
	if resp := request[*messages.ListGroupsResponse](t, sys, p.crd, &messages.ListGroupsRequest{}); resp.ErrorCode != messages.ErrorCode_ERROR_CODE_COORDINATOR_LOAD_IN_PROGRESS {
		t.Fatalf("list while loading: %v, want COORDINATOR_LOAD_IN_PROGRESS", resp)
	}
	// Host 2 catches up: its fetch at the log end moves the high
	// watermark there.
	follow := request[*messages.FetchResponse](t, sys, p.replica, &messages.FetchRequest{
		Topic: messages.OffsetsTopic, Partition: partition, FetchOffset: 1, MaxBytes: 1 << 20,
		CurrentLeaderEpoch: 1, ReplicaId: 2, LastFetchedEpoch: 0, LogStartOffset: 0,
	})
	if err := follow.Err(); err != nil || follow.HighWatermark != 1 {
		t.Fatalf("follower fetch: %v, high watermark %d", err, follow.HighWatermark)
	}
	waitState(t, sys, p.crd, loaded)
	if got := fetched(t, p); got[0] != 5 {
		t.Fatalf("fetched %v after the load, want partition 0 at 5", got)
	}
}
