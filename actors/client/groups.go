// groups.go: the consumer-group calls — finding a group's coordinator
// (FindCoordinator, cached per group and found again when the coordinator
// moves), and committing and fetching a group's offsets through it.
//
// Requests to a coordinator are retried, as Kafka's consumer retries them,
// until the context ends (or, for a context without a deadline,
// GroupRequestTimeout): after NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
// REQUEST_TIMED_OUT, a coordinator actor that is gone or a host that is
// down, with a fresh FindCoordinator; after COORDINATOR_LOAD_IN_PROGRESS,
// at the same coordinator. Offset commits are idempotent (the same offsets
// written again), so a retry after an unknown outcome is safe.

package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/messages"
)

// GroupRequestTimeout bounds a group call whose context has no deadline,
// retries included (Kafka's default.api.timeout.ms is 60 s).
const GroupRequestTimeout = 30 * time.Second

// Coordinator is where a group's coordinator runs.
type Coordinator struct {
	Group string
	// HostID and Address are the host's; ActorID is the coordinator's id
	// there.
	HostID  int32
	Address string
	ActorID string
	// Partition is the offsets topic partition that holds the group, and
	// LeaderEpoch its leader epoch when the coordinator was found.
	Partition, LeaderEpoch int32
}

// PID is the coordinator actor's PID.
func (c Coordinator) PID() *actor.PID { return actor.NewPID(c.Address, c.ActorID) }

// coordinatorCache holds the coordinators found, by group.
type coordinatorCache struct {
	mu      sync.Mutex
	byGroup map[string]Coordinator
}

func (cc *coordinatorCache) get(group string) (Coordinator, bool) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	co, ok := cc.byGroup[group]
	return co, ok
}

func (cc *coordinatorCache) put(co Coordinator) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.byGroup == nil {
		cc.byGroup = map[string]Coordinator{}
	}
	cc.byGroup[co.Group] = co
}

// forget drops group's coordinator if it is still co.
func (cc *coordinatorCache) forget(co Coordinator) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.byGroup[co.Group] == co {
		delete(cc.byGroup, co.Group)
	}
}

// FindCoordinator returns group's coordinator, from the cache or asked of
// a bootstrap host. While there is none (the offsets topic is being
// created on first use, or its partition has no leader), it retries with
// backoff until ctx ends (GroupRequestTimeout without a deadline).
func (c *Client) FindCoordinator(ctx context.Context, group string) (Coordinator, error) {
	if co, ok := c.coordinators.get(group); ok {
		return co, nil
	}
	ctx, cancel := groupContext(ctx)
	defer cancel()
	var co Coordinator
	err := retryGroup(ctx, func() (bool, error) {
		var err error
		co, err = c.findCoordinator(ctx, group)
		return retriableFind(err), err
	})
	return co, err
}

// ForgetCoordinator drops co from the cache if it is still the one cached
// for its group, so the next call finds the coordinator again: for a
// caller that learned it moved (a group member's JoinGroup, SyncGroup or
// Heartbeat answered NOT_COORDINATOR, or went unanswered).
func (c *Client) ForgetCoordinator(co Coordinator) { c.coordinators.forget(co) }

// findCoordinator asks a bootstrap host for group's coordinator once and
// caches the answer.
func (c *Client) findCoordinator(ctx context.Context, group string) (Coordinator, error) {
	res, err := c.bootstrapRequest(ctx, messages.BrokerActorID, &messages.FindCoordinatorRequest{GroupId: group, CorrelationId: c.NextCorrelationID()})
	if err != nil {
		return Coordinator{}, fmt.Errorf("client: find coordinator of group %q: %w", group, err)
	}
	resp, ok := res.(*messages.FindCoordinatorResponse)
	if !ok {
		return Coordinator{}, fmt.Errorf("client: unexpected find-coordinator reply %T", res)
	}
	if err := resp.Err(); err != nil {
		return Coordinator{}, fmt.Errorf("client: find coordinator of group %q: %w", group, err)
	}
	co := Coordinator{Group: group, HostID: resp.HostId, Address: resp.Address, ActorID: resp.ActorId, Partition: resp.Partition, LeaderEpoch: resp.LeaderEpoch}
	c.coordinators.put(co)
	return co, nil
}

// retriableFind reports whether a failed FindCoordinator may be retried.
func retriableFind(err error) bool {
	return errors.Is(err, &messages.Error{Code: messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE}) || errors.Is(err, ErrUnreachable)
}

// CommitOffset is one partition's offset to commit.
type CommitOffset struct {
	Topic     string
	Partition int32
	// Offset is the next offset to consume.
	Offset int64
	// LeaderEpoch is the leader epoch of the last consumed record, -1
	// when unknown.
	LeaderEpoch int32
	// Metadata is free text kept with the offset (4096 bytes at most by
	// default).
	Metadata string
}

