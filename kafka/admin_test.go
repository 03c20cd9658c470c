// admin_test.go: the admin APIs against a fake AdminBackend — per-topic
// error mapping (duplicates, manual assignments, the backend's codes),
// the fields each version carries, the config ops, broker and unknown
// resources, DescribeCluster from the Metadata backend, and that the
// admin APIs are advertised exactly when Config.Admin is set.

package kafka

import (
	"context"
	"maps"
	"net"
	"slices"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeAdmin is an AdminBackend over a map of topics' overrides.
type fakeAdmin struct {
	mu      sync.Mutex
	topics  map[string]map[string]string
	parts   map[string]int32
	created []CreateTopicQuery // every CreateTopic call
}

// newFakeAdmin returns a fakeAdmin with no topics.
func newFakeAdmin() *fakeAdmin {
	return &fakeAdmin{topics: map[string]map[string]string{}, parts: map[string]int32{}}
}

var _ AdminBackend = (*fakeAdmin)(nil)

// add creates topic name with n partitions and overrides configs.
func (a *fakeAdmin) add(name string, n int32, configs map[string]string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.topics[name], a.parts[name] = configs, n
}

// configsOf returns a copy of name's overrides (nil when unknown).
func (a *fakeAdmin) configsOf(name string) map[string]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.topics[name])
}

// partsOf returns name's partition count.
func (a *fakeAdmin) partsOf(name string) int32 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.parts[name]
}

func (a *fakeAdmin) CreateTopic(_ context.Context, q CreateTopicQuery) (CreateTopicResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.created = append(a.created, q)
	switch {
	case q.Name == "" || q.Name == "bad/name":
		return CreateTopicResult{AdminResult: AdminResult{ErrorCode: kerr.InvalidTopicException.Code, ErrorMessage: "bad name"}}, nil
	case a.topics[q.Name] != nil:
		return CreateTopicResult{AdminResult: AdminResult{ErrorCode: kerr.TopicAlreadyExists.Code, ErrorMessage: "exists"}}, nil
	case q.Configs["retention.ms"] == "bad":
		return CreateTopicResult{AdminResult: AdminResult{ErrorCode: kerr.InvalidConfig.Code, ErrorMessage: "bad retention.ms"}}, nil
	}
	parts, rf := q.Partitions, q.ReplicationFactor
	if parts == -1 {
		parts = 1
	}
	if rf == -1 {
		rf = 1
	}
	res := CreateTopicResult{ID: testTopicID(7), Partitions: parts, ReplicationFactor: rf, Configs: fakeAdminEntries(q.Configs)}
	if !q.ValidateOnly {
		a.topics[q.Name], a.parts[q.Name] = maps.Clone(q.Configs), parts
	}
	return res, nil
}

func (a *fakeAdmin) DeleteTopic(_ context.Context, name string) (AdminResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.topics[name] == nil {
		return AdminResult{ErrorCode: kerr.UnknownTopicOrPartition.Code, ErrorMessage: "unknown"}, nil
	}
	delete(a.topics, name)
	return AdminResult{}, nil
}

func (a *fakeAdmin) CreatePartitions(_ context.Context, q CreatePartitionsQuery) (AdminResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.topics[q.Name] == nil:
		return AdminResult{ErrorCode: kerr.UnknownTopicOrPartition.Code}, nil
	case q.Total <= a.parts[q.Name]:
		return AdminResult{ErrorCode: kerr.InvalidPartitions.Code, ErrorMessage: "must grow"}, nil
	}
	if !q.ValidateOnly {
		a.parts[q.Name] = q.Total
	}
	return AdminResult{}, nil
}

func (a *fakeAdmin) TopicConfigs(_ context.Context, name string) (TopicConfigsResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.topics[name] == nil {
		return TopicConfigsResult{AdminResult: AdminResult{ErrorCode: kerr.UnknownTopicOrPartition.Code}}, nil
	}
	return TopicConfigsResult{Configs: fakeAdminEntries(a.topics[name])}, nil
}

