// remoteacl.go: Kafka-style ACLs on the actor remote's client requests
// (issue 16). The remote guard (remoteauth.go) stamps every envelope from
// the wire with its connection's principal; RemoteACL.Middleware, a
// receiver middleware on every host actor that serves client requests
// (broker, replicas, group coordinators, controller), checks each request
// from a principal that is not a host against the table remoteRules below,
// with the same acl.Authorizer and the same rules as the Kafka listener
// (kafka/authorize.go):
//
//	ProduceRequest                WRITE on the topic
//	FetchRequest                  READ on the topic (a replica's: host-only)
//	ListOffsetsRequest            DESCRIBE on the topic
//	OffsetForLeaderEpochRequest   DESCRIBE on the topic (a replica's: host-only)
//	MetadataRequest               DESCRIBE on each topic: a listing keeps the
//	                              describable topics, a named topic without it
//	                              is TOPIC_AUTHORIZATION_FAILED
//	CreateTopicRequest            CREATE on the cluster or on the topic
//	DeleteTopicRequest            DELETE on the topic
//	CreatePartitionsRequest       ALTER on the topic
//	AlterTopicConfigsRequest      ALTER_CONFIGS on the topic
//	ElectLeadersRequest,          ALTER on the cluster
//	ReassignPartitionsRequest,
//	CreateAclsRequest, DeleteAclsRequest,
//	AlterScramCredentialsRequest
//	DescribeAclsRequest,          DESCRIBE on the cluster
//	DescribeScramUsersRequest,
//	DescribeLogDirsRequest
//	DescribeClusterRequest        open (as Kafka's DescribeCluster)
//	FindCoordinatorRequest        DESCRIBE on the group
//	JoinGroupRequest, SyncGroupRequest,
//	HeartbeatRequest, LeaveGroupRequest
//	                              READ on the group
//	OffsetCommitRequest           READ on the group, READ on each topic
//	OffsetFetchRequest            DESCRIBE on the group, DESCRIBE on each topic
//	                              (a listing keeps the describable topics)
//	DescribeGroupsRequest         DESCRIBE on each group
//	ListGroupsRequest             DESCRIBE on the cluster, else the describable
//	                              groups
//	DeleteGroupsRequest           DELETE on each group
//	InitProducerIdRequest         IDEMPOTENT_WRITE on the cluster or WRITE on
//	                              any topic (KIP-679)
//
// The host-only requests (remoteauth.go's hostOnlyTypes: AlterPartition,
// ControlledShutdown, CreateOffsetsTopic, and replicas' Fetch and
// OffsetForLeaderEpoch) are refused from anyone but a host
// (CLUSTER_AUTHORIZATION_FAILED); the guard drops them before, this is the
// second line. Any other message from a non-host principal is dropped: a
// request type missing from the table is never served unchecked.
//
// A refusal is answered with the request's own response type carrying
// TOPIC_, GROUP_ or CLUSTER_AUTHORIZATION_FAILED and a message naming the
// principal, operation and resource (`User:app is not authorized to WRITE
// topic "orders"`), so a client gets an error, not a timeout. A request
// naming several resources is narrowed to the authorized ones and the
// actor's answer completed with the refused ones (through a future that
// stands in for the sender), as the Kafka listener narrows.
//
// Messages without a principal were sent inside the process (the Kafka
// listener's backends, the broker's forwarding: authorized already) and
// messages from a Host principal pass. Refusals are logged once per
// principal, host, operation and resource per AuditEvery, and counted
// through OnDenied.

package client

import (
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/actorlog/actorlog/internal/acl"
	"github.com/actorlog/actorlog/messages"
)

// PeerHostHeader is the envelope header key under which the remote's
// server stamps the IP address of the sending connection, for ACL
// bindings that name a host.
const PeerHostHeader = "actorlog-peer-host"

// RemoteAuthorizer decides requests; *acl.Authorizer is one.
type RemoteAuthorizer interface {
	Authorize(principal, clientHost string, op acl.Operation, res acl.ResourceType, name string) acl.Decision
	AuthorizeByResourceType(principal, clientHost string, op acl.Operation, res acl.ResourceType) bool
}

// DefaultRemoteAuditEvery is how often a refusal of one principal,
// operation and resource is logged when RemoteACLConfig.AuditEvery is 0.
const DefaultRemoteAuditEvery = time.Minute

// remoteFixTimeout bounds the wait for an actor's answer to a narrowed
// request; past it the answer is not completed and the client times out.
const remoteFixTimeout = 2 * time.Minute

