// errors.go holds the package's sentinel errors. Every error the package
// returns wraps one of these (or a context/etcd error) with context, so
// callers test them with errors.Is.

package cluster

import "errors"

var (
	// ErrInvalidTopic: the topic name breaks Kafka's rule ([a-zA-Z0-9._-],
	// 1 to 249 characters, not "." or "..").
	ErrInvalidTopic = errors.New("cluster: invalid topic name")
	// ErrTopicExists: a topic of that name is already stored.
	ErrTopicExists = errors.New("cluster: topic already exists")
	// ErrUnknownTopic: no topic of that name is stored.
	ErrUnknownTopic = errors.New("cluster: unknown topic")
	// ErrTopicChanged: an optimistic update lost the race; the topic was
	// modified after the revision the caller read it at. Re-read and retry.
	ErrTopicChanged = errors.New("cluster: topic changed concurrently")
	// ErrInvalidPartitions: the partition count is below 1 or above
	// MaxPartitionsPerTopic, or the partition list does not number
	// partitions 0..n-1 in order.
	ErrInvalidPartitions = errors.New("cluster: invalid number of partitions")
	// ErrInvalidReplicationFactor: the replication factor is below 1, above
	// the number of hosts, or does not match a partition's replica list.
	ErrInvalidReplicationFactor = errors.New("cluster: invalid replication factor")
	// ErrInvalidReplicaAssignment: a partition's replicas, leader or ISR are
	// inconsistent (duplicate or unset host ids, a leader outside the ISR,
	// an ISR member that is not a replica).
	ErrInvalidReplicaAssignment = errors.New("cluster: invalid replica assignment")
	// ErrInvalidConfig: a topic config key is unknown or its value is out
	// of range.
	ErrInvalidConfig = errors.New("cluster: invalid topic config")
	// ErrPolicyViolation: the request is well formed but a cluster limit
	// refuses it (it would take a host past its partition capacity, or
	// change an internal topic's configs). Kafka's POLICY_VIOLATION.
	ErrPolicyViolation = errors.New("cluster: policy violation")
	// ErrNotController: the fence of a controller write no longer holds
	// (the election key is gone or was created at another revision), so
	// the writer is not, or no longer, the controller. Nothing was written.
	ErrNotController = errors.New("cluster: not the controller")
	// ErrNoController: no controller is elected at the moment.
	ErrNoController = errors.New("cluster: no controller elected")
	// ErrHostIdentity: a host name is invalid, or it and a host id are
	// bound differently in this cluster already.
	ErrHostIdentity = errors.New("cluster: host name or id conflict")
	// ErrHostRegistered: another live registration holds the host id.
	ErrHostRegistered = errors.New("cluster: host id already registered")
	// ErrLeaseLost: the lease behind an election session or a host
	// registration expired, was revoked, or could not be kept alive.
	ErrLeaseLost = errors.New("cluster: lease lost")
	// ErrCompacted: a watch asked for revisions etcd has compacted away; the
	// caller must list again and watch from the list's revision.
	ErrCompacted = errors.New("cluster: watch revision compacted")
	// ErrWatchEnded: a watch stopped for a reason other than compaction or
	// the caller's context (the etcd member lost its leader, the client was
	// closed, the server cancelled it); list again and re-watch.
	ErrWatchEnded = errors.New("cluster: watch ended")
	// ErrCorruptMetadata: a stored value could not be decoded, or does not
	// match its key.
	ErrCorruptMetadata = errors.New("cluster: corrupt metadata")
)
