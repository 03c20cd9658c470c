// alterpartitionreassignments.go: AlterPartitionReassignments (kmsg's
// AlterPartitionAssignments, key 45), v0; needs Config.PartitionAdmin.
//
// Behaviour:
//   - Each partition gets a target replica list (host ids, preferred
//     first), or with a null list its reassignment in progress is
//     cancelled, through PartitionAdminBackend.AlterReassignments (the
//     controller's reassignment, as `actorlog topics alter --replicas`).
//     The answer comes once the reassignment is recorded, not once it
//     completes; ListPartitionReassignments shows its progress.
//   - A topic named twice is answered once, its partitions merged.
//   - A bad replica list is INVALID_REPLICA_ASSIGNMENT, as Kafka answers:
//     empty, a host id listed twice or negative (checked here), an id no
//     host has (checked by the backend).
//   - All or nothing within a topic, as the controller reassigns: when a
//     partition is refused none of the topic's changes, and the others
//     report INVALID_REQUEST ("not applied"). Topics are independent.
//   - The replication factor cannot change: a target list of another
//     length is INVALID_REPLICATION_FACTOR.
//
// Error codes per partition: UNKNOWN_TOPIC_OR_PARTITION (3),
// INVALID_REPLICA_ASSIGNMENT (39), INVALID_REPLICATION_FACTOR (38),
// NO_REASSIGNMENT_IN_PROGRESS (85), INVALID_REQUEST (42, including a
// partition named twice, and a cancellation that would need an unclean
// election), REASSIGNMENT_IN_PROGRESS (another target is being reached;
// cancel it first), REQUEST_TIMED_OUT (7), NOT_CONTROLLER (41). The
// top-level error_code is always 0.

package kafka

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(api{key: 45, servedMin: 0, servedMax: 0, advertisedMin: 0, advertisedMax: 0,
		handle: handleAlterPartitionReassignments, enabled: partitionAdminEnabled})
}

// reassignTopic is one topic of an AlterPartitionReassignments request,
// its mentions merged.
type reassignTopic struct {
	topic string
	parts []PartitionReassignment
}

// reassignTopics merges req's topics by name, in request order. Pure.
func reassignTopics(req *kmsg.AlterPartitionAssignmentsRequest) []reassignTopic {
	var out []reassignTopic
	at := map[string]int{}
	for _, t := range req.Topics {
		i, ok := at[t.Topic]
		if !ok {
			i = len(out)
			at[t.Topic] = i
			out = append(out, reassignTopic{topic: t.Topic})
		}
		for _, p := range t.Partitions {
			out[i].parts = append(out[i].parts, PartitionReassignment{Partition: p.Partition, Replicas: p.Replicas})
		}
	}
	return out
}

// CheckReplicaList reports what is wrong with a non-null target replica
// list as Kafka refuses it with INVALID_REPLICA_ASSIGNMENT: empty, a
// negative id, an id listed twice; "" when nothing is. Pure.
func CheckReplicaList(replicas []int32) string {
	if len(replicas) == 0 {
		return "the replica list is empty (a null list cancels a reassignment)"
	}
	for i, id := range replicas {
		if id < 0 {
			return fmt.Sprintf("replicas %v: %d is not a host id", replicas, id)
		}
		if slices.Contains(replicas[:i], id) {
			return fmt.Sprintf("replicas %v: host %d is listed twice", replicas, id)
		}
	}
	return ""
}

// NotApplied marks, all or nothing, the acceptable partitions of a topic
// one of whose partitions was refused: INVALID_REQUEST, "not applied". It
// changes results in place and reports whether any was refused. Pure.
func NotApplied(topic string, results []AdminResult) bool {
	refused := slices.ContainsFunc(results, func(r AdminResult) bool { return r.ErrorCode != 0 })
	if refused {
		for i := range results {
			if results[i].ErrorCode == 0 {
				results[i] = AdminResult{ErrorCode: kerr.InvalidRequest.Code,
					ErrorMessage: fmt.Sprintf("not applied: another partition of topic %q was refused", topic)}
			}
		}
	}
	return refused
}

// precheckReassign checks t's target lists (CheckReplicaList) and
// returns its results, all or nothing (NotApplied), with whether any was
// refused. Pure.
func precheckReassign(t reassignTopic) ([]AdminResult, bool) {
	results := make([]AdminResult, len(t.parts))
	for i, p := range t.parts {
		if p.Replicas == nil {
			continue
		}
		if msg := CheckReplicaList(p.Replicas); msg != "" {
			results[i] = AdminResult{ErrorCode: kerr.InvalidReplicaAssignment.Code, ErrorMessage: msg}
		}
	}
	return results, NotApplied(t.topic, results)
}

func handleAlterPartitionReassignments(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.AlterPartitionAssignmentsRequest)
	topics := reassignTopics(req)
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		results := make([][]AdminResult, len(topics))
		for i, t := range topics {
			res, refused := precheckReassign(t)
			if !refused && len(t.parts) > 0 {
				got, err := c.srv.cfg.PartitionAdmin.AlterReassignments(ctx, t.topic, t.parts)
				if err != nil {
					return nil, fmt.Errorf("reassign partitions of %q: %w", t.topic, err)
				}
				if len(got) != len(t.parts) {
					return nil, fmt.Errorf("reassign partitions of %q: %d results for %d partitions", t.topic, len(got), len(t.parts))
				}
				res = got
			}
			results[i] = res
		}
		return alterReassignmentsResponse(req, topics, results), nil
	})
}

// alterReassignmentsResponse answers req's merged topics with results
// (indexed like them and their partitions). Pure.
func alterReassignmentsResponse(req *kmsg.AlterPartitionAssignmentsRequest, topics []reassignTopic, results [][]AdminResult) *kmsg.AlterPartitionAssignmentsResponse {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	for i, t := range topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.topic
		for j, p := range t.parts {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, results[i][j].ErrorCode
			if rp.ErrorCode != 0 && results[i][j].ErrorMessage != "" {
				rp.ErrorMessage = kmsg.StringPtr(results[i][j].ErrorMessage)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
