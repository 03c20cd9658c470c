// plan.go: the broker's decisions as pure code — no actors, no I/O, no
// clock (the caller passes the time in). From the metadata cache, the
// replicas running here and their restart backoffs, plan says which
// replicas to spawn, move to a new leader epoch in place, hand a new ISR,
// stop, and whose logs to delete; leftPartitions and strayDirs say which
// partition directories a host no longer holds. The broker (broker.go,
// dirs.go) is the shell that carries the actions out, in order.
//
// The rules, as the broker has always applied them:
//
//   - A host runs a replica of a partition it leads, and of one it is a
//     replica of while the leader's host is registered (shouldRun).
//   - At most capacity replicas run: those already running (or stopping,
//     or preparing their directory) first, then the others in (topic,
//     partition) order (admitReplicas).
//   - A replica whose topic id changed is stopped, its log deleted (a new
//     topic of the same name), and spawned again once it has stopped.
//   - New configs reopen a replica's log in place (Reopen), except for the
//     offsets topic's leader here, or a replica with a group coordinator
//     beside it: those restart (stop, then spawn) with their coordinator.
//   - A new leader epoch moves a replica in place (Transition), except the
//     offsets topic's leader here, or a replica with a group coordinator
//     beside it: those restart (stop, then spawn) with their coordinator.
//   - Same leader epoch, new partition epoch: the ISR is handed over.
//   - A replica the metadata no longer gives this host (or over capacity)
//     is stopped, and its log deleted when the host holds no replica of
//     the partition (notHosted).
//   - A replica that failed is not reopened before its backoff has passed.
//
// Threading: the functions are pure; they read the broker's maps, which
// only the actor's goroutine touches, and never modify them.

package broker

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/actorlog/actorlog/messages"
)

// actionKind is what an action asks the shell to do.
type actionKind int

const (
	// actSpawn: start the replica of key (and its coordinator, for an
	// offsets topic partition led here).
	actSpawn actionKind = iota + 1
	// actWaitRetry: key's replica is backing off; have reconcile run again
	// at at.
	actWaitRetry
	// actTransition: move the running replica of key to the partition's
	// new leader epoch in place.
	actTransition
	// actUpdateISR: hand the running leader of key the partition's new ISR
	// and partition epoch.
	actUpdateISR
	// actReopen: reopen the running replica of key in place with the
	// topic's new configs and the partition's state (replica.Reopen).
	actReopen
	// actStop: stop the replica of key (and its coordinator); delete its
	// log once stopped when remove is set.
	actStop
	// actRemoveDir: delete the partition directory dir (a name inside the
	// data dir), if it belongs to topicID (empty: to whichever topic).
	actRemoveDir
)

func (k actionKind) String() string {
	switch k {
	case actSpawn:
		return "spawn"
	case actWaitRetry:
		return "wait-retry"
	case actTransition:
		return "transition"
	case actUpdateISR:
		return "update-isr"
	case actReopen:
		return "reopen"
	case actStop:
		return "stop"
	case actRemoveDir:
		return "remove-dir"
	}
	return fmt.Sprintf("action(%d)", int(k))
}

// action is one step the shell carries out.
type action struct {
	kind actionKind
	key  tp
	// t and p are the partition's metadata (spawn, transition,
	// update-isr).
	t *messages.TopicMetadata
	p *messages.PartitionState
	// remove: stop, then delete the log.
	remove bool
	// at: wait-retry.
	at time.Time
	// dir, topicID and why: remove-dir.
	dir, topicID, why string
}

// String describes a (for logs and test failures; t and p left out).
func (a action) String() string {
	switch a.kind {
	case actStop:
		return fmt.Sprintf("stop %s-%d remove=%v", a.key.topic, a.key.partition, a.remove)
	case actWaitRetry:
		return fmt.Sprintf("wait-retry %s-%d at %s", a.key.topic, a.key.partition, a.at.Format(time.RFC3339Nano))
	case actRemoveDir:
		return fmt.Sprintf("remove-dir %s topic_id=%q (%s)", a.dir, a.topicID, a.why)
	}
	return fmt.Sprintf("%v %s-%d", a.kind, a.key.topic, a.key.partition)
}

// view is what plan decides from: the broker's state, read only.
type view struct {
	self   int32
	topics map[string]*messages.TopicMetadata
	hosts  map[int32]*messages.HostInfo
	// running: the replicas running here; stopping: those asked to stop
	// that have not stopped yet; preparing: those whose directory is being
	// claimed (spawned once it is ready).
	running   map[tp]*running
	stopping  map[tp]bool
	preparing map[tp]string
	// capacity is MaxPartitionsPerHost.
	capacity int
	// retryAt: a replica that failed is not reopened before then.
	retryAt map[tp]time.Time
	now     time.Time
}

