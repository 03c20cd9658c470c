// acl_mem.go holds MemACLStore, the in-memory ACLStore (and
// FencedACLStore) for tests, with the semantics of Store's (validation,
// one entry per binding, key order, fenced writes), and change
// notifications so an ACLCache follows it as it follows etcd.

package cluster

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/actorlog/actorlog/internal/acl"
)

// memACLKeys orders a MemACLStore's bindings as etcd orders Store's.
var memACLKeys = NewKeys("")

// MemACLStore is an in-memory ACLStore. Safe for concurrent use.
type MemACLStore struct {
	mu       sync.Mutex
	bindings map[string]acl.Binding // by key
	rev      int64                  // bumped by every change
	notify   chan struct{}          // closed and replaced by every change
	// Err, when set, fails every call with it (a store that does not
	// answer). Set it before sharing the store.
	Err error
	// FenceHolds, when set, decides whether a fenced write's fence holds
	// (nil: it does): an error (wrapping ErrNotController) refuses the
	// write, which changes nothing. MemFenceCheck ties it to a
	// MemStore's election. Set it before sharing the store.
	FenceHolds func(Fence) error
}

// MemFenceCheck returns a MemACLStore.FenceHolds (or
// MemScramStore.FenceHolds) that holds a fence while it is m's current
// controller's, as Store's fenced writes hold while the election key has
// the fence's create revision.
func MemFenceCheck(m *MemStore) func(Fence) error {
	return func(f Fence) error {
		_, current, err := m.Controller(context.Background())
		if err != nil {
			return fmt.Errorf("%w: fence %v: %w", ErrNotController, f, err)
		}
		if current != f {
			return fmt.Errorf("%w: fence %v, the controller's is %v", ErrNotController, f, current)
		}
		return nil
	}
}

// checkFence refuses an invalid fence, or one FenceHolds refuses.
func checkFence(holds func(Fence) error, f Fence) error {
	if f.Key == "" || f.Epoch <= 0 {
		return fmt.Errorf("%w: invalid fence %v", ErrNotController, f)
	}
	if holds != nil {
		if err := holds(f); err != nil {
			return fmt.Errorf("cluster: fenced write: %w", err)
		}
	}
	return nil
}

// NewMemACLStore returns an empty MemACLStore.
func NewMemACLStore() *MemACLStore {
	return &MemACLStore{bindings: map[string]acl.Binding{}, notify: make(chan struct{})}
}

func (m *MemACLStore) check(ctx context.Context) error {
	if m.Err != nil {
		return m.Err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cluster: ACL store: %w", err)
	}
	return nil
}

// changedLocked records a change and wakes the watchers.
func (m *MemACLStore) changedLocked() {
	m.rev++
	close(m.notify)
	m.notify = make(chan struct{})
}

// AddACLs implements ACLStore.
func (m *MemACLStore) AddACLs(ctx context.Context, bindings []acl.Binding) error {
	return m.addACLs(ctx, nil, bindings)
}

// AddACLsFenced implements FencedACLStore.
func (m *MemACLStore) AddACLsFenced(ctx context.Context, fence Fence, bindings []acl.Binding) error {
	return m.addACLs(ctx, &fence, bindings)
}

func (m *MemACLStore) addACLs(ctx context.Context, fence *Fence, bindings []acl.Binding) error {
	if err := m.check(ctx); err != nil {
		return err
	}
	if err := validateBindings(bindings); err != nil {
		return err
	}
	if fence != nil {
		if err := checkFence(m.FenceHolds, *fence); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, b := range bindings {
		m.bindings[memACLKeys.ACL(b)] = b
	}
	if len(bindings) > 0 {
		m.changedLocked() // etcd writes (and notifies) even when nothing is new
	}
	return nil
}

// ListACLs implements ACLStore.
func (m *MemACLStore) ListACLs(ctx context.Context, f acl.Filter) ([]acl.Binding, error) {
	out, _, err := m.list(ctx, f)
	return out, err
}

func (m *MemACLStore) list(ctx context.Context, f acl.Filter) ([]acl.Binding, int64, error) {
	if err := m.check(ctx); err != nil {
		return nil, 0, err
	}
	if err := f.Validate(); err != nil {
		return nil, 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := m.matchingKeysLocked(f)
	out := make([]acl.Binding, len(keys))
	for i, k := range keys {
		out[i] = m.bindings[k]
	}
	return out, m.rev, nil
}

// DeleteACLs implements ACLStore.
func (m *MemACLStore) DeleteACLs(ctx context.Context, f acl.Filter) ([]acl.Binding, error) {
	return m.deleteACLs(ctx, nil, f)
}

// DeleteACLsFenced implements FencedACLStore.
func (m *MemACLStore) DeleteACLsFenced(ctx context.Context, fence Fence, f acl.Filter) ([]acl.Binding, error) {
	return m.deleteACLs(ctx, &fence, f)
}

func (m *MemACLStore) deleteACLs(ctx context.Context, fence *Fence, f acl.Filter) ([]acl.Binding, error) {
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	if fence != nil {
		if err := checkFence(m.FenceHolds, *fence); err != nil {
			return nil, err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := m.matchingKeysLocked(f)
	out := make([]acl.Binding, len(keys))
	for i, k := range keys {
		out[i] = m.bindings[k]
		delete(m.bindings, k)
	}
	if len(keys) > 0 {
		m.changedLocked()
	}
	return out, nil
}

// listACLsRev implements aclWatcher.
func (m *MemACLStore) listACLsRev(ctx context.Context) ([]acl.Binding, int64, error) {
	return m.list(ctx, acl.Filter{})
}

// watchACLChanges implements aclWatcher.
func (m *MemACLStore) watchACLChanges(ctx context.Context, fromRevision int64, changed chan<- struct{}) error {
	for {
		m.mu.Lock()
		rev, notify := m.rev, m.notify
		m.mu.Unlock()
		if rev > fromRevision {
			fromRevision = rev
			select {
			case changed <- struct{}{}:
			default:
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-notify:
		}
	}
}

// matchingKeysLocked returns the keys of the bindings f matches, sorted
// (the etcd store's order). Caller holds mu.
func (m *MemACLStore) matchingKeysLocked(f acl.Filter) []string {
	var keys []string
	for k, b := range m.bindings {
		if f.Matches(b) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
