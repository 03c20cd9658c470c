// This file holds the Accumulator, the producer's per-partition batching in
// the manner of Kafka's RecordAccumulator: records are encoded into one
// open RecordBatch v2 per partition, closed batches wait in a per-partition
// queue, and the shell is told which batches to send, when to wake up, and
// what became of each record.

package producer

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/actorlog/actorlog/internal/frame"
	"github.com/actorlog/actorlog/storage/record"
)

// BatchID names one send of a batch. Every send gets a new ID, a retry
// included, so results for an earlier send of the same batch (a late answer
// to a request that timed out) are recognised and ignored. IDs are positive
// and increase; the shell may use them as the ProduceRequest's
// correlation_id.
type BatchID int64

// AppendResult tells the shell what an Append did besides buffering the
// record.
type AppendResult struct {
	// NewBatch: the record opened a new batch, whose linger deadline the
	// shell's timer must cover (see NextDeadline).
	NewBatch bool
	// BatchFull: a batch of the partition was closed (it is full, or the
	// record did not fit in it) and may be sent now: call Ready.
	BatchFull bool
}

// ReadyBatch is a batch to send now, as returned by Ready.
type ReadyBatch struct {
	// ID names this send; pass it to Complete or Retry with the outcome.
	ID BatchID
	// TopicPartition is the batch's partition.
	TopicPartition TopicPartition
	// Bytes is exactly one RecordBatch v2 with base offset 0 and leader
	// epoch -1. A retry sends the same slice, unless the batch was
	// re-stamped for a new producer id (a new slice then). The receiver
	// may stamp the base offset and leader epoch (outside the CRC) but
	// must not change anything else. The Accumulator drops its reference
	// when the batch is completed, failed or re-stamped; it never writes
	// to it after Ready.
	Bytes []byte
	// ProducerID, ProducerEpoch and BaseSequence are the idempotent
	// producer fields written in Bytes' header; -1 each when the
	// Accumulator is not idempotent.
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	// Records is the number of records in the batch.
	Records int
	// Reports are the report values of the batch's records, in order.
	// Read-only, and valid only until the batch is completed or failed:
	// the Accumulator reuses the slice.
	Reports []any
	// Attempt counts the sends of this batch: 1 the first time.
	Attempt int
}

// Delivery is the outcome of one record, in the order of the records of its
// batch (and so of its partition).
type Delivery struct {
	// Report is the value passed to Append with the record.
	Report any
	// TopicPartition is the record's partition.
	TopicPartition TopicPartition
	// Offset is the record's offset: the batch's base offset plus the
	// record's index in the batch; -1 when Err is set or the base offset is
	// unknown (acks=0).
	Offset int64
	// Err is why the record failed, nil on success.
	Err error
}

// batch is one batch: open (being appended to, b != nil), queued (closed,
// waiting to be sent), or in flight (id != 0).
type batch struct {
	part     *partition
	seq      uint64          // creation order; queues are kept in seq order
	b        *record.Builder // while open
	bcap     int             // b's capacity as far as known (see pooledBuilder)
	size     int             // buffered bytes: HeaderSize + encoded records
	firstTS  int64           // first record's timestamp (the builder's base)
	reports  []any           // one per record; len is the record count
	bytes    []byte          // the encoded batch, once closed
	created  time.Time       // linger and delivery timeout count from here
	attempts int             // sends so far
	retryAt  time.Time       // not sent again before this
	sentAt   time.Time       // the last send
	id       BatchID         // the current send, 0 when not in flight

	// Idempotent producer fields: set when the batch is first sent and
	// kept on every retry, unless the batch is re-stamped (see restamp).
	stamped bool  // bytes carry the fields below: the batch was sent
	gen     int   // the producer id generation it carries (Accumulator.gen)
	pid     int64 // producer id, epoch and base sequence in bytes
	epoch   int16
	baseSeq int32
	ordinal int  // its place among the batches stamped under gen
	moot    bool // in flight with a stamp it no longer carries
}

// partition is the state of one partition.
//
// Invariants: queue is sorted by seq; every batch of inflight has a non-zero
// id registered in Accumulator.inflight; len(inflight) <= MaxInFlight
// unless MaxInFlight was lowered (it cannot be). When idempotent: every
// batch of inflight is stamped; every stamped batch of queue precedes every
// unstamped one; every stamped batch of queue and inflight has gen ==
// partition.gen, and their sequences follow each other in seq order from
// the first one (no gap), ending at nextSeq.
type partition struct {
	tp       TopicPartition
	open     *batch
	queue    []*batch // closed, not in flight; head goes first
	inflight []*batch // sent, not answered; in send order
	paused   bool

	// Idempotent producer state.
	gen     int   // the producer id generation of its sequences; 0: none yet
	nextSeq int32 // base sequence of the next batch stamped under gen
	stamps  int   // batches stamped under gen: the next one's ordinal
	broken  bool  // a batch of gen left unacknowledged: restart its sequences
	// lastRetry is the send id of the latest batch sent again (see
	// OutOfOrderSequence).
	lastRetry BatchID

	// Scheduling (see schedule.go).
	idx   int       // its place in Accumulator.parts
	dirty bool      // in Accumulator.dirty: key to be recomputed
	key   time.Time // its deadline (see partDeadline), while in the heap
	hidx  int       // its index in Accumulator.due, -1 when not in it
	aidx  int       // its index in Accumulator.active, -1 when not in it
}

