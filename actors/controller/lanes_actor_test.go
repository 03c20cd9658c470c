// lanes_actor_test.go: the controller actor on a MemStore whose calls the
// test holds (MemStore.SetInterceptor) — etcd work runs off the mailbox:
// an ISR change is answered while a CreateTopic hangs; two writes to one
// topic never run at once; jobs queued when the controller is deposed are
// refused with NOT_CONTROLLER.

package controller_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/internal/poll"
	"github.com/actorlog/actorlog/messages"
)

// gate holds the MemStore calls named op until opened (or their context
// ends), and counts the calls it holds.
type gate struct {
	op      string
	held    atomic.Int32
	release chan struct{}
}

func newGate(s *fixture, op string) *gate {
	g := &gate{op: op, release: make(chan struct{})}
	s.mem.SetInterceptor(func(ctx context.Context, called string) error {
		if called != g.op {
			return nil
		}
		g.held.Add(1)
		select {
		case <-g.release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	return g
}

// waitHeld waits until n calls are held.
func (g *gate) waitHeld(t *testing.T, n int32) {
	t.Helper()
	poll.Until(t, 5*time.Second, func() error {
		if got := g.held.Load(); got < n {
			return fmt.Errorf("%d %s calls held, want %d", got, g.op, n)
		}
		return nil
	})
}

func (g *gate) open() { close(g.release) }

// async sends req to pid and returns the channel its answer (or error)
// comes on. Requests sent by async from one goroutine arrive in order.
func async(sys *actor.ActorSystem, pid *actor.PID, req proto.Message) <-chan any {
	ch := make(chan any, 1)
	f := sys.Root.RequestFuture(pid, req, 10*time.Second)
	go func() {
		res, err := f.Result()
		if err != nil {
			ch <- err
			return
		}
		ch <- res
	}()
	return ch
}

// asyncAs is async with req sent from address from.
func asyncAs(sys *actor.ActorSystem, pid *actor.PID, from string, req proto.Message) <-chan any {
	ch := make(chan any, 1)
	go func() {
		res, err := clustertest.RequestAs(sys, pid, from, req, 10*time.Second)
		if err != nil {
			ch <- err
			return
		}
		ch <- res
	}()
	return ch
}

// answer waits for an async answer of type T without a top-level error.
func answer[T response](t *testing.T, ch <-chan any) T {
	t.Helper()
	select {
	case res := <-ch:
		r, ok := res.(T)
		if !ok {
			t.Fatalf("answer %T (%v)", res, res)
		}
		if r.GetErrorCode() != 0 {
			t.Fatalf("answer %v", r.GetErrorCode().Err(r.GetErrorMessage()))
		}
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no answer within 10 s")
	}
	panic("unreachable")
}

// noAnswer checks that nothing comes on ch for d.
func noAnswer(t *testing.T, ch <-chan any, d time.Duration) {
	t.Helper()
	poll.Never(t, d, func() error {
		select {
		case res := <-ch:
			return fmt.Errorf("answered while it should wait: %v", res)
		default:
			return nil
		}
	})
}

// shrink sends, from p's leader's host, the ISR change that leaves only
// p's leader in its ISR; it returns the channel of the answer.
func shrink(sys *actor.ActorSystem, pid *actor.PID, topic string, p *messages.PartitionState) <-chan any {
	return asyncAs(sys, pid, hostAddr(p.Leader), &messages.AlterPartitionRequest{Topic: topic, Partition: p.Partition, LeaderId: p.Leader,
		LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewIsr: []int32{p.Leader}})
}

func TestAlterPartitionDoesNotWaitForAdminWork(t *testing.T) {
	s := newMem(t)
	register(t, s, 1)
	register(t, s, 2)
	sys, pid, _ := spawnController(t, s, 0)
	clustertest.CreateTopic(t, sys, pid, &messages.CreateTopicRequest{Name: "events", Partitions: 1, ReplicationFactor: 2})
	p := getTopic(t, s, "events").Partitions[0]

	g := newGate(s, "CreateTopic")
	created := async(sys, pid, &messages.CreateTopicRequest{Name: "slow", Partitions: 1, ReplicationFactor: 1})
	g.waitHeld(t, 1)
	queued := async(sys, pid, &messages.CreateTopicRequest{Name: "queued", Partitions: 1, ReplicationFactor: 1})
	// The ISR change is committed while the CreateTopic hangs in the store
	// and another waits behind it.
	resp := answer[*messages.AlterPartitionResponse](t, shrink(sys, pid, "events", p))
	if len(resp.Partition.GetIsr()) != 1 {
		t.Fatalf("ISR change: %v", resp)
	}
	noAnswer(t, created, 50*time.Millisecond)
	g.open()
	answer[*messages.AdminResponse](t, created)
	answer[*messages.AdminResponse](t, queued)
}

// TestWritesToOneTopicAreSerialized: an ISR change waits for an admin
// job writing its topic, and neither sees the other's write as a
// conflict; two additions of partitions to one topic apply in order.
func TestWritesToOneTopicAreSerialized(t *testing.T) {
	s := newMem(t)
	register(t, s, 1)
	register(t, s, 2)
	sys, pid, _ := spawnController(t, s, 0)
	clustertest.CreateTopic(t, sys, pid, &messages.CreateTopicRequest{Name: "events", Partitions: 1, ReplicationFactor: 2})
	p := getTopic(t, s, "events").Partitions[0]

	g := newGate(s, "UpdateTopic")
	altered := async(sys, pid, &messages.AlterTopicConfigsRequest{Name: "events", Configs: map[string]string{"retention.ms": "60000"}})
	g.waitHeld(t, 1)
	isr := shrink(sys, pid, "events", p)
	grow2 := async(sys, pid, &messages.CreatePartitionsRequest{Name: "events", Total: 2})
	grow3 := async(sys, pid, &messages.CreatePartitionsRequest{Name: "events", Total: 3})
	// Neither the ISR change nor the additions reach the store while the
	// alter holds the topic.
	poll.Never(t, 100*time.Millisecond, func() error {
		if n := g.held.Load(); n != 1 {
			return fmt.Errorf("%d updates in the store at once", n)
		}
		return nil
	})
	noAnswer(t, isr, 0)
	noAnswer(t, grow2, 0)
	g.open()
	if r := answer[*messages.AdminResponse](t, altered); r.Topic.GetConfigs()["retention.ms"] != "60000" {
		t.Fatalf("alter: %v", r)
	}
	if r := answer[*messages.AlterPartitionResponse](t, isr); len(r.Partition.GetIsr()) != 1 {
		t.Fatalf("ISR change: %v", r)
	}
	if r := answer[*messages.AdminResponse](t, grow2); len(r.Topic.GetPartitions()) != 2 {
		t.Fatalf("to 2 partitions: %v", r)
	}
	if r := answer[*messages.AdminResponse](t, grow3); len(r.Topic.GetPartitions()) != 3 {
		t.Fatalf("to 3 partitions: %v", r)
	}
	final := getTopic(t, s, "events")
	if len(final.Partitions) != 3 || final.Configs["retention.ms"] != "60000" || len(final.Partitions[p.Partition].Isr) != 1 {
		t.Fatalf("final topic %v", final)
	}
}

// adminAnswer waits up to 10 s for ch's answer and fails unless it is an
// AdminResponse with code want.
func adminAnswer(t *testing.T, ch <-chan any, what string, want messages.ErrorCode) {
	t.Helper()
	select {
	case res := <-ch:
		if r, ok := res.(*messages.AdminResponse); !ok || r.ErrorCode != want {
			t.Fatalf("%s: %v, want %v", what, res, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no answer", what)
	}
}

// runningAndQueued starts an elected controller on a MemStore and leaves
// it with CreateTopic "running" held in its etcd write (by g) and
// CreateTopic "queued" waiting behind it; the channels get their answers.
func runningAndQueued(t *testing.T) (s *fixture, sys *actor.ActorSystem, pid *actor.PID, g *gate, running, queued <-chan any) {
	t.Helper()
	s = newMem(t)
	register(t, s, 1)
	sys, pid, _ = spawnController(t, s, 0)
	clustertest.CreateTopic(t, sys, pid, &messages.CreateTopicRequest{Name: "first", Partitions: 1, ReplicationFactor: 1})
	g = newGate(s, "CreateTopic")
	running = async(sys, pid, &messages.CreateTopicRequest{Name: "running", Partitions: 1, ReplicationFactor: 1})
	g.waitHeld(t, 1)
	queued = async(sys, pid, &messages.CreateTopicRequest{Name: "queued", Partitions: 1, ReplicationFactor: 1})
	noAnswer(t, queued, 20*time.Millisecond)
	return s, sys, pid, g, running, queued
}

// TestDeposedRefusesQueuedJobs: when the controller loses its session,
// the job running fails its fenced write and the jobs queued behind it
// are refused, all with NOT_CONTROLLER (retriable); re-elected, it
// serves again.
func TestDeposedRefusesQueuedJobs(t *testing.T) {
	s, sys, pid, g, running, queued := runningAndQueued(t)
	_, fence, err := s.Controller(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EvictCandidate(t.Context(), fence.Key); err != nil {
		t.Fatal(err)
	}
	adminAnswer(t, queued, "queued job", messages.ErrorCode_ERROR_CODE_NOT_CONTROLLER)
	g.open()
	adminAnswer(t, running, "running job", messages.ErrorCode_ERROR_CODE_NOT_CONTROLLER)
	for _, name := range []string{"running", "queued"} {
		if _, _, err := s.GetTopic(t.Context(), name); err == nil {
			t.Fatalf("topic %q was written by a deposed controller", name)
		}
	}
	clustertest.CreateTopic(t, sys, pid, &messages.CreateTopicRequest{Name: "after", Partitions: 1, ReplicationFactor: 1})
}

// TestStoppingAnswersEveryJob: a controller that stops (its host shuts
// down) answers the job running — REQUEST_TIMED_OUT, its write may or may
// not have happened — and the jobs queued behind it — NOT_CONTROLLER, they
// never ran — instead of leaving their senders to their timeouts.
func TestStoppingAnswersEveryJob(t *testing.T) {
	s, sys, pid, g, running, queued := runningAndQueued(t)
	defer g.open()
	stopped := make(chan error, 1)
	go func() { stopped <- sys.Root.StopFuture(pid).Wait() }()
	adminAnswer(t, running, "running job", messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT)
	adminAnswer(t, queued, "queued job", messages.ErrorCode_ERROR_CODE_NOT_CONTROLLER)
	if err := <-stopped; err != nil {
		t.Fatalf("stop: %v", err)
	}
	if _, _, err := s.GetTopic(t.Context(), "queued"); err == nil {
		t.Fatal("a job refused at the stop was written")
	}
}
