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

// TestHealthIgnoresAddressesNobodyAsksAbout: a host's remote sees the
// connections of clients that went away end; their addresses never answer
// again, and must not be dialled (it was five times a second, forever, per
// client gone).
func TestHealthIgnoresAddressesNobodyAsksAbout(t *testing.T) {
	var dials atomic.Int32
	h := newHealth(logrus.NewEntry(logrus.New()), func(string) error {
		dials.Add(1)
		return errors.New("connection refused")
	})
	es := actor.NewActorSystem().EventStream
	h.subscribe(es)
	defer h.close(es)
	for i := range 20 {
		es.Publish(&remote.EndpointTerminatedEvent{Address: fmt.Sprintf("client:%d", i)})
	}
	poll.Never(t, 5*reprobeInterval, func() error {
		if n := dials.Load(); n != 0 {
			return fmt.Errorf("%d dials of addresses nobody asked about", n)
		}
		return nil
	})
	h.mu.Lock()
	n := len(h.addrs)
	h.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d addresses tracked, want 0", n)
	}
}

// TestHealthForgetsADownAddressNobodyAsksAbout: a down host is probed
// while someone asks about it, and forgotten (no more dials) once nobody
// has for h.forget; asking again dials afresh.
func TestHealthForgetsADownAddressNobodyAsksAbout(t *testing.T) {
	var dials atomic.Int32
	h := newHealth(logrus.NewEntry(logrus.New()), func(string) error {
		dials.Add(1)
		return errors.New("connection refused")
	})
	h.forget = 5 * reprobeInterval
	es := actor.NewActorSystem().EventStream
	h.subscribe(es)
	defer h.close(es)
	if h.up("gone:1") {
		t.Fatal("an unreachable address is up")
	}
	// Asked about all along: probed all along, past h.forget.
	deadline := time.Now().Add(3 * h.forget)
	for time.Now().Before(deadline) {
		if h.up("gone:1") {
			t.Fatal("up while dials fail")
		}
		time.Sleep(reprobeInterval / 2)
	}
	h.mu.Lock()
	tracked := h.addrs["gone:1"] != nil
	h.mu.Unlock()
	if !tracked {
		t.Fatal("an address asked about was forgotten")
	}
	// Nobody asks: it is forgotten and dialled no more.
	poll.Until(t, 3*h.forget, func() error {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.addrs["gone:1"] != nil {
			return errors.New("still tracked")
		}
		return nil
	})
	after := dials.Load()
	poll.Never(t, 3*reprobeInterval, func() error {
		if n := dials.Load(); n != after {
			return fmt.Errorf("%d dials after it was forgotten", n-after)
		}
		return nil
	})
	// Asked again: one fresh dial decides.
	if h.up("gone:1") || dials.Load() != after+1 {
		t.Fatalf("asking again: %d dials, want 1", dials.Load()-after)
	}
}