// Accumulator batches records per partition and tracks every batch until
// its records are delivered or failed. It does no I/O and keeps no timers:
// every method that depends on time takes the current time, which must
// never go backwards.
//
// Memory: BufferedBytes counts each batch's uncompressed size from its first
// record until it is completed, failed or aborted. Steady-state Append
// allocates nothing (builders, batch structs and report slices are reused);
// each closed batch allocates its encoded bytes unless a delivered batch's
// are recycled (Config.RecycleSent, uncompressed: see close and
// recycleBuffer), and each Complete its Delivery slice.
//
// Idempotence (Config.Idempotence), as Kafka's idempotent producer without
// transactions (RecordAccumulator.drain and TransactionManager):
//
//   - Nothing is sent until SetProducerID gives a producer id; NeedProducerID
//     tells the shell to get one (InitProducerID).
//   - A batch is stamped with the producer id, epoch and its partition's
//     next sequence when Ready first hands it out, in partition order;
//     sequences wrap from math.MaxInt32 to 0, as Kafka's. Retries send the
//     same bytes, so the leader recognises a batch it already appended.
//   - A retried batch is sent again only when no earlier batch of its
//     partition is in flight, so retries go one at a time, in sequence
//     order, ahead of the batches behind them.
//   - OUT_OF_ORDER_SEQUENCE_NUMBER is retriable while an earlier batch of
//     the partition is in flight or waiting to be sent again (see
//     OutOfOrderSequence); otherwise, like UNKNOWN_PRODUCER_ID and
//     INVALID_PRODUCER_EPOCH (see ProducerRejected), the batch fails.
//   - A sent batch that leaves without success (a failure, its delivery
//     timeout, Abort) leaves its partition's sequence in an unknown state:
//     if it carried the current producer id, that id is dropped
//     (NeedProducerID); once a newer id is set, the partition's batches
//     still outstanding are re-stamped with it, sequences from 0 (new bytes,
//     new CRC). Other partitions keep their old id for the batches they
//     already sent, so that the leader can still recognise their retries,
//     and stamp new batches with the new id once those are answered.
//   - A new batch is sent only while fewer than MaxInFlight batches of its
//     partition were stamped since the oldest one still unanswered, so that
//     a retry always finds its batch among the last MaxInFlightIdempotent
//     the leader remembers.
//
// The zero Accumulator is not usable; call NewAccumulator. An Accumulator is
// not safe for concurrent use: it is owned by the producer actor.
type Accumulator struct {
	cfg Config

	parts []*partition // in creation order: Ready serves them in this order
	index map[TopicPartition]*partition
	last  *partition // the partition of the last Append, a cache

	inflight map[BatchID]*batch
	nextID   BatchID
	nextSeq  uint64

	used      int  // buffered bytes
	pending   int  // records appended, not yet delivered
	exhausted bool // an append failed for memory: send every batch now

	broken   []brokenBatch // batches that failed to encode, for Expire
	timedOut []BatchID     // the sends the last Expire timed out (TimedOut)

	// The producer id, when idempotent.
	pid      int64
	epoch    int16
	gen      int      // counts SetProducerID calls: 0 before the first
	pidValid bool     // pid and epoch may stamp batches
	restamps []*batch // restamp's scratch

	freeBatches  []*batch
	freeBuilders []pooledBuilder
	// freeBufs are delivered batches' bytes kept for new batches
	// (Config.RecycleSent), freeBufBytes their capacity.
	freeBufs     [][]byte
	freeBufBytes int
	// builderBytes is the capacity of every builder, open or free (see
	// pooledBuilder): a builder that would take it past BufferMemory is
	// dropped rather than kept for reuse.
	builderBytes int
	ready        []ReadyBatch // Ready's result, reused

	stats Stats // the counters of Stats

	sched // which partitions Ready, Expire and NextDeadline look at
}

// pooledBuilder is a free builder and its capacity as far as known: the
// largest batch it held. A builder keeps the capacity of the largest batch
// it built; with 1 MiB batches and many partitions, builders reused across
// partitions would otherwise keep far more memory than BufferMemory
// counts.
type pooledBuilder struct {
	b   *record.Builder
	cap int
}

// Stats are an Accumulator's counters since it was made and its current
// load: what an operator watches to see a producer stuck or retrying.
type Stats struct {
	// BatchesSent counts sends, retries included; Retries counts the
	// sends that failed retriably (and were queued again or timed out).
	BatchesSent, Retries uint64
	// RecordsDelivered and RecordsFailed count records by outcome.
	RecordsDelivered, RecordsFailed uint64
	// InFlight is the number of batches sent and not answered; Pending the
	// records not yet delivered; BufferedBytes their memory.
	InFlight, Pending, BufferedBytes int
}

// Stats returns the counters and the current load.
func (a *Accumulator) Stats() Stats {
	s := a.stats
	s.InFlight, s.Pending, s.BufferedBytes = len(a.inflight), a.pending, a.used
	return s
}