// RemoteACLConfig configures a RemoteACL.
type RemoteACLConfig struct {
	// Authorizer decides; required.
	Authorizer RemoteAuthorizer
	// Logger receives the refusal audit lines (nil: logrus's standard).
	Logger *logrus.Entry
	// AuditEvery is how often one principal's refusal of one operation on
	// one resource is logged (0: DefaultRemoteAuditEvery).
	AuditEvery time.Duration
	// OnDenied counts every refusal (optional).
	OnDenied func(acl.Operation, acl.ResourceType)
}

// RemoteACL authorizes the client requests arriving over the remote. Safe
// for concurrent use; one serves every actor of a host.
type RemoteACL struct {
	az    RemoteAuthorizer
	log   *logrus.Entry
	audit *acl.Audit
}

// NewRemoteACL returns the remote's authorization over cfg.Authorizer.
func NewRemoteACL(cfg RemoteACLConfig) (*RemoteACL, error) {
	if cfg.Authorizer == nil {
		return nil, fmt.Errorf("client: remote ACLs need an authorizer")
	}
	if cfg.Logger == nil {
		cfg.Logger = logrus.NewEntry(logrus.StandardLogger())
	}
	if cfg.AuditEvery <= 0 {
		cfg.AuditEvery = DefaultRemoteAuditEvery
	}
	log := cfg.Logger.WithField("component", "remote-acl")
	return &RemoteACL{az: cfg.Authorizer, log: log,
		audit: acl.NewAudit(log, logrus.WarnLevel, "remote request denied by ACLs", cfg.AuditEvery, cfg.OnDenied)}, nil
}

// Middleware returns the receiver middleware that enforces the ACLs on an
// actor's messages (actor.WithReceiverMiddleware). Nil-safe: a nil
// RemoteACL's middleware passes everything.
func (a *RemoteACL) Middleware() actor.ReceiverMiddleware {
	return func(next actor.ReceiverFunc) actor.ReceiverFunc {
		return func(ctx actor.ReceiverContext, env *actor.MessageEnvelope) {
			if a == nil || env == nil {
				next(ctx, env)
				return
			}
			a.receive(next, ctx, env)
		}
	}
}

// receive authorizes one envelope and delivers, narrows, answers or drops
// it.
func (a *RemoteACL) receive(next actor.ReceiverFunc, ctx actor.ReceiverContext, env *actor.MessageEnvelope) {
	raw := env.GetHeader(PrincipalHeader)
	if raw == "" {
		next(ctx, env) // sent inside this process
		return
	}
	c := &remoteCheck{acl: a, principal: raw, host: env.GetHeader(PeerHostHeader)}
	p, ok := parsePrincipal(raw)
	if ok && p.IsHost() {
		next(ctx, env)
		return
	}
	if !ok {
		a.dropped(c, env.Message, "the envelope's principal does not parse")
		return
	}
	v := authorizeRemote(c, env.Message)
	switch {
	case v.drop != "":
		a.dropped(c, env.Message, v.drop)
	case v.deny != nil:
		if env.Sender != nil {
			ctx.ActorSystem().Root.Send(env.Sender, v.deny)
		}
	case v.fix == nil && v.msg == nil:
		next(ctx, env)
	default:
		ne := *env
		if v.msg != nil {
			ne.Message = v.msg
		}
		if v.fix != nil && env.Sender != nil {
			f := actor.NewFuture(ctx.ActorSystem(), remoteFixTimeout)
			ne.Sender = f.PID()
			root, to, fix := ctx.ActorSystem().Root, env.Sender, v.fix
			go func() {
				res, err := f.Result()
				if err != nil {
					a.log.WithError(err).WithFields(logrus.Fields{"principal": c.principal, "type": fmt.Sprintf("%T", env.Message)}).
						Debug("remote ACLs: no answer to complete")
					return
				}
				root.Send(to, fix(res))
			}()
		}
		next(ctx, &ne)
	}
}

// dropped logs (rate-limited) a message refused without an answer.
func (a *RemoteACL) dropped(c *remoteCheck, msg any, why string) {
	a.denied(c, acl.OpClusterAction, acl.ResourceCluster, acl.ClusterName, fmt.Sprintf("%T: %s", msg, why))
}

// denied counts and logs a refusal (acl.Audit: once per principal, host,
// operation and resource per AuditEvery).
func (a *RemoteACL) denied(c *remoteCheck, op acl.Operation, res acl.ResourceType, name, reason string) {
	a.audit.Denied(c.principal, c.clientHost(), op, res, name, reason)
}

