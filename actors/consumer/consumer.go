// Package consumer is the consumer actor. It reads given partitions of a
// topic from the earliest or latest offset, a given offset or a timestamp;
// or, with a group id and a subscription (topics or a pattern), it joins
// the group (Kafka's classic protocol: group.go) and reads the partitions
// the group assigns it, from the group's committed offsets. It keeps one
// long-poll fetch in flight per partition and hands records in partition
// order to a handler function or an actor PID.
//
// Delivery is at-least-once: a partition's position (offsets.go) moves past
// records only once they were handled, and what is committed — every
// AutoCommitInterval, before partitions are revoked, on Close, or on
// Commit — is positions, never records merely fetched. Back-pressure comes
// from the bounded fetches: a partition is fetched again only once its
// previous records were handled (for a PID target, once the target
// answered), so a slow handler slows fetching instead of growing memory.
//
// Threading: all state is owned by the actor; metadata, offset and commit
// calls run on goroutines that only post their results back, and replies
// from leaders and the coordinator come back through the mailbox.
//
// # Core and shell
//
// The decisions are pure cores, plain values that do no I/O and hold no
// clock, table-tested without actors (as actors/group is the core of the
// coordinator):
//
//   - member.go: the group membership (Kafka's ConsumerCoordinator), one
//     method per event with the current time, returning effects — requests
//     to send, partitions to stop, revoke and add, commits, errors, and
//     the time to wake it next; decisions.go holds its pure decisions;
//   - fetchstate.go: one partition's fetch state (idle, resolving,
//     fetching, handing, paused, revoking, failed) and its transitions;
//   - offsets.go: positions and commits (the at-least-once bookkeeping).
//
// The actor is the shell that feeds them and carries out what they return:
// consumer.go (Receive, metadata, start positions, fetching and handing
// records over), group.go (the membership's effects, with one timer for
// its wake time) and commit.go (the commit queue, Close, and stopping).
package consumer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/internal/frame"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage/record"
)

// Props returns the consumer's props, or an error for a bad config.
func Props(cfg Config) (*actor.Props, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return actor.PropsFromProducer(func() actor.Actor { return newConsumer(cfg) }), nil
}

func newConsumer(cfg Config) *Consumer {
	c := &Consumer{
		cfg:    cfg,
		conn:   cfg.Cluster,
		logger: cfg.Logger.WithField("component", "consumer"),
		parts:  map[TopicPartition]*partState{},
		book:   newOffsetBook(),
		meta:   map[string]*messages.TopicMetadataResponse{},
	}
	if cfg.GroupID != "" {
		c.logger = c.logger.WithField("group", cfg.GroupID)
	}
	if cfg.Topic != "" && !cfg.subscribing() {
		c.logger = c.logger.WithField("topic", cfg.Topic)
	}
	if cfg.subscribing() {
		c.grp = newMember(cfg, c.logger)
	}
	return c
}

// partState is one partition being read.
type partState struct {
	tp     TopicPartition
	leader *actor.PID
	epoch  int32
	meta   *messages.PartitionMetadata
	// fetchPos is the next offset to fetch, -1 until the start position
	// is known.
	fetchPos int64
	// committedKnown: the group's committed offset was looked up (a
	// consumer with a group id starts there, or else at Start).
	committedKnown bool
	// fs is the fetch state (fetchstate.go): p is fetched when it is
	// ready and fetchPos and leader are known.
	fs fetchState
	// msgs is the slice the last records were handed over in, reused
	// for the next ones with Config.ReuseBuffers.
	msgs []Message
}

// Internal messages.
type (
	metadataResult struct {
		md *messages.MetadataResponse
		// topics asked for; nil: all.
		topics []string
		err    error
	}
	positionResult struct {
		p      *partState
		offset int64
		err    error
	}
	committedResult struct {
		parts   []*partState
		offsets []client.CommittedOffset
		err     error
	}
	retryFetch    struct{ tp TopicPartition }
	fetchDeadline struct {
		tp   TopicPartition
		corr int64
	}
	retryCommitted  struct{ parts []*partState }
	refreshMetadata struct{}
	metadataTick    struct{}
	endpointGone    struct{ address string }
)

