// metadata.go: Metadata (key 3), served and advertised v0-12.
//
// Behaviour:
//   - Brokers are the Backend's live hosts with their advertised Kafka
//     addresses (node id = host id); cluster id (v2+) and controller id
//     (v1+) come from the Backend.
//   - Topics: all of them for a null list (v1+) or an empty one (v0), none
//     for an empty list (v1+), else those named, deduplicated in request
//     order. A name the Backend does not know is UNKNOWN_TOPIC_OR_PARTITION,
//     unless it is auto-created (below). v12 may name a topic by id: an
//     unknown id is
//     UNKNOWN_TOPIC_ID; a topic with neither a name nor an id, or named by
//     id before v12, is INVALID_REQUEST.
//   - Auto-creation (Config.Topics.AutoCreate, Kafka's
//     auto.create.topics.enable): a request that allows it (v0-3 always,
//     v4+ when allow_auto_topic_creation is set) naming a topic the
//     Backend does not know has it created through
//     AdminBackend.CreateTopic with the host's defaults (-1: num.partitions,
//     default.replication.factor), as Kafka does, and answers it
//     LEADER_NOT_AVAILABLE (the client asks again and finds it; a topic
//     created meanwhile by another request counts as created). An invalid
//     name is INVALID_TOPIC_EXCEPTION; names starting with "__" (internal
//     topics, __consumer_offsets among them) are never auto-created and
//     stay UNKNOWN_TOPIC_OR_PARTITION; a refused creation answers the
//     refusal's code (e.g. INVALID_REPLICATION_FACTOR when there are
//     fewer live hosts than default.replication.factor).
//   - __consumer_offsets is internal (v1+).
//   - A partition without a leader, or whose leader is not a live broker,
//     has leader -1 and LEADER_NOT_AVAILABLE. For v0 only, replicas and ISR
//     are cut to live brokers and REPLICA_NOT_AVAILABLE marks a cut, as
//     Kafka does; later versions list them all and offline replicas (v5+).
//   - Leader epochs (v7+) pass through: the Backend keeps them monotonic.
//   - Authorized operations (topics v8+, cluster v8-10) are every
//     operation when asked for, as in Kafka without an authorizer; with
//     Config.Authorizer, what the principal may do, and topics it may not
//     describe are hidden or refused (authorize.go).
//   - A Backend error closes the connection (a local fault; the client
//     reconnects and asks again).
//
// Error codes: UNKNOWN_TOPIC_OR_PARTITION (3), LEADER_NOT_AVAILABLE (5),
// REPLICA_NOT_AVAILABLE (9), INVALID_TOPIC_EXCEPTION (17),
// INVALID_REQUEST (42), UNKNOWN_TOPIC_ID (100), whatever the Backend
// reports per topic or partition, and what an auto-creation is refused
// with (INVALID_REPLICATION_FACTOR (38), POLICY_VIOLATION (44), ...).

package kafka

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/messages"
)

func init() {
	register(api{key: 3, servedMin: 0, servedMax: 12, advertisedMin: 0, advertisedMax: 12, handle: handleMetadata})
}

func handleMetadata(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.MetadataRequest)
	q := metadataQuery(req)
	if r.noAutoCreate {
		q.AllowAutoCreate = false
	}
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		md, err := c.srv.cfg.Backend.Metadata(ctx, q)
		if err != nil {
			return nil, err
		}
		if err := c.autoCreateTopics(ctx, q, md); err != nil {
			return nil, err
		}
		return metadataResponse(req, md), nil
	})
}

// allTopics reports whether req asks for every topic.
func allTopics(req *kmsg.MetadataRequest) bool {
	return req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
}

// metadataQuery is what req asks the Backend for.
func metadataQuery(req *kmsg.MetadataRequest) MetadataQuery {
	q := MetadataQuery{AllTopics: allTopics(req), AllowAutoCreate: req.Version < 4 || req.AllowAutoTopicCreation}
	if q.AllTopics {
		return q
	}
	seen := map[string]bool{}
	for _, t := range req.Topics {
		if req.Version >= 12 && t.TopicID != (TopicID{}) {
			q.AllTopics, q.Topics = true, nil // ids resolve against every topic
			return q
		}
		if t.Topic != nil && !seen[*t.Topic] {
			seen[*t.Topic] = true
			q.Topics = append(q.Topics, *t.Topic)
		}
	}
	return q
}

