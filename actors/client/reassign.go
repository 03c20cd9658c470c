// reassign.go: the blocking admin calls for leadership and replica
// placement — preferred leader elections (ElectLeaders) and partition
// reassignments (ReassignPartitions, KIP-455) — and host name resolution
// for them.

package client

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/messages"
)

// resultResponse is a response with a top-level error and per-partition
// results.
type resultResponse interface {
	proto.Message
	GetErrorCode() messages.ErrorCode
	GetErrorMessage() string
	GetResults() []*messages.PartitionResult
}

// ElectLeaders asks the controller to move the leadership of partitions
// back to their preferred replica (Kafka's PREFERRED election). No
// partitions means every partition of every topic; a topic given without
// partitions means all of its partitions. The results say, per partition,
// whether the preferred replica leads now (no code), led already
// (ELECTION_NOT_NEEDED; left out when no partitions were named), or could
// not (PREFERRED_LEADER_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION). The
// error is for the request as a whole.
func (c *Client) ElectLeaders(ctx context.Context, partitions ...*messages.TopicPartitions) ([]*messages.PartitionResult, error) {
	return resultsOf[*messages.ElectLeadersResponse](ctx, c, &messages.ElectLeadersRequest{Partitions: partitions, CorrelationId: c.NextCorrelationID()})
}

// ReassignPartitions gives partitions of topic new replica lists (host
// ids; an empty list cancels the partition's reassignment in progress).
// It returns once the controller has recorded them; the topic metadata
// shows progress (PartitionMetadata adding/removing replicas). The request
// is all or nothing: if any result carries a code, nothing changed.
func (c *Client) ReassignPartitions(ctx context.Context, topic string, reassignments ...*messages.PartitionReassignment) ([]*messages.PartitionResult, error) {
	return resultsOf[*messages.ReassignPartitionsResponse](ctx, c, &messages.ReassignPartitionsRequest{Topic: topic, Partitions: reassignments, CorrelationId: c.NextCorrelationID()})
}

// resultsOf sends an admin request whose answer is a T through a
// bootstrap host's broker and returns its results. NOT_CONTROLLER is
// retried with backoff until ctx ends, as admin does.
func resultsOf[T resultResponse](ctx context.Context, c *Client, msg proto.Message) ([]*messages.PartitionResult, error) {
	backoff := 50 * time.Millisecond
	for {
		res, err := c.bootstrapRequest(ctx, messages.BrokerActorID, msg)
		if err != nil {
			return nil, err
		}
		resp, ok := res.(T)
		if !ok {
			return nil, fmt.Errorf("client: unexpected reply %T to %T", res, msg)
		}
		if resp.GetErrorCode() != messages.ErrorCode_ERROR_CODE_NOT_CONTROLLER {
			return resp.GetResults(), resp.GetErrorCode().Err(resp.GetErrorMessage())
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, resp.GetErrorCode().Err(resp.GetErrorMessage())
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}

// ResolveHost returns the host id named by s: a number is a host id (as
// given; the controller checks it), anything else a host name the cluster
// knows (live or down, as `cluster describe` lists them).
func ResolveHost(d *messages.DescribeClusterResponse, s string) (int32, error) {
	if id, err := strconv.ParseInt(s, 10, 32); err == nil {
		return int32(id), nil
	}
	for _, hosts := range [][]*messages.HostInfo{d.GetHosts(), d.GetDownHosts()} {
		for _, h := range hosts {
			if h.GetName() == s {
				return h.GetHostId(), nil
			}
		}
	}
	return 0, fmt.Errorf("client: no host named %q (see `actorlog cluster describe`)", s)
}
