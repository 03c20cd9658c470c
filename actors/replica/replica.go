// Package replica is the partition replica actor: the only writer of one
// partition's log. As leader it takes produce requests, serves fetches (with
// long polling) and answers list-offsets; followers (the replication issue)
// pull from it, and their requests are served only when they come from the
// follower's own host (senders.go). The actor is a thin shell: the log does
// the storage work, and the protocol decisions that need no I/O live in
// plain functions and structs beside it, tested without actors.
//
// Seams: the leader's ISR changes go to the replica's parent (the broker)
// as ProposeISR messages, answered with UpdateISR or ISRChangeFailed
// (isr.go); the clock the replica reads is Config.Now; the log's file
// system is Config.Log.FS.
//
// Threading: all replica state is owned by the actor's goroutine. Timers
// post messages back to the mailbox; they never touch state.
package replica

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/internal/deadmail"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage"
	"github.com/actorlog/actorlog/storage/record"
)

// DefaultRetentionCheckInterval is how often retention runs
// (log.retention.check.interval.ms).
const DefaultRetentionCheckInterval = 5 * time.Minute

// Config configures one replica.
type Config struct {
	Topic     string
	Partition int32
	// Dir is the partition's log directory.
	Dir string
	// Log configures the partition log.
	Log storage.Config
	// LeaderEpoch is the epoch the controller gave this leadership.
	LeaderEpoch int32
	// MinInsyncReplicas is min.insync.replicas for acks=all (default 1).
	MinInsyncReplicas int
	// Self is this host's id. Replicas and ISR are the partition's replica
	// set and in-sync replicas as the controller last committed them, at
	// PartitionEpoch (default: Self alone).
	Self           int32
	Replicas, ISR  []int32
	PartitionEpoch int32
	// ReplicaLagTimeMax is replica.lag.time.max.ms: an ISR follower that
	// has not caught up for this long is proposed out of the ISR (default
	// DefaultReplicaLagTimeMax).
	ReplicaLagTimeMax time.Duration
	// Follow, when set, makes this replica a follower of the leader
	// replica at that PID, for LeaderEpoch.
	Follow *actor.PID
	// Hosts maps each registered host's id to its advertised address (the
	// broker's view of the host registrations; LiveHosts replaces it). A
	// follower's fetch or OffsetForLeaderEpoch claiming replica_id R is
	// served only if R is another replica of the partition and the request
	// comes from Hosts[R] (senders.go): with no entry for R, it is
	// refused. Tests in one actor system map the follower ids to
	// protoactor's local address, "nonhost". Read only, never modified.
	Hosts map[int32]string
	// Internal marks a partition of an internal topic
	// (messages.OffsetsTopic): its leader refuses ProduceRequests with
	// INVALID_TOPIC_EXCEPTION and appends only InternalProduce, which
	// only actors of this host can send (it is not a protobuf message,
	// so it never crosses hosts).
	Internal bool
	// RetentionCheckInterval is how often segments past retention are
	// deleted (default DefaultRetentionCheckInterval).
	RetentionCheckInterval time.Duration
	// FetchMaxBytes caps what one consumer fetch returns, whatever it
	// asks (default DefaultFetchMaxBytes, Kafka's fetch.max.bytes);
	// ReplicaFetchResponseMaxBytes caps a follower fetch (default
	// DefaultReplicaFetchResponseMaxBytes). The first batch is returned whole
	// even past the cap (fetch.go).
	FetchMaxBytes, ReplicaFetchResponseMaxBytes int
	// MaxParkedFetches bounds the long-poll fetches waiting for data
	// (default DefaultMaxParkedFetches); a fetch beyond it is answered at
	// once. MaxParkedAcks bounds the acks=all produces waiting for the
	// high watermark (default DefaultMaxParkedAcks); one beyond it is
	// refused, unwritten, with REQUEST_TIMED_OUT (parked.go).
	MaxParkedFetches, MaxParkedAcks int
	// Now is the replica's clock (default time.Now): read wherever the
	// replica reads the time — the ISR's lag, producer id expiry, request
	// durations — so tests can move it. Timers (long polls, acks=all
	// timeouts, the periodic checks) still run on real time; they only
	// post messages. A Transition whose Config has no Now keeps this one.
	Now func() time.Time
	// Metrics receives per-request observations (optional).
	Metrics Metrics
	// Cleaner is the host's log cleaner (optional): a replica of a topic
	// whose cleanup.policy compacts registers its open log with it, to be
	// cleaned up to its high watermark, and unregisters it
	// before closing it. A Transition keeps the registration.
	Cleaner LogCleaner
	// Logger (logrus.StandardLogger when nil).
	Logger *logrus.Entry
}

