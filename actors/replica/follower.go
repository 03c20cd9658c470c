// follower.go: the replica actor as a follower (Config.Follow set). It
// first makes its log agree with the leader's (OffsetForLeaderEpoch and
// TruncationPoint, KIP-101/279), then pulls with long-poll replica fetches
// from its log end, appends what it gets with the leader's offsets and
// epochs, and takes the leader's high watermark, clamped to its own log.
// One request is in flight at a time; the answers come back through
// ReenterAfter on the actor's goroutine. Clients get NOT_LEADER_OR_FOLLOWER.

package replica

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/internal/frame"
	"github.com/actorlog/actorlog/messages"
)

// Follower fetch settings (Kafka's replica.fetch.* defaults, except the
// wait: a shorter long poll keeps acks=all latency low).
const (
	ReplicaFetchMaxBytes = 8 << 20
	ReplicaFetchWait     = 500 * time.Millisecond
	replicaBackoffMin    = 50 * time.Millisecond
	replicaBackoffMax    = time.Second
	// replicaRequestTimeout bounds a follower's request beyond the
	// leader's long-poll wait. A request that reaches the leader's host
	// while the broker restarts that replica (a new leader epoch: same
	// PID, new actor) sits in the old actor's mailbox and is dropped
	// unanswered when it stops; with a 10 s bound the partition's high
	// watermark then stood still that long after the leader change (the
	// 4 s write pauses of a rolling restart, ended only by the next one).
	replicaRequestTimeout = time.Second
	// replicaTruncateTimeout bounds OffsetForLeaderEpoch, the first
	// request to a new leader (so the one most likely to meet the
	// restart) and an in-memory lookup there; a retry is cheap.
	replicaTruncateTimeout = 500 * time.Millisecond
)

// The follower's steps carry the incarnation of the replica actor that
// scheduled them. A replica restarted for a new leader epoch gets the same
// PID, so a retry its previous incarnation scheduled (time.AfterFunc to
// self) reaches the new one; obeyed, it started a second fetch loop beside
// the new one — both fetching from the new leader at offsets the other had
// moved past ("batch starts at offset 810, expected >= 820" on every other
// append), one of them without the truncation step.
type (
	truncateStep struct{ inc uint64 }
	fetchStep    struct{ inc uint64 }
)

// following is a follower's view of its leader.
type following struct {
	leader  *actor.PID
	backoff time.Duration
	fetches int64 // answered fetches, for tests and logs
}

func (r *Replica) startFollowing(ctx actor.Context) {
	r.following = &following{leader: r.cfg.Follow}
	r.setHighWatermark(r.checkpointedHighWatermark())
	r.logger.WithFields(logrus.Fields{"leader": r.cfg.Follow, "leader_epoch": r.cfg.LeaderEpoch, "log_end_offset": r.log.LogEndOffset()}).Info("replica following")
	ctx.Send(ctx.Self(), truncateStep{r.inc})
}

// retry runs step again after a growing delay (a leader that moved or is
// not ready yet).
func (r *Replica) retry(ctx actor.Context, step any, why string, err error) {
	f := r.following
	f.backoff = min(max(2*f.backoff, replicaBackoffMin), replicaBackoffMax)
	r.logger.WithError(err).WithFields(logrus.Fields{"retry_in": f.backoff, "step": why}).Debug("follower step failed")
	self, root := ctx.Self(), ctx.ActorSystem().Root
	time.AfterFunc(f.backoff, func() { root.Send(self, step) })
}

// onTruncateStep asks the leader where the latest local epoch ends.
func (r *Replica) onTruncateStep(ctx actor.Context, m truncateStep) {
	if r.log == nil || r.following == nil || m.inc != r.inc {
		return
	}
	epoch, ok := r.log.LatestEpoch()
	if !ok {
		// No epochs: nothing to compare; start from the local log end.
		// (A log written only through this code always has epochs.)
		ctx.Send(ctx.Self(), fetchStep{r.inc})
		return
	}
	req := &messages.OffsetForLeaderEpochRequest{Topic: r.cfg.Topic, Partition: r.cfg.Partition,
		CurrentLeaderEpoch: r.cfg.LeaderEpoch, LeaderEpoch: epoch, ReplicaId: r.cfg.Self}
	inc := r.inc
	ctx.ReenterAfter(ctx.RequestFuture(r.following.leader, req, replicaTruncateTimeout), func(res any, err error) {
		if r.log == nil || inc != r.inc {
			return // stopped, or moved to another leader epoch (Transition)
		}
		resp, ok := res.(*messages.OffsetForLeaderEpochResponse)
		if err == nil && !ok {
			err = fmt.Errorf("unexpected answer %T", res)
		}
		if err == nil && resp.ErrorCode != 0 {
			err = fmt.Errorf("%v: %s", resp.ErrorCode, resp.ErrorMessage)
		}
		if err != nil {
			r.retry(ctx, truncateStep{r.inc}, "offset for leader epoch", err)
			return
		}
		r.truncate(ctx, EpochEndOffset{Epoch: resp.LeaderEpoch, EndOffset: resp.EndOffset})
	})
}

