// fake_test.go holds the fakes the consumer's actor tests run against, in
// one actor system without a remote: fakeCluster (the Cluster seam:
// metadata, coordinator lookup, offsets, commits), fakeLeader (the leader
// replicas of a topic's partitions: long-poll fetches and ListOffsets over
// in-memory logs, which may hold an undecodable batch) and fakeCoordinator (a group coordinator driving the
// pure membership core, actors/group, with the wall clock, pushing
// RebalanceStarted hints to the member actors its requests name, and an
// offset store that checks commits with it). Faults are injected per request
// type.

package consumer

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/actors/group"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage/record"
)

// testLogger is quiet unless -v asks for debug logs via ACTORLOG_TEST_LOG.
func testLogger(t testing.TB) *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	if testing.Verbose() && testLogEnabled {
		l.SetOutput(testWriter{t})
		l.SetLevel(logrus.DebugLevel)
	}
	return logrus.NewEntry(l).WithField("test", t.Name())
}

var testLogEnabled = false

type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(string(b))
	return len(b), nil
}

// newSystem returns an actor system with protoactor's own logging off,
// shut down at cleanup.
func newSystem(t testing.TB) *actor.ActorSystem {
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	t.Cleanup(sys.Shutdown)
	return sys
}

// fakeCluster implements Cluster over fake leaders and a fake coordinator
// in sys.
type fakeCluster struct {
	t      testing.TB
	sys    *actor.ActorSystem
	logger *logrus.Entry

	mu      sync.Mutex
	leaders map[string]*actor.PID // topic → its fake leader
	counts  map[string]int32
	coord   *actor.PID
	finds   int
	forgets int
	// onFetch, when set before addTopic, sees every fetch request its
	// leaders get (from their goroutine).
	onFetch func(*messages.FetchRequest)
}

func newFakeCluster(t testing.TB) *fakeCluster {
	sys := newSystem(t)
	return &fakeCluster{t: t, sys: sys, logger: testLogger(t), leaders: map[string]*actor.PID{}, counts: map[string]int32{}}
}

// addTopic creates a topic of n partitions led by a new fake leader.
func (c *fakeCluster) addTopic(name string, n int32) *actor.PID {
	pid := c.sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &fakeLeader{topic: name, logs: make([][]string, n), epoch: 1, seen: c.onFetch}
	}))
	c.mu.Lock()
	defer c.mu.Unlock()
	c.leaders[name] = pid
	c.counts[name] = n
	return pid
}

// produce appends values to a partition of topic.
func (c *fakeCluster) produce(topic string, partition int32, values ...string) {
	c.mu.Lock()
	pid := c.leaders[topic]
	c.mu.Unlock()
	if _, err := c.sys.Root.RequestFuture(pid, appendValues{partition: partition, values: values}, 5*time.Second).Result(); err != nil {
		c.t.Fatalf("produce to %s-%d: %v", topic, partition, err)
	}
}

// produceAll appends n values "topic/p/i" to every partition of topic.
func (c *fakeCluster) produceAll(topic string, from, n int) {
	c.mu.Lock()
	parts := c.counts[topic]
	c.mu.Unlock()
	for p := range parts {
		var vs []string
		for i := from; i < from+n; i++ {
			vs = append(vs, topic+"/"+strconv.Itoa(int(p))+"/"+strconv.Itoa(i))
		}
		c.produce(topic, p, vs...)
	}
}

// startCoordinator spawns a fake coordinator for every group.
func (c *fakeCluster) startCoordinator(faults *coordFaults) *fakeCoordinator {
	if faults == nil {
		faults = &coordFaults{}
	}
	fc := &fakeCoordinator{t: c.t, groups: map[string]*group.Group{}, actors: map[string]*actor.PID{}, offsets: map[string]map[TopicPartition]int64{}, faults: faults, cluster: c}
	pid := c.sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return fc }))
	c.mu.Lock()
	c.coord = pid
	c.mu.Unlock()
	fc.pid = pid
	return fc
}

func (c *fakeCluster) Logger() *logrus.Entry         { return c.logger }
func (c *fakeCluster) RequestTimeout() time.Duration { return 2 * time.Second }
func (c *fakeCluster) HostUp(string) bool            { return true }

