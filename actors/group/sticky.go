// sticky.go holds the "cooperative-sticky" assignor (Kafka's
// CooperativeStickyAssignor, KIP-429): a balanced assignment that moves as
// few partitions as it can, given in two steps when partitions move.
//
// Each member's subscription carries the partitions it owns. The assignor
//
//  1. keeps every owned partition with its owner (a partition two members
//     claim goes to the claimant with the highest generation, then the
//     first in Kafka's member order; claims of partitions that no longer
//     exist or of topics the claimant left are not kept);
//  2. gives each unowned partition to the subscribed member with the fewest
//     partitions, topics with the fewest subscribers first;
//  3. balances: while some member holds a partition that a member with at
//     least two fewer partitions subscribes to, moves one there (from the
//     fullest member to the emptiest, partitions it did not own first). With
//     equal subscriptions this ends with at most one partition between any
//     two members, after the fewest possible moves;
//  4. withholds every partition that another member still owns: it is only
//     revoked now (its owner's assignment lacks it) and assigned in the
//     follow-up rebalance the owner starts after revoking it, so no
//     partition is ever owned by two members at once.

package group

import (
	"cmp"
	"maps"
	"slices"
)

// CooperativeSticky returns the "cooperative-sticky" assignor.
func CooperativeSticky() Assignor { return cooperativeSticky{} }

type cooperativeSticky struct{}

func (cooperativeSticky) Name() string      { return "cooperative-sticky" }
func (cooperativeSticky) Cooperative() bool { return true }

func (cooperativeSticky) Assign(members []Member, partitions map[string]int32) Plan {
	s := newSticky(sortMembers(members), partitions)
	s.keepOwned()
	s.assignUnowned()
	for s.moveOne() {
	}
	return s.plan()
}

// topicPartition names one partition.
type topicPartition struct {
	topic     string
	partition int32
}

// compareTP orders partitions by topic, then index.
func compareTP(a, b topicPartition) int {
	return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
}

// sticky is one run of the assignor. Members are referred to by their index
// in members (Kafka's member order).
type sticky struct {
	members    []Member
	partitions map[string]int32
	// topics[i] is the set of topics member i subscribes to.
	topics []map[string]bool
	// claims lists, per existing partition some member owns, the members
	// that claim it, ascending.
	claims map[topicPartition][]int
	// held[i] is what member i gets, in the order it got it.
	held [][]topicPartition
}

func newSticky(members []Member, partitions map[string]int32) *sticky {
	s := &sticky{
		members:    members,
		partitions: partitions,
		topics:     make([]map[string]bool, len(members)),
		claims:     make(map[topicPartition][]int),
		held:       make([][]topicPartition, len(members)),
	}
	for i, m := range members {
		s.topics[i] = make(map[string]bool)
		for _, t := range m.Subscription.Topics {
			s.topics[i][t] = true
		}
		for t, ps := range m.Subscription.Owned {
			for _, p := range ps {
				tp := topicPartition{t, p}
				if p >= 0 && p < partitions[t] && !slices.Contains(s.claims[tp], i) {
					s.claims[tp] = append(s.claims[tp], i)
				}
			}
		}
	}
	return s
}

// keepOwned gives each claimed partition to its rightful claimant: one that
// subscribes to its topic, with the highest generation, first in member
// order.
func (s *sticky) keepOwned() {
	for _, tp := range slices.SortedFunc(maps.Keys(s.claims), compareTP) {
		owner := -1
		for _, i := range s.claims[tp] {
			if s.topics[i][tp.topic] && (owner < 0 ||
				s.members[i].Subscription.Generation > s.members[owner].Subscription.Generation) {
				owner = i
			}
		}
		if owner >= 0 {
			s.held[owner] = append(s.held[owner], tp)
		}
	}
}

// assignUnowned gives every partition nobody holds to the subscribed member
// holding the fewest, topics with the fewest subscribers first.
func (s *sticky) assignUnowned() {
	held := make(map[topicPartition]bool)
	for _, h := range s.held {
		for _, tp := range h {
			held[tp] = true
		}
	}
	subscribers := func(topic string) int {
		n := 0
		for _, ts := range s.topics {
			if ts[topic] {
				n++
			}
		}
		return n
	}
	topics := subscribedTopics(s.members, s.partitions)
	slices.SortStableFunc(topics, func(a, b string) int { return cmp.Compare(subscribers(a), subscribers(b)) })
	for _, t := range topics {
		for p := range s.partitions[t] {
			tp := topicPartition{t, p}
			if held[tp] {
				continue
			}
			best := -1
			for i := range s.members {
				if s.topics[i][t] && (best < 0 || len(s.held[i]) < len(s.held[best])) {
					best = i
				}
			}
			s.held[best] = append(s.held[best], tp)
		}
	}
}

// moveOne moves one partition from the fullest member that can give one to
// the emptiest member, holding at least two fewer, that subscribes to it;
// false when no such move exists.
func (s *sticky) moveOne() bool {
	byCount := func(desc bool) []int {
		idx := make([]int, len(s.members))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int {
			if desc {
				return cmp.Compare(len(s.held[b]), len(s.held[a]))
			}
			return cmp.Compare(len(s.held[a]), len(s.held[b]))
		})
		return idx
	}
	givers, takers := byCount(true), byCount(false)
	for _, a := range givers {
		for _, b := range takers {
			if len(s.held[b]) > len(s.held[a])-2 {
				break
			}
			if k := s.pickMovable(a, b); k >= 0 {
				tp := s.held[a][k]
				s.held[a] = slices.Delete(s.held[a], k, k+1)
				s.held[b] = append(s.held[b], tp)
				return true
			}
		}
	}
	return false
}

// pickMovable returns the index in held[a] of a partition member b
// subscribes to, preferring one a did not own (moving it revokes nothing),
// the latest given first; -1 if none.
func (s *sticky) pickMovable(a, b int) int {
	owned := -1
	for k := len(s.held[a]) - 1; k >= 0; k-- {
		tp := s.held[a][k]
		if !s.topics[b][tp.topic] {
			continue
		}
		if !slices.Contains(s.claims[tp], a) {
			return k
		}
		if owned < 0 {
			owned = k
		}
	}
	return owned
}

// plan returns what every member holds, less the partitions another member
// still owns (they are revoked now and assigned in the next rebalance).
func (s *sticky) plan() Plan {
	plan := newPlan(s.members)
	for i, m := range s.members {
		for _, tp := range s.held[i] {
			if c := s.claims[tp]; len(c) > 0 && !slices.Contains(c, i) {
				continue
			}
			plan[m.ID][tp.topic] = append(plan[m.ID][tp.topic], tp.partition)
		}
		for _, ps := range plan[m.ID] {
			slices.Sort(ps)
		}
	}
	return plan
}
