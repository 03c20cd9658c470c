// records.go holds the format of the records in the offsets topic, which is
// Kafka's own (so Kafka tools could read the topic), encoded and decoded
// with franz-go's kmsg:
//
//   - an offset commit: key OffsetCommitKey version 1 (int16 version,
//     string group, string topic, int32 partition; version 0 has the same
//     layout and is read too), value OffsetCommitValue version 3 (int16
//     version, int64 offset, int32 leader epoch, string metadata, int64
//     commit timestamp in ms; versions 0 to 4 are read). A null value is a
//     tombstone: the group's offset for the partition is deleted.
//   - group metadata: key GroupMetadataKey version 2 (int16 version, string
//     group), value GroupMetadataValue version 3 (int16 version, string
//     protocol type, int32 generation, nullable string protocol, nullable
//     string leader, int64 state timestamp in ms, then per member: string
//     member id, nullable string instance id, string client id, string
//     client host, int32 rebalance timeout, int32 session timeout, bytes
//     subscription, bytes assignment; versions 0 to 4 are read). A null
//     value is a tombstone: the group was deleted. DecodeRecord hands the
//     value over raw (the membership core decodes it when loading ends,
//     with DecodeGroupMetadata).
//
// Strings are int16-length-prefixed, all integers big-endian, as in
// Kafka's __consumer_offsets. Records are written one per committed
// partition in a plain (uncompressed, non-idempotent) RecordBatch v2.

package coordinator

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/actors/group"
)

// Record key versions in the offsets topic (Kafka's).
const (
	offsetCommitKeyV0 int16 = 0
	offsetCommitKeyV1 int16 = 1
	groupMetadataKey  int16 = 2
	// offsetCommitValueVersion is the value version written (KIP-320:
	// with the leader epoch, without the expire timestamp).
	offsetCommitValueVersion int16 = 3
	maxOffsetCommitValue     int16 = 4
	// groupMetadataValueVersion is the group metadata value version
	// written (KIP-345: with the members' instance ids).
	groupMetadataValueVersion int16 = 3
	maxGroupMetadataValue     int16 = 4
)

// ErrBadRecord means a record of the offsets topic cannot be decoded.
var ErrBadRecord = errors.New("coordinator: malformed offsets topic record")

// OffsetKey names one committed offset: a group's position in a partition.
type OffsetKey struct {
	Group     string
	Topic     string
	Partition int32
}

// OffsetValue is a committed offset.
type OffsetValue struct {
	// Offset is the next offset the group will consume.
	Offset int64
	// LeaderEpoch is the leader epoch of the last consumed record, -1 when
	// unknown.
	LeaderEpoch int32
	// Metadata is the committer's free text.
	Metadata string
	// CommitTimestamp is when the coordinator wrote it, in ms since the
	// Unix epoch.
	CommitTimestamp int64
}

// EncodeOffsetKey returns k as an OffsetCommitKey version 1.
func EncodeOffsetKey(k OffsetKey) []byte {
	key := kmsg.OffsetCommitKey{Version: offsetCommitKeyV1, Group: k.Group, Topic: k.Topic, Partition: k.Partition}
	return key.AppendTo(nil)
}

// EncodeOffsetValue returns v as an OffsetCommitValue version 3.
func EncodeOffsetValue(v OffsetValue) []byte {
	val := kmsg.OffsetCommitValue{
		Version: offsetCommitValueVersion, Offset: v.Offset, LeaderEpoch: v.LeaderEpoch,
		Metadata: v.Metadata, CommitTimestamp: v.CommitTimestamp,
	}
	return val.AppendTo(nil)
}

// RecordKind says what a record of the offsets topic holds.
type RecordKind int

const (
	// KindOffsetCommit is a committed offset (or its tombstone).
	KindOffsetCommit RecordKind = iota + 1
	// KindGroupMetadata is a group's membership state (or its tombstone).
	KindGroupMetadata
)

// Decoded is one decoded record of the offsets topic.
type Decoded struct {
	Kind RecordKind
	// Key and Value are set for KindOffsetCommit; Value is nil for a
	// tombstone.
	Key   OffsetKey
	Value *OffsetValue
	// Group and GroupValue are set for KindGroupMetadata; GroupValue (the
	// raw value, aliasing the record) is nil for a tombstone.
	Group      string
	GroupValue []byte
}

// DecodeRecord decodes a record's key and value (nil: a tombstone). The
// error wraps ErrBadRecord: a key or value too short for its fields, or a
// key or value version this package does not know. Bytes after the fields
// are ignored, as Kafka does.
func DecodeRecord(key, value []byte) (Decoded, error) {
	if len(key) < 2 {
		return Decoded{}, fmt.Errorf("%w: key of %d bytes", ErrBadRecord, len(key))
	}
	switch v := int16(binary.BigEndian.Uint16(key)); v {
	case offsetCommitKeyV0, offsetCommitKeyV1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(key); err != nil {
			return Decoded{}, fmt.Errorf("%w: offset commit key: %v", ErrBadRecord, err)
		}
		d := Decoded{Kind: KindOffsetCommit, Key: OffsetKey{Group: k.Group, Topic: k.Topic, Partition: k.Partition}}
		if value == nil {
			return d, nil
		}
		val, err := decodeOffsetValue(value)
		if err != nil {
			return Decoded{}, err
		}
		d.Value = &val
		return d, nil
	case groupMetadataKey:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			return Decoded{}, fmt.Errorf("%w: group metadata key: %v", ErrBadRecord, err)
		}
		return Decoded{Kind: KindGroupMetadata, Group: k.Group, GroupValue: value}, nil
	default:
		return Decoded{}, fmt.Errorf("%w: unknown key version %d", ErrBadRecord, v)
	}
}

