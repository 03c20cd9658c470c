// console_test.go: every page and JSON endpoint of the console over a
// fake cluster — status, content type, key content, 400 for each bad
// input, 404 for unknown topics, partitions and groups, 503 when the
// cluster does not answer, the CSRF guard of the forms, escaping of
// record data, and the caps of the record browser.

package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/actors/group"
	"github.com/actorlog/actorlog/actors/producer"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage/record"
)

// fakeCluster implements every source over in-memory state.
type fakeCluster struct {
	mu        sync.Mutex
	err       error // every call fails with it when set
	listErr   error // ListGroups returns it with the groups
	describe  *messages.DescribeClusterResponse
	topics    map[string]*messages.TopicMetadataResponse
	records   map[string][]record.Record // "topic-partition": offsets from start
	start     map[string]int64           // "topic-partition": log start offset
	groups    []*messages.ListedGroup
	described map[string]*messages.DescribedGroup
	lags      map[string][]client.PartitionLag
	calls     []string // admin calls made
	// produceErr fails Produce, after the producer was asked.
	produceErr error
}

func tpKey(topic string, p int32) string { return fmt.Sprintf("%s-%d", topic, p) }

func newFake() *fakeCluster {
	f := &fakeCluster{
		describe: &messages.DescribeClusterResponse{
			ControllerId: 1, ControllerEpoch: 7,
			Hosts: []*messages.HostInfo{
				{HostId: 1, Name: "alpha", AdvertisedAddress: "10.0.0.1:7070", HttpAddress: "10.0.0.1:7080", BrokerEpoch: 11},
				{HostId: 2, Name: "beta", AdvertisedAddress: "10.0.0.2:7070", BrokerEpoch: 12},
			},
			DownHosts: []*messages.HostInfo{{HostId: 3, Name: "gamma"}},
		},
		topics: map[string]*messages.TopicMetadataResponse{
			"orders": {Name: "orders", ReplicationFactor: 3, Configs: map[string]string{"min.insync.replicas": "2"}, Partitions: []*messages.PartitionMetadata{
				{Partition: 0, Leader: 1, Replicas: []int32{1, 2, 3}, Isr: []int32{1, 2}, LeaderAddress: "10.0.0.1:7070"},
				{Partition: 1, Leader: 2, Replicas: []int32{2, 3, 1}, Isr: []int32{2}, LeaderAddress: "10.0.0.2:7070"},
				{Partition: 2, Leader: -1, Replicas: []int32{3, 1, 2}, Isr: []int32{3}},
			}},
			"logs": {Name: "logs", ReplicationFactor: 1, Partitions: []*messages.PartitionMetadata{
				{Partition: 0, Leader: 1, Replicas: []int32{1}, Isr: []int32{1}, LeaderAddress: "10.0.0.1:7070"},
			}},
		},
		records: map[string][]record.Record{},
		start:   map[string]int64{},
		groups: []*messages.ListedGroup{
			{GroupId: "billing", GroupState: "Stable", ProtocolType: "consumer"},
			{GroupId: "audit", GroupState: "Empty", ProtocolType: "consumer"},
		},
		described: map[string]*messages.DescribedGroup{},
		lags:      map[string][]client.PartitionLag{},
	}
	assignment := group.EncodeAssignment(group.Assignment{"orders": {0, 1}})
	f.described["billing"] = &messages.DescribedGroup{GroupId: "billing", GroupState: "Stable", ProtocolType: "consumer", ProtocolData: "range",
		GenerationId: 4, Leader: "m-1", Members: []*messages.DescribedGroupMember{{MemberId: "m-1", ClientId: "billing-app", ClientHost: "/10.0.0.9", MemberAssignment: assignment}}}
	f.lags["billing"] = []client.PartitionLag{
		{Topic: "orders", Partition: 0, Committed: 5, LogEnd: 8, Lag: 3},
		{Topic: "orders", Partition: 1, Committed: -1, LogEnd: 2, Lag: -1},
	}
	f.described["audit"] = &messages.DescribedGroup{GroupId: "audit", GroupState: "Empty", ProtocolType: "consumer"}
	f.lags["audit"] = []client.PartitionLag{{Topic: "logs", Partition: 0, Committed: 1, LogEnd: 4, Lag: 3}}
	return f
}

func (f *fakeCluster) failure() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *fakeCluster) DescribeCluster(context.Context) (*messages.DescribeClusterResponse, error) {
	if err := f.failure(); err != nil {
		return nil, err
	}
	return f.describe, nil
}

func (f *fakeCluster) Metadata(_ context.Context, topics ...string) (*messages.MetadataResponse, error) {
	if err := f.failure(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	md := &messages.MetadataResponse{Hosts: f.describe.Hosts, ControllerId: f.describe.ControllerId}
	if len(topics) == 0 {
		for _, n := range slices.Sorted(func(yield func(string) bool) {
			for n := range f.topics {
				if !yield(n) {
					return
				}
			}
		}) {
			md.Topics = append(md.Topics, f.topics[n])
		}
		return md, nil
	}
	for _, n := range topics {
		t, ok := f.topics[n]
		if !ok {
			t = &messages.TopicMetadataResponse{Name: n, ErrorCode: messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION}
		}
		md.Topics = append(md.Topics, t)
	}
	return md, nil
}

func (f *fakeCluster) ListOffsets(_ context.Context, p *messages.PartitionMetadata, topic string, ts int64) (*messages.ListOffsetsResponse, error) {
	if err := f.failure(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	k := tpKey(topic, p.Partition)
	start, recs := f.start[k], f.records[k]
	switch ts {
	case messages.EarliestTimestamp:
		return &messages.ListOffsetsResponse{Offset: start}, nil
	case messages.LatestTimestamp:
		return &messages.ListOffsetsResponse{Offset: start + int64(len(recs))}, nil
	}
	for i, r := range recs {
		if r.Timestamp >= ts {
			return &messages.ListOffsetsResponse{Offset: start + int64(i), Timestamp: r.Timestamp}, nil
		}
	}
	return &messages.ListOffsetsResponse{Offset: -1, Timestamp: -1}, nil
}

// Fetch answers one batch per record, from the batch holding offset, up
// to maxBytes (the first batch whole).
func (f *fakeCluster) Fetch(_ context.Context, p *messages.PartitionMetadata, topic string, offset int64, maxBytes int32) (*messages.FetchResponse, error) {
	if err := f.failure(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	k := tpKey(topic, p.Partition)
	start, recs := f.start[k], f.records[k]
	hw := start + int64(len(recs))
	resp := &messages.FetchResponse{Topic: topic, Partition: p.Partition, HighWatermark: hw, LogStartOffset: start}
	if offset < start || offset > hw {
		return nil, messages.ErrorCode_ERROR_CODE_OFFSET_OUT_OF_RANGE.Err(fmt.Sprintf("offset %d not in [%d, %d]", offset, start, hw))
	}
	for o := offset; o < hw; o++ {
		b, err := record.BuildBatch(record.CompressionNone, recs[o-start])
		if err != nil {
			return nil, err
		}
		record.SetBaseOffset(b, o)
		if len(resp.Records) > 0 && len(resp.Records)+len(b) > int(maxBytes) {
			break
		}
		resp.Records = append(resp.Records, b...)
	}
	return resp, nil
}

func (f *fakeCluster) CreateTopic(_ context.Context, name string, partitions, rf int32, configs map[string]string) (*messages.TopicMetadata, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("create %s %d %d %v", name, partitions, rf, configs))
	if _, ok := f.topics[name]; ok {
		return nil, messages.ErrorCode_ERROR_CODE_TOPIC_ALREADY_EXISTS.Err("topic " + name + " exists")
	}
	if int(rf) > 3 {
		return nil, messages.ErrorCode_ERROR_CODE_INVALID_REPLICATION_FACTOR.Err("3 live hosts")
	}
	f.topics[name] = &messages.TopicMetadataResponse{Name: name, ReplicationFactor: rf}
	return &messages.TopicMetadata{Name: name, ReplicationFactor: rf}, nil
}

func (f *fakeCluster) CreatePartitions(_ context.Context, name string, total int32) (*messages.TopicMetadata, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("partitions %s %d", name, total))
	t, ok := f.topics[name]
	if !ok {
		return nil, messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION.Err("topic " + name)
	}
	if int(total) <= len(t.Partitions) {
		return nil, messages.ErrorCode_ERROR_CODE_INVALID_PARTITIONS.Err("a topic cannot shrink")
	}
	return &messages.TopicMetadata{Name: name}, nil
}

func (f *fakeCluster) DeleteTopic(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "delete "+name)
	if _, ok := f.topics[name]; !ok {
		return messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION.Err("topic " + name)
	}
	delete(f.topics, name)
	return nil
}

