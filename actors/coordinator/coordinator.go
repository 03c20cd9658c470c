// Package coordinator is the group coordinator actor of one partition of
// the internal offsets topic (messages.OffsetsTopic, DESIGN §6), and its
// offset store.
//
// The broker of the host that leads offsets topic partition P spawns the
// coordinator of P beside that leader replica (as a sibling, at
// messages.CoordinatorActorID(P)) and stops it with the replica when
// leadership moves. It hosts the groups G with PartitionFor(G, N) == P.
// It is fenced by the partition's leader epoch: every read and write it
// makes carries the epoch it was started for, and once the replica answers
// that it no longer leads at that epoch, the coordinator answers
// NOT_COORDINATOR to everything until it is stopped.
//
// Behaviours (one per role):
//   - loading: on start it reads the partition from the log start up to the
//     log end offset the replica had when the coordinator started (waiting,
//     with long-poll fetches, until the high watermark passes it, so
//     nothing the previous leader wrote is missed), rebuilding the
//     committed offsets and handing group metadata records to the
//     membership core; requests get COORDINATOR_LOAD_IN_PROGRESS;
//   - active: OffsetCommit (commit.go), OffsetFetch (fetch.go), the
//     membership requests JoinGroup, SyncGroup, Heartbeat and LeaveGroup
//     (members.go), the admin requests DescribeGroups, ListGroups and
//     DeleteGroups (admin.go), and the periodic offset expiry (expire.go);
//   - not coordinator: the replica lost leadership; NOT_COORDINATOR, and
//     the groups are unloaded (waiting joins and syncs get NOT_COORDINATOR).
//
// Each group is a group.Group, the pure membership core of actors/group
// (groups.go); the coordinator feeds it requests and carries out its
// Effects: replies, one timer re-armed at the groups' next wake that drives
// Tick, and the group metadata records it writes after each completed
// rebalance and when a group empties, which a new coordinator replays to
// restore the groups. The same groups decide which offset commits are
// accepted, through the Membership seam (membership.go).
//
// Threading: all state is owned by the actor; replica answers come back
// through ReenterAfter continuations and timers post messages.
package coordinator

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/group"
	"github.com/actorlog/actorlog/internal/deadmail"
	"github.com/actorlog/actorlog/messages"
)

// Defaults, Kafka's.
const (
	// DefaultMaxMetadataSize is offset.metadata.max.bytes.
	DefaultMaxMetadataSize = 4096
	// DefaultCommitTimeout is offsets.commit.timeout.ms: how long a commit
	// waits for the in-sync replicas.
	DefaultCommitTimeout = 5 * time.Second
)

const (
	// loadFetchMaxBytes and loadFetchMaxWait shape the load's fetches.
	loadFetchMaxBytes = 1 << 20
	loadFetchMaxWait  = 500 * time.Millisecond
	// replicaTimeout bounds an exchange with the local replica beyond the
	// wait the request itself asks for.
	replicaTimeout = 5 * time.Second
	// retryBackoff spaces load attempts after a failure.
	retryBackoff = time.Second
)

// Config configures a coordinator.
type Config struct {
	// Partition is the offsets topic partition this coordinator serves,
	// among Partitions.
	Partition, Partitions int32
	// LeaderEpoch is the leader epoch of the replica it was started
	// beside: its fence.
	LeaderEpoch int32
	// Replica is the local leader replica of the partition.
	Replica *actor.PID
	// Topics holds the partition counts of the cluster's topics, against
	// which commits are checked (updated with Topics messages).
	Topics map[string]int32
	// Membership decides offset commits and gets the group metadata
	// replayed while loading. Default (nil): the coordinator's own groups.
	// Another one (a test's) takes over commits and replay; the group
	// requests are still served by the coordinator's groups, which then
	// start empty.
	Membership Membership
	// Group is the groups' settings (default group.DefaultConfig(),
	// Kafka's).
	Group *group.Config
	// MaxMetadataSize is the longest metadata string of a commit (default
	// DefaultMaxMetadataSize).
	MaxMetadataSize int
	// CommitTimeout bounds a commit's wait for the in-sync replicas
	// (default DefaultCommitTimeout).
	CommitTimeout time.Duration
	// Now is the clock of commit timestamps (default time.Now).
	Now func() time.Time
	// Logger (logrus.StandardLogger when nil).
	Logger *logrus.Entry
}

// Topics gives a coordinator the partition counts of the cluster's topics
// (the broker sends it on every change).
type Topics struct{ Partitions map[string]int32 }

