// election.go holds the controller election (DESIGN §5): an etcd
// concurrency.Election over a session lease. The winner's Fence (its
// election key and that key's create revision, the controller epoch) guards
// every metadata write; when the session's lease is lost, Done fires and the
// controller must stop at once. Another candidate simply waits in Campaign
// as a standby, and wins with a larger epoch when the controller resigns,
// closes or loses its lease.

package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// etcdElection is one candidate for controller on etcd: the Election
// Store.NewElection returns. Campaign and Resign must not run concurrently
// with each other; Done may be used from any goroutine, and Close may be
// called at any time (it aborts a pending Campaign).
type etcdElection struct {
	store    *Store
	session  *concurrency.Session
	election *concurrency.Election
	// keeper renews the session's lease and decides when it is lost (the
	// session's own clientv3 keepalive gives up too early, see
	// keepalive.go); the session's Done and Ctx are not used.
	keeper *leaseKeeper
	ttl    time.Duration
	logger *logrus.Entry

	closeOnce sync.Once
	closeErr  error
}

// NewElection creates a candidate: it grants a lease of ttl (rounded up to
// whole seconds; etcd may raise very short TTLs to its minimum) and keeps
// it alive in the background. ctx bounds only this call. If the candidate's
// process freezes or loses etcd for longer than ttl, the lease expires and
// another candidate takes over; DESIGN §5 discusses the choice of ttl.
// The caller must Close the Election.
func (s *Store) NewElection(ctx context.Context, ttl time.Duration) (Election, error) {
	secs, err := ttlSeconds(ttl)
	if err != nil {
		return nil, fmt.Errorf("cluster: new election: %w", err)
	}
	granted := time.Now()
	lease, err := s.client.Grant(ctx, secs)
	if err != nil {
		return nil, fmt.Errorf("cluster: new election: grant %ds lease: %w", secs, err)
	}
	// The session's keepalive runs under the client's context (the
	// default), not ctx, which bounds only this call.
	session, err := concurrency.NewSession(s.client, concurrency.WithLease(lease.ID), concurrency.WithTTL(int(secs)))
	if err != nil {
		if _, rerr := s.client.Revoke(context.WithoutCancel(ctx), lease.ID); rerr != nil {
			s.logger.WithError(rerr).WithField("lease", int64(lease.ID)).Warn("revoke election lease after failed session")
		}
		return nil, fmt.Errorf("cluster: new election: session: %w", err)
	}
	logger := s.logger.WithFields(logrus.Fields{"election": s.keys.Election(), "session_lease": int64(lease.ID)})
	return &etcdElection{
		store:    s,
		session:  session,
		election: concurrency.NewElection(session, s.keys.Election()),
		keeper:   keepLease(s.client, lease.ID, time.Duration(secs)*time.Second, granted, logger.WithField("lease", "controller session")),
		ttl:      time.Duration(secs) * time.Second,
		logger:   logger,
	}, nil
}

// ttlSeconds converts a TTL to etcd's whole seconds, rounding up.
func ttlSeconds(ttl time.Duration) (int64, error) {
	if ttl <= 0 {
		return 0, fmt.Errorf("TTL %v, want > 0", ttl)
	}
	return int64((ttl + time.Second - 1) / time.Second), nil
}

// Campaign blocks until this candidate is the controller, then returns its
// Fence. value describes the candidate (e.g. its host id and address); it
// is what Store.Controller reports. Campaign returns early with ctx's error
// when ctx ends, or with an error wrapping ErrLeaseLost when the session
// lease is lost; in both cases it has withdrawn its candidacy.
func (e *etcdElection) Campaign(ctx context.Context, value string) (Fence, error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // lease lost => stop waiting
		select {
		case <-e.keeper.Done():
			cancel()
		case <-cctx.Done():
		}
	}()
	e.logger.Info("campaigning for controller")
	if err := e.election.Campaign(cctx, value); err != nil {
		if e.lost() {
			return Fence{}, fmt.Errorf("cluster: campaign: %w", ErrLeaseLost)
		}
		e.withdraw()
		return Fence{}, fmt.Errorf("cluster: campaign: %w", err)
	}
	f := Fence{Key: e.election.Key(), Epoch: e.election.Rev()}
	// concurrency.Election.Campaign waits for older keys to go but does
	// not check that its own is still there: had the lease expired while
	// it waited, it would report a victory the fence cannot back.
	resp, err := e.session.Client().Get(cctx, f.Key, clientv3.WithKeysOnly())
	switch {
	case err != nil && e.lost():
		return Fence{}, fmt.Errorf("cluster: campaign: %w", ErrLeaseLost)
	case err != nil:
		return Fence{}, fmt.Errorf("cluster: campaign: check election key %q: %w", f.Key, err)
	case len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != f.Epoch:
		return Fence{}, fmt.Errorf("cluster: campaign: %w: election key %q vanished while waiting", ErrLeaseLost, f.Key)
	}
	e.logger.WithFields(logrus.Fields{"controller_epoch": f.Epoch, "election_key": f.Key}).Info("elected controller")
	return f, nil
}

