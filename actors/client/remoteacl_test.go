package client

import (
	"io"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/actorlog/actorlog/internal/acl"
	"github.com/actorlog/actorlog/messages"
)

// TestEveryRemoteRequestHasARule: every request type of the messages
// package is in the remote's ACL table (the host-only ones too), so none
// is served to a non-host principal unchecked; and the cluster rules'
// requests have a response type to carry the refusal.
func TestEveryRemoteRequestHasARule(t *testing.T) {
	var missing []string
	n := 0
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		name := string(mt.Descriptor().FullName())
		if !strings.HasPrefix(name, "actorlog.messages.") || !strings.HasSuffix(name, "Request") {
			return true
		}
		n++
		if _, ok := remoteRules[name]; !ok {
			missing = append(missing, name)
		}
		return true
	})
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("request types without a remote ACL rule (remoteacl.go): %v", missing)
	}
	if n < 25 {
		t.Fatalf("found %d request types: the registry walk is broken", n)
	}
	for name := range hostOnlyTypes {
		if _, ok := remoteRules[name]; !ok {
			t.Errorf("host-only %s has no rule", name)
		}
	}
}

func TestErrorResponse(t *testing.T) {
	r := errorResponse(&messages.CreateAclsRequest{CorrelationId: 7}, errClusterAuth, "no")
	cr, ok := r.(*messages.CreateAclsResponse)
	if !ok || cr.CorrelationId != 7 || cr.ErrorCode != errClusterAuth || cr.ErrorMessage != "no" {
		t.Fatalf("errorResponse = %v", r)
	}
	if r := errorResponse(&messages.TopicPartitions{}, errClusterAuth, "no"); r != nil {
		t.Fatalf("errorResponse of a non-request = %v, want nil", r)
	}
	lr, ok := errorResponse(&messages.DescribeLogDirsRequest{CorrelationId: 3}, errClusterAuth, "no").(*messages.DescribeLogDirsResponse)
	if !ok || lr.CorrelationId != 3 || lr.ErrorMessage != "no" {
		t.Fatalf("errorResponse(DescribeLogDirs) = %v", lr)
	}
}

// aclHarness is an in-process actor behind the remote ACL middleware; it
// records what it is delivered and answers with answer.
type aclHarness struct {
	t      *testing.T
	system *actor.ActorSystem
	pid    *actor.PID
	az     *acl.Authorizer
	hook   *test.Hook
	mu     sync.Mutex
	got    []proto.Message
	denied int
}

func newACLHarness(t *testing.T, answer func(proto.Message) proto.Message, bindings ...acl.Binding) *aclHarness {
	t.Helper()
	az, err := acl.New(acl.Config{SuperUsers: []string{"User:admin"}}, bindings)
	if err != nil {
		t.Fatal(err)
	}
	l := logrus.New()
	l.SetOutput(io.Discard)
	h := &aclHarness{t: t, system: actor.NewActorSystem(), az: az, hook: test.NewLocal(l)}
	ra, err := NewRemoteACL(RemoteACLConfig{Authorizer: az, Logger: logrus.NewEntry(l), OnDenied: func(acl.Operation, acl.ResourceType) {
		h.mu.Lock()
		h.denied++
		h.mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	props := actor.PropsFromFunc(func(ctx actor.Context) {
		m, ok := ctx.Message().(proto.Message)
		if !ok {
			return
		}
		h.mu.Lock()
		h.got = append(h.got, m)
		h.mu.Unlock()
		if ctx.Sender() != nil {
			ctx.Respond(answer(m))
		}
	}, actor.WithReceiverMiddleware(ra.Middleware()))
	h.pid = h.system.Root.Spawn(props)
	t.Cleanup(h.system.Shutdown)
	return h
}

// ask sends m as principal (""), with peer host, and returns the answer.
func (h *aclHarness) ask(principal, host string, m proto.Message) any {
	h.t.Helper()
	f := actor.NewFuture(h.system, 2*time.Second)
	hdr := map[string]string{}
	if principal != "" {
		hdr[PrincipalHeader] = principal
	}
	if host != "" {
		hdr[PeerHostHeader] = host
	}
	h.system.Root.Send(h.pid, &actor.MessageEnvelope{Header: hdr, Message: m, Sender: f.PID()})
	res, err := f.Result()
	if err != nil {
		return err
	}
	return res
}

func (h *aclHarness) delivered() []proto.Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]proto.Message(nil), h.got...)
}

