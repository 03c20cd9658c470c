// member.go holds the core of a subscribing consumer's group membership:
// Kafka's ConsumerCoordinator over the classic protocol
// (messages/group.proto) as a state machine, the client-side twin of
// actors/group's Group. It does no I/O, starts no goroutines and holds no
// clock (it only logs, through the logger it is given, as etcd's raft
// core does): group.go is the shell that feeds it events with the current
// time and carries out the effects it returns. Its pure decisions
// (reactionTo, diffAssignment, subscription, ...) are in decisions.go.
//
// The loop: FindCoordinator → JoinGroup (MEMBER_ID_REQUIRED: join again at
// once with the member id given) → as leader, assign with the chosen
// assignor (group.AssignGroup) over fresh metadata of every member's
// topics → SyncGroup → apply the assignment: revoke what the member owns
// and no longer has (after its records were handled and, with auto-commit,
// its positions committed), then add the new partitions from the group's
// committed offsets (or Start) → heartbeat every HeartbeatInterval.
//
// Protocols: with cooperative assignors only (the default), KIP-429's
// incremental protocol — the member keeps consuming what it owns through a
// rebalance, announces it in its subscription, gives up only the
// partitions the new assignment lacks, and rejoins at once when it gave
// some up so they can be assigned. Otherwise the eager protocol: every
// partition is revoked before each join.
//
// Answers (per request; reactionTo):
//   - REBALANCE_IN_PROGRESS: rejoin;
//   - ILLEGAL_GENERATION: the generation is stale — the owned partitions
//     are lost (Revoked.Lost, nothing committed), rejoin with the member id;
//   - UNKNOWN_MEMBER_ID: the same, and rejoin without a member id;
//   - NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, REQUEST_TIMED_OUT, no
//     answer in time, or the coordinator's host down: find the coordinator
//     again (the member keeps its generation; a join or sync cut off is
//     sent again);
//   - COORDINATOR_LOAD_IN_PROGRESS: ask again after RetryBackoff;
//   - FENCED_INSTANCE_ID, INCONSISTENT_GROUP_PROTOCOL,
//     INVALID_SESSION_TIMEOUT, INVALID_GROUP_ID, GROUP_MAX_SIZE_REACHED:
//     fatal (ErrGroupFatal to OnError; the partitions are lost and nothing
//     more is consumed).
//
// Rebalance hints: every JoinGroup, SyncGroup and Heartbeat names the
// consumer actor (member_actor), and the coordinator pushes
// RebalanceStarted to it when the group starts a rebalance; a stable
// member hinted for its own group, member id and generation rejoins at
// once instead of at its next heartbeat. Others are stale and ignored. A
// hint is never needed for correctness: a lost one costs a heartbeat
// interval.
//
// Metadata refreshes (every MetadataMaxAge, and after errors) re-evaluate
// a pattern subscription; a changed subscription, or (for the leader) a
// changed partition count of any topic of the group, makes the member
// rejoin.
//
// Events (one method each; every one takes now and returns memberEffects):
// Start, Tick, OnCoordinator, OnCoordinatorGone, OnMetadata, OnHeartbeat,
// OnCommitDone and OnRebalanceHint here; OnJoin, OnAssignMetadata and
// OnSync in member_join.go; OnHandled, OnRevocationCommitted, Close,
// GiveUp and Closed in member_revoke.go. The effects are in
// member_effects.go.
//
// Effects: the actions to carry out, in order (find or forget the
// coordinator, send a request, look up metadata for an assignment, stop
// fetching partitions being revoked, commit them, report partitions
// revoked or assigned, report an error), and Wake, when Tick must be called
// next: the shell keeps one timer for it. A Tick before Wake is harmless.
//
// Requests carry the epoch they were sent in; an answer (OnJoin, OnSync,
// OnHeartbeat, OnAssignMetadata) from an older epoch is stale and ignored,
// so abandoning the exchanges in flight (the coordinator moved, the
// consumer closes) is bumping the epoch.
//
// A revocation (Kafka's onPartitionsRevoked) is a conversation with the
// shell: the core asks it to stop the partitions (memberStop); once none of
// them has records out (OnHandled, which also says whether their positions
// moved past what is committed) it asks for a commit (memberCommit, with
// auto-commit, unless the partitions are lost), and once that is done
// (OnRevocationCommitted) it reports them revoked (memberRevoked) and goes
// on: it joins, finishes an assignment, or does nothing more.
//
// Close stops the membership moving on (no joins, hints ignored; a
// revocation in progress and the heartbeats go on); the shell then
// commits, and GiveUp reports every owned partition revoked and returns
// the LeaveGroup to send (none for a static member); Closed ends it.

