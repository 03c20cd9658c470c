// senders_actor_test.go: the controller actor (on a MemStore) accepts its
// internal requests only from hosts (issue 11, items 7 and 8): a
// ControlledShutdownRequest, AlterPartitionRequest or
// CreateOffsetsTopicRequest from an address that is not the named (or any)
// host's is refused with CLUSTER_AUTHORIZATION_FAILED, carries no epochs
// or partition state, and changes nothing in the metadata — a standby
// refuses it too instead of forwarding it — while the genuine request
// still works.

package controller_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/actors/controller"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
)

// stranger is the address of a process that is no host (a client).
const stranger = "127.0.0.1:39999"

const authFailed = messages.ErrorCode_ERROR_CODE_CLUSTER_AUTHORIZATION_FAILED

// sendAs sends req to pid from address from ("": from sys itself) once
// and returns the answer.
func sendAs[T proto.Message](t *testing.T, sys *actor.ActorSystem, pid *actor.PID, from string, req proto.Message) T {
	t.Helper()
	var res any
	var err error
	if from == "" {
		res, err = sys.Root.RequestFuture(pid, req, 5*time.Second).Result()
	} else {
		res, err = clustertest.RequestAs(sys, pid, from, req, 5*time.Second)
	}
	if err != nil {
		t.Fatalf("%T from %q: %v", req, from, err)
	}
	r, ok := res.(T)
	if !ok {
		t.Fatalf("%T from %q: answer %T (%v)", req, from, res, res)
	}
	return r
}

// topicAt returns a topic and the revision it was stored at.
func topicAt(t *testing.T, s cluster.MetadataStore, name string) (*messages.TopicMetadata, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	topic, rev, err := s.GetTopic(ctx, name)
	if err != nil {
		t.Fatalf("get topic %q: %v", name, err)
	}
	return topic, rev
}

// wantUnchanged fails when the topic is not still exactly at rev.
func wantUnchanged(t *testing.T, s cluster.MetadataStore, what string, before *messages.TopicMetadata, rev int64) {
	t.Helper()
	now, nowRev := topicAt(t, s, before.Name)
	if nowRev != rev || !proto.Equal(now, before) {
		t.Fatalf("%s changed the topic (revision %d → %d):\n%v\nwas\n%v", what, rev, nowRev, now, before)
	}
}

// brokerEpoch returns the registered broker epoch of host id.
func brokerEpoch(t *testing.T, s cluster.MetadataStore, id int32) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hosts, err := s.ListHosts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		if h.HostId == id {
			return h.BrokerEpoch
		}
	}
	t.Fatalf("host %d is not registered", id)
	return 0
}

func TestControlledShutdownOnlyFromTheHost(t *testing.T) {
	s := newMem(t)
	register(t, s, 1)
	register(t, s, 2)
	sys, pid, _ := spawnController(t, s, 0)
	clustertest.CreateTopic(t, sys, pid, &messages.CreateTopicRequest{Name: "events", Partitions: 4, ReplicationFactor: 2})
	led := func(topic *messages.TopicMetadata, host int32) int {
		n := 0
		for _, p := range topic.Partitions {
			if p.Leader == host {
				n++
			}
		}
		return n
	}
	// The assignment spreads the leaders: host 2 leads some.
	if before, _ := topicAt(t, s, "events"); led(before, 2) == 0 {
		t.Fatalf("host 2 leads nothing: %v", before.Partitions)
	}
	epoch := brokerEpoch(t, s, 2)
	before, rev := topicAt(t, s, "events")

	// The forgeries: right host id and broker epoch (cluster describe
	// prints both), wrong sender.
	req := &messages.ControlledShutdownRequest{HostId: 2, BrokerEpoch: epoch, CorrelationId: 7}
	for _, from := range []string{stranger, hostAddr(1), ""} { // "": this host (1), not host 2
		resp := sendAs[*messages.ControlledShutdownResponse](t, sys, pid, from, req)
		if resp.ErrorCode != authFailed || resp.CorrelationId != 7 || resp.PartitionsRemaining != 0 || resp.ErrorMessage == "" {
			t.Fatalf("forged shutdown of host 2 from %q: %v, want %v with a message and nothing else", from, resp, authFailed)
		}
		if strings.Contains(resp.ErrorMessage, fmt.Sprint(epoch)) {
			t.Fatalf("refusal echoes the broker epoch: %q", resp.ErrorMessage)
		}
	}
	wantUnchanged(t, s, "forged controlled shutdowns", before, rev)

	// Host 2 itself: its leadership moves to host 1.
	resp := askAs[*messages.ControlledShutdownResponse](t, sys, pid, hostAddr(2), req)
	if resp.PartitionsRemaining != 0 {
		t.Fatalf("genuine shutdown: %v", resp)
	}
	if after, _ := topicAt(t, s, "events"); led(after, 2) != 0 {
		t.Fatalf("host 2 still leads after its controlled shutdown: %v", after.Partitions)
	}
}

