// liveness.go holds the controller's reaction to host liveness (DESIGN §5:
// host liveness is an etcd lease). While elected, the controller follows
// the host registrations: a goroutine reads a Snapshot, then watches the
// hosts from its revision, and posts the live host set to the actor each
// time it changes (and once at the start, so a new controller catches up
// on whatever happened while there was none). On every such message the
// actor re-elects the leaders of every topic (ElectLeaders, elect.go),
// completes the reassignments that can complete now (reassign.go), and
// writes the topics that changed, fenced on its controller epoch, retrying
// a few times when a topic was modified between the read and the write.
// Brokers follow the topics in etcd and start or stop replicas.
//
// Threading: the watch goroutine only posts messages; the live set and
// the retry timer flag belong to the elected role (roles.go). A reconcile
// is a job of the admin lane (lanes.go): its etcd work runs off the actor
// with the live set as it was when the job started; live set changes
// meanwhile queue one more reconcile, never more than one.

package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/messages"
)

// updateAttempts bounds the re-read-and-retry loop of one topic's update
// when it lost an optimistic race (ErrTopicChanged).
const updateAttempts = 4

// reconcileRetryDelay is how long a failed reconcile waits before the
// next attempt (etcd unreachable or slow).
const reconcileRetryDelay = 300 * time.Millisecond

// reconcileTimeout bounds one reconcile's etcd work (at most
// RequestTimeout). A host failure often takes the etcd raft leader with
// it, and a write proposed before a new one is elected hangs for etcd's
// request timeout (~7 s); abandoned sooner, the reconcile is made again
// through the new leader. Reconciling is idempotent: every write is
// guarded by the revision it read.
const reconcileTimeout = 2 * time.Second

type (
	// liveHosts is the live host set, posted by the host watch of the
	// given term (election) whenever it changes.
	liveHosts struct {
		term int
		live map[int32]bool
	}
	// retryReconcile asks for another reconcile after a failed one.
	retryReconcile struct{ term int }
)

// startHostWatch starts following the host registrations for this term.
// Called on election, in the actor.
func (e *elected) startHostWatch(ctx actor.Context) {
	wctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	e.watchCancel, e.watchDone = cancel, done
	self, root, term, c := ctx.Self(), ctx.ActorSystem().Root, e.term, e.c
	go func() {
		defer close(done)
		c.watchHosts(wctx, func(live map[int32]bool) { root.Send(self, liveHosts{term: term, live: live}) })
	}()
}

// stopHostWatch stops the host watch, if any, and waits for its goroutine
// to end (its etcd calls end with the cancellation). Called when the term
// ends, in the actor.
func (e *elected) stopHostWatch() {
	if e.watchCancel == nil {
		return
	}
	e.watchCancel()
	select {
	case <-e.watchDone:
	case <-time.After(5 * time.Second):
		e.c.logger.Warn("controller host watch did not end in time")
	}
	e.watchCancel, e.watchDone = nil, nil
}

// watchHosts reads the hosts, reports the live set, then watches and
// reports every change of the set, until ctx ends. When the watch fails
// (e.g. compaction), it starts over from a new snapshot. It touches no
// actor state: post is its only output.
func (c *Controller) watchHosts(ctx context.Context, post func(map[int32]bool)) {
	for ctx.Err() == nil {
		rctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
		snap, err := c.cfg.Store.Snapshot(rctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				c.logger.WithError(err).Warn("controller cannot read the host registrations; retrying")
				cluster.SleepCtx(ctx, reconcileRetryDelay)
			}
			continue
		}
		live := make(map[int32]bool, len(snap.Hosts))
		for _, h := range snap.Hosts {
			live[h.GetHostId()] = true
		}
		post(maps.Clone(live))
		for ev := range c.cfg.Store.WatchHosts(ctx, snap.Revision) {
			if ev.Err != nil {
				if ctx.Err() == nil {
					c.logger.WithError(ev.Err).Warn("controller host watch ended; re-reading the hosts")
				}
				break
			}
			was := live[ev.HostID]
			switch ev.Type {
			case cluster.EventPut:
				live[ev.HostID] = true
			case cluster.EventDelete:
				delete(live, ev.HostID)
			}
			if was != live[ev.HostID] {
				post(maps.Clone(live))
			}
		}
	}
}

// onLiveHosts records a new live host set and reconciles leadership.
func (e *elected) onLiveHosts(ctx actor.Context, m liveHosts) {
	log := e.c.logger.WithFields(logrus.Fields{"live_hosts": sortedIDs(m.live), "controller_epoch": e.fence.Epoch})
	if e.live == nil {
		log.Info("controller: host registrations read; electing partition leaders")
	} else {
		log.WithFields(logrus.Fields{"joined": diffIDs(m.live, e.live), "left": diffIDs(e.live, m.live)}).Info("controller: live hosts changed")
	}
	e.live = m.live
	for id := range e.shuttingDown {
		if !m.live[id] {
			delete(e.shuttingDown, id) // gone: nothing more to hold back
		}
	}
	e.reconcile(ctx)
}

func (e *elected) onRetryReconcile(ctx actor.Context) {
	e.retryPending = false
	if e.live == nil {
		return
	}
	e.reconcile(ctx)
}

