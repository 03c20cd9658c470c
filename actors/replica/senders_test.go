// senders_test.go: a leader serves follower requests only from the
// follower's own host (issue 11, item 8). A fetch claiming replica 2 from
// any other address — a stranger's, the leader's own host's, another
// host's — is refused with CLUSTER_AUTHORIZATION_FAILED and no offsets or
// epochs, does not move the high watermark and does not acknowledge an
// acks=all write; the same from host 2's registered address does. The
// registry follows the broker's LiveHosts.

package replica

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
)

const (
	host2Addr = "10.0.0.2:8090"  // host 2's registered address
	host3Addr = "10.0.0.3:8090"  // a registered host that is no replica
	strangerA = "10.0.0.9:40000" // a client
)

const authFailed = messages.ErrorCode_ERROR_CODE_CLUSTER_AUTHORIZATION_FAILED

// startRegisteredLeader starts the leader (host 1) of t-0 with replicas
// 1 and 2 both in the ISR and min.insync.replicas 2, whose registry puts
// host 2 at host2Addr.
func startRegisteredLeader(t *testing.T) *harness {
	t.Helper()
	sys := actor.NewActorSystem()
	clustertest.RouteFakeSenders(sys)
	h := &harness{t: t, system: sys, dir: t.TempDir()}
	h.pid = sys.Root.Spawn(Props(Config{
		Topic: "t", Partition: 0, Dir: h.dir, LeaderEpoch: 3, Logger: quiet(),
		Self: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, PartitionEpoch: 5, MinInsyncReplicas: 2,
		ReplicaLagTimeMax: time.Minute, Hosts: map[int32]string{1: "10.0.0.1:8090", 2: host2Addr, 3: host3Addr},
	}))
	t.Cleanup(h.stop)
	return h
}

// requestFrom sends msg to the harness's replica from address from ("":
// from the harness's own actor system, i.e. the leader's host).
func (h *harness) requestFrom(from string, msg any) any {
	h.t.Helper()
	if from == "" {
		return h.request(msg)
	}
	res, err := clustertest.RequestAs(h.system, h.pid, from, msg, timeout)
	if err != nil {
		h.t.Fatalf("%T from %s: %v", msg, from, err)
	}
	return res
}

func followerFetchReq(id int32, offset int64, lastEpoch int32) *messages.FetchRequest {
	return &messages.FetchRequest{Topic: "t", Partition: 0, FetchOffset: offset, MaxBytes: 1 << 20,
		CurrentLeaderEpoch: 3, ReplicaId: id, LastFetchedEpoch: lastEpoch, CorrelationId: 11}
}

// wantBareRefusal fails unless resp is a refusal carrying nothing but the
// request's echo and the code.
func wantBareRefusal(t *testing.T, what string, resp *messages.FetchResponse) {
	t.Helper()
	want := &messages.FetchResponse{CorrelationId: 11, Topic: "t", Partition: 0, ErrorCode: authFailed, ErrorMessage: resp.ErrorMessage}
	if resp.ErrorMessage == "" || !proto.Equal(resp, want) {
		t.Fatalf("%s: %v, want CLUSTER_AUTHORIZATION_FAILED with no offsets, epochs or records", what, resp)
	}
}

func TestForgedFollowerFetchIsRefused(t *testing.T) {
	h := startRegisteredLeader(t)
	acked := h.system.Root.RequestFuture(h.pid, &messages.ProduceRequest{Topic: "t", Partition: 0, Acks: messages.Acks_ACKS_ALL,
		Records: batch(t, 5, "a"), CurrentLeaderEpoch: -1, CorrelationId: 1}, timeout)

	// Fetches claiming to be replica 2 with the whole log (offset 5): each
	// would move the high watermark to 5 and acknowledge the write.
	for _, c := range []struct {
		what string
		from string
		id   int32
	}{
		{"replica 2 from a stranger", strangerA, 2},
		{"replica 2 from the leader's own host", "", 2},
		{"replica 2 from host 3", host3Addr, 2},
		{"host 3, no replica, from its own address", host3Addr, 3},
		{"the leader's own id from a stranger", strangerA, 1},
	} {
		for _, req := range []*messages.FetchRequest{followerFetchReq(c.id, 5, 3), followerFetchReq(c.id, 0, -1)} {
			wantBareRefusal(t, c.what, h.requestFrom(c.from, req).(*messages.FetchResponse))
		}
		// Probing with a stale epoch gets the same bare refusal, not
		// FENCED_LEADER_EPOCH with the current epoch.
		stale := followerFetchReq(c.id, 5, 3)
		stale.CurrentLeaderEpoch = 1
		wantBareRefusal(t, c.what+" (stale epoch)", h.requestFrom(c.from, stale).(*messages.FetchResponse))

		ep := h.requestFrom(c.from, &messages.OffsetForLeaderEpochRequest{Topic: "t", Partition: 0, CurrentLeaderEpoch: 3,
			LeaderEpoch: 3, ReplicaId: c.id, CorrelationId: 12}).(*messages.OffsetForLeaderEpochResponse)
		if ep.ErrorCode != authFailed || ep.LeaderEpoch != -1 || ep.EndOffset != -1 || ep.CorrelationId != 12 {
			t.Fatalf("%s: offset for leader epoch %v, want CLUSTER_AUTHORIZATION_FAILED with epoch and offset -1", c.what, ep)
		}
	}
	if st := h.request(GetState).(State); st.HighWatermark != 0 || st.LogEndOffset != 5 || st.ParkedFetches != 0 {
		t.Fatalf("after forged follower fetches: %+v, want the high watermark still 0", st)
	}
	// Consumers (replica_id -1) are not follower requests.
	if r := h.fetch(0, 0); r.ErrorCode != 0 || len(r.Records) != 0 {
		t.Fatalf("consumer fetch: %v, %d bytes", r.ErrorCode, len(r.Records))
	}

	// Host 2 from its registered address: it reads the log, then its
	// fetch at the log end moves the high watermark and acknowledges.
	ep := h.requestFrom(host2Addr, &messages.OffsetForLeaderEpochRequest{Topic: "t", Partition: 0, CurrentLeaderEpoch: 3,
		LeaderEpoch: 3, ReplicaId: 2}).(*messages.OffsetForLeaderEpochResponse)
	if ep.ErrorCode != 0 || ep.LeaderEpoch != 3 || ep.EndOffset != 5 {
		t.Fatalf("host 2's offset for leader epoch: %v", ep)
	}
	if f := h.requestFrom(host2Addr, followerFetchReq(2, 0, -1)).(*messages.FetchResponse); f.ErrorCode != 0 || len(decode(t, f.Records)) != 5 {
		t.Fatalf("host 2's fetch: %v, %d bytes", f.ErrorCode, len(f.Records))
	}
	if f := h.requestFrom(host2Addr, followerFetchReq(2, 5, 3)).(*messages.FetchResponse); f.ErrorCode != 0 || f.HighWatermark != 5 {
		t.Fatalf("host 2 at the log end: %v, high watermark %d", f.ErrorCode, f.HighWatermark)
	}
	res, err := acked.Result()
	if err != nil {
		t.Fatal(err)
	}
	if r := res.(*messages.ProduceResponse); r.ErrorCode != 0 {
		t.Fatalf("acks=all after host 2 has the batch: %v", r)
	}
}

