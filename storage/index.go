// index.go: a segment's sparse offset index (.index) and time index
// (.timeindex), kept in memory while the segment is active and written to
// their files in Kafka's layout; a sealed segment's are read from the files:
//
//	.index      entries of 8 bytes: relative offset uint32, position uint32
//	.timeindex  entries of 12 bytes: timestamp int64, relative offset uint32
//
// An offset entry (o, p) says the batch whose base offset is base+o starts at
// byte p. A time entry (t, o) says every record at or below offset base+o has
// a timestamp <= t, so a record with timestamp > t lies after it. Entries are
// appended by the log's single writer; readers look them up under the read
// lock. Entries not yet written to the file are written on flush, roll and
// close; an index that does not survive a crash is rebuilt from the log.
// A segment's indexes are written whole when it is sealed (roll, load,
// cleaning), and its entries then leave the heap (segIndex.release). The
// active segment's leave it as they go: once spillIndexEntries are in
// memory the append path writes them out and keeps only later ones
// (segIndex.spill), so a 1 GiB active segment does not hold its ~5 MiB of
// entries on the heap until it rolls.

package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"sync/atomic"
)

const (
	offsetEntrySize = 8
	timeEntrySize   = 12
)

type offsetEntry struct {
	rel uint32 // offset - segment base
	pos uint32 // byte position of the batch in the .log file
}

type timeEntry struct {
	ts  int64
	rel uint32
}

// spillIndexEntries is how many entries (offset and time together) the
// active segment keeps in memory before the append path writes them to the
// files and drops them (about 10 MiB of log at the default index
// interval); a variable so that tests can spill small logs.
var spillIndexEntries = 5000

// segIndex holds both indexes of one segment.
//
// The active segment's latest entries live in memory (offsets, times);
// the first offBase offset and timeBase time entries, spilled, are in the
// files only (lookups below the first entry in memory search them). Once a
// sealed segment's entries are all written to its files, release drops
// them: lookups then binary-search the files (pread over their fixed-size
// entries), so the heap holds the entries of the active segments only, not
// ~5 MiB per GiB of retained log. Only truncation (reset, rebuild) brings a
// sealed segment's entries back to memory, when it becomes active again.
type segIndex struct {
	mu      sync.RWMutex // guards offsets, times and onDisk; the writer appends, readers look up
	offsets []offsetEntry
	times   []timeEntry
	// onDisk says the entries are only in the files: offsetsWritten and
	// timesWritten of them, which no longer change; lastRel is the last
	// offset entry's relative offset then (where a lookup guesses first).
	onDisk  bool
	lastRel uint32
	// offBase and timeBase count the entries spilled (in the files, no
	// longer in memory) while the segment is active: offsets[i] is entry
	// offBase+i. spilledRel is entry offBase-1's relative offset.
	offBase, timeBase int
	spilledRel        uint32

	// Owned by the writer (under Log.mu); set under mu when onDisk is.
	offsetsWritten int // entries already in the .index file
	timesWritten   int
	// spillAt is the number of entries in memory at which the writer
	// spills next (raised after a failed spill so that a failing disk is
	// not retried on every append).
	spillAt int

	// hint is where the last read of the sealed segment ended, so that a
	// consumer reading on needs no lookup in the files; nil while the
	// entries are in memory.
	hint atomic.Pointer[readHint]
}

// readHint says every batch before pos has a last offset < next: a read
// from offset next may start scanning at pos.
type readHint struct{ next, pos int64 }

// setHint remembers where a read of the segment ended, if its entries are
// on disk.
func (x *segIndex) setHint(next, pos int64) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.onDisk || x.offBase > 0 {
		if h := x.hint.Load(); h == nil || h.next != next || h.pos != pos {
			x.hint.Store(&readHint{next: next, pos: pos})
		}
	}
}

// hinted returns the position where the last read ended if it ended at
// offset, within end.
func (x *segIndex) hinted(offset, end int64) (int64, bool) {
	h := x.hint.Load()
	if h == nil || h.next != offset || h.pos > end {
		return 0, false
	}
	return h.pos, true
}