// remoteCheck is one request's authorization context.
type remoteCheck struct {
	acl       *RemoteACL
	principal string
	host      string
}

// can decides op on the resource, logging and counting a refusal.
func (c *remoteCheck) can(op acl.Operation, res acl.ResourceType, name string) bool {
	d := c.acl.az.Authorize(c.principal, c.clientHost(), op, res, name)
	if !d.Allowed {
		c.acl.denied(c, op, res, name, d.Reason)
	}
	return d.Allowed
}

// sees decides op on the resource without logging, for filtering what a
// listing shows (a listing is no refusal).
func (c *remoteCheck) sees(op acl.Operation, res acl.ResourceType, name string) bool {
	return c.acl.az.Authorize(c.principal, c.clientHost(), op, res, name).Allowed
}

// clientHost is the peer's IP address (the header may carry a port).
func (c *remoteCheck) clientHost() string {
	if h, _, err := net.SplitHostPort(c.host); err == nil {
		return h
	}
	return c.host
}

// notAuthorized is a refusal's message.
func (c *remoteCheck) notAuthorized(op acl.Operation, res acl.ResourceType, name string) string {
	if res == acl.ResourceCluster {
		return fmt.Sprintf("%s is not authorized to %s the cluster", c.principal, op)
	}
	return fmt.Sprintf("%s is not authorized to %s %s %q", c.principal, op, strings.ToLower(res.String()), name)
}

// remoteVerdict is what a rule decides.
type remoteVerdict struct {
	// deny answers the request instead of delivering it.
	deny proto.Message
	// drop, when set, drops the request without an answer, for this
	// reason.
	drop string
	// msg, when set, is delivered instead of the request (narrowed).
	msg proto.Message
	// fix completes the actor's answer (the refused parts, or dropping
	// what the principal may not see).
	fix func(any) any
}

// remoteRule authorizes one request type.
type remoteRule func(c *remoteCheck, m proto.Message) remoteVerdict

// typed adapts a rule on a concrete request type.
func typed[T proto.Message](f func(*remoteCheck, T) remoteVerdict) remoteRule {
	return func(c *remoteCheck, m proto.Message) remoteVerdict {
		t, ok := m.(T)
		if !ok {
			return remoteVerdict{drop: fmt.Sprintf("%T is not the rule's type", m)}
		}
		return f(c, t)
	}
}

// fixing adapts a response completion on a concrete response type; any
// other answer (an error reply of another type) passes unchanged.
func fixing[T any](f func(T)) func(any) any {
	return func(res any) any {
		if t, ok := res.(T); ok {
			f(t)
		}
		return res
	}
}