// Metrics receives what the replica observes. Implementations must be safe
// for concurrent use (many replicas share one).
type Metrics interface {
	Produced(topic string, partition int32, records int, bytes int, took time.Duration, code messages.ErrorCode)
	Fetched(topic string, partition int32, bytes int, took time.Duration, code messages.ErrorCode)
	LogEndOffset(topic string, partition int32, offset int64)
}

// LogCleaner is the host's log cleaner as a replica sees it
// (*storage.Cleaner). hw is called from the cleaner's goroutines.
type LogCleaner interface {
	Register(topic string, partition int32, l *storage.Log, hw func() int64) (unregister func())
}

type noMetrics struct{}

func (noMetrics) Produced(string, int32, int, int, time.Duration, messages.ErrorCode) {}
func (noMetrics) Fetched(string, int32, int, time.Duration, messages.ErrorCode)       {}
func (noMetrics) LogEndOffset(string, int32, int64)                                   {}

// Opened is sent to the parent once the replica has opened its log and
// taken up its role (Err nil; a leader has recorded its epoch) or failed
// to open it (Err set; the replica then stops). The broker starts a
// bounded number of replicas at a time, counting each until its Opened.
type Opened struct {
	Topic     string
	Partition int32
	Err       error
}

// UpdateISR tells the leader the ISR the controller committed for its
// leader epoch, at PartitionEpoch: from the metadata, or as the parent's
// answer to its ProposeISR.
type UpdateISR struct {
	LeaderEpoch, PartitionEpoch int32
	ISR                         []int32
}

// LiveHosts tells a replica which hosts are registered. Followers on the
// others may not join a leader's ISR and do not hold its high watermark
// back. Addresses, when not nil, replaces Config.Hosts: the registered
// hosts' advertised addresses, which follower requests are checked
// against. The broker sends one LiveHosts to all its replicas: its maps
// are read only.
type LiveHosts struct {
	Live      map[int32]bool
	Addresses map[int32]string
}

// InternalProduce is a ProduceRequest from this host's group coordinator
// to the leader of an internal topic's partition (see Config.Internal).
// It is answered with a ProduceResponse, exactly as the request would be.
type InternalProduce struct{ Request *messages.ProduceRequest }

// ISRChangeFailed tells the leader its proposed ISR change was certainly
// not committed, so it may propose again.
type ISRChangeFailed struct{}

// Internal messages.
type (
	isrCheck         struct{}
	produceTimeout   struct{ id uint64 }
	fetchTimeout     struct{ id uint64 }
	retentionTick    struct{}
	hwCheckpointTick struct{}
	getStateSignal   struct{}
)

// State is a snapshot of a replica's offsets, for metadata and tests.
type State struct {
	LogStartOffset int64
	LogEndOffset   int64
	HighWatermark  int64
	LeaderEpoch    int32
	// ParkedFetches is how many long-poll fetches wait for data.
	ParkedFetches int
	// ParkedAcks is how many acks=all produces wait for the high watermark.
	ParkedAcks int
	// FetchesNotParked and AcksRefused count the requests turned away
	// by the caps (MaxParkedFetches, MaxParkedAcks) since the start.
	FetchesNotParked, AcksRefused uint64
	// WakeReads counts the log reads made to wake parked fetches, a
	// measure of what appends cost while fetches are parked.
	WakeReads uint64
}

