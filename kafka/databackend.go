// databackend.go holds the seam of the data APIs (Produce, Fetch,
// ListOffsets, OffsetForLeaderEpoch, InitProducerId): the DataBackend
// interface, set apart from Backend through Config.Data, and the plain
// structs it takes and answers with. Every call is about one partition; the
// handlers fan out over a request's partitions themselves and answer once.
// The host implements it over its local replicas; tests with an in-memory
// fake. Nothing here imports actors/*.

package kafka

import (
	"context"
	"time"
)

// DataBackend is what the data APIs need from the host. When Config.Data is
// nil those APIs are neither advertised nor served.
//
// Every method may be called concurrently from many connections. Blocking
// methods must return once ctx is done and should bound their own actor
// requests with timeouts; a returned error is a local fault that closes the
// connection that asked (see Backend). Per-partition failures (routing:
// NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, FENCED_LEADER_EPOCH,
// UNKNOWN_LEADER_EPOCH; data: OFFSET_OUT_OF_RANGE, OUT_OF_ORDER_SEQUENCE_NUMBER,
// ...) are Kafka error codes in the results (messages/errors.proto numbers).
type DataBackend interface {
	AppendBackend
	ReadBackend
	OffsetsBackend
	ProducerIDBackend
}

// AppendBackend appends produced batches (Produce, API key 0).
type AppendBackend interface {
	// Append starts appending req.Batch to one partition and returns at
	// once; the result is sent on the returned channel exactly once (a
	// buffered channel, so the sender never blocks). Append must not
	// block: it hands the batch to the partition (an actor implementation
	// sends the replica its message, ctx.RequestFuture, before returning)
	// and delivers the answer later. Calls made one after another from
	// one goroutine must reach a partition in that order: a connection's
	// pipelined produces (idempotent sequences) rely on it.
	//
	// The batch is one RecordBatch v2 as the client sent it (validated:
	// magic 2, CRC, one batch, not transactional); the backend assigns
	// its base offset and leader epoch and deduplicates idempotent
	// batches. A local fault (the replica did not answer within
	// req.Timeout) is reported as REQUEST_TIMED_OUT, as Kafka does.
	Append(ctx context.Context, req AppendRequest) <-chan AppendResult
}

// AppendRequest is one partition's part of a Produce request.
type AppendRequest struct {
	// Topic and Partition name the partition.
	Topic     string
	Partition int32
	// Acks is the request's acks: 0 and 1 answer once the leader wrote
	// the batch, -1 (all) once the in-sync replicas have it. With acks=0
	// nothing reaches the client but errors still close the connection.
	Acks int16
	// Timeout is the request's timeout_ms: how long acks=-1 may wait for
	// the in-sync replicas.
	Timeout time.Duration
	// Batch is the record batch, owned by the backend from now on.
	Batch []byte
}

// AppendResult is how one partition's append ended.
type AppendResult struct {
	// ErrorCode is 0 on success, else a Kafka error code.
	ErrorCode int16
	// ErrorMessage, optional, is sent from Produce v8.
	ErrorMessage string
	// BaseOffset is the offset given to the batch's first record (for a
	// duplicate idempotent batch, the offset it was given the first
	// time).
	BaseOffset int64
	// LogAppendTime is the time the broker stamped on the batch when the
	// topic uses LogAppendTime, else -1.
	LogAppendTime int64
	// LogStartOffset is the partition's log start offset (sent from v5).
	LogStartOffset int64
}

// ReadBackend reads partitions and wakes waiting fetches (Fetch, API key 1).
type ReadBackend interface {
	// Read returns what q's partition holds now from q.Offset: whole
	// batches, starting with the one that holds q.Offset, below the high
	// watermark (below the last stable offset when q.ReadCommitted), at
	// most q.MaxBytes of them but always the first one if there is any,
	// however large. It never waits for data: the listener waits with
	// WatchHighWatermarks.
	Read(ctx context.Context, q ReadQuery) (ReadResult, error)
	// WatchHighWatermarks asks to be told when a waiting fetch should look
	// again: notify is to be called once any partition of ws has its high
	// watermark pass its Above mark, or stops being readable as it was
	// (no longer led here, leader epoch changed, deleted, log start moved
	// past Above) — at once if that is already so when the watch arrives,
	// so a write between a Read and the watch is not missed. It returns
	// at once. notify may be called more than once and from any goroutine
	// (the listener keeps the first); it must not block. An actor
	// implementation sends each replica a watch message carrying notify,
	// and the replica calls it from its append or high-watermark path.
	// When ctx is done (the fetch's max_wait passed, it was answered, or
	// its connection closed) the watch is over: the backend must forget
	// it then (context.AfterFunc sending an unwatch message suits actors)
	// and never keep it past that.
	WatchHighWatermarks(ctx context.Context, ws []WatchPartition, notify func())
}

// ReadQuery is one partition of a Fetch request.
type ReadQuery struct {
	// Topic and Partition name the partition.
	Topic     string
	Partition int32
	// Offset is the fetch offset.
	Offset int64
	// MaxBytes bounds the batches returned (the first one excepted).
	MaxBytes int32
	// CurrentLeaderEpoch is the client's idea of the leader epoch (v9+),
	// -1 when not sent: older is FENCED_LEADER_EPOCH, newer
	// UNKNOWN_LEADER_EPOCH.
	CurrentLeaderEpoch int32
	// LastFetchedEpoch is the epoch of the last batch the client fetched
	// (v12+), -1 when not sent; a backend that checks it reports a
	// divergence in ReadResult.Diverging.
	LastFetchedEpoch int32
	// ReadCommitted is isolation level 1: read below the last stable
	// offset.
	ReadCommitted bool
}

