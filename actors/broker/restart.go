// restart.go: the broker supervises its children. A replica or group
// coordinator that fails (panics) is stopped, never restarted in place
// (its log would stay open beside the new one's). A replica that stops
// without the broker asking (it failed, could not open its log, or was
// stopped by anyone else), or whose directory could not be prepared, is
// reported down in Health and reopened after a backoff — doubling from
// ReplicaRestartBackoff up to ReplicaRestartBackoffMax, reset once it has
// run for restartResetAfter — for as long as the metadata gives it to
// this host.

package broker

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/replica"
	"github.com/actorlog/actorlog/messages"
)

// Defaults of the replicas' restart backoff.
const (
	DefaultReplicaRestartBackoff    = 100 * time.Millisecond
	DefaultReplicaRestartBackoffMax = 30 * time.Second
)

// restartResetAfter: a replica that has not failed for this long starts
// over at the shortest backoff.
const restartResetAfter = time.Minute

// restartDelay is the wait before reopening after the n-th consecutive
// failure (n >= 1): first doubled n-1 times, at most most. Pure.
func restartDelay(n int, first, most time.Duration) time.Duration {
	d := first
	for i := 1; i < n && d < most; i++ {
		d *= 2
	}
	return min(d, most)
}

// restartState is a partition's record of consecutive failures.
type restartState struct {
	failures    int
	lastFailure time.Time
	// retryAt: the replica is not reopened before then.
	retryAt time.Time
	// why the replica is down ("" once it opened its log).
	why string
}

// retryReplicas is posted by the retry timer: reconcile reopens the
// replicas whose backoff has passed.
type retryReplicas struct{}

// stopOnFailure is the broker's supervisor strategy: a child that fails
// is stopped (it closes its log as it stops) and reopened by the broker
// after a backoff, never restarted in place.
type stopOnFailure struct{ logger *logrus.Entry }

// HandleFailure implements actor.SupervisorStrategy.
func (s stopOnFailure) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, reason, message any) {
	s.logger.WithFields(logrus.Fields{"actor": child.GetId(), "reason": fmt.Sprint(reason), "message": fmt.Sprintf("%T", message)}).
		Error("child actor failed; stopping it (the broker reopens it after a backoff)")
	sup.StopChildren(child)
}

// childKey maps the id of a child of the broker (whose id is self) to its
// partition: a replica ("<self>/p/<topic>/<partition>") or the group
// coordinator beside an offsets topic leader ("<self>/coordinator/<p>").
func childKey(self, id string) (key tp, coordinator, ok bool) {
	rest, ok := strings.CutPrefix(id, self+"/")
	if !ok {
		return tp{}, false, false
	}
	if p, ok := strings.CutPrefix(rest, "coordinator/"); ok {
		n, err := strconv.ParseInt(p, 10, 32)
		return tp{messages.OffsetsTopic, int32(n)}, true, err == nil
	}
	rest, ok = strings.CutPrefix(rest, "p/")
	i := strings.LastIndexByte(rest, '/')
	if !ok || i <= 0 {
		return tp{}, false, false
	}
	n, err := strconv.ParseInt(rest[i+1:], 10, 32)
	return tp{rest[:i], int32(n)}, false, err == nil
}

// onTerminated handles a child's end. Children stopped by the broker
// (stopReplica, Drain) are expected; any other end is a failure: the
// replica (and its coordinator) is stopped for good and reopened after a
// backoff.
func (b *Broker) onTerminated(ctx actor.Context, msg *actor.Terminated) {
	key, coord, ok := childKey(ctx.Self().GetId(), msg.GetWho().GetId())
	if !ok || b.draining {
		return // the broker stops: protoactor stops its children
	}
	r := b.replicas[key]
	if r == nil || b.stopping[key] || (coord && r.coordinator == nil) {
		return
	}
	kind := "replica"
	if coord {
		kind = "coordinator"
	}
	why := kind + " actor stopped unexpectedly"
	b.noteDown(key, why, false)
	delay := b.scheduleRestart(ctx, key)
	b.logger.WithFields(logrus.Fields{"topic": key.topic, "partition": key.partition, "actor": msg.GetWho().GetId(), "restart_in": delay}).
		Error(why + "; reopening the partition after a backoff")
	if b.cfg.Restarts != nil {
		b.cfg.Restarts.ActorRestarted(kind)
	}
	// Through the ordinary stop, so the other actor of the pair stops too
	// and reconcile reopens both.
	b.stopReplica(ctx, key, false)
}

// onOpened records a replica's open: healthy, or down with its error.
func (b *Broker) onOpened(ctx actor.Context, msg *replica.Opened) {
	key := tp{msg.Topic, msg.Partition}
	b.startFinished(ctx, key)
	if _, running := b.replicas[key]; !running && b.restarts[key] == nil {
		return
	}
	if msg.Err != nil {
		b.logger.WithError(msg.Err).WithFields(logrus.Fields{"topic": msg.Topic, "partition": msg.Partition}).Error("replica failed to open its log")
		b.noteDown(key, "cannot open its log: "+msg.Err.Error(), true)
		return
	}
	b.health.setUp(key)
	if rs := b.restarts[key]; rs != nil {
		rs.why, rs.retryAt = "", time.Time{}
	}
}

// noteDown reports key's replica down (Health) for why; an earlier reason
// is kept unless override.
func (b *Broker) noteDown(key tp, why string, override bool) {
	rs := b.restartState(key)
	if rs.why == "" || override {
		rs.why = why
	}
	b.health.setDown(key, why, override)
}

func (b *Broker) restartState(key tp) *restartState {
	rs := b.restarts[key]
	if rs == nil {
		rs = &restartState{}
		b.restarts[key] = rs
	}
	return rs
}

// scheduleRestart counts a failure of key's replica and sets when it may
// be reopened; the retry timer then runs reconcile. It returns the wait.
func (b *Broker) scheduleRestart(ctx actor.Context, key tp) time.Duration {
	now := time.Now()
	rs := b.restartState(key)
	if !rs.lastFailure.IsZero() && now.Sub(rs.lastFailure) > restartResetAfter {
		rs.failures = 0
	}
	rs.failures++
	rs.lastFailure = now
	delay := restartDelay(rs.failures, b.cfg.ReplicaRestartBackoff, b.cfg.ReplicaRestartBackoffMax)
	rs.retryAt = now.Add(delay)
	b.armRetry(ctx, rs.retryAt)
	return delay
}

// armRetry makes sure a retryReplicas arrives by at. The timer only posts
// to the mailbox.
func (b *Broker) armRetry(ctx actor.Context, at time.Time) {
	if b.retryTimer != nil && !b.retryTimerAt.After(at) {
		return
	}
	if b.retryTimer != nil {
		b.retryTimer.Stop()
	}
	self, root := ctx.Self(), ctx.ActorSystem().Root
	b.retryTimerAt = at
	b.retryTimer = time.AfterFunc(time.Until(at), func() { root.Send(self, retryReplicas{}) })
}

// forgetRestarts drops the failure records of partitions not in want
// (they left this host, or the broker no longer runs them).
func (b *Broker) forgetRestarts(want map[tp]bool) {
	for key := range b.restarts {
		if !want[key] {
			delete(b.restarts, key)
			b.health.forget(key)
		}
	}
}