// memLookup returns the position of the last indexed batch whose base
// offset is <= rel, or 0, and ok; !ok when the answer is among the entries
// on disk: the first n in the file, the last of them at relative offset
// lastRel.
func (x *segIndex) memLookup(rel uint32) (pos uint32, n int, lastRel uint32, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.onDisk {
		return 0, x.offsetsWritten, x.lastRel, false
	}
	i := sort.Search(len(x.offsets), func(i int) bool { return x.offsets[i].rel > rel })
	if i == 0 {
		if x.offBase > 0 {
			return 0, x.offBase, x.spilledRel, false
		}
		return 0, 0, 0, true
	}
	return x.offsets[i-1].pos, 0, 0, true
}

// memLookupTime returns the relative offset of the last time entry whose
// timestamp is < ts, and whether there is one, and ok; !ok when the
// entries are on disk, and n their number.
func (x *segIndex) memLookupTime(ts int64) (rel uint32, found bool, n int, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.onDisk {
		return 0, false, x.timesWritten, false
	}
	i := sort.Search(len(x.times), func(i int) bool { return x.times[i].ts >= ts })
	if i == 0 {
		if x.timeBase > 0 {
			return 0, false, x.timeBase, false
		}
		return 0, false, 0, true
	}
	return x.times[i-1].rel, true, 0, true
}

// memLastTimeBefore returns the last time entry whose relative offset is
// < rel, and whether there is one, and ok; !ok when the entries are on
// disk, and n their number.
func (x *segIndex) memLastTimeBefore(rel uint32) (e timeEntry, found bool, n int, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.onDisk {
		return timeEntry{}, false, x.timesWritten, false
	}
	i := sort.Search(len(x.times), func(i int) bool { return x.times[i].rel >= rel })
	if i == 0 {
		if x.timeBase > 0 {
			return timeEntry{}, false, x.timeBase, false
		}
		return timeEntry{}, false, 0, true
	}
	return x.times[i-1], true, 0, true
}

// lookup returns the position of the last indexed batch whose base offset
// is <= rel, or 0. Caller holds s.fmu (for reading at least).
func (s *segment) lookup(rel uint32) (uint32, error) {
	pos, n, lastRel, ok := s.idx.memLookup(rel)
	if ok || n == 0 {
		return pos, nil
	}
	// Entries are about evenly spread over the offsets: the first read is
	// of the block where rel would be if they were.
	guess := n - 1
	if rel < lastRel {
		guess = int(uint64(n) * uint64(rel) / uint64(lastRel))
	}
	var e []byte
	err := s.readIndex(indexSuffix, func(f File) error {
		var err error
		_, e, err = searchEntries(f, n, offsetEntrySize, guess, func(b []byte) bool { return binary.BigEndian.Uint32(b) > rel })
		return err
	})
	if err != nil || e == nil {
		return 0, err
	}
	pos = binary.BigEndian.Uint32(e[4:])
	if int64(pos) >= s.size.Load() {
		return 0, fmt.Errorf("%w: segment %d: offset index entry points past the log (%d >= %d)", ErrCorruptLog, s.base, pos, s.size.Load())
	}
	return pos, nil
}

// lookupTime returns the relative offset of the last time entry whose
// timestamp is < ts, and whether there is one. Caller holds s.fmu.
func (s *segment) lookupTime(ts int64) (uint32, bool, error) {
	rel, found, n, ok := s.idx.memLookupTime(ts)
	if ok || n == 0 {
		return rel, found, nil
	}
	var e []byte
	err := s.readIndex(timeIndexSuffix, func(f File) error {
		var err error
		_, e, err = searchEntries(f, n, timeEntrySize, -1, func(b []byte) bool { return int64(binary.BigEndian.Uint64(b)) >= ts })
		return err
	})
	if err != nil || e == nil {
		return 0, false, err
	}
	return binary.BigEndian.Uint32(e[8:]), true, nil
}