func (f *fakeCluster) ListGroups(context.Context, ...string) ([]*messages.ListedGroup, error) {
	if err := f.failure(); err != nil {
		return nil, err
	}
	return f.groups, f.listErr
}

func (f *fakeCluster) DescribeGroup(_ context.Context, id string) (*messages.DescribedGroup, error) {
	if err := f.failure(); err != nil {
		return nil, err
	}
	if d, ok := f.described[id]; ok {
		return d, nil
	}
	return &messages.DescribedGroup{GroupId: id, GroupState: "Dead"}, nil
}

func (f *fakeCluster) GroupLag(_ context.Context, id string, _ ...*messages.TopicPartitions) ([]client.PartitionLag, error) {
	if err := f.failure(); err != nil {
		return nil, err
	}
	return f.lags[id], nil
}

func (f *fakeCluster) AlterTopicConfigs(_ context.Context, name string, configs map[string]string) (*messages.TopicMetadata, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("alter %s %v", name, configs))
	t, ok := f.topics[name]
	if !ok {
		return nil, messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION.Err("topic " + name)
	}
	// A new topic: pages being rendered may still read the old one.
	f.topics[name] = &messages.TopicMetadataResponse{Name: t.Name, ReplicationFactor: t.ReplicationFactor, Partitions: t.Partitions, Configs: maps.Clone(configs)}
	return &messages.TopicMetadata{Name: name, Configs: configs}, nil
}

// PlanResetOffsets refuses a group with members and an unknown topic, as
// the client does; it changes nothing.
func (f *fakeCluster) PlanResetOffsets(_ context.Context, id, topic string, partitions []int32, target client.ResetTarget) ([]client.CommitOffset, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d, ok := f.described[id]; ok && d.GroupState != "Empty" && d.GroupState != "Dead" {
		return nil, fmt.Errorf("%w: group %q is %s with %d member(s); stop its consumers first", client.ErrGroupNotEmpty, id, d.GroupState, len(d.Members))
	}
	t, ok := f.topics[topic]
	if !ok {
		return nil, messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION.Err("topic " + topic)
	}
	parts := partitions
	if len(parts) == 0 {
		for _, p := range t.Partitions {
			parts = append(parts, p.Partition)
		}
	}
	var plan []client.CommitOffset
	for _, p := range parts {
		plan = append(plan, client.CommitOffset{Topic: topic, Partition: p, LeaderEpoch: -1})
	}
	return plan, nil
}

func (f *fakeCluster) ResetOffsets(ctx context.Context, id, topic string, partitions []int32, target client.ResetTarget) ([]client.CommitOffset, error) {
	plan, err := f.PlanResetOffsets(ctx, id, topic, partitions, target)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("reset %s %s %v %v", id, topic, partitions, target))
	return plan, nil
}

// Produce appends msg to its partition (0 for any) and reports its offset.
func (f *fakeCluster) Produce(_ context.Context, msg producer.Send) (producer.Delivered, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("produce %s %d key=%q value=%d bytes headers=%d", msg.Topic, msg.Partition, msg.Key, len(msg.Value), len(msg.Headers)))
	if f.produceErr != nil {
		return producer.Delivered{Offset: -1, Err: f.produceErr}, f.produceErr
	}
	p := max(msg.Partition, 0)
	k := tpKey(msg.Topic, p)
	off := f.start[k] + int64(len(f.records[k]))
	f.records[k] = append(f.records[k], record.Record{Key: msg.Key, Value: msg.Value, Headers: msg.Headers})
	return producer.Delivered{Topic: msg.Topic, Partition: p, Offset: off}, nil
}

func (f *fakeCluster) adminCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// newTestConsole serves a console over a new fake cluster.
func newTestConsole(t *testing.T, readOnly bool) (*httptest.Server, *fakeCluster, *Console) {
	t.Helper()
	f := newFake()
	c, err := New(Config{Sources: Sources{Cluster: f, Offsets: f, Records: f, Admin: f, Groups: f, GroupAdmin: f, Producer: f}, ReadOnly: readOnly})
	if err != nil {
		t.Fatalf("new console: %v", err)
	}
	mux := http.NewServeMux()
	c.Mount(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, f, c
}

// noRedirect is a client that reports redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// get fetches path and returns the status, content type and body.
func get(t *testing.T, srv *httptest.Server, path string) (int, string, string) {
	t.Helper()
	resp, err := noRedirect.Get(srv.URL + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// getJSON fetches an API path, checks its status and JSON content type and
// decodes it into v.
func getJSON(t *testing.T, srv *httptest.Server, path string, want int, v any) {
	t.Helper()
	code, ct, body := get(t, srv, path)
	if code != want {
		t.Fatalf("GET %s: status %d, want %d: %s", path, code, want, body)
	}
	if !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("GET %s: content type %q, want JSON", path, ct)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, body)
	}
}

// getPage fetches a page, checks its status and HTML content type, and
// that it contains each of want.
func getPage(t *testing.T, srv *httptest.Server, path string, status int, want ...string) string {
	t.Helper()
	code, ct, body := get(t, srv, path)
	if code != status {
		t.Fatalf("GET %s: status %d, want %d: %s", path, code, status, body)
	}
	if !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("GET %s: content type %q, want HTML", path, ct)
	}
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("GET %s: page lacks %q", path, w)
		}
	}
	return body
}

