// plan_test.go: table tests of the broker's pure decisions in plan.go —
// which replicas to spawn, move to a new leader epoch, hand a new ISR,
// stop and remove, within capacity and restart backoffs, and which
// partition directories a host no longer holds. No actors, no etcd, no
// disk: times are passed in.

package broker

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/messages"
)

var planT0 = time.Unix(1_700_000_000, 0)

const planSelf = int32(1)

// part is a partition's state: its replicas (the first the leader unless
// leader says otherwise), epochs and ISR (the replicas).
func part(p int32, leader int32, leaderEpoch, partitionEpoch int32, replicas ...int32) *messages.PartitionState {
	return &messages.PartitionState{Partition: p, Leader: leader, LeaderEpoch: leaderEpoch, PartitionEpoch: partitionEpoch,
		Replicas: replicas, Isr: slices.Clone(replicas)}
}

func topic(name, id string, configs map[string]string, parts ...*messages.PartitionState) *messages.TopicMetadata {
	return &messages.TopicMetadata{Name: name, TopicId: id, Configs: configs, ReplicationFactor: int32(len(parts[0].Replicas)), Partitions: parts}
}

func topicsOf(ts ...*messages.TopicMetadata) map[string]*messages.TopicMetadata {
	m := map[string]*messages.TopicMetadata{}
	for _, t := range ts {
		m[t.Name] = t
	}
	return m
}

func hostsOf(ids ...int32) map[int32]*messages.HostInfo {
	m := map[int32]*messages.HostInfo{}
	for _, id := range ids {
		m[id] = &messages.HostInfo{HostId: id, AdvertisedAddress: fmt.Sprintf("h%d:1", id)}
	}
	return m
}

// run is a replica running here at the given epochs, of topic id id with
// configs.
func run(id string, leaderEpoch, partitionEpoch int32, configs map[string]string) *running {
	return &running{pid: actor.NewPID("nonhost", "r"), epoch: leaderEpoch, partitionEpoch: partitionEpoch, topicID: id, configs: configs}
}

func withCoordinator(r *running) *running {
	r.coordinator = actor.NewPID("nonhost", "c")
	return r
}

func describe(actions []action) []string {
	out := make([]string, len(actions))
	for i, a := range actions {
		out[i] = a.String()
	}
	return out
}

