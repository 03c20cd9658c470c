// contract_test.go: one table of MetadataStore expectations run against
// both implementations — Store on a real embedded etcd and MemStore — so
// the fake the actor tests use behaves as the real thing does.

package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
)

// contractStore is a MetadataStore under test with the controls that
// etcd has by itself and MemStore has as methods.
type contractStore struct {
	cluster.MetadataStore
	// register registers a host (its lease lives until expire).
	register func(t *testing.T, info *messages.HostInfo) (epoch int64, expire func())
	// compact compacts the history up to rev.
	compact func(t *testing.T, rev int64)
	// tryRegister registers a host and returns the error, if any (a
	// registration made is closed at cleanup).
	tryRegister func(t *testing.T, info *messages.HostInfo) error
}

// contractStores are the implementations every contract case runs on.
var contractStores = []struct {
	name string
	new  func(t *testing.T) contractStore
}{
	{"etcd", func(t *testing.T) contractStore {
		s, e := clustertest.NewStore(t)
		return contractStore{
			MetadataStore: s,
			register: func(t *testing.T, info *messages.HostInfo) (int64, func()) {
				t.Helper()
				reg, err := s.Register(testCtx(t, 10*time.Second), info, 10*time.Second)
				if err != nil {
					t.Fatalf("register host %d: %v", info.GetHostId(), err)
				}
				t.Cleanup(func() {
					if err := reg.Close(); err != nil {
						t.Errorf("close registration: %v", err)
					}
				})
				return reg.Epoch(), func() {
					if err := reg.Close(); err != nil {
						t.Errorf("close registration: %v", err)
					}
				}
			},
			compact: func(t *testing.T, rev int64) {
				t.Helper()
				if _, err := e.Client().Compact(testCtx(t, 10*time.Second), rev); err != nil {
					t.Fatalf("compact: %v", err)
				}
			},
			tryRegister: func(t *testing.T, info *messages.HostInfo) error {
				reg, err := s.Register(testCtx(t, 10*time.Second), info, 10*time.Second)
				if err == nil {
					t.Cleanup(func() {
						if err := reg.Close(); err != nil {
							t.Errorf("close registration: %v", err)
						}
					})
				}
				return err
			},
		}
	}},
	{"memory", func(t *testing.T) contractStore {
		m := cluster.NewMemStore(clustertest.Logger(t))
		return contractStore{
			MetadataStore: m,
			register: func(t *testing.T, info *messages.HostInfo) (int64, func()) {
				t.Helper()
				epoch, err := m.RegisterHost(info)
				if err != nil {
					t.Fatalf("register host %d: %v", info.GetHostId(), err)
				}
				return epoch, func() { m.ExpireHost(info.GetHostId()) }
			},
			compact: func(_ *testing.T, rev int64) { m.Compact(rev) },
			tryRegister: func(_ *testing.T, info *messages.HostInfo) error {
				_, err := m.RegisterHost(info)
				return err
			},
		}
	}},
}

// contractCases are the expectations; each gets a fresh store.
var contractCases = []struct {
	name string
	run  func(t *testing.T, s contractStore)
}{
	{"topic lifecycle", contractTopicLifecycle},
	{"fencing follows the election", contractFencing},
	{"lost session", contractLostSession},
	{"cancelled campaign withdraws", contractCampaignCancel},
	{"topic watch", contractWatchTopics},
	{"hosts, snapshot and host watch", contractHosts},
	{"producer ids", contractProducerIDs},
	{"cluster id", contractClusterID},
	{"host addresses are validated", contractHostAddresses},
}

func TestMetadataStoreContract(t *testing.T) {
	for _, impl := range contractStores {
		t.Run(impl.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range contractCases {
				t.Run(c.name, func(t *testing.T) { c.run(t, impl.new(t)) })
			}
		})
	}
}

// electOn makes a candidate on s, closed at cleanup, and returns it with
// its fence once elected.
func electOn(t *testing.T, s cluster.MetadataStore, value string) (cluster.Election, cluster.Fence) {
	t.Helper()
	ctx := testCtx(t, 10*time.Second)
	el := candidateOn(t, s)
	f, err := el.Campaign(ctx, value)
	if err != nil {
		t.Fatalf("campaign: %v", err)
	}
	return el, f
}

