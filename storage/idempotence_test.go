// idempotence_test.go: the producer state inside the log, under every
// configuration permutation: retries answered with the original offsets and
// nothing written, out-of-order and fenced batches refused with the log
// unchanged, the state rebuilt on open from snapshots (also damaged or
// missing ones) and by replay, restored by truncation, tracked by followers,
// expired; and the high-watermark checkpoint.

package storage

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/actorlog/actorlog/storage/record"
)

// pbatch is one batch of an idempotent test producer. build makes the same
// bytes every time, so a retry can be rebuilt (Append stamps offsets into
// the slice it is given).
type pbatch struct {
	pid   int64
	epoch int16
	seq   int32
	n     int   // records
	ts    int64 // first record's timestamp; -1 for records without one
}

func (b pbatch) build(t testing.TB, c record.Compression) []byte {
	t.Helper()
	recs := makeRecords(uint64(b.pid)<<32|uint64(uint32(b.seq)), b.n, b.ts)
	if b.ts < 0 {
		for i := range recs {
			recs[i].Timestamp = -1
		}
	}
	return idempotentBatch(t, c, b.pid, b.epoch, b.seq, recs)
}

func idempotentBatch(t testing.TB, c record.Compression, pid int64, epoch int16, seq int32, recs []record.Record) []byte {
	t.Helper()
	bld := record.NewBuilder(record.BuilderOptions{Compression: c, Idempotent: true, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq})
	for _, r := range recs {
		bld.Append(r)
	}
	batch, err := bld.Build()
	if err != nil {
		t.Fatalf("build batch: %v", err)
	}
	return batch
}

// sentBatch is a batch and where the log put it.
type sentBatch struct {
	b    pbatch
	info AppendInfo
}

// produce appends rounds batches of 5 records for each producer in pids,
// round-robin, continuing each producer's sequence from next (updated), with
// a plain batch (no producer id) after every round. It returns what each
// producer sent, in order.
func produce(t *testing.T, l *Log, c record.Compression, pids []int64, next map[int64]int32, rounds int) map[int64][]sentBatch {
	t.Helper()
	sent := make(map[int64][]sentBatch)
	for r := 0; r < rounds; r++ {
		for _, pid := range pids {
			b := pbatch{pid: pid, seq: next[pid], n: 5, ts: 1_000_000 + l.LogEndOffset()}
			info := appendNew(t, l, c, b)
			next[pid] += int32(b.n)
			sent[pid] = append(sent[pid], sentBatch{b, info})
		}
		appendBatches(t, l, c, uint64(r), 1, 3, 0)
	}
	return sent
}

// appendNew appends b, which must be written (not a duplicate).
func appendNew(t *testing.T, l *Log, c record.Compression, b pbatch) AppendInfo {
	t.Helper()
	want := l.LogEndOffset()
	info, err := l.Append(b.build(t, c), 1)
	if err != nil {
		t.Fatalf("append %+v: %v", b, err)
	}
	if info.Duplicate || info.FirstOffset != want || info.LastOffset != want+int64(b.n)-1 {
		t.Fatalf("append %+v: %+v, want a new batch at %d", b, info, want)
	}
	return info
}

// checkDuplicate retries s and expects the original offsets back, with
// nothing written.
func checkDuplicate(t *testing.T, l *Log, c record.Compression, s sentBatch) {
	t.Helper()
	size, leo := l.Size(), l.LogEndOffset()
	info, err := l.Append(s.b.build(t, c), 1)
	if err != nil {
		t.Fatalf("retry of %+v: %v", s.b, err)
	}
	if !info.Duplicate || info.FirstOffset != s.info.FirstOffset || info.LastOffset != s.info.LastOffset ||
		info.MaxTimestamp != s.info.MaxTimestamp || info.Bytes != 0 {
		t.Fatalf("retry of %+v: %+v, want a duplicate of %+v", s.b, info, s.info)
	}
	if l.Size() != size || l.LogEndOffset() != leo {
		t.Fatalf("a duplicate changed the log: size %d->%d, end %d->%d", size, l.Size(), leo, l.LogEndOffset())
	}
}