// Consumer is the actor; create it with Props.
type Consumer struct {
	cfg    Config
	conn   Cluster
	logger *logrus.Entry
	parts  map[TopicPartition]*partState
	book   *offsetBook
	// meta holds the last metadata of the topics the consumer asked
	// about.
	meta       map[string]*messages.TopicMetadataResponse
	corr       int64
	refreshing bool
	endpoints  *eventstream.Subscription
	// grp is the group membership's core (member.go), nil unless
	// subscribing; memberTimer is the one timer armed for its wake time.
	grp         *member
	memberTimer *time.Timer
	commits     commitQueue
	closing     *closeState
	closed      bool
	stopped     bool
	// releaseFetchPool ends the client's pooling of fetch answers
	// (Config.ReuseBuffers), nil when not pooling.
	releaseFetchPool func()
}

// onEndpointGone abandons the fetches in flight to a host whose connection
// ended and looks the leaders up again; a lost coordinator is found again.
func (c *Consumer) onEndpointGone(ctx actor.Context, address string) {
	for _, p := range c.parts {
		if p.fs.fetching() && p.leader != nil && p.leader.Address == address {
			p.fs.abandon()
			c.report(fmt.Errorf("consumer: the connection to the leader of %s (%s) ended; refreshing metadata", p.tp, address))
			c.refreshLater(ctx)
		}
	}
	if c.grp != nil {
		c.applyGroup(ctx, c.grp.OnCoordinatorGone(time.Now(), address))
	}
}

// Receive dispatches the consumer's messages.
func (c *Consumer) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		c.onStarted(ctx)
	case endpointGone:
		c.onEndpointGone(ctx, msg.address)
	case refreshMetadata:
		c.refresh(ctx)
	case metadataTick:
		if c.closed || c.stopped {
			return
		}
		if !c.refreshing {
			c.refresh(ctx)
		}
		after(ctx, c.cfg.MetadataMaxAge, metadataTick{})
	case metadataResult:
		c.onMetadata(ctx, msg)
	case positionResult:
		c.onPosition(ctx, msg)
	case committedResult:
		c.onCommitted(ctx, msg)
	case retryCommitted:
		c.fetchCommitted(ctx, slices.DeleteFunc(msg.parts, func(p *partState) bool { return c.parts[p.tp] != p }))
	case *messages.FetchResponse:
		c.onFetch(ctx, msg)
	case retryFetch:
		if p := c.parts[msg.tp]; p != nil {
			c.fetch(ctx, p)
		}
	case fetchDeadline:
		if p := c.parts[msg.tp]; p != nil && p.fs.isFetch(msg.corr) {
			p.fs.abandon()
			c.report(fmt.Errorf("consumer: fetch of %s timed out; refreshing metadata", p.tp))
			c.refreshLater(ctx)
		}
	case *Pause:
		c.onPause(ctx, msg.Partitions, true)
	case *Resume:
		c.onPause(ctx, msg.Partitions, false)
	case *Seek:
		c.onSeek(ctx, msg)
	case *Commit:
		c.onCommitRequest(ctx, msg)
	case commitDone:
		c.onCommitDone(ctx, msg)
	case autoCommitTick:
		c.onAutoCommit(ctx)
	case *Close:
		c.onClose(ctx)
	case leaveDone:
		c.onLeaveDone(ctx, msg)
	case coordinatorFound:
		c.applyGroup(ctx, c.grp.OnCoordinator(time.Now(), msg.co, msg.err))
	case memberTick:
		if c.grp != nil && !c.stopped {
			c.applyGroup(ctx, c.grp.Tick(time.Now()))
		}
	case *messages.RebalanceStarted:
		c.onRebalanceStarted(ctx, msg)
	case assignMetadata:
		c.applyGroup(ctx, c.grp.OnAssignMetadata(time.Now(), msg.lookup, msg.counts, msg.err))
	case *actor.Stopping:
		c.onStopping(ctx)
	case *actor.Stopped:
		c.endFetchPool()
		if c.memberTimer != nil {
			c.memberTimer.Stop()
		}
		if c.endpoints != nil {
			ctx.ActorSystem().EventStream.Unsubscribe(c.endpoints)
		}
	case *actor.Restarting:
		c.endFetchPool() // the restarted instance asks again when it starts
	default:
		c.logger.WithFields(logrus.Fields{"type": fmt.Sprintf("%T", msg), "sender": ctx.Sender()}).Warn("consumer: unknown message")
	}
}

