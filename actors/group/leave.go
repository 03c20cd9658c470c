// leave.go handles LeaveGroup (Kafka's GroupCoordinator.handleLeaveGroup,
// LeaveGroup v5 with several members per request, KIP-345), group deletion
// and unloading.
//
// A member leaves by its member id (with its instance id, if static); an
// administrator removes a static member by instance id alone (empty member
// id). A leaving member's waiting requests are answered UNKNOWN_MEMBER_ID
// and the others rebalance at once, without waiting for a session timeout.
// A pending KIP-394 member id may leave too.
//
// Group-level error codes: COORDINATOR_NOT_AVAILABLE (Dead),
// INVALID_GROUP_ID. Per-member codes: UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID.

package group

import (
	"fmt"
	"time"

	"github.com/actorlog/actorlog/messages"
)

// Leave handles req and returns its response.
func (g *Group) Leave(now time.Time, req *messages.LeaveGroupRequest) (*messages.LeaveGroupResponse, Effects) {
	g.begin()
	resp := &messages.LeaveGroupResponse{CorrelationId: req.GetCorrelationId()}
	switch {
	case req.GetGroupId() != g.id:
		resp.ErrorCode = messages.ErrorCode_ERROR_CODE_INVALID_GROUP_ID
		resp.ErrorMessage = fmt.Sprintf("group %q asked of group %q", req.GetGroupId(), g.id)
	case g.state == Dead:
		resp.ErrorCode = messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE
		resp.ErrorMessage = "the group is being deleted or moved; find its coordinator again"
	default:
		for _, l := range req.GetMembers() {
			resp.Members = append(resp.Members, &messages.LeaveGroupResponseMember{
				MemberId:        l.GetMemberId(),
				GroupInstanceId: l.GetGroupInstanceId(),
				ErrorCode:       g.leave(now, l),
			})
		}
	}
	return resp, g.finish(now)
}

// leave removes one leaving member and returns its outcome.
func (g *Group) leave(now time.Time, l *messages.LeaveGroupRequestMember) messages.ErrorCode {
	id, instanceID := l.GetMemberId(), l.GetGroupInstanceId()
	why := "left the group"
	if l.GetReason() != "" {
		why += ": " + l.GetReason()
	}
	switch {
	case id == "":
		current, ok := g.static[instanceID]
		if instanceID == "" || !ok {
			return messages.ErrorCode_ERROR_CODE_UNKNOWN_MEMBER_ID
		}
		g.remove(g.members[current], now, why)
	case g.isPending(id):
		delete(g.pending, id)
	default:
		if r := g.validateMember(id, instanceID); r != nil {
			return r.code
		}
		g.remove(g.members[id], now, why)
	}
	return messages.ErrorCode_ERROR_CODE_UNSPECIFIED
}

// isPending reports whether id is a KIP-394 member id not yet used.
func (g *Group) isPending(id string) bool {
	_, ok := g.pending[id]
	return ok
}

// Delete makes an Empty group Dead (Kafka's DeleteGroups); the shell then
// deletes its offsets and forgets it. NON_EMPTY_GROUP when it has members,
// GROUP_ID_NOT_FOUND when it is already Dead.
func (g *Group) Delete() messages.ErrorCode {
	switch g.state {
	case Dead:
		return messages.ErrorCode_ERROR_CODE_GROUP_ID_NOT_FOUND
	case Empty:
		g.state = Dead
		clear(g.pending)
		return messages.ErrorCode_ERROR_CODE_UNSPECIFIED
	}
	return messages.ErrorCode_ERROR_CODE_NON_EMPTY_GROUP
}

// Unload makes the group Dead because its coordinator stops coordinating it
// (the offsets partition's leadership moved): every waiting request is
// answered NOT_COORDINATOR, so members find the new coordinator, and
// nothing stays timed (Kafka's onGroupUnloaded).
func (g *Group) Unload() Effects {
	g.begin()
	for _, m := range g.order {
		g.answerWaiters(m, m.id, messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR,
			"the coordinator moved; find it again")
		m.expires = time.Time{}
	}
	g.state = Dead
	g.join = joinPhase{}
	clear(g.pending)
	clear(g.pendingSync)
	g.syncDeadline = time.Time{}
	eff := Effects{Replies: g.out}
	g.out = nil
	return eff
}
