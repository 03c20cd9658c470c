// produce.go: the leader's produce handler.
//
// A ProduceRequest carries exactly one RecordBatch v2 for one partition. The
// leader checks the target and leader epoch, the acks value, and (for
// acks=all) that the ISR is at least min.insync.replicas, then appends the
// batch (the log validates it and assigns offsets) and answers:
//   - acks=0: no answer at all, not even for an error;
//   - acks=1: once the batch is in the leader's log;
//   - acks=all: once the high watermark passes the batch (with one replica,
//     at once).
//
// Error codes: UNKNOWN_TOPIC_OR_PARTITION, FENCED_LEADER_EPOCH,
// UNKNOWN_LEADER_EPOCH, INVALID_TOPIC_EXCEPTION (a ProduceRequest to an
// internal topic, which only its coordinator's InternalProduce may write),
// INVALID_REQUIRED_ACKS, NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT (acks=all:
// the wait timed out, or too many wait already),
// MESSAGE_TOO_LARGE, CORRUPT_MESSAGE, INVALID_RECORD, KAFKA_STORAGE_ERROR,
// OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH.
//
// The log checks every record of the batch, as Kafka's LogValidator does
// (storage.Log.Append): a batch with a bad CRC, or whose compressed records
// are no valid stream of its codec, is CORRUPT_MESSAGE; one whose records
// break a rule (count, offset deltas, lengths, bytes after the last) is
// INVALID_RECORD, and so is one with a record without a key in a topic
// whose cleanup.policy includes compact (compacted.go); one larger than
// max.message.bytes, or whose records
// inflate beyond the log's limit (a decompression bomb), is
// MESSAGE_TOO_LARGE. Nothing of a refused batch is written.
//
// Idempotent batches (producer id >= 0) are checked against the producer's
// state in the log: a retry of one of the producer's last 16 batches (storage.ProducerBatchesRetained) is
// answered with the original batch's offsets and not written again; a gap
// in the sequence or an older producer epoch is refused.
//
// At most Config.MaxParkedAcks acks=all requests wait for the high
// watermark; one beyond that is refused before its batch is appended, with
// REQUEST_TIMED_OUT (retriable: the client sends it again, and nothing was
// written). See parked.go.

package replica

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/internal/frame"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage"
	"github.com/actorlog/actorlog/storage/record"
)

var recordChecksum = record.ErrChecksum

// DefaultProduceTimeout bounds an acks=all wait when the request gives no
// timeout_ms (Kafka's request.timeout.ms default).
const DefaultProduceTimeout = 30 * time.Second

// parkedProduce is an acks=all request whose batch is in the log, waiting
// for the high watermark to pass it.
type parkedProduce struct {
	resp     *messages.ProduceResponse
	sender   *actor.PID
	required int64 // the batch's last offset + 1
	timer    *time.Timer
	start    time.Time
	records  int
	bytes    int
}

// queuedProduce is a ProduceRequest taken from the mailbox and not yet
// appended: its sender and arrival are kept, as the message being handled
// when it is appended is another.
type queuedProduce struct {
	req    *messages.ProduceRequest
	sender *actor.PID
	start  time.Time
}

// produceFlush appends the queued produces; the replica sends it to itself
// when it queues the first, so it comes after every message already in
// the mailbox.
type produceFlush struct{}

// maxQueuedProduces bounds the produces appended together.
const maxQueuedProduces = 64

// queueProduce takes a leader's small produce for the next group append
// and says whether it did. Produces that arrive back to back (several
// partitions' producers, or one producer's batches in flight) are
// appended together (storage.Log.AppendMany: one write for the group),
// each answered as if appended alone; any other message appends the
// queued ones first, so nothing sees them out of order. A large batch is
// appended alone, its check overlapping its write.
func (r *Replica) queueProduce(ctx actor.Context, req *messages.ProduceRequest) bool {
	if r.leader == nil || r.log == nil || len(req.Records) >= storage.ParallelValidateBytes {
		return false
	}
	r.queued = append(r.queued, queuedProduce{req: req, sender: ctx.Sender(), start: r.cfg.Now()})
	if len(r.queued) == 1 {
		ctx.Send(ctx.Self(), produceFlush{})
	} else if len(r.queued) >= maxQueuedProduces {
		r.flushProduces(ctx)
	}
	return true
}

