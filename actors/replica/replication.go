// replication.go: the replication protocol's decisions (DESIGN §4) as pure
// code: no actors, no I/O, no clock (callers pass the time in). The replica
// actor is the shell that feeds these functions and carries out what they
// return: it appends, truncates, persists the high-watermark checkpoint,
// sends AlterPartition proposals to the controller and completes parked
// produce and fetch requests.
//
// It follows Kafka (4.x) exactly where Kafka has an answer:
//
//   - LeaderState is Kafka's Partition + Replica on the leader:
//     Replica.updateFetchState (lastCaughtUpTime), Partition.maybeIncrementLeaderHW
//     (high watermark over the maximal ISR, KIP-497; no advance under
//     min ISR, KIP-966), getOutOfSyncReplicas/maybeShrinkIsr,
//     isFollowerInSync/maybeExpandIsr, the PendingExpandIsr/PendingShrinkIsr
//     states and handleAlterPartitionUpdate/Error (one change in flight,
//     fenced by leader and partition epoch), appendRecordsToLeader
//     (NOT_ENOUGH_REPLICAS) and checkEnoughReplicasReachOffset (acks=all).
//   - TruncationPoint is AbstractFetcherThread.getOffsetTruncationState
//     (KIP-101, KIP-279); DivergingEpoch is the leader's check in
//     Partition.readRecords (KIP-320, truncation on fetch);
//     FollowerHighWatermark is UnifiedLog.updateHighWatermark on a follower.
//     A fetch answered OFFSET_OUT_OF_RANGE (follower.go) restarts the log
//     at the leader's log start when the leader deleted what the follower
//     lacks, and otherwise goes back to epoch-based truncation.
//   - CheckLeaderEpoch is Partition.checkCurrentLeaderEpoch.
//
// Threading: LeaderState is not safe for concurrent use; it belongs to the
// replica actor's goroutine like the rest of the replica's state. The
// functions are pure and safe anywhere.

package replica

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/actorlog/actorlog/messages"
)

// DefaultReplicaLagTimeMax is Kafka's replica.lag.time.max.ms default: a
// follower that has not caught up with the leader's log end offset for this
// long leaves the ISR. Kafka checks for it every half of it (the
// isr-expiration task); the shell should call MaybeShrinkISR as often.
const DefaultReplicaLagTimeMax = 30 * time.Second

// UndefinedEpoch and UndefinedOffset mark an unknown epoch or offset, as -1
// does in OffsetForLeaderEpoch and in FetchResponse.diverging_epoch.
const (
	UndefinedEpoch  int32 = -1
	UndefinedOffset int64 = -1
)

// Errors of LeaderState. They are local faults of the caller or stale
// messages; none of them changes the state.
var (
	// ErrUnknownReplica: a fetch from a broker that is not a follower of
	// this partition (Kafka answers it UNKNOWN_LEADER_EPOCH when the fetch
	// carried a leader epoch, else NOT_LEADER_OR_FOLLOWER).
	ErrUnknownReplica = errors.New("replica: not a follower of this partition")
	// ErrFetchOffset: a follower fetch offset outside [0, leader log end];
	// the fetch must have been answered OFFSET_OUT_OF_RANGE before.
	ErrFetchOffset = errors.New("replica: follower fetch offset out of range")
	// ErrInvalidISR: an ISR that is not a duplicate-free subset of the
	// replicas holding the leader.
	ErrInvalidISR = errors.New("replica: invalid ISR")
	// ErrStaleISRUpdate: an ISR commit for another leader epoch or an older
	// partition epoch (Kafka ignores it).
	ErrStaleISRUpdate = errors.New("replica: stale ISR update")
)

