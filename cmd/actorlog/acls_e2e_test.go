// acls_e2e_test.go: `actorlog acls` against a host process whose Kafka
// listener enforces ACLs (--authorizer acl, the anonymous CLI a super
// user): bindings added straight to the store and through the listener,
// listed and removed through both, bad input refused with nothing
// changed.

package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/actorlog/actorlog/internal/acl"
)

func TestACLsCLIHostProcess(t *testing.T) {
	h, addr := startKafkaHost(t, "--authorizer", "acl", "--super-users", "User:ANONYMOUS")
	etcd := "http://127.0.0.1:" + strconv.Itoa(h.base+2)
	viaStore := []string{"--etcd-endpoints", etcd}
	viaKafka := []string{"--kafka-bootstrap", addr}
	acls := func(sub string, via []string, args ...string) string {
		t.Helper()
		return h.mustCLI("", append(append([]string{"acls", sub}, via...), args...)...)
	}
	list := func(via []string, args ...string) []acl.Binding {
		t.Helper()
		var bs []acl.Binding
		out := acls("list", via, append(args, "-o", "json")...)
		if err := json.Unmarshal([]byte(out), &bs); err != nil {
			t.Fatalf("acls list %v: %v\n%s", args, err, out)
		}
		return bs
	}

	out := acls("add", viaStore, "--allow-principal", "User:alice", "--operation", "read", "--operation", "describe", "--topic", "orders")
	if !strings.Contains(out, "2 ACL binding(s) added") || !strings.Contains(out, "User:alice") {
		t.Fatalf("add through the store:\n%s", out)
	}
	out = acls("add", viaKafka, "--deny-principal", "User:bob", "--deny-host", "10.0.0.7", "--operation", "write",
		"--topic", "logs-", "--resource-pattern-type", "prefixed")
	if !strings.Contains(out, "1 ACL binding(s) added") || !strings.Contains(out, "PREFIXED") {
		t.Fatalf("add through the listener:\n%s", out)
	}

	if bs := list(viaKafka); len(bs) != 3 {
		t.Fatalf("list through the listener: %v", bs)
	}
	bob := acl.Binding{Principal: "User:bob", Host: "10.0.0.7", Resource: acl.ResourceTopic, Name: "logs-",
		Pattern: acl.PatternPrefixed, Operation: acl.OpWrite, Permission: acl.Deny}
	if bs := list(viaStore, "--principal", "User:bob"); len(bs) != 1 || bs[0] != bob {
		t.Fatalf("list bob through the store: %v", bs)
	}
	if bs := list(viaKafka, "--topic", "logs-app", "--resource-pattern-type", "match"); len(bs) != 1 || bs[0] != bob {
		t.Fatalf("list what applies to topic logs-app: %v", bs)
	}

	// Bad input: a clear error, nothing changed.
	for _, args := range [][]string{
		{"acls", "add", "--kafka-bootstrap", addr, "--allow-principal", "alice", "--operation", "read", "--topic", "t"},
		{"acls", "add", "--kafka-bootstrap", addr, "--allow-principal", "User:a", "--operation", "reed", "--topic", "t"},
		{"acls", "add", "--kafka-bootstrap", addr, "--allow-principal", "User:a", "--operation", "read"},
		{"acls", "remove", "--kafka-bootstrap", addr, "--allow-principal", "User:alice"},
	} {
		_, errOut, err := h.cli("", args...)
		if err == nil || !strings.Contains(errOut, "Error:") {
			t.Fatalf("actorlog %v: err %v, stderr %q; want a refusal", args, err, errOut)
		}
	}
	if bs := list(viaStore); len(bs) != 3 {
		t.Fatalf("after refused input: %v", bs)
	}

	out = acls("remove", viaKafka, "--topic", "orders", "--allow-principal", "User:alice", "--operation", "read")
	if !strings.Contains(out, "1 ACL binding(s) removed") || !strings.Contains(out, "READ") {
		t.Fatalf("remove through the listener:\n%s", out)
	}
	out = acls("remove", viaStore, "--topic", "orders", "--operation", "read")
	if !strings.Contains(out, "no ACL binding matched") {
		t.Fatalf("remove again through the store:\n%s", out)
	}
	if bs := list(viaKafka); len(bs) != 2 {
		t.Fatalf("left: %v", bs)
	}
}
