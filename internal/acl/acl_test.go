// acl_test.go: binding validation, enum names, JSON and kmsg round trips,
// and Filter's Kafka semantics.

package acl

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func valid() Binding { return topic("User:alice", "orders", PatternLiteral, OpRead, Allow) }

func TestValidate(t *testing.T) {
	ok := []func(*Binding){
		func(b *Binding) {},
		func(b *Binding) { b.Principal = WildcardPrincipal },
		func(b *Binding) { b.Principal = "Host:host1" },
		func(b *Binding) { b.Host = "10.1.2.3" },
		func(b *Binding) { b.Host = "fe80::1" },
		func(b *Binding) { b.Name = "*" },
		func(b *Binding) { b.Pattern, b.Name = PatternPrefixed, "ord" },
		func(b *Binding) { b.Resource, b.Name = ResourceCluster, ClusterName },
		func(b *Binding) { b.Resource = ResourceTransactionalID },
		func(b *Binding) { b.Operation = OpAll },
		func(b *Binding) { b.Operation = OpIdempotentWrite },
		func(b *Binding) { b.Permission = Deny },
	}
	for i, f := range ok {
		b := valid()
		f(&b)
		if err := b.Validate(); err != nil {
			t.Errorf("valid %d (%s): %v", i, b, err)
		}
	}
	bad := []struct {
		mod  func(*Binding)
		want string
	}{
		{func(b *Binding) { b.Principal = "" }, "principal"},
		{func(b *Binding) { b.Principal = "alice" }, "principal"},
		{func(b *Binding) { b.Principal = "User:" }, "principal"},
		{func(b *Binding) { b.Principal = "Group:x" }, "unknown principal type"},
		{func(b *Binding) { b.Principal = "Host:*" }, "only wildcard principal"},
		{func(b *Binding) { b.Host = "" }, "host"},
		{func(b *Binding) { b.Host = "example.com" }, "host"},
		{func(b *Binding) { b.Name = "" }, "empty resource name"},
		{func(b *Binding) { b.Name = strings.Repeat("x", maxField+1) }, "resource name of"},
		{func(b *Binding) { b.Pattern, b.Name = PatternPrefixed, "*" }, "PREFIXED pattern cannot be"},
		{func(b *Binding) { b.Pattern = PatternMatch }, "pattern type MATCH"},
		{func(b *Binding) { b.Pattern = PatternAny }, "pattern type ANY"},
		{func(b *Binding) { b.Pattern = 0 }, "pattern type UNKNOWN"},
		{func(b *Binding) { b.Resource = ResourceCluster }, "only CLUSTER resource"},
		{func(b *Binding) { b.Resource, b.Name, b.Pattern = ResourceCluster, ClusterName, PatternPrefixed }, "only CLUSTER resource"},
		{func(b *Binding) { b.Resource = ResourceAny }, "resource type ANY"},
		{func(b *Binding) { b.Resource = 6 }, "resource type ResourceType(6)"},
		{func(b *Binding) { b.Operation = OpAny }, "operation ANY"},
		{func(b *Binding) { b.Operation = 0 }, "operation UNKNOWN"},
		{func(b *Binding) { b.Operation = 13 }, "operation Operation(13)"},
		{func(b *Binding) { b.Permission = PermissionAny }, "permission ANY"},
		{func(b *Binding) { b.Permission = 0 }, "permission UNKNOWN"},
	}
	for i, c := range bad {
		b := valid()
		c.mod(&b)
		err := b.Validate()
		if !errors.Is(err, ErrInvalidBinding) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("invalid %d (%+v): %v, want ErrInvalidBinding mentioning %q", i, b, err, c.want)
		}
	}
}