// CheckLeaderEpoch fences a request by its leader epoch, as Kafka's
// checkCurrentLeaderEpoch: a negative requested epoch (-1: "unknown") is not
// checked; an older one is FENCED_LEADER_EPOCH (the sender is behind), a
// newer one UNKNOWN_LEADER_EPOCH (this replica is behind; the sender
// retries). Produce, fetch, list-offsets and offset-for-leader-epoch all use
// it; the actor's checkEpoch should call it.
func CheckLeaderEpoch(current, requested int32) messages.ErrorCode {
	switch {
	case requested < 0 || requested == current:
		return messages.ErrorCode_ERROR_CODE_UNSPECIFIED
	case requested < current:
		return messages.ErrorCode_ERROR_CODE_FENCED_LEADER_EPOCH
	default:
		return messages.ErrorCode_ERROR_CODE_UNKNOWN_LEADER_EPOCH
	}
}

// LeaderConfig describes one leadership term, as the controller and the
// local log give it.
type LeaderConfig struct {
	// Self is this broker's id; it must be in Replicas and in ISR.
	Self int32
	// LeaderEpoch of this term.
	LeaderEpoch int32
	// PartitionEpoch of the leader and ISR the controller last persisted;
	// ISR proposals carry it (fencing, KIP-497).
	PartitionEpoch int32
	// EpochStartOffset is the leader's log end offset when it took over:
	// where its epoch starts (Kafka's leaderEpochStartOffset).
	EpochStartOffset int64
	// Replicas in preference order, the leader included.
	Replicas []int32
	// ISR as the controller persisted it.
	ISR []int32
	// HighWatermark from the checkpoint; clamped to [0, EpochStartOffset].
	HighWatermark int64
	// MinInsyncReplicas is the topic's min.insync.replicas (values below 1
	// mean 1). Kafka uses min(it, len(Replicas)).
	MinInsyncReplicas int
	// ReplicaLagTimeMax is replica.lag.time.max.ms (default
	// DefaultReplicaLagTimeMax).
	ReplicaLagTimeMax time.Duration
}

// FollowerState is what the leader knows of one follower (Kafka's
// ReplicaState). A zero time means "never" (Kafka's 0 ms).
type FollowerState struct {
	// LogEndOffset is the offset of the follower's last fetch; -1 until it
	// fetches in this term.
	LogEndOffset int64
	// LastFetchTime is when the leader got its last fetch.
	LastFetchTime time.Time
	// LastCaughtUpTime is the latest time t such that the follower's latest
	// fetch offset is >= the leader's log end offset at t.
	LastCaughtUpTime time.Time
	// LastFetchLeaderLogEndOffset is the largest leader log end offset seen
	// at this follower's fetches; -1 until it fetches in this term.
	LastFetchLeaderLogEndOffset int64
}

// caughtUp is Kafka's ReplicaState.isCaughtUp: at the leader's log end, or
// caught up within lagMax.
func (f *FollowerState) caughtUp(leaderLEO int64, now time.Time, lagMax time.Duration) bool {
	return f.LogEndOffset == leaderLEO || now.Sub(f.LastCaughtUpTime) <= lagMax
}

// ISRChange is an ISR proposal in flight (Kafka's AlterPartition request):
// the controller applies it only if LeaderEpoch and PartitionEpoch are still
// its own, and answers with the ISR and partition epoch it persisted.
type ISRChange struct {
	LeaderEpoch    int32
	PartitionEpoch int32
	ISR            []int32
}

// FetchStep is what a follower fetch changed.
type FetchStep struct {
	// HighWatermarkAdvanced: complete parked acks=all produces and fetches,
	// and mark the high-watermark checkpoint dirty.
	HighWatermarkAdvanced bool
	// ExpandISR, when set, is an ISR expansion that this fetch made due;
	// it is now in flight: send it to the controller.
	ExpandISR *ISRChange
}

