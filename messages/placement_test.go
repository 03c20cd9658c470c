// placement_test.go: KeyPartition, the pooled one-off placement the group
// coordinators call at every commit, agrees with a KeyPartitioner, is safe
// for concurrent use and allocates nothing.

package messages

import (
	"fmt"
	"sync"
	"testing"
)

func TestKeyPartitionPooled(t *testing.T) {
	p := NewKeyPartitioner()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				key := []byte(fmt.Sprintf("group-%d-%d", g, i))
				if got := KeyPartition(key, 50); got < 0 || got >= 50 {
					t.Errorf("KeyPartition(%s, 50) = %d", key, got)
				}
			}
		}()
	}
	wg.Wait()
	for i := range 500 {
		key := []byte(fmt.Sprintf("group-%d", i))
		if got, want := KeyPartition(key, 50), p.Partition(key, 50); got != want {
			t.Fatalf("KeyPartition(%s, 50) = %d, KeyPartitioner says %d", key, got, want)
		}
	}
	if raceEnabled {
		return
	}
	key := []byte("a-consumer-group")
	if n := testing.AllocsPerRun(100, func() { KeyPartition(key, 50) }); n != 0 {
		t.Fatalf("KeyPartition allocates %v times a call", n)
	}
}
