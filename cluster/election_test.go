// election_test.go: controller election and fencing against a real
// embedded etcd.

package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
)

type campaignResult struct {
	fence cluster.Fence
	err   error
}

// campaignAsync runs Campaign in a goroutine.
func campaignAsync(ctx context.Context, el cluster.Election, value string) <-chan campaignResult {
	ch := make(chan campaignResult, 1)
	go func() {
		f, err := el.Campaign(ctx, value)
		ch <- campaignResult{f, err}
	}()
	return ch
}

// waitCandidates waits until n candidates have keys under the election
// prefix, i.e. have entered Campaign.
func waitCandidates(t *testing.T, s *cluster.Store, n int64) {
	t.Helper()
	waitFor(t, 5*time.Second, func() error {
		resp, err := s.Client().Get(context.Background(), s.Keys().Election()+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return err
		}
		if resp.Count != n {
			return fmt.Errorf("%d candidates, want %d", resp.Count, n)
		}
		return nil
	})
}

// newCandidate makes an election on its own client of e, closed at cleanup.
// Its TTL is 3 s, so keepalives go every second and Done follows a lost
// lease within about a second.
func newCandidate(t *testing.T, e *cluster.Etcd) (*cluster.Store, cluster.Election) {
	t.Helper()
	s := cluster.NewStore(newClient(t, e), "", clustertest.Logger(t))
	el, err := s.NewElection(testCtx(t, 5*time.Second), 3*time.Second)
	if err != nil {
		t.Fatalf("new election: %v", err)
	}
	t.Cleanup(func() {
		if err := el.Close(); err != nil {
			t.Errorf("close election: %v", err)
		}
	})
	return s, el
}

func TestElectionFailover(t *testing.T) {
	for _, how := range []string{"resign", "close"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			e := clustertest.StartEtcd(t)
			ctx := testCtx(t, 20*time.Second)
			s1, el1 := newCandidate(t, e)
			s2, el2 := newCandidate(t, e)

			if _, _, err := s1.Controller(ctx); !errors.Is(err, cluster.ErrNoController) {
				t.Fatalf("controller before any campaign: %v", err)
			}
			f1, err := el1.Campaign(ctx, "host-1")
			if err != nil {
				t.Fatalf("campaign 1: %v", err)
			}
			second := campaignAsync(ctx, el2, "host-2")
			waitCandidates(t, s1, 2)
			select {
			case r := <-second:
				t.Fatalf("second candidate elected while the first leads: %+v", r)
			default:
			}
			value, cur, err := s2.Controller(ctx)
			if err != nil || value != "host-1" || cur != f1 {
				t.Fatalf("controller = %q %v %v, want host-1 %v", value, cur, err, f1)
			}

			// The first controller's fence works.
			if err := s1.CreateTopic(ctx, f1, newTopic(t, "t1", 1, 1, nil)); err != nil {
				t.Fatalf("create with the leader's fence: %v", err)
			}
			_, rev, err := s1.GetTopic(ctx, "t1")
			if err != nil {
				t.Fatal(err)
			}

			if how == "resign" {
				if err := el1.Resign(ctx); err != nil {
					t.Fatalf("resign: %v", err)
				}
			} else {
				if err := el1.Close(); err != nil {
					t.Fatalf("close: %v", err)
				}
				if err := closedWithin(el1.Done(), time.Second); err != nil {
					t.Fatalf("Done after Close: %v", err)
				}
			}
			r := recv(t, second, 5*time.Second)
			if r.err != nil {
				t.Fatalf("campaign 2: %v", r.err)
			}
			f2 := r.fence
			if f2.Epoch <= f1.Epoch || f2.Key == f1.Key {
				t.Fatalf("new fence %v, old %v: want a larger epoch and another key", f2, f1)
			}

			// The old fence is dead for every kind of write; the new works.
			wantErr(t, s1.CreateTopic(ctx, f1, newTopic(t, "t2", 1, 1, nil)), cluster.ErrNotController)
			wantErr(t, s1.UpdateTopic(ctx, f1, newTopic(t, "t1", 1, 1, nil), rev), cluster.ErrNotController)
			wantErr(t, s1.DeleteTopic(ctx, f1, "t1"), cluster.ErrNotController)
			if _, _, err := s1.GetTopic(ctx, "t2"); !errors.Is(err, cluster.ErrUnknownTopic) {
				t.Fatalf("a fenced-off create left a topic: %v", err)
			}
			if err := s2.UpdateTopic(ctx, f2, newTopic(t, "t1", 1, 1, nil), rev); err != nil {
				t.Fatalf("update with the new fence: %v", err)
			}
			if value, cur, err := s1.Controller(ctx); err != nil || value != "host-2" || cur != f2 {
				t.Fatalf("controller = %q %v %v, want host-2 %v", value, cur, err, f2)
			}

			// A resigned candidate may campaign again and wins after the
			// second leaves, with a still larger epoch.
			if how == "resign" {
				third := campaignAsync(ctx, el1, "host-1 again")
				waitCandidates(t, s1, 2)
				if err := el2.Resign(ctx); err != nil {
					t.Fatal(err)
				}
				r := recv(t, third, 5*time.Second)
				if r.err != nil || r.fence.Epoch <= f2.Epoch {
					t.Fatalf("third campaign: %+v", r)
				}
				wantErr(t, s2.DeleteTopic(ctx, f2, "t1"), cluster.ErrNotController)
			}
		})
	}
}

// TestElectionLeaseLost: when the controller's lease goes (here: revoked
// behind its back, as when it expires), Done fires and its fence is dead.
func TestElectionLeaseLost(t *testing.T) {
	t.Parallel()
	e := clustertest.StartEtcd(t)
	ctx := testCtx(t, 20*time.Second)
	s, el := newCandidate(t, e)
	f, err := el.Campaign(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := e.Client().Get(ctx, f.Key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("election key: %v %v", resp, err)
	}
	if _, err := e.Client().Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	if err := closedWithin(el.Done(), 5*time.Second); err != nil {
		t.Fatalf("Done after the lease was revoked: %v", err)
	}
	wantErr(t, s.CreateTopic(ctx, f, newTopic(t, "t", 1, 1, nil)), cluster.ErrNotController)
	// Campaigning on a dead session fails at once.
	_, err = el.Campaign(ctx, "x")
	if err == nil {
		t.Fatal("campaign on a lost session succeeded")
	}
}

// TestCampaignCancel: a standby whose context ends withdraws its
// candidacy; closing a waiting candidate aborts its Campaign.
func TestCampaignCancel(t *testing.T) {
	t.Parallel()
	e := clustertest.StartEtcd(t)
	ctx := testCtx(t, 20*time.Second)
	s1, el1 := newCandidate(t, e)
	_, el2 := newCandidate(t, e)
	_, el3 := newCandidate(t, e)
	if _, err := el1.Campaign(ctx, "leader"); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	standby := campaignAsync(cctx, el2, "standby")
	waitCandidates(t, s1, 2)
	cancel()
	if r := recv(t, standby, 5*time.Second); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled campaign: %+v", r)
	}
	waitCandidates(t, s1, 1)

	closed := campaignAsync(ctx, el3, "closed")
	waitCandidates(t, s1, 2)
	if err := el3.Close(); err != nil {
		t.Fatal(err)
	}
	if r := recv(t, closed, 5*time.Second); !errors.Is(r.err, cluster.ErrLeaseLost) {
		t.Fatalf("campaign of a closed candidate: %+v", r)
	}
	waitCandidates(t, s1, 1)
}
