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
// Threading: Store, Etcd, Registration and the pure functions are safe for
// concurrent use; an Election's Campaign and Resign must not overlap (see
// Election). Tests start real members with the clustertest package.
package cluster
