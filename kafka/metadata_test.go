// metadata_test.go: the Metadata answer as a pure function of request and
// backend (per version), its wire form at every served version, and real
// clients (kgo + kadm) reading it from a running server.

package kafka

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

func topicNames(resp *kmsg.MetadataResponse) []string {
	var out []string
	for _, t := range resp.Topics {
		if t.Topic == nil {
			out = append(out, "<nil>")
			continue
		}
		out = append(out, *t.Topic)
	}
	return out
}

func findTopic(t *testing.T, resp *kmsg.MetadataResponse, name string) kmsg.MetadataResponseTopic {
	t.Helper()
	for _, rt := range resp.Topics {
		if rt.Topic != nil && *rt.Topic == name {
			return rt
		}
	}
	t.Fatalf("topic %q not in %v", name, topicNames(resp))
	return kmsg.MetadataResponseTopic{}
}

func TestMetadataTopicSelection(t *testing.T) {
	md := sampleCluster("127.0.0.1:9092")
	all := []string{"__consumer_offsets", "logs", "orders"}
	for _, tc := range []struct {
		name  string
		req   *kmsg.MetadataRequest
		want  []string
		codes []int16
	}{
		{"v0 empty is all", metadataReq(0, []string{}...), all, []int16{0, 0, 0}},
		{"v1 null is all", metadataReq(1), all, []int16{0, 0, 0}},
		{"v12 null is all", metadataReq(12), all, []int16{0, 0, 0}},
		{"v1 empty is none", metadataReq(1, []string{}...), nil, nil},
		{"named, in order, deduplicated", metadataReq(9, "orders", "nope", "logs", "orders", "nope"), []string{"orders", "nope", "logs"}, []int16{0, kerr.UnknownTopicOrPartition.Code, 0}},
		{"unknown only", metadataReq(4, "nope"), []string{"nope"}, []int16{kerr.UnknownTopicOrPartition.Code}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := metadataResponse(tc.req, &md)
			if got := topicNames(resp); !slices.Equal(got, tc.want) {
				t.Fatalf("topics %v, want %v", got, tc.want)
			}
			for i, rt := range resp.Topics {
				if rt.ErrorCode != tc.codes[i] {
					t.Errorf("%s: error %d, want %d", *rt.Topic, rt.ErrorCode, tc.codes[i])
				}
				if rt.ErrorCode != 0 && (len(rt.Partitions) != 0 || rt.TopicID != (TopicID{})) {
					t.Errorf("%s: error topic has partitions or an id", *rt.Topic)
				}
			}
		})
	}
}

func TestMetadataByTopicID(t *testing.T) {
	md := sampleCluster("127.0.0.1:9092")
	req := metadataReq(12)
	req.Topics = []kmsg.MetadataRequestTopic{}
	for _, id := range []TopicID{testTopicID(2), testTopicID(77), testTopicID(2)} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.TopicID = id
		req.Topics = append(req.Topics, rt)
	}
	nameless := kmsg.NewMetadataRequestTopic()
	req.Topics = append(req.Topics, nameless)
	if q := metadataQuery(req); !q.AllTopics {
		t.Errorf("query by id %+v: want all topics", q)
	}
	resp := metadataResponse(req, &md)
	if len(resp.Topics) != 3 {
		t.Fatalf("topics %v, want logs, an unknown id, an invalid entry", topicNames(resp))
	}
	if rt := resp.Topics[0]; rt.Topic == nil || *rt.Topic != "logs" || rt.TopicID != testTopicID(2) || rt.ErrorCode != 0 {
		t.Errorf("by id: %+v", rt)
	}
	if rt := resp.Topics[1]; rt.Topic != nil || rt.TopicID != testTopicID(77) || rt.ErrorCode != kerr.UnknownTopicID.Code {
		t.Errorf("unknown id: %+v", rt)
	}
	if rt := resp.Topics[2]; rt.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("neither name nor id: %+v", rt)
	}

	old := metadataReq(11, "orders")
	old.Topics[0].TopicID = testTopicID(1)
	if resp := metadataResponse(old, &md); len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("id before v12: %+v", resp.Topics)
	}
	if q := metadataQuery(old); q.AllTopics || !slices.Equal(q.Topics, []string{"orders"}) {
		t.Errorf("v11 query %+v", q)
	}
}

