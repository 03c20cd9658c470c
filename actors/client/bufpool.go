// bufpool.go: the buffer pool of the remote's gRPC server and
// connections, grpc's default pool without the clearing.
//
// grpc's default pool (mem.DefaultBufferPool) clears every buffer it
// hands out again: each 16 KiB HTTP/2 data frame a host or a client
// receives is read into a pooled buffer cleared first, and a connection's
// shared 1 MiB write buffer (WriteBufferSize, taken from the pool whenever
// the connection starts writing) is cleared whole even when it carries one
// small request. On a host and a perf client in one process (1 KiB
// records) that clearing was 4.6 % of all CPU, 0.43 s of
// runtime.memclrNoHeapPointers under sizedBufferPool.Get.
//
// Every use grpc makes of the pool writes the bytes it reads: a data
// frame is io.ReadFull-ed into a buffer of its length, the write buffer
// is flushed up to its offset, the connection readers keep the n bytes
// read, mem.ReadAll keeps what it read, Materialize, Copy and the proto
// codec fill what they take. grpc ships a pool that does not clear for
// that reason (internal/mem.NewDirtyBinaryTieredBufferPool), but does not
// export it; this is the same, for grpc's default tiers.
package client

import (
	"sync"

	"google.golang.org/grpc/mem"

	"github.com/actorlog/actorlog/internal/frame"
)

// dirtyTierSizes are grpc's default pool tiers (256 B, 4 KiB, 16 KiB: the
// largest HTTP/2 frame grpc sends, 32 KiB, 1 MiB: WriteBufferSize).
var dirtyTierSizes = [...]int{256, 4 << 10, 16 << 10, 32 << 10, 1 << 20}

// dirtyPool is a mem.BufferPool that never clears: a buffer comes from
// the smallest tier that holds the length asked for (a tier's buffers
// have exactly its size as capacity), or, above the largest tier, from a
// fallback pool of any buffer large enough, as grpc's own.
type dirtyPool struct {
	tiers    [len(dirtyTierSizes)]sync.Pool
	fallback sync.Pool
}

var _ mem.BufferPool = (*dirtyPool)(nil)

// remoteBufferPool is the pool of every remote (RemoteConfig).
var remoteBufferPool = &dirtyPool{}

// Get returns a buffer of length n whose bytes are whatever they were.
func (p *dirtyPool) Get(n int) *[]byte {
	for i, size := range dirtyTierSizes {
		if n > size {
			continue
		}
		if b, ok := p.tiers[i].Get().(*[]byte); ok {
			*b = (*b)[:n]
			return b
		}
		b := frame.NoZero(size)[:n:size]
		return &b
	}
	if b, ok := p.fallback.Get().(*[]byte); ok {
		if cap(*b) >= n {
			*b = (*b)[:n]
			return b
		}
		p.fallback.Put(b)
	}
	b := frame.NoZero(n)[:n:n]
	return &b
}

// Put takes back a buffer Get returned (or a prefix of it).
func (p *dirtyPool) Put(b *[]byte) {
	c := cap(*b)
	for i, size := range dirtyTierSizes {
		if c == size {
			p.tiers[i].Put(b)
			return
		}
	}
	if c > dirtyTierSizes[len(dirtyTierSizes)-1] {
		p.fallback.Put(b)
	}
	// Smaller or odd sizes did not come from Get: dropped.
}