// brokenBatch is a batch that could not be encoded, and why.
type brokenBatch struct {
	b   *batch
	err error
}

// NewAccumulator returns an empty Accumulator. Zero fields of cfg take the
// defaults (see Config); the result is validated once, and an invalid
// config fails with an error wrapping ErrInvalidConfig.
func NewAccumulator(cfg Config) (*Accumulator, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Accumulator{
		cfg:      cfg,
		index:    make(map[TopicPartition]*partition),
		inflight: make(map[BatchID]*batch),
	}, nil
}

// Config returns the configuration in effect, defaults filled in.
func (a *Accumulator) Config() Config { return a.cfg }

// Pending is the number of records appended and not yet delivered (open,
// queued or in flight).
func (a *Accumulator) Pending() int { return a.pending }

// BufferedBytes is the memory counted against BufferMemory: the uncompressed
// size of every batch not yet completed.
func (a *Accumulator) BufferedBytes() int { return a.used }

// Append adds rec to tp's open batch, opening one if needed, and remembers
// report, an opaque value handed back in rec's Delivery (a reply PID, a
// callback). rec's slices are copied before Append returns; rec.Offset is
// ignored; a zero rec.Timestamp is set to now (Kafka's null timestamp means
// "now"). The partition is taken as given: it is the caller's job (or
// Core.Send's) to pick a valid one.
//
// A record that would take the open batch past BatchSize closes that batch
// first and goes into a new one; a batch that reaches BatchSize is closed
// at once. Both set AppendResult.BatchFull.
//
// Append fails, buffering nothing, with an error wrapping ErrRecordTooLarge
// when the record plus a batch header could exceed MaxRequestSize (or
// BufferMemory), and with one wrapping ErrBufferFull when buffering it would
// exceed BufferMemory; the latter also makes the next Ready send every open
// batch, to free memory sooner.
func (a *Accumulator) Append(now time.Time, tp TopicPartition, rec record.Record, report any) (AppendResult, error) {
	if rec.Timestamp == 0 {
		rec.Timestamp = now.UnixMilli()
	}
	if err := a.checkSize(tp, &rec); err != nil {
		return AppendResult{}, err
	}
	return a.append(now, a.partition(tp), &rec, report)
}

// checkSize fails with ErrRecordTooLarge when rec, alone in a batch, could
// exceed MaxRequestSize or BufferMemory. It uses the record's largest
// possible encoding (any offset and timestamp delta), as Kafka's
// ensureValidRecordSize does.
func (a *Accumulator) checkSize(tp TopicPartition, rec *record.Record) error {
	size := record.HeaderSize + recordSize(rec, math.MaxInt32, math.MinInt64)
	if size > a.cfg.MaxRequestSize || size > a.cfg.BufferMemory {
		return fmt.Errorf("%w: %d bytes (with batch header) for %s, max request size %d, buffer memory %d",
			ErrRecordTooLarge, size, tp, a.cfg.MaxRequestSize, a.cfg.BufferMemory)
	}
	return nil
}

// joinOrClose reports whether rec (timestamp already set) fits into tp's
// open batch. When tp has an open batch that rec does not fit into, it
// closes that batch, as Kafka's tryAppend does, and reports closed: the
// batch is full as far as rec is concerned, and rec will go elsewhere.
func (a *Accumulator) joinOrClose(tp TopicPartition, rec *record.Record) (join, closed bool) {
	p := a.lookup(tp)
	if p == nil || p.open == nil {
		return false, false
	}
	b := p.open
	if b.size+recordSize(rec, len(b.reports), rec.Timestamp-b.firstTS) <= a.cfg.BatchSize {
		return true, false
	}
	a.close(p)
	return false, true
}

func (a *Accumulator) append(now time.Time, p *partition, rec *record.Record, report any) (AppendResult, error) {
	var res AppendResult
	b := p.open
	size, need := 0, 0
	if b != nil {
		size = recordSize(rec, len(b.reports), rec.Timestamp-b.firstTS)
		need = size
		if b.size+size > a.cfg.BatchSize {
			b = nil // closed below, once the memory check has passed
		}
	}
	if b == nil {
		size = recordSize(rec, 0, 0)
		need = record.HeaderSize + size
	}
	if a.used+need > a.cfg.BufferMemory {
		a.exhausted = true
		return res, fmt.Errorf("%w: %d bytes for %s, %d of %d buffered",
			ErrBufferFull, need, p.tp, a.used, a.cfg.BufferMemory)
	}
	if b == nil {
		if p.open != nil {
			a.close(p)
			res.BatchFull = true
		}
		b = a.openBatch(now, p, rec.Timestamp)
		res.NewBatch = true
	}
	b.b.Append(*rec)
	b.size += need
	b.reports = append(b.reports, report)
	a.used += need
	a.pending++
	if b.size >= a.cfg.BatchSize {
		a.close(p)
		res.BatchFull = true
	}
	return res, nil
}

// lookup returns tp's partition state, or nil.
func (a *Accumulator) lookup(tp TopicPartition) *partition {
	if a.last != nil && a.last.tp == tp {
		return a.last
	}
	p := a.index[tp]
	if p != nil {
		a.last = p
	}
	return p
}

