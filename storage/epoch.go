// epoch.go: the leader-epoch checkpoint (Kafka's leader-epoch-checkpoint
// file): for each leader epoch, the first offset written in it. Followers use
// it to find where their log diverges from a new leader's (KIP-101/KIP-279)
// and truncate there. The file is Kafka's text format:
//
//	0            version
//	N            number of entries
//	epoch offset one line per entry, epochs and offsets increasing

package storage

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

const epochCheckpointFile = "leader-epoch-checkpoint"

// EpochEntry is one leader epoch and the first offset written in it.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// epochCache is the in-memory copy of the checkpoint, persisted on change.
// Writers hold Log.mu; mu lets readers (OffsetForLeaderEpoch handlers) look
// entries up concurrently.
type epochCache struct {
	mu      sync.RWMutex
	entries []EpochEntry
	fsys    FS
	dir     string
}

func loadEpochCache(fsys FS, dir string) (*epochCache, error) {
	c := &epochCache{fsys: fsys, dir: dir}
	raw, err := readWholeFile(fsys, filepath.Join(dir, epochCheckpointFile))
	if err != nil {
		if isNotExist(err) {
			return c, nil
		}
		return nil, fmt.Errorf("read leader epoch checkpoint: %w", err)
	}
	entries, err := parseEpochCheckpoint(raw)
	if err != nil {
		return nil, fmt.Errorf("leader epoch checkpoint in %s: %w", dir, err)
	}
	c.entries = entries
	return c, nil
}

func parseEpochCheckpoint(raw []byte) ([]EpochEntry, error) {
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) < 2 || lines[0] != "0" {
		return nil, fmt.Errorf("%w: bad header", ErrCorruptCheckpoint)
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n < 0 || n != len(lines)-2 {
		return nil, fmt.Errorf("%w: entry count %q does not match %d lines", ErrCorruptCheckpoint, lines[1], len(lines)-2)
	}
	entries := make([]EpochEntry, 0, n)
	for _, line := range lines[2:] {
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("%w: line %q", ErrCorruptCheckpoint, line)
		}
		epoch, err1 := strconv.ParseInt(f[0], 10, 32)
		off, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || epoch < 0 || off < 0 {
			return nil, fmt.Errorf("%w: line %q", ErrCorruptCheckpoint, line)
		}
		e := EpochEntry{Epoch: int32(epoch), StartOffset: off}
		if k := len(entries); k > 0 && (e.Epoch <= entries[k-1].Epoch || e.StartOffset < entries[k-1].StartOffset) {
			return nil, fmt.Errorf("%w: entries out of order at %q", ErrCorruptCheckpoint, line)
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// formatEpochCheckpoint encodes entries as a leader-epoch checkpoint file,
// what parseEpochCheckpoint reads.
func formatEpochCheckpoint(entries []EpochEntry) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(entries))
	for _, e := range entries {
		fmt.Fprintf(&b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return b.Bytes()
}

func (c *epochCache) persist() error {
	if err := writeFileAtomic(c.fsys, c.dir, filepath.Join(c.dir, epochCheckpointFile), formatEpochCheckpoint(c.entries)); err != nil {
		return fmt.Errorf("write leader epoch checkpoint: %w", err)
	}
	return nil
}

// latest returns the newest entry.
func (c *epochCache) latest() (EpochEntry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.entries) == 0 {
		return EpochEntry{}, false
	}
	return c.entries[len(c.entries)-1], true
}

func (c *epochCache) snapshot() []EpochEntry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return append([]EpochEntry(nil), c.entries...)
}

// assign records that epoch starts at offset, if epoch is newer than the
// latest entry. Entries for older-or-equal epochs are ignored, as in Kafka;
// an entry whose start offset is not below offset is replaced (it was never
// written to).
func (c *epochCache) assign(epoch int32, offset int64) (bool, error) {
	if epoch < 0 {
		return false, nil
	}
	c.mu.Lock()
	n := len(c.entries)
	if n > 0 && epoch <= c.entries[n-1].Epoch {
		c.mu.Unlock()
		return false, nil
	}
	for n > 0 && c.entries[n-1].StartOffset >= offset {
		n--
	}
	c.entries = append(c.entries[:n], EpochEntry{Epoch: epoch, StartOffset: offset})
	c.mu.Unlock()
	return true, c.persist()
}

// truncateFromEnd drops entries that start at or after offset.
func (c *epochCache) truncateFromEnd(offset int64) error {
	c.mu.Lock()
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= offset {
		n--
	}
	changed := n != len(c.entries)
	c.entries = c.entries[:n]
	c.mu.Unlock()
	if !changed {
		return nil
	}
	return c.persist()
}

// truncateFromStart drops entries wholly below offset (the new log start),
// keeping the last one at or below it with its start moved up to offset.
func (c *epochCache) truncateFromStart(offset int64) error {
	c.mu.Lock()
	i := 0
	for i+1 < len(c.entries) && c.entries[i+1].StartOffset <= offset {
		i++
	}
	changed := i > 0
	c.entries = c.entries[i:]
	if len(c.entries) > 0 && c.entries[0].StartOffset < offset {
		c.entries[0].StartOffset = offset
		changed = true
	}
	c.mu.Unlock()
	if !changed {
		return nil
	}
	return c.persist()
}

// clear drops every entry.
func (c *epochCache) clear() error {
	c.mu.Lock()
	c.entries = nil
	c.mu.Unlock()
	return c.persist()
}

// endOffsetFor answers OffsetForLeaderEpoch as Kafka's LeaderEpochFileCache
// does: for the latest epoch, the log end offset; for an older epoch, the
// start offset of the first epoch after it, with the largest known epoch <=
// the requested one; (-1, -1) when the epoch is unknown or newer than any.
func (c *epochCache) endOffsetFor(epoch int32, logEnd int64) (int32, int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := len(c.entries)
	if epoch < 0 || n == 0 {
		return -1, -1
	}
	if epoch == c.entries[n-1].Epoch {
		return epoch, logEnd
	}
	hi := -1 // first entry with a larger epoch
	for i, e := range c.entries {
		if e.Epoch > epoch {
			hi = i
			break
		}
	}
	if hi < 0 {
		return -1, -1
	}
	if hi == 0 {
		return epoch, c.entries[0].StartOffset
	}
	return c.entries[hi-1].Epoch, c.entries[hi].StartOffset
}
