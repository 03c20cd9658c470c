package cluster_test

import (
	"sync"
	"testing"
	"time"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
)

// Allocators on several "hosts" (sharing one etcd) racing for blocks never
// hand out one id twice.
func TestProducerIDsAreUniqueAcrossAllocators(t *testing.T) {
	t.Parallel()
	store, _ := clustertest.NewStore(t)
	ctx := testCtx(t, 30*time.Second)
	const allocators, perAllocator = 4, 60
	var mu sync.Mutex
	seen := map[int64]int{}
	var wg sync.WaitGroup
	errs := make(chan error, allocators)
	for i := 0; i < allocators; i++ {
		a := cluster.NewProducerIDAllocator(store, 7) // small blocks: many CAS races
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < perAllocator; j++ {
				id, err := a.Next(ctx)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				seen[id]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(seen) != allocators*perAllocator {
		t.Fatalf("%d distinct ids, want %d", len(seen), allocators*perAllocator)
	}
	for id, n := range seen {
		if id < 0 || n != 1 {
			t.Fatalf("id %d handed out %d times", id, n)
		}
	}
}

func TestAllocateProducerIDsRefusesBadCountAndCorruptCounter(t *testing.T) {
	t.Parallel()
	store, _ := clustertest.NewStore(t)
	ctx := testCtx(t, 10*time.Second)
	if _, err := store.AllocateProducerIDs(ctx, 0); err == nil {
		t.Fatal("a zero count was accepted")
	}
	first, err := store.AllocateProducerIDs(ctx, 10)
	if err != nil || first != 0 {
		t.Fatalf("first block at %d, %v", first, err)
	}
	if next, err := store.AllocateProducerIDs(ctx, 5); err != nil || next != 10 {
		t.Fatalf("second block at %d, %v; want 10", next, err)
	}
	if _, err := store.Client().Put(ctx, store.Keys().ProducerIDs(), "garbage"); err != nil {
		t.Fatal(err)
	}
	_, err = store.AllocateProducerIDs(ctx, 5)
	wantErr(t, err, cluster.ErrCorruptMetadata)
}