// candidateOn makes a candidate on s (TTL 3 s), closed at cleanup.
func candidateOn(t *testing.T, s cluster.MetadataStore) cluster.Election {
	t.Helper()
	el, err := s.NewElection(testCtx(t, 10*time.Second), 3*time.Second)
	if err != nil {
		t.Fatalf("new election: %v", err)
	}
	t.Cleanup(func() {
		if err := el.Close(); err != nil {
			t.Errorf("close election: %v", err)
		}
	})
	return el
}

// candidates waits until s has n election candidates.
func candidates(t *testing.T, s cluster.MetadataStore, n int) {
	t.Helper()
	waitFor(t, 5*time.Second, func() error {
		keys, _, err := s.Candidates(testCtx(t, 5*time.Second))
		if err != nil {
			return err
		}
		if len(keys) != n {
			return fmt.Errorf("%d candidates, want %d", len(keys), n)
		}
		return nil
	})
}

func contractTopicLifecycle(t *testing.T, s contractStore) {
	_, fence := electOn(t, s, "controller-1")
	ctx := testCtx(t, 20*time.Second)
	topic := newTopic(t, "orders", 3, 2, map[string]string{"retention.ms": "3600000"})
	if err := s.CreateTopic(ctx, fence, topic); err != nil {
		t.Fatalf("create: %v", err)
	}
	if len(topic.GetTopicId()) != 22 {
		t.Fatalf("topic id %q, want 22 characters", topic.GetTopicId())
	}
	got, rev, err := s.GetTopic(ctx, "orders")
	if err != nil || !proto.Equal(got, topic) || rev <= 0 {
		t.Fatalf("get = %v @%d, %v; want %v", got, rev, err, topic)
	}
	got.Configs["retention.ms"] = "1" // a copy: the store is not changed
	if again, _, _ := s.GetTopic(ctx, "orders"); !proto.Equal(again, topic) {
		t.Fatalf("changing a read topic changed the store: %v", again)
	}
	wantErr(t, s.CreateTopic(ctx, fence, newTopic(t, "orders", 1, 1, nil)), cluster.ErrTopicExists)
	wantErr(t, s.CreateTopic(ctx, fence, newTopic(t, "bad/name", 1, 1, nil)), cluster.ErrInvalidTopic)
	wantErr(t, s.CreateTopic(ctx, fence, newTopic(t, "cfg", 1, 1, map[string]string{"x": "1"})), cluster.ErrInvalidConfig)
	wantErr(t, s.CreateTopic(ctx, cluster.Fence{}, newTopic(t, "other", 1, 1, nil)), cluster.ErrNotController)
	wantErr(t, s.CreateTopic(ctx, cluster.Fence{Key: fence.Key, Epoch: fence.Epoch + 1}, newTopic(t, "other", 1, 1, nil)), cluster.ErrNotController)
	wantErr(t, s.CreateTopic(ctx, cluster.Fence{Key: fence.Key + "x", Epoch: fence.Epoch}, newTopic(t, "other", 1, 1, nil)), cluster.ErrNotController)

	upd := proto.Clone(topic).(*messages.TopicMetadata)
	upd.Partitions[0].LeaderEpoch++
	if err := s.UpdateTopic(ctx, fence, upd, rev); err != nil {
		t.Fatalf("update: %v", err)
	}
	wantErr(t, s.UpdateTopic(ctx, fence, topic, rev), cluster.ErrTopicChanged)
	topics, listRev, err := s.ListTopics(ctx)
	if err != nil || len(topics) != 1 || !proto.Equal(topics[0], upd) || listRev <= rev {
		t.Fatalf("list = %v @%d, %v", topics, listRev, err)
	}
	upd.Deleting = true
	if err := s.UpdateTopic(ctx, fence, upd, listRev); err != nil {
		t.Fatalf("update at the list's revision: %v", err)
	}
	if err := s.UpdateTopic(ctx, fence, upd, 0); err == nil {
		t.Fatal("update at revision 0 succeeded")
	}
	wantErr(t, s.UpdateTopic(ctx, cluster.Fence{}, upd, listRev+10), cluster.ErrNotController)
	if err := s.DeleteTopic(ctx, fence, "orders"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	wantErr(t, s.DeleteTopic(ctx, fence, "orders"), cluster.ErrUnknownTopic)
	_, _, err = s.GetTopic(ctx, "orders")
	wantErr(t, err, cluster.ErrUnknownTopic)
	wantErr(t, s.UpdateTopic(ctx, fence, upd, listRev+100), cluster.ErrUnknownTopic)
	_, _, err = s.GetTopic(ctx, "..")
	wantErr(t, err, cluster.ErrInvalidTopic)
}

func contractFencing(t *testing.T, s contractStore) {
	ctx := testCtx(t, 20*time.Second)
	if _, _, err := s.Controller(ctx); !errors.Is(err, cluster.ErrNoController) {
		t.Fatalf("controller before any campaign: %v", err)
	}
	el1, f1 := electOn(t, s, "host-1")
	el2 := candidateOn(t, s)
	second := make(chan campaignResult, 1)
	go func() {
		f, err := el2.Campaign(ctx, "host-2")
		second <- campaignResult{f, err}
	}()
	candidates(t, s, 2)
	select {
	case r := <-second:
		t.Fatalf("second candidate elected while the first leads: %+v", r)
	default:
	}
	if value, cur, err := s.Controller(ctx); err != nil || value != "host-1" || cur != f1 {
		t.Fatalf("controller = %q %v %v, want host-1 %v", value, cur, err, f1)
	}
	if keys, values, err := s.Candidates(ctx); err != nil || len(keys) != 2 || keys[0] != f1.Key || !slices.Equal(values, []string{"host-1", "host-2"}) {
		t.Fatalf("candidates = %v %v %v", keys, values, err)
	}
	if err := s.CreateTopic(ctx, f1, newTopic(t, "t1", 1, 1, nil)); err != nil {
		t.Fatalf("create with the leader's fence: %v", err)
	}
	_, rev, err := s.GetTopic(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if err := el1.Resign(ctx); err != nil {
		t.Fatalf("resign: %v", err)
	}
	r := recv(t, second, 5*time.Second)
	if r.err != nil || r.fence.Epoch <= f1.Epoch || r.fence.Key == f1.Key {
		t.Fatalf("second campaign: %+v after %v", r, f1)
	}
	wantErr(t, s.CreateTopic(ctx, f1, newTopic(t, "t2", 1, 1, nil)), cluster.ErrNotController)
	wantErr(t, s.UpdateTopic(ctx, f1, newTopic(t, "t1", 1, 1, nil), rev), cluster.ErrNotController)
	wantErr(t, s.DeleteTopic(ctx, f1, "t1"), cluster.ErrNotController)
	if err := s.UpdateTopic(ctx, r.fence, newTopic(t, "t1", 1, 1, nil), rev); err != nil {
		t.Fatalf("update with the new fence: %v", err)
	}
	if value, cur, err := s.Controller(ctx); err != nil || value != "host-2" || cur != r.fence {
		t.Fatalf("controller = %q %v %v, want host-2 %v", value, cur, err, r.fence)
	}
}

func contractLostSession(t *testing.T, s contractStore) {
	ctx := testCtx(t, 20*time.Second)
	el, f := electOn(t, s, "x")
	if err := s.EvictCandidate(ctx, f.Key); err != nil {
		t.Fatalf("evict: %v", err)
	}
	if err := s.EvictCandidate(ctx, f.Key); err != nil {
		t.Fatalf("evict a key already gone: %v", err)
	}
	if err := closedWithin(el.Done(), 5*time.Second); err != nil {
		t.Fatalf("Done after the session was evicted: %v", err)
	}
	wantErr(t, s.CreateTopic(ctx, f, newTopic(t, "t", 1, 1, nil)), cluster.ErrNotController)
	if _, err := el.Campaign(ctx, "x"); err == nil {
		t.Fatal("campaign on a lost session succeeded")
	}
	if _, _, err := s.Controller(ctx); !errors.Is(err, cluster.ErrNoController) {
		t.Fatalf("controller after the session was lost: %v", err)
	}
}

func contractCampaignCancel(t *testing.T, s contractStore) {
	ctx := testCtx(t, 20*time.Second)
	electOn(t, s, "leader")
	standby := candidateOn(t, s)
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := standby.Campaign(cctx, "standby")
		done <- err
	}()
	candidates(t, s, 2)
	cancel()
	if err := recv(t, done, 5*time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled campaign: %v", err)
	}
	candidates(t, s, 1)

	closed := candidateOn(t, s)
	go func() {
		_, err := closed.Campaign(ctx, "closed")
		done <- err
	}()
	candidates(t, s, 2)
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, done, 5*time.Second); !errors.Is(err, cluster.ErrLeaseLost) {
		t.Fatalf("campaign of a closed candidate: %v", err)
	}
	candidates(t, s, 1)
}

