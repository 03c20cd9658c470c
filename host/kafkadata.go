// kafkadata.go holds kafkaData, the host's kafka.DataBackend: the Kafka
// listener's data APIs (Produce, Fetch, ListOffsets, OffsetForLeaderEpoch,
// InitProducerId) over the LOCAL partition replica actors and the local
// broker — never over the network (DESIGN §9). Each call is one native
// request to one replica, addressed by its well-known id
// (messages.ReplicaActorID) on this host's actor system:
//
//   - Append: messages.ProduceRequest, sent before Append returns (so
//     pipelined appends reach the replica's mailbox in call order and go
//     through its idempotent deduplication unchanged); the answer goes to
//     the call's own answer process (replicaCall, kafkadata_call.go),
//     which maps it where it arrives, with no goroutine per append.
//     acks=0 is a plain send: the replica answers nothing.
//   - Read: messages.FetchRequest with max_wait 0 (a consumer fetch,
//     replica_id -1, below the high watermark); with a last fetched
//     epoch, also an OffsetForLeaderEpochRequest for the diverging-epoch
//     check the replica makes only for followers.
//   - WatchHighWatermarks: native long-poll FetchRequests (min_bytes 1)
//     shared per partition and mark (kafkadata_watch.go).
//   - ListOffset, EpochEndOffset: ListOffsetsRequest and
//     OffsetForLeaderEpochRequest (replica_id -1).
//   - InitProducerID: the broker's InitProducerIdRequest (a new id from the
//     host's block; epochs are never bumped).
//
// A partition with no replica actor here (protoactor answers the request
// as a dead letter) gets NOT_LEADER_OR_FOLLOWER when the broker's metadata
// cache knows it, UNKNOWN_TOPIC_OR_PARTITION otherwise; a follower replica
// answers NOT_LEADER_OR_FOLLOWER itself.

package host

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/broker"
	"github.com/actorlog/actorlog/actors/replica"
	"github.com/actorlog/actorlog/kafka"
	"github.com/actorlog/actorlog/messages"
)

// Data backend bounds.
const (
	// kafkaReplicaTimeout bounds one read-side request to a local replica
	// (Read, ListOffset, EpochEndOffset).
	kafkaReplicaTimeout = 10 * time.Second
)

// kafkaAppendSlack is how much longer than the produce's own timeout an
// append waits for the replica's answer before it reports REQUEST_TIMED_OUT
// (the replica answers acks=all timeouts itself). A variable only so that
// tests can shorten it.
var kafkaAppendSlack = 5 * time.Second

// kafkaData is the kafka.DataBackend of a host. Safe for concurrent use:
// it holds no state of its own apart from the watch hub (kafkadata_watch.go),
// which has its own lock.
type kafkaData struct {
	// meta answers the broker requests (metadata cache, producer ids).
	meta *kafkaBackend
	root *actor.RootContext
	// addr is this host's actor system address, the replicas' PIDs'.
	addr    string
	log     *logrus.Entry
	watches *watchHub
}

var _ kafka.DataBackend = (*kafkaData)(nil)

// newKafkaData returns the data backend over the replicas of the actor
// system at addr, asking meta's broker for metadata and producer ids.
func newKafkaData(meta *kafkaBackend, root *actor.RootContext, addr string, log *logrus.Entry) *kafkaData {
	d := &kafkaData{meta: meta, root: root, addr: addr, log: log}
	d.watches = newWatchHub(root, d.replicaPID, log)
	return d
}

// replicaPID is the PID of the local replica actor of topic-partition
// (which may not exist: requests to it then come back as dead letters).
func (d *kafkaData) replicaPID(topic string, partition int32) *actor.PID {
	return actor.NewPID(d.addr, messages.ReplicaActorID(topic, partition))
}

