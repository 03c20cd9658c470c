// scram_cache.go holds ScramCache, the read-through cache of SCRAM users a
// host authenticates Kafka connections from: an unauthenticated peer can
// make it look users up at will, so answers (including "no such user")
// are kept for a short TTL, and the cache is bounded.

package cluster

import (
	"context"
	"sync"
	"time"
)

// DefaultScramCacheTTL is how long a ScramCache keeps an answer: a
// credential changed or removed on another host applies here within it.
const DefaultScramCacheTTL = 5 * time.Second

// scramCacheMax bounds the users a ScramCache keeps; past it the expired
// entries are dropped, and if none are, all of them.
const scramCacheMax = 10000

// ScramCache is a read-through, TTL-bounded cache over a ScramStore. A
// host's writes go to the controller, then Invalidate the user (Put and
// Delete write the store unfenced, for tests), so they apply at once on
// this host; other hosts see them within the TTL. Safe for concurrent use.
type ScramCache struct {
	store ScramStore
	ttl   time.Duration
	now   func() time.Time

	mu      sync.Mutex
	entries map[string]scramCacheEntry
}

type scramCacheEntry struct {
	user    ScramUser
	found   bool
	expires time.Time
}

// NewScramCache returns a cache over store keeping answers for ttl
// (DefaultScramCacheTTL when 0 or less).
func NewScramCache(store ScramStore, ttl time.Duration) *ScramCache {
	if ttl <= 0 {
		ttl = DefaultScramCacheTTL
	}
	return &ScramCache{store: store, ttl: ttl, now: time.Now, entries: map[string]scramCacheEntry{}}
}

// Store returns the underlying store.
func (c *ScramCache) Store() ScramStore { return c.store }

// Credential returns name's credential for mech; false when it has none.
// Errors come from the store (nothing is cached then).
func (c *ScramCache) Credential(ctx context.Context, name, mech string) (ScramCredential, bool, error) {
	now := c.now()
	c.mu.Lock()
	e, ok := c.entries[name]
	c.mu.Unlock()
	if !ok || now.After(e.expires) {
		u, found, err := c.store.GetScramUser(ctx, name)
		if err != nil {
			return ScramCredential{}, false, err
		}
		e = scramCacheEntry{user: u, found: found, expires: now.Add(c.ttl)}
		c.mu.Lock()
		if len(c.entries) >= scramCacheMax {
			c.evictLocked(now)
		}
		c.entries[name] = e
		c.mu.Unlock()
	}
	if !e.found {
		return ScramCredential{}, false, nil
	}
	cred, ok := e.user.Credentials[mech]
	return cred, ok, nil
}

// evictLocked drops expired entries, or all when none has expired.
func (c *ScramCache) evictLocked(now time.Time) {
	for k, e := range c.entries {
		if now.After(e.expires) {
			delete(c.entries, k)
		}
	}
	if len(c.entries) >= scramCacheMax {
		clear(c.entries)
	}
}

// Invalidate forgets name.
func (c *ScramCache) Invalidate(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, name)
}

// Put writes name's credential for mech to the store and forgets name.
func (c *ScramCache) Put(ctx context.Context, name, mech string, cred ScramCredential) error {
	defer c.Invalidate(name)
	return c.store.PutScramCredential(ctx, name, mech, cred)
}

// Delete removes name's credential for mech from the store and forgets
// name.
func (c *ScramCache) Delete(ctx context.Context, name, mech string) error {
	defer c.Invalidate(name)
	return c.store.DeleteScramCredential(ctx, name, mech)
}