func decodeOffsetValue(value []byte) (OffsetValue, error) {
	if len(value) < 2 {
		return OffsetValue{}, fmt.Errorf("%w: offset commit value of %d bytes", ErrBadRecord, len(value))
	}
	if v := int16(binary.BigEndian.Uint16(value)); v < 0 || v > maxOffsetCommitValue {
		return OffsetValue{}, fmt.Errorf("%w: unknown offset commit value version %d", ErrBadRecord, v)
	}
	var val kmsg.OffsetCommitValue
	if err := val.ReadFrom(value); err != nil {
		return OffsetValue{}, fmt.Errorf("%w: offset commit value: %v", ErrBadRecord, err)
	}
	epoch := val.LeaderEpoch
	if val.Version < 3 {
		epoch = -1 // not recorded before KIP-320
	}
	return OffsetValue{Offset: val.Offset, LeaderEpoch: epoch, Metadata: val.Metadata, CommitTimestamp: val.CommitTimestamp}, nil
}

// MaxGroupIDLength is the longest group id: keys hold it as a Kafka string
// (int16 length).
const MaxGroupIDLength = math.MaxInt16

// EncodeGroupMetadataKey returns group's GroupMetadataKey version 2.
func EncodeGroupMetadataKey(group string) []byte {
	key := kmsg.GroupMetadataKey{Version: groupMetadataKey, Group: group}
	return key.AppendTo(nil)
}

// EncodeGroupMetadata returns s as a GroupMetadataValue version 3, stamped
// with stateMs (the time the group entered its state, ms since the Unix
// epoch; for a group without members, when it became Empty, -1 when
// unknown: DecodeGroupMetadata reads it back as Snapshot.EmptySince). A group without members has a null protocol and leader, as
// Kafka writes it.
func EncodeGroupMetadata(s group.Snapshot, stateMs int64) []byte {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupMetadataValueVersion
	v.ProtocolType, v.Generation, v.CurrentStateTimestamp = s.ProtocolType, s.Generation, stateMs
	if len(s.Members) > 0 {
		v.Protocol, v.Leader = kmsg.StringPtr(s.ProtocolName), kmsg.StringPtr(s.Leader)
	}
	for _, m := range s.Members {
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID, vm.ClientID, vm.ClientHost = m.ID, m.ClientID, m.ClientHost
		if m.InstanceID != "" {
			vm.InstanceID = kmsg.StringPtr(m.InstanceID)
		}
		vm.RebalanceTimeoutMillis = int32(m.RebalanceTimeout / time.Millisecond)
		vm.SessionTimeoutMillis = int32(m.SessionTimeout / time.Millisecond)
		vm.Subscription, vm.Assignment = m.Metadata, m.Assignment
		if vm.Assignment == nil {
			vm.Assignment = []byte{}
		}
		v.Members = append(v.Members, vm)
	}
	return v.AppendTo(nil)
}

// DecodeGroupMetadata decodes a GroupMetadataValue of versions 0 to 4 (a
// rebalance timeout missing before v1 is the session timeout; instance ids
// are empty before v3; a group without members gets its state timestamp,
// from v2, as EmptySince unless it is negative). The byte slices are copies. The error wraps
// ErrBadRecord.
func DecodeGroupMetadata(value []byte) (group.Snapshot, error) {
	if len(value) < 2 {
		return group.Snapshot{}, fmt.Errorf("%w: group metadata value of %d bytes", ErrBadRecord, len(value))
	}
	if v := int16(binary.BigEndian.Uint16(value)); v < 0 || v > maxGroupMetadataValue {
		return group.Snapshot{}, fmt.Errorf("%w: unknown group metadata value version %d", ErrBadRecord, v)
	}
	var v kmsg.GroupMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return group.Snapshot{}, fmt.Errorf("%w: group metadata value: %v", ErrBadRecord, err)
	}
	s := group.Snapshot{ProtocolType: v.ProtocolType, Generation: v.Generation}
	if len(v.Members) == 0 && v.Version >= 2 && v.CurrentStateTimestamp >= 0 {
		// When the group became Empty (Kafka's current_state_timestamp,
		// from v2; -1 when unknown), from which its offsets expire.
		s.EmptySince = time.UnixMilli(v.CurrentStateTimestamp)
	}
	if v.Protocol != nil {
		s.ProtocolName = *v.Protocol
	}
	if v.Leader != nil {
		s.Leader = *v.Leader
	}
	for _, m := range v.Members {
		ms := group.MemberSnapshot{
			ID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost,
			SessionTimeout:   time.Duration(m.SessionTimeoutMillis) * time.Millisecond,
			RebalanceTimeout: time.Duration(m.RebalanceTimeoutMillis) * time.Millisecond,
			Metadata:         bytes.Clone(m.Subscription), Assignment: bytes.Clone(m.Assignment),
		}
		if m.InstanceID != nil {
			ms.InstanceID = *m.InstanceID
		}
		if v.Version < 1 || ms.RebalanceTimeout <= 0 {
			ms.RebalanceTimeout = ms.SessionTimeout
		}
		s.Members = append(s.Members, ms)
	}
	return s, nil
}
