// alter_test.go: ApplyAlterPartition, table-driven.

package controller

import (
	"slices"
	"testing"

	"github.com/actorlog/actorlog/messages"
)

func TestApplyAlterPartition(t *testing.T) {
	state := func() *messages.PartitionState {
		return &messages.PartitionState{Partition: 0, Replicas: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 4, Isr: []int32{1, 2, 3}, PartitionEpoch: 7}
	}
	req := func(leader, lepoch, pepoch int32, isr ...int32) *messages.AlterPartitionRequest {
		return &messages.AlterPartitionRequest{Topic: "t", LeaderId: leader, LeaderEpoch: lepoch, PartitionEpoch: pepoch, NewIsr: isr}
	}
	allLive := map[int32]bool{1: true, 2: true, 3: true}
	cases := []struct {
		name      string
		req       *messages.AlterPartitionRequest
		live      map[int32]bool
		before    func(*messages.PartitionState)
		changed   bool
		code      messages.ErrorCode
		isr       []int32
		partEpoch int32
	}{
		{"shrink", req(1, 4, 7, 1, 2), allLive, nil, true, 0, []int32{1, 2}, 8},
		{"shrink away a dead host", req(1, 4, 7, 1, 3), map[int32]bool{1: true, 3: true}, nil, true, 0, []int32{1, 3}, 8},
		{"expand", req(1, 4, 7, 1, 2, 3), allLive, func(p *messages.PartitionState) { p.Isr = []int32{1, 2} }, true, 0, []int32{1, 2, 3}, 8},
		{"expand with a dead host", req(1, 4, 7, 1, 2, 3), map[int32]bool{1: true, 2: true}, func(p *messages.PartitionState) { p.Isr = []int32{1, 2} }, false, messages.ErrorCode_ERROR_CODE_INELIGIBLE_REPLICA, []int32{1, 2}, 7},
		{"old leader epoch", req(1, 3, 7, 1, 2), allLive, nil, false, messages.ErrorCode_ERROR_CODE_FENCED_LEADER_EPOCH, []int32{1, 2, 3}, 7},
		{"another leader", req(2, 4, 7, 2), allLive, nil, false, messages.ErrorCode_ERROR_CODE_FENCED_LEADER_EPOCH, []int32{1, 2, 3}, 7},
		{"stale partition epoch", req(1, 4, 6, 1, 2), allLive, nil, false, messages.ErrorCode_ERROR_CODE_INVALID_UPDATE_VERSION, []int32{1, 2, 3}, 7},
		{"retry of an applied change", req(1, 4, 6, 1, 2), allLive, func(p *messages.PartitionState) { p.Isr = []int32{1, 2}; p.PartitionEpoch = 7 }, false, 0, []int32{1, 2}, 7},
		{"without the leader", req(1, 4, 7, 2, 3), allLive, nil, false, messages.ErrorCode_ERROR_CODE_INELIGIBLE_REPLICA, []int32{1, 2, 3}, 7},
		{"not a replica", req(1, 4, 7, 1, 9), allLive, nil, false, messages.ErrorCode_ERROR_CODE_INELIGIBLE_REPLICA, []int32{1, 2, 3}, 7},
		{"duplicate", req(1, 4, 7, 1, 1), allLive, nil, false, messages.ErrorCode_ERROR_CODE_INELIGIBLE_REPLICA, []int32{1, 2, 3}, 7},
		{"no change", req(1, 4, 7, 1, 2, 3), allLive, nil, false, 0, []int32{1, 2, 3}, 7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := state()
			if c.before != nil {
				c.before(p)
			}
			changed, code, msg := ApplyAlterPartition(p, c.req, c.live)
			if changed != c.changed || code != c.code {
				t.Fatalf("changed %v code %v (%s), want %v %v", changed, code, msg, c.changed, c.code)
			}
			if !slices.Equal(p.Isr, c.isr) || p.PartitionEpoch != c.partEpoch || p.LeaderEpoch != 4 || p.Leader != 1 {
				t.Fatalf("state after: %+v, want isr %v partition epoch %d", p, c.isr, c.partEpoch)
			}
		})
	}
}
