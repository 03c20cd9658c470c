// Package controller is the controller actor: a cluster singleton whose
// authority is an etcd election (DESIGN §5). Every host runs one; the one
// that wins the election acts, the others wait in Campaign as standbys and
// forward admin requests to the winner. The winner's controller epoch is its
// election key's create revision; every metadata write is fenced on it, so a
// controller that lost its etcd session can no longer change anything.
//
// Admin requests (create/delete topic, add partitions, alter configs,
// preferred leader elections in preferred.go, partition reassignments in
// reassign.go) are validated here, then written to etcd; brokers follow
// etcd and act. Before anything is allocated, a topic's partition count
// is held to cluster.MaxPartitionsPerTopic (INVALID_PARTITIONS); the
// replicas it places must leave every host within MaxPartitionsPerHost
// (POLICY_VIOLATION); internal topics are read-only to users
// (internal.go). The Kafka listener's ACL bindings and SCRAM credentials
// are written here too, fenced like the topics (acls.go).
//
// While elected, it also follows host liveness (liveness.go): when a
// host's registration goes or comes back, it moves partition leadership
// (elect.go) and writes the new leaders, ISRs and epochs.
//
// The internal requests (ControlledShutdown, AlterPartition,
// CreateOffsetsTopic) are accepted only from hosts (senders.go), checked
// before a standby forwards them.
//
// Seams: the metadata is a cluster.MetadataStore (Config.Store): the etcd
// cluster.Store in a host, a cluster.MemStore in most tests. The actor has
// two behaviours (roles.go): standby forwards, elected acts; no handler
// asks "am I elected".
//
// Threading: the campaign, the host watch, the host prober and every etcd
// call run off the actor and only post messages; all state is owned by
// the actor, which never waits on etcd. The elected controller's etcd
// work runs as jobs in two lanes (lanes.go): admin work one job at a
// time, ISR changes (AlterPartition) one at a time beside it, so an ISR
// change never queues behind a CreateTopic; two jobs writing one topic
// never run at once. A standby forwards on a goroutine. Requests are
// answered as their work completes.
package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/internal/deadmail"
	"github.com/actorlog/actorlog/messages"
)

// Config configures a controller actor.
type Config struct {
	HostID int32
	// Store is the cluster metadata: a *cluster.Store (etcd) in a host, a
	// *cluster.MemStore in tests.
	Store cluster.MetadataStore
	// SessionTTL is the etcd session TTL of the election (default 10 s).
	SessionTTL time.Duration
	// RequestTimeout bounds one admin request's etcd work (default 10 s).
	RequestTimeout time.Duration
	// MaxReplicationFactor is the largest replication factor accepted
	// (0: any, up to the number of live hosts).
	MaxReplicationFactor int32
	// MaxPartitionsPerHost is the most partition replicas a topic
	// creation or partition addition may leave on any host (default
	// cluster.HostPartitionCapacity(), from this process's RLIMIT_NOFILE:
	// hosts are assumed to run with the same limit; each broker also
	// enforces its own).
	MaxPartitionsPerHost int
	// LeaderImbalanceCheckInterval is how often the elected controller
	// checks the leader balance and moves leadership back to preferred
	// replicas (Kafka's leader.imbalance.check.interval.seconds; default
	// DefaultLeaderImbalanceCheckInterval; preferred.go).
	LeaderImbalanceCheckInterval time.Duration
	// LeaderImbalancePerHostPercentage is the share of a host's preferred
	// partitions it may not lead before a rebalance (Kafka's
	// leader.imbalance.per.broker.percentage; default
	// DefaultLeaderImbalancePerHostPercentage).
	LeaderImbalancePerHostPercentage float64
	// ACLs and Scram keep the Kafka listener's ACL bindings and SCRAM
	// credentials, written fenced (acls.go); nil: Store, which keeps
	// them when it is the etcd *cluster.Store.
	ACLs   cluster.FencedACLStore
	Scram  cluster.FencedScramStore
	Logger *logrus.Entry
}

type (
	// electedMsg and deposed are posted by the campaign goroutine.
	electedMsg struct {
		fence cluster.Fence
	}
	deposed struct{}
)