// The registry follows the broker's host updates: after host 2 moves to
// another address, only the new one speaks for it.
func TestFollowerRegistryFollowsLiveHosts(t *testing.T) {
	h := startRegisteredLeader(t)
	h.produce(batch(t, 3, "a"), messages.Acks_ACKS_LEADER)
	const moved = "10.0.0.22:8090"
	h.system.Root.Send(h.pid, &LiveHosts{Live: map[int32]bool{1: true, 2: true}, Addresses: map[int32]string{2: moved}})
	wantBareRefusal(t, "host 2's old address", h.requestFrom(host2Addr, followerFetchReq(2, 3, 3)).(*messages.FetchResponse))
	if st := h.request(GetState).(State); st.HighWatermark != 0 {
		t.Fatalf("high watermark %d after a fetch from the old address", st.HighWatermark)
	}
	if f := h.requestFrom(moved, followerFetchReq(2, 3, 3)).(*messages.FetchResponse); f.ErrorCode != 0 || f.HighWatermark != 3 {
		t.Fatalf("host 2 from its new address: %v, high watermark %d", f.ErrorCode, f.HighWatermark)
	}
	// A LiveHosts without addresses leaves the registry as it was.
	h.system.Root.Send(h.pid, &LiveHosts{Live: map[int32]bool{1: true, 2: true}})
	if f := h.requestFrom(moved, followerFetchReq(2, 3, 3)).(*messages.FetchResponse); f.ErrorCode != 0 {
		t.Fatalf("host 2 after a LiveHosts without addresses: %v", f.ErrorCode)
	}
}

// A real follower replica whose leader does not know its address (its
// host's registration points elsewhere) replicates nothing: acks=all
// times out and the high watermark stays put. startPair, whose leader
// maps host 2 to this actor system, replicates (follower_test.go).
func TestUnregisteredFollowerDoesNotReplicate(t *testing.T) {
	system := actor.NewActorSystem()
	leader := &harness{t: t, system: system, dir: t.TempDir()}
	leader.pid = system.Root.Spawn(Props(Config{Topic: "t", Partition: 0, Dir: leader.dir, LeaderEpoch: 3, Logger: quiet(),
		Self: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, MinInsyncReplicas: 2, Hosts: map[int32]string{2: host2Addr}}))
	follower := &harness{t: t, system: system, dir: t.TempDir()}
	follower.pid = system.Root.Spawn(Props(Config{Topic: "t", Partition: 0, Dir: follower.dir, LeaderEpoch: 3, Logger: quiet(),
		Self: 2, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, MinInsyncReplicas: 2, Follow: leader.pid}))
	t.Cleanup(func() {
		follower.stop()
		leader.stop()
	})
	r := leader.request(&messages.ProduceRequest{Topic: "t", Partition: 0, Acks: messages.Acks_ACKS_ALL, TimeoutMs: 500,
		Records: batch(t, 4, "a"), CurrentLeaderEpoch: -1}).(*messages.ProduceResponse)
	if r.ErrorCode != messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT {
		t.Fatalf("acks=all with the follower refused: %v, want REQUEST_TIMED_OUT", r)
	}
	if l, f := leader.request(GetState).(State), follower.request(GetState).(State); l.HighWatermark != 0 || f.LogEndOffset != 0 {
		t.Fatalf("leader %+v, follower %+v: want nothing replicated", l, f)
	}
}
