// Package broker is the per-host broker actor. It follows the cluster
// metadata in etcd (topics and hosts, written by the controller), keeps a
// cache of it to answer clients' metadata requests, spawns and stops the
// partition replica actors this host leads or follows (and a group
// coordinator beside each offsets topic partition it leads,
// coordinators.go), answers FindCoordinator and ListGroups (the groups of
// its coordinators), deletes the logs of deleted
// topics and of partitions reassigned away from this host, and forwards
// admin requests to the controller.
//
// It supervises its replicas (restart.go): one that stops unexpectedly,
// or cannot be started, is reported in Health (read by the host's
// /healthz) and reopened after a backoff. Logs are deleted off the
// actor's goroutine: a directory is renamed to a tombstone and removed in
// the background (remover.go).
//
// Metadata is held to the admin requests' rules (limits.go): topic
// records that fail validation never reach the broker (the Store reports
// them; a topic whose record went bad keeps running as it was, and its
// data is kept), every partition directory is confined to the data dir,
// and the broker runs at most MaxPartitionsPerHost replicas whatever the
// metadata asks.
//
// Threading: the metadata watch runs on its own goroutine and only posts
// events to the actor's mailbox; every field is owned by the actor.
package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/actors/coordinator"
	"github.com/actorlog/actorlog/actors/group"
	"github.com/actorlog/actorlog/actors/replica"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage"
)

// partitionMetadataFile records, in each partition directory, which topic
// (by id) the log belongs to, so a directory left by a deleted topic is
// never mistaken for a new topic of the same name (Kafka's partition.metadata).
const partitionMetadataFile = "partition.metadata"

// Config configures a broker.
type Config struct {
	HostID int32
	// Address is this host's advertised remote address.
	Address string
	// DataDir holds one directory per partition replica.
	DataDir string
	Store   *cluster.Store
	Metrics replica.Metrics
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
	// LogFS is the partition logs' file system (nil: storage.OSFS); tests
	// inject faults.
	LogFS storage.FS
	// RemoveDir removes a discarded partition directory, on a goroutine of
	// its own (nil: os.RemoveAll); tests slow it down.
	RemoveDir func(path string) error
	Logger    *logrus.Entry
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

	// health is shared with the host; remover outlives this incarnation.
	health  *Health
	remover *dirRemover
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
	// One remover for every incarnation spawned from these props: a
	// respawned broker does not start a second one on the same tombstones.
	remover := newDirRemover(cfg.DataDir, cfg.RemoveDir, logger)
	return actor.PropsFromProducer(func() actor.Actor {
		return &Broker{
			cfg:         cfg,
			logger:      logger,
			topics:      map[string]*messages.TopicMetadata{},
			hosts:       map[int32]*messages.HostInfo{},
			replicas:    map[tp]*running{},
			stopping:    map[tp]bool{},
			health:      cfg.Health,
			remover:     remover,
			restarts:    map[tp]*restartState{},
			clampWarned: map[string]bool{},
		}
	}, actor.WithSupervisor(stopOnFailure{logger: logger}))
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
	case reconcileNow:
		b.reconcilePending = false
		b.reconcile(ctx)
	case *replica.Opened:
		b.onOpened(msg)
	case *actor.Terminated:
		b.onTerminated(ctx, msg)
	case retryReplicas:
		b.retryTimer = nil
		b.reconcile(ctx)
	case *Drain:
		b.onDrain(ctx)
	case *messages.MetadataRequest:
		ctx.Respond(b.metadata(msg))
	case *messages.DescribeClusterRequest:
		b.describeCluster(ctx, msg)
	case *messages.InitProducerIdRequest:
		b.initProducerID(ctx, msg)
	case *messages.FindCoordinatorRequest:
		b.findCoordinator(ctx, msg)
	case *messages.ListGroupsRequest:
		b.listGroups(ctx, msg)
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
	default:
		b.logger.WithFields(logrus.Fields{"type": fmt.Sprintf("%T", msg), "sender": ctx.Sender()}).Warn("broker: unknown message")
	}
}

