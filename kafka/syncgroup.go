// syncgroup.go: SyncGroup (key 14), served and advertised v0-5; needs
// Config.Groups.
//
// Behaviour:
//   - After JoinGroup: the leader sends every member's assignment; each
//     member is answered (asynchronously: the coordinator waits for the
//     leader's) with its own.
//   - Instance id from v3; protocol type and name from v5 (checked by the
//     coordinator when given, returned from v5).
//   - An empty assignment in a "consumer" group is answered as a valid
//     empty ConsumerMemberAssignment, never as zero bytes, which some
//     clients cannot decode (kfake's assignmentOrEmpty does the same).
//
// Error codes: as messages.SyncGroupResponse (REBALANCE_IN_PROGRESS,
// ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
// INCONSISTENT_GROUP_PROTOCOL, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR,
// INVALID_GROUP_ID).

package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/messages"
)

func init() {
	register(api{key: 14, servedMin: 0, servedMax: 5, advertisedMin: 0, advertisedMax: 5,
		handle: handleSyncGroup, enabled: groupsEnabled})
}

// emptyConsumerAssignment is an encoded empty ConsumerMemberAssignment.
var emptyConsumerAssignment = func() []byte {
	a := kmsg.NewConsumerMemberAssignment()
	return a.AppendTo(nil)
}()

func handleSyncGroup(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.SyncGroupRequest)
	native := syncRequest(req)
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		res, err := c.srv.cfg.Groups.SyncGroup(ctx, native)
		if err != nil {
			return nil, err
		}
		return syncResponse(req, res), nil
	})
}

// syncRequest maps a Kafka SyncGroup to the native request. Pure.
func syncRequest(req *kmsg.SyncGroupRequest) *messages.SyncGroupRequest {
	n := &messages.SyncGroupRequest{GroupId: req.Group, GenerationId: req.Generation, MemberId: req.MemberID}
	if req.InstanceID != nil {
		n.GroupInstanceId = *req.InstanceID
	}
	if req.ProtocolType != nil {
		n.ProtocolType = *req.ProtocolType
	}
	if req.Protocol != nil {
		n.ProtocolName = *req.Protocol
	}
	for _, a := range req.GroupAssignment {
		n.Assignments = append(n.Assignments, &messages.SyncGroupRequestAssignment{MemberId: a.MemberID, Assignment: a.MemberAssignment})
	}
	return n
}

// syncResponse maps the native answer to req's version. Pure.
func syncResponse(req *kmsg.SyncGroupRequest, res *messages.SyncGroupResponse) *kmsg.SyncGroupResponse {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	resp.ErrorCode = nativeCode(res.GetErrorCode())
	if resp.ErrorCode != 0 {
		resp.MemberAssignment = []byte{}
		return resp
	}
	pt, pn := res.GetProtocolType(), res.GetProtocolName()
	resp.ProtocolType, resp.Protocol = &pt, &pn
	resp.MemberAssignment = res.GetAssignment()
	if len(resp.MemberAssignment) == 0 && pt == "consumer" {
		resp.MemberAssignment = append([]byte(nil), emptyConsumerAssignment...)
	}
	return resp
}
