// records_test.go: the offsets topic record format — round trips (offset
// commits and group metadata), Kafka's exact bytes, the versions read,
// malformed input, and a fuzzed decoder.

package coordinator

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/actors/group"
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

func TestGroupMetadataRoundTrip(t *testing.T) {
	stable := group.Snapshot{
		ProtocolType: group.ProtocolType, Generation: 7, ProtocolName: "range", Leader: "a-1",
		Members: []group.MemberSnapshot{
			{ID: "a-1", ClientID: "a", ClientHost: "10.0.0.1:4000", SessionTimeout: 10 * time.Second, RebalanceTimeout: 30 * time.Second,
				Metadata:   group.EncodeSubscription(group.Subscription{Topics: []string{"events"}, Generation: -1}),
				Assignment: group.EncodeAssignment(group.Assignment{"events": {0, 1}})},
			{ID: "b-2", InstanceID: "b", ClientID: "b", ClientHost: "10.0.0.2:4000", SessionTimeout: 6 * time.Second, RebalanceTimeout: 6 * time.Second,
				Metadata: []byte{}, Assignment: []byte{}},
		},
	}
	tests := []struct {
		name string
		s    group.Snapshot
	}{
		{"stable", stable},
		// Without members, the state timestamp is when the group became
		// Empty.
		{"empty", group.Snapshot{ProtocolType: group.ProtocolType, Generation: 8, EmptySince: time.UnixMilli(1700000000000)}},
		{"never had members", group.Snapshot{EmptySince: time.UnixMilli(1700000000000)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, value := EncodeGroupMetadataKey("payments"), EncodeGroupMetadata(tt.s, 1700000000000)
			d, err := DecodeRecord(key, value)
			if err != nil || d.Kind != KindGroupMetadata || d.Group != "payments" {
				t.Fatalf("DecodeRecord = %+v, %v", d, err)
			}
			got, err := DecodeGroupMetadata(d.GroupValue)
			if err != nil {
				t.Fatalf("DecodeGroupMetadata: %v", err)
			}
			if !reflect.DeepEqual(got, tt.s) {
				t.Fatalf("decoded\n%+v\nwant\n%+v", got, tt.s)
			}
			var v kmsg.GroupMetadataValue
			if err := v.ReadFrom(value); err != nil || v.Version != 3 || v.CurrentStateTimestamp != 1700000000000 || (len(tt.s.Members) == 0) != (v.Protocol == nil && v.Leader == nil) {
				t.Fatalf("kmsg reads %+v, %v: want version 3, the timestamp, a null protocol and leader exactly when empty", v, err)
			}
		})
	}
}

func TestDecodeGroupMetadataVersions(t *testing.T) {
	v0 := kmsg.NewGroupMetadataValue()
	v0.Version, v0.ProtocolType, v0.Generation = 0, "consumer", 2
	v0.Protocol, v0.Leader = kmsg.StringPtr("range"), kmsg.StringPtr("m")
	m := kmsg.NewGroupMetadataValueMember()
	m.MemberID, m.SessionTimeoutMillis, m.Subscription, m.Assignment = "m", 6000, []byte{1}, []byte{2}
	v0.Members = append(v0.Members, m)
	s, err := DecodeGroupMetadata(v0.AppendTo(nil))
	if err != nil || s.Generation != 2 || len(s.Members) != 1 || s.Members[0].RebalanceTimeout != 6*time.Second || s.Members[0].InstanceID != "" {
		t.Fatalf("v0 decodes as %+v, %v: want the rebalance timeout to be the session timeout", s, err)
	}
	// An Empty group's state timestamp is its EmptySince: unknown (zero)
	// when -1, and before v2, which has none.
	for _, tt := range []struct {
		version int16
		stamp   int64
		want    time.Time
	}{{3, -1, time.Time{}}, {1, 1700000000000, time.Time{}}, {2, 1700000000000, time.UnixMilli(1700000000000)}} {
		v := kmsg.NewGroupMetadataValue()
		v.Version, v.ProtocolType, v.Generation, v.CurrentStateTimestamp = tt.version, "consumer", 4, tt.stamp
		s, err := DecodeGroupMetadata(v.AppendTo(nil))
		if err != nil || !s.EmptySince.Equal(tt.want) || s.Generation != 4 {
			t.Errorf("v%d with timestamp %d decodes as %+v, %v: want EmptySince %v", tt.version, tt.stamp, s, err, tt.want)
		}
	}
	for _, bad := range [][]byte{nil, {0}, {0, 9, 0, 0}, EncodeGroupMetadata(group.Snapshot{ProtocolType: "consumer", Generation: 1}, 0)[:5]} {
		if _, err := DecodeGroupMetadata(bad); !errors.Is(err, ErrBadRecord) {
			t.Errorf("DecodeGroupMetadata(%x) = %v, want ErrBadRecord", bad, err)
		}
	}
}
