// rates.go: records in and out per second of each topic, for the topics
// list, sampled by the console itself every Config.SamplePeriod while
// someone views the list (the list or its JSON was asked for within
// sampleIdle); then the sampler stops and forgets, so an unwatched
// console keeps no goroutine and no history.
//
// In: the growth of the partitions' log end offsets (ListOffsets latest on
// each leader, as the topic page's produce-rate sparkline reads
// total_log_end_offset), summed per topic. Out: the growth of the
// consumer groups' committed offsets (the first MaxDescribedGroups groups,
// by id), summed per topic over groups and partitions: two groups reading
// a topic count it twice, as Kafka's bytes-out does. Only partitions known
// in both of two consecutive samples count, and a decrease (a truncated
// log, a reset group, a recreated topic) counts as 0. Each topic keeps
// its last rateSamples rates (memory: that per topic, and the previous
// sample's offsets).

package console

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/actorlog/actorlog/messages"
)

const (
	// DefaultSamplePeriod is Config.SamplePeriod's default.
	DefaultSamplePeriod = 5 * time.Second
	// rateSamples is how many rates each topic keeps (5 min at 5 s).
	rateSamples = 60
	// sampleIdle stops the sampler when nobody asked for the list for
	// that long.
	sampleIdle = 2 * time.Minute
)

// topicPartition names a partition.
type topicPartition struct {
	topic     string
	partition int32
}

// groupPartition names a group's partition.
type groupPartition struct {
	group string
	topicPartition
}

// topicRates is one topic's rate history, oldest first.
type topicRates struct {
	in, out []float64
}

// rateSampler samples the offsets while the list is viewed. Safe for
// concurrent use: the sampling goroutine and the handlers share it under
// mu; a sample's cluster calls run without it.
type rateSampler struct {
	c      *Console
	period time.Duration

	mu       sync.Mutex
	running  bool
	closed   bool
	stop     chan struct{} // closed by close
	lastView time.Time
	prevAt   time.Time
	prevLEO  map[topicPartition]int64
	prevCom  map[groupPartition]int64
	hist     map[string]*topicRates
}

func newRateSampler(c *Console, period time.Duration) *rateSampler {
	return &rateSampler{c: c, period: period, stop: make(chan struct{}), hist: map[string]*topicRates{}}
}

// touch records a view, starting the sampler when it is not running.
func (s *rateSampler) touch() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastView = time.Now()
	if s.running || s.closed {
		return
	}
	s.running = true
	go s.run()
}

// close stops the sampler for good.
func (s *rateSampler) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.stop)
	}
}

func (s *rateSampler) run() {
	t := time.NewTicker(s.period)
	defer t.Stop()
	for {
		s.sample()
		select {
		case <-s.stop:
			s.forget()
			return
		case <-t.C:
		}
		s.mu.Lock()
		idle := time.Since(s.lastView) > max(sampleIdle, 3*s.period)
		if idle {
			s.running = false
			s.resetLocked()
		}
		s.mu.Unlock()
		if idle {
			s.c.log.Debug("console: nobody views the topics list; rate sampling stopped")
			return
		}
	}
}

func (s *rateSampler) forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = false
	s.resetLocked()
}

func (s *rateSampler) resetLocked() {
	s.prevAt, s.prevLEO, s.prevCom = time.Time{}, nil, nil
	s.hist = map[string]*topicRates{}
}

// sample reads the offsets once and appends a rate to each topic.
func (s *rateSampler) sample() {
	ctx, cancel := context.WithTimeout(context.Background(), max(s.period, time.Second))
	defer cancel()
	at := time.Now()
	md, err := s.c.cfg.Cluster.Metadata(ctx)
	if err != nil {
		s.c.log.WithError(err).Debug("console: rate sample: metadata")
		return
	}
	leo := s.c.logEndOffsets(ctx, md)
	// Partitions that did not answer in time are left out of this sample
	// (and so of this rate and the next).
	com := s.c.committedOffsets(ctx)
	topics := map[string]bool{}
	for _, t := range md.Topics {
		if t.ErrorCode == messages.ErrorCode_ERROR_CODE_UNSPECIFIED {
			topics[t.Name] = true
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.prevAt.IsZero() {
		dt := at.Sub(s.prevAt).Seconds()
		in, out := map[string]float64{}, map[string]float64{}
		for k, v := range leo {
			if p, ok := s.prevLEO[k]; ok {
				in[k.topic] += float64(max(v-p, 0))
			}
		}
		for k, v := range com {
			if p, ok := s.prevCom[k]; ok {
				out[k.topic] += float64(max(v-p, 0))
			}
		}
		for name := range topics {
			h := s.hist[name]
			if h == nil {
				h = &topicRates{}
				s.hist[name] = h
			}
			h.in = appendCapped(h.in, in[name]/dt)
			h.out = appendCapped(h.out, out[name]/dt)
		}
	}
	for name := range s.hist {
		if !topics[name] {
			delete(s.hist, name)
		}
	}
	s.prevAt, s.prevLEO, s.prevCom = at, leo, com
}

// appendCapped appends v, keeping the last rateSamples values.
func appendCapped(xs []float64, v float64) []float64 {
	xs = append(xs, v)
	if len(xs) > rateSamples {
		xs = slices.Delete(xs, 0, len(xs)-rateSamples)
	}
	return xs
}

// rates returns a topic's latest rates (nil until two samples were taken)
// and their history, oldest first.
func (s *rateSampler) rates(topic string) (in, out *float64, inHist, outHist []float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.hist[topic]
	if h == nil || len(h.in) == 0 {
		return nil, nil, []float64{}, []float64{}
	}
	i, o := h.in[len(h.in)-1], h.out[len(h.out)-1]
	return &i, &o, slices.Clone(h.in), slices.Clone(h.out)
}

// logEndOffsets reads the log end offset of every partition with a
// leader, offsetParallelism at a time; those that fail are left out.
func (c *Console) logEndOffsets(ctx context.Context, md *messages.MetadataResponse) map[topicPartition]int64 {
	out := map[topicPartition]int64{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, offsetParallelism)
	for _, t := range md.Topics {
		if t.ErrorCode != messages.ErrorCode_ERROR_CODE_UNSPECIFIED {
			continue
		}
		for _, p := range t.Partitions {
			if p.Leader < 0 {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				lo, err := c.cfg.Offsets.ListOffsets(ctx, p, t.Name, messages.LatestTimestamp)
				if err != nil {
					return
				}
				mu.Lock()
				out[topicPartition{t.Name, p.Partition}] = lo.Offset
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	return out
}

// committedOffsets reads the committed offsets of the first
// MaxDescribedGroups groups (nil without a CommittedReader); groups that
// fail are left out.
func (c *Console) committedOffsets(ctx context.Context) map[groupPartition]int64 {
	out := map[groupPartition]int64{}
	if c.cfg.Committed == nil {
		return out
	}
	lctx, cancel := context.WithTimeout(ctx, listGroupsTimeout)
	gs, err := c.cfg.Groups.ListGroups(lctx)
	cancel()
	if err != nil && len(gs) == 0 {
		return out
	}
	ids := make([]string, 0, len(gs))
	for _, g := range gs {
		ids = append(ids, g.GroupId)
	}
	slices.Sort(ids)
	ids = ids[:min(len(ids), MaxDescribedGroups)]
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, offsetParallelism)
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			offs, err := c.cfg.Committed.FetchOffsets(ctx, id)
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, o := range offs {
				if o.Offset >= 0 {
					out[groupPartition{id, topicPartition{o.Topic, o.Partition}}] = o.Offset
				}
			}
		}()
	}
	wg.Wait()
	return out
}
