// kafkagroups.go holds kafkaGroups, the host's kafka.GroupBackend: the
// Kafka listener's consumer-group APIs over the LOCAL group coordinator
// actors (actors/coordinator) and the local broker — never over the network
// (DESIGN §9, issue 13).
//
//   - FindCoordinator: the broker's FindCoordinatorRequest (its metadata
//     cache; the first one has the controller create the offsets topic)
//     names the coordinating host; its Kafka address comes from that host's
//     registration (kafka_address) in the broker's cache. Node id = host id.
//   - Requests about one group (JoinGroup, SyncGroup, Heartbeat,
//     LeaveGroup, OffsetCommit, OffsetFetch, DescribeGroups and
//     DeleteGroups per group): the broker names the group's coordinator;
//     one on another host is answered NOT_COORDINATOR (the client finds the
//     coordinator again), one here gets the native request at its
//     well-known id (messages.CoordinatorActorID). The coordinator itself
//     answers NOT_COORDINATOR once its partition's leadership moved.
//   - ListGroups: the broker merges the groups of this host's coordinators,
//     as a Kafka broker lists its own.
//
// A coordinator that does not answer in time (or is gone: a dead letter)
// is answered COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR, both retriable,
// with a log line; only the connection's end (ctx) is an error.

package host

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/broker"
	"github.com/actorlog/actorlog/kafka"
	"github.com/actorlog/actorlog/messages"
)

// Group backend bounds.
const (
	// kafkaGroupTimeout bounds a short coordinator request (Heartbeat,
	// LeaveGroup, OffsetCommit, OffsetFetch, Describe, Delete).
	kafkaGroupTimeout = 30 * time.Second
	// kafkaJoinSlack is how much longer than the member's rebalance
	// timeout a JoinGroup waits for the coordinator (which answers once
	// the join phase ends, at the latest at the rebalance timeout, or
	// after group.initial.rebalance.delay.ms for a new group).
	kafkaJoinSlack = 30 * time.Second
	// kafkaSyncTimeout bounds a SyncGroup, which waits for the leader's.
	kafkaSyncTimeout = 5 * time.Minute
)

// kafkaGroups is the kafka.GroupBackend of a host. Safe for concurrent use:
// it holds no state.
type kafkaGroups struct {
	// meta asks the local broker.
	meta *kafkaBackend
	root *actor.RootContext
	// addr is this host's actor system address, its coordinators' PIDs'.
	addr string
	// hostID is this host's id: a group whose coordinator the broker
	// places on another host is not served here.
	hostID int32
	log    *logrus.Entry
}

var _ kafka.GroupBackend = (*kafkaGroups)(nil)

// newKafkaGroups returns the group backend of host hostID over the
// coordinators of the actor system at addr, asking meta's broker where
// groups live.
func newKafkaGroups(meta *kafkaBackend, root *actor.RootContext, addr string, hostID int32, log *logrus.Entry) *kafkaGroups {
	return &kafkaGroups{meta: meta, root: root, addr: addr, hostID: hostID, log: log}
}

// errCoordinatorTimeout: the coordinator did not answer in time.
var errCoordinatorTimeout = errors.New("host: the group coordinator did not answer in time")

// findCoordinator asks the local broker where group's coordinator is.
func (g *kafkaGroups) findCoordinator(ctx context.Context, group string) (*messages.FindCoordinatorResponse, error) {
	res, err := g.meta.ask(ctx, &messages.FindCoordinatorRequest{GroupId: group})
	if err != nil {
		return nil, fmt.Errorf("host: find the coordinator of group %q: %w", group, err)
	}
	fc, ok := res.(*messages.FindCoordinatorResponse)
	if !ok {
		return nil, fmt.Errorf("host: find the coordinator of group %q: the broker answered %T", group, res)
	}
	return fc, nil
}

// FindCoordinator implements kafka.GroupBackend.
func (g *kafkaGroups) FindCoordinator(ctx context.Context, group string) (kafka.CoordinatorAnswer, error) {
	unavailable := kafka.CoordinatorAnswer{ErrorCode: int16(messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE)}
	fc, err := g.findCoordinator(ctx, group)
	if err != nil {
		if ctx.Err() != nil {
			return kafka.CoordinatorAnswer{}, err
		}
		g.log.WithError(err).WithField("group", group).Warn("Kafka FindCoordinator: the local broker did not answer; answering COORDINATOR_NOT_AVAILABLE")
		unavailable.ErrorMessage = err.Error()
		return unavailable, nil
	}
	if fc.GetErrorCode() != messages.ErrorCode_ERROR_CODE_UNSPECIFIED {
		return kafka.CoordinatorAnswer{ErrorCode: int16(fc.GetErrorCode()), ErrorMessage: fc.GetErrorMessage()}, nil
	}
	res, err := g.meta.ask(ctx, &broker.KafkaMetadataRequest{})
	if err != nil {
		return kafka.CoordinatorAnswer{}, fmt.Errorf("host: Kafka FindCoordinator: hosts: %w", err)
	}
	md, ok := res.(*broker.KafkaMetadata)
	if !ok {
		return kafka.CoordinatorAnswer{}, fmt.Errorf("host: Kafka FindCoordinator: the broker answered %T", res)
	}
	return coordinatorAnswer(fc.GetHostId(), md.Hosts), nil
}