// checkRefused appends b and expects wantErr, with the log and the
// producer's state unchanged.
func checkRefused(t *testing.T, l *Log, c record.Compression, b pbatch, wantErr error) {
	t.Helper()
	size, leo := l.Size(), l.LogEndOffset()
	before, _ := l.ProducerState(b.pid)
	if _, err := l.Append(b.build(t, c), 1); !errors.Is(err, wantErr) {
		t.Fatalf("append %+v: err %v, want %v", b, err, wantErr)
	}
	after, _ := l.ProducerState(b.pid)
	if l.Size() != size || l.LogEndOffset() != leo || !reflect.DeepEqual(before, after) {
		t.Fatalf("a refused batch changed the log: size %d->%d, end %d->%d, state %+v -> %+v", size, l.Size(), leo, l.LogEndOffset(), before, after)
	}
}

// producerStates returns the state of every producer in pids.
func producerStates(l *Log, pids []int64) map[int64]ProducerEntry {
	m := make(map[int64]ProducerEntry)
	for _, pid := range pids {
		if e, ok := l.ProducerState(pid); ok {
			m[pid] = e
		}
	}
	return m
}

func checkProducerStates(t *testing.T, l *Log, want map[int64]ProducerEntry) {
	t.Helper()
	var pids []int64
	for pid := range want {
		pids = append(pids, pid)
	}
	if got := producerStates(l, pids); !reflect.DeepEqual(got, want) || l.ProducerCount() != len(want) {
		t.Fatalf("producer state (%d producers)\n got %+v\nwant %+v", l.ProducerCount(), got, want)
	}
}

