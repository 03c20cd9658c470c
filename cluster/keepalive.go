// keepalive.go keeps a lease alive with one short, bounded renewal at a
// time, instead of clientv3's KeepAlive stream.
//
// Why: a host's client talks to its own etcd member. When the raft
// leader's host freezes, a follower forwards each renewal to the frozen
// leader and the request hangs until the server's request timeout (about
// 7 s), holding up the KeepAlive stream behind it. clientv3 then sees no
// answer for a TTL and reports the lease lost — although the new leader,
// elected about a second later, has extended every lease. With a 6 s TTL
// every unfrozen host fenced itself and the cluster fell apart into
// islands. Here each renewal has its own deadline (a quarter TTL), so after
// the raft election the next renewal gets through.

package cluster

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// leaseKeeper renews one lease until stopped or until the lease is gone.
type leaseKeeper struct {
	done     chan struct{} // closed when the lease is lost or the keeper stopped
	loopDone chan struct{}
	cancel   context.CancelFunc
	mu       sync.Mutex
	lost     bool
}

// keepLease starts renewing lease (of ttl, granted at or after granted).
// The lease counts as lost when etcd says it does not exist, or when no
// renewal sent within the last TTL has succeeded: from then on the server
// may have expired it, so its holder must stop acting on it.
func keepLease(client *clientv3.Client, lease clientv3.LeaseID, ttl time.Duration, granted time.Time, logger *logrus.Entry) *leaseKeeper {
	ctx, cancel := context.WithCancel(context.Background())
	k := &leaseKeeper{done: make(chan struct{}), loopDone: make(chan struct{}), cancel: cancel}
	interval := max(ttl/6, 200*time.Millisecond)
	callTimeout := max(ttl/4, 500*time.Millisecond)
	// A renewal acknowledged by the server extends the lease from when
	// the server saw it, which is no earlier than when it was sent.
	const margin = 250 * time.Millisecond
	go func() {
		defer close(k.loopDone)
		defer close(k.done)
		validUntil := granted.Add(ttl - margin)
		failures := 0
		for {
			sent := time.Now()
			cctx, ccancel := context.WithTimeout(ctx, callTimeout)
			resp, err := client.KeepAliveOnce(cctx, lease)
			ccancel()
			switch {
			case ctx.Err() != nil:
				return
			case err == nil && resp.TTL > 0:
				validUntil = sent.Add(time.Duration(resp.TTL)*time.Second - margin)
				if failures > 0 {
					logger.WithField("failed_renewals", failures).Info("lease renewals succeed again")
				}
				failures = 0
			case err == nil || errors.Is(err, rpctypes.ErrLeaseNotFound):
				logger.Warn("lease expired or revoked")
				k.markLost()
				return
			default:
				failures++
				logger.WithError(err).WithField("failed_renewals", failures).Debug("lease renewal failed; retrying")
			}
			if time.Now().After(validUntil) {
				logger.WithField("since_last_renewal", time.Since(validUntil.Add(-ttl+margin)).Round(time.Millisecond)).Warn("no lease renewal succeeded for a whole TTL: the lease may be gone")
				k.markLost()
				return
			}
			wait := interval
			if left := time.Until(validUntil); left < wait {
				wait = max(left, 10*time.Millisecond)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
	}()
	return k
}

func (k *leaseKeeper) markLost() {
	k.mu.Lock()
	k.lost = true
	k.mu.Unlock()
}

// Lost reports whether the keeper ended because the lease is gone.
func (k *leaseKeeper) Lost() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lost
}

// Done is closed when the lease is lost or the keeper is stopped.
func (k *leaseKeeper) Done() <-chan struct{} { return k.done }

// Stop ends the renewals (the lease then expires after its TTL unless
// revoked) and waits for the loop to end.
func (k *leaseKeeper) Stop() {
	k.cancel()
	<-k.loopDone
}
