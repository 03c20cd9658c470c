// index.go: a segment's sparse offset index (.index) and time index
// (.timeindex), kept in memory and written to their files in Kafka's layout:
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

package storage

import (
	"encoding/binary"
	"fmt"
	"os"
	"sort"
	"sync"
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

// segIndex holds both indexes of one segment.
type segIndex struct {
	mu      sync.RWMutex // guards offsets and times; the writer appends, readers look up
	offsets []offsetEntry
	times   []timeEntry

	// Owned by the writer (under Log.mu).
	offsetsWritten int // entries already in the .index file
	timesWritten   int
}

// lookup returns the position of the last indexed batch whose base offset is
// <= rel, or 0.
func (x *segIndex) lookup(rel uint32) uint32 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	i := sort.Search(len(x.offsets), func(i int) bool { return x.offsets[i].rel > rel })
	if i == 0 {
		return 0
	}
	return x.offsets[i-1].pos
}

// lookupTime returns the relative offset of the last time entry whose
// timestamp is < ts, and whether there is one.
func (x *segIndex) lookupTime(ts int64) (uint32, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	i := sort.Search(len(x.times), func(i int) bool { return x.times[i].ts >= ts })
	if i == 0 {
		return 0, false
	}
	return x.times[i-1].rel, true
}

// lastTimeBefore returns the last time entry whose relative offset is
// < rel, and whether there is one.
func (x *segIndex) lastTimeBefore(rel uint32) (timeEntry, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	i := sort.Search(len(x.times), func(i int) bool { return x.times[i].rel >= rel })
	if i == 0 {
		return timeEntry{}, false
	}
	return x.times[i-1], true
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

func (x *segIndex) lastTime() (timeEntry, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if len(x.times) == 0 {
		return timeEntry{}, false
	}
	return x.times[len(x.times)-1], true
}

func (x *segIndex) lastOffset() (offsetEntry, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if len(x.offsets) == 0 {
		return offsetEntry{}, false
	}
	return x.offsets[len(x.offsets)-1], true
}

// pending reports whether entries wait to be written. Writer only.
func (x *segIndex) pending() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.offsets) > x.offsetsWritten || len(x.times) > x.timesWritten
}

// reset drops every entry (before a rebuild).
func (x *segIndex) reset() {
	x.mu.Lock()
	x.offsets = x.offsets[:0]
	x.times = x.times[:0]
	x.mu.Unlock()
	x.offsetsWritten, x.timesWritten = 0, 0
}

// writeTo writes the entries not yet in the files. Writer only.
func (x *segIndex) writeTo(offFile, timeFile File) error {
	x.mu.RLock()
	offs := x.offsets[x.offsetsWritten:]
	times := x.times[x.timesWritten:]
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
