// table.go holds OffsetTable, the coordinator's in-memory committed
// offsets, and replay, which rebuilds it from the records of the offsets
// topic partition. Both are pure: no I/O, no actors, no clock.

package coordinator

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/actorlog/actorlog/storage/record"
)

// TopicPartition names a partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Committed is a committed offset and where its record is in the offsets
// topic partition.
type Committed struct {
	OffsetValue
	// LogOffset is the offset of the record that committed it.
	LogOffset int64
}

// OffsetTable holds the committed offsets of the groups of one offsets
// topic partition. Not safe for concurrent use: the coordinator actor owns
// it.
//
// Invariant: each entry is the record with the largest log offset applied
// for its key since the key's last tombstone, so the table matches the
// log read in order even when writes are acknowledged out of order. (A
// record acknowledged after a later tombstone of its key would come back:
// whoever writes tombstones, i.e. group deletion and offset expiry, must
// have none of the group's commits in flight.)
type OffsetTable struct {
	groups map[string]map[TopicPartition]Committed
	n      int
}

// NewOffsetTable returns an empty table.
func NewOffsetTable() *OffsetTable {
	return &OffsetTable{groups: map[string]map[TopicPartition]Committed{}}
}

// Apply records the record at logOffset for k: the committed value v, or a
// tombstone (v nil) that deletes k. A value older in the log than the one
// the table holds for k is ignored. It reports whether the table changed.
func (t *OffsetTable) Apply(k OffsetKey, v *OffsetValue, logOffset int64) bool {
	tp := TopicPartition{k.Topic, k.Partition}
	g := t.groups[k.Group]
	old, had := g[tp]
	if had && logOffset < old.LogOffset {
		return false
	}
	if v == nil {
		if !had {
			return false
		}
		delete(g, tp)
		t.n--
		if len(g) == 0 {
			delete(t.groups, k.Group)
		}
		return true
	}
	if g == nil {
		g = map[TopicPartition]Committed{}
		t.groups[k.Group] = g
	}
	if !had {
		t.n++
	}
	g[tp] = Committed{OffsetValue: *v, LogOffset: logOffset}
	return true
}

// Get returns group's committed offset for tp, if any.
func (t *OffsetTable) Get(group string, tp TopicPartition) (Committed, bool) {
	c, ok := t.groups[group][tp]
	return c, ok
}

// Partitions returns the partitions group has committed offsets for,
// sorted by topic, then partition.
func (t *OffsetTable) Partitions(group string) []TopicPartition {
	g := t.groups[group]
	tps := make([]TopicPartition, 0, len(g))
	for tp := range g {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, compareTP)
	return tps
}

// compareTP orders partitions by topic, then index.
func compareTP(a, b TopicPartition) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// Groups returns the groups with committed offsets, sorted.
func (t *OffsetTable) Groups() []string {
	gs := make([]string, 0, len(t.groups))
	for g := range t.groups {
		gs = append(gs, g)
	}
	slices.Sort(gs)
	return gs
}

// Len is the number of committed offsets, over all groups.
func (t *OffsetTable) Len() int { return t.n }

// ReplayResult is what replay did with a fetch's batches.
type ReplayResult struct {
	// Next is the offset after the last whole batch replayed (from, when
	// there was none).
	Next int64
	// Records is how many records were applied.
	Records int
	// Skipped holds the records that could not be decoded (each error
	// names its offset); they are left out, not retried.
	Skipped []error
}

// replay applies, in log order, the records at or above from in batches
// (whole RecordBatch v2 batches, as a fetch returns them; the first may
// start below from): offset commits to table, group metadata to m. Control
// batches are skipped. A malformed record is reported in Skipped and left
// out, so one bad record cannot keep a coordinator loading forever; a
// batch that cannot be read at all (bad frame or CRC) is an error, and
// Next then says how far replay got.
func replay(batches []byte, from int64, table *OffsetTable, m Membership) (ReplayResult, error) {
	res := ReplayResult{Next: from}
	s := record.Batches(batches)
	for s.Next() {
		h := s.Header()
		if h.NextOffset() <= from {
			continue
		}
		if !h.Control() {
			recs, err := record.Records(s.Batch(), maxBatchInflation)
			if err != nil {
				return res, fmt.Errorf("coordinator: batch at offset %d: %w", h.BaseOffset, err)
			}
			for _, r := range recs {
				if r.Offset < from {
					continue
				}
				if err := apply(r, table, m); err != nil {
					res.Skipped = append(res.Skipped, fmt.Errorf("offset %d: %w", r.Offset, err))
					continue
				}
				res.Records++
			}
		}
		res.Next = h.NextOffset()
	}
	if err := s.Err(); err != nil {
		return res, fmt.Errorf("coordinator: reading batches from offset %d: %w", res.Next, err)
	}
	return res, nil
}

// maxBatchInflation bounds a compressed batch's records when replaying.
const maxBatchInflation = 64 << 20

// apply applies one record of the offsets topic.
func apply(r record.Record, table *OffsetTable, m Membership) error {
	d, err := DecodeRecord(r.Key, r.Value)
	if err != nil {
		return err
	}
	switch d.Kind {
	case KindOffsetCommit:
		table.Apply(d.Key, d.Value, r.Offset)
	case KindGroupMetadata:
		m.ReplayGroup(d.Group, d.GroupValue, r.Offset)
	}
	return nil
}
