// kafkagroups_test.go: the Kafka listener's consumer-group APIs against a
// real in-process host, over its local coordinators: a kgo consumer group
// (cooperative-sticky) of three members shares a 6-partition topic, reads
// every record exactly once with commits, and a restarted member resumes
// at the commit; kadm's DescribeGroups, ListGroups, FetchOffsets and
// DeleteGroup agree; kcat -G (librdkafka's balanced consumer) reads a topic
// as a group and commits; actorlog's native consumer and a kgo member share
// one group; a static member restarts into its old partitions; and the
// backend's routing (FindCoordinator's Kafka address, NOT_COORDINATOR).

package host

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/actors/consumer"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/kafka"
	"github.com/actorlog/actorlog/messages"
	"google.golang.org/protobuf/proto"
)

// groupMember is one kgo consumer group member and what it owns and read.
type groupMember struct {
	cl *kgo.Client

	mu    sync.Mutex
	owned map[int32]bool
}

// owns returns how many partitions m owns now.
func (m *groupMember) owns() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.owned)
}

// newGroupMember starts a kgo member of group consuming topic from the
// start, committing by hand (commitOwned), rebalances blocked while a poll
// is processed so a partition is never read by two members.
func newGroupMember(t *testing.T, addr, group, topic string, opts ...kgo.Opt) *groupMember {
	t.Helper()
	m := &groupMember{owned: map[int32]bool{}}
	track := func(add bool) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(ctx context.Context, cl *kgo.Client, ps map[string][]int32) {
			if !add { // commit what was read before giving partitions up
				if err := cl.CommitUncommittedOffsets(ctx); err != nil {
					t.Logf("commit on revoke: %v", err)
				}
			}
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range ps[topic] {
				if add {
					m.owned[p] = true
				} else {
					delete(m.owned, p)
				}
			}
		}
	}
	m.cl = kafkaClient(t, addr, append([]kgo.Opt{kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.FetchMaxWait(500 * time.Millisecond), kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.OnPartitionsAssigned(track(true)), kgo.OnPartitionsRevoked(track(false)), kgo.OnPartitionsLost(track(false))}, opts...)...)
	return m
}

// pollCommit polls m once (up to wait), records what it read into seen,
// commits it and lets rebalances through.
func (m *groupMember) pollCommit(t *testing.T, wait time.Duration, seen func(*kgo.Record)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	fs := m.cl.PollFetches(ctx)
	defer m.cl.AllowRebalance()
	fs.EachError(func(topic string, p int32, err error) {
		if ctx.Err() == nil {
			t.Logf("fetch %s-%d: %v", topic, p, err)
		}
	})
	fs.EachRecord(seen)
	cctx, ccancel := context30s()
	defer ccancel()
	if err := m.cl.CommitUncommittedOffsets(cctx); err != nil {
		t.Logf("commit: %v", err)
	}
}

