package group

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/messages"
)

func TestSubscriptionRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   Subscription
	}{
		{"topics only", Subscription{Topics: []string{"b", "a"}, Owned: Assignment{}, Generation: -1}},
		{"owned partitions", Subscription{Topics: []string{"a"}, Owned: Assignment{"a": {3, 1}, "b": {0}}, Generation: 7}},
		{"user data", Subscription{Topics: []string{"a"}, Owned: Assignment{}, Generation: 2, UserData: []byte{1, 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := DecodeSubscription(EncodeSubscription(tt.in))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			want := tt.in
			want.Topics = slices.Sorted(slices.Values(want.Topics))
			for _, ps := range want.Owned {
				slices.Sort(ps)
			}
			if !reflect.DeepEqual(out, want) {
				t.Errorf("round trip: %+v, want %+v", out, want)
			}
		})
	}
}

func TestDecodeSubscriptionVersions(t *testing.T) {
	v0 := kmsg.NewConsumerMemberMetadata()
	v0.Version = 0
	v0.Topics = []string{"t"}
	s, err := DecodeSubscription(v0.AppendTo(nil))
	if err != nil || !slices.Equal(s.Topics, []string{"t"}) || len(s.Owned) != 0 || s.Generation != -1 {
		t.Fatalf("v0: %+v, %v", s, err)
	}
	// segmentio/kafka-go sends version 1 cut short after the user data (no
	// owned partitions): read as v0, as kgo and Sarama do.
	v0.UserData = []byte("ud")
	short := v0.AppendTo(nil)
	short[1] = 1
	s, err = DecodeSubscription(short)
	if err != nil || !slices.Equal(s.Topics, []string{"t"}) || string(s.UserData) != "ud" || len(s.Owned) != 0 || s.Generation != -1 {
		t.Fatalf("short v1: %+v, %v", s, err)
	}
	for _, b := range [][]byte{nil, {0}, {0, 3, 0, 0, 0, 9}, {0, 1, 0, 0, 0, 9}} {
		if _, err := DecodeSubscription(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("DecodeSubscription(%v): %v, want ErrMalformed", b, err)
		}
	}
}

func TestAssignmentRoundTrip(t *testing.T) {
	in := Assignment{"b": {2, 0}, "a": {1}, "empty": nil}
	out, err := DecodeAssignment(EncodeAssignment(in))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if want := (Assignment{"a": {1}, "b": {0, 2}}); !reflect.DeepEqual(out, want) {
		t.Errorf("round trip %v, want %v", out, want)
	}
	if out.Count() != 3 || !out.Has("b", 2) || out.Has("b", 1) {
		t.Errorf("Count/Has on %v", out)
	}
	if a, err := DecodeAssignment(nil); err != nil || len(a) != 0 {
		t.Errorf("empty assignment: %v, %v", a, err)
	}
	if _, err := DecodeAssignment([]byte{0, 3, 0}); !errors.Is(err, ErrMalformed) {
		t.Errorf("truncated assignment: %v", err)
	}
}

func TestAssignorNames(t *testing.T) {
	for _, tt := range []struct {
		name        string
		cooperative bool
	}{{"range", false}, {"roundrobin", false}, {"cooperative-sticky", true}} {
		a, ok := ByName(tt.name)
		if !ok || a.Name() != tt.name || a.Cooperative() != tt.cooperative {
			t.Errorf("ByName(%q) = %v, %v", tt.name, a, ok)
		}
	}
	if _, ok := ByName("sticky"); ok {
		t.Errorf("ByName found an assignor that does not exist")
	}
	ps := Protocols(Subscription{Topics: []string{"t"}}, CooperativeSticky(), Range())
	if len(ps) != 2 || ps[0].GetName() != "cooperative-sticky" || ps[1].GetName() != "range" {
		t.Fatalf("protocols %v", ps)
	}
	if s, err := DecodeSubscription(ps[1].GetMetadata()); err != nil || !slices.Equal(s.Topics, []string{"t"}) {
		t.Errorf("protocol metadata: %+v, %v", s, err)
	}
}

// sub builds a member subscribed to topics.
func sub(id string, topics ...string) Member {
	return Member{ID: id, Subscription: Subscription{Topics: topics, Generation: -1}}
}

// owning returns m owning owned in generation gen.
func owning(m Member, gen int32, owned Assignment) Member {
	m.Subscription.Owned = owned
	m.Subscription.Generation = gen
	return m
}

// assignCase is an assignor's expected plan for a group.
type assignCase struct {
	name       string
	members    []Member
	partitions map[string]int32
	want       Plan
}

