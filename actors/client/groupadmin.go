// groupadmin.go: the consumer-group admin calls (Kafka's AdminClient and
// kafka-consumer-groups) — listing the cluster's groups (every live host's
// broker answers for the coordinators it runs), describing and deleting
// groups (through each group's coordinator, with the retries of
// groups.go), a group's lag per partition, and resetting a group's offsets
// while it has no members.

package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/actors/group"
	"github.com/actorlog/actorlog/messages"
)

// ErrGroupNotEmpty means a group has members, so its offsets cannot be
// reset (or the group deleted) from outside it.
var ErrGroupNotEmpty = errors.New("client: the group has members")

// ListGroups returns the cluster's groups (only those in states, Kafka's
// names such as "Stable" or "Empty", if any are given), sorted by id. It
// asks every live host, each answering for the coordinators it runs, and
// merges the answers. While some coordinator is loading or some host does
// not answer it tries again, until ctx ends (GroupRequestTimeout without a
// deadline); it then returns what it could list with the error.
func (c *Client) ListGroups(ctx context.Context, states ...string) ([]*messages.ListedGroup, error) {
	ctx, cancel := groupContext(ctx)
	defer cancel()
	var groups []*messages.ListedGroup
	err := retryGroup(ctx, func() (bool, error) {
		md, err := c.Metadata(ctx)
		if err != nil {
			return errors.Is(err, ErrUnreachable), fmt.Errorf("client: list groups: %w", err)
		}
		var errs []error
		groups, errs = c.listGroupsOn(ctx, md.Hosts, states)
		if len(errs) > 0 {
			return true, fmt.Errorf("client: list groups: %w", errors.Join(errs...))
		}
		return false, nil
	})
	return groups, err
}

// listGroupsOn asks the brokers of hosts, in parallel, and merges their
// groups; one error per host that did not give a full answer.
func (c *Client) listGroupsOn(ctx context.Context, hosts []*messages.HostInfo, states []string) ([]*messages.ListedGroup, []error) {
	var (
		mu     sync.Mutex
		wg     sync.WaitGroup
		byID   = map[string]*messages.ListedGroup{}
		errs   []error
		record = func(h *messages.HostInfo, gs []*messages.ListedGroup, err error) {
			mu.Lock()
			defer mu.Unlock()
			for _, g := range gs {
				byID[g.GroupId] = g
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("host %d (%s): %w", h.HostId, h.AdvertisedAddress, err))
			}
		}
	)
	for _, h := range hosts {
		if !c.HostUp(h.AdvertisedAddress) {
			record(h, nil, errors.New("down"))
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := &messages.ListGroupsRequest{CorrelationId: c.NextCorrelationID(), StatesFilter: states}
			res, err := c.Request(ctx, actor.NewPID(h.AdvertisedAddress, messages.BrokerActorID), req)
			if err != nil {
				record(h, nil, err)
				return
			}
			resp, ok := res.(*messages.ListGroupsResponse)
			if !ok {
				record(h, nil, fmt.Errorf("unexpected reply %T", res))
				return
			}
			record(h, resp.Groups, resp.Err())
		}()
	}
	wg.Wait()
	groups := make([]*messages.ListedGroup, 0, len(byID))
	for _, g := range byID {
		groups = append(groups, g)
	}
	slices.SortFunc(groups, func(a, b *messages.ListedGroup) int { return strings.Compare(a.GroupId, b.GroupId) })
	return groups, errs
}

// DescribeGroup returns group's state, protocol, generation, leader and
// members (with their assignments while the group is Stable) from its
// coordinator. A group the cluster does not know is "Dead" with no
// members, as in Kafka.
func (c *Client) DescribeGroup(ctx context.Context, group string) (*messages.DescribedGroup, error) {
	req := &messages.DescribeGroupsRequest{CorrelationId: c.NextCorrelationID(), GroupIds: []string{group}}
	resp, err := coordinatorCall(ctx, c, group, req, groupEntryError(func(r *messages.DescribeGroupsResponse) []*messages.DescribedGroup { return r.Groups }))
	if err != nil {
		return nil, fmt.Errorf("client: describe group %q: %w", group, err)
	}
	return resp.Groups[0], nil
}