// State is a snapshot of a coordinator, for tests and diagnostics.
type State struct {
	Partition, LeaderEpoch int32
	// Loaded is set once loading completed; NotCoordinator once the
	// replica refused the coordinator's epoch.
	Loaded, NotCoordinator bool
	// Groups and Offsets count the groups with committed offsets and the
	// offsets.
	Groups, Offsets int
	// HostedGroups counts the groups hosted (with or without offsets),
	// Members their members.
	HostedGroups, Members int
	// LoadedRecords is how many records loading replayed.
	LoadedRecords int
	// InFlight is how many writes wait for the replica.
	InFlight int
	// ExpiryChecks counts the offset expiry checks run (expire.go).
	ExpiryChecks int
}

type (
	getStateSignal struct{}
	loadRetry      struct{}
)

// GetState asks a coordinator for its State (reply: State).
var GetState = getStateSignal{}

// Coordinator is the actor; create it with Props.
type Coordinator struct {
	cfg        Config
	logger     *logrus.Entry
	behavior   actor.Behavior
	membership Membership
	groups     *groupSet
	table      *OffsetTable
	topics     map[string]int32

	load           loadProgress
	loaded         bool
	notCoordinator string // why, once fenced
	stopped        bool

	nextID   int64
	inflight map[int64]func(base int64, code messages.ErrorCode, msg string)

	// groupTimer fires at groupWake, the groups' next wake.
	groupTimer *time.Timer
	groupWake  time.Time
	// expiryTimer fires the next offset expiry check (expire.go);
	// expiryChecks counts them.
	expiryTimer  *time.Timer
	expiryChecks int
}

// loadProgress is where loading stands.
type loadProgress struct {
	started     time.Time
	targetKnown bool
	target      int64 // the log end offset to replay up to
	next        int64 // the next offset to read
	records     int
	skipped     int
	retry       *time.Timer
}

// Props returns the props of a coordinator for cfg. Its mailbox answers
// the requests left in it when the actor stops with a dead letter
// (deadmail), where protoactor's would drop them unanswered.
func Props(cfg Config) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return New(cfg) }, actor.WithMailbox(deadmail.Mailbox()))
}

// New returns a coordinator actor (Props wraps it).
func New(cfg Config) *Coordinator {
	if cfg.Group == nil {
		def := group.DefaultConfig()
		cfg.Group = &def
	}
	if cfg.MaxMetadataSize <= 0 {
		cfg.MaxMetadataSize = DefaultMaxMetadataSize
	}
	if cfg.CommitTimeout <= 0 {
		cfg.CommitTimeout = DefaultCommitTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = logrus.NewEntry(logrus.StandardLogger())
	}
	logger := cfg.Logger.WithFields(logrus.Fields{"component": "coordinator", "partition": cfg.Partition, "leader_epoch": cfg.LeaderEpoch})
	c := &Coordinator{
		cfg:        cfg,
		logger:     logger,
		behavior:   actor.NewBehavior(),
		membership: cfg.Membership,
		groups:     newGroupSet(*cfg.Group, cfg.Now, logger),
		table:      NewOffsetTable(),
		topics:     cfg.Topics,
		inflight:   map[int64]func(int64, messages.ErrorCode, string){},
	}
	if c.membership == nil {
		c.membership = c.groups
	}
	c.behavior.Become(c.loading)
	return c
}

// Receive passes the message to the current behaviour.
func (c *Coordinator) Receive(ctx actor.Context) { c.behavior.Receive(ctx) }

// loading is the behaviour while the partition is replayed.
func (c *Coordinator) loading(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		c.load.started = time.Now()
		c.logger.Info("coordinator loading its offsets topic partition")
		c.loadStep(ctx)
	case loadRetry:
		c.loadStep(ctx)
	case *messages.OffsetCommitRequest:
		c.respond(ctx, commitError(msg, messages.ErrorCode_ERROR_CODE_COORDINATOR_LOAD_IN_PROGRESS, c.loadingDetail()))
	case *messages.OffsetFetchRequest:
		c.respond(ctx, fetchError(msg, messages.ErrorCode_ERROR_CODE_COORDINATOR_LOAD_IN_PROGRESS, c.loadingDetail()))
	default:
		if resp := groupRequestError(msg, messages.ErrorCode_ERROR_CODE_COORDINATOR_LOAD_IN_PROGRESS, c.loadingDetail()); resp != nil {
			c.respond(ctx, resp)
			return
		}
		c.common(ctx)
	}
}

// active is the behaviour of a loaded coordinator whose replica leads.
func (c *Coordinator) active(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *messages.OffsetCommitRequest:
		c.onCommit(ctx, msg)
	case *messages.OffsetFetchRequest:
		c.onFetch(ctx, msg)
	case *messages.JoinGroupRequest:
		c.onJoin(ctx, msg)
	case *messages.SyncGroupRequest:
		c.onSync(ctx, msg)
	case *messages.HeartbeatRequest:
		c.onHeartbeat(ctx, msg)
	case *messages.LeaveGroupRequest:
		c.onLeave(ctx, msg)
	case *messages.DescribeGroupsRequest:
		c.onDescribeGroups(ctx, msg)
	case *messages.ListGroupsRequest:
		c.onListGroups(ctx, msg)
	case *messages.DeleteGroupsRequest:
		c.onDeleteGroups(ctx, msg)
	case groupTick:
		c.onGroupTick(ctx)
	case expireTick:
		c.onExpireTick(ctx)
	case loadRetry:
	default:
		c.common(ctx)
	}
}