// endFetchPool ends this instance's share in its client's pooling of
// fetch answers (Config.ReuseBuffers).
func (c *Consumer) endFetchPool() {
	if c.releaseFetchPool != nil {
		c.releaseFetchPool()
		c.releaseFetchPool = nil
	}
}

func (c *Consumer) onStarted(ctx actor.Context) {
	// A leader whose host died answers nothing: learn it from the
	// remote's endpoint events instead of waiting for the fetch deadline.
	self, root, es := ctx.Self(), ctx.ActorSystem().Root, ctx.ActorSystem().EventStream
	c.endpoints = es.Subscribe(func(evt any) {
		if e, ok := evt.(*remote.EndpointTerminatedEvent); ok {
			root.Send(self, endpointGone{address: e.Address})
		}
	})
	if c.cfg.ReuseBuffers && c.cfg.Client != nil {
		c.releaseFetchPool = c.cfg.Client.PoolFetchAnswers()
	}
	c.refresh(ctx)
	after(ctx, c.cfg.MetadataMaxAge, metadataTick{})
	if c.cfg.GroupID != "" && !c.cfg.DisableAutoCommit {
		after(ctx, c.cfg.AutoCommitInterval, autoCommitTick{})
	}
	if c.grp != nil {
		c.applyGroup(ctx, c.grp.Start(time.Now()))
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

// requestContext returns a context bounded by the request timeout.
func (c *Consumer) requestContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), c.conn.RequestTimeout())
}

func (c *Consumer) refreshLater(ctx actor.Context) {
	if c.refreshing {
		return
	}
	c.refreshing = true
	after(ctx, c.cfg.RetryBackoff, refreshMetadata{})
}

// metadataTopics returns the topics whose metadata the consumer needs: its
// topic or subscription, the topics of partitions it owns and, as a group
// leader, those of the group's subscriptions; nil (all topics) for a
// pattern subscription.
func (c *Consumer) metadataTopics() []string {
	if c.cfg.TopicRegex != nil {
		return nil
	}
	topics := slices.Clone(c.cfg.Topics)
	if c.cfg.Topic != "" {
		topics = append(topics, c.cfg.Topic)
	}
	for tp := range c.parts {
		topics = append(topics, tp.Topic)
	}
	if c.grp != nil {
		topics = append(topics, c.grp.snapshotTopics()...)
	}
	return slices.Compact(slices.Sorted(slices.Values(topics)))
}

func (c *Consumer) refresh(ctx actor.Context) {
	c.refreshing = true
	self, root, cl, topics := ctx.Self(), ctx.ActorSystem().Root, c.conn, c.metadataTopics()
	go func() {
		rctx, cancel := context.WithTimeout(context.Background(), cl.RequestTimeout())
		defer cancel()
		md, err := cl.Metadata(rctx, topics...)
		root.Send(self, metadataResult{md: md, topics: topics, err: err})
	}()
}

func (c *Consumer) onMetadata(ctx actor.Context, m metadataResult) {
	c.refreshing = false
	if m.err != nil {
		c.report(fmt.Errorf("consumer: metadata: %w", m.err))
		c.refreshLater(ctx)
		return
	}
	if m.topics == nil {
		// All topics: those missing are gone.
		clear(c.meta)
	}
	// counts: the partitions of every topic in the answer, 0 for one
	// that does not exist.
	counts := map[string]int32{}
	for _, tm := range m.md.Topics {
		if err := tm.ErrorCode.Err("topic " + tm.Name); err != nil {
			delete(c.meta, tm.Name)
			counts[tm.Name] = 0
			if !c.cfg.subscribing() {
				c.report(fmt.Errorf("consumer: metadata: %w", err))
				c.refreshLater(ctx)
			}
			continue
		}
		c.meta[tm.Name] = tm
		counts[tm.Name] = int32(len(tm.Partitions))
	}
	if !c.cfg.subscribing() {
		c.addAssigned(ctx)
	}
	for _, tp := range slices.SortedFunc(maps.Keys(c.parts), compareTP) {
		c.updateLeader(ctx, c.parts[tp])
	}
	if c.grp != nil {
		c.applyGroup(ctx, c.grp.OnMetadata(time.Now(), counts, m.topics == nil))
	}
}

