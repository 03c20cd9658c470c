// listoffsets.go: ListOffsets (key 2), served and advertised v1-7; needs
// Config.Data.
//
// Behaviour:
//   - Each partition asks the DataBackend (concurrently) for one offset by
//     timestamp: -1 latest (the high watermark, the last stable offset
//     under read_committed, v2+), -2 earliest (log start), -3 the record
//     with the largest timestamp (v7+, KIP-734), or a time in Unix
//     milliseconds (the first record at or after it). Nothing found is
//     offset -1, timestamp -1. The leader epoch is sent from v4.
//   - Any other negative timestamp, or -3 below v7, is UNSUPPORTED_VERSION
//     for that partition; a partition asked twice is INVALID_REQUEST for
//     both entries, as Kafka answers.
//   - replica_id is not looked at: every request is answered as a
//     consumer's, by the leader.
//   - A DataBackend error closes the connection (a local fault).
//
// Error codes: UNSUPPORTED_VERSION (35), INVALID_REQUEST (42), and what the
// DataBackend reports (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
// FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, ...).

package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(api{key: 2, servedMin: 1, servedMax: 7, advertisedMin: 1, advertisedMax: 7,
		handle: handleListOffsets, enabled: dataEnabled})
}

// listOffsetsPart is one partition of a ListOffsets request: refused (code
// set) or to ask.
type listOffsetsPart struct {
	topic, index int // where in the request (and the response)
	code         int16
	q            ListOffsetQuery
}

// planListOffsets checks req's partitions and builds their queries, in
// request order. Pure.
func planListOffsets(req *kmsg.ListOffsetsRequest) []listOffsetsPart {
	type tp struct {
		t string
		p int32
	}
	seen := map[tp]int{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			seen[tp{t.Topic, p.Partition}]++
		}
	}
	var plan []listOffsetsPart
	for ti, t := range req.Topics {
		for pi, p := range t.Partitions {
			part := listOffsetsPart{topic: ti, index: pi, q: ListOffsetQuery{
				Topic: t.Topic, Partition: p.Partition, Timestamp: p.Timestamp, CurrentLeaderEpoch: -1,
				ReadCommitted: req.Version >= 2 && req.IsolationLevel == 1,
			}}
			if req.Version >= 4 {
				part.q.CurrentLeaderEpoch = p.CurrentLeaderEpoch
			}
			switch {
			case seen[tp{t.Topic, p.Partition}] > 1:
				part.code = kerr.InvalidRequest.Code
			case p.Timestamp == ListMaxTimestamp && req.Version < 7,
				p.Timestamp < 0 && p.Timestamp != ListLatest && p.Timestamp != ListEarliest && p.Timestamp != ListMaxTimestamp:
				part.code = kerr.UnsupportedVersion.Code
			}
			plan = append(plan, part)
		}
	}
	return plan
}

func handleListOffsets(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.ListOffsetsRequest)
	plan := planListOffsets(req)
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		results := make([]ListOffsetResult, len(plan))
		err := fanOut(ctx, len(plan), func(ctx context.Context, i int) error {
			if plan[i].code != 0 {
				return nil
			}
			res, err := c.srv.cfg.Data.ListOffset(ctx, plan[i].q)
			results[i] = res
			return err
		})
		if err != nil {
			return nil, err
		}
		return listOffsetsResponse(req, plan, results), nil
	})
}

// listOffsetsResponse answers req from plan and the backend's results
// (indexed like plan). Pure.
func listOffsetsResponse(req *kmsg.ListOffsetsRequest, plan []listOffsetsPart, results []ListOffsetResult) *kmsg.ListOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	resp.Topics = make([]kmsg.ListOffsetsResponseTopic, len(req.Topics))
	for ti, t := range req.Topics {
		resp.Topics[ti] = kmsg.NewListOffsetsResponseTopic()
		resp.Topics[ti].Topic = t.Topic
		resp.Topics[ti].Partitions = make([]kmsg.ListOffsetsResponseTopicPartition, len(t.Partitions))
	}
	for i, p := range plan {
		sp := kmsg.NewListOffsetsResponseTopicPartition()
		sp.Partition = p.q.Partition
		sp.ErrorCode = p.code
		if p.code == 0 {
			res := results[i]
			sp.ErrorCode = res.ErrorCode
			if res.ErrorCode == 0 {
				sp.Offset, sp.Timestamp = res.Offset, res.Timestamp
				if req.Version >= 4 {
					sp.LeaderEpoch = res.LeaderEpoch
				}
			}
		}
		resp.Topics[p.topic].Partitions[p.index] = sp
	}
	return resp
}
