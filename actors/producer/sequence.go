// This file holds the Accumulator's idempotent-producer logic (see the
// Accumulator's doc): the producer id, stamping batches with per-partition
// sequences, the order rules for sending, the classification of the
// leader's sequence errors, and re-stamping after a sequence is lost.

package producer

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/actorlog/actorlog/storage/record"
)

// NeedProducerID reports whether the Accumulator is idempotent and has no
// usable producer id: before the first SetProducerID, and after a sent batch
// left without success (see Accumulator). The shell then obtains one
// (InitProducerID) and passes it to SetProducerID; meanwhile Ready sends
// nothing, and batches still expire.
func (a *Accumulator) NeedProducerID() bool { return a.cfg.idempotent() && !a.pidValid }

// ProducerID returns the producer id and epoch that new batches are stamped
// with; ok is false when there is none (see NeedProducerID).
func (a *Accumulator) ProducerID() (id int64, epoch int16, ok bool) {
	return a.pid, a.epoch, a.pidValid
}

// SetProducerID sets the producer id and epoch for the batches sent from
// now on (a new id from InitProducerID: the leaders know nothing of it, so
// its sequences start at 0 on every partition). The batches of partitions
// whose sequence was lost are re-stamped with it by the next Ready; the
// batches other partitions already sent keep their old id. It does nothing
// when the Accumulator is not idempotent. Call Ready afterwards.
func (a *Accumulator) SetProducerID(id int64, epoch int16) {
	if !a.cfg.idempotent() {
		return
	}
	a.gen++
	a.pid, a.epoch, a.pidValid = id, epoch, true
}

// OutOfOrderSequence records that the leader refused send id with
// OUT_OF_ORDER_SEQUENCE_NUMBER (cause): the batch's sequence does not follow
// the last one the leader has. That is expected, and the batch is retried
// as by Retry, when an earlier batch of the partition is in flight or
// waiting to be sent again (the leader has not got it yet), when an
// earlier batch was sent again after this send (the refusal may predate
// that retry: answers can come late and out of order, and while this send
// is in flight only earlier batches are retried), or when the send carried
// a stamp the batch no longer has (the partition's sequence was lost
// since, and the batch was or will be re-stamped). Otherwise the
// partition's sequence has a gap that the producer cannot close: the batch
// fails as by ProducerRejected.
//
// Without idempotence the batch simply fails, as by Complete with cause.
// An id that is not in flight is ignored (OutOfOrderSequence returns nil).
func (a *Accumulator) OutOfOrderSequence(id BatchID, now time.Time, cause error) []Delivery {
	b := a.takeInFlight(id)
	if b == nil {
		return nil
	}
	if a.cfg.idempotent() && (b.moot || b.part.broken || a.earlierOutstanding(b) || b.part.lastRetry > id) {
		return a.retry(nil, b, now, cause)
	}
	return a.reject(b, cause)
}

// ProducerRejected records that the leader refused send id for its
// producer id (UNKNOWN_PRODUCER_ID, INVALID_PRODUCER_EPOCH) or for a gap
// in its sequence (see OutOfOrderSequence): cause. The batch's records fail
// with an error wrapping cause, and since the partition's sequence cannot go
// on, the producer id is dropped (NeedProducerID): the partition's other
// outstanding batches are re-stamped with the next one. A send that carried
// a stamp the batch no longer has, or whose partition's sequence was
// already lost, is retried instead (as by Retry): its refusal is the
// expected echo of an earlier one.
//
// Without idempotence the batch simply fails, as by Complete with cause.
// An id that is not in flight is ignored (ProducerRejected returns nil).
func (a *Accumulator) ProducerRejected(id BatchID, now time.Time, cause error) []Delivery {
	b := a.takeInFlight(id)
	if b == nil {
		return nil
	}
	if a.cfg.idempotent() && (b.moot || b.part.broken) {
		return a.retry(nil, b, now, cause)
	}
	return a.reject(b, cause)
}

// reject fails b, no longer in flight, with cause.
func (a *Accumulator) reject(b *batch, cause error) []Delivery {
	return a.fail(nil, b, a.produceErr(b, cause))
}

// earlierOutstanding reports whether a batch of b's partition created
// before b was sent and is not answered yet: in flight, or queued to be
// sent again.
func (a *Accumulator) earlierOutstanding(b *batch) bool {
	p := b.part
	if len(p.queue) > 0 && p.queue[0].stamped && p.queue[0].seq < b.seq {
		return true // the queue is in seq order, stamped batches first
	}
	for _, f := range p.inflight {
		if f.seq < b.seq {
			return true
		}
	}
	return false
}

