// acls_test.go: DescribeAcls, CreateAcls and DeleteAcls through a real
// Server on loopback over an in-memory store, with kadm and with raw
// requests for the versions and the invalid cases.

package kafka

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/internal/acl"
)

// memStore is an in-memory ACL store for these tests, as
// cluster.MemACLStore but without importing package cluster: that would
// put etcd into this package's test binary, which CI also builds
// instrumented for fuzzing (FuzzServeFrame), minutes of compiling.
type memStore struct {
	mu       sync.Mutex
	bindings map[acl.Binding]struct{}
	// Err, when set, fails every call with it.
	Err error
}

func newMemStore() *memStore { return &memStore{bindings: map[acl.Binding]struct{}{}} }

func (m *memStore) AddACLs(_ context.Context, bs []acl.Binding) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Err != nil {
		return m.Err
	}
	for _, b := range bs {
		if err := b.Validate(); err != nil {
			return err
		}
	}
	for _, b := range bs {
		m.bindings[b] = struct{}{}
	}
	return nil
}

// ListACLs returns the bindings f matches, sorted by String.
func (m *memStore) ListACLs(_ context.Context, f acl.Filter) ([]acl.Binding, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Err != nil {
		return nil, m.Err
	}
	var out []acl.Binding
	for b := range m.bindings {
		if f.Matches(b) {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(a, b acl.Binding) int { return strings.Compare(a.String(), b.String()) })
	return out, nil
}

func (m *memStore) DeleteACLs(ctx context.Context, f acl.Filter) ([]acl.Binding, error) {
	out, err := m.ListACLs(ctx, f)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, b := range out {
		delete(m.bindings, b)
	}
	return out, nil
}

// memACLs is an ACLBackend over a memStore.
type memACLs struct{ *memStore }

func (m memACLs) CreateACLs(ctx context.Context, b []acl.Binding) error {
	return m.AddACLs(ctx, b)
}

func (m memACLs) DescribeACLs(ctx context.Context, f acl.Filter) ([]acl.Binding, error) {
	return m.ListACLs(ctx, f)
}

// aclServer starts a server whose ACL APIs use store.
func aclServer(t *testing.T, store *memStore) *testServer {
	t.Helper()
	return startServer(t, func(c *Config) { c.ACLs = memACLs{store} })
}

// storedACLs lists every binding of store, sorted by String.
func storedACLs(t *testing.T, store *memStore) []string {
	t.Helper()
	bs, err := store.ListACLs(context.Background(), acl.Filter{})
	if err != nil {
		t.Fatalf("list store: %v", err)
	}
	return sortedStrings(bs)
}

func sortedStrings(bs []acl.Binding) []string {
	out := bindingStrings(bs)
	slices.Sort(out)
	return out
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestACLAPIsNeedABackend(t *testing.T) {
	for _, withACLs := range []bool{false, true} {
		ts := startServer(t, func(c *Config) {
			if withACLs {
				c.ACLs = memACLs{newMemStore()}
			}
		})
		avs := roundTrip(t, ts, apiVersionsReq(3)).(*kmsg.ApiVersionsResponse)
		got := map[int16][2]int16{}
		for _, k := range avs.ApiKeys {
			if k.ApiKey >= 29 && k.ApiKey <= 31 {
				got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
			}
		}
		want := map[int16][2]int16{}
		if withACLs {
			want = map[int16][2]int16{29: {0, 3}, 30: {0, 3}, 31: {0, 3}}
		}
		if len(got) != len(want) {
			t.Fatalf("ACLs backend set %v: advertised %v, want %v", withACLs, got, want)
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("api %d advertised %v, want %v", k, got[k], w)
			}
		}
	}
}

func TestACLsKadm(t *testing.T) {
	store := newMemStore()
	ts := aclServer(t, store)
	adm := kadm.NewClient(kgoClient(t, ts))
	ctx := testCtx(t)

	creates := []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:alice").Topics("orders").Operations(kadm.OpRead, kadm.OpDescribe),
		kadm.NewACLs().Allow("User:alice").Groups("app-").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpRead),
		kadm.NewACLs().Deny("User:bob").DenyHosts("10.0.0.1").Topics("orders").Operations(kadm.OpWrite),
		kadm.NewACLs().Allow("User:admin").Clusters().Operations(kadm.OpAlter),
		kadm.NewACLs().Allow("User:*").TransactionalIDs("*").Operations(kadm.OpAll),
	}
	for _, b := range creates {
		res, err := adm.CreateACLs(ctx, b)
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("create %s %s %s: %v (%s)", r.Principal, r.Name, r.Operation, r.Err, r.ErrMessage)
			}
		}
	}
	want := []string{
		"User:* ALLOW ALL on TRANSACTIONAL_ID * (LITERAL)",
		"User:admin ALLOW ALTER on CLUSTER kafka-cluster (LITERAL)",
		"User:alice ALLOW DESCRIBE on TOPIC orders (LITERAL)",
		"User:alice ALLOW READ on GROUP app- (PREFIXED)",
		"User:alice ALLOW READ on TOPIC orders (LITERAL)",
		"User:bob DENY WRITE on TOPIC orders (LITERAL) from host 10.0.0.1",
	}
	if got := storedACLs(t, store); !slices.Equal(got, want) {
		t.Fatalf("stored:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Describe everything: every binding comes back once.
	all := kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Operations().
		Allow().AllowHosts().Deny().DenyHosts()
	described, err := adm.DescribeACLs(ctx, all)
	if err != nil {
		t.Fatalf("describe all: %v", err)
	}
	var got []string
	for _, d := range described {
		if d.Err != nil {
			t.Fatalf("describe all: %v (%s)", d.Err, d.ErrMessage)
		}
		for _, a := range d.Described {
			got = append(got, describedString(a))
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("described:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// MATCH: what applies to group app-payments (the prefixed binding).
	match, err := adm.DescribeACLs(ctx, kadm.NewACLs().Groups("app-payments").ResourcePatternType(kadm.ACLPatternMatch).
		Operations().Allow().AllowHosts())
	if err != nil {
		t.Fatalf("describe match: %v", err)
	}
	if n := describedCount(t, match); n != 1 {
		t.Fatalf("MATCH group app-payments: %d bindings, want 1", n)
	}

	// Delete alice's topic bindings; the rest stays.
	del, err := adm.DeleteACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("orders").Operations())
	if err != nil {
		t.Fatalf("delete: %v", err)
	}
	var deleted []string
	for _, r := range del {
		if r.Err != nil {
			t.Fatalf("delete: %v (%s)", r.Err, r.ErrMessage)
		}
		for _, d := range r.Deleted {
			if d.Err != nil {
				t.Fatalf("deleted ACL error: %v", d.Err)
			}
			deleted = append(deleted, d.Principal+" "+d.Operation.String()+" "+d.Name)
		}
	}
	slices.Sort(deleted)
	if want := []string{"User:alice DESCRIBE orders", "User:alice READ orders"}; !slices.Equal(deleted, want) {
		t.Fatalf("deleted %v, want %v", deleted, want)
	}
	if got := storedACLs(t, store); len(got) != 4 || slices.Contains(got, want[2]) || slices.Contains(got, want[4]) {
		t.Fatalf("stored after delete: %v", got)
	}
}

func describedString(a kadm.DescribedACL) string {
	b := acl.Binding{
		Principal: a.Principal, Host: a.Host, Resource: acl.ResourceType(a.Type), Name: a.Name,
		Pattern: acl.PatternType(a.Pattern), Operation: acl.Operation(a.Operation), Permission: acl.Permission(a.Permission),
	}
	return b.String()
}

func describedCount(t *testing.T, res kadm.DescribeACLsResults) int {
	t.Helper()
	n := 0
	for _, d := range res {
		if d.Err != nil {
			t.Fatalf("describe: %v (%s)", d.Err, d.ErrMessage)
		}
		n += len(d.Described)
	}
	return n
}

func creation(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal string,
	op kmsg.ACLOperation, perm kmsg.ACLPermissionType,
) kmsg.CreateACLsRequestCreation {
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = rt, name, pt
	c.Principal, c.Host, c.Operation, c.PermissionType = principal, "*", op, perm
	return c
}

func TestCreateACLsInvalid(t *testing.T) {
	const (
		topic   = kmsg.ACLResourceTypeTopic
		literal = kmsg.ACLResourcePatternTypeLiteral
		read    = kmsg.ACLOperationRead
		allow   = kmsg.ACLPermissionTypeAllow
	)
	badHost := creation(topic, "t", literal, "User:a", read, allow)
	badHost.Host = "not-an-ip"
	cases := []struct {
		name string
		c    kmsg.CreateACLsRequestCreation
		msg  string // in the error message; "" for a valid creation
	}{
		{"valid first", creation(topic, "orders", literal, "User:alice", read, allow), ""},
		{"principal without type", creation(topic, "orders", literal, "alice", read, allow), "principal"},
		{"cluster not kafka-cluster", creation(kmsg.ACLResourceTypeCluster, "mycluster", literal, "User:a", kmsg.ACLOperationAlter, allow), "kafka-cluster"},
		{"pattern ANY", creation(topic, "t", kmsg.ACLResourcePatternTypeAny, "User:a", read, allow), "pattern"},
		{"pattern MATCH", creation(topic, "t", kmsg.ACLResourcePatternTypeMatch, "User:a", read, allow), "pattern"},
		{"resource UNKNOWN", creation(kmsg.ACLResourceTypeUnknown, "t", literal, "User:a", read, allow), "resource type"},
		{"resource ANY", creation(kmsg.ACLResourceTypeAny, "t", literal, "User:a", read, allow), "resource type"},
		{"operation ANY", creation(topic, "t", literal, "User:a", kmsg.ACLOperationAny, allow), "operation"},
		{"operation UNKNOWN", creation(topic, "t", literal, "User:a", kmsg.ACLOperationUnknown, allow), "operation"},
		{"permission UNKNOWN", creation(topic, "t", literal, "User:a", read, kmsg.ACLPermissionTypeUnknown), "permission"},
		{"empty name", creation(topic, "", literal, "User:a", read, allow), "empty resource name"},
		{"bad host", badHost, "host"},
		{"valid last", creation(kmsg.ACLResourceTypeGroup, "g", kmsg.ACLResourcePatternTypePrefixed, "User:bob", read, allow), ""},
	}
	store := newMemStore()
	ts := aclServer(t, store)
	for _, v := range []int16{1, 3} { // v0 cannot carry a pattern type
		req := kmsg.NewPtrCreateACLsRequest()
		req.SetVersion(v)
		for _, c := range cases {
			req.Creations = append(req.Creations, c.c)
		}
		resp := roundTrip(t, ts, req).(*kmsg.CreateACLsResponse)
		if len(resp.Results) != len(cases) {
			t.Fatalf("v%d: %d results for %d creations", v, len(resp.Results), len(cases))
		}
		for i, c := range cases {
			r := resp.Results[i]
			msg := ""
			if r.ErrorMessage != nil {
				msg = *r.ErrorMessage
			}
			switch {
			case c.msg == "" && r.ErrorCode != 0:
				t.Errorf("v%d %s: error %d %q, want success", v, c.name, r.ErrorCode, msg)
			case c.msg != "" && (r.ErrorCode != kerr.InvalidRequest.Code || !strings.Contains(msg, c.msg)):
				t.Errorf("v%d %s: error %d %q, want INVALID_REQUEST mentioning %q", v, c.name, r.ErrorCode, msg, c.msg)
			}
		}
	}
	want := []string{"User:alice ALLOW READ on TOPIC orders (LITERAL)", "User:bob ALLOW READ on GROUP g (PREFIXED)"}
	if got := storedACLs(t, store); !slices.Equal(got, want) {
		t.Fatalf("stored %v, want only the valid creations %v", got, want)
	}
}

// TestACLsVersions creates, describes and deletes at every version: v0
// has no pattern type, so its creations are LITERAL and its filters
// match LITERAL bindings only.
func TestACLsVersions(t *testing.T) {
	for v := int16(0); v <= 3; v++ {
		store := newMemStore()
		ts := aclServer(t, store)
		prefixed := acl.Binding{Principal: "User:p", Host: "*", Resource: acl.ResourceTopic, Name: "logs-",
			Pattern: acl.PatternPrefixed, Operation: acl.OpRead, Permission: acl.Allow}
		if err := store.AddACLs(context.Background(), []acl.Binding{prefixed}); err != nil {
			t.Fatalf("seed: %v", err)
		}

		create := kmsg.NewPtrCreateACLsRequest()
		create.SetVersion(v)
		c := creation(kmsg.ACLResourceTypeTopic, "orders", kmsg.ACLResourcePatternTypeLiteral, "User:alice",
			kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeDeny)
		create.Creations = []kmsg.CreateACLsRequestCreation{c}
		cr := roundTrip(t, ts, create).(*kmsg.CreateACLsResponse)
		if len(cr.Results) != 1 || cr.Results[0].ErrorCode != 0 {
			t.Fatalf("v%d create: %+v", v, cr.Results)
		}

		describe := kmsg.NewPtrDescribeACLsRequest()
		describe.SetVersion(v)
		describe.ResourceType, describe.Operation, describe.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		if v > 0 {
			describe.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
		}
		dr := roundTrip(t, ts, describe).(*kmsg.DescribeACLsResponse)
		wantResources := 2
		if v == 0 {
			wantResources = 1 // the prefixed binding is invisible to v0
		}
		if dr.ErrorCode != 0 || len(dr.Resources) != wantResources {
			t.Fatalf("v%d describe: error %d, %d resources, want %d", v, dr.ErrorCode, len(dr.Resources), wantResources)
		}
		if r := dr.Resources[0]; r.ResourceName != "orders" || len(r.ACLs) != 1 || r.ACLs[0].Principal != "User:alice" ||
			r.ACLs[0].Operation != kmsg.ACLOperationWrite || r.ACLs[0].PermissionType != kmsg.ACLPermissionTypeDeny {
			t.Fatalf("v%d describe: %+v", v, r)
		}

		del := kmsg.NewPtrDeleteACLsRequest()
		del.SetVersion(v)
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.Operation, f.PermissionType = kmsg.ACLResourceTypeTopic, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		if v > 0 {
			f.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
		}
		del.Filters = []kmsg.DeleteACLsRequestFilter{f}
		delr := roundTrip(t, ts, del).(*kmsg.DeleteACLsResponse)
		wantDeleted := 2
		if v == 0 {
			wantDeleted = 1
		}
		if len(delr.Results) != 1 || delr.Results[0].ErrorCode != 0 || len(delr.Results[0].MatchingACLs) != wantDeleted {
			t.Fatalf("v%d delete: %+v", v, delr.Results)
		}
		if left := storedACLs(t, store); len(left) != 2-wantDeleted {
			t.Fatalf("v%d: left %v", v, left)
		}
	}
}

func TestDescribeACLsGroupsByResourcePattern(t *testing.T) {
	store := newMemStore()
	ts := aclServer(t, store)
	b := func(name string, pt acl.PatternType, principal string, op acl.Operation) acl.Binding {
		return acl.Binding{Principal: principal, Host: "*", Resource: acl.ResourceTopic, Name: name, Pattern: pt, Operation: op, Permission: acl.Allow}
	}
	seed := []acl.Binding{
		b("orders", acl.PatternLiteral, "User:a", acl.OpRead),
		b("orders", acl.PatternLiteral, "User:b", acl.OpWrite),
		b("orders", acl.PatternPrefixed, "User:a", acl.OpRead),
		b("logs", acl.PatternLiteral, "User:a", acl.OpRead),
	}
	if err := store.AddACLs(context.Background(), seed); err != nil {
		t.Fatalf("seed: %v", err)
	}
	req := kmsg.NewPtrDescribeACLsRequest()
	req.SetVersion(3)
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	resp := roundTrip(t, ts, req).(*kmsg.DescribeACLsResponse)
	got := map[string]int{}
	for _, r := range resp.Resources {
		key := r.ResourceType.String() + "/" + r.ResourceName + "/" + r.ResourcePatternType.String()
		if _, dup := got[key]; dup {
			t.Fatalf("resource %s listed twice", key)
		}
		got[key] = len(r.ACLs)
	}
	want := map[string]int{"TOPIC/orders/LITERAL": 2, "TOPIC/orders/PREFIXED": 1, "TOPIC/logs/LITERAL": 1}
	if len(got) != len(want) {
		t.Fatalf("resources %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Fatalf("resources %v, want %v", got, want)
		}
	}

	// A filter with an UNKNOWN enum is refused.
	bad := kmsg.NewPtrDescribeACLsRequest()
	bad.SetVersion(3)
	bad.ResourceType, bad.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeAny
	bad.Operation, bad.PermissionType = kmsg.ACLOperationUnknown, kmsg.ACLPermissionTypeAny
	br := roundTrip(t, ts, bad).(*kmsg.DescribeACLsResponse)
	if br.ErrorCode != kerr.InvalidRequest.Code || br.ErrorMessage == nil || len(br.Resources) != 0 {
		t.Fatalf("UNKNOWN operation filter: error %d message %v, %d resources", br.ErrorCode, br.ErrorMessage, len(br.Resources))
	}
}

func TestDeleteACLsFilters(t *testing.T) {
	store := newMemStore()
	ts := aclServer(t, store)
	read := acl.Binding{Principal: "User:a", Host: "*", Resource: acl.ResourceTopic, Name: "orders",
		Pattern: acl.PatternLiteral, Operation: acl.OpRead, Permission: acl.Allow}
	write := read
	write.Operation = acl.OpWrite
	keep := read
	keep.Resource = acl.ResourceGroup
	if err := store.AddACLs(context.Background(), []acl.Binding{read, write, keep}); err != nil {
		t.Fatalf("seed: %v", err)
	}
	filter := func(rt kmsg.ACLResourceType, op kmsg.ACLOperation) kmsg.DeleteACLsRequestFilter {
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourcePatternType = rt, kmsg.ACLResourcePatternTypeAny
		f.Operation, f.PermissionType = op, kmsg.ACLPermissionTypeAny
		f.ResourceName = kmsg.StringPtr("orders")
		return f
	}
	req := kmsg.NewPtrDeleteACLsRequest()
	req.SetVersion(2)
	req.Filters = []kmsg.DeleteACLsRequestFilter{
		filter(kmsg.ACLResourceTypeTopic, kmsg.ACLOperationRead),  // read
		filter(kmsg.ACLResourceTypeUnknown, kmsg.ACLOperationAny), // refused
		filter(kmsg.ACLResourceTypeTopic, kmsg.ACLOperationAny),   // read (already gone) and write
		filter(kmsg.ACLResourceTypeTopic, kmsg.ACLOperationAny),   // nothing left
	}
	resp := roundTrip(t, ts, req).(*kmsg.DeleteACLsResponse)
	if len(resp.Results) != 4 {
		t.Fatalf("%d results for 4 filters", len(resp.Results))
	}
	ops := func(r kmsg.DeleteACLsResponseResult) []string {
		var out []string
		for _, m := range r.MatchingACLs {
			if m.ErrorCode != 0 {
				t.Errorf("matching ACL with error %d", m.ErrorCode)
			}
			out = append(out, m.Operation.String())
		}
		return out
	}
	if r := resp.Results[0]; r.ErrorCode != 0 || !slices.Equal(ops(r), []string{"READ"}) {
		t.Fatalf("filter 0: error %d, deleted %v, want READ", r.ErrorCode, ops(r))
	}
	if r := resp.Results[1]; r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil || len(r.MatchingACLs) != 0 {
		t.Fatalf("filter 1 (UNKNOWN resource type): error %d message %v, %d deleted", r.ErrorCode, r.ErrorMessage, len(r.MatchingACLs))
	}
	if r := resp.Results[2]; r.ErrorCode != 0 || !slices.Equal(ops(r), []string{"WRITE"}) {
		t.Fatalf("filter 2: error %d, deleted %v, want WRITE", r.ErrorCode, ops(r))
	}
	if r := resp.Results[3]; r.ErrorCode != 0 || len(r.MatchingACLs) != 0 {
		t.Fatalf("filter 3: error %d, deleted %v, want nothing", r.ErrorCode, ops(r))
	}
	if got, want := storedACLs(t, store), sortedStrings([]acl.Binding{keep}); !slices.Equal(got, want) {
		t.Fatalf("left %v, want %v", got, want)
	}
}

func TestACLsStoreFailure(t *testing.T) {
	store := newMemStore()
	store.Err = errors.New("etcd unreachable")
	ts := aclServer(t, store)

	create := kmsg.NewPtrCreateACLsRequest()
	create.SetVersion(3)
	create.Creations = []kmsg.CreateACLsRequestCreation{
		creation(kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral, "User:a", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow),
		creation(kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral, "nobody", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow),
	}
	cr := roundTrip(t, ts, create).(*kmsg.CreateACLsResponse)
	if len(cr.Results) != 2 {
		t.Fatalf("%d create results", len(cr.Results))
	}
	if r := cr.Results[0]; r.ErrorCode != kerr.UnknownServerError.Code || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "etcd unreachable") {
		t.Fatalf("valid creation, store down: error %d message %v", r.ErrorCode, r.ErrorMessage)
	}
	if r := cr.Results[1]; r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("invalid creation, store down: error %d, want INVALID_REQUEST", r.ErrorCode)
	}

	describe := kmsg.NewPtrDescribeACLsRequest()
	describe.SetVersion(3)
	describe.ResourceType, describe.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	describe.Operation, describe.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	dr := roundTrip(t, ts, describe).(*kmsg.DescribeACLsResponse)
	if dr.ErrorCode != kerr.UnknownServerError.Code || dr.ErrorMessage == nil || !strings.Contains(*dr.ErrorMessage, "etcd unreachable") {
		t.Fatalf("describe, store down: error %d message %v", dr.ErrorCode, dr.ErrorMessage)
	}

	del := kmsg.NewPtrDeleteACLsRequest()
	del.SetVersion(3)
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	del.Filters = []kmsg.DeleteACLsRequestFilter{f}
	delr := roundTrip(t, ts, del).(*kmsg.DeleteACLsResponse)
	if len(delr.Results) != 1 || delr.Results[0].ErrorCode != kerr.UnknownServerError.Code || delr.Results[0].ErrorMessage == nil {
		t.Fatalf("delete, store down: %+v", delr.Results)
	}
	// The failure was logged before the response was sent.
	logged := false
	for _, e := range ts.hook.AllEntries() {
		logged = logged || e.Message == "cannot store ACL bindings"
	}
	if !logged {
		t.Fatal("store failure not logged")
	}
}
