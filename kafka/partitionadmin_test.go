// partitionadmin_test.go: ElectLeaders, AlterPartitionReassignments and
// ListPartitionReassignments against a fake PartitionAdminBackend, over
// the wire: results follow the request (duplicates merged, each version's
// fields), the backend's per-partition codes pass through, a top-level
// failure reaches every named partition, unclean elections are refused
// without asking the backend, bad replica lists are
// INVALID_REPLICA_ASSIGNMENT all or nothing per topic, the listing is
// filtered and sorted, and the three APIs are advertised exactly when
// Config.PartitionAdmin is set.

package kafka

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakePartitionAdmin is a PartitionAdminBackend over a fixed topic
// "orders" (partitions 0-2; 0 led by its preferred replica, 1 not, 2 with
// its preferred replica out of the ISR; 1 being reassigned).
type fakePartitionAdmin struct {
	mu       sync.Mutex
	elects   [][]TopicPartitions // every ElectPreferredLeaders call
	alters   map[string][]PartitionReassignment
	topLevel AdminResult // returned by ElectPreferredLeaders when set
}

var _ PartitionAdminBackend = (*fakePartitionAdmin)(nil)

func (f *fakePartitionAdmin) ElectPreferredLeaders(_ context.Context, topics []TopicPartitions) (ElectionResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.elects = append(f.elects, topics)
	if f.topLevel.ErrorCode != 0 {
		return ElectionResult{AdminResult: f.topLevel}, nil
	}
	if topics == nil { // all: the not-needed ones left out
		return ElectionResult{Partitions: []PartitionResult{
			{Topic: "orders", Partition: 1},
			{Topic: "orders", Partition: 2, AdminResult: AdminResult{ErrorCode: kerr.PreferredLeaderNotAvailable.Code, ErrorMessage: "not in the ISR"}},
			{Topic: "logs", Partition: 0},
		}}, nil
	}
	var res ElectionResult
	for _, tp := range topics {
		for _, p := range tp.Partitions {
			r := PartitionResult{Topic: tp.Topic, Partition: p}
			switch {
			case tp.Topic != "orders" || p < 0 || p > 2:
				r.ErrorCode, r.ErrorMessage = kerr.UnknownTopicOrPartition.Code, "no such partition"
			case p == 0:
				r.ErrorCode, r.ErrorMessage = kerr.ElectionNotNeeded.Code, "leads already"
			case p == 2:
				r.ErrorCode, r.ErrorMessage = kerr.PreferredLeaderNotAvailable.Code, "not in the ISR"
			}
			res.Partitions = append(res.Partitions, r)
		}
	}
	return res, nil
}

func (f *fakePartitionAdmin) AlterReassignments(_ context.Context, topic string, parts []PartitionReassignment) ([]AdminResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.alters == nil {
		f.alters = map[string][]PartitionReassignment{}
	}
	f.alters[topic] = parts
	out := make([]AdminResult, len(parts))
	for i, p := range parts {
		switch {
		case topic != "orders":
			out[i] = AdminResult{ErrorCode: kerr.UnknownTopicOrPartition.Code, ErrorMessage: "no topic"}
		case p.Replicas == nil && p.Partition != 1:
			out[i] = AdminResult{ErrorCode: kerr.NoReassignmentInProgress.Code, ErrorMessage: "nothing to cancel"}
		}
	}
	NotApplied(topic, out)
	return out, nil
}

func (f *fakePartitionAdmin) ListReassignments(context.Context) ([]Reassignment, error) {
	return []Reassignment{
		{Topic: "orders", Partition: 2, Replicas: []int32{3, 1, 2}, Adding: []int32{3}, Removing: []int32{2}},
		{Topic: "logs", Partition: 0, Replicas: []int32{2, 1}, Adding: []int32{2}, Removing: []int32{1}},
		{Topic: "orders", Partition: 1, Replicas: []int32{1, 2}, Adding: []int32{1}},
	}, nil
}

