// load.go: the loading behaviour's steps. The coordinator asks its replica
// for its log start and log end offsets (replica.GetState), then reads the
// partition with consumer fetches (replica id -1, so only records below the
// high watermark, carrying its leader epoch) from the log start until it
// has replayed everything up to that log end offset. Records the previous
// leader wrote but had not committed are waited for: they are committed
// once the new leader's followers catch up (or leave the ISR). Nothing
// else writes to the partition meanwhile: only this coordinator may, and
// it refuses commits until loaded.
//
// A failed step is retried after retryBackoff; a replica that says it no
// longer leads at the coordinator's epoch (NOT_LEADER_OR_FOLLOWER,
// FENCED_LEADER_EPOCH, or an epoch in GetState other than the
// coordinator's) ends loading: the coordinator is fenced.

package coordinator

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/replica"
	"github.com/actorlog/actorlog/messages"
)

// loadStep takes the next step of loading: learn the target, or fetch.
func (c *Coordinator) loadStep(ctx actor.Context) {
	c.load.retry = nil
	if !c.load.targetKnown {
		c.requestReplica(ctx, replica.GetState, 0, func(res any, err error) { c.onReplicaState(ctx, res, err) })
		return
	}
	if c.load.next >= c.load.target {
		c.finishLoad(ctx)
		return
	}
	req := &messages.FetchRequest{
		Topic: messages.OffsetsTopic, Partition: c.cfg.Partition, FetchOffset: c.load.next,
		MaxBytes: loadFetchMaxBytes, MinBytes: 1, MaxWaitMs: int32(loadFetchMaxWait / time.Millisecond),
		CurrentLeaderEpoch: c.cfg.LeaderEpoch, ReplicaId: -1, LogStartOffset: -1, LastFetchedEpoch: -1,
		CorrelationId: c.newID(),
	}
	c.requestReplica(ctx, req, loadFetchMaxWait, func(res any, err error) { c.onLoadFetch(ctx, res, err) })
}

func (c *Coordinator) onReplicaState(ctx actor.Context, res any, err error) {
	st, err := answerAs[replica.State](res, err)
	switch {
	case err != nil:
		c.retryLoad(ctx, fmt.Errorf("coordinator: asking the replica for its offsets: %w", err))
		return
	case st.LeaderEpoch != c.cfg.LeaderEpoch:
		c.fence(ctx, fmt.Sprintf("the replica is at leader epoch %d, this coordinator at %d", st.LeaderEpoch, c.cfg.LeaderEpoch))
		return
	}
	c.load.targetKnown = true
	c.load.target, c.load.next = st.LogEndOffset, st.LogStartOffset
	c.logger.WithFields(logrus.Fields{"log_start_offset": st.LogStartOffset, "log_end_offset": st.LogEndOffset, "high_watermark": st.HighWatermark}).Debug("replaying the partition")
	c.loadStep(ctx)
}

// answerAs returns a replica's answer as a T, or the error: err, or an
// answer of another type.
func answerAs[T any](res any, err error) (T, error) {
	v, ok := res.(T)
	if err == nil && !ok {
		err = fmt.Errorf("unexpected answer %T", res)
	}
	return v, err
}

func (c *Coordinator) onLoadFetch(ctx actor.Context, res any, err error) {
	resp, err := answerAs[*messages.FetchResponse](res, err)
	if err != nil {
		c.retryLoad(ctx, fmt.Errorf("coordinator: fetching offset %d: %w", c.load.next, err))
		return
	}
	switch resp.ErrorCode {
	case messages.ErrorCode_ERROR_CODE_UNSPECIFIED:
	case messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER, messages.ErrorCode_ERROR_CODE_FENCED_LEADER_EPOCH:
		c.fence(ctx, fmt.Sprintf("the replica refused the load: %v", resp.Err()))
		return
	case messages.ErrorCode_ERROR_CODE_OFFSET_OUT_OF_RANGE:
		if resp.LogStartOffset > c.load.next {
			// Only retention moves the log start, and the offsets topic
			// keeps its log; replay what is left.
			c.logger.WithFields(logrus.Fields{"from": c.load.next, "log_start_offset": resp.LogStartOffset}).Warn("the partition's log start moved past the load; replaying from it")
			c.load.next = resp.LogStartOffset
			c.loadStep(ctx)
			return
		}
		fallthrough
	default:
		c.retryLoad(ctx, fmt.Errorf("coordinator: fetching offset %d: %w", c.load.next, resp.Err()))
		return
	}
	r, err := replay(resp.Records, c.load.next, c.table, c.membership)
	c.load.next = max(c.load.next, r.Next)
	c.load.records += r.Records
	c.load.skipped += len(r.Skipped)
	for _, bad := range r.Skipped {
		c.logger.WithError(bad).Warn("skipping an offsets topic record that cannot be decoded")
	}
	if err != nil {
		c.retryLoad(ctx, err)
		return
	}
	c.loadStep(ctx)
}

// retryLoad logs why a load step failed and takes it again later.
func (c *Coordinator) retryLoad(ctx actor.Context, err error) {
	c.logger.WithError(err).Warn("coordinator load step failed; retrying")
	self, root := ctx.Self(), ctx.ActorSystem().Root
	c.load.retry = time.AfterFunc(retryBackoff, func() { root.Send(self, loadRetry{}) })
}

// finishLoad restores the groups and starts answering.
func (c *Coordinator) finishLoad(ctx actor.Context) {
	c.loaded = true
	c.membership.Loaded()
	c.groups.adopt(c.table.Groups())
	c.behavior.Become(c.active)
	c.armGroupTimer(ctx)
	c.armExpiryTimer(ctx)
	c.logger.WithFields(logrus.Fields{
		"records": c.load.records, "skipped": c.load.skipped, "groups": len(c.groups.groups), "offsets": c.table.Len(),
		"log_end_offset": c.load.target, "took": time.Since(c.load.started).Round(time.Millisecond),
	}).Info("coordinator loaded; serving its groups")
}

// loadingDetail is the message of COORDINATOR_LOAD_IN_PROGRESS.
func (c *Coordinator) loadingDetail() string {
	if !c.load.targetKnown {
		return fmt.Sprintf("coordinator of partition %d is starting to load", c.cfg.Partition)
	}
	return fmt.Sprintf("coordinator of partition %d has replayed up to offset %d of %d", c.cfg.Partition, c.load.next, c.load.target)
}

// newID returns a fresh id for a request to the replica.
func (c *Coordinator) newID() int64 {
	c.nextID++
	return c.nextID
}
