// acls_test.go: `actorlog acls` flags to bindings and filters, bad input
// refused before anything is asked of the cluster, the store path over an
// in-memory store, and the output.

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/internal/acl"
)

func bindingStrs(bs []acl.Binding) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = b.String()
	}
	slices.Sort(out)
	return out
}

// filterStr describes a filter, "*" for an unset field.
func filterStr(f acl.Filter) string {
	s := func(p *string) string {
		if p == nil {
			return "*"
		}
		return *p
	}
	return strings.Join([]string{f.Resource.String(), s(f.Name), f.Pattern.String(), s(f.Principal), s(f.Host), f.Operation.String(), f.Permission.String()}, " ")
}

func filterStrs(fs []acl.Filter) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = filterStr(f)
	}
	slices.Sort(out)
	return out
}

// parseACLFlags parses args with the flags of the acls subcommand sub.
func parseACLFlags(t *testing.T, sub string, args ...string) *aclFlags {
	t.Helper()
	f := &aclFlags{}
	fs := pflag.NewFlagSet(sub, pflag.ContinueOnError)
	switch sub {
	case "add":
		f.registerAdd(fs)
	case "remove":
		f.registerRemove(fs)
	case "list":
		f.registerList(fs)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%s %v: %v", sub, args, err)
	}
	return f
}

