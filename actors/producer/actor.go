// actor.go: the producer actor — the shell around Core. Apps send it Send
// messages (from actors, or through the blocking Producer wrapper); it looks
// up topic metadata, batches records per partition, sends ProduceRequests to
// the partitions' leader replicas (resolved once from metadata, then
// messaged directly), retries retriable failures after refreshing
// metadata, and reports each record's offset or error to its sender (a
// Delivered message) or callback. When idempotent (the default) it first
// gets a producer id (InitProducerID, retried with backoff), and gets a new
// one whenever the Accumulator reports a partition's sequence lost.
//
// ProduceResponse error codes and what the actor does:
//   - none: the batch is delivered at base_offset;
//   - DUPLICATE_SEQUENCE_NUMBER: the leader already has the batch but no
//     longer its offset: delivered with offset -1 (as Kafka);
//   - OUT_OF_ORDER_SEQUENCE_NUMBER: Accumulator.OutOfOrderSequence (retried
//     behind an earlier batch, else failed and a new producer id);
//   - UNKNOWN_PRODUCER_ID, INVALID_PRODUCER_EPOCH:
//     Accumulator.ProducerRejected (failed, and a new producer id);
//   - retriable codes: retried after a metadata refresh;
//   - any other: the batch's records fail with it.
//
// Threading: everything is owned by the actor. Metadata lookups run on
// goroutines and timers post messages back; neither touches state.

package producer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage/record"
)

// Send asks the producer to produce one record. The sender (if any) gets a
// *Delivered; Callback, if set, is called instead, inside the producer actor
// (it must not block).
type Send struct {
	Topic string
	// Partition is an explicit partition, or AnyPartition to let the
	// partitioner choose (murmur2 of the key, or sticky when keyless).
	Partition int32
	Key       []byte
	Value     []byte
	Headers   []record.RecordHeader
	// Timestamp in ms; 0 means now.
	Timestamp int64
	Callback  func(Delivered)

	at time.Time // when it was handed to the Producer (zero: when the actor received it)
}

// SendMany produces many records in one message, all reported to
// Callback (or, when nil, to the sender as Delivered messages). Each
// record's own Callback is ignored. It is the cheap way to produce at high
// rates: one mailbox message and one report allocation per SendMany.
type SendMany struct {
	Records  []Send
	Callback func(Delivered)

	at time.Time // as Send.at
}

// Delivered reports one record's fate.
type Delivered struct {
	Topic     string
	Partition int32
	Offset    int64 // -1 on error, or with acks=0
	Err       error
	// Latency is the time from the record being handed to the producer
	// (Producer.Produce, ProduceAsync or ProduceMany; or the producer
	// actor receiving a Send from another actor) to its delivery report.
	Latency time.Duration
}

// StatsRequest asks the producer actor for its ProducerStats (the reply).
type StatsRequest struct{}

// ProducerStats are a producer's counters and current load (see Stats),
// plus the sends it holds back.
type ProducerStats struct {
	Stats
	// Blocked counts sends held back because the buffer memory is full.
	Blocked int
	// WaitingForMetadata counts sends waiting for their topic's metadata.
	WaitingForMetadata int
	// Requests times the produce requests answered so far.
	Requests RequestLatency
}

// RequestLatency times a producer's answered produce requests, from the
// send to the answer's arrival in the producer: Kafka's producer metrics
// request-latency-avg and request-latency-max, over the producer's life
// rather than a window. A request answered with an error counts too; one
// never answered (lost, timed out, acks=0) does not.
type RequestLatency struct {
	Count      uint64
	Total, Max time.Duration
}

// Avg is the mean latency, 0 before any answer.
func (l RequestLatency) Avg() time.Duration {
	if l.Count == 0 {
		return 0
	}
	return l.Total / time.Duration(l.Count)
}

// Add merges o into l (several producers' figures).
func (l *RequestLatency) Add(o RequestLatency) {
	l.Count += o.Count
	l.Total += o.Total
	l.Max = max(l.Max, o.Max)
}

