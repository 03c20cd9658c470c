// Package cluster is actorlog's metadata layer on etcd (DESIGN §5): the
// embedded etcd member each host runs (StartEtcd), the key layout
// (keys.go), the topic and host metadata with the controller's fenced
// writes and the watches that follow them (Store), the controller election
// whose epoch fences those writes (Election), host registration under a
// lease whose id is the broker epoch (Registration), and the pure helpers
// the controller needs: topic name and config validation, the mapping of
// topic configs to storage.Config, and Kafka's replica assignment.
//
// It holds no actors; the controller and broker actors use it. Correctness
// rests on etcd, never on protoactor membership: every metadata write is an
// etcd transaction guarded by the writer's controller epoch, and a host is
// alive exactly as long as its lease.
//
// The seams (store.go): the broker and controller actors see the metadata
// only through MetadataStore, and a controller candidacy through Election.
// Store implements both on etcd; MemStore (memstore.go) implements them in
// memory with the same semantics — revisions, ErrTopicChanged on a stale
// UpdateTopic, fenced writes failing with ErrNotController, watches from a
// revision, leases — plus controls for tests (ExpireHost, Compact,
// EndWatches, SetInterceptor). One contract test table runs against both.
//
// Threading: Store, MemStore, Etcd, Registration and the pure functions are
// safe for concurrent use; an Election's Campaign and Resign must not
// overlap (see Election). Tests start real members with the clustertest
// package, or use a MemStore.
package cluster
