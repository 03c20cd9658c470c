// createpartitions.go: CreatePartitions (key 37), v0-3; needs
// Config.Admin.
//
// Behaviour: each topic is grown to its count on its own through
// AdminBackend.CreatePartitions (with validate_only, only checked), in
// request order, with its own error code. A topic named twice, or with a
// manual assignment of the new partitions' replicas, is INVALID_REQUEST
// (the controller places replicas itself).
//
// Error codes: INVALID_REQUEST (42), and whatever the backend reports:
// UNKNOWN_TOPIC_OR_PARTITION (3), INVALID_PARTITIONS (37),
// REQUEST_TIMED_OUT (7), NOT_CONTROLLER (41).

package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(api{key: 37, servedMin: 0, servedMax: 3, advertisedMin: 0, advertisedMax: 3,
		handle: handleCreatePartitions, enabled: adminEnabled})
}

func handleCreatePartitions(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.CreatePartitionsRequest)
	seen := make(map[string]int, len(req.Topics))
	for _, t := range req.Topics {
		seen[t.Topic]++
	}
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		results := make([]AdminResult, len(req.Topics))
		for i, t := range req.Topics {
			switch {
			case seen[t.Topic] > 1:
				results[i] = AdminResult{ErrorCode: kerr.InvalidRequest.Code, ErrorMessage: fmt.Sprintf("topic %q is named more than once in the request", t.Topic)}
				continue
			case len(t.Assignment) > 0:
				results[i] = AdminResult{ErrorCode: kerr.InvalidRequest.Code, ErrorMessage: "manual replica assignment is not supported: give the count only"}
				continue
			}
			res, err := c.srv.cfg.Admin.CreatePartitions(ctx, CreatePartitionsQuery{Name: t.Topic, Total: t.Count, ValidateOnly: req.ValidateOnly})
			if err != nil {
				return nil, fmt.Errorf("create partitions of %q: %w", t.Topic, err)
			}
			results[i] = res
		}
		return createPartitionsResponse(req, results), nil
	})
}

// createPartitionsResponse answers req with results (indexed like its
// topics). Pure.
func createPartitionsResponse(req *kmsg.CreatePartitionsRequest, results []AdminResult) *kmsg.CreatePartitionsResponse {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	for i, t := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = t.Topic
		st.ErrorCode = results[i].ErrorCode
		if st.ErrorCode != 0 && results[i].ErrorMessage != "" {
			st.ErrorMessage = kmsg.StringPtr(results[i].ErrorMessage)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
