// createtopics.go: CreateTopics (key 19), v0-7; needs Config.Admin.
//
// Behaviour:
//   - Several topics per request, each created (or, with validate_only,
//     v1+, checked) on its own through AdminBackend.CreateTopic, in
//     request order; each gets its own error code.
//   - num_partitions / replication_factor -1 take the host's defaults
//     (v4+ clients send them; the backend fills them in).
//   - A topic named twice in one request is refused for each mention with
//     INVALID_REQUEST, as Kafka does; so is one with a manual replica
//     assignment (the controller places replicas itself).
//   - v5+ answers each created topic's partition count, replication
//     factor and configs (every known key; DEFAULT_CONFIG or
//     TOPIC_CONFIG); v7+ its topic id. error_message from v1.
//
// Error codes: INVALID_REQUEST (42), and whatever the backend reports:
// TOPIC_ALREADY_EXISTS (36), INVALID_TOPIC_EXCEPTION (17),
// INVALID_PARTITIONS (37), INVALID_REPLICATION_FACTOR (38),
// INVALID_CONFIG (40), POLICY_VIOLATION (44), REQUEST_TIMED_OUT (7),
// NOT_CONTROLLER (41).

package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(api{key: 19, servedMin: 0, servedMax: 7, advertisedMin: 0, advertisedMax: 7,
		handle: handleCreateTopics, enabled: adminEnabled})
}

// createPart is one topic of a CreateTopics request: refused now (code
// set) or to ask the backend about.
type createPart struct {
	code int16
	msg  string
	q    CreateTopicQuery
}

// planCreateTopics checks req and returns, in request order, each topic's
// refusal or query. Pure.
func planCreateTopics(req *kmsg.CreateTopicsRequest) []createPart {
	seen := make(map[string]int, len(req.Topics))
	for _, t := range req.Topics {
		seen[t.Topic]++
	}
	plan := make([]createPart, len(req.Topics))
	for i, t := range req.Topics {
		switch {
		case seen[t.Topic] > 1:
			plan[i] = createPart{code: kerr.InvalidRequest.Code, msg: fmt.Sprintf("topic %q is named more than once in the request", t.Topic)}
			continue
		case len(t.ReplicaAssignment) > 0:
			plan[i] = createPart{code: kerr.InvalidRequest.Code, msg: "manual replica assignment is not supported: give num_partitions and replication_factor"}
			continue
		}
		configs := make(map[string]string, len(t.Configs))
		for _, c := range t.Configs {
			if c.Value != nil {
				configs[c.Name] = *c.Value
			}
		}
		plan[i] = createPart{q: CreateTopicQuery{
			Name: t.Topic, Partitions: t.NumPartitions, ReplicationFactor: t.ReplicationFactor,
			Configs: configs, ValidateOnly: req.ValidateOnly,
		}}
	}
	return plan
}

func handleCreateTopics(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.CreateTopicsRequest)
	plan := planCreateTopics(req)
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		results := make([]CreateTopicResult, len(plan))
		for i, p := range plan {
			if p.code != 0 {
				results[i] = CreateTopicResult{AdminResult: AdminResult{ErrorCode: p.code, ErrorMessage: p.msg}}
				continue
			}
			res, err := c.srv.cfg.Admin.CreateTopic(ctx, p.q)
			if err != nil {
				return nil, fmt.Errorf("create topic %q: %w", p.q.Name, err)
			}
			results[i] = res
		}
		return createTopicsResponse(req, results), nil
	})
}

// createTopicsResponse answers req with results (indexed like its
// topics), setting the fields req's version carries. Pure.
func createTopicsResponse(req *kmsg.CreateTopicsRequest, results []CreateTopicResult) *kmsg.CreateTopicsResponse {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	for i, t := range req.Topics {
		res := results[i]
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = t.Topic
		st.ErrorCode = res.ErrorCode
		if res.ErrorCode != 0 && res.ErrorMessage != "" && req.Version >= 1 {
			st.ErrorMessage = kmsg.StringPtr(res.ErrorMessage)
		}
		if res.ErrorCode == 0 && req.Version >= 5 {
			st.TopicID = res.ID
			st.NumPartitions, st.ReplicationFactor = res.Partitions, res.ReplicationFactor
			for _, e := range res.Configs {
				sc := kmsg.NewCreateTopicsResponseTopicConfig()
				sc.Name, sc.Value, sc.ReadOnly = e.Name, kmsg.StringPtr(e.Value), e.ReadOnly
				sc.Source = int8(configSource(e))
				st.Configs = append(st.Configs, sc)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// configSource is e's Kafka config source: e.Source when set, else
// DEFAULT_CONFIG, or DYNAMIC_TOPIC_CONFIG for an override.
func configSource(e ConfigEntry) kmsg.ConfigSource {
	if e.Source != 0 {
		return kmsg.ConfigSource(e.Source)
	}
	if e.Default {
		return kmsg.ConfigSourceDefaultConfig
	}
	return kmsg.ConfigSourceDynamicTopicConfig
}