// LeaderState is the leader's replication state for one leadership term:
// the followers' progress, the ISR (committed, and the one change in flight)
// and the high watermark. A new term (a new leader epoch) gets a new
// LeaderState.
//
// Invariants: the high watermark never decreases and never exceeds the
// leader's log end offset; at most one ISR change is in flight, and while it
// is, no other is proposed; the committed ISR always holds the leader.
type LeaderState struct {
	self           int32
	epoch          int32
	partitionEpoch int32
	epochStart     int64
	replicas       []int32
	minISR         int
	lagMax         time.Duration

	leaderLEO int64
	hw        int64
	isr       []int32 // committed by the controller
	pending   []int32 // proposed ISR in flight; nil when none
	followers map[int32]*FollowerState
	// ineligible hosts may not join the ISR (Kafka's isReplicaIsrEligible:
	// gone or shutting down), so the high watermark does not wait for them.
	ineligible map[int32]bool
	// refusedUntil: followers whose proposed addition to the ISR the
	// controller refused (a host in controlled shutdown, or one it does
	// not count as live yet) are treated as ineligible until then, instead
	// of being proposed again on their very next fetch.
	refusedUntil map[int32]time.Time
}

// ISRRefusalBackoff is how long a follower whose addition to the ISR was
// refused is not proposed again (and not waited for by the high
// watermark).
const ISRRefusalBackoff = time.Second

// eligible reports whether follower id may join the ISR at now.
func (s *LeaderState) eligible(id int32, now time.Time) bool {
	return !s.ineligible[id] && !now.Before(s.refusedUntil[id])
}

// SetIneligible replaces the set of hosts that may not join the ISR (their
// registration is gone) and recomputes the high watermark, reporting
// whether it advanced: a follower outside the ISR that was caught up when
// its host stopped no longer holds it back for the lag time. A follower
// whose host comes back starts afresh, as in a new term (log end unknown,
// never caught up): what the leader knew of it predates its restart, and
// the high watermark must not wait for that stale position until the new
// process has fetched its way back (KIP-903's broker epoch check, in
// effect). Kafka's leader tells the incarnations apart by broker epoch;
// here the registration coming back is the new incarnation.
func (s *LeaderState) SetIneligible(ids map[int32]bool, now time.Time) bool {
	for id, f := range s.followers {
		if s.ineligible[id] && !ids[id] {
			*f = FollowerState{LogEndOffset: -1, LastFetchLeaderLogEndOffset: -1}
			delete(s.refusedUntil, id)
		}
	}
	s.ineligible = ids
	return s.maybeIncrementHW(now)
}

// NewLeaderState starts a leadership term at now (Kafka's makeLeader):
// every follower's log end offset is unknown (-1); ISR followers get a grace
// period (caught up at now), the others none (caught up "never"), so a slow
// follower outside the ISR does not hold the high watermark back. The high
// watermark advances at once if the ISR is the leader alone.
func NewLeaderState(cfg LeaderConfig, now time.Time) (*LeaderState, error) {
	if !slices.Contains(cfg.Replicas, cfg.Self) || hasDuplicates(cfg.Replicas) {
		return nil, fmt.Errorf("replica: leader %d: replicas %v must hold it once", cfg.Self, cfg.Replicas)
	}
	s := &LeaderState{
		self:           cfg.Self,
		epoch:          cfg.LeaderEpoch,
		partitionEpoch: cfg.PartitionEpoch,
		epochStart:     cfg.EpochStartOffset,
		replicas:       slices.Clone(cfg.Replicas),
		minISR:         max(cfg.MinInsyncReplicas, 1),
		lagMax:         cfg.ReplicaLagTimeMax,
		leaderLEO:      cfg.EpochStartOffset,
		hw:             min(max(cfg.HighWatermark, 0), cfg.EpochStartOffset),
		followers:      map[int32]*FollowerState{},
	}
	if s.lagMax <= 0 {
		s.lagMax = DefaultReplicaLagTimeMax
	}
	if err := s.validISR(cfg.ISR); err != nil {
		return nil, err
	}
	s.isr = slices.Clone(cfg.ISR)
	for _, id := range s.replicas {
		if id == s.self {
			continue
		}
		f := &FollowerState{LogEndOffset: -1, LastFetchLeaderLogEndOffset: -1}
		if slices.Contains(s.isr, id) {
			f.LastCaughtUpTime = now
		}
		s.followers[id] = f
	}
	s.maybeIncrementHW(now)
	return s, nil
}

