// backend.go holds the seam between the listener and the rest of the host:
// the Backend interface the API handlers call, and the plain structs it
// answers with. The host implements it over its local actors (the broker's
// metadata cache, the replicas, the coordinators); tests implement it with a
// fake. Nothing here imports actors/*.

package kafka

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
)

// Backend is what the handlers need from the host. Every method may be
// called concurrently from many connections; each must return once ctx is
// done (the connection closed or the server is closing), and should bound
// its own actor requests with timeouts. A returned error is a local fault
// (an actor did not answer): the connection that asked is closed with a log
// line and the client reconnects and retries, as it would after a broker
// restart. Per-topic and per-partition failures are error codes in the
// returned structs, not errors.
type Backend interface {
	MetadataBackend
}

// MetadataBackend answers Metadata requests (API key 3).
type MetadataBackend interface {
	// Metadata returns the cluster as this host currently sees it: every
	// live host, the cluster id, the controller, and the topics q asks for
	// (all topics when q.AllTopics). It may return more topics than asked;
	// a topic asked for by name and absent from the answer is reported to
	// the client as UNKNOWN_TOPIC_OR_PARTITION. Leader epochs must never go
	// backwards between two answers of one host (clients fence stale
	// metadata by epoch).
	Metadata(ctx context.Context, q MetadataQuery) (*ClusterMetadata, error)
}

// MetadataQuery says which topics a Metadata request is about.
type MetadataQuery struct {
	// AllTopics asks for every topic. It is set for a request that lists
	// all topics and for one that names topics by id (ids are resolved
	// against the full list).
	AllTopics bool
	// Topics are the names asked for when AllTopics is false (may be
	// empty: the client wants only the hosts). Deduplicated, in request
	// order.
	Topics []string
	// AllowAutoCreate is the request's allow_auto_topic_creation (v4+;
	// true before v4). The handler acts on it (Config.Topics.AutoCreate,
	// through the AdminBackend); the Backend need not.
	AllowAutoCreate bool
}

// ClusterMetadata is the cluster a Metadata response describes.
type ClusterMetadata struct {
	// ClusterID is the cluster's id (Kafka's cluster.id), generated once
	// and kept in the metadata store. Empty is sent as null.
	ClusterID string
	// ControllerID is the host id of the active controller, -1 when none
	// is known.
	ControllerID int32
	// Brokers are the live hosts that serve Kafka, each with its
	// advertised Kafka address. Node id = host id.
	Brokers []Broker
	// Topics are the topics the query asked for (or more).
	Topics []Topic
}

// Broker is one host as a Kafka broker.
type Broker struct {
	// NodeID is the host id.
	NodeID int32
	// Host and Port are the host's advertised Kafka address
	// (--kafka-advertise).
	Host string
	Port int32
	// Rack is the host's rack; empty is sent as null.
	Rack string
}

// Topic is one topic in a Metadata answer.
type Topic struct {
	// Name is the topic's name.
	Name string
	// ID is the topic's id (zero when unknown); see ParseTopicID.
	ID TopicID
	// ErrorCode is a Kafka error code for the whole topic (0 for none),
	// e.g. messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION for a
	// topic being deleted.
	ErrorCode int16
	// Internal marks an internal topic. __consumer_offsets is always
	// reported internal, whatever this says.
	Internal bool
	// Partitions in partition order.
	Partitions []Partition
}

// Partition is one partition in a Metadata answer.
type Partition struct {
	// Partition is the partition index, from 0.
	Partition int32
	// ErrorCode is a Kafka error code for this partition (0 for none).
	// A partition with no leader (Leader < 0) and no error code is
	// reported LEADER_NOT_AVAILABLE, as Kafka does.
	ErrorCode int16
	// Leader is the leader's host id, -1 when the partition has none.
	Leader int32
	// LeaderEpoch is the partition's leader epoch (sent from v7).
	LeaderEpoch int32
	// Replicas are the replicas' host ids in preference order.
	Replicas []int32
	// ISR are the in-sync replicas' host ids, leader included.
	ISR []int32
	// Offline are replicas that are assigned but not available (sent from
	// v5).
	Offline []int32
}

// TopicID is a Kafka topic id (a Uuid; kmsg's [16]byte).
type TopicID [16]byte

// IsZero reports whether id is the zero id (none).
func (id TopicID) IsZero() bool { return id == TopicID{} }

// String renders id as Kafka prints Uuids: unpadded URL-safe base64.
func (id TopicID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// ErrBadTopicID is wrapped by ParseTopicID's errors.
var ErrBadTopicID = errors.New("kafka: malformed topic id")

// ParseTopicID parses a topic id as the metadata store keeps it (and Kafka
// prints it): 16 bytes in unpadded URL-safe base64, 22 characters. The
// empty string is the zero id.
func ParseTopicID(s string) (TopicID, error) {
	var id TopicID
	if s == "" {
		return id, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return id, fmt.Errorf("%w %q: %w", ErrBadTopicID, s, err)
	}
	if len(b) != len(id) {
		return id, fmt.Errorf("%w %q: %d bytes, want %d", ErrBadTopicID, s, len(b), len(id))
	}
	copy(id[:], b)
	return id, nil
}
