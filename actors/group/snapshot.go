// snapshot.go holds a group's durable state: Snapshot, what the coordinator
// writes to the offsets topic after each completed rebalance and when the
// group becomes empty (Kafka's GroupMetadataValue), and Restore, which
// rebuilds a group from it when a new coordinator loads the partition after
// a failover (Kafka's GroupMetadataManager.loadGroup), so members keep their
// member ids, generation and assignments.

package group

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/actorlog/actorlog/messages"
)

// ErrInvalidSnapshot is returned (wrapped, with what is wrong) by Restore.
var ErrInvalidSnapshot = errors.New("group: invalid snapshot")

// MemberSnapshot is one member of a Snapshot (Kafka's
// GroupMetadataValue member).
type MemberSnapshot struct {
	ID, InstanceID       string
	ClientID, ClientHost string
	SessionTimeout       time.Duration
	RebalanceTimeout     time.Duration
	// Metadata is the member's protocol metadata for the group's protocol
	// (its subscription).
	Metadata []byte
	// Assignment is the member's share of the generation (empty if the
	// leader gave it none).
	Assignment []byte
}

// Snapshot is the durable state of a group: its generation and, when it is
// Stable, its protocol, leader and members with their assignments. An
// Empty group's snapshot has no protocol, leader nor members.
type Snapshot struct {
	ProtocolType string
	Generation   int32
	// ProtocolName is the generation's protocol, "" when there are no
	// members.
	ProtocolName string
	// Leader is the leader's member id, "" when there are no members.
	Leader string
	// Members in the order they joined.
	Members []MemberSnapshot
	// EmptySince is, for a group without members, when it became Empty
	// (Kafka's current_state_timestamp), from which its offsets expire;
	// zero when unknown (its offsets then expire from their commit
	// timestamps) and for a group with members.
	EmptySince time.Time
}

// Durable reports whether the group is in a state its Snapshot describes
// fully: Stable (a generation with its assignments) or Empty. During a
// rebalance there is nothing new to persist (Kafka writes group metadata
// when SyncGroup completes a generation and when a group empties).
func (g *Group) Durable() bool { return g.state == Stable || g.state == Empty }

// Snapshot returns the group's durable state (see Durable for when it is
// complete). The byte slices are copies.
func (g *Group) Snapshot() Snapshot {
	s := Snapshot{ProtocolType: g.protocolType, Generation: g.generation}
	if len(g.order) == 0 {
		if g.state == Empty {
			s.EmptySince = g.emptySince
		}
		return s
	}
	s.ProtocolName, s.Leader = g.protocolName, g.leader
	for _, m := range g.order {
		s.Members = append(s.Members, MemberSnapshot{
			ID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost,
			SessionTimeout: m.sessionTimeout, RebalanceTimeout: m.rebalanceTimeout,
			Metadata: slices.Clone(m.metadata(g.protocolName)), Assignment: slices.Clone(m.assignment),
		})
	}
	return s
}

// Restore returns group id (cfg validated, as NewGroup) in the state s
// describes, as a new coordinator finds it at now: Empty with s's
// generation (and s.EmptySince, so its offsets expire as they would have
// at the old coordinator) when s has no members; otherwise Stable, every member
// supporting only the generation's protocol (with its snapshot metadata)
// and holding its assignment, its session timer started at now (Kafka's
// loadGroup). Members then heartbeat and commit with their generation as
// before; a dynamic member that rejoins starts a rebalance (its protocols
// differ from the one restored), a static one that rejoins with the same
// subscription gets its assignment back without one.
//
// The error wraps ErrInvalidSnapshot (a member without an id, a duplicate
// member or instance id, members without a protocol, a negative
// generation, a leader that is not a member) or the NewGroup error.
func Restore(id string, cfg Config, s Snapshot, now time.Time) (*Group, error) {
	g, err := NewGroup(id, cfg)
	if err != nil {
		return nil, err
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("group: restore %q: %w", id, err)
	}
	g.protocolType, g.generation = s.ProtocolType, s.Generation
	if len(s.Members) == 0 {
		g.emptySince = s.EmptySince
		return g, nil
	}
	g.protocolName = s.ProtocolName
	for _, ms := range s.Members {
		m := &member{
			id: ms.ID, instanceID: ms.InstanceID, clientID: ms.ClientID, clientHost: ms.ClientHost,
			protocolType: s.ProtocolType, sessionTimeout: ms.SessionTimeout, rebalanceTimeout: ms.RebalanceTimeout,
			protocols:  []*messages.JoinGroupRequestProtocol{{Name: s.ProtocolName, Metadata: slices.Clone(ms.Metadata)}},
			assignment: slices.Clone(ms.Assignment),
		}
		if m.assignment == nil {
			m.assignment = []byte{}
		}
		if m.rebalanceTimeout <= 0 {
			m.rebalanceTimeout = m.sessionTimeout
		}
		g.add(m)
		g.heartbeat(m, now)
	}
	g.leader = s.Leader
	g.state = Stable
	return g, nil
}

// validate checks the invariants Restore relies on.
func (s Snapshot) validate() error {
	if s.Generation < 0 {
		return fmt.Errorf("%w: generation %d", ErrInvalidSnapshot, s.Generation)
	}
	if len(s.Members) == 0 {
		return nil
	}
	if s.ProtocolName == "" || s.ProtocolType == "" {
		return fmt.Errorf("%w: %d members but protocol type %q, protocol %q", ErrInvalidSnapshot, len(s.Members), s.ProtocolType, s.ProtocolName)
	}
	ids, instances := map[string]bool{}, map[string]bool{}
	for _, m := range s.Members {
		switch {
		case m.ID == "":
			return fmt.Errorf("%w: a member without an id", ErrInvalidSnapshot)
		case ids[m.ID]:
			return fmt.Errorf("%w: member %q twice", ErrInvalidSnapshot, m.ID)
		case m.InstanceID != "" && instances[m.InstanceID]:
			return fmt.Errorf("%w: group instance id %q twice", ErrInvalidSnapshot, m.InstanceID)
		case m.SessionTimeout <= 0:
			return fmt.Errorf("%w: member %q has session timeout %v", ErrInvalidSnapshot, m.ID, m.SessionTimeout)
		}
		ids[m.ID] = true
		if m.InstanceID != "" {
			instances[m.InstanceID] = true
		}
	}
	if !ids[s.Leader] {
		return fmt.Errorf("%w: leader %q is not a member", ErrInvalidSnapshot, s.Leader)
	}
	return nil
}
