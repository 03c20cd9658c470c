// authorize.go: authorization of every Kafka request (issue 16), in one
// place. With Config.Authorizer set, each request passes its API's gate
// before its handler runs; the gates table below has one gate per API
// key, and NewServer refuses a configuration that would serve an API
// without one, so no API can be served unchecked.
//
// A gate decides as Kafka's KafkaApis does for that request type:
//
//	Produce                 WRITE on each topic (TOPIC_AUTHORIZATION_FAILED per
//	                        partition); WRITE on the transactional id if any
//	Fetch                   READ on each topic; a replica fetch (replica id >= 0)
//	                        CLUSTER_ACTION on the cluster
//	ListOffsets,            DESCRIBE on each topic; a replica's OffsetForLeaderEpoch
//	OffsetForLeaderEpoch    CLUSTER_ACTION on the cluster
//	Metadata                DESCRIBE on each topic: a listing of every topic keeps
//	                        the describable ones, a named topic without it is
//	                        TOPIC_AUTHORIZATION_FAILED; auto-creation needs CREATE
//	                        on the cluster or the topic
//	OffsetCommit            READ on the group, READ on each topic
//	OffsetFetch             DESCRIBE on the group, DESCRIBE on each topic (a
//	                        listing of every topic keeps the describable ones)
//	FindCoordinator         DESCRIBE on the group (or transactional id)
//	JoinGroup, SyncGroup,   READ on the group
//	Heartbeat, LeaveGroup
//	DescribeGroups          DESCRIBE on each group; DeleteGroups DELETE on each
//	ListGroups              DESCRIBE on the cluster, else the describable groups
//	CreateTopics            CREATE on the cluster or on each topic
//	DeleteTopics            DELETE on each topic; CreatePartitions ALTER on each
//	DescribeConfigs         DESCRIBE_CONFIGS, AlterConfigs and
//	                        IncrementalAlterConfigs ALTER_CONFIGS, on each topic
//	                        or, for a broker, on the cluster
//	InitProducerId          WRITE on the transactional id; without one
//	                        IDEMPOTENT_WRITE on the cluster or WRITE on any topic
//	ElectLeaders, AlterPartitionReassignments, CreateAcls, DeleteAcls,
//	AlterUserScramCredentials
//	                        ALTER on the cluster
//	ListPartitionReassignments, DescribeAcls, DescribeUserScramCredentials
//	                        DESCRIBE on the cluster
//	ApiVersions, SaslHandshake, SaslAuthenticate, DescribeCluster
//	                        open (as in Kafka)
//
// A gate either answers the whole request itself (the handler does not
// run), or narrows the request to its authorized parts and returns a fix
// that adds the refused parts, with their error codes, to the handler's
// response (or drops what the principal may not see) before it is
// written. Authorized-operation fields (Metadata, DescribeCluster,
// DescribeGroups) report what the principal may do.
//
// The principal is the connection's (PrincipalFrom): User:<name> after
// SASL, the client certificate's, else User:ANONYMOUS. A refusal is
// logged once per principal, operation and resource per
// Config.AuditEvery, and counted through Config.OnDenied.

package kafka

import (
	"fmt"
	"math"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/internal/acl"
)

// AnonymousPrincipal is the principal of a connection that authenticated
// neither by SASL nor by a client certificate, as in Kafka.
const AnonymousPrincipal = "User:ANONYMOUS"

// DefaultAuditEvery is how often a refusal of one principal, operation
// and resource is logged when Config.AuditEvery is zero.
const DefaultAuditEvery = time.Minute

// Authorizer decides requests; *acl.Authorizer is one.
type Authorizer interface {
	// Authorize decides whether principal, connected from clientHost,
	// may do op on the resource res named name.
	Authorize(principal, clientHost string, op acl.Operation, res acl.ResourceType, name string) acl.Decision
	// AuthorizeByResourceType reports whether principal may do op on at
	// least one resource of type res (KIP-679).
	AuthorizeByResourceType(principal, clientHost string, op acl.Operation, res acl.ResourceType) bool
}

// verdict is what a gate decides.
type verdict struct {
	// deny answers the whole request; the handler does not run.
	deny kmsg.Response
	// closeConn closes the connection instead (a refused acks=0 Produce,
	// which has no response to carry the error, as Kafka does).
	closeConn error
	// fix, when set, completes the handler's response: it adds the
	// refused parts and drops what the principal may not see.
	fix func(kmsg.Response)
}

// gate authorizes one request; it may narrow r.kreq to its authorized
// parts. It runs on the connection's reader goroutine.
type gate func(g *guard, r *request) verdict