// DeleteGroups deletes groups with their committed offsets, each through
// its coordinator; only groups without members can be (NON_EMPTY_GROUP).
// It returns one result per group, in order; the error joins the failed
// groups' errors.
func (c *Client) DeleteGroups(ctx context.Context, groups ...string) ([]*messages.DeleteGroupsResult, error) {
	var results []*messages.DeleteGroupsResult
	var errs []error
	for _, g := range groups {
		req := &messages.DeleteGroupsRequest{CorrelationId: c.NextCorrelationID(), GroupIds: []string{g}}
		resp, err := coordinatorCall(ctx, c, g, req, groupEntryError(func(r *messages.DeleteGroupsResponse) []*messages.DeleteGroupsResult { return r.Results }))
		r := &messages.DeleteGroupsResult{GroupId: g}
		switch e, ok := errors.AsType[*messages.Error](err); {
		case err == nil:
			r = resp.Results[0]
		case ok:
			r.ErrorCode, r.ErrorMessage = e.Code, e.Message
		default:
			r.ErrorCode, r.ErrorMessage = messages.ErrorCode_ERROR_CODE_UNKNOWN_SERVER_ERROR, err.Error()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("group %q: %w", g, err))
		}
		results = append(results, r)
	}
	if len(errs) > 0 {
		return results, fmt.Errorf("client: delete groups: %w", errors.Join(errs...))
	}
	return results, nil
}

// groupEntry is the per-group entry of a multi-group response.
type groupEntry interface {
	GetErrorCode() messages.ErrorCode
	GetErrorMessage() string
}

// groupEntryError reads the outcome of a one-group request from the
// response's only entry.
func groupEntryError[T any, E groupEntry](entries func(T) []E) func(T) (messages.ErrorCode, string) {
	return func(r T) (messages.ErrorCode, string) {
		es := entries(r)
		if len(es) != 1 {
			return messages.ErrorCode_ERROR_CODE_UNKNOWN_SERVER_ERROR, fmt.Sprintf("%d entries in the answer, want 1", len(es))
		}
		return es[0].GetErrorCode(), es[0].GetErrorMessage()
	}
}

// PartitionLag is a group's position in one partition.
type PartitionLag struct {
	Topic     string
	Partition int32
	// Committed is the group's committed offset, -1 when it has none.
	Committed int64
	// LogEnd is the partition's log end offset (its high watermark, what
	// consumers can read up to), -1 when it could not be read (Err says
	// why).
	LogEnd int64
	// Lag is LogEnd - Committed, the records the group has yet to
	// process; -1 when either is unknown.
	Lag int64
	Err error
}