// lastTimeBefore returns the last time entry whose relative offset is
// < rel, and whether there is one. Caller holds s.fmu.
func (s *segment) lastTimeBefore(rel uint32) (timeEntry, bool, error) {
	te, found, n, ok := s.idx.memLastTimeBefore(rel)
	if ok || n == 0 {
		return te, found, nil
	}
	var e []byte
	err := s.readIndex(timeIndexSuffix, func(f File) error {
		var err error
		_, e, err = searchEntries(f, n, timeEntrySize, -1, func(b []byte) bool { return binary.BigEndian.Uint32(b[8:]) >= rel })
		return err
	})
	if err != nil || e == nil {
		return timeEntry{}, false, err
	}
	return timeEntry{ts: int64(binary.BigEndian.Uint64(e)), rel: binary.BigEndian.Uint32(e[8:])}, true, nil
}

// readIndex runs fn on the segment's index file with suffix: its open
// handle if it has one, else a read-only handle opened for the call and
// closed after it (a sealed segment's index files stay closed between
// lookups, so they hold no descriptor). Caller holds s.fmu.
func (s *segment) readIndex(suffix string, fn func(f File) error) error {
	f := s.offFile
	if suffix == timeIndexSuffix {
		f = s.timeFile
	}
	if f != nil {
		if err := fn(f); err != nil {
			return fmt.Errorf("storage: segment %d: read %s: %w", s.base, suffix, err)
		}
		return nil
	}
	path := segmentPath(s.dir, s.base, suffix)
	f, err := s.fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("storage: segment %d: open %s: %w", s.base, path, err)
	}
	err = fn(f)
	if cerr := f.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("storage: segment %d: read %s: %w", s.base, path, err)
	}
	return nil
}

// searchBlock is how many bytes of entries searchEntries reads at once to
// finish a search: above it, it reads single entries (a binary search of
// 262,144 entries, a 1 GiB segment's offset index, takes 9 reads of 8
// bytes and one of 4 KiB).
const searchBlock = 4096

var searchBuffers = sync.Pool{New: func() any {
	b := make([]byte, searchBlock+2*timeEntrySize)
	return &b
}}

// searchEntries is sort.Search over the first n entries of size bytes in
// f: it returns the first index i whose entry satisfies pred (n when none
// does) and a copy of entry i-1 (nil when i is 0). pred must be false for
// a prefix of the entries and true for the rest. With guess >= 0, the
// first read is of the block of entries around guess, which ends the
// search when the answer lies inside it.
func searchEntries(f File, n, size, guess int, pred func(e []byte) bool) (int, []byte, error) {
	bp := searchBuffers.Get().(*[]byte)
	defer searchBuffers.Put(bp)
	buf := *bp
	lo, hi := 0, n // pred is false below lo and true from hi
	if per := searchBlock / size; guess >= 0 && n > per {
		g0 := min(max(guess-per/2, 0), n-per)
		blk := buf[:per*size]
		if err := readEntries(f, blk, g0, size); err != nil {
			return 0, nil, err
		}
		j := per // the first entry of the block satisfying pred
		for k := 0; k < per; k++ {
			if pred(blk[k*size:][:size]) {
				j = k
				break
			}
		}
		switch {
		case j == per:
			lo = g0 + per
		case j == 0:
			hi = g0
		default:
			return g0 + j, append([]byte(nil), blk[(j-1)*size:][:size]...), nil
		}
	}
	for (hi-lo)*size > searchBlock {
		mid := int(uint(lo+hi) >> 1)
		if err := readEntries(f, buf[:size], mid, size); err != nil {
			return 0, nil, err
		}
		if pred(buf[:size]) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	from := max(lo-1, 0) // entry lo-1 is the answer when no later one is
	blk := buf[:(hi-from)*size]
	if err := readEntries(f, blk, from, size); err != nil {
		return 0, nil, err
	}
	i := hi
	for j := lo; j < hi; j++ {
		if pred(blk[(j-from)*size:][:size]) {
			i = j
			break
		}
	}
	if i == 0 {
		return 0, nil, nil
	}
	return i, append([]byte(nil), blk[(i-1-from)*size:][:size]...), nil
}

// readEntries reads len(buf)/size whole entries from entry first on.
func readEntries(f File, buf []byte, first, size int) error {
	if len(buf) == 0 {
		return nil
	}
	at := int64(first) * int64(size)
	if m, err := f.ReadAt(buf, at); m < len(buf) {
		return fmt.Errorf("index entries at %d: %w", at, errors.Join(io.ErrUnexpectedEOF, err))
	}
	return nil
}

func (x *segIndex) appendOffset(e offsetEntry) {
	x.mu.Lock()
	x.offsets = append(x.offsets, e)
	x.mu.Unlock()
}

// appendTime adds a time entry if it moves the max timestamp forward, or if
// force is set and it moves the offset forward (the final entry on roll).
func (x *segIndex) appendTime(e timeEntry, force bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if n := len(x.times); n > 0 {
		last := x.times[n-1]
		if e.rel <= last.rel || e.ts < last.ts || (e.ts == last.ts && !force) {
			return
		}
	}
	x.times = append(x.times, e)
}

// pending reports whether entries wait to be written. Writer only.
func (x *segIndex) pending() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.offBase+len(x.offsets) > x.offsetsWritten || x.timeBase+len(x.times) > x.timesWritten
}

