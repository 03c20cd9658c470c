// metadata_test.go: Store reads, fenced writes and watches against a real
// embedded etcd.

package cluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
)

func TestTopicLifecycle(t *testing.T) {
	t.Parallel()
	store, _ := clustertest.NewStore(t)
	_, fence := elect(t, store, "controller-1")
	ctx := testCtx(t, 20*time.Second)

	topic := newTopic(t, "orders", 3, 2, map[string]string{"retention.ms": "3600000", "min.insync.replicas": "2"})
	if err := store.CreateTopic(ctx, fence, topic); err != nil {
		t.Fatalf("create: %v", err)
	}
	if len(topic.GetTopicId()) != 22 {
		t.Fatalf("topic id %q, want 22 characters", topic.GetTopicId())
	}
	got, rev, err := store.GetTopic(ctx, "orders")
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if !proto.Equal(got, topic) || rev <= 0 {
		t.Fatalf("get = %v @%d, want %v", got, rev, topic)
	}

	// A second create of the same name fails, whatever its content.
	wantErr(t, store.CreateTopic(ctx, fence, newTopic(t, "orders", 1, 1, nil)), cluster.ErrTopicExists)
	// Validation happens before anything reaches etcd.
	wantErr(t, store.CreateTopic(ctx, fence, newTopic(t, "bad/name", 1, 1, nil)), cluster.ErrInvalidTopic)
	wantErr(t, store.CreateTopic(ctx, fence, newTopic(t, "cfg", 1, 1, map[string]string{"x": "1"})), cluster.ErrInvalidConfig)
	wantErr(t, store.CreateTopic(ctx, fence, &messages.TopicMetadata{Name: "empty", ReplicationFactor: 1}), cluster.ErrInvalidPartitions)
	// The zero fence and a made-up one never hold.
	wantErr(t, store.CreateTopic(ctx, cluster.Fence{}, newTopic(t, "other", 1, 1, nil)), cluster.ErrNotController)
	wantErr(t, store.CreateTopic(ctx, cluster.Fence{Key: fence.Key, Epoch: fence.Epoch + 1}, newTopic(t, "other", 1, 1, nil)), cluster.ErrNotController)
	wantErr(t, store.CreateTopic(ctx, cluster.Fence{Key: fence.Key + "x", Epoch: fence.Epoch}, newTopic(t, "other", 1, 1, nil)), cluster.ErrNotController)

	// Optimistic update: a leader change made against the read revision.
	upd := proto.Clone(got).(*messages.TopicMetadata)
	p0 := upd.Partitions[0]
	p0.Leader, p0.Isr, p0.LeaderEpoch, p0.PartitionEpoch = p0.Replicas[1], p0.Replicas[1:], 1, 1
	if err := store.UpdateTopic(ctx, fence, upd, rev); err != nil {
		t.Fatalf("update: %v", err)
	}
	// The same stale revision now loses.
	stale := proto.Clone(got).(*messages.TopicMetadata)
	stale.Configs["retention.ms"] = "1000"
	wantErr(t, store.UpdateTopic(ctx, fence, stale, rev), cluster.ErrTopicChanged)
	// Any revision at which the current state was seen works: the list's.
	topics, listRev, err := store.ListTopics(ctx)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(topics) != 1 || !proto.Equal(topics[0], upd) {
		t.Fatalf("list = %v, want [%v]", topics, upd)
	}
	upd.Deleting = true
	if err := store.UpdateTopic(ctx, fence, upd, listRev); err != nil {
		t.Fatalf("update at list revision: %v", err)
	}
	if err := store.UpdateTopic(ctx, fence, upd, 0); err == nil {
		t.Fatal("update with revision 0 succeeded")
	}
	wantErr(t, store.UpdateTopic(ctx, cluster.Fence{}, upd, listRev+10), cluster.ErrNotController)

	got, _, err = store.GetTopic(ctx, "orders")
	if err != nil || !got.GetDeleting() {
		t.Fatalf("get after updates = %v, %v", got, err)
	}
	if err := store.DeleteTopic(ctx, fence, "orders"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	wantErr(t, store.DeleteTopic(ctx, fence, "orders"), cluster.ErrUnknownTopic)
	_, _, err = store.GetTopic(ctx, "orders")
	wantErr(t, err, cluster.ErrUnknownTopic)
	wantErr(t, store.UpdateTopic(ctx, fence, upd, listRev+100), cluster.ErrUnknownTopic)
	_, _, err = store.GetTopic(ctx, "..")
	wantErr(t, err, cluster.ErrInvalidTopic)
}

func TestListTopicsAndSnapshot(t *testing.T) {
	t.Parallel()
	store, e := clustertest.NewStore(t)
	_, fence := elect(t, store, "c")
	ctx := testCtx(t, 20*time.Second)
	for _, name := range []string{"b", "c", "a"} {
		if err := store.CreateTopic(ctx, fence, newTopic(t, name, 2, 1, nil)); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	// A store under another prefix sees none of it.
	other := cluster.NewStore(e.Client(), "/elsewhere", clustertest.Logger(t))
	if topics, _, err := other.ListTopics(ctx); err != nil || len(topics) != 0 {
		t.Fatalf("other prefix: %v, %v", topics, err)
	}
	topics, rev, err := store.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tp := range topics {
		names = append(names, tp.GetName())
	}
	if len(names) != 3 || names[0] != "a" || names[1] != "b" || names[2] != "c" {
		t.Fatalf("names %v, want [a b c]", names)
	}
	for _, id := range []int32{3, 1} {
		reg, err := store.Register(ctx, &messages.HostInfo{HostId: id, AdvertisedAddress: "h:1"}, 10*time.Second)
		if err != nil {
			t.Fatalf("register %d: %v", id, err)
		}
		t.Cleanup(func() {
			if err := reg.Close(); err != nil {
				t.Errorf("close registration: %v", err)
			}
		})
	}
	snap, err := store.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Topics) != 3 || len(snap.Hosts) != 2 || snap.Hosts[0].GetHostId() != 1 || snap.Hosts[1].GetHostId() != 3 {
		t.Fatalf("snapshot = %v", snap)
	}
	if snap.Revision <= rev || snap.TopicRevisions["a"] <= 0 || snap.TopicRevisions["a"] > rev {
		t.Fatalf("snapshot revisions %d %v, list revision %d", snap.Revision, snap.TopicRevisions, rev)
	}
	hosts, err := store.ListHosts(ctx)
	if err != nil || len(hosts) != 2 || hosts[0].GetHostId() != 1 {
		t.Fatalf("list hosts = %v, %v", hosts, err)
	}
}

// badTopicRecords are topic records written straight into etcd (by
// anyone who reaches its client port) that the CLI would have refused:
// each must be ignored by every reader, never acted on.
func badTopicRecords(t *testing.T) map[string]string {
	t.Helper()
	marshal := func(m *messages.TopicMetadata) string {
		t.Helper()
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	escape := newTopic(t, "x", 1, 1, nil)
	escape.Name = "../victim" // a directory outside the data dir
	huge := newTopic(t, "huge", 1, 1, nil)
	for i := 1; i <= cluster.MaxPartitionsPerTopic; i++ {
		huge.Partitions = append(huge.Partitions, &messages.PartitionState{Partition: int32(i), Replicas: []int32{1}, Leader: 1, Isr: []int32{1}})
	}
	dup := newTopic(t, "dup", 1, 2, nil)
	dup.Partitions[0].Replicas[1] = dup.Partitions[0].Replicas[0]
	return map[string]string{
		"../victim": marshal(escape),
		"huge":      marshal(huge),
		"tiny":      marshal(newTopic(t, "tiny", 1, 1, map[string]string{"segment.bytes": "100"})),
		"dup":       marshal(dup),
		"junk":      "\xff\xff not a proto",
		"wrong":     marshal(newTopic(t, "right", 1, 1, nil)), // a valid topic under another name
	}
}

// TestInvalidRecordsAreRejected: invalid topic records are left out of
// lists (and named in Snapshot.Rejected), fail GetTopic with
// ErrCorruptMetadata, come as Rejected events without ending the watch;
// the valid topics beside them are served as before. Bad host
// registrations are no registrations.
func TestInvalidRecordsAreRejected(t *testing.T) {
	t.Parallel()
	store, e := clustertest.NewStore(t)
	_, fence := elect(t, store, "c")
	ctx := testCtx(t, 20*time.Second)
	good := newTopic(t, "good", 2, 2, nil)
	if err := store.CreateTopic(ctx, fence, good); err != nil {
		t.Fatal(err)
	}
	bad := badTopicRecords(t)
	for name, val := range bad {
		if _, err := e.Client().Put(ctx, store.Keys().Topic(name), val); err != nil {
			t.Fatal(err)
		}
	}
	topics, _, err := store.ListTopics(ctx)
	if err != nil || len(topics) != 1 || !proto.Equal(topics[0], good) {
		var names []string
		for _, tp := range topics {
			names = append(names, tp.GetName())
		}
		t.Fatalf("list topics = %q, %v; want only %q", names, err, "good")
	}
	snap, err := store.Snapshot(ctx)
	if err != nil || len(snap.Topics) != 1 || snap.Topics[0].GetName() != "good" {
		t.Fatalf("snapshot of %d topics, %v; want only %q", len(snap.Topics), err, "good")
	}
	if len(snap.Rejected) != len(bad) || len(snap.TopicRevisions) != 1 {
		t.Fatalf("snapshot rejected %d records %v, revisions %v; want the %d bad ones", len(snap.Rejected), snap.Rejected, snap.TopicRevisions, len(bad))
	}
	for _, r := range snap.Rejected {
		if _, ok := bad[r.Name]; !ok || !errors.Is(r.Err, cluster.ErrCorruptMetadata) || r.Key != store.Keys().Topic(r.Name) || r.ModRevision <= 0 {
			t.Fatalf("rejected %+v", r)
		}
	}
	_, _, err = store.GetTopic(ctx, "junk")
	wantErr(t, err, cluster.ErrCorruptMetadata)
	_, _, err = store.GetTopic(ctx, "wrong")
	wantErr(t, err, cluster.ErrCorruptMetadata)
	_, _, err = store.GetTopic(ctx, "tiny")
	wantErr(t, err, cluster.ErrCorruptMetadata)
	wantErr(t, err, cluster.ErrInvalidConfig)
	_, _, err = store.GetTopic(ctx, "huge")
	wantErr(t, err, cluster.ErrInvalidPartitions)

	// A watch reports bad puts as Rejected and goes on.
	events := store.WatchTopics(ctx, snap.Revision)
	if _, err := e.Client().Put(ctx, store.Keys().Topic("../other"), bad["../victim"]); err != nil {
		t.Fatal(err)
	}
	if ev := recv(t, events, 5*time.Second); ev.Err != nil || ev.Type != cluster.EventPut || ev.Name != "../other" || ev.Topic != nil || !errors.Is(ev.Rejected, cluster.ErrCorruptMetadata) {
		t.Fatalf("event for a bad record %+v", ev)
	}
	if _, err := e.Client().Delete(ctx, store.Keys().Topic("junk")); err != nil {
		t.Fatal(err)
	}
	if ev := recv(t, events, 5*time.Second); ev.Err != nil || ev.Type != cluster.EventDelete || ev.Name != "junk" || ev.Topic != nil {
		t.Fatalf("event for deleting a bad record %+v", ev)
	}
	if err := store.CreateTopic(ctx, fence, newTopic(t, "after", 1, 1, nil)); err != nil {
		t.Fatal(err)
	}
	if ev := recv(t, events, 5*time.Second); ev.Err != nil || ev.Name != "after" || ev.Topic == nil || ev.Rejected != nil {
		t.Fatalf("event after bad records %+v", ev)
	}

	// Host registrations that cannot be read are no registrations.
	if _, err := store.Register(ctx, &messages.HostInfo{HostId: 1}, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	hsnap, err := store.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hostEvents := store.WatchHosts(ctx, hsnap.Revision)
	for key, val := range map[string]string{store.Keys().Hosts() + "abc": "x", store.Keys().Host(7): "\xff\xff"} {
		if _, err := e.Client().Put(ctx, key, val); err != nil {
			t.Fatal(err)
		}
	}
	hosts, err := store.ListHosts(ctx)
	if err != nil || len(hosts) != 1 || hosts[0].GetHostId() != 1 {
		t.Fatalf("list hosts = %v, %v; want host 1 only", hosts, err)
	}
	if ev := recv(t, hostEvents, 5*time.Second); ev.Err != nil || ev.HostID != 7 || ev.Type != cluster.EventDelete || ev.Host != nil {
		t.Fatalf("host event for a bad registration %+v, want a delete of host 7", ev)
	}
}

func TestWatchTopics(t *testing.T) {
	t.Parallel()
	store, e := clustertest.NewStore(t)
	_, fence := elect(t, store, "c")
	ctx := testCtx(t, 20*time.Second)
	if err := store.CreateTopic(ctx, fence, newTopic(t, "before", 1, 1, nil)); err != nil {
		t.Fatal(err)
	}
	_, rev0, err := store.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	events := store.WatchTopics(ctx, rev0)

	created := newTopic(t, "t1", 2, 2, nil)
	if err := store.CreateTopic(ctx, fence, created); err != nil {
		t.Fatal(err)
	}
	ev1 := recv(t, events, 5*time.Second)
	if ev1.Err != nil || ev1.Type != cluster.EventPut || ev1.Name != "t1" || !proto.Equal(ev1.Topic, created) || ev1.Revision <= rev0 {
		t.Fatalf("event 1 = %+v", ev1)
	}
	updated := proto.Clone(created).(*messages.TopicMetadata)
	updated.Deleting = true
	if err := store.UpdateTopic(ctx, fence, updated, ev1.Revision); err != nil {
		t.Fatalf("update at the event's revision: %v", err)
	}
	ev2 := recv(t, events, 5*time.Second)
	if ev2.Err != nil || ev2.Type != cluster.EventPut || !ev2.Topic.GetDeleting() || ev2.Revision <= ev1.Revision {
		t.Fatalf("event 2 = %+v", ev2)
	}
	if err := store.DeleteTopic(ctx, fence, "t1"); err != nil {
		t.Fatal(err)
	}
	ev3 := recv(t, events, 5*time.Second)
	if ev3.Err != nil || ev3.Type != cluster.EventDelete || ev3.Name != "t1" || !proto.Equal(ev3.Topic, updated) {
		t.Fatalf("event 3 = %+v (want the deleted value)", ev3)
	}

	// Resuming after event 1 replays exactly events 2 and 3.
	rctx, cancel := context.WithCancel(ctx)
	resumed := store.WatchTopics(rctx, ev1.Revision)
	for _, want := range []cluster.TopicEvent{ev2, ev3} {
		got := recv(t, resumed, 5*time.Second)
		if got.Type != want.Type || got.Revision != want.Revision || got.Name != want.Name {
			t.Fatalf("resumed event %+v, want %+v", got, want)
		}
	}
	// Cancelling closes the channel without an error event.
	cancel()
	for ev := range resumed {
		t.Fatalf("event after cancel: %+v", ev)
	}

	// After compaction, resuming from before it ends with ErrCompacted.
	if _, err := e.Client().Compact(ctx, ev3.Revision); err != nil {
		t.Fatal(err)
	}
	compacted := store.WatchTopics(ctx, rev0)
	ev := recv(t, compacted, 5*time.Second)
	if !errors.Is(ev.Err, cluster.ErrCompacted) {
		t.Fatalf("watch from a compacted revision: %+v, want ErrCompacted", ev)
	}
	if _, ok := <-compacted; ok {
		t.Fatal("channel open after the error event")
	}
	// Re-listing and watching from the list's revision works after it.
	_, rev, err := store.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fresh := store.WatchTopics(ctx, rev)
	if err := store.CreateTopic(ctx, fence, newTopic(t, "t2", 1, 1, nil)); err != nil {
		t.Fatal(err)
	}
	if ev := recv(t, fresh, 5*time.Second); ev.Err != nil || ev.Name != "t2" {
		t.Fatalf("fresh watch event %+v", ev)
	}
}

// TestWatchEndsWithClient: closing the client ends a watch with an error
// event (ErrWatchEnded), so the caller knows to re-list.
func TestWatchEndsWithClient(t *testing.T) {
	t.Parallel()
	_, e := clustertest.NewStore(t)
	c := newClient(t, e)
	store := cluster.NewStore(c, "", clustertest.Logger(t))
	ctx := testCtx(t, 20*time.Second)
	snap, err := store.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	events := store.WatchHosts(ctx, snap.Revision)
	// Let the watch be established before the client goes.
	reg, err := store.Register(ctx, &messages.HostInfo{HostId: 1}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ev := recv(t, events, 5*time.Second); ev.Type != cluster.EventPut {
		t.Fatalf("event %+v", ev)
	}
	if err := reg.Close(); err != nil {
		t.Fatal(err)
	}
	if ev := recv(t, events, 5*time.Second); ev.Type != cluster.EventDelete {
		t.Fatalf("event %+v", ev)
	}
	if err := c.Close(); err != nil {
		t.Logf("close client: %v", err)
	}
	ev := recv(t, events, 5*time.Second)
	if !errors.Is(ev.Err, cluster.ErrWatchEnded) {
		t.Fatalf("event after client close %+v, want ErrWatchEnded", ev)
	}
}