func TestEnumNames(t *testing.T) {
	for _, op := range Operations {
		got, err := ParseOperation(strings.ToLower(op.String()))
		if err != nil || got != op {
			t.Errorf("ParseOperation(%q) = %v, %v", strings.ToLower(op.String()), got, err)
		}
	}
	for _, c := range []struct {
		in   string
		want any
	}{
		{"TransactionalId", ResourceTransactionalID}, {"transactional-id", ResourceTransactionalID},
		{"describeConfigs", OpDescribeConfigs}, {"Prefixed", PatternPrefixed}, {"deny", Deny},
	} {
		var got any
		switch c.want.(type) {
		case ResourceType:
			got, _ = ParseResourceType(c.in)
		case Operation:
			got, _ = ParseOperation(c.in)
		case PatternType:
			got, _ = ParsePatternType(c.in)
		case Permission:
			got, _ = ParsePermission(c.in)
		}
		if got != c.want {
			t.Errorf("parse %q = %v, want %v", c.in, got, c.want)
		}
	}
	for _, s := range []string{"", "unknown", "topics", "nope"} {
		if _, err := ParseResourceType(s); !errors.Is(err, ErrInvalidBinding) {
			t.Errorf("ParseResourceType(%q): %v", s, err)
		}
	}
	if s := Operation(42).String(); s != "Operation(42)" {
		t.Errorf("unknown operation string %q", s)
	}
}