package consumer

import (
	"fmt"
	"slices"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/messages"
)

// groupPhase is where the member stands in the protocol.
type groupPhase int

const (
	// phaseIdle: no join or sync in flight and no assignment held (before
	// the first join, after losing the generation, after a join or sync
	// was cut off).
	phaseIdle groupPhase = iota
	// phaseJoining: a JoinGroup is in flight.
	phaseJoining
	// phaseAssigning: the leader looks up metadata for its assignment.
	phaseAssigning
	// phaseSyncing: a SyncGroup is in flight.
	phaseSyncing
	// phaseStable: the member holds its generation's assignment and
	// heartbeats.
	phaseStable
	// phaseFatal: the group refused the member for good.
	phaseFatal
)

// String names p for logs.
func (p groupPhase) String() string {
	return [...]string{"idle", "joining", "assigning", "syncing", "stable", "fatal"}[p]
}

// earlyHeartbeats are when a member heartbeats, besides its interval,
// after a cooperative rebalance that left it nothing to revoke: members
// that revoked partitions rejoin at once for the follow-up rebalance
// (KIP-429), and the others learn of it only from a heartbeat, so one soon
// after saves up to a heartbeat interval.
var earlyHeartbeats = []time.Duration{100 * time.Millisecond, 400 * time.Millisecond}

// memberTimer is a timed step: a retry after a backoff (step again), or an
// early heartbeat of a generation.
type memberTimer struct {
	at         time.Time
	retry      bool
	generation int32
}

// member is a subscribing consumer's group membership; see the file
// comment. It is owned by the consumer actor and not safe for concurrent
// use.
//
// Invariants: owned is sorted and holds no partition twice; revoking's
// partitions are owned; phase is phaseStable only with generation >= 0;
// at most one heartbeat is in flight.
type member struct {
	cfg         Config
	log         *logrus.Entry
	cooperative bool
	phase       groupPhase
	coordinator *client.Coordinator // nil until found
	finding     bool
	memberID    string
	// generation is the generation the member belongs to, -1 for none.
	generation int32
	protocol   string
	leader     bool
	// owned is the partitions the member owns, sorted.
	owned []TopicPartition
	// subscription is the topics subscribed to now (sorted).
	subscription []string
	// counts holds the partition counts of the topics in the consumer's
	// metadata (0 for a topic that does not exist); haveMeta: metadata
	// came at least once.
	counts   map[string]int32
	haveMeta bool
	// snapshot holds, for a leader, the partition counts of the group's
	// topics its last assignment was made with.
	snapshot map[string]int32
	// rejoin: a rebalance is needed (rejoinWhy says why).
	rejoin    bool
	rejoinWhy string
	// epoch is bumped to abandon the exchanges in flight with the
	// coordinator (it moved, or the consumer closes).
	epoch int
	// heartbeating: a heartbeat is in flight.
	heartbeating bool
	revoking     *revocation
	joinStarted  time.Time
	// closing: Close was called, the membership does not move on any
	// more; closed: the close is over.
	closing, closed bool
	// nextHeartbeat is when the next regular heartbeat is due; zero when
	// heartbeats stopped.
	nextHeartbeat time.Time
	timers        []memberTimer
	// out collects the actions of the current event.
	out []memberAction
}

// newMember returns the membership of a consumer with cfg (validated,
// subscribing), which logs to log.
func newMember(cfg Config, log *logrus.Entry) *member {
	return &member{
		cfg: cfg, log: log, generation: -1, cooperative: cooperative(cfg.Assignors),
		rejoin: true, rejoinWhy: "first join", counts: map[string]int32{},
	}
}

