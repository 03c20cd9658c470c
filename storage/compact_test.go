// compact_test.go: the log cleaner's storage core (compact.go,
// compact_offsetmap.go). Table tests of the offset map and of cleanings:
// the newest value of each key kept at its original offset, tombstones
// kept within delete.retention.ms and dropped after it, an idempotent
// producer's fully cleaned last batch kept empty so its sequence survives
// a reopen, codecs kept, small segments merged, a map too small for the
// whole dirty part cleaning a prefix; and a property test over random
// histories of keys, values and tombstones.

package storage

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/actorlog/actorlog/storage/record"
)

// cmpT0 is the timestamp of the first record the tests write.
const cmpT0 = int64(1_700_000_000_000)

// cmpRetention is the delete.retention.ms of the tests.
const cmpRetention = time.Hour

// cmpRec is one record to append: a nil val is a tombstone.
type cmpRec struct {
	key string
	val []byte
	ts  int64
}

func cmpVal(s string) []byte { return []byte(s) }

func cmpConfig(segBytes int64) Config {
	return Config{SegmentBytes: segBytes, IndexIntervalBytes: 128, Logger: quietLogger(), FileIdleTimeout: -1}
}

// cmpAppend appends recs as one batch with codec c (idempotent when pid
// >= 0) and returns the batch's base offset.
func cmpAppend(t *testing.T, l *Log, c record.Compression, pid int64, seq int32, recs []cmpRec) int64 {
	t.Helper()
	rs := make([]record.Record, len(recs))
	for i, r := range recs {
		rs[i] = record.Record{Key: []byte(r.key), Value: r.val, Timestamp: r.ts}
	}
	var batch []byte
	if pid >= 0 {
		batch = idempotentBatch(t, c, pid, 0, seq, rs)
	} else {
		batch = buildBatch(t, c, rs)
	}
	info, err := l.Append(batch, 1)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	return info.FirstOffset
}

// cmpRead opens the log in dir and returns its records and batch headers
// in offset order, checking that offsets strictly increase.
func cmpRead(t *testing.T, dir string, cfg Config) ([]record.Record, []record.Header) {
	t.Helper()
	l, err := Open(dir, cfg)
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	return cmpReadLog(t, l)
}

func cmpReadLog(t *testing.T, l *Log) ([]record.Record, []record.Header) {
	t.Helper()
	var recs []record.Record
	var hs []record.Header
	last := int64(-1)
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		res, err := l.Read(off, 1<<20, -1)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		if len(res.Records) == 0 {
			t.Fatalf("read at %d returned nothing below the log end %d", off, l.LogEndOffset())
		}
		sc := record.Batches(res.Records)
		for sc.Next() {
			h := sc.Header()
			if h.BaseOffset <= last {
				t.Fatalf("batch at %d after offset %d", h.BaseOffset, last)
			}
			rs, err := record.Records(sc.Batch(), 64<<20)
			if err != nil {
				t.Fatalf("decode batch at %d: %v", h.BaseOffset, err)
			}
			for _, r := range rs {
				if r.Offset <= last {
					t.Fatalf("record at %d after offset %d", r.Offset, last)
				}
				last = r.Offset
				recs = append(recs, record.Record{Key: bytes.Clone(r.Key), Value: cloneNullable(r.Value), Timestamp: r.Timestamp, Offset: r.Offset})
			}
			last = max(last, h.LastOffset())
			hs = append(hs, h)
			off = h.NextOffset()
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("scan at %d: %v", off, err)
		}
	}
	return recs, hs
}

func cloneNullable(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// cmpLatest is the latest-value map of recs: tombstones delete.
func cmpLatest(recs []record.Record) map[string]string {
	m := map[string]string{}
	for _, r := range recs {
		if r.Value == nil {
			delete(m, string(r.Key))
		} else {
			m[string(r.Key)] = string(r.Value)
		}
	}
	return m
}

func cmpSameMap(t *testing.T, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("latest-value map has %d keys, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("key %q: got %q, want %q", k, got[k], v)
		}
	}
}

// cmpRecsString renders records as "offset:key=value" lines (value "<nil>"
// for a tombstone), for comparisons.
func cmpRecsString(recs []record.Record) string {
	var sb strings.Builder
	for _, r := range recs {
		v := "<nil>"
		if r.Value != nil {
			v = string(r.Value)
		}
		fmt.Fprintf(&sb, "%d:%s=%s\n", r.Offset, r.Key, v)
	}
	return sb.String()
}

