// describegroups.go: DescribeGroups (key 15), served and advertised v0-5;
// needs Config.Groups.
//
// Behaviour: each group is described by its coordinator (state, protocol
// type, the chosen protocol while Stable, members with their metadata and
// assignment); a group this host does not coordinate is answered
// NOT_COORDINATOR, an unknown one with state "Dead" and no error, as Kafka
// does. Instance ids from v4. Authorized operations (v3+) are not computed
// (no ACLs): Kafka's "not requested" value, INT32_MIN, is sent.
//
// Error codes (per group): NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
// COORDINATOR_NOT_AVAILABLE, INVALID_GROUP_ID.

package kafka

import (
	"context"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/messages"
)

func init() {
	register(api{key: 15, servedMin: 0, servedMax: 5, advertisedMin: 0, advertisedMax: 5,
		handle: handleDescribeGroups, enabled: groupsEnabled})
}

func handleDescribeGroups(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.DescribeGroupsRequest)
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
		for _, group := range req.Groups {
			d, err := c.srv.cfg.Groups.DescribeGroup(ctx, group)
			if err != nil {
				return nil, err
			}
			resp.Groups = append(resp.Groups, describedGroup(group, d))
		}
		return resp, nil
	})
}

// describedGroup maps one native description. Pure.
func describedGroup(group string, d *messages.DescribedGroup) kmsg.DescribeGroupsResponseGroup {
	g := kmsg.NewDescribeGroupsResponseGroup()
	g.Group = group
	g.AuthorizedOperations = math.MinInt32
	g.ErrorCode, g.ErrorMessage = nativeCode(d.GetErrorCode()), msgPtr(d.GetErrorMessage())
	g.State, g.ProtocolType, g.Protocol = d.GetGroupState(), d.GetProtocolType(), d.GetProtocolData()
	if g.ErrorCode != 0 && g.State == "" {
		g.State = "Dead"
	}
	for _, m := range d.GetMembers() {
		km := kmsg.NewDescribeGroupsResponseGroupMember()
		km.MemberID, km.ClientID, km.ClientHost = m.GetMemberId(), m.GetClientId(), m.GetClientHost()
		km.ProtocolMetadata, km.MemberAssignment = m.GetMemberMetadata(), m.GetMemberAssignment()
		if id := m.GetGroupInstanceId(); id != "" {
			km.InstanceID = &id
		}
		g.Members = append(g.Members, km)
	}
	return g
}
