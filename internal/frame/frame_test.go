package frame

import (
	"bytes"
	"testing"
	"unsafe"
)

func TestOfFindsTheHeadroomOfAllocOnly(t *testing.T) {
	b := Alloc(100)
	if len(b) != 100 {
		t.Fatalf("len %d, want 100", len(b))
	}
	for i := range b {
		b[i] = byte(i)
	}
	w, ok := Of(b)
	if !ok || len(w) != Headroom+100 {
		t.Fatalf("Of(Alloc(100)) = %d bytes, %v; want %d, true", len(w), ok, Headroom+100)
	}
	if unsafe.SliceData(w[Headroom:]) != unsafe.SliceData(b) || !bytes.Equal(w[Headroom:], b) {
		t.Fatal("Of's slice does not end with b itself")
	}
	copy(w, bytes.Repeat([]byte{0xee}, Headroom)) // the headroom is writable and not b
	if b[0] != 0 || b[99] != 99 {
		t.Fatal("writing the headroom changed b")
	}
	if w, ok := Of(b[:10]); !ok || len(w) != Headroom+10 {
		t.Fatalf("a shortened frame: %d bytes, %v; want %d, true", len(w), ok, Headroom+10)
	}
	if _, ok := Of(b[1:]); ok {
		t.Fatal("a frame re-sliced from the front was recognised")
	}
	grown := append(b[:50], bytes.Repeat([]byte{1}, 70)...) // within cap: overwrites the trailer
	if unsafe.SliceData(grown) != unsafe.SliceData(b) {
		t.Fatal("append moved the frame; the case is not tested")
	}
	if _, ok := Of(grown); ok {
		t.Fatal("a frame appended to past its length was recognised")
	}
	if _, ok := Of(make([]byte, 100, 200)); ok {
		t.Fatal("a plain slice was recognised")
	}
	if _, ok := Of(nil); ok {
		t.Fatal("nil was recognised")
	}
}

// TestOfChecksTheAddress: a copy of a frame, trailer included, is not one.
func TestOfChecksTheAddress(t *testing.T) {
	b := Alloc(64)
	c := make([]byte, cap(b))
	copy(c, b[:cap(b)])
	if _, ok := Of(c[:64]); ok {
		t.Fatal("a copy of a frame's bytes was recognised")
	}
	if _, ok := Of(Alloc(0)); !ok {
		t.Fatal("an empty frame was not recognised")
	}
}

// TestAllocsAreSeparateAndWholeWithoutZeroing: Alloc's memory is not
// zeroed, but each allocation is its own, every byte of it writable, and
// its frame intact whatever the memory held before (checkptr checks the
// slice under -race).
func TestAllocsAreSeparateAndWholeWithoutZeroing(t *testing.T) {
	var prev []byte
	for i, n := range []int{1, 100, 4096, 40 << 10, 1 << 20, 1<<20 + 7, 4 << 20} {
		b := Alloc(n)
		if len(b) != n || Cap(b) != n {
			t.Fatalf("Alloc(%d): len %d, Cap %d", n, len(b), Cap(b))
		}
		fill := byte(i + 1)
		for j := range b {
			b[j] = fill
		}
		whole, ok := Of(b)
		if !ok || len(whole) != Headroom+n {
			t.Fatalf("Alloc(%d): Of after filling: ok %v, len %d", n, ok, len(whole))
		}
		for j := range whole[:Headroom] {
			whole[j] = fill
		}
		if _, ok := Of(b); !ok {
			t.Fatalf("Alloc(%d): writing the headroom broke the frame", n)
		}
		for j, c := range prev {
			if c != fill-1 {
				t.Fatalf("Alloc(%d) wrote into the previous allocation at %d", n, j)
			}
		}
		prev = b
	}
}
