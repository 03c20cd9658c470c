// joingroup.go: JoinGroup (key 11), served and advertised v0-9; needs
// Config.Groups.
//
// Behaviour:
//   - A long request: the coordinator answers once the rebalance's join
//     phase ends (every member rejoined, or the rebalance timeout), so the
//     handler answers asynchronously and the connection keeps reading.
//   - v0 has no rebalance timeout: the session timeout is used, as Kafka
//     does. Timeouts are passed as given; the coordinator checks them.
//   - KIP-394 (MEMBER_ID_REQUIRED): the coordinator always hands a new
//     member its id that way; only v4+ clients know the code, so for v0-3
//     the handler joins again at once with the given id and answers the
//     second join, as Kafka does for old clients.
//   - Static membership (group.instance.id, KIP-345) exists from v5 (kmsg
//     decodes no instance id before).
//   - SkipAssignment (KIP-814, a static leader rejoined a stable group and
//     must not assign) is sent from v9; before v9 the rejoined leader is
//     answered as Kafka did before KIP-814: no members and a leader id not
//     its own, so it syncs as a follower and gets its assignment back.
//   - Protocol type and protocol (assignor) names pass through unchanged,
//     so Kafka clients and actorlog's consumer share groups.
//
// Error codes: as messages.JoinGroupResponse (MEMBER_ID_REQUIRED v4+,
// UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, INCONSISTENT_GROUP_PROTOCOL,
// INVALID_SESSION_TIMEOUT, INVALID_GROUP_ID, GROUP_MAX_SIZE_REACHED,
// REBALANCE_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS).

package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/messages"
)

func init() {
	register(api{key: 11, servedMin: 0, servedMax: 9, advertisedMin: 0, advertisedMax: 9,
		handle: handleJoinGroup, enabled: groupsEnabled})
}

func handleJoinGroup(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.JoinGroupRequest)
	native := joinRequest(req, r.clientID)
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		res, err := c.srv.cfg.Groups.JoinGroup(ctx, native)
		if err != nil {
			return nil, err
		}
		if req.Version < 4 && res.GetErrorCode() == messages.ErrorCode_ERROR_CODE_MEMBER_ID_REQUIRED && res.GetMemberId() != "" {
			native.MemberId = res.GetMemberId()
			if res, err = c.srv.cfg.Groups.JoinGroup(ctx, native); err != nil {
				return nil, err
			}
		}
		return joinResponse(req, res), nil
	})
}

// joinRequest maps a Kafka JoinGroup to the native request. Pure.
func joinRequest(req *kmsg.JoinGroupRequest, clientID *string) *messages.JoinGroupRequest {
	n := &messages.JoinGroupRequest{
		GroupId: req.Group, MemberId: req.MemberID, ProtocolType: req.ProtocolType,
		SessionTimeoutMs: req.SessionTimeoutMillis, RebalanceTimeoutMs: req.RebalanceTimeoutMillis,
	}
	if req.Version < 1 {
		n.RebalanceTimeoutMs = req.SessionTimeoutMillis
	}
	if req.Version >= 5 && req.InstanceID != nil {
		n.GroupInstanceId = *req.InstanceID
	}
	if clientID != nil {
		n.ClientId = *clientID
	}
	if req.Reason != nil {
		n.Reason = *req.Reason
	}
	for _, p := range req.Protocols {
		n.Protocols = append(n.Protocols, &messages.JoinGroupRequestProtocol{Name: p.Name, Metadata: p.Metadata})
	}
	return n
}

// joinResponse maps the native answer to req's version. Pure.
func joinResponse(req *kmsg.JoinGroupRequest, res *messages.JoinGroupResponse) *kmsg.JoinGroupResponse {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.ErrorCode = nativeCode(res.GetErrorCode())
	resp.Generation = res.GetGenerationId()
	resp.MemberID = res.GetMemberId()
	if resp.ErrorCode != 0 {
		resp.Generation = -1
		if req.Version < 4 || resp.ErrorCode != nativeCode(messages.ErrorCode_ERROR_CODE_MEMBER_ID_REQUIRED) {
			resp.MemberID = req.MemberID
		}
		return resp
	}
	pt, pn := res.GetProtocolType(), res.GetProtocolName()
	resp.ProtocolType, resp.Protocol = &pt, &pn
	resp.LeaderID = res.GetLeader()
	skip := res.GetSkipAssignment()
	if req.Version >= 9 {
		resp.SkipAssignment = skip
	}
	if skip && req.Version < 9 {
		// Before KIP-814 Kafka answered a rejoining static leader with
		// no members and a leader id not its own (the old member id),
		// so it syncs as a follower and the group keeps its assignment.
		resp.LeaderID = ""
		return resp
	}
	for _, m := range res.GetMembers() {
		km := kmsg.NewJoinGroupResponseMember()
		km.MemberID, km.ProtocolMetadata = m.GetMemberId(), m.GetMetadata()
		if id := m.GetGroupInstanceId(); id != "" {
			km.InstanceID = &id
		}
		resp.Members = append(resp.Members, km)
	}
	return resp
}