func hasDuplicates(ids []int32) bool {
	for i, id := range ids {
		if slices.Contains(ids[i+1:], id) {
			return true
		}
	}
	return false
}

func (s *LeaderState) validISR(isr []int32) error {
	if !slices.Contains(isr, s.self) || hasDuplicates(isr) {
		return fmt.Errorf("%w: %v must hold the leader %d once", ErrInvalidISR, isr, s.self)
	}
	for _, id := range isr {
		if !slices.Contains(s.replicas, id) {
			return fmt.Errorf("%w: %d in %v is not a replica (%v)", ErrInvalidISR, id, isr, s.replicas)
		}
	}
	return nil
}

// LeaderEpoch is the term's leader epoch.
func (s *LeaderState) LeaderEpoch() int32 { return s.epoch }

// PartitionEpoch is the partition epoch of the committed ISR.
func (s *LeaderState) PartitionEpoch() int32 { return s.partitionEpoch }

// EpochStartOffset is where this leader's epoch starts in its log.
func (s *LeaderState) EpochStartOffset() int64 { return s.epochStart }

// LogEndOffset is the leader's log end offset as last reported.
func (s *LeaderState) LogEndOffset() int64 { return s.leaderLEO }

// HighWatermark is the first offset not yet committed: consumers read
// below it, acks=all produces complete when it passes their batch.
func (s *LeaderState) HighWatermark() int64 { return s.hw }

// LatestOffsetAvailable reports whether the high watermark has reached the
// start of this leader's epoch. Kafka does not hold the high watermark back
// until then (unlike Raft's commit rule); instead, while it has not,
// ListOffsets for the latest offset answers OFFSET_NOT_AVAILABLE (KIP-207),
// since the new leader's high watermark may still be below one a consumer
// already saw from the previous leader.
func (s *LeaderState) LatestOffsetAvailable() bool { return s.hw >= s.epochStart }

// ISR returns the ISR the controller committed.
func (s *LeaderState) ISR() []int32 { return slices.Clone(s.isr) }

// PendingISR returns the ISR proposal in flight, if any.
func (s *LeaderState) PendingISR() ([]int32, bool) {
	return slices.Clone(s.pending), s.pending != nil
}

// MaximalISR is the committed ISR plus any replica a pending change adds
// (KIP-497). A pending shrink does not remove anyone from it until the
// controller commits it: waiting for more replicas is always safe, waiting
// for fewer is not until it is persisted.
func (s *LeaderState) MaximalISR() []int32 {
	m := slices.Clone(s.isr)
	for _, id := range s.pending {
		if !slices.Contains(m, id) {
			m = append(m, id)
		}
	}
	return m
}

func (s *LeaderState) inMaximalISR(id int32) bool {
	return slices.Contains(s.isr, id) || slices.Contains(s.pending, id)
}

// Follower returns what the leader knows of follower id.
func (s *LeaderState) Follower(id int32) (FollowerState, bool) {
	f, ok := s.followers[id]
	if !ok {
		return FollowerState{}, false
	}
	return *f, true
}

// InSyncCount is the committed ISR's size: what min.insync.replicas is
// checked against before an acks=all append.
func (s *LeaderState) InSyncCount() int { return len(s.isr) }

// EffectiveMinISR is min.insync.replicas capped at the replica count, as
// Kafka's effectiveMinIsr.
func (s *LeaderState) EffectiveMinISR() int { return min(s.minISR, len(s.replicas)) }

