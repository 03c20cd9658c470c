// authorizer_test.go: Authorizer's decisions, every operation against
// every rule of Kafka's AclAuthorizer, and a concurrent swap of the set.

package acl

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// concreteOps are the operations a request can ask for.
var concreteOps = []Operation{
	OpRead, OpWrite, OpCreate, OpDelete, OpAlter, OpDescribe,
	OpClusterAction, OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite,
}

func topic(principal, name string, pattern PatternType, op Operation, perm Permission) Binding {
	return Binding{Principal: principal, Host: "*", Resource: ResourceTopic, Name: name, Pattern: pattern, Operation: op, Permission: perm}
}

func TestAuthorizeEveryOperation(t *testing.T) {
	const bob, client = "User:bob", "10.0.0.2"
	type request struct {
		principal, host string
		op              Operation
		res             ResourceType
		name            string
	}
	type scenario struct {
		name     string
		cfg      Config
		bindings []Binding
		req      request
		allowed  bool
		reason   string // substring of Decision.Reason
	}
	otherTopic := topic("User:carol", "other", PatternLiteral, OpAll, Allow)
	for _, op := range concreteOps {
		req := request{bob, client, op, ResourceTopic, "orders"}
		describeImplied := slices.Contains([]Operation{OpDescribe, OpRead, OpWrite, OpDelete, OpAlter}, op)
		describeConfigsImplied := op == OpDescribeConfigs || op == OpAlterConfigs
		scenarios := []scenario{
			{name: "no ACL, allow everyone off", bindings: []Binding{otherTopic}, req: req,
				reason: "no ACL found for TOPIC orders"},
			{name: "no ACL, allow everyone on", cfg: Config{AllowEveryoneIfNoACLFound: true}, bindings: []Binding{otherTopic}, req: req,
				allowed: true, reason: "no ACL found for TOPIC orders; everyone is allowed"},
			{name: "empty set, allow everyone on", cfg: Config{AllowEveryoneIfNoACLFound: true}, req: req, allowed: true},
			{name: "allow", bindings: []Binding{topic(bob, "orders", PatternLiteral, op, Allow)}, req: req,
				allowed: true, reason: fmt.Sprintf("allowed by User:bob ALLOW %s on TOPIC orders (LITERAL)", op)},
			{name: "allow all", bindings: []Binding{topic(bob, "orders", PatternLiteral, OpAll, Allow)}, req: req,
				allowed: true, reason: "allowed by User:bob ALLOW ALL on TOPIC orders (LITERAL)"},
			{name: "ACL for another principal only", cfg: Config{AllowEveryoneIfNoACLFound: true},
				bindings: []Binding{topic("User:carol", "orders", PatternLiteral, op, Allow)}, req: req,
				reason: fmt.Sprintf("no ACL allows User:bob to %s TOPIC orders", op)},
			{name: "allow of another operation", bindings: []Binding{topic(bob, "orders", PatternLiteral, otherOp(op), Allow)}, req: req,
				allowed: op == OpDescribe && slices.Contains([]Operation{OpRead, OpWrite, OpDelete, OpAlter}, otherOp(op)) ||
					op == OpDescribeConfigs && otherOp(op) == OpAlterConfigs},
			{name: "deny beats allow", cfg: Config{AllowEveryoneIfNoACLFound: true},
				bindings: []Binding{topic(bob, "orders", PatternLiteral, op, Allow), topic(bob, "orders", PatternLiteral, op, Deny)}, req: req,
				reason: fmt.Sprintf("denied by User:bob DENY %s on TOPIC orders (LITERAL)", op)},
			{name: "deny all beats allow", bindings: []Binding{topic(bob, "*", PatternLiteral, op, Allow), topic(bob, "ord", PatternPrefixed, OpAll, Deny)}, req: req,
				reason: "denied by User:bob DENY ALL on TOPIC ord (PREFIXED)"},
			{name: "wildcard deny beats own allow", bindings: []Binding{topic(bob, "orders", PatternLiteral, op, Allow), topic("User:*", "orders", PatternLiteral, op, Deny)}, req: req,
				reason: "denied by User:* DENY"},
			{name: "deny of another operation", bindings: []Binding{topic(bob, "orders", PatternLiteral, op, Allow), topic(bob, "orders", PatternLiteral, otherOp(op), Deny)}, req: req,
				allowed: true},
			{name: "prefixed allow", bindings: []Binding{topic(bob, "ord", PatternPrefixed, op, Allow)}, req: req,
				allowed: true, reason: "(PREFIXED)"},
			{name: "prefixed allow, whole name", bindings: []Binding{topic(bob, "orders", PatternPrefixed, op, Allow)}, req: req, allowed: true},
			{name: "prefixed does not match", bindings: []Binding{topic(bob, "orders-", PatternPrefixed, op, Allow)}, req: req,
				reason: "no ACL found"},
			{name: "literal is not a prefix", bindings: []Binding{topic(bob, "ord", PatternLiteral, op, Allow)}, req: req,
				reason: "no ACL found"},
			{name: "wildcard principal", bindings: []Binding{topic(WildcardPrincipal, "orders", PatternLiteral, op, Allow)}, req: req,
				allowed: true, reason: "allowed by User:* ALLOW"},
			{name: "wildcard principal matches a host principal", bindings: []Binding{topic(WildcardPrincipal, "orders", PatternLiteral, op, Allow)},
				req: request{"Host:host1", client, op, ResourceTopic, "orders"}, allowed: true},
			{name: "wildcard resource", bindings: []Binding{topic(bob, "*", PatternLiteral, op, Allow)}, req: req,
				allowed: true, reason: fmt.Sprintf("allowed by User:bob ALLOW %s on TOPIC * (LITERAL)", op)},
			{name: "host matches", bindings: []Binding{{Principal: bob, Host: "10.0.0.2", Resource: ResourceTopic, Name: "orders", Pattern: PatternLiteral, Operation: op, Permission: Allow}},
				req: req, allowed: true, reason: "from host 10.0.0.2"},
			{name: "host matches, IPv4-mapped client", bindings: []Binding{{Principal: bob, Host: "10.0.0.2", Resource: ResourceTopic, Name: "orders", Pattern: PatternLiteral, Operation: op, Permission: Allow}},
				req: request{bob, "::ffff:10.0.0.2", op, ResourceTopic, "orders"}, allowed: true},
			{name: "host mismatch", cfg: Config{AllowEveryoneIfNoACLFound: true},
				bindings: []Binding{{Principal: bob, Host: "10.0.0.1", Resource: ResourceTopic, Name: "orders", Pattern: PatternLiteral, Operation: op, Permission: Allow}},
				req:      req, reason: "no ACL allows"},
			{name: "deny from another host", bindings: []Binding{topic(bob, "orders", PatternLiteral, op, Allow),
				{Principal: bob, Host: "10.0.0.1", Resource: ResourceTopic, Name: "orders", Pattern: PatternLiteral, Operation: op, Permission: Deny}},
				req: req, allowed: true},
			{name: "super user", cfg: Config{SuperUsers: []string{"User:admin"}},
				bindings: []Binding{topic("User:admin", "orders", PatternLiteral, OpAll, Deny)},
				req:      request{"User:admin", client, op, ResourceTopic, "orders"}, allowed: true, reason: "User:admin is a super user"},
			{name: "super users are exact", cfg: Config{SuperUsers: []string{"User:*"}},
				bindings: []Binding{otherTopic}, req: req},
			{name: "implied Describe", bindings: []Binding{topic(bob, "orders", PatternLiteral, op, Allow)},
				req: request{bob, client, OpDescribe, ResourceTopic, "orders"}, allowed: describeImplied},
			{name: "implied DescribeConfigs", bindings: []Binding{topic(bob, "orders", PatternLiteral, op, Allow)},
				req: request{bob, client, OpDescribeConfigs, ResourceTopic, "orders"}, allowed: describeConfigsImplied},
			{name: "deny implies nothing", bindings: []Binding{topic(bob, "orders", PatternLiteral, OpAll, Allow), topic(bob, "orders", PatternLiteral, op, Deny)},
				req: request{bob, client, OpDescribe, ResourceTopic, "orders"}, allowed: op != OpDescribe},
			{name: "other resource type", cfg: Config{AllowEveryoneIfNoACLFound: true},
				bindings: []Binding{{Principal: bob, Host: "*", Resource: ResourceGroup, Name: "orders", Pattern: PatternLiteral, Operation: op, Permission: Deny}},
				req:      req, allowed: true, reason: "no ACL found"},
			{name: "cluster", bindings: []Binding{{Principal: bob, Host: "*", Resource: ResourceCluster, Name: ClusterName, Pattern: PatternLiteral, Operation: op, Permission: Allow}},
				req: request{bob, client, op, ResourceCluster, ClusterName}, allowed: true},
		}
		for _, sc := range scenarios {
			t.Run(op.String()+"/"+sc.name, func(t *testing.T) {
				a, err := New(sc.cfg, sc.bindings)
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				d := a.Authorize(sc.req.principal, sc.req.host, sc.req.op, sc.req.res, sc.req.name)
				if d.Allowed != sc.allowed || !strings.Contains(d.Reason, sc.reason) || d.Reason == "" {
					t.Fatalf("Authorize(%+v) = %+v, want allowed %v, reason containing %q", sc.req, d, sc.allowed, sc.reason)
				}
			})
		}
	}
}