// partition returns tp's partition state, creating it.
func (a *Accumulator) partition(tp TopicPartition) *partition {
	if p := a.lookup(tp); p != nil {
		return p
	}
	p := &partition{tp: tp, idx: len(a.parts), hidx: -1, aidx: -1}
	a.index[tp] = p
	a.parts = append(a.parts, p)
	a.last = p
	return p
}

// openBatch opens a new batch on p, with reused parts where possible.
func (a *Accumulator) openBatch(now time.Time, p *partition, firstTS int64) *batch {
	var b *batch
	if n := len(a.freeBatches); n > 0 {
		b = a.freeBatches[n-1]
		a.freeBatches[n-1] = nil
		a.freeBatches = a.freeBatches[:n-1]
	} else {
		b = new(batch)
	}
	if n := len(a.freeBuilders); n > 0 {
		b.b, b.bcap = a.freeBuilders[n-1].b, a.freeBuilders[n-1].cap
		a.freeBuilders[n-1] = pooledBuilder{}
		a.freeBuilders = a.freeBuilders[:n-1]
	} else {
		// An idempotent producer's batches are checksummed when stamped
		// (setStamp), which every batch is before it is first sent.
		b.b, b.bcap = record.NewBuilder(record.BuilderOptions{Compression: a.cfg.Compression, NoChecksum: a.cfg.idempotent()}), 0
	}
	a.nextSeq++
	b.part, b.seq, b.created, b.firstTS = p, a.nextSeq, now, firstTS
	b.size = 0
	p.open = b
	a.markDirty(p)
	return b
}

// takeOpen removes p's open batch and returns it; its builder, reset, goes
// back to the free list, unless the builders' capacity (builderBytes)
// would exceed BufferMemory: then it is dropped for the garbage collector.
// So hot partitions reuse their large builders, while many partitions'
// builders, each once grown to a full batch, are not all kept.
//
// newCap, when positive, is the capacity of the buffer the builder was
// given for its next batch (close's in-place path): it becomes its bcap.
func (a *Accumulator) takeOpen(p *partition, newCap int) *batch {
	b := p.open
	p.open = nil
	a.markDirty(p)
	if b.size > b.bcap {
		a.builderBytes += b.size - b.bcap
		b.bcap = b.size
	}
	if newCap > 0 {
		a.builderBytes += newCap - b.bcap
		b.bcap = newCap
	}
	if a.builderBytes <= a.cfg.BufferMemory {
		b.b.Reset()
		a.freeBuilders = append(a.freeBuilders, pooledBuilder{b: b.b, cap: b.bcap})
	} else {
		a.builderBytes -= b.bcap
	}
	b.b, b.bcap = nil, 0
	return b
}

// nextBuffer is the capacity to give a builder whose buffer held batches of
// up to held bytes: at least that, and up to twice that within BatchSize,
// so that a partition whose batches fill up gets BatchSize buffers (which
// its full batches never outgrow, and which the free list of batch buffers
// then serves).
func (a *Accumulator) nextBuffer(held int) int {
	return max(held, min(2*held, a.cfg.BatchSize))
}

// close encodes p's open batch and queues it behind the batches already
// closed (all older). The builder goes back to the free list.
//
// Uncompressed, with RecycleSent, a batch of at least half its builder's
// buffer is completed in place (record.Builder.TakeBatch): that buffer
// becomes the batch's bytes, nothing is copied, and the builder takes a
// recycled buffer (or a new one) for its next batch. Smaller batches, and
// every batch without RecycleSent (whose bytes never come back), are
// copied into a buffer of their size, as a batch's capacity is not counted
// in BufferedBytes and a small batch must not pin a large buffer.
func (a *Accumulator) close(p *partition) {
	var bytes []byte
	var err error
	newCap := 0
	o := p.open
	switch want := a.nextBuffer(max(o.bcap, o.size)); {
	case a.cfg.Compression != record.CompressionNone:
		bytes, err = o.b.Build()
	case a.cfg.RecycleSent && 2*o.size >= want:
		next := a.batchBuffer(want)
		if bytes, err = o.b.TakeBatch(next); err == nil {
			newCap = frame.Cap(next)
		}
	default:
		bytes, err = o.b.AppendBatch(a.batchBuffer(o.b.EstimatedSize()))
	}
	b := a.takeOpen(p, newCap)
	if err != nil {
		// Cannot happen: the codec was checked by NewAccumulator, the
		// batch holds records and is far below 2 GiB. Should it happen,
		// the records fail through the next Expire rather than vanish.
		err = fmt.Errorf("producer: encode batch for %s: %w", p.tp, err)
		a.broken = append(a.broken, brokenBatch{b, err})
		return
	}
	b.bytes = bytes
	p.queue = append(p.queue, b)
}

// Flush closes every open batch, so that each is sent as soon as its
// partition allows (not paused, below MaxInFlight, past any retry backoff)
// rather than when its linger expires. Batches opened after Flush linger as
// usual. Call Ready afterwards.
func (a *Accumulator) Flush() {
	for _, p := range a.parts {
		if p.open != nil {
			a.close(p)
		}
	}
}