// request sends msg to the local replica of topic-partition and waits for
// its answer, at most timeout and until ctx is done. A missing replica, or
// one that stops before it answers (the call watches it: a replica stopped
// during a failover drops its mailbox unanswered), is errNoReplica at
// once; any other failure is wrapped.
//
// A deadline of ctx earlier than timeout ends the wait through ctx (its
// error), not through the call's own timer, so the outcome does not
// depend on which of the two fires first.
func (d *kafkaData) request(ctx context.Context, topic string, partition int32, msg any, timeout time.Duration) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("ask replica %s-%d: %w", topic, partition, err)
	}
	type answer struct {
		res any
		err error
	}
	done := make(chan answer, 1) // the call's one outcome
	call := callReplica(d.root, d.replicaPID(topic, partition), msg, timeout, func(res any, err error) { done <- answer{res, err} })
	var a answer
	select {
	case a = <-done:
	case <-ctx.Done():
		call.finish(nil, ctx.Err())
		a = <-done // ctx's error, or the answer that came first
	}
	switch {
	case errors.Is(a.err, actor.ErrDeadLetter):
		return nil, errNoReplica
	case a.err != nil:
		return nil, fmt.Errorf("ask replica %s-%d: %w", topic, partition, a.err)
	}
	return a.res, nil
}

// errNoReplica: this host runs no replica actor of the partition.
var errNoReplica = errors.New("host: no local replica of the partition")

// routingCode is the error code for a partition with no local replica:
// NOT_LEADER_OR_FOLLOWER when the broker's metadata cache knows the
// partition (it is led elsewhere, or moving), UNKNOWN_TOPIC_OR_PARTITION
// when it does not. When the broker cannot be asked, the retriable
// NOT_LEADER_OR_FOLLOWER: the client refreshes its metadata and learns.
func (d *kafkaData) routingCode(ctx context.Context, topic string, partition int32) int16 {
	notLeader := int16(messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER)
	ctx, cancel := context.WithTimeout(ctx, kafkaAskTimeout)
	defer cancel()
	res, err := d.meta.ask(ctx, &broker.KafkaMetadataRequest{Topics: []string{topic}})
	md, ok := res.(*broker.KafkaMetadata)
	switch {
	case err != nil:
		d.log.WithError(err).WithFields(logrus.Fields{"topic": topic, "partition": partition}).Debug("no local replica and no metadata: answering NOT_LEADER_OR_FOLLOWER")
		return notLeader
	case !ok || !md.Synced:
		return notLeader
	}
	for _, t := range md.Topics {
		if t.GetName() != topic || t.GetDeleting() {
			continue
		}
		for _, p := range t.GetPartitions() {
			if p.GetPartition() == partition {
				return notLeader
			}
		}
	}
	return int16(messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION)
}

// Append implements kafka.AppendBackend: the ProduceRequest is in the
// replica's mailbox when it returns.
func (d *kafkaData) Append(ctx context.Context, req kafka.AppendRequest) <-chan kafka.AppendResult {
	out := make(chan kafka.AppendResult, 1)
	preq := &messages.ProduceRequest{
		Topic: req.Topic, Partition: req.Partition, Acks: nativeAcks(req.Acks),
		TimeoutMs: int32(min(max(req.Timeout.Milliseconds(), 0), math.MaxInt32)), Records: req.Batch,
		CurrentLeaderEpoch: -1,
	}
	pid := d.replicaPID(req.Topic, req.Partition)
	if preq.Acks == messages.Acks_ACKS_NONE {
		// The replica answers nothing; what it did stays unknown, as
		// with Kafka's acks=0.
		d.root.Send(pid, preq)
		out <- kafka.AppendResult{BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}
		return out
	}
	wait := replica.DefaultProduceTimeout
	if preq.TimeoutMs > 0 {
		wait = time.Duration(preq.TimeoutMs) * time.Millisecond
	}
	// The call watches the replica for its length: a replica stopped with
	// this produce still in its mailbox (a follower stopped so that a new
	// leader replica can start, during a failover) drops it unanswered,
	// and without the watch the append would wait out its whole timeout
	// (15 s by default) before the client retried. Its Terminated ends
	// the call at once as "no replica here", which clients retry as soon
	// as their metadata names the new leader.
	//
	// The answer is mapped where it arrives: for a ProduceResponse, the
	// common case, that is the replica's own goroutine, and the mapping
	// is a few field copies and a send that cannot block (out has room
	// for the one result), so an append costs no goroutine of its own.
	// The rarer outcomes that log or ask the broker (a missing replica, a
	// timeout, an unexpected answer) are mapped on a goroutine.
	callReplica(d.root, pid, preq, wait+kafkaAppendSlack, func(res any, err error) {
		if resp, ok := res.(*messages.ProduceResponse); ok && err == nil {
			out <- produceResult(resp)
			return
		}
		go func() { out <- d.appendOutcome(ctx, req, res, err) }()
	})
	return out
}

