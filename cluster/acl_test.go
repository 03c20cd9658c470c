// acl_test.go: the ACL binding store against a real embedded etcd and
// MemACLStore with one table of expectations, corrupt values in etcd, and
// ACLCache following both (watch) and a store it must poll.

package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/internal/acl"
	"github.com/actorlog/actorlog/internal/poll"
)

func aclTopic(principal, name string, pattern acl.PatternType, op acl.Operation, perm acl.Permission) acl.Binding {
	return acl.Binding{Principal: principal, Host: "*", Resource: acl.ResourceTopic, Name: name, Pattern: pattern, Operation: op, Permission: perm}
}

func aclStores() []struct {
	name string
	new  func(t *testing.T) cluster.ACLStore
} {
	return []struct {
		name string
		new  func(t *testing.T) cluster.ACLStore
	}{
		{"etcd", func(t *testing.T) cluster.ACLStore { s, _ := clustertest.NewStore(t); return s }},
		{"mem", func(t *testing.T) cluster.ACLStore { return cluster.NewMemACLStore() }},
	}
}

func sameBindings(got, want []acl.Binding) error {
	if len(got) != len(want) {
		return fmt.Errorf("got %d bindings %v, want %d %v", len(got), got, len(want), want)
	}
	set := map[acl.Binding]bool{}
	for _, b := range want {
		set[b] = true
	}
	for _, b := range got {
		if !set[b] {
			return fmt.Errorf("unexpected binding %s in %v, want %v", b, got, want)
		}
		delete(set, b)
	}
	if len(set) != 0 {
		return fmt.Errorf("got %v, want %v (duplicates)", got, want)
	}
	return nil
}