// remoteRules holds the rule of every request type a principal other than
// a host may send, by protobuf full name (see the file comment).
var remoteRules = func() map[string]remoteRule {
	m := map[string]remoteRule{}
	add := func(msg proto.Message, r remoteRule) {
		m[string(msg.ProtoReflect().Descriptor().FullName())] = r
	}
	add(&messages.ProduceRequest{}, typed(ruleProduce))
	add(&messages.FetchRequest{}, typed(ruleFetch))
	add(&messages.ListOffsetsRequest{}, typed(ruleListOffsets))
	add(&messages.OffsetForLeaderEpochRequest{}, typed(ruleOffsetForLeaderEpoch))
	add(&messages.MetadataRequest{}, typed(ruleMetadata))
	add(&messages.CreateTopicRequest{}, typed(ruleCreateTopic))
	add(&messages.DeleteTopicRequest{}, typed(func(c *remoteCheck, r *messages.DeleteTopicRequest) remoteVerdict {
		return topicAdmin(c, acl.OpDelete, r.GetName(), r.GetCorrelationId())
	}))
	add(&messages.CreatePartitionsRequest{}, typed(func(c *remoteCheck, r *messages.CreatePartitionsRequest) remoteVerdict {
		return topicAdmin(c, acl.OpAlter, r.GetName(), r.GetCorrelationId())
	}))
	add(&messages.AlterTopicConfigsRequest{}, typed(func(c *remoteCheck, r *messages.AlterTopicConfigsRequest) remoteVerdict {
		return topicAdmin(c, acl.OpAlterConfigs, r.GetName(), r.GetCorrelationId())
	}))
	add(&messages.ElectLeadersRequest{}, clusterRule(acl.OpAlter))
	add(&messages.ReassignPartitionsRequest{}, clusterRule(acl.OpAlter))
	add(&messages.CreateAclsRequest{}, clusterRule(acl.OpAlter))
	add(&messages.DeleteAclsRequest{}, clusterRule(acl.OpAlter))
	add(&messages.AlterScramCredentialsRequest{}, clusterRule(acl.OpAlter))
	add(&messages.DescribeAclsRequest{}, clusterRule(acl.OpDescribe))
	add(&messages.DescribeScramUsersRequest{}, clusterRule(acl.OpDescribe))
	add(&messages.DescribeLogDirsRequest{}, clusterRule(acl.OpDescribe))
	add(&messages.DescribeClusterRequest{}, func(*remoteCheck, proto.Message) remoteVerdict { return remoteVerdict{} })
	add(&messages.FindCoordinatorRequest{}, typed(func(c *remoteCheck, r *messages.FindCoordinatorRequest) remoteVerdict {
		if c.can(acl.OpDescribe, acl.ResourceGroup, r.GetGroupId()) {
			return remoteVerdict{}
		}
		return remoteVerdict{deny: &messages.FindCoordinatorResponse{CorrelationId: r.GetCorrelationId(), HostId: -1,
			ErrorCode: errGroupAuth, ErrorMessage: c.notAuthorized(acl.OpDescribe, acl.ResourceGroup, r.GetGroupId())}}
	}))
	add(&messages.JoinGroupRequest{}, typed(func(c *remoteCheck, r *messages.JoinGroupRequest) remoteVerdict {
		return groupRead(c, r.GetGroupId(), func(msg string) proto.Message {
			return &messages.JoinGroupResponse{CorrelationId: r.GetCorrelationId(), ErrorCode: errGroupAuth, ErrorMessage: msg,
				GenerationId: -1, MemberId: r.GetMemberId()}
		})
	}))
	add(&messages.SyncGroupRequest{}, typed(func(c *remoteCheck, r *messages.SyncGroupRequest) remoteVerdict {
		return groupRead(c, r.GetGroupId(), func(msg string) proto.Message {
			return &messages.SyncGroupResponse{CorrelationId: r.GetCorrelationId(), ErrorCode: errGroupAuth, ErrorMessage: msg}
		})
	}))
	add(&messages.HeartbeatRequest{}, typed(func(c *remoteCheck, r *messages.HeartbeatRequest) remoteVerdict {
		return groupRead(c, r.GetGroupId(), func(msg string) proto.Message {
			return &messages.HeartbeatResponse{CorrelationId: r.GetCorrelationId(), ErrorCode: errGroupAuth, ErrorMessage: msg}
		})
	}))
	add(&messages.LeaveGroupRequest{}, typed(func(c *remoteCheck, r *messages.LeaveGroupRequest) remoteVerdict {
		return groupRead(c, r.GetGroupId(), func(msg string) proto.Message {
			return &messages.LeaveGroupResponse{CorrelationId: r.GetCorrelationId(), ErrorCode: errGroupAuth, ErrorMessage: msg}
		})
	}))
	add(&messages.OffsetCommitRequest{}, typed(ruleOffsetCommit))
	add(&messages.OffsetFetchRequest{}, typed(ruleOffsetFetch))
	add(&messages.DescribeGroupsRequest{}, typed(ruleDescribeGroups))
	add(&messages.ListGroupsRequest{}, typed(ruleListGroups))
	add(&messages.DeleteGroupsRequest{}, typed(ruleDeleteGroups))
	add(&messages.InitProducerIdRequest{}, typed(ruleInitProducerID))
	// Host-only requests: the guard drops them from non-hosts; refused
	// here too, with their response type where they have one.
	add(&messages.AlterPartitionRequest{}, typed(func(c *remoteCheck, r *messages.AlterPartitionRequest) remoteVerdict {
		return remoteVerdict{deny: &messages.AlterPartitionResponse{CorrelationId: r.GetCorrelationId(), ErrorCode: errClusterAuth,
			ErrorMessage: c.hostOnly(r)}}
	}))
	add(&messages.ControlledShutdownRequest{}, typed(func(c *remoteCheck, r *messages.ControlledShutdownRequest) remoteVerdict {
		return remoteVerdict{deny: &messages.ControlledShutdownResponse{CorrelationId: r.GetCorrelationId(), ErrorCode: errClusterAuth,
			ErrorMessage: c.hostOnly(r)}}
	}))
	add(&messages.CreateOffsetsTopicRequest{}, typed(func(c *remoteCheck, r *messages.CreateOffsetsTopicRequest) remoteVerdict {
		return remoteVerdict{deny: &messages.AdminResponse{CorrelationId: r.GetCorrelationId(), ErrorCode: errClusterAuth,
			ErrorMessage: c.hostOnly(r)}}
	}))
	return m
}()