// GetState asks a replica for its State (reply: State).
var GetState = getStateSignal{}

// Replica is the actor. Create it with Props.
type Replica struct {
	cfg     Config
	log     *storage.Log
	logger  *logrus.Entry
	metrics Metrics

	// cfg.LeaderEpoch is the replica's leader epoch; cfg.Hosts the
	// registered hosts' addresses (replaced by LiveHosts.Addresses), for
	// the follower requests' sender check.
	//
	// hw is the high watermark this replica has acted on: what consumers
	// may read, what its parked acks=all produces were completed against
	// and what it checkpoints. A follower sets it from the leader's;
	// a leader takes the leader state's after each event that may move it
	// (takeHighWatermark), so it is not a copy of the core's value but the
	// last one the shell carried out.
	hw int64
	// publishedHW is hw for the log cleaner's goroutine (it cleans no
	// further); 0 until the replica has assumed its role.
	publishedHW atomic.Int64
	leader      *LeaderState // followers, ISR and high watermark of this term (leader)
	// keyReader decodes producer batches for the key check of compacted
	// topics (compacted.go); nil until the first.
	keyReader *record.BatchReader
	// following is set when this replica is a follower.
	following *following

	// inc tells this incarnation's self-addressed messages from those of
	// an earlier actor under the same PID (see fetchStep).
	inc      uint64
	waiting  map[uint64]*parkedFetch
	nextWait uint64 // ids of parked fetches and acks=all produces, unique across incarnations
	// acks=all produce requests waiting for the high watermark.
	waitingAcks map[uint64]*parkedProduce
	// queued holds the produces taken from the mailbox for the next group
	// append (queueProduce); appendResults is AppendMany's reused slice.
	queued        []queuedProduce
	appendResults []storage.AppendResult
	// The largest sizes of the maps since they were last recreated, and
	// the requests the caps turned away (parked.go).
	waitingPeak, acksPeak                    int
	fetchesNotParked, acksRefused, wakeReads uint64
	// parkedFollowers counts the parked follower fetches; wokeHW and
	// wokeLEO are the bounds the last wake-up saw (fetch.go).
	parkedFollowers int
	wokeHW, wokeLEO int64
	// growth counts the bytes appended, for waking parked fetches.
	growth byteClock
	// unclean unregisters the log from the cleaner (nil: not registered).
	unclean   func()
	retention *time.Ticker
	stopTick  chan struct{}
}

// Props returns the props of a replica actor for cfg. Its mailbox answers
// the requests left in it when the actor stops with a dead letter
// (deadmail), where protoactor's would drop them unanswered.
func Props(cfg Config) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return newReplica(cfg) }, actor.WithMailbox(deadmail.Mailbox()))
}

func newReplica(cfg Config) *Replica {
	cfg = cfg.withDefaults()
	r := &Replica{
		cfg:     cfg,
		metrics: cfg.Metrics,
		waiting: map[uint64]*parkedFetch{},

		waitingAcks: map[uint64]*parkedProduce{},
		logger:      cfg.Logger.WithFields(logrus.Fields{"topic": cfg.Topic, "partition": cfg.Partition}),
	}
	if r.metrics == nil {
		r.metrics = noMetrics{}
	}
	r.inc = incarnations.Add(1)
	r.nextWait = r.inc << 32
	return r
}

