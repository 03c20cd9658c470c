// state.go holds the group states of Kafka's classic protocol.

package group

import (
	"strconv"
	"strings"
)

// State is a group's place in the rebalance cycle. The transitions are
// Kafka's:
//
//	Empty ──join──▶ PreparingRebalance ──join phase ends──▶ CompletingRebalance
//	CompletingRebalance ──leader's SyncGroup──▶ Stable
//	Stable / CompletingRebalance ──join, leave, expiry──▶ PreparingRebalance
//	PreparingRebalance ──join phase ends with no member──▶ Empty
//	Empty ──Delete──▶ Dead;  any ──Unload──▶ Dead
type State int

const (
	// Empty: no members. Committed offsets may remain; a join starts a
	// rebalance after the initial rebalance delay.
	Empty State = iota
	// PreparingRebalance: the join phase. The coordinator waits until every
	// known member has rejoined or the rebalance timeout passes.
	PreparingRebalance
	// CompletingRebalance: the generation is chosen and the JoinGroup
	// responses are sent; the coordinator waits for the leader's SyncGroup.
	CompletingRebalance
	// Stable: every member has (or can fetch with SyncGroup) its assignment.
	Stable
	// Dead: the group was deleted or its coordinator unloaded it; it answers
	// COORDINATOR_NOT_AVAILABLE and the shell should forget it.
	Dead
)

// String returns Kafka's name for s ("PreparingRebalance"), as
// DescribeGroups and ListGroups report it.
func (s State) String() string {
	switch s {
	case Empty:
		return "Empty"
	case PreparingRebalance:
		return "PreparingRebalance"
	case CompletingRebalance:
		return "CompletingRebalance"
	case Stable:
		return "Stable"
	case Dead:
		return "Dead"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// ParseState returns the State named name (Kafka's names, case-insensitive
// as Kafka's ListGroups states filter), and false for an unknown name.
func ParseState(name string) (State, bool) {
	for s := Empty; s <= Dead; s++ {
		if strings.EqualFold(s.String(), name) {
			return s, true
		}
	}
	return 0, false
}
