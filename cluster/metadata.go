// metadata.go holds Store, the cluster metadata in etcd: reads of topics
// and hosts, and the controller's fenced writes. Every write is one etcd
// transaction guarded by Compare(CreateRevision(electionKey), "=", epoch)
// (DESIGN §5), so a deposed controller can never write, whatever it
// believes; the same transaction checks the write's own precondition (the
// topic is new, or unchanged since it was read) and reads back, in its Else
// branch, what is needed to say which check failed.
//
// Reads hold every record to the rules writes are held to: a topic record
// that does not decode, does not match its key or fails ValidateTopic (a
// record written straight into etcd, e.g. one named "../victim") is never
// returned as a topic. Lists leave it out and report it in
// Snapshot.Rejected, watches report it as a TopicEvent with Rejected set,
// GetTopic fails with ErrCorruptMetadata; the Store logs it once, at error
// level, with its key. A bad host registration (one that does not decode,
// match its key or pass ValidateHostInfo) is treated as absent.

package cluster

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"slices"
	"sync"

	"github.com/sirupsen/logrus"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/messages"
)

// Store reads and writes the cluster metadata kept in etcd under one key
// prefix (see keys.go). It holds no state besides its client and the set
// of bad records it has already logged; it is safe for concurrent use, and
// several Stores (in one process or many) may share the metadata. Reads
// are linearizable (etcd's default).
type Store struct {
	client  *clientv3.Client
	keys    Keys
	logger  *logrus.Entry
	rejects *rejectLog
}

// NewStore returns a Store over client, keeping its keys under prefix
// (DefaultPrefix when empty). A nil logger means logrus's standard logger.
// The Store does not own the client: closing it is the caller's business.
func NewStore(client *clientv3.Client, prefix string, logger *logrus.Entry) *Store {
	if logger == nil {
		logger = logrus.NewEntry(logrus.StandardLogger())
	}
	keys := NewKeys(prefix)
	return &Store{client: client, keys: keys, logger: logger.WithField("etcd_prefix", keys.Prefix()), rejects: &rejectLog{}}
}

// Keys returns the Store's key layout.
func (s *Store) Keys() Keys { return s.keys }

// Client returns the Store's etcd client.
func (s *Store) Client() *clientv3.Client { return s.client }

// Fence is the controller's authority: the key the controller's election
// session holds and that key's create revision, the controller epoch.
// Elections only ever hand out larger epochs. Every controller write
// carries it and fails with ErrNotController once the key is gone or was
// created anew. The zero Fence never holds.
type Fence struct {
	Key   string
	Epoch int64
}

// String renders the fence for logs.
func (f Fence) String() string { return fmt.Sprintf("%s@%d", f.Key, f.Epoch) }

// marshalOpts makes equal messages encode to equal bytes (configs is a map).
var marshalOpts = proto.MarshalOptions{Deterministic: true}