// open is the gate of the APIs anyone may call.
func open(*guard, *request) verdict { return verdict{} }

// gates holds every API's gate, by key.
var gates = map[int16]gate{
	apiVersionsKey: open, saslHandshakeKey: open, saslAuthenticateKey: open,
	0: gateProduce, 1: gateFetch, 2: gateListOffsets, 3: gateMetadata,
	8: gateOffsetCommit, 9: gateOffsetFetch, 10: gateFindCoordinator,
	11: groupGate(acl.OpRead), 12: groupGate(acl.OpRead), 13: groupGate(acl.OpRead), 14: groupGate(acl.OpRead),
	15: gateDescribeGroups, 16: gateListGroups,
	19: gateCreateTopics, 20: gateDeleteTopics, 22: gateInitProducerID, 23: gateOffsetForLeaderEpoch,
	29: clusterGate(acl.OpDescribe), 30: clusterGate(acl.OpAlter), 31: clusterGate(acl.OpAlter),
	32: configsGate(acl.OpDescribeConfigs), 33: configsGate(acl.OpAlterConfigs), 44: configsGate(acl.OpAlterConfigs),
	37: gateCreatePartitions, 42: gateDeleteGroups,
	43: clusterGate(acl.OpAlter), 45: clusterGate(acl.OpAlter), 46: clusterGate(acl.OpDescribe),
	50: clusterGate(acl.OpDescribe), 51: clusterGate(acl.OpAlter),
	60: gateDescribeCluster,
}

// checkGates reports an API of t without a gate.
func checkGates(t *table) error {
	for key, a := range t.byKey {
		if gates[key] == nil {
			return fmt.Errorf("kafka: %s (key %d) has no authorization gate (authorize.go)", a.name, key)
		}
	}
	return nil
}

// guard is one request's authorization context.
type guard struct {
	srv       *Server
	az        Authorizer
	principal string
	host      string
}

// newGuard returns the guard of c's next request.
func (c *conn) newGuard() *guard {
	g := &guard{srv: c.srv, az: c.srv.cfg.Authorizer, principal: AnonymousPrincipal, host: c.remote}
	if p := c.principal.Load(); p != nil {
		g.principal = p.String()
	}
	if h, _, err := net.SplitHostPort(c.remote); err == nil {
		g.host = h
	}
	return g
}

// can decides op on the resource, logging and counting a refusal.
func (g *guard) can(op acl.Operation, res acl.ResourceType, name string) bool {
	d := g.az.Authorize(g.principal, g.host, op, res, name)
	if !d.Allowed {
		g.srv.audit.Denied(g.principal, g.host, op, res, name, d.Reason)
	}
	return d.Allowed
}

// sees decides op on the resource without logging: for filtering what a
// listing shows, as Kafka does (a listing is no refusal).
func (g *guard) sees(op acl.Operation, res acl.ResourceType, name string) bool {
	return g.az.Authorize(g.principal, g.host, op, res, name).Allowed
}

func (g *guard) canTopic(op acl.Operation, name string) bool {
	return g.can(op, acl.ResourceTopic, name)
}
func (g *guard) canGroup(op acl.Operation, name string) bool {
	return g.can(op, acl.ResourceGroup, name)
}
func (g *guard) canCluster(op acl.Operation) bool {
	return g.can(op, acl.ResourceCluster, acl.ClusterName)
}

// operations returns the bit field of ops the principal may do on the
// resource (Kafka's authorized_operations).
func (g *guard) operations(res acl.ResourceType, name string, ops ...acl.Operation) int32 {
	var b int32
	for _, op := range ops {
		if g.sees(op, res, name) {
			b |= 1 << uint(op)
		}
	}
	return b
}

var (
	topicOps   = []acl.Operation{acl.OpRead, acl.OpWrite, acl.OpCreate, acl.OpDelete, acl.OpAlter, acl.OpDescribe, acl.OpDescribeConfigs, acl.OpAlterConfigs}
	clusterOps = []acl.Operation{acl.OpCreate, acl.OpClusterAction, acl.OpDescribeConfigs, acl.OpAlterConfigs, acl.OpIdempotentWrite, acl.OpAlter, acl.OpDescribe}
	groupOps   = []acl.Operation{acl.OpRead, acl.OpDescribe, acl.OpDelete}
)

// authorize runs r's gate (an authorizer is configured). It returns the
// reply when the gate answers the request itself.
func (c *conn) authorize(r *request) (fix func(kmsg.Response), rep *reply) {
	v := gates[r.key](c.newGuard(), r)
	switch {
	case v.closeConn != nil:
		f := failed(reasonAuthorization, v.closeConn)
		return nil, &f
	case v.deny != nil:
		f := respond(v.deny)
		return nil, &f
	}
	return v.fix, nil
}

