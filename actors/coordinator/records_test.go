// records_test.go: the offsets topic record format — round trips, Kafka's
// exact bytes, the versions read, malformed input, and a fuzzed decoder.

package coordinator

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestOffsetRecordRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		key  OffsetKey
		val  OffsetValue
	}{
		{"plain", OffsetKey{"g", "events", 3}, OffsetValue{Offset: 42, LeaderEpoch: 7, Metadata: "m", CommitTimestamp: 1700000000000}},
		{"zero offset, no epoch, no metadata", OffsetKey{"group-1", "t", 0}, OffsetValue{Offset: 0, LeaderEpoch: -1, CommitTimestamp: 1}},
		{"unicode and long names", OffsetKey{strings.Repeat("ü", 300), strings.Repeat("t", 249), 1 << 30}, OffsetValue{Offset: 1 << 62, LeaderEpoch: 1 << 30, Metadata: strings.Repeat("x", 4096)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := DecodeRecord(EncodeOffsetKey(tt.key), EncodeOffsetValue(tt.val))
			if err != nil {
				t.Fatalf("DecodeRecord: %v", err)
			}
			if d.Kind != KindOffsetCommit || d.Key != tt.key || d.Value == nil || *d.Value != tt.val {
				t.Fatalf("decoded %+v (value %+v), want key %+v value %+v", d, d.Value, tt.key, tt.val)
			}
		})
	}
}

// TestOffsetRecordBytes pins the encoding to Kafka's layouts: key v1 and
// value v3 of __consumer_offsets.
func TestOffsetRecordBytes(t *testing.T) {
	key := EncodeOffsetKey(OffsetKey{Group: "g1", Topic: "t", Partition: 2})
	wantKey := "0001" + "0002" + hex.EncodeToString([]byte("g1")) + "0001" + hex.EncodeToString([]byte("t")) + "00000002"
	if got := hex.EncodeToString(key); got != wantKey {
		t.Errorf("key %s, want %s", got, wantKey)
	}
	val := EncodeOffsetValue(OffsetValue{Offset: 0x0102, LeaderEpoch: 5, Metadata: "md", CommitTimestamp: 0x0a0b})
	wantVal := "0003" + "0000000000000102" + "00000005" + "0002" + hex.EncodeToString([]byte("md")) + "0000000000000a0b"
	if got := hex.EncodeToString(val); got != wantVal {
		t.Errorf("value %s, want %s", got, wantVal)
	}
}

func TestDecodeRecord(t *testing.T) {
	v1 := kmsg.OffsetCommitValue{Version: 1, Offset: 9, Metadata: "old", CommitTimestamp: 5, ExpireTimestamp: 99}
	v4 := kmsg.OffsetCommitValue{Version: 4, Offset: 11, LeaderEpoch: 3, Metadata: "new", CommitTimestamp: 6}
	key0 := kmsg.OffsetCommitKey{Version: 0, Group: "g", Topic: "t", Partition: 1}
	gkey := kmsg.GroupMetadataKey{Version: 2, Group: "g"}
	okKey := EncodeOffsetKey(OffsetKey{"g", "t", 1})
	tests := []struct {
		name       string
		key, value []byte
		want       Decoded
		wantErr    bool
	}{
		{"tombstone", okKey, nil, Decoded{Kind: KindOffsetCommit, Key: OffsetKey{"g", "t", 1}}, false},
		{"key v0", key0.AppendTo(nil), nil, Decoded{Kind: KindOffsetCommit, Key: OffsetKey{"g", "t", 1}}, false},
		{"value v1 has no leader epoch", okKey, v1.AppendTo(nil), Decoded{Kind: KindOffsetCommit, Key: OffsetKey{"g", "t", 1},
			Value: &OffsetValue{Offset: 9, LeaderEpoch: -1, Metadata: "old", CommitTimestamp: 5}}, false},
		{"value v4 (flexible)", okKey, v4.AppendTo(nil), Decoded{Kind: KindOffsetCommit, Key: OffsetKey{"g", "t", 1},
			Value: &OffsetValue{Offset: 11, LeaderEpoch: 3, Metadata: "new", CommitTimestamp: 6}}, false},
		{"group metadata", gkey.AppendTo(nil), []byte{0, 3, 1, 2}, Decoded{Kind: KindGroupMetadata, Group: "g", GroupValue: []byte{0, 3, 1, 2}}, false},
		{"group metadata tombstone", gkey.AppendTo(nil), nil, Decoded{Kind: KindGroupMetadata, Group: "g"}, false},
		{"empty key", nil, nil, Decoded{}, true},
		{"one-byte key", []byte{0}, nil, Decoded{}, true},
		{"unknown key version", []byte{0, 9, 0, 0}, nil, Decoded{}, true},
		{"negative key version", []byte{0xff, 0xff}, nil, Decoded{}, true},
		{"truncated key", okKey[:len(okKey)-1], nil, Decoded{}, true},
		{"one-byte value", okKey, []byte{0}, Decoded{}, true},
		{"unknown value version", okKey, []byte{0, 5, 0, 0, 0, 0, 0, 0, 0, 0}, Decoded{}, true},
		{"truncated value", okKey, EncodeOffsetValue(OffsetValue{Offset: 1})[:9], Decoded{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := DecodeRecord(tt.key, tt.value)
			if tt.wantErr {
				if !errors.Is(err, ErrBadRecord) {
					t.Fatalf("DecodeRecord = %+v, %v; want an ErrBadRecord", d, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeRecord: %v", err)
			}
			if d.Kind != tt.want.Kind || d.Key != tt.want.Key || d.Group != tt.want.Group || !bytes.Equal(d.GroupValue, tt.want.GroupValue) ||
				(d.Value == nil) != (tt.want.Value == nil) || d.Value != nil && *d.Value != *tt.want.Value {
				t.Fatalf("decoded %+v (value %+v), want %+v (value %+v)", d, d.Value, tt.want, tt.want.Value)
			}
		})
	}
}

// FuzzDecodeRecord checks that any input decodes or fails with
// ErrBadRecord, never panics, and that what decodes as an offset commit
// encodes back to something that decodes the same.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(EncodeOffsetKey(OffsetKey{"g", "t", 1}), EncodeOffsetValue(OffsetValue{Offset: 5, LeaderEpoch: 1, Metadata: "m"}))
	f.Add([]byte{0, 2, 0, 1, 'g'}, []byte{0, 3})
	f.Add([]byte{0, 1}, []byte{0, 4, 0})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		d, err := DecodeRecord(key, value)
		if err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("error %v does not wrap ErrBadRecord", err)
			}
			return
		}
		if d.Kind != KindOffsetCommit || d.Value == nil {
			return
		}
		again, err := DecodeRecord(EncodeOffsetKey(d.Key), EncodeOffsetValue(*d.Value))
		if err != nil || again.Key != d.Key || *again.Value != *d.Value {
			t.Fatalf("re-encoded %+v %+v decodes as %+v %+v, %v", d.Key, *d.Value, again.Key, again.Value, err)
		}
	})
}