// NewTopicID returns a random topic id: 16 random bytes in unpadded
// URL-safe base64, 22 characters, as Kafka prints its topic Uuids.
func NewTopicID() string {
	var b [16]byte
	// crypto/rand.Read never returns an error (Go 1.24+); it panics instead.
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// GetTopic returns the topic called name and the revision at which it was
// last modified, which UpdateTopic takes as its expected revision. The
// error wraps ErrUnknownTopic when there is no such topic, and
// ErrCorruptMetadata (with the validation sentinel) when its record is
// invalid.
func (s *Store) GetTopic(ctx context.Context, name string) (*messages.TopicMetadata, int64, error) {
	if err := ValidateTopicName(name); err != nil {
		return nil, 0, fmt.Errorf("cluster: get topic: %w", err)
	}
	resp, err := s.client.Get(ctx, s.keys.Topic(name))
	if err != nil {
		return nil, 0, fmt.Errorf("cluster: get topic %q: %w", name, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, 0, fmt.Errorf("cluster: get topic %q: %w", name, ErrUnknownTopic)
	}
	t, err := s.decodeTopic(resp.Kvs[0])
	if err != nil {
		s.reject(resp.Kvs[0], err)
		return nil, 0, fmt.Errorf("cluster: get topic %q: %w", name, err)
	}
	return t, resp.Kvs[0].ModRevision, nil
}

// ListTopics returns every valid topic, sorted by name, and the store
// revision it read them at: watch from it (WatchTopics) to see every later
// change exactly once, or pass it to UpdateTopic as the expected revision.
// Invalid records are left out (Snapshot lists them).
func (s *Store) ListTopics(ctx context.Context) ([]*messages.TopicMetadata, int64, error) {
	resp, err := s.client.Get(ctx, s.keys.Topics(), clientv3.WithPrefix())
	if err != nil {
		return nil, 0, fmt.Errorf("cluster: list topics: %w", err)
	}
	topics, _ := s.decodeTopics(resp.Kvs)
	return topics, resp.Header.Revision, nil
}

// ListHosts returns the live host registrations, sorted by host id. Use
// Snapshot to get them with a revision to watch from.
func (s *Store) ListHosts(ctx context.Context) ([]*messages.HostInfo, error) {
	return s.listHosts(ctx)
}

// ListHostsLocal is ListHosts read from the etcd member the store's client
// talks to (a serializable read): it answers while the etcd cluster has no
// raft leader (one just died), but may miss the very latest changes.
func (s *Store) ListHostsLocal(ctx context.Context) ([]*messages.HostInfo, error) {
	return s.listHosts(ctx, clientv3.WithSerializable())
}

func (s *Store) listHosts(ctx context.Context, opts ...clientv3.OpOption) ([]*messages.HostInfo, error) {
	resp, err := s.client.Get(ctx, s.keys.Hosts(), append([]clientv3.OpOption{clientv3.WithPrefix()}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("cluster: list hosts: %w", err)
	}
	return s.decodeHosts(resp.Kvs), nil
}

// Snapshot is every topic and live host at one store revision.
type Snapshot struct {
	// Topics, sorted by name.
	Topics []*messages.TopicMetadata
	// TopicRevisions maps each topic of Topics to the revision it was
	// last modified at.
	TopicRevisions map[string]int64
	// Rejected holds the topic records that failed decoding or
	// validation, in key order: not topics, never to be acted on. A
	// reader that knew a valid version of one keeps treating it as it
	// was (its data is not deleted because a record went bad).
	Rejected []RejectedTopic
	// Hosts, sorted by host id.
	Hosts []*messages.HostInfo
	// Revision is the store revision of the snapshot: WatchTopics and
	// WatchHosts from it miss nothing and repeat nothing.
	Revision int64
}

// Snapshot reads all topics and hosts at one revision (one etcd
// transaction): what a new controller starts from before watching.
func (s *Store) Snapshot(ctx context.Context) (*Snapshot, error) {
	resp, err := s.client.Txn(ctx).Then(
		clientv3.OpGet(s.keys.Topics(), clientv3.WithPrefix()),
		clientv3.OpGet(s.keys.Hosts(), clientv3.WithPrefix()),
	).Commit()
	if err != nil {
		return nil, fmt.Errorf("cluster: snapshot: %w", err)
	}
	topicKVs := resp.Responses[0].GetResponseRange().GetKvs()
	topics, rejected := s.decodeTopics(topicKVs)
	hosts := s.decodeHosts(resp.Responses[1].GetResponseRange().GetKvs())
	revs := make(map[string]int64, len(topics))
	for _, kv := range topicKVs {
		if name, err := s.keys.topicFromKey(string(kv.Key)); err == nil {
			revs[name] = kv.ModRevision
		}
	}
	for _, r := range rejected {
		delete(revs, r.Name)
	}
	return &Snapshot{Topics: topics, TopicRevisions: revs, Rejected: rejected, Hosts: hosts, Revision: resp.Header.Revision}, nil
}

// CreateTopic stores a new topic, if the fence holds and no topic of that
// name exists (both checked in one transaction). t is validated first
// (ValidateTopic); when t.TopicId is empty it is set to NewTopicID().
//
// Errors wrap ErrNotController (fence failed), ErrTopicExists, a
// validation sentinel (ErrInvalidTopic, ErrInvalidPartitions,
// ErrInvalidReplicationFactor, ErrInvalidReplicaAssignment,
// ErrInvalidConfig) or an etcd error; only on nil was anything written.
func (s *Store) CreateTopic(ctx context.Context, fence Fence, t *messages.TopicMetadata) error {
	if err := ValidateTopic(t); err != nil {
		return fmt.Errorf("cluster: create topic: %w", err)
	}
	if t.GetTopicId() == "" {
		t.TopicId = NewTopicID()
	}
	val, err := marshalOpts.Marshal(t)
	if err != nil {
		return fmt.Errorf("cluster: create topic %q: marshal: %w", t.GetName(), err)
	}
	key := s.keys.Topic(t.GetName())
	resp, err := s.fenced(ctx, fence,
		[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)},
		[]clientv3.Op{clientv3.OpPut(key, string(val))})
	if err != nil {
		return fmt.Errorf("cluster: create topic %q: %w", t.GetName(), err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("cluster: create topic %q: %w", t.GetName(), ErrTopicExists)
	}
	s.logger.WithFields(logrus.Fields{
		"topic": t.GetName(), "topic_id": t.GetTopicId(), "partitions": len(t.GetPartitions()),
		"replication_factor": t.GetReplicationFactor(), "controller_epoch": fence.Epoch, "revision": resp.Header.Revision,
	}).Info("created topic")
	return nil
}

// UpdateTopic replaces a stored topic, if the fence holds, the topic
// exists, and it has not been modified after expectedModRevision (all in
// one transaction). expectedModRevision is any revision at which the
// caller saw the topic's current state: GetTopic's, ListTopics' or a
// Snapshot's revision, or a TopicEvent's Revision. The topic's name selects
// the key; t is validated first (ValidateTopic).
//
// Errors wrap ErrNotController, ErrUnknownTopic (deleted meanwhile),
// ErrTopicChanged (modified meanwhile: re-read and retry), a validation
// sentinel, or an etcd error; only on nil was anything written.
func (s *Store) UpdateTopic(ctx context.Context, fence Fence, t *messages.TopicMetadata, expectedModRevision int64) error {
	if err := ValidateTopic(t); err != nil {
		return fmt.Errorf("cluster: update topic: %w", err)
	}
	if expectedModRevision <= 0 {
		return fmt.Errorf("cluster: update topic %q: expected revision %d, want > 0", t.GetName(), expectedModRevision)
	}
	val, err := marshalOpts.Marshal(t)
	if err != nil {
		return fmt.Errorf("cluster: update topic %q: marshal: %w", t.GetName(), err)
	}
	key := s.keys.Topic(t.GetName())
	resp, err := s.fenced(ctx, fence,
		[]clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision(key), ">", 0),
			clientv3.Compare(clientv3.ModRevision(key), "<", expectedModRevision+1),
		},
		[]clientv3.Op{clientv3.OpPut(key, string(val))},
		clientv3.OpGet(key, clientv3.WithKeysOnly()))
	if err != nil {
		return fmt.Errorf("cluster: update topic %q: %w", t.GetName(), err)
	}
	if !resp.Succeeded {
		kvs := resp.Responses[1].GetResponseRange().GetKvs()
		if len(kvs) == 0 {
			return fmt.Errorf("cluster: update topic %q: %w", t.GetName(), ErrUnknownTopic)
		}
		return fmt.Errorf("cluster: update topic %q: %w: modified at revision %d, after the expected %d",
			t.GetName(), ErrTopicChanged, kvs[0].ModRevision, expectedModRevision)
	}
	s.logger.WithFields(logrus.Fields{
		"topic": t.GetName(), "topic_id": t.GetTopicId(), "deleting": t.GetDeleting(),
		"controller_epoch": fence.Epoch, "revision": resp.Header.Revision,
	}).Debug("updated topic")
	return nil
}

// DeleteTopic removes a topic's record, if the fence holds. As in Kafka,
// the controller first marks the topic Deleting (UpdateTopic), waits for
// the hosts to remove its replicas, then calls this. Errors wrap
// ErrNotController, ErrUnknownTopic, ErrInvalidTopic or an etcd error.
func (s *Store) DeleteTopic(ctx context.Context, fence Fence, name string) error {
	if err := ValidateTopicName(name); err != nil {
		return fmt.Errorf("cluster: delete topic: %w", err)
	}
	key := s.keys.Topic(name)
	resp, err := s.fenced(ctx, fence,
		[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), ">", 0)},
		[]clientv3.Op{clientv3.OpDelete(key)})
	if err != nil {
		return fmt.Errorf("cluster: delete topic %q: %w", name, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("cluster: delete topic %q: %w", name, ErrUnknownTopic)
	}
	s.logger.WithFields(logrus.Fields{"topic": name, "controller_epoch": fence.Epoch, "revision": resp.Header.Revision}).
		Info("deleted topic")
	return nil
}

