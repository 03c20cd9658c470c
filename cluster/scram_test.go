// scram_test.go: the SCRAM credential store against a real embedded etcd
// and MemScramStore, with one table of expectations.

package cluster_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
)

func scramCred(mech string, iters int32, fill byte) cluster.ScramCredential {
	n := 32
	if mech == cluster.ScramSHA512 {
		n = 64
	}
	return cluster.ScramCredential{
		Salt: []byte("salt"), Iterations: iters,
		StoredKey: bytes.Repeat([]byte{fill}, n), ServerKey: bytes.Repeat([]byte{fill + 1}, n),
	}
}

func TestScramStore(t *testing.T) {
	stores := []struct {
		name string
		new  func(t *testing.T) cluster.ScramStore
	}{
		{"etcd", func(t *testing.T) cluster.ScramStore { s, _ := clustertest.NewStore(t); return s }},
		{"mem", func(t *testing.T) cluster.ScramStore { return cluster.NewMemScramStore() }},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			s := st.new(t)
			ctx := testCtx(t, 20*time.Second)
			if _, ok, err := s.GetScramUser(ctx, "alice"); err != nil || ok {
				t.Fatalf("get before put: ok %v err %v", ok, err)
			}
			for _, name := range []string{"alice", "a/b c=,%"} {
				if err := s.PutScramCredential(ctx, name, cluster.ScramSHA256, scramCred(cluster.ScramSHA256, 4096, 1)); err != nil {
					t.Fatalf("put %q: %v", name, err)
				}
			}
			if err := s.PutScramCredential(ctx, "alice", cluster.ScramSHA512, scramCred(cluster.ScramSHA512, 8192, 3)); err != nil {
				t.Fatalf("put 512: %v", err)
			}
			u, ok, err := s.GetScramUser(ctx, "alice")
			if err != nil || !ok || len(u.Credentials) != 2 || u.Credentials[cluster.ScramSHA512].Iterations != 8192 ||
				!bytes.Equal(u.Credentials[cluster.ScramSHA256].StoredKey, scramCred(cluster.ScramSHA256, 4096, 1).StoredKey) {
				t.Fatalf("get alice: %+v ok %v err %v", u, ok, err)
			}
			users, err := s.ListScramUsers(ctx)
			if err != nil || len(users) != 2 || users[0].Name != "a/b c=,%" || users[1].Name != "alice" {
				t.Fatalf("list: %+v err %v", users, err)
			}
			for _, bad := range []struct {
				name, mech string
				c          cluster.ScramCredential
			}{
				{"", cluster.ScramSHA256, scramCred(cluster.ScramSHA256, 4096, 1)},
				{"x\n", cluster.ScramSHA256, scramCred(cluster.ScramSHA256, 4096, 1)},
				{"x", "MD5", scramCred(cluster.ScramSHA256, 4096, 1)},
				{"x", cluster.ScramSHA256, scramCred(cluster.ScramSHA256, 4095, 1)},
				{"x", cluster.ScramSHA256, scramCred(cluster.ScramSHA256, 16385, 1)},
				{"x", cluster.ScramSHA512, scramCred(cluster.ScramSHA256, 4096, 1)}, // 32-byte keys for 512
			} {
				if err := s.PutScramCredential(ctx, bad.name, bad.mech, bad.c); !errors.Is(err, cluster.ErrInvalidScramCredential) {
					t.Fatalf("put %q %s %d: %v, want ErrInvalidScramCredential", bad.name, bad.mech, bad.c.Iterations, err)
				}
			}
			if err := s.DeleteScramCredential(ctx, "bob", cluster.ScramSHA256); !errors.Is(err, cluster.ErrUnknownScramUser) {
				t.Fatalf("delete unknown: %v", err)
			}
			if err := s.DeleteScramCredential(ctx, "alice", cluster.ScramSHA256); err != nil {
				t.Fatalf("delete: %v", err)
			}
			if err := s.DeleteScramCredential(ctx, "alice", cluster.ScramSHA256); !errors.Is(err, cluster.ErrUnknownScramUser) {
				t.Fatalf("delete twice: %v", err)
			}
			if err := s.DeleteScramCredential(ctx, "alice", cluster.ScramSHA512); err != nil {
				t.Fatalf("delete last: %v", err)
			}
			if _, ok, err := s.GetScramUser(ctx, "alice"); err != nil || ok {
				t.Fatalf("get after deleting every mechanism: ok %v err %v", ok, err)
			}
		})
	}
}
