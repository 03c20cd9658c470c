package clustertest_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
)

// TestStartMembersRetriesAPortClash: a member's client port taken by
// someone else before etcd binds it (as a parallel test may) fails the
// first bootstrap; StartMembers closes what started and forms the cluster
// on fresh ports.
func TestStartMembersRetriesAPortClash(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	builds := 0
	members := clustertest.StartMembers(t, func() []cluster.EtcdConfig {
		builds++
		cfgs := []cluster.EtcdConfig{clustertest.Config(t, "a"), clustertest.Config(t, "b")}
		if builds == 1 {
			cfgs[1].ClientURL = "http://" + taken.Addr().String()
			cfgs[0].ReadyTimeout = 3 * time.Second // a waits for b's vote in vain
		}
		return cfgs
	})
	if builds != 2 {
		t.Fatalf("build called %d times, want 2 (one clash, one retry)", builds)
	}
	ctx := t.Context()
	if _, err := members[0].Client().Put(ctx, "k", "v"); err != nil {
		t.Fatalf("put through a: %v", err)
	}
	resp, err := members[1].Client().Get(ctx, "k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("get through b: %v, %v", resp, err)
	}
	if strings.Contains(members[1].Client().Endpoints()[0], taken.Addr().String()) {
		t.Fatalf("b serves on the taken port %s", taken.Addr())
	}
}