// fenced commits If(fence, conds...).Then(then...).Else(Get(fence.Key),
// orElse...). It returns an error wrapping ErrNotController when the fence
// failed; otherwise the response, whose Succeeded says whether conds held
// (and then were applied) and whose Responses[1:] are orElse's results when
// they did not.
func (s *Store) fenced(ctx context.Context, fence Fence, conds []clientv3.Cmp, then []clientv3.Op, orElse ...clientv3.Op) (*clientv3.TxnResponse, error) {
	if fence.Key == "" || fence.Epoch <= 0 {
		// A zero epoch would compare equal to a missing key's create
		// revision, so it must never reach etcd.
		return nil, fmt.Errorf("%w: invalid fence %v", ErrNotController, fence)
	}
	cmps := append([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(fence.Key), "=", fence.Epoch)}, conds...)
	elseOps := append([]clientv3.Op{clientv3.OpGet(fence.Key, clientv3.WithKeysOnly())}, orElse...)
	resp, err := s.client.Txn(ctx).If(cmps...).Then(then...).Else(elseOps...).Commit()
	if err != nil {
		return nil, err
	}
	if resp.Succeeded {
		return resp, nil
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 || kvs[0].CreateRevision != fence.Epoch {
		current := "gone"
		if len(kvs) > 0 {
			current = fmt.Sprintf("created at %d", kvs[0].CreateRevision)
		}
		s.logger.WithFields(logrus.Fields{"fence": fence.String(), "election_key": current}).
			Warn("controller write refused: fence no longer holds")
		return nil, fmt.Errorf("%w: fence %v, election key %s", ErrNotController, fence, current)
	}
	return resp, nil
}

