// decisions_test.go: table tests of the group member's pure decisions — the
// reaction to each coordinator error code, the rebalance protocol the
// assignors imply, the cooperative revoke computation, subscriptions by
// name and pattern, and metadata changes that call for a rebalance.

package consumer

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/actorlog/actorlog/actors/group"
	"github.com/actorlog/actorlog/messages"
)

func TestReactionTo(t *testing.T) {
	tests := []struct {
		code messages.ErrorCode
		want reaction
	}{
		{messages.ErrorCode_ERROR_CODE_UNSPECIFIED, reactNone},
		{messages.ErrorCode_ERROR_CODE_REBALANCE_IN_PROGRESS, reactRejoin},
		{messages.ErrorCode_ERROR_CODE_ILLEGAL_GENERATION, reactResetGeneration},
		{messages.ErrorCode_ERROR_CODE_UNKNOWN_MEMBER_ID, reactResetMember},
		{messages.ErrorCode_ERROR_CODE_NOT_COORDINATOR, reactRediscover},
		{messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE, reactRediscover},
		{messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT, reactRediscover},
		{messages.ErrorCode_ERROR_CODE_COORDINATOR_LOAD_IN_PROGRESS, reactRetry},
		{messages.ErrorCode_ERROR_CODE_FENCED_INSTANCE_ID, reactFatal},
		{messages.ErrorCode_ERROR_CODE_INCONSISTENT_GROUP_PROTOCOL, reactFatal},
		{messages.ErrorCode_ERROR_CODE_INVALID_SESSION_TIMEOUT, reactFatal},
		{messages.ErrorCode_ERROR_CODE_INVALID_GROUP_ID, reactFatal},
		{messages.ErrorCode_ERROR_CODE_GROUP_MAX_SIZE_REACHED, reactFatal},
		{messages.ErrorCode_ERROR_CODE_GROUP_AUTHORIZATION_FAILED, reactFatal},
		{messages.ErrorCode_ERROR_CODE_TOPIC_AUTHORIZATION_FAILED, reactFatal},
		{messages.ErrorCode_ERROR_CODE_UNKNOWN_SERVER_ERROR, reactBackoff},
	}
	for _, tt := range tests {
		t.Run(tt.code.ShortName(), func(t *testing.T) {
			if got := reactionTo(tt.code); got != tt.want {
				t.Fatalf("reactionTo(%s) = %s, want %s", tt.code.ShortName(), got, tt.want)
			}
		})
	}
}

func TestCooperativeProtocol(t *testing.T) {
	tests := []struct {
		name      string
		assignors []group.Assignor
		want      bool
	}{
		{"default", DefaultAssignors(), true},
		{"cooperative-sticky", []group.Assignor{group.CooperativeSticky()}, true},
		{"range", []group.Assignor{group.Range()}, false},
		// Kafka's rule: the protocol all assignors support.
		{"cooperative-sticky then range (a migration)", []group.Assignor{group.CooperativeSticky(), group.Range()}, false},
		{"none", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cooperative(tt.assignors); got != tt.want {
				t.Fatalf("cooperative = %v, want %v", got, tt.want)
			}
		})
	}
}

// tps parses "t-0 t-1 u-3".
func tps(s string) []TopicPartition {
	var out []TopicPartition
	for _, f := range strings.Fields(s) {
		i := strings.LastIndex(f, "-")
		p, err := strconv.Atoi(f[i+1:])
		if err != nil {
			panic(err)
		}
		out = append(out, TopicPartition{f[:i], int32(p)})
	}
	return out
}

func TestDiffAssignment(t *testing.T) {
	tests := []struct {
		name                   string
		owned, assigned        string
		wantAdded, wantRevoked string
	}{
		{"first assignment", "", "t-0 t-1", "t-0 t-1", ""},
		{"unchanged", "t-0 t-1", "t-1 t-0", "", ""},
		{"a new member takes some (cooperative: only they are revoked)", "t-0 t-1 t-2 t-3", "t-0 t-1", "", "t-2 t-3"},
		{"a follow-up rebalance gives more", "t-0 t-1", "t-0 t-1 t-2", "t-2", ""},
		{"both at once (eager owned nothing)", "t-0 u-1", "t-0 u-2", "u-2", "u-1"},
		{"everything moves", "t-0", "t-1", "t-1", "t-0"},
		{"nothing left", "t-0 t-1", "", "", "t-0 t-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			added, revoked := diffAssignment(sortTPs(tps(tt.owned)), tps(tt.assigned))
			if fmt.Sprint(added) != fmt.Sprint(tps(tt.wantAdded)) || fmt.Sprint(revoked) != fmt.Sprint(tps(tt.wantRevoked)) {
				t.Fatalf("added %v revoked %v, want %v and %v", added, revoked, tps(tt.wantAdded), tps(tt.wantRevoked))
			}
			// What stays is owned and assigned; nothing is both added and
			// revoked; owned − revoked + added = assigned.
			next := sortTPs(append(minus(tps(tt.owned), revoked), added...))
			if fmt.Sprint(next) != fmt.Sprint(sortTPs(tps(tt.assigned))) {
				t.Fatalf("owned−revoked+added = %v, want the assignment %v", next, sortTPs(tps(tt.assigned)))
			}
		})
	}
}

func TestAssignmentConversions(t *testing.T) {
	a := group.Assignment{"u": {2, 0}, "t": {1}, "empty": nil}
	got := toTPs(a)
	if want := tps("t-1 u-0 u-2"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("toTPs = %v, want %v", got, want)
	}
	back := toAssignment(got)
	if back.Count() != 3 || !back.Has("u", 2) || !back.Has("t", 1) {
		t.Fatalf("toAssignment = %v", back)
	}
	if got := notSubscribed(tps("t-0 u-1 v-2"), []string{"t", "v"}); fmt.Sprint(got) != fmt.Sprint(tps("u-1")) {
		t.Fatalf("notSubscribed = %v", got)
	}
}

