// producerstate.go: the idempotent producers' state of one partition (Kafka's
// ProducerStateManager and ProducerAppendInfo, without transactions): for
// every producer id, its epoch and the sequence and offset ranges of its last
// few batches, so the leader can recognise a retried batch as a duplicate and
// refuse one that skips or reorders sequences or comes from a fenced epoch.
//
// This file is pure: no I/O, no clock, no locking. The Log owns one
// producerState under its writer mutex, checks leader appends with check,
// records every appended batch with update (leader appends, replicated
// appends and recovery replay alike), persists it with encodeSnapshot (see
// snapshot.go) and expires idle producers with expire.
//
// Sequence rules, as Kafka's for a batch of a known producer (ProducerID >= 0):
//
//	epoch <  entry's         ErrInvalidProducerEpoch (a fenced producer)
//	epoch >  entry's         first sequence must be 0, else ErrOutOfOrderSequence
//	epoch == entry's         (first, last) sequence equal to one of the last
//	                         ProducerBatchesRetained batches: a duplicate; else the
//	                         first sequence must follow the entry's last, else
//	                         ErrOutOfOrderSequence
//	unknown producer id      any sequence (KIP-360: its state may have expired)
//
// Sequences are per record: a batch holds sequences first..first+lastOffsetDelta,
// wrapping from math.MaxInt32 to 0. Control batches (transaction markers)
// carry no sequence: only their epoch is checked and recorded.

package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"

	"github.com/actorlog/actorlog/storage/record"
)

var (
	// ErrInvalidProducerEpoch means a batch came from an older epoch of its
	// producer id than the log has seen: the producer was fenced (Kafka's
	// INVALID_PRODUCER_EPOCH).
	ErrInvalidProducerEpoch = errors.New("storage: producer epoch is older than the current one")
	// ErrOutOfOrderSequence means a batch's sequence does not follow its
	// producer's last one (Kafka's OUT_OF_ORDER_SEQUENCE_NUMBER): a batch
	// in between was lost, or this one is an old retry no longer cached.
	ErrOutOfOrderSequence = errors.New("storage: out of order sequence number")
)

// ProducerBatchesRetained is how many recent batches per producer are kept
// for duplicate detection, and so the most batches of one partition an
// idempotent producer may have in flight: a retry of any of them must still
// be recognised. Kafka keeps 5, its idempotent producer's
// max.in.flight.requests.per.connection, where one request carries a batch
// for every partition of the broker; actorlog's producer sends each batch
// to its partition's leader as a request of its own, so it counts batches
// in flight per partition, and with 5 a run of small batches waits on the
// round trip (issue 15). The ring grows as a producer's batches arrive, so
// a producer that sent few batches costs no more than before.
const ProducerBatchesRetained = 16

// BatchMetadata is what the producer state remembers of one batch.
type BatchMetadata struct {
	FirstSeq    int32 // the batch's base sequence
	LastSeq     int32 // FirstSeq + last offset delta, wrapped past math.MaxInt32
	FirstOffset int64
	LastOffset  int64
	Timestamp   int64 // the batch's max timestamp (its log append time under LogAppendTime)
}

// ProducerEntry is a copy of the state of one producer id.
type ProducerEntry struct {
	ProducerID int64
	Epoch      int16
	// Batches are the producer's last data batches of this epoch, oldest
	// first, at most ProducerBatchesRetained.
	Batches []BatchMetadata
	// LastTimestamp is the max timestamp of the producer's last batch (or,
	// for a batch without timestamps, the wall-clock time it was appended
	// or replayed on open); the producer expires ProducerIDExpiration after
	// it.
	LastTimestamp int64
	// LastOffset is the last offset of the producer's last batch, data or
	// control.
	LastOffset int64
}

// producerEntry is the mutable state of one producer id. Its batches are a
// ring that grows to ProducerBatchesRetained as batches arrive (head stays 0
// until it is full), so recording a batch of a producer that already sent
// that many allocates nothing.
type producerEntry struct {
	epoch         int16
	head          uint8           // batches[head] is the oldest
	batches       []BatchMetadata // at most ProducerBatchesRetained
	lastTimestamp int64
	lastOffset    int64
}