func TestKafkaConsumerGroup(t *testing.T) {
	const topic, group, n = "kgroup", "kgo-group", 300
	_, addr := kafkaDataHost(t, topic, 6)
	members := []*groupMember{
		newGroupMember(t, addr, group, topic), newGroupMember(t, addr, group, topic), newGroupMember(t, addr, group, topic),
	}
	var mu sync.Mutex
	seen := map[string]int{}
	record := func(r *kgo.Record) {
		mu.Lock()
		defer mu.Unlock()
		seen[fmt.Sprintf("%d/%d", r.Partition, r.Offset)]++
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen)
	}
	// Poll every member until the group is balanced: two partitions each.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				m.pollCommit(t, 200*time.Millisecond, record)
			}
		}()
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		balanced := true
		for _, m := range members {
			balanced = balanced && m.owns() == 2
		}
		if balanced {
			break
		}
		if time.Now().After(deadline) {
			close(stop)
			wg.Wait()
			t.Fatalf("group not balanced in 60 s: owned %d, %d, %d", members[0].owns(), members[1].owns(), members[2].owns())
		}
		time.Sleep(100 * time.Millisecond)
	}
	produceAll(t, kafkaClient(t, addr), testRecords(topic, n))
	for deadline := time.Now().Add(30 * time.Second); count() < n && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	mu.Lock()
	for k, c := range seen {
		if c != 1 {
			t.Errorf("record %s read %d times", k, c)
		}
	}
	mu.Unlock()
	if got := count(); got != n {
		t.Fatalf("group read %d distinct records, want %d", got, n)
	}

	adm := kafkaAdmin(t, addr)
	ctx, cancel := context30s()
	defer cancel()
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatalf("describe groups: %v", err)
	}
	dg := described[group]
	if dg.Err != nil || dg.State != "Stable" || len(dg.Members) != 3 || dg.ProtocolType != "consumer" || dg.Protocol != "cooperative-sticky" {
		t.Errorf("described %+v: want Stable, 3 members, consumer/cooperative-sticky", dg)
	}
	for _, m := range dg.Members {
		ca, ok := m.Assigned.AsConsumer()
		if !ok || len(ca.Topics) != 1 || len(ca.Topics[0].Partitions) != 2 {
			t.Errorf("member %s assigned %+v: want 2 partitions of %s", m.MemberID, ca, topic)
		}
	}
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatalf("list groups: %v", err)
	}
	if lg, ok := listed[group]; !ok || lg.State != "Stable" || lg.ProtocolType != "consumer" {
		t.Errorf("listed %+v: want %s Stable consumer", listed, group)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("end offsets: %v", err)
	}
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets: %v", err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		c, ok := offs.Lookup(topic, o.Partition)
		if !ok || c.At != o.Offset {
			t.Errorf("%s-%d committed %+v, want %d", topic, o.Partition, c, o.Offset)
		}
	})
	if _, err := adm.DeleteGroup(ctx, group); err == nil {
		t.Errorf("deleting a group with members: want NON_EMPTY_GROUP")
	}

	// Restart: every member leaves; new records; one new member reads
	// exactly the new ones, from the commit.
	for _, m := range members {
		m.cl.Close()
	}
	more := testRecords(topic, 60)
	produceAll(t, kafkaClient(t, addr), more)
	again := newGroupMember(t, addr, group, topic)
	var resumed []*kgo.Record
	for deadline := time.Now().Add(30 * time.Second); len(resumed) < len(more) && time.Now().Before(deadline); {
		again.pollCommit(t, time.Second, func(r *kgo.Record) {
			if c, ok := offs.Lookup(topic, r.Partition); ok && r.Offset < c.At {
				t.Errorf("restarted member read %s-%d@%d, below the commit %d", topic, r.Partition, r.Offset, c.At)
			}
			resumed = append(resumed, r)
		})
	}
	if len(resumed) != len(more) {
		t.Fatalf("restarted member read %d records, want %d", len(resumed), len(more))
	}
	again.cl.Close()

	// The group is empty now: deleting it deletes its offsets.
	deadline = time.Now().Add(30 * time.Second)
	for {
		res, err := adm.DeleteGroup(ctx, group)
		if err == nil && res.Err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("delete group: %v %+v", err, res)
		}
		time.Sleep(200 * time.Millisecond)
	}
	offs, err = adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets after delete: %v", err)
	}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.At >= 0 {
			t.Errorf("after delete, %s-%d still committed at %d", o.Topic, o.Partition, o.At)
		}
	})
}

func TestKafkaKcatConsumerGroup(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat not installed")
	}
	const topic, group, n = "kcatgroup", "kcat-group", 500
	_, addr := kafkaDataHost(t, topic, 3)
	recs := make([]*kgo.Record, n)
	want := make([]string, n)
	for i := range recs {
		want[i] = "line " + strconv.Itoa(i)
		recs[i] = &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i)), Value: []byte(want[i])}
	}
	produceAll(t, kafkaClient(t, addr), recs)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// -G: librdkafka's balanced consumer (FindCoordinator, JoinGroup,
	// SyncGroup, Heartbeat, OffsetFetch, OffsetCommit, LeaveGroup); -e
	// exits once every assigned partition is read to its end.
	cons := exec.CommandContext(ctx, kcat, "-b", addr, "-G", group, "-o", "beginning", "-e", "-f", "%s\n",
		"-X", "auto.commit.interval.ms=100", topic)
	var stderr bytes.Buffer
	cons.Stderr = &stderr
	out, err := cons.Output()
	if err != nil {
		t.Fatalf("kcat -G: %v: %s", err, stderr.String())
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("kcat -G read %d lines, want exactly the %d produced (stderr %s)", len(got), n, stderr.String())
	}
	// Its commits reached the coordinator: every partition at its end.
	adm := kafkaAdmin(t, addr)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("end offsets: %v", err)
	}
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets: %v", err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset == 0 {
			t.Errorf("%s-%d is empty: want the keyed records spread", topic, o.Partition)
		}
		if c, ok := offs.Lookup(topic, o.Partition); !ok || c.At != o.Offset {
			t.Errorf("kcat committed %s-%d at %+v, want %d", topic, o.Partition, c, o.Offset)
		}
	})
}