// withDefaults fills in cfg's unset fields.
func (cfg Config) withDefaults() Config {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MinInsyncReplicas <= 0 {
		cfg.MinInsyncReplicas = 1
	}
	if cfg.RetentionCheckInterval <= 0 {
		cfg.RetentionCheckInterval = DefaultRetentionCheckInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = logrus.NewEntry(logrus.StandardLogger())
	}
	if len(cfg.Replicas) == 0 {
		cfg.Replicas = []int32{cfg.Self}
	}
	if len(cfg.ISR) == 0 {
		cfg.ISR = []int32{cfg.Self}
	}
	if cfg.ReplicaLagTimeMax <= 0 {
		cfg.ReplicaLagTimeMax = DefaultReplicaLagTimeMax
	}
	if cfg.FetchMaxBytes <= 0 {
		cfg.FetchMaxBytes = DefaultFetchMaxBytes
	}
	if cfg.ReplicaFetchResponseMaxBytes <= 0 {
		cfg.ReplicaFetchResponseMaxBytes = DefaultReplicaFetchResponseMaxBytes
	}
	if cfg.MaxParkedFetches <= 0 {
		cfg.MaxParkedFetches = DefaultMaxParkedFetches
	}
	if cfg.MaxParkedAcks <= 0 {
		cfg.MaxParkedAcks = DefaultMaxParkedAcks
	}
	return cfg
}

// incarnations numbers the replica actors of this process.
var incarnations atomic.Uint64

// Receive dispatches the replica's messages.
func (r *Replica) Receive(ctx actor.Context) {
	if req, ok := ctx.Message().(*messages.ProduceRequest); ok && r.queueProduce(ctx, req) {
		return
	}
	if len(r.queued) > 0 {
		r.flushProduces(ctx) // before anything else happens
	}
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		r.onStarted(ctx)
	case produceFlush:
	case *messages.ProduceRequest:
		r.produce(ctx, msg, ctx.Sender(), r.cfg.Now(), false)
	case *InternalProduce:
		r.produce(ctx, msg.Request, ctx.Sender(), r.cfg.Now(), true)
	case *messages.FetchRequest:
		r.onFetch(ctx, msg)
	case *messages.ListOffsetsRequest:
		r.onListOffsets(ctx, msg)
	case *messages.OffsetForLeaderEpochRequest:
		r.onOffsetForLeaderEpoch(ctx, msg)
	case fetchTimeout:
		r.onFetchTimeout(ctx, msg)
	case produceTimeout:
		r.onProduceTimeout(ctx, msg)
	case isrCheck:
		r.onISRCheck(ctx)
	case truncateStep:
		r.onTruncateStep(ctx, msg)
	case fetchStep:
		r.onFetchStep(ctx, msg)
	case *Reopen:
		r.onReopen(ctx, msg)
	case *Transition:
		r.onTransition(ctx, msg)
	case *UpdateISR:
		r.onUpdateISR(ctx, msg)
	case *LiveHosts:
		r.onLiveHosts(ctx, msg)
	case ISRChangeFailed:
		if r.leader != nil {
			r.leader.AbortISRChange(r.cfg.Now())
		}
	case retentionTick:
		r.onRetention()
	case hwCheckpointTick:
		r.checkpointHighWatermark()
	case getStateSignal:
		ctx.Respond(r.state())
	case *actor.Stopping:
		r.onStopping(ctx)
	case *actor.Stopped, *actor.Restarting:
	default:
		r.logger.WithFields(logrus.Fields{"type": fmt.Sprintf("%T", msg), "sender": ctx.Sender()}).Warn("replica: unknown message")
	}
}

func (r *Replica) onStarted(ctx actor.Context) { r.open(ctx) }

// notifyOpened sends the parent (the broker) Opened with err.
func (r *Replica) notifyOpened(ctx actor.Context, err error) {
	if ctx.Parent() != nil {
		ctx.Send(ctx.Parent(), &Opened{Topic: r.cfg.Topic, Partition: r.cfg.Partition, Err: err})
	}
}