// flushProduces appends and answers the queued produces, in the order
// they came.
func (r *Replica) flushProduces(ctx actor.Context) {
	q := r.queued
	defer func() {
		clear(q) // no request is kept past its answer
		r.queued = q[:0]
	}()
	if len(q) == 1 {
		r.produce(ctx, q[0].req, q[0].sender, q[0].start, false)
		return
	}
	resps := make([]*messages.ProduceResponse, len(q))
	batches := make([][]byte, 0, len(q))
	parking := 0 // acks=all produces of the group that will wait
	for i, p := range q {
		resps[i] = newProduceResponse(p.req)
		code, msg := r.checkProduce(p.req, false, parking)
		if code == 0 {
			batches = append(batches, p.req.Records)
			if p.req.Acks == messages.Acks_ACKS_ALL {
				parking++
			}
		}
		resps[i].ErrorCode, resps[i].ErrorMessage = code, msg
	}
	results := r.log.AppendMany(batches, r.cfg.LeaderEpoch, r.appendResults)
	r.appendResults = results[:0]
	grew := false
	records := make([]int, len(q))
	required := make([]int64, len(q))
	for i, next := 0, 0; i < len(q); i++ {
		if resps[i].ErrorCode != 0 {
			continue
		}
		res := results[next]
		next++
		records[i], required[i] = r.applyAppend(resps[i], res.Info, res.Err)
		grew = grew || records[i] > 0
	}
	for i := range results {
		results[i] = storage.AppendResult{} // no batch bytes or errors kept past the call
	}
	if grew {
		r.leader.OnLeaderAppend(r.log.LogEndOffset(), r.cfg.Now())
		r.takeHighWatermark(ctx)
	}
	for i, p := range q {
		r.answerProduce(ctx, p.req, p.sender, resps[i], records[i], required[i], p.start, true)
	}
	if grew {
		r.wakeFetches(ctx) // after the answers, as produce does
	}
}

// produce appends one request's batch and answers it; internal says it
// came as an InternalProduce, the only way into an internal topic's
// partition.
func (r *Replica) produce(ctx actor.Context, req *messages.ProduceRequest, sender *actor.PID, start time.Time, internal bool) {
	resp := newProduceResponse(req)
	records := 0
	required := int64(-1)
	code, msg := r.checkProduce(req, internal, 0)
	resp.ErrorCode, resp.ErrorMessage = code, msg
	if code == 0 {
		info, err := r.log.Append(req.Records, r.cfg.LeaderEpoch)
		records, required = r.applyAppend(resp, info, err)
		if records > 0 {
			r.leader.OnLeaderAppend(r.log.LogEndOffset(), r.cfg.Now())
			r.takeHighWatermark(ctx)
			// Parked fetches are woken after the produce is answered:
			// it need not wait for their reads.
			defer r.wakeFetches(ctx)
		}
	}
	r.answerProduce(ctx, req, sender, resp, records, required, start, !internal)
}

// producedFramesRecycled counts the received produce frames
// recycleRecords gave back.
var producedFramesRecycled atomic.Int64

// ProduceFramesRecycled is how many frames holding received produce
// requests this process's replicas have given back to frame's pools.
func ProduceFramesRecycled() int64 { return producedFramesRecycled.Load() }

// recycleRecords gives the frame a ProduceRequest arrived in back to its
// pool as the request is answered, before the answer is sent: the remote
// codec received the request's envelope into a pooled frame of its own
// (actors/client: remotedecode.go) whose records still reach the frame's
// trailer. From here on nothing reads the batch: the log copied it to its segment (it
// keeps no reference to a batch it was given, appended or refused), the
// answer and a parked acks=all wait hold offsets, not records, and the
// request was this replica's alone (one envelope, one message, one
// receiver). Records of any other origin — a local producer's frame, the
// Kafka listener's request, storage's read frames, which never become a
// ProduceRequest's records — are not pooled received frames, and
// frame.Recycle leaves them alone (an InternalProduce is not even
// offered).
func recycleRecords(req *messages.ProduceRequest) {
	if frame.Recycle(req.Records) {
		producedFramesRecycled.Add(1)
		req.Records = nil
	}
}