func (l *RequestLatency) observe(d time.Duration) {
	l.Add(RequestLatency{Count: 1, Total: d, Max: d})
}

// Flush asks the producer to send everything buffered; the reply, Flushed,
// comes once every record sent before it has been delivered or failed.
type Flush struct{}

// Flushed answers Flush.
type Flushed struct{}

// Cluster is what the producer actor asks of the cluster besides its
// produce requests: topic metadata and producer ids. *client.Client
// implements it; tests pass a fake. Its methods are called on goroutines of
// their own, never inside the actor.
type Cluster interface {
	Metadata(ctx context.Context, topics ...string) (*messages.MetadataResponse, error)
	InitProducerID(ctx context.Context) (id int64, epoch int16, err error)
}

// ActorConfig configures a producer actor.
type ActorConfig struct {
	// Client is the connection to the cluster. Required unless Cluster is
	// set.
	Client *client.Client
	// Cluster answers metadata and producer-id requests (default Client).
	Cluster Cluster
	// Batching, compression, in-flight, timeout and idempotence settings.
	// Idempotence needs Acks ACKS_ALL: with other acks the default
	// (IdempotenceDefault) is not idempotent, and IdempotenceOn is an
	// error.
	Config
	// Acks: ACKS_NONE, ACKS_LEADER or ACKS_ALL (default ACKS_ALL, as Kafka >= 3.0).
	Acks messages.Acks
	// MetadataMaxAge refreshes topic metadata this often (default 5 min).
	MetadataMaxAge time.Duration
	// Logger (default the Client's, else logrus.StandardLogger).
	Logger *logrus.Entry
}

type (
	tick          struct{}
	metadataReply struct {
		topic string
		md    *messages.TopicMetadataResponse
		err   error
	}
	producerIDReply struct {
		id    int64
		epoch int16
		err   error
	}
)

// maxProducerIDBackoff caps the wait between InitProducerID attempts
// (Kafka's retry.backoff.max.ms).
const maxProducerIDBackoff = time.Second

type topicMeta struct {
	partitions []*messages.PartitionMetadata
	leaders    []*actor.PID // by partition; nil when unknown
	fetched    time.Time
	fetching   bool
	waiting    []*waitingSend // sends that arrived before the metadata
	failures   int
	// leaderless counts the metadata answers in a row that left a
	// partition without a leader while records were pending: the next
	// refresh waits longer each time (Kafka refreshes metadata while a
	// partition with queued batches has no known leader).
	leaderless int
}

type waitingSend struct {
	msg *Send
	r   *report
}

type report struct {
	sender   *actor.PID
	callback func(Delivered)
	at       time.Time
}

type inflight struct {
	id     BatchID
	tp     TopicPartition
	leader *actor.PID
	epoch  int32 // the leader epoch it was sent under
	sentAt time.Time
}

// producerActor is the actor; create it with ActorProps.
type producerActor struct {
	cfg    ActorConfig
	core   *Core
	logger *logrus.Entry
	topics map[string]*topicMeta
	// lastTopic and lastMeta cache the last topic a record was sent to
	// (a map lookup per record showed in profiles); lastMeta is nil when
	// the cache is empty.
	lastTopic string
	lastMeta  *topicMeta
	inflight  map[int64]inflight // by correlation id
	// scratch is the slice successful responses' deliveries are built in,
	// reused (deliverScratch).
	scratch []Delivery
	// endpoints is the subscription to the remote's endpoint events.
	endpoints *eventstream.Subscription
	blocked   []*waitingSend // sends refused with ErrBufferFull, retried after completions
	flushers  []*actor.PID
	timerAt   time.Time   // when timer fires; zero when it is not armed
	timer     *time.Timer // the one wake-up timer, re-armed by armTimer
	// rpcTimeout bounds one metadata or producer-id request.
	rpcTimeout time.Duration
	// pidFetching: an InitProducerID is under way; pidFailures counts
	// those that failed in a row.
	pidFetching bool
	pidFailures int
	// requests times the answered produce requests (ProducerStats).
	requests RequestLatency
}

