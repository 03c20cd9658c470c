// fetch.go: the leader's fetch handler, with long polling.
//
// A FetchRequest asks for whole batches from fetch_offset, up to max_bytes
// (the first batch is returned whole even if larger, so a consumer is never
// stuck), below the high watermark. If fewer than min_bytes are available
// (and the byte limit did not cut the read short) and max_wait_ms > 0, the
// request is parked until enough data arrives or the wait ends, then
// answered with what there is.
//
// The server does not trust max_bytes: a consumer fetch is served with at
// most Config.FetchMaxBytes (Kafka's fetch.max.bytes, 55 MiB), a follower
// fetch with at most Config.ReplicaFetchResponseMaxBytes (Kafka's
// replica.fetch.response.max.bytes, 10 MiB), whatever it asks. A request
// names one partition, so the cap is per request and per partition alike.
// The first batch still comes whole past the cap; the leader accepted it,
// so it is at most the topic's max.message.bytes.
//
// A follower fetch (replica_id >= 0) is served only from the follower's
// own host (senders.go); otherwise it is refused first, with
// CLUSTER_AUTHORIZATION_FAILED and no offsets or epochs.
//
// Error codes: UNKNOWN_TOPIC_OR_PARTITION, FENCED_LEADER_EPOCH,
// UNKNOWN_LEADER_EPOCH, OFFSET_OUT_OF_RANGE, INVALID_FETCH_SIZE,
// CORRUPT_MESSAGE, KAFKA_STORAGE_ERROR, NOT_LEADER_OR_FOLLOWER (stopping),
// CLUSTER_AUTHORIZATION_FAILED.
//
// At most Config.MaxParkedFetches fetches are parked; one beyond that is
// answered at once with what there is (parked.go).

package replica

import (
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage/record"
)

// MaxFetchWait bounds max_wait_ms, so a client cannot park a request forever.
const MaxFetchWait = 30 * time.Second

// Server-side fetch caps: the defaults of Config.FetchMaxBytes and
// Config.ReplicaFetchResponseMaxBytes.
const (
	// DefaultFetchMaxBytes is Kafka's broker fetch.max.bytes default
	// (55 MiB): the most one consumer fetch returns (one 30-byte request
	// asking 2^31-1 bytes got 105 MB before).
	DefaultFetchMaxBytes = 57671680
	// DefaultReplicaFetchResponseMaxBytes is Kafka's
	// replica.fetch.response.max.bytes default (10 MiB): the most one
	// follower fetch returns. Followers here ask ReplicaFetchMaxBytes.
	DefaultReplicaFetchResponseMaxBytes = 10 << 20
)

// FetchLimit is the byte limit a fetch is served with: what it asks
// (maxBytes), but at most consumerCap for a consumer (replicaID < 0) and
// followerCap for a follower. Pure.
func FetchLimit(replicaID, maxBytes int32, consumerCap, followerCap int) int {
	limit := consumerCap
	if replicaID >= 0 {
		limit = followerCap
	}
	return min(int(max(maxBytes, 0)), limit)
}

type parkedFetch struct {
	req    *messages.FetchRequest
	sender *actor.PID
	timer  *time.Timer
	start  time.Time
	// upTo is the bound (high watermark or log end) its last read went
	// up to, have the bytes that read returned, need the bytes that
	// satisfy it (parked.go).
	upTo       int64
	have, need int
}

func (r *Replica) fetchError(req *messages.FetchRequest, code messages.ErrorCode, msg string) *messages.FetchResponse {
	resp := &messages.FetchResponse{
		CorrelationId: req.CorrelationId,
		Topic:         req.Topic,
		Partition:     req.Partition,
		ErrorCode:     code,
		ErrorMessage:  msg,
		HighWatermark: r.hw, LastStableOffset: r.hw,
		LeaderEpoch: r.cfg.LeaderEpoch,
	}
	if r.log != nil {
		resp.LogStartOffset = r.log.LogStartOffset()
	}
	return resp
}

