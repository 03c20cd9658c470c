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
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/messages"
)

// ErrInvalidHostAddress: an address field of a host registration is not
// HOST:PORT (Register refuses it; read back from the store, the
// registration is treated as absent and logged, as any bad record is).
var ErrInvalidHostAddress = errors.New("cluster: invalid host address")

// ValidateHostInfo checks the address fields of a host registration, on
// the way into the store and on the way out (a record written straight
// into etcd is held to the same rule). Each may be empty (not set);
// otherwise it is HOST:PORT with a non-empty host and a port in 1-65535.
// http_address may also be "off" (the host serves no HTTP endpoint).
// kafka_address, which Kafka clients are handed to connect to, may not
// name the unspecified address (0.0.0.0, ::). The error wraps
// ErrInvalidHostAddress. Pure; safe for concurrent use.
func ValidateHostInfo(h *messages.HostInfo) error {
	if err := validateHostPort(h.GetAdvertisedAddress()); err != nil {
		return fmt.Errorf("%w: host %d: advertised_address: %w", ErrInvalidHostAddress, h.GetHostId(), err)
	}
	if a := h.GetHttpAddress(); a != "off" {
		if err := validateHostPort(a); err != nil {
			return fmt.Errorf("%w: host %d: http_address: %w", ErrInvalidHostAddress, h.GetHostId(), err)
		}
	}
	ka := h.GetKafkaAddress()
	if err := validateHostPort(ka); err != nil {
		return fmt.Errorf("%w: host %d: kafka_address: %w", ErrInvalidHostAddress, h.GetHostId(), err)
	}
	if ka != "" {
		host, _, _ := net.SplitHostPort(ka)
		if ip, err := netip.ParseAddr(host); err == nil && ip.IsUnspecified() {
			return fmt.Errorf("%w: host %d: kafka_address %q: clients cannot connect to the unspecified address", ErrInvalidHostAddress, h.GetHostId(), ka)
		}
	}
	return nil
}

// validateHostPort checks that a is empty or HOST:PORT with a port in
// 1-65535 and a host without spaces or control characters.
func validateHostPort(a string) error {
	if a == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Errorf("%q: %w", a, err)
	}
	if host == "" || strings.IndexFunc(host, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		return fmt.Errorf("%q: want a host name or address before the port", a)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%q: want a port in 1-65535", a)
	}
	return nil
}

// Registration is a live host registration. Its methods are safe for
// concurrent use.
type Registration struct {
	store  *Store
	info   *messages.HostInfo // immutable after Register
	key    string
	lease  clientv3.LeaseID
	logger *logrus.Entry

	keeper *leaseKeeper // renews the lease; Done when lost or stopped

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
// yet, at another address), ErrInvalidHostAddress (ValidateHostInfo), or an
// etcd error. A live registration at the
// same advertised address is taken over (see below). The caller must Close the Registration.
func (s *Store) Register(ctx context.Context, info *messages.HostInfo, ttl time.Duration) (*Registration, error) {
	if info.GetHostId() < 1 {
		return nil, fmt.Errorf("cluster: register host: host id %d, want >= 1", info.GetHostId())
	}
	id := info.GetHostId()
	if err := ValidateHostInfo(info); err != nil {
		return nil, fmt.Errorf("cluster: register host %d: %w", id, err)
	}
	secs, err := ttlSeconds(ttl)
	if err != nil {
		return nil, fmt.Errorf("cluster: register host %d: %w", id, err)
	}
	granted := time.Now()
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

	logger := s.logger.WithFields(logrus.Fields{"host_id": id, "broker_epoch": int64(lease.ID)})
	r := &Registration{
		store:  s,
		info:   proto.Clone(info).(*messages.HostInfo),
		key:    key,
		lease:  lease.ID,
		logger: logger,
		keeper: keepLease(s.client, lease.ID, time.Duration(secs)*time.Second, granted, logger.WithField("lease", "host registration")),
	}
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

// Info returns a copy of the registered HostInfo (with its BrokerEpoch).
func (r *Registration) Info() *messages.HostInfo { return proto.Clone(r.info).(*messages.HostInfo) }

// Epoch returns the broker epoch: the registration's lease id.
func (r *Registration) Epoch() int64 { return int64(r.lease) }

// Done is closed when the registration can no longer be relied on: the
// lease expired or was revoked, the keepalives failed for a TTL, or Close
// was called. A host must then stop acting as a leader and register anew.
func (r *Registration) Done() <-chan struct{} { return r.keeper.Done() }

// Close stops the keepalives and revokes the lease, deleting the host's
// key at once. Idempotent; later calls return the first call's result.
func (r *Registration) Close() error {
	r.closeOnce.Do(func() {
		r.stopKeepAlive()
		if r.keeper.Lost() {
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

// Abandon stops renewing the lease without revoking it (for a host
// stopping without an etcd quorum, where a revocation cannot commit): the
// registration is deleted when the lease expires, after its TTL. Close
// after Abandon does nothing.
func (r *Registration) Abandon() {
	r.closeOnce.Do(func() {
		r.stopKeepAlive()
		r.logger.Info("host registration abandoned; it expires with its lease")
	})
}

// stopKeepAlive stops renewing the lease without revoking it, and waits
// until Done is closed. The lease then expires after its TTL.
func (r *Registration) stopKeepAlive() { r.keeper.Stop() }

// RevokeHostLease revokes the registration lease whose id is epoch (a
// host's broker epoch): its registration is deleted at once, as if the
// lease had expired, and the host, if it still runs, finds itself fenced.
// A lease that is already gone is not an error. The controller calls it for
// a host whose process is gone (actors/controller/probe.go).
func (s *Store) RevokeHostLease(ctx context.Context, epoch int64) error {
	if _, err := s.client.Revoke(ctx, clientv3.LeaseID(epoch)); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return fmt.Errorf("cluster: revoke host lease %d: %w", epoch, err)
	}
	return nil
}