// open opens the log of r.cfg and takes up the replica's role: at the
// start and on Reopen. A log that cannot open stops the actor (the broker
// reopens the partition after a backoff).
func (r *Replica) open(ctx actor.Context) {
	l, err := storage.Open(r.cfg.Dir, withLogger(r.cfg.Log, r.logger))
	if err != nil {
		r.notifyOpened(ctx, err)
		r.logger.WithError(err).Error("replica: cannot open log")
		ctx.Stop(ctx.Self())
		return
	}
	// After the role is taken up (a leader's epoch checkpoint is an fsync
	// of its own), whether or not that succeeds.
	defer r.notifyOpened(ctx, nil)
	r.log = l
	if r.cfg.Cleaner != nil && r.cfg.Log.CleanupPolicy.Compacts() {
		// Up to the high watermark, as Kafka's cleaner (nothing a
		// consumer may not read yet is cleaned; everything below it is
		// committed, never truncated). A follower truncating its log
		// after a leader change lowers it after the truncation, which
		// aborts a cleaning in its way (the log's generation moves).
		// Followers clean their own logs too.
		r.unclean = r.cfg.Cleaner.Register(r.cfg.Topic, r.cfg.Partition, l, r.publishedHW.Load)
	}
	if r.assumeRole(ctx) {
		r.startTimers(ctx)
	}
}

// setHighWatermark sets r.hw and publishes it to the log cleaner.
func (r *Replica) setHighWatermark(hw int64) {
	r.hw = hw
	r.publishedHW.Store(hw)
}

// assumeRole starts this replica's part for r.cfg (at r.cfg.LeaderEpoch)
// on its open log: following r.cfg.Follow, or leading. It reports false
// when the leadership is invalid (the replica then stops).
func (r *Replica) assumeRole(ctx actor.Context) bool {
	l := r.log
	if r.cfg.Follow != nil {
		r.startFollowing(ctx)
		return true
	}
	now := r.cfg.Now()
	// A leader alone in its ISR owns everything in its log; otherwise the
	// high watermark starts where it was last checkpointed (everything
	// below was committed) and the followers' fetches move it on.
	hw := r.checkpointedHighWatermark()
	if len(r.cfg.ISR) == 1 && r.cfg.ISR[0] == r.cfg.Self {
		hw = l.LogEndOffset()
	}
	var err error
	r.leader, err = NewLeaderState(LeaderConfig{
		Self: r.cfg.Self, LeaderEpoch: r.cfg.LeaderEpoch, PartitionEpoch: r.cfg.PartitionEpoch,
		EpochStartOffset: l.LogEndOffset(), Replicas: r.cfg.Replicas, ISR: r.cfg.ISR,
		HighWatermark: hw, MinInsyncReplicas: r.cfg.MinInsyncReplicas, ReplicaLagTimeMax: r.cfg.ReplicaLagTimeMax,
	}, now)
	if err != nil {
		r.logger.WithError(err).Error("replica: invalid leadership")
		ctx.Stop(ctx.Self())
		return false
	}
	r.leader.OnLeaderAppend(l.LogEndOffset(), now)
	r.setHighWatermark(r.leader.HighWatermark())
	r.growth.reset(l.LogEndOffset())
	if err := l.AssignEpoch(r.cfg.LeaderEpoch, l.LogEndOffset()); err != nil {
		r.logger.WithError(err).Error("replica: cannot record leader epoch")
	}
	r.metrics.LogEndOffset(r.cfg.Topic, r.cfg.Partition, r.hw)
	r.logger.WithFields(logrus.Fields{"log_start_offset": l.LogStartOffset(), "log_end_offset": l.LogEndOffset(), "leader_epoch": r.cfg.LeaderEpoch}).Info("replica started")
	return true
}

// HighWatermarkCheckpointInterval is how often a replica checkpoints its
// high watermark when it moved (Kafka's
// replica.high.watermark.checkpoint.interval.ms). With the broker's shared
// checkpoint (storage.Config.HighWatermarks) checkpointing is a store in
// the data dir's table, which the broker writes once per interval for
// every partition; without it, a write of the log's own file.
const HighWatermarkCheckpointInterval = 5 * time.Second