func TestAlterPartitionOnlyFromTheLeader(t *testing.T) {
	s := newMem(t)
	register(t, s, 1)
	register(t, s, 2)
	sys, pid, _ := spawnController(t, s, 0)
	clustertest.CreateTopic(t, sys, pid, &messages.CreateTopicRequest{Name: "events", Partitions: 2, ReplicationFactor: 2})
	before, rev := topicAt(t, s, "events")
	// A partition led by host 2, so the controller's own host is not the
	// leader: a local sender must not pass either.
	var p *messages.PartitionState
	for _, q := range before.Partitions {
		if q.Leader == 2 {
			p = q
		}
	}
	if p == nil {
		t.Fatalf("no partition led by host 2: %v", before.Partitions)
	}
	follower := p.Isr[0]
	if follower == p.Leader {
		follower = p.Isr[1]
	}
	shrink := &messages.AlterPartitionRequest{Topic: "events", TopicId: before.TopicId, Partition: p.Partition, LeaderId: p.Leader,
		LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewIsr: []int32{p.Leader}, CorrelationId: 9}
	wrongEpochs := proto.Clone(shrink).(*messages.AlterPartitionRequest)
	wrongEpochs.LeaderEpoch, wrongEpochs.PartitionEpoch = 99, 99

	for _, c := range []struct {
		from string
		req  *messages.AlterPartitionRequest
	}{
		{stranger, shrink},
		{hostAddr(follower), shrink}, // a host, but not the leader
		{"", shrink},                 // the controller's host (1), not the leader
		{stranger, wrongEpochs},      // probing for the epochs gets nothing
	} {
		resp := sendAs[*messages.AlterPartitionResponse](t, sys, pid, c.from, c.req)
		if resp.ErrorCode != authFailed || resp.Partition != nil || resp.CorrelationId != 9 {
			t.Fatalf("forged ISR change from %q: %v, want %v and no partition state", c.from, resp, authFailed)
		}
		if strings.Contains(resp.ErrorMessage, "epoch") {
			t.Fatalf("refusal mentions epochs: %q", resp.ErrorMessage)
		}
	}
	wantUnchanged(t, s, "forged ISR changes", before, rev)

	// The leader's host with stale epochs: refused by the partition check,
	// still without the partition state.
	if resp := sendAs[*messages.AlterPartitionResponse](t, sys, pid, hostAddr(p.Leader), wrongEpochs); resp.ErrorCode != messages.ErrorCode_ERROR_CODE_FENCED_LEADER_EPOCH || resp.Partition != nil {
		t.Fatalf("stale proposal from the leader: %v, want FENCED_LEADER_EPOCH and no partition state", resp)
	}
	// The leader's genuine proposal is committed.
	resp := askAs[*messages.AlterPartitionResponse](t, sys, pid, hostAddr(p.Leader), shrink)
	if got := resp.Partition; got == nil || len(got.Isr) != 1 || got.Isr[0] != p.Leader || got.PartitionEpoch != p.PartitionEpoch+1 {
		t.Fatalf("genuine ISR change: %v", resp)
	}
	if now, _ := topicAt(t, s, "events"); !proto.Equal(now.Partitions[p.Partition], resp.Partition) {
		t.Fatalf("stored %v, answered %v", now.Partitions[p.Partition], resp.Partition)
	}
}