func (a *fakeAdmin) AlterTopicConfigs(_ context.Context, q AlterConfigsQuery) (AdminResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.topics[q.Name] == nil {
		return AdminResult{ErrorCode: kerr.UnknownTopicOrPartition.Code}, nil
	}
	for k, v := range q.Configs {
		if _, ok := fakeAdminDefaults[k]; !ok || v == "bad" {
			return AdminResult{ErrorCode: kerr.InvalidConfig.Code, ErrorMessage: "bad " + k}, nil
		}
	}
	if !q.ValidateOnly {
		a.topics[q.Name] = maps.Clone(q.Configs)
		if a.topics[q.Name] == nil {
			a.topics[q.Name] = map[string]string{}
		}
	}
	return AdminResult{}, nil
}

// fakeAdminDefaults are the fake's config keys and defaults.
var fakeAdminDefaults = map[string]string{"retention.ms": "604800000", "segment.bytes": "1073741824"}

// fakeAdminEntries lists every fake key with its override or default, sorted.
func fakeAdminEntries(overrides map[string]string) []ConfigEntry {
	var out []ConfigEntry
	for _, k := range slices.Sorted(maps.Keys(fakeAdminDefaults)) {
		e := ConfigEntry{Name: k, Value: fakeAdminDefaults[k], Default: true, DefaultValue: fakeAdminDefaults[k], Type: int8(kmsg.ConfigTypeLong), Doc: "doc of " + k}
		if v, ok := overrides[k]; ok {
			e.Value, e.Default = v, false
		}
		out = append(out, e)
	}
	return out
}

// adminServer starts a server with a fake AdminBackend and returns it
// with a connection speaking raw frames.
func adminServer(t *testing.T) (*testServer, *fakeAdmin, net.Conn) {
	t.Helper()
	a := newFakeAdmin()
	ts := startServer(t, func(c *Config) { c.Admin = a })
	return ts, a, ts.dial(t)
}

// adminRoundTrip sends req on c and decodes the answer into resp (whose
// version must equal req's).
func adminRoundTrip(t *testing.T, c net.Conn, req kmsg.Request, resp kmsg.Response) {
	t.Helper()
	if _, err := c.Write(frame(req, 5)); err != nil {
		t.Fatalf("write: %v", err)
	}
	if corr := readResponse(t, c, resp); corr != 5 {
		t.Fatalf("correlation id %d", corr)
	}
}

// adminCreateReq returns a CreateTopics request at version v.
func adminCreateReq(v int16, validate bool, topics ...kmsg.CreateTopicsRequestTopic) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.ValidateOnly, req.Topics = v, validate, topics
	return req
}

// adminCreateTopic returns one topic of a CreateTopics request, configs
// given as name, value pairs.
func adminCreateTopic(name string, parts int32, rf int16, configs ...string) kmsg.CreateTopicsRequestTopic {
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, parts, rf
	for i := 0; i+1 < len(configs); i += 2 {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = configs[i], kmsg.StringPtr(configs[i+1])
		t.Configs = append(t.Configs, c)
	}
	return t
}