// produceResult maps the replica's answer to a produce.
func produceResult(resp *messages.ProduceResponse) kafka.AppendResult {
	return kafka.AppendResult{
		ErrorCode: int16(resp.ErrorCode), ErrorMessage: resp.ErrorMessage,
		BaseOffset: resp.BaseOffset, LogAppendTime: resp.LogAppendTimeMs, LogStartOffset: resp.LogStartOffset,
	}
}

// appendOutcome maps the outcome of req's produce: the replica's answer
// res, or err (actor.ErrDeadLetter when there is no local replica,
// actor.ErrTimeout when the replica did not answer in time).
func (d *kafkaData) appendOutcome(ctx context.Context, req kafka.AppendRequest, res any, err error) kafka.AppendResult {
	failed := kafka.AppendResult{BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}
	if errors.Is(err, actor.ErrDeadLetter) {
		failed.ErrorCode = d.routingCode(ctx, req.Topic, req.Partition)
		return failed
	}
	if err != nil {
		err = fmt.Errorf("ask replica %s-%d: %w", req.Topic, req.Partition, err)
		d.log.WithError(err).WithFields(logrus.Fields{"topic": req.Topic, "partition": req.Partition}).Warn("Kafka produce: the local replica did not answer")
		failed.ErrorCode, failed.ErrorMessage = int16(messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT), err.Error()
		return failed
	}
	resp, ok := res.(*messages.ProduceResponse)
	if !ok {
		d.log.WithFields(logrus.Fields{"topic": req.Topic, "partition": req.Partition, "type": fmt.Sprintf("%T", res)}).Error("Kafka produce: unexpected answer from the replica")
		failed.ErrorCode = int16(messages.ErrorCode_ERROR_CODE_UNKNOWN_SERVER_ERROR)
		return failed
	}
	return produceResult(resp)
}

// nativeAcks maps Kafka's acks to the native enum; anything else is
// ACKS_UNSPECIFIED, which the replica refuses with INVALID_REQUIRED_ACKS.
func nativeAcks(acks int16) messages.Acks {
	switch acks {
	case 0:
		return messages.Acks_ACKS_NONE
	case 1:
		return messages.Acks_ACKS_LEADER
	case -1:
		return messages.Acks_ACKS_ALL
	}
	return messages.Acks_ACKS_UNSPECIFIED
}

// isolation maps read_committed to the native isolation level.
func isolation(readCommitted bool) messages.IsolationLevel {
	if readCommitted {
		return messages.IsolationLevel_ISOLATION_LEVEL_READ_COMMITTED
	}
	return messages.IsolationLevel_ISOLATION_LEVEL_UNSPECIFIED
}

