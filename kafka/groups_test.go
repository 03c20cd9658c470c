// groups_test.go: the consumer-group APIs' version gates and mappings, as
// tables over their pure functions and end to end against a fake
// GroupBackend: MEMBER_ID_REQUIRED only from JoinGroup v4 (older clients
// are joined with the given id at once), static membership from v5,
// SkipAssignment from v9, a valid empty consumer assignment, request-level
// commit errors on every partition, OffsetFetch's three shapes,
// FindCoordinator's single and batched forms and its refusal of
// transactional ids, and the APIs left out without a GroupBackend.

package kafka

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/messages"
)

// fakeGroups is a GroupBackend that records the joins it got and answers
// a first join (no member id) MEMBER_ID_REQUIRED, as the coordinator does.
type fakeGroups struct {
	mu    sync.Mutex
	joins []*messages.JoinGroupRequest
	skip  bool // answer joins with SkipAssignment
}

func (f *fakeGroups) FindCoordinator(_ context.Context, group string) (CoordinatorAnswer, error) {
	if group == "" {
		return CoordinatorAnswer{ErrorCode: kerr.InvalidGroupID.Code}, nil
	}
	return CoordinatorAnswer{NodeID: 7, Host: "h7", Port: 9097}, nil
}

func (f *fakeGroups) JoinGroup(_ context.Context, req *messages.JoinGroupRequest) (*messages.JoinGroupResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.joins = append(f.joins, req)
	if req.MemberId == "" {
		return &messages.JoinGroupResponse{ErrorCode: messages.ErrorCode_ERROR_CODE_MEMBER_ID_REQUIRED, MemberId: "m-1", GenerationId: -1}, nil
	}
	return &messages.JoinGroupResponse{
		GenerationId: 3, ProtocolType: "consumer", ProtocolName: "range", Leader: req.MemberId, MemberId: req.MemberId,
		SkipAssignment: f.skip,
		Members:        []*messages.JoinGroupResponseMember{{MemberId: req.MemberId, GroupInstanceId: req.GroupInstanceId, Metadata: []byte{1}}},
	}, nil
}

func (f *fakeGroups) SyncGroup(_ context.Context, req *messages.SyncGroupRequest) (*messages.SyncGroupResponse, error) {
	return &messages.SyncGroupResponse{ProtocolType: "consumer", ProtocolName: "range"}, nil
}

func (f *fakeGroups) Heartbeat(context.Context, *messages.HeartbeatRequest) (*messages.HeartbeatResponse, error) {
	return &messages.HeartbeatResponse{ErrorCode: messages.ErrorCode_ERROR_CODE_REBALANCE_IN_PROGRESS}, nil
}

func (f *fakeGroups) LeaveGroup(_ context.Context, req *messages.LeaveGroupRequest) (*messages.LeaveGroupResponse, error) {
	resp := &messages.LeaveGroupResponse{}
	for _, m := range req.Members {
		resp.Members = append(resp.Members, &messages.LeaveGroupResponseMember{MemberId: m.MemberId, ErrorCode: messages.ErrorCode_ERROR_CODE_UNKNOWN_MEMBER_ID})
	}
	return resp, nil
}

func (f *fakeGroups) OffsetCommit(context.Context, *messages.OffsetCommitRequest) (*messages.OffsetCommitResponse, error) {
	return &messages.OffsetCommitResponse{ErrorCode: messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR}, nil
}

func (f *fakeGroups) OffsetFetch(_ context.Context, req *messages.OffsetFetchRequest) (*messages.OffsetFetchResponse, error) {
	if req.GroupId == "elsewhere" {
		return &messages.OffsetFetchResponse{ErrorCode: messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR}, nil
	}
	return &messages.OffsetFetchResponse{Topics: []*messages.OffsetFetchTopic{{Topic: "t", Partitions: []*messages.OffsetFetchPartition{
		{Partition: 0, Offset: 42, LeaderEpoch: 1}, {Partition: 1, Offset: -1, LeaderEpoch: -1},
	}}}}, nil
}

func (f *fakeGroups) DescribeGroup(_ context.Context, group string) (*messages.DescribedGroup, error) {
	return &messages.DescribedGroup{GroupId: group, GroupState: "Dead"}, nil
}

func (f *fakeGroups) ListGroups(context.Context, *messages.ListGroupsRequest) (*messages.ListGroupsResponse, error) {
	return &messages.ListGroupsResponse{Groups: []*messages.ListedGroup{{GroupId: "g", ProtocolType: "consumer", GroupState: "Stable"}}}, nil
}