func TestACLStore(t *testing.T) {
	s := func(v string) *string { return &v }
	readBob := aclTopic("User:bob", "orders", acl.PatternLiteral, acl.OpRead, acl.Allow)
	odd := acl.Binding{Principal: "User:a/b c=,%:x", Host: "fe80::1", Resource: acl.ResourceGroup, Name: "g/../%2F*", Pattern: acl.PatternPrefixed, Operation: acl.OpAll, Permission: acl.Deny}
	star := aclTopic(acl.WildcardPrincipal, "*", acl.PatternLiteral, acl.OpDescribe, acl.Allow)
	pre := aclTopic("User:bob", "ord", acl.PatternPrefixed, acl.OpWrite, acl.Allow)
	cl := acl.Binding{Principal: "Host:host1", Host: "*", Resource: acl.ResourceCluster, Name: acl.ClusterName, Pattern: acl.PatternLiteral, Operation: acl.OpClusterAction, Permission: acl.Allow}
	all := []acl.Binding{readBob, odd, star, pre, cl}
	for _, st := range aclStores() {
		t.Run(st.name, func(t *testing.T) {
			store := st.new(t)
			ctx := testCtx(t, 30*time.Second)
			if got, err := store.ListACLs(ctx, acl.Filter{}); err != nil || len(got) != 0 {
				t.Fatalf("list empty: %v %v", got, err)
			}
			// Duplicates within a call and across calls are one binding.
			if err := store.AddACLs(ctx, []acl.Binding{readBob, odd, readBob}); err != nil {
				t.Fatalf("add: %v", err)
			}
			if err := store.AddACLs(ctx, all); err != nil {
				t.Fatalf("add again: %v", err)
			}
			got, err := store.ListACLs(ctx, acl.Filter{})
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			if err := sameBindings(got, all); err != nil {
				t.Fatalf("list all: %v", err)
			}
			// Invalid: nothing of the call is written.
			bad := readBob
			bad.Pattern, bad.Name = acl.PatternPrefixed, "*"
			newOne := aclTopic("User:new", "x", acl.PatternLiteral, acl.OpRead, acl.Allow)
			if err := store.AddACLs(ctx, []acl.Binding{newOne, bad}); !errors.Is(err, acl.ErrInvalidBinding) {
				t.Fatalf("add invalid: %v, want ErrInvalidBinding", err)
			}
			if got, _ := store.ListACLs(ctx, acl.ExactFilter(newOne)); len(got) != 0 {
				t.Fatalf("a call with an invalid binding wrote %v", got)
			}
			for _, c := range []struct {
				name string
				f    acl.Filter
				want []acl.Binding
			}{
				{"resource", acl.Filter{Resource: acl.ResourceGroup}, []acl.Binding{odd}},
				{"cluster", acl.Filter{Resource: acl.ResourceCluster}, []acl.Binding{cl}},
				{"match orders", acl.Filter{Resource: acl.ResourceTopic, Pattern: acl.PatternMatch, Name: s("orders")}, []acl.Binding{readBob, star, pre}},
				{"principal", acl.Filter{Principal: s("User:bob")}, []acl.Binding{readBob, pre}},
				{"exact odd", acl.ExactFilter(odd), []acl.Binding{odd}},
				{"host", acl.Filter{Host: s("fe80::1")}, []acl.Binding{odd}},
			} {
				got, err := store.ListACLs(ctx, c.f)
				if err != nil {
					t.Fatalf("list %s: %v", c.name, err)
				}
				if err := sameBindings(got, c.want); err != nil {
					t.Fatalf("list %s: %v", c.name, err)
				}
			}
			if _, err := store.ListACLs(ctx, acl.Filter{Operation: 42}); !errors.Is(err, acl.ErrInvalidBinding) {
				t.Fatalf("list with an invalid filter: %v", err)
			}
			deleted, err := store.DeleteACLs(ctx, acl.Filter{Principal: s("User:bob")})
			if err != nil {
				t.Fatalf("delete: %v", err)
			}
			if err := sameBindings(deleted, []acl.Binding{readBob, pre}); err != nil {
				t.Fatalf("deleted: %v", err)
			}
			if deleted, err := store.DeleteACLs(ctx, acl.Filter{Principal: s("User:bob")}); err != nil || len(deleted) != 0 {
				t.Fatalf("delete again: %v %v", deleted, err)
			}
			got, err = store.ListACLs(ctx, acl.Filter{})
			if err != nil {
				t.Fatalf("list after delete: %v", err)
			}
			if err := sameBindings(got, []acl.Binding{odd, star, cl}); err != nil {
				t.Fatalf("list after delete: %v", err)
			}
		})
	}
}

// TestACLStoreManyBindings crosses the transaction batch size.
func TestACLStoreManyBindings(t *testing.T) {
	for _, st := range aclStores() {
		t.Run(st.name, func(t *testing.T) {
			store := st.new(t)
			ctx := testCtx(t, 30*time.Second)
			var bs []acl.Binding
			for i := range 150 {
				bs = append(bs, aclTopic(fmt.Sprintf("User:u%d", i), fmt.Sprintf("t%d", i), acl.PatternLiteral, acl.OpRead, acl.Allow))
			}
			if err := store.AddACLs(ctx, bs); err != nil {
				t.Fatalf("add: %v", err)
			}
			got, err := store.ListACLs(ctx, acl.Filter{})
			if err != nil || len(got) != len(bs) {
				t.Fatalf("list: %d bindings, %v", len(got), err)
			}
			deleted, err := store.DeleteACLs(ctx, acl.Filter{})
			if err != nil {
				t.Fatalf("delete: %v", err)
			}
			if err := sameBindings(deleted, bs); err != nil {
				t.Fatalf("deleted: %v", err)
			}
		})
	}
}