// checkpointedHighWatermark is the high watermark the log last
// checkpointed, clamped to the log.
func (r *Replica) checkpointedHighWatermark() int64 {
	return min(max(r.log.HighWatermarkCheckpoint(), r.log.LogStartOffset()), r.log.LogEndOffset())
}

// checkpointHighWatermark checkpoints the high watermark if it moved
// (storage.Log.WriteHighWatermark).
func (r *Replica) checkpointHighWatermark() {
	if r.log == nil || r.log.HighWatermarkCheckpoint() == r.hw {
		return
	}
	if err := r.log.WriteHighWatermark(r.hw); err != nil {
		r.logger.WithError(err).Warn("replica: checkpointing the high watermark failed")
	}
}

// startTimers starts the retention, ISR and checkpoint tickers.
func (r *Replica) startTimers(ctx actor.Context) {
	r.stopTick = make(chan struct{})
	self, root := ctx.Self(), ctx.ActorSystem().Root
	t := time.NewTicker(r.cfg.RetentionCheckInterval)
	r.retention = t
	// ISR maintenance runs every half lag time, as Kafka's isr-expiration.
	isrT := time.NewTicker(r.cfg.ReplicaLagTimeMax / 2)
	hwT := time.NewTicker(HighWatermarkCheckpointInterval)
	go func(stop <-chan struct{}) {
		defer isrT.Stop()
		defer hwT.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				root.Send(self, retentionTick{})
			case <-isrT.C:
				root.Send(self, isrCheck{})
			case <-hwT.C:
				root.Send(self, hwCheckpointTick{})
			}
		}
	}(r.stopTick)
}

func withLogger(c storage.Config, l *logrus.Entry) storage.Config {
	if c.Logger == nil {
		c.Logger = l
	}
	return c
}

func (r *Replica) onStopping(ctx actor.Context) {
	r.shut(ctx, "replica stopping", "leader stopping before the in-sync replicas had the batch")
}

// shut stops the replica's timers and cleaning, answers what is parked
// and closes the log: on Stopping, and on Reopen before the log opens
// again.
func (r *Replica) shut(ctx actor.Context, fetchWhy, produceWhy string) {
	if r.retention != nil {
		r.retention.Stop()
		close(r.stopTick)
		r.retention = nil
	}
	r.answerParked(ctx, fetchWhy, produceWhy)
	if r.unclean != nil {
		// Aborts a cleaning of the log in progress and waits for it to
		// end, so none runs into the Close.
		r.unclean()
		r.unclean = nil
	}
	if r.log != nil {
		r.checkpointHighWatermark()
		if err := r.log.Close(); err != nil {
			r.logger.WithError(err).Error("replica: closing log")
		}
		r.log = nil
	}
}

// answerParked answers every parked fetch and acks=all produce with
// NOT_LEADER_OR_FOLLOWER: this replica no longer serves them as it was.
func (r *Replica) answerParked(ctx actor.Context, fetchWhy, produceWhy string) {
	for id, p := range r.waiting {
		r.unpark(id, p)
		p.timer.Stop()
		ctx.Send(p.sender, r.fetchError(p.req, messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER, fetchWhy))
	}
	for id, p := range r.waitingAcks {
		delete(r.waitingAcks, id)
		p.timer.Stop()
		// The records are in the log; whether they reach the high
		// watermark is for the next leader to tell. Kafka answers so too.
		p.resp.ErrorCode, p.resp.ErrorMessage = messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER, produceWhy
		ctx.Send(p.sender, p.resp)
	}
	r.shrinkParked()
}

