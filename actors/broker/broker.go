// Package broker is the per-host broker actor. It follows the cluster
// metadata in etcd (topics and hosts, written by the controller:
// watch.go), keeps a cache of it to answer clients' metadata requests
// (metadata.go), spawns and stops the partition replica actors this host
// leads or follows (replicas.go; and a group coordinator beside each
// offsets topic partition it leads, coordinators.go), answers FindCoordinator and ListGroups (the groups of
// its coordinators), deletes the logs of deleted topics and of partitions
// reassigned away from this host, relays its leaders' ISR changes to the
// controller (isr.go), and forwards admin requests to the controller.
//
// Its decisions are pure and table-tested (plan.go): from the metadata,
// the replicas running here and their restart backoffs, plan returns the
// actions — spawn, move to a new leader epoch, hand over a new ISR, stop,
// remove a directory — that reconcile, the shell, carries out.
//
// It supervises its replicas (restart.go): one that stops unexpectedly,
// or cannot be started, is reported in Health (read by the host's
// /healthz) and reopened after a backoff. Partition directories (dirs.go)
// are prepared and discarded through the logs' file system (Config.LogFS)
// on a directory worker, off the actor's goroutine; a discarded directory
// is renamed to a tombstone and removed in the background (remover.go).
//
// Metadata is held to the admin requests' rules (limits_test.go): topic
// records that fail validation never reach the broker (the Store reports
// them; a topic whose record went bad keeps running as it was, and its
// data is kept), every partition directory is confined to the data dir
// (confinedDir, dirs.go), and the broker runs at most
// MaxPartitionsPerHost replicas whatever the metadata asks
// (admitReplicas, plan.go).
//
// Seams: Config.Store (the metadata), Config.Controller (the controller's
// PID), Config.LogFS (the logs' and the partition directories' file
// system), Config.RemoveDir (the background removal); replicas talk to the
// broker with messages only (replica.Opened, replica.ProposeISR).
//
// Threading: the metadata watch runs on its own goroutine and only posts
// events to the actor's mailbox; every field is owned by the actor. The
// goroutines that wait on etcd or the controller (metadata.go, isr.go,
// coordinators.go) and the directory worker touch no broker state: they
// post their outcome back to the mailbox or answer the requester.
package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/actors/coordinator"
	"github.com/actorlog/actorlog/actors/group"
	"github.com/actorlog/actorlog/actors/replica"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/internal/deadmail"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage"
)

// Config configures a broker.
type Config struct {
	HostID int32
	// Address is this host's advertised remote address.
	Address string
	// DataDir holds one directory per partition replica.
	DataDir string
	Store   cluster.MetadataStore
	Metrics replica.Metrics
	// Cleaner is the host's log cleaner, which the replicas of compacted
	// topics register their logs with (nil: none; their logs grow).
	Cleaner replica.LogCleaner
	// Controller resolves the controller's PID (through the protoactor
	// cluster); called off the actor's goroutine, as it may block.
	Controller func() *actor.PID
	// AdminTimeout bounds a forwarded admin request (default 15 s).
	AdminTimeout time.Duration
	// ReplicaLagTimeMax is replica.lag.time.max.ms for the leaders here
	// (default replica.DefaultReplicaLagTimeMax).
	ReplicaLagTimeMax time.Duration
	// OffsetsTopicPartitions is the partition count of the offsets topic
	// when this broker has it created (default
	// DefaultOffsetsTopicPartitions).
	OffsetsTopicPartitions int32
	// NewMembership returns the membership core of the coordinator of
	// offsets topic partition p (nil, or a nil result: the coordinator's
	// permissive default, coordinator.AllowAll). Called on the actor's
	// goroutine.
	NewMembership func(p int32) coordinator.Membership
	// Group is the settings of the coordinators' groups (nil: Kafka's
	// defaults, group.DefaultConfig).
	Group *group.Config
	// MaxPartitionsPerHost is the most partition replicas this broker
	// runs (default cluster.HostPartitionCapacity(), from the process's
	// RLIMIT_NOFILE). Beyond it, replicas already running are kept and
	// new ones are not started (logged at error level).
	MaxPartitionsPerHost int
	// MaxOpeningReplicas bounds the replicas being started at once: their
	// directories being claimed or their logs being opened (default
	// DefaultMaxOpeningReplicas). The others of a large topic, or of a
	// host restarting with many partitions, start as these finish, so
	// that a burst of thousands of opens (goroutines, fsyncs) never
	// queues in front of the host's lease renewals (the embedded etcd's
	// WAL writes share the disk).
	MaxOpeningReplicas int
	// Health receives the partitions' health, for the host's /healthz
	// (nil: one the broker keeps to itself). Share one between the
	// incarnations of a broker the host respawns.
	Health *Health
	// Restarts counts the children the broker reopened after they stopped
	// unexpectedly (optional).
	Restarts RestartCounter
	// ReplicaRestartBackoff and ReplicaRestartBackoffMax bound the wait
	// before a replica that stopped unexpectedly, or could not be
	// started, is reopened: the first, doubled per consecutive failure up
	// to the second (defaults DefaultReplicaRestartBackoff and
	// DefaultReplicaRestartBackoffMax).
	ReplicaRestartBackoff, ReplicaRestartBackoffMax time.Duration
	// LogFS is the partition logs' file system (nil: storage.OSFS), and
	// the one the broker prepares, lists and discards partition
	// directories through (dirs.go); tests inject faults.
	LogFS storage.FS
	// RemoveDir removes a discarded partition directory, on a goroutine of
	// its own (nil: os.RemoveAll); tests slow it down.
	RemoveDir func(path string) error
	Logger    *logrus.Entry
	// ReceiverMiddleware is applied to the replicas and group coordinators
	// the broker spawns (the remote's ACLs, client.RemoteACL); nil: none.
	ReceiverMiddleware []actor.ReceiverMiddleware
}