// TestACLStoreCorruptValues writes bad values under the ACL prefix: they
// are skipped and logged, never bindings, and never break a list.
func TestACLStoreCorruptValues(t *testing.T) {
	e := clustertest.StartEtcd(t)
	logger, hook := logtest.NewNullLogger()
	store := cluster.NewStore(e.Client(), "/test/"+t.Name()+"/", logrus.NewEntry(logger))
	ctx := testCtx(t, 30*time.Second)
	good := aclTopic("User:bob", "orders", acl.PatternLiteral, acl.OpRead, acl.Allow)
	if err := store.AddACLs(ctx, []acl.Binding{good}); err != nil {
		t.Fatalf("add: %v", err)
	}
	keys := store.Keys()
	other := aclTopic("User:eve", "orders", acl.PatternLiteral, acl.OpAll, acl.Allow)
	corrupt := map[string]string{
		keys.ACLsOf(acl.ResourceTopic) + "garbage":                                        "{not json",
		keys.ACLsOf(acl.ResourceTopic) + "invalid":                                        `{"principal":"User:eve","host":"*","resource_type":"TOPIC","name":"","pattern_type":"LITERAL","operation":"ALL","permission":"ALLOW"}`,
		keys.ACLsOf(acl.ResourceTopic) + "unknown-op":                                     `{"principal":"User:eve","host":"*","resource_type":"TOPIC","name":"x","pattern_type":"LITERAL","operation":"FLY","permission":"ALLOW"}`,
		keys.ACL(aclTopic("User:eve", "other", acl.PatternLiteral, acl.OpAll, acl.Allow)): mustJSON(t, other), // valid, under another binding's key
	}
	for k, v := range corrupt {
		if _, err := e.Client().Put(ctx, k, v); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
	}
	for range 2 { // each bad record is logged once
		got, err := store.ListACLs(ctx, acl.Filter{})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if err := sameBindings(got, []acl.Binding{good}); err != nil {
			t.Fatalf("list with corrupt values: %v", err)
		}
	}
	logged := map[string]bool{}
	for _, entry := range hook.AllEntries() {
		if k, ok := entry.Data["key"].(string); ok && entry.Level <= logrus.WarnLevel {
			if logged[k] {
				t.Errorf("key %s logged twice", k)
			}
			logged[k] = true
		}
	}
	for k := range corrupt {
		if !logged[k] {
			t.Errorf("corrupt key %s not logged; logged %v", k, logged)
		}
	}
	deleted, err := store.DeleteACLs(ctx, acl.Filter{})
	if err != nil {
		t.Fatalf("delete all: %v", err)
	}
	if err := sameBindings(deleted, []acl.Binding{good}); err != nil {
		t.Fatalf("deleted: %v", err)
	}
	// The cache loads around the corrupt values too.
	auth, err := acl.New(acl.Config{}, nil)
	if err != nil {
		t.Fatalf("acl.New: %v", err)
	}
	if err := cluster.NewACLCache(store, auth, 0, nil).Load(ctx); err != nil || auth.Len() != 0 {
		t.Fatalf("cache load over corrupt values: %d bindings, %v", auth.Len(), err)
	}
}

func mustJSON(t *testing.T, b acl.Binding) string {
	t.Helper()
	raw, err := json.Marshal(b)
	if err != nil {
		t.Fatalf("marshal %s: %v", b, err)
	}
	return string(raw)
}

// pollOnlyACLStore hides the store's watch: the cache must poll it.
type pollOnlyACLStore struct{ cluster.ACLStore }

