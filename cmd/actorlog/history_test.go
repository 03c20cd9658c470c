// history_test.go: a compact, bounded record of what a fault test's
// workload saw, for runs of hours. The workload's records carry a
// per-partition produce sequence number, and a healthy partition holds them
// at consecutive offsets in increasing order, so "offset o holds sequence s"
// is stored as runs (first offset, first sequence, length): memory grows
// with the number of irregularities (a failed record, a gap), not with the
// number of records. Acknowledgements (the producer reports each record's
// offset) and reads are both kept this way and compared, run by run, with
// the final log streamed from disk.

package main

import (
	"crypto/sha256"
	"fmt"
	"hash"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/actorlog/actorlog/storage"
	"github.com/actorlog/actorlog/storage/record"
)

// seqRun says offsets [off, off+n) hold sequences [seq, seq+n).
type seqRun struct {
	off int64
	seq int64
	n   int64
}

// offsetRuns maps offsets to sequence numbers as sorted, disjoint runs.
// Not safe for concurrent use.
type offsetRuns struct {
	runs []seqRun
}

// at returns the sequence recorded at off.
func (r *offsetRuns) at(off int64) (int64, bool) {
	i := sort.Search(len(r.runs), func(i int) bool { return r.runs[i].off+r.runs[i].n > off })
	if i == len(r.runs) || r.runs[i].off > off {
		return 0, false
	}
	return r.runs[i].seq + off - r.runs[i].off, true
}

// add records that off holds seq. It returns the sequence recorded there
// before and true when that differs (the pair is then not recorded).
func (r *offsetRuns) add(off, seq int64) (int64, bool) {
	if n := len(r.runs); n > 0 {
		last := &r.runs[n-1]
		if off == last.off+last.n {
			if seq == last.seq+last.n {
				last.n++ // the common case: the next offset holds the next sequence
			} else {
				r.runs = append(r.runs, seqRun{off: off, seq: seq, n: 1})
			}
			return 0, false
		}
		if off > last.off+last.n {
			r.runs = append(r.runs, seqRun{off: off, seq: seq, n: 1})
			return 0, false
		}
	}
	if old, ok := r.at(off); ok {
		return old, old != seq
	}
	// Below the end and not yet recorded: insert, merging with neighbours.
	i := sort.Search(len(r.runs), func(i int) bool { return r.runs[i].off > off })
	r.runs = append(r.runs, seqRun{})
	copy(r.runs[i+1:], r.runs[i:])
	r.runs[i] = seqRun{off: off, seq: seq, n: 1}
	if i+1 < len(r.runs) {
		if next := r.runs[i+1]; next.off == off+1 && next.seq == seq+1 {
			r.runs[i].n += next.n
			r.runs = append(r.runs[:i+1], r.runs[i+2:]...)
		}
	}
	if i > 0 {
		if prev := r.runs[i-1]; prev.off+prev.n == off && prev.seq+prev.n == seq {
			r.runs[i-1].n += r.runs[i].n
			r.runs = append(r.runs[:i], r.runs[i+1:]...)
		}
	}
	return 0, false
}

// count is how many offsets are recorded.
func (r *offsetRuns) count() int64 {
	var n int64
	for _, x := range r.runs {
		n += x.n
	}
	return n
}

// mismatches compares every offset recorded in r with log, reporting up to
// limit offsets where log holds another sequence or nothing, and how many
// such offsets there are in all.
func (r *offsetRuns) mismatches(log *offsetRuns, limit int) ([]string, int64) {
	var out []string
	var bad int64
	for _, x := range r.runs {
		for off := x.off; off < x.off+x.n; {
			i := sort.Search(len(log.runs), func(i int) bool { return log.runs[i].off+log.runs[i].n > off })
			if i == len(log.runs) || log.runs[i].off > off {
				// Nothing in the log from off up to the next log run.
				end := x.off + x.n
				if i < len(log.runs) && log.runs[i].off < end {
					end = log.runs[i].off
				}
				bad += end - off
				if len(out) < limit {
					out = append(out, fmt.Sprintf("offsets [%d, %d) (sequences from %d) are not in the log", off, end, x.seq+off-x.off))
				}
				off = end
				continue
			}
			l := log.runs[i]
			end := min(x.off+x.n, l.off+l.n)
			if want, got := x.seq+off-x.off, l.seq+off-l.off; want != got {
				bad += end - off
				if len(out) < limit {
					out = append(out, fmt.Sprintf("offsets [%d, %d): sequence %d expected at %d, the log holds %d", off, end, want, off, got))
				}
			}
			off = end
		}
	}
	return out, bad
}