// ActorProps returns the producer actor's props, or an error for a bad config.
func ActorProps(cfg ActorConfig) (*actor.Props, error) {
	if cfg.Client == nil && cfg.Cluster == nil {
		return nil, fmt.Errorf("%w: a client is required", ErrInvalidConfig)
	}
	if cfg.Cluster == nil {
		cfg.Cluster = cfg.Client
	}
	if cfg.Acks == messages.Acks_ACKS_UNSPECIFIED {
		cfg.Acks = messages.Acks_ACKS_ALL
	}
	if cfg.MetadataMaxAge <= 0 {
		cfg.MetadataMaxAge = 5 * time.Minute
	}
	if cfg.Logger == nil {
		if cfg.Client != nil {
			cfg.Logger = cfg.Client.Logger()
		} else {
			cfg.Logger = logrus.NewEntry(logrus.StandardLogger())
		}
	}
	if cfg.RequestTimeout == 0 && cfg.Client != nil {
		cfg.RequestTimeout = cfg.Client.RequestTimeout()
	}
	asked := cfg.Idempotence
	var err error
	cfg.Config.RecycleSent = cfg.Acks != messages.Acks_ACKS_NONE
	if cfg.Config, err = cfg.Config.withAcks(cfg.Acks == messages.Acks_ACKS_ALL); err != nil {
		return nil, fmt.Errorf("acks %v: %w", cfg.Acks, err)
	}
	core, err := NewCore(cfg.Config, nil) // validate once; each incarnation builds its own
	if err != nil {
		return nil, err
	}
	eff := core.Accumulator.Config()
	if asked == IdempotenceDefault && !eff.idempotent() {
		cfg.Logger.WithFields(logrus.Fields{"acks": cfg.Acks.String(), "max_in_flight": eff.MaxInFlight, "max_in_flight_idempotent": MaxInFlightIdempotent}).
			Info("producer: not idempotent: idempotence needs acks=all and at most max_in_flight_idempotent batches in flight")
	}
	rpcTimeout := eff.RequestTimeout
	if cfg.Client != nil {
		rpcTimeout = cfg.Client.RequestTimeout()
	}
	return actor.PropsFromProducer(func() actor.Actor {
		c, err := NewCore(cfg.Config, nil)
		if err != nil {
			panic(err) // validated above
		}
		return &producerActor{cfg: cfg, core: c, logger: cfg.Logger.WithField("component", "producer"),
			topics: map[string]*topicMeta{}, inflight: map[int64]inflight{}, rpcTimeout: rpcTimeout}
	}), nil
}

