// frame_alloc_test.go measures and pins the allocations of the
// connection's frame paths on the sizes issue 13's benchmark profiled:
// reading a 1 MiB Produce frame as it arrives from a socket in 64 KiB
// pieces (3 allocations, growing ×4), while a frame that claims more than
// its peer sends still costs only a small multiple of what arrived (the
// DoS defence); and encoding then writing a 3 MiB Fetch response (a
// default kgo fetch: 3 partitions of 1 MiB) into a pooled buffer, which
// must come out byte for byte as kmsg encodes it and cost no allocation
// once the pool holds a buffer.

package kafka

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// chunkReader yields its data at most chunk bytes per Read, as a socket
// does with what has arrived.
type chunkReader struct {
	data  []byte
	chunk int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.chunk)], r.data)
	r.data = r.data[n:]
	return n, nil
}

// BenchmarkReadFrame1MiB is readFrame of a 1 MiB frame arriving 64 KiB per
// read.
func BenchmarkReadFrame1MiB(b *testing.B) {
	data := bytes.Repeat([]byte{7}, 1<<20)
	r := &chunkReader{chunk: 64 << 10}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r.data = data
		got, err := readFrame(r, len(data))
		if err != nil || len(got) != len(data) {
			b.Fatal(len(got), err)
		}
	}
}

// fetchResponse3MiB is a Fetch response of 3 partitions of 1 MiB.
func fetchResponse3MiB() *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	tp := kmsg.NewFetchResponseTopic()
	tp.Topic = "bench"
	for p := int32(0); p < 3; p++ {
		part := kmsg.NewFetchResponseTopicPartition()
		part.Partition = p
		part.RecordBatches = bytes.Repeat([]byte{byte(p + 1)}, 1<<20)
		tp.Partitions = append(tp.Partitions, part)
	}
	resp.Topics = append(resp.Topics, tp)
	return resp
}

// BenchmarkWriteFetchResponse3MiB is what the writer does per 3 MiB Fetch
// response: encode it into its buffer, write it, keep or release the
// buffer.
func BenchmarkWriteFetchResponse3MiB(b *testing.B) {
	resp := fetchResponse3MiB()
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		out, large, err := encodeFrame(buf, 7, resp)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Discard.Write(out); err != nil {
			b.Fatal(err)
		}
		buf = releaseFrame(out, large)
	}
}

// TestReadFrameAllocationBounded: a frame that claims 64 MiB costs only a
// small multiple of the bytes its peer actually sends before the stream
// ends, and a whole 1 MiB frame takes at most 3 allocations (it took 5,
// 2.8 MiB, growing ×2).
func TestReadFrameAllocationBounded(t *testing.T) {
	const claimed = 64 << 20
	data := bytes.Repeat([]byte{7}, 1<<20+1)
	for _, sent := range []int{0, 1, frameChunk, frameChunk + 1, 300 << 10, 1<<20 + 1} {
		r := &chunkReader{data: data[:sent], chunk: 64 << 10}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got, err := readFrame(r, claimed)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, io.ErrUnexpectedEOF) || len(got) != sent {
			t.Fatalf("%d of %d bytes: got %d bytes, %v", sent, claimed, len(got), err)
		}
		// frameChunk before any byte, then under frameGrowth*4/3 times
		// what arrived; 256 KiB of slack for other goroutines.
		limit := uint64(frameChunk + frameGrowth*4*sent/3 + 256<<10)
		if used := after.TotalAlloc - before.TotalAlloc; used > limit {
			t.Errorf("%d bytes of a frame claiming %d allocated %d bytes, limit %d", sent, claimed, used, limit)
		}
	}
	r := &chunkReader{chunk: 64 << 10}
	allocs := testing.AllocsPerRun(5, func() {
		r.data = data[:1<<20]
		if got, err := readFrame(r, 1<<20); err != nil || !bytes.Equal(got, data[:1<<20]) {
			t.Fatalf("1 MiB frame: %d bytes, %v", len(got), err)
		}
	})
	if allocs > 3 {
		t.Errorf("reading a 1 MiB frame took %.1f allocations, want at most 3", allocs)
	}
}

// TestLargeResponseBufferPooled: a Fetch response above maxKeptWriteBuffer
// is encoded into a pooled buffer, byte for byte as appendResponse frames
// it; once written the buffer goes back to the pool (not to the
// connection) and serves the next one without allocating; small responses
// keep using the connection's own buffer.
func TestLargeResponseBufferPooled(t *testing.T) {
	resp := fetchResponse3MiB()
	want := appendResponse(nil, 9, resp)
	kept := make([]byte, 0, 4096)
	out, large, err := encodeFrame(kept, 9, resp)
	if err != nil {
		t.Fatal(err)
	}
	if large == nil || !bytes.Equal(out, want) {
		t.Fatalf("pooled: %v; frame of %d bytes equal to appendResponse's (%d): %v", large != nil, len(out), len(want), bytes.Equal(out, want))
	}
	if cap(out) < len(want) || cap(out) != 4<<20 {
		t.Errorf("pooled buffer of capacity %d for a %d-byte frame, want the 4 MiB class", cap(out), len(want))
	}
	if next := releaseFrame(out, large); next != nil {
		t.Errorf("a pooled buffer was kept by the connection (capacity %d)", cap(next))
	}
	// 50 rounds: under -race sync.Pool drops a quarter of what is put
	// back, so fewer than half of them allocate a buffer only if the pool
	// works. Counted by the pool itself: testing.AllocsPerRun counts every
	// goroutine's allocations, and earlier tests' goroutines still run.
	made := largeBuffersMade.Load()
	for range 50 {
		out, large, err := encodeFrame(nil, 9, resp)
		if err != nil || large == nil || len(out) != len(want) {
			t.Fatalf("encodeFrame: %d bytes, pooled %v, %v", len(out), large != nil, err)
		}
		releaseFrame(out, large)
	}
	if n := largeBuffersMade.Load() - made; n >= 25 {
		t.Errorf("encoding a 3 MiB Fetch response 50 times into pooled buffers allocated %d buffers, want ~0", n)
	}

	small := kmsg.NewPtrApiVersionsResponse()
	out, large, err = encodeFrame(kept, 3, small)
	if err != nil || large != nil || !bytes.Equal(out, appendResponse(nil, 3, small)) {
		t.Fatalf("small response: pooled %v, %v", large != nil, err)
	}
	if &out[:1][0] != &kept[:1][0] {
		t.Error("a small response did not use the connection's buffer")
	}
	if next := releaseFrame(out, nil); cap(next) != cap(kept) || len(next) != 0 {
		t.Errorf("the connection's buffer came back with len %d cap %d, want 0 and %d", len(next), cap(next), cap(kept))
	}
	// A response too large for any class is not pooled; a grown kept
	// buffer above maxKeptWriteBuffer is handed to the pool, not kept.
	if lb := getLargeBuffer(1<<maxPooledWriteClass + 1); lb != nil {
		t.Errorf("a buffer of %d bytes was pooled", cap(lb.b))
	}
	if next := releaseFrame(make([]byte, 10, 2<<20), nil); next != nil {
		t.Error("a 2 MiB buffer was kept by the connection")
	}
}