func TestSubscription(t *testing.T) {
	existing := map[string]int32{"orders": 3, "orders-eu": 2, "payments": 1, messages.OffsetsTopic: 50, "xorders": 1}
	tests := []struct {
		name     string
		explicit []string
		pattern  string
		want     []string
	}{
		{"explicit, sorted, deduplicated; missing topics kept", []string{"payments", "orders", "payments", "later"}, "", []string{"later", "orders", "payments"}},
		{"pattern matches whole names only", nil, "orders.*", []string{"orders", "orders-eu"}},
		{"pattern never matches internal topics", nil, ".*", []string{"orders", "orders-eu", "payments", "xorders"}},
		{"pattern with no match", nil, "nothing", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var re *regexp.Regexp
			if tt.pattern != "" {
				cfg := Config{Cluster: &fakeCluster{logger: testLogger(t)}, GroupID: "g", TopicRegex: regexp.MustCompile(tt.pattern), Handler: func([]Message) {}}
				if err := cfg.validate(); err != nil {
					t.Fatal(err)
				}
				re = cfg.TopicRegex
			}
			if got := subscription(tt.explicit, re, existing); !slices.Equal(got, tt.want) {
				t.Fatalf("subscription = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCountsChanged(t *testing.T) {
	snapshot := map[string]int32{"a": 3, "b": 0}
	tests := []struct {
		name     string
		existing map[string]int32
		want     bool
	}{
		{"same", map[string]int32{"a": 3, "c": 9}, false},
		{"grew", map[string]int32{"a": 4}, true},
		{"created", map[string]int32{"a": 3, "b": 2}, true},
		{"deleted", map[string]int32{"b": 0}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := countsChanged(snapshot, tt.existing); got != tt.want {
				t.Fatalf("countsChanged = %v, want %v", got, tt.want)
			}
		})
	}
	if got := countsOf([]string{"a", "z"}, map[string]int32{"a": 3}); got["a"] != 3 || got["z"] != 0 || len(got) != 2 {
		t.Fatalf("countsOf = %v", got)
	}
}

func TestGroupTopics(t *testing.T) {
	members := []*messages.JoinGroupResponseMember{
		{MemberId: "a", Metadata: group.EncodeSubscription(group.Subscription{Topics: []string{"y", "x"}})},
		{MemberId: "b", Metadata: group.EncodeSubscription(group.Subscription{Topics: []string{"x", "z"}})},
		{MemberId: "c", Metadata: []byte{0xff}}, // does not decode: skipped
	}
	if got := groupTopics(members); !slices.Equal(got, []string{"x", "y", "z"}) {
		t.Fatalf("groupTopics = %v", got)
	}
}

func TestConfigValidation(t *testing.T) {
	base := func() Config {
		return Config{Cluster: &fakeCluster{logger: testLogger(t)}, Handler: func([]Message) {}}
	}
	tests := []struct {
		name   string
		change func(*Config)
		ok     bool
	}{
		{"a topic", func(c *Config) { c.Topic = "t" }, true},
		{"no topic", func(c *Config) {}, false},
		{"a group subscription", func(c *Config) { c.GroupID, c.Topics = "g", []string{"t"} }, true},
		{"a group with Topic only", func(c *Config) { c.GroupID, c.Topic = "g", "t" }, true},
		{"a group with a pattern", func(c *Config) { c.GroupID, c.TopicRegex = "g", regexp.MustCompile("t.*") }, true},
		{"a group without topics", func(c *Config) { c.GroupID = "g" }, false},
		{"topics without a group", func(c *Config) { c.Topic, c.Topics = "t", []string{"u"} }, false},
		{"a pattern and topics", func(c *Config) { c.GroupID, c.Topics, c.TopicRegex = "g", []string{"t"}, regexp.MustCompile("t") }, false},
		{"partitions with a subscription", func(c *Config) { c.GroupID, c.Topics, c.Partitions = "g", []string{"t"}, []int32{0} }, false},
		{"manual partitions with a group", func(c *Config) { c.GroupID, c.Topic, c.Partitions = "g", "t", []int32{0} }, true},
		{"an instance id without a group", func(c *Config) { c.Topic, c.GroupInstanceID = "t", "i" }, false},
		{"heartbeat not below the session", func(c *Config) {
			c.GroupID, c.Topic, c.SessionTimeout, c.HeartbeatInterval = "g", "t", 3e9, 3e9
		}, false},
		{"the same assignor twice", func(c *Config) {
			c.GroupID, c.Topic, c.Assignors = "g", "t", []group.Assignor{group.Range(), group.Range()}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := base()
			tt.change(&cfg)
			err := cfg.validate()
			if (err == nil) != tt.ok {
				t.Fatalf("validate = %v, want ok=%v", err, tt.ok)
			}
		})
	}
	cfg := base()
	cfg.GroupID, cfg.Topic = "g", "t"
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.SessionTimeout != DefaultSessionTimeout || cfg.HeartbeatInterval != DefaultHeartbeatInterval ||
		cfg.RebalanceTimeout != DefaultRebalanceTimeout || cfg.AutoCommitInterval != DefaultAutoCommitInterval ||
		cfg.DisableAutoCommit || len(cfg.Assignors) != 1 || cfg.Assignors[0].Name() != "cooperative-sticky" ||
		!slices.Equal(cfg.Topics, []string{"t"}) {
		t.Fatalf("defaults: %+v", cfg)
	}
}
