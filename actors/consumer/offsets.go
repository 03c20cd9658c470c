// offsets.go holds offsetBook, the consumer's position and commit
// bookkeeping for at-least-once delivery, as a plain value with no I/O
// (the actor feeds it and acts on what it returns).
//
// A partition's position is the next offset to process: it moves past
// records only once they were handled (the Handler returned, or the
// Target answered), so a commit of positions never covers a record that
// was not processed. committed is the last offset the coordinator is known
// to hold for the group. A commit takes the positions that moved past
// committed (pending); its answer records what was committed (done).

package consumer

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/messages"
)

// bookEntry is one partition's offsets.
type bookEntry struct {
	// position is the next offset to process, -1 until known.
	position int64
	// epoch is the leader epoch of the last processed record, -1 when
	// unknown.
	epoch int32
	// committed is the offset known committed, -1 when none.
	committed int64
}

// offsetBook holds the offsets of the partitions a consumer owns.
// Invariant: an entry's position never moves backwards except by seek.
type offsetBook struct {
	entries map[TopicPartition]*bookEntry
}

func newOffsetBook() *offsetBook { return &offsetBook{entries: map[TopicPartition]*bookEntry{}} }

// add starts tracking tp (position unknown, nothing committed); a tracked
// tp is left as it is.
func (b *offsetBook) add(tp TopicPartition) {
	if b.entries[tp] == nil {
		b.entries[tp] = &bookEntry{position: -1, epoch: -1, committed: -1}
	}
}

// remove stops tracking tp.
func (b *offsetBook) remove(tp TopicPartition) { delete(b.entries, tp) }

// has reports whether tp is tracked.
func (b *offsetBook) has(tp TopicPartition) bool { return b.entries[tp] != nil }

// position returns tp's position, -1 when unknown or untracked.
func (b *offsetBook) position(tp TopicPartition) int64 {
	if e := b.entries[tp]; e != nil {
		return e.position
	}
	return -1
}

// committed returns tp's committed offset, -1 when none or untracked.
func (b *offsetBook) committed(tp TopicPartition) int64 {
	if e := b.entries[tp]; e != nil {
		return e.committed
	}
	return -1
}

// seek sets tp's position (a start offset, a committed offset, a reset
// after OFFSET_OUT_OF_RANGE, or the user's Seek).
func (b *offsetBook) seek(tp TopicPartition, offset int64) {
	if e := b.entries[tp]; e != nil {
		e.position = offset
		e.epoch = -1
	}
}

// processed records that the records of tp before next were handled, the
// last in leader epoch epoch. A position already past next (a seek while
// the records were out) is kept.
func (b *offsetBook) processed(tp TopicPartition, next int64, epoch int32) {
	if e := b.entries[tp]; e != nil && next > e.position {
		e.position, e.epoch = next, epoch
	}
}

// setCommitted records offset as committed for tp (from FetchOffsets).
func (b *offsetBook) setCommitted(tp TopicPartition, offset int64) {
	if e := b.entries[tp]; e != nil {
		e.committed = offset
	}
}

// pending returns the commits that would bring the coordinator up to date:
// every tracked partition (of only, if given) whose known position differs
// from its committed offset, sorted.
func (b *offsetBook) pending(only ...TopicPartition) []client.CommitOffset {
	var out []client.CommitOffset
	for _, tp := range slices.SortedFunc(maps.Keys(b.entries), compareTP) {
		e := b.entries[tp]
		if e.position < 0 || e.position == e.committed || (len(only) > 0 && !slices.Contains(only, tp)) {
			continue
		}
		out = append(out, client.CommitOffset{Topic: tp.Topic, Partition: tp.Partition, Offset: e.position, LeaderEpoch: e.epoch})
	}
	return out
}

// done records the answer to a commit of offsets: results (one per
// partition, in request order; nil when the request failed as a whole)
// and the request's error. It returns the offsets committed and the
// partitions' errors joined (nil when all were committed).
func (b *offsetBook) done(offsets []client.CommitOffset, results []*messages.PartitionResult, reqErr error) ([]client.CommitOffset, error) {
	if reqErr != nil {
		return nil, reqErr
	}
	var ok []client.CommitOffset
	var errs []error
	for i, o := range offsets {
		if i < len(results) {
			if err := results[i].GetErrorCode().Err(results[i].GetErrorMessage()); err != nil {
				errs = append(errs, fmt.Errorf("%s-%d: %w", o.Topic, o.Partition, err))
				continue
			}
		}
		ok = append(ok, o)
		b.setCommitted(TopicPartition{o.Topic, o.Partition}, o.Offset)
	}
	if len(errs) > 0 {
		return ok, fmt.Errorf("consumer: commit: %w", errors.Join(errs...))
	}
	return ok, nil
}
