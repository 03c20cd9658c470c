// Package acltest runs the remote's ACLs (client.RemoteACL) between two
// real protoactor actor systems over the TLS remote: every client request
// type × {no ACL, allow, deny wins over allow, prefixed allow, super user,
// host}. The sending side runs in a child process (this test binary
// re-executed with ACTORLOG_ACLTEST_SENDER set): two remotes in one
// process race in protoactor's global gRPC logger set-up (DESIGN §8).
//
// The test process serves, behind the ACL middleware, an actor that
// answers every request with a success response of its type; the child
// sends each request of requests() and prints one line per answer: the
// first error code in it with its message (NONE when none, ERROR_MESSAGE
// for an answer with only a message) and, for listings, EMPTY when the
// list came back empty.
package acltest

import (
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/internal/acl"
	"github.com/actorlog/actorlog/internal/certs/certstest"
	"github.com/actorlog/actorlog/internal/tlsconf"
	"github.com/actorlog/actorlog/messages"
)

// Environment of the sender process.
const (
	envSender = "ACTORLOG_ACLTEST_SENDER" // the server actor's address
	envCert   = "ACTORLOG_ACLTEST_CERT"
	envKey    = "ACTORLOG_ACLTEST_KEY"
	envCA     = "ACTORLOG_ACLTEST_CA"
)

const serverID = "server"

func TestMain(m *testing.M) {
	if addr := os.Getenv(envSender); addr != "" {
		if err := sender(addr); err != nil {
			fmt.Println("SENDER ERR:", err)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func quiet() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}

// request is one request the sender sends, under a label.
type request struct {
	label string
	msg   proto.Message
}

// requests returns one request of every type a client may send (and two
// listings): topic "orders", group "g1".
func requests() []request {
	commit := []*messages.OffsetCommitTopic{{Topic: "orders", Partitions: []*messages.OffsetCommitPartition{{Partition: 0, Offset: 1}}}}
	parts := []*messages.TopicPartitions{{Topic: "orders", Partitions: []int32{0}}}
	return []request{
		{"Produce", &messages.ProduceRequest{Topic: "orders", Acks: messages.Acks_ACKS_ALL}},
		{"Fetch", &messages.FetchRequest{Topic: "orders", ReplicaId: -1}},
		{"ListOffsets", &messages.ListOffsetsRequest{Topic: "orders"}},
		{"OffsetForLeaderEpoch", &messages.OffsetForLeaderEpochRequest{Topic: "orders", ReplicaId: -1}},
		{"Metadata", &messages.MetadataRequest{Topics: []string{"orders"}}},
		{"Metadata listing", &messages.MetadataRequest{}},
		{"CreateTopic", &messages.CreateTopicRequest{Name: "orders", Partitions: 1, ReplicationFactor: 1}},
		{"DeleteTopic", &messages.DeleteTopicRequest{Name: "orders"}},
		{"CreatePartitions", &messages.CreatePartitionsRequest{Name: "orders", Total: 2}},
		{"AlterTopicConfigs", &messages.AlterTopicConfigsRequest{Name: "orders"}},
		{"ElectLeaders", &messages.ElectLeadersRequest{Partitions: parts}},
		{"ReassignPartitions", &messages.ReassignPartitionsRequest{Topic: "orders"}},
		{"CreateAcls", &messages.CreateAclsRequest{}},
		{"DeleteAcls", &messages.DeleteAclsRequest{}},
		{"DescribeAcls", &messages.DescribeAclsRequest{}},
		{"AlterScramCredentials", &messages.AlterScramCredentialsRequest{}},
		{"DescribeScramUsers", &messages.DescribeScramUsersRequest{}},
		{"DescribeLogDirs", &messages.DescribeLogDirsRequest{}},
		{"DescribeCluster", &messages.DescribeClusterRequest{}},
		{"FindCoordinator", &messages.FindCoordinatorRequest{GroupId: "g1"}},
		{"JoinGroup", &messages.JoinGroupRequest{GroupId: "g1"}},
		{"SyncGroup", &messages.SyncGroupRequest{GroupId: "g1"}},
		{"Heartbeat", &messages.HeartbeatRequest{GroupId: "g1"}},
		{"LeaveGroup", &messages.LeaveGroupRequest{GroupId: "g1"}},
		{"OffsetCommit", &messages.OffsetCommitRequest{GroupId: "g1", Topics: commit}},
		{"OffsetFetch", &messages.OffsetFetchRequest{GroupId: "g1", Topics: parts}},
		{"OffsetFetch listing", &messages.OffsetFetchRequest{GroupId: "g1"}},
		{"DescribeGroups", &messages.DescribeGroupsRequest{GroupIds: []string{"g1"}}},
		{"ListGroups", &messages.ListGroupsRequest{}},
		{"DeleteGroups", &messages.DeleteGroupsRequest{GroupIds: []string{"g1"}}},
		{"InitProducerId", &messages.InitProducerIdRequest{}},
	}
}

// hostOnly are the request types only hosts send (the guard drops them
// from anyone else; client's own tests cover them).
var hostOnly = map[string]bool{"AlterPartitionRequest": true, "ControlledShutdownRequest": true, "CreateOffsetsTopicRequest": true}

// sender is the child process: it sends every request to the server and
// prints "<label>: <outcome>" for each.
func sender(addr string) error {
	r, err := tlsconf.NewReloader(tlsconf.Files{Cert: os.Getenv(envCert), Key: os.Getenv(envKey), CA: os.Getenv(envCA)}, nil)
	if err != nil {
		return fmt.Errorf("reloader: %w", err)
	}
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return client.NewSlogLogger(quiet()) }))
	cfg, err := client.RemoteConfig("127.0.0.1:0", "", client.WithTLS(r, tls.RequireAndVerifyClientCert), client.WithGuardLogger(quiet()))
	if err != nil {
		return err
	}
	rem, err := client.StartRemote(system, cfg)
	if err != nil {
		return err
	}
	defer rem.Shutdown(false)
	server := actor.NewPID(addr, serverID)
	for _, rq := range requests() {
		res, err := system.Root.RequestFuture(server, rq.msg, 5*time.Second).Result()
		if err != nil {
			fmt.Printf("%s: ERR %v\n", rq.label, err)
			continue
		}
		m, ok := res.(proto.Message)
		if !ok {
			fmt.Printf("%s: ERR answer %T\n", rq.label, res)
			continue
		}
		fmt.Printf("%s: %s\n", rq.label, outcome(m))
	}
	return nil
}

