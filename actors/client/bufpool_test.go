package client

import (
	"testing"
)

// TestDirtyPoolTiers: Get gives the length asked for with its tier's
// capacity (so Put finds the tier again), reuses what Put took back, and
// serves lengths above the largest tier from the fallback; buffers of
// other capacities are not kept.
func TestDirtyPoolTiers(t *testing.T) {
	p := &dirtyPool{}
	for _, tc := range []struct{ n, wantCap int }{
		{0, 256}, {1, 256}, {256, 256}, {257, 4 << 10}, {16 << 10, 16 << 10}, {16<<10 + 1, 32 << 10}, {1 << 20, 1 << 20},
	} {
		b := p.Get(tc.n)
		if len(*b) != tc.n || cap(*b) != tc.wantCap {
			t.Fatalf("Get(%d): len %d cap %d, want len %d cap %d", tc.n, len(*b), cap(*b), tc.n, tc.wantCap)
		}
		for i := range *b {
			(*b)[i] = 0xAB // every byte writable
		}
		*b = (*b)[:tc.n/2] // grpc puts back a prefix
		p.Put(b)
	}
	big := p.Get(3 << 20)
	if len(*big) != 3<<20 || cap(*big) < 3<<20 {
		t.Fatalf("Get(3 MiB): len %d cap %d", len(*big), cap(*big))
	}
	p.Put(big)
	if b := p.Get(2 << 20); len(*b) != 2<<20 || cap(*b) < 2<<20 {
		t.Fatalf("Get(2 MiB) after a 3 MiB Put: len %d cap %d", len(*b), cap(*b))
	}
	odd := make([]byte, 100, 300)
	p.Put(&odd) // not a tier's capacity: dropped, never handed out
	for range 10 {
		if b := p.Get(10); cap(*b) == 300 {
			t.Fatal("a buffer of capacity 300 (not from Get) was handed out")
		}
	}
}

// TestDirtyPoolReusesWithoutClearing: a buffer put back is handed out
// again as it was (no clearing), which is the point of the pool.
// sync.Pool may drop any Put (it does at random under -race), so the test
// looks for one reuse in many tries.
func TestDirtyPoolReusesWithoutClearing(t *testing.T) {
	p := &dirtyPool{}
	for range 1000 {
		b := p.Get(16 << 10)
		if (*b)[0] == 0x5A && (*b)[len(*b)-1] == 0xA5 {
			return // a reused buffer, its bytes untouched
		}
		(*b)[0], (*b)[len(*b)-1] = 0x5A, 0xA5
		p.Put(b)
	}
	t.Fatal("no buffer came back from the pool uncleared in 1000 Get/Put pairs")
}
