// hosts.go holds host registration (DESIGN §5: host liveness is an etcd
// lease). A host puts its HostInfo under hosts/<id> with a lease it keeps
// alive; the lease id is its broker epoch. If the host dies, freezes or is
// cut off for longer than the TTL, the lease expires, the key disappears
// and the controller (watching hosts) moves leadership away. A host whose
// registration is lost is fenced: it must stop leading and register again,
// getting a new broker epoch.

package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/messages"
)

// Registration is a live host registration. Its methods are safe for
// concurrent use.
type Registration struct {
	store  *Store
	info   *messages.HostInfo // immutable after Register
	key    string
	lease  clientv3.LeaseID
	logger *logrus.Entry

	cancel   context.CancelFunc // stops the keepalives
	lost     atomic.Bool        // the keepalives ended by themselves: the lease is gone
	done     chan struct{}      // closed when the lease is lost or Close is called
	loopDone chan struct{}      // closed when the keepalive goroutine returns

	closeOnce sync.Once
	closeErr  error
}

// Register registers a host: it grants a lease of ttl (rounded up to whole
// seconds; etcd may raise very short TTLs to its minimum), sets
// info.BrokerEpoch to the lease id, and puts info under hosts/<id> with the
// lease — only if no live registration holds that host id (one
// transaction) — then keeps the lease alive in the background until Close
// or until it is lost. ctx bounds only this call.
//
// Errors wrap ErrHostRegistered (another registration holds the id: a
// duplicate host id, or this host's previous registration has not expired
// yet, at another address), or an etcd error. A live registration at the
// same advertised address is taken over (see below). The caller must Close the Registration.
func (s *Store) Register(ctx context.Context, info *messages.HostInfo, ttl time.Duration) (*Registration, error) {
	if info.GetHostId() < 1 {
		return nil, fmt.Errorf("cluster: register host: host id %d, want >= 1", info.GetHostId())
	}
	id := info.GetHostId()
	secs, err := ttlSeconds(ttl)
	if err != nil {
		return nil, fmt.Errorf("cluster: register host %d: %w", id, err)
	}
	lease, err := s.client.Grant(ctx, secs)
	if err != nil {
		return nil, fmt.Errorf("cluster: register host %d: grant %ds lease: %w", id, secs, err)
	}
	revoke := func() {
		// Best effort: the lease expires within its TTL anyway.
		if _, err := s.client.Revoke(context.WithoutCancel(ctx), lease.ID); err != nil {
			s.logger.WithError(err).WithFields(logrus.Fields{"host_id": id, "lease": int64(lease.ID)}).Warn("revoke unused host lease")
		}
	}
	info.BrokerEpoch = int64(lease.ID)
	val, err := marshalOpts.Marshal(info)
	if err != nil {
		revoke()
		return nil, fmt.Errorf("cluster: register host %d: marshal: %w", id, err)
	}
	key := s.keys.Host(id)
	for attempt := 0; ; attempt++ {
		resp, err := s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, string(val), clientv3.WithLease(lease.ID))).
			Else(clientv3.OpGet(key)).
			Commit()
		if err != nil {
			revoke()
			return nil, fmt.Errorf("cluster: register host %d: %w", id, err)
		}
		if resp.Succeeded {
			break
		}
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		// A registration at our own advertised address is this host's
		// previous incarnation, which crashed before its lease expired:
		// the caller holds that address now, so no other live process
		// does. Revoke the stale lease (its keys go with it) and retry
		// once. Any other holder is a duplicate host id.
		if attempt == 0 && len(kvs) > 0 && sameAddress(kvs[0].Value, info.GetAdvertisedAddress()) {
			s.logger.WithFields(logrus.Fields{"host_id": id, "stale_lease": kvs[0].Lease}).Warn("replacing this host's registration left by a crash")
			if _, err := s.client.Revoke(ctx, clientv3.LeaseID(kvs[0].Lease)); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
				revoke()
				return nil, fmt.Errorf("cluster: register host %d: revoke stale registration: %w", id, err)
			}
			continue
		}
		revoke()
		holder := "unknown"
		if len(kvs) > 0 {
			holder = fmt.Sprintf("broker epoch %d, lease %d", decodeEpoch(kvs[0].Value), kvs[0].Lease)
		}
		return nil, fmt.Errorf("cluster: register host %d: %w (held by %s)", id, ErrHostRegistered, holder)
	}

	kctx, cancel := context.WithCancel(context.Background())
	ka, err := s.client.KeepAlive(kctx, lease.ID)
	if err != nil {
		cancel()
		revoke()
		return nil, fmt.Errorf("cluster: register host %d: keepalive: %w", id, err)
	}
	r := &Registration{
		store:    s,
		info:     proto.Clone(info).(*messages.HostInfo),
		key:      key,
		lease:    lease.ID,
		logger:   s.logger.WithFields(logrus.Fields{"host_id": id, "broker_epoch": int64(lease.ID)}),
		cancel:   cancel,
		done:     make(chan struct{}),
		loopDone: make(chan struct{}),
	}
	go r.keepAlive(kctx, ka)
	r.logger.WithFields(logrus.Fields{"ttl_seconds": secs, "address": info.GetAdvertisedAddress()}).Info("host registered")
	return r, nil
}

