// topics_test.go: how `topics describe` renders a partition's leader.

package main

import (
	"testing"

	"github.com/actorlog/actorlog/messages"
)

func TestLeaderText(t *testing.T) {
	tests := []struct {
		p    *messages.PartitionMetadata
		want string
	}{
		{&messages.PartitionMetadata{Leader: 2, LeaderAddress: "h2:7070"}, "2"},
		{&messages.PartitionMetadata{Leader: -1, ErrorCode: messages.ErrorCode_ERROR_CODE_LEADER_NOT_AVAILABLE}, "none (offline)"},
		{&messages.PartitionMetadata{Leader: 3, ErrorCode: messages.ErrorCode_ERROR_CODE_LEADER_NOT_AVAILABLE}, "3 (unavailable)"},
	}
	for _, tt := range tests {
		if got := leaderText(tt.p); got != tt.want {
			t.Errorf("leaderText(%v) = %q, want %q", tt.p, got, tt.want)
		}
	}
}
