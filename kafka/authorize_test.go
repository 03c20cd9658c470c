package kafka

import (
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/internal/acl"
	"github.com/actorlog/actorlog/storage/record"
)

// need is one permission a request needs.
type need struct {
	res  acl.ResourceType
	name string
	op   acl.Operation
}

// authzCase is one request type of the gate table.
type authzCase struct {
	name string
	req  func() kmsg.Request
	// needs are the permissions the request needs; the first is the one
	// the deny case denies, and its refusal code is want.
	needs []need
	want  int16
	// prefixed, when set, are the bindings of the prefixed-allow case
	// (default: each need's resource by the prefix of its name).
	prefixed []acl.Binding
	// code extracts the code of the needed resource from the response.
	code func(kmsg.Response) int16
}

const anon = AnonymousPrincipal

func allowOf(n need, pattern acl.PatternType, name string) acl.Binding {
	return acl.Binding{Principal: anon, Host: acl.WildcardHost, Resource: n.res, Name: name, Pattern: pattern, Operation: n.op, Permission: acl.Allow}
}

func topicNeed(op acl.Operation) need { return need{acl.ResourceTopic, "orders", op} }
func groupNeed(op acl.Operation) need { return need{acl.ResourceGroup, "payments", op} }
func clusterNeed(op acl.Operation) need {
	return need{acl.ResourceCluster, acl.ClusterName, op}
}

// first finds the first code f reports non-negative, else -2 (the
// resource is missing from the response).
func firstCode[T any](items []T, f func(T) (int16, bool)) int16 {
	for _, it := range items {
		if c, ok := f(it); ok {
			return c
		}
	}
	return -2
}