// authorizeRemote applies msg's rule; a message without one is dropped.
func authorizeRemote(c *remoteCheck, msg any) remoteVerdict {
	pm, ok := msg.(proto.Message)
	if !ok {
		return remoteVerdict{drop: "not a protobuf message"}
	}
	name := string(pm.ProtoReflect().Descriptor().FullName())
	r, ok := remoteRules[name]
	if !ok {
		if name == "actor.DeadLetterResponse" {
			return remoteVerdict{} // the answer to a request for a gone actor
		}
		return remoteVerdict{drop: "no ACL rule for this message type from a non-host principal"}
	}
	return r(c, pm)
}

// clusterRule authorizes a request as op on the cluster, refusing it with
// its response type (errorResponse).
func clusterRule(op acl.Operation) remoteRule {
	return func(c *remoteCheck, m proto.Message) remoteVerdict {
		if c.can(op, acl.ResourceCluster, acl.ClusterName) {
			return remoteVerdict{}
		}
		resp := errorResponse(m, errClusterAuth, c.notAuthorized(op, acl.ResourceCluster, acl.ClusterName))
		if resp == nil {
			return remoteVerdict{drop: "refused, and the request has no response type to say so"}
		}
		return remoteVerdict{deny: resp}
	}
}

// errorResponse returns req's response (the message of req's full name
// with "Request" replaced by "Response") carrying req's correlation_id,
// code as error_code and msg as error_message, those of the fields it
// has; nil when there is no such message.
func errorResponse(req proto.Message, code messages.ErrorCode, msg string) proto.Message {
	rd := req.ProtoReflect().Descriptor()
	name, ok := strings.CutSuffix(string(rd.FullName()), "Request")
	if !ok {
		return nil
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(name + "Response"))
	if err != nil {
		return nil
	}
	resp := mt.New()
	fields := resp.Descriptor().Fields()
	if in, out := rd.Fields().ByName("correlation_id"), fields.ByName("correlation_id"); in != nil && out != nil && in.Kind() == out.Kind() {
		resp.Set(out, req.ProtoReflect().Get(in))
	}
	if fd := fields.ByName("error_code"); fd != nil && fd.Kind() == protoreflect.EnumKind && fd.Enum().FullName() == code.Descriptor().FullName() {
		resp.Set(fd, protoreflect.ValueOfEnum(code.Number()))
	}
	if fd := fields.ByName("error_message"); fd != nil && fd.Kind() == protoreflect.StringKind {
		resp.Set(fd, protoreflect.ValueOfString(msg))
	}
	return resp.Interface()
}

// hostOnly is the refusal message of a host-only request.
func (c *remoteCheck) hostOnly(m proto.Message) string {
	c.acl.denied(c, acl.OpClusterAction, acl.ResourceCluster, acl.ClusterName, string(m.ProtoReflect().Descriptor().Name())+" is host-only")
	return fmt.Sprintf("%s is not authorized to send %s: only hosts may", c.principal, m.ProtoReflect().Descriptor().Name())
}

var (
	errTopicAuth   = messages.ErrorCode_ERROR_CODE_TOPIC_AUTHORIZATION_FAILED
	errGroupAuth   = messages.ErrorCode_ERROR_CODE_GROUP_AUTHORIZATION_FAILED
	errClusterAuth = messages.ErrorCode_ERROR_CODE_CLUSTER_AUTHORIZATION_FAILED
)

func ruleProduce(c *remoteCheck, r *messages.ProduceRequest) remoteVerdict {
	if c.can(acl.OpWrite, acl.ResourceTopic, r.GetTopic()) {
		return remoteVerdict{}
	}
	return remoteVerdict{deny: &messages.ProduceResponse{CorrelationId: r.GetCorrelationId(), Topic: r.GetTopic(), Partition: r.GetPartition(),
		ErrorCode: errTopicAuth, ErrorMessage: c.notAuthorized(acl.OpWrite, acl.ResourceTopic, r.GetTopic()),
		BaseOffset: -1, LogAppendTimeMs: -1, LogStartOffset: -1}}
}

func ruleFetch(c *remoteCheck, r *messages.FetchRequest) remoteVerdict {
	deny := func(code messages.ErrorCode, msg string) remoteVerdict {
		return remoteVerdict{deny: &messages.FetchResponse{CorrelationId: r.GetCorrelationId(), Topic: r.GetTopic(), Partition: r.GetPartition(),
			ErrorCode: code, ErrorMessage: msg, HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}}
	}
	if r.GetReplicaId() >= 0 {
		return deny(errClusterAuth, c.hostOnly(r))
	}
	if c.can(acl.OpRead, acl.ResourceTopic, r.GetTopic()) {
		return remoteVerdict{}
	}
	return deny(errTopicAuth, c.notAuthorized(acl.OpRead, acl.ResourceTopic, r.GetTopic()))
}