func TestKafkaMixedGroup(t *testing.T) {
	const topic, group, n = "mixed", "mixed-group", 200
	h, addr := kafkaDataHost(t, topic, 4)
	var mu sync.Mutex
	seen := map[string]int{}
	record := func(p int32, off int64) {
		mu.Lock()
		defer mu.Unlock()
		seen[fmt.Sprintf("%d/%d", p, off)]++
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen)
	}

	// actorlog's own consumer, over the native protocol, spawned in the
	// host's actor system (a second remote in this process would race
	// with the host's etcd on gRPC's global logger, DESIGN §8).
	lc := &localCluster{root: h.system.Root, addr: h.system.Address(), log: clustertest.Logger(t)}
	var nativeOwned int
	props, err := consumer.Props(consumer.Config{
		Cluster: lc, GroupID: group, Topics: []string{topic}, Start: consumer.Earliest(),
		HeartbeatInterval: 500 * time.Millisecond, AutoCommitInterval: 200 * time.Millisecond,
		Handler: func(ms []consumer.Message) {
			for _, m := range ms {
				record(m.Partition, m.Offset)
			}
		},
		OnAssigned: func(a consumer.Assigned) {
			mu.Lock()
			defer mu.Unlock()
			nativeOwned = len(a.Owned)
		},
		OnRevoked: func(r consumer.Revoked) {
			mu.Lock()
			defer mu.Unlock()
			nativeOwned = len(r.Owned)
		},
	})
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	pid := h.system.Root.Spawn(props)
	t.Cleanup(func() {
		ctx, cancel := context30s()
		defer cancel()
		if err := consumer.CloseAndStop(ctx, h.system.Root, pid); err != nil {
			t.Errorf("close the native consumer: %v", err)
		}
	})

	// A kgo member of the same group.
	m := newGroupMember(t, addr, group, topic)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			m.pollCommit(t, 200*time.Millisecond, func(r *kgo.Record) { record(r.Partition, r.Offset) })
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-done
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		native := nativeOwned
		mu.Unlock()
		if native == 2 && m.owns() == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mixed group not balanced in 60 s: native owns %d, kgo %d", native, m.owns())
		}
		time.Sleep(100 * time.Millisecond)
	}

	adm := kafkaAdmin(t, addr)
	ctx, cancel := context30s()
	defer cancel()
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatalf("describe: %v", err)
	}
	if dg := described[group]; dg.State != "Stable" || len(dg.Members) != 2 || dg.ProtocolType != "consumer" {
		t.Errorf("described %+v: want Stable with 2 consumer members", dg)
	}

	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i)), Value: []byte("v")}
	}
	produceAll(t, kafkaClient(t, addr), recs)
	for deadline := time.Now().Add(30 * time.Second); count() < n && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	<-done
	mu.Lock()
	defer mu.Unlock()
	for k, c := range seen {
		if c != 1 {
			t.Errorf("record %s read %d times", k, c)
		}
	}
	if len(seen) != n {
		t.Fatalf("mixed group read %d distinct records, want %d", len(seen), n)
	}
}

// localCluster is the native consumer's consumer.Cluster over a host's own
// actor system: the same native requests a client.Client sends, to the
// local broker, replicas and coordinators.
type localCluster struct {
	root *actor.RootContext
	addr string
	log  *logrus.Entry
}

func (l *localCluster) Logger() *logrus.Entry                { return l.log }
func (l *localCluster) RequestTimeout() time.Duration        { return 5 * time.Second }
func (l *localCluster) HostUp(string) bool                   { return true }
func (l *localCluster) ForgetCoordinator(client.Coordinator) {}

func (l *localCluster) Request(ctx context.Context, pid *actor.PID, msg proto.Message) (any, error) {
	res, err := l.root.RequestFuture(pid, msg, l.RequestTimeout()).Result()
	if err != nil {
		return nil, fmt.Errorf("local cluster: %T to %s: %w", msg, pid, err)
	}
	return res, nil
}

func (l *localCluster) broker() *actor.PID { return actor.NewPID(l.addr, messages.BrokerActorID) }

func (l *localCluster) Metadata(ctx context.Context, topics ...string) (*messages.MetadataResponse, error) {
	res, err := l.Request(ctx, l.broker(), &messages.MetadataRequest{Topics: topics})
	if err != nil {
		return nil, err
	}
	md, ok := res.(*messages.MetadataResponse)
	if !ok {
		return nil, fmt.Errorf("local cluster: metadata answered %T", res)
	}
	return md, nil
}