func TestMetadataPartitions(t *testing.T) {
	md := sampleCluster("127.0.0.1:9092")
	md.Topics = append(md.Topics, Topic{Name: "gone-leader", Partitions: []Partition{
		{Partition: 0, Leader: 9, LeaderEpoch: 3, Replicas: []int32{9, 1}, ISR: []int32{9, 1}},
		{Partition: 1, Leader: 1, ErrorCode: kerr.KafkaStorageError.Code, Replicas: []int32{1}, ISR: []int32{1}},
	}})
	for v := int16(0); v <= 12; v++ {
		resp := metadataResponse(metadataReq(v), &md)
		if resp.ControllerID != 2 || resp.ClusterID == nil || *resp.ClusterID != "test-cluster-id" || len(resp.Brokers) != 3 {
			t.Fatalf("v%d: controller %d cluster %v brokers %d", v, resp.ControllerID, resp.ClusterID, len(resp.Brokers))
		}
		if b := resp.Brokers[0]; b.NodeID != 1 || b.Port != 9092 || b.Rack == nil || *b.Rack != "rack-a" {
			t.Errorf("v%d: broker %+v", v, b)
		}
		if resp.Brokers[2].Rack != nil {
			t.Errorf("v%d: empty rack not null", v)
		}
		orders := findTopic(t, resp, "orders")
		if orders.IsInternal || !findTopic(t, resp, "__consumer_offsets").IsInternal {
			t.Errorf("v%d: internal flags wrong", v)
		}
		if orders.TopicID != testTopicID(1) || len(orders.Partitions) != 3 {
			t.Fatalf("v%d: orders %+v", v, orders)
		}
		p1 := orders.Partitions[1]
		if p1.Leader != 2 || p1.LeaderEpoch != 7 || !slices.Equal(p1.Replicas, []int32{2, 3, 1}) ||
			!slices.Equal(p1.ISR, []int32{2, 3}) || !slices.Equal(p1.OfflineReplicas, []int32{1}) || p1.ErrorCode != 0 {
			t.Errorf("v%d: orders/1 %+v", v, p1)
		}
		logs := findTopic(t, resp, "logs").Partitions[0]
		if logs.Leader != -1 || logs.ErrorCode != kerr.LeaderNotAvailable.Code {
			t.Errorf("v%d: leaderless partition %+v", v, logs)
		}
		gone := findTopic(t, resp, "gone-leader").Partitions
		if gone[0].Leader != -1 || gone[0].ErrorCode != kerr.LeaderNotAvailable.Code {
			t.Errorf("v%d: partition led by a dead host %+v", v, gone[0])
		}
		if gone[1].Leader != 1 || gone[1].ErrorCode != kerr.KafkaStorageError.Code {
			t.Errorf("v%d: backend error code lost %+v", v, gone[1])
		}
		wantReplicas, wantCode := []int32{9, 1}, kerr.LeaderNotAvailable.Code
		if v == 0 {
			wantReplicas = []int32{1} // v0 lists live replicas only
		}
		if !slices.Equal(gone[0].Replicas, wantReplicas) || gone[0].ErrorCode != wantCode {
			t.Errorf("v%d: replicas %v error %d", v, gone[0].Replicas, gone[0].ErrorCode)
		}
	}
	// v0 flags a replica cut away when the leader is fine.
	md.Topics = []Topic{{Name: "t", Partitions: []Partition{{Partition: 0, Leader: 1, Replicas: []int32{1, 9}, ISR: []int32{1}}}}}
	p := metadataResponse(metadataReq(0), &md).Topics[0].Partitions[0]
	if p.ErrorCode != kerr.ReplicaNotAvailable.Code || !slices.Equal(p.Replicas, []int32{1}) {
		t.Errorf("v0 dead replica: %+v", p)
	}
	if p := metadataResponse(metadataReq(1), &md).Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.Replicas) != 2 {
		t.Errorf("v1 dead replica: %+v", p)
	}
}

func TestMetadataAuthorizedOperations(t *testing.T) {
	md := sampleCluster("127.0.0.1:9092")
	for v := int16(0); v <= 12; v++ {
		req := metadataReq(v, "orders")
		req.IncludeClusterAuthorizedOperations = true
		req.IncludeTopicAuthorizedOperations = true
		resp := metadataResponse(req, &md)
		wantCluster, wantTopic := int32(-2147483648), int32(-2147483648)
		if v >= 8 {
			wantTopic = topicOperations
			if v <= 10 {
				wantCluster = clusterOperations
			}
		}
		if resp.AuthorizedOperations != wantCluster || resp.Topics[0].AuthorizedOperations != wantTopic {
			t.Errorf("v%d: cluster ops %d topic ops %d, want %d %d", v, resp.AuthorizedOperations, resp.Topics[0].AuthorizedOperations, wantCluster, wantTopic)
		}
	}
	ops := kadm.DecodeACLOperations(topicOperations)
	if len(ops) != 8 || !slices.Contains(ops, kmsg.ACLOperationDescribe) || slices.Contains(ops, kmsg.ACLOperationIdempotentWrite) {
		t.Errorf("topic operations %v", ops)
	}
}