// Read implements kafka.ReadBackend with a fetch that does not wait.
func (d *kafkaData) Read(ctx context.Context, q kafka.ReadQuery) (kafka.ReadResult, error) {
	res, err := d.request(ctx, q.Topic, q.Partition, &messages.FetchRequest{
		Topic: q.Topic, Partition: q.Partition, FetchOffset: q.Offset, MaxBytes: max(q.MaxBytes, 0),
		CurrentLeaderEpoch: q.CurrentLeaderEpoch, ReplicaId: -1, LogStartOffset: -1,
		LastFetchedEpoch: q.LastFetchedEpoch, IsolationLevel: isolation(q.ReadCommitted),
	}, kafkaReplicaTimeout)
	if errors.Is(err, errNoReplica) {
		return kafka.ReadResult{ErrorCode: d.routingCode(ctx, q.Topic, q.Partition), HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}, nil
	}
	if err != nil {
		return kafka.ReadResult{}, fmt.Errorf("host: Kafka fetch: %w", err)
	}
	resp, ok := res.(*messages.FetchResponse)
	if !ok {
		return kafka.ReadResult{}, fmt.Errorf("host: Kafka fetch %s-%d: the replica answered %T", q.Topic, q.Partition, res)
	}
	out := kafka.ReadResult{
		ErrorCode: int16(resp.ErrorCode), HighWatermark: resp.HighWatermark, LastStableOffset: resp.LastStableOffset,
		LogStartOffset: resp.LogStartOffset, Records: resp.Records,
	}
	if de := resp.DivergingEpoch; de != nil {
		out.Diverging = &kafka.EpochEndOffset{LeaderEpoch: de.Epoch, EndOffset: de.EndOffset}
	}
	// Checked before the read's own offset check, as Kafka does: a
	// consumer whose log diverged may be past the leader's log end.
	if (out.ErrorCode == 0 || out.ErrorCode == int16(messages.ErrorCode_ERROR_CODE_OFFSET_OUT_OF_RANGE)) && q.LastFetchedEpoch >= 0 {
		return d.checkDiverging(ctx, q, out)
	}
	return out, nil
}

// checkDiverging does for a consumer's read what the replica does only
// for followers (KIP-320, Kafka's Partition.validateLastFetchedEpoch):
// with the epoch of the last batch the consumer fetched, it asks where
// that epoch ends in the leader's log; if the consumer's log diverged
// (truncated by a leader change), out carries no records and the
// diverging epoch, so the client truncates; if the leader knows no such
// epoch, OFFSET_OUT_OF_RANGE. The decision is replica.DivergingEpoch's.
func (d *kafkaData) checkDiverging(ctx context.Context, q kafka.ReadQuery, out kafka.ReadResult) (kafka.ReadResult, error) {
	end, err := d.EpochEndOffset(ctx, kafka.EpochQuery{Topic: q.Topic, Partition: q.Partition, LeaderEpoch: q.LastFetchedEpoch, CurrentLeaderEpoch: q.CurrentLeaderEpoch})
	if err != nil {
		return kafka.ReadResult{}, fmt.Errorf("host: Kafka fetch: last fetched epoch: %w", err)
	}
	if end.ErrorCode != 0 {
		out.ErrorCode, out.Records = end.ErrorCode, nil
		return out, nil
	}
	div, diverging, code := replica.DivergingEpoch(q.LastFetchedEpoch, q.Offset, out.LogStartOffset, func(int32) (int32, int64) {
		return end.LeaderEpoch, end.EndOffset
	})
	switch {
	case code != 0:
		out.ErrorCode, out.Records = int16(code), nil
	case diverging:
		out.ErrorCode, out.Records = 0, nil
		out.Diverging = &kafka.EpochEndOffset{LeaderEpoch: div.Epoch, EndOffset: div.EndOffset}
	}
	return out, nil
}

// WatchHighWatermarks implements kafka.ReadBackend over the watch hub.
func (d *kafkaData) WatchHighWatermarks(ctx context.Context, ws []kafka.WatchPartition, notify func()) {
	d.watches.watch(ctx, ws, notify)
}