// reconcile queues a job that re-elects the leaders of every topic
// against the live set (as it is when the job starts) and writes the
// topics that changed; one queued reconcile serves every change before it
// starts. On failure (other than losing the fence) it schedules another
// attempt.
func (e *elected) reconcile(ctx actor.Context) {
	if e.reconcileQueued {
		return
	}
	e.reconcileQueued = true
	e.c.submit(ctx, &job{lane: laneAdmin, start: func(actor.Context) work {
		e.reconcileQueued = false
		w := e.worker()
		return func(ctx context.Context) func(actor.Context) {
			rctx, cancel := context.WithTimeout(ctx, min(w.cfg.RequestTimeout, reconcileTimeout))
			defer cancel()
			err := w.electAll(rctx)
			return func(actx actor.Context) { e.reconciled(actx, err) }
		}
	}, refuse: func(actor.Context, messages.ErrorCode, string) { e.reconcileQueued = false }})
}

// reconciled handles a reconcile's outcome: on failure (other than losing
// the fence) it schedules another attempt.
func (e *elected) reconciled(ctx actor.Context, err error) {
	switch {
	case err == nil:
		return
	case errors.Is(err, cluster.ErrNotController):
		// Deposed: the campaign goroutine will say so; a new term
		// reconciles from scratch.
		e.c.logger.WithError(err).Warn("controller: leader election refused: no longer the controller")
		return
	}
	e.c.logger.WithError(err).WithField("retry_in", reconcileRetryDelay).Warn("controller: leader election incomplete; retrying")
	if e.retryPending {
		return
	}
	e.retryPending = true
	self, root, term := ctx.Self(), ctx.ActorSystem().Root, e.term
	time.AfterFunc(reconcileRetryDelay, func() { root.Send(self, retryReconcile{term: term}) })
}

// electAll runs ElectLeaders over every topic and writes those that
// changed. It goes on past a topic that fails, and returns the first
// error (ErrNotController at once).
func (w *worker) electAll(ctx context.Context) error {
	topics, rev, err := w.cfg.Store.ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("controller: elect leaders: %w", err)
	}
	var first error
	for _, t := range topics {
		err := w.electTopic(ctx, t, rev)
		if errors.Is(err, cluster.ErrNotController) {
			return err
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

// electTopic elects t's leaders and writes t if anything changed; when
// the write loses a race with another change, it re-reads t and tries
// again, up to updateAttempts times.
func (w *worker) electTopic(ctx context.Context, t *messages.TopicMetadata, rev int64) error {
	name := t.GetName()
	for attempt := 1; ; attempt++ {
		if t.GetDeleting() {
			return nil // its replicas are going away anyway
		}
		unclean, err := cluster.UncleanLeaderElection(t.GetConfigs())
		if err != nil {
			// Stored configs were validated when written; an unknown key
			// here comes from a newer version. Stay clean.
			w.logger.WithError(err).WithField("topic", name).Warn("controller: topic configs unreadable; unclean leader election off")
			unclean = false
		}
		before := proto.Clone(t).(*messages.TopicMetadata)
		elected := ElectLeaders(t, w.electionLive, unclean)
		completed := completeReassignments(t, w.electionLive)
		if !elected && !completed {
			return nil
		}
		err = w.cfg.Store.UpdateTopic(ctx, w.fence, t, rev)
		if err == nil {
			w.logElections(before, t)
			w.logReassignments(before, t)
			return nil
		}
		if !errors.Is(err, cluster.ErrTopicChanged) || attempt == updateAttempts {
			if errors.Is(err, cluster.ErrUnknownTopic) {
				return nil // deleted meanwhile
			}
			return fmt.Errorf("controller: elect leaders of topic %q: %w", name, err)
		}
		w.logger.WithError(err).WithFields(logrus.Fields{"topic": name, "attempt": attempt}).Debug("controller: topic changed meanwhile; re-reading")
		t, rev, err = w.cfg.Store.GetTopic(ctx, name)
		if errors.Is(err, cluster.ErrUnknownTopic) || errors.Is(err, cluster.ErrCorruptMetadata) {
			return nil // deleted, or its record went bad (never acted on)
		}
		if err != nil {
			return fmt.Errorf("controller: elect leaders of topic %q: %w", name, err)
		}
	}
}

// logElections logs, at Info, every partition of after whose leader
// differs from before; ISR-only changes at Debug.
func (w *worker) logElections(before, after *messages.TopicMetadata) {
	for i, p := range after.GetPartitions() {
		old := before.GetPartitions()[i]
		log := w.logger.WithFields(logrus.Fields{
			"topic": after.GetName(), "partition": p.GetPartition(), "leader": p.GetLeader(), "previous_leader": old.GetLeader(),
			"leader_epoch": p.GetLeaderEpoch(), "partition_epoch": p.GetPartitionEpoch(), "isr": p.GetIsr(),
			"controller_epoch": w.fence.Epoch,
		})
		switch {
		case p.GetLeader() == old.GetLeader():
			if p.GetPartitionEpoch() != old.GetPartitionEpoch() {
				log.Debug("controller: partition ISR shrank")
			}
		case p.GetLeader() == -1:
			log.Info("controller: partition offline: no live in-sync replica")
		default:
			log.Info("controller: partition has a new leader")
		}
	}
}

// sortedIDs returns the ids of a host set, ascending.
func sortedIDs(set map[int32]bool) []int32 {
	return slices.Sorted(maps.Keys(set))
}

// diffIDs returns the ids in a but not in b, ascending.
func diffIDs(a, b map[int32]bool) []int32 {
	var out []int32
	for id := range a {
		if !b[id] {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}