func TestCreateOffsetsTopicOnlyFromHosts(t *testing.T) {
	s := newMem(t)
	register(t, s, 1)
	register(t, s, 2)
	sys, pid, _ := spawnController(t, s, 0)
	clustertest.CreateTopic(t, sys, pid, &messages.CreateTopicRequest{Name: "events", Partitions: 1, ReplicationFactor: 1}) // elected
	req := &messages.CreateOffsetsTopicRequest{Partitions: 3, CorrelationId: 4}
	resp := sendAs[*messages.AdminResponse](t, sys, pid, stranger, req)
	if resp.ErrorCode != authFailed || resp.Topic != nil || resp.CorrelationId != 4 {
		t.Fatalf("offsets topic asked by a stranger: %v, want %v", resp, authFailed)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, _, err := s.GetTopic(ctx, messages.OffsetsTopic); !errors.Is(err, cluster.ErrUnknownTopic) {
		t.Fatalf("after a stranger's request the offsets topic: %v, want it not to exist", err)
	}
	// Another host (host 2, through this controller) may ask.
	if resp := askAs[*messages.AdminResponse](t, sys, pid, hostAddr(2), req); resp.Topic.GetName() != messages.OffsetsTopic {
		t.Fatalf("offsets topic asked by host 2: %v", resp)
	}
}

// A standby controller refuses a forged request itself: forwarding to
// the elected controller (from this host's address) is no way around the
// check.
func TestStandbyRefusesBeforeForwarding(t *testing.T) {
	s := newMem(t)
	register(t, s, 1)
	register(t, s, 2)
	// Each controller in its own actor system, named as hosts name it (so
	// the standby takes the elected one's candidacy for its own, not for
	// a crashed incarnation's).
	spawn := func(id int32) (*actor.ActorSystem, *actor.PID) {
		sys := actor.NewActorSystem()
		clustertest.RouteFakeSenders(sys)
		pid, err := sys.Root.SpawnNamed(controller.Props(controller.Config{HostID: id, Store: s, RequestTimeout: 5 * time.Second,
			Logger: clustertest.Logger(t)}), messages.ControllerActorID)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := sys.Root.StopFuture(pid).Wait(); err != nil {
				t.Errorf("stop controller of host %d: %v", id, err)
			}
			sys.Shutdown()
		})
		return sys, pid
	}
	// The elected controller (host 1), then a standby (host 2).
	sysA, pidA := spawn(1)
	clustertest.CreateTopic(t, sysA, pidA, &messages.CreateTopicRequest{Name: "events", Partitions: 1, ReplicationFactor: 2})
	before, rev := topicAt(t, s, "events")
	sysB, pidB := spawn(2)
	// It is a standby: host 2's own request is forwarded (and, the
	// elected controller being in another actor system here, not
	// delivered: NOT_CONTROLLER).
	own := &messages.ControlledShutdownRequest{HostId: 2, BrokerEpoch: brokerEpoch(t, s, 2)}
	if r := sendAs[*messages.ControlledShutdownResponse](t, sysB, pidB, "", own); r.ErrorCode != messages.ErrorCode_ERROR_CODE_NOT_CONTROLLER {
		t.Fatalf("host 2's own request to its standby controller: %v, want NOT_CONTROLLER (forwarded)", r)
	}
	p := before.Partitions[0]
	for _, req := range []proto.Message{
		&messages.ControlledShutdownRequest{HostId: 1, BrokerEpoch: brokerEpoch(t, s, 1)},
		&messages.AlterPartitionRequest{Topic: "events", Partition: 0, LeaderId: p.Leader, LeaderEpoch: p.LeaderEpoch,
			PartitionEpoch: p.PartitionEpoch, NewIsr: []int32{p.Leader}},
		&messages.CreateOffsetsTopicRequest{Partitions: 1},
	} {
		res, err := clustertest.RequestAs(sysB, pidB, stranger, req, 5*time.Second)
		if err != nil {
			t.Fatalf("%T to the standby: %v", req, err)
		}
		if r, ok := res.(interface{ GetErrorCode() messages.ErrorCode }); !ok || r.GetErrorCode() != authFailed {
			t.Fatalf("forged %T to the standby: %v, want %v", req, res, authFailed)
		}
	}
	wantUnchanged(t, s, "forged requests to the standby", before, rev)
}