func ruleListOffsets(c *remoteCheck, r *messages.ListOffsetsRequest) remoteVerdict {
	if c.can(acl.OpDescribe, acl.ResourceTopic, r.GetTopic()) {
		return remoteVerdict{}
	}
	return remoteVerdict{deny: &messages.ListOffsetsResponse{CorrelationId: r.GetCorrelationId(), Topic: r.GetTopic(), Partition: r.GetPartition(),
		ErrorCode: errTopicAuth, ErrorMessage: c.notAuthorized(acl.OpDescribe, acl.ResourceTopic, r.GetTopic()),
		Timestamp: -1, Offset: -1, LeaderEpoch: -1}}
}

func ruleOffsetForLeaderEpoch(c *remoteCheck, r *messages.OffsetForLeaderEpochRequest) remoteVerdict {
	deny := func(code messages.ErrorCode, msg string) remoteVerdict {
		return remoteVerdict{deny: &messages.OffsetForLeaderEpochResponse{CorrelationId: r.GetCorrelationId(), Topic: r.GetTopic(),
			Partition: r.GetPartition(), ErrorCode: code, ErrorMessage: msg, LeaderEpoch: -1, EndOffset: -1}}
	}
	if r.GetReplicaId() >= 0 {
		return deny(errClusterAuth, c.hostOnly(r))
	}
	if c.can(acl.OpDescribe, acl.ResourceTopic, r.GetTopic()) {
		return remoteVerdict{}
	}
	return deny(errTopicAuth, c.notAuthorized(acl.OpDescribe, acl.ResourceTopic, r.GetTopic()))
}

// ruleMetadata: the answer keeps, of a listing, the describable topics;
// a named topic the principal may not describe is answered
// TOPIC_AUTHORIZATION_FAILED, with nothing else about it.
func ruleMetadata(c *remoteCheck, r *messages.MetadataRequest) remoteVerdict {
	if len(r.GetTopics()) == 0 {
		return remoteVerdict{fix: fixing(func(resp *messages.MetadataResponse) {
			kept := resp.Topics[:0]
			for _, t := range resp.Topics {
				if c.sees(acl.OpDescribe, acl.ResourceTopic, t.GetName()) {
					kept = append(kept, t)
				}
			}
			clear(resp.Topics[len(kept):])
			resp.Topics = kept
		})}
	}
	refused := map[string]bool{}
	for _, t := range r.GetTopics() {
		if !refused[t] && !c.can(acl.OpDescribe, acl.ResourceTopic, t) {
			refused[t] = true
		}
	}
	if len(refused) == 0 {
		return remoteVerdict{}
	}
	return remoteVerdict{fix: fixing(func(resp *messages.MetadataResponse) {
		for i, t := range resp.Topics {
			if refused[t.GetName()] {
				resp.Topics[i] = &messages.TopicMetadataResponse{Name: t.GetName(), ErrorCode: errTopicAuth}
			}
		}
	})}
}

func ruleCreateTopic(c *remoteCheck, r *messages.CreateTopicRequest) remoteVerdict {
	if c.sees(acl.OpCreate, acl.ResourceCluster, acl.ClusterName) || c.can(acl.OpCreate, acl.ResourceTopic, r.GetName()) {
		return remoteVerdict{}
	}
	return remoteVerdict{deny: &messages.AdminResponse{CorrelationId: r.GetCorrelationId(), ErrorCode: errTopicAuth,
		ErrorMessage: c.notAuthorized(acl.OpCreate, acl.ResourceTopic, r.GetName())}}
}

// topicAdmin authorizes an admin request on one topic.
func topicAdmin(c *remoteCheck, op acl.Operation, topic string, corr int64) remoteVerdict {
	if c.can(op, acl.ResourceTopic, topic) {
		return remoteVerdict{}
	}
	return remoteVerdict{deny: &messages.AdminResponse{CorrelationId: corr, ErrorCode: errTopicAuth,
		ErrorMessage: c.notAuthorized(op, acl.ResourceTopic, topic)}}
}

// groupRead authorizes a group membership request (READ on the group).
func groupRead(c *remoteCheck, group string, deny func(msg string) proto.Message) remoteVerdict {
	if c.can(acl.OpRead, acl.ResourceGroup, group) {
		return remoteVerdict{}
	}
	return remoteVerdict{deny: deny(c.notAuthorized(acl.OpRead, acl.ResourceGroup, group))}
}