func (l *localCluster) ListOffsets(ctx context.Context, p *messages.PartitionMetadata, topic string, ts int64) (*messages.ListOffsetsResponse, error) {
	pid, err := client.LeaderPID(p)
	if err != nil {
		return nil, fmt.Errorf("local cluster: %w", err)
	}
	res, err := l.Request(ctx, pid, &messages.ListOffsetsRequest{Topic: topic, Partition: p.Partition, Timestamp: ts, CurrentLeaderEpoch: p.LeaderEpoch})
	if err != nil {
		return nil, err
	}
	resp, ok := res.(*messages.ListOffsetsResponse)
	if !ok {
		return nil, fmt.Errorf("local cluster: list offsets answered %T", res)
	}
	return resp, resp.ErrorCode.Err(resp.ErrorMessage)
}

func (l *localCluster) FindCoordinator(ctx context.Context, group string) (client.Coordinator, error) {
	res, err := l.Request(ctx, l.broker(), &messages.FindCoordinatorRequest{GroupId: group})
	if err != nil {
		return client.Coordinator{}, err
	}
	fc, ok := res.(*messages.FindCoordinatorResponse)
	if !ok {
		return client.Coordinator{}, fmt.Errorf("local cluster: find coordinator answered %T", res)
	}
	if err := fc.Err(); err != nil {
		return client.Coordinator{}, fmt.Errorf("local cluster: find coordinator: %w", err)
	}
	return client.Coordinator{Group: group, HostID: fc.HostId, Address: fc.Address, ActorID: fc.ActorId, Partition: fc.Partition, LeaderEpoch: fc.LeaderEpoch}, nil
}

func (l *localCluster) CommitOffsetsRequest(ctx context.Context, req *messages.OffsetCommitRequest) (*messages.OffsetCommitResponse, error) {
	co, err := l.FindCoordinator(ctx, req.GroupId)
	if err != nil {
		return nil, err
	}
	res, err := l.Request(ctx, co.PID(), req)
	if err != nil {
		return nil, err
	}
	resp, ok := res.(*messages.OffsetCommitResponse)
	if !ok {
		return nil, fmt.Errorf("local cluster: commit answered %T", res)
	}
	return resp, nil
}

func (l *localCluster) FetchOffsets(ctx context.Context, group string, partitions ...*messages.TopicPartitions) ([]client.CommittedOffset, error) {
	co, err := l.FindCoordinator(ctx, group)
	if err != nil {
		return nil, err
	}
	res, err := l.Request(ctx, co.PID(), &messages.OffsetFetchRequest{GroupId: group, Topics: partitions})
	if err != nil {
		return nil, err
	}
	resp, ok := res.(*messages.OffsetFetchResponse)
	if !ok {
		return nil, fmt.Errorf("local cluster: fetch offsets answered %T", res)
	}
	if err := resp.Err(); err != nil {
		return nil, fmt.Errorf("local cluster: fetch offsets: %w", err)
	}
	var out []client.CommittedOffset
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out = append(out, client.CommittedOffset{Topic: t.Topic, Partition: p.Partition, Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: p.Metadata})
		}
	}
	return out, nil
}

func TestCoordinatorAnswer(t *testing.T) {
	hosts := []*messages.HostInfo{
		{HostId: 1, KafkaAddress: "a:9092"}, {HostId: 2}, {HostId: 3, KafkaAddress: "[::1]:9093"},
	}
	for _, tc := range []struct {
		id   int32
		want kafka.CoordinatorAnswer
	}{
		{1, kafka.CoordinatorAnswer{NodeID: 1, Host: "a", Port: 9092}},
		{3, kafka.CoordinatorAnswer{NodeID: 3, Host: "::1", Port: 9093}},
		{2, kafka.CoordinatorAnswer{ErrorCode: int16(messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE)}}, // no Kafka listener
		{4, kafka.CoordinatorAnswer{ErrorCode: int16(messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE)}}, // unknown host
	} {
		got := coordinatorAnswer(tc.id, hosts)
		got.ErrorMessage = ""
		if got != tc.want {
			t.Errorf("host %d: %+v, want %+v", tc.id, got, tc.want)
		}
	}
}