// wantSpill reports whether the active segment holds enough entries in
// memory to spill them. Writer only.
func (x *segIndex) wantSpill() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return !x.onDisk && len(x.offsets)+len(x.times) >= max(x.spillAt, spillIndexEntries)
}

// spill drops the entries already written to the files from memory,
// keeping any later ones: lookups below the first entry left search the
// files. Writer only.
func (x *segIndex) spill() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.onDisk {
		return
	}
	if k := x.offsetsWritten - x.offBase; k > 0 {
		x.spilledRel = x.offsets[k-1].rel
		x.offsets = append([]offsetEntry(nil), x.offsets[k:]...)
		x.offBase += k
	}
	if k := x.timesWritten - x.timeBase; k > 0 {
		x.times = append([]timeEntry(nil), x.times[k:]...)
		x.timeBase += k
	}
	x.spillAt = 0
}

// spillFailed puts the next spill off until as many entries again are in
// memory. Writer only.
func (x *segIndex) spillFailed() {
	x.mu.Lock()
	x.spillAt = len(x.offsets) + len(x.times) + spillIndexEntries
	x.mu.Unlock()
}

// release drops the entries from memory once all of them are in the
// files: the segment is sealed and lookups read the files from now on.
// Entries still to be written stay (the writer failed; the log is
// read-only then). Writer only.
func (x *segIndex) release() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.onDisk || x.offBase+len(x.offsets) != x.offsetsWritten || x.timeBase+len(x.times) != x.timesWritten {
		return
	}
	x.lastRel = x.spilledRel
	if n := len(x.offsets); n > 0 {
		x.lastRel = x.offsets[n-1].rel
	}
	x.offsets, x.times, x.onDisk = nil, nil, true
	x.offBase, x.timeBase, x.spilledRel = 0, 0, 0
}

// memEntries is how many entries the index holds in memory.
func (x *segIndex) memEntries() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.offsets) + len(x.times)
}

// reset drops every entry (before a rebuild).
func (x *segIndex) reset() {
	x.mu.Lock()
	x.offsets = x.offsets[:0]
	x.times = x.times[:0]
	x.onDisk, x.lastRel = false, 0
	x.offBase, x.timeBase, x.spilledRel, x.spillAt = 0, 0, 0, 0
	x.offsetsWritten, x.timesWritten = 0, 0
	x.hint.Store(nil)
	x.mu.Unlock()
}