// drainable reports whether p's open batch, closed now, would be sent at
// once: p is not paused, has nothing queued ahead of it and room in flight
// (and, when idempotent, in its sequence window; see inOrder). Only
// then does linger close p's open batch. Otherwise the batch stays open and
// keeps filling up to BatchSize, as Kafka's RecordAccumulator appends to
// the last batch of a partition's deque until the sender drains it: a
// partition that waits for a new leader, or for its in-flight answers,
// sends full batches when it can, instead of a long queue of
// linger-sized ones that drains no faster than records arrive.
func (a *Accumulator) drainable(p *partition) bool {
	return len(p.queue) == 0 && len(p.inflight) < a.cfg.MaxInFlight && a.canSend(p) && a.inOrder(p, p.open)
}

// dueAt is when p's open batch is to be closed if drainable: at once when
// nothing is in flight, on any partition (unless LingerWhenIdle), else
// when its Linger has passed. Idle is the whole producer's, not p's: a
// producer under load always has some request in flight, so its batches
// linger and fill as Kafka's do, rather than go out small whenever their
// partition's last answer arrives. idle is whether nothing was in flight
// when the caller started (Ready decides for all partitions at once).
func (a *Accumulator) dueAt(p *partition, idle bool) time.Time {
	if idle && !a.cfg.LingerWhenIdle {
		return p.open.created
	}
	return p.open.created.Add(a.cfg.Linger)
}

// Ready returns the batches to send now, marking them in flight. It first
// closes every open batch that would be sent at once (see drainable) and
// whose linger has expired or, unless LingerWhenIdle, any batch that would
// be sent at once when nothing is in flight (see dueAt), or every open batch after an append failed with
// ErrBufferFull; then, per partition that is
// not paused, it hands out queued batches in order while the partition has
// fewer than MaxInFlight in flight, stopping at a batch still in its retry
// backoff, so that a retried batch keeps its place ahead of later ones.
// When idempotent it sends nothing without a producer id, stamps each batch
// it sends for the first time, and keeps the sequence order (see
// Accumulator).
//
// The returned slice is reused by the next call to Ready; its elements'
// Bytes and Reports follow the rules of ReadyBatch. Partitions are served in
// the order they first appeared. Cost: O(log partitions) per partition
// that has something due at now (see NextDeadline), plus the batches
// returned; after an ErrBufferFull, O(partitions holding batches).
func (a *Accumulator) Ready(now time.Time) []ReadyBatch {
	clear(a.ready) // drop references to reports from the previous call
	a.ready = a.ready[:0]
	all := a.exhausted
	a.exhausted = false
	idle := len(a.inflight) == 0
	for _, p := range a.candidates(now, all) {
		a.readyPart(p, now, all, idle)
		a.markDirty(p)
	}
	return a.ready
}