func TestClusterPageAndAPI(t *testing.T) {
	srv, _, _ := newTestConsole(t, false)
	var v ClusterView
	getJSON(t, srv, "/api/v1/cluster", http.StatusOK, &v)
	if v.ControllerID != 1 || v.ControllerName != "alpha" || v.ControllerEpoch != 7 || len(v.Hosts) != 3 || v.Topics != 2 || v.Partitions != 4 {
		t.Fatalf("cluster view %+v", v)
	}
	// Epochs go out as strings: JavaScript would round one above 2^53.
	var raw struct {
		Hosts []map[string]any `json:"hosts"`
	}
	getJSON(t, srv, "/api/v1/cluster", http.StatusOK, &raw)
	if e, ok := raw.Hosts[0]["broker_epoch"].(string); !ok || e != "11" {
		t.Fatalf("broker_epoch %#v, want the string \"11\"", raw.Hosts[0]["broker_epoch"])
	}
	// orders-0 lacks 3 in its ISR, orders-1 lacks two (and is under min
	// ISR 2), orders-2 has no leader and is under min ISR.
	if v.UnderReplicated != 3 || v.Offline != 1 || v.UnderMinISR != 2 || !v.Warning {
		t.Fatalf("health counts %+v", v)
	}
	alpha, gamma := v.Hosts[0], v.Hosts[2]
	if !alpha.Alive || !alpha.Controller || alpha.BrokerEpoch == nil || *alpha.BrokerEpoch != 11 || alpha.Leaders != 2 || alpha.Replicas != 4 {
		t.Fatalf("host alpha %+v", alpha)
	}
	if gamma.Alive || gamma.Name != "gamma" || gamma.BrokerEpoch != nil || gamma.Replicas != 3 {
		t.Fatalf("dead host gamma %+v", gamma)
	}
	body := getPage(t, srv, "/ui/", http.StatusOK, "<h1>Cluster</h1>", "alpha", "beta", "gamma", `class="banner" data-show="warning">`,
		`data-api="/api/v1/cluster"`, "/ui/static/console.js")
	if !regexp.MustCompile(`<tr class="warn"><td>gamma</td>`).MatchString(body) {
		t.Errorf("the dead host's row is not marked: %s", body)
	}
	code, _, _ := get(t, srv, "/ui")
	if code != http.StatusMovedPermanently {
		t.Errorf("GET /ui: %d, want a redirect to /ui/", code)
	}
}

func TestClusterPageWithoutProblemsHasNoBanner(t *testing.T) {
	srv, f, _ := newTestConsole(t, false)
	f.topics = map[string]*messages.TopicMetadataResponse{"logs": f.topics["logs"]}
	var v ClusterView
	getJSON(t, srv, "/api/v1/cluster", http.StatusOK, &v)
	if v.Warning || v.UnderReplicated+v.Offline+v.UnderMinISR != 0 {
		t.Fatalf("healthy cluster reported %+v", v)
	}
	getPage(t, srv, "/ui/", http.StatusOK, `class="banner" data-show="warning" hidden>`)
}

func TestTopicsPageAndAPI(t *testing.T) {
	srv, _, _ := newTestConsole(t, false)
	var v TopicsView
	getJSON(t, srv, "/api/v1/topics", http.StatusOK, &v)
	if len(v.Topics) != 2 || v.Topics[0].Name != "logs" || v.Topics[1].Name != "orders" {
		t.Fatalf("topics %+v", v.Topics)
	}
	if o := v.Topics[1]; o.Partitions != 3 || o.ReplicationFactor != 3 || o.UnderReplicated != 3 || o.Offline != 1 || o.UnderMinISR != 2 {
		t.Fatalf("orders %+v", o)
	}
	getPage(t, srv, "/ui/topics", http.StatusOK, `<a href="/ui/topics/orders">orders</a>`, `<form id="create-topic"`, `name="csrf"`)
}

func TestTopicPageAndAPI(t *testing.T) {
	srv, f, _ := newTestConsole(t, false)
	f.records[tpKey("orders", 0)] = []record.Record{{Value: []byte("a")}, {Value: []byte("b")}}
	f.start[tpKey("orders", 0)] = 3
	var v TopicView
	getJSON(t, srv, "/api/v1/topics/orders", http.StatusOK, &v)
	if v.Name != "orders" || v.MinInsyncReplicas != 2 || len(v.Partitions) != 3 || v.Configs["min.insync.replicas"] != "2" {
		t.Fatalf("topic %+v", v)
	}
	p0, p2 := v.Partitions[0], v.Partitions[2]
	if p0.LogStartOffset == nil || *p0.LogStartOffset != 3 || p0.LogEndOffset == nil || *p0.LogEndOffset != 5 || !p0.UnderReplicated || p0.UnderMinISR {
		t.Fatalf("partition 0 %+v", p0)
	}
	if !p2.Offline || p2.LeaderStatus != "offline" || p2.LogEndOffset != nil {
		t.Fatalf("partition 2 %+v", p2)
	}
	if v.TotalLogEndOffset != 5 {
		t.Fatalf("total log end %d, want 5", v.TotalLogEndOffset)
	}
	getPage(t, srv, "/ui/topics/orders", http.StatusOK, "<h1>Topic orders</h1>", "<td>1,2,3</td>", "<td>offline</td>",
		`<form id="browse"`, `action="/ui/topics/orders/records"`, `<form id="delete-topic"`, `data-spark="total_log_end_offset"`)

	var e struct{ Error string }
	getJSON(t, srv, "/api/v1/topics/nope", http.StatusNotFound, &e)
	if !strings.Contains(e.Error, `"nope" does not exist`) {
		t.Fatalf("unknown topic error %q", e.Error)
	}
	getPage(t, srv, "/ui/topics/nope", http.StatusNotFound, "does not exist")
	getJSON(t, srv, "/api/v1/topics/bad%20name", http.StatusBadRequest, &e)
	if !strings.Contains(e.Error, "topic name") {
		t.Fatalf("bad name error %q", e.Error)
	}
	getPage(t, srv, "/ui/topics/bad%21", http.StatusBadRequest, "topic name")
}