// logger returns the logger with the member's id and generation.
func (m *member) logger() *logrus.Entry {
	return m.log.WithFields(logrus.Fields{"member": m.memberID, "generation": m.generation})
}

// begin starts an event.
func (m *member) begin() { m.out = nil }

// finish ends an event and returns its effects.
func (m *member) finish() memberEffects {
	eff := memberEffects{Actions: m.out, Wake: m.nextWake()}
	m.out = nil
	return eff
}

func (m *member) do(a memberAction) { m.out = append(m.out, a) }

// report queues err for OnError.
func (m *member) report(err error) { m.do(memberError{Err: err}) }

// nextWake returns when Tick is due next; zero when nothing is timed.
func (m *member) nextWake() time.Time {
	wake := m.nextHeartbeat
	for _, t := range m.timers {
		if wake.IsZero() || t.at.Before(wake) {
			wake = t.at
		}
	}
	return wake
}

// retryAfterBackoff steps the membership on again after RetryBackoff.
func (m *member) retryAfterBackoff(now time.Time) {
	m.timers = append(m.timers, memberTimer{at: now.Add(m.cfg.RetryBackoff), retry: true})
}

// requestRejoin notes that a rebalance is needed.
func (m *member) requestRejoin(why string) {
	if !m.rejoin {
		m.rejoin, m.rejoinWhy = true, why
	}
}

// inGeneration reports whether the member belongs to a generation (it can
// commit).
func (m *member) inGeneration() bool { return m.generation >= 0 }

// commitID returns the member id and generation commits carry.
func (m *member) commitID() (string, int32) { return m.memberID, m.generation }

// canAutoCommit reports whether an auto-commit may go now: while stable,
// and while rejoining (the group prepares a rebalance and takes commits of
// the current generation), not between a join and its sync (the group
// refuses them then).
func (m *member) canAutoCommit() bool {
	return (m.phase == phaseStable || m.phase == phaseJoining) && m.generation >= 0
}

// revokingParts returns the partitions being revoked, nil when none are.
func (m *member) revokingParts() []TopicPartition {
	if m.revoking == nil {
		return nil
	}
	return m.revoking.parts
}

// snapshotTopics returns the topics of a leader's snapshot: their
// metadata must be watched.
func (m *member) snapshotTopics() []string { return keys(m.snapshot) }

// Start starts the heartbeat clock; the shell calls it once, when the
// consumer starts.
func (m *member) Start(now time.Time) memberEffects {
	m.begin()
	m.nextHeartbeat = now.Add(m.cfg.HeartbeatInterval)
	return m.finish()
}

// Tick carries out what is due at now: retries, early heartbeats and the
// regular heartbeat, in time order.
func (m *member) Tick(now time.Time) memberEffects {
	m.begin()
	for {
		i, at := -1, m.nextHeartbeat
		for j, t := range m.timers {
			if at.IsZero() || t.at.Before(at) {
				i, at = j, t.at
			}
		}
		if at.IsZero() || at.After(now) {
			break
		}
		if i < 0 {
			m.heartbeatTick(now)
			continue
		}
		t := m.timers[i]
		m.timers = slices.Delete(m.timers, i, i+1)
		switch {
		case t.retry:
			m.step(now)
		case m.generation == t.generation:
			m.heartbeat()
		}
	}
	return m.finish()
}

// heartbeatTick is the regular heartbeat: sent while the member is
// stable; the clock stops for good once the member is closed or fatal.
func (m *member) heartbeatTick(now time.Time) {
	if m.closed || m.phase == phaseFatal {
		m.nextHeartbeat = time.Time{}
		return
	}
	m.nextHeartbeat = now.Add(m.cfg.HeartbeatInterval)
	m.heartbeat()
}

// step moves the membership on; it is called whenever something it may
// wait for happened (metadata, a coordinator, a revocation's end, a
// failure's backoff).
func (m *member) step(now time.Time) {
	if m.phase == phaseFatal || m.closing || m.revoking != nil || !m.haveMeta {
		return
	}
	switch m.phase {
	case phaseJoining, phaseAssigning, phaseSyncing:
		return
	}
	if m.coordinator == nil {
		if !m.finding {
			m.finding = true
			m.do(memberFind{})
		}
		return
	}
	if m.phase == phaseIdle || m.rejoin {
		m.prepareJoin(now)
	}
}