// readyPart is Ready's work on p: close its open batch if due, re-stamp
// it, and hand out its queued batches that may go.
func (a *Accumulator) readyPart(p *partition, now time.Time, all, idle bool) {
	if p.open != nil && (all || (a.drainable(p) && !now.Before(a.dueAt(p, idle)))) {
		a.close(p)
	}
	if p.broken && a.pidValid {
		a.restamp(p)
	}
	if !a.canSend(p) {
		return
	}
	sent := 0
	for _, b := range p.queue {
		if len(p.inflight) >= a.cfg.MaxInFlight || now.Before(b.retryAt) || !a.inOrder(p, b) {
			break
		}
		rb := ReadyBatch{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
		if a.cfg.idempotent() {
			if !b.stamped {
				a.stamp(p, b)
			}
			rb.ProducerID, rb.ProducerEpoch, rb.BaseSequence = b.pid, b.epoch, b.baseSeq
		}
		sent++
		a.stats.BatchesSent++
		a.nextID++
		b.id = a.nextID
		b.attempts++
		b.sentAt = now
		b.moot = false
		a.inflight[b.id] = b
		p.inflight = append(p.inflight, b)
		rb.ID, rb.TopicPartition, rb.Bytes = b.id, p.tp, b.bytes
		if b.attempts > 1 {
			// The first send may still be being encoded into the frame's
			// headroom (messages/framed.go): a retry goes without the
			// frame (its capacity cut to its length), and is copied.
			rb.Bytes = b.bytes[:len(b.bytes):len(b.bytes)]
			p.lastRetry = b.id
		}
		rb.Records, rb.Reports, rb.Attempt = len(b.reports), b.reports, b.attempts
		a.ready = append(a.ready, rb)
	}
	if sent > 0 {
		n := copy(p.queue, p.queue[sent:])
		clear(p.queue[n:])
		p.queue = p.queue[:n]
	}
}

// NextDeadline returns the earliest time at which Ready or Expire will have
// something new to do: a linger expiring, a retry backoff ending for a
// partition that could send, a batch's delivery timeout, or an in-flight
// request's timeout. ok is false when nothing is pending on time (the shell
// then needs no timer until the next Append or result). A deadline may be in
// the past: the shell should act at once. Time-independent blockers (a full
// in-flight window, a paused partition, no producer id, an earlier batch in
// flight) produce no deadline; the events that lift them (Complete, Retry,
// Resume, SetProducerID) are the shell's cue to call Ready.
//
// Cost: O(1) when no partition changed since the last call to Ready,
// Expire or NextDeadline, else O(log partitions) per partition changed (and
// O(partitions holding batches) when the producer goes idle or busy, or its
// producer id changes).
func (a *Accumulator) NextDeadline() (time.Time, bool) {
	a.refresh()
	if len(a.broken) > 0 || a.exhausted {
		return time.Time{}, true // Expire or Ready has work now
	}
	if a.scanAll {
		return a.scanDeadline()
	}
	if len(a.due) == 0 {
		return time.Time{}, false
	}
	return a.due[0].key, true
}

// partDeadline is p's part of NextDeadline, for the given idle (nothing in
// flight on any partition): the earliest time at which Ready or Expire
// has something to do for p. ok is false when nothing of p waits on time.
func (a *Accumulator) partDeadline(p *partition, idle bool) (at time.Time, ok bool) {
	consider := func(t time.Time) {
		if !ok || t.Before(at) {
			at, ok = t, true
		}
	}
	if b := p.open; b != nil {
		if a.drainable(p) {
			consider(a.dueAt(p, idle))
		}
		consider(b.created.Add(a.cfg.DeliveryTimeout))
	}
	if p.broken && a.pidValid {
		consider(time.Time{}) // Ready re-stamps it now
	}
	if len(p.queue) > 0 {
		// Queues are in creation order, so the head expires first.
		head := p.queue[0]
		consider(head.created.Add(a.cfg.DeliveryTimeout))
		if a.canSend(p) && len(p.inflight) < a.cfg.MaxInFlight && a.inOrder(p, head) {
			consider(head.retryAt)
		}
	}
	for _, b := range p.inflight {
		consider(b.sentAt.Add(a.cfg.RequestTimeout))
	}
	return at, ok
}

// Complete records the outcome of send id. With err nil the batch was
// appended at baseOffset: its records get offsets baseOffset+i in order (or
// -1 each when baseOffset < 0, as for acks=0, or for an idempotent batch
// the leader reports as DUPLICATE_SEQUENCE_NUMBER). With err set the batch
// failed for good (a non-retriable error; for retriable ones call Retry
// instead, for sequence errors OutOfOrderSequence or ProducerRejected):
// each record gets an error wrapping err, and when idempotent the
// partition's sequence is lost (see Accumulator). Either way the batch's
// memory is freed and a Delivery per record is returned, in record order.
//
// An id that is not in flight (a late answer to a send that already timed
// out and was retried or failed, or an unknown id) is ignored: Complete
// returns nil. The returned slice belongs to the caller.
func (a *Accumulator) Complete(id BatchID, baseOffset int64, err error) []Delivery {
	return a.CompleteAppend(nil, id, baseOffset, err)
}

// CompleteAppend is Complete appending the deliveries to dst (returned as
// is for an id not in flight): a caller that hands them out and forgets
// them can reuse one slice instead of allocating one per batch (a
// Delivery per record: ~650 KB for a 1 MiB batch of 100 B records).
func (a *Accumulator) CompleteAppend(dst []Delivery, id BatchID, baseOffset int64, err error) []Delivery {
	b := a.takeInFlight(id)
	if b == nil {
		return dst
	}
	if err != nil {
		return a.fail(dst, b, a.produceErr(b, err))
	}
	n := len(dst)
	dst = slices.Grow(dst, len(b.reports))[:n+len(b.reports)]
	out := dst[n:]
	a.stats.RecordsDelivered += uint64(len(b.reports))
	if a.cfg.RecycleSent && b.attempts == 1 && a.cfg.Compression == record.CompressionNone {
		a.recycleBuffer(b.bytes, b)
	}
	for i, r := range b.reports {
		off := int64(-1)
		if baseOffset >= 0 {
			off = baseOffset + int64(i)
		}
		out[i] = Delivery{Report: r, TopicPartition: b.part.tp, Offset: off}
	}
	a.release(b)
	return dst
}

// produceErr is the error of b's records when its send failed with err.
func (a *Accumulator) produceErr(b *batch, err error) error {
	return fmt.Errorf("producer: produce to %s: %w", b.part.tp, err)
}

// Retry records that send id failed with a retriable error (cause). If the
// batch's delivery timeout has not expired at now, it goes back into its
// partition's queue at its place in creation order (ahead of every later
// batch), to be sent again with the same bytes, under a new ID, no earlier
// than now + RetryBackoff; Retry returns nil. Otherwise its records fail
// with an error wrapping both ErrDeliveryTimeout and cause, returned as
// Deliveries.
//
// Ordering: when idempotent, the retried batch is sent again before any
// later batch of its partition (which the leader refuses meanwhile with
// OUT_OF_ORDER_SEQUENCE_NUMBER: see OutOfOrderSequence). Without
// idempotence, with MaxInFlight > 1, later batches of the partition may
// already be in flight and land before the retried one, as in Kafka; set
// MaxInFlight to 1 for strict order.
//
// An id that is not in flight is ignored (Retry returns nil).
func (a *Accumulator) Retry(id BatchID, now time.Time, cause error) []Delivery {
	b := a.takeInFlight(id)
	if b == nil {
		return nil
	}
	return a.retry(nil, b, now, cause)
}

// retry requeues b (no longer in flight) or, past its delivery timeout,
// fails it, appending the failures to dst.
func (a *Accumulator) retry(dst []Delivery, b *batch, now time.Time, cause error) []Delivery {
	a.stats.Retries++
	if !now.Before(b.created.Add(a.cfg.DeliveryTimeout)) {
		err := fmt.Errorf("%w for %s after %d attempts: %w", ErrDeliveryTimeout, b.part.tp, b.attempts, cause)
		return a.fail(dst, b, err)
	}
	b.retryAt = now.Add(a.cfg.RetryBackoff)
	p := b.part
	a.markDirty(p)
	i, _ := slices.BinarySearchFunc(p.queue, b.seq, func(q *batch, seq uint64) int {
		switch {
		case q.seq < seq:
			return -1
		case q.seq > seq:
			return 1
		}
		return 0
	})
	p.queue = slices.Insert(p.queue, i, b)
	return dst
}

// takeInFlight removes send id from the in-flight set and returns its
// batch, or nil when id is not in flight.
func (a *Accumulator) takeInFlight(id BatchID) *batch {
	b, ok := a.inflight[id]
	if !ok {
		return nil
	}
	delete(a.inflight, id)
	b.id = 0
	p := b.part
	a.markDirty(p)
	if i := slices.Index(p.inflight, b); i >= 0 {
		p.inflight = slices.Delete(p.inflight, i, i+1)
	}
	return b
}

// Expire fails or retries what has run out of time at now, returning the
// Deliveries of the records that failed:
//
//   - an in-flight send unanswered for RequestTimeout is retried as by
//     Retry with cause ErrRequestTimeout (so it fails if its delivery
//     timeout has passed); a late answer to it is then ignored;
//   - open and queued batches (in paused partitions too) created
//     DeliveryTimeout or more ago fail with ErrDeliveryTimeout;
//   - a batch that could not be encoded fails with the encoding error (this
//     is not expected to happen; see close).
//
// When idempotent, a batch that fails here after having been sent leaves
// its partition's sequence unknown: the producer id is dropped (see
// Accumulator).
//
// Call it before Ready when the shell wakes up. The returned slice belongs
// to the caller; it is nil when nothing failed. Cost: O(log partitions)
// per partition that has something due at now (see NextDeadline), plus
// the batches that expire.
func (a *Accumulator) Expire(now time.Time) []Delivery {
	var out []Delivery
	for _, bb := range a.broken {
		out = a.fail(out, bb.b, bb.err)
	}
	clear(a.broken)
	a.broken = a.broken[:0]
	a.timedOut = a.timedOut[:0]
	for _, p := range a.candidates(now, false) {
		out = a.expirePart(out, p, now)
		a.markDirty(p)
	}
	return out
}

// expirePart is Expire's work on p, appending the failures to out.
func (a *Accumulator) expirePart(out []Delivery, p *partition, now time.Time) []Delivery {
	for i := 0; i < len(p.inflight); {
		b := p.inflight[i]
		if now.Before(b.sentAt.Add(a.cfg.RequestTimeout)) {
			i++
			continue
		}
		a.timedOut = append(a.timedOut, b.id)
		a.takeInFlight(b.id)
		out = a.retry(out, b, now, fmt.Errorf("%w: no answer for %v", ErrRequestTimeout, a.cfg.RequestTimeout))
	}
	// Queues are in creation order: only a prefix can have expired.
	n := 0
	for n < len(p.queue) && !now.Before(p.queue[n].created.Add(a.cfg.DeliveryTimeout)) {
		out = a.fail(out, p.queue[n], a.timeoutErr(p.queue[n], now))
		n++
	}
	if n > 0 {
		kept := copy(p.queue, p.queue[n:])
		clear(p.queue[kept:])
		p.queue = p.queue[:kept]
	}
	if b := p.open; b != nil && !now.Before(b.created.Add(a.cfg.DeliveryTimeout)) {
		out = a.fail(out, a.takeOpen(p, 0), a.timeoutErr(b, now))
	}
	return out
}

// TimedOut returns the sends that the last Expire took out of flight for
// their RequestTimeout (retried or failed), in the order it did; a late
// answer to them is ignored. The slice is reused by the next Expire.
func (a *Accumulator) TimedOut() []BatchID { return a.timedOut }

func (a *Accumulator) timeoutErr(b *batch, now time.Time) error {
	return fmt.Errorf("%w for %s: batch created %v ago, %d attempts",
		ErrDeliveryTimeout, b.part.tp, now.Sub(b.created), b.attempts)
}

// Pause stops Ready from sending tp's batches (its leader is unknown or
// moving); records are still appended, batches still close on linger and
// still expire. Pausing a paused partition does nothing.
func (a *Accumulator) Pause(tp TopicPartition) {
	p := a.partition(tp)
	p.paused = true
	a.markDirty(p)
}

// Resume undoes Pause; call Ready afterwards.
func (a *Accumulator) Resume(tp TopicPartition) {
	if p := a.lookup(tp); p != nil {
		p.paused = false
		a.markDirty(p)
	}
}

// Abort fails every record not yet delivered, open, queued and in flight,
// with an error wrapping cause (ErrAborted when cause is nil), and returns
// their Deliveries, per partition in record order. Answers to the aborted
// sends are then ignored. The Accumulator stays usable (when idempotent,
// with a new producer id if a sent batch was aborted). For a producer that
// stops: Flush, wait for the answers, then Abort what is left.
func (a *Accumulator) Abort(cause error) []Delivery {
	if cause == nil {
		cause = ErrAborted
	}
	var out []Delivery
	for _, bb := range a.broken {
		out = a.fail(out, bb.b, bb.err)
	}
	clear(a.broken)
	a.broken = a.broken[:0]
	for _, p := range a.parts {
		err := fmt.Errorf("producer: abort %s: %w", p.tp, cause)
		for len(p.inflight) > 0 {
			out = a.fail(out, a.takeInFlight(p.inflight[0].id), err)
		}
		for _, b := range p.queue {
			out = a.fail(out, b, err)
		}
		clear(p.queue)
		p.queue = p.queue[:0]
		a.markDirty(p)
		if p.open != nil {
			out = a.fail(out, a.takeOpen(p, 0), err)
		}
	}
	a.exhausted = false
	return out
}

// fail appends a failed Delivery with err for each record of b, which is in
// no queue or in-flight set any more, to dst and releases b.
func (a *Accumulator) fail(dst []Delivery, b *batch, err error) []Delivery {
	if b.stamped {
		a.seqLost(b)
	}
	a.markDirty(b.part)
	dst = slices.Grow(dst, len(b.reports))
	a.stats.RecordsFailed += uint64(len(b.reports))
	for _, r := range b.reports {
		dst = append(dst, Delivery{Report: r, TopicPartition: b.part.tp, Offset: -1, Err: err})
	}
	a.release(b)
	return dst
}

// batchBuffer returns an empty buffer of capacity at least size for a
// batch's bytes: a recycled one (Config.RecycleSent) when one fits (at
// most twice size, so that a small batch does not pin a large buffer that
// BufferedBytes does not count), else a new one.
func (a *Accumulator) batchBuffer(size int) []byte {
	for i := len(a.freeBufs) - 1; i >= 0; i-- {
		if buf := a.freeBufs[i]; frame.Cap(buf) >= size && frame.Cap(buf) <= 2*size {
			a.freeBufs[i] = a.freeBufs[len(a.freeBufs)-1]
			a.freeBufs[len(a.freeBufs)-1] = nil
			a.freeBufs = a.freeBufs[:len(a.freeBufs)-1]
			a.freeBufBytes -= frame.Cap(buf)
			return buf[:0]
		}
	}
	// A frame (internal/frame): sent to a leader in another process, the
	// batch is encoded into the frame's headroom rather than copied
	// (messages/framed.go).
	return frame.Alloc(size)[:0]
}

// recycleBuffer keeps buf, the bytes of b, a delivered batch about to be
// released, for a later batch, while the kept buffers and the bytes still
// buffered (other than b's) stay within BufferMemory. At full speed every
// batch in flight comes back here and the next ones take these buffers, so
// a steady stream allocates no batch buffers; as in Kafka's BufferPool,
// the free list is not trimmed when the producer goes idle, so it may keep
// up to BufferMemory (32 MiB by default) until the producer is dropped.
//
// Only frames (batchBuffer's) are kept: a buffer a builder grew itself is
// dropped, so that a frame takes its place and every batch is sent
// without a copy once the free list is warm.
func (a *Accumulator) recycleBuffer(buf []byte, b *batch) {
	if _, ok := frame.Of(buf); !ok || a.freeBufBytes+frame.Cap(buf)+a.used-b.size > a.cfg.BufferMemory {
		return
	}
	a.freeBufs = append(a.freeBufs, buf)
	a.freeBufBytes += frame.Cap(buf)
}

// release frees b's memory and recycles it. b must be in no queue and not
// in flight.
func (a *Accumulator) release(b *batch) {
	a.used -= b.size
	a.pending -= len(b.reports)
	clear(b.reports)
	*b = batch{reports: b.reports[:0]}
	a.freeBatches = append(a.freeBatches, b)
}

// recordSize is the encoded size of r in a v2 batch at the given offset
// and timestamp deltas, including its length prefix: exactly what
// record.Builder.Append adds to the batch.
func recordSize(r *record.Record, offDelta int, tsDelta int64) int {
	body := 1 + varintSize(tsDelta) + varintSize(int64(offDelta)) +
		bytesSize(r.Key) + bytesSize(r.Value) + varintSize(int64(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		body += varintSize(int64(len(h.Key))) + len(h.Key) + bytesSize(h.Value)
	}
	return varintSize(int64(body)) + body
}

// varintSize is the length of v as a zigzag varint.
func varintSize(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// bytesSize is the encoded size of a nullable byte string.
func bytesSize(b []byte) int {
	if b == nil {
		return 1 // varint -1
	}
	return varintSize(int64(len(b))) + len(b)
}