// otherOp returns an operation other than op, cycling through the list so
// that every operation is some operation's other (Read's is Write, ...).
func otherOp(op Operation) Operation {
	i := slices.Index(concreteOps, op)
	return concreteOps[(i+1)%len(concreteOps)]
}

func TestAuthorizeReasons(t *testing.T) {
	a, err := New(Config{}, []Binding{
		topic("User:bob", "orders", PatternLiteral, OpWrite, Deny),
		topic("User:bob", "orders", PatternLiteral, OpRead, Allow),
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	for _, c := range []struct {
		op   Operation
		want Decision
	}{
		{OpWrite, Decision{false, "denied by User:bob DENY WRITE on TOPIC orders (LITERAL)"}},
		{OpRead, Decision{true, "allowed by User:bob ALLOW READ on TOPIC orders (LITERAL)"}},
		{OpDescribe, Decision{true, "allowed by User:bob ALLOW READ on TOPIC orders (LITERAL)"}},
		{OpCreate, Decision{false, "no ACL allows User:bob to CREATE TOPIC orders"}},
		{OpAll, Decision{false, "operation ALL cannot be authorized: want a concrete operation"}},
		{OpAny, Decision{false, "operation ANY cannot be authorized: want a concrete operation"}},
	} {
		if got := a.Authorize("User:bob", "10.0.0.2", c.op, ResourceTopic, "orders"); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.op, got, c.want)
		}
	}
}

