// names_test.go: host name → id assignment against a real embedded etcd.

package cluster_test

import (
	"sync"
	"testing"
	"time"

	"github.com/actorlog/actorlog/cluster/clustertest"
)

func TestResolveHostID(t *testing.T) {
	t.Parallel()
	store, _ := clustertest.NewStore(t)
	ctx := testCtx(t, 20*time.Second)

	a, err := store.ResolveHostID(ctx, "alpha", 0)
	if err != nil || a != 1 {
		t.Fatalf("first name: id %d, %v; want 1", a, err)
	}
	if again, err := store.ResolveHostID(ctx, "alpha", 0); err != nil || again != a {
		t.Fatalf("same name again: id %d, %v; want %d", again, err, a)
	}
	// An explicit id is recorded when free, and skipped by later names.
	if c, err := store.ResolveHostID(ctx, "gamma", 3); err != nil || c != 3 {
		t.Fatalf("explicit id: %d, %v", c, err)
	}
	if b, err := store.ResolveHostID(ctx, "beta", 0); err != nil || b != 2 {
		t.Fatalf("second new name: %d, %v; want 2", b, err)
	}
	if d, err := store.ResolveHostID(ctx, "delta", 0); err != nil || d != 4 {
		t.Fatalf("third new name: %d, %v; want 4 (3 is taken)", d, err)
	}
	// Conflicts are errors and change nothing.
	if _, err := store.ResolveHostID(ctx, "alpha", 2); err == nil {
		t.Fatal("a name asked for with another id was accepted")
	}
	if _, err := store.ResolveHostID(ctx, "epsilon", 1); err == nil {
		t.Fatal("an id taken by another name was accepted")
	}
	for _, bad := range []string{"", "-x", "a/b", "has space", string(make([]byte, 64))} {
		if _, err := store.ResolveHostID(ctx, bad, 0); err == nil {
			t.Fatalf("invalid name %q accepted", bad)
		}
	}
	names, err := store.HostNames(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]string{1: "alpha", 2: "beta", 3: "gamma", 4: "delta"}
	if len(names) != len(want) {
		t.Fatalf("names = %v, want %v", names, want)
	}
	for id, n := range want {
		if names[id] != n {
			t.Fatalf("names = %v, want %v", names, want)
		}
	}
}

func TestResolveHostIDConcurrent(t *testing.T) {
	t.Parallel()
	store, _ := clustertest.NewStore(t)
	ctx := testCtx(t, 30*time.Second)
	names := []string{"h1", "h2", "h3", "h4", "h5", "h6"}
	ids := make([]int32, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := store.ResolveHostID(ctx, n, 0)
			if err != nil {
				t.Errorf("%s: %v", n, err)
			}
			ids[i] = id
		}()
	}
	wg.Wait()
	seen := map[int32]bool{}
	for i, id := range ids {
		if id < 1 || id > int32(len(names)) || seen[id] {
			t.Fatalf("ids %v: %s got a duplicate or out-of-range id", ids, names[i])
		}
		seen[id] = true
	}
}