func newProduceResponse(req *messages.ProduceRequest) *messages.ProduceResponse {
	return &messages.ProduceResponse{
		CorrelationId:   req.CorrelationId,
		Topic:           req.Topic,
		Partition:       req.Partition,
		BaseOffset:      -1,
		LogAppendTimeMs: -1,
	}
}

// checkProduce is what a produce must pass before its batch goes to the
// log: the target and leader epoch, internal topics, acks, the parked
// acks=all limit (parking: how many more will park before this one) and,
// in a compacted topic, keys.
func (r *Replica) checkProduce(req *messages.ProduceRequest, internal bool, parking int) (messages.ErrorCode, string) {
	code, msg := r.checkTarget(req.Topic, req.Partition, req.CurrentLeaderEpoch)
	if code == 0 && r.cfg.Internal && !internal {
		code, msg = messages.ErrorCode_ERROR_CODE_INVALID_TOPIC_EXCEPTION, fmt.Sprintf("topic %s is internal: only the group coordinators write to it", req.Topic)
	}
	if code == 0 {
		switch req.Acks {
		case messages.Acks_ACKS_NONE, messages.Acks_ACKS_LEADER:
		case messages.Acks_ACKS_ALL:
			if code = r.leader.CheckAcksAll(); code != 0 {
				msg = fmt.Sprintf("%d in-sync replicas %v, min.insync.replicas is %d", r.leader.InSyncCount(), r.leader.ISR(), r.leader.EffectiveMinISR())
			}
		default:
			code, msg = messages.ErrorCode_ERROR_CODE_INVALID_REQUIRED_ACKS, "acks must be 0, 1 or all"
		}
	}
	if parked := len(r.waitingAcks) + parking; code == 0 && req.Acks == messages.Acks_ACKS_ALL && parked >= r.cfg.MaxParkedAcks {
		r.acksRefused++
		code, msg = messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT,
			fmt.Sprintf("%d acks=all requests already wait for the in-sync replicas (the limit); the batch was not written, retry", parked)
		if r.acksRefused&(r.acksRefused-1) == 0 { // 1, 2, 4, 8...: a flood logs a few lines
			r.logger.WithFields(logrus.Fields{"parked": parked, "limit": r.cfg.MaxParkedAcks, "refused": r.acksRefused}).
				Warn("too many acks=all produces waiting; refusing")
		}
	}
	if code == 0 {
		code, msg = r.checkKeys(req.Records) // compacted topics: INVALID_RECORD for a null key
	}
	return code, msg
}

// applyAppend puts an append's outcome into resp and returns the records
// it added to the log (0 for a duplicate or a refusal) and the offset the
// high watermark must pass before acks=all is answered (-1: refused).
func (r *Replica) applyAppend(resp *messages.ProduceResponse, info storage.AppendInfo, err error) (int, int64) {
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = appendCode(err), err.Error()
		r.logger.WithError(err).WithField("code", resp.ErrorCode).Debug("produce refused")
		return 0, -1
	}
	resp.BaseOffset = info.FirstOffset
	resp.LogAppendTimeMs = info.LogAppendTime
	if info.Duplicate {
		// A retry of a batch already in the log (idempotent producer):
		// answered with the original offsets once those are committed,
		// as any other batch.
		r.logger.WithFields(logrus.Fields{"base_offset": info.FirstOffset, "last_offset": info.LastOffset}).Debug("duplicate batch; answering with its original offsets")
		return 0, info.LastOffset + 1
	}
	r.growth.add(info.LastOffset+1, info.Bytes)
	return int(info.LastOffset - info.FirstOffset + 1), info.LastOffset + 1
}