// denyAll answers the request with an empty response completed by fix:
// every part of it was refused.
func denyAll(r *request, fix func(kmsg.Response)) verdict {
	resp := r.kreq.ResponseKind()
	fix(resp)
	return verdict{deny: resp}
}

// narrowed is the verdict after a gate kept kept of total parts: nothing
// refused, everything refused, or some.
func narrowed(r *request, kept, total int, fix func(kmsg.Response)) verdict {
	switch kept {
	case total:
		return verdict{}
	case 0:
		return denyAll(r, fix)
	}
	return verdict{fix: fix}
}

// keep splits s into the elements ok accepts and the others.
func keep[T any](s []T, ok func(T) bool) (kept, refused []T) {
	for _, e := range s {
		if ok(e) {
			kept = append(kept, e)
		} else {
			refused = append(refused, e)
		}
	}
	return kept, refused
}

var (
	errTopicAuth   = kerr.TopicAuthorizationFailed.Code
	errGroupAuth   = kerr.GroupAuthorizationFailed.Code
	errClusterAuth = kerr.ClusterAuthorizationFailed.Code
	errTxnAuth     = kerr.TransactionalIDAuthorizationFailed.Code
)

func gateProduce(g *guard, r *request) verdict {
	req := r.kreq.(*kmsg.ProduceRequest)
	code := errTopicAuth
	var kept, refused []kmsg.ProduceRequestTopic
	if req.TransactionID != nil && !g.can(acl.OpWrite, acl.ResourceTransactionalID, *req.TransactionID) {
		code, refused = errTxnAuth, req.Topics
	} else {
		kept, refused = keep(req.Topics, func(t kmsg.ProduceRequestTopic) bool { return g.canTopic(acl.OpWrite, t.Topic) })
	}
	if len(refused) > 0 && req.Acks == 0 {
		return verdict{closeConn: fmt.Errorf("%s may not write to topic %s (acks=0: closing the connection)", g.principal, refused[0].Topic)}
	}
	req.Topics = kept
	return narrowed(r, len(kept), len(kept)+len(refused), func(resp kmsg.Response) {
		pr := resp.(*kmsg.ProduceResponse)
		for _, t := range refused {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			pr.Topics = append(pr.Topics, rt)
		}
	})
}

func gateFetch(g *guard, r *request) verdict {
	req := r.kreq.(*kmsg.FetchRequest)
	var kept, refused []kmsg.FetchRequestTopic
	if req.ReplicaID >= 0 && !g.canCluster(acl.OpClusterAction) {
		refused = req.Topics
	} else {
		kept, refused = keep(req.Topics, func(t kmsg.FetchRequestTopic) bool { return g.canTopic(acl.OpRead, t.Topic) })
	}
	req.Topics = kept
	return narrowed(r, len(kept), len(kept)+len(refused), func(resp kmsg.Response) {
		fr := resp.(*kmsg.FetchResponse)
		for _, t := range refused {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, errTopicAuth
				rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
				rp.RecordBatches = []byte{} // librdkafka reads null as a bad size
				rt.Partitions = append(rt.Partitions, rp)
			}
			fr.Topics = append(fr.Topics, rt)
		}
	})
}

func gateListOffsets(g *guard, r *request) verdict {
	req := r.kreq.(*kmsg.ListOffsetsRequest)
	kept, refused := keep(req.Topics, func(t kmsg.ListOffsetsRequestTopic) bool { return g.canTopic(acl.OpDescribe, t.Topic) })
	req.Topics = kept
	return narrowed(r, len(kept), len(kept)+len(refused), func(resp kmsg.Response) {
		lr := resp.(*kmsg.ListOffsetsResponse)
		for _, t := range refused {
			rt := kmsg.NewListOffsetsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewListOffsetsResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, errTopicAuth
				rp.Timestamp, rp.Offset, rp.LeaderEpoch = -1, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			lr.Topics = append(lr.Topics, rt)
		}
	})
}

