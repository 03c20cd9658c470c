// This file tests the Partitioner: Kafka's murmur2 placement of keys
// (against the Java client's known values and an independent murmur2),
// explicit partitions, and KIP-480 sticky partitions for keyless records.

package producer

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// javaMurmur2 are Kafka's UtilsTest.testMurmur2 vectors: Utils.murmur2(key)
// as the Java client computes it (also pinned by franz-go's
// TestMurmur2KafkaVectors), with the partition Kafka's producer picks,
// toPositive(hash) % n, for a few partition counts.
var javaMurmur2 = []struct {
	key   string
	hash  int32
	parts map[int]int32 // numPartitions -> partition
}{
	{"21", -973932308, map[int]int32{1: 0, 3: 0, 12: 0, 100: 40}},
	{"foobar", -790332482, map[int]int32{1: 0, 3: 0, 12: 6, 100: 66}},
	{"a-little-bit-long-string", -985981536, map[int]int32{3: 2, 12: 8, 100: 12}},
	{"a-little-bit-longer-string", -1486304829, map[int]int32{3: 2, 12: 11, 100: 19}},
	{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971, map[int]int32{3: 2, 12: 5, 100: 77}},
	{"abc", 479470107, map[int]int32{3: 0, 12: 3, 100: 7}},
}

func TestKeyPartitionJavaValues(t *testing.T) {
	p := NewPartitioner(nil)
	for _, c := range javaMurmur2 {
		t.Run(c.key, func(t *testing.T) {
			// With MaxInt32 partitions the partition is toPositive(hash)
			// itself, which checks all 31 bits of the hash.
			want := c.hash & math.MaxInt32
			if got := p.KeyPartition([]byte(c.key), math.MaxInt32); got != want {
				t.Errorf("toPositive(murmur2(%q)) = %d, want %d (hash %d)", c.key, got, want, c.hash)
			}
			for n, want := range c.parts {
				got, err := p.Partition("t", []byte(c.key), AnyPartition, n)
				if err != nil || got != want {
					t.Errorf("Partition(%q, n=%d) = %d, %v; want %d", c.key, n, got, err, want)
				}
			}
		})
	}
	// The brief's headline value.
	if got, _ := p.Partition("any", []byte("foobar"), AnyPartition, 12); got != 6 {
		t.Errorf(`"foobar" with 12 partitions went to %d, want 6`, got)
	}
}

// refMurmur2 is a line-by-line port of Kafka's Utils.murmur2 (Java ints,
// >>> for unsigned shifts), written independently of franz-go's, to check
// the library on many keys of every tail length.
func refMurmur2(data []byte) int32 {
	const seed = int32(-1756908916) // 0x9747b28c
	const m = int32(0x5bd1e995)
	const r = 24
	length := int32(len(data))
	h := seed ^ length
	length4 := length / 4
	for i := int32(0); i < length4; i++ {
		i4 := i * 4
		k := int32(data[i4+0]) + int32(data[i4+1])<<8 + int32(data[i4+2])<<16 + int32(data[i4+3])<<24
		k *= m
		k ^= int32(uint32(k) >> r)
		k *= m
		h *= m
		h ^= k
	}
	switch length % 4 {
	case 3:
		h ^= int32(data[(length & ^3)+2]) << 16
		fallthrough
	case 2:
		h ^= int32(data[(length & ^3)+1]) << 8
		fallthrough
	case 1:
		h ^= int32(data[length & ^3])
		h *= m
	}
	h ^= int32(uint32(h) >> 13)
	h *= m
	h ^= int32(uint32(h) >> 15)
	return h
}

func TestKeyPartitionMatchesReferenceMurmur2(t *testing.T) {
	for _, c := range javaMurmur2 {
		if got := refMurmur2([]byte(c.key)); got != c.hash {
			t.Fatalf("reference murmur2(%q) = %d, want %d: the reference is wrong", c.key, got, c.hash)
		}
	}
	p := NewPartitioner(nil)
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		key := make([]byte, i%67) // every tail length, empty key included
		for j := range key {
			key[j] = byte(rnd.Uint32())
		}
		n := 1 + rnd.IntN(1000)
		want := (refMurmur2(key) & math.MaxInt32) % int32(n)
		if got := p.KeyPartition(key, n); got != want {
			t.Fatalf("key %x, %d partitions: got %d, want %d", key, n, got, want)
		}
	}
}