func (c *fakeCluster) Metadata(_ context.Context, topics ...string) (*messages.MetadataResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(topics) == 0 {
		topics = slices.Sorted(maps.Keys(c.leaders))
	}
	resp := &messages.MetadataResponse{}
	for _, name := range topics {
		pid, ok := c.leaders[name]
		if !ok {
			resp.Topics = append(resp.Topics, &messages.TopicMetadataResponse{Name: name, ErrorCode: messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION})
			continue
		}
		tm := &messages.TopicMetadataResponse{Name: name}
		for p := range c.counts[name] {
			tm.Partitions = append(tm.Partitions, &messages.PartitionMetadata{Partition: p, Leader: 1, LeaderEpoch: 1, LeaderAddress: pid.Address, ReplicaActorId: pid.Id})
		}
		resp.Topics = append(resp.Topics, tm)
	}
	return resp, nil
}

func (c *fakeCluster) Request(ctx context.Context, pid *actor.PID, msg proto.Message) (any, error) {
	timeout := c.RequestTimeout()
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	return c.sys.Root.RequestFuture(pid, msg, timeout).Result()
}

func (c *fakeCluster) ListOffsets(ctx context.Context, p *messages.PartitionMetadata, topic string, ts int64) (*messages.ListOffsetsResponse, error) {
	res, err := c.Request(ctx, actor.NewPID(p.LeaderAddress, p.ReplicaActorId), &messages.ListOffsetsRequest{Topic: topic, Partition: p.Partition, Timestamp: ts})
	if err != nil {
		return nil, err
	}
	return res.(*messages.ListOffsetsResponse), nil
}

func (c *fakeCluster) FindCoordinator(context.Context, string) (client.Coordinator, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.finds++
	if c.coord == nil {
		return client.Coordinator{}, messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE.Err("fake: no coordinator")
	}
	return client.Coordinator{Address: c.coord.Address, ActorID: c.coord.Id}, nil
}

func (c *fakeCluster) ForgetCoordinator(client.Coordinator) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgets++
}

func (c *fakeCluster) counters() (finds, forgets int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.finds, c.forgets
}

func (c *fakeCluster) coordinator() *actor.PID {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.coord
}

func (c *fakeCluster) CommitOffsetsRequest(ctx context.Context, req *messages.OffsetCommitRequest) (*messages.OffsetCommitResponse, error) {
	res, err := c.Request(ctx, c.coordinator(), req)
	if err != nil {
		return nil, err
	}
	resp := res.(*messages.OffsetCommitResponse)
	if err := resp.Err(); err != nil {
		return nil, fmt.Errorf("fake: commit: %w", err)
	}
	return resp, nil
}

func (c *fakeCluster) FetchOffsets(ctx context.Context, grp string, partitions ...*messages.TopicPartitions) ([]client.CommittedOffset, error) {
	res, err := c.Request(ctx, c.coordinator(), &messages.OffsetFetchRequest{GroupId: grp, Topics: partitions})
	if err != nil {
		return nil, err
	}
	var out []client.CommittedOffset
	for _, t := range res.(*messages.OffsetFetchResponse).Topics {
		for _, p := range t.Partitions {
			out = append(out, client.CommittedOffset{Topic: t.Topic, Partition: p.Partition, Offset: p.Offset, LeaderEpoch: p.LeaderEpoch})
		}
	}
	return out, nil
}

// appendValues asks a fakeLeader to append values to a partition.
type appendValues struct {
	partition int32
	values    []string
}

// heldFetch is a fetch waiting for records.
type heldFetch struct {
	sender *actor.PID
	req    *messages.FetchRequest
}

type releaseFetch struct{ h *heldFetch }

// fakeLeader leads every partition of one topic: one log of values each.
type fakeLeader struct {
	topic string
	logs  [][]string
	epoch int32
	held  []*heldFetch
	seen  func(*messages.FetchRequest) // nil: none
}