func gateOffsetForLeaderEpoch(g *guard, r *request) verdict {
	req := r.kreq.(*kmsg.OffsetForLeaderEpochRequest)
	var kept, refused []kmsg.OffsetForLeaderEpochRequestTopic
	if req.Version >= 3 && req.ReplicaID >= 0 && !g.canCluster(acl.OpClusterAction) {
		refused = req.Topics
	} else {
		kept, refused = keep(req.Topics, func(t kmsg.OffsetForLeaderEpochRequestTopic) bool { return g.canTopic(acl.OpDescribe, t.Topic) })
	}
	req.Topics = kept
	return narrowed(r, len(kept), len(kept)+len(refused), func(resp kmsg.Response) {
		or := resp.(*kmsg.OffsetForLeaderEpochResponse)
		for _, t := range refused {
			rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, errTopicAuth
				rp.LeaderEpoch, rp.EndOffset = -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			or.Topics = append(or.Topics, rt)
		}
	})
}

// gateMetadata filters the answer rather than the request: a topic named
// by id resolves to its name only in the handler.
func gateMetadata(g *guard, r *request) verdict {
	req := r.kreq.(*kmsg.MetadataRequest)
	all := allTopics(req)
	named := map[string]bool{}
	for _, t := range req.Topics {
		if t.Topic != nil {
			named[*t.Topic] = true
		}
	}
	// Auto-creation: only when every named topic may be described and
	// created; otherwise none is, and a topic that could not have been
	// created is refused below rather than reported unknown.
	noCreate := map[string]bool{}
	if !all && g.srv.cfg.Topics.AutoCreate && (req.Version < 4 || req.AllowAutoTopicCreation) {
		clusterCreate := g.sees(acl.OpCreate, acl.ResourceCluster, acl.ClusterName)
		for name := range named {
			if !g.sees(acl.OpDescribe, acl.ResourceTopic, name) || (!clusterCreate && !g.sees(acl.OpCreate, acl.ResourceTopic, name)) {
				noCreate[name] = true
				r.noAutoCreate = true
			}
		}
	}
	return verdict{fix: func(resp kmsg.Response) {
		mr := resp.(*kmsg.MetadataResponse)
		if req.IncludeClusterAuthorizedOperations && req.Version >= 8 && req.Version <= 10 {
			mr.AuthorizedOperations = g.operations(acl.ResourceCluster, acl.ClusterName, clusterOps...)
		}
		out := mr.Topics[:0]
		for _, t := range mr.Topics {
			name := ""
			if t.Topic != nil {
				name = *t.Topic
			}
			switch {
			case t.Topic == nil: // an unknown id: nothing to hide
			case all && !named[name]:
				if !g.sees(acl.OpDescribe, acl.ResourceTopic, name) {
					continue // a listing shows only what the principal may describe
				}
			case !g.canTopic(acl.OpDescribe, name):
				t = refusedMetadataTopic(t, named[name])
			case noCreate[name] && t.ErrorCode == kerr.UnknownTopicOrPartition.Code && !g.canTopic(acl.OpCreate, name):
				t = refusedMetadataTopic(t, true)
			}
			if t.ErrorCode == 0 && req.IncludeTopicAuthorizedOperations && req.Version >= 8 {
				t.AuthorizedOperations = g.operations(acl.ResourceTopic, name, topicOps...)
			}
			out = append(out, t)
		}
		mr.Topics = out
	}}
}

// refusedMetadataTopic is t refused: no partitions, no id; its name only
// when the client named it (a topic asked for by id keeps its name
// secret).
func refusedMetadataTopic(t kmsg.MetadataResponseTopic, byName bool) kmsg.MetadataResponseTopic {
	rt := kmsg.NewMetadataResponseTopic()
	if byName {
		rt.Topic = t.Topic
	} else {
		rt.TopicID = t.TopicID
	}
	rt.ErrorCode = errTopicAuth
	rt.Partitions = []kmsg.MetadataResponseTopicPartition{}
	rt.AuthorizedOperations = math.MinInt32
	return rt
}

func gateOffsetCommit(g *guard, r *request) verdict {
	req := r.kreq.(*kmsg.OffsetCommitRequest)
	var kept, refused []kmsg.OffsetCommitRequestTopic
	code := errTopicAuth
	if !g.canGroup(acl.OpRead, req.Group) {
		code, refused = errGroupAuth, req.Topics
	} else {
		kept, refused = keep(req.Topics, func(t kmsg.OffsetCommitRequestTopic) bool { return g.canTopic(acl.OpRead, t.Topic) })
	}
	req.Topics = kept
	return narrowed(r, len(kept), len(kept)+len(refused), func(resp kmsg.Response) {
		cr := resp.(*kmsg.OffsetCommitResponse)
		for _, t := range refused {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			cr.Topics = append(cr.Topics, rt)
		}
	})
}