func TestRecordsAPI(t *testing.T) {
	srv, f, _ := newTestConsole(t, false)
	f.start[tpKey("orders", 1)] = 10
	f.records[tpKey("orders", 1)] = []record.Record{
		{Key: []byte("k0"), Value: []byte(`{"id":1,"tags":["a"]}`), Timestamp: 1000, Headers: []record.RecordHeader{{Key: "trace", Value: []byte("t-1")}}},
		{Key: nil, Value: []byte("plain text"), Timestamp: 2000},
		{Key: []byte{0xff, 0x00}, Value: []byte{0x00, 0x01, 0xfe}, Timestamp: 3000},
		{Key: []byte("k3"), Value: nil, Timestamp: 4000},
	}
	var v RecordsView
	getJSON(t, srv, "/api/v1/topics/orders/records?partition=1", http.StatusOK, &v)
	if v.Offset != 10 || v.LogStartOffset != 10 || v.HighWatermark != 14 || v.NextOffset != 14 || len(v.Records) != 4 || v.Truncated {
		t.Fatalf("records view %+v", v)
	}
	r0, r1, r2, r3 := v.Records[0], v.Records[1], v.Records[2], v.Records[3]
	if r0.Offset != 10 || r0.ValueFormat != FormatJSON || *r0.Value != "{\n  \"id\": 1,\n  \"tags\": [\n    \"a\"\n  ]\n}" ||
		*r0.Key != "k0" || len(r0.Headers) != 1 || r0.Headers[0].Value != "t-1" || r0.Time != "1970-01-01T00:00:01Z" {
		t.Fatalf("record 0 %+v", r0)
	}
	if r1.Key != nil || r1.ValueFormat != FormatText || *r1.Value != "plain text" {
		t.Fatalf("record 1 %+v", r1)
	}
	if r2.ValueFormat != FormatHex || !strings.Contains(*r2.Value, "00 01 fe") || r2.KeyFormat != FormatHex {
		t.Fatalf("record 2 %+v", r2)
	}
	if r3.Value != nil || r3.ValueSize != 0 {
		t.Fatalf("tombstone %+v", r3)
	}

	getJSON(t, srv, "/api/v1/topics/orders/records?partition=1&offset=12&limit=1&format=hex", http.StatusOK, &v)
	if len(v.Records) != 1 || v.Records[0].Offset != 12 || v.NextOffset != 13 || v.Records[0].ValueFormat != FormatHex {
		t.Fatalf("offset 12 limit 1: %+v", v)
	}
	getJSON(t, srv, "/api/v1/topics/orders/records?partition=1&timestamp=2500&limit=10&format=text", http.StatusOK, &v)
	if v.Offset != 12 || len(v.Records) != 2 {
		t.Fatalf("from timestamp 2500: %+v", v)
	}
	getJSON(t, srv, "/api/v1/topics/orders/records?partition=1&timestamp=9999", http.StatusOK, &v)
	if v.Offset != 14 || len(v.Records) != 0 {
		t.Fatalf("from a timestamp after the last record: %+v", v)
	}

	for _, tc := range []struct{ query, want string }{
		{"partition=-1", "partition"},
		{"partition=x", "partition"},
		{"offset=-3", "offset"},
		{"offset=1e3", "offset"},
		{"limit=0", "limit"},
		{"limit=501", "limit"},
		{"format=xml", "format"},
		{"offset=1&timestamp=5", "not both"},
		{"timestamp=-5", "timestamp"},
		{"partition=1&offset=99", "OFFSET_OUT_OF_RANGE"},
	} {
		var e struct{ Error string }
		getJSON(t, srv, "/api/v1/topics/orders/records?"+tc.query, http.StatusBadRequest, &e)
		if !strings.Contains(e.Error, tc.want) {
			t.Errorf("?%s: error %q, want it to name %q", tc.query, e.Error, tc.want)
		}
	}
	var e struct{ Error string }
	getJSON(t, srv, "/api/v1/topics/orders/records?partition=3", http.StatusNotFound, &e)
	getJSON(t, srv, "/api/v1/topics/nope/records", http.StatusNotFound, &e)
}

func TestRecordsAreCapped(t *testing.T) {
	srv, f, _ := newTestConsole(t, false)
	big := strings.Repeat("x", 300<<10)
	var recs []record.Record
	for range 10 {
		recs = append(recs, record.Record{Value: []byte(big)})
	}
	for range 600 {
		recs = append(recs, record.Record{Value: []byte("s")})
	}
	f.records[tpKey("logs", 0)] = recs
	var v RecordsView
	getJSON(t, srv, "/api/v1/topics/logs/records?limit=500", http.StatusOK, &v)
	// 1 MiB of values: three of 300 KiB, not the fourth.
	if len(v.Records) != 3 || !v.Truncated || v.NextOffset != 3 {
		t.Fatalf("byte cap: %d records, truncated %v, next %d", len(v.Records), v.Truncated, v.NextOffset)
	}
	if r := v.Records[0]; !r.ValueTruncated || r.ValueSize != len(big) || len(*r.Value) != MaxValueBytes {
		t.Fatalf("value cap: truncated %v size %d shown %d", r.ValueTruncated, r.ValueSize, len(*r.Value))
	}
	getJSON(t, srv, "/api/v1/topics/logs/records?offset=10&limit=500", http.StatusOK, &v)
	if len(v.Records) != MaxRecords || v.Truncated || v.NextOffset != 510 {
		t.Fatalf("record cap: %d records, truncated %v, next %d", len(v.Records), v.Truncated, v.NextOffset)
	}
}

func TestRecordsPageEscapesRecordData(t *testing.T) {
	srv, f, _ := newTestConsole(t, false)
	f.records[tpKey("logs", 0)] = []record.Record{{Key: []byte(`"><img src=x onerror=alert(1)>`), Value: []byte("<script>alert(1)</script>"),
		Headers: []record.RecordHeader{{Key: "<b>h</b>", Value: []byte("<i>v</i>")}}}}
	body := getPage(t, srv, "/ui/topics/logs/records?limit=5", http.StatusOK, "&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;img src=x", "&lt;b&gt;h&lt;/b&gt;")
	for _, raw := range []string{"<script>alert", "<img src=x", "<b>h</b>", "<i>v</i>"} {
		if strings.Contains(body, raw) {
			t.Errorf("page carries unescaped %q", raw)
		}
	}
	getPage(t, srv, "/ui/topics/logs/records?limit=0", http.StatusBadRequest, "limit")
}

