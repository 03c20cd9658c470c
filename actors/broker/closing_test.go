// closing_test.go: a replica the broker reopens for new topic configs
// answers every request sent to it meanwhile.

package broker_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage/record"
)

// TestConfigRestartAnswersEveryRequest alters a topic's configs six
// times (each reopens its replica, which takes the new max.message.bytes)
// while four clients keep asking the replica for offsets. Every request
// must be answered — with the offset, NOT_LEADER_OR_FOLLOWER, or a dead
// letter (deadmail, or between two actors) — and none may
// wait out its timeout: a replica stopped with queued requests
// (protoactor drops a stopped actor's mailbox) left its callers waiting
// for 10 s (the console's topic page after a config change). Then the
// topic is deleted, and its replica stops with the clients still asking.
func TestConfigRestartAnswersEveryRequest(t *testing.T) {
	s := newMem(t)
	s.register(t, 1, 17111)
	h := startHost1(t, s, "127.0.0.1:17111")
	part := h.partitionOn1(t)
	pid := actor.NewPID(h.sys.Address(), messages.ReplicaActorID("events", part))
	ask := func() (*messages.ListOffsetsResponse, error) {
		res, err := h.sys.Root.RequestFuture(pid, &messages.ListOffsetsRequest{
			Topic: "events", Partition: part, Timestamp: messages.LatestTimestamp, CurrentLeaderEpoch: -1,
		}, 3*time.Second).Result()
		if err != nil {
			return nil, err
		}
		lo, ok := res.(*messages.ListOffsetsResponse)
		if !ok {
			return nil, fmt.Errorf("answer %T", res)
		}
		return lo, nil
	}
	clustertest.WaitFor(t, 10*time.Second, func() error {
		lo, err := ask()
		if err != nil {
			return err
		}
		return lo.ErrorCode.Err(lo.ErrorMessage)
	})

	var stop atomic.Bool
	var answered, closing, dead, timedOut atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				lo, err := ask()
				switch {
				case errors.Is(err, actor.ErrTimeout):
					timedOut.Add(1)
				case errors.Is(err, actor.ErrDeadLetter):
					dead.Add(1)
				case err != nil:
					t.Errorf("ask: %v", err)
				case lo.ErrorCode == messages.ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER:
					closing.Add(1)
				case lo.ErrorCode != 0:
					t.Errorf("list offsets: %v", lo.ErrorCode.Err(lo.ErrorMessage))
				default:
					answered.Add(1)
				}
			}
		}()
	}
	// A batch of about 1 KiB: refused under max.message.bytes 200,
	// appended under the default.
	recs := make([]record.Record, 10)
	for i := range recs {
		recs[i] = record.Record{Value: make([]byte, 100), Timestamp: 1000}
	}
	big, err := record.BuildBatch(record.CompressionNone, recs...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		limit := map[bool]string{true: "200", false: "1048588"}[i%2 == 0]
		res, err := h.sys.Root.RequestFuture(h.brk, &messages.AlterTopicConfigsRequest{Name: "events", Configs: map[string]string{"max.message.bytes": limit}}, timeout).Result()
		if err != nil {
			t.Fatalf("alter configs: %v", err)
		}
		if resp, ok := res.(*messages.AdminResponse); !ok || resp.ErrorCode != 0 {
			t.Fatalf("alter configs: %v", res)
		}
		// The replica took the new configs.
		clustertest.WaitFor(t, 10*time.Second, func() error {
			resp, err := request[*messages.ProduceResponse](t, h.sys, pid, &messages.ProduceRequest{
				Topic: "events", Partition: part, Acks: messages.Acks_ACKS_LEADER, Records: big, CurrentLeaderEpoch: -1,
			})
			if err != nil {
				return err
			}
			if tooLarge := resp.ErrorCode == messages.ErrorCode_ERROR_CODE_MESSAGE_TOO_LARGE; tooLarge != (limit == "200") {
				return fmt.Errorf("max.message.bytes %s: produce of %d bytes answered %v", limit, len(big), resp.ErrorCode)
			}
			return nil
		})
	}
	// Deleted, the replica stops: what is left in its mailbox is answered
	// with a dead letter.
	res, err := h.sys.Root.RequestFuture(h.brk, &messages.DeleteTopicRequest{Name: "events"}, timeout).Result()
	if err != nil {
		t.Fatalf("delete topic: %v", err)
	}
	if resp, ok := res.(*messages.AdminResponse); !ok || resp.ErrorCode != 0 {
		t.Fatalf("delete topic: %v", res)
	}
	clustertest.WaitFor(t, 10*time.Second, func() error {
		if _, ok := h.sys.ProcessRegistry.GetLocal(pid.Id); ok {
			return errors.New("replica still running")
		}
		return nil
	})
	time.Sleep(100 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	t.Logf("answered %d, closing %d, dead letters %d, timed out %d", answered.Load(), closing.Load(), dead.Load(), timedOut.Load())
	if timedOut.Load() != 0 {
		t.Fatalf("%d requests to a restarting replica went unanswered", timedOut.Load())
	}
	if answered.Load() == 0 {
		t.Fatal("no request answered")
	}
}

// TestStoppedBrokerAnswersQueuedRequests: requests queued for the broker
// (and the controller) when it stops — the host shutting down, a watchdog
// respawn — are each answered, by the actor or with a dead letter, none
// waiting out its timeout: protoactor drops a stopped actor's mailbox.
func TestStoppedBrokerAnswersQueuedRequests(t *testing.T) {
	s := newMem(t)
	s.register(t, 1, 17112)
	h := startHost1(t, s, "127.0.0.1:17112")
	h.partitionOn1(t)
	for _, c := range []struct {
		name string
		pid  *actor.PID
		req  any
	}{
		{"broker", h.brk, &messages.MetadataRequest{}},
		{"controller", h.ctrl, &messages.CreateTopicRequest{Name: "queued", Partitions: 1, ReplicationFactor: 1}},
	} {
		// Asked from four goroutines, and stopped once a fifth of the
		// requests were sent: the requests sent by then (before) and not
		// answered by the actor itself were in its mailbox at the stop.
		const n, senders = 20000, 4
		futures := make([]*actor.Future, n)
		var sent atomic.Int64
		var wg sync.WaitGroup
		for g := range senders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := g; i < n; i += senders {
					futures[i] = h.sys.Root.RequestFuture(c.pid, c.req, 3*time.Second)
					sent.Add(1)
				}
			}()
		}
		for sent.Load() < n/5 {
			time.Sleep(50 * time.Microsecond)
		}
		before := int(sent.Load())
		if err := h.sys.Root.StopFuture(c.pid).Wait(); err != nil {
			t.Fatalf("stop %s: %v", c.name, err)
		}
		wg.Wait()
		var answered, dead, timedOut int
		for _, f := range futures {
			_, err := f.Result()
			switch {
			case err == nil:
				answered++
			case errors.Is(err, actor.ErrDeadLetter):
				dead++
			case errors.Is(err, actor.ErrTimeout):
				timedOut++
			default:
				t.Errorf("%s: %v", c.name, err)
			}
		}
		t.Logf("%s: %d sent before the stop; %d answered, %d dead letters, %d timed out", c.name, before, answered, dead, timedOut)
		if timedOut > 0 {
			t.Errorf("%s: %d of %d requests timed out", c.name, timedOut, n)
		}
		if answered >= before {
			t.Errorf("%s: every request sent before the stop was served: none was queued at it (the test shows nothing)", c.name)
		}
	}
}
