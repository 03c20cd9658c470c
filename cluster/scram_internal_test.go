// scram_internal_test.go: ScramCache's TTL, invalidation and bound, with
// a fake clock.

package cluster

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"
)

// countingScramStore counts GetScramUser calls.
type countingScramStore struct {
	*MemScramStore
	gets int
}

func (c *countingScramStore) GetScramUser(ctx context.Context, name string) (ScramUser, bool, error) {
	c.gets++
	return c.MemScramStore.GetScramUser(ctx, name)
}

func TestScramCache(t *testing.T) {
	ctx := context.Background()
	store := &countingScramStore{MemScramStore: NewMemScramStore()}
	c := NewScramCache(store, time.Second)
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }
	cred := ScramCredential{Salt: []byte("s"), Iterations: 4096, StoredKey: bytes.Repeat([]byte{1}, 32), ServerKey: bytes.Repeat([]byte{2}, 32)}

	if _, ok, err := c.Credential(ctx, "alice", ScramSHA256); ok || err != nil {
		t.Fatalf("unknown user: ok %v err %v", ok, err)
	}
	// Another host adds alice: the negative answer holds until the TTL.
	if err := store.PutScramCredential(ctx, "alice", ScramSHA256, cred); err != nil {
		t.Fatalf("put: %v", err)
	}
	if _, ok, _ := c.Credential(ctx, "alice", ScramSHA256); ok || store.gets != 1 {
		t.Fatalf("within TTL: ok %v after %d gets, want the cached miss", ok, store.gets)
	}
	now = now.Add(1001 * time.Millisecond)
	if got, ok, _ := c.Credential(ctx, "alice", ScramSHA256); !ok || got.Iterations != 4096 || store.gets != 2 {
		t.Fatalf("after TTL: ok %v %+v after %d gets", ok, got, store.gets)
	}
	if _, ok, _ := c.Credential(ctx, "alice", ScramSHA512); ok {
		t.Fatal("a mechanism alice has no credential for was found")
	}
	// A delete through the cache applies at once.
	if err := c.Delete(ctx, "alice", ScramSHA256); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, ok, _ := c.Credential(ctx, "alice", ScramSHA256); ok {
		t.Fatal("deleted credential still served")
	}
	// Errors are not cached.
	store.Err = errors.New("down")
	c.Invalidate("alice")
	if _, _, err := c.Credential(ctx, "alice", ScramSHA256); err == nil {
		t.Fatal("store error not returned")
	}
	store.Err = nil
	if _, _, err := c.Credential(ctx, "alice", ScramSHA256); err != nil {
		t.Fatalf("after the store recovered: %v", err)
	}
	// The cache is bounded.
	for i := range scramCacheMax + 10 {
		if _, _, err := c.Credential(ctx, string(rune('a'+i%26))+time.Duration(i).String(), ScramSHA256); err != nil {
			t.Fatalf("lookup %d: %v", i, err)
		}
	}
	if n := len(c.entries); n > scramCacheMax {
		t.Fatalf("%d entries, bound %d", n, scramCacheMax)
	}
}
