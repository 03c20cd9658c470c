// producerids.go hands out producer ids for idempotent producers. Ids are
// unique in the cluster: a host takes a block of them at a time from one
// counter key, advanced by compare-and-swap, and serves InitProducerId
// from its block (Kafka's KIP-730 producer id blocks, here kept in etcd):
//
//	<prefix>producer-ids/next   the first id not yet handed out, decimal

package cluster

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ProducerIDBlockSize is how many producer ids a host takes at a time
// (Kafka's block size).
const ProducerIDBlockSize = 1000

// ErrProducerIDsExhausted means the counter reached the largest id.
var ErrProducerIDsExhausted = errors.New("cluster: producer ids exhausted")

// ProducerIDs is the key of the producer id counter.
func (k Keys) ProducerIDs() string { return k.prefix + "producer-ids/next" }

// AllocateProducerIDs reserves n consecutive producer ids and returns the
// first. Concurrent callers (on any host) never get overlapping ranges.
func (s *Store) AllocateProducerIDs(ctx context.Context, n int64) (int64, error) {
	if n <= 0 {
		return 0, fmt.Errorf("cluster: allocate %d producer ids: count must be positive", n)
	}
	key := s.keys.ProducerIDs()
	for {
		resp, err := s.client.Get(ctx, key)
		if err != nil {
			return 0, fmt.Errorf("cluster: read producer id counter: %w", err)
		}
		next, rev := int64(0), int64(0)
		if len(resp.Kvs) > 0 {
			kv := resp.Kvs[0]
			if next, err = strconv.ParseInt(string(kv.Value), 10, 64); err != nil || next < 0 {
				return 0, fmt.Errorf("%w: producer id counter %q", ErrCorruptMetadata, kv.Value)
			}
			rev = kv.ModRevision
		}
		if next > math.MaxInt64-n {
			return 0, ErrProducerIDsExhausted
		}
		cmp := clientv3.Compare(clientv3.ModRevision(key), "=", rev)
		txn, err := s.client.Txn(ctx).If(cmp).Then(clientv3.OpPut(key, strconv.FormatInt(next+n, 10))).Commit()
		if err != nil {
			return 0, fmt.Errorf("cluster: advance producer id counter: %w", err)
		}
		if txn.Succeeded {
			return next, nil
		}
		// Another host took a block meanwhile; read again.
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("cluster: advance producer id counter: %w", err)
		}
	}
}

// ProducerIDAllocator serves producer ids from blocks taken with
// AllocateProducerIDs. Safe for concurrent use.
type ProducerIDAllocator struct {
	store     ProducerIDSource
	blockSize int64

	mu        sync.Mutex
	next, end int64 // the current block is [next, end)
}

// NewProducerIDAllocator returns an allocator taking blocks of blockSize
// ids (ProducerIDBlockSize when <= 0) from store (a Store or MemStore).
func NewProducerIDAllocator(store ProducerIDSource, blockSize int64) *ProducerIDAllocator {
	if blockSize <= 0 {
		blockSize = ProducerIDBlockSize
	}
	return &ProducerIDAllocator{store: store, blockSize: blockSize}
}

// Next returns an unused producer id, taking a new block from etcd when
// the current one is used up.
func (a *ProducerIDAllocator) Next(ctx context.Context) (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next >= a.end {
		first, err := a.store.AllocateProducerIDs(ctx, a.blockSize)
		if err != nil {
			return -1, err
		}
		a.next, a.end = first, first+a.blockSize
	}
	id := a.next
	a.next++
	return id, nil
}