func (f *fakeGroups) DeleteGroup(_ context.Context, group string) (*messages.DeleteGroupsResult, error) {
	return &messages.DeleteGroupsResult{GroupId: group, ErrorCode: messages.ErrorCode_ERROR_CODE_NON_EMPTY_GROUP}, nil
}

// roundTrip sends req on a fresh connection to ts and reads its response.
func roundTrip(t *testing.T, ts *testServer, req kmsg.Request) kmsg.Response {
	t.Helper()
	c := ts.dial(t)
	if _, err := c.Write(frame(req, 1)); err != nil {
		t.Fatalf("write: %v", err)
	}
	resp := req.ResponseKind()
	readResponse(t, c, resp)
	return resp
}

func TestGroupAPIsNeedABackend(t *testing.T) {
	ts := startServer(t, nil)
	avs := roundTrip(t, ts, apiVersionsReq(3)).(*kmsg.ApiVersionsResponse)
	for _, k := range avs.ApiKeys {
		switch k.ApiKey {
		case 8, 9, 10, 11, 12, 13, 14, 15, 16, 42:
			t.Errorf("api %d advertised without a GroupBackend", k.ApiKey)
		}
	}
	ts = startServer(t, func(c *Config) { c.Groups = &fakeGroups{} })
	avs = roundTrip(t, ts, apiVersionsReq(3)).(*kmsg.ApiVersionsResponse)
	want := map[int16][2]int16{8: {2, 9}, 9: {1, 9}, 10: {0, 5}, 11: {0, 9}, 12: {0, 4}, 13: {0, 5}, 14: {0, 5}, 15: {0, 5}, 16: {0, 5}, 42: {0, 2}}
	for _, k := range avs.ApiKeys {
		if w, ok := want[k.ApiKey]; ok {
			if k.MinVersion != w[0] || k.MaxVersion != w[1] {
				t.Errorf("api %d advertised %d-%d, want %d-%d", k.ApiKey, k.MinVersion, k.MaxVersion, w[0], w[1])
			}
			delete(want, k.ApiKey)
		}
	}
	if len(want) != 0 {
		t.Errorf("not advertised: %v", want)
	}
}

func TestJoinGroupVersionGates(t *testing.T) {
	for _, tc := range []struct {
		version int16
		// wantCode is the first join's answer; wantJoins the backend
		// joins it takes.
		wantCode  int16
		wantJoins int
	}{
		{0, 0, 2}, {3, 0, 2}, {4, kerr.MemberIDRequired.Code, 1}, {9, kerr.MemberIDRequired.Code, 1},
	} {
		fg := &fakeGroups{}
		ts := startServer(t, func(c *Config) { c.Groups = fg })
		req := kmsg.NewPtrJoinGroupRequest()
		req.SetVersion(tc.version)
		req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = "g", 10000, 20000, "consumer"
		req.InstanceID = kmsg.StringPtr("static-1")
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", []byte{1}
		req.Protocols = append(req.Protocols, p)
		resp := roundTrip(t, ts, req).(*kmsg.JoinGroupResponse)
		if resp.ErrorCode != tc.wantCode || resp.MemberID != "m-1" {
			t.Errorf("v%d: code %d member %q, want %d m-1", tc.version, resp.ErrorCode, resp.MemberID, tc.wantCode)
		}
		fg.mu.Lock()
		joins := fg.joins
		fg.mu.Unlock()
		if len(joins) != tc.wantJoins {
			t.Fatalf("v%d: %d backend joins, want %d", tc.version, len(joins), tc.wantJoins)
		}
		j := joins[0]
		wantRebalance, wantInstance := int32(20000), "static-1"
		if tc.version == 0 {
			wantRebalance = 10000
		}
		if tc.version < 5 {
			wantInstance = ""
		}
		if j.RebalanceTimeoutMs != wantRebalance || j.SessionTimeoutMs != 10000 || j.GroupInstanceId != wantInstance || j.ClientId != "kafka-test" {
			t.Errorf("v%d: backend join %+v", tc.version, j)
		}
	}
}