// outcome is an answer's first error code (depth first) with its
// message, "NONE" when it has none, or "EMPTY" when it is a listing that
// came back empty.
func outcome(m proto.Message) string {
	if code, msg, ok := firstError(m.ProtoReflect()); ok {
		return code + " " + msg
	}
	if fd := m.ProtoReflect().Descriptor().Fields().ByName("error_message"); fd != nil {
		if msg := m.ProtoReflect().Get(fd).String(); msg != "" {
			return "ERROR_MESSAGE " + msg
		}
	}
	switch r := m.(type) {
	case *messages.MetadataResponse:
		if len(r.Topics) == 0 {
			return "EMPTY"
		}
	case *messages.ListGroupsResponse:
		if len(r.Groups) == 0 {
			return "EMPTY"
		}
	case *messages.OffsetFetchResponse:
		if len(r.Topics) == 0 {
			return "EMPTY"
		}
	}
	return "NONE"
}

func firstError(m protoreflect.Message) (code, msg string, ok bool) {
	fields := m.Descriptor().Fields()
	if fd := fields.ByName("error_code"); fd != nil && fd.Kind() == protoreflect.EnumKind {
		if c := messages.ErrorCode(m.Get(fd).Enum()); c != 0 {
			if md := fields.ByName("error_message"); md != nil {
				msg = m.Get(md).String()
			}
			return c.ShortName(), msg, true
		}
	}
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fd.Kind() != protoreflect.MessageKind || fd.IsMap() {
			continue
		}
		if fd.IsList() {
			l := m.Get(fd).List()
			for j := 0; j < l.Len(); j++ {
				if code, msg, ok := firstError(l.Get(j).Message()); ok {
					return code, msg, true
				}
			}
		} else if m.Has(fd) {
			if code, msg, ok := firstError(m.Get(fd).Message()); ok {
				return code, msg, true
			}
		}
	}
	return "", "", false
}

