// Package group is the pure core of consumer groups (DESIGN §6): Kafka's
// classic group membership protocol as a state machine, and the assignors a
// group leader runs. It does no I/O, starts no goroutines and holds no clock;
// the coordinator actor is the shell that feeds it requests and carries out
// what it returns, as etcd-io/raft's node wraps its raft state machine.
//
// # Membership (Group)
//
// One Group per consumer group, owned by one goroutine (the coordinator
// actor's Receive); it is not safe for concurrent use. It follows Kafka's
// GroupCoordinator and GroupMetadata (classic protocol, JoinGroup v9) with
// KIP-394 (a first join without a member id is answered MEMBER_ID_REQUIRED
// with the id to use) and KIP-345 (static members, group.instance.id).
//
// Every method that can change the group takes now, the shell's current time,
// and returns Effects:
//
//   - Replies: responses to send. JoinGroup and SyncGroup are not always
//     answered at once (a join waits for the rest of the group, a follower's
//     sync for the leader's assignments), so the shell hands Join and Sync an
//     opaque Token that identifies the request (e.g. the sender's PID and the
//     request's correlation id) and sends each Reply to the request its Token
//     names. Every Token given to Join or Sync is answered exactly once, by
//     that call or a later one (Unload answers all that are left).
//   - Wake: when the shell must call Tick next (rebalance timeout, initial
//     rebalance delay, session expiries); zero when nothing is timed. A Tick
//     before Wake is harmless, so the shell may keep one timer and simply
//     re-arm it with the latest Wake after every call.
//
// Heartbeat, Leave, CanCommit and Delete answer at once. Describe and Listed
// are read-only views.
//
// # Durability (Snapshot, Restore)
//
// When a group is Durable (Stable or Empty), Snapshot is what the
// coordinator writes to the offsets topic (Kafka's GroupMetadataValue):
// generation, protocol, leader, members and assignments. A coordinator that
// takes over after a failover rebuilds the group with Restore, so members
// keep their ids, generation and assignments.
//
// # Offset expiry (ExpireOffsets, OffsetsExpired)
//
// The group remembers when it became Empty (persisted in its Snapshot,
// Kafka's current_state_timestamp). The shell holds the committed offsets
// and, every Config.OffsetsRetentionCheckInterval, asks ExpireOffsets which
// have expired (KIP-211: an Empty group's offsets OffsetsRetention after it
// emptied; a group that never had members, each offset OffsetsRetention
// after its commit; never while the group has members) and whether the
// group goes with them; it writes their tombstones and, once durable, calls
// OffsetsExpired, which makes a group still Empty and without offsets Dead.
//
// # Assignors
//
// Assignment is client-side in Kafka: the member the coordinator names leader
// decodes every member's subscription from its JoinGroupResponse, runs the
// chosen assignor and sends the result in its SyncGroup. Range, RoundRobin
// and CooperativeSticky implement Assignor over subscriptions and assignments
// in Kafka's ConsumerProtocol formats (EncodeSubscription, DecodeAssignment,
// ...), so they are pure functions the consumer actor calls; Assign ties
// decoding, assigning and encoding together for the leader.
package group
