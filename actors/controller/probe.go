// probe.go: faster failover for hosts whose process is gone. A host's
// liveness is its registration lease (DESIGN §5), which lapses up to
// LeaseTTL after the host stops renewing it — and longer when the host also
// held the etcd raft leadership, because a new raft leader extends every
// lease by the TTL; the controller's own election session lapses the same
// way. A crashed process (SIGKILL, OOM kill, panic) can be told apart
// sooner: its machine still answers, but nothing listens on its port any
// more, so a dial is refused at once.
//
// Every host's controller actor, elected or standby, dials every other
// registered host's advertised address every probeInterval (the host list
// is re-read every probeRefresh from the local etcd member, which answers
// even while etcd elects a new raft leader). A host refused probeRefusals times in a
// row (same broker epoch) is gone: its registration lease is revoked, which
// deletes its registration exactly as an expiry would (the controller
// reacts as to any host leaving, liveness.go), and its election candidacy
// is evicted, so that when it was the controller a standby takes over at
// once instead of after the session TTL. Standbys probe too because the
// host that dies is often the controller's own.
//
// Only a refusal counts. A frozen host (its kernel still accepts), a slow
// one, or one cut off by the network (dials time out or find no route) is
// left to its leases, so this never decides more than the leases would: it
// only decides sooner for a process that cannot serve anyway. Revoking a
// lease that is already gone, or that a restarted host has replaced (it
// registers with a new lease, so a new broker epoch), changes nothing; a
// restarted host's new candidacy could be evicted only if it campaigned
// between the refusals and the eviction, and it then simply campaigns again.
//
// Threading: the prober runs on its own goroutine for the actor's life and
// shares no state with the actor.

package controller

import (
	"context"
	"errors"
	"net"
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
	// probeRefresh is how often the registered hosts are listed again.
	probeRefresh = 2 * time.Second
	// probeCallTimeout bounds each etcd call of the prober. A call caught
	// by the death of the etcd raft leader (often on the killed host) would
	// otherwise hang for etcd's request timeout (~7 s); abandoned, it is
	// made again after the next refusals, by then through a new leader.
	probeCallTimeout = 1500 * time.Millisecond
)

// hostProber dials the other registered hosts and reports those whose
// process is gone.
type hostProber struct {
	self   int32
	dial   func(ctx context.Context, addr string) error
	list   func(ctx context.Context) ([]*messages.HostInfo, error)
	gone   func(ctx context.Context, h *messages.HostInfo) error
	logger *logrus.Entry

	hosts   []*messages.HostInfo
	listed  time.Time     // when hosts was read
	refused map[int64]int // broker epoch -> refusals in a row
}

// newHostProber returns the prober of this controller's host.
func (c *Controller) newHostProber() *hostProber {
	return &hostProber{
		self: c.cfg.HostID, dial: dialHost, logger: c.logger, refused: map[int64]int{},
		list: func(ctx context.Context) ([]*messages.HostInfo, error) {
			ctx, cancel := context.WithTimeout(ctx, probeCallTimeout)
			defer cancel()
			return c.cfg.Store.ListHostsLocal(ctx)
		},
		gone: c.hostGone,
	}
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

// run probes until ctx ends.
func (p *hostProber) run(ctx context.Context) {
	t := time.NewTicker(probeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			p.probeOnce(ctx, now)
		}
	}
}

// probeOnce dials every other host once and reports each that has now
// been refused probeRefusals times in a row.
func (p *hostProber) probeOnce(ctx context.Context, now time.Time) {
	if now.Sub(p.listed) >= probeRefresh {
		hosts, err := p.list(ctx)
		if err != nil {
			p.logger.WithError(err).Debug("host prober: cannot list the hosts")
		} else {
			p.hosts, p.listed = hosts, now
		}
	}
	seen := make(map[int64]bool, len(p.hosts))
	for _, h := range p.hosts {
		if h.GetHostId() == p.self || h.GetAdvertisedAddress() == "" {
			continue
		}
		epoch := h.GetBrokerEpoch()
		seen[epoch] = true
		err := p.dial(ctx, h.GetAdvertisedAddress())
		if !errors.Is(err, syscall.ECONNREFUSED) {
			delete(p.refused, epoch) // answered, or not a refusal: the leases decide
			continue
		}
		p.refused[epoch]++
		if p.refused[epoch] < probeRefusals {
			continue
		}
		delete(p.refused, epoch)
		log := p.logger.WithFields(logrus.Fields{"host_id": h.GetHostId(), "address": h.GetAdvertisedAddress(), "broker_epoch": epoch})
		if err := p.gone(ctx, h); err != nil {
			log.WithError(err).Warn("a host's process is gone (connections refused), but its leases could not be revoked; they expire by themselves")
			continue
		}
		log.Warn("a host's process is gone (connections refused): revoked its registration lease and election candidacy")
		p.listed = time.Time{} // list again: it is gone, or back with a new epoch
	}
	for epoch := range p.refused {
		if !seen[epoch] {
			delete(p.refused, epoch) // no longer registered
		}
	}
}

// hostGone revokes the registration lease of h, whose process is gone, and
// evicts its election candidacies (those whose value names its address).
func (c *Controller) hostGone(ctx context.Context, h *messages.HostInfo) error {
	call := func(f func(context.Context) error) error {
		rctx, cancel := context.WithTimeout(ctx, probeCallTimeout)
		defer cancel()
		return f(rctx)
	}
	if err := call(func(ctx context.Context) error { return c.cfg.Store.RevokeHostLease(ctx, h.GetBrokerEpoch()) }); err != nil {
		return err
	}
	var keys, values []string
	if err := call(func(ctx context.Context) (err error) {
		keys, values, err = c.cfg.Store.Candidates(ctx)
		return err
	}); err != nil {
		return err
	}
	for i, v := range values {
		if pid, err := decodePID(v); err == nil && pid.Address == h.GetAdvertisedAddress() {
			if err := call(func(ctx context.Context) error { return c.cfg.Store.EvictCandidate(ctx, keys[i]) }); err != nil {
				return err
			}
		}
	}
	return nil
}
