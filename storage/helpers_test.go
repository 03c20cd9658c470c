// helpers_test.go: shared test helpers — config permutations, a fake clock,
// a fault-injecting file system, and batch builders/readers.

package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/storage/record"
)

// perm is one configuration every log test runs under.
type perm struct {
	name     string
	flush    FlushPolicy
	codec    record.Compression
	segBytes int64
}

// allPerms is every combination of flush policy, codec and segment size
// (tiny, so rolling happens; and the default).
func allPerms() []perm {
	flushes := []FlushPolicy{{Mode: FlushNever}, {Mode: FlushEveryBatch}, {Mode: FlushInterval, Interval: 5 * time.Millisecond}}
	codecs := []record.Compression{record.CompressionNone, record.CompressionGzip, record.CompressionSnappy, record.CompressionLZ4, record.CompressionZstd}
	sizes := []int64{4096, DefaultSegmentBytes}
	var ps []perm
	for _, f := range flushes {
		for _, c := range codecs {
			for _, s := range sizes {
				ps = append(ps, perm{name: fmt.Sprintf("flush=%s/codec=%s/seg=%d", f, c, s), flush: f, codec: c, segBytes: s})
			}
		}
	}
	return ps
}

// forAllPerms runs fn as a subtest under every permutation.
func forAllPerms(t *testing.T, fn func(t *testing.T, p perm)) {
	t.Helper()
	for _, p := range allPerms() {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			fn(t, p)
		})
	}
}

// fakeClock is a settable clock.
type fakeClock struct{ ms atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ms.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	return c
}
func (c *fakeClock) Now() time.Time          { return time.UnixMilli(c.ms.Load()) }
func (c *fakeClock) Advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }
func (c *fakeClock) Millis() int64           { return c.ms.Load() }

func quietLogger() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}

func (p perm) config() Config {
	return Config{SegmentBytes: p.segBytes, Flush: p.flush, IndexIntervalBytes: 256, Logger: quietLogger()}
}

func openLog(t *testing.T, dir string, cfg Config) *Log {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	l, err := Open(dir, cfg)
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	t.Cleanup(func() { _ = l.Close() }) // a test may have closed it already
	return l
}

// makeRecords returns n records with keys and values derived from seed and
// timestamps starting at ts.
func makeRecords(seed uint64, n int, ts int64) []record.Record {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	recs := make([]record.Record, n)
	for i := range recs {
		val := make([]byte, 20+r.IntN(120))
		for j := range val {
			val[j] = byte('a' + r.IntN(26))
		}
		recs[i] = record.Record{Key: []byte(fmt.Sprintf("key-%d-%d", seed, i)), Value: val, Timestamp: ts + int64(i)}
	}
	return recs
}

func buildBatch(t testing.TB, c record.Compression, recs []record.Record) []byte {
	t.Helper()
	b, err := record.BuildBatch(c, recs...)
	if err != nil {
		t.Fatalf("build batch: %v", err)
	}
	return b
}

// readAllRecords reads the whole log from its start in reads of maxBytes,
// checking that batches come back whole and in order, and decodes every
// record at or after from.
func readAllRecords(t *testing.T, l *Log, from int64, maxBytes int) []record.Record {
	t.Helper()
	var out []record.Record
	off := from
	for off < l.LogEndOffset() {
		res, err := l.Read(off, maxBytes, -1)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		if len(res.Records) == 0 {
			t.Fatalf("read at %d returned nothing below log end %d", off, l.LogEndOffset())
		}
		sc := record.Batches(res.Records)
		n := 0
		for sc.Next() {
			recs, err := record.Records(sc.Batch(), 64<<20)
			if err != nil {
				t.Fatalf("decode batch at %d: %v", off, err)
			}
			for _, r := range recs {
				if r.Offset >= off {
					out = append(out, r)
				}
			}
			h := sc.Header()
			off = h.NextOffset()
			n += h.Size()
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("scan batches at %d: %v", off, err)
		}
		if n != len(res.Records) {
			t.Fatalf("read returned %d bytes but only %d are whole batches", len(res.Records), n)
		}
	}
	return out
}

