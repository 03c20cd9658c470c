// This file tests the Accumulator's scheduling (schedule.go): random
// operations run in lockstep on an Accumulator that looks only at the
// partitions its index names and on one that scans every partition
// (scanAll, the code before the index), which must answer alike, and the
// index's invariants hold after every step.

package producer

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/actorlog/actorlog/storage/record"
)

func TestScheduleMatchesScan(t *testing.T) {
	for seed := uint64(1); seed <= 120; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runScheduleLockstep(t, seed, 1500) })
	}
}

// TestTimedOut: Expire names the sends it took out of flight for their
// request timeout, and only those, until the next Expire.
func TestTimedOut(t *testing.T) {
	a := newAcc(t, Config{Linger: -1, RequestTimeout: 100 * time.Millisecond})
	tpB := TopicPartition{Topic: "b", Partition: 0}
	mustAppend(t, a, ms(0), tpA, 1, 10)
	first := a.Ready(ms(0))
	if len(first) != 1 {
		t.Fatalf("Ready at 0: %d batches, want 1", len(first))
	}
	old := first[0].ID
	mustAppend(t, a, ms(50), tpB, 2, 10)
	if got := a.Ready(ms(50)); len(got) != 1 {
		t.Fatalf("Ready at 50: %d batches, want 1", len(got))
	}
	if d := a.Expire(ms(99)); d != nil || len(a.TimedOut()) != 0 {
		t.Fatalf("Expire at 99: %v, timed out %v; want nothing", d, a.TimedOut())
	}
	if d := a.Expire(ms(100)); d != nil {
		t.Fatalf("Expire at 100: %v, want the batch retried, not failed", d)
	}
	if got := a.TimedOut(); len(got) != 1 || got[0] != old {
		t.Fatalf("TimedOut at 100: %v, want [%d]", got, old)
	}
	if a.Complete(old, 0, nil) != nil {
		t.Fatalf("a late answer to timed-out send %d was not ignored", old)
	}
	a.Expire(ms(101))
	if got := a.TimedOut(); len(got) != 0 {
		t.Fatalf("TimedOut after a later Expire: %v, want none", got)
	}
}

// lockstep is an indexed Accumulator and a scanning one fed the same
// operations.
type lockstep struct {
	t        *testing.T
	idx, ref *Accumulator
	now      time.Time
	ids      []BatchID // every send handed out, answered or not
	nextPID  int64
}

func runScheduleLockstep(t *testing.T, seed uint64, steps int) {
	r := rand.New(rand.NewPCG(seed, 15))
	cfg := Config{
		BatchSize:      []int{200, 1024, 4096}[r.IntN(3)],
		MaxRequestSize: 4096,
		BufferMemory:   []int{4096, 8192, 1 << 20}[r.IntN(3)],
		MaxInFlight:    1 + r.IntN(5),
		Linger:         []time.Duration{-1, time.Millisecond, 5 * time.Millisecond}[r.IntN(3)],
		LingerWhenIdle: r.IntN(2) == 0,
		RetryBackoff:   []time.Duration{-1, 3 * time.Millisecond, 100 * time.Millisecond}[r.IntN(3)],
		RequestTimeout: 40 * time.Millisecond,
		Idempotence:    []Idempotence{IdempotenceOn, IdempotenceOff}[r.IntN(2)],
		RecycleSent:    r.IntN(2) == 0,
	}
	cfg.DeliveryTimeout = []time.Duration{50 * time.Millisecond, 300 * time.Millisecond, time.Minute}[r.IntN(3)]
	l := &lockstep{t: t, now: t0, nextPID: 1}
	var err error
	if l.idx, err = NewAccumulator(cfg); err != nil {
		t.Fatalf("NewAccumulator: %v", err)
	}
	if l.ref, err = NewAccumulator(cfg); err != nil {
		t.Fatalf("NewAccumulator: %v", err)
	}
	l.ref.scanAll = true
	parts := 1 + r.IntN(12)
	tp := func() TopicPartition { return TopicPartition{Topic: "t", Partition: int32(r.IntN(parts))} }
	sends := 0
	for i := 0; i < steps; i++ {
		switch op := r.IntN(100); {
		case op < 35:
			l.append(tp(), i, 1+r.IntN(300))
		case op < 50:
			l.now = l.now.Add(time.Duration(r.IntN(3000)) * time.Microsecond)
		case op < 52:
			l.now = l.now.Add(time.Duration(20+r.IntN(300)) * time.Millisecond)
		case op < 65:
			got, want := l.idx.Ready(l.now), l.ref.Ready(l.now)
			l.sameReady(got, want)
			sends += len(got)
			for _, rb := range got {
				l.ids = append(l.ids, rb.ID)
			}
		case op < 72:
			l.sameDeliveries("Expire", l.idx.Expire(l.now), l.ref.Expire(l.now))
			if g, w := l.idx.TimedOut(), l.ref.TimedOut(); fmt.Sprint(g) != fmt.Sprint(w) {
				t.Fatalf("step %d: TimedOut %v, scan %v", i, g, w)
			}
		case op < 85 && len(l.ids) > 0:
			l.answer(r)
		case op < 88:
			x := tp()
			l.idx.Pause(x)
			l.ref.Pause(x)
		case op < 92:
			x := tp()
			l.idx.Resume(x)
			l.ref.Resume(x)
		case op < 95:
			if l.idx.NeedProducerID() != l.ref.NeedProducerID() {
				t.Fatalf("step %d: NeedProducerID %v, scan %v", i, l.idx.NeedProducerID(), l.ref.NeedProducerID())
			}
			if l.idx.NeedProducerID() || r.IntN(4) == 0 {
				l.nextPID++
				l.idx.SetProducerID(l.nextPID, 0)
				l.ref.SetProducerID(l.nextPID, 0)
			}
		case op < 97:
			l.idx.Flush()
			l.ref.Flush()
		case op < 98:
			x := tp()
			rec := record.Record{Value: value(i, 1+r.IntN(300)), Timestamp: 1}
			j1, c1 := l.idx.joinOrClose(x, &rec)
			j2, c2 := l.ref.joinOrClose(x, &rec)
			if j1 != j2 || c1 != c2 {
				t.Fatalf("step %d: joinOrClose %v %v, scan %v %v", i, j1, c1, j2, c2)
			}
		case op == 98 && r.IntN(5) == 0:
			l.sameDeliveries("Abort", l.idx.Abort(nil), l.ref.Abort(nil))
		}
		got, gok := l.idx.NextDeadline()
		want, wok := l.ref.NextDeadline()
		if gok != wok || !got.Equal(want) {
			t.Fatalf("step %d: NextDeadline %v %v, scan %v %v", i, got, gok, want, wok)
		}
		if g, w := l.idx.Stats(), l.ref.Stats(); g != w {
			t.Fatalf("step %d: Stats %+v, scan %+v", i, g, w)
		}
		checkSched(t, l.idx)
	}
	if sends == 0 {
		t.Fatalf("nothing was sent in %d steps: the test exercises nothing", steps)
	}
}