// ReadResult is what Read found in one partition.
type ReadResult struct {
	// ErrorCode is 0, or a Kafka error code for the partition (Records is
	// then ignored).
	ErrorCode int16
	// HighWatermark, LastStableOffset and LogStartOffset are the
	// partition's, as of the read. With no transactions the last stable
	// offset is the high watermark.
	HighWatermark    int64
	LastStableOffset int64
	LogStartOffset   int64
	// Records are whole RecordBatch v2 batches, concatenated as stored
	// (base offsets and leader epochs assigned); may be empty. The
	// listener may drop trailing batches to fit the request's max_bytes.
	Records []byte
	// Diverging, when set, is the epoch and end offset at which the
	// client's log diverged from the leader's (v12+, KIP-595).
	Diverging *EpochEndOffset
}

// WatchPartition is one partition a waiting fetch watches.
type WatchPartition struct {
	// Topic and Partition name the partition.
	Topic     string
	Partition int32
	// Above: notify once the partition's high watermark is above it
	// (with no transactions the last stable offset, which read_committed
	// fetches read below, is the high watermark).
	Above int64
}

// OffsetsBackend answers ListOffsets (API key 2) and OffsetForLeaderEpoch
// (API key 23).
type OffsetsBackend interface {
	// ListOffset looks up one offset of one partition by q.Timestamp.
	ListOffset(ctx context.Context, q ListOffsetQuery) (ListOffsetResult, error)
	// EpochEndOffset answers OffsetForLeaderEpoch for one partition: the
	// largest epoch at most q.LeaderEpoch the leader knows and the end
	// offset of that epoch (the log end offset for the current epoch);
	// both -1 when the leader knows no such epoch.
	EpochEndOffset(ctx context.Context, q EpochQuery) (EpochEndResult, error)
}

// The special timestamps of ListOffsets.
const (
	// ListLatest (-1) asks for the high watermark (the last stable offset
	// for read_committed).
	ListLatest int64 = -1
	// ListEarliest (-2) asks for the log start offset.
	ListEarliest int64 = -2
	// ListMaxTimestamp (-3, v7+, KIP-734) asks for the offset and
	// timestamp of the record with the largest timestamp.
	ListMaxTimestamp int64 = -3
)

// ListOffsetQuery is one partition of a ListOffsets request.
type ListOffsetQuery struct {
	// Topic and Partition name the partition.
	Topic     string
	Partition int32
	// Timestamp is ListLatest, ListEarliest, ListMaxTimestamp, or a time
	// in Unix milliseconds: the first offset whose record timestamp is at
	// or after it, below the high watermark.
	Timestamp int64
	// CurrentLeaderEpoch is the client's leader epoch (v4+), -1 if not
	// sent.
	CurrentLeaderEpoch int32
	// ReadCommitted is isolation level 1 (v2+).
	ReadCommitted bool
}

// ListOffsetResult is the answer for one partition. When nothing matches
// a timestamp, Offset, Timestamp and LeaderEpoch are -1.
type ListOffsetResult struct {
	// ErrorCode is 0, or a Kafka error code for the partition.
	ErrorCode int16
	// Offset is the offset found.
	Offset int64
	// Timestamp is the found record's timestamp (Unix milliseconds); -1
	// for ListLatest and ListEarliest.
	Timestamp int64
	// LeaderEpoch is the leader epoch of the record at Offset (sent from
	// v4).
	LeaderEpoch int32
}

// EpochQuery is one partition of an OffsetForLeaderEpoch request.
type EpochQuery struct {
	// Topic and Partition name the partition.
	Topic     string
	Partition int32
	// LeaderEpoch is the epoch whose end offset is asked for.
	LeaderEpoch int32
	// CurrentLeaderEpoch is the client's leader epoch, -1 if not sent.
	CurrentLeaderEpoch int32
}

// EpochEndOffset is a leader epoch and the offset where it ends.
type EpochEndOffset struct {
	// LeaderEpoch is the epoch, -1 for none.
	LeaderEpoch int32
	// EndOffset is the offset after the epoch's last record (the first of
	// the next epoch), -1 for none.
	EndOffset int64
}

// EpochEndResult is the OffsetForLeaderEpoch answer for one partition.
type EpochEndResult struct {
	// ErrorCode is 0, or a Kafka error code for the partition.
	ErrorCode int16
	EpochEndOffset
}

// ProducerIDBackend allocates producer ids (InitProducerId, API key 22).
type ProducerIDBackend interface {
	// InitProducerID returns a producer id and epoch for an idempotent
	// producer. q.ProducerID and q.ProducerEpoch are the producer's
	// current ones (v3+, KIP-360) or -1: the backend may bump the epoch
	// of a known id or hand out a new id. Transactional ids never reach
	// it: the listener refuses them.
	InitProducerID(ctx context.Context, q ProducerIDQuery) (ProducerIDResult, error)
}

// ProducerIDQuery is an idempotent InitProducerId request.
type ProducerIDQuery struct {
	// ProducerID and ProducerEpoch are the producer's current ones, -1
	// when it has none (or before v3).
	ProducerID    int64
	ProducerEpoch int16
}

// ProducerIDResult is the producer id and epoch handed out, or an error
// code (e.g. COORDINATOR_NOT_AVAILABLE when ids cannot be allocated now).
type ProducerIDResult struct {
	// ErrorCode is 0, or a Kafka error code.
	ErrorCode int16
	// ProducerID and ProducerEpoch are what the producer is to use.
	ProducerID    int64
	ProducerEpoch int16
}
