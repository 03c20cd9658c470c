// memstore.go holds MemStore, an in-memory MetadataStore beside the etcd
// one (as hashicorp/raft keeps inmem_transport.go beside net_transport.go):
// broker and controller tests run on it without etcd. It keeps Store's
// semantics — one revision bumped by every change, mod-revision checks on
// UpdateTopic, fenced writes, watches that resume after a revision,
// compaction, leases behind host registrations and election sessions —
// and lets tests do what etcd does by itself: expire a host's lease
// (ExpireHost), compact (Compact), end every watch (EndWatches), and
// delay or fail calls (SetInterceptor). Leases never expire by time: a
// test decides when.
//
// Every write is validated as Store validates it, so a MemStore never
// holds an invalid record: Snapshot.Rejected is always empty and no watch
// event is Rejected (tests of invalid records use etcd).

package cluster

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/messages"
)

// memElectionPrefix is the prefix of MemStore's election keys, as Store
// names them under DefaultPrefix.
const memElectionPrefix = "memstore/controller/election"

// memFirstLease is MemStore's first lease id (broker epochs and election
// sessions); later ones count up.
const memFirstLease = 0x7000

// Compile-time checks: MemStore implements the seams.
var (
	_ MetadataStore = (*MemStore)(nil)
	_ Election      = (*memElection)(nil)
)

// MemStore is a MetadataStore in memory. The zero value is not usable:
// create it with NewMemStore. Safe for concurrent use.
type MemStore struct {
	logger *logrus.Entry

	mu         sync.Mutex
	rev        int64 // the store revision: bumped by every change
	topics     map[string]memTopic
	hosts      map[int32]memHost
	candidates map[string]memCandidate // election key → candidacy
	leases     map[int64]chan struct{} // live lease id → closed when it ends
	nextLease  int64
	names      map[int32]string
	producerID int64         // the next producer id not handed out
	clusterID  string        // "" until ClusterID creates it
	history    []memEvent    // topic and host changes, by revision
	compacted  int64         // history at or below it is gone
	changed    chan struct{} // closed (and replaced) on every change
	ended      chan struct{} // closed (and replaced) by EndWatches
	intercept  func(ctx context.Context, op string) error
}

type (
	memTopic struct {
		t   *messages.TopicMetadata
		mod int64
	}
	memHost struct {
		info  *messages.HostInfo
		lease int64
	}
	memCandidate struct {
		value  string
		create int64
		lease  int64
	}
	// memEvent is one change of a topic (host == 0) or host registration.
	memEvent struct {
		rev   int64
		typ   EventType
		name  string
		host  int32
		topic *messages.TopicMetadata // put: new value; delete: previous
		info  *messages.HostInfo      // put: new value; delete: previous
	}
)

// NewMemStore returns an empty MemStore. A nil logger means logrus's
// standard logger.
func NewMemStore(logger *logrus.Entry) *MemStore {
	if logger == nil {
		logger = logrus.NewEntry(logrus.StandardLogger())
	}
	return &MemStore{
		logger:     logger.WithField("store", "memory"),
		rev:        1, // etcd starts at revision 1 too
		topics:     map[string]memTopic{},
		hosts:      map[int32]memHost{},
		candidates: map[string]memCandidate{},
		leases:     map[int64]chan struct{}{},
		nextLease:  memFirstLease,
		names:      map[int32]string{},
		changed:    make(chan struct{}),
		ended:      make(chan struct{}),
	}
}

// SetInterceptor makes every later MetadataStore call (not the watches'
// streams, not the test controls) call f first with its context and its
// method name ("CreateTopic", "UpdateTopic", ...): f may block (a slow
// store) or return an error, which the call returns wrapped (a failing
// store). nil removes it.
func (m *MemStore) SetInterceptor(f func(ctx context.Context, op string) error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.intercept = f
}

