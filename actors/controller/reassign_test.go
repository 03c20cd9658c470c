// reassign_test.go: the reassignment transitions (KIP-455), table-driven.

package controller

import (
	"fmt"
	"slices"
	"testing"

	"github.com/actorlog/actorlog/messages"
)

// pstate is a compact partition state for the tables: replicas, leader,
// ISR, adding, removing, leader epoch, partition epoch.
type pstate struct {
	replicas         []int32
	leader           int32
	isr              []int32
	adding, removing []int32
	le, pe           int32
}

func (s pstate) proto() *messages.PartitionState {
	return &messages.PartitionState{Replicas: slices.Clone(s.replicas), Leader: s.leader, Isr: slices.Clone(s.isr),
		AddingReplicas: slices.Clone(s.adding), RemovingReplicas: slices.Clone(s.removing), LeaderEpoch: s.le, PartitionEpoch: s.pe}
}

func stateOf(p *messages.PartitionState) pstate {
	return pstate{p.Replicas, p.Leader, p.Isr, p.AddingReplicas, p.RemovingReplicas, p.LeaderEpoch, p.PartitionEpoch}
}

func (s pstate) equal(o pstate) bool {
	eq := func(a, b []int32) bool { return len(a) == 0 && len(b) == 0 || slices.Equal(a, b) }
	return eq(s.replicas, o.replicas) && s.leader == o.leader && eq(s.isr, o.isr) && eq(s.adding, o.adding) &&
		eq(s.removing, o.removing) && s.le == o.le && s.pe == o.pe
}

func (s pstate) String() string {
	return fmt.Sprintf("replicas %v leader %d isr %v adding %v removing %v epochs %d/%d", s.replicas, s.leader, s.isr, s.adding, s.removing, s.le, s.pe)
}

func TestValidateReassignment(t *testing.T) {
	known := map[int32]bool{1: true, 2: true, 3: true, 4: true}
	cases := []struct {
		name   string
		target []int32
		code   messages.ErrorCode
	}{
		{"valid", ids(3, 4), 0},
		{"duplicate", ids(3, 3), messages.ErrorCode_ERROR_CODE_INVALID_REQUEST},
		{"unknown host", ids(3, 9), messages.ErrorCode_ERROR_CODE_INVALID_REQUEST},
		{"host 0", ids(0, 3), messages.ErrorCode_ERROR_CODE_INVALID_REQUEST},
		{"too few", ids(3), messages.ErrorCode_ERROR_CODE_INVALID_REPLICATION_FACTOR},
		{"too many", ids(1, 2, 3), messages.ErrorCode_ERROR_CODE_INVALID_REPLICATION_FACTOR},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if code, msg := ValidateReassignment(c.target, 2, known); code != c.code {
				t.Fatalf("code %v (%s), want %v", code, msg, c.code)
			}
		})
	}
}

func TestBeginReassignment(t *testing.T) {
	stable := pstate{replicas: ids(1, 2), leader: 1, isr: ids(1, 2), le: 3, pe: 7}
	moving := pstate{replicas: ids(3, 2, 1), leader: 1, isr: ids(1, 2), adding: ids(3), removing: ids(1), le: 4, pe: 8}
	cases := []struct {
		name    string
		before  pstate
		target  []int32
		changed bool
		code    messages.ErrorCode
		after   pstate
	}{
		{"same replicas", stable, ids(1, 2), false, 0, stable},
		{"reorder only", stable, ids(2, 1), true, 0, pstate{replicas: ids(2, 1), leader: 1, isr: ids(1, 2), le: 3, pe: 8}},
		{"move the leader off", stable, ids(3, 2), true, 0, moving},
		{"move both", stable, ids(3, 4), true, 0,
			pstate{replicas: ids(3, 4, 1, 2), leader: 1, isr: ids(1, 2), adding: ids(3, 4), removing: ids(1, 2), le: 4, pe: 8}},
		{"keep the leader", stable, ids(1, 3), true, 0,
			pstate{replicas: ids(1, 3, 2), leader: 1, isr: ids(1, 2), adding: ids(3), removing: ids(2), le: 4, pe: 8}},
		{"same target again", moving, ids(3, 2), false, 0, moving},
		{"another target meanwhile", moving, ids(4, 2), false, messages.ErrorCode_ERROR_CODE_REASSIGNMENT_IN_PROGRESS, moving},
		{"back to the old replicas meanwhile", moving, ids(1, 2), false, messages.ErrorCode_ERROR_CODE_REASSIGNMENT_IN_PROGRESS, moving},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := c.before.proto()
			changed, code, msg := BeginReassignment(p, c.target)
			if changed != c.changed || code != c.code {
				t.Fatalf("changed %v code %v (%s), want %v %v", changed, code, msg, c.changed, c.code)
			}
			if got := stateOf(p); !got.equal(c.after) {
				t.Fatalf("after:\n got %v\nwant %v", got, c.after)
			}
		})
	}
}