func (b *Broker) onStarted(ctx actor.Context) {
	// A new incarnation runs no replica yet; it reopens them all.
	b.health.reset()
	b.remover.sweepLeftovers()
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

// reconcileSoon has reconcile run once after the messages queued now: a
// topic of many partitions stopping sends one replicaStopped each, and
// one reconcile for a burst of them is enough.
func (b *Broker) reconcileSoon(ctx actor.Context) {
	if !b.reconcilePending {
		b.reconcilePending = true
		ctx.Send(ctx.Self(), reconcileNow{})
	}
}

// follow lists the metadata, posts a snapshot, then posts every change; on
// a watch failure (e.g. compaction) it starts over with a new snapshot.
func (b *Broker) follow(ctx context.Context, post func(any)) {
	for ctx.Err() == nil {
		snap, err := b.cfg.Store.Snapshot(ctx)
		if err != nil {
			if ctx.Err() == nil {
				b.logger.WithError(err).Warn("listing metadata failed; retrying")
				cluster.SleepCtx(ctx, time.Second)
			}
			continue
		}
		rejected := map[string]bool{}
		for _, r := range snap.Rejected {
			rejected[r.Name] = true
		}
		post(metadataSnapshot{topics: snap.Topics, hosts: snap.Hosts, rejected: rejected})
		tch := b.cfg.Store.WatchTopics(ctx, snap.Revision)
		hch := b.cfg.Store.WatchHosts(ctx, snap.Revision)
		b.relay(ctx, tch, hch, post)
	}
}

func (b *Broker) relay(ctx context.Context, tch <-chan cluster.TopicEvent, hch <-chan cluster.HostEvent, post func(any)) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-tch:
			if !ok || ev.Err != nil {
				if ctx.Err() == nil {
					b.logger.WithError(ev.Err).Warn("topic watch ended; re-listing")
				}
				return
			}
			switch {
			case ev.Rejected != nil || cluster.ValidateTopicName(ev.Name) != nil:
				// An invalid record (the Store logged it): never acted
				// on. A topic whose record went bad runs on as it was.
			case ev.Type == cluster.EventDelete:
				post(topicChanged{name: ev.Name})
			default:
				post(topicChanged{name: ev.Name, topic: ev.Topic})
			}
		case ev, ok := <-hch:
			if !ok || ev.Err != nil {
				if ctx.Err() == nil {
					b.logger.WithError(ev.Err).Warn("host watch ended; re-listing")
				}
				return
			}
			if ev.Type == cluster.EventDelete {
				post(hostChanged{id: ev.HostID})
			} else {
				post(hostChanged{id: ev.HostID, host: ev.Host})
			}
		}
	}
}

func (b *Broker) onSnapshot(ctx actor.Context, s metadataSnapshot) {
	old := maps.Clone(b.topics)
	known := map[string]bool{}
	for _, t := range s.topics {
		known[t.Name] = true
		b.topics[t.Name] = t
	}
	for name := range s.rejected {
		known[name] = true // a topic whose record went bad runs on as it was
	}
	for name := range b.topics {
		if !known[name] {
			delete(b.topics, name)
		}
	}
	b.hosts = map[int32]*messages.HostInfo{}
	for _, h := range s.hosts {
		b.hosts[h.HostId] = h
	}
	if !b.synced {
		b.synced = true
		b.removeStrayDirs(s.rejected)
	}
	b.reconcile(ctx)
	b.updateCoordinatorTopics(ctx)
	// A watch that started over may have missed host changes too.
	b.sendLiveHosts(ctx)
	// A watch that started over may have missed a reassignment away.
	for name, t := range b.topics {
		if o := old[name]; o != nil && o.TopicId == t.TopicId {
			b.removeLeftPartitions(o, t)
		}
	}
}

func (b *Broker) onTopicChanged(ctx actor.Context, m topicChanged) {
	old := b.topics[m.name]
	if m.topic == nil {
		delete(b.topics, m.name)
	} else {
		b.topics[m.name] = m.topic
	}
	b.reconcile(ctx)
	b.updateCoordinatorTopics(ctx)
	if old != nil && m.topic != nil && old.TopicId == m.topic.TopicId {
		b.removeLeftPartitions(old, m.topic)
	}
}

// removeLeftPartitions deletes the logs of partitions of t that this host
// was a replica of in old but is not in t (reassigned away) and that run
// no replica here (one that runs is removed when it has stopped). Called
// after reconcile.
func (b *Broker) removeLeftPartitions(old, t *messages.TopicMetadata) {
	for i, p := range t.Partitions {
		key := tp{t.Name, p.Partition}
		if i >= len(old.Partitions) || !slices.Contains(old.Partitions[i].Replicas, b.cfg.HostID) || slices.Contains(p.Replicas, b.cfg.HostID) {
			continue
		}
		if _, running := b.replicas[key]; running || b.stopping[key] {
			continue
		}
		b.removePartitionDir(key, t.TopicId, "reassigned away from this host")
	}
}