// ruleOffsetCommit: READ on the group, else the whole commit is refused
// (GROUP_AUTHORIZATION_FAILED for every partition); READ on each topic,
// the refused topics' partitions answered TOPIC_AUTHORIZATION_FAILED.
func ruleOffsetCommit(c *remoteCheck, r *messages.OffsetCommitRequest) remoteVerdict {
	results := func(topics []*messages.OffsetCommitTopic, code messages.ErrorCode, msg func(string) string) []*messages.PartitionResult {
		var out []*messages.PartitionResult
		for _, t := range topics {
			for _, p := range t.GetPartitions() {
				out = append(out, &messages.PartitionResult{Topic: t.GetTopic(), Partition: p.GetPartition(), ErrorCode: code, ErrorMessage: msg(t.GetTopic())})
			}
		}
		return out
	}
	if !c.can(acl.OpRead, acl.ResourceGroup, r.GetGroupId()) {
		msg := c.notAuthorized(acl.OpRead, acl.ResourceGroup, r.GetGroupId())
		return remoteVerdict{deny: &messages.OffsetCommitResponse{CorrelationId: r.GetCorrelationId(), ErrorCode: errGroupAuth, ErrorMessage: msg,
			Results: results(r.GetTopics(), errGroupAuth, func(string) string { return msg })}}
	}
	var kept, refused []*messages.OffsetCommitTopic
	for _, t := range r.GetTopics() {
		if c.can(acl.OpRead, acl.ResourceTopic, t.GetTopic()) {
			kept = append(kept, t)
		} else {
			refused = append(refused, t)
		}
	}
	if len(refused) == 0 {
		return remoteVerdict{}
	}
	topicMsg := func(topic string) string { return c.notAuthorized(acl.OpRead, acl.ResourceTopic, topic) }
	refusedResults := results(refused, errTopicAuth, topicMsg)
	if len(kept) == 0 {
		return remoteVerdict{deny: &messages.OffsetCommitResponse{CorrelationId: r.GetCorrelationId(), Results: refusedResults}}
	}
	n := proto.Clone(r).(*messages.OffsetCommitRequest)
	n.Topics = kept
	return remoteVerdict{msg: n, fix: fixing(func(resp *messages.OffsetCommitResponse) {
		resp.Results = append(resp.Results, refusedResults...)
	})}
}

// ruleOffsetFetch: DESCRIBE on the group; DESCRIBE on each topic named
// (TOPIC_AUTHORIZATION_FAILED for its partitions), and a listing of every
// topic keeps the describable ones.
func ruleOffsetFetch(c *remoteCheck, r *messages.OffsetFetchRequest) remoteVerdict {
	if !c.can(acl.OpDescribe, acl.ResourceGroup, r.GetGroupId()) {
		return remoteVerdict{deny: &messages.OffsetFetchResponse{CorrelationId: r.GetCorrelationId(), ErrorCode: errGroupAuth,
			ErrorMessage: c.notAuthorized(acl.OpDescribe, acl.ResourceGroup, r.GetGroupId())}}
	}
	if len(r.GetTopics()) == 0 {
		return remoteVerdict{fix: fixing(func(resp *messages.OffsetFetchResponse) {
			kept := resp.Topics[:0]
			for _, t := range resp.Topics {
				if c.sees(acl.OpDescribe, acl.ResourceTopic, t.GetTopic()) {
					kept = append(kept, t)
				}
			}
			clear(resp.Topics[len(kept):])
			resp.Topics = kept
		})}
	}
	refused := map[string][]int32{}
	var kept []*messages.TopicPartitions
	for _, t := range r.GetTopics() {
		if _, done := refused[t.GetTopic()]; done || !c.can(acl.OpDescribe, acl.ResourceTopic, t.GetTopic()) {
			refused[t.GetTopic()] = append(refused[t.GetTopic()], t.GetPartitions()...)
			continue
		}
		kept = append(kept, t)
	}
	if len(refused) == 0 {
		return remoteVerdict{}
	}
	add := func(resp *messages.OffsetFetchResponse) {
		for topic, parts := range refused {
			ft := &messages.OffsetFetchTopic{Topic: topic}
			for _, p := range parts {
				ft.Partitions = append(ft.Partitions, &messages.OffsetFetchPartition{Partition: p, Offset: -1, LeaderEpoch: -1, ErrorCode: errTopicAuth})
			}
			resp.Topics = append(resp.Topics, ft)
		}
	}
	if len(kept) == 0 {
		resp := &messages.OffsetFetchResponse{CorrelationId: r.GetCorrelationId()}
		add(resp)
		return remoteVerdict{deny: resp}
	}
	n := proto.Clone(r).(*messages.OffsetFetchRequest)
	n.Topics = kept
	return remoteVerdict{msg: n, fix: fixing(add)}
}

