// groups.go holds the coordinator's groups: one group.Group (the pure
// membership core of actors/group) per group id hosted by this offsets
// topic partition, with the bookkeeping the shell needs around it (what was
// last persisted, the group's offset commits in flight). groupSet is the
// coordinator's default Membership: it checks offset commits against the
// groups' members and generations (group.Group.CanCommit) and rebuilds the
// groups from the group metadata records replayed while loading
// (group.Restore).
//
// A group exists here once a member joins it, a commit from outside group
// management (generation -1) creates it Empty, its metadata is replayed,
// or it has committed offsets when loading ends. A group that never had a
// generation, holds no offsets and waits for nothing is forgotten again.

package coordinator

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/group"
	"github.com/actorlog/actorlog/messages"
)

// groupEntry is one group and the shell's state around it.
type groupEntry struct {
	g *group.Group
	// persisted is the durable state last written to (or restored from)
	// the partition; persistedOK is false when the last write failed, so
	// the log's state is unknown and the next durable state is written
	// again.
	persisted   signature
	persistedOK bool
	// commits counts the group's offset commits waiting for the replica;
	// afterCommits run when it drops to zero (a deletion waits for them,
	// so no commit lands after its tombstones).
	commits      int
	afterCommits []func()
	// deleting is set from DeleteGroups until its tombstones are written.
	deleting bool
	// expiring is set while the tombstones of expired offsets are being
	// written (expire.go).
	expiring bool
	// actors maps member ids to the member actors their last JoinGroup,
	// SyncGroup or Heartbeat named (member_actor), where RebalanceStarted
	// hints go; only current members (carryOut forgets the others).
	actors map[string]*actor.PID
}

// signature sums up a group's durable state: a change means new group
// metadata to write (a completed rebalance, a static member's new member
// id, the group emptying).
type signature struct {
	state      group.State
	generation int32
	leader     string
	members    string
}

func signatureOf(g *group.Group) signature {
	return signature{state: g.State(), generation: g.Generation(), leader: g.Leader(), members: strings.Join(g.Members(), "\x00")}
}

// groupSet is the groups of one coordinator. Owned by the coordinator's
// goroutine, like the rest of its state.
type groupSet struct {
	cfg    group.Config
	now    func() time.Time
	logger *logrus.Entry
	groups map[string]*groupEntry
	// replayed holds, while loading, the last group metadata value read
	// for each group (a tombstone removes the group).
	replayed map[string][]byte
}

func newGroupSet(cfg group.Config, now func() time.Time, logger *logrus.Entry) *groupSet {
	return &groupSet{cfg: cfg, now: now, logger: logger, groups: map[string]*groupEntry{}, replayed: map[string][]byte{}}
}

// get returns group id's entry, nil if there is none.
func (s *groupSet) get(id string) *groupEntry { return s.groups[id] }

// create adds an Empty group id (which must not exist).
func (s *groupSet) create(id string) (*groupEntry, error) {
	g, err := group.NewGroup(id, s.cfg)
	if err != nil {
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	return s.add(g), nil
}

// add makes g a group of the set, its current state counted as persisted.
func (s *groupSet) add(g *group.Group) *groupEntry {
	e := &groupEntry{g: g, persisted: signatureOf(g), persistedOK: true}
	s.groups[g.ID()] = e
	return e
}

// ids returns the group ids, sorted.
func (s *groupSet) ids() []string {
	ids := make([]string, 0, len(s.groups))
	for id := range s.groups {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// nextWake is the earliest wake of any group, zero when none is timed.
func (s *groupSet) nextWake() time.Time {
	var wake time.Time
	for _, e := range s.groups {
		if w := e.g.NextWake(); !w.IsZero() && (wake.IsZero() || w.Before(wake)) {
			wake = w
		}
	}
	return wake
}

// needsPersist reports whether e is in a durable state that differs from
// the one last written.
func (e *groupEntry) needsPersist() bool {
	return !e.deleting && e.g.Durable() && (!e.persistedOK || signatureOf(e.g) != e.persisted)
}

// CanCommit implements Membership with the group's own check
// (group.Group.CanCommit): a commit for a group this coordinator does not
// have creates it Empty when it comes from outside group management
// (generation < 0, no member id), as Kafka's simple consumers; otherwise
// the member is unknown.
func (s *groupSet) CanCommit(id, memberID, instanceID string, generation int32) (messages.ErrorCode, string) {
	e := s.groups[id]
	if e == nil {
		if generation >= 0 || memberID != "" || instanceID != "" {
			return messages.ErrorCode_ERROR_CODE_UNKNOWN_MEMBER_ID, fmt.Sprintf("group %q has no members here; join it first", id)
		}
		var err error
		if e, err = s.create(id); err != nil {
			return messages.ErrorCode_ERROR_CODE_INVALID_GROUP_ID, err.Error()
		}
	}
	return e.g.CanCommit(s.now(), memberID, instanceID, generation)
}

// ReplayGroup implements Membership: it keeps the group's last metadata
// value (a copy) until loading ends.
func (s *groupSet) ReplayGroup(id string, value []byte, _ int64) {
	if value == nil {
		delete(s.replayed, id)
		return
	}
	s.replayed[id] = slices.Clone(value)
}

// Loaded implements Membership: it restores every group whose last
// metadata record is not a tombstone, as of now. A record that does not
// decode or restore is logged and skipped (the group starts Empty if it
// has offsets: its members rejoin).
func (s *groupSet) Loaded() {
	now := s.now()
	for id, value := range s.replayed {
		log := s.logger.WithField("group", id)
		snap, err := DecodeGroupMetadata(value)
		if err != nil {
			log.WithError(err).Warn("skipping group metadata that cannot be decoded")
			continue
		}
		g, err := group.Restore(id, s.cfg, snap, now)
		if err != nil {
			log.WithError(err).Warn("skipping group metadata that cannot be restored")
			continue
		}
		s.add(g)
		log.WithFields(logrus.Fields{"state": g.State(), "generation": g.Generation(), "members": len(g.Members())}).Debug("group restored")
	}
	s.replayed = nil
}

// adopt adds an Empty group for each of ids that has none (the groups with
// committed offsets but no metadata: simple consumers).
func (s *groupSet) adopt(ids []string) {
	for _, id := range ids {
		if s.groups[id] != nil {
			continue
		}
		if _, err := s.create(id); err != nil {
			s.logger.WithError(err).WithField("group", id).Warn("cannot host a group with committed offsets")
		}
	}
}
