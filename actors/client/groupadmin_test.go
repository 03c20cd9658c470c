// groupadmin_test.go: the pure parts of the group admin calls — reset
// targets, reading a one-group answer, and decoding described members'
// assignments. (The calls themselves run against real hosts in
// cmd/actorlog's groups e2e tests.)

package client

import (
	"fmt"
	"testing"
	"time"

	"github.com/actorlog/actorlog/actors/group"
	"github.com/actorlog/actorlog/messages"
)

func TestResetTarget(t *testing.T) {
	at := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	tests := []struct {
		target  ResetTarget
		text    string
		invalid bool
	}{
		{ResetToEarliest(), "earliest", false},
		{ResetToLatest(), "latest", false},
		{ResetToOffset(42), "offset 42", false},
		{ResetToOffset(-1), "offset -1", true},
		{ResetToDatetime(at), "datetime 2026-01-02T15:04:05Z", false},
		{ResetTarget{}, "no target", true},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			if got := tt.target.String(); got != tt.text {
				t.Errorf("String() = %q, want %q", got, tt.text)
			}
			if err := tt.target.validate(); (err != nil) != tt.invalid {
				t.Errorf("validate() = %v, want invalid %v", err, tt.invalid)
			}
		})
	}
}

func TestGroupEntryError(t *testing.T) {
	read := groupEntryError(func(r *messages.DeleteGroupsResponse) []*messages.DeleteGroupsResult { return r.Results })
	tests := []struct {
		name string
		resp *messages.DeleteGroupsResponse
		want messages.ErrorCode
	}{
		{"success", &messages.DeleteGroupsResponse{Results: []*messages.DeleteGroupsResult{{GroupId: "g"}}}, 0},
		{"the group's code", &messages.DeleteGroupsResponse{Results: []*messages.DeleteGroupsResult{{GroupId: "g", ErrorCode: messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR}}},
			messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR},
		{"no entry", &messages.DeleteGroupsResponse{}, messages.ErrorCode_ERROR_CODE_UNKNOWN_SERVER_ERROR},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code, _ := read(tt.resp); code != tt.want {
				t.Fatalf("code %v, want %v", code, tt.want)
			}
		})
	}
}

func TestAssignedPartitions(t *testing.T) {
	d := &messages.DescribedGroup{ProtocolType: group.ProtocolType, Members: []*messages.DescribedGroupMember{
		{MemberId: "a", MemberAssignment: group.EncodeAssignment(group.Assignment{"events": {2, 0}})},
		{MemberId: "b"}, // not Stable, or left out by the leader
	}}
	got, err := AssignedPartitions(d)
	if err != nil || fmt.Sprint(got) != "map[a:map[events:[0 2]] b:map[]]" {
		t.Fatalf("AssignedPartitions = %v, %v", got, err)
	}
	d.Members[1].MemberAssignment = []byte{0, 3, 0xff}
	if _, err := AssignedPartitions(d); err == nil {
		t.Fatal("a malformed assignment decoded")
	}
	other := &messages.DescribedGroup{ProtocolType: "connect", Members: []*messages.DescribedGroupMember{{MemberId: "a", MemberAssignment: []byte{1}}}}
	if got, err := AssignedPartitions(other); err != nil || len(got) != 0 {
		t.Fatalf("assignments of a non-consumer group: %v, %v", got, err)
	}
}