func cmpOpts(now int64) CompactOptions {
	return CompactOptions{Logger: quietLogger(), SegmentBytes: 4096, IndexIntervalBytes: 128, DeleteRetention: cmpRetention, Now: time.UnixMilli(now)}
}

func TestOffsetMap(t *testing.T) {
	if _, err := NewOffsetMap(offsetMapSlotBytes); err == nil {
		t.Fatal("a budget of one slot was accepted")
	}
	m, err := NewOffsetMap(10 * offsetMapSlotBytes) // 10 slots, 9 entries
	if err != nil {
		t.Fatal(err)
	}
	if m.Free() != 9 || m.LatestOffset() != -1 {
		t.Fatalf("empty map: free %d latest %d", m.Free(), m.LatestOffset())
	}
	steps := []struct {
		key  string
		off  int64
		ok   bool
		want int64 // Get after the put
	}{
		{"a", 5, true, 5},
		{"a", 3, true, 5}, // an older offset never wins
		{"a", 9, true, 9},
		{"", 0, true, 0}, // an empty key is a key
		{"b", 1, true, 1},
	}
	for i, s := range steps {
		if ok := m.Put([]byte(s.key), s.off); ok != s.ok {
			t.Fatalf("step %d: put %q = %v", i, s.key, ok)
		}
		if got, ok := m.Get([]byte(s.key)); !ok || got != s.want {
			t.Fatalf("step %d: get %q = %d, %v; want %d", i, s.key, got, ok, s.want)
		}
	}
	if m.Len() != 3 || m.LatestOffset() != 9 {
		t.Fatalf("len %d latest %d, want 3 and 9", m.Len(), m.LatestOffset())
	}
	for i := 0; i < 6; i++ {
		if !m.Put([]byte(fmt.Sprintf("k%d", i)), int64(10+i)) {
			t.Fatalf("put k%d refused with %d free", i, m.Free())
		}
	}
	if !m.Full() || m.Put([]byte("new"), 100) {
		t.Fatal("a full map took a new key")
	}
	if !m.Put([]byte("a"), 200) { // an existing key still updates
		t.Fatal("a full map refused an existing key")
	}
	if _, ok := m.Get([]byte("new")); ok {
		t.Fatal("refused key is in the map")
	}
	if got, _ := m.Get([]byte("a")); got != 200 {
		t.Fatalf("a = %d after update, want 200", got)
	}
	m.Clear()
	if m.Len() != 0 || m.Full() {
		t.Fatal("Clear left entries")
	}
	if _, ok := m.Get([]byte("a")); ok {
		t.Fatal("Clear left a")
	}
}

// TestOffsetMapGrows fills a map past its first tables: every key keeps
// its newest offset through each doubling, the budget's capacity still
// bounds it, and Clear empties the grown table.
func TestOffsetMapGrows(t *testing.T) {
	const slots = 5*offsetMapInitialSlots + 123 // not a doubling of the first table
	m, err := NewOffsetMap(slots * offsetMapSlotBytes)
	if err != nil {
		t.Fatal(err)
	}
	if m.size != offsetMapInitialSlots {
		t.Fatalf("first table of %d slots, want %d", m.size, offsetMapInitialSlots)
	}
	key := func(i int) []byte { return []byte(fmt.Sprintf("key-%d", i)) }
	n := m.Free()
	for round := range 2 {
		for i := range n {
			if !m.Put(key(i), int64(2*i+round)) {
				t.Fatalf("round %d: key %d refused with %d free", round, i, m.Free())
			}
		}
		if m.Len() != n || !m.Full() || m.Put([]byte("one more"), 1) {
			t.Fatalf("round %d: len %d, full %v", round, m.Len(), m.Full())
		}
		if m.size != slots {
			t.Fatalf("round %d: table of %d slots in use when full, want all %d", round, m.size, slots)
		}
		for i := range n {
			if got, ok := m.Get(key(i)); !ok || got != int64(2*i+round) {
				t.Fatalf("round %d: key %d = %d, %v; want %d", round, i, got, ok, 2*i+round)
			}
		}
		m.Clear()
		if m.Len() != 0 || m.LatestOffset() != -1 {
			t.Fatalf("round %d: Clear left len %d", round, m.Len())
		}
		for i, s := range m.slots {
			if s.off != 0 {
				t.Fatalf("round %d: slot %d used after Clear", round, i)
			}
		}
	}
}

