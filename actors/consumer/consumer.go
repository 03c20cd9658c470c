// Package consumer is the consumer actor: it reads assigned partitions of a
// topic (the groups issue adds subscriptions) from the earliest or latest
// offset, a given offset or a timestamp, with one long-poll fetch in flight
// per partition, and hands records in partition order to a handler
// function or an actor PID. Back-pressure comes from the bounded fetches: a
// partition is fetched again only once its previous records were handled
// (for a PID target, once the target answered), so a slow handler slows
// fetching instead of growing memory.
//
// Threading: all state is owned by the actor; metadata lookups run on
// goroutines that only post their results back.
package consumer

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage/record"
)

// Start says where a partition is read from when the consumer starts.
type Start struct {
	kind   int // 0 earliest, 1 latest, 2 offset, 3 timestamp
	offset int64
}

// Earliest starts at the log start offset.
func Earliest() Start { return Start{kind: 0} }

// Latest starts at the high watermark: only records produced from now on.
func Latest() Start { return Start{kind: 1} }

// AtOffset starts at offset.
func AtOffset(offset int64) Start { return Start{kind: 2, offset: offset} }

// AtTimestamp starts at the first record whose timestamp is >= ms.
func AtTimestamp(ms int64) Start { return Start{kind: 3, offset: ms} }

// Message is one consumed record.
type Message struct {
	Topic     string
	Partition int32
	Offset    int64
	Timestamp int64
	Key       []byte
	Value     []byte
	Headers   []record.RecordHeader
}

// Records is what a PID target receives: one partition's records in order.
// The target answers (any reply) when it has handled them; until then the
// partition is not fetched again.
type Records struct {
	Messages []Message
}

// Handler handles one partition's records in order, inside the consumer
// actor: while it runs, nothing more is fetched for that partition.
type Handler func([]Message)

// Config configures a consumer.
type Config struct {
	Client *client.Client
	Topic  string
	// Partitions to read; empty means all the topic's partitions.
	Partitions []int32
	// Start is where reading begins (default Earliest).
	Start Start
	// Handler receives records (exactly one of Handler and Target).
	Handler Handler
	// Target is an actor that receives *Records and must answer each.
	Target *actor.PID
	// MaxWait, MinBytes, MaxBytes shape each fetch (defaults 500 ms, 1 byte,
	// 1 MiB per partition).
	MaxWait  time.Duration
	MinBytes int32
	MaxBytes int32
	// RetryBackoff waits before refetching after an error (default 200 ms).
	RetryBackoff time.Duration
	// OnOutOfRange says what to do when the position is outside the log
	// (Kafka's auto.offset.reset): ResetEarliest (default), ResetLatest, or
	// Fail, which stops the partition and reports an error wrapping
	// ErrOffsetOutOfRange to OnError.
	OnOutOfRange OutOfRangePolicy
	// OnError, if set, is told of errors the consumer recovers from (leader
	// moves, timeouts) and of unrecoverable ones.
	OnError func(error)
	Logger  *logrus.Entry
}

// OutOfRangePolicy is what a consumer does at an out-of-range position.
type OutOfRangePolicy int

// The policies.
const (
	ResetEarliest OutOfRangePolicy = iota
	ResetLatest
	Fail
)

// ErrOffsetOutOfRange is reported (under the Fail policy) when a partition's
// position is outside its log.
var ErrOffsetOutOfRange = errors.New("consumer: offset out of range")

// ErrConfig wraps configuration errors.
var ErrConfig = errors.New("consumer: invalid config")

func (c *Config) validate() error {
	if c.Client == nil || c.Topic == "" {
		return fmt.Errorf("%w: client and topic are required", ErrConfig)
	}
	if (c.Handler == nil) == (c.Target == nil) {
		return fmt.Errorf("%w: set exactly one of Handler and Target", ErrConfig)
	}
	if c.MaxWait <= 0 {
		c.MaxWait = 500 * time.Millisecond
	}
	if c.MinBytes <= 0 {
		c.MinBytes = 1
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = 1 << 20
	}
	if c.MaxBytes > client.MaxFetchBytes {
		return fmt.Errorf("%w: max bytes %d above %d", ErrConfig, c.MaxBytes, client.MaxFetchBytes)
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = 200 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = c.Client.Logger()
	}
	return nil
}