func TestGroupsPageAndAPI(t *testing.T) {
	srv, _, _ := newTestConsole(t, false)
	var v GroupsView
	getJSON(t, srv, "/api/v1/groups", http.StatusOK, &v)
	if len(v.Groups) != 2 || v.Groups[0].GroupID != "audit" || v.Groups[1].GroupID != "billing" {
		t.Fatalf("groups %+v", v.Groups)
	}
	if b := v.Groups[1]; b.Members == nil || *b.Members != 1 || b.TotalLag == nil || *b.TotalLag != 3 || b.State != "Stable" {
		t.Fatalf("billing %+v", b)
	}
	getPage(t, srv, "/ui/groups", http.StatusOK, `<a href="/ui/groups/billing">billing</a>`, "<td>Stable</td>")

	var g GroupView
	getJSON(t, srv, "/api/v1/groups/billing", http.StatusOK, &g)
	if g.State != "Stable" || g.Generation != 4 || len(g.Members) != 1 || g.TotalLag != 3 || len(g.Offsets) != 2 {
		t.Fatalf("group %+v", g)
	}
	m := g.Members[0]
	if len(m.Assignment) != 1 || m.Assignment[0].Topic != "orders" || !slices.Equal(m.Assignment[0].Partitions, []int32{0, 1}) {
		t.Fatalf("member %+v", m)
	}
	if o := g.Offsets[1]; o.CommittedOffset != nil || o.Lag != nil || *o.LogEndOffset != 2 || o.MemberID != "m-1" {
		t.Fatalf("offset of orders-1 %+v", o)
	}
	getPage(t, srv, "/ui/groups/billing", http.StatusOK, "<h1>Group billing</h1>", "billing-app", "<code>orders: 0,1</code>", `data-spark="total_lag"`)

	var e struct{ Error string }
	getJSON(t, srv, "/api/v1/groups/ghost", http.StatusNotFound, &e)
	getPage(t, srv, "/ui/groups/ghost", http.StatusNotFound, "does not exist")
	getJSON(t, srv, "/api/v1/groups/%20", http.StatusBadRequest, &e)
	getJSON(t, srv, "/api/v1/groups/"+strings.Repeat("g", maxGroupIDLength+1), http.StatusBadRequest, &e)
}

func TestGroupsListedInPartWhenAHostDoesNotAnswer(t *testing.T) {
	srv, f, _ := newTestConsole(t, false)
	f.listErr = errors.New("client: list groups: host 3 (10.0.0.3:7070): down")
	var v GroupsView
	getJSON(t, srv, "/api/v1/groups", http.StatusOK, &v)
	if len(v.Groups) != 2 || !strings.Contains(v.Error, "host 3") {
		t.Fatalf("partial groups view %+v", v)
	}
	getPage(t, srv, "/ui/groups", http.StatusOK, "the list may be incomplete", "host 3", "billing")
}

func TestClusterDownIs503(t *testing.T) {
	srv, f, _ := newTestConsole(t, false)
	f.err = fmt.Errorf("%w: 127.0.0.1:7070: connection refused", client.ErrUnreachable)
	for _, p := range []string{"/api/v1/cluster", "/api/v1/topics", "/api/v1/topics/orders", "/api/v1/topics/orders/records", "/api/v1/groups", "/api/v1/groups/billing"} {
		var e struct{ Error string }
		getJSON(t, srv, p, http.StatusServiceUnavailable, &e)
		if !strings.Contains(e.Error, "connection refused") {
			t.Errorf("%s: error %q", p, e.Error)
		}
	}
	getPage(t, srv, "/ui/", http.StatusServiceUnavailable, "connection refused")
}

func TestUnknownPathsAndMethods(t *testing.T) {
	srv, _, _ := newTestConsole(t, false)
	getPage(t, srv, "/ui/nope", http.StatusNotFound, "no console page")
	var e struct{ Error string }
	getJSON(t, srv, "/api/v1/nope", http.StatusNotFound, &e)
	resp, err := http.Post(srv.URL+"/api/v1/cluster", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST /api/v1/cluster: %d, want 405", resp.StatusCode)
	}
}

func TestStaticAssetsAndHeaders(t *testing.T) {
	srv, _, _ := newTestConsole(t, false)
	for path, want := range map[string]string{"/ui/static/console.js": "text/javascript", "/ui/static/console.css": "text/css"} {
		code, ct, body := get(t, srv, path)
		if code != http.StatusOK || !strings.HasPrefix(ct, want) || len(body) < 100 {
			t.Errorf("GET %s: %d %q (%d bytes)", path, code, ct, len(body))
		}
	}
	resp, err := http.Get(srv.URL + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Fatalf("Content-Security-Policy %q", csp)
	}
}

// post submits a form with the given headers and returns the status,
// Location and body.
func post(t *testing.T, srv *httptest.Server, path string, form url.Values, headers map[string]string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Location"), string(b)
}

// formToken reads the CSRF token from a page's form.
func formToken(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	body := getPage(t, srv, "/ui/topics", http.StatusOK)
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]{64})"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token in the topics page")
	}
	return m[1]
}

func TestCreateTopicForm(t *testing.T) {
	srv, f, _ := newTestConsole(t, false)
	tok := formToken(t, srv)
	form := func(kv ...string) url.Values {
		v := url.Values{"csrf": {tok}, "name": {"events"}, "partitions": {"3"}, "replication_factor": {"2"}}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	for _, tc := range []struct {
		name    string
		form    url.Values
		headers map[string]string
		status  int
		want    string
	}{
		{"no token", form("csrf", ""), nil, http.StatusForbidden, "form token"},
		{"wrong token", form("csrf", strings.Repeat("0", 64)), nil, http.StatusForbidden, "form token"},
		{"other origin", form(), map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden, "cross-origin"},
		{"cross site", form(), map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden, "cross-site"},
		{"bad name", form("name", "no spaces"), nil, http.StatusBadRequest, "topic name"},
		{"bad partitions", form("partitions", "0"), nil, http.StatusBadRequest, "partitions"},
		{"bad replication factor", form("replication_factor", "two"), nil, http.StatusBadRequest, "replication_factor"},
		{"bad config line", form("configs", "retention.ms"), nil, http.StatusBadRequest, "key=value"},
		{"unknown config", form("configs", "no.such.config=1"), nil, http.StatusBadRequest, "configs"},
		{"exists", form("name", "orders"), nil, http.StatusConflict, "TOPIC_ALREADY_EXISTS"},
		{"refused by the controller", form("replication_factor", "4"), nil, http.StatusBadRequest, "INVALID_REPLICATION_FACTOR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := post(t, srv, "/ui/topics", tc.form, tc.headers)
			if code != tc.status || !strings.Contains(body, tc.want) {
				t.Fatalf("status %d, want %d naming %q: %s", code, tc.status, tc.want, body)
			}
		})
	}
	// Only the last two reached the cluster; neither created anything.
	if calls := f.adminCalls(); len(calls) != 2 {
		t.Fatalf("admin calls before the good form: %q", calls)
	}
	code, loc, body := post(t, srv, "/ui/topics", form("configs", "retention.ms=60000\n\ncleanup.policy=compact"),
		map[string]string{"Origin": srv.URL, "Sec-Fetch-Site": "same-origin"})
	if code != http.StatusSeeOther || loc != "/ui/topics/events?done=created" {
		t.Fatalf("create: %d to %q: %s", code, loc, body)
	}
	if calls := f.adminCalls(); calls[len(calls)-1] != "create events 3 2 map[cleanup.policy:compact retention.ms:60000]" {
		t.Fatalf("create call %q", calls[len(calls)-1])
	}
	getPage(t, srv, loc, http.StatusOK, "Topic created.")
}

