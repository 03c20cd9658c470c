// keepalive_test.go: the lease keeper renews a lease, reports it lost when
// etcd says it is gone, and — when etcd stops answering — within one TTL
// of the last successful renewal, before the server could expire it.

package cluster_test

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
)

func TestLeaseKeeper(t *testing.T) {
	t.Parallel()
	store, e := clustertest.NewStore(t)
	ctx := testCtx(t, 30*time.Second)
	grant := func() (int64, time.Time) {
		t.Helper()
		at := time.Now()
		l, err := e.Client().Grant(ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		return int64(l.ID), at
	}

	// Renewed past several TTLs; stopping is not "lost".
	id, at := grant()
	done, lost, stop := cluster.KeepLeaseForTest(store, id, 2*time.Second, at)
	time.Sleep(5 * time.Second)
	ttl, err := e.Client().TimeToLive(ctx, clientv3LeaseID(id))
	if err != nil || ttl.TTL <= 0 {
		t.Fatalf("lease not kept alive: %+v, %v", ttl, err)
	}
	select {
	case <-done:
		t.Fatal("keeper ended by itself")
	default:
	}
	stop()
	if err := closedWithin(done, time.Second); err != nil || lost() {
		t.Fatalf("after Stop: done %v, lost %v", err, lost())
	}

	// Revoked: lost at the next renewal.
	id, at = grant()
	done, lost, stop = cluster.KeepLeaseForTest(store, id, 2*time.Second, at)
	defer stop()
	if _, err := e.Client().Revoke(ctx, clientv3LeaseID(id)); err != nil {
		t.Fatal(err)
	}
	if err := closedWithin(done, 3*time.Second); err != nil || !lost() {
		t.Fatalf("after revoke: done %v, lost %v", err, lost())
	}

	// etcd gone: lost within a TTL of the last renewal.
	id, at = grant()
	done, lost, stop = cluster.KeepLeaseForTest(store, id, 2*time.Second, at)
	defer stop()
	time.Sleep(500 * time.Millisecond)
	stopped := time.Now()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := closedWithin(done, 4*time.Second); err != nil || !lost() {
		t.Fatalf("etcd stopped: done %v, lost %v", err, lost())
	}
	if waited := time.Since(stopped); waited > 2*time.Second+500*time.Millisecond {
		t.Fatalf("lost reported %v after etcd stopped; the lease could have expired server-side after at most one TTL", waited)
	}
}

func clientv3LeaseID(id int64) clientv3.LeaseID { return clientv3.LeaseID(id) }
