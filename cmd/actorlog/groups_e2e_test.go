// groups_e2e_test.go: committed offsets on three `actorlog host`
// processes — the offsets topic is created with three replicas on first
// use, and offsets committed through one coordinator are fetched, intact,
// from the next one after the first one's host is SIGKILLed.

package main

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/messages"
)

// committedOf returns the committed offsets of the group's events
// partitions, by partition, as "offset/metadata".
func committedOf(t *testing.T, ctx context.Context, c *client.Client, group string) map[int32]string {
	t.Helper()
	offs, err := c.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets: %v", err)
	}
	got := map[int32]string{}
	for _, o := range offs {
		if o.Topic != "events" {
			t.Fatalf("offset of an uncommitted topic: %+v", o)
		}
		got[o.Partition] = fmt.Sprintf("%d/%s", o.Offset, o.Metadata)
	}
	return got
}

func TestCommittedOffsetsSurviveCoordinatorHostKill(t *testing.T) {
	hosts := startCluster(t, "--offsets-topic-partitions", "4")
	hosts[0].mustCLI("", "topics", "create", "events", "--partitions", "3", "--replication-factor", "3")
	c := newClient(t, hosts[0].addr(), hosts[1].addr(), hosts[2].addr())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const group = "e2e-group"
	co, err := c.FindCoordinator(ctx, group)
	if err != nil {
		t.Fatalf("find coordinator: %v", err)
	}
	md, err := c.Metadata(ctx, messages.OffsetsTopic)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	if tm := md.Topics[0]; tm.ErrorCode != 0 || tm.ReplicationFactor != 3 || len(tm.Partitions) != 4 {
		t.Fatalf("offsets topic %v, want 4 partitions of 3 replicas", tm)
	}
	waitFullISR(t, hosts[0], messages.OffsetsTopic)

	offsets := []client.CommitOffset{
		{Topic: "events", Partition: 0, Offset: 10, LeaderEpoch: -1, Metadata: "a"},
		{Topic: "events", Partition: 1, Offset: 20, LeaderEpoch: -1, Metadata: "b"},
		{Topic: "events", Partition: 2, Offset: 30, LeaderEpoch: -1, Metadata: "c"},
	}
	if _, err := c.CommitOffsets(ctx, group, "", -1, offsets); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if _, err := c.CommitOffsets(ctx, group, "", -1, []client.CommitOffset{{Topic: "events", Partition: 1, Offset: 21, LeaderEpoch: -1, Metadata: "b2"}}); err != nil {
		t.Fatalf("second commit: %v", err)
	}
	want := map[int32]string{0: "10/a", 1: "21/b2", 2: "30/c"}
	if got := committedOf(t, ctx, c, group); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("committed %v, want %v", got, want)
	}
	// Refusals are per partition and leave the others committed.
	results, err := c.CommitOffsets(ctx, group, "", -1, []client.CommitOffset{{Topic: "events", Partition: 7, Offset: 1}, {Topic: "events", Partition: 0, Offset: 11, Metadata: "a2"}})
	if err == nil || len(results) != 2 || results[0].ErrorCode != messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION || results[1].ErrorCode != 0 {
		t.Fatalf("commit with an unknown partition: %v, %v", results, err)
	}
	want[0] = "11/a2"

	// SIGKILL the host of the coordinator; the partition's leadership
	// moves to another in-sync replica, whose coordinator replays it.
	victim := byAddr(t, hosts, co.Address)
	victim.stop(syscall.SIGKILL)
	t0 := time.Now()
	if got := committedOf(t, ctx, c, group); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("committed after the coordinator's host was killed %v, want %v", got, want)
	}
	t.Logf("offsets fetched from the new coordinator %v after the SIGKILL", time.Since(t0).Round(time.Millisecond))
	moved, err := c.FindCoordinator(ctx, group)
	if err != nil {
		t.Fatalf("find coordinator after the kill: %v", err)
	}
	if moved.Address == co.Address || moved.Partition != co.Partition || moved.LeaderEpoch <= co.LeaderEpoch {
		t.Fatalf("coordinator after the kill %+v, before %+v: want another host, the same partition, a newer epoch", moved, co)
	}

	// The new coordinator takes commits too.
	if _, err := c.CommitOffsets(ctx, group, "", -1, []client.CommitOffset{{Topic: "events", Partition: 2, Offset: 31, LeaderEpoch: -1, Metadata: "c2"}}); err != nil {
		t.Fatalf("commit after the kill: %v", err)
	}
	want[2] = "31/c2"
	if got := committedOf(t, ctx, c, group); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("committed %v, want %v", got, want)
	}
}