func gateOffsetFetch(g *guard, r *request) verdict {
	req := r.kreq.(*kmsg.OffsetFetchRequest)
	if req.Version >= 8 {
		return gateOffsetFetchGroups(g, r, req)
	}
	if !g.canGroup(acl.OpDescribe, req.Group) {
		resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
		resp.ErrorCode = errGroupAuth
		for _, t := range req.Topics { // v0-1 carry the error per partition
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.ErrorCode = p, -1, errGroupAuth
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return verdict{deny: resp}
	}
	if req.Topics == nil { // every committed topic: show the describable
		return verdict{fix: func(resp kmsg.Response) {
			fr := resp.(*kmsg.OffsetFetchResponse)
			fr.Topics, _ = keep(fr.Topics, func(t kmsg.OffsetFetchResponseTopic) bool {
				return g.sees(acl.OpDescribe, acl.ResourceTopic, t.Topic)
			})
		}}
	}
	kept, refused := keep(req.Topics, func(t kmsg.OffsetFetchRequestTopic) bool { return g.canTopic(acl.OpDescribe, t.Topic) })
	if len(refused) == 0 {
		return verdict{}
	}
	req.Topics = kept
	if req.Topics == nil {
		req.Topics = []kmsg.OffsetFetchRequestTopic{} // not "every topic"
	}
	return verdict{fix: func(resp kmsg.Response) {
		fr := resp.(*kmsg.OffsetFetchResponse)
		for _, t := range refused {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.ErrorCode = p, -1, errTopicAuth
				rt.Partitions = append(rt.Partitions, rp)
			}
			fr.Topics = append(fr.Topics, rt)
		}
	}}
}

// gateOffsetFetchGroups is OffsetFetch v8+, several groups per request.
func gateOffsetFetchGroups(g *guard, r *request, req *kmsg.OffsetFetchRequest) verdict {
	type groupFix struct {
		all     bool // every committed topic: filter the answer
		refused []kmsg.OffsetFetchRequestGroupTopic
	}
	fixes := map[string]*groupFix{}
	kept, refusedGroups := keep(req.Groups, func(gr kmsg.OffsetFetchRequestGroup) bool { return g.canGroup(acl.OpDescribe, gr.Group) })
	for i := range kept {
		gr := &kept[i]
		if gr.Topics == nil {
			fixes[gr.Group] = &groupFix{all: true}
			continue
		}
		topics, refused := keep(gr.Topics, func(t kmsg.OffsetFetchRequestGroupTopic) bool { return g.canTopic(acl.OpDescribe, t.Topic) })
		if len(refused) > 0 {
			if topics == nil {
				topics = []kmsg.OffsetFetchRequestGroupTopic{}
			}
			gr.Topics = topics
			fixes[gr.Group] = &groupFix{refused: refused}
		}
	}
	req.Groups = kept
	fix := func(resp kmsg.Response) {
		fr := resp.(*kmsg.OffsetFetchResponse)
		for i := range fr.Groups {
			gr := &fr.Groups[i]
			f := fixes[gr.Group]
			switch {
			case f == nil:
			case f.all:
				gr.Topics, _ = keep(gr.Topics, func(t kmsg.OffsetFetchResponseGroupTopic) bool {
					return g.sees(acl.OpDescribe, acl.ResourceTopic, t.Topic)
				})
			default:
				for _, t := range f.refused {
					rt := kmsg.NewOffsetFetchResponseGroupTopic()
					rt.Topic = t.Topic
					for _, p := range t.Partitions {
						rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
						rp.Partition, rp.Offset, rp.ErrorCode = p, -1, errTopicAuth
						rt.Partitions = append(rt.Partitions, rp)
					}
					gr.Topics = append(gr.Topics, rt)
				}
			}
		}
		for _, gr := range refusedGroups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = gr.Group, errGroupAuth
			fr.Groups = append(fr.Groups, rg)
		}
	}
	if len(kept) == 0 {
		return denyAll(r, fix)
	}
	if len(refusedGroups) == 0 && len(fixes) == 0 {
		return verdict{}
	}
	return verdict{fix: fix}
}

func gateFindCoordinator(g *guard, r *request) verdict {
	req := r.kreq.(*kmsg.FindCoordinatorRequest)
	res, op, code := acl.ResourceGroup, acl.OpDescribe, errGroupAuth
	if req.CoordinatorType == 1 {
		res, code = acl.ResourceTransactionalID, errTxnAuth
	}
	if req.Version < 4 {
		if g.can(op, res, req.CoordinatorKey) {
			return verdict{}
		}
		resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
		resp.ErrorCode, resp.NodeID, resp.Port = code, -1, -1
		return verdict{deny: resp}
	}
	kept, refused := keep(req.CoordinatorKeys, func(k string) bool { return g.can(op, res, k) })
	req.CoordinatorKeys = kept
	return narrowed(r, len(kept), len(kept)+len(refused), func(resp kmsg.Response) {
		fr := resp.(*kmsg.FindCoordinatorResponse)
		for _, k := range refused {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.ErrorCode, c.NodeID, c.Port = k, code, -1, -1
			fr.Coordinators = append(fr.Coordinators, c)
		}
	})
}

