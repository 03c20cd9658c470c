// isr.go: the broker relays its leader replicas' ISR changes to the
// controller (DESIGN §4). A leader sends its parent a replica.ProposeISR
// carrying the proposed ISR and the leader and partition epochs it was
// made at; the broker sends the controller an AlterPartitionRequest (the
// controller's PID is resolved, and its answer awaited, on a goroutine
// that touches no broker state and posts the outcome back as isrAnswered)
// and answers the replica: replica.UpdateISR with the committed ISR, or
// replica.ISRChangeFailed when the change was refused or the controller
// could not be reached (the leader may then propose again). A committed
// change also reaches every replica with the metadata (plan.go:
// actUpdateISR).

package broker

import (
	"errors"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/replica"
	"github.com/actorlog/actorlog/messages"
)

// isrAnswered is the controller's answer to a relayed ISR change (res,
// or err when there was none), posted back to the broker.
type isrAnswered struct {
	// to is the replica that proposed the change.
	to     *actor.PID
	key    tp
	change replica.ISRChange
	res    any
	err    error
}

// onProposeISR relays a leader replica's ISR change to the controller.
func (b *Broker) onProposeISR(ctx actor.Context, m *replica.ProposeISR) {
	to := ctx.Sender()
	if to == nil {
		// Replicas send it with Request; without a sender no one could be
		// answered.
		b.logger.WithFields(logrus.Fields{"topic": m.Topic, "partition": m.Partition}).Warn("ISR change proposed without a sender; ignored")
		return
	}
	key := tp{m.Topic, m.Partition}
	var topicID string
	if r := b.replicas[key]; r != nil {
		topicID = r.topicID
	} else if t := b.topics[m.Topic]; t != nil {
		topicID = t.TopicId
	}
	req := &messages.AlterPartitionRequest{Topic: m.Topic, TopicId: topicID, Partition: m.Partition, LeaderId: b.cfg.HostID,
		LeaderEpoch: m.Change.LeaderEpoch, PartitionEpoch: m.Change.PartitionEpoch, NewIsr: m.Change.ISR}
	self, root, resolve, timeout := ctx.Self(), ctx.ActorSystem().Root, b.cfg.Controller, b.cfg.AdminTimeout
	go func() {
		ans := isrAnswered{to: to, key: key, change: m.Change, err: errors.New("no controller reachable")}
		var ctrl *actor.PID
		if resolve != nil {
			ctrl = resolve()
		}
		if ctrl != nil {
			ans.res, ans.err = root.RequestFuture(ctrl, req, timeout).Result()
		}
		root.Send(self, ans)
	}()
}

// onISRAnswered answers the replica that proposed an ISR change with the
// controller's decision.
func (b *Broker) onISRAnswered(ctx actor.Context, m isrAnswered) {
	resp, ok := m.res.(*messages.AlterPartitionResponse)
	if m.err != nil || !ok || resp.ErrorCode != 0 || resp.Partition == nil {
		b.logger.WithError(m.err).WithFields(logrus.Fields{"topic": m.key.topic, "partition": m.key.partition, "proposed_isr": m.change.ISR, "answer": m.res}).
			Info("ISR change not committed")
		ctx.Send(m.to, replica.ISRChangeFailed{})
		return
	}
	ctx.Send(m.to, &replica.UpdateISR{LeaderEpoch: resp.Partition.LeaderEpoch, PartitionEpoch: resp.Partition.PartitionEpoch, ISR: resp.Partition.Isr})
}