// runAssignCases checks a's plan for each case.
func runAssignCases(t *testing.T, a Assignor, tests []assignCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := a.Assign(tt.members, tt.partitions); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("plan %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRangeAssignor(t *testing.T) {
	tests := []assignCase{
		{"uneven split", []Member{sub("b", "t"), sub("a", "t")}, map[string]int32{"t": 3},
			Plan{"a": {"t": {0, 1}}, "b": {"t": {2}}}},
		{"two topics, the same cut", []Member{sub("a", "t0", "t1"), sub("b", "t0", "t1")}, map[string]int32{"t0": 3, "t1": 3},
			Plan{"a": {"t0": {0, 1}, "t1": {0, 1}}, "b": {"t0": {2}, "t1": {2}}}},
		{"different subscriptions", []Member{sub("a", "t0"), sub("b", "t0", "t1"), sub("c", "t1")}, map[string]int32{"t0": 2, "t1": 4},
			Plan{"a": {"t0": {0}}, "b": {"t0": {1}, "t1": {0, 1}}, "c": {"t1": {2, 3}}}},
		{"static members first", []Member{sub("a", "t"), {ID: "z", InstanceID: "i", Subscription: Subscription{Topics: []string{"t"}}}},
			map[string]int32{"t": 3}, Plan{"z": {"t": {0, 1}}, "a": {"t": {2}}}},
		{"more members than partitions", []Member{sub("a", "t"), sub("b", "t"), sub("c", "t")}, map[string]int32{"t": 2},
			Plan{"a": {"t": {0}}, "b": {"t": {1}}, "c": {}}},
		{"unknown topic", []Member{sub("a", "t", "gone")}, map[string]int32{"t": 1}, Plan{"a": {"t": {0}}}},
	}
	runAssignCases(t, Range(), tests)
}

func TestRoundRobinAssignor(t *testing.T) {
	tests := []assignCase{
		// The examples of Kafka's RoundRobinAssignor documentation.
		{"same subscriptions", []Member{sub("c1", "t0", "t1"), sub("c0", "t0", "t1")}, map[string]int32{"t0": 3, "t1": 3},
			Plan{"c0": {"t0": {0, 2}, "t1": {1}}, "c1": {"t0": {1}, "t1": {0, 2}}}},
		{"different subscriptions", []Member{sub("c0", "t0"), sub("c1", "t0", "t1"), sub("c2", "t0", "t1", "t2")},
			map[string]int32{"t0": 1, "t1": 2, "t2": 3},
			Plan{"c0": {"t0": {0}}, "c1": {"t1": {0}}, "c2": {"t1": {1}, "t2": {0, 1, 2}}}},
	}
	runAssignCases(t, RoundRobin(), tests)
}

func TestCooperativeSticky(t *testing.T) {
	twelve := map[string]int32{"t": 12}
	tests := []assignCase{
		{"fresh group", []Member{sub("a", "t"), sub("b", "t"), sub("c", "t")}, twelve,
			Plan{"a": {"t": {0, 3, 6, 9}}, "b": {"t": {1, 4, 7, 10}}, "c": {"t": {2, 5, 8, 11}}}},
		{"a fourth member: three partitions revoked, none assigned yet", []Member{
			owning(sub("a", "t"), 1, Assignment{"t": {0, 1, 2, 3}}),
			owning(sub("b", "t"), 1, Assignment{"t": {4, 5, 6, 7}}),
			owning(sub("c", "t"), 1, Assignment{"t": {8, 9, 10, 11}}),
			sub("d", "t"),
		}, twelve, Plan{"a": {"t": {0, 1, 2}}, "b": {"t": {4, 5, 6}}, "c": {"t": {8, 9, 10}}, "d": {}}},
		{"the follow-up rebalance assigns them", []Member{
			owning(sub("a", "t"), 2, Assignment{"t": {0, 1, 2}}),
			owning(sub("b", "t"), 2, Assignment{"t": {4, 5, 6}}),
			owning(sub("c", "t"), 2, Assignment{"t": {8, 9, 10}}),
			sub("d", "t"),
		}, twelve, Plan{"a": {"t": {0, 1, 2}}, "b": {"t": {4, 5, 6}}, "c": {"t": {8, 9, 10}}, "d": {"t": {3, 7, 11}}}},
		{"a member leaves: its partitions go at once", []Member{
			owning(sub("a", "t"), 1, Assignment{"t": {0, 1, 2}}),
			owning(sub("b", "t"), 1, Assignment{"t": {3, 4, 5}}),
			owning(sub("c", "t"), 1, Assignment{"t": {6, 7, 8}}),
		}, twelve, Plan{"a": {"t": {0, 1, 2, 9}}, "b": {"t": {3, 4, 5, 10}}, "c": {"t": {6, 7, 8, 11}}}},
		// a left u, which only b can take; b gives t-1 to a for balance.
		// Both moves wait for the owners to revoke.
		{"unsubscribed topic: revoked first", []Member{
			owning(sub("a", "t"), 1, Assignment{"t": {0}, "u": {0, 1}}),
			owning(sub("b", "t", "u"), 1, Assignment{"t": {1}}),
		}, map[string]int32{"t": 2, "u": 2}, Plan{"a": {"t": {0}}, "b": {}}},
		{"unsubscribed topic: the follow-up", []Member{
			owning(sub("a", "t"), 2, Assignment{"t": {0}}),
			owning(sub("b", "t", "u"), 2, Assignment{}),
		}, map[string]int32{"t": 2, "u": 2}, Plan{"a": {"t": {0, 1}}, "b": {"u": {0, 1}}}},
		{"claimed twice: the newer generation keeps it", []Member{
			owning(sub("a", "t"), 1, Assignment{"t": {0}}),
			owning(sub("b", "t"), 2, Assignment{"t": {0, 1}}),
		}, map[string]int32{"t": 3}, Plan{"a": {"t": {2}}, "b": {"t": {0, 1}}}},
		{"claimed twice in one generation: the first member keeps it", []Member{
			owning(sub("b", "t"), 2, Assignment{"t": {0}}),
			owning(sub("a", "t"), 2, Assignment{"t": {0}}),
		}, map[string]int32{"t": 2}, Plan{"a": {"t": {0}}, "b": {"t": {1}}}},
		{"claims of partitions that do not exist", []Member{
			owning(sub("a", "t"), 1, Assignment{"t": {5, -1}, "gone": {0}}),
			sub("b", "t"),
		}, map[string]int32{"t": 2}, Plan{"a": {"t": {0}}, "b": {"t": {1}}}},
		{"different subscriptions", []Member{sub("a", "t0", "t1"), sub("b", "t0")}, map[string]int32{"t0": 2, "t1": 2},
			Plan{"a": {"t1": {0, 1}}, "b": {"t0": {0, 1}}}},
		{"nobody subscribes", []Member{sub("a", "x")}, map[string]int32{"t": 2}, Plan{"a": {}}},
	}
	runAssignCases(t, CooperativeSticky(), tests)
}

func TestAssignGroup(t *testing.T) {
	members := []*messages.JoinGroupResponseMember{
		{MemberId: "b", Metadata: EncodeSubscription(Subscription{Topics: []string{"t"}})},
		{MemberId: "a", Metadata: EncodeSubscription(Subscription{Topics: []string{"t"}})},
	}
	out, err := AssignGroup(Range(), members, map[string]int32{"t": 3})
	if err != nil {
		t.Fatalf("AssignGroup: %v", err)
	}
	want := map[string]Assignment{"a": {"t": {0, 1}}, "b": {"t": {2}}}
	if len(out) != 2 || out[0].GetMemberId() != "b" || out[1].GetMemberId() != "a" {
		t.Fatalf("assignments %v", out)
	}
	for _, a := range out {
		got, err := DecodeAssignment(a.GetAssignment())
		if err != nil || !reflect.DeepEqual(got, want[a.GetMemberId()]) {
			t.Errorf("%s: %v, %v; want %v", a.GetMemberId(), got, err, want[a.GetMemberId()])
		}
	}
	members = append(members, &messages.JoinGroupResponseMember{MemberId: "c", Metadata: []byte{9}})
	if _, err := AssignGroup(Range(), members, map[string]int32{"t": 3}); !errors.Is(err, ErrMalformed) {
		t.Errorf("malformed member metadata: %v", err)
	}
}

// TestAssignorsDeterministic: the plan does not depend on the order members
// are given in.
func TestAssignorsDeterministic(t *testing.T) {
	members := []Member{
		owning(sub("a", "t", "u"), 1, Assignment{"t": {0, 1, 2}}),
		sub("b", "t"), sub("c", "u"),
		{ID: "d", InstanceID: "x", Subscription: Subscription{Topics: []string{"t", "u"}, Generation: -1}},
	}
	partitions := map[string]int32{"t": 7, "u": 5}
	for _, a := range Assignors() {
		want := a.Assign(members, partitions)
		for i := range 10 {
			shuffled := slices.Clone(members)
			slices.Reverse(shuffled)
			shuffled[0], shuffled[i%len(shuffled)] = shuffled[i%len(shuffled)], shuffled[0]
			if got := a.Assign(shuffled, partitions); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: plan %v for %v, %v for the original order", a.Name(), got, memberIDs(shuffled), want)
			}
		}
	}
}

func memberIDs(ms []Member) []string {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	return ids
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