// Authorized-operation bit fields (Kafka's Utils.to32BitField of the
// operations a resource type supports), reported when asked for: with no
// authorizer every supported operation is allowed.
var (
	topicOperations = opBits(kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate,
		kmsg.ACLOperationDelete, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs)
	clusterOperations = opBits(kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite,
		kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe)
)

func opBits(ops ...kmsg.ACLOperation) int32 {
	var b int32
	for _, op := range ops {
		b |= 1 << uint(op)
	}
	return b
}

// metadataResponse answers req from md. Pure: no I/O.
func metadataResponse(req *kmsg.MetadataRequest, md *ClusterMetadata) *kmsg.MetadataResponse {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	live := make(map[int32]bool, len(md.Brokers))
	for _, b := range md.Brokers {
		live[b.NodeID] = true
		rb := kmsg.NewMetadataResponseBroker()
		rb.NodeID, rb.Host, rb.Port = b.NodeID, b.Host, b.Port
		if b.Rack != "" {
			rb.Rack = kmsg.StringPtr(b.Rack)
		}
		resp.Brokers = append(resp.Brokers, rb)
	}
	if md.ClusterID != "" {
		resp.ClusterID = kmsg.StringPtr(md.ClusterID)
	}
	resp.ControllerID = md.ControllerID
	if req.IncludeClusterAuthorizedOperations && req.Version >= 8 && req.Version <= 10 {
		resp.AuthorizedOperations = clusterOperations
	}

	byName := make(map[string]*Topic, len(md.Topics))
	byID := make(map[TopicID]*Topic, len(md.Topics))
	for i := range md.Topics {
		t := &md.Topics[i]
		byName[t.Name] = t
		if !t.ID.IsZero() {
			byID[t.ID] = t
		}
	}
	add := func(t *Topic) {
		resp.Topics = append(resp.Topics, topicMetadata(req, t, live))
	}
	errTopic := func(name *string, id TopicID, code int16) {
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic, rt.TopicID, rt.ErrorCode = name, id, code
		resp.Topics = append(resp.Topics, rt)
	}

	if allTopics(req) {
		names := make([]string, 0, len(byName))
		for name := range byName {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			add(byName[name])
		}
		return resp
	}
	seen := map[string]bool{}
	for _, rt := range req.Topics {
		var t *Topic
		switch {
		case rt.TopicID != (TopicID{}) && req.Version >= 12:
			if t = byID[rt.TopicID]; t == nil {
				errTopic(nil, rt.TopicID, kerr.UnknownTopicID.Code)
				continue
			}
		case rt.TopicID != (TopicID{}) || rt.Topic == nil:
			errTopic(rt.Topic, rt.TopicID, kerr.InvalidRequest.Code)
			continue
		default:
			if t = byName[*rt.Topic]; t == nil {
				if !seen[*rt.Topic] {
					seen[*rt.Topic] = true
					errTopic(rt.Topic, TopicID{}, kerr.UnknownTopicOrPartition.Code)
				}
				continue
			}
		}
		if !seen[t.Name] {
			seen[t.Name] = true
			add(t)
		}
	}
	return resp
}

// topicMetadata is t as req's version reports it; live are the brokers'
// node ids.
func topicMetadata(req *kmsg.MetadataRequest, t *Topic, live map[int32]bool) kmsg.MetadataResponseTopic {
	rt := kmsg.NewMetadataResponseTopic()
	rt.Topic = kmsg.StringPtr(t.Name)
	rt.TopicID = t.ID
	rt.ErrorCode = t.ErrorCode
	rt.IsInternal = t.Internal || t.Name == messages.OffsetsTopic
	if req.IncludeTopicAuthorizedOperations && req.Version >= 8 {
		rt.AuthorizedOperations = topicOperations
	}
	for _, p := range t.Partitions {
		rp := kmsg.NewMetadataResponseTopicPartition()
		rp.Partition = p.Partition
		rp.ErrorCode = p.ErrorCode
		rp.Leader = p.Leader
		rp.LeaderEpoch = p.LeaderEpoch
		rp.Replicas = p.Replicas
		rp.ISR = p.ISR
		rp.OfflineReplicas = p.Offline
		if rp.Leader < 0 || !live[rp.Leader] {
			rp.Leader = -1
			if rp.ErrorCode == 0 {
				rp.ErrorCode = kerr.LeaderNotAvailable.Code
			}
		}
		if req.Version == 0 {
			replicas, isr := liveOnly(rp.Replicas, live), liveOnly(rp.ISR, live)
			if (len(replicas) < len(rp.Replicas) || len(isr) < len(rp.ISR)) && rp.ErrorCode == 0 {
				rp.ErrorCode = kerr.ReplicaNotAvailable.Code
			}
			rp.Replicas, rp.ISR = replicas, isr
		}
		rt.Partitions = append(rt.Partitions, rp)
	}
	return rt
}