func TestJoinResponseSkipAssignment(t *testing.T) {
	res := &messages.JoinGroupResponse{
		GenerationId: 2, ProtocolType: "consumer", ProtocolName: "range", Leader: "m", MemberId: "m", SkipAssignment: true,
		Members: []*messages.JoinGroupResponseMember{{MemberId: "m", GroupInstanceId: "i"}},
	}
	for _, v := range []int16{5, 8, 9} {
		req := kmsg.NewPtrJoinGroupRequest()
		req.SetVersion(v)
		resp := joinResponse(req, res)
		switch {
		case v >= 9 && (!resp.SkipAssignment || len(resp.Members) != 1 || *resp.Members[0].InstanceID != "i"):
			t.Errorf("v%d: %+v: want SkipAssignment with the members", v, resp)
		case v < 9 && (resp.SkipAssignment || len(resp.Members) != 0):
			t.Errorf("v%d: %+v: want no members, no SkipAssignment, another leader", v, resp)
		}
		if (v >= 9) != (resp.LeaderID == "m") || resp.Generation != 2 || *resp.Protocol != "range" {
			t.Errorf("v%d: %+v", v, resp)
		}
	}
	req := kmsg.NewPtrJoinGroupRequest()
	req.SetVersion(5)
	req.MemberID = "old"
	resp := joinResponse(req, &messages.JoinGroupResponse{ErrorCode: messages.ErrorCode_ERROR_CODE_UNKNOWN_MEMBER_ID, MemberId: "x"})
	if resp.ErrorCode != kerr.UnknownMemberID.Code || resp.Generation != -1 || resp.MemberID != "old" {
		t.Errorf("error answer %+v", resp)
	}
}

func TestSyncGroupEmptyAssignment(t *testing.T) {
	req := kmsg.NewPtrSyncGroupRequest()
	req.SetVersion(5)
	resp := syncResponse(req, &messages.SyncGroupResponse{ProtocolType: "consumer", ProtocolName: "range"})
	var a kmsg.ConsumerMemberAssignment
	if len(resp.MemberAssignment) == 0 || a.ReadFrom(resp.MemberAssignment) != nil || len(a.Topics) != 0 {
		t.Errorf("empty consumer assignment %x: want a decodable empty ConsumerMemberAssignment", resp.MemberAssignment)
	}
	resp = syncResponse(req, &messages.SyncGroupResponse{ProtocolType: "connect"})
	if len(resp.MemberAssignment) != 0 {
		t.Errorf("non-consumer empty assignment %x: want it passed through", resp.MemberAssignment)
	}
	resp = syncResponse(req, &messages.SyncGroupResponse{ProtocolType: "consumer", Assignment: []byte{9, 9}})
	if !bytes.Equal(resp.MemberAssignment, []byte{9, 9}) {
		t.Errorf("assignment %x: want passed through", resp.MemberAssignment)
	}
}

func TestLeaveGroupVersions(t *testing.T) {
	fg := &fakeGroups{}
	ts := startServer(t, func(c *Config) { c.Groups = fg })
	for _, v := range []int16{0, 2, 3, 5} {
		req := kmsg.NewPtrLeaveGroupRequest()
		req.SetVersion(v)
		req.Group, req.MemberID = "g", "m"
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = "m"
		req.Members = append(req.Members, m)
		resp := roundTrip(t, ts, req).(*kmsg.LeaveGroupResponse)
		if v < 3 && (resp.ErrorCode != kerr.UnknownMemberID.Code || len(resp.Members) != 0) {
			t.Errorf("v%d: %+v: want the member's error at the top", v, resp)
		}
		if v >= 3 && (resp.ErrorCode != 0 || len(resp.Members) != 1 || resp.Members[0].ErrorCode != kerr.UnknownMemberID.Code) {
			t.Errorf("v%d: %+v: want a per-member error", v, resp)
		}
	}
}

func TestOffsetCommitRequestLevelError(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.Groups = &fakeGroups{} })
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(8)
	req.Group, req.Generation = "g", -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "t"
	for i := range int32(2) {
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset = i, 5
		rt.Partitions = append(rt.Partitions, p)
	}
	req.Topics = append(req.Topics, rt)
	resp := roundTrip(t, ts, req).(*kmsg.OffsetCommitResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
		t.Fatalf("%+v", resp)
	}
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != kerr.NotCoordinator.Code {
			t.Errorf("partition %d code %d, want NOT_COORDINATOR", p.Partition, p.ErrorCode)
		}
	}
	if n := commitRequest(req); n.Topics[0].Partitions[0].LeaderEpoch != -1 {
		t.Errorf("leader epoch %d, want -1", n.Topics[0].Partitions[0].LeaderEpoch)
	}
}