// TestKafkaGroupsRouting: FindCoordinator names this host's Kafka address;
// a group whose coordinator is not in this actor system is answered
// NOT_COORDINATOR without asking anyone.
func TestKafkaGroupsRouting(t *testing.T) {
	h, addr := kafkaDataHost(t, "routing", 1)
	meta := testKafkaData(t, h).meta
	ctx, cancel := context30s()
	defer cancel()
	local := newKafkaGroups(meta, h.system.Root, h.system.Address(), h.hostID.Load(), clustertest.Logger(t))
	var co kafka.CoordinatorAnswer
	deadline := time.Now().Add(20 * time.Second)
	for { // the first FindCoordinator creates the offsets topic
		var err error
		if co, err = local.FindCoordinator(ctx, "g"); err != nil {
			t.Fatalf("find coordinator: %v", err)
		}
		if co.ErrorCode == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := net.JoinHostPort(co.Host, strconv.Itoa(int(co.Port))); co.ErrorCode != 0 || got != addr || co.NodeID != h.hostID.Load() {
		t.Fatalf("coordinator %+v, want node %d at %s", co, h.hostID.Load(), addr)
	}
	var hb *messages.HeartbeatResponse
	var err error
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		hb, err = local.Heartbeat(ctx, &messages.HeartbeatRequest{GroupId: "g", GenerationId: 1, MemberId: "m"})
		// Until its coordinator runs and has loaded: NOT_COORDINATOR (a
		// dead letter), then COORDINATOR_LOAD_IN_PROGRESS; clients retry.
		code := hb.GetErrorCode()
		if err != nil || (code != messages.ErrorCode_ERROR_CODE_COORDINATOR_LOAD_IN_PROGRESS && code != messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || hb.GetErrorCode() != messages.ErrorCode_ERROR_CODE_UNKNOWN_MEMBER_ID {
		t.Errorf("local heartbeat of an unknown member: %v %v, want UNKNOWN_MEMBER_ID", hb, err)
	}
	elsewhere := newKafkaGroups(meta, h.system.Root, h.system.Address(), h.hostID.Load()+1, clustertest.Logger(t))
	hb, err = elsewhere.Heartbeat(ctx, &messages.HeartbeatRequest{GroupId: "g", GenerationId: 1, MemberId: "m"})
	if err != nil || hb.GetErrorCode() != messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR {
		t.Errorf("heartbeat for a group coordinated elsewhere: %v %v, want NOT_COORDINATOR", hb, err)
	}
	d, err := elsewhere.DescribeGroup(ctx, "g")
	if err != nil || d.GetErrorCode() != messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR || d.GetGroupId() != "g" {
		t.Errorf("describe elsewhere: %v %v, want NOT_COORDINATOR", d, err)
	}
}

// ownedSet returns a copy of what m owns.
func (m *groupMember) ownedSet() map[int32]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[int32]bool, len(m.owned))
	for p := range m.owned {
		out[p] = true
	}
	return out
}

// pollUntil polls every member (committing) until cond holds, failing
// after 60 s.
func pollUntil(t *testing.T, what string, members []*groupMember, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 60 s", what)
		}
		var wg sync.WaitGroup
		for _, m := range members {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m.pollCommit(t, 100*time.Millisecond, func(*kgo.Record) {})
			}()
		}
		wg.Wait()
	}
}

// TestKafkaStaticMembership: a static member (group.instance.id) that
// restarts within its session timeout gets its partitions back, and the
// other member keeps its own throughout (no rebalance).
func TestKafkaStaticMembership(t *testing.T) {
	const topic, group = "static", "static-group"
	_, addr := kafkaDataHost(t, topic, 4)
	session := kgo.SessionTimeout(20 * time.Second)
	a := newGroupMember(t, addr, group, topic, kgo.InstanceID("a"), session)
	b := newGroupMember(t, addr, group, topic, kgo.InstanceID("b"), session)
	pollUntil(t, "balanced", []*groupMember{a, b}, func() bool { return a.owns() == 2 && b.owns() == 2 })
	aOwned, bOwned := a.ownedSet(), b.ownedSet()
	a.cl.Close() // a static member does not leave the group
	a2 := newGroupMember(t, addr, group, topic, kgo.InstanceID("a"), session)
	pollUntil(t, "the restarted static member assigned", []*groupMember{a2, b}, func() bool { return a2.owns() == 2 })
	if got := a2.ownedSet(); !maps.Equal(got, aOwned) {
		t.Errorf("restarted static member owns %v, want its old %v", got, aOwned)
	}
	if got := b.ownedSet(); !maps.Equal(got, bOwned) {
		t.Errorf("the other member owns %v, had %v", got, bOwned)
	}
}