// GroupLag returns group's committed offset, the log end offset and the
// lag of every partition it has committed, and of the partitions of also
// (e.g. those its members are assigned, which may have no commit yet),
// sorted by topic and partition.
func (c *Client) GroupLag(ctx context.Context, group string, also ...*messages.TopicPartitions) ([]PartitionLag, error) {
	committed, err := c.FetchOffsets(ctx, group)
	if err != nil {
		return nil, err
	}
	type tp struct {
		topic string
		part  int32
	}
	byTP := map[tp]*PartitionLag{}
	for _, o := range committed {
		byTP[tp{o.Topic, o.Partition}] = &PartitionLag{Topic: o.Topic, Partition: o.Partition, Committed: o.Offset}
	}
	for _, t := range also {
		for _, p := range t.Partitions {
			if byTP[tp{t.Topic, p}] == nil {
				byTP[tp{t.Topic, p}] = &PartitionLag{Topic: t.Topic, Partition: p, Committed: -1}
			}
		}
	}
	var out []PartitionLag
	if len(byTP) == 0 {
		return out, nil
	}
	topics := map[string]bool{}
	for k := range byTP {
		topics[k.topic] = true
	}
	md, err := c.Metadata(ctx, slices.Sorted(maps.Keys(topics))...)
	if err != nil {
		return nil, fmt.Errorf("client: lag of group %q: %w", group, err)
	}
	parts := map[tp]*messages.PartitionMetadata{}
	for _, t := range md.Topics {
		for _, p := range t.Partitions {
			parts[tp{t.Name, p.Partition}] = p
		}
	}
	for k, l := range byTP {
		l.LogEnd, l.Lag = -1, -1
		if p := parts[k]; p == nil {
			l.Err = fmt.Errorf("no partition %d of topic %q", k.part, k.topic)
		} else if lo, err := c.ListOffsets(ctx, p, k.topic, messages.LatestTimestamp); err != nil {
			l.Err = err
		} else {
			l.LogEnd = lo.Offset
			if l.Committed >= 0 {
				l.Lag = max(l.LogEnd-l.Committed, 0)
			}
		}
		out = append(out, *l)
	}
	slices.SortFunc(out, func(a, b PartitionLag) int {
		if a.Topic != b.Topic {
			return strings.Compare(a.Topic, b.Topic)
		}
		return int(a.Partition - b.Partition)
	})
	return out, nil
}

// AssignedPartitions decodes the assignments of a described consumer
// group's members (protocol type "consumer", present while the group is
// Stable), by member id.
func AssignedPartitions(d *messages.DescribedGroup) (map[string]group.Assignment, error) {
	out := map[string]group.Assignment{}
	if d.ProtocolType != group.ProtocolType {
		return out, nil
	}
	for _, m := range d.Members {
		a, err := group.DecodeAssignment(m.MemberAssignment)
		if err != nil {
			return nil, fmt.Errorf("client: assignment of member %s: %w", m.MemberId, err)
		}
		out[m.MemberId] = a
	}
	return out, nil
}

// ResetTarget is where ResetOffsets moves a group's offsets; make one with
// ResetToEarliest, ResetToLatest, ResetToOffset or ResetToDatetime.
type ResetTarget struct {
	kind   resetKind
	offset int64
	at     time.Time
}

type resetKind int

const (
	resetEarliest resetKind = iota + 1
	resetLatest
	resetOffset
	resetDatetime
)

// ResetToEarliest moves to each partition's log start offset.
func ResetToEarliest() ResetTarget { return ResetTarget{kind: resetEarliest} }

// ResetToLatest moves to each partition's log end offset (nothing left to
// consume).
func ResetToLatest() ResetTarget { return ResetTarget{kind: resetLatest} }

// ResetToOffset moves to offset, brought into each partition's range
// [log start, log end] as Kafka does.
func ResetToOffset(offset int64) ResetTarget { return ResetTarget{kind: resetOffset, offset: offset} }

// ResetToDatetime moves to the first record at or after t (the log end
// where there is none).
func ResetToDatetime(t time.Time) ResetTarget { return ResetTarget{kind: resetDatetime, at: t} }

// String describes the target.
func (r ResetTarget) String() string {
	switch r.kind {
	case resetEarliest:
		return "earliest"
	case resetLatest:
		return "latest"
	case resetOffset:
		return fmt.Sprintf("offset %d", r.offset)
	case resetDatetime:
		return "datetime " + r.at.UTC().Format(time.RFC3339Nano)
	}
	return "no target"
}

// validate fails for a target made by none of the constructors or an
// offset below zero.
func (r ResetTarget) validate() error {
	switch {
	case r.kind == 0:
		return errors.New("client: no reset target (earliest, latest, offset or datetime)")
	case r.kind == resetOffset && r.offset < 0:
		return fmt.Errorf("client: reset to offset %d: must not be negative", r.offset)
	}
	return nil
}