// Props returns the consumer's props, or an error for a bad config.
func Props(cfg Config) (*actor.Props, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &Consumer{cfg: cfg, logger: cfg.Logger.WithField("topic", cfg.Topic), parts: map[int32]*partState{}}
	}), nil
}

type partState struct {
	id       int32
	leader   *actor.PID
	epoch    int32
	position int64 // next offset to hand out; -1 until resolved
	inFlight int64 // correlation id of the fetch in flight, 0 when none
	busy     bool  // records handed to a PID target, not yet answered
	meta     *messages.PartitionMetadata
}

// Internal messages.
type (
	metadataResult struct {
		md  *messages.TopicMetadataResponse
		err error
	}
	positionResult struct {
		partition int32
		offset    int64
		err       error
	}
	retryFetch    struct{ partition int32 }
	fetchDeadline struct {
		partition int32
		corr      int64
	}
	refreshMetadata struct{}
	endpointGone    struct{ address string }
)

// Consumer is the actor; create it with Props.
type Consumer struct {
	cfg        Config
	logger     *logrus.Entry
	parts      map[int32]*partState
	corr       int64
	refreshing bool
	endpoints  *eventstream.Subscription
}

// onEndpointGone abandons the fetches in flight to a host whose connection
// ended and looks the leaders up again.
func (c *Consumer) onEndpointGone(ctx actor.Context, address string) {
	for _, p := range c.parts {
		if p.inFlight != 0 && p.leader != nil && p.leader.Address == address {
			p.inFlight = 0
			c.report(fmt.Errorf("consumer: the connection to the leader of %s-%d (%s) ended; refreshing metadata", c.cfg.Topic, p.id, address))
			c.refreshLater(ctx)
		}
	}
}

// Receive dispatches the consumer's messages.
func (c *Consumer) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		// A leader whose host died answers nothing: learn it from the
		// remote's endpoint events instead of waiting for the fetch
		// deadline.
		self, root, es := ctx.Self(), ctx.ActorSystem().Root, ctx.ActorSystem().EventStream
		c.endpoints = es.Subscribe(func(evt any) {
			if e, ok := evt.(*remote.EndpointTerminatedEvent); ok {
				root.Send(self, endpointGone{address: e.Address})
			}
		})
		c.refresh(ctx)
	case endpointGone:
		c.onEndpointGone(ctx, msg.address)
	case refreshMetadata:
		c.refresh(ctx)
	case metadataResult:
		c.onMetadata(ctx, msg)
	case positionResult:
		c.onPosition(ctx, msg)
	case *messages.FetchResponse:
		c.onFetch(ctx, msg)
	case retryFetch:
		if p := c.parts[msg.partition]; p != nil {
			c.fetch(ctx, p)
		}
	case fetchDeadline:
		if p := c.parts[msg.partition]; p != nil && p.inFlight == msg.corr {
			p.inFlight = 0
			c.report(fmt.Errorf("consumer: fetch of %s-%d timed out; refreshing metadata", c.cfg.Topic, p.id))
			c.refreshLater(ctx)
		}
	case *actor.Stopped:
		if c.endpoints != nil {
			ctx.ActorSystem().EventStream.Unsubscribe(c.endpoints)
		}
	case *actor.Stopping, *actor.Restarting:
	default:
		c.logger.WithFields(logrus.Fields{"type": fmt.Sprintf("%T", msg), "sender": ctx.Sender()}).Warn("consumer: unknown message")
	}
}

func (c *Consumer) report(err error) {
	c.logger.WithError(err).Debug("consumer")
	if c.cfg.OnError != nil {
		c.cfg.OnError(err)
	}
}

// after posts msg to self after d.
func after(ctx actor.Context, d time.Duration, msg any) {
	self, root := ctx.Self(), ctx.ActorSystem().Root
	time.AfterFunc(d, func() { root.Send(self, msg) })
}

func (c *Consumer) refreshLater(ctx actor.Context) {
	if c.refreshing {
		return
	}
	c.refreshing = true
	after(ctx, c.cfg.RetryBackoff, refreshMetadata{})
}

