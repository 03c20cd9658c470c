// output_test.go: what `topics describe`, `cluster describe` and `groups
// describe` print, as tables and as JSON (--output json), from fixed
// responses; and that a bad --output value is refused before anything is
// asked of the cluster.

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/actors/group"
	"github.com/actorlog/actorlog/messages"
)

func TestOutputFlagRefusesUnknownFormats(t *testing.T) {
	for _, args := range [][]string{
		{"topics", "describe", "events"},
		{"cluster", "describe"},
		{"groups", "describe", "billing"},
	} {
		for _, format := range []string{"yaml", "JSON", ""} {
			t.Run(strings.Join(args, " ")+" "+format, func(t *testing.T) {
				root := newRoot()
				var stdout, stderr bytes.Buffer
				root.SetOut(&stdout)
				root.SetErr(&stderr)
				// Port 1 is never dialled: the flag is checked first.
				root.SetArgs(append(args, "--bootstrap", "127.0.0.1:1", "--output", format))
				err := root.Execute()
				if err == nil || !strings.Contains(err.Error(), "want table or json") {
					t.Fatalf("--output %q: error %v, want one saying \"want table or json\"", format, err)
				}
				if stdout.Len() != 0 {
					t.Fatalf("--output %q printed %q", format, stdout.String())
				}
			})
		}
	}
}

func TestOutputFlagDefaultsToTable(t *testing.T) {
	root := newRoot()
	for _, path := range [][]string{{"topics", "describe"}, {"cluster", "describe"}, {"groups", "describe"}} {
		cmd, _, err := root.Find(path)
		if err != nil {
			t.Fatal(err)
		}
		f := cmd.Flags().Lookup("output")
		if f == nil || f.DefValue != outputTable || f.Shorthand != "o" {
			t.Fatalf("%v: --output flag %+v, want -o defaulting to table", path, f)
		}
	}
}

func int64p(n int64) *int64 { return &n }

// checkJSON checks that v marshals to want (compared as JSON values) and
// that every key is snake_case.
func checkJSON(t *testing.T, v any, want string) {
	t.Helper()
	var out bytes.Buffer
	if err := writeJSON(&out, v); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), "}\n") || strings.Count(out.String(), "\n}\n") != 1 {
		t.Fatalf("not one JSON document and a newline:\n%s", out.String())
	}
	var got, exp any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("output does not parse: %v\n%s", err, out.String())
	}
	if err := json.Unmarshal([]byte(want), &exp); err != nil {
		t.Fatalf("want does not parse: %v", err)
	}
	if !reflect.DeepEqual(got, exp) {
		t.Fatalf("JSON\n%s\nwant\n%s", out.String(), want)
	}
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			for k, v := range x {
				if k != strings.ToLower(k) || strings.ContainsAny(k, "- ") {
					t.Errorf("key %q is not snake_case", k)
				}
				walk(v)
			}
		case []any:
			for _, v := range x {
				walk(v)
			}
		}
	}
	walk(got)
}

func checkTable(t *testing.T, write func(*bytes.Buffer) error, want string) {
	t.Helper()
	var out bytes.Buffer
	if err := write(&out); err != nil {
		t.Fatal(err)
	}
	if out.String() != want {
		t.Fatalf("table\n%s\nwant\n%s", out.String(), want)
	}
}

func TestClusterDescribeOutput(t *testing.T) {
	d := &messages.DescribeClusterResponse{
		Hosts: []*messages.HostInfo{
			{HostId: 1, Name: "host1", AdvertisedAddress: "h1:7070", BrokerEpoch: 7},
			{HostId: 2, AdvertisedAddress: "h2:7070", BrokerEpoch: 9},
		},
		DownHosts:       []*messages.HostInfo{{HostId: 3, Name: "host3"}},
		ControllerId:    2,
		ControllerEpoch: 42,
	}
	cd := newClusterDescription(d)
	checkJSON(t, cd, `{
		"controller_id": 2, "controller_epoch": 42,
		"hosts": [
			{"name": "host1", "id": 1, "address": "h1:7070", "alive": true, "broker_epoch": 7, "controller": false},
			{"name": "", "id": 2, "address": "h2:7070", "alive": true, "broker_epoch": 9, "controller": true},
			{"name": "host3", "id": 3, "address": "", "alive": false, "broker_epoch": null, "controller": false}
		]}`)
	checkTable(t, func(b *bytes.Buffer) error { return writeClusterTable(b, cd) }, ""+
		"NAME   ID  ADDRESS  ALIVE  BROKER-EPOCH  CONTROLLER\n"+
		"host1  1   h1:7070  true   7             -\n"+
		"-      2   h2:7070  true   9             yes (epoch 42)\n"+
		"host3  3   -        false  -             -\n")

	none := newClusterDescription(&messages.DescribeClusterResponse{ControllerId: -1})
	checkJSON(t, none, `{"controller_id": -1, "controller_epoch": 0, "hosts": []}`)
	checkTable(t, func(b *bytes.Buffer) error { return writeClusterTable(b, none) }, ""+
		"NAME  ID  ADDRESS  ALIVE  BROKER-EPOCH  CONTROLLER\n"+
		"No controller elected.\n")
}

