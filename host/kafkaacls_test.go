// kafkaacls_test.go: kafkaACLs over an in-memory store: changes reach the
// host's authorizer before the call returns, and store errors are wrapped.

package host

import (
	"context"
	"errors"
	"testing"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/internal/acl"
)

func TestKafkaACLs(t *testing.T) {
	ctx := context.Background()
	store := cluster.NewMemACLStore()
	auth, err := acl.New(acl.Config{}, nil)
	if err != nil {
		t.Fatalf("authorizer: %v", err)
	}
	k := &kafkaACLs{cache: cluster.NewACLCache(store, auth, 0, nil)}
	b := acl.Binding{Principal: "User:alice", Host: "*", Resource: acl.ResourceTopic, Name: "orders",
		Pattern: acl.PatternLiteral, Operation: acl.OpRead, Permission: acl.Allow}
	if err := k.CreateACLs(ctx, []acl.Binding{b}); err != nil {
		t.Fatalf("create: %v", err)
	}
	if auth.Len() != 1 {
		t.Fatalf("authorizer holds %d bindings after create, want 1", auth.Len())
	}
	got, err := k.DescribeACLs(ctx, acl.Filter{Resource: acl.ResourceTopic})
	if err != nil || len(got) != 1 || got[0] != b {
		t.Fatalf("describe: %v, %v", got, err)
	}
	deleted, err := k.DeleteACLs(ctx, acl.ExactFilter(b))
	if err != nil || len(deleted) != 1 || deleted[0] != b {
		t.Fatalf("delete: %v, %v", deleted, err)
	}
	if auth.Len() != 0 {
		t.Fatalf("authorizer holds %d bindings after delete, want 0", auth.Len())
	}

	down := errors.New("etcd unreachable")
	store.Err = down
	if err := k.CreateACLs(ctx, []acl.Binding{b}); !errors.Is(err, down) {
		t.Fatalf("create, store down: %v", err)
	}
	if _, err := k.DescribeACLs(ctx, acl.Filter{}); !errors.Is(err, down) {
		t.Fatalf("describe, store down: %v", err)
	}
	if _, err := k.DeleteACLs(ctx, acl.Filter{}); !errors.Is(err, down) {
		t.Fatalf("delete, store down: %v", err)
	}
}