func TestBindingJSON(t *testing.T) {
	b := Binding{Principal: "Host:h1", Host: "10.0.0.1", Resource: ResourceTransactionalID, Name: "tx-", Pattern: PatternPrefixed, Operation: OpDescribeConfigs, Permission: Deny}
	raw, err := json.Marshal(b)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	if !strings.Contains(string(raw), `"resource_type":"TRANSACTIONAL_ID"`) || !strings.Contains(string(raw), `"operation":"DESCRIBE_CONFIGS"`) {
		t.Fatalf("enums not by name: %s", raw)
	}
	var back Binding
	if err := json.Unmarshal(raw, &back); err != nil || back != b {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	if err := json.Unmarshal([]byte(`{"operation":"FLY"}`), &back); !errors.Is(err, ErrInvalidBinding) {
		t.Fatalf("unknown operation name: %v", err)
	}
}

func TestKmsgConversions(t *testing.T) {
	b := Binding{Principal: "User:alice", Host: "*", Resource: ResourceGroup, Name: "g", Pattern: PatternPrefixed, Operation: OpDelete, Permission: Allow}
	c := b.Creation()
	if c.ResourceType != kmsg.ACLResourceTypeGroup || c.ResourcePatternType != kmsg.ACLResourcePatternTypePrefixed ||
		c.Operation != kmsg.ACLOperationDelete || c.PermissionType != kmsg.ACLPermissionTypeAllow {
		t.Fatalf("creation codes: %+v", c)
	}
	back, err := BindingFromCreation(c)
	if err != nil || back != b {
		t.Fatalf("BindingFromCreation: %+v, %v", back, err)
	}
	for _, rt := range ResourceTypes {
		if got, err := ResourceTypeFromKmsg(rt.Kmsg()); err != nil || got != rt || rt.Kmsg().String() == "" {
			t.Errorf("resource type %s: %v %v", rt, got, err)
		}
	}
	for _, op := range Operations {
		// The names are Kafka's: kmsg's parser accepts ours.
		if k, err := kmsg.ParseACLOperation(op.String()); err != nil || k != op.Kmsg() {
			t.Errorf("kmsg parse of %s: %v %v", op, k, err)
		}
	}
	bad := c
	bad.Operation = kmsg.ACLOperationCreateTokens
	if _, err := BindingFromCreation(bad); !errors.Is(err, ErrInvalidBinding) {
		t.Fatalf("CREATE_TOKENS: %v", err)
	}
	bad = c
	bad.ResourceType = kmsg.ACLResourceTypeUser
	if _, err := BindingFromCreation(bad); !errors.Is(err, ErrInvalidBinding) {
		t.Fatalf("USER resource: %v", err)
	}
	bad = c
	bad.ResourcePatternType = kmsg.ACLResourcePatternTypeMatch
	if _, err := BindingFromCreation(bad); !errors.Is(err, ErrInvalidBinding) {
		t.Fatalf("MATCH in a creation: %v", err)
	}

	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeMatch
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	name := "gx"
	req.ResourceName = &name
	f, err := FilterFromDescribe(req)
	if err != nil || !f.Matches(b) || f.Pattern != PatternMatch {
		t.Fatalf("FilterFromDescribe: %+v, %v", f, err)
	}
	req.PermissionType = kmsg.ACLPermissionTypeUnknown
	if _, err := FilterFromDescribe(req); !errors.Is(err, ErrInvalidBinding) {
		t.Fatalf("UNKNOWN permission in a filter: %v", err)
	}
	d := kmsg.NewDeleteACLsRequestFilter()
	d.ResourceType, d.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeLiteral
	d.Operation, d.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeDeny
	f, err = FilterFromDelete(d)
	if err != nil || f.Matches(b) || !f.Matches(topic("User:x", "t", PatternLiteral, OpRead, Deny)) {
		t.Fatalf("FilterFromDelete: %+v, %v", f, err)
	}
}

func TestFilterMatches(t *testing.T) {
	s := func(v string) *string { return &v }
	lit := topic("User:bob", "orders", PatternLiteral, OpRead, Allow)
	star := topic("User:bob", "*", PatternLiteral, OpRead, Allow)
	pre := topic("User:bob", "ord", PatternPrefixed, OpRead, Allow)
	all := topic("User:*", "orders", PatternLiteral, OpAll, Deny)
	grp := Binding{Principal: "User:bob", Host: "10.0.0.1", Resource: ResourceGroup, Name: "orders", Pattern: PatternLiteral, Operation: OpRead, Permission: Allow}
	bindings := []Binding{lit, star, pre, all, grp}
	for _, c := range []struct {
		name string
		f    Filter
		want []Binding
	}{
		{"zero matches all", Filter{}, bindings},
		{"any codes match all", Filter{Resource: ResourceAny, Pattern: PatternAny, Operation: OpAny, Permission: PermissionAny}, bindings},
		{"resource", Filter{Resource: ResourceGroup}, []Binding{grp}},
		{"any pattern, name equal", Filter{Name: s("orders")}, []Binding{lit, all, grp}},
		{"literal", Filter{Pattern: PatternLiteral}, []Binding{lit, star, all, grp}},
		{"prefixed name", Filter{Pattern: PatternPrefixed, Name: s("ord")}, []Binding{pre}},
		{"prefixed name is exact", Filter{Pattern: PatternPrefixed, Name: s("orders")}, nil},
		{"match", Filter{Resource: ResourceTopic, Pattern: PatternMatch, Name: s("orders")}, []Binding{lit, star, pre, all}},
		{"match other name", Filter{Resource: ResourceTopic, Pattern: PatternMatch, Name: s("payments")}, []Binding{star}},
		{"match without name", Filter{Pattern: PatternMatch}, bindings},
		{"principal exact", Filter{Principal: s("User:*")}, []Binding{all}},
		{"host exact", Filter{Host: s("10.0.0.1")}, []Binding{grp}},
		{"operation exact", Filter{Operation: OpAll}, []Binding{all}},
		{"permission", Filter{Permission: Deny}, []Binding{all}},
		{"exact", ExactFilter(pre), []Binding{pre}},
	} {
		var got []Binding
		for _, b := range bindings {
			if c.f.Matches(b) {
				got = append(got, b)
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("%s: matched %v, want %v", c.name, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: matched %v, want %v", c.name, got, c.want)
				break
			}
		}
		if err := c.f.Validate(); err != nil {
			t.Errorf("%s: Validate: %v", c.name, err)
		}
	}
	if err := (Filter{Operation: 13}).Validate(); !errors.Is(err, ErrInvalidBinding) {
		t.Errorf("filter operation 13: %v", err)
	}
}
