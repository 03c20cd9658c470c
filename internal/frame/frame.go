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
	"sync"
	"sync/atomic"
	"unsafe"
)

// Headroom is the room in front of an allocated slice: enough for the
// fields of a fetch answer other than its records (a topic name of at most
// 249 bytes and a handful of integers) and the records' tag and length.
const Headroom = 512

// trailerLen is the tag (16 bytes), the allocation's address (8 bytes)
// and its pool class (8 bytes; 0: not pooled, see AllocPooled).
const trailerLen = 16 + 8 + 8

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
	return frameIn(NoZero(Headroom+n+trailerLen), n, 0)
}

// frameIn lays a frame of n bytes out at the start of whole (at least
// Headroom+n+trailerLen bytes), its trailer recording class, and returns
// its slice, whose capacity ends with the trailer.
func frameIn(whole []byte, n int, class uint64) []byte {
	t := whole[Headroom+n : Headroom+n+trailerLen]
	copy(t, tag[:])
	binary.LittleEndian.PutUint64(t[16:], uint64(uintptr(unsafe.Pointer(&whole[0]))))
	binary.LittleEndian.PutUint64(t[24:], class)
	return whole[Headroom : Headroom+n : Headroom+n+trailerLen]
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
	// allocation's first Headroom bytes, and b follows it. The capacity
	// reaches the trailer's end, so that Recycle can find it from any
	// slice of withHead that keeps that capacity.
	head := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(full)), -Headroom)), Headroom+c)
	return head[:Headroom+len(b)], true
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

// Pooled frames. A host reads records for every fetch it serves into a
// fresh frame of up to a few MiB; once the remote has written the answer
// the frame is garbage. At a consumer's pace that was a few hundred MB/s
// of fresh memory: page faults to touch it (slow on a virtual machine)
// and garbage collections, about a third of a host's CPU serving
// consumers. AllocPooled takes frames from per-size pools instead, and
// Recycle gives one back: the remote codec calls it when grpc-go releases
// the buffer it sent (mem.Buffer's Free), the one moment nothing reads
// the frame any more (see Recycle). A pooled frame that is never recycled
// (served locally, dropped after an error) is collected as any other.

// Pool classes: class k (1..) holds allocations of Headroom +
// classFrame(k) + trailerLen bytes, for frames of up to classFrame(k) =
// (minPooled << (k-1)) + classSlack bytes. The slack is for what comes
// with a power of two of records: a received produce request's envelope
// is its batch (the producer's batch size, 1 MiB by default) and a few
// dozen bytes of fields, which without it would take the next class, twice
// the memory.
const (
	minPooled  = 16 << 10
	maxPooled  = 16<<20 + classSlack
	numClasses = 11 // 16 KiB .. 16 MiB
	classSlack = 1 << 10
)

var pools [numClasses + 1]sync.Pool // by class; [0] unused

// recycled counts the frames Recycle gave back.
var recycled atomic.Int64

// Recycled is how many frames Recycle has given back in this process.
func Recycled() int64 { return recycled.Load() }

// classOf is the smallest class whose frames hold n bytes, 0 if none.
func classOf(n int) uint64 {
	if n > maxPooled {
		return 0
	}
	k := uint64(1)
	for classFrame(k) < n {
		k++
	}
	return k
}

// classFrame is the largest frame class k holds.
func classFrame(k uint64) int { return minPooled<<(k-1) + classSlack }

// classBytes is the size of class k's allocations.
func classBytes(k uint64) int { return Headroom + classFrame(k) + trailerLen }

// minPooledFrame is the smallest frame AllocPooled takes from a pool.
// grpc-go gives no buffer of less than 1 KiB back to its pool
// (mem.IsBelowBufferPoolingThreshold: mem.NewBuffer makes it a
// SliceBuffer, whose Free does nothing), so a smaller frame sent by the
// remote never comes back, and it would take a frame of the smallest
// class, 17 KiB, to become garbage: a follower's answer of a few records
// was a 17 KiB allocation.
const minPooledFrame = 1 << 10

// AllocPooled is Alloc from the pools: a frame of n bytes, not zeroed (its
// bytes may hold another frame's records), that Recycle may give back once
// nothing reads it. Frames of less than 1 KiB (minPooledFrame) or more
// than 16 MiB are Alloc's.
func AllocPooled(n int) []byte {
	k := classOf(n)
	if k == 0 || n < minPooledFrame {
		return Alloc(n)
	}
	var whole []byte
	if p, ok := pools[k].Get().(*[]byte); ok {
		whole = *p
	} else {
		whole = NoZero(classBytes(k))
	}
	return frameIn(whole, n, k)
}

// Pooled reports whether b lies in a pooled frame whose trailer its
// capacity still reaches (what Recycle would give back).
func Pooled(b []byte) bool {
	_, _, ok := pooledFrame(b)
	return ok
}

// Recycle gives the pooled frame that b lies in back to its pool and
// reports whether it did. b is any slice of a pooled frame's allocation
// (the frame, or Of's slice, re-sliced at the front within the headroom)
// whose capacity still ends at the frame's trailer; anything else is left
// alone. The caller guarantees that nothing reads or writes the frame
// after the call: the next AllocPooled may hand it out again.
func Recycle(b []byte) bool {
	whole, k, ok := pooledFrame(b)
	if ok {
		recycled.Add(1)
		pools[k].Put(&whole)
	}
	return ok
}

// pooledFrame is the whole allocation and class of the pooled frame b lies
// in (see Recycle).
func pooledFrame(b []byte) (whole []byte, k uint64, ok bool) {
	c := cap(b)
	if c < trailerLen {
		return nil, 0, false
	}
	full := b[:c]
	t := full[c-trailerLen:]
	if [16]byte(t[:16]) != tag {
		return nil, 0, false
	}
	k = binary.LittleEndian.Uint64(t[24:])
	if k == 0 || k > numClasses {
		return nil, 0, false
	}
	start := uintptr(binary.LittleEndian.Uint64(t[16:]))
	at := uintptr(unsafe.Pointer(unsafe.SliceData(full)))
	// The trailer ends the frame, Headroom+n+trailerLen bytes into the
	// allocation, n at most the class's frame size; b must begin within
	// the headroom or the frame.
	end := at + uintptr(c)
	if at < start || end > start+uintptr(classBytes(k)) || end-start < Headroom+trailerLen {
		return nil, 0, false
	}
	whole = unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(full)), -int(at-start))), classBytes(k))
	return whole, k, true
}