func TestACLsAddBindings(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"one", []string{"--allow-principal", "User:alice", "--operation", "read", "--topic", "orders"},
			[]string{"User:alice ALLOW READ on TOPIC orders (LITERAL)"}},
		{"product", []string{"--allow-principal", "User:alice", "--operation", "read", "--operation", "Describe",
			"--topic", "orders", "--group", "g"}, []string{
			"User:alice ALLOW DESCRIBE on GROUP g (LITERAL)",
			"User:alice ALLOW DESCRIBE on TOPIC orders (LITERAL)",
			"User:alice ALLOW READ on GROUP g (LITERAL)",
			"User:alice ALLOW READ on TOPIC orders (LITERAL)",
		}},
		{"deny with hosts, prefixed", []string{"--deny-principal", "User:bob", "--deny-host", "10.0.0.1", "--deny-host", "10.0.0.2",
			"--operation", "write", "--topic", "logs-", "--resource-pattern-type", "prefixed"}, []string{
			"User:bob DENY WRITE on TOPIC logs- (PREFIXED) from host 10.0.0.1",
			"User:bob DENY WRITE on TOPIC logs- (PREFIXED) from host 10.0.0.2",
		}},
		{"allow and deny", []string{"--allow-principal", "User:*", "--deny-principal", "User:eve", "--operation", "idempotent-write", "--cluster"}, []string{
			"User:* ALLOW IDEMPOTENT_WRITE on CLUSTER kafka-cluster (LITERAL)",
			"User:eve DENY IDEMPOTENT_WRITE on CLUSTER kafka-cluster (LITERAL)",
		}},
		{"duplicates once", []string{"--allow-principal", "User:a", "--operation", "all", "--operation", "ALL", "--transactional-id", "tx"},
			[]string{"User:a ALLOW ALL on TRANSACTIONAL_ID tx (LITERAL)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bs, err := parseACLFlags(t, "add", tc.args...).bindings()
			if err != nil {
				t.Fatalf("bindings: %v", err)
			}
			if got := bindingStrs(bs); !slices.Equal(got, tc.want) {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestACLsBadInput(t *testing.T) {
	for _, tc := range []struct {
		sub  string
		args []string
		want string // in the error
	}{
		{"add", []string{"--allow-principal", "User:a", "--operation", "raed", "--topic", "t"}, `--operation "raed": unknown operation`},
		{"add", []string{"--allow-principal", "alice", "--operation", "read", "--topic", "t"}, `--allow-principal: acl: invalid ACL binding: principal "alice"`},
		{"add", []string{"--deny-principal", "Group:x", "--operation", "read", "--topic", "t"}, "--deny-principal"},
		{"add", []string{"--allow-principal", "User:a", "--operation", "read"}, "give a resource"},
		{"add", []string{"--operation", "read", "--topic", "t"}, "give a principal"},
		{"add", []string{"--allow-principal", "User:a", "--topic", "t"}, "give an --operation"},
		{"add", []string{"--allow-principal", "User:a", "--operation", "any", "--topic", "t"}, "operation ANY"},
		{"add", []string{"--allow-principal", "User:a", "--operation", "read", "--topic", "t", "--resource-pattern-type", "match"}, "--resource-pattern-type"},
		{"add", []string{"--allow-principal", "User:a", "--operation", "alter", "--cluster", "--resource-pattern-type", "prefixed"}, "kafka-cluster"},
		{"add", []string{"--allow-principal", "User:a", "--allow-host", "example.com", "--operation", "read", "--topic", "t"}, `host "example.com"`},
		{"add", []string{"--deny-host", "10.0.0.1", "--allow-principal", "User:a", "--operation", "read", "--topic", "t"}, "--deny-host needs --deny-principal"},
		{"remove", []string{"--allow-principal", "User:a"}, "give a resource"},
		{"remove", []string{"--topic", "t", "--resource-pattern-type", "exact"}, "--resource-pattern-type"},
		{"remove", []string{"--topic", "t", "--operation", "reed"}, "unknown operation"},
		{"list", []string{"--principal", "alice"}, "--principal"},
	} {
		f := parseACLFlags(t, tc.sub, tc.args...)
		var err error
		switch tc.sub {
		case "add":
			_, err = f.bindings()
		case "remove":
			_, err = f.removeFilters()
		case "list":
			_, err = f.listFilters()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: error %v, want one with %q", tc.sub, tc.args, err, tc.want)
		}
	}
}

func TestACLsFilters(t *testing.T) {
	for _, tc := range []struct {
		sub  string
		args []string
		want []string
	}{
		{"remove", []string{"--topic", "orders"}, []string{"TOPIC orders LITERAL * * ANY ANY"}},
		{"remove", []string{"--topic", "orders", "--allow-principal", "User:a", "--deny-principal", "User:b", "--deny-host", "10.0.0.1",
			"--operation", "read", "--resource-pattern-type", "any"}, []string{
			"TOPIC orders ANY User:a * READ ALLOW",
			"TOPIC orders ANY User:b 10.0.0.1 READ DENY",
		}},
		{"remove", []string{"--cluster", "--group", "g", "--resource-pattern-type", "match"}, []string{
			"CLUSTER kafka-cluster MATCH * * ANY ANY",
			"GROUP g MATCH * * ANY ANY",
		}},
		{"list", nil, []string{"ANY * ANY * * ANY ANY"}},
		{"list", []string{"--principal", "User:a", "--principal", "User:b"}, []string{
			"ANY * ANY User:a * ANY ANY",
			"ANY * ANY User:b * ANY ANY",
		}},
		{"list", []string{"--topic", "orders", "--operation", "write", "--resource-pattern-type", "match"}, []string{
			"TOPIC orders MATCH * * WRITE ANY",
		}},
	} {
		f := parseACLFlags(t, tc.sub, tc.args...)
		var fs []acl.Filter
		var err error
		if tc.sub == "remove" {
			fs, err = f.removeFilters()
		} else {
			fs, err = f.listFilters()
		}
		if err != nil {
			t.Fatalf("%s %v: %v", tc.sub, tc.args, err)
		}
		if got := filterStrs(fs); !slices.Equal(got, tc.want) {
			t.Errorf("%s %v:\ngot  %q\nwant %q", tc.sub, tc.args, got, tc.want)
		}
		// Each filter survives the trip to the wire and back.
		for _, fl := range fs {
			back, err := acl.FilterFromDelete(kmsgFilter(fl))
			if err != nil {
				t.Fatalf("filter %s on the wire: %v", filterStr(fl), err)
			}
			if filterStr(back) != filterStr(fl) {
				t.Errorf("filter %s came back as %s", filterStr(fl), filterStr(back))
			}
		}
	}
}

// TestACLsStoreAdmin runs add, list and remove of the store path over an
// in-memory store.
func TestACLsStoreAdmin(t *testing.T) {
	ctx := context.Background()
	a := storeACLAdmin{cluster.NewMemACLStore()}
	add := func(args ...string) {
		t.Helper()
		bs, err := parseACLFlags(t, "add", args...).bindings()
		if err != nil {
			t.Fatalf("add %v: %v", args, err)
		}
		if err := a.create(ctx, bs); err != nil {
			t.Fatalf("create: %v", err)
		}
	}
	list := func(args ...string) []string {
		t.Helper()
		fs, err := parseACLFlags(t, "list", args...).listFilters()
		if err != nil {
			t.Fatalf("list %v: %v", args, err)
		}
		bs, err := a.list(ctx, fs)
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		return bindingStrs(sortedBindings(bs))
	}
	add("--allow-principal", "User:alice", "--operation", "read", "--operation", "describe", "--topic", "orders")
	add("--deny-principal", "User:bob", "--operation", "write", "--topic", "ord", "--resource-pattern-type", "prefixed")
	if got := list(); len(got) != 3 {
		t.Fatalf("list all: %v", got)
	}
	if got := list("--principal", "User:bob"); !slices.Equal(got, []string{"User:bob DENY WRITE on TOPIC ord (PREFIXED)"}) {
		t.Fatalf("list bob: %v", got)
	}
	if got := list("--topic", "orders", "--resource-pattern-type", "match"); len(got) != 3 {
		t.Fatalf("list what applies to orders: %v", got)
	}
	if got := list("--topic", "orders"); len(got) != 2 {
		t.Fatalf("list topic orders (any pattern, exact name): %v", got)
	}

	fs, err := parseACLFlags(t, "remove", "--topic", "orders", "--operation", "read").removeFilters()
	if err != nil {
		t.Fatalf("remove filters: %v", err)
	}
	removed, err := a.remove(ctx, fs)
	if err != nil {
		t.Fatalf("remove: %v", err)
	}
	if got := bindingStrs(removed); !slices.Equal(got, []string{"User:alice ALLOW READ on TOPIC orders (LITERAL)"}) {
		t.Fatalf("removed %v", got)
	}
	if got := list(); len(got) != 2 {
		t.Fatalf("left %v", got)
	}
}

func TestWriteACLs(t *testing.T) {
	bs := []acl.Binding{
		{Principal: "User:b", Host: "*", Resource: acl.ResourceTopic, Name: "t", Pattern: acl.PatternLiteral, Operation: acl.OpWrite, Permission: acl.Deny},
		{Principal: "User:a", Host: "10.0.0.1", Resource: acl.ResourceTopic, Name: "t", Pattern: acl.PatternLiteral, Operation: acl.OpRead, Permission: acl.Allow},
	}
	var table bytes.Buffer
	if err := writeACLs(&table, "2 ACL binding(s) added:", append(bs, bs[0]), outputTable); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(table.String()), "\n")
	if len(lines) != 4 || lines[0] != "2 ACL binding(s) added:" || !strings.HasPrefix(lines[1], "PRINCIPAL") ||
		!strings.HasPrefix(lines[2], "User:a ") || !strings.Contains(lines[2], "10.0.0.1") || !strings.HasPrefix(lines[3], "User:b ") {
		t.Fatalf("table:\n%s", table.String())
	}
	var js bytes.Buffer
	if err := writeACLs(&js, "", bs, outputJSON); err != nil {
		t.Fatal(err)
	}
	var got []map[string]string
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatalf("JSON %s: %v", js.String(), err)
	}
	if len(got) != 2 || got[0]["principal"] != "User:a" || got[0]["operation"] != "READ" || got[1]["permission"] != "DENY" ||
		got[1]["resource_type"] != "TOPIC" || got[1]["pattern_type"] != "LITERAL" {
		t.Fatalf("JSON: %s", js.String())
	}
	js.Reset()
	if err := writeACLs(&js, "", nil, outputJSON); err != nil || strings.TrimSpace(js.String()) != "[]" {
		t.Fatalf("empty JSON %q, %v", js.String(), err)
	}
}