// enter runs the interceptor and checks ctx, before an operation.
func (m *MemStore) enter(ctx context.Context, op string) error {
	m.mu.Lock()
	f := m.intercept
	m.mu.Unlock()
	if f != nil {
		if err := f(ctx, op); err != nil {
			return fmt.Errorf("cluster: memstore %s: %w", op, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cluster: memstore %s: %w", op, err)
	}
	return nil
}

// bump advances the revision and wakes the watches and campaigns. Called
// with mu held.
func (m *MemStore) bump() int64 {
	m.rev++
	close(m.changed)
	m.changed = make(chan struct{})
	return m.rev
}

// Revision returns the current store revision.
func (m *MemStore) Revision() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rev
}

// GetTopic implements MetadataStore.
func (m *MemStore) GetTopic(ctx context.Context, name string) (*messages.TopicMetadata, int64, error) {
	if err := ValidateTopicName(name); err != nil {
		return nil, 0, fmt.Errorf("cluster: get topic: %w", err)
	}
	if err := m.enter(ctx, "GetTopic"); err != nil {
		return nil, 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.topics[name]
	if !ok {
		return nil, 0, fmt.Errorf("cluster: get topic %q: %w", name, ErrUnknownTopic)
	}
	return cloneTopic(rec.t), rec.mod, nil
}

// ListTopics implements MetadataStore.
func (m *MemStore) ListTopics(ctx context.Context) ([]*messages.TopicMetadata, int64, error) {
	if err := m.enter(ctx, "ListTopics"); err != nil {
		return nil, 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sortedTopics(), m.rev, nil
}

// sortedTopics returns copies of the topics, by name. Called with mu held.
func (m *MemStore) sortedTopics() []*messages.TopicMetadata {
	out := make([]*messages.TopicMetadata, 0, len(m.topics))
	for _, rec := range m.topics {
		out = append(out, cloneTopic(rec.t))
	}
	slices.SortFunc(out, func(a, b *messages.TopicMetadata) int { return cmp.Compare(a.GetName(), b.GetName()) })
	return out
}

// sortedHosts returns copies of the registrations, by host id. Called
// with mu held.
func (m *MemStore) sortedHosts() []*messages.HostInfo {
	out := make([]*messages.HostInfo, 0, len(m.hosts))
	for _, h := range m.hosts {
		out = append(out, proto.Clone(h.info).(*messages.HostInfo))
	}
	slices.SortFunc(out, func(a, b *messages.HostInfo) int { return cmp.Compare(a.GetHostId(), b.GetHostId()) })
	return out
}

// ListHosts implements MetadataStore.
func (m *MemStore) ListHosts(ctx context.Context) ([]*messages.HostInfo, error) {
	if err := m.enter(ctx, "ListHosts"); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sortedHosts(), nil
}

// ListHostsLocal implements MetadataStore: the same as ListHosts (there
// is no quorum to lose).
func (m *MemStore) ListHostsLocal(ctx context.Context) ([]*messages.HostInfo, error) {
	if err := m.enter(ctx, "ListHostsLocal"); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sortedHosts(), nil
}

// HostNames implements MetadataStore: the bindings made with
// BindHostName.
func (m *MemStore) HostNames(ctx context.Context) (map[int32]string, error) {
	if err := m.enter(ctx, "HostNames"); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[int32]string, len(m.names))
	for id, name := range m.names {
		out[id] = name
	}
	return out, nil
}

// Snapshot implements MetadataStore.
func (m *MemStore) Snapshot(ctx context.Context) (*Snapshot, error) {
	if err := m.enter(ctx, "Snapshot"); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	revs := make(map[string]int64, len(m.topics))
	for name, rec := range m.topics {
		revs[name] = rec.mod
	}
	return &Snapshot{Topics: m.sortedTopics(), TopicRevisions: revs, Hosts: m.sortedHosts(), Revision: m.rev}, nil
}

// fenceHolds reports whether f's election key exists with f's create
// revision. Called with mu held.
func (m *MemStore) fenceHolds(f Fence) error {
	if f.Key == "" || f.Epoch <= 0 {
		return fmt.Errorf("%w: invalid fence %v", ErrNotController, f)
	}
	c, ok := m.candidates[f.Key]
	if ok && c.create == f.Epoch {
		return nil
	}
	current := "gone"
	if ok {
		current = fmt.Sprintf("created at %d", c.create)
	}
	m.logger.WithFields(logrus.Fields{"fence": f.String(), "election_key": current}).Warn("controller write refused: fence no longer holds")
	return fmt.Errorf("%w: fence %v, election key %s", ErrNotController, f, current)
}

// CreateTopic implements MetadataStore.
func (m *MemStore) CreateTopic(ctx context.Context, fence Fence, t *messages.TopicMetadata) error {
	if err := ValidateTopic(t); err != nil {
		return fmt.Errorf("cluster: create topic: %w", err)
	}
	if err := m.enter(ctx, "CreateTopic"); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fenceHolds(fence); err != nil {
		return fmt.Errorf("cluster: create topic %q: %w", t.GetName(), err)
	}
	if _, ok := m.topics[t.GetName()]; ok {
		return fmt.Errorf("cluster: create topic %q: %w", t.GetName(), ErrTopicExists)
	}
	if t.GetTopicId() == "" {
		t.TopicId = NewTopicID()
	}
	m.putTopic(cloneTopic(t))
	return nil
}

// putTopic stores t (owned by the store) at a new revision. Called with
// mu held.
func (m *MemStore) putTopic(t *messages.TopicMetadata) {
	rev := m.bump()
	m.topics[t.GetName()] = memTopic{t: t, mod: rev}
	m.history = append(m.history, memEvent{rev: rev, typ: EventPut, name: t.GetName(), topic: t})
}

// UpdateTopic implements MetadataStore.
func (m *MemStore) UpdateTopic(ctx context.Context, fence Fence, t *messages.TopicMetadata, expectedModRevision int64) error {
	if err := ValidateTopic(t); err != nil {
		return fmt.Errorf("cluster: update topic: %w", err)
	}
	if expectedModRevision <= 0 {
		return fmt.Errorf("cluster: update topic %q: expected revision %d, want > 0", t.GetName(), expectedModRevision)
	}
	if err := m.enter(ctx, "UpdateTopic"); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fenceHolds(fence); err != nil {
		return fmt.Errorf("cluster: update topic %q: %w", t.GetName(), err)
	}
	rec, ok := m.topics[t.GetName()]
	if !ok {
		return fmt.Errorf("cluster: update topic %q: %w", t.GetName(), ErrUnknownTopic)
	}
	if rec.mod > expectedModRevision {
		return fmt.Errorf("cluster: update topic %q: %w: modified at revision %d, after the expected %d",
			t.GetName(), ErrTopicChanged, rec.mod, expectedModRevision)
	}
	m.putTopic(cloneTopic(t))
	return nil
}

// DeleteTopic implements MetadataStore.
func (m *MemStore) DeleteTopic(ctx context.Context, fence Fence, name string) error {
	if err := ValidateTopicName(name); err != nil {
		return fmt.Errorf("cluster: delete topic: %w", err)
	}
	if err := m.enter(ctx, "DeleteTopic"); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fenceHolds(fence); err != nil {
		return fmt.Errorf("cluster: delete topic %q: %w", name, err)
	}
	rec, ok := m.topics[name]
	if !ok {
		return fmt.Errorf("cluster: delete topic %q: %w", name, ErrUnknownTopic)
	}
	delete(m.topics, name)
	rev := m.bump()
	m.history = append(m.history, memEvent{rev: rev, typ: EventDelete, name: name, topic: rec.t})
	return nil
}

// AllocateProducerIDs implements MetadataStore (ProducerIDSource).
func (m *MemStore) AllocateProducerIDs(ctx context.Context, n int64) (int64, error) {
	if n <= 0 {
		return 0, fmt.Errorf("cluster: allocate %d producer ids: count must be positive", n)
	}
	if err := m.enter(ctx, "AllocateProducerIDs"); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.producerID > math.MaxInt64-n {
		return 0, ErrProducerIDsExhausted
	}
	first := m.producerID
	m.producerID += n
	m.bump()
	return first, nil
}

// ClusterID implements MetadataStore: the id is created on the first
// call (bumping the revision, as etcd's put would) and returned as it is
// by every later one.
func (m *MemStore) ClusterID(ctx context.Context) (string, error) {
	if err := m.enter(ctx, "ClusterID"); err != nil {
		return "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.clusterID == "" {
		m.clusterID = NewClusterID()
		m.bump()
	}
	return m.clusterID, nil
}

// grant starts a lease and returns its id. Called with mu held.
func (m *MemStore) grant() int64 {
	id := m.nextLease
	m.nextLease++
	m.leases[id] = make(chan struct{})
	return id
}

// revoke ends a lease: its host registration and candidacies are
// deleted (one revision each, as etcd deletes a lease's keys) and its
// channel closes. It reports whether the lease was live. Called with mu
// held.
func (m *MemStore) revoke(lease int64) bool {
	done, ok := m.leases[lease]
	if !ok {
		return false
	}
	delete(m.leases, lease)
	for id, h := range m.hosts {
		if h.lease == lease {
			delete(m.hosts, id)
			rev := m.bump()
			m.history = append(m.history, memEvent{rev: rev, typ: EventDelete, host: id, info: h.info})
		}
	}
	for key, c := range m.candidates {
		if c.lease == lease {
			delete(m.candidates, key)
			m.bump()
		}
	}
	close(done)
	return true
}

// RegisterHost registers a host under a new lease, as Store.Register
// does: it sets info.BrokerEpoch to the lease id and stores a copy under
// the host id, unless its addresses are invalid (ValidateHostInfo,
// ErrInvalidHostAddress) or another live registration holds that id
// (ErrHostRegistered); one at the same advertised address is a crashed
// incarnation's and is replaced. The lease lives until ExpireHost or
// RevokeHostLease. It returns the broker epoch.
func (m *MemStore) RegisterHost(info *messages.HostInfo) (int64, error) {
	id := info.GetHostId()
	if id < 1 {
		return 0, fmt.Errorf("cluster: register host: host id %d, want >= 1", id)
	}
	if err := ValidateHostInfo(info); err != nil {
		return 0, fmt.Errorf("cluster: register host %d: %w", id, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.hosts[id]; ok {
		if info.GetAdvertisedAddress() == "" || old.info.GetAdvertisedAddress() != info.GetAdvertisedAddress() {
			return 0, fmt.Errorf("cluster: register host %d: %w (held by broker epoch %d)", id, ErrHostRegistered, old.lease)
		}
		m.revoke(old.lease)
	}
	lease := m.grant()
	info.BrokerEpoch = lease
	stored := proto.Clone(info).(*messages.HostInfo)
	m.hosts[id] = memHost{info: stored, lease: lease}
	rev := m.bump()
	m.history = append(m.history, memEvent{rev: rev, typ: EventPut, host: id, info: stored})
	return lease, nil
}

// ExpireHost ends host id's registration as an expired lease would, and
// reports whether it was registered.
func (m *MemStore) ExpireHost(id int32) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.hosts[id]
	return ok && m.revoke(h.lease)
}

// BindHostName records host id's name (what Store.ResolveHostID keeps),
// as HostNames returns it.
func (m *MemStore) BindHostName(id int32, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.names[id] = name
	m.bump()
}

// RevokeHostLease implements MetadataStore.
func (m *MemStore) RevokeHostLease(ctx context.Context, epoch int64) error {
	if err := m.enter(ctx, "RevokeHostLease"); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.revoke(epoch)
	return nil
}

// Compact forgets the history at and below rev: a watch from a revision
// below it ends with ErrCompacted, as etcd's does.
func (m *MemStore) Compact(rev int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rev <= m.compacted {
		return
	}
	m.compacted = rev
	i := sort.Search(len(m.history), func(i int) bool { return m.history[i].rev > rev })
	m.history = slices.Clone(m.history[i:])
}

// EndWatches ends every open watch with an event wrapping ErrWatchEnded,
// as etcd's do when a member loses its leader.
func (m *MemStore) EndWatches() {
	m.mu.Lock()
	defer m.mu.Unlock()
	close(m.ended)
	m.ended = make(chan struct{})
}

// WatchTopics implements MetadataStore.
func (m *MemStore) WatchTopics(ctx context.Context, fromRevision int64) <-chan TopicEvent {
	out := make(chan TopicEvent, 16)
	from := m.startWatch(fromRevision)
	go func() {
		defer close(out)
		send := func(ev TopicEvent) bool {
			select {
			case out <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		}
		err := m.watch(ctx, from, false, func(ev memEvent) bool {
			return send(TopicEvent{Type: ev.typ, Name: ev.name, Topic: cloneTopic(ev.topic), Revision: ev.rev})
		})
		if err != nil {
			send(TopicEvent{Err: fmt.Errorf("cluster: watch topics: %w", err)})
		}
	}()
	return out
}

// WatchHosts implements MetadataStore.
func (m *MemStore) WatchHosts(ctx context.Context, fromRevision int64) <-chan HostEvent {
	out := make(chan HostEvent, 16)
	from := m.startWatch(fromRevision)
	go func() {
		defer close(out)
		send := func(ev HostEvent) bool {
			select {
			case out <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		}
		err := m.watch(ctx, from, true, func(ev memEvent) bool {
			return send(HostEvent{Type: ev.typ, HostID: ev.host, Host: proto.Clone(ev.info).(*messages.HostInfo), Revision: ev.rev})
		})
		if err != nil {
			send(HostEvent{Err: fmt.Errorf("cluster: watch hosts: %w", err)})
		}
	}()
	return out
}

// watchStart is where a watch starts: taken when it is asked for, so
// what happens after (a change, EndWatches) reaches it.
type watchStart struct {
	fromRevision, last int64
	ended              chan struct{}
}

// startWatch returns where a watch from fromRevision starts.
func (m *MemStore) startWatch(fromRevision int64) watchStart {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := watchStart{fromRevision: fromRevision, last: fromRevision, ended: m.ended}
	if fromRevision <= 0 {
		w.last = m.rev
	}
	return w
}

// watch hands handle every host (hosts) or topic change after
// fromRevision, in order, until ctx ends (nil) or handle returns false
// (nil), or the watch fails (ErrCompacted, ErrWatchEnded).
func (m *MemStore) watch(ctx context.Context, from watchStart, hosts bool, handle func(memEvent) bool) error {
	fromRevision, last, ended := from.fromRevision, from.last, from.ended
	for {
		m.mu.Lock()
		if last < m.compacted {
			m.mu.Unlock()
			return fmt.Errorf("%w: from revision %d, compacted up to %d", ErrCompacted, fromRevision, m.compacted)
		}
		i := sort.Search(len(m.history), func(i int) bool { return m.history[i].rev > last })
		var evs []memEvent
		for _, ev := range m.history[i:] {
			if (ev.host != 0) == hosts {
				evs = append(evs, ev)
			}
		}
		if n := len(m.history); n > 0 {
			last = max(last, m.history[n-1].rev)
		}
		changed := m.changed
		m.mu.Unlock()
		for _, ev := range evs {
			if !handle(ev) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ended:
			return fmt.Errorf("%w: after revision %d: the watches were ended", ErrWatchEnded, last)
		case <-changed:
		}
	}
}

// NewElection implements MetadataStore: a candidate under a new lease
// that lives until the candidate is closed or evicted (ttl is only
// reported by TTL).
func (m *MemStore) NewElection(ctx context.Context, ttl time.Duration) (Election, error) {
	secs, err := ttlSeconds(ttl)
	if err != nil {
		return nil, fmt.Errorf("cluster: new election: %w", err)
	}
	if err := m.enter(ctx, "NewElection"); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	lease := m.grant()
	return &memElection{m: m, lease: lease, done: m.leases[lease], ttl: time.Duration(secs) * time.Second,
		key: fmt.Sprintf("%s/%x", memElectionPrefix, lease)}, nil
}

// firstCandidate returns the oldest candidacy's key, "" when none.
// Called with mu held.
func (m *MemStore) firstCandidate() string {
	first, rev := "", int64(0)
	for key, c := range m.candidates {
		if first == "" || c.create < rev {
			first, rev = key, c.create
		}
	}
	return first
}

// Controller implements MetadataStore.
func (m *MemStore) Controller(ctx context.Context) (string, Fence, error) {
	if err := m.enter(ctx, "Controller"); err != nil {
		return "", Fence{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	key := m.firstCandidate()
	if key == "" {
		return "", Fence{}, fmt.Errorf("cluster: get controller: %w", ErrNoController)
	}
	c := m.candidates[key]
	return c.value, Fence{Key: key, Epoch: c.create}, nil
}

// Candidates implements MetadataStore.
func (m *MemStore) Candidates(ctx context.Context) (keys, values []string, err error) {
	if err := m.enter(ctx, "Candidates"); err != nil {
		return nil, nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for key := range m.candidates {
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(m.candidates[a].create, m.candidates[b].create) })
	for _, key := range keys {
		values = append(values, m.candidates[key].value)
	}
	return keys, values, nil
}

// EvictCandidate implements MetadataStore.
func (m *MemStore) EvictCandidate(ctx context.Context, key string) error {
	if err := m.enter(ctx, "EvictCandidate"); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.candidates[key]; ok {
		m.revoke(c.lease)
	}
	return nil
}

// memElection is a MemStore candidate: its key is the election prefix
// and its lease id, as etcd's concurrency.Election names it.
type memElection struct {
	m     *MemStore
	lease int64
	key   string
	done  chan struct{}
	ttl   time.Duration
}

// Campaign implements Election.
func (e *memElection) Campaign(ctx context.Context, value string) (Fence, error) {
	m := e.m
	m.mu.Lock()
	if _, live := m.leases[e.lease]; !live {
		m.mu.Unlock()
		return Fence{}, fmt.Errorf("cluster: campaign: %w", ErrLeaseLost)
	}
	if c, ok := m.candidates[e.key]; ok {
		c.value = value
		m.candidates[e.key] = c
	} else {
		m.candidates[e.key] = memCandidate{value: value, lease: e.lease, create: m.bump()}
	}
	m.mu.Unlock()
	for {
		m.mu.Lock()
		c, ok := m.candidates[e.key]
		_, live := m.leases[e.lease]
		switch {
		case !live:
			m.mu.Unlock()
			return Fence{}, fmt.Errorf("cluster: campaign: %w", ErrLeaseLost)
		case !ok:
			m.mu.Unlock()
			return Fence{}, fmt.Errorf("cluster: campaign: %w: election key %q vanished while waiting", ErrLeaseLost, e.key)
		case m.firstCandidate() == e.key:
			m.mu.Unlock()
			return Fence{Key: e.key, Epoch: c.create}, nil
		}
		changed := m.changed
		m.mu.Unlock()
		select {
		case <-ctx.Done():
			e.withdraw()
			return Fence{}, fmt.Errorf("cluster: campaign: %w", ctx.Err())
		case <-e.done:
		case <-changed:
		}
	}
}

// withdraw deletes the candidacy after a cancelled Campaign.
func (e *memElection) withdraw() {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	if _, ok := e.m.candidates[e.key]; ok {
		delete(e.m.candidates, e.key)
		e.m.bump()
	}
}

// Done implements Election.
func (e *memElection) Done() <-chan struct{} { return e.done }

// TTL implements Election.
func (e *memElection) TTL() time.Duration { return e.ttl }

// Resign implements Election.
func (e *memElection) Resign(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cluster: resign: %w", err)
	}
	e.withdraw()
	return nil
}

// Close implements Election: it revokes the session lease.
func (e *memElection) Close() error {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	e.m.revoke(e.lease)
	return nil
}

// cloneTopic copies a topic (nil stays nil).
func cloneTopic(t *messages.TopicMetadata) *messages.TopicMetadata {
	if t == nil {
		return nil
	}
	return proto.Clone(t).(*messages.TopicMetadata)
}