func contractWatchTopics(t *testing.T, s contractStore) {
	_, fence := electOn(t, s, "c")
	ctx := testCtx(t, 20*time.Second)
	if err := s.CreateTopic(ctx, fence, newTopic(t, "before", 1, 1, nil)); err != nil {
		t.Fatal(err)
	}
	_, rev0, err := s.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	events := s.WatchTopics(ctx, rev0)
	created := newTopic(t, "t1", 2, 2, nil)
	if err := s.CreateTopic(ctx, fence, created); err != nil {
		t.Fatal(err)
	}
	ev1 := recv(t, events, 5*time.Second)
	if ev1.Err != nil || ev1.Type != cluster.EventPut || ev1.Name != "t1" || !proto.Equal(ev1.Topic, created) || ev1.Revision <= rev0 {
		t.Fatalf("event 1 = %+v", ev1)
	}
	updated := proto.Clone(created).(*messages.TopicMetadata)
	updated.Deleting = true
	if err := s.UpdateTopic(ctx, fence, updated, ev1.Revision); err != nil {
		t.Fatalf("update at the event's revision: %v", err)
	}
	ev2 := recv(t, events, 5*time.Second)
	if ev2.Err != nil || ev2.Type != cluster.EventPut || !ev2.Topic.GetDeleting() || ev2.Revision <= ev1.Revision {
		t.Fatalf("event 2 = %+v", ev2)
	}
	if err := s.DeleteTopic(ctx, fence, "t1"); err != nil {
		t.Fatal(err)
	}
	ev3 := recv(t, events, 5*time.Second)
	if ev3.Err != nil || ev3.Type != cluster.EventDelete || ev3.Name != "t1" || !proto.Equal(ev3.Topic, updated) {
		t.Fatalf("event 3 = %+v (want the deleted value)", ev3)
	}
	// Resuming after event 1 replays exactly events 2 and 3.
	rctx, cancel := context.WithCancel(ctx)
	resumed := s.WatchTopics(rctx, ev1.Revision)
	for _, want := range []cluster.TopicEvent{ev2, ev3} {
		if got := recv(t, resumed, 5*time.Second); got.Type != want.Type || got.Revision != want.Revision || got.Name != want.Name {
			t.Fatalf("resumed event %+v, want %+v", got, want)
		}
	}
	cancel()
	for ev := range resumed {
		t.Fatalf("event after cancel: %+v", ev)
	}
	// From a compacted revision: ErrCompacted, then close.
	s.compact(t, ev3.Revision)
	compacted := s.WatchTopics(ctx, rev0)
	if ev := recv(t, compacted, 5*time.Second); !errors.Is(ev.Err, cluster.ErrCompacted) {
		t.Fatalf("watch from a compacted revision: %+v, want ErrCompacted", ev)
	}
	if _, ok := <-compacted; ok {
		t.Fatal("channel open after the error event")
	}
}