// withdraw deletes this candidate's key after a failed Campaign. etcd's
// Campaign cleans up after a cancelled wait, but not when the context ends
// while its own put is in flight: the put may still land, leaving a
// candidacy nobody waits on until the session ends. The key is the
// election prefix and the session's lease id, as concurrency.Election
// names it.
func (e *etcdElection) withdraw() {
	key := fmt.Sprintf("%s/%x", e.store.keys.Election(), e.session.Lease())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := e.session.Client().Delete(ctx, key); err != nil {
		e.logger.WithError(err).WithField("key", key).Warn("withdraw candidacy after a failed campaign")
	}
}

// lost reports whether the session's lease is no longer kept alive.
func (e *etcdElection) lost() bool {
	select {
	case <-e.keeper.Done():
		return true
	default:
		return false
	}
}

// Done is closed when the session's lease is no longer kept alive (it
// expired, was revoked, the keepalives failed for a TTL, or Close was
// called). From then on the candidate has no authority: a controller must
// stop acting at once. Its writes would fail with ErrNotController anyway.
func (e *etcdElection) Done() <-chan struct{} { return e.keeper.Done() }

// TTL is the session lease's TTL.
func (e *etcdElection) TTL() time.Duration { return e.ttl }

// Resign gives up the controller role (deleting the election key, so a
// standby wins at once) while keeping the session, so the candidate may
// Campaign again. It does nothing when the candidate is not elected.
func (e *etcdElection) Resign(ctx context.Context) error {
	if err := e.election.Resign(ctx); err != nil {
		return fmt.Errorf("cluster: resign: %w", err)
	}
	e.logger.Info("resigned as controller")
	return nil
}

// Close ends the candidacy: it stops the keepalives and revokes the lease,
// which deletes the election key (a standby then wins) and closes Done.
// Idempotent; later calls return the first call's result.
func (e *etcdElection) Close() error {
	e.closeOnce.Do(func() {
		e.keeper.Stop()
		err := e.session.Close()
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			// The lease expires by itself within its TTL anyway; an
			// already expired or revoked lease is what Close wants.
			e.closeErr = fmt.Errorf("cluster: close election session: %w", err)
		}
		e.logger.Info("election session closed")
	})
	return e.closeErr
}

// Controller returns the current controller's campaign value and Fence, or
// an error wrapping ErrNoController when none is elected. The answer may
// be stale by the time it is used; only a controller's own writes are
// fenced.
func (s *Store) Controller(ctx context.Context) (string, Fence, error) {
	resp, err := s.client.Get(ctx, s.keys.Election()+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		return "", Fence{}, fmt.Errorf("cluster: get controller: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return "", Fence{}, fmt.Errorf("cluster: get controller: %w", ErrNoController)
	}
	kv := resp.Kvs[0]
	return string(kv.Value), Fence{Key: string(kv.Key), Epoch: kv.CreateRevision}, nil
}

// EvictCandidate revokes the session lease behind an election key, which
// deletes the key (and any other key on that lease). It is for a host that
// finds its own crashed incarnation still holding (or queued in) the
// election: the new process has bound the same address, so the old one is
// dead, and waiting out its TTL would leave the cluster without a
// controller for that long. A key that is already gone is not an error.
func (s *Store) EvictCandidate(ctx context.Context, key string) error {
	resp, err := s.client.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("cluster: evict candidate %q: %w", key, err)
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].Lease == 0 {
		return nil
	}
	if _, err := s.client.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return fmt.Errorf("cluster: evict candidate %q: %w", key, err)
	}
	s.logger.WithField("key", key).Warn("evicted a crashed incarnation's election candidacy")
	return nil
}

// Candidates returns the election's keys and values, oldest first (the
// first is the controller).
func (s *Store) Candidates(ctx context.Context) (keys, values []string, err error) {
	resp, err := s.client.Get(ctx, s.keys.Election()+"/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: list election candidates: %w", err)
	}
	for _, kv := range resp.Kvs {
		keys = append(keys, string(kv.Key))
		values = append(values, string(kv.Value))
	}
	return keys, values, nil
}
