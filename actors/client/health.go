// health.go: which host addresses a client believes it can reach.
//
// protoactor reports a lost connection at once (EndpointTerminatedEvent),
// but a message sent to an address whose host is gone waits while its
// endpoint writer makes MaxRetryCount connection attempts 2 s apart (10 s)
// before anything fails. A producer or consumer that asks HostUp before it
// sends to a partition leader avoids that wait: an address is down from the
// moment its connection is lost (or a dial to it fails) until a background
// dial succeeds again, and it then refreshes metadata instead of queueing
// requests for a dead host. A frozen host still accepts connections (its
// kernel does), so it counts as up; the request timeout covers that case.

package client

import (
	"net"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/sirupsen/logrus"
)

const (
	// probeTimeout bounds one dial of a host address.
	probeTimeout = 500 * time.Millisecond
	// reprobeInterval is how often a down address is dialled again.
	reprobeInterval = 200 * time.Millisecond
)

type health struct {
	logger *logrus.Entry
	dial   func(addr string) error

	mu      sync.Mutex
	state   map[string]bool // address → up; absent: never checked
	probing map[string]bool
	closed  chan struct{}
	sub     *eventstream.Subscription
}

func newHealth(logger *logrus.Entry, dial func(string) error) *health {
	return &health{logger: logger, dial: dial, state: map[string]bool{}, probing: map[string]bool{}, closed: make(chan struct{})}
}

func dialProbe(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, probeTimeout)
	if err != nil {
		return err
	}
	return conn.Close()
}

// up reports whether addr is believed reachable, dialling it the first
// time it is asked about.
func (h *health) up(addr string) bool {
	h.mu.Lock()
	up, known := h.state[addr]
	h.mu.Unlock()
	if known {
		return up
	}
	err := h.dial(addr)
	h.mu.Lock()
	defer h.mu.Unlock()
	if up, known := h.state[addr]; known {
		return up // decided meanwhile (a terminated event or another probe)
	}
	if err != nil {
		h.markDownLocked(addr, err)
		return false
	}
	h.state[addr] = true
	return true
}

// lost marks addr down (its connection ended) until a dial succeeds.
func (h *health) lost(addr string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.markDownLocked(addr, nil)
}

func (h *health) markDownLocked(addr string, err error) {
	if h.state[addr] || !h.probing[addr] {
		h.logger.WithFields(logrus.Fields{"address": addr, "error": err}).Debug("host address down; probing it")
	}
	h.state[addr] = false
	if h.probing[addr] {
		return
	}
	h.probing[addr] = true
	go h.reprobe(addr)
}

// reprobe dials addr until it answers (or the client closes).
func (h *health) reprobe(addr string) {
	t := time.NewTicker(reprobeInterval)
	defer t.Stop()
	for {
		select {
		case <-h.closed:
			return
		case <-t.C:
		}
		if err := h.dial(addr); err != nil {
			continue
		}
		h.mu.Lock()
		h.state[addr] = true
		delete(h.probing, addr)
		h.mu.Unlock()
		h.logger.WithField("address", addr).Debug("host address reachable again")
		return
	}
}

func (h *health) subscribe(es *eventstream.EventStream) {
	h.sub = es.Subscribe(func(evt any) {
		if e, ok := evt.(*remote.EndpointTerminatedEvent); ok {
			h.lost(e.Address)
		}
	})
}

func (h *health) close(es *eventstream.EventStream) {
	if h.sub != nil {
		es.Unsubscribe(h.sub)
	}
	close(h.closed)
}

// HostUp reports whether the host at addr is believed reachable: false
// from the moment its connection is lost, or a dial to it fails, until a
// background dial succeeds again. The first call for an address dials it
// (bounded by 500 ms). Producers and consumers check it before sending to
// a partition leader, and refresh metadata instead while it is false.
func (c *Client) HostUp(addr string) bool { return c.health.up(addr) }
