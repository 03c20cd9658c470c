// acl_fence_test.go: the controller's fenced ACL and SCRAM writes, on a
// real embedded etcd and on the mem stores tied to a MemStore election: a
// write with a stale fence (deposed controller, wrong epoch, zero fence)
// fails with ErrNotController and changes nothing; with the current fence
// it writes, across several transactions when it must.

package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/internal/acl"
)

// fencedStores is one backend under test: the ACL and SCRAM stores, a
// fence of the current controller, and depose, which ends that
// controller's term and elects another (returning its fence).
type fencedStores struct {
	acls   cluster.FencedACLStore
	scram  cluster.FencedScramStore
	fence  cluster.Fence
	depose func(t *testing.T) cluster.Fence
}

func fencedBackends() []struct {
	name string
	new  func(t *testing.T) fencedStores
} {
	return []struct {
		name string
		new  func(t *testing.T) fencedStores
	}{
		{"etcd", func(t *testing.T) fencedStores {
			s, _ := clustertest.NewStore(t)
			el, fence := elect(t, s, "first")
			return fencedStores{acls: s, scram: s, fence: fence, depose: func(t *testing.T) cluster.Fence {
				if err := el.Resign(testCtx(t, 5*time.Second)); err != nil {
					t.Fatalf("resign: %v", err)
				}
				_, next := elect(t, s, "second")
				return next
			}}
		}},
		{"mem", func(t *testing.T) fencedStores {
			m := clustertest.NewMemStore(t)
			campaign := func(value string) (cluster.Election, cluster.Fence) {
				ctx := testCtx(t, 5*time.Second)
				el, err := m.NewElection(ctx, 10*time.Second)
				if err != nil {
					t.Fatalf("new election: %v", err)
				}
				f, err := el.Campaign(ctx, value)
				if err != nil {
					t.Fatalf("campaign: %v", err)
				}
				return el, f
			}
			el, fence := campaign("first")
			acls, scram := cluster.NewMemACLStore(), cluster.NewMemScramStore()
			acls.FenceHolds, scram.FenceHolds = cluster.MemFenceCheck(m), cluster.MemFenceCheck(m)
			return fencedStores{acls: acls, scram: scram, fence: fence, depose: func(t *testing.T) cluster.Fence {
				if err := el.Close(); err != nil {
					t.Fatalf("close election: %v", err)
				}
				_, next := campaign("second")
				return next
			}}
		}},
	}
}