func TestCompleteReassignment(t *testing.T) {
	allLive := map[int32]bool{1: true, 2: true, 3: true, 4: true}
	// Old [1 2], target [3 2], led by 1.
	moving := func(isr ...int32) pstate {
		return pstate{replicas: ids(3, 2, 1), leader: 1, isr: isr, adding: ids(3), removing: ids(1), le: 4, pe: 8}
	}
	cases := []struct {
		name   string
		before pstate
		live   map[int32]bool
		done   bool
		after  pstate
	}{
		{"adding replica not in sync yet", moving(1, 2), allLive, false, moving(1, 2)},
		{"leader moves off to the first target replica", moving(1, 2, 3), allLive, true,
			pstate{replicas: ids(3, 2), leader: 3, isr: ids(2, 3), le: 5, pe: 9}},
		{"first target replica not live: the next leads", moving(1, 2, 3), map[int32]bool{1: true, 2: true}, true,
			pstate{replicas: ids(3, 2), leader: 2, isr: ids(2, 3), le: 5, pe: 9}},
		{"leader in the target stays", pstate{replicas: ids(1, 3, 2), leader: 1, isr: ids(2, 1, 3), adding: ids(3), removing: ids(2), le: 4, pe: 8}, allLive, true,
			pstate{replicas: ids(1, 3), leader: 1, isr: ids(1, 3), le: 5, pe: 9}},
		{"leader in the target but dead", pstate{replicas: ids(1, 3, 2), leader: 1, isr: ids(1, 2, 3), adding: ids(3), removing: ids(2), le: 4, pe: 8}, map[int32]bool{2: true, 3: true}, true,
			pstate{replicas: ids(1, 3), leader: 3, isr: ids(1, 3), le: 5, pe: 9}},
		{"no target replica can lead", moving(1, 3), map[int32]bool{1: true}, false, moving(1, 3)},
		{"live hosts unknown", moving(1, 2, 3), nil, false, moving(1, 2, 3)},
		{"no reassignment", pstate{replicas: ids(1, 2), leader: 1, isr: ids(1, 2), le: 3, pe: 7}, allLive, false,
			pstate{replicas: ids(1, 2), leader: 1, isr: ids(1, 2), le: 3, pe: 7}},
		{"offline partition gets a leader", pstate{replicas: ids(3, 4, 1, 2), leader: -1, isr: ids(3, 4), adding: ids(3, 4), removing: ids(1, 2), le: 4, pe: 8}, allLive, true,
			pstate{replicas: ids(3, 4), leader: 3, isr: ids(3, 4), le: 5, pe: 9}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := c.before.proto()
			if done := CompleteReassignment(p, c.live); done != c.done {
				t.Fatalf("completed %v, want %v", done, c.done)
			}
			if got := stateOf(p); !got.equal(c.after) {
				t.Fatalf("after:\n got %v\nwant %v", got, c.after)
			}
		})
	}
}

func TestCancelReassignment(t *testing.T) {
	allLive := map[int32]bool{1: true, 2: true, 3: true}
	cases := []struct {
		name   string
		before pstate
		live   map[int32]bool
		code   messages.ErrorCode
		after  pstate
	}{
		{"back to the old replicas",
			pstate{replicas: ids(3, 2, 1), leader: 1, isr: ids(1, 2, 3), adding: ids(3), removing: ids(1), le: 4, pe: 8}, allLive, 0,
			pstate{replicas: ids(2, 1), leader: 1, isr: ids(1, 2), le: 5, pe: 9}},
		{"an adding replica that took over hands back",
			pstate{replicas: ids(3, 2, 1), leader: 3, isr: ids(3, 2), adding: ids(3), removing: ids(1), le: 5, pe: 9}, allLive, 0,
			pstate{replicas: ids(2, 1), leader: 2, isr: ids(2), le: 6, pe: 10}},
		{"no live old replica in sync: offline",
			pstate{replicas: ids(3, 2, 1), leader: 3, isr: ids(3, 2), adding: ids(3), removing: ids(1), le: 5, pe: 9}, map[int32]bool{3: true}, 0,
			pstate{replicas: ids(2, 1), leader: -1, isr: ids(2), le: 6, pe: 10}},
		{"no old replica in sync",
			pstate{replicas: ids(3, 2, 1), leader: 3, isr: ids(3), adding: ids(3), removing: ids(1), le: 5, pe: 9}, allLive, messages.ErrorCode_ERROR_CODE_INVALID_REQUEST,
			pstate{replicas: ids(3, 2, 1), leader: 3, isr: ids(3), adding: ids(3), removing: ids(1), le: 5, pe: 9}},
		{"nothing to cancel",
			pstate{replicas: ids(1, 2), leader: 1, isr: ids(1, 2), le: 3, pe: 7}, allLive, messages.ErrorCode_ERROR_CODE_NO_REASSIGNMENT_IN_PROGRESS,
			pstate{replicas: ids(1, 2), leader: 1, isr: ids(1, 2), le: 3, pe: 7}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := c.before.proto()
			if code, msg := CancelReassignment(p, c.live); code != c.code {
				t.Fatalf("code %v (%s), want %v", code, msg, c.code)
			}
			if got := stateOf(p); !got.equal(c.after) {
				t.Fatalf("after:\n got %v\nwant %v", got, c.after)
			}
		})
	}
}