// RejectedTopic is a topic record that failed decoding or validation.
type RejectedTopic struct {
	// Key is the record's etcd key.
	Key string
	// Name is the topic name the key holds (any string: it may be the
	// reason the record was rejected).
	Name string
	// ModRevision is the revision the record was last written at.
	ModRevision int64
	// Err says why; it wraps ErrCorruptMetadata.
	Err error
}

// decodeTopic decodes a topic value, checks it matches its key and holds
// it to ValidateTopic, as an admin request would be. Errors wrap
// ErrCorruptMetadata.
func (s *Store) decodeTopic(kv *mvccpb.KeyValue) (*messages.TopicMetadata, error) {
	name, err := s.keys.topicFromKey(string(kv.Key))
	if err != nil {
		return nil, err
	}
	t := &messages.TopicMetadata{}
	if err := proto.Unmarshal(kv.Value, t); err != nil {
		return nil, fmt.Errorf("%w: key %q: %v", ErrCorruptMetadata, kv.Key, err)
	}
	if t.GetName() != name {
		return nil, fmt.Errorf("%w: key %q holds topic %q", ErrCorruptMetadata, kv.Key, t.GetName())
	}
	if err := ValidateTopic(t); err != nil {
		return nil, fmt.Errorf("%w: key %q: %w", ErrCorruptMetadata, kv.Key, err)
	}
	return t, nil
}

