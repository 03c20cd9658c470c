// fetchstate.go holds the state machine of one partition's fetching, as a
// plain value with no I/O: the actor (consumer.go) moves it with one method
// per event and asks it one question before every fetch (ready).
//
// States (fetchPhase):
//
//	idle       nothing in progress: fetched as soon as the position and
//	           the leader are known
//	resolving  the start position is being looked up (the group's
//	           committed offset, or ListOffsets for Start)
//	fetching   a fetch is in flight (its correlation id is kept)
//	handing    records were handed to a PID target, not answered yet
//	paused     paused by the user, until Resume
//	revoking   being revoked or closed: fetched no more
//	failed     stopped by the Fail out-of-range policy or at an
//	           undecodable batch, until a Seek
//
// A lookup, a fetch or a hand-off in progress cannot be called back, so a
// Pause, a failure or a revocation that comes meanwhile is held until it
// ends: the partition is then resolving, fetching or handing, and moves to
// the held state (not to idle) when that step ends. An answer to a fetch
// that ends in a held state is dropped (fetched again from the same
// position on Resume). Two holds can stack: a failed partition that is
// paused stays failed after Resume (only a Seek clears a failure).
// revoking is final: it overrides every other hold and nothing leaves it.
//
// Transitions (event: from → to; any state not listed is unchanged):
//
//	resolve:  idle → resolving
//	resolved: resolving → idle or the hold
//	send:     idle → fetching
//	answered: fetching → idle (use the answer) or the hold (drop it)
//	abandon:  fetching → idle or the hold   (deadline, host gone, new
//	                                         leader epoch, new position)
//	hand:     idle → handing
//	handed:   handing → idle or the hold
//	pause:    any but revoking → paused, held if a step is in progress
//	resume:   paused → idle, or failed if it failed before the pause
//	fail:     idle → failed (handing: held)
//	seek:     resolving, fetching → idle; a failure is cleared; a pause
//	          and a hand-off in progress stay
//	revoke:   anything → revoking (a fetch in flight is abandoned, a
//	          lookup or a hand-off in progress ends first)

package consumer

// fetchPhase is what one partition's fetching is doing; see the file
// comment.
type fetchPhase uint8

// The phases.
const (
	fetchIdle fetchPhase = iota
	fetchResolving
	fetchFetching
	fetchHanding
	fetchPaused
	fetchRevoking
	fetchFailed
)

// String names p for logs and tests.
func (p fetchPhase) String() string {
	return [...]string{"idle", "resolving", "fetching", "handing", "paused", "revoking", "failed"}[p]
}

// fetchState is one partition's fetch state. The zero value is idle.
//
// Invariants: step is idle, resolving, fetching or handing; hold is idle,
// paused, failed or revoking; corr is non-zero exactly when step is
// fetching; failedUnder only with hold paused.
type fetchState struct {
	// step is the step in progress (idle: none).
	step fetchPhase
	// hold is why the partition is not fetched once step is idle (idle:
	// no reason).
	hold fetchPhase
	// corr is the correlation id of the fetch in flight.
	corr int64
	// failedUnder: the partition had failed when it was paused.
	failedUnder bool
}

// state returns the partition's one visible state: the step in progress,
// else the hold.
func (f *fetchState) state() fetchPhase {
	if f.step != fetchIdle {
		return f.step
	}
	return f.hold
}

// ready reports whether the partition may be fetched (given a position
// and a leader): nothing in progress and nothing held.
func (f *fetchState) ready() bool { return f.state() == fetchIdle }

// resolving reports whether the start position is being looked up.
func (f *fetchState) resolving() bool { return f.step == fetchResolving }

// handing reports whether records handed to the target are not answered
// yet.
func (f *fetchState) handing() bool { return f.step == fetchHanding }

// fetching reports whether a fetch is in flight.
func (f *fetchState) fetching() bool { return f.step == fetchFetching }

// isFetch reports whether corr is the fetch in flight.
func (f *fetchState) isFetch(corr int64) bool { return f.step == fetchFetching && f.corr == corr }

// revoking reports whether the partition is being revoked or closed.
func (f *fetchState) revoking() bool { return f.hold == fetchRevoking }

// resolve starts looking up the start position. A step in progress (a
// Seek's fetch overtaken by an earlier lookup) is left alone: the lookup's
// answer then only moves the position.
func (f *fetchState) resolve() {
	if f.step == fetchIdle {
		f.step = fetchResolving
	}
}

// resolved ends a lookup of the start position.
func (f *fetchState) resolved() {
	if f.step == fetchResolving {
		f.step = fetchIdle
	}
}

// send records the fetch corr (non-zero) just sent; the caller checked
// ready.
func (f *fetchState) send(corr int64) { f.step, f.corr = fetchFetching, corr }

// answered takes the answer to fetch corr. stale: it is not the fetch in
// flight (abandoned, or the partition moved on); ignore it. use: it ends
// the fetch and the answer is to be used; otherwise (a hold came while it
// was in flight) it is dropped.
func (f *fetchState) answered(corr int64) (stale, use bool) {
	if !f.isFetch(corr) {
		return true, false
	}
	f.step, f.corr = fetchIdle, 0
	return false, f.hold == fetchIdle
}

// abandon forgets the fetch in flight, if any (its answer, if it comes,
// is stale). It reports whether there was one.
func (f *fetchState) abandon() bool {
	if f.step != fetchFetching {
		return false
	}
	f.step, f.corr = fetchIdle, 0
	return true
}

// hand records records handed to the target.
func (f *fetchState) hand() { f.step = fetchHanding }

// handed records the target's answer.
func (f *fetchState) handed() {
	if f.step == fetchHanding {
		f.step = fetchIdle
	}
}

// pause holds the partition until resume. It reports whether anything
// changed (a revoking or paused partition stays as it is).
func (f *fetchState) pause() bool {
	switch f.hold {
	case fetchRevoking, fetchPaused:
		return false
	case fetchFailed:
		f.failedUnder = true
	}
	f.hold = fetchPaused
	return true
}

// resume ends a pause. It reports whether the partition was paused.
func (f *fetchState) resume() bool {
	if f.hold != fetchPaused {
		return false
	}
	f.hold = fetchIdle
	if f.failedUnder {
		f.hold, f.failedUnder = fetchFailed, false
	}
	return true
}

// fail stops the partition until a seek.
func (f *fetchState) fail() {
	if f.hold == fetchIdle {
		f.hold = fetchFailed
	}
}

// seek records a new position set by the user: a lookup or a fetch in
// progress is forgotten and a failure cleared.
func (f *fetchState) seek() {
	if f.step == fetchResolving || f.step == fetchFetching {
		f.step, f.corr = fetchIdle, 0
	}
	switch f.hold {
	case fetchFailed:
		f.hold = fetchIdle
	case fetchPaused:
		f.failedUnder = false
	}
}

// revoke stops the partition for good: it is being revoked or closed. A
// fetch in flight is abandoned.
func (f *fetchState) revoke() {
	f.abandon()
	f.hold, f.failedUnder = fetchRevoking, false
}
