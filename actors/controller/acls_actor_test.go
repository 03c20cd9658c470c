// acls_actor_test.go: the controller actor serving the ACL and SCRAM
// requests (acls.go) on a MemStore (with the mem ACL and SCRAM stores
// fenced on its election) and on a real embedded etcd: per-item results,
// invalid items refused on their own, oversized requests refused whole
// with nothing written, reads answered, keys never.

package controller_test

import (
	"bytes"
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/actorlog/actorlog/actors/controller"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/internal/acl"
	"github.com/actorlog/actorlog/messages"
)

func topicBinding(principal, name string, op acl.Operation) acl.Binding {
	return acl.Binding{Principal: principal, Host: "*", Resource: acl.ResourceTopic, Name: name,
		Pattern: acl.PatternLiteral, Operation: op, Permission: acl.Allow}
}

func aclResultCodes(rs []*messages.AclResult) []messages.ErrorCode {
	out := make([]messages.ErrorCode, len(rs))
	for i, r := range rs {
		out[i] = r.ErrorCode
	}
	return out
}

func scramUpsertion(user, mech string, iters int32) *messages.ScramUpsertion {
	n := 32
	if mech == cluster.ScramSHA512 {
		n = 64
	}
	return &messages.ScramUpsertion{User: user, Mechanism: mech, Salt: []byte("salt"), Iterations: iters,
		StoredKey: bytes.Repeat([]byte{1}, n), ServerKey: bytes.Repeat([]byte{2}, n)}
}

func TestControllerServesACLsAndScram(t *testing.T) {
	onEach(t, func(t *testing.T, s *fixture) {
		cfg := controller.Config{HostID: 1, Store: s, RequestTimeout: 5 * time.Second}
		var acls cluster.ACLStore = s.etcd
		var scram cluster.ScramStore = s.etcd
		if s.etcd != nil {
			cfg.Store = s.etcd // keeps the ACLs and credentials itself
		} else {
			ma, ms := cluster.NewMemACLStore(), cluster.NewMemScramStore()
			ma.FenceHolds, ms.FenceHolds = cluster.MemFenceCheck(s.mem), cluster.MemFenceCheck(s.mem)
			cfg.ACLs, cfg.Scram = ma, ms
			acls, scram = ma, ms
		}
		register(t, s, 1)
		sys, pid, _ := spawnControllerWith(t, cfg)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()

		// Create: the invalid binding is refused on its own.
		alice := topicBinding("User:alice", "orders", acl.OpRead)
		bob := topicBinding("User:bob", "orders", acl.OpWrite)
		bad := topicBinding("alice", "orders", acl.OpRead) // no principal type
		created := ask[*messages.CreateAclsResponse](t, sys, pid, &messages.CreateAclsRequest{
			Bindings: messages.BindingsToProto([]acl.Binding{alice, bad, bob}),
		})
		want := []messages.ErrorCode{0, messages.ErrorCode_ERROR_CODE_INVALID_REQUEST, 0}
		if got := aclResultCodes(created.Results); !slices.Equal(got, want) {
			t.Fatalf("create results %v, want %v", created.Results, want)
		}
		stored, err := acls.ListACLs(ctx, acl.Filter{})
		if err != nil || len(stored) != 2 {
			t.Fatalf("store after create: %v, %v", stored, err)
		}
		described := ask[*messages.DescribeAclsResponse](t, sys, pid, &messages.DescribeAclsRequest{
			Filter: messages.FilterToProto(acl.Filter{Resource: acl.ResourceTopic}),
		})
		if got := messages.BindingsFromProto(described.Bindings); len(got) != 2 || !slices.Contains(got, alice) || !slices.Contains(got, bob) {
			t.Fatalf("describe: %v", got)
		}

		// Too many bindings: refused whole, nothing written.
		many := make([]acl.Binding, controller.MaxSecurityItems+1)
		for i := range many {
			many[i] = topicBinding("User:flood", "orders", acl.OpRead)
		}
		res, err := sys.Root.RequestFuture(pid, &messages.CreateAclsRequest{Bindings: messages.BindingsToProto(many)}, 5*time.Second).Result()
		if err != nil {
			t.Fatalf("oversized create: %v", err)
		}
		if r, ok := res.(*messages.CreateAclsResponse); !ok || r.ErrorCode != messages.ErrorCode_ERROR_CODE_INVALID_REQUEST || len(r.Results) != 0 {
			t.Fatalf("oversized create answered %v", res)
		}
		if n, err := acls.ListACLs(ctx, acl.Filter{}); err != nil || len(n) != 2 {
			t.Fatalf("store after the oversized create: %v, %v", n, err)
		}

		// Delete: one filter per result, a bad filter refused on its own.
		deleted := ask[*messages.DeleteAclsResponse](t, sys, pid, &messages.DeleteAclsRequest{Filters: []*messages.AclFilter{
			messages.FilterToProto(acl.ExactFilter(alice)),
			{Operation: 99},
		}})
		if len(deleted.Results) != 2 || deleted.Results[0].ErrorCode != 0 || deleted.Results[1].ErrorCode != messages.ErrorCode_ERROR_CODE_INVALID_REQUEST {
			t.Fatalf("delete results %v", deleted.Results)
		}
		if got := messages.BindingsFromProto(deleted.Results[0].Deleted); len(got) != 1 || got[0] != alice {
			t.Fatalf("deleted %v, want %v", got, alice)
		}
		if left, err := acls.ListACLs(ctx, acl.Filter{}); err != nil || len(left) != 1 || left[0] != bob {
			t.Fatalf("store after delete: %v, %v", left, err)
		}

		// SCRAM: deletions then upsertions, each on its own.
		altered := ask[*messages.AlterScramCredentialsResponse](t, sys, pid, &messages.AlterScramCredentialsRequest{
			Upsertions: []*messages.ScramUpsertion{
				scramUpsertion("alice", cluster.ScramSHA256, 4096),
				scramUpsertion("carol", cluster.ScramSHA256, 10),   // too few iterations
				scramUpsertion("dave", cluster.ScramSHA512, 4096),  // named twice
				scramUpsertion("dave", cluster.ScramSHA512, 8192),  // named twice
				scramUpsertion("", cluster.ScramSHA256, 4096),      // no name
				scramUpsertion("erin", "SCRAM-SHA-1", 4096),        // unknown mechanism
				scramUpsertion("alice", cluster.ScramSHA512, 8192), // second mechanism
			},
			Deletions: []*messages.ScramDeletion{{User: "bob", Mechanism: cluster.ScramSHA256}},
		})
		invalid := messages.ErrorCode_ERROR_CODE_INVALID_REQUEST
		wantUps := []messages.ErrorCode{0, invalid, invalid, invalid, invalid, invalid, 0}
		for i, r := range altered.UpsertionResults {
			if r.ErrorCode != wantUps[i] || r.NotFound {
				t.Fatalf("upsertion %d: %v, want code %v", i, r, wantUps[i])
			}
		}
		if len(altered.UpsertionResults) != len(wantUps) {
			t.Fatalf("%d upsertion results, want %d", len(altered.UpsertionResults), len(wantUps))
		}
		if len(altered.DeletionResults) != 1 || altered.DeletionResults[0].ErrorCode != invalid || !altered.DeletionResults[0].NotFound {
			t.Fatalf("deletion of an unknown user: %v", altered.DeletionResults)
		}
		for _, name := range []string{"carol", "dave", "erin"} {
			if _, ok, err := scram.GetScramUser(ctx, name); err != nil || ok {
				t.Fatalf("refused upsertion stored %s (%v)", name, err)
			}
		}
		users := ask[*messages.DescribeScramUsersResponse](t, sys, pid, &messages.DescribeScramUsersRequest{})
		if len(users.Users) != 1 || users.Users[0].User != "alice" || len(users.Users[0].Mechanisms) != 2 ||
			users.Users[0].Mechanisms[0].Mechanism != cluster.ScramSHA256 || users.Users[0].Mechanisms[0].Iterations != 4096 ||
			users.Users[0].Mechanisms[1].Iterations != 8192 {
			t.Fatalf("describe users: %v", users.Users)
		}
		named := ask[*messages.DescribeScramUsersResponse](t, sys, pid, &messages.DescribeScramUsersRequest{Users: []string{"nobody", "alice"}})
		if len(named.Users) != 1 || named.Users[0].User != "alice" {
			t.Fatalf("describe named users: %v", named.Users)
		}
		gone := ask[*messages.AlterScramCredentialsResponse](t, sys, pid, &messages.AlterScramCredentialsRequest{
			Deletions: []*messages.ScramDeletion{{User: "alice", Mechanism: cluster.ScramSHA256}, {User: "alice", Mechanism: cluster.ScramSHA512}},
		})
		for _, r := range gone.DeletionResults {
			if r.ErrorCode != 0 {
				t.Fatalf("delete alice: %v", gone.DeletionResults)
			}
		}
		if _, ok, err := scram.GetScramUser(ctx, "alice"); err != nil || ok {
			t.Fatalf("alice after deleting every mechanism: ok %v, %v", ok, err)
		}
	})
}