// answer is the server's success response to m.
func answer(m proto.Message) proto.Message {
	switch r := m.(type) {
	case *messages.MetadataRequest:
		return &messages.MetadataResponse{Topics: []*messages.TopicMetadataResponse{{Name: "orders"}}}
	case *messages.OffsetFetchRequest:
		return &messages.OffsetFetchResponse{Topics: []*messages.OffsetFetchTopic{{Topic: "orders", Partitions: []*messages.OffsetFetchPartition{{Offset: 3}}}}}
	case *messages.ListGroupsRequest:
		return &messages.ListGroupsResponse{Groups: []*messages.ListedGroup{{GroupId: "g1"}}}
	case *messages.DescribeGroupsRequest:
		return &messages.DescribeGroupsResponse{Groups: []*messages.DescribedGroup{{GroupId: r.GroupIds[0]}}}
	case *messages.DeleteGroupsRequest:
		return &messages.DeleteGroupsResponse{Results: []*messages.DeleteGroupsResult{{GroupId: r.GroupIds[0]}}}
	case *messages.CreateTopicRequest, *messages.DeleteTopicRequest, *messages.CreatePartitionsRequest, *messages.AlterTopicConfigsRequest:
		return &messages.AdminResponse{}
	}
	name := strings.TrimSuffix(string(m.ProtoReflect().Descriptor().FullName()), "Request") + "Response"
	mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(name))
	if err != nil {
		return &messages.AdminResponse{ErrorCode: messages.ErrorCode_ERROR_CODE_UNKNOWN_SERVER_ERROR, ErrorMessage: "no response type " + name}
	}
	return mt.New().Interface()
}

// startServer runs the TLS remote (a host1 certificate) and the server
// actor behind the ACLs of az; it returns the remote's address.
func startServer(t *testing.T, hostCert tlsconf.Files, az *acl.Authorizer) string {
	t.Helper()
	r, err := tlsconf.NewReloader(hostCert, nil)
	if err != nil {
		t.Fatal(err)
	}
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return client.NewSlogLogger(quiet()) }))
	cfg, err := client.RemoteConfig("127.0.0.1:0", "", client.WithGuardLogger(quiet()), client.WithTLS(r, tls.RequireAndVerifyClientCert))
	if err != nil {
		t.Fatal(err)
	}
	rem, err := client.StartRemote(system, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rem.Shutdown(false); system.Shutdown() })
	ra, err := client.NewRemoteACL(client.RemoteACLConfig{Authorizer: az, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = system.Root.SpawnNamed(actor.PropsFromFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(proto.Message); ok && ctx.Sender() != nil {
			ctx.Respond(answer(m))
		}
	}, actor.WithReceiverMiddleware(ra.Middleware())), serverID)
	if err != nil {
		t.Fatal(err)
	}
	return system.Address()
}

// runSender runs the sender with f and returns its outcome per label.
func runSender(t *testing.T, addr string, f tlsconf.Files) map[string]string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envSender+"="+addr, envCert+"="+f.Cert, envKey+"="+f.Key, envCA+"="+f.CA)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sender process: %v (output %q)", err, out)
	}
	got := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "SENDER ERR") {
			t.Fatalf("sender: %s", line)
		}
		if label, res, ok := strings.Cut(line, ": "); ok {
			got[label] = res
		}
	}
	return got
}

// TestRequestsCoverEveryType: requests() sends every client request type.
func TestRequestsCoverEveryType(t *testing.T) {
	sent := map[string]bool{}
	for _, r := range requests() {
		sent[string(r.msg.ProtoReflect().Descriptor().Name())] = true
	}
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		d := mt.Descriptor()
		name := string(d.Name())
		if strings.HasPrefix(string(d.FullName()), "actorlog.messages.") && strings.HasSuffix(name, "Request") && !sent[name] && !hostOnly[name] {
			t.Errorf("requests() sends no %s", name)
		}
		return true
	})
}