// TestMetadataEveryVersionOnTheWire asks a running server for metadata at
// each served version over one raw connection and decodes the answers.
func TestMetadataEveryVersionOnTheWire(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial(t)
	for v := int16(0); v <= 12; v++ {
		req := metadataReq(v)
		if v == 0 {
			req = metadataReq(0, []string{}...)
		}
		if _, err := c.Write(frame(req, int32(100+v))); err != nil {
			t.Fatalf("write v%d: %v", v, err)
		}
		resp := kmsg.NewPtrMetadataResponse()
		resp.SetVersion(v)
		if corr := readResponse(t, c, resp); corr != int32(100+v) {
			t.Fatalf("v%d: correlation id %d", v, corr)
		}
		if len(resp.Brokers) != 3 || len(resp.Topics) != 3 {
			t.Fatalf("v%d: %d brokers, topics %v", v, len(resp.Brokers), topicNames(resp))
		}
		orders := findTopic(t, resp, "orders")
		if len(orders.Partitions) != 3 || orders.Partitions[2].Leader != 3 {
			t.Errorf("v%d: orders %+v", v, orders.Partitions)
		}
		if v >= 7 && orders.Partitions[1].LeaderEpoch != 7 {
			t.Errorf("v%d: leader epoch %d", v, orders.Partitions[1].LeaderEpoch)
		}
		if v >= 10 && orders.TopicID != testTopicID(1) {
			t.Errorf("v%d: topic id %v", v, orders.TopicID)
		}
		if v >= 2 && (resp.ClusterID == nil || *resp.ClusterID != "test-cluster-id") {
			t.Errorf("v%d: cluster id %v", v, resp.ClusterID)
		}
	}
}