// A write whose fence no longer holds answers NOT_CONTROLLER (the senders
// retry) and writes nothing.
func TestControllerACLWriteRefusedByFence(t *testing.T) {
	s := newMem(t)
	ma := cluster.NewMemACLStore()
	var refuse atomic.Bool
	check := cluster.MemFenceCheck(s.mem)
	ma.FenceHolds = func(f cluster.Fence) error {
		if refuse.Load() {
			return cluster.ErrNotController
		}
		return check(f)
	}
	register(t, s, 1)
	sys, pid, _ := spawnControllerWith(t, controller.Config{HostID: 1, Store: s, RequestTimeout: 5 * time.Second, ACLs: ma, Scram: cluster.NewMemScramStore()})
	b := topicBinding("User:alice", "orders", acl.OpRead)
	ask[*messages.CreateAclsResponse](t, sys, pid, &messages.CreateAclsRequest{Bindings: messages.BindingsToProto([]acl.Binding{b})})
	refuse.Store(true)
	res, err := sys.Root.RequestFuture(pid, &messages.CreateAclsRequest{
		Bindings: messages.BindingsToProto([]acl.Binding{topicBinding("User:mallory", "orders", acl.OpAll)}),
	}, 5*time.Second).Result()
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if r, ok := res.(*messages.CreateAclsResponse); !ok || r.ErrorCode != messages.ErrorCode_ERROR_CODE_NOT_CONTROLLER {
		t.Fatalf("create with a lapsed fence answered %v, want NOT_CONTROLLER", res)
	}
	res, err = sys.Root.RequestFuture(pid, &messages.DeleteAclsRequest{Filters: []*messages.AclFilter{{}}}, 5*time.Second).Result()
	if err != nil {
		t.Fatalf("delete: %v", err)
	}
	if r, ok := res.(*messages.DeleteAclsResponse); !ok || r.ErrorCode != messages.ErrorCode_ERROR_CODE_NOT_CONTROLLER {
		t.Fatalf("delete with a lapsed fence answered %v, want NOT_CONTROLLER", res)
	}
	left, err := ma.ListACLs(context.Background(), acl.Filter{})
	if err != nil || len(left) != 1 || left[0] != b {
		t.Fatalf("store after refused writes: %v, %v", left, err)
	}
}