// partitionAdminServer serves the fake backend; it returns the fake and a
// connection.
func partitionAdminServer(t *testing.T) (*fakePartitionAdmin, *testServer) {
	t.Helper()
	f := &fakePartitionAdmin{}
	ts := startServer(t, func(c *Config) { c.PartitionAdmin = f })
	return f, ts
}

// electReq is an ElectLeaders request at v naming topics (nil: all).
func electReq(v int16, typ int8, topics ...kmsg.ElectLeadersRequestTopic) *kmsg.ElectLeadersRequest {
	req := kmsg.NewPtrElectLeadersRequest()
	req.Version, req.ElectionType, req.Topics = v, typ, topics
	return req
}

func electTopic(name string, parts ...int32) kmsg.ElectLeadersRequestTopic {
	t := kmsg.NewElectLeadersRequestTopic()
	t.Topic, t.Partitions = name, parts
	return t
}

// electCodes flattens resp to "topic/partition" → code, in order.
type electCode struct {
	topic string
	part  int32
	code  int16
}

func electCodes(resp *kmsg.ElectLeadersResponse) []electCode {
	var out []electCode
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out = append(out, electCode{t.Topic, p.Partition, p.ErrorCode})
		}
	}
	return out
}

func TestElectLeadersNamed(t *testing.T) {
	f, ts := partitionAdminServer(t)
	c := ts.dial(t)
	for _, v := range []int16{0, 1, 2} {
		req := electReq(v, 0, electTopic("orders", 2, 0, 1, 0), electTopic("nosuch", 0), electTopic("orders", 7), electTopic("empty"))
		resp := kmsg.NewPtrElectLeadersResponse()
		resp.Version = v
		adminRoundTrip(t, c, req, resp)
		want := []electCode{
			{"orders", 2, kerr.PreferredLeaderNotAvailable.Code}, {"orders", 0, kerr.ElectionNotNeeded.Code}, {"orders", 1, 0},
			{"orders", 7, kerr.UnknownTopicOrPartition.Code}, {"nosuch", 0, kerr.UnknownTopicOrPartition.Code},
		}
		if got := electCodes(resp); !slices.Equal(got, want) || resp.ErrorCode != 0 {
			t.Fatalf("v%d: %+v (top %d), want %+v", v, got, resp.ErrorCode, want)
		}
		if len(resp.Topics) != 3 || resp.Topics[2].Topic != "empty" || len(resp.Topics[2].Partitions) != 0 {
			t.Fatalf("v%d: topics %+v, want orders, nosuch, empty (with no partitions)", v, resp.Topics)
		}
		if m := resp.Topics[0].Partitions[0].ErrorMessage; m == nil || *m != "not in the ISR" {
			t.Errorf("v%d: message %v", v, m)
		}
		if m := resp.Topics[0].Partitions[2].ErrorMessage; m != nil {
			t.Errorf("v%d: success with message %q", v, *m)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	last := f.elects[len(f.elects)-1]
	if len(last) != 2 || last[0].Topic != "orders" || !slices.Equal(last[0].Partitions, []int32{2, 0, 1, 7}) || last[1].Topic != "nosuch" {
		t.Fatalf("backend asked %+v, want orders [2 0 1 7] and nosuch (merged, the empty topic left out)", last)
	}
}

func TestElectLeadersAllAndFailures(t *testing.T) {
	f, ts := partitionAdminServer(t)
	c := ts.dial(t)

	// Null list: every partition, grouped by topic as the backend gave them.
	resp := kmsg.NewPtrElectLeadersResponse()
	resp.Version = 1
	adminRoundTrip(t, c, electReq(1, 0), resp)
	want := []electCode{{"orders", 1, 0}, {"orders", 2, kerr.PreferredLeaderNotAvailable.Code}, {"logs", 0, 0}}
	if got := electCodes(resp); !slices.Equal(got, want) || len(resp.Topics) != 2 {
		t.Fatalf("all: %+v, want %+v in two topics", got, want)
	}

	// Only topics without partitions: the backend is not asked.
	calls := func() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.elects) }
	before := calls()
	adminRoundTrip(t, c, electReq(1, 0, electTopic("orders")), resp)
	if calls() != before || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 0 {
		t.Fatalf("no partitions: %+v, backend calls %d→%d", resp.Topics, before, calls())
	}

	// Unclean (and unknown) election types are refused without asking.
	for _, typ := range []int8{1, 5} {
		adminRoundTrip(t, c, electReq(2, typ, electTopic("orders", 0, 1)), resp2(2, resp))
		if got := electCodes(resp); resp.ErrorCode != 0 || !slices.Equal(got, []electCode{{"orders", 0, kerr.InvalidRequest.Code}, {"orders", 1, kerr.InvalidRequest.Code}}) ||
			resp.Topics[0].Partitions[0].ErrorMessage == nil {
			t.Fatalf("type %d: %+v top %d", typ, resp.Topics, resp.ErrorCode)
		}
		adminRoundTrip(t, c, electReq(2, typ), resp2(2, resp))
		if resp.ErrorCode != kerr.InvalidRequest.Code || len(resp.Topics) != 0 {
			t.Fatalf("type %d, all partitions: top %d, topics %+v", typ, resp.ErrorCode, resp.Topics)
		}
	}
	if calls() != before {
		t.Fatalf("unclean elections reached the backend")
	}

	// A top-level failure: v1+ top-level code, every named partition too.
	f.mu.Lock()
	f.topLevel = AdminResult{ErrorCode: kerr.RequestTimedOut.Code, ErrorMessage: "controller slow"}
	f.mu.Unlock()
	for _, v := range []int16{0, 1} {
		adminRoundTrip(t, c, electReq(v, 0, electTopic("orders", 1)), resp2(v, resp))
		wantTop := int16(0)
		if v >= 1 {
			wantTop = kerr.RequestTimedOut.Code
		}
		if got := electCodes(resp); resp.ErrorCode != wantTop || !slices.Equal(got, []electCode{{"orders", 1, kerr.RequestTimedOut.Code}}) ||
			*resp.Topics[0].Partitions[0].ErrorMessage != "controller slow" {
			t.Fatalf("v%d timed out: %+v top %d", v, got, resp.ErrorCode)
		}
	}
}