// ListOffset implements kafka.OffsetsBackend with a ListOffsetsRequest.
// The native answer for a timestamp no record reaches (the high watermark,
// timestamp -1) becomes Kafka's -1 offset. ListMaxTimestamp is the
// replica's messages.MaxTimestamp look-up (the record with the largest
// timestamp below the high watermark); none is offset and timestamp -1 with
// no error, as Kafka answers an empty partition.
func (d *kafkaData) ListOffset(ctx context.Context, q kafka.ListOffsetQuery) (kafka.ListOffsetResult, error) {
	none := kafka.ListOffsetResult{Offset: -1, Timestamp: -1, LeaderEpoch: -1}
	res, err := d.request(ctx, q.Topic, q.Partition, &messages.ListOffsetsRequest{
		Topic: q.Topic, Partition: q.Partition, Timestamp: q.Timestamp,
		CurrentLeaderEpoch: q.CurrentLeaderEpoch, IsolationLevel: isolation(q.ReadCommitted),
	}, kafkaReplicaTimeout)
	if errors.Is(err, errNoReplica) {
		none.ErrorCode = d.routingCode(ctx, q.Topic, q.Partition)
		return none, nil
	}
	if err != nil {
		return none, fmt.Errorf("host: Kafka list offsets: %w", err)
	}
	resp, ok := res.(*messages.ListOffsetsResponse)
	if !ok {
		return none, fmt.Errorf("host: Kafka list offsets %s-%d: the replica answered %T", q.Topic, q.Partition, res)
	}
	if resp.ErrorCode != 0 {
		none.ErrorCode = int16(resp.ErrorCode)
		return none, nil
	}
	if (q.Timestamp >= 0 || q.Timestamp == kafka.ListMaxTimestamp) && resp.Timestamp < 0 {
		return none, nil // no record that new, or no record at all
	}
	return kafka.ListOffsetResult{Offset: resp.Offset, Timestamp: resp.Timestamp, LeaderEpoch: resp.LeaderEpoch}, nil
}

// EpochEndOffset implements kafka.OffsetsBackend with an
// OffsetForLeaderEpochRequest as a consumer (replica_id -1).
func (d *kafkaData) EpochEndOffset(ctx context.Context, q kafka.EpochQuery) (kafka.EpochEndResult, error) {
	none := kafka.EpochEndResult{EpochEndOffset: kafka.EpochEndOffset{LeaderEpoch: -1, EndOffset: -1}}
	res, err := d.request(ctx, q.Topic, q.Partition, &messages.OffsetForLeaderEpochRequest{
		Topic: q.Topic, Partition: q.Partition, CurrentLeaderEpoch: q.CurrentLeaderEpoch, LeaderEpoch: q.LeaderEpoch, ReplicaId: -1,
	}, kafkaReplicaTimeout)
	if errors.Is(err, errNoReplica) {
		none.ErrorCode = d.routingCode(ctx, q.Topic, q.Partition)
		return none, nil
	}
	if err != nil {
		return none, fmt.Errorf("host: Kafka offset for leader epoch: %w", err)
	}
	resp, ok := res.(*messages.OffsetForLeaderEpochResponse)
	if !ok {
		return none, fmt.Errorf("host: Kafka offset for leader epoch %s-%d: the replica answered %T", q.Topic, q.Partition, res)
	}
	if resp.ErrorCode != 0 {
		none.ErrorCode = int16(resp.ErrorCode)
		return none, nil
	}
	return kafka.EpochEndResult{EpochEndOffset: kafka.EpochEndOffset{LeaderEpoch: resp.LeaderEpoch, EndOffset: resp.EndOffset}}, nil
}

// InitProducerID implements kafka.ProducerIDBackend with the local
// broker's InitProducerIdRequest: always a new id at epoch 0 (the broker
// does not bump the epoch of a known id, which the interface allows).
func (d *kafkaData) InitProducerID(ctx context.Context, _ kafka.ProducerIDQuery) (kafka.ProducerIDResult, error) {
	ctx, cancel := context.WithTimeout(ctx, kafkaReplicaTimeout)
	defer cancel()
	res, err := d.meta.ask(ctx, &messages.InitProducerIdRequest{})
	if err != nil {
		return kafka.ProducerIDResult{}, fmt.Errorf("host: Kafka init producer id: %w", err)
	}
	resp, ok := res.(*messages.InitProducerIdResponse)
	if !ok {
		return kafka.ProducerIDResult{}, fmt.Errorf("host: Kafka init producer id: the broker answered %T", res)
	}
	if resp.ErrorCode != 0 {
		return kafka.ProducerIDResult{ErrorCode: int16(resp.ErrorCode), ProducerID: -1, ProducerEpoch: -1}, nil
	}
	return kafka.ProducerIDResult{ProducerID: resp.ProducerId, ProducerEpoch: int16(resp.ProducerEpoch)}, nil
}