func (l *fakeLeader) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case appendValues:
		l.logs[msg.partition] = append(l.logs[msg.partition], msg.values...)
		held := l.held
		l.held = nil
		for _, h := range held {
			if h.req.Partition == msg.partition {
				l.answer(ctx, h, true)
			} else {
				l.held = append(l.held, h)
			}
		}
		ctx.Respond(true)
	case *messages.FetchRequest:
		if l.seen != nil {
			l.seen(msg)
		}
		h := &heldFetch{sender: ctx.Sender(), req: msg}
		l.answer(ctx, h, false)
	case releaseFetch:
		if i := slices.Index(l.held, msg.h); i >= 0 {
			l.held = slices.Delete(l.held, i, i+1)
			l.answer(ctx, msg.h, true)
		}
	case *messages.ListOffsetsRequest:
		off := int64(0)
		if msg.Timestamp == -1 {
			off = int64(len(l.logs[msg.Partition]))
		}
		ctx.Respond(&messages.ListOffsetsResponse{CorrelationId: msg.CorrelationId, Topic: msg.Topic, Partition: msg.Partition, Offset: off})
	}
}

// answer answers a fetch with the records from its offset, or holds it
// until records come or its max wait passes (unless final).
func (l *fakeLeader) answer(ctx actor.Context, h *heldFetch, final bool) {
	req := h.req
	log := l.logs[req.Partition]
	resp := &messages.FetchResponse{CorrelationId: req.CorrelationId, Topic: req.Topic, Partition: req.Partition, HighWatermark: int64(len(log)), LeaderEpoch: l.epoch}
	switch {
	case req.FetchOffset > int64(len(log)):
		resp.ErrorCode = messages.ErrorCode_ERROR_CODE_OFFSET_OUT_OF_RANGE
	case req.FetchOffset < int64(len(log)):
		end := min(len(log), int(req.FetchOffset)+50)
		bad := slices.Index(log[req.FetchOffset:end], corruptValue)
		if bad >= 0 {
			end = int(req.FetchOffset) + bad
		}
		if end > int(req.FetchOffset) {
			var recs []record.Record
			for _, v := range log[req.FetchOffset:end] {
				recs = append(recs, record.Record{Value: []byte(v)})
			}
			batch, err := record.BuildBatch(record.CompressionNone, recs...)
			if err != nil {
				panic(err)
			}
			record.SetBaseOffset(batch, req.FetchOffset)
			record.SetLeaderEpoch(batch, l.epoch)
			resp.Records = batch
		}
		if bad >= 0 {
			resp.Records = append(resp.Records, undecodableBatch(int64(end), l.epoch)...)
		}
	case !final:
		l.held = append(l.held, h)
		self, root := ctx.Self(), ctx.ActorSystem().Root
		time.AfterFunc(time.Duration(req.MaxWaitMs)*time.Millisecond, func() { root.Send(self, releaseFetch{h}) })
		return
	}
	ctx.Send(h.sender, resp)
}

// corruptValue, appended to a fake leader's log, is served as a batch of
// one record that no reader can decode (undecodableBatch).
const corruptValue = "\x00undecodable"

// undecodableBatch is a zstd batch of one record at offset whose
// compressed body is garbage under a valid CRC: what a producer could
// append before leaders checked compressed batches.
func undecodableBatch(offset int64, epoch int32) []byte {
	good, err := record.BuildBatch(record.CompressionZstd, record.Record{Value: []byte("lost")})
	if err != nil {
		panic(err)
	}
	b := append(good[:record.HeaderSize:record.HeaderSize], "this is not a zstd frame, whatever its CRC says"...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-record.LogOverhead))
	binary.BigEndian.PutUint32(b[17:], record.Checksum(b))
	record.SetBaseOffset(b, offset)
	record.SetLeaderEpoch(b, epoch)
	return b
}

// coordFaults makes a fakeCoordinator refuse requests: each count is how
// many of the next requests of that kind get the code.
type coordFaults struct {
	mu         sync.Mutex
	heartbeats []messages.ErrorCode
	commits    []messages.ErrorCode
	// dropJoins: joins are not answered at all while set.
	dropJoins bool
	// noHints: no RebalanceStarted hints are sent while set.
	noHints bool
}

// set makes the next requests of queue q get codes.
func (f *coordFaults) set(q *[]messages.ErrorCode, codes ...messages.ErrorCode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	*q = codes
}

