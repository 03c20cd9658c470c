package client

import (
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/internal/poll"
)

// waitUp waits until h reports addr up.
func waitUp(t *testing.T, h *health, addr string) {
	t.Helper()
	poll.Until(t, 5*time.Second, func() error {
		if !h.up(addr) {
			return fmt.Errorf("%s still down", addr)
		}
		return nil
	})
}

func TestHealthFollowsTerminationAndProbes(t *testing.T) {
	var reachable atomic.Bool
	var dials atomic.Int32
	h := newHealth(logrus.NewEntry(logrus.New()), func(string) error {
		dials.Add(1)
		if reachable.Load() {
			return nil
		}
		return errors.New("connection refused")
	})
	es := actor.NewActorSystem().EventStream
	h.subscribe(es)
	defer h.close(es)

	// First use dials; a refused dial makes the address down.
	if h.up("a:1") {
		t.Fatal("an unreachable address is up")
	}
	// It comes back once a background dial succeeds.
	reachable.Store(true)
	waitUp(t, h, "a:1")
	before := dials.Load()
	if !h.up("a:1") || dials.Load() != before {
		t.Fatal("a known-up address was dialled again")
	}
	// A lost connection makes it down at once, until it answers again.
	reachable.Store(false)
	es.Publish(&remote.EndpointTerminatedEvent{Address: "a:1"})
	if h.up("a:1") {
		t.Fatal("up after its endpoint terminated")
	}
	poll.Never(t, 3*reprobeInterval, func() error {
		if h.up("a:1") {
			return errors.New("up while dials fail")
		}
		return nil
	})
	reachable.Store(true)
	waitUp(t, h, "a:1")
	// Other addresses are independent.
	reachable.Store(false)
	if h.up("b:2") || !h.up("a:1") {
		t.Fatal("one address's state leaked to another")
	}
}

func TestHostUpDialsRealAddresses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	live := ln.Addr().String()
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	if err := dead.Close(); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// One client per test process: a second protoactor remote in the same
	// process races in its global gRPC logger set-up, so this uses the
	// client's health tracker with the real dialler directly.
	h := newHealth(logrus.NewEntry(logrus.New()), dialProbe)
	es := actor.NewActorSystem().EventStream
	h.subscribe(es)
	defer h.close(es)
	if !h.up(live) {
		t.Fatal("a listening address is down")
	}
	if h.up(deadAddr) {
		t.Fatal("a closed port is up")
	}
}
