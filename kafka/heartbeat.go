// heartbeat.go: Heartbeat (key 12), served and advertised v0-4; needs
// Config.Groups.
//
// Behaviour: keeps a member's session alive and tells it when a rebalance
// started (REBALANCE_IN_PROGRESS: rejoin). Instance id from v3.
//
// Error codes: as messages.HeartbeatResponse (REBALANCE_IN_PROGRESS,
// ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
// COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, INVALID_GROUP_ID).

package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/messages"
)

func init() {
	register(api{key: 12, servedMin: 0, servedMax: 4, advertisedMin: 0, advertisedMax: 4,
		handle: handleHeartbeat, enabled: groupsEnabled})
}

func handleHeartbeat(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.HeartbeatRequest)
	native := &messages.HeartbeatRequest{GroupId: req.Group, GenerationId: req.Generation, MemberId: req.MemberID}
	if req.InstanceID != nil {
		native.GroupInstanceId = *req.InstanceID
	}
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		res, err := c.srv.cfg.Groups.Heartbeat(ctx, native)
		if err != nil {
			return nil, err
		}
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = nativeCode(res.GetErrorCode())
		return resp, nil
	})
}