func TestAdminCreateTopicsPerTopicErrors(t *testing.T) {
	for _, v := range []int16{0, 1, 4, 5, 7} {
		_, a, c := adminServer(t)
		assigned := adminCreateTopic("assigned", -1, -1)
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Replicas = []int32{1}
		assigned.ReplicaAssignment = append(assigned.ReplicaAssignment, ra)
		req := adminCreateReq(v, false,
			adminCreateTopic("orders", 3, 1, "retention.ms", "1000"),
			adminCreateTopic("bad/name", 1, 1),
			adminCreateTopic("dup", 1, 1), adminCreateTopic("dup", 1, 1),
			assigned,
			adminCreateTopic("defaults", -1, -1),
			adminCreateTopic("badconf", 1, 1, "retention.ms", "bad"),
		)
		resp := kmsg.NewPtrCreateTopicsResponse()
		resp.Version = v
		adminRoundTrip(t, c, req, resp)
		want := []int16{0, kerr.InvalidTopicException.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code,
			kerr.InvalidRequest.Code, 0, kerr.InvalidConfig.Code}
		if len(resp.Topics) != len(want) {
			t.Fatalf("v%d: %d topics answered, want %d", v, len(resp.Topics), len(want))
		}
		for i, st := range resp.Topics {
			if st.Topic != req.Topics[i].Topic || st.ErrorCode != want[i] {
				t.Errorf("v%d: topic %d: %s code %d, want %s code %d", v, i, st.Topic, st.ErrorCode, req.Topics[i].Topic, want[i])
			}
			if hasMsg := st.ErrorMessage != nil; hasMsg != (v >= 1 && st.ErrorCode != 0) {
				t.Errorf("v%d: %s: error message %v", v, st.Topic, st.ErrorMessage)
			}
		}
		orders := resp.Topics[0]
		if v >= 5 {
			if orders.NumPartitions != 3 || orders.ReplicationFactor != 1 || len(orders.Configs) != 2 {
				t.Errorf("v%d: orders %+v", v, orders)
			}
			for _, cfg := range orders.Configs {
				wantSrc := kmsg.ConfigSourceDefaultConfig
				if cfg.Name == "retention.ms" {
					wantSrc = kmsg.ConfigSourceDynamicTopicConfig
				}
				if cfg.Source != int8(wantSrc) {
					t.Errorf("v%d: config %s source %d, want %d", v, cfg.Name, cfg.Source, wantSrc)
				}
			}
			if d := resp.Topics[5]; d.NumPartitions != 1 || d.ReplicationFactor != 1 {
				t.Errorf("v%d: defaults topic %+v", v, d)
			}
		} else if orders.NumPartitions != -1 || orders.ReplicationFactor != -1 || orders.Configs != nil {
			t.Errorf("v%d: orders carries v5 fields: %+v", v, orders)
		}
		if wantID := v >= 7; (orders.TopicID == testTopicID(7)) != wantID {
			t.Errorf("v%d: topic id %x", v, orders.TopicID)
		}
		// Refused topics never reached the backend.
		a.mu.Lock()
		var asked []string
		for _, q := range a.created {
			asked = append(asked, q.Name)
		}
		a.mu.Unlock()
		if !slices.Equal(asked, []string{"orders", "bad/name", "defaults", "badconf"}) {
			t.Errorf("v%d: backend asked about %v", v, asked)
		}
	}
}

func TestAdminCreateTopicsValidateOnly(t *testing.T) {
	_, a, c := adminServer(t)
	req := adminCreateReq(1, true, adminCreateTopic("checked", 2, 1))
	resp := kmsg.NewPtrCreateTopicsResponse()
	resp.Version = 1
	adminRoundTrip(t, c, req, resp)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("validate only: %+v", resp.Topics)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.created) != 1 || !a.created[0].ValidateOnly || a.topics["checked"] != nil {
		t.Fatalf("validate only: calls %+v, topics %v", a.created, a.topics)
	}
}