// batch returns the i-th retained batch, oldest first.
func (e *producerEntry) batch(i int) *BatchMetadata {
	return &e.batches[(int(e.head)+i)%len(e.batches)]
}

// lastSeq is the last sequence of the newest batch, -1 when none is kept
// (so that 0 follows it).
func (e *producerEntry) lastSeq() int32 {
	if len(e.batches) == 0 {
		return -1
	}
	return e.batch(len(e.batches) - 1).LastSeq
}

func (e *producerEntry) addBatch(m BatchMetadata) {
	if len(e.batches) < ProducerBatchesRetained {
		e.batches = append(e.batches, m) // head is 0 until the ring is full
		return
	}
	e.batches[e.head] = m
	e.head = (e.head + 1) % ProducerBatchesRetained
}

func (e *producerEntry) export(pid int64) ProducerEntry {
	out := ProducerEntry{ProducerID: pid, Epoch: e.epoch, LastTimestamp: e.lastTimestamp, LastOffset: e.lastOffset}
	for i := range e.batches {
		out.Batches = append(out.Batches, *e.batch(i))
	}
	return out
}

// producerState maps producer ids to their state. The zero value is not
// usable; call newProducerState.
type producerState struct {
	producers map[int64]*producerEntry
}

func newProducerState() *producerState {
	return &producerState{producers: make(map[int64]*producerEntry)}
}

// lastSequence is the sequence of the last record of a batch whose first is
// base, wrapping past math.MaxInt32 to 0 (Kafka's
// DefaultRecordBatch.incrementSequence).
func lastSequence(base, lastOffsetDelta int32) int32 {
	if base > math.MaxInt32-lastOffsetDelta {
		return lastOffsetDelta - (math.MaxInt32 - base) - 1
	}
	return base + lastOffsetDelta
}

// inSequence reports whether next directly follows last.
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == math.MaxInt32)
}

// check validates a leader append of the batch with header h against the
// producer's state. It returns the original batch's metadata and true when
// h is a retry of one of the producer's retained batches, an error wrapping
// ErrInvalidProducerEpoch or ErrOutOfOrderSequence when it must be refused,
// and nothing when it may be appended. Batches without a producer id always
// pass. check changes nothing.
func (ps *producerState) check(h *record.Header) (BatchMetadata, bool, error) {
	if h.ProducerID < 0 {
		return BatchMetadata{}, false, nil
	}
	if h.ProducerEpoch < 0 || (!h.Control() && h.BaseSequence < 0) {
		return BatchMetadata{}, false, fmt.Errorf("%w: producer %d has epoch %d and base sequence %d",
			ErrInvalidBatch, h.ProducerID, h.ProducerEpoch, h.BaseSequence)
	}
	e := ps.producers[h.ProducerID]
	if e == nil {
		return BatchMetadata{}, false, nil
	}
	if h.ProducerEpoch < e.epoch {
		return BatchMetadata{}, false, fmt.Errorf("%w: producer %d sent epoch %d, current epoch is %d",
			ErrInvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, e.epoch)
	}
	if h.Control() {
		return BatchMetadata{}, false, nil
	}
	first, last := h.BaseSequence, lastSequence(h.BaseSequence, h.LastOffsetDelta)
	if h.ProducerEpoch > e.epoch {
		if first != 0 {
			return BatchMetadata{}, false, fmt.Errorf("%w: producer %d starts epoch %d at sequence %d, want 0",
				ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, first)
		}
		return BatchMetadata{}, false, nil
	}
	for i := range e.batches {
		if b := e.batch(i); b.FirstSeq == first && b.LastSeq == last {
			return *b, true, nil
		}
	}
	if !inSequence(e.lastSeq(), first) {
		return BatchMetadata{}, false, fmt.Errorf("%w: producer %d epoch %d sent sequences %d..%d, expected %d next",
			ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, first, last, lastSequence(e.lastSeq(), 1))
	}
	return BatchMetadata{}, false, nil
}