// sameAddress reports whether an encoded HostInfo advertises addr.
func sameAddress(b []byte, addr string) bool {
	var h messages.HostInfo
	return addr != "" && proto.Unmarshal(b, &h) == nil && h.GetAdvertisedAddress() == addr
}

// decodeEpoch returns the broker epoch of an encoded HostInfo, 0 if it
// does not decode (only used for error messages).
func decodeEpoch(b []byte) int64 {
	var h messages.HostInfo
	if proto.Unmarshal(b, &h) != nil {
		return 0
	}
	return h.GetBrokerEpoch()
}

// keepAlive drains the keepalive responses until the channel closes
// (lease expired or revoked, keepalives failed for a TTL, or kctx ended),
// then closes done.
func (r *Registration) keepAlive(kctx context.Context, ka <-chan *clientv3.LeaseKeepAliveResponse) {
	defer close(r.loopDone)
	defer close(r.done)
	for range ka {
		// Each response renewed the lease; nothing else to do.
	}
	if kctx.Err() == nil {
		r.lost.Store(true)
		r.logger.Warn("host registration lease lost")
	}
}

// Info returns a copy of the registered HostInfo (with its BrokerEpoch).
func (r *Registration) Info() *messages.HostInfo { return proto.Clone(r.info).(*messages.HostInfo) }

// Epoch returns the broker epoch: the registration's lease id.
func (r *Registration) Epoch() int64 { return int64(r.lease) }

// Done is closed when the registration can no longer be relied on: the
// lease expired or was revoked, the keepalives failed for a TTL, or Close
// was called. A host must then stop acting as a leader and register anew.
func (r *Registration) Done() <-chan struct{} { return r.done }

// Close stops the keepalives and revokes the lease, deleting the host's
// key at once. Idempotent; later calls return the first call's result.
func (r *Registration) Close() error {
	r.closeOnce.Do(func() {
		r.stopKeepAlive()
		if r.lost.Load() {
			// Expired or revoked already (or unreachable for a whole
			// TTL, in which case it has expired by now).
			r.logger.Info("host registration closed after its lease was lost")
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := r.store.client.Revoke(ctx, r.lease)
		if err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			r.closeErr = fmt.Errorf("cluster: close registration of host %d: revoke lease: %w", r.info.GetHostId(), err)
			return
		}
		r.logger.Info("host registration closed")
	})
	return r.closeErr
}

// stopKeepAlive stops renewing the lease without revoking it, and waits
// until Done is closed. The lease then expires after its TTL.
func (r *Registration) stopKeepAlive() {
	r.cancel()
	<-r.loopDone
}
