// deletegroups.go: DeleteGroups (key 42), served and advertised v0-2;
// needs Config.Groups.
//
// Behaviour: each group is deleted, with its committed offsets, by its
// coordinator when it has no members; one result per group, in request
// order.
//
// Error codes (per group): NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND,
// NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
// INVALID_GROUP_ID.

package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(api{key: 42, servedMin: 0, servedMax: 2, advertisedMin: 0, advertisedMax: 2,
		handle: handleDeleteGroups, enabled: groupsEnabled})
}

func handleDeleteGroups(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.DeleteGroupsRequest)
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
		for _, group := range req.Groups {
			res, err := c.srv.cfg.Groups.DeleteGroup(ctx, group)
			if err != nil {
				return nil, err
			}
			g := kmsg.NewDeleteGroupsResponseGroup()
			g.Group, g.ErrorCode = group, nativeCode(res.GetErrorCode())
			resp.Groups = append(resp.Groups, g)
		}
		return resp, nil
	})
}