func TestAddPartitionsAndDeleteForms(t *testing.T) {
	srv, f, _ := newTestConsole(t, false)
	tok := formToken(t, srv)
	code, _, body := post(t, srv, "/ui/topics/orders/partitions", url.Values{"csrf": {tok}, "total": {"x"}}, nil)
	if code != http.StatusBadRequest || !strings.Contains(body, "total") {
		t.Fatalf("bad total: %d %s", code, body)
	}
	code, _, body = post(t, srv, "/ui/topics/orders/partitions", url.Values{"csrf": {tok}, "total": {"2"}}, nil)
	if code != http.StatusBadRequest || !strings.Contains(body, "INVALID_PARTITIONS") {
		t.Fatalf("shrink: %d %s", code, body)
	}
	code, loc, _ := post(t, srv, "/ui/topics/orders/partitions", url.Values{"csrf": {tok}, "total": {"6"}}, nil)
	if code != http.StatusSeeOther || loc != "/ui/topics/orders?done=partitions" {
		t.Fatalf("add partitions: %d to %q", code, loc)
	}
	code, _, _ = post(t, srv, "/ui/topics/nope/partitions", url.Values{"csrf": {tok}, "total": {"6"}}, nil)
	if code != http.StatusNotFound {
		t.Fatalf("add partitions to an unknown topic: %d", code)
	}

	code, _, body = post(t, srv, "/ui/topics/orders/delete", url.Values{"csrf": {tok}, "confirm": {"order"}}, nil)
	if code != http.StatusBadRequest || !strings.Contains(body, "type the topic") {
		t.Fatalf("delete without confirmation: %d %s", code, body)
	}
	code, _, _ = post(t, srv, "/ui/topics/orders/delete", url.Values{"confirm": {"orders"}}, nil)
	if code != http.StatusForbidden {
		t.Fatalf("delete without token: %d", code)
	}
	if _, ok := f.topics["orders"]; !ok {
		t.Fatal("orders deleted without confirmation or token")
	}
	code, loc, _ = post(t, srv, "/ui/topics/orders/delete", url.Values{"csrf": {tok}, "confirm": {"orders"}}, nil)
	if code != http.StatusSeeOther || loc != "/ui/topics?done=deleted" {
		t.Fatalf("delete: %d to %q", code, loc)
	}
	if _, ok := f.topics["orders"]; ok {
		t.Fatal("orders still there")
	}
	getPage(t, srv, "/ui/topics/orders", http.StatusNotFound)
}

func TestReadOnlyConsoleRefusesForms(t *testing.T) {
	srv, f, c := newTestConsole(t, true)
	body := getPage(t, srv, "/ui/topics/orders", http.StatusOK)
	if strings.Contains(body, `<form id="delete-topic"`) || strings.Contains(body, `<form id="add-partitions"`) {
		t.Fatal("a read-only console shows the change forms")
	}
	code, _, _ := post(t, srv, "/ui/topics/orders/delete", url.Values{"csrf": {c.token}, "confirm": {"orders"}}, nil)
	if code != http.StatusForbidden || len(f.adminCalls()) != 0 {
		t.Fatalf("read-only delete: %d, calls %q", code, f.adminCalls())
	}
	for _, form := range []struct {
		path string
		form url.Values
	}{
		{"/ui/topics/orders/configs", url.Values{"csrf": {c.token}, "set": {"retention.ms=1000"}}},
		{"/ui/topics/orders/produce", url.Values{"csrf": {c.token}, "value": {"v"}}},
		{"/ui/groups/audit/reset-offsets", url.Values{"csrf": {c.token}, "confirm": {"audit"}, "to": {"earliest"}}},
	} {
		code, _, body := post(t, srv, form.path, form.form, nil)
		if code != http.StatusForbidden || !strings.Contains(body, "read-only") || len(f.adminCalls()) != 0 {
			t.Fatalf("read-only POST %s: %d, calls %q", form.path, code, f.adminCalls())
		}
	}
	for _, page := range []string{"/ui/topics/orders", "/ui/groups/audit"} {
		body := getPage(t, srv, page, http.StatusOK)
		for _, id := range []string{`<form id="produce"`, `<form id="alter-configs"`, `<form id="reset-offsets"`} {
			if strings.Contains(body, id) {
				t.Errorf("read-only %s shows %s", page, id)
			}
		}
	}
}

func TestRenderBytes(t *testing.T) {
	for _, tc := range []struct {
		in             []byte
		format         string
		want, wantUsed string
	}{
		{[]byte(`{"a":1}`), FormatAuto, "{\n  \"a\": 1\n}", FormatJSON},
		{[]byte(`{"a":1}`), FormatText, `{"a":1}`, FormatText},
		{[]byte(`not json`), FormatJSON, "not json", FormatText},
		{[]byte("tab\tand\nnewline"), FormatAuto, "tab\tand\nnewline", FormatText},
		{[]byte("bell\a"), FormatAuto, "00000000  62 65 6c 6c 07                                    |bell.|\n", FormatHex},
		{[]byte{0xc3, 0x28}, FormatText, "00000000  c3 28                                             |.(|\n", FormatHex},
		{[]byte("hi"), FormatHex, "00000000  68 69                                             |hi|\n", FormatHex},
	} {
		got, used, cut := renderBytes(tc.in, tc.format)
		if got != tc.want || used != tc.wantUsed || cut {
			t.Errorf("renderBytes(%q, %s) = %q, %s, %v; want %q, %s", tc.in, tc.format, got, used, cut, tc.want, tc.wantUsed)
		}
	}
}

func TestStatusOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{badRequest("x"), 400},
		{fmt.Errorf("wrapped: %w", messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION.Err("t")), 404},
		{messages.ErrorCode_ERROR_CODE_INVALID_CONFIG.Err("c"), 400},
		{messages.ErrorCode_ERROR_CODE_NOT_CONTROLLER.Err(""), 503},
		{context.DeadlineExceeded, 503},
		{errors.New("odd"), 502},
	} {
		if got := statusOf(tc.err); got != tc.want {
			t.Errorf("statusOf(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

// formCase is one refused submission of a form.
type formCase struct {
	name    string
	path    string
	form    url.Values
	headers map[string]string
	status  int
	want    string
}

// checkRefused posts each case and checks its status and that the page
// names want.
func checkRefused(t *testing.T, srv *httptest.Server, cases []formCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := post(t, srv, tc.path, tc.form, tc.headers)
			if code != tc.status || !strings.Contains(body, tc.want) {
				t.Fatalf("status %d, want %d naming %q: %s", code, tc.status, tc.want, body)
			}
		})
	}
}