func TestPlan(t *testing.T) {
	compact := map[string]string{"cleanup.policy": "compact"}
	ev, ab := tp{"events", 0}, tp{"a", 0}
	tests := []struct {
		name     string
		topics   map[string]*messages.TopicMetadata
		hosts    map[int32]*messages.HostInfo
		running  map[tp]*running
		stopping map[tp]bool
		prep     map[tp]string
		capacity int
		retryAt  map[tp]time.Time
		want     []string
		wantRun  []tp // the replicas wanted here (all of them when nil)
		refused  int
	}{
		{
			name:   "new topic led here: spawn",
			topics: topicsOf(topic("events", "id1", nil, part(0, 1, 0, 0, 1))),
			hosts:  hostsOf(1),
			want:   []string{"spawn events-0"},
		},
		{
			name:   "new topic followed here, leader known: spawn",
			topics: topicsOf(topic("events", "id1", nil, part(0, 2, 0, 0, 2, 1))),
			hosts:  hostsOf(1, 2),
			want:   []string{"spawn events-0"},
		},
		{
			name:    "follower of a leader whose host is not registered: nothing yet",
			topics:  topicsOf(topic("events", "id1", nil, part(0, 2, 0, 0, 2, 1))),
			hosts:   hostsOf(1),
			want:    nil,
			wantRun: []tp{},
		},
		{
			name:    "partition without leader: nothing",
			topics:  topicsOf(topic("events", "id1", nil, part(0, -1, 1, 0, 1))),
			hosts:   hostsOf(1),
			want:    nil,
			wantRun: []tp{},
		},
		{
			name:    "topic on other hosts only: nothing",
			topics:  topicsOf(topic("events", "id1", nil, part(0, 2, 0, 0, 2, 3))),
			hosts:   hostsOf(1, 2, 3),
			want:    nil,
			wantRun: []tp{},
		},
		{
			name:    "running at the same epochs: nothing",
			topics:  topicsOf(topic("events", "id1", nil, part(0, 1, 2, 4, 1, 2))),
			hosts:   hostsOf(1, 2),
			running: map[tp]*running{ev: run("id1", 2, 4, nil)},
			want:    nil,
		},
		{
			name:    "leader epoch changed: transition in place",
			topics:  topicsOf(topic("events", "id1", nil, part(0, 2, 3, 5, 2, 1))),
			hosts:   hostsOf(1, 2),
			running: map[tp]*running{ev: run("id1", 2, 4, nil)},
			want:    []string{"transition events-0"},
		},
		{
			name:    "partition epoch changed: new ISR handed over",
			topics:  topicsOf(topic("events", "id1", nil, part(0, 1, 2, 5, 1, 2))),
			hosts:   hostsOf(1, 2),
			running: map[tp]*running{ev: run("id1", 2, 4, nil)},
			want:    []string{"update-isr events-0"},
		},
		{
			name:    "config change: reopen in place, log kept",
			topics:  topicsOf(topic("events", "id1", compact, part(0, 1, 2, 4, 1))),
			hosts:   hostsOf(1),
			running: map[tp]*running{ev: run("id1", 2, 4, nil)},
			want:    []string{"reopen events-0"},
		},
		{
			name:    "config change and a new leader epoch: one reopen",
			topics:  topicsOf(topic("events", "id1", compact, part(0, 1, 3, 4, 1))),
			hosts:   hostsOf(1),
			running: map[tp]*running{ev: run("id1", 2, 4, map[string]string{"cleanup.policy": "delete"})},
			want:    []string{"reopen events-0"},
		},
		{
			name:    "config change of a replica with a coordinator beside it: restart with it",
			topics:  topicsOf(topic(messages.OffsetsTopic, "id1", compact, part(0, 1, 2, 4, 1))),
			hosts:   hostsOf(1),
			running: map[tp]*running{{messages.OffsetsTopic, 0}: withCoordinator(run("id1", 2, 4, nil))},
			want:    []string{"stop __consumer_offsets-0 remove=false"},
		},
		{
			name:    "topic recreated under the same name: stop and remove",
			topics:  topicsOf(topic("events", "id2", nil, part(0, 1, 0, 0, 1))),
			hosts:   hostsOf(1),
			running: map[tp]*running{ev: run("id1", 2, 4, nil)},
			want:    []string{"stop events-0 remove=true"},
		},
		{
			name:    "self removed from the replicas: stop and remove",
			topics:  topicsOf(topic("events", "id1", nil, part(0, 2, 3, 5, 2))),
			hosts:   hostsOf(1, 2),
			running: map[tp]*running{ev: run("id1", 2, 4, nil)},
			want:    []string{"stop events-0 remove=true"},
			wantRun: []tp{},
		},
		{
			name:    "topic deleted: stop and remove",
			topics:  topicsOf(),
			hosts:   hostsOf(1),
			running: map[tp]*running{ev: run("id1", 2, 4, nil), ab: run("id0", 0, 0, nil)},
			want:    []string{"stop a-0 remove=true", "stop events-0 remove=true"},
			wantRun: []tp{},
		},
		{
			name:    "leader's host gone, still a replica: stop, log kept",
			topics:  topicsOf(topic("events", "id1", nil, part(0, 2, 3, 5, 2, 1))),
			hosts:   hostsOf(1),
			running: map[tp]*running{ev: run("id1", 2, 4, nil)},
			want:    []string{"stop events-0 remove=false"},
			wantRun: []tp{},
		},
		{
			name:     "stopping: nothing until it has stopped",
			topics:   topicsOf(topic("events", "id2", nil, part(0, 1, 0, 0, 1))),
			hosts:    hostsOf(1),
			running:  map[tp]*running{ev: run("id1", 2, 4, nil)},
			stopping: map[tp]bool{ev: true},
			want:     nil,
		},
		{
			name:     "stopped and topic deleted meanwhile: no second stop",
			topics:   topicsOf(),
			hosts:    hostsOf(1),
			running:  map[tp]*running{ev: run("id1", 2, 4, nil)},
			stopping: map[tp]bool{ev: true},
			want:     nil,
			wantRun:  []tp{},
		},
		{
			name: "offsets topic leader here: restart with its coordinator, not transition",
			topics: topicsOf(topic(messages.OffsetsTopic, "ido", nil,
				part(0, 1, 3, 5, 1, 2))),
			hosts:   hostsOf(1, 2),
			running: map[tp]*running{{messages.OffsetsTopic, 0}: run("ido", 2, 4, nil)},
			want:    []string{"stop __consumer_offsets-0 remove=false"},
		},
		{
			name: "offsets topic leadership moves away: the coordinator's replica restarts",
			topics: topicsOf(topic(messages.OffsetsTopic, "ido", nil,
				part(0, 2, 3, 5, 2, 1))),
			hosts:   hostsOf(1, 2),
			running: map[tp]*running{{messages.OffsetsTopic, 0}: withCoordinator(run("ido", 2, 4, nil))},
			want:    []string{"stop __consumer_offsets-0 remove=false"},
		},
		{
			name: "offsets topic follower here, new leader elsewhere: transition",
			topics: topicsOf(topic(messages.OffsetsTopic, "ido", nil,
				part(0, 3, 3, 5, 3, 1, 2))),
			hosts:   hostsOf(1, 2, 3),
			running: map[tp]*running{{messages.OffsetsTopic, 0}: run("ido", 2, 4, nil)},
			want:    []string{"transition __consumer_offsets-0"},
		},
		{
			name: "over capacity: running first, then topic and partition order",
			topics: topicsOf(
				topic("b", "idb", nil, part(0, 1, 0, 0, 1)),
				topic("a", "ida", nil, part(0, 1, 0, 0, 1), part(1, 1, 0, 0, 1), part(2, 1, 0, 0, 1))),
			hosts:    hostsOf(1),
			running:  map[tp]*running{{"b", 0}: run("idb", 0, 0, nil)},
			capacity: 3,
			want:     []string{"spawn a-0", "spawn a-1"},
			wantRun:  []tp{{"b", 0}, {"a", 0}, {"a", 1}},
			refused:  1,
		},
		{
			name:     "over capacity: a replica left out of the cap is stopped",
			topics:   topicsOf(topic("a", "ida", nil, part(0, 1, 0, 0, 1), part(1, 1, 0, 0, 1))),
			hosts:    hostsOf(1),
			running:  map[tp]*running{{"a", 0}: run("ida", 0, 0, nil), {"a", 1}: run("ida", 0, 0, nil)},
			capacity: 1,
			want:     []string{"stop a-1 remove=false"},
			wantRun:  []tp{{"a", 0}},
			refused:  1,
		},
		{
			name:    "directory being claimed: spawned once it is ready",
			topics:  topicsOf(topic("events", "id1", nil, part(0, 1, 0, 0, 1))),
			hosts:   hostsOf(1),
			prep:    map[tp]string{ev: "id1"},
			want:    nil,
			wantRun: []tp{ev},
		},
		{
			name: "over capacity: a replica preparing its directory is not displaced",
			topics: topicsOf(
				topic("b", "idb", nil, part(0, 1, 0, 0, 1)),
				topic("a", "ida", nil, part(0, 1, 0, 0, 1))),
			hosts:    hostsOf(1),
			prep:     map[tp]string{{"b", 0}: "idb"},
			capacity: 1,
			want:     nil,
			wantRun:  []tp{{"b", 0}},
			refused:  1,
		},
		{
			name:    "backing off: wait for the retry",
			topics:  topicsOf(topic("events", "id1", nil, part(0, 1, 0, 0, 1))),
			hosts:   hostsOf(1),
			retryAt: map[tp]time.Time{ev: planT0.Add(time.Second)},
			want:    []string{"wait-retry events-0 at " + planT0.Add(time.Second).Format(time.RFC3339Nano)},
		},
		{
			name:    "backoff passed: spawn",
			topics:  topicsOf(topic("events", "id1", nil, part(0, 1, 0, 0, 1))),
			hosts:   hostsOf(1),
			retryAt: map[tp]time.Time{ev: planT0},
			want:    []string{"spawn events-0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			capacity := tt.capacity
			if capacity == 0 {
				capacity = 100
			}
			live := tt.running
			if live == nil {
				live = map[tp]*running{}
			}
			got := plan(view{self: planSelf, topics: tt.topics, hosts: tt.hosts, running: live, stopping: tt.stopping, preparing: tt.prep,
				capacity: capacity, retryAt: tt.retryAt, now: planT0})
			if d := describe(got.actions); !slices.Equal(d, tt.want) {
				t.Fatalf("actions:\n got %q\nwant %q", d, tt.want)
			}
			if got.refused != tt.refused {
				t.Fatalf("refused %d, want %d", got.refused, tt.refused)
			}
			wantRun := tt.wantRun
			if wantRun == nil {
				for key := range live {
					wantRun = append(wantRun, key)
				}
				for _, a := range got.actions {
					if a.kind == actSpawn || a.kind == actWaitRetry {
						wantRun = append(wantRun, a.key)
					}
				}
			}
			if len(got.want) != len(wantRun) {
				t.Fatalf("wanted replicas %v, want %v", got.want, wantRun)
			}
			for _, key := range wantRun {
				if !got.want[key] {
					t.Fatalf("wanted replicas %v, want %v", got.want, wantRun)
				}
			}
			for _, a := range got.actions {
				if (a.kind == actSpawn || a.kind == actTransition || a.kind == actUpdateISR) && (a.t == nil || a.p == nil || a.t.Name != a.key.topic || a.p.Partition != a.key.partition) {
					t.Fatalf("%v carries metadata %v %v", a, a.t, a.p)
				}
			}
		})
	}
}

