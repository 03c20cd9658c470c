// provider.go: a protoactor ClusterProvider whose member list is derived
// from the host registrations in etcd — the same registrations the
// controller watches — so what protoactor's cluster believes and what the
// controller acts on never disagree (DESIGN §5: one source of truth for
// membership). protoactor's own membership has no quorum or fencing; it is
// used only for placement and location transparency.

package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"sync"
	"time"

	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/messages"
)

// MemberProvider feeds protoactor's member list from etcd host
// registrations. Setup runs inside StartMember, after protoactor's remote
// has started (DESIGN §8: an embedded etcd must start after the remote);
// it starts whatever the host needs (etcd, the store, the registration)
// and returns the Store to watch.
type MemberProvider struct {
	setup  func(c *pcluster.Cluster) (*Store, error)
	logger *logrus.Entry

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}

	listed     chan struct{} // closed at the first member list published
	listedOnce sync.Once
}

// NewMemberProvider returns a provider that calls setup in StartMember.
func NewMemberProvider(setup func(c *pcluster.Cluster) (*Store, error), logger *logrus.Entry) *MemberProvider {
	return &MemberProvider{setup: setup, logger: logger.WithField("component", "members"), listed: make(chan struct{})}
}

// Listed is closed once the first member list, read from the
// registrations, is published. StartMember has by then done all it does
// but return; protoactor's cluster StartMember, which called it, still
// sleeps a second after it returns (see host.startMember).
func (p *MemberProvider) Listed() <-chan struct{} { return p.listed }

// StartMember runs setup, then follows the host registrations.
func (p *MemberProvider) StartMember(c *pcluster.Cluster) error {
	store, err := p.setup(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.mu.Lock()
	p.cancel, p.done = cancel, make(chan struct{})
	done := p.done
	p.mu.Unlock()
	kinds := c.GetClusterKinds()
	sort.Strings(kinds)
	go func() {
		defer close(done)
		p.follow(ctx, store, c.MemberList, kinds)
	}()
	return nil
}

// StartClient is not supported: clients talk to hosts by address.
func (p *MemberProvider) StartClient(*pcluster.Cluster) error {
	return errors.New("cluster: the member provider serves hosts only")
}

// Shutdown stops following the registrations.
func (p *MemberProvider) Shutdown(bool) error {
	p.mu.Lock()
	cancel, done := p.cancel, p.done
	p.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	return nil
}

// follow lists the hosts and publishes them as the member list, then
// applies every change; after a watch failure it lists again.
func (p *MemberProvider) follow(ctx context.Context, store *Store, ml *pcluster.MemberList, kinds []string) {
	for ctx.Err() == nil {
		snap, err := store.Snapshot(ctx)
		if err != nil {
			if ctx.Err() == nil {
				p.logger.WithError(err).Warn("listing hosts failed; retrying")
				SleepCtx(ctx, time.Second)
			}
			continue
		}
		hosts := map[int32]*messages.HostInfo{}
		for _, h := range snap.Hosts {
			hosts[h.HostId] = h
		}
		p.update(ml, members(hosts, kinds, p.logger))
		p.listedOnce.Do(func() { close(p.listed) })
		for ev := range store.WatchHosts(ctx, snap.Revision) {
			if ev.Err != nil {
				p.logger.WithError(ev.Err).Warn("host watch ended; listing again")
				break
			}
			if ev.Type == EventDelete {
				delete(hosts, ev.HostID)
			} else {
				hosts[ev.HostID] = ev.Host
			}
			p.update(ml, members(hosts, kinds, p.logger))
		}
	}
}

// update publishes the member list. (No cluster identities are looked up
// any more — the controller is an election, not a placed activation. If
// one is again: protoactor's disthash lookup, at the version served here,
// reads its member table without a lock while this rewrites it, so
// look-ups must be serialized with update.)
func (p *MemberProvider) update(ml *pcluster.MemberList, ms []*pcluster.Member) {
	ml.UpdateClusterTopology(ms)
}

// members turns registrations into protoactor members (every host serves
// every kind).
func members(hosts map[int32]*messages.HostInfo, kinds []string, logger *logrus.Entry) []*pcluster.Member {
	out := make([]*pcluster.Member, 0, len(hosts))
	for _, h := range hosts {
		m, err := member(h, kinds)
		if err != nil {
			logger.WithError(err).WithField("host_id", h.HostId).Warn("host registration unusable as a cluster member")
			continue
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Id < out[j].Id })
	return out
}

func member(h *messages.HostInfo, kinds []string) (*pcluster.Member, error) {
	if h.MemberId == "" {
		return nil, errors.New("no member id")
	}
	host, portStr, err := net.SplitHostPort(h.AdvertisedAddress)
	if err != nil {
		return nil, fmt.Errorf("advertised address %q: %w", h.AdvertisedAddress, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("advertised address %q: bad port", h.AdvertisedAddress)
	}
	return &pcluster.Member{Id: h.MemberId, Host: host, Port: int32(port), Kinds: append([]string(nil), kinds...)}, nil
}

// SleepCtx waits for d or until ctx ends, whichever comes first.
func SleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