// planned is plan's answer.
type planned struct {
	// actions, in the order to carry them out.
	actions []action
	// want: the replicas this host runs by the metadata, within capacity.
	want map[tp]bool
	// wanted is how many replicas the metadata gives this host; refused
	// how many of them capacity leaves out.
	wanted, refused int
}

// plan decides how to make the running replicas match the metadata (see
// the file comment for the rules). Pure.
func plan(v view) planned {
	var candidates []tp
	parts := map[tp]*messages.PartitionState{}
	for _, t := range v.topics {
		for _, p := range t.Partitions {
			if shouldRun(v.self, v.hosts, p) {
				key := tp{t.Name, p.Partition}
				candidates = append(candidates, key)
				parts[key] = p
			}
		}
	}
	admitted, refused := admitReplicas(candidates, func(key tp) bool {
		_, ok := v.running[key]
		return ok || v.stopping[key] || preparing(v, key)
	}, v.capacity)
	out := planned{want: map[tp]bool{}, wanted: len(candidates), refused: refused}
	add := func(a action) { out.actions = append(out.actions, a) }
	for _, key := range admitted {
		out.want[key] = true
		t, p := v.topics[key.topic], parts[key]
		r, ok := v.running[key]
		switch {
		case v.stopping[key]:
			// Spawned again once the old one has stopped.
		case !ok && preparing(v, key):
			// Spawned once its directory is ready.
		case !ok:
			if at, waiting := v.retryAt[key]; waiting && v.now.Before(at) {
				add(action{kind: actWaitRetry, key: key, at: at})
				continue
			}
			add(action{kind: actSpawn, key: key, t: t, p: p})
		case r.topicID != t.TopicId:
			add(action{kind: actStop, key: key, remove: true})
		case !sameConfigs(r.configs, t.Configs) && inPlace(v, t, p, r):
			// New configs: the replica reopens its log in place,
			// answering every request it already holds.
			add(action{kind: actReopen, key: key, t: t, p: p})
		case !sameConfigs(r.configs, t.Configs):
			add(action{kind: actStop, key: key})
		case r.epoch != p.LeaderEpoch && inPlace(v, t, p, r):
			// A new leader epoch: the replica changes role in place,
			// answering every request it already holds.
			add(action{kind: actTransition, key: key, t: t, p: p})
		case r.epoch != p.LeaderEpoch:
			// The offsets topic's leader runs a group coordinator beside
			// it: restarted together.
			add(action{kind: actStop, key: key})
		case r.partitionEpoch != p.PartitionEpoch:
			// Same leadership, new ISR: the leader takes it in place.
			add(action{kind: actUpdateISR, key: key, t: t, p: p})
		}
	}
	var stops []tp
	for key := range v.running {
		if !out.want[key] && !v.stopping[key] {
			stops = append(stops, key)
		}
	}
	slices.SortFunc(stops, compareTP)
	for _, key := range stops {
		add(action{kind: actStop, key: key, remove: notHosted(v.self, v.topics, key)})
	}
	return out
}

// inPlace reports whether the replica r of t's partition p may change in
// place (Transition, Reopen): all but the offsets topic's leader here and
// a replica with a group coordinator beside it, which restart with their
// coordinator.
func inPlace(v view, t *messages.TopicMetadata, p *messages.PartitionState, r *running) bool {
	return r.coordinator == nil && !(t.Name == messages.OffsetsTopic && p.Leader == v.self)
}

// preparing reports whether key's directory is being claimed.
func preparing(v view, key tp) bool {
	_, ok := v.preparing[key]
	return ok
}

// compareTP orders partitions by topic, then partition.
func compareTP(a, b tp) int {
	if a.topic != b.topic {
		return strings.Compare(a.topic, b.topic)
	}
	return int(a.partition) - int(b.partition)
}

// removeDir is the action deleting key's partition directory, if it
// belongs to topicID (empty: to whichever topic).
func removeDir(key tp, topicID, why string) action {
	return action{kind: actRemoveDir, key: key, dir: dirName(key), topicID: topicID, why: why}
}

// dirName is key's partition directory's name, "<topic>-<partition>" (the
// shell confines it to the data dir: confinedDir).
func dirName(key tp) string {
	return key.topic + "-" + strconv.Itoa(int(key.partition))
}

// afterStop is what follows the stop of key's replica: its log is deleted
// when the stop asked for it (remove) or when the metadata moved on
// meanwhile (e.g. a restart for a new leader epoch, then a reassignment
// away from here). Pure.
func afterStop(self int32, topics map[string]*messages.TopicMetadata, key tp, remove bool) []action {
	if remove || notHosted(self, topics, key) {
		return []action{removeDir(key, "", "topic deleted or partition reassigned away")}
	}
	return nil
}