func TestTopicDescribeOutput(t *testing.T) {
	parts := []*messages.PartitionMetadata{
		{Partition: 0, Leader: 1, Replicas: []int32{1, 2, 3}, Isr: []int32{1, 2, 3}},
		{Partition: 1, Leader: -1, Replicas: []int32{2, 3, 1}, Isr: []int32{2}, ErrorCode: messages.ErrorCode_ERROR_CODE_LEADER_NOT_AVAILABLE},
		{Partition: 2, Leader: 3, Replicas: []int32{3, 1, 2, 4}, Isr: []int32{3, 1}, ErrorCode: messages.ErrorCode_ERROR_CODE_LEADER_NOT_AVAILABLE,
			AddingReplicas: []int32{4}, RemovingReplicas: []int32{2}},
	}
	td := topicDescription{
		Name: "orders", ReplicationFactor: 3, Configs: map[string]string{"retention.ms": "3600000", "min.insync.replicas": "2"},
		Partitions: []partitionDescription{
			newPartitionDescription(parts[0], int64p(0), int64p(1200)),
			newPartitionDescription(parts[1], nil, nil),
			newPartitionDescription(parts[2], int64p(5), int64p(17)),
		},
	}
	checkJSON(t, td, `{
		"name": "orders", "replication_factor": 3,
		"configs": {"min.insync.replicas": "2", "retention.ms": "3600000"},
		"partitions": [
			{"partition": 0, "leader": 1, "leader_status": "available", "replicas": [1, 2, 3], "isr": [1, 2, 3],
			 "log_start_offset": 0, "log_end_offset": 1200, "adding_replicas": [], "removing_replicas": []},
			{"partition": 1, "leader": -1, "leader_status": "offline", "replicas": [2, 3, 1], "isr": [2],
			 "log_start_offset": null, "log_end_offset": null, "adding_replicas": [], "removing_replicas": []},
			{"partition": 2, "leader": 3, "leader_status": "unavailable", "replicas": [3, 1, 2, 4], "isr": [3, 1],
			 "log_start_offset": 5, "log_end_offset": 17, "adding_replicas": [4], "removing_replicas": [2]}
		]}`)
	checkTable(t, func(b *bytes.Buffer) error { return writeTopicTable(b, td) }, ""+
		"Topic: orders\tPartitions: 3\tReplicationFactor: 3\tConfigs: min.insync.replicas=2,retention.ms=3600000\n"+
		"PARTITION  LEADER           REPLICAS  ISR    LOG-START-OFFSET  LOG-END-OFFSET  ADDING  REMOVING\n"+
		"0          1                1,2,3     1,2,3  0                 1200            -       -\n"+
		"1          none (offline)   2,3,1     2      -                 -               -       -\n"+
		"2          3 (unavailable)  3,1,2,4   3,1    5                 17              4       2\n")
}

