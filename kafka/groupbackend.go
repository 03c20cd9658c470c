// groupbackend.go holds the seam of the consumer-group APIs (FindCoordinator,
// JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch,
// DescribeGroups, ListGroups, DeleteGroups): the GroupBackend interface, set
// through Config.Groups. Its requests and answers are the native group
// protocol's messages (messages/group.proto, coordinator.proto), whose fields
// follow Kafka's and whose error codes are Kafka's numbers; the handlers map
// Kafka's versions onto them. The host implements it over its LOCAL group
// coordinators; tests with a fake. Nothing here imports actors/*.

package kafka

import (
	"context"

	"github.com/actorlog/actorlog/messages"
)

// GroupBackend is what the group APIs need from the host. When Config.Groups
// is nil those APIs are neither advertised nor served.
//
// Every method may be called concurrently from many connections, must
// return once ctx is done, and bounds its own actor requests. A returned
// error is a local fault that closes the connection that asked; a group
// this host does not coordinate is answered NOT_COORDINATOR in the
// response, never with an error.
type GroupBackend interface {
	// FindCoordinator returns the Kafka node coordinating group.
	FindCoordinator(ctx context.Context, group string) (CoordinatorAnswer, error)
	// JoinGroup joins req.GroupId; it returns once the rebalance's join
	// phase ends (it may take up to the rebalance timeout). The first join
	// of a member without a member id is answered MEMBER_ID_REQUIRED with
	// one (KIP-394 is always on; the handler hides it from JoinGroup v0-3).
	JoinGroup(ctx context.Context, req *messages.JoinGroupRequest) (*messages.JoinGroupResponse, error)
	// SyncGroup returns the member's assignment once the leader's arrived.
	SyncGroup(ctx context.Context, req *messages.SyncGroupRequest) (*messages.SyncGroupResponse, error)
	// Heartbeat keeps the member's session alive.
	Heartbeat(ctx context.Context, req *messages.HeartbeatRequest) (*messages.HeartbeatResponse, error)
	// LeaveGroup removes members from the group.
	LeaveGroup(ctx context.Context, req *messages.LeaveGroupRequest) (*messages.LeaveGroupResponse, error)
	// OffsetCommit commits the group's offsets (answered once durable).
	OffsetCommit(ctx context.Context, req *messages.OffsetCommitRequest) (*messages.OffsetCommitResponse, error)
	// OffsetFetch returns the group's committed offsets.
	OffsetFetch(ctx context.Context, req *messages.OffsetFetchRequest) (*messages.OffsetFetchResponse, error)
	// DescribeGroup describes one group (state "Dead" when unknown).
	DescribeGroup(ctx context.Context, group string) (*messages.DescribedGroup, error)
	// ListGroups lists the groups of this host's coordinators.
	ListGroups(ctx context.Context, req *messages.ListGroupsRequest) (*messages.ListGroupsResponse, error)
	// DeleteGroup deletes one empty group with its offsets.
	DeleteGroup(ctx context.Context, group string) (*messages.DeleteGroupsResult, error)
}

// CoordinatorAnswer is where a group's coordinator is: a Kafka node, or an
// error code (COORDINATOR_NOT_AVAILABLE while there is none, INVALID_GROUP_ID).
type CoordinatorAnswer struct {
	// ErrorCode is 0 on success, else a Kafka error code; ErrorMessage
	// may explain it.
	ErrorCode    int16
	ErrorMessage string
	// NodeID (the coordinating host's id), Host and Port: its Kafka
	// listener. Meaningless with an error.
	NodeID int32
	Host   string
	Port   int32
}

// groupsEnabled is the enabled test of the group APIs: they need
// Config.Groups.
func groupsEnabled(cfg *Config) bool { return cfg.Groups != nil }

// nativeCode converts a native error code (Kafka's number) to the wire's.
func nativeCode(c messages.ErrorCode) int16 { return int16(c) }

// msgPtr returns nil for an empty message, else &s (Kafka's nullable
// error messages).
func msgPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
