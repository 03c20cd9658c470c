// restart_internal_test.go: the pure parts of the broker's supervision
// and background removals — the backoff, the mapping of a child's id to
// its partition, and which directory names are tombstones.

package broker

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/internal/poll"
)

func TestRestartDelay(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want time.Duration
	}{
		{1, 100 * time.Millisecond},
		{2, 200 * time.Millisecond},
		{4, 800 * time.Millisecond},
		{8, 10 * time.Second}, // 12.8 s, capped
		{1000, 10 * time.Second},
	} {
		if got := restartDelay(tc.n, 100*time.Millisecond, 10*time.Second); got != tc.want {
			t.Errorf("restartDelay(%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
}

func TestChildKey(t *testing.T) {
	for _, tc := range []struct {
		id          string
		want        tp
		coordinator bool
		ok          bool
	}{
		{"broker/p/events/3", tp{"events", 3}, false, true},
		{"broker/p/a.b-c_d/0", tp{"a.b-c_d", 0}, false, true},
		{"broker/coordinator/7", tp{"__consumer_offsets", 7}, true, true},
		{"broker/p/events/x", tp{}, false, false},
		{"broker/p/events/99999999999", tp{}, false, false},
		{"broker/p//1", tp{}, false, false},
		{"other/p/events/3", tp{}, false, false},
		{"broker/$12", tp{}, false, false},
		{"broker", tp{}, false, false},
	} {
		key, coord, ok := childKey("broker", tc.id)
		if ok != tc.ok || (ok && (key != tc.want || coord != tc.coordinator)) {
			t.Errorf("childKey(%q) = %v %v %v, want %v %v %v", tc.id, key, coord, ok, tc.want, tc.coordinator, tc.ok)
		}
	}
}

func TestIsTombstone(t *testing.T) {
	for name, want := range map[string]bool{
		"events-0.deleted-1764612345000000000": true,
		"x.deleted-2147483648":                 true,
		"x.deleted-2147483647":                 false, // partition 2147483647 of topic "x.deleted"
		"x.deleted-3":                          false,
		"events-0":                             false,
		".deleted-1764612345000000000":         false,
		"events-0.deleted-":                    false,
		"events-0.deleted-12a":                 false,
	} {
		if got := isTombstone(name); got != want {
			t.Errorf("isTombstone(%q) = %v, want %v", name, got, want)
		}
	}
}

// boomChild panics on any string message and counts its starts.
type boomChild struct{ starts *atomic.Int32 }

func (c *boomChild) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		c.starts.Add(1)
	case string:
		panic("boom")
	}
}

// TestFailingChildIsStoppedNotRestarted: under stopOnFailure a child that
// panics stops (closing what it holds) instead of being restarted in place.
func TestFailingChildIsStoppedNotRestarted(t *testing.T) {
	sys := actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	starts := &atomic.Int32{}
	terminated := make(chan string, 1)
	parent := actor.PropsFromFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case *actor.Started:
			ctx.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return &boomChild{starts: starts} }), "child")
		case *actor.Terminated:
			terminated <- m.GetWho().GetId()
		}
	}, actor.WithSupervisor(stopOnFailure{logger: logrus.NewEntry(logrus.New())}))
	pid, err := sys.Root.SpawnNamed(parent, "parent")
	if err != nil {
		t.Fatal(err)
	}
	child := actor.NewPID(sys.Address(), pid.GetId()+"/child")
	poll.Until(t, 5*time.Second, func() error {
		if starts.Load() == 0 {
			return errors.New("the child has not started")
		}
		return nil
	})
	sys.Root.Send(child, "boom")
	select {
	case id := <-terminated:
		if id != child.GetId() {
			t.Fatalf("terminated %q, want %q", id, child.GetId())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the failing child did not stop")
	}
	if n := starts.Load(); n != 1 {
		t.Fatalf("the child started %d times, want once (stopped, not restarted)", n)
	}
	if _, ok := sys.ProcessRegistry.GetLocal(child.GetId()); ok {
		t.Fatal("the failing child is still registered")
	}
}