// coordinatorAnswer is the Kafka node of host id among hosts:
// COORDINATOR_NOT_AVAILABLE (retriable) when the host is not known or runs
// no Kafka listener. Pure.
func coordinatorAnswer(id int32, hosts []*messages.HostInfo) kafka.CoordinatorAnswer {
	for _, h := range hosts {
		if h.GetHostId() != id {
			continue
		}
		host, ps, err := net.SplitHostPort(h.GetKafkaAddress())
		port, perr := strconv.ParseUint(ps, 10, 16)
		if err != nil || perr != nil {
			break
		}
		return kafka.CoordinatorAnswer{NodeID: id, Host: host, Port: int32(port)}
	}
	return kafka.CoordinatorAnswer{
		ErrorCode:    int16(messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE),
		ErrorMessage: fmt.Sprintf("the coordinating host %d has no known Kafka listener", id),
	}
}

// coordinatorCall sends msg to the local coordinator of group and returns
// its answer, waiting at most timeout. When the coordinator is elsewhere,
// not known, gone or late, refuse builds the answer with the error code.
// Only ctx's end (the connection closed) is an error.
func coordinatorCall[T any](ctx context.Context, g *kafkaGroups, group string, msg any, timeout time.Duration,
	refuse func(code messages.ErrorCode, text string) T) (T, error) {
	var zero T
	fc, err := g.findCoordinator(ctx, group)
	if err != nil {
		if ctx.Err() != nil {
			return zero, err
		}
		g.log.WithError(err).WithField("group", group).Warn("Kafka group request: the local broker did not answer; answering COORDINATOR_NOT_AVAILABLE")
		return refuse(messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE, err.Error()), nil
	}
	switch {
	case fc.GetErrorCode() != messages.ErrorCode_ERROR_CODE_UNSPECIFIED:
		return refuse(fc.GetErrorCode(), fc.GetErrorMessage()), nil
	case fc.GetHostId() != g.hostID:
		return refuse(messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR,
			fmt.Sprintf("group %q is coordinated by host %d", group, fc.GetHostId())), nil
	}
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	f := g.root.RequestFuture(actor.NewPID(g.addr, fc.GetActorId()), msg, timeout)
	res, err := awaitCoordinator(ctx, f)
	switch {
	case errors.Is(err, actor.ErrDeadLetter):
		return refuse(messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR, "the coordinator moved"), nil
	case errors.Is(err, errCoordinatorTimeout):
		g.log.WithFields(logrus.Fields{"group": group, "type": fmt.Sprintf("%T", msg), "timeout": timeout}).
			Warn("Kafka group request: the local coordinator did not answer; answering COORDINATOR_NOT_AVAILABLE")
		return refuse(messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE, err.Error()), nil
	case err != nil:
		return zero, fmt.Errorf("host: group %q: %w", group, err)
	}
	out, ok := res.(T)
	if !ok {
		return zero, fmt.Errorf("host: group %q: the coordinator answered %T to %T", group, res, msg)
	}
	return out, nil
}

// awaitCoordinator waits for f's result or ctx, whichever comes first.
func awaitCoordinator(ctx context.Context, f *actor.Future) (any, error) {
	type answer struct {
		res any
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := f.Result()
		done <- answer{res, err}
	}()
	select {
	case a := <-done:
		switch {
		case errors.Is(a.err, actor.ErrTimeout):
			return nil, errCoordinatorTimeout
		case a.err != nil:
			return nil, fmt.Errorf("ask the coordinator: %w", a.err)
		}
		return a.res, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("ask the coordinator: %w", ctx.Err())
	}
}

// JoinGroup implements kafka.GroupBackend.
func (g *kafkaGroups) JoinGroup(ctx context.Context, req *messages.JoinGroupRequest) (*messages.JoinGroupResponse, error) {
	wait := time.Duration(max(req.GetRebalanceTimeoutMs(), req.GetSessionTimeoutMs(), 0))*time.Millisecond + kafkaJoinSlack
	return coordinatorCall(ctx, g, req.GetGroupId(), req, wait, func(c messages.ErrorCode, text string) *messages.JoinGroupResponse {
		return &messages.JoinGroupResponse{ErrorCode: c, ErrorMessage: text, GenerationId: -1, MemberId: req.GetMemberId()}
	})
}

