// leavegroup.go: LeaveGroup (key 13), served and advertised v0-5; needs
// Config.Groups.
//
// Behaviour: v0-2 remove one member by member id; v3+ (KIP-345) remove
// several, by member id or (static members, an empty member id) by
// instance id, each with its own result; v5 carries a reason.
//
// Error codes: group-level COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR,
// INVALID_GROUP_ID; per member (v3+; the group-level code before v3)
// UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID.

package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/messages"
)

func init() {
	register(api{key: 13, servedMin: 0, servedMax: 5, advertisedMin: 0, advertisedMax: 5,
		handle: handleLeaveGroup, enabled: groupsEnabled})
}

func handleLeaveGroup(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.LeaveGroupRequest)
	native := leaveRequest(req)
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		res, err := c.srv.cfg.Groups.LeaveGroup(ctx, native)
		if err != nil {
			return nil, err
		}
		return leaveResponse(req, res), nil
	})
}

// leaveRequest maps a Kafka LeaveGroup to the native request. Pure.
func leaveRequest(req *kmsg.LeaveGroupRequest) *messages.LeaveGroupRequest {
	n := &messages.LeaveGroupRequest{GroupId: req.Group}
	if req.Version < 3 {
		n.Members = []*messages.LeaveGroupRequestMember{{MemberId: req.MemberID}}
		return n
	}
	for _, m := range req.Members {
		nm := &messages.LeaveGroupRequestMember{MemberId: m.MemberID}
		if m.InstanceID != nil {
			nm.GroupInstanceId = *m.InstanceID
		}
		if m.Reason != nil {
			nm.Reason = *m.Reason
		}
		n.Members = append(n.Members, nm)
	}
	return n
}

// leaveResponse maps the native answer to req's version: before v3 the one
// member's error is the response's. Pure.
func leaveResponse(req *kmsg.LeaveGroupRequest, res *messages.LeaveGroupResponse) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	resp.ErrorCode = nativeCode(res.GetErrorCode())
	if resp.ErrorCode != 0 {
		return resp
	}
	if req.Version < 3 {
		if ms := res.GetMembers(); len(ms) > 0 {
			resp.ErrorCode = nativeCode(ms[0].GetErrorCode())
		}
		return resp
	}
	for _, m := range res.GetMembers() {
		km := kmsg.NewLeaveGroupResponseMember()
		km.MemberID, km.ErrorCode = m.GetMemberId(), nativeCode(m.GetErrorCode())
		if id := m.GetGroupInstanceId(); id != "" {
			km.InstanceID = &id
		}
		resp.Members = append(resp.Members, km)
	}
	return resp
}