// groupGate is the gate of the group-membership APIs: op on the group,
// else GROUP_AUTHORIZATION_FAILED for the whole request.
func groupGate(op acl.Operation) gate {
	return func(g *guard, r *request) verdict {
		var group string
		switch req := r.kreq.(type) {
		case *kmsg.JoinGroupRequest:
			group = req.Group
		case *kmsg.SyncGroupRequest:
			group = req.Group
		case *kmsg.HeartbeatRequest:
			group = req.Group
		case *kmsg.LeaveGroupRequest:
			group = req.Group
		default:
			return verdict{closeConn: fmt.Errorf("no group gate for %T", r.kreq)}
		}
		if g.canGroup(op, group) {
			return verdict{}
		}
		resp := r.kreq.ResponseKind()
		switch resp := resp.(type) {
		case *kmsg.JoinGroupResponse:
			resp.ErrorCode, resp.Generation = errGroupAuth, -1
		case *kmsg.SyncGroupResponse:
			resp.ErrorCode = errGroupAuth
		case *kmsg.HeartbeatResponse:
			resp.ErrorCode = errGroupAuth
		case *kmsg.LeaveGroupResponse:
			resp.ErrorCode = errGroupAuth
		}
		return verdict{deny: resp}
	}
}

func gateDescribeGroups(g *guard, r *request) verdict {
	req := r.kreq.(*kmsg.DescribeGroupsRequest)
	kept, refused := keep(req.Groups, func(name string) bool { return g.canGroup(acl.OpDescribe, name) })
	req.Groups = kept
	fix := func(resp kmsg.Response) {
		dr := resp.(*kmsg.DescribeGroupsResponse)
		if req.IncludeAuthorizedOperations {
			for i := range dr.Groups {
				if dr.Groups[i].ErrorCode == 0 {
					dr.Groups[i].AuthorizedOperations = g.operations(acl.ResourceGroup, dr.Groups[i].Group, groupOps...)
				}
			}
		}
		for _, name := range refused {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode, rg.AuthorizedOperations = name, errGroupAuth, math.MinInt32
			dr.Groups = append(dr.Groups, rg)
		}
	}
	if len(kept) == 0 && len(refused) > 0 {
		return denyAll(r, fix)
	}
	return verdict{fix: fix}
}

func gateListGroups(g *guard, r *request) verdict {
	if g.sees(acl.OpDescribe, acl.ResourceCluster, acl.ClusterName) {
		return verdict{}
	}
	return verdict{fix: func(resp kmsg.Response) {
		lr := resp.(*kmsg.ListGroupsResponse)
		lr.Groups, _ = keep(lr.Groups, func(gr kmsg.ListGroupsResponseGroup) bool {
			return g.sees(acl.OpDescribe, acl.ResourceGroup, gr.Group)
		})
	}}
}

func gateDeleteGroups(g *guard, r *request) verdict {
	req := r.kreq.(*kmsg.DeleteGroupsRequest)
	kept, refused := keep(req.Groups, func(name string) bool { return g.canGroup(acl.OpDelete, name) })
	req.Groups = kept
	return narrowed(r, len(kept), len(kept)+len(refused), func(resp kmsg.Response) {
		dr := resp.(*kmsg.DeleteGroupsResponse)
		for _, name := range refused {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode = name, errGroupAuth
			dr.Groups = append(dr.Groups, rg)
		}
	})
}

func gateCreateTopics(g *guard, r *request) verdict {
	req := r.kreq.(*kmsg.CreateTopicsRequest)
	clusterCreate := g.sees(acl.OpCreate, acl.ResourceCluster, acl.ClusterName)
	kept, refused := keep(req.Topics, func(t kmsg.CreateTopicsRequestTopic) bool {
		return clusterCreate || g.canTopic(acl.OpCreate, t.Topic)
	})
	req.Topics = kept
	fix := func(resp kmsg.Response) {
		cr := resp.(*kmsg.CreateTopicsResponse)
		if req.Version >= 5 { // the configs are shown only to who may describe them
			for i := range cr.Topics {
				t := &cr.Topics[i]
				if t.ErrorCode == 0 && !g.sees(acl.OpDescribeConfigs, acl.ResourceTopic, t.Topic) {
					t.Configs, t.ConfigErrorCode = nil, errTopicAuth
				}
			}
		}
		for _, t := range refused {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, errTopicAuth
			rt.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("%s may not create topic %s", g.principal, t.Topic))
			rt.NumPartitions, rt.ReplicationFactor = -1, -1
			cr.Topics = append(cr.Topics, rt)
		}
	}
	if len(kept) == 0 && len(refused) > 0 {
		return denyAll(r, fix)
	}
	return verdict{fix: fix}
}