func authzCases(t *testing.T) []authzCase {
	batch := testBatch(t, 1, record.CompressionNone)
	ver := func(r kmsg.Request, v int16) kmsg.Request { r.SetVersion(v); return r }
	return []authzCase{
		{name: "Produce", needs: []need{topicNeed(acl.OpWrite)}, want: errTopicAuth,
			req: func() kmsg.Request { return produceReq(9, -1, "orders", map[int32][]byte{0: batch}) },
			code: func(r kmsg.Response) int16 {
				return firstCode(r.(*kmsg.ProduceResponse).Topics, func(t kmsg.ProduceResponseTopic) (int16, bool) {
					return t.Partitions[0].ErrorCode, t.Topic == "orders"
				})
			}},
		{name: "Fetch", needs: []need{topicNeed(acl.OpRead)}, want: errTopicAuth,
			req: func() kmsg.Request { return fetchReq(12, "orders", []int64{0}, 0, 0, 1<<20, 1<<20) },
			code: func(r kmsg.Response) int16 {
				return firstCode(r.(*kmsg.FetchResponse).Topics, func(t kmsg.FetchResponseTopic) (int16, bool) {
					return t.Partitions[0].ErrorCode, t.Topic == "orders"
				})
			}},
		{name: "ListOffsets", needs: []need{topicNeed(acl.OpDescribe)}, want: errTopicAuth,
			req: func() kmsg.Request {
				req := kmsg.NewPtrListOffsetsRequest()
				req.SetVersion(7)
				rt := kmsg.NewListOffsetsRequestTopic()
				rt.Topic = "orders"
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Timestamp = -1
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				return req
			},
			code: func(r kmsg.Response) int16 {
				return firstCode(r.(*kmsg.ListOffsetsResponse).Topics, func(t kmsg.ListOffsetsResponseTopic) (int16, bool) {
					return t.Partitions[0].ErrorCode, t.Topic == "orders"
				})
			}},
		{name: "Metadata", needs: []need{topicNeed(acl.OpDescribe)}, want: errTopicAuth,
			req: func() kmsg.Request { return metadataReq(12, "orders") },
			code: func(r kmsg.Response) int16 {
				return firstCode(r.(*kmsg.MetadataResponse).Topics, func(t kmsg.MetadataResponseTopic) (int16, bool) {
					return t.ErrorCode, t.Topic != nil && *t.Topic == "orders"
				})
			}},
		{name: "OffsetForLeaderEpoch", needs: []need{topicNeed(acl.OpDescribe)}, want: errTopicAuth,
			req: func() kmsg.Request {
				req := kmsg.NewPtrOffsetForLeaderEpochRequest()
				req.SetVersion(4)
				req.ReplicaID = -1
				rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
				rt.Topic = "orders"
				rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
				rp.LeaderEpoch, rp.CurrentLeaderEpoch = 3, -1
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				return req
			},
			code: func(r kmsg.Response) int16 {
				return firstCode(r.(*kmsg.OffsetForLeaderEpochResponse).Topics, func(t kmsg.OffsetForLeaderEpochResponseTopic) (int16, bool) {
					return t.Partitions[0].ErrorCode, t.Topic == "orders"
				})
			}},
		{name: "OffsetCommit", needs: []need{groupNeed(acl.OpRead), topicNeed(acl.OpRead)}, want: errGroupAuth,
			req: func() kmsg.Request {
				req := kmsg.NewPtrOffsetCommitRequest()
				req.SetVersion(8)
				req.Group, req.Generation, req.MemberID = "payments", -1, ""
				rt := kmsg.NewOffsetCommitRequestTopic()
				rt.Topic = "orders"
				rp := kmsg.NewOffsetCommitRequestTopicPartition()
				rp.Offset = 1
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				return req
			},
			code: func(r kmsg.Response) int16 {
				return firstCode(r.(*kmsg.OffsetCommitResponse).Topics, func(t kmsg.OffsetCommitResponseTopic) (int16, bool) {
					return t.Partitions[0].ErrorCode, t.Topic == "orders"
				})
			}},
		{name: "OffsetFetch v7", needs: []need{groupNeed(acl.OpDescribe), topicNeed(acl.OpDescribe)}, want: errGroupAuth,
			req: func() kmsg.Request {
				req := kmsg.NewPtrOffsetFetchRequest()
				req.SetVersion(7)
				req.Group = "payments"
				rt := kmsg.NewOffsetFetchRequestTopic()
				rt.Topic, rt.Partitions = "orders", []int32{0}
				req.Topics = append(req.Topics, rt)
				return req
			},
			code: func(r kmsg.Response) int16 {
				resp := r.(*kmsg.OffsetFetchResponse)
				if resp.ErrorCode != 0 {
					return resp.ErrorCode
				}
				// Served, the fake backend answers its own topic.
				return max(0, firstCode(resp.Topics, func(t kmsg.OffsetFetchResponseTopic) (int16, bool) {
					return t.Partitions[0].ErrorCode, t.Topic == "orders"
				}))
			}},
		{name: "OffsetFetch v8", needs: []need{groupNeed(acl.OpDescribe), topicNeed(acl.OpDescribe)}, want: errGroupAuth,
			req: func() kmsg.Request {
				req := kmsg.NewPtrOffsetFetchRequest()
				req.SetVersion(8)
				rg := kmsg.NewOffsetFetchRequestGroup()
				rg.Group = "payments"
				rt := kmsg.NewOffsetFetchRequestGroupTopic()
				rt.Topic, rt.Partitions = "orders", []int32{0}
				rg.Topics = append(rg.Topics, rt)
				req.Groups = append(req.Groups, rg)
				return req
			},
			code: func(r kmsg.Response) int16 {
				return firstCode(r.(*kmsg.OffsetFetchResponse).Groups, func(g kmsg.OffsetFetchResponseGroup) (int16, bool) {
					if g.ErrorCode != 0 || len(g.Topics) == 0 {
						return g.ErrorCode, g.Group == "payments"
					}
					return g.Topics[0].Partitions[0].ErrorCode, g.Group == "payments"
				})
			}},
		{name: "FindCoordinator v3", needs: []need{groupNeed(acl.OpDescribe)}, want: errGroupAuth,
			req: func() kmsg.Request {
				req := kmsg.NewPtrFindCoordinatorRequest()
				req.SetVersion(3)
				req.CoordinatorKey = "payments"
				return req
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.FindCoordinatorResponse).ErrorCode }},
		{name: "FindCoordinator v4", needs: []need{groupNeed(acl.OpDescribe)}, want: errGroupAuth,
			req: func() kmsg.Request {
				req := kmsg.NewPtrFindCoordinatorRequest()
				req.SetVersion(4)
				req.CoordinatorKeys = []string{"payments"}
				return req
			},
			code: func(r kmsg.Response) int16 {
				return firstCode(r.(*kmsg.FindCoordinatorResponse).Coordinators, func(c kmsg.FindCoordinatorResponseCoordinator) (int16, bool) {
					return c.ErrorCode, c.Key == "payments"
				})
			}},
		{name: "JoinGroup", needs: []need{groupNeed(acl.OpRead)}, want: errGroupAuth,
			req: func() kmsg.Request {
				req := kmsg.NewPtrJoinGroupRequest()
				req.SetVersion(5)
				req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = "payments", 10000, 10000, "consumer"
				p := kmsg.NewJoinGroupRequestProtocol()
				p.Name = "range"
				req.Protocols = append(req.Protocols, p)
				return req
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.JoinGroupResponse).ErrorCode }},
		{name: "SyncGroup", needs: []need{groupNeed(acl.OpRead)}, want: errGroupAuth,
			req: func() kmsg.Request {
				req := kmsg.NewPtrSyncGroupRequest()
				req.SetVersion(3)
				req.Group, req.MemberID = "payments", "m"
				return req
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.SyncGroupResponse).ErrorCode }},
		{name: "Heartbeat", needs: []need{groupNeed(acl.OpRead)}, want: errGroupAuth,
			req: func() kmsg.Request {
				req := kmsg.NewPtrHeartbeatRequest()
				req.SetVersion(3)
				req.Group, req.MemberID = "payments", "m"
				return req
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.HeartbeatResponse).ErrorCode }},
		{name: "LeaveGroup", needs: []need{groupNeed(acl.OpRead)}, want: errGroupAuth,
			req: func() kmsg.Request {
				req := kmsg.NewPtrLeaveGroupRequest()
				req.SetVersion(1)
				req.Group, req.MemberID = "payments", "m"
				return req
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.LeaveGroupResponse).ErrorCode }},
		{name: "DescribeGroups", needs: []need{groupNeed(acl.OpDescribe)}, want: errGroupAuth,
			req: func() kmsg.Request {
				req := kmsg.NewPtrDescribeGroupsRequest()
				req.SetVersion(5)
				req.Groups = []string{"payments"}
				return req
			},
			code: func(r kmsg.Response) int16 {
				return firstCode(r.(*kmsg.DescribeGroupsResponse).Groups, func(g kmsg.DescribeGroupsResponseGroup) (int16, bool) {
					return g.ErrorCode, g.Group == "payments"
				})
			}},
		{name: "DeleteGroups", needs: []need{groupNeed(acl.OpDelete)}, want: errGroupAuth,
			req: func() kmsg.Request {
				req := kmsg.NewPtrDeleteGroupsRequest()
				req.SetVersion(2)
				req.Groups = []string{"payments"}
				return req
			},
			code: func(r kmsg.Response) int16 {
				return firstCode(r.(*kmsg.DeleteGroupsResponse).Groups, func(g kmsg.DeleteGroupsResponseGroup) (int16, bool) {
					return g.ErrorCode, g.Group == "payments"
				})
			}},
		{name: "CreateTopics", needs: []need{{acl.ResourceTopic, "orders-eu", acl.OpCreate}}, want: errTopicAuth,
			req: func() kmsg.Request {
				req := kmsg.NewPtrCreateTopicsRequest()
				req.SetVersion(7)
				req.TimeoutMillis = 5000
				rt := kmsg.NewCreateTopicsRequestTopic()
				rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "orders-eu", 1, 1
				req.Topics = append(req.Topics, rt)
				return req
			},
			code: func(r kmsg.Response) int16 {
				return firstCode(r.(*kmsg.CreateTopicsResponse).Topics, func(t kmsg.CreateTopicsResponseTopic) (int16, bool) {
					return t.ErrorCode, t.Topic == "orders-eu"
				})
			}},
		{name: "DeleteTopics", needs: []need{topicNeed(acl.OpDelete)}, want: errTopicAuth,
			req: func() kmsg.Request {
				req := kmsg.NewPtrDeleteTopicsRequest()
				req.SetVersion(5)
				req.TimeoutMillis, req.TopicNames = 5000, []string{"orders"}
				return req
			},
			code: func(r kmsg.Response) int16 {
				return firstCode(r.(*kmsg.DeleteTopicsResponse).Topics, func(t kmsg.DeleteTopicsResponseTopic) (int16, bool) {
					return t.ErrorCode, t.Topic != nil && *t.Topic == "orders"
				})
			}},
		{name: "CreatePartitions", needs: []need{topicNeed(acl.OpAlter)}, want: errTopicAuth,
			req: func() kmsg.Request {
				req := kmsg.NewPtrCreatePartitionsRequest()
				req.SetVersion(3)
				req.TimeoutMillis = 5000
				rt := kmsg.NewCreatePartitionsRequestTopic()
				rt.Topic, rt.Count = "orders", 4
				req.Topics = append(req.Topics, rt)
				return req
			},
			code: func(r kmsg.Response) int16 {
				return firstCode(r.(*kmsg.CreatePartitionsResponse).Topics, func(t kmsg.CreatePartitionsResponseTopic) (int16, bool) {
					return t.ErrorCode, t.Topic == "orders"
				})
			}},
		{name: "DescribeConfigs", needs: []need{topicNeed(acl.OpDescribeConfigs)}, want: errTopicAuth,
			req: func() kmsg.Request {
				req := kmsg.NewPtrDescribeConfigsRequest()
				req.SetVersion(4)
				rr := kmsg.NewDescribeConfigsRequestResource()
				rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "orders"
				req.Resources = append(req.Resources, rr)
				return req
			},
			code: func(r kmsg.Response) int16 {
				return firstCode(r.(*kmsg.DescribeConfigsResponse).Resources, func(x kmsg.DescribeConfigsResponseResource) (int16, bool) {
					return x.ErrorCode, x.ResourceName == "orders"
				})
			}},
		{name: "DescribeConfigs broker", needs: []need{clusterNeed(acl.OpDescribeConfigs)}, want: errClusterAuth,
			req: func() kmsg.Request {
				req := kmsg.NewPtrDescribeConfigsRequest()
				req.SetVersion(4)
				rr := kmsg.NewDescribeConfigsRequestResource()
				rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
				req.Resources = append(req.Resources, rr)
				return req
			},
			code: func(r kmsg.Response) int16 {
				return firstCode(r.(*kmsg.DescribeConfigsResponse).Resources, func(x kmsg.DescribeConfigsResponseResource) (int16, bool) {
					return x.ErrorCode, x.ResourceName == "1"
				})
			}},
		{name: "AlterConfigs", needs: []need{topicNeed(acl.OpAlterConfigs)}, want: errTopicAuth,
			req: func() kmsg.Request {
				req := kmsg.NewPtrAlterConfigsRequest()
				req.SetVersion(2)
				rr := kmsg.NewAlterConfigsRequestResource()
				rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "orders"
				req.Resources = append(req.Resources, rr)
				return req
			},
			code: func(r kmsg.Response) int16 {
				return firstCode(r.(*kmsg.AlterConfigsResponse).Resources, func(x kmsg.AlterConfigsResponseResource) (int16, bool) {
					return x.ErrorCode, x.ResourceName == "orders"
				})
			}},
		{name: "IncrementalAlterConfigs", needs: []need{topicNeed(acl.OpAlterConfigs)}, want: errTopicAuth,
			req: func() kmsg.Request {
				req := kmsg.NewPtrIncrementalAlterConfigsRequest()
				req.SetVersion(1)
				rr := kmsg.NewIncrementalAlterConfigsRequestResource()
				rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "orders"
				req.Resources = append(req.Resources, rr)
				return req
			},
			code: func(r kmsg.Response) int16 {
				return firstCode(r.(*kmsg.IncrementalAlterConfigsResponse).Resources, func(x kmsg.IncrementalAlterConfigsResponseResource) (int16, bool) {
					return x.ErrorCode, x.ResourceName == "orders"
				})
			}},
		{name: "InitProducerId", needs: []need{clusterNeed(acl.OpIdempotentWrite)}, want: errClusterAuth,
			// WRITE on any topic is enough (KIP-679).
			prefixed: []acl.Binding{allowOf(topicNeed(acl.OpWrite), acl.PatternPrefixed, "ord")},
			req:      func() kmsg.Request { return ver(kmsg.NewPtrInitProducerIDRequest(), 4) },
			code:     func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode }},
		{name: "ElectLeaders", needs: []need{clusterNeed(acl.OpAlter)}, want: errClusterAuth,
			req: func() kmsg.Request {
				req := kmsg.NewPtrElectLeadersRequest()
				req.SetVersion(2)
				req.TimeoutMillis = 5000
				rt := kmsg.NewElectLeadersRequestTopic()
				rt.Topic, rt.Partitions = "orders", []int32{1}
				req.Topics = append(req.Topics, rt)
				return req
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.ElectLeadersResponse).ErrorCode }},
		{name: "AlterPartitionReassignments", needs: []need{clusterNeed(acl.OpAlter)}, want: errClusterAuth,
			req: func() kmsg.Request {
				req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
				req.TimeoutMillis = 5000
				return req
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.AlterPartitionAssignmentsResponse).ErrorCode }},
		{name: "ListPartitionReassignments", needs: []need{clusterNeed(acl.OpDescribe)}, want: errClusterAuth,
			req: func() kmsg.Request {
				req := kmsg.NewPtrListPartitionReassignmentsRequest()
				req.TimeoutMillis = 5000
				return req
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.ListPartitionReassignmentsResponse).ErrorCode }},
		{name: "DescribeAcls", needs: []need{clusterNeed(acl.OpDescribe)}, want: errClusterAuth,
			req: func() kmsg.Request {
				req := kmsg.NewPtrDescribeACLsRequest()
				req.SetVersion(3)
				req.ResourceType, req.ResourcePatternType, req.Operation, req.PermissionType = kmsg.ACLResourceTypeAny,
					kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
				return req
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.DescribeACLsResponse).ErrorCode }},
		{name: "CreateAcls", needs: []need{clusterNeed(acl.OpAlter)}, want: errClusterAuth,
			req: func() kmsg.Request {
				req := kmsg.NewPtrCreateACLsRequest()
				req.SetVersion(3)
				req.Creations = append(req.Creations, acl.Binding{Principal: "User:bob", Host: "*", Resource: acl.ResourceTopic,
					Name: "x", Pattern: acl.PatternLiteral, Operation: acl.OpRead, Permission: acl.Allow}.Creation())
				return req
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.CreateACLsResponse).Results[0].ErrorCode }},
		{name: "DeleteAcls", needs: []need{clusterNeed(acl.OpAlter)}, want: errClusterAuth,
			req: func() kmsg.Request {
				req := kmsg.NewPtrDeleteACLsRequest()
				req.SetVersion(3)
				f := kmsg.NewDeleteACLsRequestFilter()
				f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = kmsg.ACLResourceTypeAny,
					kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
				req.Filters = append(req.Filters, f)
				return req
			},
			code: func(r kmsg.Response) int16 { return r.(*kmsg.DeleteACLsResponse).Results[0].ErrorCode }},
	}
}

