// watch_test.go: the broker follows the metadata across an ended watch
// (on a MemStore, which ends its watches when told, as etcd's end when a
// member loses its leader): it lists the metadata again and acts on what
// changed while it was not watching. The test writes the topics itself,
// as the elected controller, so no controller actor reads the store.

package broker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/actors/broker"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/internal/poll"
	"github.com/actorlog/actorlog/messages"
)

func TestBrokerListsAgainWhenItsWatchesEnd(t *testing.T) {
	m := clustertest.NewMemStore(t)
	clustertest.RegisterMem(t, m, 1, 17171)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	e, err := m.NewElection(ctx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("close election: %v", err)
		}
	})
	fence, err := e.Campaign(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}

	sys := actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	brk, err := sys.Root.SpawnNamed(broker.Props(broker.Config{
		HostID: 1, Address: clustertest.HostAddress(17171), DataDir: t.TempDir(), Store: m, Logger: clustertest.Logger(t),
		Controller: func() *actor.PID { return nil },
	}), messages.BrokerActorID)
	if err != nil {
		t.Fatalf("spawn broker: %v", err)
	}
	t.Cleanup(func() {
		if err := sys.Root.StopFuture(brk).Wait(); err != nil {
			t.Errorf("stop broker: %v", err)
		}
	})
	if err := m.CreateTopic(ctx, fence, onHost1("events", cluster.NewTopicID())); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, func() error {
		if !running(sys, "events", 0) {
			return errors.New("replica of events-0 not running")
		}
		return nil
	})

	// The watches end; the broker's listing again is held until the
	// metadata has changed behind its back.
	listing, release := make(chan struct{}, 1), make(chan struct{})
	m.SetInterceptor(func(ctx context.Context, op string) error {
		if op != "Snapshot" {
			return nil
		}
		select {
		case listing <- struct{}{}:
		default:
		}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	m.EndWatches()
	select {
	case <-listing:
	case <-ctx.Done():
		t.Fatal("the broker did not list the metadata again after its watches ended")
	}
	if err := m.DeleteTopic(ctx, fence, "events"); err != nil {
		t.Fatal(err)
	}
	if err := m.CreateTopic(ctx, fence, onHost1("after", cluster.NewTopicID())); err != nil {
		t.Fatal(err)
	}
	close(release)
	m.SetInterceptor(nil)
	poll.Until(t, 10*time.Second, func() error {
		if running(sys, "events", 0) || !running(sys, "after", 0) {
			return fmt.Errorf("events-0 running %v, after-0 running %v; want the deleted topic's replica stopped, the new one's running",
				running(sys, "events", 0), running(sys, "after", 0))
		}
		return nil
	})

	// It watches again: a later change reaches it.
	if err := m.CreateTopic(ctx, fence, onHost1("later", cluster.NewTopicID())); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, func() error {
		if !running(sys, "later", 0) {
			return errors.New("replica of later-0 not running")
		}
		return nil
	})
}