// UnderMinISR reports whether the committed ISR is smaller than
// EffectiveMinISR. While it is, the high watermark does not advance (Kafka
// 4, KIP-966): records acknowledged with acks=1 stay invisible to consumers
// until enough replicas are back in sync.
func (s *LeaderState) UnderMinISR() bool { return len(s.isr) < s.EffectiveMinISR() }

// CheckAcksAll is the check before an acks=all append (Kafka's
// appendRecordsToLeader): NOT_ENOUGH_REPLICAS when the committed ISR is
// smaller than EffectiveMinISR.
func (s *LeaderState) CheckAcksAll() messages.ErrorCode {
	if s.UnderMinISR() {
		return messages.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS
	}
	return messages.ErrorCode_ERROR_CODE_UNSPECIFIED
}

// AcksAllDone reports whether an acks=all produce whose batch ends before
// requiredOffset (its last offset + 1) can be answered, and with what code
// (Kafka's checkEnoughReplicasReachOffset): done once the high watermark
// reaches requiredOffset, with NOT_ENOUGH_REPLICAS_AFTER_APPEND if the
// maximal ISR has meanwhile shrunk below EffectiveMinISR (the records are
// in the log all the same).
func (s *LeaderState) AcksAllDone(requiredOffset int64) (bool, messages.ErrorCode) {
	if s.hw < requiredOffset {
		return false, messages.ErrorCode_ERROR_CODE_UNSPECIFIED
	}
	if len(s.MaximalISR()) < s.EffectiveMinISR() {
		return true, messages.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS_AFTER_APPEND
	}
	return true, messages.ErrorCode_ERROR_CODE_UNSPECIFIED
}

// OnLeaderAppend records the leader's new log end offset after an append
// and reports whether the high watermark advanced (it does at once when the
// leader is the only ISR member).
func (s *LeaderState) OnLeaderAppend(leaderLEO int64, now time.Time) bool {
	s.leaderLEO = max(s.leaderLEO, leaderLEO)
	return s.maybeIncrementHW(now)
}

