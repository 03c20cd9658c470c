// etcd_test.go: the embedded etcd member: start, config errors, ready
// timeout, metadata surviving a restart on the same data directory, and a
// three-member cluster in one process.

package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
)

func TestStartEtcdConfigErrors(t *testing.T) {
	base := cluster.EtcdConfig{Name: "a", DataDir: t.TempDir(), ClientURL: "http://127.0.0.1:1", PeerURL: "http://127.0.0.1:2"}
	tests := []struct {
		name   string
		mutate func(*cluster.EtcdConfig)
		want   string
	}{
		{"no name", func(c *cluster.EtcdConfig) { c.Name = "" }, "Name is required"},
		{"no dir", func(c *cluster.EtcdConfig) { c.DataDir = "" }, "DataDir is required"},
		{"no client url", func(c *cluster.EtcdConfig) { c.ClientURL = "" }, "ClientURL is required"},
		{"no peer url", func(c *cluster.EtcdConfig) { c.PeerURL = "" }, "PeerURL is required"},
		{"bad state", func(c *cluster.EtcdConfig) { c.ClusterState = "maybe" }, "ClusterState"},
		{"not in initial cluster", func(c *cluster.EtcdConfig) { c.InitialCluster = "b=http://127.0.0.1:2" }, "does not include member"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := base
			tt.mutate(&cfg)
			e, err := cluster.StartEtcd(context.Background(), cfg)
			if err == nil {
				_ = e.Close() // only reached on a test failure
				t.Fatalf("StartEtcd succeeded, want an error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestStartEtcdNotReady: a member of a two-member cluster whose peer never
// starts has no quorum; StartEtcd gives up after ReadyTimeout with a clear
// error and stops the member.
func TestStartEtcdNotReady(t *testing.T) {
	t.Parallel()
	cfg := clustertest.Config(t, "lonely")
	cfg.InitialCluster = fmt.Sprintf("lonely=%s,absent=%s", cfg.PeerURL, clustertest.FreeURL(t))
	cfg.ReadyTimeout = time.Second
	start := time.Now()
	e, err := cluster.StartEtcd(context.Background(), cfg)
	if err == nil {
		_ = e.Close() // only reached on a test failure
		t.Fatal("StartEtcd succeeded without quorum")
	}
	if !strings.Contains(err.Error(), "not ready after 1s") {
		t.Fatalf("error %q, want a not-ready error", err)
	}
	t.Logf("failed as expected after %v: %v", time.Since(start).Round(time.Millisecond), err)
}

// TestEtcdRestartKeepsMetadata: topics, and the election's history (epochs
// only grow), survive stopping the member and starting it again on the
// same data directory, with ClusterState left to detection and explicit.
func TestEtcdRestartKeepsMetadata(t *testing.T) {
	t.Parallel()
	cfg := clustertest.Config(t, "restart")
	e, err := clustertest.TryStart(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t, 20*time.Second)
	store := cluster.NewStore(e.Client(), "", clustertest.Logger(t))
	el, fence := electNoCleanup(t, store)
	topic := newTopic(t, "durable", 3, 2, map[string]string{"retention.ms": "-1"})
	if err := store.CreateTopic(ctx, fence, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	if err := el.Close(); err != nil {
		t.Fatalf("close election: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("close etcd: %v", err)
	}

	for _, state := range []string{"", cluster.ClusterStateExisting} {
		cfg.ClusterState = state
		e, err = clustertest.TryStart(cfg)
		if err != nil {
			t.Fatalf("restart (ClusterState %q): %v", state, err)
		}
		store = cluster.NewStore(e.Client(), "", clustertest.Logger(t))
		got, _, err := store.GetTopic(ctx, "durable")
		if err != nil {
			t.Fatalf("get topic after restart: %v", err)
		}
		if !proto.Equal(got, topic) {
			t.Fatalf("after restart: %v, want %v", got, topic)
		}
		el2, fence2 := electNoCleanup(t, store)
		if fence2.Epoch <= fence.Epoch {
			t.Fatalf("epoch after restart %d, want > %d", fence2.Epoch, fence.Epoch)
		}
		if err := store.DeleteTopic(ctx, fence, "durable"); !errors.Is(err, cluster.ErrNotController) {
			t.Fatalf("delete with the old fence: %v, want ErrNotController", err)
		}
		fence = fence2
		if err := el2.Close(); err != nil {
			t.Fatalf("close election: %v", err)
		}
		if err := e.Close(); err != nil {
			t.Fatalf("close etcd: %v", err)
		}
	}
}

// electNoCleanup elects a controller whose closing is the caller's job
// (the member it runs on is stopped before the test ends).
func electNoCleanup(t *testing.T, s *cluster.Store) (cluster.Election, cluster.Fence) {
	t.Helper()
	ctx := testCtx(t, 10*time.Second)
	el, err := s.NewElection(ctx, 5*time.Second)
	if err != nil {
		t.Fatalf("new election: %v", err)
	}
	f, err := el.Campaign(ctx, "x")
	if err != nil {
		t.Fatalf("campaign: %v", err)
	}
	return el, f
}

// TestEtcdThreeMembers forms a three-member cluster in one process: a
// write through one member is read, linearizably, through the others, and
// the cluster keeps serving with one member stopped.
func TestEtcdThreeMembers(t *testing.T) {
	t.Parallel()
	names := []string{"m1", "m2", "m3"}
	members := clustertest.StartMembers(t, func() []cluster.EtcdConfig {
		cfgs := make([]cluster.EtcdConfig, len(names))
		for i, n := range names {
			cfgs[i] = clustertest.Config(t, n)
		}
		return cfgs
	})
	ctx := testCtx(t, 20*time.Second)
	resp, err := members[0].Client().MemberList(ctx)
	if err != nil {
		t.Fatalf("member list: %v", err)
	}
	if len(resp.Members) != 3 {
		t.Fatalf("%d members, want 3", len(resp.Members))
	}
	stores := make([]*cluster.Store, len(members))
	for i, m := range members {
		stores[i] = cluster.NewStore(m.Client(), "", clustertest.Logger(t))
	}
	_, fence := elect(t, stores[0], "m1")
	if err := stores[0].CreateTopic(ctx, fence, newTopic(t, "replicated", 2, 3, nil)); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	for i := 1; i < 3; i++ {
		if _, _, err := stores[i].GetTopic(ctx, "replicated"); err != nil {
			t.Fatalf("read through %s: %v", names[i], err)
		}
	}
	// Stop one member that does not hold the election's session client:
	// the other two keep a quorum.
	if err := members[2].Close(); err != nil {
		t.Fatalf("close m3: %v", err)
	}
	if err := stores[0].DeleteTopic(ctx, fence, "replicated"); err != nil {
		t.Fatalf("delete with one member down: %v", err)
	}
	if _, err := members[1].Client().Get(ctx, "x", clientv3.WithSerializable()); err != nil {
		t.Fatalf("read through m2: %v", err)
	}
	waitFor(t, 10*time.Second, func() error {
		_, _, err := stores[1].GetTopic(ctx, "replicated")
		if !errors.Is(err, cluster.ErrUnknownTopic) {
			return fmt.Errorf("get deleted topic through m2: %v", err)
		}
		return nil
	})
}
