// listgroups.go: ListGroups (key 16), served and advertised v0-5; needs
// Config.Groups.
//
// Behaviour: lists the groups of this host's coordinators, as a Kafka
// broker lists its own (clients ask every broker and merge). States filter
// from v4 (KIP-518); types filter from v5 (KIP-848): every group here is
// "classic", so a filter without it lists none.
//
// Error codes: COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE (a
// coordinator here is loading or did not answer; the others' groups are
// listed all the same).

package kafka

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/messages"
)

func init() {
	register(api{key: 16, servedMin: 0, servedMax: 5, advertisedMin: 0, advertisedMax: 5,
		handle: handleListGroups, enabled: groupsEnabled})
}

// classicGroupType is the type of every group (KIP-848's name for the
// classic protocol).
const classicGroupType = "classic"

func handleListGroups(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.ListGroupsRequest)
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		res, err := c.srv.cfg.Groups.ListGroups(ctx, &messages.ListGroupsRequest{StatesFilter: req.StatesFilter})
		if err != nil {
			return nil, err
		}
		return listGroupsResponse(req, res), nil
	})
}

// listGroupsResponse maps the native answer to req's version. Pure.
func listGroupsResponse(req *kmsg.ListGroupsRequest, res *messages.ListGroupsResponse) *kmsg.ListGroupsResponse {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	resp.ErrorCode = nativeCode(res.GetErrorCode())
	if len(req.TypesFilter) > 0 && !containsFold(req.TypesFilter, classicGroupType) {
		return resp
	}
	for _, g := range res.GetGroups() {
		kg := kmsg.NewListGroupsResponseGroup()
		kg.Group, kg.ProtocolType, kg.GroupState, kg.GroupType = g.GetGroupId(), g.GetProtocolType(), g.GetGroupState(), classicGroupType
		resp.Groups = append(resp.Groups, kg)
	}
	return resp
}

// containsFold reports whether ss holds s, ignoring case.
func containsFold(ss []string, s string) bool {
	for _, x := range ss {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
