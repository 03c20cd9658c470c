// Package frame allocates byte slices with room for a message header in
// front of them, so that a large payload (records read from a log for a
// fetch answer, a producer's batch) can be sent inside an encoded message
// without being copied into a second buffer (issue 15: protoactor's
// endpoint writer proto.Marshal-ed every fetch answer into a fresh buffer,
// a copy and an allocation of every byte served, ~18 % of a host's CPU
// while serving consumers, plus the garbage collection the allocations
// caused).
//
// Alloc(n) returns b, len n, inside one allocation laid out as
//
//	[Headroom bytes][b: n bytes][trailer]
//
// with cap(b) reaching the end of the trailer. The trailer holds a random
// per-process tag and the allocation's address, so Of(b) recognises a slice
// Alloc made — and still starting where Alloc's did — from b alone, and
// then gives back the whole allocation, headroom included. Anything else
// (a slice of another origin, a re-sliced or appended-to one: an append
// within the capacity overwrites the trailer) is not recognised, and the
// caller falls back to copying. Reaching the headroom goes below b's first
// byte with unsafe pointer arithmetic, which stays inside the allocation b
// keeps alive.
//
// The headroom is written by the one sender that encodes the message; a
// frame must therefore travel in one message at a time (a fetch answer's
// records are read for that answer alone; the producer hands a batch out
// in its frame on its first send only, and reuses the frame for another
// batch only after that send was answered).
package frame

import (
	"crypto/rand"
	"encoding/binary"
	"strings"
	"unsafe"
)

// Headroom is the room in front of an allocated slice: enough for the
// fields of a fetch answer other than its records (a topic name of at most
// 249 bytes and a handful of integers) and the records' tag and length.
const Headroom = 512

// trailerLen is the tag (16 bytes) and the allocation's address (8 bytes).
const trailerLen = 16 + 8

// tag is this process's random trailer tag.
var tag = func() (t [16]byte) {
	if _, err := rand.Read(t[:]); err != nil {
		panic("frame: no randomness for the trailer tag: " + err.Error())
	}
	return t
}()

// Alloc returns a slice of n bytes with Headroom bytes in front of it that
// Of can reach (see the package comment). The bytes are NOT zeroed: they
// may hold whatever the memory held before, and the caller must write
// every byte it uses (a segment read fills all n or fails; the producer
// appends to [:0]). Zeroing a fresh 1–4 MiB buffer that pread then
// filled was a third of the CPU a host spent reading records for fetches
// (profile of a host serving perf consume at 100 B).
func Alloc(n int) []byte {
	whole := NoZero(Headroom + n + trailerLen)
	t := whole[Headroom+n:]
	copy(t, tag[:])
	binary.LittleEndian.PutUint64(t[16:], uint64(uintptr(unsafe.Pointer(&whole[0]))))
	return whole[Headroom : Headroom+n : len(whole)]
}

// NoZero returns n bytes of fresh, not zeroed memory: they may hold
// whatever the memory held before, and the caller must write every byte
// it uses before anything reads it (Alloc's frames; the remote codec's
// copy of a received message, which writes all n). The runtime allocates
// without zeroing only for the standard library; its one public route is
// strings.Builder.Grow. After one byte is written the builder's string
// points at an allocation of at least n bytes, and the slice made from
// that pointer stays inside it (checkptr agrees). Nothing reads the
// memory as a string.
func NoZero(n int) []byte {
	var sb strings.Builder
	sb.Grow(n)
	if err := sb.WriteByte(0); err != nil {
		panic("frame: strings.Builder.WriteByte: " + err.Error())
	}
	return unsafe.Slice(unsafe.StringData(sb.String()), n)
}

// Of returns the Headroom bytes in front of b followed by b itself (one
// slice, len Headroom+len(b)), if b is a slice Alloc returned (shortened
// or not, never moved or appended to); ok is false otherwise.
func Of(b []byte) (withHead []byte, ok bool) {
	c := cap(b)
	if c < trailerLen {
		return nil, false
	}
	full := b[:c]
	t := full[c-trailerLen:]
	if [16]byte(t[:16]) != tag {
		return nil, false
	}
	start := uintptr(binary.LittleEndian.Uint64(t[16:]))
	if start+Headroom != uintptr(unsafe.Pointer(unsafe.SliceData(full))) {
		return nil, false
	}
	// b's first byte is Headroom bytes into the allocation that holds the
	// trailer (its recorded address matches): the headroom is that
	// allocation's first Headroom bytes, and b follows it.
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(full)), -Headroom)), Headroom+len(b)), true
}

// Cap is how many bytes from b's start may be filled without touching a
// frame's trailer: cap(b) less the trailer when b is a frame (Of), else
// cap(b). A caller that sizes and reuses buffers by capacity counts a
// frame's with Cap, so that the trailer is neither counted nor filled.
func Cap(b []byte) int {
	if _, ok := Of(b); ok {
		return cap(b) - trailerLen
	}
	return cap(b)
}