// addAssigned adds the partitions of a consumer outside group management:
// cfg.Partitions of cfg.Topic, or all the topic's partitions (so new
// partitions are read once metadata shows them).
func (c *Consumer) addAssigned(ctx actor.Context) {
	tm := c.meta[c.cfg.Topic]
	if tm == nil || c.closing != nil {
		return
	}
	want := c.cfg.Partitions
	if len(want) == 0 {
		for _, p := range tm.Partitions {
			want = append(want, p.Partition)
		}
	}
	for _, id := range slices.Sorted(slices.Values(want)) {
		tp := TopicPartition{c.cfg.Topic, id}
		if c.parts[tp] != nil {
			continue
		}
		if !slices.ContainsFunc(tm.Partitions, func(p *messages.PartitionMetadata) bool { return p.Partition == id }) {
			c.report(fmt.Errorf("consumer: topic %s has no partition %d", c.cfg.Topic, id))
			continue
		}
		c.addPartitions(ctx, []TopicPartition{tp})
	}
}

// partitionMeta returns tp's metadata, nil if unknown.
func (c *Consumer) partitionMeta(tp TopicPartition) *messages.PartitionMetadata {
	tm := c.meta[tp.Topic]
	if tm == nil {
		return nil
	}
	for _, p := range tm.Partitions {
		if p.Partition == tp.Partition {
			return p
		}
	}
	return nil
}

// updateLeader takes p's leader from the metadata and moves p on: resolve
// its start position or fetch.
func (c *Consumer) updateLeader(ctx actor.Context, p *partState) {
	pm := c.partitionMeta(p.tp)
	if pm == nil {
		c.report(fmt.Errorf("consumer: no metadata for %s", p.tp))
		c.refreshLater(ctx)
		return
	}
	p.meta = pm
	pid, err := client.LeaderPID(pm)
	if err != nil {
		c.report(err)
		c.refreshLater(ctx)
		return
	}
	if pm.LeaderEpoch > p.epoch {
		// A fetch in flight went to the old leader incarnation: the broker
		// restarts a replica for every new leader epoch, and what sat in
		// the old actor's mailbox is dropped unanswered. Fetch again now.
		p.fs.abandon()
	}
	p.leader, p.epoch = pid, pm.LeaderEpoch
	c.advance(ctx, p)
}

// advance moves p on: it fetches, or looks up where p starts (the group's
// committed offset, then Start).
func (c *Consumer) advance(ctx actor.Context, p *partState) {
	switch {
	case p.fetchPos >= 0:
		c.fetch(ctx, p)
	case p.fs.resolving():
	case c.cfg.GroupID != "" && !p.committedKnown:
		c.fetchCommitted(ctx, []*partState{p})
	case p.meta != nil:
		c.resolvePosition(ctx, p)
	}
}

// addPartitions starts reading tps: with a group id, from the group's
// committed offsets (the Start for those without), otherwise from Start.
func (c *Consumer) addPartitions(ctx actor.Context, tps []TopicPartition) {
	var added []*partState
	for _, tp := range tps {
		if c.parts[tp] != nil {
			continue
		}
		p := &partState{tp: tp, fetchPos: -1, epoch: -1}
		if c.closing != nil {
			p.fs.revoke() // added by a rebalance that ends during Close
		}
		c.parts[tp] = p
		c.book.add(tp)
		p.meta = c.partitionMeta(tp)
		if p.meta != nil {
			if pid, err := client.LeaderPID(p.meta); err == nil {
				p.leader, p.epoch = pid, p.meta.LeaderEpoch
			}
		}
		added = append(added, p)
	}
	if len(added) == 0 {
		return
	}
	if c.cfg.GroupID != "" {
		c.fetchCommitted(ctx, added)
		return
	}
	for _, p := range added {
		c.advance(ctx, p)
	}
	if slices.ContainsFunc(added, func(p *partState) bool { return p.meta == nil || p.leader == nil }) {
		c.refreshLater(ctx)
	}
}

// removePartition stops reading tp and forgets its offsets and pause.
func (c *Consumer) removePartition(tp TopicPartition) {
	delete(c.parts, tp)
	c.book.remove(tp)
}