// authzServer serves every fake backend with an authorizer over
// bindings, super user "User:root".
func authzServer(t *testing.T, auth *acl.Authorizer, denied *[]string) *dataServer {
	t.Helper()
	var mu sync.Mutex
	return startDataServer(t, map[string]int{"orders": 1}, func(c *Config) {
		a := newFakeAdmin()
		a.add("orders", 1, nil)
		c.Admin, c.PartitionAdmin, c.Groups, c.ACLs = a, &fakePartitionAdmin{}, &fakeGroups{}, memACLs{newMemStore()}
		c.Authorizer = auth
		c.OnDenied = func(op acl.Operation, res acl.ResourceType) {
			mu.Lock()
			defer mu.Unlock()
			*denied = append(*denied, op.String()+" "+res.String())
		}
	})
}

// exchange sends req on c and decodes its response.
func exchange(t *testing.T, c net.Conn, req kmsg.Request, corr int32) kmsg.Response {
	t.Helper()
	if _, err := c.Write(frame(req, corr)); err != nil {
		t.Fatalf("write %T: %v", req, err)
	}
	resp := req.ResponseKind()
	if got := readResponse(t, c, resp); got != corr {
		t.Fatalf("correlation %d, want %d", got, corr)
	}
	return resp
}

// TestGatesEveryRequestType runs every gated request type under five
// ACL sets: none (denied: allow everyone if no ACL found is off), the
// needed literal allows (served), those plus a deny of the first (denied
// with its code), prefixed allows (served), and a super user without any
// binding (served).
func TestGatesEveryRequestType(t *testing.T) {
	cases := authzCases(t)
	type variant struct {
		name      string
		principal []string // super users
		bindings  func(c authzCase) []acl.Binding
		refused   bool
	}
	literal := func(c authzCase) []acl.Binding {
		var out []acl.Binding
		for _, n := range c.needs {
			out = append(out, allowOf(n, acl.PatternLiteral, n.name))
		}
		return out
	}
	variants := []variant{
		{name: "no ACL", bindings: func(authzCase) []acl.Binding { return nil }, refused: true},
		{name: "allow", bindings: literal},
		{name: "deny wins", refused: true, bindings: func(c authzCase) []acl.Binding {
			d := allowOf(c.needs[0], acl.PatternLiteral, c.needs[0].name)
			d.Permission = acl.Deny
			return append(literal(c), d)
		}},
		{name: "prefixed allow", bindings: func(c authzCase) []acl.Binding {
			if c.prefixed != nil {
				return c.prefixed
			}
			var out []acl.Binding
			for _, n := range c.needs {
				if n.res == acl.ResourceCluster { // the cluster has one name: a literal
					out = append(out, allowOf(n, acl.PatternLiteral, n.name))
					continue
				}
				out = append(out, allowOf(n, acl.PatternPrefixed, n.name[:3]))
			}
			return out
		}},
		{name: "super user", principal: []string{anon}, bindings: func(authzCase) []acl.Binding { return nil }},
	}
	authzCodes := []int16{errTopicAuth, errGroupAuth, errClusterAuth, errTxnAuth}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			auth, err := acl.New(acl.Config{SuperUsers: v.principal}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var denied []string
			ts := authzServer(t, auth, &denied)
			conn := ts.dial(t)
			for i, c := range cases {
				if err := auth.SetBindings(v.bindings(c)); err != nil {
					t.Fatalf("%s: bindings: %v", c.name, err)
				}
				resp := exchange(t, conn, c.req(), int32(i))
				got := c.code(resp)
				switch {
				case v.refused && got != c.want:
					t.Errorf("%s: code %d (%v), want %d (%v)", c.name, got, kerr.ErrorForCode(got), c.want, kerr.ErrorForCode(c.want))
				case !v.refused && (got == -2 || slices.Contains(authzCodes, got)):
					t.Errorf("%s: code %d (%v), want it served", c.name, got, kerr.ErrorForCode(got))
				}
			}
			if v.refused && len(denied) < len(cases) {
				t.Errorf("%d refusals counted, want at least %d: %v", len(denied), len(cases), denied)
			}
			if !v.refused && len(denied) != 0 {
				t.Errorf("refusals counted while everything was allowed: %v", denied)
			}
		})
	}
}