// TestCompactTable runs cleanings of small hand-written histories.
func TestCompactTable(t *testing.T) {
	type batch struct {
		codec record.Compression
		recs  []cmpRec
		roll  bool // roll after it
	}
	ts := func(i int64) int64 { return cmpT0 + i }
	cases := []struct {
		name    string
		batches []batch
		now     int64
		want    string // records after cleaning, as cmpRecsString
	}{
		{
			name: "newest value per key, offsets kept",
			batches: []batch{
				{record.CompressionNone, []cmpRec{{"a", cmpVal("a1"), ts(0)}, {"b", cmpVal("b1"), ts(1)}, {"c", cmpVal("c1"), ts(2)}}, true},
				{record.CompressionNone, []cmpRec{{"a", cmpVal("a2"), ts(3)}, {"b", cmpVal("b2"), ts(4)}}, true},
				{record.CompressionNone, []cmpRec{{"a", cmpVal("a3"), ts(5)}}, true},
			},
			now:  ts(10),
			want: "2:c=c1\n4:b=b2\n5:a=a3\n",
		},
		{
			name: "tombstone within delete.retention.ms kept",
			batches: []batch{
				{record.CompressionNone, []cmpRec{{"a", cmpVal("a1"), ts(0)}, {"b", cmpVal("b1"), ts(1)}}, true},
				{record.CompressionNone, []cmpRec{{"a", nil, ts(2)}}, true},
			},
			now:  ts(2) + cmpRetention.Milliseconds() - 1,
			want: "1:b=b1\n2:a=<nil>\n",
		},
		{
			name: "tombstone past delete.retention.ms dropped",
			batches: []batch{
				{record.CompressionNone, []cmpRec{{"a", cmpVal("a1"), ts(0)}, {"b", cmpVal("b1"), ts(1)}}, true},
				{record.CompressionNone, []cmpRec{{"a", nil, ts(2)}}, true},
			},
			now:  ts(2) + cmpRetention.Milliseconds() + 1,
			want: "1:b=b1\n",
		},
		{
			name: "superseded tombstone dropped at once",
			batches: []batch{
				{record.CompressionNone, []cmpRec{{"a", nil, ts(0)}}, true},
				{record.CompressionNone, []cmpRec{{"a", cmpVal("a2"), ts(1)}}, true},
			},
			now:  ts(1),
			want: "1:a=a2\n",
		},
		{
			name: "the active segment is not cleaned",
			batches: []batch{
				{record.CompressionNone, []cmpRec{{"a", cmpVal("a1"), ts(0)}}, true},
				{record.CompressionNone, []cmpRec{{"a", cmpVal("a2"), ts(1)}, {"a", cmpVal("a3"), ts(2)}}, false},
			},
			now:  ts(3),
			want: "0:a=a1\n1:a=a2\n2:a=a3\n",
		},
	}
	for _, codec := range []record.Compression{record.CompressionGzip, record.CompressionSnappy, record.CompressionLZ4, record.CompressionZstd} {
		cases = append(cases, struct {
			name    string
			batches []batch
			now     int64
			want    string
		}{
			name: "codec " + codec.String(),
			batches: []batch{
				{codec, []cmpRec{{"a", cmpVal("a1"), ts(0)}, {"b", cmpVal("b1"), ts(1)}, {"c", cmpVal("c1"), ts(2)}, {"d", cmpVal("d1"), ts(3)}}, false},
				{record.CompressionNone, []cmpRec{{"b", cmpVal("b2"), ts(4)}, {"d", cmpVal("d2"), ts(5)}}, true},
			},
			now:  ts(6),
			want: "0:a=a1\n2:c=c1\n4:b=b2\n5:d=d2\n",
		})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := cmpConfig(1 << 20)
			l := openLog(t, dir, cfg)
			codecAt := map[int64]record.Compression{}
			for _, b := range tc.batches {
				codecAt[cmpAppend(t, l, b.codec, -1, 0, b.recs)] = b.codec
				if b.roll {
					if err := l.Roll(); err != nil {
						t.Fatal(err)
					}
				}
			}
			leo := l.LogEndOffset()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			before, _ := cmpRead(t, dir, cfg)
			if _, err := CompactDir(dir, cmpOpts(tc.now)); err != nil {
				t.Fatalf("compact: %v", err)
			}
			got, hs := cmpRead(t, dir, cfg)
			if s := cmpRecsString(got); s != tc.want {
				t.Fatalf("after cleaning:\n%s\nwant:\n%s", s, tc.want)
			}
			cmpSameMap(t, cmpLatest(got), cmpLatest(before))
			for _, h := range hs {
				if c, ok := codecAt[h.BaseOffset]; !ok || h.Compression() != c {
					t.Fatalf("batch at %d has codec %v, written with %v (known %v)", h.BaseOffset, h.Compression(), c, ok)
				}
			}
			l2 := openLog(t, dir, cfg)
			if l2.LogEndOffset() != leo || l2.LogStartOffset() != 0 {
				t.Fatalf("log [%d, %d) after cleaning, want [0, %d)", l2.LogStartOffset(), l2.LogEndOffset(), leo)
			}
			if _, err := l2.Append(buildBatch(t, record.CompressionNone, []record.Record{{Key: []byte("z"), Value: []byte("z"), Timestamp: ts(99)}}), 1); err != nil {
				t.Fatalf("append after cleaning: %v", err)
			}
		})
	}
}