func TestFencedACLAndScramWrites(t *testing.T) {
	for _, be := range fencedBackends() {
		t.Run(be.name, func(t *testing.T) {
			ctx := testCtx(t, 30*time.Second)
			st := be.new(t)
			kept := aclTopic("User:alice", "orders", acl.PatternLiteral, acl.OpRead, acl.Allow)
			if err := st.acls.AddACLsFenced(ctx, st.fence, []acl.Binding{kept}); err != nil {
				t.Fatalf("add with the current fence: %v", err)
			}
			// More bindings than one etcd transaction takes.
			var many []acl.Binding
			for i := range 150 {
				many = append(many, aclTopic("User:bulk", fmt.Sprintf("t%03d", i), acl.PatternLiteral, acl.OpWrite, acl.Allow))
			}
			if err := st.acls.AddACLsFenced(ctx, st.fence, many); err != nil {
				t.Fatalf("add 150 with the current fence: %v", err)
			}
			bulk := "User:bulk"
			deleted, err := st.acls.DeleteACLsFenced(ctx, st.fence, acl.Filter{Principal: &bulk})
			if err != nil || len(deleted) != len(many) {
				t.Fatalf("delete 150 with the current fence: %d deleted, %v", len(deleted), err)
			}
			cred := scramCred(cluster.ScramSHA256, 4096, 1)
			if err := st.scram.PutScramCredentialFenced(ctx, st.fence, "alice", cluster.ScramSHA256, cred); err != nil {
				t.Fatalf("put with the current fence: %v", err)
			}
			if err := st.scram.PutScramCredentialFenced(ctx, st.fence, "alice", cluster.ScramSHA512, scramCred(cluster.ScramSHA512, 4096, 3)); err != nil {
				t.Fatalf("put 512 with the current fence: %v", err)
			}
			if err := st.scram.DeleteScramCredentialFenced(ctx, st.fence, "alice", cluster.ScramSHA512); err != nil {
				t.Fatalf("delete with the current fence: %v", err)
			}

			stale := st.fence
			next := st.depose(t)
			if next == stale {
				t.Fatalf("the new controller has the old fence %v", stale)
			}
			fences := map[string]cluster.Fence{
				"deposed":    stale,
				"zero":       {},
				"next epoch": {Key: next.Key, Epoch: next.Epoch + 1},
			}
			added := aclTopic("User:mallory", "orders", acl.PatternLiteral, acl.OpAll, acl.Allow)
			for name, f := range fences {
				wantErr(t, st.acls.AddACLsFenced(ctx, f, []acl.Binding{added}), cluster.ErrNotController)
				if _, err := st.acls.DeleteACLsFenced(ctx, f, acl.Filter{}); err == nil {
					t.Fatalf("%s fence: delete succeeded", name)
				} else {
					wantErr(t, err, cluster.ErrNotController)
				}
				wantErr(t, st.scram.PutScramCredentialFenced(ctx, f, "mallory", cluster.ScramSHA256, cred), cluster.ErrNotController)
				wantErr(t, st.scram.PutScramCredentialFenced(ctx, f, "alice", cluster.ScramSHA256, scramCred(cluster.ScramSHA256, 8192, 9)), cluster.ErrNotController)
				wantErr(t, st.scram.DeleteScramCredentialFenced(ctx, f, "alice", cluster.ScramSHA256), cluster.ErrNotController)
			}
			// Nothing changed.
			got, err := st.acls.ListACLs(ctx, acl.Filter{})
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			if err := sameBindings(got, []acl.Binding{kept}); err != nil {
				t.Fatalf("after the refused writes: %v", err)
			}
			if _, ok, err := st.scram.GetScramUser(ctx, "mallory"); err != nil || ok {
				t.Fatalf("a refused put created mallory: ok %v, %v", ok, err)
			}
			u, ok, err := st.scram.GetScramUser(ctx, "alice")
			if err != nil || !ok || len(u.Credentials) != 1 || u.Credentials[cluster.ScramSHA256].Iterations != 4096 {
				t.Fatalf("alice after the refused writes: %+v ok %v, %v", u, ok, err)
			}
			// The new controller writes.
			if err := st.acls.AddACLsFenced(ctx, next, []acl.Binding{added}); err != nil {
				t.Fatalf("add with the new fence: %v", err)
			}
			if err := st.scram.DeleteScramCredentialFenced(ctx, next, "alice", cluster.ScramSHA256); err != nil {
				t.Fatalf("delete with the new fence: %v", err)
			}
			wantErr(t, st.scram.DeleteScramCredentialFenced(ctx, next, "alice", cluster.ScramSHA256), cluster.ErrUnknownScramUser)
			// Validation comes first: an invalid binding is refused as such.
			bad := added
			bad.Host = "nowhere"
			wantErr(t, st.acls.AddACLsFenced(ctx, next, []acl.Binding{bad}), acl.ErrInvalidBinding)
			wantErr(t, st.scram.PutScramCredentialFenced(ctx, next, "x", "MD5", cred), cluster.ErrInvalidScramCredential)
		})
	}
}

// The unfenced writes (the CLI's straight-to-etcd mode) still need no
// controller.
func TestUnfencedACLWritesNeedNoController(t *testing.T) {
	s, _ := clustertest.NewStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b := aclTopic("User:alice", "orders", acl.PatternLiteral, acl.OpRead, acl.Allow)
	if err := s.AddACLs(ctx, []acl.Binding{b}); err != nil {
		t.Fatalf("add without a controller: %v", err)
	}
	if err := s.PutScramCredential(ctx, "alice", cluster.ScramSHA256, scramCred(cluster.ScramSHA256, 4096, 1)); err != nil {
		t.Fatalf("put without a controller: %v", err)
	}
	if got, err := s.ListACLs(ctx, acl.Filter{}); err != nil || len(got) != 1 {
		t.Fatalf("list: %v, %v", got, err)
	}
}
