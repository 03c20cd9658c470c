// Package kafka is the Kafka wire-protocol listener of a host (DESIGN §9,
// issue 13): existing Kafka clients (kcat/librdkafka, franz-go, sarama,
// kafka-go, the Java clients) connect to it as to a Kafka broker. It talks
// only to its backends, which the host implements over its local actors
// (broker, replicas, coordinators): Backend (Metadata) and, optionally,
// DataBackend (Produce, Fetch, ListOffsets, OffsetForLeaderEpoch,
// InitProducerId), AdminBackend (the topic admin APIs) and GroupBackend
// (the consumer-group APIs). Clients route themselves from Metadata and
// FindCoordinator, as with Kafka.
// Node id = host id.
//
// # Layout
//
// After franz-go's kfake, one file per API, each starting with a protocol
// summary (versions, behaviour, error codes) and registering, from its
// init, its key, the versions it serves and advertises, its handler and
// the backend it needs in one table (api.go). Each Server snapshots the
// part of the table its Config enables (an API whose backend is nil is
// neither advertised nor served); its ApiVersions answer is built from
// that snapshot and every request is vetted against it, so what is
// advertised cannot drift from what is served:
//
//	api.go                  the table, the handler signature and its replies
//	apiversions.go          ApiVersions (18)
//	metadata.go             Metadata (3), a pure function of request and Backend answer
//	produce.go              Produce (0): checks, in-order appends, one answer
//	fetch.go                Fetch (1): max_bytes across partitions, the long poll
//	listoffsets.go          ListOffsets (2)
//	offsetforleaderepoch.go OffsetForLeaderEpoch (23)
//	initproducerid.go       InitProducerId (22), idempotent only
//	fanout.go               asking the backend about many partitions at once
//	backend.go              the Backend interface and the plain structs it returns
//	databackend.go          the DataBackend interface (per-partition calls, the watch)
//	findcoordinator.go      FindCoordinator (10): groups; transactional ids refused
//	joingroup.go            JoinGroup (11): async, the v0-3 / v5 / v9 gates
//	syncgroup.go            SyncGroup (14): a valid empty consumer assignment
//	heartbeat.go            Heartbeat (12)
//	leavegroup.go           LeaveGroup (13): one member (v0-2) or several
//	offsetcommit.go         OffsetCommit (8)
//	offsetfetch.go          OffsetFetch (9): one group, or several from v8
//	describegroups.go       DescribeGroups (15)
//	listgroups.go           ListGroups (16): this host's coordinators' groups
//	deletegroups.go         DeleteGroups (42)
//	groupbackend.go         the GroupBackend interface (native group messages)
//	createtopics.go         CreateTopics (19): per-topic errors, -1 defaults, validate_only
//	deletetopics.go         DeleteTopics (20), by name
//	createpartitions.go     CreatePartitions (37)
//	describeconfigs.go      DescribeConfigs (32): every topic config, its default and source
//	alterconfigs.go         AlterConfigs (33): replace a topic's overrides
//	incrementalalterconfigs.go IncrementalAlterConfigs (44): SET / DELETE ops
//	describecluster.go      DescribeCluster (60), from the Metadata backend
//	adminbackend.go         the AdminBackend interface (one call per topic), PartitionAdminBackend
//	electleaders.go         ElectLeaders (43): preferred elections; unclean refused
//	alterpartitionreassignments.go AlterPartitionReassignments (45): all or nothing per topic
//	listpartitionreassignments.go  ListPartitionReassignments (46)
//	frame.go                framing and request headers around kmsg's codecs
//	conn.go                 one connection: reader, writer, ordering, limits
//	server.go               accept loop, Close
//	config.go               Config: backends, limits with Kafka's names and defaults
//
// Each handler keeps its decisions in pure functions (planProduce,
// checkProducedBatch, planFetch, fetchResponse, planListOffsets, ...) that
// the tests drive as tables; the handler is the shell that asks the
// backend and writes the answer.
//
// Every body is decoded and encoded by franz-go's kmsg (RequestForKey,
// SetVersion, ReadFrom, AppendTo); no codec is written by hand. Request
// headers are v1, or v2 (with a tag section) for flexible versions;
// response headers carry a tag section for flexible responses, except
// ApiVersions, whose response header is always v0.
//
// # Ordering
//
// Each connection has one reader goroutine and one writer goroutine. The
// reader decodes requests and starts each handler on itself, in request
// order, so whatever a handler starts before returning (messages to local
// actors) is ordered like the requests: Produce starts its appends there
// (DataBackend.Append must not block), so a connection's pipelined
// produces reach each partition in request order. A handler may answer
// later (it returns c.async(...), run on its own goroutine); the writer
// writes the responses strictly in request order, each with its
// correlation id, as pipelining clients require. An acks=0 Produce writes
// nothing, but the writer still waits for its appends before writing the
// next response, and closes the connection if one failed (as Kafka does).
//
// # The long poll
//
// A Fetch that finds less than min_bytes does not poll: it asks
// DataBackend.WatchHighWatermarks to call it back once any of its
// partitions' high watermark passes what it read (or the partition
// changes), reads again when called, and answers when enough has arrived
// or at max_wait. The watch lives as long as a context that ends at
// max_wait or when the fetch is answered or its connection closes; the
// backend forgets it then.
//
// # Limits and refused input (DESIGN §10)
//
//   - Config.MaxRequestBytes (socket.request.max.bytes, 100 MiB): a longer
//     frame closes the connection. A frame's buffer grows as its bytes
//     arrive, so a length alone allocates nothing large.
//   - Config.IdleTimeout (connections.max.idle.ms, 10 min): a connection
//     with nothing in flight that sends nothing for this long is closed; so
//     is one whose peer does not take a response for this long.
//   - Config.MaxInFlight (8): requests read and not yet answered per
//     connection. Past it the connection is not read until a response is
//     written, so TCP pushes back on a pipelining client and one connection
//     cannot queue unbounded work: its memory is at most MaxInFlight frames.
//   - Connection counts (max.connections, max.connections.per.ip) are the
//     listener's business: the host passes Serve a cluster/netlimit
//     listener. Accept errors for lack of descriptors are retried after a
//     pause, as net/http does.
//
// As Kafka does, these close the connection: a frame length over the limit,
// negative or too short for a header; a connection ending inside a frame; a
// request header that does not parse; an API key not in the table; a
// version outside the advertised range (except ApiVersions, answered v0
// UNSUPPORTED_VERSION per KIP-511); a body kmsg cannot decode. A version
// advertised but not served is answered by the API's own UNSUPPORTED_VERSION
// response (how Produce v0-2 are refused, as Kafka 4 does). A handler
// that panics or fails (a Backend error: a local fault) closes its
// connection after the earlier responses are written. Each such close is
// logged at warn with a "reason" field, at most once per reason per
// Config.LogEvery (netlimit.LogLimiter); the server keeps serving every
// other connection.
//
// # Served so far
//
// ApiVersions 0-4 and Metadata 0-12 (UNKNOWN_TOPIC_OR_PARTITION for
// unknown names unless Config.Topics.AutoCreate creates them, through the
// AdminBackend; __consumer_offsets is internal; no feature flags in
// ApiVersions). With a DataBackend: Produce
// advertised 0-12 and served 3-12, Fetch 4-12 (sessionless: session id 0),
// ListOffsets 1-7, OffsetForLeaderEpoch 2-4, InitProducerId 0-5
// (idempotent only; a transactional id, in InitProducerId or Produce, is
// refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED). The host wires
// every backend (host/kafka*.go).
// Transactions, KIP-848, telemetry, share groups and SASL are not
// advertised. librdkafka 2.0 enables LZ4 only when FindCoordinator is
// advertised, so without a GroupBackend it sends lz4-configured batches
// uncompressed.
//
// With a GroupBackend (the classic group protocol over the host's
// coordinators): FindCoordinator 0-5 (key type group; a transactional id
// is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED), JoinGroup 0-9
// (answered when the rebalance's join phase ends, without holding the
// connection's reader; MEMBER_ID_REQUIRED only from v4, static members
// from v5, SkipAssignment from v9), SyncGroup 0-5, Heartbeat 0-4,
// LeaveGroup 0-5, OffsetCommit 2-9, OffsetFetch 1-9 (several groups from
// v8), DescribeGroups 0-5, ListGroups 0-5, DeleteGroups 0-2. Protocol
// types and assignor names pass through, so Kafka clients and actorlog's
// consumer share groups.
//
// With an AdminBackend: CreateTopics 0-7, DeleteTopics 0-5 (v6, by topic
// id, is not advertised), CreatePartitions 0-3, DescribeConfigs 0-4
// (topic resources; broker resources answer the topic settings of
// Config.Topics),
// AlterConfigs 0-2 and IncrementalAlterConfigs 0-1 (topics only; broker
// resources are refused with INVALID_REQUEST), DescribeCluster 0-1.
// Manual replica assignments are refused with INVALID_REQUEST.
//
// With a PartitionAdminBackend (the controller's preferred-leader election
// and partition reassignment): ElectLeaders 0-2 (PREFERRED only; UNCLEAN
// is refused with INVALID_REQUEST), AlterPartitionReassignments 0 (the
// replication factor cannot change) and ListPartitionReassignments 0.
//
// # Threading
//
// A Server is safe for concurrent use; Serve may run on several listeners.
// Backend, DataBackend and GroupBackend methods are called concurrently
// from many connections and must return once their context is done
// (GroupBackend.JoinGroup may wait for a whole rebalance: it runs off the
// connection's reader);
// DataBackend.Append and WatchHighWatermarks must not block at all.
package kafka
