// offsetcommit.go: OffsetCommit (key 8), served and advertised v2-9; needs
// Config.Groups.
//
// Behaviour:
//   - The group's coordinator writes the offsets to the offsets topic and
//     answers once the in-sync replicas have them (asynchronously).
//   - Generation -1 with an empty member id commits from outside group
//     management (manually assigned consumers), as in Kafka.
//   - Instance id from v7, leader epoch from v6; v2-4's retention time is
//     ignored (the offsets topic's retention applies, as in Kafka 2.1+).
//   - A request-level refusal (NOT_COORDINATOR, ILLEGAL_GENERATION, ...) is
//     set on every partition, Kafka's response having no top-level code.
//
// Error codes: per partition, as messages.OffsetCommitResponse
// (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
// INVALID_GROUP_ID, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
// REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID, UNKNOWN_TOPIC_OR_PARTITION,
// OFFSET_METADATA_TOO_LARGE, INVALID_COMMIT_OFFSET_SIZE, REQUEST_TIMED_OUT).

package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/messages"
)

func init() {
	register(api{key: 8, servedMin: 2, servedMax: 9, advertisedMin: 2, advertisedMax: 9,
		handle: handleOffsetCommit, enabled: groupsEnabled})
}

func handleOffsetCommit(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.OffsetCommitRequest)
	native := commitRequest(req)
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		res, err := c.srv.cfg.Groups.OffsetCommit(ctx, native)
		if err != nil {
			return nil, err
		}
		return commitResponse(req, res), nil
	})
}

// commitRequest maps a Kafka OffsetCommit to the native request. Pure.
func commitRequest(req *kmsg.OffsetCommitRequest) *messages.OffsetCommitRequest {
	n := &messages.OffsetCommitRequest{GroupId: req.Group, GenerationId: req.Generation, MemberId: req.MemberID}
	if req.InstanceID != nil {
		n.GroupInstanceId = *req.InstanceID
	}
	for _, t := range req.Topics {
		nt := &messages.OffsetCommitTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			np := &messages.OffsetCommitPartition{Partition: p.Partition, Offset: p.Offset, LeaderEpoch: -1}
			if req.Version >= 6 {
				np.LeaderEpoch = p.LeaderEpoch
			}
			if p.Metadata != nil {
				np.Metadata = *p.Metadata
			}
			nt.Partitions = append(nt.Partitions, np)
		}
		n.Topics = append(n.Topics, nt)
	}
	return n
}

// commitResponse answers every partition of req: with the request-level
// error when there is one, else with its own result (0 when the native
// answer has none for it). Pure.
func commitResponse(req *kmsg.OffsetCommitRequest, res *messages.OffsetCommitResponse) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	top := nativeCode(res.GetErrorCode())
	type tp struct {
		topic     string
		partition int32
	}
	codes := make(map[tp]int16, len(res.GetResults()))
	for _, pr := range res.GetResults() {
		codes[tp{pr.GetTopic(), pr.GetPartition()}] = nativeCode(pr.GetErrorCode())
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = top
			if top == 0 {
				rp.ErrorCode = codes[tp{t.Topic, p.Partition}]
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