// SyncGroup implements kafka.GroupBackend.
func (g *kafkaGroups) SyncGroup(ctx context.Context, req *messages.SyncGroupRequest) (*messages.SyncGroupResponse, error) {
	return coordinatorCall(ctx, g, req.GetGroupId(), req, kafkaSyncTimeout, func(c messages.ErrorCode, text string) *messages.SyncGroupResponse {
		return &messages.SyncGroupResponse{ErrorCode: c, ErrorMessage: text}
	})
}

// Heartbeat implements kafka.GroupBackend.
func (g *kafkaGroups) Heartbeat(ctx context.Context, req *messages.HeartbeatRequest) (*messages.HeartbeatResponse, error) {
	return coordinatorCall(ctx, g, req.GetGroupId(), req, kafkaGroupTimeout, func(c messages.ErrorCode, text string) *messages.HeartbeatResponse {
		return &messages.HeartbeatResponse{ErrorCode: c, ErrorMessage: text}
	})
}

// LeaveGroup implements kafka.GroupBackend.
func (g *kafkaGroups) LeaveGroup(ctx context.Context, req *messages.LeaveGroupRequest) (*messages.LeaveGroupResponse, error) {
	return coordinatorCall(ctx, g, req.GetGroupId(), req, kafkaGroupTimeout, func(c messages.ErrorCode, text string) *messages.LeaveGroupResponse {
		return &messages.LeaveGroupResponse{ErrorCode: c, ErrorMessage: text}
	})
}

// OffsetCommit implements kafka.GroupBackend.
func (g *kafkaGroups) OffsetCommit(ctx context.Context, req *messages.OffsetCommitRequest) (*messages.OffsetCommitResponse, error) {
	return coordinatorCall(ctx, g, req.GetGroupId(), req, kafkaGroupTimeout, func(c messages.ErrorCode, text string) *messages.OffsetCommitResponse {
		return &messages.OffsetCommitResponse{ErrorCode: c, ErrorMessage: text}
	})
}

// OffsetFetch implements kafka.GroupBackend.
func (g *kafkaGroups) OffsetFetch(ctx context.Context, req *messages.OffsetFetchRequest) (*messages.OffsetFetchResponse, error) {
	return coordinatorCall(ctx, g, req.GetGroupId(), req, kafkaGroupTimeout, func(c messages.ErrorCode, text string) *messages.OffsetFetchResponse {
		return &messages.OffsetFetchResponse{ErrorCode: c, ErrorMessage: text}
	})
}

// DescribeGroup implements kafka.GroupBackend: one group per coordinator
// request, as the groups of one request may live on several coordinators.
func (g *kafkaGroups) DescribeGroup(ctx context.Context, group string) (*messages.DescribedGroup, error) {
	res, err := coordinatorCall(ctx, g, group, &messages.DescribeGroupsRequest{GroupIds: []string{group}}, kafkaGroupTimeout,
		func(c messages.ErrorCode, text string) *messages.DescribeGroupsResponse {
			return &messages.DescribeGroupsResponse{Groups: []*messages.DescribedGroup{{ErrorCode: c, ErrorMessage: text, GroupId: group}}}
		})
	if err != nil {
		return nil, err
	}
	if len(res.GetGroups()) != 1 {
		return nil, fmt.Errorf("host: describe group %q: the coordinator answered %d groups", group, len(res.GetGroups()))
	}
	return res.GetGroups()[0], nil
}

// DeleteGroup implements kafka.GroupBackend.
func (g *kafkaGroups) DeleteGroup(ctx context.Context, group string) (*messages.DeleteGroupsResult, error) {
	res, err := coordinatorCall(ctx, g, group, &messages.DeleteGroupsRequest{GroupIds: []string{group}}, kafkaGroupTimeout,
		func(c messages.ErrorCode, text string) *messages.DeleteGroupsResponse {
			return &messages.DeleteGroupsResponse{Results: []*messages.DeleteGroupsResult{{ErrorCode: c, ErrorMessage: text, GroupId: group}}}
		})
	if err != nil {
		return nil, err
	}
	if len(res.GetResults()) != 1 {
		return nil, fmt.Errorf("host: delete group %q: the coordinator answered %d results", group, len(res.GetResults()))
	}
	return res.GetResults()[0], nil
}

// ListGroups implements kafka.GroupBackend: the local broker merges its
// coordinators' groups.
func (g *kafkaGroups) ListGroups(ctx context.Context, req *messages.ListGroupsRequest) (*messages.ListGroupsResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, kafkaGroupTimeout)
	defer cancel()
	res, err := g.meta.ask(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("host: Kafka ListGroups: %w", err)
	}
	lg, ok := res.(*messages.ListGroupsResponse)
	if !ok {
		return nil, fmt.Errorf("host: Kafka ListGroups: the broker answered %T", res)
	}
	return lg, nil
}
