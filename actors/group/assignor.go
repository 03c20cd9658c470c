// assignor.go holds what the assignors share: the Assignor interface, the
// members and plans they work on, Kafka's member order, and the helpers a
// consumer uses around them (its JoinGroup protocols; as leader, decoding the
// members, assigning and encoding the SyncGroup assignments).

package group

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/actorlog/actorlog/messages"
)

// Member is one group member as an assignor sees it.
type Member struct {
	// ID is the member id; InstanceID its group.instance.id, or "".
	ID, InstanceID string
	Subscription   Subscription
}

// Plan is an assignment per member id. A plan from Assign has an entry,
// possibly empty, for every member given.
type Plan map[string]Assignment

// Assignor divides the partitions of the subscribed topics among a group's
// members. Assign is a pure function of its arguments (deterministic for
// the same members and partitions, whatever their order), safe for
// concurrent use.
type Assignor interface {
	// Name is the protocol name members announce in JoinGroup.
	Name() string
	// Cooperative reports whether the assignor follows KIP-429's
	// incremental protocol: members keep their partitions through a
	// rebalance and give up only the ones the new assignment lacks (which
	// are then assigned in a follow-up rebalance). Otherwise members revoke
	// everything before they rejoin (the eager protocol).
	Cooperative() bool
	// Assign returns every member's partitions. partitions maps each topic
	// to its partition count; subscribed topics missing from it are
	// skipped. Every partition of a subscribed topic goes to at most one
	// member, one subscribed to its topic.
	Assign(members []Member, partitions map[string]int32) Plan
}

// Assignors returns the built-in assignors in the order a consumer should
// prefer them: cooperative-sticky, range, roundrobin.
func Assignors() []Assignor { return []Assignor{CooperativeSticky(), Range(), RoundRobin()} }

// ByName returns the built-in assignor called name.
func ByName(name string) (Assignor, bool) {
	i := slices.IndexFunc(Assignors(), func(a Assignor) bool { return a.Name() == name })
	if i < 0 {
		return nil, false
	}
	return Assignors()[i], true
}

// Protocols returns the JoinGroup protocols of a consumer with subscription
// s that supports assignors (most preferred first): each with s encoded.
func Protocols(s Subscription, assignors ...Assignor) []*messages.JoinGroupRequestProtocol {
	metadata := EncodeSubscription(s)
	out := make([]*messages.JoinGroupRequestProtocol, len(assignors))
	for i, a := range assignors {
		out[i] = &messages.JoinGroupRequestProtocol{Name: a.Name(), Metadata: metadata}
	}
	return out
}

// AssignGroup is the leader's step between JoinGroup and SyncGroup: it
// decodes the members of the leader's JoinGroupResponse, runs a and encodes
// one SyncGroup assignment per member, in the members' order.
func AssignGroup(a Assignor, members []*messages.JoinGroupResponseMember, partitions map[string]int32) ([]*messages.SyncGroupRequestAssignment, error) {
	ms := make([]Member, 0, len(members))
	for _, m := range members {
		s, err := DecodeSubscription(m.GetMetadata())
		if err != nil {
			return nil, fmt.Errorf("group: assign with %s: member %s: %w", a.Name(), m.GetMemberId(), err)
		}
		ms = append(ms, Member{ID: m.GetMemberId(), InstanceID: m.GetGroupInstanceId(), Subscription: s})
	}
	plan := a.Assign(ms, partitions)
	out := make([]*messages.SyncGroupRequestAssignment, len(members))
	for i, m := range members {
		out[i] = &messages.SyncGroupRequestAssignment{
			MemberId:   m.GetMemberId(),
			Assignment: EncodeAssignment(plan[m.GetMemberId()]),
		}
	}
	return out, nil
}

// sortMembers returns members in Kafka's order (its MemberInfo.compareTo):
// static members first, by instance id, then dynamic ones by member id.
func sortMembers(members []Member) []Member {
	return slices.SortedStableFunc(slices.Values(members), func(a, b Member) int {
		switch {
		case a.InstanceID != "" && b.InstanceID != "":
			return cmp.Or(cmp.Compare(a.InstanceID, b.InstanceID), cmp.Compare(a.ID, b.ID))
		case a.InstanceID != "":
			return -1
		case b.InstanceID != "":
			return 1
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// newPlan returns a plan with an empty assignment for every member.
func newPlan(members []Member) Plan {
	plan := make(Plan, len(members))
	for _, m := range members {
		plan[m.ID] = Assignment{}
	}
	return plan
}

// subscribes reports whether m subscribes to topic.
func (m Member) subscribes(topic string) bool { return slices.Contains(m.Subscription.Topics, topic) }

// subscribedTopics returns the topics some member subscribes to that exist
// in partitions with at least one partition, sorted.
func subscribedTopics(members []Member, partitions map[string]int32) []string {
	var topics []string
	for _, m := range members {
		for _, t := range m.Subscription.Topics {
			if partitions[t] > 0 {
				topics = append(topics, t)
			}
		}
	}
	return slices.Compact(slices.Sorted(slices.Values(topics)))
}