// liveOnly returns the ids of ids that are live, in order.
func liveOnly(ids []int32, live map[int32]bool) []int32 {
	out := make([]int32, 0, len(ids))
	for _, id := range ids {
		if live[id] {
			out = append(out, id)
		}
	}
	return out
}

// autoCreateTopics creates, when the server auto-creates topics and q
// allows it, the topics q names that md lacks, and adds each to md as a
// topic without partitions whose error code is the creation's outcome
// (autoCreateCode). A Go error from the AdminBackend is a local fault.
func (c *conn) autoCreateTopics(ctx context.Context, q MetadataQuery, md *ClusterMetadata) error {
	if !c.srv.cfg.Topics.AutoCreate || !q.AllowAutoCreate || q.AllTopics {
		return nil
	}
	for _, name := range missingTopics(q, md) {
		code, msg := autoCreateRefusal(name)
		if code == 0 {
			res, err := c.srv.cfg.Admin.CreateTopic(ctx, CreateTopicQuery{Name: name, Partitions: -1, ReplicationFactor: -1})
			if err != nil {
				return fmt.Errorf("auto-create topic %q: %w", name, err)
			}
			code, msg = autoCreateCode(res.ErrorCode), res.ErrorMessage
			log := c.srv.log.WithField("topic", name)
			if res.ErrorCode == 0 {
				log.WithFields(logrus.Fields{"partitions": res.Partitions, "replication_factor": res.ReplicationFactor}).Info("topic auto-created for a Metadata request")
			} else if code != kerr.LeaderNotAvailable.Code {
				log.WithFields(logrus.Fields{"code": res.ErrorCode, "reason": msg}).Warn("topic auto-creation refused")
			}
		}
		md.Topics = append(md.Topics, Topic{Name: name, ErrorCode: code})
	}
	return nil
}

// missingTopics are the names q asks for that md does not hold, in q's
// order. Pure.
func missingTopics(q MetadataQuery, md *ClusterMetadata) []string {
	have := make(map[string]bool, len(md.Topics))
	for _, t := range md.Topics {
		have[t.Name] = true
	}
	var out []string
	for _, name := range q.Topics {
		if !have[name] {
			out = append(out, name)
		}
	}
	return out
}

// autoCreateRefusal is the code (0: none) a topic name gets without
// asking the backend: INVALID_TOPIC_EXCEPTION for a name Kafka refuses,
// UNKNOWN_TOPIC_OR_PARTITION for an internal name ("__" prefix), which is
// never auto-created. Pure.
func autoCreateRefusal(name string) (int16, string) {
	switch {
	case !validTopicName(name):
		return kerr.InvalidTopicException.Code, fmt.Sprintf("invalid topic name %q", name)
	case strings.HasPrefix(name, "__"):
		return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("internal topic %q is not auto-created", name)
	}
	return 0, ""
}

// autoCreateCode is the Metadata error code of a topic whose
// auto-creation the backend answered with code: LEADER_NOT_AVAILABLE for
// a topic created (now, or by someone else meanwhile), whose leaders are
// not known yet, else the refusal. Pure.
func autoCreateCode(code int16) int16 {
	if code == 0 || code == kerr.TopicAlreadyExists.Code {
		return kerr.LeaderNotAvailable.Code
	}
	return code
}

// validTopicName reports whether Kafka accepts name as a topic name: 1 to
// 249 characters of [a-zA-Z0-9._-], neither "." nor "..". Pure.
func validTopicName(name string) bool {
	if name == "" || len(name) > 249 || name == "." || name == ".." {
		return false
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
		default:
			return false
		}
	}
	return true
}
