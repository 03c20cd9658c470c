// fakedata_test.go: an in-memory DataBackend for the data APIs' tests: per
// partition a log of raw batches (offsets assigned by rewriting each
// batch's base offset with kmsg.RecordBatch), a high watermark equal to the
// log end, watchers notified on append, and knobs to inject routing errors
// and slow appends. Plus a server helper that serves it with matching
// metadata.

package kafka

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/storage/record"
)

type fakeTP struct {
	topic     string
	partition int32
}

// fakePartition is one partition's log.
type fakePartition struct {
	batches  [][]byte // as stored: base offset and leader epoch set
	bases    []int64  // base offset of each batch
	hw       int64    // = log end offset
	logStart int64
	epoch    int32
	// epochStarts are (epoch, first offset) in order.
	epochStarts []EpochEndOffset
	// code, when set, is returned for every call (a routing error).
	code     int16
	watchers map[*fakeWatch]struct{}
}

type fakeWatch struct {
	above  int64
	notify func()
}

// fakeData is an in-memory DataBackend.
type fakeData struct {
	mu      sync.Mutex
	parts   map[fakeTP]*fakePartition
	nextPID int64
	// appendDelay delays every append's answer (not the append itself).
	appendDelay time.Duration
	// silent: appends are made but never answered (a backend bug).
	silent bool

	appends    atomic.Int32
	reads      atomic.Int32
	watches    atomic.Int32 // registrations made
	liveWatchs atomic.Int32 // registrations not yet dropped
}

func newFakeData() *fakeData {
	return &fakeData{parts: map[fakeTP]*fakePartition{}, nextPID: 1000}
}

// addTopic creates topic with n partitions at leader epoch epoch.
func (d *fakeData) addTopic(topic string, n int, epoch int32) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for p := int32(0); p < int32(n); p++ {
		d.parts[fakeTP{topic, p}] = &fakePartition{epoch: epoch, epochStarts: []EpochEndOffset{{LeaderEpoch: epoch}},
			watchers: map[*fakeWatch]struct{}{}}
	}
}

// setCode makes every call on a partition answer code (0 clears it) and
// wakes its watchers, as a leader change would.
func (d *fakeData) setCode(topic string, partition int32, code int16) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.parts[fakeTP{topic, partition}]
	p.code = code
	p.fire(func(*fakeWatch) bool { return true })
}

// bumpEpoch starts a new leader epoch at the log end.
func (d *fakeData) bumpEpoch(topic string, partition int32) int32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.parts[fakeTP{topic, partition}]
	p.epoch++
	p.epochStarts = append(p.epochStarts, EpochEndOffset{LeaderEpoch: p.epoch, EndOffset: p.hw})
	return p.epoch
}

// stored returns a copy of a partition's batches.
func (d *fakeData) stored(topic string, partition int32) [][]byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.parts[fakeTP{topic, partition}].batches)
}

