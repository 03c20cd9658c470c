// producerstate_test.go: the pure producer state, table-tested without files
// or clocks: sequence and epoch checks, duplicates among the last
// ProducerBatchesRetained batches, sequence wrap-around, expiry, and the snapshot encoding (round
// trip, and every damage refused).

package storage

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"reflect"
	"testing"

	"github.com/actorlog/actorlog/storage/record"
)

func TestLastSequence(t *testing.T) {
	tests := []struct {
		base, delta, want int32
	}{
		{0, 0, 0},
		{5, 4, 9},
		{math.MaxInt32, 0, math.MaxInt32},
		{math.MaxInt32, 1, 0},
		{math.MaxInt32 - 1, 3, 1},
		{math.MaxInt32 - 4, 4, math.MaxInt32},
	}
	for _, tc := range tests {
		if got := lastSequence(tc.base, tc.delta); got != tc.want {
			t.Errorf("lastSequence(%d, %d) = %d, want %d", tc.base, tc.delta, got, tc.want)
		}
	}
}

// psStep is one batch offered to the producer state: checked as a leader
// append, and recorded at the next offsets if accepted.
type psStep struct {
	pid     int64
	epoch   int16
	seq     int32
	n       int32 // records
	control bool
	wantDup int64 // >= 0: a duplicate of the batch that starts at this offset
	wantErr error
}

// ok, dup and bad build steps of 5 records (one for control batches).
func ok(pid int64, epoch int16, seq int32) psStep {
	return psStep{pid: pid, epoch: epoch, seq: seq, n: 5, wantDup: -1}
}

func dup(pid int64, epoch int16, seq int32, first int64) psStep {
	return psStep{pid: pid, epoch: epoch, seq: seq, n: 5, wantDup: first}
}

func bad(pid int64, epoch int16, seq int32, err error) psStep {
	return psStep{pid: pid, epoch: epoch, seq: seq, n: 5, wantDup: -1, wantErr: err}
}

func (s psStep) header(base int64) record.Header {
	h := record.Header{BaseOffset: base, LastOffsetDelta: s.n - 1, RecordCount: s.n, MaxTimestamp: 1000 + base,
		ProducerID: s.pid, ProducerEpoch: s.epoch, BaseSequence: s.seq}
	if s.control {
		h.Attributes = 0x20 | 0x10 // control, transactional
		h.BaseSequence = -1
	}
	return h
}

func TestProducerStateCheck(t *testing.T) {
	tests := []struct {
		name  string
		steps []psStep
	}{
		{"unknown producer starts at any sequence", []psStep{ok(1, 0, 42), ok(1, 0, 47), ok(2, 3, 1000)}},
		{"in order, gaps and overlaps refused", []psStep{
			ok(1, 0, 0), ok(1, 0, 5),
			bad(1, 0, 11, ErrOutOfOrderSequence), // gap
			bad(1, 0, 9, ErrOutOfOrderSequence),  // overlaps, not a retry
			ok(1, 0, 10),
		}},
		{"retries of the last ProducerBatchesRetained batches are duplicates", func() []psStep {
			const r = ProducerBatchesRetained
			var steps []psStep
			for i := int32(0); i < r; i++ {
				steps = append(steps, ok(1, 0, i*5))
			}
			steps = append(steps, dup(1, 0, 0, 0), dup(1, 0, 10, 10), dup(1, 0, (r-1)*5, (r-1)*5),
				ok(1, 0, r*5),
				bad(1, 0, 0, ErrOutOfOrderSequence), // now r+1 batches back: forgotten
				dup(1, 0, 5, 5), dup(1, 0, r*5, r*5))
			return steps
		}()},
		{"producers are independent", []psStep{
			ok(1, 0, 0), ok(2, 0, 0), dup(1, 0, 0, 0), dup(2, 0, 0, 5), ok(2, 0, 5), ok(1, 0, 5),
		}},
		{"older epoch is fenced", []psStep{
			ok(1, 3, 0), ok(1, 3, 5),
			bad(1, 2, 10, ErrInvalidProducerEpoch),
			bad(1, 2, 5, ErrInvalidProducerEpoch), // even a retry
		}},
		{"newer epoch starts at sequence 0", []psStep{
			ok(1, 0, 0), ok(1, 0, 5),
			bad(1, 1, 10, ErrOutOfOrderSequence),
			ok(1, 1, 0),
			bad(1, 0, 5, ErrInvalidProducerEpoch), // the old epoch's batches are no longer duplicates
			dup(1, 1, 0, 10), ok(1, 1, 5),
		}},
		{"sequences wrap at MaxInt32", []psStep{
			ok(1, 0, math.MaxInt32-1), // sequences MaxInt32-1 .. 2
			ok(1, 0, 3),
			dup(1, 0, math.MaxInt32-1, 0),
		}},
		{"a batch ending exactly at MaxInt32 is followed by 0", []psStep{
			ok(1, 0, math.MaxInt32-4), bad(1, 0, math.MaxInt32, ErrOutOfOrderSequence), ok(1, 0, 0),
		}},
		{"no producer id: never checked or tracked", []psStep{
			ok(-1, -1, -1), ok(-1, -1, -1), ok(-1, 5, 77),
		}},
		{"producer id with a negative sequence or epoch is invalid", []psStep{
			bad(1, 0, -1, ErrInvalidBatch), bad(1, -1, 0, ErrInvalidBatch),
		}},
		{"control batch: epoch only", []psStep{
			ok(1, 0, 0),
			{pid: 1, epoch: 1, n: 1, control: true, wantDup: -1},
			bad(1, 0, 5, ErrInvalidProducerEpoch),
			bad(1, 1, 5, ErrOutOfOrderSequence), // same epoch, nothing retained: 0 comes next
			ok(1, 1, 0),
			{pid: 1, epoch: 0, n: 1, control: true, wantDup: -1, wantErr: ErrInvalidProducerEpoch},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := newProducerState()
			var next int64
			for i, st := range tc.steps {
				h := st.header(next)
				orig, isDup, err := ps.check(&h)
				switch {
				case st.wantErr != nil:
					if !errors.Is(err, st.wantErr) {
						t.Fatalf("step %d %+v: err %v, want %v", i, st, err, st.wantErr)
					}
					continue
				case err != nil:
					t.Fatalf("step %d %+v: unexpected error %v", i, st, err)
				case st.wantDup >= 0:
					if !isDup || orig.FirstOffset != st.wantDup || orig.LastOffset != st.wantDup+int64(st.n)-1 || orig.Timestamp != 1000+st.wantDup {
						t.Fatalf("step %d %+v: dup %v orig %+v, want the batch at %d", i, st, isDup, orig, st.wantDup)
					}
					continue
				case isDup:
					t.Fatalf("step %d %+v: reported a duplicate of %+v", i, st, orig)
				}
				ps.update(&h, h.MaxTimestamp)
				next = h.NextOffset()
			}
			for pid := range ps.producers {
				if pid < 0 {
					t.Fatalf("batches without a producer id were tracked")
				}
			}
		})
	}
}