// fetchCommitted looks up the group's committed offsets of parts.
func (c *Consumer) fetchCommitted(ctx actor.Context, parts []*partState) {
	if len(parts) == 0 {
		return
	}
	byTopic := map[string]*messages.TopicPartitions{}
	var req []*messages.TopicPartitions
	for _, p := range parts {
		p.fs.resolve()
		t := byTopic[p.tp.Topic]
		if t == nil {
			t = &messages.TopicPartitions{Topic: p.tp.Topic}
			byTopic[p.tp.Topic] = t
			req = append(req, t)
		}
		t.Partitions = append(t.Partitions, p.tp.Partition)
	}
	self, root, cl, grp := ctx.Self(), ctx.ActorSystem().Root, c.conn, c.cfg.GroupID
	go func() {
		rctx, cancel := context.WithTimeout(context.Background(), cl.RequestTimeout())
		defer cancel()
		offs, err := cl.FetchOffsets(rctx, grp, req...)
		root.Send(self, committedResult{parts: parts, offsets: offs, err: err})
	}()
}

func (c *Consumer) onCommitted(ctx actor.Context, m committedResult) {
	var live []*partState
	for _, p := range m.parts {
		if c.parts[p.tp] == p {
			p.fs.resolved()
			live = append(live, p)
		}
	}
	if m.err != nil {
		c.report(fmt.Errorf("consumer: committed offsets of group %q: %w", c.cfg.GroupID, m.err))
		if len(live) > 0 {
			for _, p := range live {
				p.fs.resolve()
			}
			after(ctx, c.cfg.RetryBackoff, retryCommitted{parts: live})
		}
		return
	}
	committed := map[TopicPartition]int64{}
	for _, o := range m.offsets {
		committed[TopicPartition{o.Topic, o.Partition}] = o.Offset
	}
	for _, p := range live {
		p.committedKnown = true
		if off, ok := committed[p.tp]; ok && off >= 0 {
			c.book.setCommitted(p.tp, off)
			c.book.seek(p.tp, off)
			p.fetchPos = off
			c.logger.WithFields(logrus.Fields{"partition": p.tp.String(), "offset": off}).Debug("consumer: starting at the committed offset")
			c.fetch(ctx, p)
			continue
		}
		if p.meta == nil {
			c.refreshLater(ctx)
			continue
		}
		c.advance(ctx, p)
	}
}