// checkRecords compares decoded records with what was appended.
func checkRecords(t *testing.T, got, want []record.Record, firstOffset int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Offset != firstOffset+int64(i) || !bytes.Equal(g.Key, w.Key) || !bytes.Equal(g.Value, w.Value) || g.Timestamp != w.Timestamp {
			t.Fatalf("record %d: got offset %d key %q ts %d, want offset %d key %q ts %d",
				i, g.Offset, g.Key, g.Timestamp, firstOffset+int64(i), w.Key, w.Timestamp)
		}
	}
}

// appendBatches appends nBatches batches of perBatch records and returns all
// records appended.
func appendBatches(t *testing.T, l *Log, c record.Compression, seed uint64, nBatches, perBatch int, ts int64) []record.Record {
	t.Helper()
	var all []record.Record
	for i := 0; i < nBatches; i++ {
		recs := makeRecords(seed+uint64(i), perBatch, ts+int64(i*perBatch))
		want := l.LogEndOffset()
		info, err := l.Append(buildBatch(t, c, recs), 1)
		if err != nil {
			t.Fatalf("append batch %d: %v", i, err)
		}
		if info.FirstOffset != want || info.LastOffset != want+int64(perBatch)-1 {
			t.Fatalf("append batch %d: offsets %d..%d, want %d..%d", i, info.FirstOffset, info.LastOffset, want, want+int64(perBatch)-1)
		}
		all = append(all, recs...)
	}
	return all
}

// replicateAll copies the leader's log from offset 0 to its end into the
// follower with AppendReplicated, in reads of about 3000 bytes.
func replicateAll(t *testing.T, leader, follower *Log) {
	t.Helper()
	for off := int64(0); off < leader.LogEndOffset(); {
		res, err := leader.Read(off, 3000, -1)
		if err != nil {
			t.Fatal(err)
		}
		info, err := follower.AppendReplicated(res.Records)
		if err != nil {
			t.Fatalf("replicate at %d: %v", off, err)
		}
		off = info.LastOffset + 1
	}
}

// faultFS wraps OSFS and fails operations on demand.
type faultFS struct {
	OSFS
	mu        sync.Mutex
	failWrite bool // WriteAt on .log files fails after writing half
	failIndex bool // WriteAt on .index and .timeindex files fails
	failSync  bool
	readGate  chan struct{} // when set, ReadAt on .log files waits for it to close
	reading   chan struct{} // signalled when a ReadAt starts waiting
	logWrites int           // WriteAt calls on .log files
}

var errInjected = errors.New("injected fault")

func (f *faultFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	file, err := f.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, name: name}, nil
}

func (f *faultFS) set(write, sync bool) {
	f.mu.Lock()
	f.failWrite, f.failSync = write, sync
	f.mu.Unlock()
}

type faultFile struct {
	File
	fs   *faultFS
	name string
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	isLog := len(f.name) > 4 && f.name[len(f.name)-4:] == ".log"
	fail := f.fs.failWrite && isLog
	if isLog {
		f.fs.logWrites++
	}
	ext := filepath.Ext(f.name)
	failIndex := f.fs.failIndex && (ext == indexSuffix || ext == timeIndexSuffix)
	f.fs.mu.Unlock()
	if failIndex {
		return 0, errInjected
	}
	if fail {
		n, _ := f.File.WriteAt(p[:len(p)/2], off) // a torn write: half lands
		return n, errInjected
	}
	return f.File.WriteAt(p, off)
}

func (f *faultFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	gate, reading := f.fs.readGate, f.fs.reading
	f.fs.mu.Unlock()
	if gate != nil && filepath.Ext(f.name) == ".log" {
		select {
		case reading <- struct{}{}:
		default:
		}
		<-gate
	}
	return f.File.ReadAt(p, off)
}

func (f *faultFile) Sync() error {
	f.fs.mu.Lock()
	fail := f.fs.failSync
	f.fs.mu.Unlock()
	if fail {
		return errInjected
	}
	return f.File.Sync()
}
