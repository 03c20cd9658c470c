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

// TestAllocPooledFramesAreFramesInClasses: AllocPooled's frames are
// frames (Of finds their headroom, Cap counts them as Alloc's) in the
// smallest class that holds them; above the largest class, and for
// Alloc's frames, Pooled is false.
func TestAllocPooledFramesAreFramesInClasses(t *testing.T) {
	for _, c := range []struct {
		n     int
		class uint64
	}{{0, 1}, {1, 1}, {minPooled, 1}, {minPooled + classSlack, 1}, {minPooled + classSlack + 1, 2}, {1 << 20, 7}, {1<<20 + 100, 7}, {1<<20 + classSlack + 1, 8}, {maxPooled, numClasses}, {maxPooled + 1, 0}} {
		if got := classOf(c.n); got != c.class {
			t.Errorf("classOf(%d) = %d, want %d", c.n, got, c.class)
		}
	}
	for _, n := range []int{minPooledFrame, 5 << 10, 40 << 10, 1 << 20, 1<<20 + 7} {
		b := AllocPooled(n)
		if len(b) != n || Cap(b) != n {
			t.Fatalf("AllocPooled(%d): len %d, Cap %d", n, len(b), Cap(b))
		}
		for j := range b {
			b[j] = 0x5a
		}
		whole, ok := Of(b)
		if !ok || len(whole) != Headroom+n || !Pooled(b) || !Pooled(whole[7:]) {
			t.Fatalf("AllocPooled(%d): Of ok %v len %d, Pooled %v", n, ok, len(whole), Pooled(b))
		}
		if Pooled(b[:n:n]) || Pooled(append(b[:0], bytes.Repeat([]byte{1}, n+1)...)) {
			t.Fatalf("AllocPooled(%d): a slice not reaching the trailer, or past it, counts as pooled", n)
		}
	}
	for _, n := range []int{0, 1, 100, minPooledFrame - 1} {
		b := AllocPooled(n)
		if _, ok := Of(b); !ok || len(b) != n || Pooled(b) {
			t.Fatalf("AllocPooled(%d), below minPooledFrame: Of %v, len %d, Pooled %v; want an unpooled frame", n, ok, len(b), Pooled(b))
		}
	}
	if Pooled(Alloc(100)) || Pooled(AllocPooled(maxPooled+1)) || Pooled(make([]byte, 64<<10)) || Pooled(nil) {
		t.Fatal("an unpooled frame or a plain slice counts as pooled")
	}
	c := make([]byte, 2000, 2000+trailerLen)
	b := AllocPooled(2000)
	copy(c[:cap(c)], b[:cap(b)])
	if Pooled(c) || Recycle(c) {
		t.Fatal("a copy of a pooled frame, trailer included, counts as pooled")
	}
}

// TestRecycleGivesTheFrameBack: a recycled frame's memory comes back from
// AllocPooled of its class (sync.Pool may drop it, so within some tries),
// as a new frame with its own trailer; Recycle refuses what is not a
// pooled frame and counts what it takes.
func TestRecycleGivesTheFrameBack(t *testing.T) {
	reused := false
	for range 20 {
		b := AllocPooled(100 << 10)
		whole, _ := Of(b)
		before := Recycled()
		// As the remote codec sees it: an encoding starting in the headroom.
		if !Recycle(whole[Headroom-40:]) || Recycled() != before+1 {
			t.Fatal("Recycle refused a pooled frame")
		}
		c := AllocPooled(120 << 10) // same class (128 KiB)
		cw, ok := Of(c)
		if !ok || len(c) != 120<<10 || !Pooled(c) {
			t.Fatal("the next frame is not one")
		}
		if unsafe.SliceData(cw) == unsafe.SliceData(whole) {
			reused = true
			break
		}
	}
	if !reused {
		t.Fatal("a recycled frame was never handed out again in 20 tries")
	}
	before := Recycled()
	if Recycle(Alloc(100<<10)) || Recycle(make([]byte, 100<<10)) || Recycle(nil) || Recycled() != before {
		t.Fatal("Recycle took what is not a pooled frame")
	}
}