// OnFollowerFetch records a follower's fetch at fetchOffset (its log end
// offset) received at now, with the leader's log end offset leaderLEO at the
// time of the read (Kafka's updateFollowerFetchState). Call it only for a
// fetch that is answered with records (or none), not for one answered with
// an error or a diverging epoch.
//
//   - Caught-up time (Replica.updateFetchState): a fetch at the leader's log
//     end makes the follower caught up now; otherwise one at or past the
//     leader's log end at its previous fetch makes it caught up as of that
//     previous fetch, so a follower that always trails a busy leader by less
//     than one fetch stays in sync. The time never moves back.
//   - ISR expansion (maybeExpandIsr), before the high watermark: with no
//     change in flight, a follower outside the ISR whose log end offset is
//     at least the high watermark and the start of this leader's epoch is
//     proposed into it (FetchStep.ExpandISR), and counts for the high
//     watermark from then on.
//   - The high watermark is recomputed if the follower's offset changed.
func (s *LeaderState) OnFollowerFetch(id int32, fetchOffset, leaderLEO int64, now time.Time) (FetchStep, error) {
	f, ok := s.followers[id]
	if !ok {
		return FetchStep{}, fmt.Errorf("%w: %d (replicas %v, leader %d)", ErrUnknownReplica, id, s.replicas, s.self)
	}
	if fetchOffset < 0 || fetchOffset > leaderLEO {
		return FetchStep{}, fmt.Errorf("%w: follower %d fetched at %d, leader log end %d", ErrFetchOffset, id, fetchOffset, leaderLEO)
	}
	s.leaderLEO = max(s.leaderLEO, leaderLEO)
	prev := f.LogEndOffset
	switch {
	case fetchOffset >= leaderLEO:
		f.LastCaughtUpTime = latest(f.LastCaughtUpTime, now)
	case fetchOffset >= f.LastFetchLeaderLogEndOffset:
		f.LastCaughtUpTime = latest(f.LastCaughtUpTime, f.LastFetchTime)
	}
	f.LogEndOffset = fetchOffset
	f.LastFetchLeaderLogEndOffset = max(f.LastFetchLeaderLogEndOffset, leaderLEO)
	f.LastFetchTime = now

	var step FetchStep
	if s.pending == nil && !slices.Contains(s.isr, id) && s.eligible(id, now) && s.followerInSync(f) {
		c := s.propose(append(slices.Clone(s.isr), id))
		step.ExpandISR = &c
	}
	if f.LogEndOffset != prev {
		step.HighWatermarkAdvanced = s.maybeIncrementHW(now)
	}
	return step, nil
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// followerInSync is Kafka's isFollowerInSync: the follower has everything
// committed (the high watermark) and everything the previous leaders wrote
// that this leader kept (its epoch start). The second half matters because
// a new leader's high watermark can lag: were a follower let in below the
// epoch start and then elected, records committed under the previous
// leader could be lost.
func (s *LeaderState) followerInSync(f *FollowerState) bool {
	return f.LogEndOffset >= s.hw && f.LogEndOffset >= s.epochStart
}

// maybeIncrementHW is Kafka's maybeIncrementLeaderHW: under min ISR,
// nothing; otherwise the smallest log end offset among the leader, the
// followers in the maximal ISR, and the followers outside it that are caught
// up (within the lag time) and so about to join: waiting for those lets a
// follower that trails a leader-only ISR by a little reach the high
// watermark and join. An unknown (-1) offset holds the high watermark
// where it is. It only moves forward.
func (s *LeaderState) maybeIncrementHW(now time.Time) bool {
	if s.UnderMinISR() {
		return false
	}
	hw := s.leaderLEO
	for _, id := range s.replicas {
		f, ok := s.followers[id]
		if !ok || f.LogEndOffset >= hw {
			continue
		}
		if s.inMaximalISR(id) || (f.caughtUp(s.leaderLEO, now, s.lagMax) && s.eligible(id, now)) {
			hw = f.LogEndOffset
		}
	}
	if hw <= s.hw {
		return false
	}
	s.hw = hw
	return true
}

// OutOfSyncReplicas lists the committed ISR followers that are out of sync
// at now (Kafka's getOutOfSyncReplicas): neither at the leader's log end
// offset nor caught up within the lag time. A follower at the leader's log
// end never is, however long ago it fetched. Empty while a change is in
// flight.
func (s *LeaderState) OutOfSyncReplicas(now time.Time) []int32 {
	if s.pending != nil {
		return nil
	}
	var out []int32
	for _, id := range s.isr {
		if id == s.self {
			continue
		}
		if f, ok := s.followers[id]; !ok || !f.caughtUp(s.leaderLEO, now, s.lagMax) {
			out = append(out, id)
		}
	}
	return out
}

// MaybeShrinkISR proposes the committed ISR without OutOfSyncReplicas(now),
// if there are any and no change is in flight (Kafka's maybeShrinkIsr).
// The proposal is then in flight: send it to the controller. The removed
// followers keep counting for the high watermark until it is committed.
func (s *LeaderState) MaybeShrinkISR(now time.Time) (ISRChange, bool) {
	out := s.OutOfSyncReplicas(now)
	if len(out) == 0 {
		return ISRChange{}, false
	}
	isr := slices.DeleteFunc(slices.Clone(s.isr), func(id int32) bool { return slices.Contains(out, id) })
	return s.propose(isr), true
}

func (s *LeaderState) propose(isr []int32) ISRChange {
	s.pending = isr
	return ISRChange{LeaderEpoch: s.epoch, PartitionEpoch: s.partitionEpoch, ISR: slices.Clone(isr)}
}

// CommitISR applies an ISR the controller persisted at partitionEpoch: its
// answer to the change in flight, or a metadata update for this term
// (Kafka's handleAlterPartitionUpdate). An answer for another leader epoch
// or an older partition epoch is stale and ignored (ErrStaleISRUpdate).
// Otherwise the ISR and partition epoch are taken as given, nothing is in
// flight any more, and the high watermark is recomputed (a shrink can let
// it advance); the result reports whether it did.
func (s *LeaderState) CommitISR(leaderEpoch, partitionEpoch int32, isr []int32, now time.Time) (bool, error) {
	if leaderEpoch != s.epoch || partitionEpoch < s.partitionEpoch {
		return false, fmt.Errorf("%w: leader epoch %d partition epoch %d; ours %d and %d",
			ErrStaleISRUpdate, leaderEpoch, partitionEpoch, s.epoch, s.partitionEpoch)
	}
	if err := s.validISR(isr); err != nil {
		return false, err
	}
	s.isr = slices.Clone(isr)
	s.partitionEpoch = partitionEpoch
	s.pending = nil
	return s.maybeIncrementHW(now), nil
}

// AbortISRChange drops the change in flight, back to the committed ISR,
// and reports whether there was one. Kafka does this only when the
// controller says the change was certainly not applied (OPERATION_NOT_ATTEMPTED,
// INELIGIBLE_REPLICA); after FENCED_LEADER_EPOCH or a partition-epoch
// mismatch the change stays in flight until new metadata arrives (CommitISR
// or a new term), and transient errors resend it. The followers the change
// would have added are not proposed again (nor waited for by the high
// watermark) for ISRRefusalBackoff: a follower on a host in controlled
// shutdown stays caught up while it drains, and was otherwise proposed
// and refused on every one of its fetches. The high watermark is not
// recomputed here (nor in Kafka); the next append or fetch does it.
func (s *LeaderState) AbortISRChange(now time.Time) bool {
	had := s.pending != nil
	for _, id := range s.pending {
		if !slices.Contains(s.isr, id) {
			if s.refusedUntil == nil {
				s.refusedUntil = map[int32]time.Time{}
			}
			s.refusedUntil[id] = now.Add(ISRRefusalBackoff)
		}
	}
	s.pending = nil
	return had
}

// EpochEndOffset is where a leader epoch ends in a log: the offset after
// its last record. UndefinedEpoch/UndefinedOffset when unknown.
type EpochEndOffset struct {
	Epoch     int32
	EndOffset int64
}

// TruncationDecision is where a follower truncates its log before it
// fetches from a new leader.
type TruncationDecision struct {
	// TruncateTo is the offset to truncate the log to (storage
	// TruncateTo; at or past the log end it does nothing).
	TruncateTo int64
	// Completed: fetch from TruncateTo. When false, the follower does not
	// know the epoch the leader answered with: it truncates, then asks
	// again with the latest epoch left in its log (KIP-279).
	Completed bool
}

// TruncationPoint decides where a follower's log stops agreeing with its
// leader's (Kafka's AbstractFetcherThread.getOffsetTruncationState,
// KIP-101 and KIP-279). The follower asked the leader (OffsetForLeaderEpoch,
// or a fetch whose answer carried diverging_epoch) about the latest epoch
// in its own log; leader is the answer: the largest epoch the leader has
// that is at most the one asked about, and where it ends in the leader's
// log. localEnd answers the same question on the follower's own log (the
// signature of storage.Log.EndOffsetForEpoch: the largest local epoch <=
// the given one and where it ends locally, (-1, -1) when none).
//
//   - Leader answered with no end offset (it knows no epoch that old, or
//     the follower asked with none because its log has no epochs): truncate
//     to the local high watermark, the pre-KIP-101 rule (Kafka truncates to
//     the initial fetch offset, which is the high watermark on this path).
//   - End offset but no epoch (a pre-KIP-279 leader): min(leader's end,
//     local log end).
//   - The follower has the leader's epoch: min(leader's end, local end of
//     that epoch, local log end). This covers KIP-101's two scenarios: a
//     follower keeps records the new leader has under the same epoch even
//     above its own high watermark, and drops those written under an epoch
//     the leader never saw.
//   - The follower does not have it (its largest epoch below is another):
//     truncate to min(local end of that smaller epoch, local log end) and
//     ask again; not Completed.
//   - The follower has no epoch at or below the leader's: min(leader's
//     end, local log end).
//
// Epoch-based truncation never empties the log and restarts it; the
// follower does that (follower.go) when its fetch is answered
// OFFSET_OUT_OF_RANGE and its log end is below the leader's log start.
func TruncationPoint(localLEO, localHW int64, localEnd func(epoch int32) (int32, int64), leader EpochEndOffset) TruncationDecision {
	if leader.EndOffset == UndefinedOffset {
		return TruncationDecision{TruncateTo: min(localHW, localLEO), Completed: true}
	}
	if leader.Epoch == UndefinedEpoch {
		return TruncationDecision{TruncateTo: min(leader.EndOffset, localLEO), Completed: true}
	}
	epoch, end := localEnd(leader.Epoch)
	switch {
	case end == UndefinedOffset:
		return TruncationDecision{TruncateTo: min(leader.EndOffset, localLEO), Completed: true}
	case epoch != leader.Epoch:
		return TruncationDecision{TruncateTo: min(end, localLEO), Completed: false}
	default:
		return TruncationDecision{TruncateTo: min(end, leader.EndOffset, localLEO), Completed: true}
	}
}

// DivergingEpoch is the leader's check of a follower fetch that carries
// last_fetched_epoch (KIP-320, Kafka's Partition.readRecords), after the
// leader-epoch check. leaderEnd is the leader log's
// storage.Log.EndOffsetForEpoch.
//
//   - lastFetchedEpoch < 0: no check.
//   - The leader knows no epoch that old, or fetchOffset is below its log
//     start: OFFSET_OUT_OF_RANGE (the follower then restarts its log at the
//     leader's log start, or truncates by epoch again: follower.go).
//   - The leader's largest epoch <= lastFetchedEpoch is smaller, or ends
//     before fetchOffset: the logs diverge; answer with no records and this
//     EpochEndOffset as diverging_epoch (the follower feeds it to
//     TruncationPoint), and do not record the fetch (no OnFollowerFetch).
//   - Otherwise the fetch proceeds.
func DivergingEpoch(lastFetchedEpoch int32, fetchOffset, logStartOffset int64, leaderEnd func(epoch int32) (int32, int64)) (EpochEndOffset, bool, messages.ErrorCode) {
	if lastFetchedEpoch < 0 {
		return EpochEndOffset{}, false, messages.ErrorCode_ERROR_CODE_UNSPECIFIED
	}
	epoch, end := leaderEnd(lastFetchedEpoch)
	if epoch == UndefinedEpoch || end == UndefinedOffset || fetchOffset < logStartOffset {
		return EpochEndOffset{}, false, messages.ErrorCode_ERROR_CODE_OFFSET_OUT_OF_RANGE
	}
	if epoch < lastFetchedEpoch || end < fetchOffset {
		return EpochEndOffset{Epoch: epoch, EndOffset: end}, true, messages.ErrorCode_ERROR_CODE_UNSPECIFIED
	}
	return EpochEndOffset{}, false, messages.ErrorCode_ERROR_CODE_UNSPECIFIED
}

// FollowerHighWatermark is a follower's high watermark after a fetch answer
// carrying the leader's (Kafka's UnifiedLog.updateHighWatermark): the
// leader's, clamped to the follower's own log. Unlike the leader's, it can
// move back (a new leader's high watermark may lag the old one's).
func FollowerHighWatermark(leaderHW, logStartOffset, localLEO int64) int64 {
	switch {
	case leaderHW < logStartOffset:
		return logStartOffset
	case leaderHW > localLEO:
		return localLEO
	default:
		return leaderHW
	}
}