// notCoordinatorAnymore is the behaviour once the replica refused the
// coordinator's leader epoch: it answers NOT_COORDINATOR until stopped.
func (c *Coordinator) notCoordinatorAnymore(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *messages.OffsetCommitRequest:
		c.respond(ctx, commitError(msg, messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR, c.notCoordinator))
	case *messages.OffsetFetchRequest:
		c.respond(ctx, fetchError(msg, messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR, c.notCoordinator))
	case loadRetry, groupTick, expireTick:
	default:
		if resp := groupRequestError(msg, messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR, c.notCoordinator); resp != nil {
			c.respond(ctx, resp)
			return
		}
		c.common(ctx)
	}
}

// common handles what every behaviour handles alike.
func (c *Coordinator) common(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *Topics:
		c.topics = msg.Partitions
	case getStateSignal:
		ctx.Respond(c.state())
	case *actor.Stopping:
		c.onStopping(ctx)
	case *actor.Started, *actor.Stopped, *actor.Restarting, groupTick, expireTick:
	default:
		c.logger.WithFields(logrus.Fields{"type": fmt.Sprintf("%T", msg), "sender": ctx.Sender()}).Warn("coordinator: unknown message")
	}
}

func (c *Coordinator) state() State {
	st := State{
		Partition: c.cfg.Partition, LeaderEpoch: c.cfg.LeaderEpoch,
		Loaded: c.loaded, NotCoordinator: c.notCoordinator != "",
		Groups: len(c.table.groups), Offsets: c.table.Len(),
		HostedGroups:  len(c.groups.groups),
		LoadedRecords: c.load.records, InFlight: len(c.inflight),
		ExpiryChecks: c.expiryChecks,
	}
	for _, e := range c.groups.groups {
		st.Members += len(e.g.Members())
	}
	return st
}

// respond answers the current request, if it has a sender.
func (c *Coordinator) respond(ctx actor.Context, msg any) {
	if ctx.Sender() != nil {
		ctx.Respond(msg)
	}
}

// fence makes this coordinator answer NOT_COORDINATOR from now on: its
// replica no longer leads at its epoch, so its groups are unloaded. The
// broker stops it soon.
func (c *Coordinator) fence(ctx actor.Context, why string) {
	if c.notCoordinator != "" {
		return
	}
	c.notCoordinator = why
	c.stopLoadRetry()
	c.unloadGroups(ctx)
	c.behavior.Become(c.notCoordinatorAnymore)
	c.logger.WithField("reason", why).Warn("no longer the coordinator of this partition")
}

// onStopping unloads the groups and answers the writes still waiting for
// the replica: whether they reach the in-sync replicas is for the next
// coordinator to find out.
func (c *Coordinator) onStopping(ctx actor.Context) {
	c.stopped = true
	c.stopLoadRetry()
	c.unloadGroups(ctx)
	for id, done := range c.inflight {
		delete(c.inflight, id)
		done(-1, messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR, "the coordinator is stopping (leadership of its partition moved); the commit may or may not be kept")
	}
}

func (c *Coordinator) stopLoadRetry() {
	if c.load.retry != nil {
		c.load.retry.Stop()
		c.load.retry = nil
	}
}

// owns checks that group is valid and hosted here: INVALID_GROUP_ID or
// NOT_COORDINATOR (it maps to another partition) otherwise.
func (c *Coordinator) owns(group string) (messages.ErrorCode, string) {
	if code, msg := ValidateGroupID(group); code != 0 {
		return code, msg
	}
	if p := PartitionFor(group, int(c.cfg.Partitions)); p != c.cfg.Partition {
		return messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR, fmt.Sprintf("group %q is held by partition %d of %s, this coordinator serves partition %d", group, p, messages.OffsetsTopic, c.cfg.Partition)
	}
	return messages.ErrorCode_ERROR_CODE_UNSPECIFIED, ""
}

// requestReplica sends msg to the local replica and runs then with its
// answer on the actor's goroutine (unless the coordinator stopped
// meanwhile).
func (c *Coordinator) requestReplica(ctx actor.Context, msg any, wait time.Duration, then func(res any, err error)) {
	ctx.ReenterAfter(ctx.RequestFuture(c.cfg.Replica, msg, wait+replicaTimeout), func(res any, err error) {
		if c.stopped {
			return
		}
		then(res, err)
	})
}