// snapshotOffsets lists the producer state snapshots in dir.
func snapshotOffsets(t *testing.T, dir string) []int64 {
	t.Helper()
	offs, err := listSnapshots(OSFS{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	return offs
}

func TestIdempotentAppend(t *testing.T) {
	forAllPerms(t, func(t *testing.T, p perm) {
		l := openLog(t, t.TempDir(), p.config())
		next := map[int64]int32{}
		sent := produce(t, l, p.codec, []int64{7, 8}, next, ProducerBatchesRetained+3)
		for _, pid := range []int64{7, 8} {
			// The last ProducerBatchesRetained batches are duplicates; older
			// ones are out of order.
			for _, s := range sent[pid][3:] {
				checkDuplicate(t, l, p.codec, s)
			}
			for _, s := range sent[pid][:3] {
				checkRefused(t, l, p.codec, s.b, ErrOutOfOrderSequence)
			}
			checkRefused(t, l, p.codec, pbatch{pid: pid, seq: next[pid] + 1, n: 5}, ErrOutOfOrderSequence)
		}
		if e, ok := l.ProducerState(7); !ok || e.Epoch != 0 || len(e.Batches) != ProducerBatchesRetained || e.LastOffset != sent[7][len(sent[7])-1].info.LastOffset {
			t.Fatalf("producer 7: %+v %v", e, ok)
		}
		// A new epoch starts at sequence 0 and fences the old one.
		checkRefused(t, l, p.codec, pbatch{pid: 7, epoch: 1, seq: next[7], n: 5}, ErrOutOfOrderSequence)
		bumped := sentBatch{b: pbatch{pid: 7, epoch: 1, n: 5, ts: 5}}
		bumped.info = appendNew(t, l, p.codec, bumped.b)
		checkRefused(t, l, p.codec, pbatch{pid: 7, seq: next[7], n: 5}, ErrInvalidProducerEpoch)
		checkRefused(t, l, p.codec, sent[7][len(sent[7])-1].b, ErrInvalidProducerEpoch)
		checkDuplicate(t, l, p.codec, bumped)
		if e, ok := l.ProducerState(7); !ok || e.Epoch != 1 || len(e.Batches) != 1 || e.Batches[0].FirstOffset != bumped.info.FirstOffset {
			t.Fatalf("producer 7 after the epoch bump: %+v %v", e, ok)
		}
		if l.ProducerCount() != 2 {
			t.Fatalf("%d producers, want 2", l.ProducerCount())
		}
		// Plain batches are never deduplicated.
		leo := l.LogEndOffset()
		appendBatches(t, l, p.codec, 1, 2, 3, 0)
		appendBatches(t, l, p.codec, 1, 2, 3, 0)
		if l.LogEndOffset() != leo+12 {
			t.Fatalf("plain batches: end %d, want %d", l.LogEndOffset(), leo+12)
		}
		if err := l.Err(); err != nil {
			t.Fatalf("refused batches made the log fail: %v", err)
		}
	})
}

func TestDuplicateUnderLogAppendTime(t *testing.T) {
	clock := newFakeClock()
	l := openLog(t, t.TempDir(), Config{LogAppendTime: true, Now: clock.Now})
	b := pbatch{pid: 1, n: 3, ts: 5}
	info := appendNew(t, l, record.CompressionNone, b)
	clock.Advance(time.Minute)
	dup, err := l.Append(b.build(t, record.CompressionNone), 1)
	if err != nil || !dup.Duplicate || dup.LogAppendTime != info.LogAppendTime || dup.MaxTimestamp != info.LogAppendTime {
		t.Fatalf("retry: %+v %v, want the original's append time %d", dup, err, info.LogAppendTime)
	}
}

func TestProducerStateSurvivesReopen(t *testing.T) {
	pids := []int64{1, 2, 3}
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir string, leo int64)
	}{
		{"clean close", func(t *testing.T, dir string, leo int64) {
			if offs := snapshotOffsets(t, dir); len(offs) == 0 || offs[len(offs)-1] != leo {
				t.Fatalf("snapshots %v, want the newest at the log end %d", offs, leo)
			}
		}},
		{"no snapshot of the latest segment", func(t *testing.T, dir string, leo int64) {
			mustRemove(t, segmentPath(dir, leo, snapshotSuffix))
		}},
		{"no snapshot at all", func(t *testing.T, dir string, _ int64) {
			for _, off := range snapshotOffsets(t, dir) {
				mustRemove(t, segmentPath(dir, off, snapshotSuffix))
			}
		}},
		{"corrupt newest snapshot", func(t *testing.T, dir string, leo int64) {
			garble(t, segmentPath(dir, leo, snapshotSuffix))
		}},
		{"newest snapshot cut short", func(t *testing.T, dir string, leo int64) {
			path := segmentPath(dir, leo, snapshotSuffix)
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, st.Size()-1); err != nil {
				t.Fatal(err)
			}
		}},
		{"every snapshot corrupt", func(t *testing.T, dir string, _ int64) {
			for _, off := range snapshotOffsets(t, dir) {
				garble(t, segmentPath(dir, off, snapshotSuffix))
			}
		}},
		{"snapshot above the log end", func(t *testing.T, dir string, leo int64) {
			// A valid (empty) state a crash left from a longer log: loading it
			// would lose every producer.
			data := newProducerState().encodeSnapshot(leo + 50)
			if err := os.WriteFile(segmentPath(dir, leo+50, snapshotSuffix), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forAllPerms(t, func(t *testing.T, p perm) {
				dir := t.TempDir()
				l := openLog(t, dir, p.config())
				next := map[int64]int32{}
				produce(t, l, p.codec, pids, next, 4)
				if err := l.Roll(); err != nil {
					t.Fatal(err)
				}
				sent := produce(t, l, p.codec, pids, next, 3)
				want, leo := producerStates(l, pids), l.LogEndOffset()
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				tc.damage(t, dir, leo)
				l = openLog(t, dir, p.config())
				checkProducerStates(t, l, want)
				for _, off := range snapshotOffsets(t, dir) {
					if _, err := l.readSnapshot(off); err != nil || off > leo {
						t.Fatalf("after open, snapshot %d is left (log end %d): %v", off, leo, err)
					}
				}
				for _, pid := range pids {
					checkDuplicate(t, l, p.codec, sent[pid][len(sent[pid])-1])
				}
				produce(t, l, p.codec, pids, next, 1)
			})
		})
	}
}

