// offsetforleaderepoch.go: OffsetForLeaderEpoch (key 23), served and
// advertised v2-4; needs Config.Data.
//
// Behaviour:
//   - Each partition asks the DataBackend (concurrently) for the end offset
//     of the requested leader epoch: the largest epoch at most the one
//     asked that the leader knows, and where it ends (the log end for the
//     current epoch); -1 and -1 when it knows none. Clients use it to
//     detect truncation after a leader change (KIP-320).
//   - current_leader_epoch fences stale clients through the backend:
//     FENCED_LEADER_EPOCH (older) or UNKNOWN_LEADER_EPOCH (newer).
//   - replica_id (v3+) is not looked at: every request is answered as a
//     consumer's.
//   - A DataBackend error closes the connection (a local fault).
//
// Error codes: what the DataBackend reports (NOT_LEADER_OR_FOLLOWER,
// UNKNOWN_TOPIC_OR_PARTITION, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH).

package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(api{key: 23, servedMin: 2, servedMax: 4, advertisedMin: 2, advertisedMax: 4,
		handle: handleOffsetForLeaderEpoch, enabled: dataEnabled})
}

func handleOffsetForLeaderEpoch(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.OffsetForLeaderEpochRequest)
	type part struct{ topic, index int }
	var parts []part
	var queries []EpochQuery
	for ti, t := range req.Topics {
		for pi, p := range t.Partitions {
			parts = append(parts, part{ti, pi})
			queries = append(queries, EpochQuery{Topic: t.Topic, Partition: p.Partition,
				LeaderEpoch: p.LeaderEpoch, CurrentLeaderEpoch: p.CurrentLeaderEpoch})
		}
	}
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		results := make([]EpochEndResult, len(queries))
		err := fanOut(ctx, len(queries), func(ctx context.Context, i int) error {
			res, err := c.srv.cfg.Data.EpochEndOffset(ctx, queries[i])
			results[i] = res
			return err
		})
		if err != nil {
			return nil, err
		}
		resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
		resp.Topics = make([]kmsg.OffsetForLeaderEpochResponseTopic, len(req.Topics))
		for ti, t := range req.Topics {
			resp.Topics[ti] = kmsg.NewOffsetForLeaderEpochResponseTopic()
			resp.Topics[ti].Topic = t.Topic
			resp.Topics[ti].Partitions = make([]kmsg.OffsetForLeaderEpochResponseTopicPartition, len(t.Partitions))
		}
		for i, p := range parts {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = queries[i].Partition
			sp.ErrorCode = results[i].ErrorCode
			if sp.ErrorCode == 0 {
				sp.LeaderEpoch, sp.EndOffset = results[i].LeaderEpoch, results[i].EndOffset
			}
			resp.Topics[p.topic].Partitions[p.index] = sp
		}
		return resp, nil
	})
}