// Transition moves a running replica to a new leader epoch in place
// (Kafka's makeLeader / makeFollower): leader or follower, of the same
// partition and log directory. The broker used to stop the actor and
// spawn a new one under the same PID instead; requests already in the old
// actor's mailbox were then dropped unanswered (protoactor drops a stopped
// actor's queued user messages), and a producer that had learnt of the
// new leader a moment before the leader's own broker did waited out its
// request timeout: the 4-5 s write pauses of a loaded rolling restart.
// Here every request is answered, by the old role or by the new one.
type Transition struct{ Config Config }

func (r *Replica) onTransition(ctx actor.Context, m *Transition) {
	cfg, ok := r.inPlace(m.Config, "transition")
	if !ok {
		return
	}
	r.answerParked(ctx, "leader epoch changed", "leadership changed before the in-sync replicas had the batch")
	r.checkpointHighWatermark()
	r.incarnate(cfg)
	r.assumeRole(ctx)
}

// inPlace completes cfg, the config of a Transition or Reopen (what), and
// reports whether the replica may take it: its log is open, cfg is of the
// same partition and directory, at the same or a newer leader epoch.
func (r *Replica) inPlace(cfg Config, what string) (Config, bool) {
	if cfg.Now == nil {
		cfg.Now = r.cfg.Now
	}
	cfg = cfg.withDefaults()
	if cfg.Hosts == nil {
		cfg.Hosts = r.cfg.Hosts
	}
	log := r.logger.WithFields(logrus.Fields{"leader_epoch": cfg.LeaderEpoch, "previous_leader_epoch": r.cfg.LeaderEpoch})
	switch {
	case r.log == nil:
		log.Warn("replica: " + what + " ignored: the log is not open")
		return cfg, false
	case cfg.Topic != r.cfg.Topic || cfg.Partition != r.cfg.Partition || cfg.Dir != r.cfg.Dir:
		log.WithFields(logrus.Fields{"to_topic": cfg.Topic, "to_partition": cfg.Partition}).Error("replica: " + what + " to another partition refused")
		return cfg, false
	case cfg.LeaderEpoch < r.cfg.LeaderEpoch:
		log.Warn("replica: " + what + " to an older leader epoch ignored")
		return cfg, false
	}
	return cfg, true
}

// incarnate makes the replica a new incarnation of cfg, with no role yet:
// steps and answers the old one scheduled or awaits (follower fetches,
// retries) are ignored when they arrive.
func (r *Replica) incarnate(cfg Config) {
	r.inc = incarnations.Add(1)
	r.nextWait = r.inc << 32
	r.cfg = cfg
	r.leader, r.following = nil, nil
	r.wokeHW, r.wokeLEO = -1, -1 // the new role's bounds are news to its first wake-up
}

// Reopen has a running replica close its log and open it again with a
// new config (new topic configs: retention, segment size, cleanup policy,
// min.insync.replicas, ...) in place, of the same partition and log
// directory. The broker used to stop the actor and spawn a new one, and
// requests in the old actor's mailbox were dropped unanswered (see Props);
// here every request is answered, by the replica before the reopen or by
// the reopened one. What is parked (long-poll fetches, acks=all produces)
// is answered NOT_LEADER_OR_FOLLOWER, as on a restart.
type Reopen struct{ Config Config }

func (r *Replica) onReopen(ctx actor.Context, m *Reopen) {
	cfg, ok := r.inPlace(m.Config, "reopen")
	if !ok {
		return
	}
	r.shut(ctx, "replica reopening with new configs", "leader reopening with new configs before the in-sync replicas had the batch")
	r.incarnate(cfg)
	r.logger.WithField("leader_epoch", cfg.LeaderEpoch).Info("replica reopening its log with new configs")
	r.open(ctx)
}

func (r *Replica) onRetention() {
	if r.log == nil {
		return
	}
	n, err := r.log.DeleteExpiredSegments(r.hw)
	if err != nil {
		r.logger.WithError(err).Error("replica: retention failed")
		return
	}
	if n > 0 {
		r.logger.WithFields(logrus.Fields{"segments": n, "log_start_offset": r.log.LogStartOffset()}).Info("retention deleted segments")
	}
	if n := r.log.ExpireProducers(r.cfg.Now()); n > 0 {
		r.logger.WithField("producers", n).Info("expired idle producer ids")
	}
}

