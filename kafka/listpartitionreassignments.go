// listpartitionreassignments.go: ListPartitionReassignments (key 46), v0;
// needs Config.PartitionAdmin.
//
// Behaviour: the reassignments in progress
// (PartitionAdminBackend.ListReassignments, the controller's recorded
// ones as the host's metadata cache holds them): every one for a null
// topic list, else those of the named topics and partitions. As Kafka
// does, a named topic or partition that does not exist or is not being
// reassigned is left out, not an error. Each partition lists its full
// replica set (the target followed by the replicas being removed), the
// adding and the removing replicas. Topics and partitions are sorted.
//
// Error codes: none of its own (a backend failure closes the connection).

package kafka

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(api{key: 46, servedMin: 0, servedMax: 0, advertisedMin: 0, advertisedMax: 0,
		handle: handleListPartitionReassignments, enabled: partitionAdminEnabled})
}

func handleListPartitionReassignments(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.ListPartitionReassignmentsRequest)
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		all, err := c.srv.cfg.PartitionAdmin.ListReassignments(ctx)
		if err != nil {
			return nil, fmt.Errorf("list reassignments: %w", err)
		}
		return listReassignmentsResponse(req, all), nil
	})
}

// listReassignmentsResponse answers req from all, the reassignments in
// progress, keeping those req asks for, sorted. Pure.
func listReassignmentsResponse(req *kmsg.ListPartitionReassignmentsRequest, all []Reassignment) *kmsg.ListPartitionReassignmentsResponse {
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	var want map[string]map[int32]bool
	if req.Topics != nil {
		want = map[string]map[int32]bool{}
		for _, t := range req.Topics {
			if want[t.Topic] == nil {
				want[t.Topic] = map[int32]bool{}
			}
			for _, p := range t.Partitions {
				want[t.Topic][p] = true
			}
		}
	}
	sorted := slices.Clone(all)
	slices.SortFunc(sorted, func(a, b Reassignment) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition) - int(b.Partition)
	})
	for _, ra := range sorted {
		if want != nil && !want[ra.Topic][ra.Partition] {
			continue
		}
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != ra.Topic {
			rt := kmsg.NewListPartitionReassignmentsResponseTopic()
			rt.Topic = ra.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		rp.Partition = ra.Partition
		rp.Replicas, rp.AddingReplicas, rp.RemovingReplicas = ra.Replicas, ra.Adding, ra.Removing
		t := &resp.Topics[len(resp.Topics)-1]
		t.Partitions = append(t.Partitions, rp)
	}
	return resp
}