func (l *lockstep) append(tp TopicPartition, i, n int) {
	rec := record.Record{Value: value(i, n), Timestamp: 1}
	g, gerr := l.idx.Append(l.now, tp, rec, i)
	w, werr := l.ref.Append(l.now, tp, rec, i)
	if g != w || errString(gerr) != errString(werr) {
		l.t.Fatalf("Append %d: %+v %v, scan %+v %v", i, g, gerr, w, werr)
	}
}

// answer answers a random send the same way on both.
func (l *lockstep) answer(r *rand.Rand) {
	id := l.ids[r.IntN(len(l.ids))]
	cause := errors.New("boom")
	var g, w []Delivery
	switch r.IntN(6) {
	case 0, 1:
		g, w = l.idx.Complete(id, 100, nil), l.ref.Complete(id, 100, nil)
	case 2:
		g, w = l.idx.Complete(id, -1, cause), l.ref.Complete(id, -1, cause)
	case 3:
		g, w = l.idx.Retry(id, l.now, cause), l.ref.Retry(id, l.now, cause)
	case 4:
		g, w = l.idx.OutOfOrderSequence(id, l.now, cause), l.ref.OutOfOrderSequence(id, l.now, cause)
	case 5:
		g, w = l.idx.ProducerRejected(id, l.now, cause), l.ref.ProducerRejected(id, l.now, cause)
	}
	l.sameDeliveries(fmt.Sprintf("answer %d", id), g, w)
}

func (l *lockstep) sameReady(got, want []ReadyBatch) {
	l.t.Helper()
	if len(got) != len(want) {
		l.t.Fatalf("Ready: %d batches, scan %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.TopicPartition != w.TopicPartition || !bytes.Equal(g.Bytes, w.Bytes) ||
			g.ProducerID != w.ProducerID || g.ProducerEpoch != w.ProducerEpoch || g.BaseSequence != w.BaseSequence ||
			g.Records != w.Records || g.Attempt != w.Attempt || fmt.Sprint(g.Reports) != fmt.Sprint(w.Reports) {
			l.t.Fatalf("Ready batch %d: %+v, scan %+v", i, g, w)
		}
	}
}

func (l *lockstep) sameDeliveries(what string, got, want []Delivery) {
	l.t.Helper()
	if len(got) != len(want) {
		l.t.Fatalf("%s: %d deliveries, scan %d", what, len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Report != w.Report || g.TopicPartition != w.TopicPartition || g.Offset != w.Offset || errString(g.Err) != errString(w.Err) {
			l.t.Fatalf("%s delivery %d: %+v, scan %+v", what, i, g, w)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// checkSched checks sched's invariants after a refresh: active holds
// exactly the partitions holding anything, due exactly those with a
// deadline, keyed by it, in heap order, every index in place.
func checkSched(t *testing.T, a *Accumulator) {
	t.Helper()
	a.refresh()
	if len(a.dirty) != 0 {
		t.Fatalf("%d partitions dirty after refresh", len(a.dirty))
	}
	idle := len(a.inflight) == 0
	active, due := 0, 0
	for _, p := range a.parts {
		holds := p.open != nil || len(p.queue) > 0 || len(p.inflight) > 0 || p.broken
		if holds != (p.aidx >= 0) || p.aidx >= 0 && a.active[p.aidx] != p {
			t.Fatalf("%s: holds %v, active index %d", p.tp, holds, p.aidx)
		}
		if holds {
			active++
		}
		at, ok := a.partDeadline(p, idle)
		if ok != (p.hidx >= 0) || p.hidx >= 0 && (a.due[p.hidx] != p || !p.key.Equal(at)) {
			t.Fatalf("%s: deadline %v %v, heap index %d key %v", p.tp, at, ok, p.hidx, p.key)
		}
		if ok {
			due++
		}
	}
	if active != len(a.active) || due != len(a.due) {
		t.Fatalf("active %d of %d, due %d of %d", active, len(a.active), due, len(a.due))
	}
	for i := 1; i < len(a.due); i++ {
		if a.due[i].key.Before(a.due[(i-1)/2].key) {
			t.Fatalf("heap order broken at %d", i)
		}
	}
}