// truncate applies a truncation decision, then asks again or fetches.
func (r *Replica) truncate(ctx actor.Context, leader EpochEndOffset) {
	leo := r.log.LogEndOffset()
	d := TruncationPoint(leo, r.hw, r.log.EndOffsetForEpoch, leader)
	if d.TruncateTo < leo {
		end, err := r.log.TruncateTo(d.TruncateTo)
		if err != nil {
			r.logger.WithError(err).Error("follower: truncation failed")
			r.retry(ctx, truncateStep{r.inc}, "truncate", err)
			return
		}
		r.setHighWatermark(min(r.hw, end))
		r.logger.WithFields(logrus.Fields{"from": leo, "to": end, "leader_epoch": leader.Epoch, "leader_end_offset": leader.EndOffset}).Info("follower truncated its log to agree with the leader")
	}
	r.following.backoff = 0
	if !d.Completed {
		ctx.Send(ctx.Self(), truncateStep{r.inc})
		return
	}
	ctx.Send(ctx.Self(), fetchStep{r.inc})
}

// onFetchStep sends one replica fetch from the log end.
func (r *Replica) onFetchStep(ctx actor.Context, m fetchStep) {
	if r.log == nil || r.following == nil || m.inc != r.inc {
		return
	}
	last := int32(-1)
	if e, ok := r.log.LatestEpoch(); ok {
		last = e
	}
	req := &messages.FetchRequest{Topic: r.cfg.Topic, Partition: r.cfg.Partition, FetchOffset: r.log.LogEndOffset(),
		MaxBytes: ReplicaFetchMaxBytes, MinBytes: 1, MaxWaitMs: int32(ReplicaFetchWait / time.Millisecond),
		CurrentLeaderEpoch: r.cfg.LeaderEpoch, ReplicaId: r.cfg.Self, LogStartOffset: r.log.LogStartOffset(), LastFetchedEpoch: last}
	inc := r.inc
	ctx.ReenterAfter(ctx.RequestFuture(r.following.leader, req, ReplicaFetchWait+replicaRequestTimeout), func(res any, err error) {
		if r.log == nil || inc != r.inc {
			return // stopped, or moved to another leader epoch (Transition)
		}
		resp, ok := res.(*messages.FetchResponse)
		if err == nil && !ok {
			err = fmt.Errorf("unexpected answer %T", res)
		}
		if err != nil {
			r.retry(ctx, fetchStep{r.inc}, "fetch", err)
			return
		}
		r.onReplicaFetched(ctx, req, resp)
	})
}

func (r *Replica) onReplicaFetched(ctx actor.Context, req *messages.FetchRequest, resp *messages.FetchResponse) {
	switch {
	case resp.ErrorCode == messages.ErrorCode_ERROR_CODE_OFFSET_OUT_OF_RANGE:
		if resp.LogStartOffset > r.log.LogEndOffset() {
			// The leader deleted what this follower lacks.
			if err := r.log.TruncateFullyAndStartAt(resp.LogStartOffset); err != nil {
				r.retry(ctx, fetchStep{r.inc}, "restart log at the leader's start", err)
				return
			}
			r.setHighWatermark(resp.LogStartOffset)
			ctx.Send(ctx.Self(), fetchStep{r.inc})
			return
		}
		ctx.Send(ctx.Self(), truncateStep{r.inc})
		return
	case resp.ErrorCode != 0:
		r.retry(ctx, fetchStep{r.inc}, "fetch", fmt.Errorf("%v: %s", resp.ErrorCode, resp.ErrorMessage))
		return
	case resp.DivergingEpoch != nil:
		r.truncate(ctx, EpochEndOffset{Epoch: resp.DivergingEpoch.Epoch, EndOffset: resp.DivergingEpoch.EndOffset})
		return
	}
	if len(resp.Records) > 0 {
		_, err := r.log.AppendReplicated(resp.Records)
		recycleFetched(resp)
		if err != nil {
			r.logger.WithError(err).WithField("fetch_offset", req.FetchOffset).Error("follower: appending fetched batches failed")
			r.retry(ctx, fetchStep{r.inc}, "append", err)
			return
		}
	}
	r.following.fetches++
	r.following.backoff = 0
	r.setHighWatermark(FollowerHighWatermark(resp.HighWatermark, r.log.LogStartOffset(), r.log.LogEndOffset()))
	r.metrics.LogEndOffset(r.cfg.Topic, r.cfg.Partition, r.hw)
	ctx.Send(ctx.Self(), fetchStep{r.inc})
}

// fetchedFramesRecycled counts the frames recycleFetched gave back.
var fetchedFramesRecycled atomic.Int64

// FetchedFramesRecycled is how many frames holding fetch answers this
// process's follower replicas have given back to frame's pools.
func FetchedFramesRecycled() int64 { return fetchedFramesRecycled.Load() }

// recycleFetched gives the frame a fetch answer's records arrived in back
// to its pool once the follower has appended them (or failed to): a host's
// remote codec receives a FetchResponse envelope into a pooled frame of its
// own (actors/client: WithPooledFetchAnswers). From here on nothing reads
// the records: the log copied them to its segment and keeps no reference
// to them, appended or refused, and the answer was this replica's alone
// (one request, one answer). A leader in the same process answers with
// its own read frame, which no one else holds once answered
// (storage.Log.Read reads records for one answer), so that one may go back
// too; records of any other origin are left to the garbage collector
// (frame.Recycle leaves them alone).
func recycleFetched(resp *messages.FetchResponse) {
	if frame.Recycle(resp.Records) {
		fetchedFramesRecycled.Add(1)
	}
	resp.Records = nil
}