// Receive dispatches the producer's messages.
func (p *producerActor) Receive(ctx actor.Context) {
	now := time.Now()
	switch msg := ctx.Message().(type) {
	case *Send:
		p.onSend(ctx, now, msg, &report{sender: ctx.Sender(), callback: msg.Callback, at: handedAt(msg.at, now)})
		return
	case *SendMany:
		r := &report{sender: ctx.Sender(), callback: msg.Callback, at: handedAt(msg.at, now)}
		for i := range msg.Records {
			p.onSend(ctx, now, &msg.Records[i], r)
		}
		return
	case *actor.DeadLetterResponse:
		p.onDeadLetter(ctx, time.Now(), msg)
	case endpointGone:
		p.onEndpointGone(ctx, time.Now(), msg.address)
	case *messages.ProduceResponse:
		p.onResponse(ctx, now, msg)
	case metadataReply:
		p.onMetadata(ctx, now, msg)
	case producerIDReply:
		p.onProducerID(msg)
	case tick:
		p.timerAt = time.Time{}
	case *StatsRequest:
		st := ProducerStats{Stats: p.core.Accumulator.Stats(), Blocked: len(p.blocked), Requests: p.requests}
		for _, tm := range p.topics {
			st.WaitingForMetadata += len(tm.waiting)
		}
		ctx.Respond(&st)
		return
	case *Flush:
		p.core.Accumulator.Flush()
		if p.idle() {
			ctx.Respond(&Flushed{})
		} else if ctx.Sender() != nil {
			p.flushers = append(p.flushers, ctx.Sender())
		}
	case *actor.Stopping:
		p.deliver(ctx, p.core.Accumulator.Abort(errors.New("producer: stopped")))
		stopped := errors.New("producer: stopped")
		now = time.Now()
		for _, w := range p.blocked {
			p.reply(ctx, now, w.r, Delivered{Topic: w.msg.Topic, Partition: w.msg.Partition, Offset: -1, Err: stopped})
		}
		p.blocked = nil
		for _, tm := range p.topics {
			for _, w := range tm.waiting {
				p.reply(ctx, now, w.r, Delivered{Topic: w.msg.Topic, Partition: w.msg.Partition, Offset: -1, Err: stopped})
			}
			tm.waiting = nil
		}
		return
	case *actor.Started:
		// A host that died answers nothing: learn it from the remote's
		// endpoint events instead of waiting for the request timeout.
		self, root, es := ctx.Self(), ctx.ActorSystem().Root, ctx.ActorSystem().EventStream
		p.endpoints = es.Subscribe(func(evt any) {
			if e, ok := evt.(*remote.EndpointTerminatedEvent); ok {
				root.Send(self, endpointGone{address: e.Address})
			}
		})
		// wake, below, asks for a producer id at once when idempotent.
	case *actor.Stopped:
		if p.endpoints != nil {
			ctx.ActorSystem().EventStream.Unsubscribe(p.endpoints)
		}
		if p.timer != nil {
			p.timer.Stop()
		}
		return
	case *actor.Restarting:
		return
	default:
		p.logger.WithFields(logrus.Fields{"type": fmt.Sprintf("%T", msg), "sender": ctx.Sender()}).Warn("producer: unknown message")
		return
	}
	p.wake(ctx, now)
}

// onSend hands one record to the core. Only a full batch or a new one
// needs work now (send it; arm the linger timer): the rest waits for the
// next wake.
func (p *producerActor) onSend(ctx actor.Context, now time.Time, msg *Send, r *report) {
	tm := p.lastMeta
	if tm == nil || msg.Topic != p.lastTopic {
		tm = p.topics[msg.Topic]
		if tm != nil {
			p.lastTopic, p.lastMeta = msg.Topic, tm
		}
	}
	if tm == nil || len(tm.partitions) == 0 {
		if tm == nil {
			tm = &topicMeta{}
			p.topics[msg.Topic] = tm
		}
		tm.waiting = append(tm.waiting, &waitingSend{msg: msg, r: r})
		p.fetchMetadata(ctx, msg.Topic)
		return
	}
	if now.Sub(tm.fetched) > p.cfg.MetadataMaxAge {
		p.fetchMetadata(ctx, msg.Topic)
	}
	rec := record.Record{Key: msg.Key, Value: msg.Value, Headers: msg.Headers, Timestamp: msg.Timestamp}
	_, res, err := p.core.Send(now, msg.Topic, len(tm.partitions), msg.Partition, rec, r)
	switch {
	case errors.Is(err, ErrBufferFull):
		p.blocked = append(p.blocked, &waitingSend{msg: msg, r: r})
		p.wake(ctx, now)
	case err != nil:
		p.reply(ctx, now, r, Delivered{Topic: msg.Topic, Partition: msg.Partition, Offset: -1, Err: err})
	case res.BatchFull:
		p.sendReady(ctx, now)
	case res.NewBatch:
		p.armTimer(ctx)
	}
}

