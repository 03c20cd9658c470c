// Package deadmail gives an actor a mailbox that answers the requests its
// actor can no longer take.
//
// protoactor stops an actor between two user messages (a stop is a system
// message, which the mailbox takes first) and then drops, without a word,
// every user message still in the mailbox: a request sent a moment before
// the stop waits out its caller's whole timeout (a producer's, a
// consumer's, the CLI's), where a request sent a moment after it is
// answered at once with a dead letter (the actor is no longer registered).
// This mailbox answers the dropped ones as the late ones are: each request
// (a message with a sender) that reached the actor only after it stopped
// gets a *actor.DeadLetterResponse, which a future reports as
// actor.ErrDeadLetter and a client treats as "not served, ask again". A
// dead letter says the request was not handled, so a retry is safe.
//
// It also closes a gap in protoactor's spawn: the spawner registers an
// actor's name before it gives the mailbox its dispatcher, and its default
// mailbox, handed a message in between, schedules itself on the missing
// dispatcher, panics in the sender (the remote reader, for a message from
// another host) and stays marked as running: that actor never takes a
// message again, Started included, and every request to it times out. A
// message sent to a name the moment it is spawned (a produce to a
// partition a broker is just opening) did that. This mailbox holds what
// is posted before the spawner starts it, then passes it on, Started
// first.
package deadmail

import (
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

// Mailbox returns the producer of protoactor's unbounded mailbox with
// those two differences. Use it in the actor's props:
// actor.WithMailbox(deadmail.Mailbox()).
func Mailbox() actor.MailboxProducer {
	unbounded := actor.Unbounded()
	return func() actor.Mailbox { return &mailbox{Mailbox: unbounded()} }
}

type mailbox struct {
	actor.Mailbox
	open atomic.Bool // set by Start; from then on posts go straight through

	mu   sync.Mutex // guards sys and user, and open's change
	sys  []any      // system messages posted before Start
	user []any      // user messages posted before Start
}

func (m *mailbox) PostUserMessage(msg any) {
	if !m.open.Load() && m.hold(msg, false) {
		return
	}
	m.Mailbox.PostUserMessage(msg)
}

func (m *mailbox) PostSystemMessage(msg any) {
	if !m.open.Load() && m.hold(msg, true) {
		return
	}
	m.Mailbox.PostSystemMessage(msg)
}

// hold keeps msg until Start, unless Start has run meanwhile (false: post
// it).
func (m *mailbox) hold(msg any, system bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.open.Load() {
		return false
	}
	if system {
		m.sys = append(m.sys, msg)
	} else {
		m.user = append(m.user, msg)
	}
	return true
}

// Start passes on what was held, Started before any other system message
// and system messages before user ones, as protoactor's mailbox would
// take them, and opens the mailbox. The spawner calls it after the
// handlers are registered and Started is posted. A poster that finds the
// mailbox still closed waits on the lock, so a sender's messages keep
// their order.
func (m *mailbox) Start() {
	m.mu.Lock()
	for _, s := range m.sys {
		if _, ok := s.(*actor.Started); ok {
			m.Mailbox.PostSystemMessage(s)
		}
	}
	for _, s := range m.sys {
		if _, ok := s.(*actor.Started); !ok {
			m.Mailbox.PostSystemMessage(s)
		}
	}
	for _, u := range m.user {
		m.Mailbox.PostUserMessage(u)
	}
	m.sys, m.user = nil, nil
	m.open.Store(true)
	m.mu.Unlock()
	m.Mailbox.Start()
}

// RegisterHandlers puts the answering invoker between the mailbox and the
// actor's context. protoactor registers the actor's process before it
// registers the handlers, so the process known here is this actor's.
func (m *mailbox) RegisterHandlers(inv actor.MessageInvoker, d actor.Dispatcher) {
	i := &invoker{MessageInvoker: inv}
	if ctx, ok := inv.(actor.Context); ok && ctx.Self() != nil {
		if p, ok := ctx.ActorSystem().ProcessRegistry.GetLocal(ctx.Self().Id); ok {
			i.ctx, i.self = ctx, p
		}
	}
	m.Mailbox.RegisterHandlers(i, d)
}

// invoker hands every message to the actor's context and then checks, for
// a request, that the actor was still registered as itself: if not, it
// had stopped before the request came to its turn, the context dropped
// it, and the invoker answers it.
type invoker struct {
	actor.MessageInvoker
	ctx  actor.Context // nil: the actor could not be identified; nothing is answered
	self actor.Process
}

func (i *invoker) InvokeUserMessage(msg any) {
	i.MessageInvoker.InvokeUserMessage(msg)
	env, ok := msg.(*actor.MessageEnvelope)
	if !ok || env.Sender == nil || i.ctx == nil {
		return
	}
	// A context removes its process from the registry when it stops, in
	// a system message; none runs while a user message is handled, so an
	// actor registered after the call was alive for it (a message that
	// stops the actor only asks for the stop).
	if p, ok := i.ctx.ActorSystem().ProcessRegistry.GetLocal(i.ctx.Self().Id); ok && p == i.self {
		return
	}
	i.ctx.ActorSystem().Root.Send(env.Sender, &actor.DeadLetterResponse{Target: i.ctx.Self()})
}