func TestGroupDescribeOutput(t *testing.T) {
	d := &messages.DescribedGroup{
		GroupId: "billing", GroupState: "Stable", ProtocolType: group.ProtocolType, ProtocolData: "range",
		GenerationId: 4, Leader: "m1",
		Members: []*messages.DescribedGroupMember{
			{MemberId: "m1", ClientId: "app", ClientHost: "/10.0.0.1"},
			{MemberId: "m2", GroupInstanceId: "static-2", ClientId: "app", ClientHost: "/10.0.0.2"},
			{MemberId: "m3", ClientId: "idle"},
		},
	}
	assigned := map[string]group.Assignment{"m1": {"events": {2, 0}}, "m2": {"events": {1}, "audit": {0}}}
	if got := assignedTopicPartitions(d, assigned); len(got) != 3 || got[0].Topic != "events" || !reflect.DeepEqual(got[0].Partitions, []int32{0, 2}) ||
		got[1].Topic != "audit" || got[2].Topic != "events" {
		t.Fatalf("assignedTopicPartitions: %v", got)
	}
	lags := []client.PartitionLag{
		{Topic: "audit", Partition: 0, Committed: -1, LogEnd: 3, Lag: -1},
		{Topic: "events", Partition: 0, Committed: 4, LogEnd: 10, Lag: 6},
		{Topic: "events", Partition: 1, Committed: 20, LogEnd: -1, Lag: -1, Err: errors.New("leader gone")},
		{Topic: "events", Partition: 2, Committed: 0, LogEnd: 30, Lag: 30},
		{Topic: "old", Partition: 0, Committed: 8, LogEnd: 8, Lag: 0},
	}
	gd := newGroupDescription(d, assigned, lags)
	checkJSON(t, gd, `{
		"group_id": "billing", "state": "Stable", "protocol_type": "consumer", "protocol": "range", "generation": 4, "leader": "m1",
		"members": [
			{"member_id": "m1", "group_instance_id": "", "client_id": "app", "client_host": "/10.0.0.1",
			 "assignment": [{"topic": "events", "partitions": [0, 2]}]},
			{"member_id": "m2", "group_instance_id": "static-2", "client_id": "app", "client_host": "/10.0.0.2",
			 "assignment": [{"topic": "audit", "partitions": [0]}, {"topic": "events", "partitions": [1]}]},
			{"member_id": "m3", "group_instance_id": "", "client_id": "idle", "client_host": "", "assignment": []}
		],
		"offsets": [
			{"topic": "audit", "partition": 0, "committed_offset": null, "log_end_offset": 3, "lag": null, "member_id": "m2"},
			{"topic": "events", "partition": 0, "committed_offset": 4, "log_end_offset": 10, "lag": 6, "member_id": "m1"},
			{"topic": "events", "partition": 1, "committed_offset": 20, "log_end_offset": null, "lag": null, "member_id": "m2"},
			{"topic": "events", "partition": 2, "committed_offset": 0, "log_end_offset": 30, "lag": 30, "member_id": "m1"},
			{"topic": "old", "partition": 0, "committed_offset": 8, "log_end_offset": 8, "lag": 0, "member_id": ""}
		]}`)
	checkTable(t, func(b *bytes.Buffer) error { return writeGroupTables(b, gd) }, ""+
		"Group: billing\tState: Stable\tProtocol: consumer/range\tGeneration: 4\tLeader: m1\tMembers: 3\n"+
		"MEMBER-ID  INSTANCE-ID  CLIENT-ID  HOST       ASSIGNMENT\n"+
		"m1         -            app        /10.0.0.1  events-0,events-2\n"+
		"m2         static-2     app        /10.0.0.2  audit-0,events-1\n"+
		"m3         -            idle       -          -\n"+
		"TOPIC   PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  MEMBER-ID\n"+
		"audit   0          -               3               -    m2\n"+
		"events  0          4               10              6    m1\n"+
		"events  1          20              -               -    m2\n"+
		"events  2          0               30              30   m1\n"+
		"old     0          8               8               0    -\n")

	// Rebalancing: the members' assignments are not shown, their owners
	// still are.
	d.GroupState = "PreparingRebalance"
	gd = newGroupDescription(d, assigned, lags[1:2])
	for _, m := range gd.Members {
		if m.Assignment != nil {
			t.Fatalf("member %s has assignment %v while rebalancing", m.MemberID, m.Assignment)
		}
	}
	if gd.Offsets[0].MemberID != "m1" {
		t.Fatalf("offsets %+v, want events-0 owned by m1", gd.Offsets)
	}
	checkTable(t, func(b *bytes.Buffer) error { return writeGroupTables(b, gd) }, ""+
		"Group: billing\tState: PreparingRebalance\tProtocol: consumer/range\tGeneration: 4\tLeader: m1\tMembers: 3\n"+
		"MEMBER-ID  INSTANCE-ID  CLIENT-ID  HOST       ASSIGNMENT\n"+
		"m1         -            app        /10.0.0.1  (rebalancing)\n"+
		"m2         static-2     app        /10.0.0.2  (rebalancing)\n"+
		"m3         -            idle       -          (rebalancing)\n"+
		"TOPIC   PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  MEMBER-ID\n"+
		"events  0          4               10              6    m1\n")

	// An empty group with nothing committed.
	empty := newGroupDescription(&messages.DescribedGroup{GroupId: "new", GroupState: "Empty"}, nil, nil)
	checkJSON(t, empty, `{"group_id": "new", "state": "Empty", "protocol_type": "", "protocol": "", "generation": 0, "leader": "",
		"members": [], "offsets": []}`)
	checkTable(t, func(b *bytes.Buffer) error { return writeGroupTables(b, empty) }, ""+
		"Group: new\tState: Empty\tProtocol: -\tGeneration: 0\tLeader: -\tMembers: 0\n"+
		"No active members.\n"+
		"No committed offsets.\n")
}