// leftPartitions returns the removals of the logs of partitions of t that
// this host was a replica of in old (the same topic, as the broker last
// saw it) but is not in t (reassigned away) and that run no replica here
// (one that runs is removed when it has stopped: afterStop). Pure.
func leftPartitions(self int32, old, t *messages.TopicMetadata, running map[tp]*running, stopping map[tp]bool) []action {
	var out []action
	for i, p := range t.Partitions {
		key := tp{t.Name, p.Partition}
		if i >= len(old.Partitions) || !slices.Contains(old.Partitions[i].Replicas, self) || slices.Contains(p.Replicas, self) {
			continue
		}
		if _, ok := running[key]; ok || stopping[key] {
			continue
		}
		out = append(out, removeDir(key, t.TopicId, "reassigned away from this host"))
	}
	return out
}

// partitionDirInfo is a partition directory found in the data dir: its
// name and the topic id its partition.metadata names.
type partitionDirInfo struct {
	name, topicID string
}

// maybeStray reports whether the data dir's entry name may be a stray
// partition directory, worth reading its partition.metadata: not a
// tombstone, nor a directory of a topic whose record is invalid
// (rejected: not acted on, so its data stays). Pure.
func maybeStray(name string, rejected map[string]bool) bool {
	return !rejected[topicOfDir(name)] && !isTombstone(name)
}

// strayDirs returns the removals of the partition directories (found in
// the data dir at start) of topics that no longer exist (deleted while
// this host was down) and of partitions no longer hosted here. Pure.
func strayDirs(self int32, topics map[string]*messages.TopicMetadata, dirs []partitionDirInfo) []action {
	var out []action
	for _, d := range dirs {
		why := "topic deleted"
		if t := topicByID(topics, d.topicID); t != nil {
			key, ok := partitionOfDir(t, d.name)
			if !ok || !notHosted(self, topics, key) {
				continue
			}
			why = "partition reassigned away from this host"
		}
		out = append(out, action{kind: actRemoveDir, dir: d.name, why: why})
	}
	return out
}

// topicByID returns the topic whose id is id, nil if none.
func topicByID(topics map[string]*messages.TopicMetadata, id string) *messages.TopicMetadata {
	for _, t := range topics {
		if t.TopicId == id {
			return t
		}
	}
	return nil
}

// notHosted reports whether this host (self) holds no replica of key by
// the metadata: the topic is gone, or the partition's replicas (after a
// reassignment) leave this host out. Its log is then deleted.
func notHosted(self int32, topics map[string]*messages.TopicMetadata, key tp) bool {
	t, ok := topics[key.topic]
	if !ok {
		return true
	}
	for _, p := range t.Partitions {
		if p.Partition == key.partition {
			return !slices.Contains(p.Replicas, self)
		}
	}
	return true
}

// shouldRun reports whether this host (self) runs a replica of p: as its
// leader, or as a follower of a leader whose address it knows.
func shouldRun(self int32, hosts map[int32]*messages.HostInfo, p *messages.PartitionState) bool {
	if p.Leader == self {
		return true
	}
	if p.Leader < 0 || !slices.Contains(p.Replicas, self) {
		return false
	}
	_, known := hosts[p.Leader]
	return known
}

func sameConfigs(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// admitReplicas caps the replicas this host runs at capacity: of
// candidates (the replicas the metadata gives this host), those already
// running come first, then the others in (topic, partition) order, so a
// new topic never displaces a running replica and the choice does not
// depend on map order. It returns the admitted keys, in that order, and
// how many were refused. Pure.
func admitReplicas(candidates []tp, running func(tp) bool, capacity int) ([]tp, int) {
	sorted := slices.Clone(candidates)
	slices.SortFunc(sorted, func(a, b tp) int {
		ra, rb := running(a), running(b)
		switch {
		case ra && !rb:
			return -1
		case rb && !ra:
			return 1
		}
		return compareTP(a, b)
	})
	if len(sorted) <= capacity {
		return sorted, 0
	}
	return sorted[:max(capacity, 0)], len(sorted) - max(capacity, 0)
}

// topicOfDir returns the topic part of a partition directory's name
// ("<topic>-<partition>"), or "" when it has none.
func topicOfDir(dir string) string {
	key, _ := keyOfDir(dir)
	return key.topic
}

// keyOfDir returns the partition a partition directory's name
// ("<topic>-<partition>") stands for.
func keyOfDir(dir string) (tp, bool) {
	i := strings.LastIndexByte(dir, '-')
	if i < 0 {
		return tp{}, false
	}
	n, err := strconv.ParseUint(dir[i+1:], 10, 31)
	if err != nil {
		return tp{}, false
	}
	return tp{dir[:i], int32(n)}, true
}

// partitionOfDir returns the partition of t whose directory is named dir
// ("<topic>-<partition>").
func partitionOfDir(t *messages.TopicMetadata, dir string) (tp, bool) {
	n, err := strconv.ParseInt(strings.TrimPrefix(dir, t.Name+"-"), 10, 32)
	if err != nil || !strings.HasPrefix(dir, t.Name+"-") {
		return tp{}, false
	}
	return tp{t.Name, int32(n)}, true
}
