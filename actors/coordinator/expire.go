// expire.go: offset expiry (Kafka's GroupMetadataManager.cleanupGroupMetadata,
// KIP-211). Once loaded, the coordinator runs a check every
// group.Config.OffsetsRetentionCheckInterval (Kafka's
// offsets.retention.check.interval.ms): for each of its groups it hands
// the group's committed offsets, with their commit timestamps, to the core
// (group.Group.ExpireOffsets), which names those that expired (the group
// has been Empty for OffsetsRetention, or, for a group that never had
// members, each offset's commit is that old) and whether the group goes
// with them. The coordinator writes their tombstones (the records group
// deletion writes, plus the group metadata tombstone when the group goes)
// with acks=all; once they are durable it drops the offsets from its table
// and tells the core (group.Group.OffsetsExpired), which makes a group that
// is still Empty and without offsets Dead: it is forgotten and leaves
// ListGroups.
//
// A group with offset commits in flight, or being deleted or expired, is
// skipped until the next check, so no commit acknowledged after the
// tombstones comes back (OffsetTable's invariant). When the empty-since
// time is that of the group metadata record (Kafka's
// current_state_timestamp), which a new coordinator restores, expiry
// neither restarts nor comes early after a failover.

package coordinator

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/group"
	"github.com/actorlog/actorlog/messages"
)

// expireTick is the offset expiry timer's message.
type expireTick struct{}

// armExpiryTimer schedules the next expiry check one interval from now.
func (c *Coordinator) armExpiryTimer(ctx actor.Context) {
	c.stopExpiryTimer()
	every := c.cfg.Group.OffsetsRetentionCheckInterval
	if every <= 0 {
		every = group.DefaultOffsetsRetentionCheckInterval
	}
	self, root := ctx.Self(), ctx.ActorSystem().Root
	c.expiryTimer = time.AfterFunc(every, func() { root.Send(self, expireTick{}) })
}

func (c *Coordinator) stopExpiryTimer() {
	if c.expiryTimer != nil {
		c.expiryTimer.Stop()
		c.expiryTimer = nil
	}
}

// onExpireTick runs one expiry check over every group, then re-arms the
// timer.
func (c *Coordinator) onExpireTick(ctx actor.Context) {
	c.expiryTimer = nil
	c.expiryChecks++
	now := c.cfg.Now()
	ids := c.groups.ids()
	for _, id := range c.table.Groups() {
		if c.groups.get(id) == nil {
			ids = append(ids, id) // possible only with a custom Membership
		}
	}
	for _, id := range ids {
		if e := c.lookupGroup(id); e != nil && e.commits == 0 && !e.deleting && !e.expiring {
			c.expireGroup(ctx, e, now)
		}
	}
	c.armExpiryTimer(ctx)
}

// expireGroup writes the tombstones of e's expired offsets (and of the
// group, when it goes) and applies them once durable.
func (c *Coordinator) expireGroup(ctx actor.Context, e *groupEntry, now time.Time) {
	id := e.g.ID()
	tps := c.table.Partitions(id)
	offsets := make([]group.Offset, 0, len(tps))
	for _, tp := range tps {
		committed, _ := c.table.Get(id, tp)
		offsets = append(offsets, group.Offset{Topic: tp.Topic, Partition: tp.Partition, Committed: time.UnixMilli(committed.CommitTimestamp)})
	}
	exp := e.g.ExpireOffsets(now, offsets)
	if len(exp.Expired) == 0 && !exp.RemoveGroup {
		return
	}
	expired := make([]TopicPartition, len(exp.Expired))
	for i, o := range exp.Expired {
		expired[i] = TopicPartition{Topic: o.Topic, Partition: o.Partition}
	}
	log := c.logger.WithFields(logrus.Fields{"group": id, "expired": len(expired), "offsets": len(tps), "remove_group": exp.RemoveGroup})
	e.expiring = true
	c.appendRecords(ctx, tombstones(id, expired, exp.RemoveGroup, now.UnixMilli()), func(base int64, code messages.ErrorCode, msg string) {
		e.expiring = false
		if code != 0 {
			// Retried at the next check. (If the batch is in the log
			// after all, a new coordinator replays it.)
			log.WithFields(logrus.Fields{"code": code.ShortName(), "error": msg}).Warn("expired offsets' tombstones not written")
			return
		}
		for i, tp := range expired {
			c.table.Apply(OffsetKey{Group: id, Topic: tp.Topic, Partition: tp.Partition}, nil, base+int64(i))
		}
		if c.groups.get(id) != e {
			return // deleted meanwhile
		}
		if !exp.RemoveGroup {
			log.Info("expired committed offsets deleted")
			return
		}
		if e.g.OffsetsExpired(len(c.table.Partitions(id))) {
			delete(c.groups.groups, id)
			log.Info("expired committed offsets deleted; the empty group is removed")
			return
		}
		// It gained a member or an offset meanwhile: the group metadata
		// tombstone is in the log, so write the group's state again.
		log.Info("expired committed offsets deleted; the group stays (it changed meanwhile)")
		e.persistedOK = false
		c.carryOut(ctx, e, group.Effects{})
	})
}