func TestTruncationRestoresProducerState(t *testing.T) {
	forAllPerms(t, func(t *testing.T, p perm) {
		dir := t.TempDir()
		pids := []int64{5, 6}
		l := openLog(t, dir, p.config())
		next := map[int64]int32{}
		sent := map[int64][]sentBatch{}
		// After round r, the log ends at ends[r] with producer state states[r].
		var ends []int64
		var states []map[int64]ProducerEntry
		for r := 0; r < 12; r++ {
			if r == 6 {
				if err := l.Roll(); err != nil {
					t.Fatal(err)
				}
			}
			for pid, ss := range produce(t, l, p.codec, pids, next, 1) {
				sent[pid] = append(sent[pid], ss...)
			}
			ends, states = append(ends, l.LogEndOffset()), append(states, producerStates(l, pids))
		}
		// Cutting off only the last round's plain batch changes no producer.
		// Then: each round starts with producer 5's batch, and cutting
		// inside it cuts at its start.
		for _, tc := range []struct {
			to, wantEnd int64
			want        map[int64]ProducerEntry
		}{
			{ends[11] - 2, ends[11] - 3, states[11]},
			{ends[9] + 2, ends[9], states[9]},
			{ends[5] + 2, ends[5], states[5]},
			{ends[3] + 2, ends[3], states[3]},
		} {
			end, err := l.TruncateTo(tc.to)
			if err != nil || end != tc.wantEnd {
				t.Fatalf("truncate to %d: end %d, %v; want %d", tc.to, end, err, tc.wantEnd)
			}
			checkProducerStates(t, l, tc.want)
			for _, off := range snapshotOffsets(t, dir) {
				if off > end {
					t.Fatalf("snapshot %d above the new end %d survived", off, end)
				}
			}
		}
		// Batches cut away are new again, and land where they were; the last
		// one kept is still a duplicate.
		checkDuplicate(t, l, p.codec, sent[5][3])
		if info := appendNew(t, l, p.codec, sent[5][4].b); info != sent[5][4].info {
			t.Fatalf("re-sent %+v: %+v, want %+v", sent[5][4].b, info, sent[5][4].info)
		}
		checkRefused(t, l, p.codec, sent[6][5].b, ErrOutOfOrderSequence)
		appendNew(t, l, p.codec, sent[6][4].b)
		restored := producerStates(l, pids)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = openLog(t, dir, p.config())
		checkProducerStates(t, l, restored)

		// Starting over forgets every producer: any sequence is accepted.
		if err := l.TruncateFullyAndStartAt(10_000); err != nil {
			t.Fatal(err)
		}
		checkProducerStates(t, l, map[int64]ProducerEntry{})
		if offs := snapshotOffsets(t, dir); len(offs) != 0 {
			t.Fatalf("snapshots %v left after a full truncation", offs)
		}
		appendNew(t, l, p.codec, pbatch{pid: 5, seq: 777, n: 5})
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = openLog(t, dir, p.config())
		if e, ok := l.ProducerState(5); !ok || l.ProducerCount() != 1 || e.LastOffset != 10_004 {
			t.Fatalf("after full truncation and reopen: %+v %v, %d producers", e, ok, l.ProducerCount())
		}
	})
}

func TestFollowerTracksProducers(t *testing.T) {
	forAllPerms(t, func(t *testing.T, p perm) {
		pids := []int64{11, 12}
		leader := openLog(t, t.TempDir(), Config{})
		dir := t.TempDir()
		follower := openLog(t, dir, p.config())
		next := map[int64]int32{}
		sent := produce(t, leader, p.codec, pids, next, ProducerBatchesRetained+5)
		replicateAll(t, leader, follower)
		want := producerStates(leader, pids)
		checkProducerStates(t, follower, want)
		if err := follower.Close(); err != nil {
			t.Fatal(err)
		}
		// The follower becomes leader: retries are recognised.
		follower = openLog(t, dir, p.config())
		checkProducerStates(t, follower, want)
		for _, pid := range pids {
			checkDuplicate(t, follower, p.codec, sent[pid][len(sent[pid])-1])
			checkRefused(t, follower, p.codec, sent[pid][0].b, ErrOutOfOrderSequence)
		}
		produce(t, follower, p.codec, pids, next, 1)
	})
}