func TestPlanReassignments(t *testing.T) {
	known := map[int32]bool{1: true, 2: true, 3: true}
	topic := func() *messages.TopicMetadata {
		return &messages.TopicMetadata{Name: "t", ReplicationFactor: 2, Partitions: []*messages.PartitionState{
			{Partition: 0, Replicas: ids(1, 2), Leader: 1, Isr: ids(1, 2)},
			{Partition: 1, Replicas: ids(2, 3), Leader: 2, Isr: ids(2, 3)},
		}}
	}
	re := func(p int32, replicas ...int32) *messages.PartitionReassignment {
		return &messages.PartitionReassignment{Partition: p, Replicas: replicas}
	}
	const (
		ok        = messages.ErrorCode_ERROR_CODE_UNSPECIFIED
		invalid   = messages.ErrorCode_ERROR_CODE_INVALID_REQUEST
		unknown   = messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION
		rf        = messages.ErrorCode_ERROR_CODE_INVALID_REPLICATION_FACTOR
		noneToEnd = messages.ErrorCode_ERROR_CODE_NO_REASSIGNMENT_IN_PROGRESS
	)
	cases := []struct {
		name     string
		reqs     []*messages.PartitionReassignment
		codes    []messages.ErrorCode
		changed  bool
		replicas [][]int32 // after, per partition
	}{
		{"two partitions", []*messages.PartitionReassignment{re(0, 3, 2), re(1, 3, 2)}, []messages.ErrorCode{ok, ok}, true, [][]int32{ids(3, 2, 1), ids(3, 2)}},
		{"nothing to do", []*messages.PartitionReassignment{re(0, 1, 2)}, []messages.ErrorCode{ok}, false, [][]int32{ids(1, 2), ids(2, 3)}},
		{"one bad partition stops all", []*messages.PartitionReassignment{re(0, 3, 2), re(1, 3)}, []messages.ErrorCode{invalid, rf}, false, [][]int32{ids(1, 2), ids(2, 3)}},
		{"unknown partition", []*messages.PartitionReassignment{re(0, 3, 2), re(2, 1, 2)}, []messages.ErrorCode{invalid, unknown}, false, [][]int32{ids(1, 2), ids(2, 3)}},
		{"partition named twice", []*messages.PartitionReassignment{re(0, 3, 2), re(0, 1, 3)}, []messages.ErrorCode{invalid, invalid}, false, [][]int32{ids(1, 2), ids(2, 3)}},
		{"cancel with nothing to cancel", []*messages.PartitionReassignment{re(0)}, []messages.ErrorCode{noneToEnd}, false, [][]int32{ids(1, 2), ids(2, 3)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tm := topic()
			results, changed := PlanReassignments(tm, c.reqs, known, known)
			if changed != c.changed || len(results) != len(c.reqs) {
				t.Fatalf("changed %v, %d results; want %v, %d", changed, len(results), c.changed, len(c.reqs))
			}
			for i, r := range results {
				if r.ErrorCode != c.codes[i] || r.Partition != c.reqs[i].Partition || r.Topic != "t" {
					t.Fatalf("result %d: %v, want code %v", i, r, c.codes[i])
				}
			}
			for i, p := range tm.Partitions {
				if !slices.Equal(p.Replicas, c.replicas[i]) {
					t.Fatalf("partition %d replicas %v, want %v", i, p.Replicas, c.replicas[i])
				}
			}
		})
	}

	// Cancelling in the same topic after a start reverts it.
	tm := topic()
	if _, changed := PlanReassignments(tm, []*messages.PartitionReassignment{re(0, 3, 2)}, known, known); !changed {
		t.Fatal("start: not changed")
	}
	if results, changed := PlanReassignments(tm, []*messages.PartitionReassignment{re(0)}, known, known); !changed || results[0].ErrorCode != 0 {
		t.Fatalf("cancel: changed %v, %v", changed, results)
	}
	if p := tm.Partitions[0]; !slices.Equal(p.Replicas, ids(2, 1)) || reassigning(p) || p.Leader != 1 {
		t.Fatalf("after cancel: %v", p)
	}
}