// answerProduce answers a produce whose append is done (or refused), or
// parks an acks=all answer until the high watermark passes its batch.
func (r *Replica) answerProduce(ctx actor.Context, req *messages.ProduceRequest, sender *actor.PID, resp *messages.ProduceResponse, records int, required int64, start time.Time, recycle bool) {
	code := resp.ErrorCode
	size := len(req.Records)
	if recycle {
		// Before the answer leaves: whoever holds the answer knows the
		// frame is back (the answer and a parked wait keep no records).
		recycleRecords(req)
	}
	if r.log != nil {
		resp.LogStartOffset = r.log.LogStartOffset()
	}
	r.metrics.Produced(r.cfg.Topic, r.cfg.Partition, records, size, r.cfg.Now().Sub(start), code)
	if req.Acks == messages.Acks_ACKS_NONE {
		if code != 0 {
			r.logger.WithFields(logrus.Fields{"code": code, "error": resp.ErrorMessage}).Debug("acks=0 produce failed; no response is sent")
		}
		return
	}
	if sender == nil {
		return
	}
	if code == 0 && req.Acks == messages.Acks_ACKS_ALL {
		if done, c := r.leader.AcksAllDone(required); !done {
			r.parkProduce(ctx, req, sender, resp, required, records, size, start)
			return
		} else if c != 0 {
			resp.ErrorCode, resp.ErrorMessage = c, "the in-sync replicas fell below min.insync.replicas; the batch is in the log"
		}
	}
	ctx.Send(sender, resp)
}

// appendCode is the error code of a refused append: codeFor's, but for a
// batch whose compressed records cannot be decoded at all, which is
// CORRUPT_MESSAGE (Kafka's code for a batch it cannot read) rather than the
// INVALID_RECORD of a batch whose records break a rule.
func appendCode(err error) messages.ErrorCode {
	if errors.Is(err, storage.ErrInvalidBatch) && errors.Is(err, record.ErrUndecodable) && !errors.Is(err, storage.ErrRecordTooLarge) {
		return messages.ErrorCode_ERROR_CODE_CORRUPT_MESSAGE
	}
	return codeFor(err)
}

// parkProduce holds an acks=all answer until the high watermark passes
// the batch or the request's timeout ends.
func (r *Replica) parkProduce(ctx actor.Context, req *messages.ProduceRequest, sender *actor.PID, resp *messages.ProduceResponse, required int64, records, size int, start time.Time) {
	wait := DefaultProduceTimeout
	if req.TimeoutMs > 0 {
		wait = time.Duration(req.TimeoutMs) * time.Millisecond
	}
	r.nextWait++
	id := r.nextWait
	self, root := ctx.Self(), ctx.ActorSystem().Root
	r.waitingAcks[id] = &parkedProduce{
		resp: resp, sender: sender, required: required, start: start, records: records, bytes: size,
		timer: time.AfterFunc(wait, func() { root.Send(self, produceTimeout{id: id}) }),
	}
	r.acksPeak = max(r.acksPeak, len(r.waitingAcks))
}

// completeProduces answers the acks=all requests the high watermark now
// passes.
func (r *Replica) completeProduces(ctx actor.Context) {
	for id, p := range r.waitingAcks {
		done, code := r.leader.AcksAllDone(p.required)
		if !done {
			continue
		}
		delete(r.waitingAcks, id)
		p.timer.Stop()
		if code != 0 {
			p.resp.ErrorCode, p.resp.ErrorMessage = code, "the in-sync replicas fell below min.insync.replicas; the batch is in the log"
		}
		ctx.Send(p.sender, p.resp)
	}
	r.shrinkParked()
}

func (r *Replica) onProduceTimeout(ctx actor.Context, m produceTimeout) {
	p, ok := r.waitingAcks[m.id]
	if !ok {
		return // answered already
	}
	delete(r.waitingAcks, m.id)
	r.shrinkParked()
	p.resp.ErrorCode = messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT
	p.resp.ErrorMessage = fmt.Sprintf("the in-sync replicas did not all have the batch within the timeout (high watermark %d, batch ends at %d)", r.hw, p.required)
	ctx.Send(p.sender, p.resp)
}

// onLogGrew takes the leader state's high watermark after the log or a
// follower moved, answers the acks=all requests it passes, and wakes the
// parked fetches (followers wait for the log end, consumers for the high
// watermark).
func (r *Replica) onLogGrew(ctx actor.Context) {
	r.takeHighWatermark(ctx)
	r.wakeFetches(ctx)
}

// takeHighWatermark takes the leader state's high watermark and answers
// the acks=all requests it passes.
func (r *Replica) takeHighWatermark(ctx actor.Context) {
	if hw := r.leader.HighWatermark(); hw > r.hw {
		r.setHighWatermark(hw)
		r.metrics.LogEndOffset(r.cfg.Topic, r.cfg.Partition, hw)
		r.completeProduces(ctx)
	}
}
