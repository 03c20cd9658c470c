// hosts_test.go: host registration under a lease against a real embedded
// etcd.

package cluster_test

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
)

func TestRegisterAndClose(t *testing.T) {
	t.Parallel()
	store, _ := clustertest.NewStore(t)
	ctx := testCtx(t, 20*time.Second)
	info := &messages.HostInfo{HostId: 1, AdvertisedAddress: "127.0.0.1:9000", HttpAddress: "127.0.0.1:9001", Rack: "r1"}
	reg, err := store.Register(ctx, info, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if info.GetBrokerEpoch() == 0 || reg.Epoch() != info.GetBrokerEpoch() || reg.Info().GetBrokerEpoch() != reg.Epoch() {
		t.Fatalf("broker epoch %d, registration epoch %d", info.GetBrokerEpoch(), reg.Epoch())
	}
	hosts, err := store.ListHosts(ctx)
	if err != nil || len(hosts) != 1 || hosts[0].GetBrokerEpoch() != reg.Epoch() || hosts[0].GetRack() != "r1" {
		t.Fatalf("hosts = %v, %v", hosts, err)
	}

	// The id is taken while the registration lives.
	_, err = store.Register(ctx, &messages.HostInfo{HostId: 1}, 10*time.Second)
	wantErr(t, err, cluster.ErrHostRegistered)
	if hosts, err := store.ListHosts(ctx); err != nil || len(hosts) != 1 || hosts[0].GetBrokerEpoch() != reg.Epoch() {
		t.Fatalf("a refused registration changed the hosts: %v, %v", hosts, err)
	}
	_, err = store.Register(ctx, &messages.HostInfo{HostId: 0}, 10*time.Second)
	if err == nil {
		t.Fatal("registered host id 0")
	}

	if err := reg.Close(); err != nil {
		t.Fatal(err)
	}
	if err := reg.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if err := closedWithin(reg.Done(), time.Second); err != nil {
		t.Fatalf("Done after Close: %v", err)
	}
	if hosts, err := store.ListHosts(ctx); err != nil || len(hosts) != 0 {
		t.Fatalf("hosts after close = %v, %v", hosts, err)
	}
	// Registering again gives a new broker epoch.
	again, err := store.Register(ctx, &messages.HostInfo{HostId: 1}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := again.Close(); err != nil {
			t.Error(err)
		}
	}()
	if again.Epoch() == reg.Epoch() {
		t.Fatalf("same broker epoch %d after re-registering", again.Epoch())
	}
}

// TestRegistrationExpires: once keepalives stop (Abandon), the lease
// expires after its TTL, the key goes and a watcher sees the delete with
// the old registration.
func TestRegistrationExpires(t *testing.T) {
	t.Parallel()
	store, _ := clustertest.NewStore(t)
	ctx := testCtx(t, 20*time.Second)
	snap, err := store.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	events := store.WatchHosts(ctx, snap.Revision)
	reg, err := store.Register(ctx, &messages.HostInfo{HostId: 7, AdvertisedAddress: "a:1"}, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := reg.Close(); err != nil {
			t.Error(err)
		}
	}()
	put := recv(t, events, 5*time.Second)
	if put.Err != nil || put.Type != cluster.EventPut || put.HostID != 7 || put.Host.GetBrokerEpoch() != reg.Epoch() {
		t.Fatalf("put event %+v", put)
	}
	// Kept alive, it outlives its TTL.
	waitFor(t, 5*time.Second, func() error {
		resp, err := store.Client().TimeToLive(ctx, clientv3.LeaseID(reg.Epoch()))
		if err != nil {
			return err
		}
		if resp.GrantedTTL != 2 || resp.TTL <= 0 {
			t.Fatalf("lease TTL %d of %d", resp.TTL, resp.GrantedTTL)
		}
		return nil
	})

	// Abandon (a host stopping without a quorum) stops the renewals and
	// revokes nothing: the registration stays until the TTL runs out.
	start := time.Now()
	reg.Abandon()
	if err := closedWithin(reg.Done(), time.Second); err != nil {
		t.Fatalf("Done after Abandon: %v", err)
	}
	// (The lease has at least 1.5 s left when renewals stop: a check
	// later than 1 s after Abandon proves nothing and is skipped.)
	kept := func(what string) {
		t.Helper()
		hosts, err := store.ListHosts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(hosts) != 1 && time.Since(start) < time.Second {
			t.Fatalf("%s: hosts %v %v after Abandon; want the registration kept until its lease expires", what, hosts, time.Since(start))
		}
	}
	kept("right after Abandon")
	if err := reg.Close(); err != nil {
		t.Fatalf("Close after Abandon: %v", err)
	}
	kept("Close after Abandon")
	del := recv(t, events, 10*time.Second)
	if del.Err != nil || del.Type != cluster.EventDelete || del.HostID != 7 || del.Host.GetBrokerEpoch() != reg.Epoch() || del.Revision <= put.Revision {
		t.Fatalf("delete event %+v", del)
	}
	t.Logf("registration expired %v after keepalives stopped", time.Since(start).Round(time.Millisecond))
	if hosts, err := store.ListHosts(ctx); err != nil || len(hosts) != 0 {
		t.Fatalf("hosts after expiry = %v, %v", hosts, err)
	}
}

// TestRegistrationLost: a lease revoked behind the host's back (as when
// it expires during a freeze) closes Done, and the id is free again.
func TestRegistrationLost(t *testing.T) {
	t.Parallel()
	store, e := clustertest.NewStore(t)
	ctx := testCtx(t, 20*time.Second)
	reg, err := store.Register(ctx, &messages.HostInfo{HostId: 2}, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Client().Revoke(ctx, clientv3.LeaseID(reg.Epoch())); err != nil {
		t.Fatal(err)
	}
	if err := closedWithin(reg.Done(), 5*time.Second); err != nil {
		t.Fatalf("Done after the lease was revoked: %v", err)
	}
	if err := reg.Close(); err != nil {
		t.Fatalf("close after loss: %v", err)
	}
	next, err := store.Register(ctx, &messages.HostInfo{HostId: 2}, 10*time.Second)
	if err != nil {
		t.Fatalf("re-register: %v", err)
	}
	if err := next.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRegisterTakesOverOwnStaleRegistration: a host that crashed and
// restarted at the same address replaces its old registration at once
// instead of waiting out the lease; another address is still refused.
func TestRegisterTakesOverOwnStaleRegistration(t *testing.T) {
	t.Parallel()
	store, _ := clustertest.NewStore(t)
	ctx := testCtx(t, 20*time.Second)
	old, err := store.Register(ctx, &messages.HostInfo{HostId: 3, AdvertisedAddress: "127.0.0.1:9100"}, 6*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.Register(ctx, &messages.HostInfo{HostId: 3, AdvertisedAddress: "127.0.0.1:9200"}, 6*time.Second)
	wantErr(t, err, cluster.ErrHostRegistered)
	renewed, err := store.Register(ctx, &messages.HostInfo{HostId: 3, AdvertisedAddress: "127.0.0.1:9100"}, 6*time.Second)
	if err != nil {
		t.Fatalf("re-register at the same address: %v", err)
	}
	defer renewed.Close()
	if err := closedWithin(old.Done(), 10*time.Second); err != nil {
		t.Fatalf("the stale registration's lease was not revoked: %v", err)
	}
	hosts, err := store.ListHosts(ctx)
	if err != nil || len(hosts) != 1 || hosts[0].GetBrokerEpoch() != renewed.Epoch() || renewed.Epoch() == old.Epoch() {
		t.Fatalf("hosts = %v, %v", hosts, err)
	}
}
