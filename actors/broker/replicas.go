// replicas.go: the broker runs this host's partition replicas. reconcile
// is the shell around plan (plan.go): it carries out plan's actions —
// spawning a replica once its directory is claimed (dirs.go), moving one
// to a new leader epoch in place (replica.Transition), reopening one with
// new configs in place (replica.Reopen), handing a leader its new ISR,
// stopping one (and the group coordinator beside it) and removing its log
// — and keeps the replicas told of the registered hosts. Drain stops them
// all for the host's shutdown.

package broker

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/replica"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/messages"
)

// reconcileSoon has reconcile run once after the messages queued now: a
// topic of many partitions stopping sends one replicaStopped each, and
// one reconcile for a burst of them is enough.
func (b *Broker) reconcileSoon(ctx actor.Context) {
	if !b.reconcilePending {
		b.reconcilePending = true
		ctx.Send(ctx.Self(), reconcileNow{})
	}
}

// sendLiveHosts tells every running replica the registered hosts (one
// message for all: replicas only read it).
func (b *Broker) sendLiveHosts(ctx actor.Context) {
	live := b.liveHosts()
	for _, r := range b.replicas {
		ctx.Send(r.pid, live)
	}
}

// liveHosts is the registered host set, for the leader replicas, with the
// hosts' advertised addresses, against which the replicas check who sends
// follower requests.
func (b *Broker) liveHosts() *replica.LiveHosts {
	live := make(map[int32]bool, len(b.hosts))
	for id := range b.hosts {
		live[id] = true
	}
	return &replica.LiveHosts{Live: live, Addresses: b.hostAddresses()}
}

// hostAddresses maps the registered hosts' ids to their advertised
// addresses (a new map).
func (b *Broker) hostAddresses() map[int32]string {
	return cluster.HostAddresses(slices.Collect(maps.Values(b.hosts)))
}

// reconcile makes the running replicas match the metadata: plan decides
// (plan.go: spawn a leader for each partition this host leads and a
// follower for each it is a replica of while the leader's host is known,
// move replicas to a new leader epoch, restart those whose config changed,
// stop — removing their logs — replicas of deleted topics, at most
// MaxPartitionsPerHost in all), and reconcile carries the actions out. A
// replica that failed is reopened only once its backoff has passed
// (restart.go); after Drain nothing is started.
func (b *Broker) reconcile(ctx actor.Context) {
	if b.draining {
		return
	}
	retryAt := make(map[tp]time.Time, len(b.restarts))
	for key, rs := range b.restarts {
		retryAt[key] = rs.retryAt
	}
	pl := plan(view{
		self: b.cfg.HostID, topics: b.topics, hosts: b.hosts, running: b.replicas, stopping: b.stopping, preparing: b.preparing,
		capacity: b.cfg.MaxPartitionsPerHost, retryAt: retryAt, now: time.Now(),
	})
	if pl.refused != b.overCapacity {
		b.overCapacity = pl.refused
		if pl.refused > 0 {
			b.logger.WithFields(logrus.Fields{"wanted": pl.wanted, "running_at_most": b.cfg.MaxPartitionsPerHost, "not_started": pl.refused}).
				Error("the metadata gives this host more partition replicas than its capacity (from RLIMIT_NOFILE); the excess are not started")
		}
	}
	b.apply(ctx, pl.actions)
	// A claimed directory not spawned now is claimed again when wanted
	// (it may have been removed meanwhile).
	clear(b.claimed)
	b.resumeHeldStarts(ctx)
	b.forgetRestarts(pl.want)
}

// apply carries out plan's actions, in order.
func (b *Broker) apply(ctx actor.Context, actions []action) {
	for _, a := range actions {
		switch a.kind {
		case actSpawn:
			if !b.mayStart(a.key, a.t.TopicId) {
				b.startsHeld = true // started when others finish
				continue
			}
			if err := b.startReplica(ctx, a.t, a.p); err != nil {
				b.notStarted(ctx, a.key, err)
			}
		case actWaitRetry:
			b.armRetry(ctx, a.at)
		case actTransition:
			b.transitionReplica(ctx, a.t, a.p, b.replicas[a.key])
		case actReopen:
			b.reopenReplica(ctx, a.t, a.p, b.replicas[a.key])
		case actUpdateISR:
			r := b.replicas[a.key]
			r.partitionEpoch = a.p.PartitionEpoch
			ctx.Send(r.pid, &replica.UpdateISR{LeaderEpoch: a.p.LeaderEpoch, PartitionEpoch: a.p.PartitionEpoch, ISR: append([]int32(nil), a.p.Isr...)})
		case actStop:
			b.stopReplica(ctx, a.key, a.remove)
		case actRemoveDir:
			w := b.dirs
			w.do(func() { w.remove(a) })
		default:
			b.logger.WithField("action", a.String()).Error("broker: unknown action")
		}
	}
}