func TestAuthorizerSetBindings(t *testing.T) {
	b := topic("User:bob", "orders", PatternLiteral, OpRead, Allow)
	a, err := New(Config{}, []Binding{b, b})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if a.Len() != 1 {
		t.Fatalf("duplicates kept: %v", a.Bindings())
	}
	bad := b
	bad.Name = ""
	if err := a.SetBindings([]Binding{b, bad}); err == nil || !strings.Contains(err.Error(), "binding 1") {
		t.Fatalf("SetBindings with an invalid binding: %v", err)
	}
	if !a.Authorize("User:bob", "1.2.3.4", OpRead, ResourceTopic, "orders").Allowed {
		t.Fatal("a failed SetBindings replaced the set")
	}
	if err := a.SetBindings(nil); err != nil {
		t.Fatalf("SetBindings(nil): %v", err)
	}
	if a.Authorize("User:bob", "1.2.3.4", OpRead, ResourceTopic, "orders").Allowed || a.Len() != 0 {
		t.Fatal("emptied set still allows")
	}
}

// TestAuthorizerConcurrentSwap swaps between two sets while readers
// authorize: each answer must come from one whole set (run with -race).
func TestAuthorizerConcurrentSwap(t *testing.T) {
	allow := []Binding{topic("User:bob", "orders", PatternLiteral, OpRead, Allow), topic("User:bob", "orders", PatternLiteral, OpWrite, Allow)}
	deny := []Binding{topic("User:bob", "orders", PatternLiteral, OpRead, Deny), topic("User:bob", "orders", PatternLiteral, OpWrite, Deny)}
	a, err := New(Config{}, allow)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan string, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				// Read and Write are allowed together or denied together
				// in both sets; mixing would show on Len too.
				if n := a.Len(); n != 2 {
					errs <- fmt.Sprintf("Len %d", n)
					return
				}
				a.Authorize("User:bob", "1.2.3.4", OpRead, ResourceTopic, "orders")
			}
		}()
	}
	for i := range 2000 {
		set := allow
		if i%2 == 1 {
			set = deny
		}
		if err := a.SetBindings(set); err != nil {
			t.Fatalf("SetBindings: %v", err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

func BenchmarkAuthorize(b *testing.B) {
	var bs []Binding
	for i := range 10000 {
		bs = append(bs, topic(fmt.Sprintf("User:u%d", i%100), fmt.Sprintf("topic-%d", i), PatternLiteral, OpRead, Allow))
	}
	for i := range 100 {
		bs = append(bs, topic("User:u1", fmt.Sprintf("p%d-", i), PatternPrefixed, OpWrite, Allow))
	}
	a, err := New(Config{}, bs)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		a.Authorize("User:u1", "10.0.0.1", OpRead, ResourceTopic, "topic-101")
	}
}

func TestAuthorizeByResourceType(t *testing.T) {
	const alice = "User:alice"
	write := func(name string, pattern PatternType, perm Permission) Binding {
		return topic(alice, name, pattern, OpWrite, perm)
	}
	for _, tc := range []struct {
		name     string
		bindings []Binding
		allowAll bool
		super    bool
		want     bool
	}{
		{name: "no bindings", want: false},
		{name: "no bindings, allow everyone", allowAll: true, want: true},
		{name: "super user", super: true, want: true},
		{name: "literal allow", bindings: []Binding{write("orders", PatternLiteral, Allow)}, want: true},
		{name: "All implies write", bindings: []Binding{topic(alice, "orders", PatternLiteral, OpAll, Allow)}, want: true},
		{name: "read does not imply write", bindings: []Binding{topic(alice, "orders", PatternLiteral, OpRead, Allow)}, want: false},
		{name: "other principal", bindings: []Binding{topic("User:bob", "orders", PatternLiteral, OpWrite, Allow)}, want: false},
		{name: "wildcard principal", bindings: []Binding{topic(WildcardPrincipal, "orders", PatternLiteral, OpWrite, Allow)}, want: true},
		{name: "literal allow, same literal deny", bindings: []Binding{write("orders", PatternLiteral, Allow), write("orders", PatternLiteral, Deny)}, want: false},
		{name: "literal allow, covering prefix deny", bindings: []Binding{write("orders", PatternLiteral, Allow), write("ord", PatternPrefixed, Deny)}, want: false},
		{name: "prefixed allow, narrower prefix deny", bindings: []Binding{write("ord", PatternPrefixed, Allow), write("orders", PatternPrefixed, Deny)}, want: true},
		{name: "prefixed allow, covering prefix deny", bindings: []Binding{write("orders", PatternPrefixed, Allow), write("ord", PatternPrefixed, Deny)}, want: false},
		{name: "wildcard deny wins", bindings: []Binding{write("orders", PatternLiteral, Allow), write(WildcardResource, PatternLiteral, Deny)}, want: false},
		{name: "wildcard allow", bindings: []Binding{write(WildcardResource, PatternLiteral, Allow), write("orders", PatternLiteral, Deny)}, want: true},
		{name: "one of two literals denied", bindings: []Binding{write("a", PatternLiteral, Allow), write("b", PatternLiteral, Allow), write("a", PatternLiteral, Deny)}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{AllowEveryoneIfNoACLFound: tc.allowAll}
			if tc.super {
				cfg.SuperUsers = []string{alice}
			}
			a, err := New(cfg, tc.bindings)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.AuthorizeByResourceType(alice, "10.0.0.1", OpWrite, ResourceTopic); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
