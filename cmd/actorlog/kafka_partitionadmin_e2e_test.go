// kafka_partitionadmin_e2e_test.go: the Kafka listener's partition admin
// APIs (ElectLeaders, AlterPartitionReassignments,
// ListPartitionReassignments) through kadm against a 3-host cluster of
// real processes. A reassignment to a stopped host cannot complete (its
// replica never joins the ISR), so it stays listed with its adding and
// removing replicas; another target is then REASSIGNMENT_IN_PROGRESS; the
// cancellation clears it; a reassignment to a live host completes. A
// reordering of a partition's replicas makes its leader non-preferred;
// ElectLeaders moves the leadership to the preferred replica, and a second
// election is ELECTION_NOT_NEEDED.

package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/actorlog/actorlog/internal/poll"
)

func TestKafkaPartitionAdminThreeHosts(t *testing.T) {
	hosts, kafkaAddrs := startKafkaCluster(t)
	for _, h := range hosts {
		// Killed: this test is not about shutdown, and with one host
		// down the last one's clean shutdown waits for a quorum it lacks.
		t.Cleanup(func() { h.stop(syscall.SIGKILL) }) // a no-op for a host stopped already
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddrs...), kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// Two topics: "moving" (1 replica) and "electing" (2 replicas).
	if r, err := adm.CreateTopics(ctx, 1, 1, nil, "moving"); err != nil || r["moving"].Err != nil {
		t.Fatalf("create moving: %+v %v", r, err)
	}
	if r, err := adm.CreateTopics(ctx, 1, 2, nil, "electing"); err != nil || r["electing"].Err != nil {
		t.Fatalf("create electing: %+v %v", r, err)
	}
	var md kadm.Metadata
	partition := func(topic string) kadm.PartitionDetail { return md.Topics[topic].Partitions[0] }
	waitMD := func(check func() error) {
		t.Helper()
		poll.Until(t, 30*time.Second, func() error {
			if md, err = adm.Metadata(ctx, "moving", "electing"); err != nil {
				return fmt.Errorf("metadata: %w", err)
			}
			if len(md.Topics["moving"].Partitions) != 1 || len(md.Topics["electing"].Partitions) != 1 {
				return fmt.Errorf("topics %+v", md.Topics)
			}
			return check()
		})
	}
	waitMD(func() error {
		if len(md.Brokers) != 3 || partition("moving").Leader < 0 || len(partition("electing").ISR) != 2 {
			return fmt.Errorf("brokers %d, moving %+v, electing %+v", len(md.Brokers), partition("moving"), partition("electing"))
		}
		return nil
	})
	procOf := map[int32]*hostProc{}
	var ids []int32
	for _, b := range md.Brokers {
		i := slices.Index(kafkaAddrs, fmt.Sprintf("%s:%d", b.Host, b.Port))
		if i < 0 {
			t.Fatalf("broker %+v is none of %v", b, kafkaAddrs)
		}
		procOf[b.NodeID] = hosts[i]
		ids = append(ids, b.NodeID)
	}

	// Preferred election: reorder electing's replicas (the leader stays,
	// no longer preferred), then elect.
	ep := partition("electing")
	reordered := []int32{ep.Replicas[1], ep.Replicas[0]}
	if ep.Leader != ep.Replicas[0] {
		reordered = slices.Clone(ep.Replicas) // already not led by its preferred replica
	}
	var reorder kadm.AlterPartitionAssignmentsReq
	reorder.Assign("electing", 0, reordered)
	if r, err := adm.AlterPartitionAssignments(ctx, reorder); err != nil || r.Error() != nil {
		t.Fatalf("reorder electing: %+v %v", r, err)
	}
	waitMD(func() error {
		if p := partition("electing"); !slices.Equal(p.Replicas, reordered) {
			return fmt.Errorf("electing replicas %v, want %v", p.Replicas, reordered)
		}
		return nil
	})
	if p := partition("electing"); p.Leader == reordered[0] {
		t.Fatalf("electing led by its preferred replica after the reordering: %+v", p)
	}
	er, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"electing": {0: {}}})
	if err != nil || er["electing"][0].Err != nil {
		t.Fatalf("elect electing: %+v %v", er, err)
	}
	waitMD(func() error {
		if p := partition("electing"); p.Leader != reordered[0] {
			return fmt.Errorf("electing leader %d, want %d", p.Leader, reordered[0])
		}
		return nil
	})
	if er, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"electing": {0: {}}}); err != nil || !errors.Is(er["electing"][0].Err, kerr.ElectionNotNeeded) {
		t.Fatalf("elect electing again: %+v %v, want ELECTION_NOT_NEEDED", er, err)
	}

	// Reassignment to a stopped host: stays in progress.
	from := partition("moving").Leader
	var down, live int32 = -1, -1
	for _, id := range ids {
		switch {
		case id == from:
		case down < 0 && id != md.Controller:
			down = id
		default:
			live = id
		}
	}
	if down < 0 || live < 0 {
		t.Fatalf("hosts %v, moving on %d, controller %d: no host to stop", ids, from, md.Controller)
	}
	procOf[down].stop(syscall.SIGKILL)
	var toDown kadm.AlterPartitionAssignmentsReq
	toDown.Assign("moving", 0, []int32{down})
	if r, err := adm.AlterPartitionAssignments(ctx, toDown); err != nil || r.Error() != nil {
		t.Fatalf("reassign moving to stopped host %d: %+v %v", down, r, err)
	}
	lr, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"moving": {0: {}}, "electing": {0: {}}})
	if err != nil {
		t.Fatalf("list reassignments: %v", err)
	}
	got := lr["moving"][0]
	if len(lr) != 1 || !slices.Equal(got.Replicas, []int32{down, from}) || !slices.Equal(got.AddingReplicas, []int32{down}) || !slices.Equal(got.RemovingReplicas, []int32{from}) {
		t.Fatalf("list reassignments: %+v, want moving/0 replicas [%d %d] adding [%d] removing [%d]", lr, down, from, down, from)
	}
	var elsewhere kadm.AlterPartitionAssignmentsReq
	elsewhere.Assign("moving", 0, []int32{live})
	if r, err := adm.AlterPartitionAssignments(ctx, elsewhere); err != nil || !errors.Is(r["moving"][0].Err, kerr.ReassignmentInProgress) {
		t.Fatalf("reassign moving during a reassignment: %+v %v, want REASSIGNMENT_IN_PROGRESS", r, err)
	}
	var cancelIt kadm.AlterPartitionAssignmentsReq
	cancelIt.CancelAssign("moving", 0)
	if r, err := adm.AlterPartitionAssignments(ctx, cancelIt); err != nil || r.Error() != nil {
		t.Fatalf("cancel moving's reassignment: %+v %v", r, err)
	}
	if lr, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"moving": {0: {}}}); err != nil || len(lr) != 0 {
		t.Fatalf("list after the cancellation: %+v %v, want none", lr, err)
	}

	// Reassignment to a live host completes.
	if r, err := adm.AlterPartitionAssignments(ctx, elsewhere); err != nil || r.Error() != nil {
		t.Fatalf("reassign moving to %d: %+v %v", live, r, err)
	}
	waitMD(func() error {
		if p := partition("moving"); !slices.Equal(p.Replicas, []int32{live}) || p.Leader != live {
			return fmt.Errorf("moving %+v, want replicas [%d] led by %d", p, live, live)
		}
		return nil
	})
	if lr, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"moving": {0: {}}}); err != nil || len(lr) != 0 {
		t.Fatalf("list after completion: %+v %v, want none", lr, err)
	}
}
