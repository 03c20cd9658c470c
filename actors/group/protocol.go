// protocol.go holds Kafka's ConsumerProtocol formats, the protocol metadata
// and assignment bytes of groups of protocol type "consumer":
// ConsumerMemberMetadata (a member's subscription: topics, owned partitions
// (v1+), generation (v2+)) and ConsumerMemberAssignment (the partitions the
// leader gives a member), encoded with franz-go's kmsg.

package group

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ProtocolType is the protocol type of consumer groups.
const ProtocolType = "consumer"

// subscriptionVersion is the ConsumerMemberMetadata version written: v3, as
// Kafka's clients since 3.x (owned partitions, generation, rack).
const subscriptionVersion = 3

// assignmentVersion is the ConsumerMemberAssignment version written (its
// fields are the same in every version).
const assignmentVersion = 3

// ErrMalformed is returned (wrapped) for protocol bytes that do not decode.
var ErrMalformed = errors.New("group: malformed consumer protocol data")

// Subscription is a consumer's protocol metadata: what it wants and what it
// has.
type Subscription struct {
	// Topics the member subscribes to.
	Topics []string
	// Owned is the partitions the member owns now, by topic (KIP-429: the
	// cooperative assignor keeps them where it can and only revokes the
	// ones that move).
	Owned Assignment
	// Generation is the generation Owned was assigned in, -1 if none.
	Generation int32
	// UserData is free for an assignor's use; the built-in ones leave it
	// empty.
	UserData []byte
}

// Assignment is partitions by topic.
type Assignment map[string][]int32

// Count returns the number of partitions in a.
func (a Assignment) Count() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

// Has reports whether a holds partition p of topic.
func (a Assignment) Has(topic string, p int32) bool { return slices.Contains(a[topic], p) }

// EncodeSubscription returns s as ConsumerMemberMetadata v3, topics and
// partitions sorted (so equal subscriptions encode equally).
func EncodeSubscription(s Subscription) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Version = subscriptionVersion
	m.Topics = slices.Sorted(slices.Values(s.Topics))
	m.UserData = s.UserData
	m.Generation = s.Generation
	for _, t := range slices.Sorted(maps.Keys(s.Owned)) {
		if len(s.Owned[t]) == 0 {
			continue
		}
		op := kmsg.NewConsumerMemberMetadataOwnedPartition()
		op.Topic = t
		op.Partitions = slices.Sorted(slices.Values(s.Owned[t]))
		m.OwnedPartitions = append(m.OwnedPartitions, op)
	}
	return m.AppendTo(nil)
}

// DecodeSubscription decodes a ConsumerMemberMetadata of any version (owned
// partitions empty before v1, generation -1 before v2). A v1 subscription
// cut short before its owned partitions is read as v0: segmentio/kafka-go
// sends exactly that, and kgo and Sarama accept it the same way.
func DecodeSubscription(b []byte) (Subscription, error) {
	m := kmsg.NewConsumerMemberMetadata()
	if err := m.ReadFrom(b); err != nil {
		v0 := kmsg.NewConsumerMemberMetadata()
		if len(b) < 2 || b[0] != 0 || b[1] != 1 || v0.ReadFrom(append([]byte{0, 0}, b[2:]...)) != nil {
			return Subscription{}, fmt.Errorf("%w: subscription of %d bytes: %w", ErrMalformed, len(b), err)
		}
		m = v0
	}
	s := Subscription{Topics: m.Topics, Generation: m.Generation, UserData: m.UserData, Owned: Assignment{}}
	for _, op := range m.OwnedPartitions {
		s.Owned[op.Topic] = append(s.Owned[op.Topic], op.Partitions...)
	}
	return s, nil
}

// EncodeAssignment returns a as a ConsumerMemberAssignment, topics and
// partitions sorted.
func EncodeAssignment(a Assignment) []byte {
	m := kmsg.NewConsumerMemberAssignment()
	m.Version = assignmentVersion
	for _, t := range slices.Sorted(maps.Keys(a)) {
		if len(a[t]) == 0 {
			continue
		}
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic = t
		at.Partitions = slices.Sorted(slices.Values(a[t]))
		m.Topics = append(m.Topics, at)
	}
	return m.AppendTo(nil)
}

// DecodeAssignment decodes a ConsumerMemberAssignment. Empty bytes (what the
// coordinator gives a member the leader left out) decode to an empty
// assignment.
func DecodeAssignment(b []byte) (Assignment, error) {
	a := Assignment{}
	if len(b) == 0 {
		return a, nil
	}
	m := kmsg.NewConsumerMemberAssignment()
	if err := m.ReadFrom(b); err != nil {
		return nil, fmt.Errorf("%w: assignment of %d bytes: %w", ErrMalformed, len(b), err)
	}
	for _, t := range m.Topics {
		a[t.Topic] = append(a[t.Topic], t.Partitions...)
	}
	return a, nil
}

// sameSubscription reports whether two protocol metadata of a member mean
// the same subscription: for consumer groups the same set of topics (owned
// partitions and generation may differ — a restarted static member owns
// nothing yet); otherwise, or if either does not decode, the same bytes.
func sameSubscription(protocolType string, a, b []byte) bool {
	if protocolType == ProtocolType {
		sa, errA := DecodeSubscription(a)
		sb, errB := DecodeSubscription(b)
		if errA == nil && errB == nil {
			return slices.Equal(topicSet(sa.Topics), topicSet(sb.Topics))
		}
	}
	return bytes.Equal(a, b)
}

// topicSet returns topics sorted, without duplicates.
func topicSet(topics []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(topics)))
}
