// sync.go handles SyncGroup (Kafka's GroupCoordinator.handleSyncGroup,
// SyncGroup v5).
//
// After a join phase (CompletingRebalance) every member sends SyncGroup; the
// leader's carries the assignments. Followers wait until the leader's
// arrives; then every waiting member gets its own assignment and the group
// is Stable. In a Stable group SyncGroup returns the member's assignment at
// once. A member that has not sent SyncGroup within the rebalance timeout
// after the join phase is removed (Tick), which starts a new rebalance.
//
// Error codes: REBALANCE_IN_PROGRESS (PreparingRebalance, or a rebalance
// started while the member waited), ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
// FENCED_INSTANCE_ID, INCONSISTENT_GROUP_PROTOCOL (protocol type or name
// differ from the group's), COORDINATOR_NOT_AVAILABLE (Dead),
// INVALID_GROUP_ID, NOT_COORDINATOR (Unload).

package group

import (
	"fmt"
	"time"

	"github.com/actorlog/actorlog/messages"
)

// Sync handles req, which the shell identifies by token. The response is
// among the returned or a later call's Replies, under token. The shell
// answers a sync for a group it does not have with UNKNOWN_MEMBER_ID.
func (g *Group) Sync(now time.Time, token Token, req *messages.SyncGroupRequest) Effects {
	g.begin()
	g.onSync(now, &waiter{token: token, correlation: req.GetCorrelationId()}, req)
	return g.finish(now)
}

func (g *Group) onSync(now time.Time, w *waiter, req *messages.SyncGroupRequest) {
	if r := g.validateGeneration(req.GetGroupId(), req.GetMemberId(), req.GetGroupInstanceId(), req.GetGenerationId()); r != nil {
		g.syncError(w, r.code, r.msg)
		return
	}
	if t := req.GetProtocolType(); t != "" && t != g.protocolType {
		g.syncError(w, messages.ErrorCode_ERROR_CODE_INCONSISTENT_GROUP_PROTOCOL,
			fmt.Sprintf("protocol type %q, the group's is %q", t, g.protocolType))
		return
	}
	if n := req.GetProtocolName(); n != "" && n != g.protocolName {
		g.syncError(w, messages.ErrorCode_ERROR_CODE_INCONSISTENT_GROUP_PROTOCOL,
			fmt.Sprintf("protocol %q, the generation's is %q", n, g.protocolName))
		return
	}
	m := g.members[req.GetMemberId()]
	switch g.state {
	case PreparingRebalance:
		g.syncError(w, messages.ErrorCode_ERROR_CODE_REBALANCE_IN_PROGRESS, "the group is rebalancing; rejoin")
	case CompletingRebalance:
		if m.sync != nil {
			g.syncError(m.sync, messages.ErrorCode_ERROR_CODE_REBALANCE_IN_PROGRESS,
				"replaced by a newer SyncGroup from the same member")
		}
		m.sync = w
		g.donePendingSync(m.id)
		if m.id == g.leader {
			assignments := make(map[string][]byte, len(req.GetAssignments()))
			for _, a := range req.GetAssignments() {
				assignments[a.GetMemberId()] = a.GetAssignment()
			}
			g.setAssignments(now, assignments)
		}
	case Stable:
		g.donePendingSync(m.id)
		g.reply(w, &messages.SyncGroupResponse{
			CorrelationId: w.correlation,
			ProtocolType:  g.protocolType,
			ProtocolName:  g.protocolName,
			Assignment:    m.assignment,
		})
		g.heartbeat(m, now)
	default:
		g.syncError(w, messages.ErrorCode_ERROR_CODE_UNKNOWN_MEMBER_ID, "the group has no members")
	}
}

// validateGeneration checks a request from member id (instance instanceID)
// of generation gen to group groupID: the group is alive, id is its member
// (and owns instanceID), and gen is current. It is the check SyncGroup and
// Heartbeat share.
func (g *Group) validateGeneration(groupID, id, instanceID string, gen int32) *refusal {
	switch {
	case groupID != g.id:
		return refuse(messages.ErrorCode_ERROR_CODE_INVALID_GROUP_ID, "group %q asked of group %q", groupID, g.id)
	case g.state == Dead:
		return refuse(messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE,
			"the group is being deleted or moved; find its coordinator again")
	}
	if r := g.validateMember(id, instanceID); r != nil {
		return r
	}
	if gen != g.generation {
		return refuse(messages.ErrorCode_ERROR_CODE_ILLEGAL_GENERATION, "generation %d, the group's is %d", gen, g.generation)
	}
	return nil
}
