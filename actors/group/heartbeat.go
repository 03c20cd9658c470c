// heartbeat.go handles Heartbeat (Kafka's GroupCoordinator.handleHeartbeat,
// Heartbeat v4) and the membership check of offset commits.
//
// A heartbeat restarts the member's session timer. It answers
// REBALANCE_IN_PROGRESS while the group prepares a rebalance (the member
// must rejoin), and otherwise nothing, or the member's fault:
// UNKNOWN_MEMBER_ID (not a member: rejoin from scratch), FENCED_INSTANCE_ID
// (its static instance id has a newer member), ILLEGAL_GENERATION (it
// missed a generation: rejoin), COORDINATOR_NOT_AVAILABLE (Dead),
// INVALID_GROUP_ID.

package group

import (
	"time"

	"github.com/actorlog/actorlog/messages"
)

// Heartbeat handles req and returns its response; the shell answers a
// heartbeat for a group it does not have with UNKNOWN_MEMBER_ID.
func (g *Group) Heartbeat(now time.Time, req *messages.HeartbeatRequest) (*messages.HeartbeatResponse, Effects) {
	g.begin()
	resp := &messages.HeartbeatResponse{CorrelationId: req.GetCorrelationId()}
	if r := g.validateGeneration(req.GetGroupId(), req.GetMemberId(), req.GetGroupInstanceId(), req.GetGenerationId()); r != nil {
		resp.ErrorCode, resp.ErrorMessage = r.code, r.msg
	} else {
		m := g.members[req.GetMemberId()]
		switch g.state {
		case PreparingRebalance:
			g.heartbeat(m, now)
			resp.ErrorCode = messages.ErrorCode_ERROR_CODE_REBALANCE_IN_PROGRESS
			resp.ErrorMessage = "the group is rebalancing; rejoin"
		case CompletingRebalance, Stable:
			g.heartbeat(m, now)
		default:
			resp.ErrorCode = messages.ErrorCode_ERROR_CODE_UNKNOWN_MEMBER_ID
			resp.ErrorMessage = "the group has no members"
		}
	}
	return resp, g.finish(now)
}

// CanCommit reports (as an error code and message) whether an offset commit from member memberID (static
// instance instanceID, or "") of generation may be written, as Kafka's
// validateOffsetCommit:
//   - COORDINATOR_NOT_AVAILABLE when the group is Dead;
//   - a commit naming a member (generation >= 0, a member id or an instance
//     id) needs a current member (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID)
//     of the current generation (ILLEGAL_GENERATION), and the group not in
//     CompletingRebalance (REBALANCE_IN_PROGRESS: the member will get its
//     new assignment from SyncGroup); during PreparingRebalance it is
//     allowed, so a member can commit before it rejoins;
//   - a commit naming no member (generation -1: a consumer that assigns
//     itself partitions, Kafka's "simple" consumer) is allowed only while the
//     group is Empty (ILLEGAL_GENERATION otherwise).
//
// An allowed commit from a member counts as a heartbeat (it only pushes
// deadlines later, so the shell's timer stays valid). The shell answers a
// commit for a group it does not have: with generation < 0 it creates an
// Empty group (NewGroup) for the offsets; otherwise UNKNOWN_MEMBER_ID.
func (g *Group) CanCommit(now time.Time, memberID, instanceID string, generation int32) (messages.ErrorCode, string) {
	if generation < 0 && memberID == "" && instanceID == "" {
		switch g.state {
		case Dead:
			return messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE,
				"the group is being deleted or moved; find its coordinator again"
		case Empty:
			return messages.ErrorCode_ERROR_CODE_UNSPECIFIED, ""
		}
		return messages.ErrorCode_ERROR_CODE_ILLEGAL_GENERATION,
			"the group has members: only they may commit, with their generation"
	}
	if r := g.validateGeneration(g.id, memberID, instanceID, generation); r != nil {
		return r.code, r.msg
	}
	switch g.state {
	case CompletingRebalance:
		return messages.ErrorCode_ERROR_CODE_REBALANCE_IN_PROGRESS,
			"the group is completing a rebalance; sync to get the new assignment"
	case Stable, PreparingRebalance:
		g.heartbeat(g.members[memberID], now)
	}
	return messages.ErrorCode_ERROR_CODE_UNSPECIFIED, ""
}
