// consolelive_test.go: the console's live figures over a real host — the
// single host's embedded etcd member is the leader, a topic produced to
// has a size on disk, and records in and out per second show while
// records are produced and a group commits.

package host

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/console"
	"github.com/actorlog/actorlog/messages"
)

func TestConsoleLiveFiguresOnRealHost(t *testing.T) {
	h := startTestHost(t, nil)
	const topic, group = "console-live", "console-live-readers"
	brk := actor.NewPID(h.system.Address(), messages.BrokerActorID)
	clustertest.CreateTopic(t, h.system, brk, &messages.CreateTopicRequest{Name: topic, Partitions: 1, ReplicationFactor: 1})
	clustertest.WaitFor(t, 10*time.Second, func() error { return produce(h, topic) })

	clustertest.WaitFor(t, 15*time.Second, func() error {
		var v console.ClusterView
		if err := consoleJSON(t, h, "/api/v1/cluster", http.StatusOK, &v); err != nil {
			return err
		}
		if len(v.Hosts) != 1 || v.Hosts[0].EtcdRole != console.EtcdLeader {
			return fmt.Errorf("hosts %+v, want host-1 the etcd leader", v.Hosts)
		}
		return nil
	})

	c, err := client.Attach(h.system, client.Config{Bootstrap: []string{h.system.Address()}, Logger: clustertest.Logger(t)})
	if err != nil {
		t.Fatalf("attach a client: %v", err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // produce, and commit as a group, until the test ends
		defer wg.Done()
		for n := int64(1); ctx.Err() == nil; n++ {
			if err := produce(h, topic); err != nil {
				t.Logf("produce: %v", err)
			}
			cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
			if _, err := c.CommitOffsets(cctx, group, "", -1, []client.CommitOffset{{Topic: topic, Partition: 0, Offset: n, LeaderEpoch: -1}}); err != nil && ctx.Err() == nil {
				t.Logf("commit: %v", err)
			}
			ccancel()
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })

	// Rates need two samples (DefaultSamplePeriod apart) after the first
	// view of the list; sizes are cached for a few seconds.
	clustertest.WaitFor(t, 45*time.Second, func() error {
		var v console.TopicsView
		if err := consoleJSON(t, h, "/api/v1/topics", http.StatusOK, &v); err != nil {
			return err
		}
		for _, s := range v.Topics {
			if s.Name != topic {
				continue
			}
			if s.SizeBytes == nil || *s.SizeBytes <= 0 || s.SizePartial {
				return fmt.Errorf("size %v (partial %v), want > 0", s.SizeBytes, s.SizePartial)
			}
			if s.InPerSec == nil || *s.InPerSec <= 0 || s.OutPerSec == nil || *s.OutPerSec <= 0 {
				return fmt.Errorf("rates in %v out %v, want > 0 while producing and committing", s.InPerSec, s.OutPerSec)
			}
			return nil
		}
		return fmt.Errorf("no topic %s in %+v", topic, v.Topics)
	})
	var tv console.TopicView
	if err := consoleJSON(t, h, "/api/v1/topics/"+topic, http.StatusOK, &tv); err != nil {
		t.Fatal(err)
	}
	if p := tv.Partitions[0]; p.SizeBytes == nil || *p.SizeBytes <= 0 || p.ReplicasSizeBytes == nil || *p.ReplicasSizeBytes != *p.SizeBytes {
		t.Fatalf("partition sizes %+v, want the leader's > 0 and equal to the replicas' (RF 1)", p)
	}
}