func TestProducerStateUpdateKeepsTheRetainedBatches(t *testing.T) {
	ps := newProducerState()
	const total = ProducerBatchesRetained + 3
	for i := int32(0); i < total; i++ {
		h := ok(9, 2, i*5).header(int64(i) * 5)
		ps.update(&h, 7000+int64(i))
	}
	got, found := ps.get(9)
	if !found {
		t.Fatal("producer 9 not tracked")
	}
	want := ProducerEntry{ProducerID: 9, Epoch: 2, LastTimestamp: 7000 + total - 1, LastOffset: total*5 - 1}
	for i := int32(3); i < total; i++ {
		o := int64(i) * 5
		want.Batches = append(want.Batches, BatchMetadata{FirstSeq: i * 5, LastSeq: i*5 + 4, FirstOffset: o, LastOffset: o + 4, Timestamp: 1000 + o})
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("entry\n got %+v\nwant %+v", got, want)
	}
	// A replicated batch of an older epoch (the leader accepted it) is followed.
	h := ok(9, 1, 0).header(total * 5)
	ps.update(&h, 8000)
	if got, _ := ps.get(9); got.Epoch != 1 || len(got.Batches) != 1 || got.Batches[0].FirstOffset != total*5 {
		t.Fatalf("after an older epoch from the log: %+v", got)
	}
}

func TestProducerStateExpire(t *testing.T) {
	tests := []struct {
		name     string
		lastTS   map[int64]int64
		cutoff   int64
		wantLeft []int64
	}{
		{"none idle", map[int64]int64{1: 100, 2: 200}, 99, []int64{1, 2}},
		{"at the cutoff expires", map[int64]int64{1: 100, 2: 200}, 100, []int64{2}},
		{"all idle", map[int64]int64{1: 100, 2: 200}, 500, nil},
		{"empty", nil, 500, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := newProducerState()
			for pid, ts := range tc.lastTS {
				h := ok(pid, 0, 0).header(pid * 10)
				ps.update(&h, ts)
			}
			if n := ps.expire(tc.cutoff); n != len(tc.lastTS)-len(tc.wantLeft) {
				t.Fatalf("expired %d, want %d", n, len(tc.lastTS)-len(tc.wantLeft))
			}
			for _, pid := range tc.wantLeft {
				if _, found := ps.get(pid); !found {
					t.Fatalf("producer %d expired too early", pid)
				}
			}
			if len(ps.producers) != len(tc.wantLeft) {
				t.Fatalf("%d producers left, want %v", len(ps.producers), tc.wantLeft)
			}
		})
	}
}