func (f *coordFaults) next(q *[]messages.ErrorCode) messages.ErrorCode {
	if f == nil {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(*q) == 0 {
		return 0
	}
	code := (*q)[0]
	*q = (*q)[1:]
	return code
}

// commitRecord is one commit the fake coordinator accepted.
type commitRecord struct {
	member     string
	generation int32
	offsets    map[TopicPartition]int64
}

// fakeCoordinator coordinates every group with the membership core.
type fakeCoordinator struct {
	t       testing.TB
	pid     *actor.PID
	cluster *fakeCluster
	faults  *coordFaults

	groups map[string]*group.Group
	timer  *time.Timer
	// actors maps member ids to the member actors their requests named.
	actors map[string]*actor.PID

	mu      sync.Mutex
	offsets map[string]map[TopicPartition]int64
	commits []commitRecord
	events  []string // "join <member>", "leave <member>", "hint <member> <generation>"
}

type (
	coordTick  struct{}
	groupState struct{ group string }
)

// groupView is what a test sees of a group.
type groupView struct {
	State      group.State
	Generation int32
	Members    []string
}

func (fc *fakeCoordinator) group(ctx actor.Context, id string) *group.Group {
	g := fc.groups[id]
	if g == nil {
		cfg := group.DefaultConfig()
		cfg.InitialRebalanceDelay = 0
		cfg.MinSessionTimeout = 100 * time.Millisecond
		var err error
		if g, err = group.NewGroup(id, cfg); err != nil {
			fc.t.Errorf("new group: %v", err)
		}
		fc.groups[id] = g
	}
	return g
}

// noteActor remembers the member actor a request names.
func (fc *fakeCoordinator) noteActor(member string, a *messages.MemberActor) {
	if member != "" && a != nil {
		fc.actors[member] = actor.NewPID(a.Address, a.Id)
	}
}

// apply sends the replies and the rebalance hints of g, and re-arms the
// timer.
func (fc *fakeCoordinator) apply(ctx actor.Context, g *group.Group, eff group.Effects) {
	for _, r := range eff.Replies {
		ctx.Send(r.Token.(*actor.PID), r.Msg)
	}
	fc.faults.mu.Lock()
	noHints := fc.faults.noHints
	fc.faults.mu.Unlock()
	for _, id := range eff.RebalanceStarted {
		if pid := fc.actors[id]; pid != nil && !noHints {
			ctx.Send(pid, &messages.RebalanceStarted{GroupId: g.ID(), GenerationId: g.Generation(), MemberId: id})
			fc.note(fmt.Sprintf("hint %s %d", id, g.Generation()))
		}
	}
	if fc.timer != nil {
		fc.timer.Stop()
	}
	if !eff.Wake.IsZero() {
		self, root := ctx.Self(), ctx.ActorSystem().Root
		fc.timer = time.AfterFunc(max(time.Until(eff.Wake), 0), func() { root.Send(self, coordTick{}) })
	}
}

func (fc *fakeCoordinator) Receive(ctx actor.Context) {
	now := time.Now()
	switch msg := ctx.Message().(type) {
	case *messages.JoinGroupRequest:
		if fc.faults != nil {
			fc.faults.mu.Lock()
			drop := fc.faults.dropJoins
			fc.faults.mu.Unlock()
			if drop {
				return
			}
		}
		g := fc.group(ctx, msg.GroupId)
		fc.noteActor(msg.MemberId, msg.MemberActor)
		fc.apply(ctx, g, g.Join(now, ctx.Sender(), ctx.Sender().Address, msg))
		fc.note(fmt.Sprintf("join %s", msg.MemberId))
	case *messages.SyncGroupRequest:
		g := fc.group(ctx, msg.GroupId)
		fc.noteActor(msg.MemberId, msg.MemberActor)
		fc.apply(ctx, g, g.Sync(now, ctx.Sender(), msg))
	case *messages.HeartbeatRequest:
		if code := fc.faults.next(&fc.faults.heartbeats); code != 0 {
			ctx.Respond(&messages.HeartbeatResponse{CorrelationId: msg.CorrelationId, ErrorCode: code, ErrorMessage: "fake fault"})
			return
		}
		g := fc.group(ctx, msg.GroupId)
		fc.noteActor(msg.MemberId, msg.MemberActor)
		resp, eff := g.Heartbeat(now, msg)
		ctx.Respond(resp)
		fc.apply(ctx, g, eff)
	case *messages.LeaveGroupRequest:
		g := fc.group(ctx, msg.GroupId)
		resp, eff := g.Leave(now, msg)
		ctx.Respond(resp)
		fc.apply(ctx, g, eff)
		for _, m := range msg.Members {
			fc.note("leave " + m.MemberId)
		}
	case *messages.OffsetCommitRequest:
		fc.onCommit(ctx, now, msg)
	case *messages.OffsetFetchRequest:
		fc.mu.Lock()
		resp := &messages.OffsetFetchResponse{CorrelationId: msg.CorrelationId}
		for _, t := range msg.Topics {
			ft := &messages.OffsetFetchTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				off, ok := fc.offsets[msg.GroupId][TopicPartition{t.Topic, p}]
				if !ok {
					off = -1
				}
				ft.Partitions = append(ft.Partitions, &messages.OffsetFetchPartition{Partition: p, Offset: off, LeaderEpoch: -1})
			}
			resp.Topics = append(resp.Topics, ft)
		}
		fc.mu.Unlock()
		ctx.Respond(resp)
	case coordTick:
		for _, g := range fc.groups {
			fc.apply(ctx, g, g.Tick(now))
		}
	case groupState:
		g := fc.group(ctx, msg.group)
		ctx.Respond(groupView{State: g.State(), Generation: g.Generation(), Members: g.Members()})
	}
}