func TestRemoteACLsOverTLS(t *testing.T) {
	dir := t.TempDir()
	ca := certstest.NewCA(t, dir)
	az, err := acl.New(acl.Config{SuperUsers: []string{"User:admin"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := startServer(t, certstest.WritePair(t, ca, dir, "host1", true), az)
	app, admin, host2 := certstest.WritePair(t, ca, dir, "app", false), certstest.WritePair(t, ca, dir, "admin", false), certstest.WritePair(t, ca, dir, "host2", true)

	all := func(pattern acl.PatternType, topic, group string, perm acl.Permission) []acl.Binding {
		b := func(res acl.ResourceType, pt acl.PatternType, name string) acl.Binding {
			return acl.Binding{Principal: "User:app", Host: "*", Resource: res, Pattern: pt, Name: name, Operation: acl.OpAll, Permission: perm}
		}
		return []acl.Binding{b(acl.ResourceTopic, pattern, topic), b(acl.ResourceGroup, pattern, group), b(acl.ResourceCluster, acl.PatternLiteral, acl.ClusterName)}
	}
	allowLiteral := all(acl.PatternLiteral, "orders", "g1", acl.Allow)

	// refused is the outcome of each request when refused.
	refused := map[string]string{
		"Metadata listing": "EMPTY", "ListGroups": "EMPTY", "DescribeCluster": "NONE",
		"CreateTopic": "TOPIC_AUTHORIZATION_FAILED", "ElectLeaders": "CLUSTER_AUTHORIZATION_FAILED",
		"ReassignPartitions": "CLUSTER_AUTHORIZATION_FAILED", "CreateAcls": "CLUSTER_AUTHORIZATION_FAILED",
		"DeleteAcls": "CLUSTER_AUTHORIZATION_FAILED", "DescribeAcls": "CLUSTER_AUTHORIZATION_FAILED",
		"AlterScramCredentials": "CLUSTER_AUTHORIZATION_FAILED", "DescribeScramUsers": "CLUSTER_AUTHORIZATION_FAILED",
		"InitProducerId": "CLUSTER_AUTHORIZATION_FAILED",
		// DescribeLogDirsResponse has no error code, only a message.
		"DescribeLogDirs": "ERROR_MESSAGE",
	}
	for _, r := range requests() {
		if _, ok := refused[r.label]; ok {
			continue
		}
		switch {
		case strings.Contains(r.label, "Group") || strings.HasPrefix(r.label, "Offset") && r.label != "OffsetForLeaderEpoch" || r.label == "FindCoordinator" || r.label == "Heartbeat":
			refused[r.label] = "GROUP_AUTHORIZATION_FAILED"
		default:
			refused[r.label] = "TOPIC_AUTHORIZATION_FAILED"
		}
	}
	for _, tc := range []struct {
		name     string
		bindings []acl.Binding
		cert     tlsconf.Files
		allowed  bool
	}{
		{"no ACL", nil, app, false},
		{"allow", allowLiteral, app, true},
		{"deny wins over allow", append(append([]acl.Binding(nil), allowLiteral...), all(acl.PatternLiteral, "orders", "g1", acl.Deny)...), app, false},
		{"prefixed allow", all(acl.PatternPrefixed, "ord", "g", acl.Allow), app, true},
		{"super user", nil, admin, true},
		{"host", nil, host2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := az.SetBindings(tc.bindings); err != nil {
				t.Fatal(err)
			}
			got := runSender(t, addr, tc.cert)
			for _, r := range requests() {
				out, ok := got[r.label]
				if !ok {
					t.Errorf("%s: no outcome", r.label)
					continue
				}
				want := "NONE"
				if !tc.allowed {
					want = refused[r.label]
				}
				if code, _, _ := strings.Cut(out, " "); code != want {
					t.Errorf("%s: %s, want %s", r.label, out, want)
					continue
				}
				// A metadata topic entry has a code but no message field.
				if (strings.HasSuffix(want, "_AUTHORIZATION_FAILED") || want == "ERROR_MESSAGE") && r.label != "Metadata" && !strings.Contains(out, "User:app is not authorized to ") {
					t.Errorf("%s: message %q does not say who may not do what", r.label, out)
				}
			}
			if !tc.allowed && !strings.Contains(got["Produce"], `WRITE topic "orders"`) {
				t.Errorf("Produce refused with %q, want it to name WRITE and the topic", got["Produce"])
			}
		})
	}
}
