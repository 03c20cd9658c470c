// This file holds the Accumulator's scheduling: which partitions Ready,
// Expire and NextDeadline look at, so that their cost per call follows the
// partitions with something due rather than all the partitions known (a
// producer writing keyed records to 1,000 partitions calls them for every
// record).

package producer

import (
	"cmp"
	"container/heap"
	"slices"
	"time"
)

// sched is the Accumulator's index of partitions by deadline.
//
// Invariants, after refresh: active holds exactly the partitions with an
// open, queued or in-flight batch or a lost sequence (broken); due holds
// exactly the partitions whose partDeadline (with the current idle,
// producer id and generation) is ok, keyed by it; dirty is empty. A
// partition that is in neither has nothing for Ready, Expire or
// NextDeadline to do. Between refreshes, every partition whose state may
// have changed is in dirty (markDirty), and a change of the global state
// that partDeadline reads (nothing in flight, the producer id's validity,
// its generation) is noticed by refresh comparing it with keyIdle,
// keyPidValid and keyGen.
type sched struct {
	due    partHeap     // partitions with a deadline, earliest first
	active []*partition // partitions holding anything, in no order
	dirty  []*partition // partitions changed since the last refresh
	cands  []*partition // candidates' scratch

	// The global state the keys in due were computed with.
	keyIdle     bool
	keyPidValid bool
	keyGen      int

	// scanAll makes Ready, Expire and NextDeadline look at every
	// partition, as they did before sched: the reference the tests and
	// benchmarks compare with.
	scanAll bool
}

// markDirty notes that p's state changed: its deadline and its place in
// active are recomputed by the next refresh.
func (a *Accumulator) markDirty(p *partition) {
	if !p.dirty {
		p.dirty = true
		a.dirty = append(a.dirty, p)
	}
}

// refresh brings due and active up to date (see sched).
func (a *Accumulator) refresh() {
	idle := len(a.inflight) == 0
	all := idle != a.keyIdle || a.pidValid != a.keyPidValid || a.gen != a.keyGen
	a.keyIdle, a.keyPidValid, a.keyGen = idle, a.pidValid, a.gen
	for i, p := range a.dirty {
		p.dirty = false
		a.rekey(p, idle)
		a.dirty[i] = nil
	}
	a.dirty = a.dirty[:0]
	if all {
		// Backwards: rekey may move the last partition into i's place.
		for i := len(a.active) - 1; i >= 0; i-- {
			a.rekey(a.active[i], idle)
		}
	}
}

// rekey recomputes p's place in active and its key in due.
func (a *Accumulator) rekey(p *partition, idle bool) {
	if p.open != nil || len(p.queue) > 0 || len(p.inflight) > 0 || p.broken {
		if p.aidx < 0 {
			p.aidx = len(a.active)
			a.active = append(a.active, p)
		}
	} else if p.aidx >= 0 {
		last := a.active[len(a.active)-1]
		a.active[p.aidx], last.aidx = last, p.aidx
		a.active[len(a.active)-1] = nil
		a.active = a.active[:len(a.active)-1]
		p.aidx = -1
	}
	at, ok := a.partDeadline(p, idle)
	switch {
	case ok && p.hidx >= 0:
		p.key = at
		heap.Fix(&a.due, p.hidx)
	case ok:
		p.key = at
		heap.Push(&a.due, p)
	case p.hidx >= 0:
		heap.Remove(&a.due, p.hidx)
	}
}

// candidates returns the partitions Ready or Expire must look at now, in
// the order they first appeared: those whose deadline has come, or every
// partition holding anything when all is set. They leave due: the caller
// must markDirty each one. The slice is reused by the next call.
func (a *Accumulator) candidates(now time.Time, all bool) []*partition {
	if a.scanAll {
		a.refresh() // keeps due up to date, unused
		return a.parts
	}
	a.refresh()
	if !all && (len(a.due) == 0 || now.Before(a.due[0].key)) {
		return nil // the common case: nothing due
	}
	cands := a.cands[:0]
	if all {
		cands = append(cands, a.active...)
	} else {
		for len(a.due) > 0 && !now.Before(a.due[0].key) {
			cands = append(cands, heap.Pop(&a.due).(*partition))
		}
	}
	if len(cands) > 1 {
		slices.SortFunc(cands, func(x, y *partition) int { return cmp.Compare(x.idx, y.idx) })
	}
	a.cands = cands
	return cands
}

// scanDeadline is NextDeadline's partitions part computed over every
// partition (scanAll).
func (a *Accumulator) scanDeadline() (at time.Time, ok bool) {
	idle := len(a.inflight) == 0
	for _, p := range a.parts {
		if t, pok := a.partDeadline(p, idle); pok && (!ok || t.Before(at)) {
			at, ok = t, true
		}
	}
	return at, ok
}

// partHeap is a min-heap of partitions by key, each knowing its index
// (hidx) for heap.Fix and heap.Remove.
type partHeap []*partition

func (h partHeap) Len() int           { return len(h) }
func (h partHeap) Less(i, j int) bool { return h[i].key.Before(h[j].key) }
func (h partHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].hidx, h[j].hidx = i, j
}

func (h *partHeap) Push(x any) {
	p := x.(*partition)
	p.hidx = len(*h)
	*h = append(*h, p)
}

func (h *partHeap) Pop() any {
	old := *h
	p := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	p.hidx = -1
	return p
}