func (c *Consumer) refresh(ctx actor.Context) {
	c.refreshing = true
	self, root, cl, topic := ctx.Self(), ctx.ActorSystem().Root, c.cfg.Client, c.cfg.Topic
	go func() {
		rctx, cancel := context.WithTimeout(context.Background(), cl.RequestTimeout())
		defer cancel()
		md, err := cl.Metadata(rctx, topic)
		res := metadataResult{err: err}
		if err == nil {
			if len(md.Topics) != 1 {
				res.err = fmt.Errorf("consumer: metadata for %q missing", topic)
			} else {
				res.md = md.Topics[0]
			}
		}
		root.Send(self, res)
	}()
}

func (c *Consumer) onMetadata(ctx actor.Context, m metadataResult) {
	c.refreshing = false
	if m.err == nil {
		m.err = m.md.ErrorCode.Err("topic " + c.cfg.Topic)
	}
	if m.err != nil {
		c.report(fmt.Errorf("consumer: metadata: %w", m.err))
		c.refreshLater(ctx)
		return
	}
	want := c.cfg.Partitions
	if len(want) == 0 {
		for _, p := range m.md.Partitions {
			want = append(want, p.Partition)
		}
	}
	sort.Slice(want, func(i, j int) bool { return want[i] < want[j] })
	byID := map[int32]*messages.PartitionMetadata{}
	for _, p := range m.md.Partitions {
		byID[p.Partition] = p
	}
	for _, id := range want {
		pm, ok := byID[id]
		if !ok {
			c.report(fmt.Errorf("consumer: topic %s has no partition %d", c.cfg.Topic, id))
			continue
		}
		p := c.parts[id]
		if p == nil {
			p = &partState{id: id, position: -1}
			c.parts[id] = p
		}
		p.meta = pm
		pid, err := client.LeaderPID(pm)
		if err != nil {
			c.report(err)
			c.refreshLater(ctx)
			continue
		}
		p.leader, p.epoch = pid, pm.LeaderEpoch
		if p.position < 0 {
			c.resolvePosition(ctx, p)
		} else if p.inFlight == 0 && !p.busy {
			c.fetch(ctx, p)
		}
	}
}

// resolvePosition turns the Start into an offset with ListOffsets.
func (c *Consumer) resolvePosition(ctx actor.Context, p *partState) {
	if c.cfg.Start.kind == 2 {
		p.position = c.cfg.Start.offset
		c.fetch(ctx, p)
		return
	}
	ts := int64(-2)
	switch c.cfg.Start.kind {
	case 1:
		ts = -1
	case 3:
		ts = c.cfg.Start.offset
	}
	self, root, cl, topic, meta, id := ctx.Self(), ctx.ActorSystem().Root, c.cfg.Client, c.cfg.Topic, p.meta, p.id
	go func() {
		rctx, cancel := context.WithTimeout(context.Background(), cl.RequestTimeout())
		defer cancel()
		lo, err := cl.ListOffsets(rctx, meta, topic, ts)
		res := positionResult{partition: id, err: err}
		if err == nil {
			// For a timestamp no record has reached, the leader answers
			// its high watermark: where the first such record will go.
			res.offset = lo.Offset
		}
		root.Send(self, res)
	}()
}

func (c *Consumer) onPosition(ctx actor.Context, m positionResult) {
	p := c.parts[m.partition]
	if p == nil {
		return
	}
	if m.err != nil {
		c.report(fmt.Errorf("consumer: resolve start offset of %s-%d: %w", c.cfg.Topic, p.id, m.err))
		c.refreshLater(ctx)
		return
	}
	p.position = m.offset
	c.fetch(ctx, p)
}