// writeTo writes the entries not yet in the files. Writer only.
func (x *segIndex) writeTo(offFile, timeFile File) error {
	x.mu.RLock()
	offs := x.offsets[x.offsetsWritten-x.offBase:]
	times := x.times[x.timesWritten-x.timeBase:]
	x.mu.RUnlock()
	if len(offs) > 0 {
		buf := make([]byte, len(offs)*offsetEntrySize)
		for i, e := range offs {
			binary.BigEndian.PutUint32(buf[i*offsetEntrySize:], e.rel)
			binary.BigEndian.PutUint32(buf[i*offsetEntrySize+4:], e.pos)
		}
		if _, err := offFile.WriteAt(buf, int64(x.offsetsWritten*offsetEntrySize)); err != nil {
			return fmt.Errorf("write offset index: %w", err)
		}
		x.offsetsWritten += len(offs)
	}
	if len(times) > 0 {
		buf := make([]byte, len(times)*timeEntrySize)
		for i, e := range times {
			binary.BigEndian.PutUint64(buf[i*timeEntrySize:], uint64(e.ts))
			binary.BigEndian.PutUint32(buf[i*timeEntrySize+8:], e.rel)
		}
		if _, err := timeFile.WriteAt(buf, int64(x.timesWritten*timeEntrySize)); err != nil {
			return fmt.Errorf("write time index: %w", err)
		}
		x.timesWritten += len(times)
	}
	return nil
}

// loadIndexes reads both index files and checks them for sanity against the
// .log file size (Kafka's sanityCheck): whole entries, strictly increasing
// offsets and positions, positions inside the file, non-decreasing
// timestamps. A failed check means the index must be rebuilt.
func loadIndexes(fsys FS, offPath, timePath string, logSize int64) (offs []offsetEntry, times []timeEntry, err error) {
	raw, err := readWholeFile(fsys, offPath)
	if err != nil {
		return nil, nil, err
	}
	if len(raw)%offsetEntrySize != 0 {
		return nil, nil, fmt.Errorf("offset index size %d is not a multiple of %d", len(raw), offsetEntrySize)
	}
	offs = make([]offsetEntry, 0, len(raw)/offsetEntrySize)
	for i := 0; i < len(raw); i += offsetEntrySize {
		e := offsetEntry{rel: binary.BigEndian.Uint32(raw[i:]), pos: binary.BigEndian.Uint32(raw[i+4:])}
		if n := len(offs); n > 0 && (e.rel <= offs[n-1].rel || e.pos <= offs[n-1].pos) {
			return nil, nil, fmt.Errorf("offset index entry %d out of order", n)
		}
		if int64(e.pos) >= logSize {
			return nil, nil, fmt.Errorf("offset index entry %d points past the log (%d >= %d)", len(offs), e.pos, logSize)
		}
		offs = append(offs, e)
	}
	raw, err = readWholeFile(fsys, timePath)
	if err != nil {
		return nil, nil, err
	}
	if len(raw)%timeEntrySize != 0 {
		return nil, nil, fmt.Errorf("time index size %d is not a multiple of %d", len(raw), timeEntrySize)
	}
	times = make([]timeEntry, 0, len(raw)/timeEntrySize)
	for i := 0; i < len(raw); i += timeEntrySize {
		e := timeEntry{ts: int64(binary.BigEndian.Uint64(raw[i:])), rel: binary.BigEndian.Uint32(raw[i+8:])}
		if n := len(times); n > 0 && (e.ts < times[n-1].ts || e.rel <= times[n-1].rel) {
			return nil, nil, fmt.Errorf("time index entry %d out of order", n)
		}
		times = append(times, e)
	}
	return offs, times, nil
}

// openIndexFile opens (creating) an index file for writing.
func openIndexFile(fsys FS, path string) (File, error) {
	f, err := fsys.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open index %s: %w", path, err)
	}
	return f, nil
}

// indexMemEntries reports how many index entries the log holds in memory,
// in all and in its active segment (for tests: the sealed segments' are on
// disk only). Safe from any goroutine.
func (l *Log) indexMemEntries() (all, active int) {
	l.rmu.RLock()
	defer l.rmu.RUnlock()
	for _, s := range l.segs {
		all += s.idx.memEntries()
	}
	return all, l.segs[len(l.segs)-1].idx.memEntries()
}