func TestPartition(t *testing.T) {
	tests := []struct {
		name     string
		key      []byte
		explicit int32
		n        int
		want     int32
		wantErr  error
	}{
		{"explicit wins over key", []byte("foobar"), 3, 12, 3, nil},
		{"explicit zero", nil, 0, 1, 0, nil},
		{"explicit last", nil, 11, 12, 11, nil},
		{"explicit out of range", nil, 12, 12, 0, ErrInvalidPartition},
		{"explicit negative", nil, -2, 12, 0, ErrInvalidPartition},
		{"no partitions", []byte("k"), AnyPartition, 0, 0, ErrNoPartitions},
		{"negative partitions", nil, AnyPartition, -1, 0, ErrNoPartitions},
		{"keyed", []byte("foobar"), AnyPartition, 12, 6, nil},
		{"empty key is hashed", []byte{}, AnyPartition, 1 << 30, refMurmur2(nil) & math.MaxInt32 % (1 << 30), nil},
		{"one partition", []byte("x"), AnyPartition, 1, 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPartitioner(rand.New(rand.NewPCG(7, 7)))
			got, err := p.Partition("t", tc.key, tc.explicit, tc.n)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err == nil && got != tc.want {
				t.Fatalf("partition = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestKeyedPartitionIsStable(t *testing.T) {
	p := NewPartitioner(rand.New(rand.NewPCG(1, 1)))
	for i := 0; i < 100; i++ {
		key := []byte(fmt.Sprintf("user-%d", i))
		first, _ := p.Partition("a", key, AnyPartition, 24)
		// Batches closing, other topics and keyless traffic change nothing.
		p.OnNewBatch("a", first, 24)
		_, _ = p.Partition("a", nil, AnyPartition, 24)
		again, _ := p.Partition("b", key, AnyPartition, 24)
		if again != first {
			t.Fatalf("key %q: %d then %d", key, first, again)
		}
	}
}

func TestKeyPartitionAllocates(t *testing.T) {
	p := NewPartitioner(nil)
	key := []byte("some-key")
	if n := testing.AllocsPerRun(100, func() { _, _ = p.Partition("t", key, AnyPartition, 12) }); n != 0 {
		t.Errorf("keyed Partition allocates %v times per call, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = p.Partition("t", nil, AnyPartition, 12) }); n != 0 {
		t.Errorf("keyless Partition allocates %v times per call, want 0", n)
	}
}

func TestStickyPartition(t *testing.T) {
	tests := []struct {
		name string
		n    int
	}{
		{"one partition", 1},
		{"two partitions", 2},
		{"twelve partitions", 12},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPartitioner(rand.New(rand.NewPCG(3, 4)))
			cur, err := p.Partition("t", nil, AnyPartition, tc.n)
			if err != nil || cur < 0 || int(cur) >= tc.n {
				t.Fatalf("first sticky partition %d, %v", cur, err)
			}
			seen := map[int32]bool{cur: true}
			for round := 0; round < 200; round++ {
				// Stays put for any number of records.
				for i := 0; i < 10; i++ {
					if got, _ := p.Partition("t", nil, AnyPartition, tc.n); got != cur {
						t.Fatalf("round %d: sticky moved from %d to %d without a new batch", round, cur, got)
					}
				}
				// A new batch on another partition moves nothing.
				other := (cur + 1) % int32(tc.n)
				if other != cur {
					p.OnNewBatch("t", other, tc.n)
					if got, _ := p.Partition("t", nil, AnyPartition, tc.n); got != cur {
						t.Fatalf("OnNewBatch(%d) moved sticky %d to %d", other, cur, got)
					}
				}
				// A new batch on the sticky partition moves it elsewhere.
				p.OnNewBatch("t", cur, tc.n)
				next, _ := p.Partition("t", nil, AnyPartition, tc.n)
				if tc.n > 1 && next == cur {
					t.Fatalf("round %d: OnNewBatch(%d) kept the sticky partition", round, cur)
				}
				if tc.n == 1 && next != 0 {
					t.Fatalf("single partition moved to %d", next)
				}
				cur = next
				seen[cur] = true
			}
			if len(seen) != tc.n {
				t.Errorf("200 switches visited %d of %d partitions", len(seen), tc.n)
			}
		})
	}
}

func TestStickyPartitionPerTopicAndShrink(t *testing.T) {
	p := NewPartitioner(rand.New(rand.NewPCG(5, 6)))
	a, _ := p.Partition("a", nil, AnyPartition, 1000)
	b, _ := p.Partition("b", nil, AnyPartition, 1000)
	p.OnNewBatch("a", a, 1000)
	if got, _ := p.Partition("b", nil, AnyPartition, 1000); got != b {
		t.Errorf("topic a's new batch moved topic b from %d to %d", b, got)
	}
	// Fewer partitions than the sticky one (metadata changed): re-pick.
	p.setSticky("b", 999)
	got, err := p.Partition("b", nil, AnyPartition, 10)
	if err != nil || got < 0 || got >= 10 {
		t.Errorf("after shrinking to 10 partitions: %d, %v", got, err)
	}
	if again, _ := p.Partition("b", nil, AnyPartition, 10); again != got {
		t.Errorf("re-picked sticky partition not kept: %d then %d", got, again)
	}
	p.Forget("b")
	if _, ok := p.sticky["b"]; ok {
		t.Error("Forget kept the sticky partition")
	}
	// Nor is it remembered as the last topic asked about.
	if p.stickyOf("b") != nil {
		t.Error("Forget left the sticky partition cached")
	}
	// The cache follows the topic asked about: a's new batch moves a, and
	// b (asked last) keeps its own.
	b, _ = p.Partition("b", nil, AnyPartition, 1000)
	a2, _ := p.Partition("a", nil, AnyPartition, 1000)
	p.OnNewBatch("b", b, 1000)
	if got, _ := p.Partition("a", nil, AnyPartition, 1000); got != a2 {
		t.Errorf("topic b's new batch moved topic a from %d to %d", a2, got)
	}
	if got, _ := p.Partition("b", nil, AnyPartition, 1000); got == b {
		t.Errorf("topic b's new batch left it on %d", b)
	}
}
