// compact_offsetmap.go: the log cleaner's offset map (Kafka's
// SkimpyOffsetMap): the newest offset of each key over the dirty part of a
// compacted log, in a fixed memory budget. Keys are not stored: each is
// hashed (SHA-256, truncated to 128 bits, so a collision between two keys
// of one log is as likely as a random 128-bit match) into an open-addressed
// table of 24-byte slots sized once from the budget. The map is full when
// it holds 90% of its slots (Kafka's dedupe buffer load factor); the
// cleaner then cleans only the prefix of the log whose keys fit.

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
// full (Kafka's log.cleaner.io.buffer.load.factor).
const offsetMapLoadFactor = 0.9

type offsetMapSlot struct {
	hash [16]byte
	off  int64 // offset + 1; 0 marks a free slot
}

// OffsetMap maps key hashes to the newest offset seen for them. It is not
// safe for concurrent use.
type OffsetMap struct {
	slots    []offsetMapSlot
	capacity int   // entries before Full
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
		capacity: max(1, int(float64(slots)*offsetMapLoadFactor)),
		latest:   -1,
	}, nil
}

func hashKey(key []byte) [16]byte {
	sum := sha256.Sum256(key)
	var h [16]byte
	copy(h[:], sum[:16])
	return h
}

// find returns the slot of h, or the free slot where it would go.
func (m *OffsetMap) find(h [16]byte) int {
	i := int(binary.BigEndian.Uint64(h[:8]) % uint64(len(m.slots)))
	for {
		s := &m.slots[i]
		if s.off == 0 || s.hash == h {
			return i
		}
		i++
		if i == len(m.slots) {
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

// Clear empties the map, keeping its table.
func (m *OffsetMap) Clear() {
	clear(m.slots)
	m.n, m.latest = 0, -1
}