func TestAfterStop(t *testing.T) {
	ev := tp{"events", 0}
	here := topicsOf(topic("events", "id1", nil, part(0, 1, 0, 0, 1)))
	away := topicsOf(topic("events", "id1", nil, part(0, 2, 0, 0, 2)))
	for _, tt := range []struct {
		name   string
		topics map[string]*messages.TopicMetadata
		remove bool
		want   []string
	}{
		{"restart: log kept", here, false, nil},
		{"asked to remove", here, true, []string{`remove-dir events-0 topic_id="" (topic deleted or partition reassigned away)`}},
		{"reassigned away meanwhile", away, false, []string{`remove-dir events-0 topic_id="" (topic deleted or partition reassigned away)`}},
		{"topic deleted meanwhile", topicsOf(), false, []string{`remove-dir events-0 topic_id="" (topic deleted or partition reassigned away)`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := describe(afterStop(planSelf, tt.topics, ev, tt.remove)); !slices.Equal(got, tt.want) {
				t.Fatalf("afterStop = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLeftPartitions(t *testing.T) {
	old := topic("events", "id1", nil, part(0, 1, 0, 0, 1), part(1, 1, 0, 0, 1, 2), part(2, 2, 0, 0, 2))
	now := topic("events", "id1", nil, part(0, 2, 1, 1, 2), part(1, 2, 1, 1, 2), part(2, 2, 0, 0, 2, 1), part(3, 1, 0, 0, 1))
	for _, tt := range []struct {
		name     string
		running  map[tp]*running
		stopping map[tp]bool
		want     []string
	}{
		{"nothing running", nil, nil, []string{
			`remove-dir events-0 topic_id="id1" (reassigned away from this host)`,
			`remove-dir events-1 topic_id="id1" (reassigned away from this host)`,
		}},
		{"a running replica is removed once stopped", map[tp]*running{{"events", 0}: run("id1", 0, 0, nil)}, map[tp]bool{{"events", 1}: true}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := describe(leftPartitions(planSelf, old, now, tt.running, tt.stopping)); !slices.Equal(got, tt.want) {
				t.Fatalf("leftPartitions = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStrayDirs(t *testing.T) {
	topics := topicsOf(
		topic("events", "id1", nil, part(0, 1, 0, 0, 1), part(1, 2, 0, 0, 2)),
		topic("other", "id3", nil, part(0, 2, 0, 0, 2, 1)))
	dirs := []partitionDirInfo{
		{"events-0", "id1"}, // hosted: kept
		{"events-1", "id1"}, // reassigned away
		{"events-7", "id1"}, // no such partition
		{"gone-0", "id2"},   // topic deleted
		{"other-0", "id3"},  // hosted as a follower: kept
		{"renamed", "id1"},  // not a partition directory of the topic: kept
		{"odd", "id9"},      // a topic id no topic has: deleted
	}
	want := []string{
		`remove-dir events-1 topic_id="" (partition reassigned away from this host)`,
		`remove-dir events-7 topic_id="" (partition reassigned away from this host)`,
		`remove-dir gone-0 topic_id="" (topic deleted)`,
		`remove-dir odd topic_id="" (topic deleted)`,
	}
	if got := describe(strayDirs(planSelf, topics, dirs)); !slices.Equal(got, want) {
		t.Fatalf("strayDirs:\n got %q\nwant %q", got, want)
	}
	for name, want := range map[string]bool{
		"events-0": true, "bad-0": false, "events-0.deleted-1764612345000000000": false, "x.deleted-3": true,
	} {
		if got := maybeStray(name, map[string]bool{"bad": true}); got != want {
			t.Errorf("maybeStray(%q) = %v, want %v", name, got, want)
		}
	}
}
