// reassign_test.go: the broker with a controller (on a MemStore) — admin
// requests of reassignment forwarded to the controller, the metadata
// showing a reassignment in progress, and a replica reassigned away from
// this host stopped and its log deleted.

package broker_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
)

func TestReplicaReassignedAwayIsRemoved(t *testing.T) {
	s := clustertest.NewMemStore(t)
	clustertest.RegisterMem(t, s, 1, 17111)
	// Host 2 runs no broker but listens, so the controller's prober
	// leaves it live (it must lead once the reassignment completes).
	clustertest.RegisterMem(t, s, 2, listenHost(t))
	h := startHost1(t, s, "127.0.0.1:17111")
	sys, brk, ctrl, dataDir := h.sys, h.brk, h.ctrl, h.dataDir
	part := h.partitionOn1(t)
	replicaID := messages.ReplicaActorID("events", part)
	dir := filepath.Join(dataDir, fmt.Sprintf("events-%d", part))
	clustertest.WaitFor(t, 10*time.Second, func() error {
		_, err := os.Stat(dir)
		return err
	})

	// Reassign it to host 2, through the broker. Host 2 runs no broker
	// here, so the reassignment stays in progress.
	resp, err := request[*messages.ReassignPartitionsResponse](t, sys, brk, &messages.ReassignPartitionsRequest{
		Topic: "events", Partitions: []*messages.PartitionReassignment{{Partition: part, Replicas: []int32{2}}},
	})
	if err != nil || resp.ErrorCode != 0 || len(resp.Results) != 1 || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("reassign: %v, %v", resp, err)
	}
	var epochs *messages.PartitionMetadata
	clustertest.WaitFor(t, 10*time.Second, func() error {
		md, err := request[*messages.MetadataResponse](t, sys, brk, &messages.MetadataRequest{Topics: []string{"events"}})
		if err != nil {
			return err
		}
		pm := md.Topics[0].Partitions[part]
		if !slices.Equal(pm.Replicas, []int32{2, 1}) || !slices.Equal(pm.AddingReplicas, []int32{2}) || !slices.Equal(pm.RemovingReplicas, []int32{1}) || pm.Leader != 1 {
			return fmt.Errorf("partition metadata %v, want replicas [2 1], adding [2], removing [1], leader 1", pm)
		}
		epochs = pm
		return nil
	})
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("partition directory during the reassignment: %v", err)
	}

	// Host 2 catches up (as its leader would propose): the reassignment
	// completes, host 1's replica stops and its log goes.
	st, _, err := s.GetTopic(t.Context(), "events")
	if err != nil {
		t.Fatal(err)
	}
	alter, err := request[*messages.AlterPartitionResponse](t, sys, ctrl, &messages.AlterPartitionRequest{Topic: "events", Partition: part,
		LeaderId: 1, LeaderEpoch: epochs.LeaderEpoch, PartitionEpoch: st.Partitions[part].PartitionEpoch, NewIsr: []int32{1, 2}})
	if err != nil || alter.ErrorCode != 0 || alter.Partition.Leader != 2 || !slices.Equal(alter.Partition.Replicas, []int32{2}) {
		t.Fatalf("ISR with host 2: %v, %v", alter, err)
	}
	clustertest.WaitFor(t, 10*time.Second, func() error {
		if _, ok := sys.ProcessRegistry.GetLocal(replicaID); ok {
			return errors.New("replica still running")
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("partition directory still there: %v", err)
		}
		return nil
	})

	// A preferred leader election goes through the broker too.
	el, err := request[*messages.ElectLeadersResponse](t, sys, brk, &messages.ElectLeadersRequest{})
	if err != nil || el.ErrorCode != 0 || len(el.Results) != 0 {
		t.Fatalf("elect leaders: %v, %v", el, err)
	}
}