// update records a batch that is now in the log (h holds its final offsets),
// without checking it: followers and recovery trust what the leader wrote.
// ts is the batch's last timestamp (its max timestamp, or the wall-clock
// time when it has none). A batch of a newer epoch replaces the retained
// batches of the older one. Batches without a producer id are ignored.
func (ps *producerState) update(h *record.Header, ts int64) {
	if h.ProducerID < 0 {
		return
	}
	e := ps.producers[h.ProducerID]
	if e == nil {
		e = &producerEntry{epoch: h.ProducerEpoch}
		ps.producers[h.ProducerID] = e
	}
	if h.ProducerEpoch != e.epoch {
		// A newer epoch starts over; an older one only reaches here from a
		// leader that accepted it, so follow the log.
		e.epoch, e.head, e.batches = h.ProducerEpoch, 0, e.batches[:0]
	}
	e.lastTimestamp, e.lastOffset = ts, h.LastOffset()
	if h.Control() {
		return
	}
	e.addBatch(BatchMetadata{
		FirstSeq:    h.BaseSequence,
		LastSeq:     lastSequence(h.BaseSequence, h.LastOffsetDelta),
		FirstOffset: h.BaseOffset,
		LastOffset:  h.LastOffset(),
		Timestamp:   h.MaxTimestamp,
	})
}

// expire drops the producers whose last timestamp is at or before cutoff
// (now minus the expiration) and returns how many it dropped.
func (ps *producerState) expire(cutoff int64) int {
	n := 0
	for pid, e := range ps.producers {
		if e.lastTimestamp <= cutoff {
			delete(ps.producers, pid)
			n++
		}
	}
	return n
}

// reaches reports whether some producer's last batch ends at or above
// offset, so that truncating the log to offset changes the state.
func (ps *producerState) reaches(offset int64) bool {
	for _, e := range ps.producers {
		if e.lastOffset >= offset {
			return true
		}
	}
	return false
}

// get returns a copy of the state of pid.
func (ps *producerState) get(pid int64) (ProducerEntry, bool) {
	e := ps.producers[pid]
	if e == nil {
		return ProducerEntry{}, false
	}
	return e.export(pid), true
}

// Snapshot encoding, version 2, big-endian (version 1, written when 5
// batches were retained, has the same layout and is still read):
//
//	0   2  version (2)
//	2   4  CRC32C of every byte after this field
//	6   8  log offset the state covers (the file name's offset)
//	14  4  producer count
//	18  .. producers, ascending by id, each:
//	       8 producer id, 2 epoch, 8 last timestamp, 8 last offset,
//	       1 batch count (<= ProducerBatchesRetained), then per batch (oldest first):
//	       4 first seq, 4 last seq, 8 first offset, 8 last offset, 8 timestamp
const (
	snapshotVersion       = 2
	snapshotVersion1      = 1 // same layout, at most 5 batches per producer
	snapshotHeaderSize    = 18
	snapshotProducerSize  = 27
	snapshotBatchMetaSize = 32
)