// echo answers each request with a success response shaped after it.
func echo(m proto.Message) proto.Message {
	switch r := m.(type) {
	case *messages.MetadataRequest:
		names := r.Topics
		if len(names) == 0 {
			names = []string{"orders", "secret"}
		}
		resp := &messages.MetadataResponse{CorrelationId: r.CorrelationId}
		for _, n := range names {
			resp.Topics = append(resp.Topics, &messages.TopicMetadataResponse{Name: n, Partitions: []*messages.PartitionMetadata{{Partition: 0}}})
		}
		return resp
	case *messages.OffsetCommitRequest:
		resp := &messages.OffsetCommitResponse{CorrelationId: r.CorrelationId}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				resp.Results = append(resp.Results, &messages.PartitionResult{Topic: t.Topic, Partition: p.Partition})
			}
		}
		return resp
	case *messages.ListGroupsRequest:
		return &messages.ListGroupsResponse{CorrelationId: r.CorrelationId, Groups: []*messages.ListedGroup{{GroupId: "g1"}, {GroupId: "hidden"}}}
	case *messages.DescribeGroupsRequest:
		resp := &messages.DescribeGroupsResponse{CorrelationId: r.CorrelationId}
		for _, g := range r.GroupIds {
			resp.Groups = append(resp.Groups, &messages.DescribedGroup{GroupId: g, GroupState: "Empty"})
		}
		return resp
	}
	return errorResponse(m, 0, "")
}

func allow(principal string, res acl.ResourceType, pattern acl.PatternType, name string) acl.Binding {
	return acl.Binding{Principal: principal, Host: "*", Resource: res, Pattern: pattern, Name: name, Operation: acl.OpAll, Permission: acl.Allow}
}

func TestRemoteACLMiddleware(t *testing.T) {
	h := newACLHarness(t, echo,
		allow("User:app", acl.ResourceTopic, acl.PatternLiteral, "orders"),
		allow("User:app", acl.ResourceGroup, acl.PatternLiteral, "g1"),
		acl.Binding{Principal: "User:app", Host: "10.0.0.9", Resource: acl.ResourceTopic, Pattern: acl.PatternLiteral, Name: "orders",
			Operation: acl.OpWrite, Permission: acl.Deny},
	)

	// Refused: a typed answer naming the operation and topic; the actor
	// never sees the request.
	res := h.ask("User:app", "", &messages.ProduceRequest{Topic: "secret", Partition: 2, CorrelationId: 9})
	pr, ok := res.(*messages.ProduceResponse)
	if !ok || pr.ErrorCode != errTopicAuth || pr.CorrelationId != 9 || pr.Partition != 2 ||
		!strings.Contains(pr.ErrorMessage, `WRITE topic "secret"`) || !strings.Contains(pr.ErrorMessage, "User:app") {
		t.Fatalf("refused produce answered %v", res)
	}
	err := pr.ErrorCode.Err(pr.ErrorMessage)
	if err == nil || !strings.Contains(err.Error(), "TOPIC_AUTHORIZATION_FAILED") || pr.ErrorCode.Retriable() {
		t.Fatalf("refusal as error: %v (retriable %v)", err, pr.ErrorCode.Retriable())
	}
	if got := h.delivered(); len(got) != 0 {
		t.Fatalf("the actor was delivered %v", got)
	}

	// Allowed, from this peer; the deny naming host 10.0.0.9 applies to
	// that host only.
	if res := h.ask("User:app", "10.0.0.1:5000", &messages.ProduceRequest{Topic: "orders"}); res.(*messages.ProduceResponse).ErrorCode != 0 {
		t.Fatalf("allowed produce answered %v", res)
	}
	if res := h.ask("User:app", "10.0.0.9:5000", &messages.ProduceRequest{Topic: "orders"}); res.(*messages.ProduceResponse).ErrorCode != errTopicAuth {
		t.Fatalf("produce from the denied host answered %v", res)
	}

	// In-process (no principal), host and super-user requests pass.
	for _, p := range []string{"", "Host:host2", "User:admin"} {
		if res := h.ask(p, "", &messages.ProduceRequest{Topic: "secret"}); res.(*messages.ProduceResponse).ErrorCode != 0 {
			t.Fatalf("%q: produce answered %v", p, res)
		}
	}
	if res := h.ask("Host:host2", "", &messages.AlterPartitionRequest{}); res.(*messages.AlterPartitionResponse).ErrorCode != 0 {
		t.Fatalf("host's AlterPartition answered %v", res)
	}
	// A host-only request from a user is refused with its response type.
	if res := h.ask("User:admin", "", &messages.AlterPartitionRequest{CorrelationId: 4}); res.(*messages.AlterPartitionResponse).ErrorCode != errClusterAuth {
		t.Fatalf("user's AlterPartition answered %v", res)
	}
	if res := h.ask("User:app", "", &messages.FetchRequest{Topic: "orders", ReplicaId: 2}); res.(*messages.FetchResponse).ErrorCode != errClusterAuth {
		t.Fatalf("user's replica fetch answered %v", res)
	}

	// A message type without a rule, or a principal that does not parse,
	// is dropped: no answer.
	before := len(h.delivered())
	if res := h.ask("User:app", "", &messages.RebalanceStarted{GroupId: "g1"}); res == nil || !strings.Contains(res.(error).Error(), "timeout") {
		t.Fatalf("a message without a rule answered %v", res)
	}
	if res := h.ask("nobody", "", &messages.ProduceRequest{Topic: "orders"}); res == nil || !strings.Contains(res.(error).Error(), "timeout") {
		t.Fatalf("an unparsable principal answered %v", res)
	}
	if got := h.delivered(); len(got) != before {
		t.Fatalf("dropped messages were delivered: %v", got[before:])
	}
}