func TestAdminDeleteTopicsAndCreatePartitions(t *testing.T) {
	_, a, c := adminServer(t)
	a.add("a", 1, map[string]string{})
	a.add("b", 1, map[string]string{})
	for _, v := range []int16{0, 3} {
		cp := kmsg.NewPtrCreatePartitionsRequest()
		cp.Version, cp.ValidateOnly = v, v == 0
		for _, spec := range []struct {
			name  string
			count int32
			assig bool
		}{{"a", 3, false}, {"a", 4, false}, {"b", 1, false}, {"nosuch", 2, false}, {"c", 2, true}} {
			tp := kmsg.NewCreatePartitionsRequestTopic()
			tp.Topic, tp.Count = spec.name, spec.count
			if spec.assig {
				tp.Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: []int32{1}}}
			}
			cp.Topics = append(cp.Topics, tp)
		}
		resp := kmsg.NewPtrCreatePartitionsResponse()
		resp.Version = v
		adminRoundTrip(t, c, cp, resp)
		want := []int16{kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidPartitions.Code, kerr.UnknownTopicOrPartition.Code, kerr.InvalidRequest.Code}
		for i, st := range resp.Topics {
			if st.ErrorCode != want[i] {
				t.Errorf("create partitions v%d: %s code %d, want %d", v, st.Topic, st.ErrorCode, want[i])
			}
		}
	}
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.Version, cp.ValidateOnly = 1, true
	cp.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "a", Count: 3}}
	resp := kmsg.NewPtrCreatePartitionsResponse()
	resp.Version = 1
	adminRoundTrip(t, c, cp, resp)
	if resp.Topics[0].ErrorCode != 0 || a.partsOf("a") != 1 {
		t.Fatalf("validate-only create partitions: code %d, %d partitions", resp.Topics[0].ErrorCode, a.partsOf("a"))
	}

	for _, v := range []int16{0, 5} {
		a.add("a", 1, map[string]string{})
		dr := kmsg.NewPtrDeleteTopicsRequest()
		dr.Version, dr.TopicNames = v, []string{"a", "nosuch", "x", "x"}
		resp := kmsg.NewPtrDeleteTopicsResponse()
		resp.Version = v
		adminRoundTrip(t, c, dr, resp)
		want := []int16{0, kerr.UnknownTopicOrPartition.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code}
		for i, st := range resp.Topics {
			if st.Topic == nil || *st.Topic != dr.TopicNames[i] || st.ErrorCode != want[i] {
				t.Errorf("delete v%d: %v code %d, want %s %d", v, st.Topic, st.ErrorCode, dr.TopicNames[i], want[i])
			}
			if (st.ErrorMessage != nil) != (v >= 5 && st.ErrorCode != 0) {
				t.Errorf("delete v%d: %v: message %v", v, *st.Topic, st.ErrorMessage)
			}
		}
	}
}

