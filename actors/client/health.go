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
	// forgetAfter is how long a down address nobody asks about is probed
	// before it is forgotten (its probe stops; the next HostUp for it
	// dials afresh). A host removed from the cluster for good, or moved
	// to another address, is not dialled forever.
	forgetAfter = time.Minute
)

// addrState is what health knows of one address.
type addrState struct {
	up      bool
	probing bool // a reprobe goroutine runs for it
	asked   bool // up was called for it since the last reprobe tick
}

// health tracks the addresses a client asks about (HostUp) only. Its
// remote also sees connections from others end — in a host, every client
// that fetched or produced and went away, whose address never answers
// again — and probing those would dial each of them five times a second
// forever (a host that had served 26 short-lived CLI processes ran 26
// such goroutines, ~130 refused connects a second).
type health struct {
	logger *logrus.Entry
	dial   func(addr string) error
	forget time.Duration // forgetAfter; shorter in tests

	mu     sync.Mutex
	addrs  map[string]*addrState // absent: never asked about, or forgotten
	closed chan struct{}
	sub    *eventstream.Subscription
}

func newHealth(logger *logrus.Entry, dial func(string) error) *health {
	return &health{logger: logger, dial: dial, forget: forgetAfter, addrs: map[string]*addrState{}, closed: make(chan struct{})}
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
	if s := h.addrs[addr]; s != nil {
		s.asked = true
		up := s.up
		h.mu.Unlock()
		return up
	}
	h.mu.Unlock()
	err := h.dial(addr)
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.addrs[addr]; s != nil {
		s.asked = true
		return s.up // decided meanwhile (a terminated event or another probe)
	}
	s := &addrState{asked: true}
	h.addrs[addr] = s
	if err != nil {
		h.markDownLocked(addr, s, err)
		return false
	}
	s.up = true
	return true
}

// lost marks addr down (its connection ended) until a dial succeeds, if
// it is an address this client asks about; any other is no concern of it.
func (h *health) lost(addr string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.addrs[addr]; s != nil {
		h.markDownLocked(addr, s, nil)
	}
}

func (h *health) markDownLocked(addr string, s *addrState, err error) {
	if s.up || !s.probing {
		h.logger.WithFields(logrus.Fields{"address": addr, "error": err}).Debug("host address down; probing it")
	}
	s.up = false
	if s.probing {
		return
	}
	s.probing = true
	go h.reprobe(addr, s)
}

// reprobe dials addr until it answers, the client closes, or nobody has
// asked about it for h.forget.
func (h *health) reprobe(addr string, s *addrState) {
	t := time.NewTicker(reprobeInterval)
	defer t.Stop()
	idle := time.Duration(0)
	for {
		select {
		case <-h.closed:
			return
		case <-t.C:
		}
		h.mu.Lock()
		if s.asked {
			s.asked, idle = false, 0
		} else if idle += reprobeInterval; idle >= h.forget {
			if h.addrs[addr] == s {
				delete(h.addrs, addr)
			}
			h.mu.Unlock()
			h.logger.WithField("address", addr).Debug("host address down and not asked about; forgotten")
			return
		}
		h.mu.Unlock()
		if err := h.dial(addr); err != nil {
			continue
		}
		h.mu.Lock()
		s.up, s.probing = true, false
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