// fetchMetadata looks a topic up on a goroutine.
func (p *producerActor) fetchMetadata(ctx actor.Context, topic string) {
	tm := p.topics[topic]
	if tm.fetching {
		return
	}
	tm.fetching = true
	self, root, cl, timeout := ctx.Self(), ctx.ActorSystem().Root, p.cfg.Cluster, p.rpcTimeout
	delay := time.Duration(0)
	if n := max(tm.failures, tm.leaderless); n > 0 {
		delay = min(time.Duration(n)*p.core.Accumulator.Config().RetryBackoff, 5*time.Second)
	}
	go func() {
		if delay > 0 {
			time.Sleep(delay)
		}
		rctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		md, err := cl.Metadata(rctx, topic)
		res := metadataReply{topic: topic, err: err}
		if err == nil {
			if len(md.Topics) != 1 {
				res.err = fmt.Errorf("producer: no metadata for topic %q", topic)
			} else {
				res.md = md.Topics[0]
			}
		}
		root.Send(self, res)
	}()
}

func (p *producerActor) onMetadata(ctx actor.Context, now time.Time, m metadataReply) {
	tm := p.topics[m.topic]
	tm.fetching = false
	err := m.err
	if err == nil {
		err = m.md.ErrorCode.Err("topic " + m.topic)
	}
	if err != nil {
		tm.failures++
		var ae *messages.Error
		fatal := errors.As(err, &ae) && !ae.Code.Retriable() || errors.Is(err, client.ErrUnreachable) && tm.failures > 3
		if fatal || len(tm.partitions) == 0 && tm.failures > 10 {
			// Unknown or invalid topic, or no host answers: fail what waits.
			for _, w := range tm.waiting {
				p.reply(ctx, now, w.r, Delivered{Topic: m.topic, Partition: w.msg.Partition, Offset: -1, Err: err})
			}
			tm.waiting = nil
			if len(tm.partitions) == 0 {
				delete(p.topics, m.topic)
				if p.lastMeta == tm {
					p.lastTopic, p.lastMeta = "", nil
				}
			}
			return
		}
		p.fetchMetadata(ctx, m.topic)
		return
	}
	tm.failures = 0
	tm.fetched = now
	tm.partitions = m.md.Partitions
	tm.leaders = make([]*actor.PID, len(tm.partitions))
	leaderless := false
	for i, pm := range tm.partitions {
		tp := TopicPartition{Topic: m.topic, Partition: pm.Partition}
		if pid, err := client.LeaderPID(pm); err == nil {
			tm.leaders[i] = pid
			p.core.Accumulator.Resume(tp)
		} else {
			// LEADER_NOT_AVAILABLE (offline, or moving): hold its batches.
			p.core.Accumulator.Pause(tp)
			leaderless = true
		}
	}
	p.retryMovedInflight(ctx, now, m.topic, tm)
	waiting := tm.waiting
	tm.waiting = nil
	for _, w := range waiting {
		p.onSend(ctx, now, w.msg, w.r)
	}
	if leaderless && p.core.Accumulator.Pending() > 0 {
		// Paused batches are never sent, so nothing else would ask
		// again before MetadataMaxAge: poll, backing off, until the
		// partition has a leader or its batches expire.
		tm.leaderless++
		p.fetchMetadata(ctx, m.topic)
	} else {
		tm.leaderless = 0
	}
}

func (p *producerActor) onResponse(ctx actor.Context, now time.Time, resp *messages.ProduceResponse) {
	f, ok := p.inflight[resp.CorrelationId]
	if !ok {
		return // answered after it timed out and was retried
	}
	delete(p.inflight, resp.CorrelationId)
	p.requests.observe(now.Sub(f.sentAt))
	acc := p.core.Accumulator
	code := resp.ErrorCode
	cause := code.Err(resp.ErrorMessage)
	switch {
	case code == 0:
		p.deliverScratch(ctx, acc.CompleteAppend(p.scratch[:0], f.id, resp.BaseOffset, nil))
	case code == messages.ErrorCode_ERROR_CODE_DUPLICATE_SEQUENCE_NUMBER:
		p.deliverScratch(ctx, acc.CompleteAppend(p.scratch[:0], f.id, -1, nil))
	case code == messages.ErrorCode_ERROR_CODE_OUT_OF_ORDER_SEQUENCE_NUMBER:
		p.onSequenceError(ctx, f, code, acc.OutOfOrderSequence(f.id, now, cause))
	case code == messages.ErrorCode_ERROR_CODE_UNKNOWN_PRODUCER_ID, code == messages.ErrorCode_ERROR_CODE_INVALID_PRODUCER_EPOCH:
		p.onSequenceError(ctx, f, code, acc.ProducerRejected(f.id, now, cause))
	case code.Retriable():
		p.logger.WithFields(logrus.Fields{"partition": f.tp.String(), "code": code.ShortName()}).Debug("produce failed; retrying")
		p.deliver(ctx, acc.Retry(f.id, now, cause))
		p.fetchMetadata(ctx, f.tp.Topic)
	default:
		p.deliver(ctx, acc.Complete(f.id, -1, cause))
	}
}

