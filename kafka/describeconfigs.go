// describeconfigs.go: DescribeConfigs (key 32), v0-4; needs Config.Admin.
//
// Behaviour:
//   - TOPIC resources: every config the cluster knows
//     (AdminBackend.TopicConfigs), or those named in config_names, each
//     with its value (the override, else the default), is_default (v0),
//     source (v1+: DYNAMIC_TOPIC_CONFIG for an override, DEFAULT_CONFIG
//     otherwise), read_only, is_sensitive false, its synonyms when asked
//     (v1+: the override, then the default), its type (v3+) and, when
//     asked, its documentation (v3+).
//   - BROKER resources: the host's topic settings (Config.Topics:
//     auto.create.topics.enable, num.partitions,
//     default.replication.factor), read-only, STATIC_BROKER_CONFIG when a
//     flag changed them, else DEFAULT_CONFIG. A host's settings are its
//     flags, not broker configs a client could alter.
//   - Any other resource type: INVALID_REQUEST for that resource.
//
// Error codes: INVALID_REQUEST (42), and whatever the backend reports:
// UNKNOWN_TOPIC_OR_PARTITION (3), INVALID_TOPIC_EXCEPTION (17).

package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(api{key: 32, servedMin: 0, servedMax: 4, advertisedMin: 0, advertisedMax: 4,
		handle: handleDescribeConfigs, enabled: adminEnabled})
}

func handleDescribeConfigs(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.DescribeConfigsRequest)
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		results := make([]TopicConfigsResult, len(req.Resources))
		for i, res := range req.Resources {
			switch res.ResourceType {
			case kmsg.ConfigResourceTypeTopic:
				got, err := c.srv.cfg.Admin.TopicConfigs(ctx, res.ResourceName)
				if err != nil {
					return nil, fmt.Errorf("describe configs of topic %q: %w", res.ResourceName, err)
				}
				results[i] = got
			case kmsg.ConfigResourceTypeBroker:
				results[i] = TopicConfigsResult{Configs: brokerConfigEntries(c.srv.cfg.Topics)}
			default:
				results[i] = TopicConfigsResult{AdminResult: AdminResult{ErrorCode: kerr.InvalidRequest.Code,
					ErrorMessage: fmt.Sprintf("resource type %s is not supported: only TOPIC and BROKER", res.ResourceType)}}
			}
		}
		return describeConfigsResponse(req, results), nil
	})
}

// describeConfigsResponse answers req with results (indexed like its
// resources), keeping the configs each resource names (all when none).
// Pure.
func describeConfigsResponse(req *kmsg.DescribeConfigsRequest, results []TopicConfigsResult) *kmsg.DescribeConfigsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for i, res := range req.Resources {
		got := results[i]
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = res.ResourceType, res.ResourceName
		sr.ErrorCode = got.ErrorCode
		if got.ErrorCode != 0 {
			if got.ErrorMessage != "" {
				sr.ErrorMessage = kmsg.StringPtr(got.ErrorMessage)
			}
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		want := map[string]bool{}
		for _, n := range res.ConfigNames {
			want[n] = true
		}
		for _, e := range got.Configs {
			if res.ConfigNames != nil && !want[e.Name] {
				continue
			}
			sr.Configs = append(sr.Configs, describedConfig(req, e))
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

// describedConfig is e as req's version describes it. Pure.
func describedConfig(req *kmsg.DescribeConfigsRequest, e ConfigEntry) kmsg.DescribeConfigsResponseResourceConfig {
	sc := kmsg.NewDescribeConfigsResponseResourceConfig()
	sc.Name, sc.Value, sc.ReadOnly, sc.IsDefault = e.Name, kmsg.StringPtr(e.Value), e.ReadOnly, e.Default
	sc.Source = configSource(e)
	if req.Version >= 1 && req.IncludeSynonyms {
		// In order of precedence: the override, then the default.
		if !e.Default {
			syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			syn.Name, syn.Value, syn.Source = e.Name, kmsg.StringPtr(e.Value), configSource(e)
			sc.ConfigSynonyms = append(sc.ConfigSynonyms, syn)
		}
		syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
		syn.Name, syn.Value, syn.Source = e.Name, kmsg.StringPtr(e.DefaultValue), kmsg.ConfigSourceDefaultConfig
		sc.ConfigSynonyms = append(sc.ConfigSynonyms, syn)
	}
	if req.Version >= 3 {
		sc.ConfigType = kmsg.ConfigType(e.Type)
		if req.IncludeDocumentation && e.Doc != "" {
			sc.Documentation = kmsg.StringPtr(e.Doc)
		}
	}
	return sc
}
