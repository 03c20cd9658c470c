// etcdlimit_test.go: a three-member etcd cluster whose client and peer
// ports sit behind connection limits (etcdlimit.go): it bootstraps and
// replicates through the relays, and a flood of idle connections to one
// member's ports from one address is cut at the per-IP limit while the
// cluster keeps serving, through the public ports too.

package cluster_test

import (
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/cluster/netlimit"
)

func TestEtcdLimitedPorts(t *testing.T) {
	t.Parallel()
	// Relayed connections count three: 100 connections, 40 per address.
	limits := netlimit.Limits{MaxConnections: 300, MaxConnectionsPerIP: 120}
	names := []string{"l1", "l2", "l3"}
	var cfgs []cluster.EtcdConfig
	limiters := make([]*netlimit.Limiter, len(names))
	members := clustertest.StartMembers(t, func() []cluster.EtcdConfig {
		cfgs = make([]cluster.EtcdConfig, len(names))
		for i, n := range names {
			cfgs[i] = clustertest.Config(t, n)
			lim, err := netlimit.New(limits, clustertest.Logger(t))
			if err != nil {
				t.Fatal(err)
			}
			limiters[i], cfgs[i].Limiter = lim, lim
		}
		return cfgs
	})
	// The peers reached each other through the limited peer ports.
	if s := limiters[0].Stats()["etcd-peer"]; s.Accepted == 0 {
		t.Fatalf("no peer connection went through l1's limited peer port: %+v", limiters[0].Stats())
	}
	ctx := testCtx(t, 30*time.Second)
	if _, err := members[0].Client().Put(ctx, "k", "v1"); err != nil {
		t.Fatalf("put: %v", err)
	}
	public := newClient(t, members[1]) // through l2's limited client port
	if resp, err := public.Get(ctx, "k"); err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v1" {
		t.Fatalf("get through the public client port: %v, %v", resp, err)
	}

	// Flood l1's client and peer ports from 127.0.0.2 with idle
	// connections, five times its per-address limit.
	var flood []net.Conn
	t.Cleanup(func() {
		for _, c := range flood {
			c.Close()
		}
	})
	for _, raw := range []string{cfgs[0].ClientURL, cfgs[0].PeerURL} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 5 * time.Second}
		for range 100 {
			c, err := d.Dial("tcp", u.Host)
			if err != nil {
				t.Fatalf("dial %s: %v", u.Host, err)
			}
			flood = append(flood, c)
		}
	}
	waitFor(t, 10*time.Second, func() error {
		st := limiters[0].Stats()
		refused := st["etcd-client"].RefusedPerIP + st["etcd-peer"].RefusedPerIP
		if refused < 200-40 {
			return fmt.Errorf("%d of 200 flood connections refused, want at least 160 (stats %+v)", refused, st)
		}
		return nil
	})
	if open := limiters[0].Open(); open > limits.MaxConnections {
		t.Fatalf("%d slots open, above the limit %d", open, limits.MaxConnections)
	}
	// The cluster still serves, through l1 and through its public port
	// from another address.
	if _, err := members[0].Client().Put(ctx, "k", "v2"); err != nil {
		t.Fatalf("put during the flood: %v", err)
	}
	during := newClient(t, members[0])
	waitFor(t, 10*time.Second, func() error {
		resp, err := during.Get(ctx, "k")
		if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v2" {
			return fmt.Errorf("get through l1's public port during the flood: %v, %v", resp, err)
		}
		return nil
	})
	for _, c := range flood {
		c.Close()
	}
	flood = nil
	// Their slots come back once the relays see them close.
	waitFor(t, 10*time.Second, func() error {
		if n := limiters[0].Stats()["etcd-peer"].Open; n > 10*3 {
			return fmt.Errorf("%d peer-port slots still open after the flood ended", n)
		}
		return nil
	})
}
