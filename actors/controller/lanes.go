// lanes.go: the controller's etcd work runs off the mailbox. Every
// request or event that needs etcd becomes a job in one of two lanes:
//
//   - laneAdmin: admin requests (create/delete topic, add partitions,
//     alter configs, the offsets topic), reassignments, preferred leader
//     elections, leader balance checks, controlled shutdowns and the
//     leader elections that follow host liveness (reconciles) — one at a
//     time, in arrival order, as the mailbox ran them before;
//   - laneISR: AlterPartition, one at a time, in arrival order — so an ISR
//     change never queues behind admin work.
//
// A job that writes one topic names it; while it runs, a job of the other
// lane naming the same topic waits (later jobs of that lane on other
// topics go ahead of it), so the writes to one topic stay serialized and
// neither sees the other's write as ErrTopicChanged. Jobs writing several
// topics (reconciles, preferred elections, controlled shutdowns) rely on
// UpdateTopic's mod-revision check and re-read and retry a topic that
// changed meanwhile, as they always have.
//
// A job starts in the actor (job.start copies what it needs of the actor's
// state), runs its etcd work on a goroutine, and posts a jobDone whose
// finish runs back in the actor (updates state, answers). The lanes
// themselves are a plain struct with no I/O (table-tested in
// lanes_test.go); the actor owns them.

package controller

import (
	"context"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/messages"
)

// lane is one queue of jobs, run one at a time.
type lane int

const (
	laneAdmin lane = iota
	laneISR
	numLanes
)

// String names the lane for logs.
func (l lane) String() string {
	switch l {
	case laneAdmin:
		return "admin"
	case laneISR:
		return "isr"
	}
	return "unknown"
}

// work is a job's etcd work: it runs off the actor and returns what to do
// back in the actor (nil: nothing). It must not touch the actor's state.
type work func(ctx context.Context) (finish func(actor.Context))

// job is one unit of etcd work.
type job struct {
	lane lane
	// topic is the one topic the job writes; "" when it writes several
	// or none.
	topic string
	// start runs in the actor when the job starts and returns its work;
	// nil when it finished in the actor (e.g. answered at once).
	start func(ctx actor.Context) work
	// refuse answers the job's request, if any, when the job is dropped:
	// before it started, with NOT_CONTROLLER (the controller was deposed
	// or is stopping), or while it ran, with REQUEST_TIMED_OUT (the
	// controller stopped; what the work did is unknown).
	refuse func(ctx actor.Context, code messages.ErrorCode, why string)
}

// jobDone is posted to the actor when a job's work has ended.
type jobDone struct {
	lane   lane
	finish func(actor.Context)
}

// lanes holds the queued and running jobs. Owned by the actor; no I/O.
//
// Invariants: at most one running job per lane; a queued job naming a
// topic never starts while a running job names the same topic; jobs of
// one lane naming one topic start in the order they were added (and so do
// all jobs of a lane that name no topic).
type lanes struct {
	queued  [numLanes][]*job
	running [numLanes]*job
}

// add queues j at the end of its lane.
func (l *lanes) add(j *job) { l.queued[j.lane] = append(l.queued[j.lane], j) }

// addFront queues j at the head of its lane (the next step of the job
// that just finished).
func (l *lanes) addFront(j *job) {
	l.queued[j.lane] = append([]*job{j}, l.queued[j.lane]...)
}

// busy reports whether a running job names topic.
func (l *lanes) busy(topic string) bool {
	if topic == "" {
		return false
	}
	for _, r := range l.running {
		if r != nil && r.topic == topic {
			return true
		}
	}
	return false
}

// next marks as running and returns the jobs that may start now: in each
// idle lane, the first queued job whose topic no running job names. A
// job naming no topic waits behind the jobs queued before it (the lane's
// order holds); a job whose topic is busy is passed over by the jobs on
// other topics behind it.
func (l *lanes) next() []*job {
	var out []*job
	for ln := range numLanes {
		if l.running[ln] != nil {
			continue
		}
		q := l.queued[ln]
		for i, j := range q {
			if l.busy(j.topic) {
				continue
			}
			if j.topic == "" && i > 0 {
				break // a several-topic job keeps its place in line
			}
			l.queued[ln] = append(q[:i:i], q[i+1:]...)
			l.running[ln] = j
			out = append(out, j)
			break
		}
	}
	return out
}

// done marks lane ln idle.
func (l *lanes) done(ln lane) { l.running[ln] = nil }

// runningJobs returns the running jobs.
func (l *lanes) runningJobs() []*job {
	var out []*job
	for _, j := range l.running {
		if j != nil {
			out = append(out, j)
		}
	}
	return out
}

// drain removes and returns every queued job, lane by lane, in order.
func (l *lanes) drain() []*job {
	var out []*job
	for ln := range numLanes {
		out = append(out, l.queued[ln]...)
		l.queued[ln] = nil
	}
	return out
}