// removePartitionDir deletes the log directory of key if it belongs to
// topicID (empty: whichever topic it belongs to).
func (b *Broker) removePartitionDir(key tp, topicID, why string) {
	dir, err := b.partitionDir(key)
	log := b.logger.WithFields(logrus.Fields{"topic": key.topic, "partition": key.partition, "dir": dir, "reason": why})
	if err != nil {
		log.WithError(err).Error("partition directory not removed")
		return
	}
	if topicID != "" {
		raw, err := os.ReadFile(filepath.Join(dir, partitionMetadataFile))
		if errors.Is(err, os.ErrNotExist) {
			return
		}
		if err != nil {
			log.WithError(err).Warn("cannot read the partition directory's topic id; left in place")
			return
		}
		if strings.TrimSpace(string(raw)) != "topic_id: "+topicID {
			return
		}
	}
	if err := b.remover.discard(dir); err != nil {
		log.WithError(err).Error("cannot remove partition's log")
		return
	}
	log.Info("removing partition's log (in the background)")
}

func (b *Broker) onHostChanged(ctx actor.Context, m hostChanged) {
	if m.host == nil {
		delete(b.hosts, m.id)
	} else {
		b.hosts[m.id] = m.host
	}
	// Followers of a leader whose host just became known can start now,
	// and leaders stop waiting for followers on hosts that went.
	b.reconcile(ctx)
	b.sendLiveHosts(ctx)
}

// sendLiveHosts tells every running replica the registered hosts (one
// message for all: replicas only read it).
func (b *Broker) sendLiveHosts(ctx actor.Context) {
	live := b.liveHosts()
	for _, r := range b.replicas {
		ctx.Send(r.pid, live)
	}
}

// liveHosts is the registered host set, for the leader replicas, with the
// hosts' advertised addresses, against which the replicas check who sends
// follower requests.
func (b *Broker) liveHosts() *replica.LiveHosts {
	live := make(map[int32]bool, len(b.hosts))
	for id := range b.hosts {
		live[id] = true
	}
	return &replica.LiveHosts{Live: live, Addresses: b.hostAddresses()}
}

// hostAddresses maps the registered hosts' ids to their advertised
// addresses (a new map).
func (b *Broker) hostAddresses() map[int32]string {
	return cluster.HostAddresses(slices.Collect(maps.Values(b.hosts)))
}

// reconcile makes the running replicas match the metadata: spawn a leader
// for each partition this host leads and a follower for each it is a
// replica of (while the leader's host is known), restart replicas whose
// leader epoch or config changed, and stop (removing their logs) replicas
// of deleted topics. At most MaxPartitionsPerHost replicas run
// (admitReplicas). A replica that failed is reopened only once its
// backoff has passed (restart.go); after Drain nothing is started.
func (b *Broker) reconcile(ctx actor.Context) {
	if b.draining {
		return
	}
	var candidates []tp
	parts := map[tp]*messages.PartitionState{}
	for _, t := range b.topics {
		for _, p := range t.Partitions {
			if b.shouldRun(p) {
				key := tp{t.Name, p.Partition}
				candidates = append(candidates, key)
				parts[key] = p
			}
		}
	}
	admitted, refused := admitReplicas(candidates, func(key tp) bool {
		_, ok := b.replicas[key]
		return ok || b.stopping[key]
	}, b.cfg.MaxPartitionsPerHost)
	if refused != b.overCapacity {
		b.overCapacity = refused
		if refused > 0 {
			b.logger.WithFields(logrus.Fields{"wanted": len(candidates), "running_at_most": b.cfg.MaxPartitionsPerHost, "not_started": refused}).
				Error("the metadata gives this host more partition replicas than its capacity (from RLIMIT_NOFILE); the excess are not started")
		}
	}
	want := map[tp]bool{}
	now := time.Now()
	for _, key := range admitted {
		want[key] = true
		t, p := b.topics[key.topic], parts[key]
		r, ok := b.replicas[key]
		switch {
		case b.stopping[key]:
			// Spawned again once the old one has stopped.
		case !ok:
			if at, waiting := b.backingOff(key, now); waiting {
				b.armRetry(ctx, at)
				continue
			}
			if err := b.spawnReplica(ctx, t, p); err != nil {
				b.noteDown(key, err.Error(), true)
				delay := b.scheduleRestart(ctx, key)
				b.logger.WithError(err).WithFields(logrus.Fields{"topic": key.topic, "partition": key.partition, "retry_in": delay}).
					Error("replica not started; retrying after a backoff")
			}
		case r.topicID != t.TopicId || !sameConfigs(r.configs, t.Configs):
			b.stopReplica(ctx, key, r.topicID != t.TopicId)
		case r.epoch != p.LeaderEpoch && r.coordinator == nil && !(t.Name == messages.OffsetsTopic && p.Leader == b.cfg.HostID):
			// A new leader epoch: the replica changes role in place,
			// answering every request it already holds.
			b.transitionReplica(ctx, t, p, r)
		case r.epoch != p.LeaderEpoch:
			// The offsets topic's leader runs a group coordinator beside
			// it: restarted together.
			b.stopReplica(ctx, key, false)
		case r.partitionEpoch != p.PartitionEpoch:
			// Same leadership, new ISR: the leader takes it in place.
			r.partitionEpoch = p.PartitionEpoch
			ctx.Send(r.pid, &replica.UpdateISR{LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: append([]int32(nil), p.Isr...)})
		}
	}
	for key := range b.replicas {
		if !want[key] && !b.stopping[key] {
			b.stopReplica(ctx, key, b.notHosted(key))
		}
	}
	b.forgetRestarts(want)
}