// resp2 resets resp for version v and returns it.
func resp2(v int16, resp *kmsg.ElectLeadersResponse) *kmsg.ElectLeadersResponse {
	*resp = *kmsg.NewPtrElectLeadersResponse()
	resp.Version = v
	return resp
}

func reassignPart(p int32, replicas []int32) kmsg.AlterPartitionAssignmentsRequestTopicPartition {
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rp.Partition, rp.Replicas = p, replicas
	return rp
}

func TestAlterPartitionReassignments(t *testing.T) {
	f, ts := partitionAdminServer(t)
	c := ts.dial(t)
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	topic := func(name string, parts ...kmsg.AlterPartitionAssignmentsRequestTopicPartition) kmsg.AlterPartitionAssignmentsRequestTopic {
		t := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		t.Topic, t.Partitions = name, parts
		return t
	}
	req.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{
		topic("orders", reassignPart(0, []int32{2, 1}), reassignPart(1, nil)),
		topic("bad", reassignPart(0, []int32{1, 2}), reassignPart(1, []int32{}), reassignPart(2, []int32{3, 3}), reassignPart(3, []int32{-1})),
		topic("orders", reassignPart(2, nil)),
		topic("nosuch", reassignPart(0, []int32{1})),
	}
	resp := kmsg.NewPtrAlterPartitionAssignmentsResponse()
	adminRoundTrip(t, c, req, resp)
	type code struct {
		topic string
		part  int32
		code  int16
	}
	var got []code
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			got = append(got, code{rt.Topic, p.Partition, p.ErrorCode})
			if (p.ErrorCode != 0) != (p.ErrorMessage != nil) {
				t.Errorf("%s/%d: code %d message %v", rt.Topic, p.Partition, p.ErrorCode, p.ErrorMessage)
			}
		}
	}
	inv, ira := kerr.InvalidRequest.Code, kerr.InvalidReplicaAssignment.Code
	want := []code{
		// orders (merged): partition 2 has nothing to cancel, so none applies.
		{"orders", 0, inv}, {"orders", 1, inv}, {"orders", 2, kerr.NoReassignmentInProgress.Code},
		// bad: refused here, the good one not applied.
		{"bad", 0, inv}, {"bad", 1, ira}, {"bad", 2, ira}, {"bad", 3, ira},
		{"nosuch", 0, kerr.UnknownTopicOrPartition.Code},
	}
	if !slices.Equal(got, want) || resp.ErrorCode != 0 {
		t.Fatalf("results %+v (top %d), want %+v", got, resp.ErrorCode, want)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, asked := f.alters["bad"]; asked {
		t.Errorf("a topic refused here reached the backend: %+v", f.alters["bad"])
	}
	orders := f.alters["orders"]
	if len(orders) != 3 || !slices.Equal(orders[0].Replicas, []int32{2, 1}) || orders[1].Replicas != nil || orders[2].Partition != 2 || orders[2].Replicas != nil {
		t.Fatalf("backend got orders %+v, want [2 1], cancel 1, cancel 2", orders)
	}
}