// replicaConfig is the config of this host's replica of t's partition p,
// as the metadata has it now.
func (b *Broker) replicaConfig(t *messages.TopicMetadata, p *messages.PartitionState) (replica.Config, error) {
	key := tp{t.Name, p.Partition}
	scfg, err := cluster.StorageConfig(t.Configs)
	if err != nil {
		return replica.Config{}, fmt.Errorf("topic configs invalid: %w", err)
	}
	if n, over := cluster.MaxMessageBytesOverLimit(t.Configs); over && !b.clampWarned[t.TopicId] {
		b.clampWarned[t.TopicId] = true
		b.logger.WithFields(logrus.Fields{"topic": t.Name, "max_message_bytes": n, "limit": cluster.MaxMessageBytesLimit}).
			Warn("the topic's stored max.message.bytes is above the limit a batch can cross the actor remote at; its logs take batches up to the limit")
	}
	minISR, err := cluster.MinInsyncReplicas(t.Configs)
	if err != nil {
		return replica.Config{}, fmt.Errorf("topic configs invalid: %w", err)
	}
	dir, err := b.partitionDir(key)
	if err != nil {
		return replica.Config{}, err
	}
	scfg.FS = b.cfg.LogFS
	scfg.HighWatermarks = b.hwCheckpoints.Slot(t.Name, p.Partition)
	health := b.health
	scfg.OnFail = func(err error) { health.logFailed(key, err) }
	var follow *actor.PID
	if p.Leader != b.cfg.HostID {
		follow = actor.NewPID(b.hosts[p.Leader].AdvertisedAddress, messages.ReplicaActorID(t.Name, p.Partition))
	}
	return replica.Config{
		Follow: follow, Internal: messages.IsInternalTopic(t.Name),
		Topic: t.Name, Partition: p.Partition, Dir: dir, Log: scfg,
		LeaderEpoch: p.LeaderEpoch, MinInsyncReplicas: minISR,
		ReplicaLagTimeMax: b.cfg.ReplicaLagTimeMax,
		Self:              b.cfg.HostID, Replicas: append([]int32(nil), p.Replicas...), ISR: append([]int32(nil), p.Isr...), PartitionEpoch: p.PartitionEpoch,
		Hosts: b.hostAddresses(), Metrics: b.cfg.Metrics, Cleaner: b.cfg.Cleaner, Logger: b.cfg.Logger,
	}, nil
}

// transitionReplica moves a running replica to p's new leader epoch in
// place (replica.Transition); reopenReplica has it reopen its log in place
// with t's new configs (replica.Reopen).
func (b *Broker) transitionReplica(ctx actor.Context, t *messages.TopicMetadata, p *messages.PartitionState, r *running) {
	b.changeInPlace(ctx, t, p, r, "replica not moved to the new leader epoch; stopping it", func(cfg replica.Config) any { return &replica.Transition{Config: cfg} })
}

func (b *Broker) reopenReplica(ctx actor.Context, t *messages.TopicMetadata, p *messages.PartitionState, r *running) {
	if b.changeInPlace(ctx, t, p, r, "replica not reopened with the new configs; stopping it", func(cfg replica.Config) any { return &replica.Reopen{Config: cfg} }) {
		r.configs = t.Configs
	}
}