// read serves req from the log; it reports whether min_bytes was met.
// Consumers read below the high watermark, followers up to the log end.
func (r *Replica) read(req *messages.FetchRequest) (*messages.FetchResponse, bool) {
	upTo := r.readBound(req)
	limit := FetchLimit(req.ReplicaId, req.MaxBytes, r.cfg.FetchMaxBytes, r.cfg.ReplicaFetchResponseMaxBytes)
	res, err := r.log.Read(req.FetchOffset, limit, upTo)
	if err != nil {
		return r.fetchError(req, codeFor(err), err.Error()), true
	}
	resp := r.fetchError(req, 0, "")
	resp.Records = res.Records
	resp.LogStartOffset = res.LogStartOffset
	// A read the byte limit cut short meets min_bytes: waiting could not
	// make the answer larger.
	enough := len(res.Records) >= int(req.MinBytes) || readCutShort(res.Records, upTo)
	return resp, len(res.Records) > 0 && enough
}

// readBound is how far req may read: the high watermark for a consumer,
// the log end for a follower.
func (r *Replica) readBound(req *messages.FetchRequest) int64 {
	if req.ReplicaId >= 0 {
		return r.log.LogEndOffset()
	}
	return r.hw
}

// readCutShort reports whether records (whole batches, as Log.Read
// returns them) end before upTo, i.e. the byte limit and not the data
// ended the read. It reads only the batches' length fields and the last
// header.
func readCutShort(records []byte, upTo int64) bool {
	last := -1
	for at := 0; at < len(records); {
		n, err := record.FrameSize(records[at:])
		if err != nil || n > len(records)-at {
			return false
		}
		last, at = at, at+n
	}
	if last < 0 {
		return false
	}
	h, err := record.ParseHeader(records[last:])
	return err == nil && h.NextOffset() < upTo
}

func (r *Replica) onFetch(ctx actor.Context, req *messages.FetchRequest) {
	start := r.cfg.Now()
	if req.ReplicaId >= 0 && !r.fromFollower(ctx, req.ReplicaId) {
		// Before anything that could answer with offsets or epochs.
		r.refuseFollower(ctx, cluster.RefusedFollowerFetch, req.ReplicaId)
		r.reply(ctx, ctx.Sender(), &messages.FetchResponse{CorrelationId: req.CorrelationId, Topic: req.Topic, Partition: req.Partition,
			ErrorCode: messages.ErrorCode_ERROR_CODE_CLUSTER_AUTHORIZATION_FAILED, ErrorMessage: followerRefusal(req.ReplicaId)}, start)
		return
	}
	code, msg := r.checkTarget(req.Topic, req.Partition, req.CurrentLeaderEpoch)
	if code == 0 && (req.MaxBytes < 0 || req.MinBytes < 0 || req.MaxWaitMs < 0) {
		code, msg = messages.ErrorCode_ERROR_CODE_INVALID_FETCH_SIZE, "max_bytes, min_bytes and max_wait_ms must not be negative"
	}
	if code != 0 {
		r.reply(ctx, ctx.Sender(), r.fetchError(req, code, msg), start)
		return
	}
	if req.ReplicaId >= 0 {
		if resp := r.onFollowerFetch(ctx, req); resp != nil {
			r.reply(ctx, ctx.Sender(), resp, start)
			return
		}
	}
	resp, enough := r.read(req)
	if enough || resp.ErrorCode != 0 || req.MaxWaitMs == 0 || ctx.Sender() == nil {
		r.reply(ctx, ctx.Sender(), resp, start)
		return
	}
	if len(r.waiting) >= r.cfg.MaxParkedFetches {
		// Answered as if max_wait_ms were 0; the client fetches again.
		r.fetchesNotParked++
		if r.fetchesNotParked&(r.fetchesNotParked-1) == 0 { // 1, 2, 4, 8...: a flood logs a few lines
			r.logger.WithFields(logrus.Fields{"parked": len(r.waiting), "limit": r.cfg.MaxParkedFetches, "not_parked": r.fetchesNotParked, "sender": ctx.Sender()}).
				Warn("too many parked fetches; answering at once")
		}
		r.reply(ctx, ctx.Sender(), resp, start)
		return
	}
	wait := min(time.Duration(req.MaxWaitMs)*time.Millisecond, MaxFetchWait)
	r.nextWait++
	id := r.nextWait
	self, root := ctx.Self(), ctx.ActorSystem().Root
	r.waiting[id] = &parkedFetch{
		req:    req,
		sender: ctx.Sender(),
		start:  start,
		timer:  time.AfterFunc(wait, func() { root.Send(self, fetchTimeout{id: id}) }),
		upTo:   r.readBound(req),
		have:   len(resp.Records),
		need:   fetchNeed(req.MinBytes, FetchLimit(req.ReplicaId, req.MaxBytes, r.cfg.FetchMaxBytes, r.cfg.ReplicaFetchResponseMaxBytes)),
	}
	if req.ReplicaId >= 0 {
		r.parkedFollowers++
	}
	r.waitingPeak = max(r.waitingPeak, len(r.waiting))
}