// OnCoordinator takes the coordinator lookup's result.
func (m *member) OnCoordinator(now time.Time, co client.Coordinator, err error) memberEffects {
	m.begin()
	m.finding = false
	if err != nil {
		m.report(fmt.Errorf("consumer: group %q: find coordinator: %w", m.cfg.GroupID, err))
		m.retryAfterBackoff(now)
		return m.finish()
	}
	m.coordinator = &co
	m.logger().WithFields(logrus.Fields{"coordinator": co.Address, "partition": co.Partition}).Debug("consumer: coordinator found")
	m.step(now)
	return m.finish()
}

// OnCoordinatorGone is told that the connection to a host ended: the
// coordinator is found again if it was there.
func (m *member) OnCoordinatorGone(now time.Time, address string) memberEffects {
	m.begin()
	if m.coordinator != nil && m.coordinator.Address == address {
		m.failed(now, "connection", reactRediscover, fmt.Errorf("consumer: the connection to the coordinator's host %s ended", address))
	}
	return m.finish()
}

// rediscover forgets the coordinator and finds it again after a backoff,
// abandoning the exchanges in flight; a join or sync cut off is sent again.
func (m *member) rediscover(now time.Time) {
	if m.coordinator != nil {
		m.do(memberForget{Coordinator: *m.coordinator})
		m.coordinator = nil
	}
	m.epoch++
	m.heartbeating = false
	m.cutOff()
	m.retryAfterBackoff(now)
}

// cutOff returns a member whose join or sync will not be answered to idle,
// to join again.
func (m *member) cutOff() {
	switch m.phase {
	case phaseJoining, phaseAssigning, phaseSyncing:
		m.phase = phaseIdle
		m.requestRejoin("a join or sync was cut off")
	}
}

// failed carries out the reaction r to a failure of what (a join, sync,
// heartbeat or commit).
func (m *member) failed(now time.Time, what string, r reaction, err error) {
	log := m.logger().WithFields(logrus.Fields{"request": what, "reaction": r.String()}).WithError(err)
	if r != reactRejoin {
		m.report(fmt.Errorf("consumer: group %q: %s: %w", m.cfg.GroupID, what, err))
	}
	switch r {
	case reactRetry, reactBackoff:
		log.Info("consumer: group request failed; retrying")
		m.cutOff()
		m.retryAfterBackoff(now)
	case reactRediscover:
		log.Info("consumer: finding the group coordinator again")
		m.rediscover(now)
	case reactRejoin:
		log.Info("consumer: the group is rebalancing; rejoining")
		m.cutOff()
		m.requestRejoin("the group is rebalancing")
		m.step(now)
	case reactResetGeneration, reactResetMember:
		log.Warn("consumer: the member's generation is no longer valid; its partitions are lost, rejoining")
		if r == reactResetMember {
			m.memberID = ""
		}
		m.generation = -1
		m.phase = phaseIdle
		m.requestRejoin("the membership was lost")
		m.step(now)
	case reactFatal:
		m.fatal(now, err)
	}
}

// fatal ends the membership: the group refused the member for good.
func (m *member) fatal(now time.Time, err error) {
	m.logger().WithError(err).Error("consumer: the group refused the member; consuming stops")
	m.phase = phaseFatal
	m.epoch++
	m.report(fmt.Errorf("%w: group %q: %w", ErrGroupFatal, m.cfg.GroupID, err))
	if len(m.owned) > 0 && m.revoking == nil {
		m.revoke(now, m.owned, true, afterRevoke{kind: afterNothing})
	}
}