func newClients(t *testing.T, addr string) (*kgo.Client, *kadm.Client) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(2), kgo.RetryTimeout(5*time.Second))
	if err != nil {
		t.Fatalf("new kgo client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl, kadm.NewClient(cl)
}

// TestKadmMetadata reads the cluster with franz-go's admin client and
// compares it with the backend.
func TestKadmMetadata(t *testing.T) {
	ts := startServer(t, nil)
	_, adm := newClients(t, ts.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	md, err := adm.Metadata(ctx)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	want := ts.backend.md
	if md.Cluster != want.ClusterID || md.Controller != want.ControllerID || len(md.Brokers) != len(want.Brokers) {
		t.Fatalf("cluster %q controller %d brokers %v", md.Cluster, md.Controller, md.Brokers)
	}
	for i, b := range want.Brokers {
		got := md.Brokers[i]
		if got.NodeID != b.NodeID || got.Host != b.Host || got.Port != b.Port || (b.Rack == "") != (got.Rack == nil) || (got.Rack != nil && *got.Rack != b.Rack) {
			t.Errorf("broker %d: %+v, want %+v", i, got, b)
		}
	}
	if len(md.Topics) != len(want.Topics) {
		t.Fatalf("topics %v", md.Topics.Names())
	}
	for _, wt := range want.Topics {
		td, ok := md.Topics[wt.Name]
		if !ok {
			t.Fatalf("topic %s missing", wt.Name)
		}
		if td.ID != kadm.TopicID(wt.ID) || td.IsInternal != (wt.Name == "__consumer_offsets") || len(td.Partitions) != len(wt.Partitions) || td.Err != nil {
			t.Errorf("topic %s: %+v", wt.Name, td)
		}
		for _, wp := range wt.Partitions {
			pd := td.Partitions[wp.Partition]
			leader, wantErr := wp.Leader, error(nil)
			if leader < 0 {
				leader, wantErr = -1, kerr.LeaderNotAvailable
			}
			if pd.Leader != leader || pd.LeaderEpoch != wp.LeaderEpoch || !slices.Equal(pd.Replicas, wp.Replicas) ||
				!slices.Equal(pd.ISR, wp.ISR) || !slices.Equal(pd.OfflineReplicas, wp.Offline) || !errors.Is(pd.Err, wantErr) && pd.Err != wantErr {
				t.Errorf("%s/%d: %+v, want %+v", wt.Name, wp.Partition, pd, wp)
			}
		}
	}

	if _, err := adm.Metadata(ctx, "orders", "missing"); err != nil {
		t.Fatalf("metadata for two topics: %v", err)
	}
	named, err := adm.Metadata(ctx, "missing")
	if err != nil {
		t.Fatalf("metadata for a missing topic: %v", err)
	}
	if !errors.Is(named.Topics["missing"].Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("missing topic: %v", named.Topics["missing"].Err)
	}

	bm, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatalf("broker metadata: %v", err)
	}
	if len(bm.Brokers) != 3 || len(bm.Topics) != 0 || bm.Controller != 2 || bm.Cluster != "test-cluster-id" {
		t.Errorf("broker metadata: %+v", bm)
	}
}

// TestKadmApiVersions checks what every broker advertises to kadm.
func TestKadmApiVersions(t *testing.T) {
	ts := startServer(t, nil)
	_, adm := newClients(t, ts.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	vs, err := adm.ApiVersions(ctx)
	if err != nil {
		t.Fatalf("api versions: %v", err)
	}
	if len(vs) != 3 {
		t.Fatalf("answers from %d brokers, want 3", len(vs))
	}
	for node, v := range vs {
		if v.Err != nil {
			t.Fatalf("node %d: %v", node, v.Err)
		}
		for key, want := range map[int16][2]int16{3: {0, 12}, 18: {0, 4}} {
			lo, hi, ok := v.KeyVersions(key)
			if !ok || lo != want[0] || hi != want[1] {
				t.Errorf("node %d key %d: %d-%d %v, want %v", node, key, lo, hi, ok, want)
			}
		}
		if _, _, ok := v.KeyVersions(0); ok {
			t.Errorf("node %d advertises Produce, which is not served yet", node)
		}
	}
}

// TestKgoPingAndMetadata drives the plain kgo client: it negotiates
// ApiVersions and Metadata and issues a request of its own at the highest
// version both sides know.
func TestKgoPingAndMetadata(t *testing.T) {
	ts := startServer(t, nil)
	cl, _ := newClients(t, ts.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("orders")
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	if resp.Version != 12 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 3 {
		t.Fatalf("metadata v%d topics %v", resp.Version, topicNames(resp))
	}
}

func TestMetadataQuery(t *testing.T) {
	autoOff := metadataReq(4, "a")
	autoOff.AllowAutoTopicCreation = false
	autoOn := metadataReq(4, "a")
	autoOn.AllowAutoTopicCreation = true
	for _, tc := range []struct {
		name string
		req  *kmsg.MetadataRequest
		want MetadataQuery
	}{
		{"v0 empty", metadataReq(0, []string{}...), MetadataQuery{AllTopics: true, AllowAutoCreate: true}},
		{"v1 null", metadataReq(1), MetadataQuery{AllTopics: true, AllowAutoCreate: true}},
		{"v1 empty", metadataReq(1, []string{}...), MetadataQuery{AllowAutoCreate: true}},
		{"dedup", metadataReq(3, "b", "a", "b"), MetadataQuery{Topics: []string{"b", "a"}, AllowAutoCreate: true}},
		{"v4 auto off", autoOff, MetadataQuery{Topics: []string{"a"}}},
		{"v4 auto on", autoOn, MetadataQuery{Topics: []string{"a"}, AllowAutoCreate: true}},
	} {
		got := metadataQuery(tc.req)
		if got.AllTopics != tc.want.AllTopics || got.AllowAutoCreate != tc.want.AllowAutoCreate || !slices.Equal(got.Topics, tc.want.Topics) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestKgoAcrossClientVersions pins kgo to the protocol of older Kafka
// releases, so real clients negotiate old ApiVersions and Metadata
// versions (0.10.0 speaks ApiVersions v0 and Metadata v1; 2.1 Metadata v7;
// 2.8 Metadata v11 flexible).
func TestKgoAcrossClientVersions(t *testing.T) {
	ts := startServer(t, nil)
	for name, vs := range map[string]*kversion.Versions{
		"0.10.0": kversion.V0_10_0(), "1.0": kversion.V1_0_0(), "2.1": kversion.V2_1_0(),
		"2.8": kversion.V2_8_0(), "3.9": kversion.V3_9_0(), "stable": kversion.Stable(),
	} {
		t.Run(name, func(t *testing.T) {
			cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.MaxVersions(vs), kgo.RequestRetries(2))
			if err != nil {
				t.Fatalf("new client: %v", err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			md, err := kadm.NewClient(cl).Metadata(ctx, "orders")
			if err != nil {
				t.Fatalf("metadata: %v", err)
			}
			orders := md.Topics["orders"]
			if len(md.Brokers) != 3 || orders.Err != nil || len(orders.Partitions) != 3 || orders.Partitions[1].Leader != 2 {
				t.Fatalf("brokers %v orders %+v", md.Brokers, orders)
			}
			metaMax, _ := vs.LookupMaxKeyVersion(3)
			if want := int32(7); metaMax >= 7 && orders.Partitions[1].LeaderEpoch != want {
				t.Errorf("leader epoch %d at metadata v%d", orders.Partitions[1].LeaderEpoch, metaMax)
			}
		})
	}
}