// resolvePosition turns the Start into an offset with ListOffsets.
func (c *Consumer) resolvePosition(ctx actor.Context, p *partState) {
	if c.cfg.Start.kind == 2 {
		c.setPosition(p, c.cfg.Start.offset)
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
	p.fs.resolve()
	self, root, cl, meta := ctx.Self(), ctx.ActorSystem().Root, c.conn, p.meta
	go func() {
		rctx, cancel := context.WithTimeout(context.Background(), cl.RequestTimeout())
		defer cancel()
		lo, err := cl.ListOffsets(rctx, meta, p.tp.Topic, ts)
		res := positionResult{p: p, err: err}
		if err == nil {
			// For a timestamp no record has reached, the leader answers
			// its high watermark: where the first such record will go.
			res.offset = lo.Offset
		}
		root.Send(self, res)
	}()
}

func (c *Consumer) onPosition(ctx actor.Context, m positionResult) {
	p := m.p
	if c.parts[p.tp] != p {
		return // revoked meanwhile
	}
	p.fs.resolved()
	if m.err != nil {
		c.report(fmt.Errorf("consumer: resolve start offset of %s: %w", p.tp, m.err))
		c.refreshLater(ctx)
		return
	}
	c.setPosition(p, m.offset)
	c.fetch(ctx, p)
}

// setPosition moves p (fetching and processing) to offset.
func (c *Consumer) setPosition(p *partState, offset int64) {
	p.fetchPos = offset
	p.fs.abandon() // a fetch in flight is for the old position
	c.book.seek(p.tp, offset)
}

// fetchAnswerTimeout bounds how long past its long-poll wait a fetch may go
// unanswered before it is sent again (at most the request timeout): a
// fetch lost with a restarted leader replica would otherwise stall the
// partition for the whole request timeout. A late answer is ignored.
const fetchAnswerTimeout = 3 * time.Second

func (c *Consumer) fetch(ctx actor.Context, p *partState) {
	if !p.fs.ready() || p.leader == nil || p.fetchPos < 0 {
		return
	}
	if !c.conn.HostUp(p.leader.Address) {
		// Its host is gone: a request would wait out protoactor's
		// connection retries. Wait for the metadata to name a new leader.
		c.refreshLater(ctx)
		return
	}
	c.corr++
	p.fs.send(c.corr)
	ctx.Request(p.leader, &messages.FetchRequest{
		Topic: p.tp.Topic, Partition: p.tp.Partition, FetchOffset: p.fetchPos,
		MaxBytes: c.cfg.MaxBytes, MinBytes: c.cfg.MinBytes, MaxWaitMs: int32(c.cfg.MaxWait.Milliseconds()),
		CurrentLeaderEpoch: p.epoch, ReplicaId: -1, LastFetchedEpoch: -1, CorrelationId: c.corr,
	})
	after(ctx, c.cfg.MaxWait+min(c.conn.RequestTimeout(), fetchAnswerTimeout), fetchDeadline{tp: p.tp, corr: c.corr})
}

// onFetch hands a fetch answer's records over. With Config.ReuseBuffers
// the answer's buffer goes back to its pool (recycleAnswer) once nothing
// reads its records any more: on every path that does not hand them over,
// after the Handler returned, or once the Target answered.
func (c *Consumer) onFetch(ctx actor.Context, resp *messages.FetchResponse) {
	if c.cfg.ReuseBuffers {
		toTarget := false
		defer func() {
			if !toTarget {
				recycleAnswer(resp)
			}
		}()
		c.handFetched(ctx, resp, &toTarget)
		return
	}
	c.handFetched(ctx, resp, nil)
}

// recycleAnswer gives the pooled frame resp's records arrived in back to
// its pool (the client's remote receives them into one with
// Client.PoolFetchAnswers; a leader in the same process answers with the
// frame it read them into, which nobody else holds). The answer was this
// consumer's alone (one request, one answer) and the caller guarantees
// that nothing reads its records any more; records of any other origin
// are left to the garbage collector (frame.Recycle leaves them alone;
// frame.Recycled counts the frames given back).
func recycleAnswer(resp *messages.FetchResponse) {
	frame.Recycle(resp.Records)
	resp.Records = nil
}

// handFetched is onFetch's work. toTarget is nil unless the consumer
// reuses buffers; then it is set when the records went to the Target,
// which holds them until it answers.
func (c *Consumer) handFetched(ctx actor.Context, resp *messages.FetchResponse, toTarget *bool) {
	reusing := toTarget != nil
	p := c.parts[TopicPartition{resp.Topic, resp.Partition}]
	if p == nil {
		return // revoked
	}
	if stale, use := p.fs.answered(resp.CorrelationId); stale || !use {
		// Stale: timed out and refetched already, or revoked. Not used:
		// paused, revoking or closing meanwhile; fetched again from the
		// same position on resume.
		return
	}
	switch code := resp.ErrorCode; {
	case code == messages.ErrorCode_ERROR_CODE_OFFSET_OUT_OF_RANGE:
		err := fmt.Errorf("%w: offset %d of %s, the log holds %d..%d", ErrOffsetOutOfRange,
			p.fetchPos, p.tp, resp.LogStartOffset, resp.HighWatermark)
		switch c.cfg.OnOutOfRange {
		case Fail:
			c.report(err)
			p.fs.fail() // stopped: fetch no more
			return
		case ResetLatest:
			c.setPosition(p, resp.HighWatermark)
		default:
			c.setPosition(p, resp.LogStartOffset)
		}
		c.report(fmt.Errorf("%w; moving to offset %d", err, p.fetchPos))
		c.fetch(ctx, p)
		return
	case code != 0:
		c.report(fmt.Errorf("consumer: fetch %s: %w", p.tp, code.Err(resp.ErrorMessage)))
		if code.Retriable() {
			c.refreshLater(ctx)
		} else {
			after(ctx, c.cfg.RetryBackoff, retryFetch{tp: p.tp})
		}
		return
	}
	from := p.fetchPos
	if c.cfg.Handler != nil {
		// Fetch on from the end of these batches while they are decoded
		// and handled here, so that the leader reads and sends the next
		// records meanwhile (one fetch ahead, as Kafka's consumers keep
		// fetching while the application processes). Should decoding
		// stop short of that end (a corrupt batch), the fetch ahead is
		// abandoned below.
		if ahead, ok := batchesEnd(resp.Records); ok && ahead > from {
			p.fetchPos = ahead
			c.fetch(ctx, p)
		}
	}
	var dst []Message
	if reusing {
		dst = p.msgs
	}
	msgs, next, epoch, err := decode(dst, resp, from)
	p.msgs = nil // handed over until handled
	if err != nil {
		// Fetching again would read the same bytes: stop the partition
		// at the batch, once the records before it are handed over.
		p.fs.fail()
		defer c.reportCorrupt(p, err)
	}
	if p.fetchPos != next {
		p.fs.abandon() // a fetch ahead from the wrong position
		p.fetchPos = next
	}
	if len(msgs) == 0 {
		c.book.processed(p.tp, next, epoch)
		c.fetch(ctx, p)
		return
	}
	if c.cfg.Handler != nil {
		c.cfg.Handler(msgs)
		if reusing {
			p.msgs = msgs[:0]
		}
		c.book.processed(p.tp, next, epoch)
		c.fetch(ctx, p)
		return
	}
	p.fs.hand()
	if reusing {
		*toTarget = true
	}
	ctx.ReenterAfter(ctx.RequestFuture(c.cfg.Target, &Records{Messages: msgs}, 24*time.Hour), func(_ any, err error) {
		if reusing && err == nil {
			recycleAnswer(resp) // the Target is done with the records
			p.msgs = msgs[:0]
		}
		if c.parts[p.tp] != p || c.stopped {
			return // lost or closed meanwhile
		}
		p.fs.handed()
		if err != nil {
			c.report(fmt.Errorf("consumer: target did not answer: %w", err))
		} else if p.fetchPos == next {
			c.book.processed(p.tp, next, epoch) // unless a Seek moved it meanwhile
		}
		c.onIdle(ctx, p)
		c.fetch(ctx, p)
	})
}

// onIdle is called when p's records were handled: a revocation or close
// waiting for it may go on.
func (c *Consumer) onIdle(ctx actor.Context, p *partState) {
	if c.grp != nil {
		c.revocationHandled(ctx)
	}
	if c.closing != nil {
		c.closeStep(ctx)
	}
}

// reportCorrupt reports p's undecodable batch at error level, and to
// OnError.
func (c *Consumer) reportCorrupt(p *partState, err error) {
	fields := logrus.Fields{"topic": p.tp.Topic, "partition": p.tp.Partition, "offset": p.fetchPos}
	if ce := (*CorruptBatchError)(nil); errors.As(err, &ce) {
		fields["offset"], fields["next_offset"] = ce.Offset, ce.NextOffset
	}
	c.logger.WithFields(fields).WithError(err).Error("consumer: undecodable record batch; the partition stops until a Seek")
	if c.cfg.OnError != nil {
		c.cfg.OnError(err)
	}
}

// decode returns the records at or after from, the next position, and the
// leader epoch of the last batch. At the first batch (or record) that does
// not decode it stops: it returns the records before it, the position of
// the first record not returned, and a *CorruptBatchError. A trailing
// partial batch (a fetch may end with one) is no error. The records are
// decoded into dst's memory when it holds them (Config.ReuseBuffers: the
// slice the partition's last records were handed over in).
func decode(dst []Message, resp *messages.FetchResponse, from int64) ([]Message, int64, int32, error) {
	out := dst[:0]
	if n := recordCountHint(resp.Records); cap(out) < n {
		out = make([]Message, 0, n)
	}
	next, epoch := from, int32(-1)
	tp := TopicPartition{resp.Topic, resp.Partition}
	var rec record.Record
	sc := record.Batches(resp.Records)
	for sc.Next() {
		h := sc.Header()
		// A reader per batch: records of a compressed batch alias the
		// reader's buffer, which the next Reset would overwrite.
		var br record.BatchReader
		if err := sc.Read(&br, record.MaxInflatedBytes); err != nil { // checked by sc.Next
			return out, next, epoch, &CorruptBatchError{Partition: tp, Offset: next, NextOffset: h.NextOffset(), Err: err}
		}
		for br.Next(&rec) {
			if rec.Offset < from || h.Control() {
				continue
			}
			// Filled where it lies: a Message built aside and appended
			// was copied again, with the write barriers of a bulk copy.
			if len(out) == cap(out) {
				out = slices.Grow(out, 1)
			}
			out = out[:len(out)+1]
			m := &out[len(out)-1]
			m.Topic, m.Partition, m.LeaderEpoch, m.Offset, m.Timestamp = resp.Topic, resp.Partition, h.LeaderEpoch, rec.Offset, rec.Timestamp
			m.Key, m.Value, m.Headers = rec.Key, rec.Value, nil // (dst's earlier record's headers)
			if len(rec.Headers) > 0 {
				m.Headers = append([]record.RecordHeader(nil), rec.Headers...)
			}
			next, epoch = rec.Offset+1, h.LeaderEpoch
		}
		if err := br.Err(); err != nil {
			return out, next, epoch, &CorruptBatchError{Partition: tp, Offset: next, NextOffset: h.NextOffset(), Err: err}
		}
		next = max(next, h.NextOffset())
		epoch = h.LeaderEpoch
	}
	if err := sc.Err(); err != nil {
		return out, next, epoch, &CorruptBatchError{Partition: tp, Offset: next, NextOffset: -1, Err: err}
	}
	return out, next, epoch, nil
}

// batchesEnd returns the offset after the last whole batch at the start
// of b, reading only headers (no CRC: decode checks each batch); ok is
// false when b holds no whole batch.
func batchesEnd(b []byte) (next int64, ok bool) {
	for len(b) >= record.HeaderSize {
		h, err := record.ParseHeader(b)
		if err != nil || h.Size() > len(b) {
			break
		}
		next, ok = h.NextOffset(), true
		b = b[h.Size():]
	}
	return next, ok
}

// minRecordBytes is the smallest a record of a v2 batch can be: a one-byte
// length and six one-byte fields (attributes, timestamp and offset
// deltas, key and value lengths, header count).
const minRecordBytes = 7

// recordCountHint is how many records the whole batches in b say they
// hold, for sizing decode's slice once instead of growing it (growing it
// allocated and copied about a quarter of the fetched bytes again at 1 KiB
// records). Only headers are read (no CRC: decode checks each batch). A
// count is capped by what its batch's bytes could hold, so a forged header
// allocates nothing beyond the response's own size; a compressed batch
// holding more than that just grows the slice.
func recordCountHint(b []byte) int {
	n := 0
	for len(b) >= record.HeaderSize {
		h, err := record.ParseHeader(b)
		if err != nil || h.Size() > len(b) {
			break
		}
		if !h.Control() && h.RecordCount > 0 {
			n += min(int(h.RecordCount), h.Size()/minRecordBytes)
		}
		b = b[h.Size():]
	}
	return n
}

// onPause pauses (or resumes) the owned partitions of tps. A fetch in
// flight for a paused partition is dropped when it arrives, its position
// unchanged, so Resume fetches the same records again.
func (c *Consumer) onPause(ctx actor.Context, tps []TopicPartition, pause bool) {
	for _, tp := range tps {
		p := c.parts[tp]
		if p == nil {
			continue
		}
		changed := false
		if pause {
			changed = p.fs.pause()
		} else {
			changed = p.fs.resume()
		}
		if !changed {
			continue // already so, or revoking
		}
		c.logger.WithFields(logrus.Fields{"partition": tp.String(), "paused": pause}).Debug("consumer: pause")
		if !pause {
			c.fetch(ctx, p)
		}
	}
}

// onSeek moves an owned partition's position.
func (c *Consumer) onSeek(ctx actor.Context, m *Seek) {
	p := c.parts[m.Partition]
	if p == nil || m.Offset < 0 {
		c.report(fmt.Errorf("consumer: seek %s to %d: not an owned partition or a negative offset", m.Partition, m.Offset))
		return
	}
	c.setPosition(p, m.Offset)
	p.fs.seek() // a failure (the Fail policy, an undecodable batch) is cleared: the new position may be fine
	c.fetch(ctx, p)
}