// TestCompactEmptyBatchKeepsProducerState: an idempotent producer's last
// batch, all of whose records are superseded, stays as an empty batch with
// its producer fields, so after a reopen a retry of it is still a
// duplicate and the next sequence is accepted; its earlier fully cleaned
// batches go.
func TestCompactEmptyBatchKeepsProducerState(t *testing.T) {
	dir := t.TempDir()
	cfg := cmpConfig(1 << 20)
	l := openLog(t, dir, cfg)
	const pid = 7
	first := cmpAppend(t, l, record.CompressionZstd, pid, 0, []cmpRec{{"x", cmpVal("x1"), cmpT0}, {"y", cmpVal("y1"), cmpT0 + 1}})
	lastRecs := []cmpRec{{"x", cmpVal("x2"), cmpT0 + 2}, {"y", cmpVal("y2"), cmpT0 + 3}, {"x", cmpVal("x3"), cmpT0 + 4}}
	last := cmpAppend(t, l, record.CompressionZstd, pid, 2, lastRecs)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	cmpAppend(t, l, record.CompressionNone, -1, 0, []cmpRec{{"x", cmpVal("x4"), cmpT0 + 5}, {"y", cmpVal("y4"), cmpT0 + 6}})
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := CompactDir(dir, cmpOpts(cmpT0+10))
	if err != nil {
		t.Fatal(err)
	}
	if st.EmptyBatches != 1 {
		t.Fatalf("%d empty batches kept, want 1", st.EmptyBatches)
	}
	recs, hs := cmpRead(t, dir, cfg)
	if s := cmpRecsString(recs); s != "5:x=x4\n6:y=y4\n" {
		t.Fatalf("records after cleaning:\n%s", s)
	}
	var empty *record.Header
	for i := range hs {
		if hs[i].BaseOffset == first {
			t.Fatal("the producer's earlier, fully cleaned batch was kept")
		}
		if hs[i].BaseOffset == last {
			empty = &hs[i]
		}
	}
	if empty == nil {
		t.Fatal("the producer's last batch is gone")
	}
	if empty.RecordCount != 0 || empty.ProducerID != pid || empty.ProducerEpoch != 0 || empty.BaseSequence != 2 || empty.LastOffsetDelta != 2 {
		t.Fatalf("empty batch header %+v", *empty)
	}
	// A fresh producer state (no snapshot) must come from the log.
	snaps, err := listSnapshots(OSFS{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range snaps {
		if err := os.Remove(filepath.Join(dir, fmt.Sprintf("%020d.snapshot", off))); err != nil {
			t.Fatal(err)
		}
	}
	l2 := openLog(t, dir, cfg)
	pe, ok := l2.ProducerState(pid)
	if !ok || len(pe.Batches) == 0 || pe.Batches[len(pe.Batches)-1].LastSeq != 4 {
		t.Fatalf("producer state after cleaning and reopen: %+v %v", pe, ok)
	}
	rs := make([]record.Record, len(lastRecs))
	for i, r := range lastRecs {
		rs[i] = record.Record{Key: []byte(r.key), Value: r.val, Timestamp: r.ts}
	}
	info, err := l2.Append(idempotentBatch(t, record.CompressionZstd, pid, 0, 2, rs), 1)
	if err != nil || !info.Duplicate || info.FirstOffset != last {
		t.Fatalf("retry of the cleaned last batch: %+v, %v; want a duplicate at %d", info, err, last)
	}
	if _, err := l2.Append(idempotentBatch(t, record.CompressionNone, pid, 0, 5, rs[:1]), 1); err != nil {
		t.Fatalf("next sequence after cleaning: %v", err)
	}
}

// TestCompactMergesSmallSegments: many small segments clean into fewer,
// none beyond segment.bytes, and a second cleaning changes nothing.
func TestCompactMergesSmallSegments(t *testing.T) {
	dir := t.TempDir()
	cfg := cmpConfig(1 << 20)
	l := openLog(t, dir, cfg)
	for i := 0; i < 40; i++ {
		cmpAppend(t, l, record.CompressionNone, -1, 0, []cmpRec{{fmt.Sprintf("k%d", i%5), cmpVal(fmt.Sprintf("v%d", i)), cmpT0 + int64(i)}})
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
	}
	if l.NumSegments() != 41 {
		t.Fatalf("%d segments, want 41", l.NumSegments())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	before, _ := cmpRead(t, dir, cfg)
	opts := cmpOpts(cmpT0 + 100)
	opts.SegmentBytes = 1000
	st, err := CompactDir(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	// The last closed segment holds only newest records: left as it is.
	if st.SegmentsIn != 39 || st.Groups >= 39 || st.EndOffset != 40 {
		t.Fatalf("stats %+v", st)
	}
	segs, err := listSegmentFiles(OSFS{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) != st.Groups+2 {
		t.Fatalf("%d segments on disk, want %d groups + 2", len(segs), st.Groups)
	}
	for _, s := range segs {
		if s.size > opts.SegmentBytes {
			t.Fatalf("segment %d has %d bytes, above %d", s.base, s.size, opts.SegmentBytes)
		}
	}
	got, _ := cmpRead(t, dir, cfg)
	if s := cmpRecsString(got); s != "35:k0=v35\n36:k1=v36\n37:k2=v37\n38:k3=v38\n39:k4=v39\n" {
		t.Fatalf("after cleaning:\n%s", s)
	}
	cmpSameMap(t, cmpLatest(got), cmpLatest(before))
	opts.FirstDirty = st.EndOffset
	st2, err := CompactDir(dir, opts)
	if err != nil || st2.Groups != 0 {
		t.Fatalf("second cleaning: %+v, %v", st2, err)
	}
}

// TestCompactSmallMapCleansPrefix: with an offset map too small for the
// dirty part, a cleaning covers a prefix; repeated cleanings from each
// one's end offset reach what one cleaning with a large map gives.
func TestCompactSmallMapCleansPrefix(t *testing.T) {
	build := func(dir string) {
		l := openLog(t, dir, cmpConfig(1<<20))
		for i := 0; i < 30; i++ {
			cmpAppend(t, l, record.CompressionLZ4, -1, 0, []cmpRec{
				{fmt.Sprintf("k%d", i%12), cmpVal(fmt.Sprintf("v%d", i)), cmpT0 + int64(i)},
				{fmt.Sprintf("k%d", (i*7)%12), cmpVal(fmt.Sprintf("w%d", i)), cmpT0 + int64(i)},
			})
			if i%3 == 2 {
				if err := l.Roll(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	big, small := t.TempDir(), t.TempDir()
	build(big)
	build(small)
	if _, err := CompactDir(big, cmpOpts(cmpT0+100)); err != nil {
		t.Fatal(err)
	}
	opts := cmpOpts(cmpT0 + 100)
	opts.DedupeBufferBytes = 7 * offsetMapSlotBytes // 6 keys
	rounds := 0
	for {
		st, err := CompactDir(small, opts)
		if err != nil {
			t.Fatal(err)
		}
		if st.EndOffset <= opts.FirstDirty {
			break
		}
		opts.FirstDirty = st.EndOffset
		rounds++
		if rounds > 40 {
			t.Fatal("cleaning does not converge")
		}
	}
	if rounds < 2 {
		t.Fatalf("%d rounds; a small map should need several", rounds)
	}
	// The last closed segment's records are dirty for every round but the
	// last, so the prefix rounds leave the same latest values; compare
	// after one final full cleaning.
	opts.FirstDirty, opts.DedupeBufferBytes = 0, 0
	if _, err := CompactDir(small, opts); err != nil {
		t.Fatal(err)
	}
	wantRecs, _ := cmpRead(t, big, cmpConfig(1<<20))
	gotRecs, _ := cmpRead(t, small, cmpConfig(1<<20))
	if a, b := cmpRecsString(gotRecs), cmpRecsString(wantRecs); a != b {
		t.Fatalf("prefix cleanings gave\n%s\nwant\n%s", a, b)
	}
}

// cmpHistory is a random produce history and what cleaning must leave.
type cmpHistory struct {
	batches  [][]cmpRec
	codecs   []record.Compression
	rolls    []bool
	now      int64
	expected []record.Record // newest record per key, minus tombstones past the horizon, in offset order
}

func cmpRandomHistory(seed uint64) cmpHistory {
	r := rand.New(rand.NewPCG(seed, seed*31+7))
	codecs := []record.Compression{record.CompressionNone, record.CompressionGzip, record.CompressionSnappy, record.CompressionLZ4, record.CompressionZstd}
	nKeys := 3 + r.IntN(20)
	var h cmpHistory
	ts := cmpT0
	type newest struct {
		rec     record.Record
		batchTS int64
	}
	last := map[string]newest{}
	var batchMax []int64
	off := int64(0)
	for b, n := 0, 5+r.IntN(40); b < n; b++ {
		var recs []cmpRec
		maxTS := int64(-1)
		for i, m := 0, 1+r.IntN(6); i < m; i++ {
			ts += int64(r.IntN(3)) * 60_000 // minutes apart: some tombstones age past the hour
			key := fmt.Sprintf("key-%d", r.IntN(nKeys))
			var val []byte
			if r.IntN(5) > 0 {
				val = []byte(fmt.Sprintf("v-%d-%d-%s", b, i, strings.Repeat("x", r.IntN(40))))
			}
			recs = append(recs, cmpRec{key, val, ts})
			maxTS = max(maxTS, ts)
		}
		for _, rc := range recs {
			last[rc.key] = newest{record.Record{Key: []byte(rc.key), Value: rc.val, Offset: off}, -1}
			off++
		}
		batchMax = append(batchMax, maxTS)
		for _, rc := range recs {
			e := last[rc.key]
			if e.batchTS < 0 {
				e.batchTS = maxTS
				last[rc.key] = e
			}
		}
		h.batches = append(h.batches, recs)
		h.codecs = append(h.codecs, codecs[r.IntN(len(codecs))])
		h.rolls = append(h.rolls, r.IntN(3) == 0)
	}
	// The horizon falls inside the history, so tombstones on both sides.
	h.now = cmpT0 + (ts-cmpT0)/2 + cmpRetention.Milliseconds()
	horizon := h.now - cmpRetention.Milliseconds()
	for _, e := range last {
		if e.rec.Value == nil && e.batchTS < horizon {
			continue
		}
		h.expected = append(h.expected, e.rec)
	}
	sort.Slice(h.expected, func(i, j int) bool { return h.expected[i].Offset < h.expected[j].Offset })
	return h
}

// cmpWriteHistory writes h into a new log in dir; the log ends with a roll
// so every batch is in a closed segment.
func cmpWriteHistory(t *testing.T, dir string, h cmpHistory, cfg Config) {
	t.Helper()
	l, err := Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range h.batches {
		cmpAppend(t, l, h.codecs[i], -1, 0, b)
		if h.rolls[i] {
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCompactProperty: for random histories, reading the cleaned log gives
// exactly the newest record of each key, in offset order at its original
// offset, less the tombstones past delete.retention.ms.
func TestCompactProperty(t *testing.T) {
	for seed := uint64(1); seed <= 25; seed++ {
		h := cmpRandomHistory(seed)
		dir := t.TempDir()
		cfg := cmpConfig(int64(300 + seed*37))
		cmpWriteHistory(t, dir, h, cfg)
		before, _ := cmpRead(t, dir, cfg)
		opts := cmpOpts(h.now)
		opts.SegmentBytes = int64(200 + seed*53)
		if _, err := CompactDir(dir, opts); err != nil {
			t.Fatalf("seed %d: compact: %v", seed, err)
		}
		// The cleaned segments' indexes pass the loader's checks: no
		// warning (an index rebuild, a torn frame) on open.
		logger, hook := logtest.NewNullLogger()
		vcfg := cfg
		vcfg.Logger = logrus.NewEntry(logger)
		got, _ := cmpRead(t, dir, vcfg)
		for _, e := range hook.AllEntries() {
			if e.Level <= logrus.WarnLevel {
				t.Fatalf("seed %d: open after cleaning: %s %v", seed, e.Message, e.Data)
			}
		}
		if a, b := cmpRecsString(got), cmpRecsString(h.expected); a != b {
			t.Fatalf("seed %d: after cleaning\n%s\nwant\n%s", seed, a, b)
		}
		cmpSameMap(t, cmpLatest(got), cmpLatest(before))
	}
}