func (c *Consumer) fetch(ctx actor.Context, p *partState) {
	if p.leader == nil || p.position < 0 || p.inFlight != 0 || p.busy {
		return
	}
	if !c.cfg.Client.HostUp(p.leader.Address) {
		// Its host is gone: a request would wait out protoactor's
		// connection retries. Wait for the metadata to name a new leader.
		c.refreshLater(ctx)
		return
	}
	c.corr++
	p.inFlight = c.corr
	ctx.Request(p.leader, &messages.FetchRequest{
		Topic: c.cfg.Topic, Partition: p.id, FetchOffset: p.position,
		MaxBytes: c.cfg.MaxBytes, MinBytes: c.cfg.MinBytes, MaxWaitMs: int32(c.cfg.MaxWait.Milliseconds()),
		CurrentLeaderEpoch: p.epoch, ReplicaId: -1, LastFetchedEpoch: -1, CorrelationId: c.corr,
	})
	after(ctx, c.cfg.MaxWait+c.cfg.Client.RequestTimeout(), fetchDeadline{partition: p.id, corr: c.corr})
}

func (c *Consumer) onFetch(ctx actor.Context, resp *messages.FetchResponse) {
	p := c.parts[resp.Partition]
	if p == nil || p.inFlight != resp.CorrelationId {
		return // stale: timed out and refetched already
	}
	p.inFlight = 0
	switch code := resp.ErrorCode; {
	case code == messages.ErrorCode_ERROR_CODE_OFFSET_OUT_OF_RANGE:
		err := fmt.Errorf("%w: offset %d of %s-%d, the log holds %d..%d", ErrOffsetOutOfRange,
			p.position, c.cfg.Topic, p.id, resp.LogStartOffset, resp.HighWatermark)
		switch c.cfg.OnOutOfRange {
		case Fail:
			c.report(err)
			p.leader = nil // stopped: fetch no more
			return
		case ResetLatest:
			p.position = resp.HighWatermark
		default:
			p.position = resp.LogStartOffset
		}
		c.report(fmt.Errorf("%w; moving to offset %d", err, p.position))
		c.fetch(ctx, p)
		return
	case code != 0:
		c.report(fmt.Errorf("consumer: fetch %s-%d: %w", c.cfg.Topic, p.id, code.Err(resp.ErrorMessage)))
		if code.Retriable() {
			c.refreshLater(ctx)
		} else {
			after(ctx, c.cfg.RetryBackoff, retryFetch{partition: p.id})
		}
		return
	}
	msgs, next, err := c.decode(resp, p.position)
	if err != nil {
		c.report(fmt.Errorf("consumer: decode %s-%d at %d: %w", c.cfg.Topic, p.id, p.position, err))
		after(ctx, c.cfg.RetryBackoff, retryFetch{partition: p.id})
		return
	}
	p.position = next
	if len(msgs) == 0 {
		c.fetch(ctx, p)
		return
	}
	if c.cfg.Handler != nil {
		c.cfg.Handler(msgs)
		c.fetch(ctx, p)
		return
	}
	p.busy = true
	ctx.ReenterAfter(ctx.RequestFuture(c.cfg.Target, &Records{Messages: msgs}, 24*time.Hour), func(_ any, err error) {
		p.busy = false
		if err != nil {
			c.report(fmt.Errorf("consumer: target did not answer: %w", err))
		}
		c.fetch(ctx, p)
	})
}

// decode returns the records at or after from, and the next position.
func (c *Consumer) decode(resp *messages.FetchResponse, from int64) ([]Message, int64, error) {
	var out []Message
	next := from
	var rec record.Record
	for sc := record.Batches(resp.Records); sc.Next(); {
		h := sc.Header()
		// A reader per batch: records of a compressed batch alias the
		// reader's buffer, which the next Reset would overwrite.
		var br record.BatchReader
		if err := br.Reset(sc.Batch(), 64<<20); err != nil {
			return nil, next, err
		}
		for br.Next(&rec) {
			if rec.Offset < from || h.Control() {
				continue
			}
			m := Message{Topic: resp.Topic, Partition: resp.Partition, Offset: rec.Offset, Timestamp: rec.Timestamp, Key: rec.Key, Value: rec.Value}
			if len(rec.Headers) > 0 {
				m.Headers = append([]record.RecordHeader(nil), rec.Headers...)
			}
			out = append(out, m)
		}
		if err := br.Err(); err != nil {
			return nil, next, err
		}
		next = max(next, h.NextOffset())
	}
	return out, next, nil
}
