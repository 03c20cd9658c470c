// helpers_test.go holds the test helpers: polling with a deadline, an
// elected controller fence, topic builders, a second client.

package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
)

// waitFor polls cond until it returns nil or timeout passes
// (clustertest.WaitFor).
func waitFor(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	clustertest.WaitFor(t, timeout, cond)
}

// testCtx returns a context that ends with the test, bounded by timeout.
func testCtx(t testing.TB, timeout time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// elect makes a candidate on s, closes it at cleanup, and returns its fence
// once elected.
func elect(t testing.TB, s *cluster.Store, value string) (cluster.Election, cluster.Fence) {
	t.Helper()
	ctx := testCtx(t, 10*time.Second)
	el, err := s.NewElection(ctx, 10*time.Second)
	if err != nil {
		t.Fatalf("new election: %v", err)
	}
	t.Cleanup(func() {
		if err := el.Close(); err != nil {
			t.Errorf("close election: %v", err)
		}
	})
	f, err := el.Campaign(ctx, value)
	if err != nil {
		t.Fatalf("campaign: %v", err)
	}
	return el, f
}

// newTopic builds a valid topic over hosts 1..3 as a controller would: Kafka
// assignment, first replica leads, full ISR.
func newTopic(t testing.TB, name string, partitions, rf int, configs map[string]string) *messages.TopicMetadata {
	t.Helper()
	assignment, err := cluster.AssignReplicas([]int32{1, 2, 3}, partitions, rf, 0)
	if err != nil {
		t.Fatalf("assign replicas: %v", err)
	}
	topic := &messages.TopicMetadata{Name: name, Configs: configs, ReplicationFactor: int32(rf)}
	for p, replicas := range assignment {
		topic.Partitions = append(topic.Partitions, &messages.PartitionState{
			Partition: int32(p), Replicas: replicas, Leader: replicas[0], LeaderEpoch: 0,
			Isr: append([]int32(nil), replicas...),
		})
	}
	return topic
}

// newClient returns another client of e's member, closed at cleanup.
func newClient(t testing.TB, e *cluster.Etcd) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: e.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("close client: %v", err)
		}
	})
	return c
}

// wantErr fails the test unless errors.Is(err, want).
func wantErr(t testing.TB, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want %v", err, want)
	}
}

// recv returns the next value from ch within timeout.
func recv[T any](t testing.TB, ch <-chan T, timeout time.Duration) T {
	t.Helper()
	select {
	case v, ok := <-ch:
		if !ok {
			t.Fatalf("channel closed, want a value")
		}
		return v
	case <-time.After(timeout):
		t.Fatalf("nothing received within %v", timeout)
	}
	panic("unreachable")
}

// closedWithin reports an error unless ch is closed within timeout.
func closedWithin(ch <-chan struct{}, timeout time.Duration) error {
	select {
	case <-ch:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("not closed within %v", timeout)
	}
}
