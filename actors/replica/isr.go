// isr.go: the leader's side of ISR maintenance. The leader state decides
// (replication.go); the controller commits. The proposal goes to the
// replica's parent (the broker) as a ProposeISR message carrying the
// leader and partition epochs it was made at; the parent forwards it to
// the controller and answers with an UpdateISR (committed; the metadata
// brings it too) or an ISRChangeFailed (certainly not committed: the
// leader may propose again). Until a change is committed the leader counts
// the maximal ISR for the high watermark and the committed one for
// min.insync.replicas.

package replica

import (
	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
)

// ProposeISR is what a leader replica sends its parent (the broker) for
// each ISR change the leader state has put in flight: the parent has the
// controller commit Change (AlterPartition, fenced by its leader and
// partition epochs) and answers the replica (the sender) with an
// UpdateISR once committed, or an ISRChangeFailed when it certainly was
// not. Local to a host: not a protobuf message, it never crosses hosts.
type ProposeISR struct {
	Topic     string
	Partition int32
	// Change is the proposed ISR with the leader epoch and partition
	// epoch it was proposed at.
	Change ISRChange
}

// proposeISR hands a change the leader state has put in flight to the
// parent, or withdraws it when there is none (a replica spawned from the
// root, as in tests).
func (r *Replica) proposeISR(ctx actor.Context, c ISRChange, why string) {
	r.logger.WithFields(logrus.Fields{"isr": r.leader.ISR(), "proposed_isr": c.ISR, "leader_epoch": c.LeaderEpoch, "partition_epoch": c.PartitionEpoch, "reason": why}).Info("proposing an ISR change")
	parent := ctx.Parent()
	if parent == nil {
		r.leader.AbortISRChange(r.cfg.Now())
		return
	}
	ctx.Request(parent, &ProposeISR{Topic: r.cfg.Topic, Partition: r.cfg.Partition, Change: c})
}

// onISRCheck proposes the lagging followers out of the ISR.
func (r *Replica) onISRCheck(ctx actor.Context) {
	if r.leader == nil {
		return
	}
	if c, ok := r.leader.MaybeShrinkISR(r.cfg.Now()); ok {
		r.proposeISR(ctx, c, "followers lagging more than replica.lag.time.max.ms")
	}
}

// onLiveHosts takes the registered hosts' addresses, and marks the
// followers on hosts that are not registered as not eligible for the ISR.
func (r *Replica) onLiveHosts(ctx actor.Context, m *LiveHosts) {
	if m.Addresses != nil {
		r.cfg.Hosts = m.Addresses
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
	if r.leader.SetIneligible(gone, r.cfg.Now()) {
		r.onLogGrew(ctx)
	}
}

// onUpdateISR applies the ISR the controller committed.
func (r *Replica) onUpdateISR(ctx actor.Context, m *UpdateISR) {
	if r.leader == nil {
		return
	}
	changed, err := r.leader.CommitISR(m.LeaderEpoch, m.PartitionEpoch, m.ISR, r.cfg.Now())
	if err != nil {
		r.logger.WithError(err).Debug("ignoring an ISR update")
		return
	}
	if changed {
		r.logger.WithFields(logrus.Fields{"isr": m.ISR, "partition_epoch": m.PartitionEpoch}).Info("ISR committed")
		r.onLogGrew(ctx)
	}
}