func (r *Replica) state() State {
	st := State{LeaderEpoch: r.cfg.LeaderEpoch, HighWatermark: r.hw, ParkedFetches: len(r.waiting), ParkedAcks: len(r.waitingAcks),
		FetchesNotParked: r.fetchesNotParked, AcksRefused: r.acksRefused, WakeReads: r.wakeReads}
	if r.log != nil {
		st.LogStartOffset, st.LogEndOffset = r.log.LogStartOffset(), r.log.LogEndOffset()
	}
	return st
}

// checkEpoch compares a request's leader epoch with ours (-1: no check).
func (r *Replica) checkEpoch(reqEpoch int32) (messages.ErrorCode, string) {
	code := CheckLeaderEpoch(r.cfg.LeaderEpoch, reqEpoch)
	switch code {
	case messages.ErrorCode_ERROR_CODE_FENCED_LEADER_EPOCH:
		return code, fmt.Sprintf("request epoch %d is older than the leader's %d", reqEpoch, r.cfg.LeaderEpoch)
	case messages.ErrorCode_ERROR_CODE_UNKNOWN_LEADER_EPOCH:
		return code, fmt.Sprintf("request epoch %d is newer than the leader's %d", reqEpoch, r.cfg.LeaderEpoch)
	}
	return code, ""
}

// checkTarget makes sure a request is for this partition and that the log is open.
func (r *Replica) checkTarget(topic string, partition int32, epoch int32) (messages.ErrorCode, string) {
	if topic != r.cfg.Topic || partition != r.cfg.Partition {
		return messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION, fmt.Sprintf("this replica is %s-%d, not %s-%d", r.cfg.Topic, r.cfg.Partition, topic, partition)
	}
	if r.log == nil {
		return messages.ErrorCode_ERROR_CODE_KAFKA_STORAGE_ERROR, "log not open"
	}
	if r.following != nil {
		return messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER, fmt.Sprintf("this replica of %s-%d follows %s", r.cfg.Topic, r.cfg.Partition, r.following.leader)
	}
	return r.checkEpoch(epoch)
}

// codeFor maps a storage error to the error code a client gets.
func codeFor(err error) messages.ErrorCode {
	switch {
	case err == nil:
		return messages.ErrorCode_ERROR_CODE_UNSPECIFIED
	case errors.Is(err, storage.ErrRecordTooLarge):
		return messages.ErrorCode_ERROR_CODE_MESSAGE_TOO_LARGE
	case errors.Is(err, storage.ErrOffsetOutOfRange):
		return messages.ErrorCode_ERROR_CODE_OFFSET_OUT_OF_RANGE
	case errors.Is(err, storage.ErrCorruptLog):
		return messages.ErrorCode_ERROR_CODE_CORRUPT_MESSAGE
	case errors.Is(err, storage.ErrInvalidBatch):
		if errors.Is(err, recordChecksum) {
			return messages.ErrorCode_ERROR_CODE_CORRUPT_MESSAGE
		}
		return messages.ErrorCode_ERROR_CODE_INVALID_RECORD
	case errors.Is(err, storage.ErrClosed):
		return messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER
	case errors.Is(err, storage.ErrOutOfOrderSequence):
		return messages.ErrorCode_ERROR_CODE_OUT_OF_ORDER_SEQUENCE_NUMBER
	case errors.Is(err, storage.ErrInvalidProducerEpoch):
		return messages.ErrorCode_ERROR_CODE_INVALID_PRODUCER_EPOCH
	}
	return messages.ErrorCode_ERROR_CODE_KAFKA_STORAGE_ERROR
}
