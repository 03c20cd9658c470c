// alterconfigs.go: AlterConfigs (key 33), v0-2; needs Config.Admin.
//
// Behaviour: each TOPIC resource's configs REPLACE the topic's overrides
// (keys not given return to their defaults, as Kafka's AlterConfigs
// does; a null value is left out) through
// AdminBackend.AlterTopicConfigs; validate_only checks without changing.
// A bad key or value is INVALID_CONFIG and changes nothing. BROKER
// resources are refused with INVALID_REQUEST (a host's settings are its
// flags); so is any other type, a resource named twice in one request,
// and a config named twice in one resource.
//
// Error codes: INVALID_REQUEST (42), and whatever the backend reports:
// INVALID_CONFIG (40), UNKNOWN_TOPIC_OR_PARTITION (3),
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
	register(api{key: 33, servedMin: 0, servedMax: 2, advertisedMin: 0, advertisedMax: 2,
		handle: handleAlterConfigs, enabled: adminEnabled})
}

// resourceKey names a config resource, to find one named twice.
type resourceKey struct {
	typ  kmsg.ConfigResourceType
	name string
}

// checkConfigResource is the refusal of a resource an alter request may
// not change (not a topic, or named more than once), ok when it may.
// Pure.
func checkConfigResource(typ kmsg.ConfigResourceType, name string, seen map[resourceKey]int) (AdminResult, bool) {
	switch {
	case typ == kmsg.ConfigResourceTypeBroker:
		return AdminResult{ErrorCode: kerr.InvalidRequest.Code,
			ErrorMessage: "broker configs cannot be altered: a host's settings are its command-line flags"}, false
	case typ != kmsg.ConfigResourceTypeTopic:
		return AdminResult{ErrorCode: kerr.InvalidRequest.Code,
			ErrorMessage: fmt.Sprintf("resource type %s is not supported: only TOPIC configs can be altered", typ)}, false
	case seen[resourceKey{typ, name}] > 1:
		return AdminResult{ErrorCode: kerr.InvalidRequest.Code,
			ErrorMessage: fmt.Sprintf("resource %s %q is named more than once in the request", typ, name)}, false
	}
	return AdminResult{}, true
}

// duplicateConfig is the refusal of a resource naming a config twice.
func duplicateConfig(name string) AdminResult {
	return AdminResult{ErrorCode: kerr.InvalidRequest.Code, ErrorMessage: fmt.Sprintf("config %q is named more than once for the resource", name)}
}

func handleAlterConfigs(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.AlterConfigsRequest)
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
			configs := make(map[string]string, len(res.Configs))
			dup := ""
			for _, cfg := range res.Configs {
				if _, ok := configs[cfg.Name]; ok {
					dup = cfg.Name
				}
				if cfg.Value != nil {
					configs[cfg.Name] = *cfg.Value
				} else {
					configs[cfg.Name] = "" // marks the name seen; dropped below
				}
			}
			if dup != "" {
				results[i] = duplicateConfig(dup)
				continue
			}
			for _, cfg := range res.Configs {
				if cfg.Value == nil {
					delete(configs, cfg.Name)
				}
			}
			got, err := c.srv.cfg.Admin.AlterTopicConfigs(ctx, AlterConfigsQuery{Name: res.ResourceName, Configs: configs, ValidateOnly: req.ValidateOnly})
			if err != nil {
				return nil, fmt.Errorf("alter configs of topic %q: %w", res.ResourceName, err)
			}
			results[i] = got
		}
		resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
		for i, res := range req.Resources {
			sr := kmsg.NewAlterConfigsResponseResource()
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
