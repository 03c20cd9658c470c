// findcoordinator.go: FindCoordinator (key 10), served and advertised v0-5;
// needs Config.Groups.
//
// Behaviour:
//   - Key type 0 (group): the GroupBackend names the coordinating host's
//     Kafka listener (node id = host id). v0-3 ask for one key, v4+
//     (KIP-699) for several, each answered in Coordinators.
//   - Key type 1 (transaction): transactions are not served (DESIGN §9), so
//     a transactional id is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
//     as InitProducerId refuses it: clients fail fatally and clearly
//     instead of retrying forever, as they would on COORDINATOR_NOT_AVAILABLE.
//   - Any other key type is INVALID_REQUEST.
//   - A GroupBackend error closes the connection (a local fault).
//
// Error codes: INVALID_GROUP_ID, COORDINATOR_NOT_AVAILABLE (no coordinator
// yet: retry), TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53), INVALID_REQUEST (42).

package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(api{key: 10, servedMin: 0, servedMax: 5, advertisedMin: 0, advertisedMax: 5,
		handle: handleFindCoordinator, enabled: groupsEnabled})
}

func handleFindCoordinator(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		for _, key := range keys {
			a := CoordinatorAnswer{ErrorCode: findCoordinatorRefusal(req.CoordinatorType)}
			if a.ErrorCode == 0 {
				var err error
				if a, err = c.srv.cfg.Groups.FindCoordinator(ctx, key); err != nil {
					return nil, err
				}
			}
			setCoordinator(resp, req.Version, key, a)
		}
		return resp, nil
	})
}

// findCoordinatorRefusal is the error code a key of keyType is refused
// with, 0 if it is served (groups). Pure.
func findCoordinatorRefusal(keyType int8) int16 {
	switch keyType {
	case 0:
		return 0
	case 1:
		return kerr.TransactionalIDAuthorizationFailed.Code
	default:
		return kerr.InvalidRequest.Code
	}
}

// setCoordinator puts one key's answer in resp: the top-level fields before
// v4, one Coordinators entry from v4. On error the node is -1, the host
// empty and the port -1, as Kafka answers. Pure.
func setCoordinator(resp *kmsg.FindCoordinatorResponse, version int16, key string, a CoordinatorAnswer) {
	if a.ErrorCode != 0 {
		a.NodeID, a.Host, a.Port = -1, "", -1
		if a.ErrorMessage == "" {
			if e := kerr.ErrorForCode(a.ErrorCode); e != nil {
				a.ErrorMessage = e.Error()
			}
		}
	}
	if version < 4 {
		resp.ErrorCode, resp.ErrorMessage = a.ErrorCode, msgPtr(a.ErrorMessage)
		resp.NodeID, resp.Host, resp.Port = a.NodeID, a.Host, a.Port
		return
	}
	co := kmsg.NewFindCoordinatorResponseCoordinator()
	co.Key, co.ErrorCode, co.ErrorMessage = key, a.ErrorCode, msgPtr(a.ErrorMessage)
	co.NodeID, co.Host, co.Port = a.NodeID, a.Host, a.Port
	resp.Coordinators = append(resp.Coordinators, co)
}
