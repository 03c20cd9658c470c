// acl_cache.go holds ACLCache, which keeps a host's acl.Authorizer equal
// to the ACL bindings in the store, so authorizing a request reads only
// memory.
//
// How fast a change reaches a host: on etcd (and MemACLStore) the cache
// lists every binding, then watches the ACL prefix from the list's
// revision; each change wakes it to list again, so a binding added or
// deleted anywhere applies on every host within one watch delivery plus
// one list (milliseconds on a healthy cluster). Changes made through this
// host (the Kafka listener's, written by the controller, then Reload; or
// Add and Delete, unfenced, in tests) apply here before the call returns.
// When the watch ends (revision compacted, member cut off from its raft
// leader, client closed), or for a store that cannot be watched, the
// cache polls every PollInterval (DefaultACLPollInterval, 5 s) and
// watches again from its next successful list. While the store cannot be
// read the host keeps deciding on the last set it loaded.

package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/internal/acl"
)

// DefaultACLPollInterval is how often an ACLCache lists the bindings when
// it cannot watch them.
const DefaultACLPollInterval = 5 * time.Second

// aclWatchResync is how often an ACLCache lists the bindings while its
// watch runs: a safety net, the watch alone is complete.
const aclWatchResync = time.Minute

// ACLCache keeps an acl.Authorizer current with an ACLStore. Run follows
// the store; Add and Delete write through it. Safe for concurrent use.
type ACLCache struct {
	store  ACLStore
	auth   *acl.Authorizer
	poll   time.Duration
	logger *logrus.Entry

	loadMu sync.Mutex // serializes list + swap, so an older list never replaces a newer
}

// NewACLCache returns a cache that keeps auth's bindings equal to
// store's, polling every poll when it cannot watch
// (DefaultACLPollInterval when 0 or less). A nil logger means logrus's
// standard logger. auth keeps its bindings until the first Load.
func NewACLCache(store ACLStore, auth *acl.Authorizer, poll time.Duration, logger *logrus.Entry) *ACLCache {
	if poll <= 0 {
		poll = DefaultACLPollInterval
	}
	if logger == nil {
		logger = logrus.NewEntry(logrus.StandardLogger())
	}
	return &ACLCache{store: store, auth: auth, poll: poll, logger: logger.WithField("component", "acl_cache")}
}

// Authorizer returns the Authorizer the cache keeps current.
func (c *ACLCache) Authorizer() *acl.Authorizer { return c.auth }

// Store returns the underlying store.
func (c *ACLCache) Store() ACLStore { return c.store }

// Load lists every binding and swaps them into the Authorizer. A host
// calls it once before serving (Run also starts with it).
func (c *ACLCache) Load(ctx context.Context) error {
	_, err := c.load(ctx)
	return err
}

// load is Load, returning the store revision of the list (0 for a store
// that is not an aclWatcher).
func (c *ACLCache) load(ctx context.Context) (int64, error) {
	c.loadMu.Lock()
	defer c.loadMu.Unlock()
	var bindings []acl.Binding
	var rev int64
	var err error
	if w, ok := c.store.(aclWatcher); ok {
		bindings, rev, err = w.listACLsRev(ctx)
	} else {
		bindings, err = c.store.ListACLs(ctx, acl.Filter{})
	}
	if err != nil {
		return 0, fmt.Errorf("cluster: load ACLs: %w", err)
	}
	if err := c.auth.SetBindings(bindings); err != nil {
		return 0, fmt.Errorf("cluster: load ACLs: %w", err)
	}
	return rev, nil
}

// Add writes bindings to the store, unfenced, then reloads (tests; a
// host's Kafka listener writes through the controller and calls Reload). A failed reload after
// the write is logged, not returned: the change is made, and Run's watch
// or poll applies it here too.
func (c *ACLCache) Add(ctx context.Context, bindings []acl.Binding) error {
	if err := c.store.AddACLs(ctx, bindings); err != nil {
		return err
	}
	c.reloadAfterChange(ctx)
	return nil
}

// Delete deletes the bindings f matches from the store, then reloads (a
// failed reload logged, as for Add). It returns the deleted bindings.
func (c *ACLCache) Delete(ctx context.Context, f acl.Filter) ([]acl.Binding, error) {
	deleted, err := c.store.DeleteACLs(ctx, f)
	if err != nil {
		return deleted, err
	}
	c.reloadAfterChange(ctx)
	return deleted, nil
}

// Reload lists the bindings again after a change this host asked the
// controller for, so it applies here before the change is answered. A
// failure is logged, not returned, as for Add.
func (c *ACLCache) Reload(ctx context.Context) { c.reloadAfterChange(ctx) }

func (c *ACLCache) reloadAfterChange(ctx context.Context) {
	if err := c.Load(ctx); err != nil {
		c.logger.WithError(err).Warn("ACLs changed but not reloaded yet: the watch or the next poll applies the change")
	}
}

// Run keeps the Authorizer current until ctx ends, then returns once its
// watch has stopped. Load failures are logged and retried every poll
// interval; they never stop Run.
func (c *ACLCache) Run(ctx context.Context) {
	w, canWatch := c.store.(aclWatcher)
	changed := make(chan struct{}, 1)
	var watchDone chan error // nil while not watching
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	timer := time.NewTimer(c.poll)
	defer timer.Stop()
	failing := false
	var rewatchAt time.Time // a watch that ended is retried no sooner, so one that fails at once cannot spin
	for {
		rev, err := c.load(ctx)
		wait := c.poll
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			if !failing {
				c.logger.WithError(err).WithField("retry_in", c.poll).Warn("cannot load ACLs; deciding on the last set loaded")
			}
			failing = true
		default:
			if failing {
				c.logger.WithField("bindings", c.auth.Len()).Info("ACLs loaded again")
			}
			failing = false
			if canWatch && watchDone == nil && !time.Now().Before(rewatchAt) {
				watchDone = make(chan error, 1)
				wg.Add(1)
				go func(done chan<- error) {
					defer wg.Done()
					done <- w.watchACLChanges(wctx, rev, changed)
				}(watchDone)
			}
			if watchDone != nil {
				wait = aclWatchResync
			}
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-timer.C:
		case err := <-watchDone:
			watchDone = nil
			if ctx.Err() != nil {
				return
			}
			rewatchAt = time.Now().Add(c.poll)
			c.logger.WithError(err).Warn("ACL watch ended; listing again and watching anew")
		}
	}
}
