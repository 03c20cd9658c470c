// probe.go: faster failover for hosts whose process is gone. A host's
// liveness is its registration lease (DESIGN §5), which lapses up to
// LeaseTTL after the host stops renewing it — and longer when the host also
// held the etcd raft leadership, because a new raft leader extends every
// lease by the TTL. A crashed process (SIGKILL, OOM kill, panic) can be
// told apart sooner: its machine still answers, but nothing listens on its
// port any more, so a dial is refused at once. While elected, the
// controller dials every other registered host's advertised address every
// probeInterval; a host refused probeRefusals times in a row (same broker
// epoch) has its registration lease revoked, which deletes its
// registration exactly as an expiry would, and the usual reaction follows
// (liveness.go).
//
// Only a refusal counts. A frozen host (its kernel still accepts), a slow
// one, or one cut off by the network (dials time out or find no route) is
// left to its lease, so this never decides more than the lease would: it
// only decides sooner for a process that cannot serve anyway. Revoking a
// lease that is already gone, or that a restarted host has replaced (it
// registers with a new lease, so a new broker epoch), changes nothing.
//
// Threading: the prober runs on its own goroutine while the controller is
// elected; it shares nothing with the actor but the host set, which the
// host watch hands it under its lock.

package controller

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/messages"
)

const (
	// probeInterval is how often each other host's address is dialled.
	probeInterval = 400 * time.Millisecond
	// probeTimeout bounds one dial.
	probeTimeout = 300 * time.Millisecond
	// probeRefusals is how many refusals in a row make a host gone.
	probeRefusals = 2
)

// hostProber dials the other registered hosts and revokes the leases of
// those whose process is gone.
type hostProber struct {
	self   int32
	dial   func(ctx context.Context, addr string) error
	revoke func(ctx context.Context, lease int64) error
	logger *logrus.Entry

	mu    sync.Mutex
	hosts map[int32]*messages.HostInfo // the registered hosts, from the host watch

	refused map[int64]int // broker epoch -> refusals in a row (run's own)
}

func newHostProber(self int32, revoke func(ctx context.Context, lease int64) error, logger *logrus.Entry) *hostProber {
	return &hostProber{self: self, dial: dialHost, revoke: revoke, logger: logger, refused: map[int64]int{}}
}

// dialHost opens and closes a TCP connection to addr.
func dialHost(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return conn.Close()
}

// setHosts replaces the registered host set (called by the host watch).
func (p *hostProber) setHosts(hosts map[int32]*messages.HostInfo) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hosts = hosts
}

// run probes until ctx ends.
func (p *hostProber) run(ctx context.Context) {
	t := time.NewTicker(probeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.probeOnce(ctx)
	}
}

// probeOnce dials every other host once and revokes the lease of each
// that has now been refused probeRefusals times in a row.
func (p *hostProber) probeOnce(ctx context.Context) {
	p.mu.Lock()
	hosts := p.hosts
	p.mu.Unlock()
	seen := make(map[int64]bool, len(hosts))
	for id, h := range hosts {
		if id == p.self || h.GetAdvertisedAddress() == "" {
			continue
		}
		epoch := h.GetBrokerEpoch()
		seen[epoch] = true
		err := p.dial(ctx, h.GetAdvertisedAddress())
		if !errors.Is(err, syscall.ECONNREFUSED) {
			delete(p.refused, epoch) // answered, or not a refusal: the lease decides
			continue
		}
		p.refused[epoch]++
		if p.refused[epoch] < probeRefusals {
			continue
		}
		delete(p.refused, epoch)
		log := p.logger.WithFields(logrus.Fields{"host_id": id, "address": h.GetAdvertisedAddress(), "broker_epoch": epoch})
		if err := p.revoke(ctx, epoch); err != nil {
			log.WithError(err).Warn("controller: a host's process is gone (connections refused) but its lease could not be revoked; it expires by itself")
			continue
		}
		log.Warn("controller: a host's process is gone (connections refused); revoked its registration lease")
	}
	for epoch := range p.refused {
		if !seen[epoch] {
			delete(p.refused, epoch) // no longer registered
		}
	}
}
