// incrementalalterconfigs.go: IncrementalAlterConfigs (key 44), v0-1;
// needs Config.Admin.
//
// Behaviour: for each TOPIC resource, the topic's current overrides
// (AdminBackend.TopicConfigs) are changed by the ops — SET (a value is
// required), DELETE (back to the default) — and the result replaces the
// overrides through AdminBackend.AlterTopicConfigs; validate_only checks
// without changing. APPEND and SUBTRACT apply to list configs, of which
// topics here have none: INVALID_CONFIG. A bad key or value is
// INVALID_CONFIG and changes nothing. BROKER resources, other types, a
// resource named twice and a config named twice in one resource are
// INVALID_REQUEST. The read and the write are two steps: an alter of the
// same topic between them is overwritten (Kafka's admin clients
// serialize a topic's alters themselves).
//
// Error codes: INVALID_REQUEST (42), INVALID_CONFIG (40), and whatever
// the backend reports: UNKNOWN_TOPIC_OR_PARTITION (3),
// INVALID_TOPIC_EXCEPTION (17), POLICY_VIOLATION (44), REQUEST_TIMED_OUT
// (7), NOT_CONTROLLER (41).

package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(api{key: 44, servedMin: 0, servedMax: 1, advertisedMin: 0, advertisedMax: 1,
		handle: handleIncrementalAlterConfigs, enabled: adminEnabled})
}

// applyConfigOps returns the overrides of current (the topic's configs)
// changed by ops, or the refusal. Pure.
func applyConfigOps(current []ConfigEntry, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) (map[string]string, AdminResult) {
	out := make(map[string]string, len(current))
	for _, e := range current {
		if !e.Default {
			out[e.Name] = e.Value
		}
	}
	named := make(map[string]bool, len(ops))
	for _, op := range ops {
		if named[op.Name] {
			return nil, duplicateConfig(op.Name)
		}
		named[op.Name] = true
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if op.Value == nil {
				return nil, AdminResult{ErrorCode: kerr.InvalidRequest.Code, ErrorMessage: fmt.Sprintf("config %q: SET needs a value", op.Name)}
			}
			out[op.Name] = *op.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(out, op.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			return nil, AdminResult{ErrorCode: kerr.InvalidConfig.Code, ErrorMessage: fmt.Sprintf("config %q: %s applies only to list configs, and topics have none", op.Name, op.Op)}
		default:
			return nil, AdminResult{ErrorCode: kerr.InvalidRequest.Code, ErrorMessage: fmt.Sprintf("config %q: unknown op %d", op.Name, op.Op)}
		}
	}
	return out, AdminResult{}
}

func handleIncrementalAlterConfigs(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.IncrementalAlterConfigsRequest)
	seen := make(map[resourceKey]int, len(req.Resources))
	for _, res := range req.Resources {
		seen[resourceKey{res.ResourceType, res.ResourceName}]++
	}
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		results := make([]AdminResult, len(req.Resources))
		for i, res := range req.Resources {
			refusal, ok := checkConfigResource(res.ResourceType, res.ResourceName, seen)
			if !ok {
				results[i] = refusal
				continue
			}
			current, err := c.srv.cfg.Admin.TopicConfigs(ctx, res.ResourceName)
			if err != nil {
				return nil, fmt.Errorf("incremental alter configs: read topic %q: %w", res.ResourceName, err)
			}
			if current.ErrorCode != 0 {
				results[i] = current.AdminResult
				continue
			}
			configs, refusal := applyConfigOps(current.Configs, res.Configs)
			if refusal.ErrorCode != 0 {
				results[i] = refusal
				continue
			}
			got, err := c.srv.cfg.Admin.AlterTopicConfigs(ctx, AlterConfigsQuery{Name: res.ResourceName, Configs: configs, ValidateOnly: req.ValidateOnly})
			if err != nil {
				return nil, fmt.Errorf("incremental alter configs of topic %q: %w", res.ResourceName, err)
			}
			results[i] = got
		}
		resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		for i, res := range req.Resources {
			sr := kmsg.NewIncrementalAlterConfigsResponseResource()
			sr.ResourceType, sr.ResourceName = res.ResourceType, res.ResourceName
			sr.ErrorCode = results[i].ErrorCode
			if sr.ErrorCode != 0 && results[i].ErrorMessage != "" {
				sr.ErrorMessage = kmsg.StringPtr(results[i].ErrorMessage)
			}
			resp.Resources = append(resp.Resources, sr)
		}
		return resp, nil
	})
}