// onSequenceError delivers what a sequence error failed (nothing when the
// batch was retried) and logs it.
func (p *producerActor) onSequenceError(ctx actor.Context, f inflight, code messages.ErrorCode, ds []Delivery) {
	fields := logrus.Fields{"partition": f.tp.String(), "code": code.ShortName(), "correlation_id": int64(f.id)}
	if len(ds) == 0 {
		p.logger.WithFields(fields).Debug("producer: batch refused behind an earlier one; retrying")
		return
	}
	fields["records"] = len(ds)
	p.logger.WithFields(fields).Warn("producer: batch refused for its producer id or sequence; its records fail and the producer gets a new id")
	p.deliver(ctx, ds)
}

// fetchProducerID asks the cluster for a producer id on a goroutine, after
// a backoff that doubles with each failure in a row (from RetryBackoff up
// to maxProducerIDBackoff). The answer comes back as a producerIDReply.
func (p *producerActor) fetchProducerID(ctx actor.Context) {
	if p.pidFetching {
		return
	}
	p.pidFetching = true
	delay := time.Duration(0)
	if n := p.pidFailures; n > 0 {
		delay = min(p.core.Accumulator.Config().RetryBackoff<<min(n-1, 16), maxProducerIDBackoff)
	}
	self, root, cl, timeout := ctx.Self(), ctx.ActorSystem().Root, p.cfg.Cluster, p.rpcTimeout
	go func() {
		if delay > 0 {
			time.Sleep(delay)
		}
		rctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		id, epoch, err := cl.InitProducerID(rctx)
		root.Send(self, producerIDReply{id: id, epoch: epoch, err: err})
	}()
}

// onProducerID installs a new producer id, or leaves wake to try again.
func (p *producerActor) onProducerID(m producerIDReply) {
	p.pidFetching = false
	if m.err != nil {
		p.pidFailures++
		p.logger.WithError(m.err).WithField("attempts", p.pidFailures).Warn("producer: getting a producer id failed; retrying")
		return
	}
	p.pidFailures = 0
	p.core.Accumulator.SetProducerID(m.id, m.epoch)
	p.logger.WithFields(logrus.Fields{"producer_id": m.id, "epoch": m.epoch}).Debug("producer: got a producer id")
}

// onDeadLetter handles a request that reached a host where the leader
// replica does not exist (any more): the batches in flight to it are
// retried after a metadata refresh, at once rather than after the request
// timeout.
func (p *producerActor) onDeadLetter(ctx actor.Context, now time.Time, m *actor.DeadLetterResponse) {
	p.retryInflight(ctx, now, func(leader *actor.PID) bool { return leader.Equal(m.Target) })
}

// endpointGone reports that the connection to a host's address ended.
type endpointGone struct{ address string }

// onEndpointGone retries at once, after a metadata refresh, the batches in
// flight to a host whose connection ended.
func (p *producerActor) onEndpointGone(ctx actor.Context, now time.Time, address string) {
	p.retryInflight(ctx, now, func(leader *actor.PID) bool { return leader.Address == address })
}

