// offsetfetch.go: OffsetFetch (key 9), served and advertised v1-9; needs
// Config.Groups.
//
// Behaviour:
//   - The group's coordinator answers its committed offsets; a partition
//     without one is answered offset -1 with no error, as in Kafka.
//   - From v2 a null topic list asks for every partition the group has an
//     offset for; the request-level error is the response's (v2-7) or the
//     group's (v8+); for v1 it is set on every partition asked for.
//   - v8+ (KIP-709) asks for several groups at once, each answered on its
//     own; v9's member id and epoch (KIP-848) are ignored.
//   - require_stable (v7+) needs no wait: there are no transactional
//     offsets.
//
// Error codes: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
// INVALID_GROUP_ID, COORDINATOR_NOT_AVAILABLE.

package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/messages"
)

func init() {
	register(api{key: 9, servedMin: 1, servedMax: 9, advertisedMin: 1, advertisedMax: 9,
		handle: handleOffsetFetch, enabled: groupsEnabled})
}

// fetchAsk is one group's part of an OffsetFetch.
type fetchAsk struct {
	group string
	// all: every partition the group has an offset for (topics nil).
	all    bool
	topics []*messages.TopicPartitions
}

func handleOffsetFetch(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.OffsetFetchRequest)
	asks := offsetFetchAsks(req)
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		answers := make([]*messages.OffsetFetchResponse, len(asks))
		for i, a := range asks {
			if !a.all && len(a.topics) == 0 {
				answers[i] = &messages.OffsetFetchResponse{}
				continue
			}
			res, err := c.srv.cfg.Groups.OffsetFetch(ctx, &messages.OffsetFetchRequest{GroupId: a.group, Topics: a.topics})
			if err != nil {
				return nil, err
			}
			answers[i] = res
		}
		return offsetFetchResponse(req, asks, answers), nil
	})
}

// offsetFetchAsks splits req into its groups' asks. Pure.
func offsetFetchAsks(req *kmsg.OffsetFetchRequest) []fetchAsk {
	if req.Version < 8 {
		a := fetchAsk{group: req.Group, all: req.Topics == nil}
		for _, t := range req.Topics {
			a.topics = append(a.topics, &messages.TopicPartitions{Topic: t.Topic, Partitions: t.Partitions})
		}
		return []fetchAsk{a}
	}
	asks := make([]fetchAsk, 0, len(req.Groups))
	for _, g := range req.Groups {
		a := fetchAsk{group: g.Group, all: g.Topics == nil}
		for _, t := range g.Topics {
			a.topics = append(a.topics, &messages.TopicPartitions{Topic: t.Topic, Partitions: t.Partitions})
		}
		asks = append(asks, a)
	}
	return asks
}

// offsetFetchResponse builds req's answer from one native answer per ask.
// Pure.
func offsetFetchResponse(req *kmsg.OffsetFetchRequest, asks []fetchAsk, answers []*messages.OffsetFetchResponse) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version >= 8 {
		for i, a := range asks {
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group = a.group
			g.ErrorCode = nativeCode(answers[i].GetErrorCode())
			for _, t := range answers[i].GetTopics() {
				gt := kmsg.NewOffsetFetchResponseGroupTopic()
				gt.Topic = t.GetTopic()
				for _, p := range t.GetPartitions() {
					gp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					gp.Partition, gp.Offset, gp.LeaderEpoch = p.GetPartition(), p.GetOffset(), p.GetLeaderEpoch()
					gp.ErrorCode = nativeCode(p.GetErrorCode())
					md := p.GetMetadata()
					gp.Metadata = &md
					gt.Partitions = append(gt.Partitions, gp)
				}
				g.Topics = append(g.Topics, gt)
			}
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	}
	res := answers[0]
	top := nativeCode(res.GetErrorCode())
	if top != 0 {
		if req.Version >= 2 {
			resp.ErrorCode = top
			return resp
		}
		for _, t := range req.Topics { // v1: the error on every partition asked for
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.ErrorCode = p, -1, top
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	for _, t := range res.GetTopics() {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.GetTopic()
		for _, p := range t.GetPartitions() {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p.GetPartition(), p.GetOffset(), p.GetLeaderEpoch()
			rp.ErrorCode = nativeCode(p.GetErrorCode())
			md := p.GetMetadata()
			rp.Metadata = &md
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
