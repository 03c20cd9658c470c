// kafkaacls_test.go: kafkaACLs over a fake controller writing an
// in-memory store: changes reach the host's authorizer before the call
// returns, the controller's per-item and request errors come back
// wrapped (INVALID_REQUEST as acl.ErrInvalidBinding), and alterScram maps
// a deletion of an unknown credential to kafka.ErrUnknownScramUser.

package host

import (
	"context"
	"errors"
	"testing"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/internal/acl"
	"github.com/actorlog/actorlog/kafka"
	"github.com/actorlog/actorlog/messages"
)

// fakeACLController writes as the controller does: fenced, through a
// FencedACLStore, with INVALID_REQUEST per invalid binding.
type fakeACLController struct {
	store cluster.FencedACLStore
	fence cluster.Fence
	calls int
}

func (f *fakeACLController) CreateACLs(ctx context.Context, bs []acl.Binding) ([]error, error) {
	f.calls++
	errs := make([]error, len(bs))
	var valid []acl.Binding
	for i, b := range bs {
		if err := b.Validate(); err != nil {
			errs[i] = messages.ErrorCode_ERROR_CODE_INVALID_REQUEST.Err(err.Error())
			continue
		}
		valid = append(valid, b)
	}
	if len(valid) == 0 {
		return errs, nil
	}
	if err := f.store.AddACLsFenced(ctx, f.fence, valid); err != nil {
		return nil, err
	}
	return errs, nil
}

func (f *fakeACLController) DeleteACLs(ctx context.Context, filters []acl.Filter) ([]client.ACLDeletion, error) {
	f.calls++
	out := make([]client.ACLDeletion, len(filters))
	for i, flt := range filters {
		deleted, err := f.store.DeleteACLsFenced(ctx, f.fence, flt)
		if err != nil {
			return nil, err
		}
		out[i].Deleted = deleted
	}
	return out, nil
}

func TestKafkaACLs(t *testing.T) {
	ctx := context.Background()
	store := cluster.NewMemACLStore()
	auth, err := acl.New(acl.Config{}, nil)
	if err != nil {
		t.Fatalf("authorizer: %v", err)
	}
	ctrl := &fakeACLController{store: store, fence: cluster.Fence{Key: "election/1", Epoch: 7}}
	k := &kafkaACLs{cache: cluster.NewACLCache(store, auth, 0, nil), ctrl: ctrl}
	b := acl.Binding{Principal: "User:alice", Host: "*", Resource: acl.ResourceTopic, Name: "orders",
		Pattern: acl.PatternLiteral, Operation: acl.OpRead, Permission: acl.Allow}
	if err := k.CreateACLs(ctx, []acl.Binding{b}); err != nil {
		t.Fatalf("create: %v", err)
	}
	if ctrl.calls != 1 {
		t.Fatalf("create asked the controller %d times, want 1", ctrl.calls)
	}
	if auth.Len() != 1 {
		t.Fatalf("authorizer holds %d bindings after create, want 1", auth.Len())
	}
	got, err := k.DescribeACLs(ctx, acl.Filter{Resource: acl.ResourceTopic})
	if err != nil || len(got) != 1 || got[0] != b {
		t.Fatalf("describe: %v, %v", got, err)
	}
	bad := b
	bad.Host = "not-an-ip"
	if err := k.CreateACLs(ctx, []acl.Binding{bad}); !errors.Is(err, acl.ErrInvalidBinding) {
		t.Fatalf("create invalid: %v, want acl.ErrInvalidBinding", err)
	}
	deleted, err := k.DeleteACLs(ctx, acl.ExactFilter(b))
	if err != nil || len(deleted) != 1 || deleted[0] != b {
		t.Fatalf("delete: %v, %v", deleted, err)
	}
	if auth.Len() != 0 {
		t.Fatalf("authorizer holds %d bindings after delete, want 0", auth.Len())
	}

	// A deposed controller's write changes nothing and is an error.
	store.FenceHolds = func(f cluster.Fence) error { return cluster.ErrNotController }
	if err := k.CreateACLs(ctx, []acl.Binding{b}); !errors.Is(err, cluster.ErrNotController) {
		t.Fatalf("create, deposed: %v", err)
	}
	if n, err := store.ListACLs(ctx, acl.Filter{}); err != nil || len(n) != 0 {
		t.Fatalf("a refused write left %v (%v)", n, err)
	}
	store.FenceHolds = nil

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

// fakeScramController answers every request with resp.
type fakeScramController struct {
	resp *messages.AlterScramCredentialsResponse
	err  error
	got  *messages.AlterScramCredentialsRequest
}

func (f *fakeScramController) AlterScramCredentials(_ context.Context, ups []*messages.ScramUpsertion, dels []*messages.ScramDeletion) (*messages.AlterScramCredentialsResponse, error) {
	f.got = &messages.AlterScramCredentialsRequest{Upsertions: ups, Deletions: dels}
	return f.resp, f.err
}

func TestAlterScramThroughController(t *testing.T) {
	ctx := context.Background()
	notFound := &fakeScramController{resp: &messages.AlterScramCredentialsResponse{DeletionResults: []*messages.ScramResult{
		{User: "bob", Mechanism: cluster.ScramSHA256, ErrorCode: messages.ErrorCode_ERROR_CODE_INVALID_REQUEST, ErrorMessage: "no credential", NotFound: true},
	}}}
	err := alterScram(ctx, notFound, nil, &messages.ScramDeletion{User: "bob", Mechanism: cluster.ScramSHA256})
	if !errors.Is(err, kafka.ErrUnknownScramUser) {
		t.Fatalf("delete unknown: %v, want kafka.ErrUnknownScramUser", err)
	}
	if len(notFound.got.Deletions) != 1 || len(notFound.got.Upsertions) != 0 {
		t.Fatalf("sent %v, want one deletion", notFound.got)
	}

	refused := &fakeScramController{resp: &messages.AlterScramCredentialsResponse{UpsertionResults: []*messages.ScramResult{
		{User: "bob", ErrorCode: messages.ErrorCode_ERROR_CODE_INVALID_REQUEST, ErrorMessage: "bad salt"},
	}}}
	err = alterScram(ctx, refused, &messages.ScramUpsertion{User: "bob"}, nil)
	if !errors.Is(err, &messages.Error{Code: messages.ErrorCode_ERROR_CODE_INVALID_REQUEST}) || errors.Is(err, kafka.ErrUnknownScramUser) {
		t.Fatalf("upsert refused: %v", err)
	}

	ok := &fakeScramController{resp: &messages.AlterScramCredentialsResponse{UpsertionResults: []*messages.ScramResult{{User: "bob"}}}}
	if err := alterScram(ctx, ok, &messages.ScramUpsertion{User: "bob"}, nil); err != nil {
		t.Fatalf("upsert: %v", err)
	}
	down := errors.New("no controller")
	if err := alterScram(ctx, &fakeScramController{err: down}, &messages.ScramUpsertion{User: "bob"}, nil); !errors.Is(err, down) {
		t.Fatalf("controller down: %v", err)
	}
	short := &fakeScramController{resp: &messages.AlterScramCredentialsResponse{}}
	if err := alterScram(ctx, short, &messages.ScramUpsertion{User: "bob"}, nil); err == nil {
		t.Fatal("an answer without a result was taken for success")
	}
}