// metadata describes the fake's topics as led by node 1 at addr.
func (d *fakeData) metadata(addr string) ClusterMetadata {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		panic(err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		panic(err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	byTopic := map[string][]Partition{}
	for tp, p := range d.parts {
		byTopic[tp.topic] = append(byTopic[tp.topic], Partition{Partition: tp.partition, Leader: 1, LeaderEpoch: p.epoch,
			Replicas: []int32{1}, ISR: []int32{1}})
	}
	md := ClusterMetadata{ClusterID: "data-cluster", ControllerID: 1, Brokers: []Broker{{NodeID: 1, Host: host, Port: int32(port)}}}
	for name, ps := range byTopic {
		slices.SortFunc(ps, func(a, b Partition) int { return int(a.Partition - b.Partition) })
		md.Topics = append(md.Topics, Topic{Name: name, Partitions: ps})
	}
	return md
}

// partition returns a partition and the error code to answer, if any.
func (d *fakeData) partition(topic string, partition int32, currentEpoch int32) (*fakePartition, int16) {
	p := d.parts[fakeTP{topic, partition}]
	switch {
	case p == nil:
		return nil, kerr.UnknownTopicOrPartition.Code
	case p.code != 0:
		return nil, p.code
	case currentEpoch >= 0 && currentEpoch < p.epoch:
		return nil, kerr.FencedLeaderEpoch.Code
	case currentEpoch > p.epoch:
		return nil, kerr.UnknownLeaderEpoch.Code
	}
	return p, 0
}

// fire notifies and drops the watchers for which pick is true.
func (p *fakePartition) fire(pick func(*fakeWatch) bool) {
	for w := range p.watchers {
		if pick(w) {
			delete(p.watchers, w)
			w.notify()
		}
	}
}

func (d *fakeData) Append(_ context.Context, req AppendRequest) <-chan AppendResult {
	d.appends.Add(1)
	ch := make(chan AppendResult, 1)
	res := d.append(req)
	if d.silent {
		return ch
	}
	if d.appendDelay > 0 {
		time.AfterFunc(d.appendDelay, func() { ch <- res })
		return ch
	}
	ch <- res
	return ch
}

func (d *fakeData) append(req AppendRequest) AppendResult {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, code := d.partition(req.Topic, req.Partition, -1)
	if code != 0 {
		return AppendResult{ErrorCode: code}
	}
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(req.Batch); err != nil {
		return AppendResult{ErrorCode: kerr.CorruptMessage.Code, ErrorMessage: err.Error()}
	}
	base := p.hw
	rb.FirstOffset = base
	rb.PartitionLeaderEpoch = p.epoch
	p.batches = append(p.batches, rb.AppendTo(nil))
	p.bases = append(p.bases, base)
	p.hw += int64(rb.LastOffsetDelta) + 1
	p.fire(func(w *fakeWatch) bool { return p.hw > w.above })
	return AppendResult{BaseOffset: base, LogAppendTime: -1, LogStartOffset: p.logStart}
}

func (d *fakeData) Read(_ context.Context, q ReadQuery) (ReadResult, error) {
	d.reads.Add(1)
	d.mu.Lock()
	defer d.mu.Unlock()
	p, code := d.partition(q.Topic, q.Partition, q.CurrentLeaderEpoch)
	if code != 0 {
		return ReadResult{ErrorCode: code}, nil
	}
	res := ReadResult{HighWatermark: p.hw, LastStableOffset: p.hw, LogStartOffset: p.logStart, Records: []byte{}}
	if q.Offset < p.logStart || q.Offset > p.hw {
		res.ErrorCode = kerr.OffsetOutOfRange.Code
		return res, nil
	}
	for i, b := range p.batches {
		next := p.bases[i] + int64(binaryLastDelta(b)) + 1
		if next <= q.Offset {
			continue
		}
		if len(res.Records) > 0 && len(res.Records)+len(b) > int(q.MaxBytes) {
			break
		}
		res.Records = append(res.Records, b...)
	}
	return res, nil
}

// binaryLastDelta is a stored batch's last offset delta.
func binaryLastDelta(b []byte) int32 {
	h, err := record.ParseHeader(b)
	if err != nil {
		panic(fmt.Sprintf("fake stored a bad batch: %v", err))
	}
	return h.LastOffsetDelta
}

func (d *fakeData) WatchHighWatermarks(ctx context.Context, ws []WatchPartition, notify func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	type reg struct {
		p *fakePartition
		w *fakeWatch
	}
	var regs []reg
	for _, x := range ws {
		p := d.parts[fakeTP{x.Topic, x.Partition}]
		if p == nil || p.code != 0 || p.hw > x.Above {
			for _, r := range regs {
				delete(r.p.watchers, r.w)
			}
			notify()
			return
		}
		w := &fakeWatch{above: x.Above, notify: notify}
		p.watchers[w] = struct{}{}
		regs = append(regs, reg{p, w})
	}
	d.watches.Add(int32(len(regs)))
	d.liveWatchs.Add(int32(len(regs)))
	context.AfterFunc(ctx, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, r := range regs {
			delete(r.p.watchers, r.w)
		}
		d.liveWatchs.Add(-int32(len(regs)))
	})
}

func (d *fakeData) ListOffset(_ context.Context, q ListOffsetQuery) (ListOffsetResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, code := d.partition(q.Topic, q.Partition, q.CurrentLeaderEpoch)
	if code != 0 {
		return ListOffsetResult{ErrorCode: code, Offset: -1, Timestamp: -1, LeaderEpoch: -1}, nil
	}
	res := ListOffsetResult{Offset: -1, Timestamp: -1, LeaderEpoch: -1}
	switch q.Timestamp {
	case ListLatest:
		res.Offset, res.LeaderEpoch = p.hw, p.epoch
	case ListEarliest:
		res.Offset, res.LeaderEpoch = p.logStart, p.epoch
	default:
		// Every record, by offset: the first at or after the timestamp,
		// or the (first) largest timestamp.
		best := int64(-1)
		for _, b := range p.batches {
			recs, err := record.Records(b, 64<<20)
			if err != nil {
				return res, fmt.Errorf("fake: stored batch: %w", err)
			}
			h, err := record.ParseHeader(b)
			if err != nil {
				return res, fmt.Errorf("fake: stored batch: %w", err)
			}
			for _, r := range recs {
				if q.Timestamp == ListMaxTimestamp {
					if r.Timestamp > best {
						best = r.Timestamp
						res.Offset, res.Timestamp, res.LeaderEpoch = r.Offset, r.Timestamp, h.LeaderEpoch
					}
				} else if r.Timestamp >= q.Timestamp {
					res.Offset, res.Timestamp, res.LeaderEpoch = r.Offset, r.Timestamp, h.LeaderEpoch
					return res, nil
				}
			}
		}
	}
	return res, nil
}

func (d *fakeData) EpochEndOffset(_ context.Context, q EpochQuery) (EpochEndResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, code := d.partition(q.Topic, q.Partition, q.CurrentLeaderEpoch)
	if code != 0 {
		return EpochEndResult{ErrorCode: code, EpochEndOffset: EpochEndOffset{LeaderEpoch: -1, EndOffset: -1}}, nil
	}
	res := EpochEndResult{EpochEndOffset: EpochEndOffset{LeaderEpoch: -1, EndOffset: -1}}
	for i, e := range p.epochStarts {
		if e.LeaderEpoch > q.LeaderEpoch {
			break
		}
		res.LeaderEpoch, res.EndOffset = e.LeaderEpoch, p.hw
		if i+1 < len(p.epochStarts) {
			res.EndOffset = p.epochStarts[i+1].EndOffset
		}
	}
	return res, nil
}

func (d *fakeData) InitProducerID(_ context.Context, _ ProducerIDQuery) (ProducerIDResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.nextPID++
	return ProducerIDResult{ProducerID: d.nextPID, ProducerEpoch: 0}, nil
}

// dataServer is a test server with a fake data backend.
type dataServer struct {
	*testServer
	data *fakeData
}

// startDataServer serves a fakeData holding topics (name -> partition
// count, leader epoch 3) with metadata naming one broker, node 1, at the
// server's address.
func startDataServer(t testing.TB, topics map[string]int, mod func(*Config)) *dataServer {
	t.Helper()
	d := newFakeData()
	for name, n := range topics {
		d.addTopic(name, n, 3)
	}
	ts := startServer(t, func(c *Config) {
		c.Data = d
		if mod != nil {
			mod(c)
		}
	})
	ts.backend.set(func(b *fakeBackend) { b.md = d.metadata(ts.addr) })
	return &dataServer{testServer: ts, data: d}
}