// Controller is the actor; create it with Props. Its fields are touched
// only in Receive.
type Controller struct {
	cfg    Config
	logger *logrus.Entry
	role   role // standby or *elected (roles.go)
	terms  int  // elections won so far; tags a term's messages
	lanes  lanes
	cancel context.CancelFunc
	done   chan struct{} // closed when the campaign goroutine ends
	// jobs is the parent context of every job's etcd work; cancelled
	// when the actor stops.
	jobs       context.Context
	cancelJobs context.CancelFunc

	// hosts caches the host registrations for the sender checks of
	// internal requests (senders.go).
	hosts hostCache
}

// Props returns the controller's props. A request still queued when the
// controller stops (the host shuts down, a watchdog respawn)
// is answered with a dead letter rather than dropped (internal/deadmail):
// its sender retries at once instead of after its request timeout.
func Props(cfg Config) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return New(cfg) }, actor.WithMailbox(deadmail.Mailbox()))
}

// New returns a controller actor (Props wraps it).
func New(cfg Config) actor.Actor {
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 10 * time.Second
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 10 * time.Second
	}
	if cfg.LeaderImbalanceCheckInterval <= 0 {
		cfg.LeaderImbalanceCheckInterval = DefaultLeaderImbalanceCheckInterval
	}
	if cfg.LeaderImbalancePerHostPercentage <= 0 {
		cfg.LeaderImbalancePerHostPercentage = DefaultLeaderImbalancePerHostPercentage
	}
	if cfg.MaxPartitionsPerHost <= 0 {
		cfg.MaxPartitionsPerHost = cluster.HostPartitionCapacity()
	}
	if cfg.Logger == nil {
		cfg.Logger = logrus.NewEntry(logrus.StandardLogger())
	}
	c := &Controller{cfg: cfg, logger: cfg.Logger.WithField("component", "controller")}
	c.role = standby{c}
	c.jobs, c.cancelJobs = context.WithCancel(context.Background())
	return c
}

// Receive dispatches the controller's messages: the life cycle, the
// campaign's reports and the jobs' ends here; requests after the sender
// check, and everything else, to the current role.
func (c *Controller) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		c.onStarted(ctx)
	case electedMsg:
		c.becomeStandby(ctx) // a term still open ends first
		c.becomeElected(ctx, msg.fence)
	case deposed:
		c.becomeStandby(ctx)
	case jobDone:
		c.onJobDone(ctx, msg)
	case hostsRead:
		c.onHostsRead(ctx, msg)
	case *messages.CreateTopicRequest, *messages.DeleteTopicRequest, *messages.CreatePartitionsRequest, *messages.AlterTopicConfigsRequest,
		*messages.CreateOffsetsTopicRequest, *messages.AlterPartitionRequest, *messages.ControlledShutdownRequest,
		*messages.ElectLeadersRequest, *messages.ReassignPartitionsRequest:
		m := msg.(proto.Message)
		c.authorizeInternal(ctx, request{msg: m, sender: ctx.Sender(), corr: m.(correlated).GetCorrelationId()})
	case *messages.CreateAclsRequest, *messages.DeleteAclsRequest, *messages.AlterScramCredentialsRequest,
		*messages.DescribeAclsRequest, *messages.DescribeScramUsersRequest:
		c.onSecurityRequest(ctx, msg.(proto.Message)) // acls.go
	case *actor.Stopping:
		c.onStopping(ctx)
	case *actor.Stopped, *actor.Restarting, *pcluster.ClusterInit:
	default:
		if !c.role.receive(ctx, msg) {
			c.logger.WithFields(logrus.Fields{"type": fmt.Sprintf("%T", msg), "sender": ctx.Sender()}).Warn("controller: unknown message")
		}
	}
}

// onStarted starts the campaign and the host prober.
func (c *Controller) onStarted(ctx actor.Context) {
	cctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.done = make(chan struct{})
	self, root := ctx.Self(), ctx.ActorSystem().Root
	prober := c.newHostProber()
	go func() {
		defer close(c.done)
		var probing sync.WaitGroup
		probing.Add(1)
		go func() {
			defer probing.Done()
			prober.run(cctx)
		}()
		c.campaign(cctx, self, func(m any) { root.Send(self, m) })
		probing.Wait()
	}()
}

