// scram_mem.go holds MemScramStore, the in-memory ScramStore (and
// FencedScramStore) for tests, with the semantics of Store's (validation,
// deletion of a user with its last credential, ErrUnknownScramUser, fenced
// writes).

package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// MemScramStore is an in-memory ScramStore. Safe for concurrent use.
type MemScramStore struct {
	mu    sync.Mutex
	users map[string]map[string]ScramCredential
	// Err, when set, fails every call with it (a store that does not
	// answer). Set it before sharing the store.
	Err error
	// FenceHolds is as MemACLStore's: nil, every valid fence holds;
	// MemFenceCheck ties it to a MemStore's election.
	FenceHolds func(Fence) error
}

// NewMemScramStore returns an empty MemScramStore.
func NewMemScramStore() *MemScramStore {
	return &MemScramStore{users: map[string]map[string]ScramCredential{}}
}

// GetScramUser implements ScramStore.
func (m *MemScramStore) GetScramUser(ctx context.Context, name string) (ScramUser, bool, error) {
	if err := m.check(ctx); err != nil {
		return ScramUser{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	creds, ok := m.users[name]
	return ScramUser{Name: name, Credentials: maps.Clone(creds)}, ok, nil
}

// ListScramUsers implements ScramStore.
func (m *MemScramStore) ListScramUsers(ctx context.Context) ([]ScramUser, error) {
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]ScramUser, 0, len(m.users))
	for name, creds := range m.users {
		out = append(out, ScramUser{Name: name, Credentials: maps.Clone(creds)})
	}
	slices.SortFunc(out, func(a, b ScramUser) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// PutScramCredential implements ScramStore.
func (m *MemScramStore) PutScramCredential(ctx context.Context, name, mech string, c ScramCredential) error {
	return m.putScramCredential(ctx, nil, name, mech, c)
}

// PutScramCredentialFenced implements FencedScramStore.
func (m *MemScramStore) PutScramCredentialFenced(ctx context.Context, fence Fence, name, mech string, c ScramCredential) error {
	return m.putScramCredential(ctx, &fence, name, mech, c)
}

func (m *MemScramStore) putScramCredential(ctx context.Context, fence *Fence, name, mech string, c ScramCredential) error {
	if err := m.check(ctx); err != nil {
		return err
	}
	if err := ValidateScramUserName(name); err != nil {
		return err
	}
	if err := ValidateScramCredential(mech, c); err != nil {
		return err
	}
	if fence != nil {
		if err := checkFence(m.FenceHolds, *fence); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.users[name] == nil {
		m.users[name] = map[string]ScramCredential{}
	}
	m.users[name][mech] = c
	return nil
}

// DeleteScramCredential implements ScramStore.
func (m *MemScramStore) DeleteScramCredential(ctx context.Context, name, mech string) error {
	return m.deleteScramCredential(ctx, nil, name, mech)
}

// DeleteScramCredentialFenced implements FencedScramStore.
func (m *MemScramStore) DeleteScramCredentialFenced(ctx context.Context, fence Fence, name, mech string) error {
	return m.deleteScramCredential(ctx, &fence, name, mech)
}

func (m *MemScramStore) deleteScramCredential(ctx context.Context, fence *Fence, name, mech string) error {
	if err := m.check(ctx); err != nil {
		return err
	}
	if fence != nil {
		if err := checkFence(m.FenceHolds, *fence); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.users[name][mech]; !ok {
		return fmt.Errorf("%w: %q has no %s credential", ErrUnknownScramUser, name, mech)
	}
	delete(m.users[name], mech)
	if len(m.users[name]) == 0 {
		delete(m.users, name)
	}
	return nil
}

func (m *MemScramStore) check(ctx context.Context) error {
	if m.Err != nil {
		return m.Err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cluster: SCRAM store: %w", err)
	}
	return nil
}
