// kafkadata_watch.go holds watchHub, how the host's Kafka data backend waits
// for data (kafka.ReadBackend.WatchHighWatermarks) without changing the
// replica: with the replica's own long poll. For each watched partition
// and mark it parks one native FetchRequest (consumer, min_bytes 1, from
// the mark) at the local replica; the replica answers it as soon as its
// high watermark passes the mark (its append and high-watermark paths wake
// parked fetches), when its leadership changes or it stops
// (NOT_LEADER_OR_FOLLOWER), or at max_wait. The answer notifies every
// watcher of that partition and mark.
//
// Why shared, not one parked fetch per watch: the replica has no message
// to cancel a parked fetch, so a fetch parked for a watch that ended (its
// Kafka fetch was answered by another partition's data) stays parked until
// its max_wait. One per watch would pile up on idle partitions — one more
// per Kafka fetch cycle of a busy consumer — until the replica's
// MaxParkedFetches cap answers new ones at once. Keyed by (partition,
// mark), a partition whose high watermark does not move gets one parked
// fetch however many watches come and go; a partition whose does answers
// its parked fetches at once.
//
// No busy polling: a parked fetch answered with no data, no error and its
// mark not passed (its max_wait ended) is parked again only while watchers
// remain, and one answered that way much sooner than its max_wait (the
// replica's parked-fetch cap) waits watchBackoff before it is parked again.

package host

import (
	"context"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/replica"
	"github.com/actorlog/actorlog/cluster/netlimit"
	"github.com/actorlog/actorlog/kafka"
	"github.com/actorlog/actorlog/messages"
)

// watchBackoff is how long a watch waits before parking again a fetch the
// replica answered early with nothing (too many fetches parked there).
const watchBackoff = 100 * time.Millisecond

// watchKey names one shared parked fetch: a partition and the mark its
// high watermark is to pass.
type watchKey struct {
	topic     string
	partition int32
	above     int64
}

// watcher is one watch of a key: its notify and its context's deadline
// (zero: none).
type watcher struct {
	notify   func()
	deadline time.Time
}

// watchHub shares native long-poll fetches among the watches of the Kafka
// listener's waiting fetches. Safe for concurrent use: mu guards entries;
// no I/O and no notify runs under it. Each key with watchers has one
// goroutine (poll) parking its fetch; it removes the key, under mu, when
// it notifies or finds no watcher left.
type watchHub struct {
	root     *actor.RootContext
	pid      func(topic string, partition int32) *actor.PID
	log      *logrus.Entry
	logLimit netlimit.LogLimiter

	mu      sync.Mutex
	next    uint64
	entries map[watchKey]map[uint64]watcher
}

func newWatchHub(root *actor.RootContext, pid func(string, int32) *actor.PID, log *logrus.Entry) *watchHub {
	return &watchHub{root: root, pid: pid, log: log, entries: map[watchKey]map[uint64]watcher{}}
}

// watch implements kafka.ReadBackend.WatchHighWatermarks: it registers
// notify under each partition's key, starts the keys' polls that are not
// running, and forgets the watch once ctx is done.
func (h *watchHub) watch(ctx context.Context, ws []kafka.WatchPartition, notify func()) {
	if ctx.Err() != nil || len(ws) == 0 {
		return
	}
	deadline, _ := ctx.Deadline()
	type registered struct {
		key watchKey
		id  uint64
	}
	regs := make([]registered, 0, len(ws))
	var start []watchKey
	h.mu.Lock()
	for _, w := range ws {
		k := watchKey{topic: w.Topic, partition: w.Partition, above: w.Above}
		e, ok := h.entries[k]
		if !ok {
			e = map[uint64]watcher{}
			h.entries[k] = e
			start = append(start, k)
		}
		h.next++
		e[h.next] = watcher{notify: notify, deadline: deadline}
		regs = append(regs, registered{k, h.next})
	}
	h.mu.Unlock()
	for _, k := range start {
		go h.poll(k)
	}
	context.AfterFunc(ctx, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, r := range regs {
			if e, ok := h.entries[r.key]; ok {
				delete(e, r.id)
			}
		}
	})
}

// wait returns how long k's next parked fetch may wait (the latest
// deadline of its watchers, at most replica.MaxFetchWait), dropping the
// watchers whose deadline passed; ok is false, and k is removed, when no
// watcher is left.
func (h *watchHub) wait(k watchKey) (time.Duration, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	e := h.entries[k]
	var wait time.Duration
	for id, w := range e {
		switch {
		case w.deadline.IsZero():
			wait = replica.MaxFetchWait
		case !w.deadline.After(now):
			delete(e, id) // its ctx is done or about to be
		default:
			wait = max(wait, w.deadline.Sub(now))
		}
	}
	if len(e) == 0 {
		delete(h.entries, k)
		return 0, false
	}
	return min(max(wait, time.Millisecond), replica.MaxFetchWait), true
}

// poll parks k's fetch at the local replica until it answers that the
// mark was passed or the partition changed, then notifies k's watchers;
// it returns once it did, or once no watcher is left.
func (h *watchHub) poll(k watchKey) {
	for {
		wait, ok := h.wait(k)
		if !ok {
			return
		}
		start := time.Now()
		f := h.root.RequestFuture(h.pid(k.topic, k.partition), &messages.FetchRequest{
			Topic: k.topic, Partition: k.partition, FetchOffset: k.above, MaxBytes: 1, MinBytes: 1,
			MaxWaitMs: int32(max(wait.Milliseconds(), 1)), CurrentLeaderEpoch: -1, ReplicaId: -1, LogStartOffset: -1, LastFetchedEpoch: -1,
		}, wait+kafkaAppendSlack)
		res, err := f.Result()
		if passed(k, res, err) {
			h.fire(k)
			return
		}
		if took := time.Since(start); took < wait/2 {
			// Answered early with nothing: the replica's parked-fetch
			// cap. Wait a little rather than ask again at once.
			if ok, n := h.logLimit.Allow("early", time.Now()); ok {
				h.log.WithFields(logrus.Fields{"topic": k.topic, "partition": k.partition, "took": took, "max_wait": wait, "suppressed": n}).
					Warn("Kafka fetch watch: the replica answered a long poll at once with nothing (too many parked fetches?); backing off")
			}
			time.Sleep(watchBackoff)
		}
	}
}

// passed reports whether the answer to k's parked fetch means its
// watchers should look again: the high watermark passed the mark, the log
// start moved past it, an error (not led here any more, epoch changed,
// out of range), or no answer at all (no replica here, or it did not
// answer in time: the listener's read finds out which).
func passed(k watchKey, res any, err error) bool {
	if err != nil {
		return true
	}
	resp, ok := res.(*messages.FetchResponse)
	if !ok || resp.ErrorCode != 0 {
		return true
	}
	return resp.HighWatermark > k.above || resp.LogStartOffset > k.above || len(resp.Records) > 0
}

// fire removes k and calls its watchers' notify (outside mu).
func (h *watchHub) fire(k watchKey) {
	h.mu.Lock()
	e := h.entries[k]
	delete(h.entries, k)
	h.mu.Unlock()
	for _, w := range e {
		w.notify()
	}
}

// size is how many keys have a poll running (for tests).
func (h *watchHub) size() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.entries)
}