// onStopping resigns before going, so a standby takes over at once
// instead of after the session TTL. The campaign and the host watch are
// told at once and waited for together: without an etcd quorum their
// calls only end with their timeouts. Running jobs are cancelled; every
// job's request is answered (queued: NOT_CONTROLLER, it did not run;
// running: REQUEST_TIMED_OUT, it may have taken effect), not left to its
// sender's timeout.
func (c *Controller) onStopping(ctx actor.Context) {
	c.cancelJobs()
	for _, j := range c.lanes.runningJobs() {
		if j.refuse != nil {
			j.refuse(ctx, messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT,
				fmt.Sprintf("host %d's controller stopped while the request ran; it may or may not have taken effect", c.cfg.HostID))
		}
	}
	for _, j := range c.lanes.drain() {
		if j.refuse != nil {
			j.refuse(ctx, messages.ErrorCode_ERROR_CODE_NOT_CONTROLLER, fmt.Sprintf("host %d's controller is stopping", c.cfg.HostID))
		}
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer wcancel()
	deadline := wctx.Done()
	e, isElected := c.role.(*elected)
	if isElected && e.watchCancel != nil {
		e.watchCancel()
	}
	if c.cancel != nil {
		c.cancel()
		select {
		case <-c.done:
		case <-deadline:
			c.logger.Warn("controller campaign did not end in time")
		}
	}
	if isElected && e.watchDone != nil {
		select {
		case <-e.watchDone:
		case <-deadline:
			c.logger.Warn("controller host watch did not end in time")
		}
		e.watchCancel, e.watchDone = nil, nil
	}
}

// submit queues a job and starts what can start.
func (c *Controller) submit(ctx actor.Context, j *job) {
	c.lanes.add(j)
	c.pump(ctx)
}

// pump starts every job the lanes allow: its start runs here, its work
// on a goroutine that posts jobDone.
func (c *Controller) pump(ctx actor.Context) {
	self, root := ctx.Self(), ctx.ActorSystem().Root
	for {
		started := c.lanes.next()
		if len(started) == 0 {
			return
		}
		for _, j := range started {
			w := j.start(ctx)
			if w == nil {
				c.lanes.done(j.lane)
				continue
			}
			ln, parent := j.lane, c.jobs
			go func() { root.Send(self, jobDone{lane: ln, finish: w(parent)}) }()
		}
	}
}

// onJobDone finishes a job in the actor and starts the next ones.
func (c *Controller) onJobDone(ctx actor.Context, m jobDone) {
	c.lanes.done(m.lane)
	if m.finish != nil {
		m.finish(ctx)
	}
	c.pump(ctx)
}

// respond answers a request (nobody to answer: dropped).
func (c *Controller) respond(ctx actor.Context, req request, resp proto.Message) {
	if req.sender == nil {
		c.logger.WithField("request", fmt.Sprintf("%T", req.msg)).Debug("controller: answer to a request without a sender dropped")
		return
	}
	ctx.Send(req.sender, resp)
}

// campaign wins the election (waiting as a standby until then), reports
// it, waits for the session to end, reports that, and starts over.
func (c *Controller) campaign(ctx context.Context, self *actor.PID, post func(any)) {
	value := encodePID(self)
	for ctx.Err() == nil {
		c.evictCrashedSelf(ctx, self)
		el, err := c.cfg.Store.NewElection(ctx, c.cfg.SessionTTL)
		if err != nil {
			c.logger.WithError(err).Warn("cannot start an election session; retrying")
			cluster.SleepCtx(ctx, time.Second)
			continue
		}
		fence, err := el.Campaign(ctx, value)
		if err != nil {
			if ctx.Err() == nil {
				c.logger.WithError(err).Warn("campaign failed; retrying")
				cluster.SleepCtx(ctx, time.Second)
			}
			c.closeElection(el)
			continue
		}
		post(electedMsg{fence: fence})
		select {
		case <-el.Done():
		case <-ctx.Done():
			rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if err := el.Resign(rctx); err != nil {
				c.logger.WithError(err).Debug("resigning the controller election")
			}
			cancel()
		}
		post(deposed{})
		c.closeElection(el)
	}
}

func (c *Controller) closeElection(el cluster.Election) {
	if err := el.Close(); err != nil {
		c.logger.WithError(err).Debug("closing election session")
	}
}

type correlated interface{ GetCorrelationId() int64 }

// adminTopic is the topic an admin request writes.
func adminTopic(msg proto.Message) string {
	switch m := msg.(type) {
	case *messages.CreateTopicRequest:
		return m.Name
	case *messages.DeleteTopicRequest:
		return m.Name
	case *messages.CreatePartitionsRequest:
		return m.Name
	case *messages.AlterTopicConfigsRequest:
		return m.Name
	case *messages.CreateOffsetsTopicRequest:
		return messages.OffsetsTopic
	}
	return ""
}

// onAdmin runs an admin request as a job of the admin lane.
func (e *elected) onAdmin(ctx actor.Context, req request) {
	e.submit(ctx, laneAdmin, adminTopic(req.msg), req, func(actor.Context) work {
		w := e.worker()
		return func(ctx context.Context) func(actor.Context) {
			resp := w.admin(ctx, req.msg, req.corr)
			return func(actx actor.Context) { e.c.respond(actx, req, resp) }
		}
	})
}

// worker does a job's etcd work with a copy of what it needs of the
// elected controller's state, taken when the job starts. It never touches
// the actor.
type worker struct {
	cfg    Config
	logger *logrus.Entry
	fence  cluster.Fence
	// live is the live host set (nil: not read yet); electionLive, the
	// one elections use (less the hosts in controlled shutdown). Both are
	// read-only.
	live, electionLive map[int32]bool
}

// admin carries out an admin request and returns its answer.
func (w *worker) admin(ctx context.Context, msg proto.Message, corr int64) *messages.AdminResponse {
	rctx, cancel := context.WithTimeout(ctx, w.cfg.RequestTimeout)
	defer cancel()
	var topic *messages.TopicMetadata
	err := refuseInternal(msg)
	if err == nil {
		switch m := msg.(type) {
		case *messages.CreateTopicRequest:
			topic, err = w.createTopic(rctx, m)
		case *messages.DeleteTopicRequest:
			err = w.cfg.Store.DeleteTopic(rctx, w.fence, m.Name)
		case *messages.CreatePartitionsRequest:
			topic, err = w.createPartitions(rctx, m)
		case *messages.AlterTopicConfigsRequest:
			topic, err = w.alterConfigs(rctx, m)
		case *messages.CreateOffsetsTopicRequest:
			topic, err = w.createOffsetsTopic(rctx, m)
		}
	}
	resp := &messages.AdminResponse{CorrelationId: corr, Topic: topic}
	if err != nil {
		resp.Topic = nil
		resp.ErrorCode, resp.ErrorMessage = codeFor(err), err.Error()
		w.logger.WithError(err).WithField("request", fmt.Sprintf("%T", msg)).Info("admin request refused")
	}
	return resp
}

// forward sends a request to the elected controller's host and relays
// the answer, on a goroutine: finding the controller reads etcd, and its
// answer may take RequestTimeout. It touches no actor state.
func (c *Controller) forward(ctx actor.Context, req request) {
	self, root := ctx.Self(), ctx.ActorSystem().Root
	go func() {
		resp := c.forwarded(root, self, req)
		if req.sender != nil {
			root.Send(req.sender, resp)
		}
	}()
}

// forwarded asks the elected controller and returns its answer, or a
// NOT_CONTROLLER reply (retriable) when there is none or it does not
// answer.
func (c *Controller) forwarded(root *actor.RootContext, self *actor.PID, req request) any {
	rctx, cancel := context.WithTimeout(c.jobs, c.cfg.RequestTimeout)
	value, _, err := c.cfg.Store.Controller(rctx)
	cancel()
	leader, perr := decodePID(value)
	if err == nil && perr != nil {
		err = perr
	}
	if err != nil || leader.Equal(self) {
		why := "no controller elected yet"
		if err != nil && !errors.Is(err, cluster.ErrNoController) {
			why = fmt.Sprintf("cannot find the controller: %v", err)
		}
		return messages.ErrorReply(req.msg, req.corr, messages.ErrorCode_ERROR_CODE_NOT_CONTROLLER, why)
	}
	res, err := root.RequestFuture(leader, req.msg, c.cfg.RequestTimeout).Result()
	if err != nil {
		// The elected controller is gone or unreachable; its lease will
		// lapse and another will be elected. NOT_CONTROLLER is retriable.
		return messages.ErrorReply(req.msg, req.corr, messages.ErrorCode_ERROR_CODE_NOT_CONTROLLER, fmt.Sprintf("controller %s did not answer: %v", leader, err))
	}
	return res
}

// evictCrashedSelf removes election candidacies left by an earlier
// incarnation of this host (same address, another actor id): that process
// is dead (this one holds its address), and its lease would otherwise keep
// the cluster without a controller until it expires.
func (c *Controller) evictCrashedSelf(ctx context.Context, self *actor.PID) {
	rctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	keys, values, err := c.cfg.Store.Candidates(rctx)
	if err != nil {
		c.logger.WithError(err).Debug("listing election candidates")
		return
	}
	for i, v := range values {
		pid, err := decodePID(v)
		if err != nil || pid.Address != self.Address || pid.Id == self.Id {
			continue
		}
		if err := c.cfg.Store.EvictCandidate(rctx, keys[i]); err != nil {
			c.logger.WithError(err).Warn("cannot evict a crashed incarnation's candidacy")
		}
	}
}

// encodePID and decodePID carry the elected controller's PID as its
// election value ("address#id"), so standbys can forward to it directly.
func encodePID(pid *actor.PID) string { return pid.Address + "#" + pid.Id }

func decodePID(v string) (*actor.PID, error) {
	addr, id, ok := strings.Cut(v, "#")
	if !ok || addr == "" || id == "" {
		return nil, fmt.Errorf("controller: election value %q is not a PID", v)
	}
	return actor.NewPID(addr, id), nil
}

func (w *worker) liveHosts(ctx context.Context) ([]int32, error) {
	hosts, err := w.cfg.Store.ListHosts(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]int32, 0, len(hosts))
	for _, h := range hosts {
		ids = append(ids, h.HostId)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

func (w *worker) createTopic(ctx context.Context, m *messages.CreateTopicRequest) (*messages.TopicMetadata, error) {
	t, err := w.newTopic(ctx, m.Name, m.Partitions, m.ReplicationFactor, m.Configs)
	if err != nil {
		return nil, err
	}
	w.logger.WithFields(logrus.Fields{"topic": m.Name, "partitions": m.Partitions, "replication_factor": m.ReplicationFactor}).Info("created topic")
	return t, nil
}

// newTopic validates a new topic, places its replicas on the live hosts
// and stores it. Every bound is checked before the placement allocates
// anything in proportion to the request.
func (w *worker) newTopic(ctx context.Context, name string, partitions, rf int32, configs map[string]string) (*messages.TopicMetadata, error) {
	if err := cluster.ValidateTopicName(name); err != nil {
		return nil, err
	}
	if err := checkPartitionCount(partitions); err != nil {
		return nil, err
	}
	if rf < 1 {
		return nil, fmt.Errorf("%w: replication factor %d (need at least 1)", cluster.ErrInvalidReplicationFactor, rf)
	}
	if w.cfg.MaxReplicationFactor > 0 && rf > w.cfg.MaxReplicationFactor {
		return nil, fmt.Errorf("%w: replication factor %d is above the maximum %d", cluster.ErrInvalidReplicationFactor, rf, w.cfg.MaxReplicationFactor)
	}
	if err := cluster.ValidateTopicConfigs(configs); err != nil {
		return nil, err
	}
	configs = cluster.NormalizeTopicConfigs(configs)
	hosts, err := w.liveHosts(ctx)
	if err != nil {
		return nil, err
	}
	assign, err := cluster.AssignReplicas(hosts, int(partitions), int(rf), -1)
	if err != nil {
		return nil, err
	}
	if err := w.checkCapacity(ctx, assign); err != nil {
		return nil, err
	}
	t := &messages.TopicMetadata{Name: name, TopicId: cluster.NewTopicID(), Configs: configs, ReplicationFactor: rf}
	for i, replicas := range assign {
		t.Partitions = append(t.Partitions, newPartition(int32(i), replicas))
	}
	if err := w.cfg.Store.CreateTopic(ctx, w.fence, t); err != nil {
		return nil, err
	}
	return t, nil
}

// checkPartitionCount holds a requested partition count (a new topic's, or
// a topic's new total) to 1..cluster.MaxPartitionsPerTopic.
func checkPartitionCount(n int32) error {
	if n < 1 || n > cluster.MaxPartitionsPerTopic {
		return fmt.Errorf("%w: %d partitions requested; a topic has 1 to %d", cluster.ErrInvalidPartitions, n, cluster.MaxPartitionsPerTopic)
	}
	return nil
}

// checkCapacity refuses (cluster.ErrPolicyViolation) an assignment that
// would take a host past MaxPartitionsPerHost replicas, counting the
// replicas every stored topic already places there.
func (w *worker) checkCapacity(ctx context.Context, assign [][]int32) error {
	topics, _, err := w.cfg.Store.ListTopics(ctx)
	if err != nil {
		return err
	}
	return cluster.CheckHostCapacity(cluster.ReplicaLoad(topics), assign, w.cfg.MaxPartitionsPerHost)
}

func newPartition(i int32, replicas []int32) *messages.PartitionState {
	return &messages.PartitionState{Partition: i, Replicas: replicas, Leader: replicas[0], Isr: append([]int32(nil), replicas...)}
}

func (w *worker) createPartitions(ctx context.Context, m *messages.CreatePartitionsRequest) (*messages.TopicMetadata, error) {
	if err := checkPartitionCount(m.Total); err != nil {
		return nil, err
	}
	t, rev, err := w.cfg.Store.GetTopic(ctx, m.Name)
	if err != nil {
		return nil, err
	}
	have := int32(len(t.Partitions))
	if m.Total <= have {
		return nil, fmt.Errorf("%w: topic %q has %d partitions; the new total %d must be larger", cluster.ErrInvalidPartitions, m.Name, have, m.Total)
	}
	hosts, err := w.liveHosts(ctx)
	if err != nil {
		return nil, err
	}
	assign, err := cluster.AssignReplicas(hosts, int(m.Total-have), int(t.ReplicationFactor), int(have))
	if err != nil {
		return nil, err
	}
	if err := w.checkCapacity(ctx, assign); err != nil {
		return nil, err
	}
	for i, replicas := range assign {
		t.Partitions = append(t.Partitions, newPartition(have+int32(i), replicas))
	}
	if err := w.cfg.Store.UpdateTopic(ctx, w.fence, t, rev); err != nil {
		return nil, err
	}
	return t, nil
}

func (w *worker) alterConfigs(ctx context.Context, m *messages.AlterTopicConfigsRequest) (*messages.TopicMetadata, error) {
	if err := cluster.ValidateTopicConfigs(m.Configs); err != nil {
		return nil, err
	}
	t, rev, err := w.cfg.Store.GetTopic(ctx, m.Name)
	if err != nil {
		return nil, err
	}
	t.Configs = cluster.NormalizeTopicConfigs(m.Configs)
	// A change of unclean.leader.election.enable takes effect at once, as
	// in Kafka: an offline partition may get a leader now.
	var before *messages.TopicMetadata
	if w.live != nil {
		unclean, err := cluster.UncleanLeaderElection(t.Configs)
		if err != nil {
			return nil, err
		}
		before = proto.Clone(t).(*messages.TopicMetadata)
		if !ElectLeaders(t, w.live, unclean) {
			before = nil
		}
	}
	if err := w.cfg.Store.UpdateTopic(ctx, w.fence, t, rev); err != nil {
		return nil, err
	}
	if before != nil {
		w.logElections(before, t)
	}
	return t, nil
}

// codeFor maps a cluster error to the code a client gets.
func codeFor(err error) messages.ErrorCode {
	switch {
	case errors.Is(err, cluster.ErrCorruptMetadata):
		// A stored record is invalid: the fault is not the request's.
		return messages.ErrorCode_ERROR_CODE_UNKNOWN_SERVER_ERROR
	case errors.Is(err, cluster.ErrPolicyViolation):
		return messages.ErrorCode_ERROR_CODE_POLICY_VIOLATION
	case errors.Is(err, cluster.ErrInvalidTopic), errors.Is(err, ErrInternalTopic):
		return messages.ErrorCode_ERROR_CODE_INVALID_TOPIC_EXCEPTION
	case errors.Is(err, cluster.ErrTopicExists):
		return messages.ErrorCode_ERROR_CODE_TOPIC_ALREADY_EXISTS
	case errors.Is(err, cluster.ErrUnknownTopic):
		return messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION
	case errors.Is(err, cluster.ErrInvalidPartitions):
		return messages.ErrorCode_ERROR_CODE_INVALID_PARTITIONS
	case errors.Is(err, cluster.ErrInvalidReplicationFactor):
		return messages.ErrorCode_ERROR_CODE_INVALID_REPLICATION_FACTOR
	case errors.Is(err, cluster.ErrInvalidConfig):
		return messages.ErrorCode_ERROR_CODE_INVALID_CONFIG
	case errors.Is(err, cluster.ErrNotController):
		return messages.ErrorCode_ERROR_CODE_NOT_CONTROLLER
	case errors.Is(err, context.DeadlineExceeded):
		return messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT
	}
	return messages.ErrorCode_ERROR_CODE_UNKNOWN_SERVER_ERROR
}
