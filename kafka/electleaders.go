// electleaders.go: ElectLeaders (key 43), v0-2; needs
// Config.PartitionAdmin.
//
// Behaviour:
//   - PREFERRED elections (v0, and election_type 0 from v1): each named
//     partition's leadership moves to its preferred replica (the first of
//     its replicas) through PartitionAdminBackend.ElectPreferredLeaders
//     (the controller's preferred-leader election). A null topic list
//     means every partition; the answer then leaves out the partitions
//     whose preferred replica leads already, as Kafka does.
//   - Results follow the request: topics in request order (a topic named
//     twice is answered once, its partitions merged), each partition once,
//     in request order; a topic named with no partitions is answered with
//     none.
//   - UNCLEAN elections (election_type 1, v1+) are refused: the
//     controller elects an out-of-sync replica only by itself, for a topic
//     with unclean.leader.election.enable=true when no in-sync replica is
//     live. Each named partition gets INVALID_REQUEST with that
//     explanation; a null list gets the top-level INVALID_REQUEST. So is
//     an unknown election type.
//   - A failure of the whole request (the controller did not answer,
//     REQUEST_TIMED_OUT) is the top-level error_code (v1+), and every
//     named partition without a result carries it with its message.
//
// Error codes per partition: ELECTION_NOT_NEEDED (84),
// PREFERRED_LEADER_NOT_AVAILABLE (80), UNKNOWN_TOPIC_OR_PARTITION (3),
// INVALID_REQUEST (42), REQUEST_TIMED_OUT (7), NOT_CONTROLLER (41);
// top-level (v1+): INVALID_REQUEST, REQUEST_TIMED_OUT, NOT_CONTROLLER.

package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(api{key: 43, servedMin: 0, servedMax: 2, advertisedMin: 0, advertisedMax: 2,
		handle: handleElectLeaders, enabled: partitionAdminEnabled})
}

// Kafka's election types (ElectLeaders v1+).
const (
	electionPreferred int8 = 0
	electionUnclean   int8 = 1
)

// uncleanRefusal explains why an UNCLEAN election is refused.
const uncleanRefusal = "unclean leader election on demand is not supported: the controller elects an out-of-sync replica by itself, " +
	"for a topic with unclean.leader.election.enable=true, when no in-sync replica is live"

func handleElectLeaders(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.ElectLeadersRequest)
	named := electNamed(req)
	if req.Version >= 1 && req.ElectionType != electionPreferred {
		msg := uncleanRefusal
		if req.ElectionType != electionUnclean {
			msg = fmt.Sprintf("unknown election type %d: want 0 (preferred)", req.ElectionType)
		}
		return respond(electLeadersResponse(req, named, electRefused(named, msg)))
	}
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		asked := electAsked(named)
		if named != nil && len(asked) == 0 {
			return electLeadersResponse(req, named, ElectionResult{}), nil
		}
		res, err := c.srv.cfg.PartitionAdmin.ElectPreferredLeaders(ctx, asked)
		if err != nil {
			return nil, fmt.Errorf("elect leaders: %w", err)
		}
		return electLeadersResponse(req, named, res), nil
	})
}

// electRefused refuses a whole request with INVALID_REQUEST and msg: each
// named partition, or (named nil) the request at the top level. Pure.
func electRefused(named []TopicPartitions, msg string) ElectionResult {
	refusal := AdminResult{ErrorCode: kerr.InvalidRequest.Code, ErrorMessage: msg}
	if named == nil {
		return ElectionResult{AdminResult: refusal}
	}
	var res ElectionResult
	for _, tp := range named {
		for _, p := range tp.Partitions {
			res.Partitions = append(res.Partitions, PartitionResult{Topic: tp.Topic, Partition: p, AdminResult: refusal})
		}
	}
	return res
}

// electAsked is what to ask the backend for: nil (every partition) or the
// named topics that name partitions.
func electAsked(named []TopicPartitions) []TopicPartitions {
	if named == nil {
		return nil
	}
	out := make([]TopicPartitions, 0, len(named))
	for _, tp := range named {
		if len(tp.Partitions) > 0 {
			out = append(out, tp)
		}
	}
	return out
}

// electNamed is req's topics with duplicates merged, in request order
// (each partition once); nil for a null list (every partition). Pure.
func electNamed(req *kmsg.ElectLeadersRequest) []TopicPartitions {
	if req.Topics == nil {
		return nil
	}
	out := make([]TopicPartitions, 0, len(req.Topics))
	at := map[string]int{}
	seen := map[string]map[int32]bool{}
	for _, t := range req.Topics {
		i, ok := at[t.Topic]
		if !ok {
			i = len(out)
			at[t.Topic] = i
			out = append(out, TopicPartitions{Topic: t.Topic, Partitions: []int32{}})
			seen[t.Topic] = map[int32]bool{}
		}
		for _, p := range t.Partitions {
			if !seen[t.Topic][p] {
				seen[t.Topic][p] = true
				out[i].Partitions = append(out[i].Partitions, p)
			}
		}
	}
	return out
}

// electLeadersResponse answers req from res. For named partitions (named
// non-nil) every one is answered in request order, those without a
// result with res's top-level code (UNKNOWN_SERVER_ERROR when it has
// none); for every partition (named nil), res's results grouped by topic
// in the order they came. The top-level code is sent from v1. Pure.
func electLeadersResponse(req *kmsg.ElectLeadersRequest, named []TopicPartitions, res ElectionResult) *kmsg.ElectLeadersResponse {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	if req.Version >= 1 {
		resp.ErrorCode = res.ErrorCode
	}
	type key struct {
		topic string
		part  int32
	}
	byKey := make(map[key]AdminResult, len(res.Partitions))
	if named == nil {
		at := map[string]int{}
		for _, p := range res.Partitions {
			i, ok := at[p.Topic]
			if !ok {
				i = len(resp.Topics)
				at[p.Topic] = i
				rt := kmsg.NewElectLeadersResponseTopic()
				rt.Topic = p.Topic
				resp.Topics = append(resp.Topics, rt)
			}
			resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, electPartition(p.Partition, p.AdminResult))
		}
		return resp
	}
	for _, p := range res.Partitions {
		if _, dup := byKey[key{p.Topic, p.Partition}]; !dup {
			byKey[key{p.Topic, p.Partition}] = p.AdminResult
		}
	}
	missing := res.AdminResult
	if missing.ErrorCode == 0 {
		missing = AdminResult{ErrorCode: kerr.UnknownServerError.Code, ErrorMessage: "the controller gave no result for the partition"}
	}
	for _, tp := range named {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = tp.Topic
		rt.Partitions = []kmsg.ElectLeadersResponseTopicPartition{}
		for _, part := range tp.Partitions {
			got, ok := byKey[key{tp.Topic, part}]
			if !ok {
				got = missing
			}
			rt.Partitions = append(rt.Partitions, electPartition(part, got))
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// electPartition is one partition's result.
func electPartition(part int32, res AdminResult) kmsg.ElectLeadersResponseTopicPartition {
	rp := kmsg.NewElectLeadersResponseTopicPartition()
	rp.Partition, rp.ErrorCode = part, res.ErrorCode
	if res.ErrorCode != 0 && res.ErrorMessage != "" {
		rp.ErrorMessage = kmsg.StringPtr(res.ErrorMessage)
	}
	return rp
}