func contractHosts(t *testing.T, s contractStore) {
	ctx := testCtx(t, 20*time.Second)
	snap0, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	events := s.WatchHosts(ctx, snap0.Revision)
	e3, _ := s.register(t, &messages.HostInfo{HostId: 3, AdvertisedAddress: "h:3"})
	e1, expire1 := s.register(t, &messages.HostInfo{HostId: 1, AdvertisedAddress: "h:1", Rack: "r1"})
	if e1 == 0 || e3 == 0 || e1 == e3 {
		t.Fatalf("broker epochs %d and %d: want distinct, non-zero", e1, e3)
	}
	for _, want := range []int32{3, 1} {
		if ev := recv(t, events, 5*time.Second); ev.Err != nil || ev.Type != cluster.EventPut || ev.HostID != want || ev.Host.GetHostId() != want {
			t.Fatalf("host event %+v, want a put of host %d", ev, want)
		}
	}
	hosts, err := s.ListHosts(ctx)
	if err != nil || len(hosts) != 2 || hosts[0].GetHostId() != 1 || hosts[0].GetBrokerEpoch() != e1 || hosts[0].GetRack() != "r1" {
		t.Fatalf("hosts = %v, %v", hosts, err)
	}
	if local, err := s.ListHostsLocal(ctx); err != nil || len(local) != 2 {
		t.Fatalf("local hosts = %v, %v", local, err)
	}
	_, fence := electOn(t, s, "c")
	if err := s.CreateTopic(ctx, fence, newTopic(t, "a", 1, 1, nil)); err != nil {
		t.Fatal(err)
	}
	snap, err := s.Snapshot(ctx)
	if err != nil || len(snap.Topics) != 1 || len(snap.Hosts) != 2 || snap.Hosts[1].GetHostId() != 3 || len(snap.Rejected) != 0 {
		t.Fatalf("snapshot = %+v, %v", snap, err)
	}
	if snap.Revision <= snap0.Revision || snap.TopicRevisions["a"] <= 0 || snap.TopicRevisions["a"] > snap.Revision {
		t.Fatalf("snapshot revisions %d %v after %d", snap.Revision, snap.TopicRevisions, snap0.Revision)
	}
	// A lease that ends deletes the registration; revoking is the same.
	expire1()
	if ev := recv(t, events, 5*time.Second); ev.Err != nil || ev.Type != cluster.EventDelete || ev.HostID != 1 || ev.Host.GetBrokerEpoch() != e1 {
		t.Fatalf("host event %+v, want the delete of host 1 (epoch %d)", ev, e1)
	}
	if err := s.RevokeHostLease(ctx, e3); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeHostLease(ctx, e3); err != nil {
		t.Fatalf("revoking a lease already gone: %v", err)
	}
	if ev := recv(t, events, 5*time.Second); ev.Err != nil || ev.Type != cluster.EventDelete || ev.HostID != 3 {
		t.Fatalf("host event %+v, want the delete of host 3", ev)
	}
	if hosts, err := s.ListHosts(ctx); err != nil || len(hosts) != 0 {
		t.Fatalf("hosts after both left = %v, %v", hosts, err)
	}
}

