// fetch.go: the OffsetFetch handler (Kafka's OffsetFetch v7 semantics,
// without require_stable). It answers from the in-memory table, which
// holds exactly the commits the in-sync replicas have: every partition the
// group has an offset for, or the listed ones, offset -1 (leader epoch -1,
// no error) for a partition without one.
//
// Error codes (request level): INVALID_GROUP_ID, NOT_COORDINATOR (the group
// maps to another partition, or the replica lost leadership),
// COORDINATOR_LOAD_IN_PROGRESS (while loading).

package coordinator

import (
	"slices"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/messages"
)

func fetchError(req *messages.OffsetFetchRequest, code messages.ErrorCode, msg string) *messages.OffsetFetchResponse {
	return &messages.OffsetFetchResponse{CorrelationId: req.CorrelationId, ErrorCode: code, ErrorMessage: msg}
}

func (c *Coordinator) onFetch(ctx actor.Context, req *messages.OffsetFetchRequest) {
	if code, msg := c.owns(req.GroupId); code != 0 {
		c.respond(ctx, fetchError(req, code, msg))
		return
	}
	c.respond(ctx, &messages.OffsetFetchResponse{CorrelationId: req.CorrelationId, Topics: committedOffsets(c.table, req.GroupId, req.Topics)})
}

// committedOffsets answers an OffsetFetch for group from table: the
// partitions asked for (none: all the group has; a topic without
// partitions: all the group has of it), sorted by topic and partition.
func committedOffsets(table *OffsetTable, group string, asked []*messages.TopicPartitions) []*messages.OffsetFetchTopic {
	var tps []TopicPartition
	if len(asked) == 0 {
		tps = table.Partitions(group)
	} else {
		have := table.Partitions(group)
		seen := map[TopicPartition]bool{}
		for _, t := range asked {
			if len(t.Partitions) == 0 {
				for _, tp := range have {
					if tp.Topic == t.Topic && !seen[tp] {
						seen[tp] = true
						tps = append(tps, tp)
					}
				}
				continue
			}
			for _, p := range t.Partitions {
				if tp := (TopicPartition{t.Topic, p}); !seen[tp] {
					seen[tp] = true
					tps = append(tps, tp)
				}
			}
		}
		slices.SortFunc(tps, compareTP)
	}
	var out []*messages.OffsetFetchTopic
	for _, tp := range tps {
		if len(out) == 0 || out[len(out)-1].Topic != tp.Topic {
			out = append(out, &messages.OffsetFetchTopic{Topic: tp.Topic})
		}
		p := &messages.OffsetFetchPartition{Partition: tp.Partition, Offset: -1, LeaderEpoch: -1}
		if cm, ok := table.Get(group, tp); ok {
			p.Offset, p.LeaderEpoch, p.Metadata = cm.Offset, cm.LeaderEpoch, cm.Metadata
		}
		t := out[len(out)-1]
		t.Partitions = append(t.Partitions, p)
	}
	return out
}
