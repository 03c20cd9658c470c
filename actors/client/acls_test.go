// acls_test.go: the Client's ACL and SCRAM calls against a real
// controller actor (on a MemStore, fenced mem ACL and SCRAM stores) in the
// client's own actor system, reached as a bootstrap host's controller, and
// the NOT_CONTROLLER retry against a fake one.

package client_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/actors/controller"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/internal/acl"
	"github.com/actorlog/actorlog/messages"
)

// selfClient returns a client whose own endpoint is its only bootstrap
// host (one remote per process: see bootstrap_test.go).
func selfClient(t *testing.T) *client.Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{Bootstrap: []string{addr}, Listen: addr, RequestTimeout: 5 * time.Second, Logger: logrus.NewEntry(logrus.New())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestClientACLsAndScramThroughController(t *testing.T) {
	c := selfClient(t)
	mem := clustertest.NewMemStore(t)
	clustertest.RegisterMem(t, mem, 1, 17001)
	acls, scram := cluster.NewMemACLStore(), cluster.NewMemScramStore()
	acls.FenceHolds, scram.FenceHolds = cluster.MemFenceCheck(mem), cluster.MemFenceCheck(mem)
	pid, err := c.System().Root.SpawnNamed(controller.Props(controller.Config{
		HostID: 1, Store: mem, ACLs: acls, Scram: scram, RequestTimeout: 5 * time.Second, Logger: clustertest.Logger(t),
	}), messages.ControllerActorID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.System().Root.StopFuture(pid).Wait(); err != nil {
			t.Errorf("stop controller: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	alice := acl.Binding{Principal: "User:alice", Host: "*", Resource: acl.ResourceGroup, Name: "g-",
		Pattern: acl.PatternPrefixed, Operation: acl.OpRead, Permission: acl.Allow}
	bad := alice
	bad.Name = ""
	errs, err := c.CreateACLs(ctx, []acl.Binding{alice, bad})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if len(errs) != 2 || errs[0] != nil || !errors.Is(errs[1], &messages.Error{Code: messages.ErrorCode_ERROR_CODE_INVALID_REQUEST}) {
		t.Fatalf("create results %v", errs)
	}
	got, err := c.DescribeACLs(ctx, acl.Filter{Resource: acl.ResourceGroup})
	if err != nil || len(got) != 1 || got[0] != alice {
		t.Fatalf("describe: %v, %v", got, err)
	}
	stored, err := acls.ListACLs(ctx, acl.Filter{})
	if err != nil || len(stored) != 1 {
		t.Fatalf("store: %v, %v", stored, err)
	}
	dels, err := c.DeleteACLs(ctx, []acl.Filter{acl.ExactFilter(alice), acl.ExactFilter(alice)})
	if err != nil || len(dels) != 2 || len(dels[0].Deleted) != 1 || dels[0].Deleted[0] != alice || len(dels[1].Deleted) != 0 || dels[0].Err != nil {
		t.Fatalf("delete: %+v, %v", dels, err)
	}

	up := &messages.ScramUpsertion{User: "alice", Mechanism: cluster.ScramSHA256, Salt: []byte("s"), Iterations: 4096,
		StoredKey: bytes.Repeat([]byte{1}, 32), ServerKey: bytes.Repeat([]byte{2}, 32)}
	resp, err := c.AlterScramCredentials(ctx, []*messages.ScramUpsertion{up}, []*messages.ScramDeletion{{User: "bob", Mechanism: cluster.ScramSHA512}})
	if err != nil {
		t.Fatalf("alter SCRAM: %v", err)
	}
	if resp.UpsertionResults[0].ErrorCode != 0 || !resp.DeletionResults[0].NotFound {
		t.Fatalf("alter SCRAM results %v / %v", resp.UpsertionResults, resp.DeletionResults)
	}
	users, err := c.DescribeScramUsers(ctx)
	if err != nil || len(users) != 1 || users[0].User != "alice" || users[0].Mechanisms[0].Iterations != 4096 {
		t.Fatalf("describe users: %v, %v", users, err)
	}

	// Too many bindings: the request as a whole is refused.
	many := make([]acl.Binding, controller.MaxSecurityItems+1)
	for i := range many {
		many[i] = alice
	}
	if _, err := c.CreateACLs(ctx, many); !errors.Is(err, &messages.Error{Code: messages.ErrorCode_ERROR_CODE_INVALID_REQUEST}) {
		t.Fatalf("oversized create: %v", err)
	}
}

// NOT_CONTROLLER is retried until the controller answers otherwise.
func TestClientACLsRetryNotController(t *testing.T) {
	c := selfClient(t)
	var asked atomic.Int32
	_, err := c.System().Root.SpawnNamed(actor.PropsFromFunc(func(ctx actor.Context) {
		req, ok := ctx.Message().(*messages.CreateAclsRequest)
		if !ok {
			return
		}
		if asked.Add(1) <= 2 {
			ctx.Respond(messages.ErrorReply(req, req.CorrelationId, messages.ErrorCode_ERROR_CODE_NOT_CONTROLLER, "electing"))
			return
		}
		ctx.Respond(&messages.CreateAclsResponse{CorrelationId: req.CorrelationId, Results: make([]*messages.AclResult, len(req.Bindings))})
	}), messages.ControllerActorID)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b := acl.Binding{Principal: "User:a", Host: "*", Resource: acl.ResourceTopic, Name: "t", Pattern: acl.PatternLiteral, Operation: acl.OpRead, Permission: acl.Allow}
	errs, err := c.CreateACLs(ctx, []acl.Binding{b})
	if err != nil || len(errs) != 1 || errs[0] != nil {
		t.Fatalf("create after two NOT_CONTROLLER: %v, %v", errs, err)
	}
	if n := asked.Load(); n != 3 {
		t.Fatalf("asked %d times, want 3", n)
	}
	// Until ctx ends: then the last NOT_CONTROLLER is the error.
	asked.Store(-100)
	short, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	if _, err := c.CreateACLs(short, []acl.Binding{b}); !errors.Is(err, &messages.Error{Code: messages.ErrorCode_ERROR_CODE_NOT_CONTROLLER}) {
		t.Fatalf("create while no controller: %v", err)
	}
}