// decodeTopics decodes a range of topic values, in key (name) order: the
// valid topics, and the records that are not (each reported once).
func (s *Store) decodeTopics(kvs []*mvccpb.KeyValue) ([]*messages.TopicMetadata, []RejectedTopic) {
	topics := make([]*messages.TopicMetadata, 0, len(kvs))
	var rejected []RejectedTopic
	for _, kv := range kvs {
		t, err := s.decodeTopic(kv)
		if err != nil {
			rejected = append(rejected, s.reject(kv, err))
			continue
		}
		topics = append(topics, t)
	}
	return topics, rejected
}

// reject logs a bad record once (per key and revision) and describes it.
func (s *Store) reject(kv *mvccpb.KeyValue, err error) RejectedTopic {
	name, _ := s.keys.topicFromKey(string(kv.Key))
	s.rejects.report(s.logger, string(kv.Key), kv.ModRevision, err)
	return RejectedTopic{Key: string(kv.Key), Name: name, ModRevision: kv.ModRevision, Err: err}
}

// decodeHost decodes a host registration and checks it matches its key
// and holds valid addresses (ValidateHostInfo). Errors wrap
// ErrCorruptMetadata.
func (s *Store) decodeHost(kv *mvccpb.KeyValue) (*messages.HostInfo, error) {
	id, err := s.keys.hostIDFromKey(string(kv.Key))
	if err != nil {
		return nil, err
	}
	h := &messages.HostInfo{}
	if err := proto.Unmarshal(kv.Value, h); err != nil {
		return nil, fmt.Errorf("%w: key %q: %v", ErrCorruptMetadata, kv.Key, err)
	}
	if h.GetHostId() != id {
		return nil, fmt.Errorf("%w: key %q holds host %d", ErrCorruptMetadata, kv.Key, h.GetHostId())
	}
	if err := ValidateHostInfo(h); err != nil {
		return nil, fmt.Errorf("%w: key %q: %w", ErrCorruptMetadata, kv.Key, err)
	}
	return h, nil
}

// decodeHosts decodes a range of host registrations, sorted by host id.
// Bad ones are left out (reported once): a registration that cannot be
// read is no registration.
func (s *Store) decodeHosts(kvs []*mvccpb.KeyValue) []*messages.HostInfo {
	hosts := make([]*messages.HostInfo, 0, len(kvs))
	for _, kv := range kvs {
		h, err := s.decodeHost(kv)
		if err != nil {
			s.rejects.report(s.logger, string(kv.Key), kv.ModRevision, err)
			continue
		}
		hosts = append(hosts, h)
	}
	slices.SortFunc(hosts, func(a, b *messages.HostInfo) int { return cmp.Compare(a.GetHostId(), b.GetHostId()) })
	return hosts
}

// maxRejectsRemembered bounds the memory of reported records; past it
// the memory starts over (a record may then be logged again).
const maxRejectsRemembered = 4096

// rejectLog remembers which bad records were logged, so each is logged
// once (per key and revision) however often it is read. Safe for
// concurrent use.
type rejectLog struct {
	mu   sync.Mutex
	seen map[string]int64 // key -> mod revision logged
}

func (r *rejectLog) report(logger *logrus.Entry, key string, rev int64, err error) {
	r.mu.Lock()
	if r.seen == nil || len(r.seen) >= maxRejectsRemembered {
		r.seen = map[string]int64{}
	}
	if seen, ok := r.seen[key]; ok && seen == rev {
		r.mu.Unlock()
		return
	}
	r.seen[key] = rev
	r.mu.Unlock()
	logger.WithError(err).WithFields(logrus.Fields{"key": key, "mod_revision": rev}).
		Error("ignoring an invalid metadata record in etcd: it is not acted on until it is rewritten valid or deleted")
}