// changeInPlace sends r the message change makes of its new config and
// reports true; when the config cannot be made, it logs failed, stops
// the replica and reports false.
func (b *Broker) changeInPlace(ctx actor.Context, t *messages.TopicMetadata, p *messages.PartitionState, r *running, failed string, change func(replica.Config) any) bool {
	cfg, err := b.replicaConfig(t, p)
	if err != nil {
		b.logger.WithError(err).WithFields(logrus.Fields{"topic": t.Name, "partition": p.Partition}).Error(failed)
		b.stopReplica(ctx, tp{t.Name, p.Partition}, false)
		return false
	}
	ctx.Send(r.pid, change(cfg))
	r.epoch, r.partitionEpoch = p.LeaderEpoch, p.PartitionEpoch
	return true
}

// DefaultMaxOpeningReplicas is Config.MaxOpeningReplicas's default: enough
// opens at once to keep the cores and the disk busy (an open waits mostly
// on fsyncs), few enough that the goroutines and fsyncs of a burst never
// stand long in front of anything else.
const DefaultMaxOpeningReplicas = 16

// startsInFlight is the number of replicas being started: directory being
// claimed, claimed and not spawned yet, or spawned and opening their log.
func (b *Broker) startsInFlight() int {
	return len(b.preparing) + len(b.claimed) + len(b.opening)
}

// mayStart reports whether key's replica (of topic id topicID) may start
// now: its directory is claimed already (it counts in flight), or fewer
// than MaxOpeningReplicas starts are in flight.
func (b *Broker) mayStart(key tp, topicID string) bool {
	if id, ok := b.claimed[key]; ok && id == topicID {
		return true
	}
	return b.startsInFlight() < b.cfg.MaxOpeningReplicas
}

// startFinished notes that key's start ended (its log opened or failed to,
// its directory could not be claimed, or it stopped first). Once half the
// starts in flight have finished, a reconcile starts the replicas held
// back: one per finish would re-plan every partition as often.
func (b *Broker) startFinished(ctx actor.Context, key tp) {
	delete(b.opening, key)
	b.resumeHeldStarts(ctx)
}

// resumeHeldStarts has a reconcile start the replicas held back once at
// most half of MaxOpeningReplicas starts are in flight.
func (b *Broker) resumeHeldStarts(ctx actor.Context) {
	if b.startsHeld && b.startsInFlight() <= b.cfg.MaxOpeningReplicas/2 {
		b.startsHeld = false
		b.reconcileSoon(ctx)
	}
}

// startReplica starts the replica of p: once its directory is claimed for
// t, it spawns it; before, it has the directory worker claim it (the
// replica is spawned by the reconcile that follows the claim: dirClaimed).
// An error says why it could not (the caller reports it and retries).
func (b *Broker) startReplica(ctx actor.Context, t *messages.TopicMetadata, p *messages.PartitionState) error {
	key := tp{t.Name, p.Partition}
	cfg, err := b.replicaConfig(t, p)
	if err != nil {
		return err
	}
	if id, ok := b.claimed[key]; ok && id == t.TopicId {
		delete(b.claimed, key)
		return b.spawnReplica(ctx, t, p, cfg)
	}
	b.preparing[key] = t.TopicId
	self, root, w, dir, topicID := ctx.Self(), ctx.ActorSystem().Root, b.dirs, cfg.Dir, t.TopicId
	w.do(func() { root.Send(self, dirClaimed{key: key, topicID: topicID, err: w.claim(dir, topicID)}) })
	return nil
}

// onDirClaimed takes a claim's outcome: a directory that could not be
// prepared is reported like a replica that could not start (and retried
// after a backoff); a ready one gets its replica at the next reconcile.
func (b *Broker) onDirClaimed(ctx actor.Context, m dirClaimed) {
	if id, ok := b.preparing[m.key]; !ok || id != m.topicID {
		return // an earlier incarnation's claim
	}
	delete(b.preparing, m.key)
	if b.draining {
		return // nothing is started again
	}
	if m.err != nil {
		b.notStarted(ctx, m.key, fmt.Errorf("cannot prepare partition directory: %w", m.err))
		b.startFinished(ctx, m.key)
		return
	}
	b.claimed[m.key] = m.topicID
	b.reconcileSoon(ctx)
}

// notStarted reports that key's replica could not be started for err and
// schedules a retry after a backoff.
func (b *Broker) notStarted(ctx actor.Context, key tp, err error) {
	b.noteDown(key, err.Error(), true)
	delay := b.scheduleRestart(ctx, key)
	b.logger.WithError(err).WithFields(logrus.Fields{"topic": key.topic, "partition": key.partition, "retry_in": delay}).
		Error("replica not started; retrying after a backoff")
}