// retryMovedInflight retries at once the in-flight batches of topic whose
// partition now has a newer leader epoch than they were sent under. The
// broker restarts a replica for every new leader epoch (same PID, new
// actor), and a request that reached the old actor's mailbox is dropped
// unanswered when it stops: waiting for the request timeout would stall
// the partition (an idempotent producer's later batches cannot be
// appended past the missing sequence). An answer that does come for the
// old send is ignored, and an idempotent leader recognises the resent
// batch if it was appended after all (Kafka's sender likewise fails the
// requests of a connection that closes).
func (p *producerActor) retryMovedInflight(ctx actor.Context, now time.Time, topic string, tm *topicMeta) {
	for corr, f := range p.inflight {
		if f.tp.Topic != topic || int(f.tp.Partition) >= len(tm.partitions) || tm.partitions[f.tp.Partition].LeaderEpoch <= f.epoch {
			continue
		}
		delete(p.inflight, corr)
		p.deliver(ctx, p.core.Accumulator.Retry(f.id, now, messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER.Err("the partition has a new leader epoch")))
	}
}

// retryInflight retries the in-flight batches whose leader matches.
func (p *producerActor) retryInflight(ctx actor.Context, now time.Time, match func(*actor.PID) bool) {
	for corr, f := range p.inflight {
		if f.leader == nil || !match(f.leader) {
			continue
		}
		delete(p.inflight, corr)
		p.deliver(ctx, p.core.Accumulator.Retry(f.id, now, messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER.Err("the leader replica is gone")))
		p.fetchMetadata(ctx, f.tp.Topic)
	}
	p.wake(ctx, now)
}

func (p *producerActor) deliver(ctx actor.Context, ds []Delivery) {
	if len(ds) == 0 {
		return
	}
	// One clock reading for them all: they were answered together, and
	// reading the clock per record was a tenth of a fast producer's CPU.
	now := time.Now()
	for _, d := range ds {
		p.reply(ctx, now, d.Report.(*report), Delivered{Topic: d.TopicPartition.Topic, Partition: d.TopicPartition.Partition, Offset: d.Offset, Err: d.Err})
	}
}

// maxScratch is the most deliveries the actor's reused slice keeps room
// for between responses (~4.5 MB); a larger batch's slice is dropped.
const maxScratch = 1 << 16

// deliverScratch delivers ds, which reuses p.scratch, and keeps its
// backing array for the next response, cleared so that it holds no
// reports.
func (p *producerActor) deliverScratch(ctx actor.Context, ds []Delivery) {
	p.deliver(ctx, ds)
	clear(ds)
	if cap(ds) <= maxScratch {
		p.scratch = ds[:0]
	}
}

func (p *producerActor) reply(ctx actor.Context, now time.Time, r *report, d Delivered) {
	d.Latency = now.Sub(r.at)
	switch {
	case r.callback != nil:
		r.callback(d)
	case r.sender != nil:
		m := d // only a message sent escapes to the heap, not every report
		ctx.Send(r.sender, &m)
	}
}

// handedAt is when a Send was handed to the producer: at, stamped by the
// Producer's methods, or now when another actor sent it.
func handedAt(at, now time.Time) time.Time {
	if at.IsZero() {
		return now
	}
	return at
}

// idle reports whether no record is buffered, in flight, blocked or
// waiting for metadata.
func (p *producerActor) idle() bool {
	if p.core.Accumulator.Pending() > 0 || len(p.blocked) > 0 {
		return false
	}
	for _, tm := range p.topics {
		if len(tm.waiting) > 0 {
			return false
		}
	}
	return true
}