func TestAdminDescribeConfigsVersions(t *testing.T) {
	entries := fakeAdminEntries(map[string]string{"retention.ms": "1000"})
	for _, v := range []int16{0, 1, 3, 4} {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Version, req.IncludeSynonyms, req.IncludeDocumentation = v, true, true
		req.Resources = []kmsg.DescribeConfigsRequestResource{
			{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t"},
			{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t", ConfigNames: []string{"retention.ms"}},
			{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "gone"},
			{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1"},
		}
		resp := describeConfigsResponse(req, []TopicConfigsResult{
			{Configs: entries}, {Configs: entries},
			{AdminResult: AdminResult{ErrorCode: kerr.UnknownTopicOrPartition.Code, ErrorMessage: "unknown"}}, {},
		})
		all, one, gone, brk := resp.Resources[0], resp.Resources[1], resp.Resources[2], resp.Resources[3]
		if len(all.Configs) != 2 || len(one.Configs) != 1 || one.Configs[0].Name != "retention.ms" {
			t.Fatalf("v%d: all %+v, filtered %+v", v, all.Configs, one.Configs)
		}
		if gone.ErrorCode != kerr.UnknownTopicOrPartition.Code || gone.Configs != nil || brk.ErrorCode != 0 || brk.Configs != nil {
			t.Fatalf("v%d: unknown %+v, broker %+v", v, gone, brk)
		}
		ret, seg := one.Configs[0], all.Configs[1]
		if ret.IsDefault || !seg.IsDefault || ret.Source != kmsg.ConfigSourceDynamicTopicConfig || seg.Source != kmsg.ConfigSourceDefaultConfig || ret.IsSensitive {
			t.Errorf("v%d: retention.ms %+v, segment.bytes %+v", v, ret, seg)
		}
		if v >= 1 {
			syn := ret.ConfigSynonyms
			if len(syn) != 2 || *syn[0].Value != "1000" || syn[0].Source != kmsg.ConfigSourceDynamicTopicConfig ||
				*syn[1].Value != "604800000" || syn[1].Source != kmsg.ConfigSourceDefaultConfig {
				t.Errorf("v%d: retention.ms synonyms %+v", v, syn)
			}
			if syn := seg.ConfigSynonyms; len(syn) != 1 || syn[0].Source != kmsg.ConfigSourceDefaultConfig {
				t.Errorf("v%d: segment.bytes synonyms %+v", v, syn)
			}
		} else if ret.ConfigSynonyms != nil {
			t.Errorf("v%d: synonyms %+v", v, ret.ConfigSynonyms)
		}
		if (ret.ConfigType == kmsg.ConfigTypeLong) != (v >= 3) || (ret.Documentation != nil) != (v >= 3) {
			t.Errorf("v%d: type %v doc %v", v, ret.ConfigType, ret.Documentation)
		}
		// The answer encodes and decodes at its version.
		back := kmsg.NewPtrDescribeConfigsResponse()
		back.Version = v
		if err := back.ReadFrom(resp.AppendTo(nil)); err != nil {
			t.Fatalf("v%d: round trip: %v", v, err)
		}
	}
}

func TestAdminApplyConfigOps(t *testing.T) {
	current := fakeAdminEntries(map[string]string{"retention.ms": "1000"})
	op := func(name string, o kmsg.IncrementalAlterConfigOp, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		return kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: name, Op: o, Value: value}
	}
	for name, tc := range map[string]struct {
		ops  []kmsg.IncrementalAlterConfigsRequestResourceConfig
		want map[string]string
		code int16
	}{
		"set keeps others": {ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{op("segment.bytes", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("2000000"))},
			want: map[string]string{"retention.ms": "1000", "segment.bytes": "2000000"}},
		"delete": {ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{op("retention.ms", kmsg.IncrementalAlterConfigOpDelete, nil)},
			want: map[string]string{}},
		"append": {ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{op("retention.ms", kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr("1"))},
			code: kerr.InvalidConfig.Code},
		"subtract": {ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{op("retention.ms", kmsg.IncrementalAlterConfigOpSubtract, kmsg.StringPtr("1"))},
			code: kerr.InvalidConfig.Code},
		"set null": {ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{op("retention.ms", kmsg.IncrementalAlterConfigOpSet, nil)},
			code: kerr.InvalidRequest.Code},
		"twice": {ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{op("retention.ms", kmsg.IncrementalAlterConfigOpDelete, nil), op("retention.ms", kmsg.IncrementalAlterConfigOpDelete, nil)},
			code: kerr.InvalidRequest.Code},
		"unknown op": {ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{op("retention.ms", 9, nil)},
			code: kerr.InvalidRequest.Code},
	} {
		got, refusal := applyConfigOps(current, tc.ops)
		if refusal.ErrorCode != tc.code || (tc.code == 0 && !maps.Equal(got, tc.want)) {
			t.Errorf("%s: %v %+v, want %v code %d", name, got, refusal, tc.want, tc.code)
		}
	}
}

func TestAdminAlterConfigsResources(t *testing.T) {
	_, a, c := adminServer(t)
	a.add("t", 1, map[string]string{"segment.bytes": "2000000"})
	// AlterConfigs replaces the overrides; bad values change nothing.
	req := kmsg.NewPtrAlterConfigsRequest()
	req.Version = 2
	req.Resources = []kmsg.AlterConfigsRequestResource{
		{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t", Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("5")}}},
		{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1"},
		{ResourceType: kmsg.ConfigResourceTypeBrokerLogger, ResourceName: "1"},
		{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "nosuch"},
		{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "d"}, {ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "d"},
	}
	resp := kmsg.NewPtrAlterConfigsResponse()
	resp.Version = 2
	adminRoundTrip(t, c, req, resp)
	want := []int16{0, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.UnknownTopicOrPartition.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code}
	for i, sr := range resp.Resources {
		if sr.ErrorCode != want[i] || sr.ResourceName != req.Resources[i].ResourceName {
			t.Errorf("alter: resource %d %s code %d, want %d", i, sr.ResourceName, sr.ErrorCode, want[i])
		}
	}
	if !maps.Equal(a.configsOf("t"), map[string]string{"retention.ms": "5"}) {
		t.Fatalf("after alter: %v", a.configsOf("t"))
	}
	req.Resources = req.Resources[:1]
	req.Resources[0].Configs[0].Value = kmsg.StringPtr("bad")
	adminRoundTrip(t, c, req, resp)
	if resp.Resources[0].ErrorCode != kerr.InvalidConfig.Code || a.configsOf("t")["retention.ms"] != "5" {
		t.Fatalf("bad alter: code %d, configs %v", resp.Resources[0].ErrorCode, a.configsOf("t"))
	}

	// IncrementalAlterConfigs changes one key; validate-only nothing.
	for _, validate := range []bool{true, false} {
		ireq := kmsg.NewPtrIncrementalAlterConfigsRequest()
		ireq.Version, ireq.ValidateOnly = 1, validate
		ireq.Resources = []kmsg.IncrementalAlterConfigsRequestResource{
			{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t", Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{
				{Name: "segment.bytes", Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr("3000000")}}},
			{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1"},
			{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "nosuch"},
		}
		iresp := kmsg.NewPtrIncrementalAlterConfigsResponse()
		iresp.Version = 1
		adminRoundTrip(t, c, ireq, iresp)
		iwant := []int16{0, kerr.InvalidRequest.Code, kerr.UnknownTopicOrPartition.Code}
		for i, sr := range iresp.Resources {
			if sr.ErrorCode != iwant[i] {
				t.Errorf("incremental (validate %v): resource %d code %d, want %d", validate, i, sr.ErrorCode, iwant[i])
			}
		}
		wantCfg := map[string]string{"retention.ms": "5"}
		if !validate {
			wantCfg["segment.bytes"] = "3000000"
		}
		if !maps.Equal(a.configsOf("t"), wantCfg) {
			t.Fatalf("incremental (validate %v): %v, want %v", validate, a.configsOf("t"), wantCfg)
		}
	}
}

func TestAdminDescribeCluster(t *testing.T) {
	ts, _, c := adminServer(t)
	ts.backend.set(func(b *fakeBackend) { b.md.ClusterID, b.md.ControllerID = "cid", 2 })
	for _, v := range []int16{0, 1} {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version = v
		resp := kmsg.NewPtrDescribeClusterResponse()
		resp.Version = v
		adminRoundTrip(t, c, req, resp)
		if resp.ErrorCode != 0 || resp.ClusterID != "cid" || resp.ControllerID != 2 || len(resp.Brokers) != 3 {
			t.Fatalf("v%d: %+v", v, resp)
		}
	}
	req := kmsg.NewPtrDescribeClusterRequest()
	req.Version, req.EndpointType = 1, 2
	resp := kmsg.NewPtrDescribeClusterResponse()
	resp.Version = 1
	adminRoundTrip(t, c, req, resp)
	if resp.ErrorCode != kerr.UnsupportedEndpointType.Code {
		t.Fatalf("controllers endpoint: code %d", resp.ErrorCode)
	}
}

func TestAdminAdvertisedOnlyWithBackend(t *testing.T) {
	adminKeys := []int16{19, 20, 32, 33, 37, 44, 60}
	has := func(cfg *Config) map[int16]kmsg.ApiVersionsResponseApiKey {
		out := map[int16]kmsg.ApiVersionsResponseApiKey{}
		for _, k := range newTable(cfg).advertised() {
			out[k.ApiKey] = k
		}
		return out
	}
	without := has(&Config{Backend: &fakeBackend{}})
	with := has(&Config{Backend: &fakeBackend{}, Admin: newFakeAdmin()})
	wantMax := map[int16]int16{19: 7, 20: 5, 32: 4, 33: 2, 37: 3, 44: 1, 60: 1}
	for _, k := range adminKeys {
		if _, ok := without[k]; ok {
			t.Errorf("key %d advertised without an AdminBackend", k)
		}
		if got, ok := with[k]; !ok || got.MinVersion != 0 || got.MaxVersion != wantMax[k] {
			t.Errorf("key %d: %+v, want 0-%d", k, got, wantMax[k])
		}
	}
}