// spawnReplica spawns the replica of p, of config cfg, in its claimed
// directory (and the group coordinator beside an offsets topic leader).
func (b *Broker) spawnReplica(ctx actor.Context, t *messages.TopicMetadata, p *messages.PartitionState, cfg replica.Config) error {
	key := tp{t.Name, p.Partition}
	follow := cfg.Follow
	pid, err := ctx.SpawnNamed(b.cfg.childProps(replica.Props(cfg)), messages.ReplicaActorName(t.Name, p.Partition))
	if err != nil {
		return fmt.Errorf("cannot spawn replica: %w", err)
	}
	r := &running{pid: pid, epoch: p.LeaderEpoch, partitionEpoch: p.PartitionEpoch, topicID: t.TopicId, configs: t.Configs}
	if t.Name == messages.OffsetsTopic && follow == nil {
		r.coordinator = b.spawnCoordinator(ctx, t, p, pid)
	}
	b.replicas[key] = r
	b.opening[key] = true
	ctx.Send(pid, b.liveHosts())
	return nil
}

// stopReplica stops a replica (and the coordinator beside it, first, so
// that it writes nothing more) and reports replicaStopped once both have
// stopped. A request left in their mailboxes is answered with a dead
// letter (their props' deadmail mailbox), which clients retry at once.
func (b *Broker) stopReplica(ctx actor.Context, key tp, remove bool) {
	r := b.replicas[key]
	b.stopping[key] = true
	stopReplica := func() {
		ctx.ReenterAfter(ctx.StopFuture(r.pid), func(_ any, err error) {
			if err != nil {
				b.logger.WithError(err).WithFields(logrus.Fields{"topic": key.topic, "partition": key.partition}).Warn("waiting for replica to stop")
			}
			ctx.Send(ctx.Self(), replicaStopped{key: key, remove: remove})
		})
	}
	if r.coordinator == nil {
		stopReplica()
		return
	}
	ctx.ReenterAfter(ctx.StopFuture(r.coordinator), func(_ any, err error) {
		if err != nil {
			b.logger.WithError(err).WithField("partition", key.partition).Warn("waiting for the group coordinator to stop")
		}
		stopReplica()
	})
}

func (b *Broker) onReplicaStopped(ctx actor.Context, m replicaStopped) {
	delete(b.replicas, m.key)
	delete(b.stopping, m.key)
	delete(b.opening, m.key) // stopped before it opened; reconciled below
	// What was known of the stopped replica (a failed log) goes with it;
	// one that failed stays down until it is reopened.
	b.health.forget(m.key)
	if rs := b.restarts[m.key]; rs != nil && rs.why != "" {
		b.health.setDown(m.key, rs.why, true)
	}
	// The metadata may have moved on while the replica stopped (e.g. a
	// restart for a new leader epoch, then a reassignment away from here).
	b.apply(ctx, afterStop(b.cfg.HostID, b.topics, m.key, m.remove))
	b.reconcileSoon(ctx)
}

func (b *Broker) onDrain(ctx actor.Context) {
	sender := ctx.Sender()
	b.onStopping() // no replica is started again
	var futures []*actor.Future
	for key, r := range b.replicas {
		if r.coordinator != nil {
			futures = append(futures, ctx.PoisonFuture(r.coordinator))
		}
		futures = append(futures, ctx.PoisonFuture(r.pid))
		delete(b.replicas, key)
	}
	clear(b.opening)
	root, logger, hwCheckpoints := ctx.ActorSystem().Root, b.logger, b.hwCheckpoints
	go func() {
		for _, f := range futures {
			if err := f.Wait(); err != nil {
				logger.WithError(err).Warn("waiting for a replica to drain")
			}
		}
		// The replicas stored their last high watermarks as they stopped.
		if err := hwCheckpoints.Flush(); err != nil {
			logger.WithError(err).Error("writing the shared high-watermark checkpoint after the drain failed")
		}
		if sender != nil {
			root.Send(sender, &Drained{})
		}
	}()
}