func TestExpireProducers(t *testing.T) {
	clock := newFakeClock()
	cfg := Config{ProducerIDExpiration: time.Hour, Now: clock.Now, SegmentBytes: 4096}
	dir := t.TempDir()
	l := openLog(t, dir, cfg)
	appendNew(t, l, record.CompressionNone, pbatch{pid: 1, n: 1, ts: clock.Millis()})
	clock.Advance(40 * time.Minute)
	appendNew(t, l, record.CompressionNone, pbatch{pid: 2, n: 5, ts: clock.Millis()})
	appendNew(t, l, record.CompressionNone, pbatch{pid: 3, n: 5, ts: -1}) // no timestamp: the append time counts
	if e, _ := l.ProducerState(3); e.LastTimestamp != clock.Millis() {
		t.Fatalf("producer without timestamps: last timestamp %d, want the clock's %d", e.LastTimestamp, clock.Millis())
	}
	clock.Advance(20*time.Minute - time.Millisecond)
	if n := l.ExpireProducers(clock.Now()); n != 0 {
		t.Fatalf("expired %d producers before any was idle for an hour", n)
	}
	clock.Advance(time.Millisecond)
	if n := l.ExpireProducers(clock.Now()); n != 1 || l.ProducerCount() != 2 {
		t.Fatalf("expired %d, %d left; want 1 and 2", n, l.ProducerCount())
	}
	if _, ok := l.ProducerState(1); ok {
		t.Fatal("producer 1 is still known")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, cfg)
	if _, ok := l.ProducerState(1); ok || l.ProducerCount() != 2 {
		t.Fatalf("after reopen: producer 1 known %v, %d producers; want it still expired", ok, l.ProducerCount())
	}
	// An unknown producer's batch is accepted at any sequence.
	appendNew(t, l, record.CompressionNone, pbatch{pid: 1, seq: 1000, n: 5, ts: clock.Millis()})
}