// sampleProducerState has producers with 0, 1, 5 (after wrapping the ring)
// batches, a control batch and a wrapped sequence; it covers offsets below 200.
func sampleProducerState() *producerState {
	ps := newProducerState()
	var off int64
	add := func(st psStep) {
		h := st.header(off)
		ps.update(&h, h.MaxTimestamp)
		off = h.NextOffset()
	}
	add(ok(3, 0, 0))
	for i := int32(0); i < ProducerBatchesRetained+2; i++ { // its ring wraps
		add(ok(1, 4, i*5))
	}
	add(psStep{pid: 2, epoch: 1, n: 1, control: true})
	add(ok(math.MaxInt64, 0, math.MaxInt32-2))
	return ps
}

func TestProducerSnapshotRoundTrip(t *testing.T) {
	for _, ps := range []*producerState{newProducerState(), sampleProducerState()} {
		data := ps.encodeSnapshot(200)
		got, err := decodeSnapshot(data, 200)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if len(got.producers) != len(ps.producers) {
			t.Fatalf("decoded %d producers, want %d", len(got.producers), len(ps.producers))
		}
		for pid := range ps.producers {
			want, _ := ps.get(pid)
			if e, _ := got.get(pid); !reflect.DeepEqual(e, want) {
				t.Fatalf("producer %d\n got %+v\nwant %+v", pid, e, want)
			}
		}
		// Decoded state behaves as the original: the ring continues where it was.
		h := ok(1, 4, (ProducerBatchesRetained+2)*5).header(300)
		got.update(&h, 0)
		ps.update(&h, 0)
		a, _ := got.get(1)
		b, _ := ps.get(1)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("after one more batch\n got %+v\nwant %+v", a, b)
		}
	}
}

// TestProducerSnapshotVersion1IsRead: a snapshot written before the retained
// batches went from 5 to ProducerBatchesRetained (version 1, same layout) is
// still loaded, so an upgraded host need not replay its logs.
func TestProducerSnapshotVersion1IsRead(t *testing.T) {
	ps := newProducerState()
	var off int64
	for i := int32(0); i < 5; i++ {
		h := ok(1, 0, i*5).header(off)
		ps.update(&h, h.MaxTimestamp)
		off = h.NextOffset()
	}
	data := ps.encodeSnapshot(200)
	if binary.BigEndian.Uint16(data) != 2 {
		t.Fatalf("snapshot version %d, want 2", binary.BigEndian.Uint16(data))
	}
	binary.BigEndian.PutUint16(data, 1) // the CRC covers the bytes after it
	got, err := decodeSnapshot(data, 200)
	if err != nil {
		t.Fatalf("decode version 1: %v", err)
	}
	a, _ := got.get(1)
	b, _ := ps.get(1)
	if !reflect.DeepEqual(a, b) || len(a.Batches) != 5 {
		t.Fatalf("version 1 snapshot\n got %+v\nwant %+v", a, b)
	}
}

func TestProducerSnapshotDamageIsRefused(t *testing.T) {
	data := sampleProducerState().encodeSnapshot(200)
	// Every single flipped bit is caught (by the version, the CRC or the
	// offset check).
	for i := range data {
		for bit := 0; bit < 8; bit++ {
			d := append([]byte(nil), data...)
			d[i] ^= 1 << bit
			if _, err := decodeSnapshot(d, 200); !errors.Is(err, errCorruptSnapshot) {
				t.Fatalf("byte %d bit %d flipped: err %v", i, bit, err)
			}
		}
	}
	// Damage with a valid CRC is caught by the structure checks.
	clone := func() []byte { return append([]byte(nil), data...) }
	// edit returns a copy of data changed by fn, with its CRC recomputed.
	edit := func(fn func(d []byte) []byte) []byte {
		d := fn(clone())
		binary.BigEndian.PutUint32(d[2:], crc32.Checksum(d[6:], castagnoli))
		return d
	}
	tests := []struct {
		name   string
		data   []byte
		offset int64
	}{
		{"empty", nil, 200},
		{"header only, cut", data[:10], 200},
		{"cut mid-producer", edit(func(d []byte) []byte { return d[:len(d)-3] }), 200},
		{"trailing byte", edit(func(d []byte) []byte { return append(d, 0) }), 200},
		{"other offset than its name", data, 201},
		{"batches at or above its offset", edit(func(d []byte) []byte { binary.BigEndian.PutUint64(d[6:], 40); return d }), 40},
		{"producer count too large", edit(func(d []byte) []byte { d[14] = 0x7f; return d }), 200},
		{"more batches than retained", edit(func(d []byte) []byte {
			d[snapshotHeaderSize+snapshotProducerSize-1] = ProducerBatchesRetained + 1
			return d
		}), 200},
		{"version 3", func() []byte { d := clone(); d[1] = 3; return d }(), 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeSnapshot(tc.data, tc.offset); !errors.Is(err, errCorruptSnapshot) {
				t.Fatalf("err %v, want errCorruptSnapshot", err)
			}
		})
	}
}