// childProps applies cfg.ReceiverMiddleware to a child's props.
func (cfg *Config) childProps(p *actor.Props) *actor.Props {
	if len(cfg.ReceiverMiddleware) == 0 {
		return p
	}
	return p.Configure(actor.WithReceiverMiddleware(cfg.ReceiverMiddleware...))
}

// RestartCounter counts the actors a supervisor reopened, by kind
// ("replica", "coordinator"). Implementations must be safe for concurrent
// use.
type RestartCounter interface {
	ActorRestarted(kind string)
}

// Drain asks the broker to stop its replicas after they have served every
// request queued before it (replicas flush and close their logs as they
// stop). The reply, Drained, comes once all have stopped. Sent by the host
// on shutdown, after it stopped accepting requests.
type Drain struct{}

// Drained answers Drain.
type Drained struct{}

// Internal messages.
type (
	metadataSnapshot struct {
		topics []*messages.TopicMetadata
		hosts  []*messages.HostInfo
		// rejected names the topics whose records are invalid: not
		// acted on, and their partition directories are kept.
		rejected map[string]bool
	}
	topicChanged struct {
		name  string
		topic *messages.TopicMetadata // nil when deleted
	}
	hostChanged struct {
		id   int32
		host *messages.HostInfo // nil when gone
	}
	replicaStopped struct {
		key    tp
		remove bool
	}
	// reconcileNow runs reconcile once for any number of requests
	// (reconcileSoon) queued before it.
	reconcileNow struct{}
)

type tp struct {
	topic     string
	partition int32
}

type running struct {
	pid *actor.PID
	// coordinator is the group coordinator beside a leader replica of the
	// offsets topic, nil for other replicas.
	coordinator    *actor.PID
	epoch          int32
	partitionEpoch int32
	topicID        string
	configs        map[string]string
}