func TestRemoteACLNarrows(t *testing.T) {
	h := newACLHarness(t, echo,
		allow("User:app", acl.ResourceTopic, acl.PatternPrefixed, "ord"),
		allow("User:app", acl.ResourceGroup, acl.PatternLiteral, "g1"),
	)

	// A commit naming an allowed and a refused topic: the actor commits
	// the allowed one, the answer has both.
	res := h.ask("User:app", "", &messages.OffsetCommitRequest{GroupId: "g1", CorrelationId: 5, Topics: []*messages.OffsetCommitTopic{
		{Topic: "orders", Partitions: []*messages.OffsetCommitPartition{{Partition: 0, Offset: 1}}},
		{Topic: "secret", Partitions: []*messages.OffsetCommitPartition{{Partition: 1, Offset: 1}}},
	}})
	cr, ok := res.(*messages.OffsetCommitResponse)
	if !ok || cr.CorrelationId != 5 || len(cr.Results) != 2 {
		t.Fatalf("commit answered %v", res)
	}
	codes := map[string]messages.ErrorCode{}
	for _, r := range cr.Results {
		codes[r.Topic] = r.ErrorCode
	}
	if codes["orders"] != 0 || codes["secret"] != errTopicAuth {
		t.Fatalf("commit results %v", cr.Results)
	}
	got := h.delivered()
	if len(got) != 1 || len(got[0].(*messages.OffsetCommitRequest).Topics) != 1 || got[0].(*messages.OffsetCommitRequest).Topics[0].Topic != "orders" {
		t.Fatalf("the coordinator was delivered %v", got)
	}

	// A commit for another group: refused whole.
	res = h.ask("User:app", "", &messages.OffsetCommitRequest{GroupId: "g2", Topics: []*messages.OffsetCommitTopic{{Topic: "orders", Partitions: []*messages.OffsetCommitPartition{{}}}}})
	if cr := res.(*messages.OffsetCommitResponse); cr.ErrorCode != errGroupAuth || len(cr.Results) != 1 || cr.Results[0].ErrorCode != errGroupAuth ||
		!strings.Contains(cr.ErrorMessage, `READ group "g2"`) {
		t.Fatalf("commit to g2 answered %v", cr)
	}

	// Metadata: a listing keeps the describable topics; a named refused
	// topic is TOPIC_AUTHORIZATION_FAILED with nothing else.
	md := h.ask("User:app", "", &messages.MetadataRequest{}).(*messages.MetadataResponse)
	if len(md.Topics) != 1 || md.Topics[0].Name != "orders" {
		t.Fatalf("metadata listing %v", md.Topics)
	}
	md = h.ask("User:app", "", &messages.MetadataRequest{Topics: []string{"orders", "secret"}}).(*messages.MetadataResponse)
	if len(md.Topics) != 2 || md.Topics[0].ErrorCode != 0 || md.Topics[1].ErrorCode != errTopicAuth || len(md.Topics[1].Partitions) != 0 {
		t.Fatalf("named metadata %v", md.Topics)
	}

	// DescribeGroups: the refused group answered by the middleware.
	dg := h.ask("User:app", "", &messages.DescribeGroupsRequest{GroupIds: []string{"g1", "g2"}}).(*messages.DescribeGroupsResponse)
	if len(dg.Groups) != 2 || dg.Groups[0].GroupId != "g1" || dg.Groups[0].ErrorCode != 0 || dg.Groups[1].GroupId != "g2" || dg.Groups[1].ErrorCode != errGroupAuth {
		t.Fatalf("describe groups %v", dg.Groups)
	}
	// ListGroups without DESCRIBE on the cluster: the describable groups.
	lg := h.ask("User:app", "", &messages.ListGroupsRequest{}).(*messages.ListGroupsResponse)
	if len(lg.Groups) != 1 || lg.Groups[0].GroupId != "g1" {
		t.Fatalf("list groups %v", lg.Groups)
	}
}

func TestRemoteACLAudit(t *testing.T) {
	h := newACLHarness(t, echo)
	for range 3 {
		h.ask("User:app", "", &messages.ProduceRequest{Topic: "orders"})
	}
	h.ask("User:app", "", &messages.ProduceRequest{Topic: "other"})
	h.mu.Lock()
	denied := h.denied
	h.mu.Unlock()
	if denied != 4 {
		t.Fatalf("OnDenied called %d times, want 4", denied)
	}
	var lines []string
	for _, e := range h.hook.AllEntries() {
		lines = append(lines, e.Data["resource"].(string))
	}
	if len(lines) != 2 || lines[0] != "orders" || lines[1] != "other" {
		t.Fatalf("audit lines for %v, want one for orders and one for other", lines)
	}
}