// PlanResetOffsets returns the offsets ResetOffsets would commit for
// group's partitions of topic (all of them, or partitions), without
// committing: it checks that the group has no members (ErrGroupNotEmpty)
// and resolves target for each partition with ListOffsets.
func (c *Client) PlanResetOffsets(ctx context.Context, group, topic string, partitions []int32, target ResetTarget) ([]CommitOffset, error) {
	if err := target.validate(); err != nil {
		return nil, err
	}
	d, err := c.DescribeGroup(ctx, group)
	if err != nil {
		return nil, err
	}
	if d.GroupState != "Empty" && d.GroupState != "Dead" {
		return nil, fmt.Errorf("%w: group %q is %s with %d member(s); stop its consumers first", ErrGroupNotEmpty, group, d.GroupState, len(d.Members))
	}
	md, err := c.Metadata(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("client: reset offsets of group %q: %w", group, err)
	}
	if len(md.Topics) != 1 {
		return nil, fmt.Errorf("client: reset offsets of group %q: no metadata for topic %q", group, topic)
	}
	t := md.Topics[0]
	if err := t.ErrorCode.Err("topic " + topic); err != nil {
		return nil, fmt.Errorf("client: reset offsets of group %q: %w", group, err)
	}
	var parts []*messages.PartitionMetadata
	if len(partitions) == 0 {
		parts = t.Partitions
	}
	for _, p := range partitions {
		if p < 0 || int(p) >= len(t.Partitions) {
			return nil, fmt.Errorf("client: reset offsets of group %q: partition %d out of range: topic %s has partitions 0..%d", group, p, topic, len(t.Partitions)-1)
		}
		parts = append(parts, t.Partitions[p])
	}
	plan := make([]CommitOffset, 0, len(parts))
	for _, p := range parts {
		off, err := c.resolveReset(ctx, topic, p, target)
		if err != nil {
			return nil, fmt.Errorf("client: reset offsets of group %q: %s-%d: %w", group, topic, p.Partition, err)
		}
		plan = append(plan, CommitOffset{Topic: topic, Partition: p.Partition, Offset: off, LeaderEpoch: -1})
	}
	return plan, nil
}

// resolveReset returns target's offset in partition p.
func (c *Client) resolveReset(ctx context.Context, topic string, p *messages.PartitionMetadata, target ResetTarget) (int64, error) {
	at := func(ts int64) (int64, error) {
		lo, err := c.ListOffsets(ctx, p, topic, ts)
		if err != nil {
			return -1, err
		}
		return lo.Offset, nil
	}
	switch target.kind {
	case resetEarliest:
		return at(messages.EarliestTimestamp)
	case resetLatest:
		return at(messages.LatestTimestamp)
	case resetDatetime:
		return at(target.at.UnixMilli())
	}
	start, err := at(messages.EarliestTimestamp)
	if err != nil {
		return -1, err
	}
	end, err := at(messages.LatestTimestamp)
	if err != nil {
		return -1, err
	}
	return min(max(target.offset, start), end), nil
}

// ResetOffsets moves group's committed offsets of topic (all its
// partitions, or partitions) to target, as kafka-consumer-groups
// --reset-offsets --execute: only while the group has no members
// (ErrGroupNotEmpty; a member that joins meanwhile makes the commit fail
// with ILLEGAL_GENERATION, as the offsets are committed from outside the
// group, generation -1). It returns the offsets committed.
func (c *Client) ResetOffsets(ctx context.Context, group, topic string, partitions []int32, target ResetTarget) ([]CommitOffset, error) {
	plan, err := c.PlanResetOffsets(ctx, group, topic, partitions, target)
	if err != nil {
		return nil, err
	}
	if _, err := c.CommitOffsets(ctx, group, "", -1, plan); err != nil {
		if errors.Is(err, &messages.Error{Code: messages.ErrorCode_ERROR_CODE_ILLEGAL_GENERATION}) {
			return nil, fmt.Errorf("%w: group %q got members while its offsets were reset: %w", ErrGroupNotEmpty, group, err)
		}
		return nil, err
	}
	return plan, nil
}
