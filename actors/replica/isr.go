// isr.go: the leader's side of ISR maintenance. The leader state decides
// (replication.go); the controller commits (the proposal goes out through
// Config.ProposeISR, the commit comes back as an UpdateISR from the
// metadata). Until a change is committed the leader counts the maximal ISR
// for the high watermark and the committed one for min.insync.replicas.

package replica

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
)

// proposeISR hands a change the leader state has put in flight to the
// controller path, or withdraws it when there is none.
func (r *Replica) proposeISR(c ISRChange, why string) {
	r.logger.WithFields(logrus.Fields{"isr": r.leader.ISR(), "proposed_isr": c.ISR, "leader_epoch": c.LeaderEpoch, "partition_epoch": c.PartitionEpoch, "reason": why}).Info("proposing an ISR change")
	if r.cfg.ProposeISR == nil {
		r.leader.AbortISRChange(time.Now())
		return
	}
	r.cfg.ProposeISR(c)
}

// onISRCheck proposes the lagging followers out of the ISR.
func (r *Replica) onISRCheck() {
	if r.leader == nil {
		return
	}
	if c, ok := r.leader.MaybeShrinkISR(time.Now()); ok {
		r.proposeISR(c, "followers lagging more than replica.lag.time.max.ms")
	}
}

// onLiveHosts takes the registered hosts' addresses, and marks the
// followers on hosts that are not registered as not eligible for the ISR.
func (r *Replica) onLiveHosts(ctx actor.Context, m *LiveHosts) {
	if m.Addresses != nil {
		r.hosts = m.Addresses
	}
	if r.leader == nil {
		return
	}
	gone := map[int32]bool{}
	for _, id := range r.cfg.Replicas {
		if id != r.cfg.Self && !m.Live[id] {
			gone[id] = true
		}
	}
	if r.leader.SetIneligible(gone, time.Now()) {
		r.onLogGrew(ctx)
	}
}

// onUpdateISR applies the ISR the controller committed.
func (r *Replica) onUpdateISR(ctx actor.Context, m *UpdateISR) {
	if r.leader == nil {
		return
	}
	changed, err := r.leader.CommitISR(m.LeaderEpoch, m.PartitionEpoch, m.ISR, time.Now())
	if err != nil {
		r.logger.WithError(err).Debug("ignoring an ISR update")
		return
	}
	if changed {
		r.logger.WithFields(logrus.Fields{"isr": m.ISR, "partition_epoch": m.PartitionEpoch}).Info("ISR committed")
		r.onLogGrew(ctx)
	}
}
