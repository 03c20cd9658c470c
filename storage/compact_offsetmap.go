// compact_offsetmap.go: the log cleaner's offset map (Kafka's
// SkimpyOffsetMap): the newest offset of each key over the dirty part of a
// compacted log, in a fixed memory budget. Keys are not stored: each is
// hashed (SHA-256, truncated to 128 bits, so a collision between two keys
// of one log is as likely as a random 128-bit match) into an open-addressed
// table of 24-byte slots sized once from the budget. The map is full when
// it holds 90% of its slots (Kafka's dedupe buffer load factor); the
// cleaner then cleans only the prefix of the log whose keys fit.
//
// Unlike Kafka's, the table in use starts small (offsetMapInitialSlots)
// and doubles within the budget as keys come, so a cleaning of a log with
// few keys touches (and clears) little memory: clearing and faulting in a
// whole 128 MiB table cost a first cleaning 0.4 s of page faults on a
// 2-core host, while its producers waited for CPU. Doubling sets the
// table's entries aside meanwhile (at most 45% of the budget, for the
// moment of the growth).

package storage

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// offsetMapSlotBytes is the memory one slot takes: a 16-byte key hash and
// an 8-byte offset.
const offsetMapSlotBytes = 24

// offsetMapLoadFactor is the share of slots the map fills before it is
// full (Kafka's log.cleaner.io.buffer.load.factor), and before the table
// in use doubles.
const offsetMapLoadFactor = 0.9

// offsetMapInitialSlots is the size of the table in use at first (1.5 MiB).
const offsetMapInitialSlots = 1 << 16

type offsetMapSlot struct {
	hash [16]byte
	off  int64 // offset + 1; 0 marks a free slot
}

// OffsetMap maps key hashes to the newest offset seen for them. It is not
// safe for concurrent use.
type OffsetMap struct {
	slots []offsetMapSlot // the whole budget; slots[size:] are all free
	// size is the table in use: key hashes index slots[:size].
	size     int
	capacity int   // entries before Full, over the whole budget
	n        int   // entries
	latest   int64 // largest offset put, -1 when empty
}

// NewOffsetMap returns an empty map using at most budgetBytes of memory
// for its table (log.cleaner.dedupe.buffer.size). The budget must hold at
// least two slots.
func NewOffsetMap(budgetBytes int) (*OffsetMap, error) {
	slots := budgetBytes / offsetMapSlotBytes
	if slots < 2 {
		return nil, fmt.Errorf("storage: offset map budget of %d bytes holds fewer than 2 entries of %d bytes", budgetBytes, offsetMapSlotBytes)
	}
	return &OffsetMap{
		slots:    make([]offsetMapSlot, slots),
		size:     min(slots, offsetMapInitialSlots),
		capacity: max(1, int(float64(slots)*offsetMapLoadFactor)),
		latest:   -1,
	}, nil
}

// grow doubles the table in use, within the budget, and moves every entry
// to its place in it.
func (m *OffsetMap) grow() {
	moved := make([]offsetMapSlot, 0, m.n)
	for _, s := range m.slots[:m.size] {
		if s.off != 0 {
			moved = append(moved, s)
		}
	}
	clear(m.slots[:m.size])
	m.size = min(2*m.size, len(m.slots))
	for _, s := range moved {
		m.slots[m.find(s.hash)] = s
	}
}

func hashKey(key []byte) [16]byte {
	sum := sha256.Sum256(key)
	var h [16]byte
	copy(h[:], sum[:16])
	return h
}

// find returns the slot of h, or the free slot where it would go.
func (m *OffsetMap) find(h [16]byte) int {
	i := int(binary.BigEndian.Uint64(h[:8]) % uint64(m.size))
	for {
		s := &m.slots[i]
		if s.off == 0 || s.hash == h {
			return i
		}
		i++
		if i == m.size {
			i = 0
		}
	}
}

// Put records offset as the newest offset of key, unless a newer one is
// already there. It reports false, changing nothing, when key is new and
// the map is full.
func (m *OffsetMap) Put(key []byte, offset int64) bool {
	h := hashKey(key)
	i := m.find(h)
	s := &m.slots[i]
	if s.off == 0 {
		if m.n >= m.capacity {
			return false
		}
		if m.size < len(m.slots) && float64(m.n+1) > float64(m.size)*offsetMapLoadFactor {
			m.grow()
			s = &m.slots[m.find(h)]
		}
		s.hash = h
		m.n++
	}
	if offset+1 > s.off {
		s.off = offset + 1
	}
	m.latest = max(m.latest, offset)
	return true
}

// Get returns the newest offset recorded for key.
func (m *OffsetMap) Get(key []byte) (int64, bool) {
	s := m.slots[m.find(hashKey(key))]
	if s.off == 0 {
		return 0, false
	}
	return s.off - 1, true
}

// Len is the number of keys in the map.
func (m *OffsetMap) Len() int { return m.n }

// Free is how many more new keys fit before the map is full.
func (m *OffsetMap) Free() int { return m.capacity - m.n }

// Full reports whether no new key fits.
func (m *OffsetMap) Full() bool { return m.n >= m.capacity }

// LatestOffset is the largest offset put, -1 when none was.
func (m *OffsetMap) LatestOffset() int64 { return m.latest }

// Clear empties the map, keeping its table (and the size in use, which
// the next cleaning of a similar log needs again).
func (m *OffsetMap) Clear() {
	clear(m.slots[:m.size])
	m.n, m.latest = 0, -1
}