func contractProducerIDs(t *testing.T, s contractStore) {
	ctx := testCtx(t, 20*time.Second)
	a, b := cluster.NewProducerIDAllocator(s, 3), cluster.NewProducerIDAllocator(s, 3)
	seen := map[int64]bool{}
	for range 7 {
		for _, alloc := range []*cluster.ProducerIDAllocator{a, b} {
			id, err := alloc.Next(ctx)
			if err != nil || seen[id] || id < 0 {
				t.Fatalf("producer id %d, %v (seen: %v)", id, err, seen)
			}
			seen[id] = true
		}
	}
	if _, err := s.AllocateProducerIDs(ctx, 0); err == nil {
		t.Fatal("allocated 0 producer ids")
	}
}

func contractClusterID(t *testing.T, s contractStore) {
	ctx := testCtx(t, 20*time.Second)
	// Concurrent first callers agree on one id.
	ids := make(chan string, 4)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			id, err := s.ClusterID(ctx)
			ids <- id
			errs <- err
		}()
	}
	var first string
	for i := range 4 {
		id, err := recv(t, ids, 10*time.Second), recv(t, errs, 10*time.Second)
		if err != nil {
			t.Fatalf("cluster id: %v", err)
		}
		if i == 0 {
			first = id
		} else if id != first {
			t.Fatalf("concurrent callers got cluster ids %q and %q", first, id)
		}
	}
	if err := cluster.ValidateClusterID(first); err != nil {
		t.Fatalf("cluster id %q: %v", first, err)
	}
	if again, err := s.ClusterID(ctx); err != nil || again != first {
		t.Fatalf("cluster id again = %q, %v; want %q", again, err, first)
	}
}

func contractHostAddresses(t *testing.T, s contractStore) {
	ctx := testCtx(t, 20*time.Second)
	for _, bad := range []*messages.HostInfo{
		{HostId: 1, AdvertisedAddress: "no-port"},
		{HostId: 1, AdvertisedAddress: "h:1", HttpAddress: "h:99999"},
		{HostId: 1, AdvertisedAddress: "h:1", KafkaAddress: ":9092"},
		{HostId: 1, AdvertisedAddress: "h:1", KafkaAddress: "0.0.0.0:9092"},
		{HostId: 1, AdvertisedAddress: "h:1", KafkaAddress: "h:0"},
	} {
		wantErr(t, s.tryRegister(t, bad), cluster.ErrInvalidHostAddress)
	}
	good := &messages.HostInfo{HostId: 2, AdvertisedAddress: "h:2", HttpAddress: "off", KafkaAddress: "[::1]:9092"}
	if err := s.tryRegister(t, good); err != nil {
		t.Fatalf("register %v: %v", good, err)
	}
	hosts, err := s.ListHosts(ctx)
	if err != nil || len(hosts) != 1 || hosts[0].GetKafkaAddress() != "[::1]:9092" {
		t.Fatalf("hosts = %v, %v; want host 2 with its Kafka address", hosts, err)
	}
}