// canSend reports whether Ready may send p's batches at all: p is not
// paused and, when idempotent, there is a producer id and p's sequence is
// not waiting to be re-stamped.
func (a *Accumulator) canSend(p *partition) bool {
	return !p.paused && (!a.cfg.idempotent() || a.pidValid && !p.broken)
}

// inOrder reports whether b, next in p's queue, may be sent now without
// breaking p's sequence order (always, when not idempotent).
//
// A batch sent before (a retry) goes only once no earlier batch of p is in
// flight, so retries are sent again one at a time, in sequence order, as
// Kafka's drain does.
//
// A batch never sent is stamped only once every send of p in flight
// carries the current producer id and its batch's current stamp (the
// leader must settle the old sequences before the new ones start), and
// only while it is fewer than MaxInFlight batches past the oldest batch
// still in flight: the leader remembers a producer's last
// MaxInFlightIdempotent batches, so a retry of any batch that may have
// been appended must find it among them.
// Kafka counts requests in flight instead, which is the same while answers
// come in order; here an answer can be lost (until the request timeout)
// while later ones arrive. Every stamped batch ahead of b in the queue was
// sent by this Ready (else it would not reach b), so p.inflight holds every
// unanswered batch.
func (a *Accumulator) inOrder(p *partition, b *batch) bool {
	if !a.cfg.idempotent() {
		return true
	}
	oldest := -1
	for _, f := range p.inflight {
		if b.stamped && f.seq < b.seq || !b.stamped && (f.moot || f.gen != a.gen) {
			return false
		}
		if oldest < 0 || f.ordinal < oldest {
			oldest = f.ordinal
		}
	}
	return b.stamped || oldest < 0 || p.stamps-oldest < a.cfg.MaxInFlight
}

// stamp gives b, never sent, p's next sequence under the current producer
// id, writing the fields into its bytes (which nobody else holds yet).
func (a *Accumulator) stamp(p *partition, b *batch) {
	if p.gen != a.gen {
		// Nothing of p is outstanding under the old id (inOrder): start
		// the new id's sequence.
		p.gen, p.nextSeq, p.stamps = a.gen, 0, 0
	}
	a.setStamp(b, p.nextSeq)
	b.ordinal = p.stamps
	p.nextSeq = seqAdd(p.nextSeq, len(b.reports))
	p.stamps++
}

// setStamp stamps b with the current producer id and base sequence seq.
func (a *Accumulator) setStamp(b *batch, seq int32) {
	b.stamped, b.gen, b.pid, b.epoch, b.baseSeq = true, a.gen, a.pid, a.epoch, seq
	record.SetProducer(b.bytes, b.pid, b.epoch, b.baseSeq)
}

// seqLost records that b, a stamped batch, leaves without being
// acknowledged (it failed, expired or was aborted): the leader may or may
// not hold its sequence range, so b's partition cannot go on with b's
// producer id. When that is the current id, the id is dropped
// (NeedProducerID); either way the partition's outstanding batches are
// re-stamped with the next usable id, from sequence 0, by Ready.
func (a *Accumulator) seqLost(b *batch) {
	p := b.part
	p.broken = true
	if b.gen == a.gen {
		a.pidValid = false
	}
}

// restamp restarts p's sequence under the current producer id: its
// outstanding stamped batches (in flight, or queued to be sent again) are
// stamped again in seq order from sequence 0, in new byte slices (the old
// ones were handed out). A send in flight becomes moot: its answer tells
// nothing about the new stamp.
func (a *Accumulator) restamp(p *partition) {
	bs := append(a.restamps[:0], p.inflight...)
	for _, b := range p.queue {
		if !b.stamped {
			break
		}
		bs = append(bs, b)
	}
	slices.SortFunc(bs, func(x, y *batch) int { return cmp.Compare(x.seq, y.seq) })
	seq := int32(0)
	for i, b := range bs {
		b.moot = b.id != 0
		b.bytes = slices.Clone(b.bytes)
		a.setStamp(b, seq)
		b.ordinal = i
		seq = seqAdd(seq, len(b.reports))
	}
	p.gen, p.nextSeq, p.stamps, p.broken = a.gen, seq, len(bs), false
	clear(bs)
	a.restamps = bs[:0]
}

// seqAdd returns seq advanced by n records, wrapping from math.MaxInt32 to
// 0 as Kafka's DefaultRecordBatch.incrementSequence does.
func seqAdd(seq int32, n int) int32 {
	next := int64(seq) + int64(n)
	if next > math.MaxInt32 {
		next -= math.MaxInt32 + 1
	}
	return int32(next)
}