// TestGatesNarrowRequests checks that a request with an allowed and a
// refused part serves the first and refuses the second, and that
// listings show only what may be described.
func TestGatesNarrowRequests(t *testing.T) {
	auth, err := acl.New(acl.Config{}, []acl.Binding{
		allowOf(topicNeed(acl.OpWrite), acl.PatternLiteral, "orders"),
		allowOf(need{acl.ResourceTopic, "", acl.OpDescribe}, acl.PatternLiteral, "logs"),
	})
	if err != nil {
		t.Fatal(err)
	}
	var denied []string
	ts := authzServer(t, auth, &denied)
	ts.data.addTopic("secret", 1, 3)
	ts.data.addTopic("logs", 1, 3)
	ts.backend.set(func(b *fakeBackend) { b.md = ts.data.metadata(ts.addr) })
	conn := ts.dial(t)

	// Produce to orders (allowed) and secret (refused) at once.
	req := produceReq(9, -1, "orders", map[int32][]byte{0: testBatch(t, 2, record.CompressionNone)})
	other := produceReq(9, -1, "secret", map[int32][]byte{0: testBatch(t, 2, record.CompressionNone)})
	req.Topics = append(req.Topics, other.Topics...)
	pr := exchange(t, conn, req, 1).(*kmsg.ProduceResponse)
	codes := map[string]int16{}
	for _, rt := range pr.Topics {
		codes[rt.Topic] = rt.Partitions[0].ErrorCode
	}
	if codes["orders"] != 0 || codes["secret"] != errTopicAuth {
		t.Fatalf("produce codes %v, want orders 0 and secret %d", codes, errTopicAuth)
	}
	if got := len(ts.data.stored("secret", 0)); got != 0 {
		t.Fatalf("%d batches stored in the refused topic", got)
	}
	if got := len(ts.data.stored("orders", 0)); got != 1 {
		t.Fatalf("%d batches stored in the allowed topic, want 1", got)
	}

	// A listing of every topic shows the describable ones: orders (WRITE
	// implies DESCRIBE) and logs, not secret.
	mr := exchange(t, conn, metadataReq(12), 2).(*kmsg.MetadataResponse)
	var names []string
	for _, rt := range mr.Topics {
		names = append(names, *rt.Topic)
	}
	slices.Sort(names)
	if fmt.Sprint(names) != "[logs orders]" {
		t.Fatalf("metadata lists %v, want [logs orders]", names)
	}
	// Named, secret is refused; a refused acks=0 produce closes the
	// connection.
	mr = exchange(t, conn, metadataReq(12, "secret"), 3).(*kmsg.MetadataResponse)
	if len(mr.Topics) != 1 || mr.Topics[0].ErrorCode != errTopicAuth || len(mr.Topics[0].Partitions) != 0 {
		t.Fatalf("metadata for secret: %+v", mr.Topics)
	}
	if _, err := conn.Write(frame(produceReq(9, 0, "secret", map[int32][]byte{0: testBatch(t, 1, record.CompressionNone)}), 4)); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, conn)
	ts.waitLog(t, reasonAuthorization)
	if got := len(ts.data.stored("secret", 0)); got != 0 {
		t.Fatalf("%d batches stored in the refused topic by acks=0", got)
	}
}