func gateDeleteTopics(g *guard, r *request) verdict {
	req := r.kreq.(*kmsg.DeleteTopicsRequest)
	kept, refused := keep(req.TopicNames, func(name string) bool { return g.canTopic(acl.OpDelete, name) })
	req.TopicNames = kept
	return narrowed(r, len(kept), len(kept)+len(refused), func(resp kmsg.Response) {
		dr := resp.(*kmsg.DeleteTopicsResponse)
		for _, name := range refused {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = kmsg.StringPtr(name), errTopicAuth
			dr.Topics = append(dr.Topics, rt)
		}
	})
}

func gateCreatePartitions(g *guard, r *request) verdict {
	req := r.kreq.(*kmsg.CreatePartitionsRequest)
	kept, refused := keep(req.Topics, func(t kmsg.CreatePartitionsRequestTopic) bool { return g.canTopic(acl.OpAlter, t.Topic) })
	req.Topics = kept
	return narrowed(r, len(kept), len(kept)+len(refused), func(resp kmsg.Response) {
		cr := resp.(*kmsg.CreatePartitionsResponse)
		for _, t := range refused {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, errTopicAuth
			cr.Topics = append(cr.Topics, rt)
		}
	})
}

// configResource is a config resource's ACL resource and refusal code:
// a topic's own, a broker's (and its loggers') the cluster's.
func configResource(t kmsg.ConfigResourceType, name string) (acl.ResourceType, string, int16, bool) {
	switch t {
	case kmsg.ConfigResourceTypeTopic:
		return acl.ResourceTopic, name, errTopicAuth, true
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger:
		return acl.ResourceCluster, acl.ClusterName, errClusterAuth, true
	}
	return 0, "", 0, false // the handler refuses what it does not know
}

// configsGate is the gate of DescribeConfigs (op DescribeConfigs),
// AlterConfigs and IncrementalAlterConfigs (AlterConfigs): op on each
// resource.
func configsGate(op acl.Operation) gate {
	return func(g *guard, r *request) verdict {
		type refusal struct {
			t    kmsg.ConfigResourceType
			name string
			code int16
		}
		var refused []refusal
		allowed := func(t kmsg.ConfigResourceType, name string) bool {
			res, resName, code, ok := configResource(t, name)
			if !ok || g.can(op, res, resName) {
				return true
			}
			refused = append(refused, refusal{t, name, code})
			return false
		}
		total, kept := 0, 0
		switch req := r.kreq.(type) {
		case *kmsg.DescribeConfigsRequest:
			total = len(req.Resources)
			req.Resources, _ = keep(req.Resources, func(x kmsg.DescribeConfigsRequestResource) bool { return allowed(x.ResourceType, x.ResourceName) })
			kept = len(req.Resources)
		case *kmsg.AlterConfigsRequest:
			total = len(req.Resources)
			req.Resources, _ = keep(req.Resources, func(x kmsg.AlterConfigsRequestResource) bool { return allowed(x.ResourceType, x.ResourceName) })
			kept = len(req.Resources)
		case *kmsg.IncrementalAlterConfigsRequest:
			total = len(req.Resources)
			req.Resources, _ = keep(req.Resources, func(x kmsg.IncrementalAlterConfigsRequestResource) bool {
				return allowed(x.ResourceType, x.ResourceName)
			})
			kept = len(req.Resources)
		default:
			return verdict{closeConn: fmt.Errorf("no configs gate for %T", r.kreq)}
		}
		return narrowed(r, kept, total, func(resp kmsg.Response) {
			for _, x := range refused {
				msg := kmsg.StringPtr(fmt.Sprintf("%s may not %s %s", g.principal, op, x.name))
				switch resp := resp.(type) {
				case *kmsg.DescribeConfigsResponse:
					rr := kmsg.NewDescribeConfigsResponseResource()
					rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = x.t, x.name, x.code, msg
					resp.Resources = append(resp.Resources, rr)
				case *kmsg.AlterConfigsResponse:
					rr := kmsg.NewAlterConfigsResponseResource()
					rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = x.t, x.name, x.code, msg
					resp.Resources = append(resp.Resources, rr)
				case *kmsg.IncrementalAlterConfigsResponse:
					rr := kmsg.NewIncrementalAlterConfigsResponseResource()
					rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = x.t, x.name, x.code, msg
					resp.Resources = append(resp.Resources, rr)
				}
			}
		})
	}
}