// encodeSnapshot serializes the state as covering the log up to offset.
func (ps *producerState) encodeSnapshot(offset int64) []byte {
	pids := make([]int64, 0, len(ps.producers))
	size := snapshotHeaderSize
	for pid, e := range ps.producers {
		pids = append(pids, pid)
		size += snapshotProducerSize + len(e.batches)*snapshotBatchMetaSize
	}
	slices.Sort(pids)
	be := binary.BigEndian
	buf := make([]byte, 6, size)
	be.PutUint16(buf, snapshotVersion)
	buf = be.AppendUint64(buf, uint64(offset))
	buf = be.AppendUint32(buf, uint32(len(pids)))
	for _, pid := range pids {
		e := ps.producers[pid]
		buf = be.AppendUint64(buf, uint64(pid))
		buf = be.AppendUint16(buf, uint16(e.epoch))
		buf = be.AppendUint64(buf, uint64(e.lastTimestamp))
		buf = be.AppendUint64(buf, uint64(e.lastOffset))
		buf = append(buf, byte(len(e.batches)))
		for i := range e.batches {
			b := e.batch(i)
			buf = be.AppendUint32(buf, uint32(b.FirstSeq))
			buf = be.AppendUint32(buf, uint32(b.LastSeq))
			buf = be.AppendUint64(buf, uint64(b.FirstOffset))
			buf = be.AppendUint64(buf, uint64(b.LastOffset))
			buf = be.AppendUint64(buf, uint64(b.Timestamp))
		}
	}
	be.PutUint32(buf[2:], crc32.Checksum(buf[6:], castagnoli))
	return buf
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errCorruptSnapshot wraps every reason a snapshot is refused.
var errCorruptSnapshot = errors.New("storage: corrupt producer state snapshot")

// decodeSnapshot parses a snapshot that must cover the log up to offset.
// Every batch it holds must lie below offset.
func decodeSnapshot(data []byte, offset int64) (*producerState, error) {
	be := binary.BigEndian
	if len(data) < snapshotHeaderSize {
		return nil, fmt.Errorf("%w: %d bytes", errCorruptSnapshot, len(data))
	}
	if v := be.Uint16(data); v != snapshotVersion && v != snapshotVersion1 {
		return nil, fmt.Errorf("%w: unknown version %d", errCorruptSnapshot, v)
	}
	if stored, got := be.Uint32(data[2:]), crc32.Checksum(data[6:], castagnoli); stored != got {
		return nil, fmt.Errorf("%w: CRC stored %08x, computed %08x", errCorruptSnapshot, stored, got)
	}
	if off := int64(be.Uint64(data[6:])); off != offset {
		return nil, fmt.Errorf("%w: covers offset %d, file name says %d", errCorruptSnapshot, off, offset)
	}
	count := be.Uint32(data[14:])
	if uint64(count)*snapshotProducerSize > uint64(len(data)-snapshotHeaderSize) {
		return nil, fmt.Errorf("%w: %d producers cannot fit in %d bytes", errCorruptSnapshot, count, len(data))
	}
	ps := &producerState{producers: make(map[int64]*producerEntry, count)}
	rest := data[snapshotHeaderSize:]
	for i := uint32(0); i < count; i++ {
		if len(rest) < snapshotProducerSize {
			return nil, fmt.Errorf("%w: producer %d truncated", errCorruptSnapshot, i)
		}
		pid := int64(be.Uint64(rest))
		e := &producerEntry{
			epoch:         int16(be.Uint16(rest[8:])),
			lastTimestamp: int64(be.Uint64(rest[10:])),
			lastOffset:    int64(be.Uint64(rest[18:])),
		}
		n := int(rest[26])
		rest = rest[snapshotProducerSize:]
		if pid < 0 || n > ProducerBatchesRetained || len(rest) < n*snapshotBatchMetaSize || e.lastOffset >= offset {
			return nil, fmt.Errorf("%w: producer %d (id %d, %d batches, last offset %d) is invalid", errCorruptSnapshot, i, pid, n, e.lastOffset)
		}
		if ps.producers[pid] != nil {
			return nil, fmt.Errorf("%w: producer id %d twice", errCorruptSnapshot, pid)
		}
		e.batches = make([]BatchMetadata, n)
		for j := range n {
			e.batches[j] = BatchMetadata{
				FirstSeq:    int32(be.Uint32(rest)),
				LastSeq:     int32(be.Uint32(rest[4:])),
				FirstOffset: int64(be.Uint64(rest[8:])),
				LastOffset:  int64(be.Uint64(rest[16:])),
				Timestamp:   int64(be.Uint64(rest[24:])),
			}
			rest = rest[snapshotBatchMetaSize:]
			if b := e.batches[j]; b.FirstOffset > b.LastOffset || b.LastOffset > e.lastOffset {
				return nil, fmt.Errorf("%w: producer id %d batch %d has offsets %d..%d", errCorruptSnapshot, pid, j, b.FirstOffset, b.LastOffset)
			}
		}
		ps.producers[pid] = e
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errCorruptSnapshot, len(rest))
	}
	return ps, nil
}
