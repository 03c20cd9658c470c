// kafkadata_call.go holds replicaCall: one request of the Kafka data
// backend to a local replica actor, answered through a process of its own
// that also watches the replica. Like protoactor's Future the call is a
// process in the actor system's registry, under its own PID, that the
// replica answers (or the dead letter process, when there is no replica);
// unlike a Future nothing blocks on it: its outcome is handed to a
// callback on the goroutine that delivers it. The watch makes a replica
// that stops before answering (a follower stopped so that a new leader
// replica can start, during a failover, drops its mailbox unanswered) end
// the call at once, as a missing replica does, instead of after its
// timeout: the client's retry then finds the new leader.

package host

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// replicaCall is one request to a local replica waiting for its outcome.
type replicaCall struct {
	root  *actor.RootContext
	self  *actor.PID
	timer atomic.Pointer[time.Timer]
	done  atomic.Bool
	// replica is the replica asked and watched; replicaProc its process,
	// to unwatch it when the answer came first.
	replica     *actor.PID
	replicaProc actor.Process
	onDone      func(res any, err error)
}

var _ actor.Process = (*replicaCall)(nil)

// callReplica sends msg to the replica at pid, watched, with a new call as
// its sender, and calls onDone exactly once with the first outcome: the
// replica's answer, actor.ErrDeadLetter (no such replica, or it stopped
// before answering), actor.ErrTimeout after timeout, or what finish is
// given. onDone runs on the goroutine that delivers the outcome (the
// replica's own, for its answer): it must not block.
func callReplica(root *actor.RootContext, pid *actor.PID, msg any, timeout time.Duration, onDone func(res any, err error)) *replicaCall {
	c := &replicaCall{root: root, replica: pid, onDone: onDone}
	sys := root.ActorSystem()
	self, ok := sys.ProcessRegistry.Add(c, "kafka-call$"+sys.ProcessRegistry.NextId())
	if !ok { // ids are a counter: cannot happen
		c.done.Store(true)
		onDone(nil, errors.New("registering a replica call's answer process failed"))
		return c
	}
	c.self = self
	// The dead-letter process when the replica is gone: it answers the
	// watch with Terminated. The watch is a system message, so the
	// replica takes it before the request.
	c.replicaProc, _ = sys.ProcessRegistry.Get(pid)
	c.replicaProc.SendSystemMessage(pid, &actor.Watch{Watcher: self})
	c.timer.Store(time.AfterFunc(timeout, func() { c.finish(nil, actor.ErrTimeout) }))
	root.RequestWithCustomSender(pid, msg, self)
	return c
}

// SendUserMessage takes the replica's answer, or the dead letter process's
// answer when the replica does not exist.
func (c *replicaCall) SendUserMessage(_ *actor.PID, message any) {
	_, msg, _ := actor.UnwrapEnvelope(message)
	if _, ok := msg.(*actor.DeadLetterResponse); ok {
		c.finish(nil, actor.ErrDeadLetter)
		return
	}
	c.finish(msg, nil)
}

// SendSystemMessage: the watched replica's Terminated ends the call as a
// dead letter does (there is no replica to answer it any more); any other
// system message is taken as the answer, as a Future does.
func (c *replicaCall) SendSystemMessage(_ *actor.PID, message any) {
	if t, ok := message.(*actor.Terminated); ok && c.replica != nil && t.Who.Equal(c.replica) {
		c.finish(nil, actor.ErrDeadLetter)
		return
	}
	c.finish(message, nil)
}

// Stop ends the call without an answer, as a Future's Stop does.
func (c *replicaCall) Stop(*actor.PID) { c.finish(nil, nil) }

// finish hands the first outcome to onDone and unregisters the call; later
// ones are ignored.
func (c *replicaCall) finish(res any, err error) {
	if !c.done.CompareAndSwap(false, true) {
		return
	}
	if t := c.timer.Load(); t != nil {
		t.Stop()
	}
	c.root.ActorSystem().ProcessRegistry.Remove(c.self)
	if c.replicaProc != nil && !errors.Is(err, actor.ErrDeadLetter) {
		c.replicaProc.SendSystemMessage(c.replica, &actor.Unwatch{Watcher: c.self})
	}
	c.onDone(res, err)
}
