// membership.go holds the seam between the coordinator's offset store and
// the group membership that decides which commits it takes: by default the
// coordinator's own groups (groups.go, over the actors/group core); AllowAll
// is a permissive stand-in for tests and tools.

package coordinator

import "github.com/actorlog/actorlog/messages"

// Membership is what the coordinator asks of the group membership core.
// One Membership serves every group of one coordinator (one offsets topic
// partition); the coordinator calls it only from its own goroutine, inside
// Receive, so implementations need no locking and must not block.
type Membership interface {
	// CanCommit decides whether an OffsetCommit from memberID (with
	// static instanceID, if any) of group at generation may be written.
	// It returns ERROR_CODE_UNSPECIFIED to accept, otherwise the code
	// (and a detail) the whole request is refused with: Kafka's
	// ILLEGAL_GENERATION for a stale generation, UNKNOWN_MEMBER_ID,
	// REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID. A generation of -1 with
	// an empty member id is a commit from outside group management (a
	// consumer assigning itself partitions), which Kafka accepts only
	// while the group has no members.
	CanCommit(group, memberID, instanceID string, generation int32) (messages.ErrorCode, string)
	// ReplayGroup hands over a group metadata record (Kafka's
	// GroupMetadataKey, key version 2) read from the partition while
	// loading, in log order: value is the record's value as written (nil:
	// a tombstone, the group was deleted), offset its offset in the log.
	// The value aliases a buffer the coordinator reuses: copy what must
	// be kept.
	ReplayGroup(group string, value []byte, offset int64)
	// Loaded is called once, when loading has replayed the whole
	// partition and the coordinator starts answering.
	Loaded()
}

// AllowAll is a permissive Membership: every commit is accepted, whatever
// its member and generation (so stale generations are NOT refused), and
// group metadata records are skipped. It makes the offset store usable on
// its own, without the group core's checks (tests).
type AllowAll struct{}

// CanCommit accepts every commit.
func (AllowAll) CanCommit(string, string, string, int32) (messages.ErrorCode, string) {
	return messages.ErrorCode_ERROR_CODE_UNSPECIFIED, ""
}

// ReplayGroup ignores group metadata.
func (AllowAll) ReplayGroup(string, []byte, int64) {}

// Loaded does nothing.
func (AllowAll) Loaded() {}
