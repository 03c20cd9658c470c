// decisions.go holds the pure decisions the group member (member.go)
// takes, as plain functions: what an error code from the coordinator calls
// for, which rebalance protocol the assignors imply, what a new assignment
// revokes and adds, what the member subscribes to given the topics that
// exist, and whether metadata changed enough to rebalance. Nothing here
// does I/O.

package consumer

import (
	"maps"
	"regexp"
	"slices"

	"github.com/actorlog/actorlog/actors/group"
	"github.com/actorlog/actorlog/messages"
)

// reaction is what the member does after a coordinator's answer.
type reaction int

const (
	// reactNone: success.
	reactNone reaction = iota
	// reactRetry: the coordinator is loading its partition; ask it again
	// after a backoff.
	reactRetry
	// reactRediscover: the coordinator moved or is unreachable; find it
	// again, then carry on (rejoin if a join or sync was cut off).
	reactRediscover
	// reactRejoin: a rebalance started; rejoin (cooperative: keep
	// consuming the owned partitions meanwhile).
	reactRejoin
	// reactResetGeneration: the member's generation is stale; its
	// partitions are lost; rejoin with its member id.
	reactResetGeneration
	// reactResetMember: the coordinator does not know the member; its
	// partitions are lost; rejoin without a member id.
	reactResetMember
	// reactFatal: the member cannot take part in the group (ErrGroupFatal).
	reactFatal
	// reactBackoff: an unexpected failure; report it and try again after
	// a backoff.
	reactBackoff
)

// String names r for logs.
func (r reaction) String() string {
	return [...]string{"none", "retry", "rediscover coordinator", "rejoin", "reset generation", "reset member id", "fatal", "back off"}[r]
}

// reactionTo classifies an error code of a JoinGroup, SyncGroup, Heartbeat
// or OffsetCommit response, as Kafka's ConsumerCoordinator does.
func reactionTo(code messages.ErrorCode) reaction {
	switch code {
	case messages.ErrorCode_ERROR_CODE_UNSPECIFIED:
		return reactNone
	case messages.ErrorCode_ERROR_CODE_COORDINATOR_LOAD_IN_PROGRESS:
		return reactRetry
	case messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR,
		messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE,
		messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT:
		return reactRediscover
	case messages.ErrorCode_ERROR_CODE_REBALANCE_IN_PROGRESS:
		return reactRejoin
	case messages.ErrorCode_ERROR_CODE_ILLEGAL_GENERATION:
		return reactResetGeneration
	case messages.ErrorCode_ERROR_CODE_UNKNOWN_MEMBER_ID:
		return reactResetMember
	case messages.ErrorCode_ERROR_CODE_FENCED_INSTANCE_ID,
		messages.ErrorCode_ERROR_CODE_INCONSISTENT_GROUP_PROTOCOL,
		messages.ErrorCode_ERROR_CODE_INVALID_SESSION_TIMEOUT,
		messages.ErrorCode_ERROR_CODE_INVALID_GROUP_ID,
		messages.ErrorCode_ERROR_CODE_GROUP_MAX_SIZE_REACHED,
		// The ACLs refuse the group or a topic (remote or Kafka listener):
		// asking again gets the same answer, as in Kafka.
		messages.ErrorCode_ERROR_CODE_GROUP_AUTHORIZATION_FAILED,
		messages.ErrorCode_ERROR_CODE_TOPIC_AUTHORIZATION_FAILED:
		return reactFatal
	}
	return reactBackoff
}

// cooperative reports whether assignors imply KIP-429's incremental
// protocol: only when every one of them is cooperative (Kafka's rule: the
// protocol is the newest one all the assignors support), so a member never
// keeps partitions through a rebalance whose assignor may hand them to
// another member at once.
func cooperative(assignors []group.Assignor) bool {
	for _, a := range assignors {
		if !a.Cooperative() {
			return false
		}
	}
	return len(assignors) > 0
}

// assignorNamed returns the assignor of assignors called name.
func assignorNamed(assignors []group.Assignor, name string) (group.Assignor, bool) {
	i := slices.IndexFunc(assignors, func(a group.Assignor) bool { return a.Name() == name })
	if i < 0 {
		return nil, false
	}
	return assignors[i], true
}

// toTPs returns a's partitions, sorted.
func toTPs(a group.Assignment) []TopicPartition {
	var out []TopicPartition
	for t, ps := range a {
		for _, p := range ps {
			out = append(out, TopicPartition{t, p})
		}
	}
	return sortTPs(slices.Compact(sortTPs(out)))
}

// toAssignment returns tps by topic.
func toAssignment(tps []TopicPartition) group.Assignment {
	a := group.Assignment{}
	for _, tp := range tps {
		a[tp.Topic] = append(a[tp.Topic], tp.Partition)
	}
	return a
}

// diffAssignment compares the partitions a member owns with a new
// assignment: added are assigned and not owned, revoked owned and not
// assigned (KIP-429: only these are given up), both sorted.
func diffAssignment(owned, assigned []TopicPartition) (added, revoked []TopicPartition) {
	for _, tp := range assigned {
		if !slices.Contains(owned, tp) {
			added = append(added, tp)
		}
	}
	for _, tp := range owned {
		if !slices.Contains(assigned, tp) {
			revoked = append(revoked, tp)
		}
	}
	return sortTPs(added), sortTPs(revoked)
}

// minus returns the partitions of a not in b, in a's order.
func minus(a, b []TopicPartition) []TopicPartition {
	var out []TopicPartition
	for _, tp := range a {
		if !slices.Contains(b, tp) {
			out = append(out, tp)
		}
	}
	return out
}

// notSubscribed returns the owned partitions whose topic is not in topics
// (Kafka revokes them before rejoining, whatever the protocol).
func notSubscribed(owned []TopicPartition, topics []string) []TopicPartition {
	var out []TopicPartition
	for _, tp := range owned {
		if !slices.Contains(topics, tp.Topic) {
			out = append(out, tp)
		}
	}
	return out
}

// subscription returns the topics a member subscribes to: the explicit
// ones, or, with re, every existing non-internal topic whose name matches;
// sorted, without duplicates.
func subscription(explicit []string, re *regexp.Regexp, existing map[string]int32) []string {
	var out []string
	if re == nil {
		out = slices.Clone(explicit)
	} else {
		for t := range existing {
			if !messages.IsInternalTopic(t) && re.MatchString(t) {
				out = append(out, t)
			}
		}
	}
	return slices.Compact(slices.Sorted(slices.Values(out)))
}

// countsOf returns the partition counts of topics in existing (0 for a
// topic that does not exist).
func countsOf(topics []string, existing map[string]int32) map[string]int32 {
	out := make(map[string]int32, len(topics))
	for _, t := range topics {
		out[t] = existing[t]
	}
	return out
}

// countsChanged reports whether any topic of snapshot has another
// partition count in existing (it was created, deleted or grew).
func countsChanged(snapshot, existing map[string]int32) bool {
	for t, n := range snapshot {
		if existing[t] != n {
			return true
		}
	}
	return false
}

// groupTopics returns the topics of the leader's members' subscriptions
// (those that decode), sorted, without duplicates.
func groupTopics(members []*messages.JoinGroupResponseMember) []string {
	var out []string
	for _, m := range members {
		if s, err := group.DecodeSubscription(m.GetMetadata()); err == nil {
			out = append(out, s.Topics...)
		}
	}
	return slices.Compact(slices.Sorted(slices.Values(out)))
}

// sameTopics reports whether a and b hold the same topics (both sorted).
func sameTopics(a, b []string) bool { return slices.Equal(a, b) }

// keys returns m's keys sorted.
func keys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