func TestOffsetFetchShapes(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.Groups = &fakeGroups{} })
	for _, v := range []int16{1, 5, 7} {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.SetVersion(v)
		req.Group = "g"
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "t", []int32{0, 1}
		req.Topics = append(req.Topics, rt)
		resp := roundTrip(t, ts, req).(*kmsg.OffsetFetchResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].Offset != 42 || resp.Topics[0].Partitions[1].Offset != -1 {
			t.Errorf("v%d: %+v", v, resp)
		}
		req.Group = "elsewhere"
		resp = roundTrip(t, ts, req).(*kmsg.OffsetFetchResponse)
		switch {
		case v < 2 && (len(resp.Topics) != 1 || resp.Topics[0].Partitions[1].ErrorCode != kerr.NotCoordinator.Code):
			t.Errorf("v%d elsewhere: %+v: want NOT_COORDINATOR per partition", v, resp)
		case v >= 2 && resp.ErrorCode != kerr.NotCoordinator.Code:
			t.Errorf("v%d elsewhere: %+v: want NOT_COORDINATOR", v, resp)
		}
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(8)
	for _, g := range []string{"g", "elsewhere"} {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g // topics nil: all
		req.Groups = append(req.Groups, rg)
	}
	resp := roundTrip(t, ts, req).(*kmsg.OffsetFetchResponse)
	if len(resp.Groups) != 2 || resp.Groups[0].ErrorCode != 0 || len(resp.Groups[0].Topics) != 1 ||
		resp.Groups[0].Topics[0].Partitions[0].Offset != 42 || resp.Groups[1].ErrorCode != kerr.NotCoordinator.Code {
		t.Errorf("v8 multi-group: %+v", resp)
	}
}

func TestFindCoordinatorForms(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.Groups = &fakeGroups{} })
	for _, v := range []int16{0, 3} {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.SetVersion(v)
		req.CoordinatorKey = "g"
		resp := roundTrip(t, ts, req).(*kmsg.FindCoordinatorResponse)
		if resp.ErrorCode != 0 || resp.NodeID != 7 || resp.Host != "h7" || resp.Port != 9097 {
			t.Errorf("v%d: %+v", v, resp)
		}
	}
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.SetVersion(4)
	req.CoordinatorKeys = []string{"g", ""}
	resp := roundTrip(t, ts, req).(*kmsg.FindCoordinatorResponse)
	if len(resp.Coordinators) != 2 || resp.Coordinators[0].NodeID != 7 || resp.Coordinators[0].Key != "g" ||
		resp.Coordinators[1].ErrorCode != kerr.InvalidGroupID.Code || resp.Coordinators[1].NodeID != -1 {
		t.Errorf("v4: %+v", resp)
	}
	req.CoordinatorType = 1
	req.CoordinatorKeys = []string{"txn"}
	resp = roundTrip(t, ts, req).(*kmsg.FindCoordinatorResponse)
	if len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Errorf("transaction key: %+v", resp)
	}
}

func TestDescribeListDeleteGroups(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.Groups = &fakeGroups{} })
	dreq := kmsg.NewPtrDescribeGroupsRequest()
	dreq.SetVersion(5)
	dreq.Groups = []string{"a", "b"}
	dresp := roundTrip(t, ts, dreq).(*kmsg.DescribeGroupsResponse)
	if len(dresp.Groups) != 2 || dresp.Groups[1].Group != "b" || dresp.Groups[1].State != "Dead" {
		t.Errorf("describe: %+v", dresp)
	}
	for _, tc := range []struct {
		v     int16
		types []string
		want  int
	}{{0, nil, 1}, {5, []string{"Classic"}, 1}, {5, []string{"consumer"}, 0}} {
		lreq := kmsg.NewPtrListGroupsRequest()
		lreq.SetVersion(tc.v)
		lreq.TypesFilter = tc.types
		lresp := roundTrip(t, ts, lreq).(*kmsg.ListGroupsResponse)
		if len(lresp.Groups) != tc.want {
			t.Errorf("list v%d types %v: %+v, want %d groups", tc.v, tc.types, lresp, tc.want)
		}
	}
	xreq := kmsg.NewPtrDeleteGroupsRequest()
	xreq.SetVersion(2)
	xreq.Groups = []string{"a"}
	xresp := roundTrip(t, ts, xreq).(*kmsg.DeleteGroupsResponse)
	if len(xresp.Groups) != 1 || xresp.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code {
		t.Errorf("delete: %+v", xresp)
	}
}