// wake expires, sends what is ready, retries blocked sends, answers
// flushes and arms the timer.
func (p *producerActor) wake(ctx actor.Context, now time.Time) {
	// Requests unanswered for the request timeout are retried by Expire;
	// their leader may be gone, so look it up again. (Expire names them:
	// scanning p.inflight here cost O(requests in flight) per message.)
	p.deliver(ctx, p.core.Accumulator.Expire(now))
	for _, id := range p.core.Accumulator.TimedOut() {
		if f, ok := p.inflight[int64(id)]; ok {
			delete(p.inflight, int64(id))
			p.fetchMetadata(ctx, f.tp.Topic)
		}
	}
	if p.core.Accumulator.NeedProducerID() {
		p.fetchProducerID(ctx)
	}
	p.sendReady(ctx, now)
	if len(p.blocked) > 0 && p.core.Accumulator.BufferedBytes() < p.core.Accumulator.Config().BufferMemory/2 {
		blocked := p.blocked
		p.blocked = nil
		for _, w := range blocked {
			p.onSend(ctx, now, w.msg, w.r)
		}
		p.sendReady(ctx, now)
	}
	if len(p.flushers) > 0 {
		p.core.Accumulator.Flush()
		p.sendReady(ctx, now)
		if p.idle() {
			for _, f := range p.flushers {
				ctx.Send(f, &Flushed{})
			}
			p.flushers = nil
		}
	}
	p.armTimer(ctx)
}

func (p *producerActor) sendReady(ctx actor.Context, now time.Time) {
	for _, b := range p.core.Accumulator.Ready(now) {
		p.send(ctx, now, b)
	}
}

// armTimer makes sure a tick arrives by the core's next deadline.
func (p *producerActor) armTimer(ctx actor.Context) {
	at, ok := p.core.Accumulator.NextDeadline()
	if !ok || (!p.timerAt.IsZero() && !at.Before(p.timerAt)) {
		return
	}
	// One timer, moved earlier when needed: a new timer per deadline left
	// thousands pending (each batch's linger re-armed the far request
	// timeout after it), each waking the actor once more when it fired.
	p.timerAt = at
	d := max(time.Until(at), 0)
	if p.timer == nil {
		self, root := ctx.Self(), ctx.ActorSystem().Root
		p.timer = time.AfterFunc(d, func() { root.Send(self, tick{}) })
		return
	}
	p.timer.Reset(d)
}

func (p *producerActor) send(ctx actor.Context, now time.Time, b ReadyBatch) {
	tm := p.topics[b.TopicPartition.Topic]
	var leader *actor.PID
	var epoch int32 = -1
	if tm != nil && int(b.TopicPartition.Partition) < len(tm.leaders) {
		leader = tm.leaders[b.TopicPartition.Partition]
		epoch = tm.partitions[b.TopicPartition.Partition].LeaderEpoch
	}
	if leader == nil {
		p.deliver(ctx, p.core.Accumulator.Retry(b.ID, now, messages.ErrorCode_ERROR_CODE_LEADER_NOT_AVAILABLE.Err("no leader known")))
		p.fetchMetadata(ctx, b.TopicPartition.Topic)
		return
	}
	if p.cfg.Client != nil && !p.cfg.Client.HostUp(leader.Address) {
		// The leader's host is gone (its connection was lost and it does
		// not accept new ones): a request would wait out protoactor's
		// connection retries. Wait for the metadata to name a new leader.
		p.deliver(ctx, p.core.Accumulator.Retry(b.ID, now, messages.ErrorCode_ERROR_CODE_LEADER_NOT_AVAILABLE.Err("the leader's host "+leader.Address+" is down")))
		p.fetchMetadata(ctx, b.TopicPartition.Topic)
		return
	}
	req := &messages.ProduceRequest{
		Topic: b.TopicPartition.Topic, Partition: b.TopicPartition.Partition, Acks: p.cfg.Acks,
		TimeoutMs: int32(p.core.Accumulator.Config().RequestTimeout.Milliseconds()), Records: b.Bytes,
		CurrentLeaderEpoch: epoch, CorrelationId: int64(b.ID),
	}
	if p.cfg.Acks == messages.Acks_ACKS_NONE {
		ctx.Send(leader, req)
		p.deliver(ctx, p.core.Accumulator.Complete(b.ID, -1, nil))
		return
	}
	// The time now, not the message's: a send while a SendMany of many
	// records is handled would be timed from the SendMany's arrival.
	p.inflight[int64(b.ID)] = inflight{id: b.ID, tp: b.TopicPartition, leader: leader, epoch: epoch, sentAt: time.Now()}
	ctx.Request(leader, req)
}