// logScan is one partition's final log, streamed from a replica's
// directory: its offset-to-sequence runs, a digest of its bytes (to
// compare replicas) and what was wrong with its contents.
type logScan struct {
	runs     offsetRuns
	digest   []byte
	records  int64
	problems []string
}

// scanPartitionLog reads the log in dir batch by batch (never whole), for
// records valued value(part, seq) in increasing seq order.
func scanPartitionLog(t *testing.T, dir string, part int32) *logScan {
	t.Helper()
	l, err := storage.Open(dir, storage.Config{})
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			t.Errorf("close %s: %v", dir, err)
		}
	}()
	s := &logScan{}
	var h hash.Hash = sha256.New()
	prefix := strconv.Itoa(int(part)) + "-"
	last := int64(-1)
	var rec record.Record
	for off, end := l.LogStartOffset(), l.LogEndOffset(); off < end; {
		res, err := l.Read(off, 1<<20, end)
		if err != nil {
			t.Fatalf("read %s at %d: %v", dir, off, err)
		}
		next := off
		for sc := record.Batches(res.Records); sc.Next(); {
			h.Write(sc.Batch())
			br, err := record.NewBatchReader(sc.Batch(), 64<<20)
			if err != nil {
				t.Fatalf("%s: batch at %d: %v", dir, sc.Header().BaseOffset, err)
			}
			for br.Next(&rec) {
				s.records++
				v := string(rec.Value)
				seq, err := strconv.ParseInt(strings.TrimPrefix(v, prefix), 10, 64)
				if err != nil || !strings.HasPrefix(v, prefix) || value(part, int(seq)) != v {
					s.problem(fmt.Sprintf("offset %d: foreign value %q", rec.Offset, v))
					continue
				}
				if seq <= last {
					s.problem(fmt.Sprintf("offset %d: record %s after %s (twice, or out of produce order)", rec.Offset, v, value(part, int(last))))
				}
				last = max(last, seq)
				s.runs.add(rec.Offset, seq)
			}
			if err := br.Err(); err != nil {
				t.Fatalf("%s: batch at %d: %v", dir, sc.Header().BaseOffset, err)
			}
			next = sc.Header().NextOffset()
		}
		if next <= off {
			t.Fatalf("%s: no batch at %d below the log end %d", dir, off, end)
		}
		off = next
	}
	s.digest = h.Sum(nil)
	return s
}

func (s *logScan) problem(p string) {
	if len(s.problems) < 20 {
		s.problems = append(s.problems, p)
	} else if len(s.problems) == 20 {
		s.problems = append(s.problems, "(more problems not listed)")
	}
}

func TestOffsetRuns(t *testing.T) {
	var r offsetRuns
	for off := int64(0); off < 1000; off++ {
		r.add(off, off)
	}
	if len(r.runs) != 1 || r.count() != 1000 {
		t.Fatalf("consecutive pairs: %d runs, %d offsets; want 1, 1000", len(r.runs), r.count())
	}
	// A gap in the sequences (a failed record) starts a new run.
	r.add(1000, 1001)
	r.add(1001, 1002)
	if len(r.runs) != 2 {
		t.Fatalf("a sequence gap: %d runs, want 2", len(r.runs))
	}
	if s, ok := r.at(1001); !ok || s != 1002 {
		t.Fatalf("at(1001) = %d, %v; want 1002, true", s, ok)
	}
	if _, ok := r.at(5000); ok {
		t.Fatal("at(5000) found a sequence")
	}
	// Reading an offset again: the same sequence is fine, another is reported.
	if _, differs := r.add(10, 10); differs {
		t.Fatal("the same pair again reported as a change")
	}
	if old, differs := r.add(10, 11); !differs || old != 10 {
		t.Fatalf("a changed pair: old %d, differs %v; want 10, true", old, differs)
	}
	// Out-of-order arrivals merge back into one run.
	var o offsetRuns
	for _, off := range []int64{0, 1, 3, 4, 2} {
		o.add(off, off+100)
	}
	if len(o.runs) != 1 || o.count() != 5 {
		t.Fatalf("out-of-order pairs: runs %+v, want one run of 5", o.runs)
	}
	// Comparison with a log.
	var log offsetRuns
	for off := int64(0); off < 3; off++ {
		log.add(off, off+100)
	}
	log.add(3, 200)
	bad, n := o.mismatches(&log, 10)
	if n != 2 || len(bad) != 2 {
		t.Fatalf("mismatches = %v (%d), want offset 3 changed and 4 missing", bad, n)
	}
	if bad, n := log.mismatches(&log, 10); n != 0 {
		t.Fatalf("a log against itself: %v", bad)
	}
}