// Broker is the actor; create it with Props.
type Broker struct {
	cfg    Config
	logger *logrus.Entry

	topics   map[string]*messages.TopicMetadata
	hosts    map[int32]*messages.HostInfo
	replicas map[tp]*running
	stopping map[tp]bool
	synced   bool
	// producerIDs serves InitProducerId (created on first use).
	producerIDs *cluster.ProducerIDAllocator
	// coordinatorTopics is the last partition counts sent to the
	// coordinators; offsetsTopicAsking and offsetsTopicAskedAt pace the
	// requests to create the offsets topic (coordinators.go).
	coordinatorTopics   map[string]int32
	offsetsTopicAsking  bool
	offsetsTopicAskedAt time.Time
	// overCapacity is the number of replicas last refused for
	// MaxPartitionsPerHost (logged when it changes).
	overCapacity int

	// health is shared with the host; remover and dirs outlive this
	// incarnation.
	health  *Health
	remover *dirRemover
	// hwCheckpoints is the data dir's shared high-watermark checkpoint
	// (storage.HighWatermarkCheckpoints): the replicas' logs store their
	// high watermarks in it, and it is written every
	// replica.HighWatermarkCheckpointInterval while a broker runs, after
	// a Drain, and when the broker stops. It outlives incarnations.
	hwCheckpoints *storage.HighWatermarkCheckpoints
	// dirs runs the partition-directory operations off the actor's
	// goroutine (dirs.go). preparing holds the partitions whose directory
	// is being claimed for a replica (by topic id); claimed those whose
	// claim succeeded since the last reconcile, which spawns them.
	dirs      *dirWorker
	preparing map[tp]string
	claimed   map[tp]string
	// opening holds the replicas spawned whose log has not opened yet
	// (replica.Opened). Together with preparing and claimed they are the
	// starts in flight, at most MaxOpeningReplicas; startsHeld: a
	// reconcile left a replica unstarted for that bound.
	opening    map[tp]bool
	startsHeld bool
	// restarts records the failures of replicas that stopped unexpectedly
	// or could not be started (restart.go); retryTimer posts
	// retryReplicas at retryTimerAt, the earliest pending reopen.
	restarts     map[tp]*restartState
	retryTimer   *time.Timer
	retryTimerAt time.Time
	// reconcilePending: a reconcileNow is queued.
	reconcilePending bool
	// draining: Drain stopped the replicas, or the broker is stopping
	// (protoactor stops its children); none is started again.
	draining bool
	// clampWarned holds the topic ids whose stored max.message.bytes was
	// above cluster.MaxMessageBytesLimit and has been logged as clamped
	// (once per topic and incarnation, not once per partition).
	clampWarned map[string]bool

	cancel context.CancelFunc
}

// Props returns the broker's props.
func Props(cfg Config) *actor.Props {
	if cfg.AdminTimeout <= 0 {
		cfg.AdminTimeout = 15 * time.Second
	}
	if cfg.OffsetsTopicPartitions <= 0 {
		cfg.OffsetsTopicPartitions = DefaultOffsetsTopicPartitions
	}
	if cfg.MaxPartitionsPerHost <= 0 {
		cfg.MaxPartitionsPerHost = cluster.HostPartitionCapacity()
	}
	if cfg.MaxOpeningReplicas <= 0 {
		cfg.MaxOpeningReplicas = DefaultMaxOpeningReplicas
	}
	if cfg.Logger == nil {
		cfg.Logger = logrus.NewEntry(logrus.StandardLogger())
	}
	if cfg.Health == nil {
		cfg.Health = NewHealth()
	}
	if cfg.ReplicaRestartBackoff <= 0 {
		cfg.ReplicaRestartBackoff = DefaultReplicaRestartBackoff
	}
	if cfg.ReplicaRestartBackoffMax < cfg.ReplicaRestartBackoff {
		cfg.ReplicaRestartBackoffMax = max(DefaultReplicaRestartBackoffMax, cfg.ReplicaRestartBackoff)
	}
	logger := cfg.Logger.WithField("component", "broker")
	if cfg.LogFS == nil {
		cfg.LogFS = storage.OSFS{}
	}
	// One remover and one directory worker for every incarnation spawned
	// from these props: a respawned broker does not start a second one on
	// the same directories.
	hwCheckpoints := storage.NewHighWatermarkCheckpoints(cfg.LogFS, cfg.DataDir, logger)
	cfg.Health.watchCheckpoint(hwCheckpoints)
	remover := newDirRemover(cfg.DataDir, cfg.LogFS, cfg.RemoveDir, logger)
	remover.hwCheckpoints = hwCheckpoints
	dirs := newDirWorker(cfg.DataDir, cfg.LogFS, remover, logger)
	return actor.PropsFromProducer(func() actor.Actor {
		return &Broker{
			cfg:           cfg,
			logger:        logger,
			topics:        map[string]*messages.TopicMetadata{},
			hosts:         map[int32]*messages.HostInfo{},
			replicas:      map[tp]*running{},
			stopping:      map[tp]bool{},
			health:        cfg.Health,
			remover:       remover,
			hwCheckpoints: hwCheckpoints,
			dirs:          dirs,
			preparing:     map[tp]string{},
			claimed:       map[tp]string{},
			opening:       map[tp]bool{},
			restarts:      map[tp]*restartState{},
			clampWarned:   map[string]bool{},
		}
	}, actor.WithSupervisor(stopOnFailure{logger: logger}),
		// A request still queued when the broker stops (a watchdog respawn,
		// the host's shutdown) is answered with a dead letter, not dropped
		// to wait out its caller's timeout (internal/deadmail).
		actor.WithMailbox(deadmail.Mailbox()))
}