// CommitOffsets commits offsets for group, as member at generation
// (member "" and generation -1 for a consumer outside group management),
// and returns once the coordinator has them on the in-sync replicas of
// the offsets topic. It returns one result per partition, in request
// order; the error is the request's (nothing was committed) or, when some
// partitions were refused (UNKNOWN_TOPIC_OR_PARTITION,
// OFFSET_METADATA_TOO_LARGE, INVALID_REQUEST), those partitions' errors
// joined — the other partitions were committed.
func (c *Client) CommitOffsets(ctx context.Context, group, member string, generation int32, offsets []CommitOffset) ([]*messages.PartitionResult, error) {
	req := &messages.OffsetCommitRequest{GroupId: group, MemberId: member, GenerationId: generation}
	byTopic := map[string]*messages.OffsetCommitTopic{}
	for _, o := range offsets {
		t := byTopic[o.Topic]
		if t == nil {
			t = &messages.OffsetCommitTopic{Topic: o.Topic}
			byTopic[o.Topic] = t
			req.Topics = append(req.Topics, t)
		}
		t.Partitions = append(t.Partitions, &messages.OffsetCommitPartition{Partition: o.Partition, Offset: o.Offset, LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata})
	}
	resp, err := c.CommitOffsetsRequest(ctx, req)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, r := range resp.Results {
		if err := r.ErrorCode.Err(r.ErrorMessage); err != nil {
			errs = append(errs, fmt.Errorf("%s-%d: %w", r.Topic, r.Partition, err))
		}
	}
	if len(errs) > 0 {
		return resp.Results, fmt.Errorf("client: commit offsets of group %q: %w", group, errors.Join(errs...))
	}
	return resp.Results, nil
}

// CommitOffsetsRequest sends req (its correlation id is set here) to its
// group's coordinator, with the retries of the package comment, and
// returns the answer; the error is the request-level one.
func (c *Client) CommitOffsetsRequest(ctx context.Context, req *messages.OffsetCommitRequest) (*messages.OffsetCommitResponse, error) {
	req.CorrelationId = c.NextCorrelationID()
	resp, err := coordinatorRequest[*messages.OffsetCommitResponse](ctx, c, req.GroupId, req)
	if err != nil {
		return nil, fmt.Errorf("client: commit offsets of group %q: %w", req.GroupId, err)
	}
	return resp, nil
}

// CommittedOffset is a group's committed offset of one partition.
type CommittedOffset struct {
	Topic     string
	Partition int32
	// Offset is the committed offset, -1 when the group has none.
	Offset      int64
	LeaderEpoch int32
	Metadata    string
}

// FetchOffsets returns group's committed offsets of partitions (none: of
// every partition it has committed; a topic without partitions: all of
// that topic's), sorted by topic and partition; a partition without a
// commit has offset -1.
func (c *Client) FetchOffsets(ctx context.Context, group string, partitions ...*messages.TopicPartitions) ([]CommittedOffset, error) {
	req := &messages.OffsetFetchRequest{GroupId: group, Topics: partitions, CorrelationId: c.NextCorrelationID()}
	resp, err := coordinatorRequest[*messages.OffsetFetchResponse](ctx, c, group, req)
	if err != nil {
		return nil, fmt.Errorf("client: fetch offsets of group %q: %w", group, err)
	}
	var out []CommittedOffset
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := p.ErrorCode.Err(""); err != nil {
				return nil, fmt.Errorf("client: fetch offsets of group %q: %s-%d: %w", group, t.Topic, p.Partition, err)
			}
			out = append(out, CommittedOffset{Topic: t.Topic, Partition: p.Partition, Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: p.Metadata})
		}
	}
	return out, nil
}

// coordinatorResponse is an answer of a group coordinator.
type coordinatorResponse interface {
	proto.Message
	GetErrorCode() messages.ErrorCode
	GetErrorMessage() string
}

// coordinatorRequest sends msg to group's coordinator until it answers
// with a non-retriable outcome or ctx ends, finding the coordinator again
// when it moved (see the package comment).
func coordinatorRequest[T coordinatorResponse](ctx context.Context, c *Client, group string, msg proto.Message) (T, error) {
	return coordinatorCall(ctx, c, group, msg, func(r T) (messages.ErrorCode, string) { return r.GetErrorCode(), r.GetErrorMessage() })
}

// coordinatorCall is coordinatorRequest for an answer whose outcome errOf
// reads (e.g. the entry of the group in a multi-group response).
func coordinatorCall[T proto.Message](ctx context.Context, c *Client, group string, msg proto.Message, errOf func(T) (messages.ErrorCode, string)) (T, error) {
	ctx, cancel := groupContext(ctx)
	defer cancel()
	var resp T
	err := retryGroup(ctx, func() (bool, error) {
		co, ok := c.coordinators.get(group)
		if !ok {
			var err error
			if co, err = c.findCoordinator(ctx, group); err != nil {
				return retriableFind(err), err
			}
		}
		if !c.HostUp(co.Address) {
			c.coordinators.forget(co)
			return true, messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE.Err(fmt.Sprintf("the coordinator's host %s is down", co.Address))
		}
		res, err := c.Request(ctx, co.PID(), msg)
		if err != nil {
			// Gone (dead letter: leadership moved), or no answer in time.
			c.coordinators.forget(co)
			return ctx.Err() == nil, err
		}
		r, ok := res.(T)
		if !ok {
			return false, fmt.Errorf("client: unexpected reply %T to %T", res, msg)
		}
		resp = r
		switch code, text := errOf(r); code {
		case messages.ErrorCode_ERROR_CODE_UNSPECIFIED:
			return false, nil
		case messages.ErrorCode_ERROR_CODE_COORDINATOR_LOAD_IN_PROGRESS:
			return true, code.Err(text)
		case messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR, messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE, messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT:
			c.coordinators.forget(co)
			return true, code.Err(text)
		default:
			return false, code.Err(text)
		}
	})
	return resp, err
}

// groupContext bounds ctx by GroupRequestTimeout if it has no deadline.
func groupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, GroupRequestTimeout)
}

// retryGroup calls try until it reports no retry, or ctx ends (then the
// last error is returned), backing off from 50 ms to 1 s.
func retryGroup(ctx context.Context, try func() (retry bool, err error)) error {
	backoff := 50 * time.Millisecond
	for {
		retry, err := try()
		if !retry {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}
