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
package deadmail

import (
	"github.com/asynkron/protoactor-go/actor"
)

// Mailbox returns the producer of protoactor's unbounded mailbox with
// that one difference. Use it in the actor's props:
// actor.WithMailbox(deadmail.Mailbox()).
func Mailbox() actor.MailboxProducer {
	unbounded := actor.Unbounded()
	return func() actor.Mailbox { return &mailbox{Mailbox: unbounded()} }
}

type mailbox struct{ actor.Mailbox }

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
