// deletetopics.go: DeleteTopics (key 20), v0-5 (by name; v6, by topic id,
// is not advertised); needs Config.Admin.
//
// Behaviour: each named topic is deleted on its own through
// AdminBackend.DeleteTopic, in request order, with its own error code; a
// name given twice is INVALID_REQUEST for each mention. error_message
// from v5.
//
// Error codes: INVALID_REQUEST (42), and whatever the backend reports:
// UNKNOWN_TOPIC_OR_PARTITION (3), INVALID_TOPIC_EXCEPTION (17),
// REQUEST_TIMED_OUT (7), NOT_CONTROLLER (41).

package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(api{key: 20, servedMin: 0, servedMax: 5, advertisedMin: 0, advertisedMax: 5,
		handle: handleDeleteTopics, enabled: adminEnabled})
}

func handleDeleteTopics(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.DeleteTopicsRequest)
	seen := make(map[string]int, len(req.TopicNames))
	for _, name := range req.TopicNames {
		seen[name]++
	}
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		results := make([]AdminResult, len(req.TopicNames))
		for i, name := range req.TopicNames {
			if seen[name] > 1 {
				results[i] = AdminResult{ErrorCode: kerr.InvalidRequest.Code, ErrorMessage: fmt.Sprintf("topic %q is named more than once in the request", name)}
				continue
			}
			res, err := c.srv.cfg.Admin.DeleteTopic(ctx, name)
			if err != nil {
				return nil, fmt.Errorf("delete topic %q: %w", name, err)
			}
			results[i] = res
		}
		return deleteTopicsResponse(req, results), nil
	})
}

// deleteTopicsResponse answers req with results (indexed like its topic
// names). Pure.
func deleteTopicsResponse(req *kmsg.DeleteTopicsRequest, results []AdminResult) *kmsg.DeleteTopicsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	for i, name := range req.TopicNames {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic = kmsg.StringPtr(name)
		st.ErrorCode = results[i].ErrorCode
		if st.ErrorCode != 0 && results[i].ErrorMessage != "" && req.Version >= 5 {
			st.ErrorMessage = kmsg.StringPtr(results[i].ErrorMessage)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
