package deadmail

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

type ask struct{ n int }

// blocking answers each ask with its n, holding the first one until
// release is closed.
type blocking struct {
	entered chan struct{}
	release chan struct{}
	first   bool
}

func (b *blocking) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(ask); ok {
		if !b.first {
			b.first = true
			close(b.entered)
			<-b.release
		}
		ctx.Respond(m.n)
	}
}

// queueThenStop spawns a blocking actor (with mb, nil: protoactor's
// default mailbox), queues 100 asks behind its first while it holds it,
// stops it and releases it: the first ask is answered, the 100 find the
// actor stopped. It returns the futures of the 100.
func queueThenStop(t *testing.T, mb actor.MailboxProducer) []*actor.Future {
	t.Helper()
	sys := actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	b := &blocking{entered: make(chan struct{}), release: make(chan struct{})}
	props := actor.PropsFromProducer(func() actor.Actor { return b })
	if mb != nil {
		props = props.Configure(actor.WithMailbox(mb))
	}
	pid := sys.Root.Spawn(props)
	first := sys.Root.RequestFuture(pid, ask{0}, 5*time.Second)
	<-b.entered
	queued := make([]*actor.Future, 100)
	for i := range queued {
		queued[i] = sys.Root.RequestFuture(pid, ask{i + 1}, 2*time.Second)
	}
	stopped := sys.Root.StopFuture(pid)
	close(b.release)
	if res, err := first.Result(); err != nil || res != 0 {
		t.Fatalf("the ask the actor held: %v, %v", res, err)
	}
	if err := stopped.Wait(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	return queued
}

func TestRequestsLeftInTheMailboxAreAnswered(t *testing.T) {
	start := time.Now()
	for i, f := range queueThenStop(t, Mailbox()) {
		if _, err := f.Result(); !errors.Is(err, actor.ErrDeadLetter) {
			t.Fatalf("ask %d queued behind the stop: %v, want a dead letter", i+1, err)
		}
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("the queued asks were answered after %v, want at once", took)
	}
}

// TestDefaultMailboxDropsThem shows what the mailbox is for: with
// protoactor's own, the same asks time out.
func TestDefaultMailboxDropsThem(t *testing.T) {
	for i, f := range queueThenStop(t, nil)[:3] {
		if _, err := f.Result(); !errors.Is(err, actor.ErrTimeout) {
			t.Fatalf("ask %d queued behind the stop, default mailbox: %v, want a timeout", i+1, err)
		}
	}
}

// counter counts what it receives; each answer is a reply to it.
type counter struct{ answers, deadLetters atomic.Int64 }

func (c *counter) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case int:
		c.answers.Add(1)
	case *actor.DeadLetterResponse:
		c.deadLetters.Add(1)
	}
}

// echo answers asks, and stops itself on an ask of -1 (after answering it).
type echo struct{}

func (echo) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(ask); ok {
		ctx.Respond(m.n)
		if m.n < 0 {
			ctx.Stop(ctx.Self())
		}
	}
}

// TestServedRequestsGetOneAnswer: a request the actor handled (the one
// that stopped it too) gets its answer and no dead letter.
func TestServedRequestsGetOneAnswer(t *testing.T) {
	sys := actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	c := &counter{}
	sender := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return c }))
	pid := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return echo{} }, actor.WithMailbox(Mailbox())))
	for i := range 50 {
		sys.Root.RequestWithCustomSender(pid, ask{i}, sender)
	}
	sys.Root.RequestWithCustomSender(pid, ask{-1}, sender)
	deadline := time.Now().Add(5 * time.Second)
	for c.answers.Load() < 51 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // room for a wrong dead letter to arrive
	if a, d := c.answers.Load(), c.deadLetters.Load(); a != 51 || d != 0 {
		t.Fatalf("answers %d, dead letters %d; want 51 and 0", a, d)
	}
}
