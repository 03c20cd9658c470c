// placement.go holds which offsets topic partition, and so which
// coordinator, hosts a group, and what a valid group id is.

package coordinator

import (
	"fmt"

	"github.com/actorlog/actorlog/messages"
)

// PartitionFor returns the offsets topic partition that holds group among
// partitions (>= 1): toPositive(murmur2(group)) % partitions, the very
// function the producer places keyed records with (messages.KeyPartition) (DESIGN §6), so the
// group's records land where a keyed producer would put key group. (Kafka
// itself uses abs(group.hashCode()) % partitions, Java's String hash, so
// a group's partition number differs from Kafka's.) It panics if
// partitions < 1.
func PartitionFor(group string, partitions int) int32 {
	return messages.KeyPartition([]byte(group), partitions)
}

// ValidateGroupID checks a group id as Kafka does (not empty) and that it
// fits a record key. It returns INVALID_GROUP_ID and a detail, or
// ERROR_CODE_UNSPECIFIED.
func ValidateGroupID(group string) (messages.ErrorCode, string) {
	switch {
	case group == "":
		return messages.ErrorCode_ERROR_CODE_INVALID_GROUP_ID, "the group id is empty"
	case len(group) > MaxGroupIDLength:
		return messages.ErrorCode_ERROR_CODE_INVALID_GROUP_ID, fmt.Sprintf("the group id has %d bytes, at most %d allowed", len(group), MaxGroupIDLength)
	}
	return messages.ErrorCode_ERROR_CODE_UNSPECIFIED, ""
}