// with returns a copy of base with the given fields set.
func with(base url.Values, kv ...string) url.Values {
	v := url.Values{}
	for k, vs := range base {
		v[k] = slices.Clone(vs)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

func TestAlterConfigsForm(t *testing.T) {
	srv, f, _ := newTestConsole(t, false)
	getPage(t, srv, "/ui/topics/orders", http.StatusOK, `<form id="alter-configs"`, `action="/ui/topics/orders/configs"`,
		`<input type="checkbox" name="delete" value="min.insync.replicas">`, "<code>retention.ms</code>")
	tok := formToken(t, srv)
	base := url.Values{"csrf": {tok}, "set": {"retention.ms=60000"}}
	path := "/ui/topics/orders/configs"
	checkRefused(t, srv, []formCase{
		{"no token", path, with(base, "csrf", ""), nil, http.StatusForbidden, "form token"},
		{"other origin", path, base, map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden, "cross-origin"},
		{"cross site", path, base, map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden, "cross-site"},
		{"nothing to change", path, with(base, "set", " \n"), nil, http.StatusBadRequest, "nothing to change"},
		{"bad set line", path, with(base, "set", "retention.ms"), nil, http.StatusBadRequest, "set: config"},
		{"unknown key", path, with(base, "set", "no.such.config=1"), nil, http.StatusBadRequest, "set: "},
		{"bad value", path, with(base, "set", "retention.ms=soon"), nil, http.StatusBadRequest, "retention.ms"},
		{"max.message.bytes above the limit", path, with(base, "set", "max.message.bytes=1000000000"), nil, http.StatusBadRequest, "max.message.bytes"},
		{"delete of no override", path, url.Values{"csrf": {tok}, "delete": {"retention.ms"}}, nil, http.StatusBadRequest, "delete: &#34;retention.ms&#34; is not a config override"},
		{"set and delete", path, with(base, "set", "min.insync.replicas=1", "delete", "min.insync.replicas"), nil, http.StatusBadRequest, "also set"},
		{"bad topic name", "/ui/topics/bad%21/configs", base, nil, http.StatusBadRequest, "topic name"},
		{"unknown topic", "/ui/topics/nope/configs", base, nil, http.StatusNotFound, "does not exist"},
	})
	if calls := f.adminCalls(); len(calls) != 0 {
		t.Fatalf("refused forms reached the cluster: %q", calls)
	}
	if cfg := f.topics["orders"].Configs; len(cfg) != 1 || cfg["min.insync.replicas"] != "2" {
		t.Fatalf("configs changed by refused forms: %v", cfg)
	}

	code, loc, body := post(t, srv, path, with(base, "set", "retention.ms=60000\r\ncleanup.policy=compact", "delete", "min.insync.replicas"),
		map[string]string{"Origin": srv.URL, "Sec-Fetch-Site": "same-origin"})
	if code != http.StatusSeeOther || loc != "/ui/topics/orders?done=configs" {
		t.Fatalf("alter: %d to %q: %s", code, loc, body)
	}
	if calls := f.adminCalls(); len(calls) != 1 || calls[0] != "alter orders map[cleanup.policy:compact retention.ms:60000]" {
		t.Fatalf("alter calls %q", calls)
	}
	getPage(t, srv, loc, http.StatusOK, "Configs updated.", "<code>retention.ms=60000</code>")
	// Setting one key keeps the other overrides.
	code, _, body = post(t, srv, path, with(base, "set", "retention.ms=1000"), nil)
	if calls := f.adminCalls(); code != http.StatusSeeOther || calls[len(calls)-1] != "alter orders map[cleanup.policy:compact retention.ms:1000]" {
		t.Fatalf("set one key: %d, calls %q: %s", code, calls, body)
	}
}

func TestProduceForm(t *testing.T) {
	srv, f, _ := newTestConsole(t, false)
	getPage(t, srv, "/ui/topics/orders", http.StatusOK, `<form id="produce"`, `action="/ui/topics/orders/produce"`)
	tok := formToken(t, srv)
	base := url.Values{"csrf": {tok}, "key": {"k1"}, "value": {`{"n":1}`}, "headers": {"source=console\ntrace=a=b"}, "partition": {"1"}}
	path := "/ui/topics/orders/produce"
	manyHeaders := strings.Repeat("h=v\n", MaxProduceHeaders+1)
	checkRefused(t, srv, []formCase{
		{"no token", path, with(base, "csrf", ""), nil, http.StatusForbidden, "form token"},
		{"other origin", path, base, map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden, "cross-origin"},
		{"value too large", path, with(base, "value", strings.Repeat("v", MaxProduceValueBytes+1)), nil, http.StatusBadRequest, "value: 1048577 bytes"},
		{"key too large", path, with(base, "key", strings.Repeat("k", MaxProduceKeyBytes+1)), nil, http.StatusBadRequest, "key: "},
		{"bad header line", path, with(base, "headers", "no-equals"), nil, http.StatusBadRequest, "headers: line"},
		{"empty header key", path, with(base, "headers", "=v"), nil, http.StatusBadRequest, "headers: line"},
		{"too many headers", path, with(base, "headers", manyHeaders), nil, http.StatusBadRequest, "headers: more than 64"},
		{"header bytes", path, with(base, "headers", "h="+strings.Repeat("x", MaxProduceHeaderBytes)), nil, http.StatusBadRequest, "headers: more than 65536 bytes"},
		{"negative partition", path, with(base, "partition", "-1"), nil, http.StatusBadRequest, "partition"},
		{"partition not a number", path, with(base, "partition", "one"), nil, http.StatusBadRequest, "partition"},
		{"partition out of range", path, with(base, "partition", "3"), nil, http.StatusBadRequest, "partition 3 out of range: topic orders has partitions 0..2"},
		{"bad topic name", "/ui/topics/bad%21/produce", base, nil, http.StatusBadRequest, "topic name"},
		{"unknown topic", "/ui/topics/nope/produce", base, nil, http.StatusNotFound, "does not exist"},
	})
	if calls := f.adminCalls(); len(calls) != 0 {
		t.Fatalf("refused forms reached the producer: %q", calls)
	}

	code, loc, body := post(t, srv, path, base, map[string]string{"Origin": srv.URL})
	if code != http.StatusSeeOther || loc != "/ui/topics/orders?done=produced&partition=1&offset=0" {
		t.Fatalf("produce: %d to %q: %s", code, loc, body)
	}
	recs := f.records[tpKey("orders", 1)]
	if len(recs) != 1 || string(recs[0].Key) != "k1" || string(recs[0].Value) != `{"n":1}` || len(recs[0].Headers) != 2 ||
		recs[0].Headers[1].Key != "trace" || string(recs[0].Headers[1].Value) != "a=b" {
		t.Fatalf("produced %+v", recs)
	}
	getPage(t, srv, loc, http.StatusOK, "Record produced to partition 1 at offset 0.", `href="/ui/topics/orders/records?partition=1&amp;offset=0&amp;limit=1"`)

	// No partition and no key: the producer's partitioner picks; an empty
	// key is no key.
	code, _, body = post(t, srv, path, url.Values{"csrf": {tok}, "value": {"plain"}}, nil)
	if calls := f.adminCalls(); code != http.StatusSeeOther || calls[len(calls)-1] != `produce orders -1 key="" value=5 bytes headers=0` {
		t.Fatalf("produce without partition: %d, calls %q: %s", code, calls, body)
	}
	if recs := f.records[tpKey("orders", 0)]; len(recs) != 1 || recs[0].Key != nil {
		t.Fatalf("keyless record %+v", recs)
	}
	// The largest value allowed goes through.
	code, _, body = post(t, srv, path, with(base, "value", strings.Repeat("v", MaxProduceValueBytes)), nil)
	if code != http.StatusSeeOther {
		t.Fatalf("produce 1 MiB: %d: %s", code, body)
	}

	// A record the cluster refuses: its error, as a 400.
	f.produceErr = messages.ErrorCode_ERROR_CODE_MESSAGE_TOO_LARGE.Err("batch above max.message.bytes")
	n := len(f.records[tpKey("orders", 1)])
	code, _, body = post(t, srv, path, base, nil)
	if code != http.StatusBadRequest || !strings.Contains(body, "MESSAGE_TOO_LARGE") || len(f.records[tpKey("orders", 1)]) != n {
		t.Fatalf("refused record: %d: %s", code, body)
	}
}

func TestResetOffsetsForm(t *testing.T) {
	srv, f, _ := newTestConsole(t, false)
	getPage(t, srv, "/ui/groups/audit", http.StatusOK, `<form id="reset-offsets"`, `action="/ui/groups/audit/reset-offsets"`, `<option value="logs">logs</option>`)
	tok := formToken(t, srv)
	base := url.Values{"csrf": {tok}, "confirm": {"audit"}, "to": {"earliest"}}
	path := "/ui/groups/audit/reset-offsets"
	f.described["fresh"] = &messages.DescribedGroup{GroupId: "fresh", GroupState: "Empty", ProtocolType: "consumer"}
	checkRefused(t, srv, []formCase{
		{"no token", path, with(base, "csrf", ""), nil, http.StatusForbidden, "form token"},
		{"other origin", path, base, map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden, "cross-origin"},
		{"cross site", path, base, map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden, "cross-site"},
		{"no confirmation", path, with(base, "confirm", "aud"), nil, http.StatusBadRequest, "confirm: type the group"},
		{"no target", path, with(base, "to", ""), nil, http.StatusBadRequest, "to &#34;&#34;: want earliest, latest, offset or datetime"},
		{"unknown target", path, with(base, "to", "middle"), nil, http.StatusBadRequest, "to &#34;middle&#34;"},
		{"negative offset", path, with(base, "to", "offset", "offset", "-1"), nil, http.StatusBadRequest, "offset &#34;-1&#34;"},
		{"offset not a number", path, with(base, "to", "offset", "offset", ""), nil, http.StatusBadRequest, "offset &#34;&#34;"},
		{"bad datetime", path, with(base, "to", "datetime", "datetime", "2026-01-02 15:04"), nil, http.StatusBadRequest, "RFC 3339"},
		{"partition without topic", path, with(base, "partition", "0"), nil, http.StatusBadRequest, "partition: choose a topic"},
		{"bad partition", path, with(base, "topic", "orders", "partition", "-2"), nil, http.StatusBadRequest, "partition"},
		{"partition out of range", path, with(base, "topic", "orders", "partition", "3"), nil, http.StatusBadRequest, "partition 3 out of range"},
		{"bad topic", path, with(base, "topic", "no spaces"), nil, http.StatusBadRequest, "topic: "},
		{"unknown topic", path, with(base, "topic", "nope"), nil, http.StatusNotFound, "UNKNOWN_TOPIC_OR_PARTITION"},
		{"group with members", "/ui/groups/billing/reset-offsets", with(base, "confirm", "billing"), nil, http.StatusConflict, "has members"},
		{"no committed offsets", "/ui/groups/fresh/reset-offsets", with(base, "confirm", "fresh"), nil, http.StatusBadRequest, "has no committed offsets"},
		{"bad group id", "/ui/groups/%20/reset-offsets", with(base, "confirm", " "), nil, http.StatusBadRequest, "group id"},
	})
	// Every topic is checked before any is reset: a topic that is gone
	// refuses the whole reset.
	f.lags["audit"] = append(slices.Clone(f.lags["audit"]), client.PartitionLag{Topic: "zzz-gone", Partition: 0, Committed: 2, LogEnd: -1, Lag: -1})
	checkRefused(t, srv, []formCase{{"a topic gone", path, base, nil, http.StatusNotFound, "nothing changed"}})
	if calls := f.adminCalls(); len(calls) != 0 {
		t.Fatalf("refused forms reset offsets: %q", calls)
	}
	f.lags["audit"] = f.lags["audit"][:1]

	for _, tc := range []struct {
		name string
		form url.Values
		loc  string
		call string
	}{
		{"every topic to earliest", base, "/ui/groups/audit?done=reset&n=1", "reset audit logs [] earliest"},
		{"one topic to latest", with(base, "to", "latest", "topic", "orders"), "/ui/groups/audit?done=reset&n=3", "reset audit orders [] latest"},
		{"one partition to an offset", with(base, "to", "offset", "offset", "5", "topic", "orders", "partition", "1"), "/ui/groups/audit?done=reset&n=1", "reset audit orders [1] offset 5"},
		{"to a datetime", with(base, "to", "datetime", "datetime", "2026-01-02T15:04:05+01:00"), "/ui/groups/audit?done=reset&n=1", "reset audit logs [] datetime 2026-01-02T14:04:05Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, loc, body := post(t, srv, path, tc.form, map[string]string{"Origin": srv.URL})
			if code != http.StatusSeeOther || loc != tc.loc {
				t.Fatalf("reset: %d to %q, want %q: %s", code, loc, tc.loc, body)
			}
			if calls := f.adminCalls(); calls[len(calls)-1] != tc.call {
				t.Fatalf("calls %q, want last %q", calls, tc.call)
			}
		})
	}
	getPage(t, srv, "/ui/groups/audit?done=reset&n=3", http.StatusOK, "Offsets reset: 3 partition(s).")
	// A crafted notice link carries numbers only.
	body := getPage(t, srv, "/ui/groups/audit?done=reset&n=%3Cb%3E", http.StatusOK, "Offsets reset.")
	if strings.Contains(body, "&lt;b&gt;") {
		t.Fatal("the notice shows text from the link")
	}
}