// Receive dispatches the broker's messages.
func (b *Broker) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		b.onStarted(ctx)
	case metadataSnapshot:
		b.onSnapshot(ctx, msg)
	case topicChanged:
		b.onTopicChanged(ctx, msg)
	case hostChanged:
		b.onHostChanged(ctx, msg)
	case replicaStopped:
		b.onReplicaStopped(ctx, msg)
	case dirClaimed:
		b.onDirClaimed(ctx, msg)
	case reconcileNow:
		b.reconcilePending = false
		b.reconcile(ctx)
	case *replica.Opened:
		b.onOpened(ctx, msg)
	case *replica.ProposeISR:
		b.onProposeISR(ctx, msg)
	case isrAnswered:
		b.onISRAnswered(ctx, msg)
	case *actor.Terminated:
		b.onTerminated(ctx, msg)
	case retryReplicas:
		b.retryTimer = nil
		b.reconcile(ctx)
	case *Drain:
		b.onDrain(ctx)
	case *messages.MetadataRequest:
		ctx.Respond(b.metadata(msg))
	case *KafkaMetadataRequest:
		ctx.Respond(b.kafkaMetadata(msg))
	case *messages.DescribeClusterRequest:
		b.describeCluster(ctx, msg)
	case *messages.InitProducerIdRequest:
		b.initProducerID(ctx, msg)
	case *messages.FindCoordinatorRequest:
		b.findCoordinator(ctx, msg)
	case *messages.ListGroupsRequest:
		b.listGroups(ctx, msg)
	case *messages.DescribeLogDirsRequest:
		b.describeLogDirs(ctx, msg) // logdirs.go
	case offsetsTopicAsked:
		b.offsetsTopicAsking = false
	case *messages.CreateTopicRequest, *messages.DeleteTopicRequest, *messages.CreatePartitionsRequest, *messages.AlterTopicConfigsRequest,
		*messages.ElectLeadersRequest, *messages.ReassignPartitionsRequest:
		b.forwardAdmin(ctx, msg.(proto.Message))
	case *actor.Stopping, *actor.Restarting:
		// Restarting: the actor failed and protoactor replaces it with a
		// new incarnation (its replicas are stopped first).
		b.onStopping()
	case *actor.Stopped:
		// The replicas, children, have stopped and stored their last high
		// watermarks.
		if err := b.hwCheckpoints.Stop(); err != nil {
			b.logger.WithError(err).Error("writing the shared high-watermark checkpoint at stop failed")
		}
	default:
		b.logger.WithFields(logrus.Fields{"type": fmt.Sprintf("%T", msg), "sender": ctx.Sender()}).Warn("broker: unknown message")
	}
}

func (b *Broker) onStarted(ctx actor.Context) {
	// A new incarnation runs no replica yet; it reopens them all.
	b.health.reset()
	b.remover.sweepLeftovers()
	b.hwCheckpoints.Start(replica.HighWatermarkCheckpointInterval)
	wctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	self, root := ctx.Self(), ctx.ActorSystem().Root
	go b.follow(wctx, func(m any) { root.Send(self, m) })
}

func (b *Broker) onStopping() {
	b.draining = true
	if b.cancel != nil {
		b.cancel()
	}
	if b.retryTimer != nil {
		b.retryTimer.Stop()
		b.retryTimer = nil
	}
}
