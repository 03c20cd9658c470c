// store.go holds the seams between the metadata layer and its users:
// MetadataStore, what the broker and controller actors need of the
// cluster metadata, and Election, one candidate for controller. Store (on
// etcd) and MemStore (in memory, for tests) implement both with the same
// semantics: revisions, optimistic updates, fenced writes, watches from a
// revision, leases.

package cluster

import (
	"context"
	"time"

	"github.com/actorlog/actorlog/messages"
)

// MetadataStore is the cluster metadata as the broker and controller
// actors use it: topic reads and the controller's fenced writes, host
// registrations, watches of both from a revision, the controller election,
// the producer id counter and the cluster id. Store (etcd) and MemStore (in memory)
// implement it; implementations are safe for concurrent use.
//
// Semantics every implementation keeps (cluster tests check both against
// one contract):
//   - every change bumps one store revision; reads return the revision
//     they saw, UpdateTopic fails with ErrTopicChanged when the topic was
//     modified after the revision it is given, watches resume after one;
//   - every write is fenced: it fails with ErrNotController unless the
//     Fence's election key still exists with that create revision;
//   - a host is live exactly while its registration lease lives; the
//     lease id is its broker epoch.
type MetadataStore interface {
	ProducerIDSource

	// GetTopic returns a topic and the revision it was last modified at;
	// errors wrap ErrUnknownTopic, ErrInvalidTopic or ErrCorruptMetadata.
	GetTopic(ctx context.Context, name string) (*messages.TopicMetadata, int64, error)
	// ListTopics returns every valid topic, by name, and the revision read.
	ListTopics(ctx context.Context) ([]*messages.TopicMetadata, int64, error)
	// ListHosts returns the live host registrations, by host id.
	ListHosts(ctx context.Context) ([]*messages.HostInfo, error)
	// ListHostsLocal is ListHosts that may be served by a local replica
	// while the store has no quorum (it may miss the latest changes).
	ListHostsLocal(ctx context.Context) ([]*messages.HostInfo, error)
	// HostNames returns every known host id → name binding.
	HostNames(ctx context.Context) (map[int32]string, error)
	// Snapshot reads all topics and hosts at one revision.
	Snapshot(ctx context.Context) (*Snapshot, error)

	// CreateTopic stores a new topic, fenced; errors wrap
	// ErrNotController, ErrTopicExists or a validation sentinel.
	CreateTopic(ctx context.Context, fence Fence, t *messages.TopicMetadata) error
	// UpdateTopic replaces a topic not modified after
	// expectedModRevision, fenced; errors wrap ErrNotController,
	// ErrUnknownTopic, ErrTopicChanged or a validation sentinel.
	UpdateTopic(ctx context.Context, fence Fence, t *messages.TopicMetadata, expectedModRevision int64) error
	// DeleteTopic removes a topic, fenced; errors wrap ErrNotController,
	// ErrUnknownTopic or ErrInvalidTopic.
	DeleteTopic(ctx context.Context, fence Fence, name string) error

	// WatchTopics streams the topic changes after fromRevision until ctx
	// ends (close) or the watch fails (a last event with Err, then close).
	WatchTopics(ctx context.Context, fromRevision int64) <-chan TopicEvent
	// WatchHosts streams the host registration changes after
	// fromRevision, as WatchTopics.
	WatchHosts(ctx context.Context, fromRevision int64) <-chan HostEvent
	// RevokeHostLease ends the registration whose broker epoch is epoch,
	// as if its lease had expired; a lease already gone is no error.
	RevokeHostLease(ctx context.Context, epoch int64) error

	// NewElection makes a controller candidate under a session lease of
	// ttl; the caller must Close it.
	NewElection(ctx context.Context, ttl time.Duration) (Election, error)
	// Controller returns the elected controller's campaign value and
	// Fence, or an error wrapping ErrNoController.
	Controller(ctx context.Context) (string, Fence, error)
	// Candidates returns the election's keys and values, oldest first
	// (the first is the controller).
	Candidates(ctx context.Context) (keys, values []string, err error)
	// EvictCandidate ends the session behind an election key (a crashed
	// incarnation's); a key already gone is no error.
	EvictCandidate(ctx context.Context, key string) error

	// ClusterID returns the cluster id (Kafka's cluster.id), generating
	// and storing it on the first call: create-if-absent, so concurrent
	// callers agree, and it never changes afterwards. A stored value that
	// is not 22 characters of base64url (16 bytes) is an error wrapping
	// ErrCorruptMetadata.
	ClusterID(ctx context.Context) (string, error)
}

// ProducerIDSource is the producer id counter ProducerIDAllocator takes
// blocks from.
type ProducerIDSource interface {
	// AllocateProducerIDs reserves n consecutive producer ids and returns
	// the first; concurrent callers never get overlapping ranges.
	AllocateProducerIDs(ctx context.Context, n int64) (int64, error)
}

// Election is one candidate for controller (Store.NewElection,
// MemStore.NewElection). Campaign and Resign must not run concurrently
// with each other; Done may be used from any goroutine, and Close may be
// called at any time (it aborts a pending Campaign).
type Election interface {
	// Campaign blocks until this candidate is the controller and returns
	// its Fence; it fails with ctx's error, or one wrapping ErrLeaseLost
	// when the session is lost, having withdrawn the candidacy.
	Campaign(ctx context.Context, value string) (Fence, error)
	// Done is closed when the session is lost (expired, revoked, closed):
	// from then on the candidate has no authority.
	Done() <-chan struct{}
	// TTL is the session lease's TTL.
	TTL() time.Duration
	// Resign gives up the controller role, keeping the session so the
	// candidate may Campaign again.
	Resign(ctx context.Context) error
	// Close ends the candidacy and the session (Done closes).
	// Idempotent.
	Close() error
}

// Compile-time checks: the etcd store implements the seams (memstore.go
// checks MemStore).
var (
	_ MetadataStore = (*Store)(nil)
	_ Election      = (*etcdElection)(nil)
)