func (fc *fakeCoordinator) onCommit(ctx actor.Context, now time.Time, msg *messages.OffsetCommitRequest) {
	if code := fc.faults.next(&fc.faults.commits); code != 0 {
		ctx.Respond(&messages.OffsetCommitResponse{CorrelationId: msg.CorrelationId, ErrorCode: code, ErrorMessage: "fake fault"})
		return
	}
	g := fc.group(ctx, msg.GroupId)
	if code, text := g.CanCommit(now, msg.MemberId, msg.GroupInstanceId, msg.GenerationId); code != 0 {
		ctx.Respond(&messages.OffsetCommitResponse{CorrelationId: msg.CorrelationId, ErrorCode: code, ErrorMessage: text})
		return
	}
	fc.mu.Lock()
	if fc.offsets[msg.GroupId] == nil {
		fc.offsets[msg.GroupId] = map[TopicPartition]int64{}
	}
	rec := commitRecord{member: msg.MemberId, generation: msg.GenerationId, offsets: map[TopicPartition]int64{}}
	resp := &messages.OffsetCommitResponse{CorrelationId: msg.CorrelationId}
	for _, t := range msg.Topics {
		for _, p := range t.Partitions {
			tp := TopicPartition{t.Topic, p.Partition}
			fc.offsets[msg.GroupId][tp] = p.Offset
			rec.offsets[tp] = p.Offset
			resp.Results = append(resp.Results, &messages.PartitionResult{Topic: t.Topic, Partition: p.Partition})
		}
	}
	fc.commits = append(fc.commits, rec)
	fc.mu.Unlock()
	ctx.Respond(resp)
}

func (fc *fakeCoordinator) note(event string) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.events = append(fc.events, event)
}

// committed returns the group's committed offset of tp, -1 if none.
func (fc *fakeCoordinator) committed(grp string, tp TopicPartition) int64 {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if off, ok := fc.offsets[grp][tp]; ok {
		return off
	}
	return -1
}

// setCommitted sets a group's committed offset directly.
func (fc *fakeCoordinator) setCommitted(grp string, tp TopicPartition, off int64) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if fc.offsets[grp] == nil {
		fc.offsets[grp] = map[TopicPartition]int64{}
	}
	fc.offsets[grp][tp] = off
}

// eventLog returns the events noted so far.
func (fc *fakeCoordinator) eventLog() []string {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return slices.Clone(fc.events)
}

// view returns a group's state.
func (fc *fakeCoordinator) view(t testing.TB, grp string) groupView {
	t.Helper()
	res, err := fc.cluster.sys.Root.RequestFuture(fc.pid, groupState{grp}, 5*time.Second).Result()
	if err != nil {
		t.Fatalf("group state: %v", err)
	}
	return res.(groupView)
}
