// member_effects.go holds what the member core (member.go) returns:
// memberEffects, the actions the shell (group.go) carries out in order, and
// the requests it sends for the core; each action has a String form, for
// logs and for the table tests, which compare them.

package consumer

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/actors/group"
	"github.com/actorlog/actorlog/messages"
)

// groupRequest is a request for the shell to send to the coordinator
// (Coordinator); it hands the request back with the answer. The shell sets
// the correlation id and the member actor.
type groupRequest struct {
	Coordinator client.Coordinator
	// Msg is a *messages.JoinGroupRequest, SyncGroupRequest or
	// HeartbeatRequest.
	Msg   proto.Message
	epoch int
}

// assignLookup asks the shell for the partition counts of Topics, for the
// leader's assignment of Resp's members (OnAssignMetadata).
type assignLookup struct {
	Resp   *messages.JoinGroupResponse
	Topics []string
	epoch  int
}

// memberAction is one thing the shell must do: one of the member* types
// below.
type memberAction interface{ String() string }

// The actions.
type (
	// memberFind: look the coordinator up, then OnCoordinator.
	memberFind struct{}
	// memberForget: forget the coordinator in the client's cache.
	memberForget struct{ Coordinator client.Coordinator }
	// memberSend: send Request, then OnJoin, OnSync or OnHeartbeat with
	// its answer (or the failure to send it).
	memberSend struct{ Request groupRequest }
	// memberAssign: look up metadata, then OnAssignMetadata.
	memberAssign struct{ Lookup assignLookup }
	// memberStop: stop fetching Partitions (being revoked); once none of
	// them has records out, OnHandled.
	memberStop struct{ Partitions []TopicPartition }
	// memberCommit: commit the positions of Partitions (being revoked),
	// then OnRevocationCommitted whatever the outcome.
	memberCommit struct{ Partitions []TopicPartition }
	// memberRevoked: Revoked.Partitions are given up: forget them and
	// report Revoked.
	memberRevoked struct{ Revoked Revoked }
	// memberAssigned: Assigned.Partitions are gained: read them (from the
	// group's committed offsets) and report Assigned.
	memberAssigned struct{ Assigned Assigned }
	// memberError: report Err to OnError.
	memberError struct{ Err error }
)

// String forms of the actions, for logs and tests.

func (memberFind) String() string     { return "find coordinator" }
func (a memberForget) String() string { return "forget coordinator " + a.Coordinator.Address }
func (a memberAssign) String() string { return "assign " + strings.Join(a.Lookup.Topics, ",") }
func (a memberStop) String() string   { return fmt.Sprintf("stop %v", a.Partitions) }
func (a memberCommit) String() string { return fmt.Sprintf("commit %v", a.Partitions) }
func (a memberError) String() string  { return "error " + a.Err.Error() }
func (a memberAssigned) String() string {
	return fmt.Sprintf("assigned %v owned=%v generation=%d", a.Assigned.Partitions, a.Assigned.Owned, a.Assigned.Generation)
}

func (a memberRevoked) String() string {
	lost := ""
	if a.Revoked.Lost {
		lost = " lost"
	}
	return fmt.Sprintf("revoked %v%s owned=%v", a.Revoked.Partitions, lost, a.Revoked.Owned)
}

func (a memberSend) String() string {
	switch m := a.Request.Msg.(type) {
	case *messages.JoinGroupRequest:
		return fmt.Sprintf("join member=%q generation=%d owned=%d", m.MemberId, ownedGeneration(m), ownedCount(m))
	case *messages.SyncGroupRequest:
		return fmt.Sprintf("sync generation=%d assignments=%d", m.GenerationId, len(m.Assignments))
	case *messages.HeartbeatRequest:
		return fmt.Sprintf("heartbeat generation=%d", m.GenerationId)
	}
	return fmt.Sprintf("send %T", a.Request.Msg)
}

// ownedGeneration and ownedCount describe a JoinGroupRequest's
// subscription, for String.
func ownedGeneration(m *messages.JoinGroupRequest) int32 {
	if s, err := decodeFirstProtocol(m); err == nil {
		return s.Generation
	}
	return -1
}

func ownedCount(m *messages.JoinGroupRequest) int {
	if s, err := decodeFirstProtocol(m); err == nil {
		return s.Owned.Count()
	}
	return 0
}

// errNoProtocols: a JoinGroupRequest without protocols (String only).
var errNoProtocols = errors.New("consumer: join request without protocols")

// decodeFirstProtocol decodes the subscription of m's first protocol.
func decodeFirstProtocol(m *messages.JoinGroupRequest) (group.Subscription, error) {
	if len(m.Protocols) == 0 {
		return group.Subscription{}, errNoProtocols
	}
	s, err := group.DecodeSubscription(m.Protocols[0].GetMetadata())
	if err != nil {
		return s, fmt.Errorf("consumer: join request: %w", err)
	}
	return s, nil
}

// memberEffects is what an event asks the shell to do.
type memberEffects struct {
	// Actions to carry out, in order.
	Actions []memberAction
	// Wake is when the shell must call Tick next; zero when nothing is
	// timed. Calling Tick earlier is harmless.
	Wake time.Time
}