// TestACLCache checks that a change made on another host (straight to
// the store) reaches the Authorizer, by watch (etcd, mem) or by polling,
// and that writes through the cache apply before they return.
func TestACLCache(t *testing.T) {
	type variant struct {
		name    string
		store   func(t *testing.T) cluster.ACLStore
		poll    time.Duration
		maxWait time.Duration
	}
	variants := []variant{
		// The poll interval is long: only the watch can be this fast.
		{"etcd watch", func(t *testing.T) cluster.ACLStore { s, _ := clustertest.NewStore(t); return s }, time.Hour, 5 * time.Second},
		{"mem watch", func(t *testing.T) cluster.ACLStore { return cluster.NewMemACLStore() }, time.Hour, 5 * time.Second},
		{"poll", func(t *testing.T) cluster.ACLStore { return pollOnlyACLStore{cluster.NewMemACLStore()} }, 50 * time.Millisecond, 5 * time.Second},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			ctx := testCtx(t, 30*time.Second)
			store := v.store(t)
			auth, err := acl.New(acl.Config{}, nil)
			if err != nil {
				t.Fatalf("acl.New: %v", err)
			}
			c := cluster.NewACLCache(store, auth, v.poll, clustertest.Logger(t))
			readBob := aclTopic("User:bob", "orders", acl.PatternLiteral, acl.OpRead, acl.Allow)
			// Present before Run: loaded by Run's first list.
			if err := store.AddACLs(ctx, []acl.Binding{readBob}); err != nil {
				t.Fatalf("add: %v", err)
			}
			runCtx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); c.Run(runCtx) }()
			t.Cleanup(func() { stop(); <-done })
			allowed := func(principal string, op acl.Operation, want bool) func() error {
				return func() error {
					if d := auth.Authorize(principal, "10.0.0.1", op, acl.ResourceTopic, "orders"); d.Allowed != want {
						return fmt.Errorf("%s %s: %+v, want allowed %v", principal, op, d, want)
					}
					return nil
				}
			}
			poll.Until(t, v.maxWait, allowed("User:bob", acl.OpRead, true))
			// Another host denies bob.
			if err := store.AddACLs(ctx, []acl.Binding{aclTopic("User:bob", "ord", acl.PatternPrefixed, acl.OpAll, acl.Deny)}); err != nil {
				t.Fatalf("add deny: %v", err)
			}
			took := poll.Until(t, v.maxWait, allowed("User:bob", acl.OpRead, false))
			t.Logf("a deny added elsewhere applied after %v", took)
			// Another host deletes it.
			if _, err := store.DeleteACLs(ctx, acl.Filter{Permission: acl.Deny}); err != nil {
				t.Fatalf("delete deny: %v", err)
			}
			took = poll.Until(t, v.maxWait, allowed("User:bob", acl.OpRead, true))
			t.Logf("a delete elsewhere applied after %v", took)
			// Through the cache: applied on return.
			if err := c.Add(ctx, []acl.Binding{aclTopic("User:carol", "orders", acl.PatternLiteral, acl.OpWrite, acl.Allow)}); err != nil {
				t.Fatalf("cache add: %v", err)
			}
			if err := allowed("User:carol", acl.OpWrite, true)(); err != nil {
				t.Fatalf("after cache Add: %v", err)
			}
			deleted, err := c.Delete(ctx, acl.Filter{Principal: strPtr("User:carol")})
			if err != nil || len(deleted) != 1 {
				t.Fatalf("cache delete: %v %v", deleted, err)
			}
			if err := allowed("User:carol", acl.OpWrite, false)(); err != nil {
				t.Fatalf("after cache Delete: %v", err)
			}
		})
	}
}

func strPtr(s string) *string { return &s }

// TestACLCacheStoreDown: a store that fails keeps the last set loaded and
// Load says why.
func TestACLCacheStoreDown(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	m := cluster.NewMemACLStore()
	if err := m.AddACLs(ctx, []acl.Binding{aclTopic("User:bob", "orders", acl.PatternLiteral, acl.OpRead, acl.Allow)}); err != nil {
		t.Fatalf("add: %v", err)
	}
	auth, err := acl.New(acl.Config{}, nil)
	if err != nil {
		t.Fatalf("acl.New: %v", err)
	}
	c := cluster.NewACLCache(m, auth, 0, clustertest.Logger(t))
	if err := c.Load(ctx); err != nil || auth.Len() != 1 {
		t.Fatalf("load: %d, %v", auth.Len(), err)
	}
	down := cluster.NewMemACLStore()
	down.Err = errors.New("store down")
	c = cluster.NewACLCache(down, auth, 0, clustertest.Logger(t))
	if err := c.Load(ctx); err == nil || !strings.Contains(err.Error(), "store down") {
		t.Fatalf("load from a failing store: %v", err)
	}
	if auth.Len() != 1 {
		t.Fatalf("a failed load changed the set: %v", auth.Bindings())
	}
}