func gateInitProducerID(g *guard, r *request) verdict {
	req := r.kreq.(*kmsg.InitProducerIDRequest)
	code := int16(0)
	switch {
	case req.TransactionalID != nil:
		if !g.can(acl.OpWrite, acl.ResourceTransactionalID, *req.TransactionalID) {
			code = errTxnAuth
		}
	case !g.sees(acl.OpIdempotentWrite, acl.ResourceCluster, acl.ClusterName) &&
		!g.az.AuthorizeByResourceType(g.principal, g.host, acl.OpWrite, acl.ResourceTopic):
		g.srv.audit.Denied(g.principal, g.host, acl.OpIdempotentWrite, acl.ResourceCluster, acl.ClusterName, "neither IDEMPOTENT_WRITE on the cluster nor WRITE on any topic")
		code = errClusterAuth
	}
	if code == 0 {
		return verdict{}
	}
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = code, -1, -1
	return verdict{deny: resp}
}

// clusterGate is the gate of the cluster-wide admin APIs: op on the
// cluster, else CLUSTER_AUTHORIZATION_FAILED for everything asked.
func clusterGate(op acl.Operation) gate {
	return func(g *guard, r *request) verdict {
		if g.canCluster(op) {
			return verdict{}
		}
		msg := kmsg.StringPtr(fmt.Sprintf("%s may not %s the cluster", g.principal, op))
		switch req := r.kreq.(type) {
		case *kmsg.ElectLeadersRequest:
			resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
			resp.ErrorCode = errClusterAuth
			for _, t := range req.Topics {
				rt := kmsg.NewElectLeadersResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewElectLeadersResponseTopicPartition()
					rp.Partition, rp.ErrorCode, rp.ErrorMessage = p, errClusterAuth, msg
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return verdict{deny: resp}
		case *kmsg.AlterPartitionAssignmentsRequest:
			resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
			resp.ErrorCode, resp.ErrorMessage = errClusterAuth, msg
			return verdict{deny: resp}
		case *kmsg.ListPartitionReassignmentsRequest:
			resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
			resp.ErrorCode, resp.ErrorMessage = errClusterAuth, msg
			return verdict{deny: resp}
		case *kmsg.DescribeACLsRequest:
			resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
			resp.ErrorCode, resp.ErrorMessage = errClusterAuth, msg
			return verdict{deny: resp}
		case *kmsg.CreateACLsRequest:
			resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
			for range req.Creations {
				rc := kmsg.NewCreateACLsResponseResult()
				rc.ErrorCode, rc.ErrorMessage = errClusterAuth, msg
				resp.Results = append(resp.Results, rc)
			}
			return verdict{deny: resp}
		case *kmsg.DeleteACLsRequest:
			resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
			for range req.Filters {
				rf := kmsg.NewDeleteACLsResponseResult()
				rf.ErrorCode, rf.ErrorMessage = errClusterAuth, msg
				resp.Results = append(resp.Results, rf)
			}
			return verdict{deny: resp}
		case *kmsg.DescribeUserSCRAMCredentialsRequest:
			resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
			resp.ErrorCode, resp.ErrorMessage = errClusterAuth, msg
			return verdict{deny: resp}
		case *kmsg.AlterUserSCRAMCredentialsRequest:
			resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
			seen := map[string]bool{}
			add := func(user string) {
				if !seen[user] {
					seen[user] = true
					rr := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
					rr.User, rr.ErrorCode, rr.ErrorMessage = user, errClusterAuth, msg
					resp.Results = append(resp.Results, rr)
				}
			}
			for _, d := range req.Deletions {
				add(d.Name)
			}
			for _, u := range req.Upsertions {
				add(u.Name)
			}
			return verdict{deny: resp}
		}
		return verdict{closeConn: fmt.Errorf("no cluster gate for %T", r.kreq)}
	}
}

func gateDescribeCluster(g *guard, r *request) verdict {
	req := r.kreq.(*kmsg.DescribeClusterRequest)
	if !req.IncludeClusterAuthorizedOperations {
		return verdict{}
	}
	return verdict{fix: func(resp kmsg.Response) {
		resp.(*kmsg.DescribeClusterResponse).ClusterAuthorizedOperations = g.operations(acl.ResourceCluster, acl.ClusterName, clusterOps...)
	}}
}