// notHosted reports whether this host holds no replica of key by the
// metadata: the topic is gone, or the partition's replicas (after a
// reassignment) leave this host out. Its log is then deleted.
func (b *Broker) notHosted(key tp) bool {
	t, ok := b.topics[key.topic]
	if !ok {
		return true
	}
	for _, p := range t.Partitions {
		if p.Partition == key.partition {
			return !slices.Contains(p.Replicas, b.cfg.HostID)
		}
	}
	return true
}

// shouldRun reports whether this host runs a replica of p: as its leader,
// or as a follower of a leader whose address it knows.
func (b *Broker) shouldRun(p *messages.PartitionState) bool {
	if p.Leader == b.cfg.HostID {
		return true
	}
	if p.Leader < 0 || !slices.Contains(p.Replicas, b.cfg.HostID) {
		return false
	}
	_, known := b.hosts[p.Leader]
	return known
}

func sameConfigs(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// partitionDir is key's log directory, "<data dir>/<topic>-<partition>".
// The name must be a local path (filepath.IsLocal: no "..", no separator
// escaping) and the joined path must lie strictly inside the data dir;
// otherwise it fails with errOutsideDataDir and nothing may be done there.
// Metadata is validated before it gets here (topic names hold no
// separators); this is the last line.
func (b *Broker) partitionDir(key tp) (string, error) {
	return confinedDir(b.cfg.DataDir, key.topic+"-"+strconv.Itoa(int(key.partition)))
}

// errOutsideDataDir: a partition directory would not be inside the data
// dir.
var errOutsideDataDir = errors.New("broker: partition directory outside the data dir")

// confinedDir joins name to dataDir if name is a single local path element
// and the result lies strictly inside dataDir.
func confinedDir(dataDir, name string) (string, error) {
	if !filepath.IsLocal(name) || strings.ContainsAny(name, `/\`) || name == "." {
		return "", fmt.Errorf("%w: %q is not a local directory name", errOutsideDataDir, name)
	}
	base := filepath.Clean(dataDir)
	dir := filepath.Join(base, name)
	rel, err := filepath.Rel(base, dir)
	if err != nil || rel == "." || !filepath.IsLocal(rel) || filepath.Dir(dir) != base {
		return "", fmt.Errorf("%w: %q joined to %q gives %q", errOutsideDataDir, name, dataDir, dir)
	}
	return dir, nil
}

// admitReplicas caps the replicas this host runs at capacity: of
// candidates (the replicas the metadata gives this host), those already
// running come first, then the others in (topic, partition) order, so a
// new topic never displaces a running replica and the choice does not
// depend on map order. It returns the admitted keys, in that order, and
// how many were refused. Pure.
func admitReplicas(candidates []tp, running func(tp) bool, capacity int) ([]tp, int) {
	sorted := slices.Clone(candidates)
	slices.SortFunc(sorted, func(a, b tp) int {
		ra, rb := running(a), running(b)
		switch {
		case ra && !rb:
			return -1
		case rb && !ra:
			return 1
		case a.topic != b.topic:
			return strings.Compare(a.topic, b.topic)
		}
		return int(a.partition) - int(b.partition)
	})
	if len(sorted) <= capacity {
		return sorted, 0
	}
	return sorted[:max(capacity, 0)], len(sorted) - max(capacity, 0)
}

// replicaConfig is the config of this host's replica of t's partition p,
// as the metadata has it now.
func (b *Broker) replicaConfig(ctx actor.Context, t *messages.TopicMetadata, p *messages.PartitionState) (replica.Config, error) {
	key := tp{t.Name, p.Partition}
	scfg, err := cluster.StorageConfig(t.Configs)
	if err != nil {
		return replica.Config{}, fmt.Errorf("topic configs invalid: %w", err)
	}
	if n, over := cluster.MaxMessageBytesOverLimit(t.Configs); over && !b.clampWarned[t.TopicId] {
		b.clampWarned[t.TopicId] = true
		b.logger.WithFields(logrus.Fields{"topic": t.Name, "max_message_bytes": n, "limit": cluster.MaxMessageBytesLimit}).
			Warn("the topic's stored max.message.bytes is above the limit a batch can cross the actor remote at; its logs take batches up to the limit")
	}
	minISR, err := cluster.MinInsyncReplicas(t.Configs)
	if err != nil {
		return replica.Config{}, fmt.Errorf("topic configs invalid: %w", err)
	}
	dir, err := b.partitionDir(key)
	if err != nil {
		return replica.Config{}, err
	}
	scfg.FS = b.cfg.LogFS
	health := b.health
	scfg.OnFail = func(err error) { health.logFailed(key, err) }
	var follow *actor.PID
	var propose func(replica.ISRChange)
	if p.Leader == b.cfg.HostID {
		propose = b.isrProposer(ctx, t, p.Partition)
	} else {
		follow = actor.NewPID(b.hosts[p.Leader].AdvertisedAddress, messages.ReplicaActorID(t.Name, p.Partition))
	}
	return replica.Config{
		Follow: follow, ProposeISR: propose, Internal: messages.IsInternalTopic(t.Name),
		Topic: t.Name, Partition: p.Partition, Dir: dir, Log: scfg,
		LeaderEpoch: p.LeaderEpoch, MinInsyncReplicas: minISR,
		ReplicaLagTimeMax: b.cfg.ReplicaLagTimeMax,
		Self:              b.cfg.HostID, Replicas: append([]int32(nil), p.Replicas...), ISR: append([]int32(nil), p.Isr...), PartitionEpoch: p.PartitionEpoch,
		Hosts: b.hostAddresses(), Metrics: b.cfg.Metrics, Logger: b.cfg.Logger,
	}, nil
}

// transitionReplica moves a running replica to p's new leader epoch in
// place (see replica.Transition).
func (b *Broker) transitionReplica(ctx actor.Context, t *messages.TopicMetadata, p *messages.PartitionState, r *running) {
	cfg, err := b.replicaConfig(ctx, t, p)
	if err != nil {
		b.logger.WithError(err).WithFields(logrus.Fields{"topic": t.Name, "partition": p.Partition}).Error("replica not moved to the new leader epoch; stopping it")
		b.stopReplica(ctx, tp{t.Name, p.Partition}, false)
		return
	}
	ctx.Send(r.pid, &replica.Transition{Config: cfg})
	r.epoch, r.partitionEpoch = p.LeaderEpoch, p.PartitionEpoch
}

// spawnReplica starts the replica of p; an error says why it could not
// (the caller reports it and retries).
func (b *Broker) spawnReplica(ctx actor.Context, t *messages.TopicMetadata, p *messages.PartitionState) error {
	key := tp{t.Name, p.Partition}
	cfg, err := b.replicaConfig(ctx, t, p)
	if err != nil {
		return err
	}
	if err := b.claimDir(cfg.Dir, t.TopicId); err != nil {
		return fmt.Errorf("cannot prepare partition directory: %w", err)
	}
	follow := cfg.Follow
	pid, err := ctx.SpawnNamed(replica.Props(cfg), messages.ReplicaActorName(t.Name, p.Partition))
	if err != nil {
		return fmt.Errorf("cannot spawn replica: %w", err)
	}
	r := &running{pid: pid, epoch: p.LeaderEpoch, partitionEpoch: p.PartitionEpoch, topicID: t.TopicId, configs: t.Configs}
	if t.Name == messages.OffsetsTopic && follow == nil {
		r.coordinator = b.spawnCoordinator(ctx, t, p, pid)
	}
	b.replicas[key] = r
	ctx.Send(pid, b.liveHosts())
	return nil
}

// claimDir creates a partition directory for topicID, wiping one that
// belongs to an older topic of the same name.
func (b *Broker) claimDir(dir, topicID string) error {
	meta := filepath.Join(dir, partitionMetadataFile)
	raw, err := os.ReadFile(meta)
	switch {
	case err == nil && strings.TrimSpace(string(raw)) == "topic_id: "+topicID:
		return nil
	case err == nil:
		b.logger.WithField("dir", dir).Warn("removing a partition directory left by a deleted topic of the same name")
		if err := b.remover.discard(dir); err != nil {
			return fmt.Errorf("remove stale %s: %w", dir, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("read %s: %w", meta, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := os.WriteFile(meta, []byte("topic_id: "+topicID+"\n"), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", meta, err)
	}
	return nil
}

// stopReplica stops a replica (and the coordinator beside it, first, so
// that it writes nothing more) and reports replicaStopped once both have
// stopped.
func (b *Broker) stopReplica(ctx actor.Context, key tp, remove bool) {
	r := b.replicas[key]
	b.stopping[key] = true
	stopReplica := func() {
		ctx.ReenterAfter(ctx.StopFuture(r.pid), func(_ any, err error) {
			if err != nil {
				b.logger.WithError(err).WithField("topic", key.topic).Warn("waiting for replica to stop")
			}
			ctx.Send(ctx.Self(), replicaStopped{key: key, remove: remove})
		})
	}
	if r.coordinator == nil {
		stopReplica()
		return
	}
	ctx.ReenterAfter(ctx.StopFuture(r.coordinator), func(_ any, err error) {
		if err != nil {
			b.logger.WithError(err).WithField("partition", key.partition).Warn("waiting for the group coordinator to stop")
		}
		stopReplica()
	})
}

func (b *Broker) onReplicaStopped(ctx actor.Context, m replicaStopped) {
	delete(b.replicas, m.key)
	delete(b.stopping, m.key)
	// What was known of the stopped replica (a failed log) goes with it;
	// one that failed stays down until it is reopened.
	b.health.forget(m.key)
	if rs := b.restarts[m.key]; rs != nil && rs.why != "" {
		b.health.setDown(m.key, rs.why, true)
	}
	// The metadata may have moved on while the replica stopped (e.g. a
	// restart for a new leader epoch, then a reassignment away from here).
	if m.remove || b.notHosted(m.key) {
		b.removePartitionDir(m.key, "", "topic deleted or partition reassigned away")
	}
	b.reconcileSoon(ctx)
}

// removeStrayDirs deletes partition directories of topics that no longer
// exist (deleted while this host was down), except those of topics whose
// record is invalid (rejected: not acted on, so their data stays). Called
// once, after the first snapshot.
func (b *Broker) removeStrayDirs(rejected map[string]bool) {
	entries, err := os.ReadDir(b.cfg.DataDir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			b.logger.WithError(err).Warn("cannot list data dir")
		}
		return
	}
	for _, e := range entries {
		if !e.IsDir() || rejected[topicOfDir(e.Name())] || isTombstone(e.Name()) {
			continue
		}
		dir, err := confinedDir(b.cfg.DataDir, e.Name())
		if err != nil {
			continue
		}
		meta := filepath.Join(dir, partitionMetadataFile)
		raw, err := os.ReadFile(meta)
		if err != nil {
			continue // not a partition directory of ours
		}
		id := strings.TrimPrefix(strings.TrimSpace(string(raw)), "topic_id: ")
		why := "topic deleted"
		if t := b.topicByID(id); t != nil {
			key, ok := partitionOfDir(t, e.Name())
			if !ok || !b.notHosted(key) {
				continue
			}
			why = "partition reassigned away from this host"
		}
		if err := b.remover.discard(dir); err != nil {
			b.logger.WithError(err).WithField("dir", dir).Error("cannot remove stray partition directory")
			continue
		}
		b.logger.WithFields(logrus.Fields{"dir": dir, "reason": why}).Info("removing stray partition directory (in the background)")
	}
}

func (b *Broker) topicByID(id string) *messages.TopicMetadata {
	for _, t := range b.topics {
		if t.TopicId == id {
			return t
		}
	}
	return nil
}

// topicOfDir returns the topic part of a partition directory's name
// ("<topic>-<partition>"), or "" when it has none.
func topicOfDir(dir string) string {
	i := strings.LastIndexByte(dir, '-')
	if i < 0 {
		return ""
	}
	if _, err := strconv.ParseUint(dir[i+1:], 10, 31); err != nil {
		return ""
	}
	return dir[:i]
}

// partitionOfDir returns the partition of t whose directory is named dir
// ("<topic>-<partition>").
func partitionOfDir(t *messages.TopicMetadata, dir string) (tp, bool) {
	n, err := strconv.ParseInt(strings.TrimPrefix(dir, t.Name+"-"), 10, 32)
	if err != nil || !strings.HasPrefix(dir, t.Name+"-") {
		return tp{}, false
	}
	return tp{t.Name, int32(n)}, true
}

func (b *Broker) onDrain(ctx actor.Context) {
	sender := ctx.Sender()
	b.onStopping() // no replica is started again
	var futures []*actor.Future
	for key, r := range b.replicas {
		if r.coordinator != nil {
			futures = append(futures, ctx.PoisonFuture(r.coordinator))
		}
		futures = append(futures, ctx.PoisonFuture(r.pid))
		delete(b.replicas, key)
	}
	root, logger := ctx.ActorSystem().Root, b.logger
	go func() {
		for _, f := range futures {
			if err := f.Wait(); err != nil {
				logger.WithError(err).Warn("waiting for a replica to drain")
			}
		}
		if sender != nil {
			root.Send(sender, &Drained{})
		}
	}()
}

// metadata answers a MetadataRequest from the cache.
func (b *Broker) metadata(req *messages.MetadataRequest) *messages.MetadataResponse {
	resp := &messages.MetadataResponse{CorrelationId: req.CorrelationId, ControllerId: -1}
	ids := make([]int32, 0, len(b.hosts))
	for id := range b.hosts {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		resp.Hosts = append(resp.Hosts, b.hosts[id])
	}
	names := req.Topics
	if len(names) == 0 {
		for name := range b.topics {
			names = append(names, name)
		}
		sort.Strings(names)
	}
	for _, name := range names {
		t, ok := b.topics[name]
		if !ok {
			code := messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION
			if cluster.ValidateTopicName(name) != nil {
				code = messages.ErrorCode_ERROR_CODE_INVALID_TOPIC_EXCEPTION
			}
			resp.Topics = append(resp.Topics, &messages.TopicMetadataResponse{Name: name, ErrorCode: code})
			continue
		}
		tr := &messages.TopicMetadataResponse{Name: name, Configs: t.Configs, ReplicationFactor: t.ReplicationFactor}
		for _, p := range t.Partitions {
			pm := &messages.PartitionMetadata{
				Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
				Replicas: p.Replicas, Isr: p.Isr, ReplicaActorId: messages.ReplicaActorID(name, p.Partition),
				AddingReplicas: p.AddingReplicas, RemovingReplicas: p.RemovingReplicas,
			}
			if h, ok := b.hosts[p.Leader]; ok {
				pm.LeaderAddress = h.AdvertisedAddress
			} else {
				pm.ErrorCode = messages.ErrorCode_ERROR_CODE_LEADER_NOT_AVAILABLE
			}
			tr.Partitions = append(tr.Partitions, pm)
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp
}

// describeCluster reads the live hosts and the controller from etcd on a
// goroutine (it touches no broker state) and answers.
func (b *Broker) describeCluster(ctx actor.Context, req *messages.DescribeClusterRequest) {
	sender, root, store, timeout := ctx.Sender(), ctx.ActorSystem().Root, b.cfg.Store, b.cfg.AdminTimeout
	if sender == nil {
		return
	}
	go func() {
		rctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		resp := &messages.DescribeClusterResponse{CorrelationId: req.CorrelationId, ControllerId: -1}
		hosts, err := store.ListHosts(rctx)
		var names map[int32]string
		if err == nil {
			names, err = store.HostNames(rctx)
		}
		if err == nil {
			resp.Hosts = hosts
			live := map[int32]bool{}
			for _, h := range hosts {
				live[h.HostId] = true
			}
			for id, name := range names {
				if !live[id] {
					resp.DownHosts = append(resp.DownHosts, &messages.HostInfo{HostId: id, Name: name})
				}
			}
			sort.Slice(resp.DownHosts, func(i, j int) bool { return resp.DownHosts[i].HostId < resp.DownHosts[j].HostId })
			var value string
			var fence cluster.Fence
			value, fence, err = store.Controller(rctx)
			switch {
			case errors.Is(err, cluster.ErrNoController):
				err = nil
			case err == nil:
				addr, _, _ := strings.Cut(value, "#")
				resp.ControllerAddress, resp.ControllerEpoch = addr, fence.Epoch
				for _, h := range hosts {
					if h.AdvertisedAddress == addr {
						resp.ControllerId = h.HostId
					}
				}
			}
		}
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT, err.Error()
		}
		root.Send(sender, resp)
	}()
}

// forwardAdmin passes an admin request to the controller (resolved through
// the protoactor cluster), which acts on it or forwards it to the elected
// controller. The lookup and the wait run on a goroutine that touches no
// broker state, so metadata requests are never held up behind them.
func (b *Broker) forwardAdmin(ctx actor.Context, msg proto.Message) {
	sender := ctx.Sender()
	if sender == nil {
		return
	}
	corr := int64(0)
	if c, ok := msg.(interface{ GetCorrelationId() int64 }); ok {
		corr = c.GetCorrelationId()
	}
	root, resolve, timeout := ctx.ActorSystem().Root, b.cfg.Controller, b.cfg.AdminTimeout
	go func() {
		fail := func(code messages.ErrorCode, text string) {
			root.Send(sender, messages.ErrorReply(msg, corr, code, text))
		}
		var pid *actor.PID
		if resolve != nil {
			pid = resolve()
		}
		if pid == nil {
			fail(messages.ErrorCode_ERROR_CODE_NOT_CONTROLLER, "no controller activation reachable yet")
			return
		}
		res, err := root.RequestFuture(pid, msg, timeout).Result()
		if err != nil {
			fail(messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT, fmt.Sprintf("controller did not answer: %v", err))
			return
		}
		root.Send(sender, res)
	}()
}

// isrProposer returns the leader replica's ProposeISR: the proposal goes to
// the controller (through this host's controller candidate) on a
// goroutine; a refusal or a failure is reported back so the leader may
// propose again, a success arrives with the metadata (and at once).
func (b *Broker) isrProposer(ctx actor.Context, t *messages.TopicMetadata, partition int32) func(replica.ISRChange) {
	root, resolve, timeout, logger := ctx.ActorSystem().Root, b.cfg.Controller, b.cfg.AdminTimeout, b.logger
	topic, topicID, self := t.Name, t.TopicId, b.cfg.HostID
	target := actor.NewPID(ctx.Self().Address, messages.ReplicaActorID(topic, partition))
	return func(c replica.ISRChange) {
		go func() {
			req := &messages.AlterPartitionRequest{Topic: topic, TopicId: topicID, Partition: partition, LeaderId: self,
				LeaderEpoch: c.LeaderEpoch, PartitionEpoch: c.PartitionEpoch, NewIsr: c.ISR}
			var ctrl *actor.PID
			if resolve != nil {
				ctrl = resolve()
			}
			var res any
			err := errors.New("no controller reachable")
			if ctrl != nil {
				res, err = root.RequestFuture(ctrl, req, timeout).Result()
			}
			resp, ok := res.(*messages.AlterPartitionResponse)
			if err != nil || !ok || resp.ErrorCode != 0 || resp.Partition == nil {
				logger.WithError(err).WithFields(logrus.Fields{"topic": topic, "partition": partition, "proposed_isr": c.ISR, "answer": res}).Info("ISR change not committed")
				root.Send(target, replica.ISRChangeFailed{})
				return
			}
			root.Send(target, &replica.UpdateISR{LeaderEpoch: resp.Partition.LeaderEpoch, PartitionEpoch: resp.Partition.PartitionEpoch, ISR: resp.Partition.Isr})
		}()
	}
}