func TestListPartitionReassignments(t *testing.T) {
	_, ts := partitionAdminServer(t)
	c := ts.dial(t)
	list := func(topics ...kmsg.ListPartitionReassignmentsRequestTopic) []string {
		req := kmsg.NewPtrListPartitionReassignmentsRequest()
		req.Topics = topics
		resp := kmsg.NewPtrListPartitionReassignmentsResponse()
		adminRoundTrip(t, c, req, resp)
		var out []string
		for _, rt := range resp.Topics {
			for _, p := range rt.Partitions {
				out = append(out, rt.Topic+"/"+string(rune('0'+p.Partition)))
			}
		}
		return out
	}
	if got := list(); !slices.Equal(got, []string{"logs/0", "orders/1", "orders/2"}) {
		t.Fatalf("all: %v", got)
	}
	named := func(name string, parts ...int32) kmsg.ListPartitionReassignmentsRequestTopic {
		t := kmsg.NewListPartitionReassignmentsRequestTopic()
		t.Topic, t.Partitions = name, parts
		return t
	}
	if got := list(named("orders", 2, 0, 9), named("nosuch", 0)); !slices.Equal(got, []string{"orders/2"}) {
		t.Fatalf("named: %v, want orders/2 only (others not reassigning or unknown)", got)
	}
	if got := list([]kmsg.ListPartitionReassignmentsRequestTopic{}...); len(got) != 0 {
		t.Fatalf("empty list: %v", got)
	}

	// Adding and removing replicas are reported as given.
	resp := listReassignmentsResponse(kmsg.NewPtrListPartitionReassignmentsRequest(), (&fakePartitionAdmin{}).mustList(t))
	p := resp.Topics[1].Partitions[1] // orders/2
	if !slices.Equal(p.Replicas, []int32{3, 1, 2}) || !slices.Equal(p.AddingReplicas, []int32{3}) || !slices.Equal(p.RemovingReplicas, []int32{2}) {
		t.Fatalf("orders/2: %+v", p)
	}
}

func (f *fakePartitionAdmin) mustList(t *testing.T) []Reassignment {
	t.Helper()
	l, err := f.ListReassignments(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestPartitionAdminAdvertisedOnlyWithBackend(t *testing.T) {
	has := func(cfg *Config) map[int16]kmsg.ApiVersionsResponseApiKey {
		out := map[int16]kmsg.ApiVersionsResponseApiKey{}
		for _, k := range newTable(cfg).advertised() {
			out[k.ApiKey] = k
		}
		return out
	}
	without := has(&Config{Backend: &fakeBackend{}, Admin: newFakeAdmin()})
	with := has(&Config{Backend: &fakeBackend{}, PartitionAdmin: &fakePartitionAdmin{}})
	for key, max := range map[int16]int16{43: 2, 45: 0, 46: 0} {
		if _, ok := without[key]; ok {
			t.Errorf("key %d advertised without a PartitionAdminBackend", key)
		}
		if got, ok := with[key]; !ok || got.MinVersion != 0 || got.MaxVersion != max {
			t.Errorf("key %d: %+v, want 0-%d", key, got, max)
		}
	}
}