func (r *Replica) reply(ctx actor.Context, to *actor.PID, resp *messages.FetchResponse, start time.Time) {
	r.metrics.Fetched(r.cfg.Topic, r.cfg.Partition, len(resp.Records), r.cfg.Now().Sub(start), resp.ErrorCode)
	if to != nil {
		ctx.Send(to, resp)
	}
}

// wakeFetches answers the parked fetches that new data satisfies. Only a
// fetch whose bound moved, by enough bytes to satisfy it (as far as the
// byte clock knows), reads the log.
func (r *Replica) wakeFetches(ctx actor.Context) {
	if len(r.waiting) == 0 || r.log == nil {
		return
	}
	hw, leo := r.hw, r.log.LogEndOffset()
	if hw == r.wokeHW && (leo == r.wokeLEO || r.parkedFollowers == 0) {
		return // no parked fetch's bound moved (the common append of a replicated partition)
	}
	r.wokeHW, r.wokeLEO = hw, leo
	for id, p := range r.waiting {
		upTo := hw
		if p.req.ReplicaId >= 0 {
			upTo = leo
		}
		if upTo <= p.upTo {
			continue // nothing new below its bound
		}
		if grown, ok := r.growth.between(p.upTo, upTo); ok && p.have+int(grown) < p.need {
			p.upTo, p.have = upTo, p.have+int(grown)
			continue
		}
		r.wakeReads++
		resp, enough := r.read(p.req)
		if !enough && resp.ErrorCode == 0 {
			p.upTo, p.have = upTo, len(resp.Records)
			continue
		}
		p.timer.Stop()
		r.unpark(id, p)
		r.reply(ctx, p.sender, resp, p.start)
	}
	r.shrinkParked()
}

func (r *Replica) onFetchTimeout(ctx actor.Context, msg fetchTimeout) {
	p, ok := r.waiting[msg.id]
	if !ok {
		return // answered already
	}
	r.unpark(msg.id, p)
	r.shrinkParked()
	if r.log == nil {
		r.reply(ctx, p.sender, r.fetchError(p.req, messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER, "replica stopping"), p.start)
		return
	}
	resp, _ := r.read(p.req)
	r.reply(ctx, p.sender, resp, p.start)
}

// onFollowerFetch records a follower's fetch (its log end offset is the
// fetch offset) in the leader state: the high watermark may advance and
// the follower may be proposed into the ISR. It returns an answer when the
// fetch must not read: a diverging epoch (the follower truncates first) or
// an error.
func (r *Replica) onFollowerFetch(ctx actor.Context, req *messages.FetchRequest) *messages.FetchResponse {
	div, diverging, code := DivergingEpoch(req.LastFetchedEpoch, req.FetchOffset, r.log.LogStartOffset(), r.log.EndOffsetForEpoch)
	if code != 0 {
		return r.fetchError(req, code, fmt.Sprintf("fetch offset %d with last fetched epoch %d is outside the leader's log", req.FetchOffset, req.LastFetchedEpoch))
	}
	if diverging {
		resp := r.fetchError(req, 0, "")
		resp.DivergingEpoch = &messages.EpochEndOffset{Epoch: div.Epoch, EndOffset: div.EndOffset}
		return resp
	}
	step, err := r.leader.OnFollowerFetch(req.ReplicaId, req.FetchOffset, r.log.LogEndOffset(), r.cfg.Now())
	switch {
	case errors.Is(err, ErrUnknownReplica):
		return r.fetchError(req, messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER, err.Error()+"; consumers send replica_id -1")
	case errors.Is(err, ErrFetchOffset):
		return r.fetchError(req, messages.ErrorCode_ERROR_CODE_OFFSET_OUT_OF_RANGE, err.Error())
	case err != nil:
		return r.fetchError(req, messages.ErrorCode_ERROR_CODE_UNKNOWN_SERVER_ERROR, err.Error())
	}
	if step.ExpandISR != nil {
		r.proposeISR(ctx, *step.ExpandISR, "follower caught up")
	}
	if step.HighWatermarkAdvanced {
		r.onLogGrew(ctx)
	}
	return nil
}