// TestAuditLogIsRateLimited checks that repeated refusals of one
// principal, operation and resource log once per interval, and that all
// are counted.
func TestAuditLogIsRateLimited(t *testing.T) {
	auth, err := acl.New(acl.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var denied []string
	ts := authzServer(t, auth, &denied)
	conn := ts.dial(t)
	for i := range 5 {
		exchange(t, conn, metadataReq(12, "orders"), int32(i))
	}
	lines := 0
	for _, e := range ts.hook.AllEntries() {
		if e.Data["audit"] == "authorization" {
			lines++
			if e.Data["principal"] != anon || e.Data["operation"] != "DESCRIBE" || e.Data["resource"] != "orders" {
				t.Errorf("audit line fields %v", e.Data)
			}
		}
	}
	if lines != 1 || len(denied) != 5 {
		t.Fatalf("%d audit lines and %d counted refusals, want 1 and 5", lines, len(denied))
	}
}

// TestEveryAPIHasAGate: a server with an authorizer refuses to start if
// an API it serves has no gate, and every registered API has one.
func TestEveryAPIHasAGate(t *testing.T) {
	apisMu.RLock()
	defer apisMu.RUnlock()
	for key, a := range apis {
		if gates[key] == nil {
			t.Errorf("%s (key %d) has no gate", a.name, key)
		}
	}
	for key := range gates {
		if apis[key] == nil {
			t.Errorf("gate for key %d, which is not registered", key)
		}
	}
}
