// api.go holds what a consumer's user sees besides Config: the records it
// receives, the rebalance notifications, the control messages (Pause,
// Resume, Seek, Commit, Close) with their answers, and blocking helpers
// for code that is not an actor.
//
// Control messages are local (not protobuf): send them from the consumer's
// own actor system.

package consumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/storage/record"
)

// TopicPartition names one partition of one topic. It is a comparable value.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// String returns "topic-partition", as Kafka prints a TopicPartition.
func (tp TopicPartition) String() string { return tp.Topic + "-" + strconv.Itoa(int(tp.Partition)) }

// compareTP orders partitions by topic, then index.
func compareTP(a, b TopicPartition) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// sortTPs sorts tps in place and returns it.
func sortTPs(tps []TopicPartition) []TopicPartition {
	slices.SortFunc(tps, compareTP)
	return tps
}

// Message is one consumed record.
type Message struct {
	Topic     string
	Partition int32
	// LeaderEpoch is the leader epoch of the record's batch. (Next to
	// Partition: two int32s share a word, so a Message is 112 bytes, not
	// 120; decode allocates one per record fetched.)
	LeaderEpoch int32
	Offset      int64
	Timestamp   int64
	Key         []byte
	Value       []byte
	Headers     []record.RecordHeader
}

// Records is what a PID target receives: one partition's records in order.
// The target answers (any reply) when it has handled them; until then the
// partition is not fetched again and its position does not move past them.
type Records struct {
	Messages []Message
}

// Handler handles one partition's records in order, inside the consumer
// actor: while it runs, nothing more is fetched for that partition. The
// partition's position moves past the records when it returns.
type Handler func([]Message)

// Assigned reports a completed rebalance of a group consumer: the
// partitions it gained (possibly none) and all it owns now. It is passed
// to Config.OnAssigned and sent to a Target.
type Assigned struct {
	Partitions []TopicPartition
	Owned      []TopicPartition
	// MemberID and Generation are the member's in the generation that
	// gave the assignment.
	MemberID   string
	Generation int32
	// Consumer is the consumer actor (set in the message a Target gets),
	// for Commit, Pause and the like.
	Consumer *actor.PID
}

// Revoked reports partitions taken away from a group consumer: their
// handled positions are committed already (with auto-commit), nothing more
// of them is delivered. Lost is set when the membership was lost (the
// coordinator no longer knew the member or its generation): then nothing
// was committed and another member may already own them (Kafka's
// onPartitionsLost). Passed to Config.OnRevoked and sent to a Target.
type Revoked struct {
	Partitions []TopicPartition
	// Owned is what the member still owns.
	Owned      []TopicPartition
	Lost       bool
	Generation int32
	// Consumer is the consumer actor (set in the message a Target gets).
	Consumer *actor.PID
}

// Pause stops fetching the partitions (those the consumer does not own
// are ignored) until Resume; records fetched but not yet handed over are
// fetched again on Resume. A revoked partition forgets its pause.
type Pause struct{ Partitions []TopicPartition }

// Resume fetches paused partitions again.
type Resume struct{ Partitions []TopicPartition }

// Seek moves an owned partition's position (Kafka's seek): the next
// record delivered is at Offset, and the next commit commits Offset.
type Seek struct {
	Partition TopicPartition
	Offset    int64
}

// Commit asks the consumer to commit offsets to its group, with its member
// id and generation: Offsets if given, otherwise the positions of every
// owned partition past what it has committed. The sender (if any) gets a
// *CommitResult once the coordinator answered.
type Commit struct {
	Offsets []client.CommitOffset
}

// CommitResult answers Commit: the offsets committed (for a request-level
// error, the ones that were asked) and the error, nil when every one was
// committed. A refusal because the member's generation is stale
// (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID) also makes the consumer rejoin.
type CommitResult struct {
	Offsets []client.CommitOffset
	Err     error
}

// Close asks the consumer to finish: it stops fetching, waits for the
// records handed out to be handled, commits (with auto-commit), reports
// its partitions revoked and, unless static, leaves the group. The sender
// gets a *CloseResult; the caller then stops the actor.
type Close struct{}

// CloseResult answers Close; Err is the last commit's or leave's error.
type CloseResult struct{ Err error }

// ErrNotInGroup is a Commit's error while the consumer has no group
// generation to commit with (before its first rebalance completes, or
// after it lost its membership).
var ErrNotInGroup = errors.New("consumer: not a member of a group generation")

// ErrClosed is the answer to requests after Close.
var ErrClosed = errors.New("consumer: closed")

// CommitSync sends Commit (offsets, or nil for the current positions) to
// the consumer pid and waits for the result, at most timeout.
func CommitSync(root *actor.RootContext, pid *actor.PID, offsets []client.CommitOffset, timeout time.Duration) ([]client.CommitOffset, error) {
	res, err := root.RequestFuture(pid, &Commit{Offsets: offsets}, timeout).Result()
	if err != nil {
		return nil, fmt.Errorf("consumer: commit: %w", err)
	}
	r, ok := res.(*CommitResult)
	if !ok {
		return nil, fmt.Errorf("consumer: commit: unexpected answer %T", res)
	}
	return r.Offsets, r.Err
}

// CloseAndStop sends Close to the consumer pid, waits for its result
// (until ctx ends), then stops the actor and waits for it to stop. It
// returns the close's error.
func CloseAndStop(ctx context.Context, root *actor.RootContext, pid *actor.PID) error {
	timeout := time.Minute
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	var cerr error
	res, err := root.RequestFuture(pid, &Close{}, max(timeout, time.Millisecond)).Result()
	switch r, ok := res.(*CloseResult); {
	case err != nil:
		cerr = fmt.Errorf("consumer: close: %w", err)
	case !ok:
		cerr = fmt.Errorf("consumer: close: unexpected answer %T", res)
	default:
		cerr = r.Err
	}
	if err := root.StopFuture(pid).Wait(); err != nil && cerr == nil {
		cerr = fmt.Errorf("consumer: stop: %w", err)
	}
	return cerr
}