// splitGroups splits groups into those c may do op on and, for the
// others, refused entries made by refuse from the group and the message.
func splitGroups[T any](c *remoteCheck, op acl.Operation, groups []string, refuse func(group, msg string) T) (kept []string, refused []T) {
	for _, g := range groups {
		if c.can(op, acl.ResourceGroup, g) {
			kept = append(kept, g)
			continue
		}
		refused = append(refused, refuse(g, c.notAuthorized(op, acl.ResourceGroup, g)))
	}
	return kept, refused
}

func ruleDescribeGroups(c *remoteCheck, r *messages.DescribeGroupsRequest) remoteVerdict {
	kept, refused := splitGroups(c, acl.OpDescribe, r.GetGroupIds(), func(g, msg string) *messages.DescribedGroup {
		return &messages.DescribedGroup{GroupId: g, ErrorCode: errGroupAuth, ErrorMessage: msg}
	})
	switch {
	case len(refused) == 0:
		return remoteVerdict{}
	case len(kept) == 0:
		return remoteVerdict{deny: &messages.DescribeGroupsResponse{CorrelationId: r.GetCorrelationId(), Groups: refused}}
	}
	n := proto.Clone(r).(*messages.DescribeGroupsRequest)
	n.GroupIds = kept
	return remoteVerdict{msg: n, fix: fixing(func(resp *messages.DescribeGroupsResponse) {
		resp.Groups = append(resp.Groups, refused...)
	})}
}

func ruleListGroups(c *remoteCheck, _ *messages.ListGroupsRequest) remoteVerdict {
	if c.sees(acl.OpDescribe, acl.ResourceCluster, acl.ClusterName) {
		return remoteVerdict{}
	}
	return remoteVerdict{fix: fixing(func(resp *messages.ListGroupsResponse) {
		kept := resp.Groups[:0]
		for _, g := range resp.Groups {
			if c.sees(acl.OpDescribe, acl.ResourceGroup, g.GetGroupId()) {
				kept = append(kept, g)
			}
		}
		clear(resp.Groups[len(kept):])
		resp.Groups = kept
	})}
}

func ruleDeleteGroups(c *remoteCheck, r *messages.DeleteGroupsRequest) remoteVerdict {
	kept, refused := splitGroups(c, acl.OpDelete, r.GetGroupIds(), func(g, msg string) *messages.DeleteGroupsResult {
		return &messages.DeleteGroupsResult{GroupId: g, ErrorCode: errGroupAuth, ErrorMessage: msg}
	})
	switch {
	case len(refused) == 0:
		return remoteVerdict{}
	case len(kept) == 0:
		return remoteVerdict{deny: &messages.DeleteGroupsResponse{CorrelationId: r.GetCorrelationId(), Results: refused}}
	}
	n := proto.Clone(r).(*messages.DeleteGroupsRequest)
	n.GroupIds = kept
	return remoteVerdict{msg: n, fix: fixing(func(resp *messages.DeleteGroupsResponse) {
		resp.Results = append(resp.Results, refused...)
	})}
}

// ruleInitProducerID: IDEMPOTENT_WRITE on the cluster, or WRITE on any
// topic (KIP-679), as the Kafka listener.
func ruleInitProducerID(c *remoteCheck, r *messages.InitProducerIdRequest) remoteVerdict {
	if c.sees(acl.OpIdempotentWrite, acl.ResourceCluster, acl.ClusterName) ||
		c.acl.az.AuthorizeByResourceType(c.principal, c.clientHost(), acl.OpWrite, acl.ResourceTopic) {
		return remoteVerdict{}
	}
	c.acl.denied(c, acl.OpIdempotentWrite, acl.ResourceCluster, acl.ClusterName, "neither IDEMPOTENT_WRITE on the cluster nor WRITE on any topic")
	return remoteVerdict{deny: &messages.InitProducerIdResponse{CorrelationId: r.GetCorrelationId(), ErrorCode: errClusterAuth,
		ErrorMessage: fmt.Sprintf("%s is not authorized to IDEMPOTENT_WRITE the cluster (nor to WRITE any topic)", c.principal),
		ProducerId:   -1, ProducerEpoch: -1}}
}
