// parked.go: bounds on the requests a leader holds — long-poll fetches
// waiting for data and acks=all produces waiting for the high watermark —
// and the cheap wake-up of parked fetches.
//
// At most Config.MaxParkedFetches fetches are parked (default
// DefaultMaxParkedFetches); a fetch beyond it is answered at once with what
// there is, often nothing and no error, as if its max_wait_ms had been 0 —
// the client simply fetches again. At most Config.MaxParkedAcks acks=all
// produces wait (default DefaultMaxParkedAcks); one beyond it is refused
// before its batch is appended, with the retriable REQUEST_TIMED_OUT, so a
// Kafka client retries it and nothing is written twice. (20,000 parked
// fetches made every produce take 48 ms instead of 0.5: each append read
// the log once per parked fetch.)
//
// A parked fetch remembers the bound it last read up to (the high
// watermark for a consumer, the log end for a follower) and how many bytes
// it had then. A wake-up does nothing unless a parked fetch's bound moved
// (an append that moves only the log end, with no follower parked, costs
// nothing); otherwise it reads the log only for the fetches that the new
// bytes could satisfy, by byteClock, and the others cost a few
// comparisons each (at most MaxParkedFetches of them).
//
// The maps holding parked requests are recreated once empty after having
// grown large, since a Go map never gives its buckets back.

package replica

import "sort"

// Defaults of the parked-request caps.
const (
	// DefaultMaxParkedFetches is how many long-poll fetches one replica
	// holds at most.
	DefaultMaxParkedFetches = 1000
	// DefaultMaxParkedAcks is how many acks=all produces one replica
	// holds at most while its followers catch up.
	DefaultMaxParkedAcks = 1000
)

// shrinkAbove is the size above which an emptied map of parked requests
// is recreated.
const shrinkAbove = 64

// byteClock maps log offsets to a running count of the bytes appended up
// to them, for the offsets at which batches ended (the only ones a high
// watermark or log end can be on a leader). It answers how many bytes lie
// between two such offsets without reading the log. It keeps the last
// maxClockMarks marks; older offsets are unknown. Pure; owned by the
// actor.
type byteClock struct {
	marks []clockMark // ascending end
	total int64
}

type clockMark struct {
	end int64 // offset after a batch
	cum int64 // bytes appended up to end
}

const maxClockMarks = 4096

// reset starts the clock at offset end (the log end when leadership
// starts), forgetting every mark.
func (c *byteClock) reset(end int64) {
	c.total = 0
	c.marks = append(c.marks[:0], clockMark{end: end})
}

// add records a batch of n bytes appended, ending at offset end.
func (c *byteClock) add(end int64, n int) {
	if k := len(c.marks); k > 0 && end <= c.marks[k-1].end {
		// Not after the last mark: the log was cut or restarted.
		c.reset(end)
		return
	}
	c.total += int64(n)
	c.marks = append(c.marks, clockMark{end: end, cum: c.total})
	if len(c.marks) >= 2*maxClockMarks {
		c.marks = append([]clockMark(nil), c.marks[len(c.marks)-maxClockMarks:]...)
	}
}

// at returns the byte count at offset o, if a batch ended exactly there.
func (c *byteClock) at(o int64) (int64, bool) {
	i := sort.Search(len(c.marks), func(i int) bool { return c.marks[i].end >= o })
	if i == len(c.marks) || c.marks[i].end != o {
		return 0, false
	}
	return c.marks[i].cum, true
}

// between returns how many bytes were appended between offsets from and
// to, when both are known.
func (c *byteClock) between(from, to int64) (int64, bool) {
	a, ok := c.at(from)
	if !ok {
		return 0, false
	}
	b, ok := c.at(to)
	if !ok {
		return 0, false
	}
	return b - a, true
}

// fetchNeed is how many bytes satisfy a parked fetch: min_bytes, but at
// most its byte limit (a read the limit cuts short is enough), at least 1.
func fetchNeed(minBytes int32, limit int) int {
	return max(1, min(int(minBytes), limit))
}

// unpark forgets parked fetch id.
func (r *Replica) unpark(id uint64, p *parkedFetch) {
	delete(r.waiting, id)
	if p.req.ReplicaId >= 0 {
		r.parkedFollowers--
	}
}

// shrinkParked recreates the maps of parked requests that are empty after
// having held more than shrinkAbove.
func (r *Replica) shrinkParked() {
	if len(r.waiting) == 0 && r.waitingPeak > shrinkAbove {
		r.waiting, r.waitingPeak = map[uint64]*parkedFetch{}, 0
	}
	if len(r.waitingAcks) == 0 && r.acksPeak > shrinkAbove {
		r.waitingAcks, r.acksPeak = map[uint64]*parkedProduce{}, 0
	}
}