// OnMetadata takes the consumer's metadata: counts holds the partition
// counts of the topics it asked for (0 for a topic that does not exist);
// all: it asked for every topic, so those missing are gone. It
// re-evaluates the subscription and, for the leader, the partition counts
// its assignment was made with.
func (m *member) OnMetadata(now time.Time, counts map[string]int32, all bool) memberEffects {
	m.begin()
	if all {
		clear(m.counts)
	}
	for t, n := range counts {
		m.counts[t] = n
	}
	m.haveMeta = true
	sub := subscription(m.cfg.Topics, m.cfg.TopicRegex, m.counts)
	if !sameTopics(sub, m.subscription) {
		if m.generation >= 0 || m.phase != phaseIdle {
			m.logger().WithFields(logrus.Fields{"from": m.subscription, "to": sub}).Info("consumer: the subscription changed; rejoining")
			m.requestRejoin("the subscription changed")
		}
		m.subscription = sub
	}
	if m.leader && m.snapshot != nil && m.phase == phaseStable && countsChanged(m.snapshot, m.counts) {
		m.logger().Info("consumer: the partition counts of the group's topics changed; rejoining")
		m.requestRejoin("partition counts changed")
	}
	m.step(now)
	return m.finish()
}

// heartbeat sends a heartbeat if the member is stable and none is in
// flight.
func (m *member) heartbeat() {
	if m.closed || m.phase != phaseStable || m.generation < 0 || m.coordinator == nil || m.heartbeating {
		return
	}
	m.heartbeating = true
	m.send(&messages.HeartbeatRequest{
		GroupId: m.cfg.GroupID, GenerationId: m.generation, MemberId: m.memberID, GroupInstanceId: m.cfg.GroupInstanceID,
	})
}

// OnHeartbeat takes the answer to the Heartbeat req.
func (m *member) OnHeartbeat(now time.Time, req groupRequest, res any, err error) memberEffects {
	m.begin()
	if req.epoch != m.epoch {
		return m.finish()
	}
	m.heartbeating = false
	hb, _ := req.Msg.(*messages.HeartbeatRequest)
	if m.generation != hb.GetGenerationId() || m.memberID != hb.GetMemberId() || m.phase != phaseStable {
		return m.finish() // answered for a generation the member left already
	}
	resp, err := answerAs[*messages.HeartbeatResponse](res, err)
	switch {
	case err != nil:
		m.failed(now, "heartbeat", reactRediscover, err)
	case reactionTo(resp.ErrorCode) != reactNone:
		m.failed(now, "heartbeat", reactionTo(resp.ErrorCode), resp.Err())
	}
	return m.finish()
}

// OnCommitDone takes the outcome of a commit made as memberID in
// generation: a refusal for the member's current generation makes it
// rejoin as the group file describes.
func (m *member) OnCommitDone(now time.Time, memberID string, generation int32, err error) memberEffects {
	m.begin()
	if err != nil && m.generation == generation && m.memberID == memberID {
		switch r := reactionTo(messages.CodeOf(err)); r {
		case reactResetGeneration, reactResetMember, reactFatal:
			m.failed(now, "commit", r, err)
		case reactRejoin:
			if m.phase == phaseStable {
				m.requestRejoin("a commit found the group rebalancing")
				m.step(now)
			}
		}
	}
	return m.finish()
}

// OnRebalanceHint rejoins at once when the coordinator hints that the
// member's group started a rebalance of the member's generation; a hint
// for another group, member or generation, or while the member is not
// stable (joining, syncing, closing), is stale and ignored.
func (m *member) OnRebalanceHint(now time.Time, h *messages.RebalanceStarted) memberEffects {
	m.begin()
	if m.closed || m.closing || h.GroupId != m.cfg.GroupID || h.MemberId != m.memberID ||
		h.GenerationId != m.generation || m.phase != phaseStable || m.rejoin {
		m.log.WithFields(logrus.Fields{"group": h.GroupId, "hint_member": h.MemberId, "hint_generation": h.GenerationId}).Debug("consumer: ignoring a stale rebalance hint")
		return m.finish()
	}
	m.logger().Info("consumer: the coordinator started a rebalance; rejoining")
	m.requestRejoin("the coordinator started a rebalance")
	m.step(now)
	return m.finish()
}

// tpStrings returns tps as strings, for logs.
func tpStrings(tps []TopicPartition) []string {
	out := make([]string, len(tps))
	for i, tp := range tps {
		out[i] = tp.String()
	}
	return out
}