func TestRetentionKeepsNewestSnapshot(t *testing.T) {
	forAllPerms(t, func(t *testing.T, p perm) {
		clock := newFakeClock()
		cfg := p.config()
		cfg.Now, cfg.Retention = clock.Now, time.Hour
		dir := t.TempDir()
		pids := []int64{1, 2}
		l := openLog(t, dir, cfg)
		next := map[int64]int32{}
		for i := 0; i < 3; i++ {
			produce(t, l, p.codec, pids, next, 2)
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
		}
		clock.Advance(2 * time.Hour) // the batches' timestamps are from 1970: all expired
		sent := produce(t, l, p.codec, pids, next, 1)
		want := producerStates(l, pids)
		if _, err := l.DeleteExpiredSegments(l.LogEndOffset() - 1); err != nil {
			t.Fatal(err)
		}
		offs := snapshotOffsets(t, dir)
		for i, off := range offs {
			if off < l.LogStartOffset() && i != len(offs)-1 {
				t.Fatalf("snapshots %v: %d is below the log start %d and not the newest", offs, off, l.LogStartOffset())
			}
		}
		if len(offs) == 0 {
			t.Fatal("retention deleted every snapshot")
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = openLog(t, dir, cfg)
		checkProducerStates(t, l, want)
		checkDuplicate(t, l, p.codec, sent[1][0])
	})
}

func TestDeleteSnapshotsBelow(t *testing.T) {
	tests := []struct {
		name  string
		have  []int64
		start int64
		want  []int64
	}{
		{"none", nil, 50, nil},
		{"all above", []int64{60, 70}, 50, []int64{60, 70}},
		{"below go, newest above stays", []int64{10, 20, 60}, 50, []int64{60}},
		{"all below: the newest stays", []int64{10, 20, 30}, 50, []int64{30}},
		{"one at the start stays", []int64{10, 50}, 50, []int64{50}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l := openLog(t, dir, Config{})
			for _, off := range tc.have {
				if err := os.WriteFile(segmentPath(dir, off, snapshotSuffix), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			l.mu.Lock()
			err := l.deleteSnapshotsBelowLocked(tc.start)
			l.mu.Unlock()
			if got := snapshotOffsets(t, dir); err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("left %v (%v), want %v", got, err, tc.want)
			}
		})
	}
}

func TestHighWatermarkCheckpoint(t *testing.T) {
	forAllPerms(t, func(t *testing.T, p perm) {
		dir := t.TempDir()
		l := openLog(t, dir, p.config())
		if hw := l.HighWatermarkCheckpoint(); hw != 0 {
			t.Fatalf("new log: high watermark %d, want 0", hw)
		}
		appendBatches(t, l, p.codec, 1, 10, 10, 0) // 0..99
		for _, bad := range []int64{-1, 101} {
			if err := l.WriteHighWatermark(bad); !errors.Is(err, ErrOffsetOutOfRange) {
				t.Fatalf("write high watermark %d: %v, want ErrOffsetOutOfRange", bad, err)
			}
		}
		for _, hw := range []int64{60, 100, 80} {
			if err := l.WriteHighWatermark(hw); err != nil {
				t.Fatal(err)
			}
		}
		reopen := func() {
			t.Helper()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = openLog(t, dir, p.config())
		}
		reopen()
		if hw := l.HighWatermarkCheckpoint(); hw != 80 {
			t.Fatalf("after reopen: high watermark %d, want 80", hw)
		}
		// Truncation below it lowers it, on disk too.
		if _, err := l.TruncateTo(40); err != nil {
			t.Fatal(err)
		}
		if hw := l.HighWatermarkCheckpoint(); hw != 40 {
			t.Fatalf("after truncation to 40: high watermark %d", hw)
		}
		appendBatches(t, l, p.codec, 2, 5, 10, 0) // 40..89
		reopen()
		if hw := l.HighWatermarkCheckpoint(); hw != 40 {
			t.Fatalf("after truncation and reopen: high watermark %d, want 40", hw)
		}
		// A log that lost its tail (or a file from elsewhere) is clamped.
		if err := writeOffsetCheckpoint(OSFS{}, dir, highWatermarkFile, 5000); err != nil {
			t.Fatal(err)
		}
		reopen()
		if hw := l.HighWatermarkCheckpoint(); hw != l.LogEndOffset() {
			t.Fatalf("checkpoint above the log end: %d, want the log end %d", hw, l.LogEndOffset())
		}
		// A damaged file is a warning and the log start.
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		garble(t, filepath.Join(dir, highWatermarkFile))
		logger, hook := logtest.NewNullLogger()
		cfg := p.config()
		cfg.Logger = logrus.NewEntry(logger)
		l = openLog(t, dir, cfg)
		if hw := l.HighWatermarkCheckpoint(); hw != 0 {
			t.Fatalf("corrupt checkpoint: high watermark %d, want the log start 0", hw)
		}
		warned := false
		for _, e := range hook.AllEntries() {
			err, _ := e.Data[logrus.ErrorKey].(error)
			warned = warned || (e.Level == logrus.WarnLevel && errors.Is(err, ErrCorruptCheckpoint))
		}
		if !warned {
			t.Fatal("no warning about the corrupt high-watermark checkpoint")
		}
		if err := l.WriteHighWatermark(50); err != nil {
			t.Fatal(err)
		}
		// Starting over moves it to the new start.
		if err := l.TruncateFullyAndStartAt(700); err != nil {
			t.Fatal(err)
		}
		reopen()
		if hw := l.HighWatermarkCheckpoint(); hw != 700 {
			t.Fatalf("after full truncation: high watermark %d, want 700", hw)
		}
	})
}
