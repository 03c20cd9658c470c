package deadmail

import (
	"errors"
	"sync"
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

// recorder answers asks and notes, in order, what it took.
type recorder struct {
	mu   sync.Mutex // guards got
	got  []string
	seen chan struct{} // closed on the first ask
}

func (r *recorder) Receive(ctx actor.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch m := ctx.Message().(type) {
	case *actor.Started:
		r.got = append(r.got, "started")
	case ask:
		r.got = append(r.got, "ask")
		if len(r.got) == 2 {
			close(r.seen)
		}
		ctx.Respond(m.n)
	}
}

// spawnWithSendInGap spawns a named recorder (with mb, nil: protoactor's
// default mailbox) and, from the spawner's init hook (which runs after
// the name is registered and before the mailbox has its dispatcher, the
// window a remote sender can hit), asks it something. It returns the
// recorder, the ask's future and what spawning panicked with.
func spawnWithSendInGap(t *testing.T, mb actor.MailboxProducer) (sys *actor.ActorSystem, r *recorder, f *actor.Future, panicked any) {
	t.Helper()
	sys = actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	r = &recorder{seen: make(chan struct{})}
	props := actor.PropsFromProducer(func() actor.Actor { return r }, actor.WithOnInit(func(ctx actor.Context) {
		f = sys.Root.RequestFuture(ctx.Self(), ask{7}, 2*time.Second)
	}))
	if mb != nil {
		props = props.Configure(actor.WithMailbox(mb))
	}
	func() {
		defer func() { panicked = recover() }()
		if _, err := sys.Root.SpawnNamed(props, "partition-0"); err != nil {
			t.Fatalf("spawn: %v", err)
		}
	}()
	return sys, r, f, panicked
}

// TestMessageInTheSpawnGapIsTakenAfterStarted: the ask that arrived while
// the actor was being spawned is answered, after Started.
func TestMessageInTheSpawnGapIsTakenAfterStarted(t *testing.T) {
	_, r, f, panicked := spawnWithSendInGap(t, Mailbox())
	if panicked != nil {
		t.Fatalf("spawn panicked: %v", panicked)
	}
	if res, err := f.Result(); err != nil || res != 7 {
		t.Fatalf("the ask sent in the gap: %v, %v; want 7", res, err)
	}
	<-r.seen
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.got) != 2 || r.got[0] != "started" || r.got[1] != "ask" {
		t.Fatalf("the actor took %v, want [started ask]", r.got)
	}
}

// TestDefaultMailboxDiesInTheSpawnGap shows the gap: protoactor's own
// mailbox panics in the sender and then never serves the actor, not even
// a later ask.
func TestDefaultMailboxDiesInTheSpawnGap(t *testing.T) {
	sys, r, _, panicked := spawnWithSendInGap(t, nil)
	if panicked == nil {
		t.Fatal("protoactor's mailbox took a message in the spawn gap; the gap this package closes may be gone")
	}
	later := sys.Root.RequestFuture(actor.NewPID(sys.Address(), "partition-0"), ask{8}, 300*time.Millisecond)
	if _, err := later.Result(); !errors.Is(err, actor.ErrTimeout) {
		t.Fatalf("an ask after the gap, default mailbox: %v, want a timeout", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.got) != 0 {
		t.Fatalf("the actor took %v, want nothing (its mailbox is stuck)", r.got)
	}
}
