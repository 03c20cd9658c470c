// coordinator.go holds the names shared by the group coordinators, the
// brokers that place them and the clients that find them: the internal
// offsets topic and the coordinator actors' well-known ids.

package messages

import "strconv"

// OffsetsTopic is the internal topic that holds the consumer groups'
// committed offsets (and, with the membership core, group metadata), as
// Kafka's. The controller creates it on the first FindCoordinator; clients
// may read it but not produce to it, delete it or add partitions to it.
const OffsetsTopic = "__consumer_offsets"

// IsInternalTopic reports whether name is a topic the cluster manages
// itself (OffsetsTopic).
func IsInternalTopic(name string) bool { return name == OffsetsTopic }

// CoordinatorActorID is the id of the group coordinator actor of
// OffsetsTopic partition partition, a child of the broker actor on the host
// that leads the partition.
func CoordinatorActorID(partition int32) string {
	return BrokerActorID + "/" + CoordinatorActorName(partition)
}

// CoordinatorActorName is the name the broker spawns a coordinator actor
// under.
func CoordinatorActorName(partition int32) string {
	return "coordinator/" + strconv.Itoa(int(partition))
}

// Err returns the response's error_code and error_message as an error, or nil
// on success. Safe on a nil response (returns nil).
func (x *FindCoordinatorResponse) Err() error { return x.GetErrorCode().Err(x.GetErrorMessage()) }

// Err returns the response's request-level error_code and error_message as
// an error, or nil; per-partition results are not looked at. Safe on a nil
// response (returns nil).
func (x *OffsetCommitResponse) Err() error { return x.GetErrorCode().Err(x.GetErrorMessage()) }

// Err returns the response's error_code and error_message as an error, or nil
// on success. Safe on a nil response (returns nil).
func (x *OffsetFetchResponse) Err() error { return x.GetErrorCode().Err(x.GetErrorMessage()) }
