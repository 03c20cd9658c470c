// protocol_fuzz_test.go: fuzz targets of the consumer protocol decoders,
// DecodeSubscription and DecodeAssignment — the bytes members send in
// JoinGroup and the leader in SyncGroup, so anything a client sends. Each
// checks that garbage never panics, that a refusal wraps ErrMalformed with
// no partial result, and that what decodes re-encodes to bytes that decode
// to the same subscription or assignment (in the encoder's sorted form).

package group

import (
	"bytes"
	"errors"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func FuzzDecodeSubscription(f *testing.F) {
	for _, s := range []Subscription{
		{Topics: []string{"events"}, Generation: -1},
		{Topics: []string{"b", "a"}, Owned: Assignment{"a": {3, 1}, "b": {0}}, Generation: 7},
		{Topics: []string{"a"}, Generation: 2, UserData: []byte{1, 2}},
		{},
	} {
		b := EncodeSubscription(s)
		f.Add(b)
		f.Add(b[:len(b)-1]) // truncated
	}
	// What older and other clients send: every version, with and without
	// owned partitions, user data and a rack.
	for v := int16(0); v <= 3; v++ {
		m := kmsg.NewConsumerMemberMetadata()
		m.Version = v
		m.Topics = []string{"orders", "audit"}
		m.UserData = []byte("sticky")
		op := kmsg.NewConsumerMemberMetadataOwnedPartition()
		op.Topic, op.Partitions = "orders", []int32{2, 0}
		m.OwnedPartitions = []kmsg.ConsumerMemberMetadataOwnedPartition{op, op}
		m.Generation = 5
		rack := "rack-a"
		m.Rack = &rack
		f.Add(m.AppendTo(nil))
	}
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSubscription(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			if !reflect.DeepEqual(s, Subscription{}) {
				t.Fatalf("error %v came with subscription %+v", err, s)
			}
			return
		}
		again, err := DecodeSubscription(EncodeSubscription(s))
		if err != nil {
			t.Fatalf("re-encoded %+v does not decode: %v", s, err)
		}
		want := sortedSubscription(s)
		if got := sortedSubscription(again); !slices.Equal(got.Topics, want.Topics) || !reflect.DeepEqual(got.Owned, want.Owned) ||
			got.Generation != want.Generation || !bytes.Equal(got.UserData, want.UserData) {
			t.Fatalf("round trip: %+v, want %+v", got, want)
		}
	})
}

// sortedSubscription is s as EncodeSubscription writes it: topics and owned
// partitions sorted, topics owning nothing left out.
func sortedSubscription(s Subscription) Subscription {
	s.Topics = slices.Sorted(slices.Values(s.Topics))
	s.Owned = sortedAssignment(s.Owned)
	return s
}

// sortedAssignment is a as EncodeAssignment writes it: partitions sorted,
// topics with none left out.
func sortedAssignment(a Assignment) Assignment {
	out := Assignment{}
	for t, ps := range a {
		if len(ps) > 0 {
			out[t] = slices.Sorted(slices.Values(ps))
		}
	}
	return out
}

func FuzzDecodeAssignment(f *testing.F) {
	for _, a := range []Assignment{
		{"events": {0, 1, 2}},
		{"b": {2, 0}, "a": {1}, "empty": nil},
		{},
	} {
		b := EncodeAssignment(a)
		f.Add(b)
		if len(b) > 1 {
			f.Add(b[:len(b)-1]) // truncated
		}
	}
	// What the range assignor gives two members of a 5-partition topic.
	members := []Member{sub("m1", "t"), sub("m2", "t")}
	plan := Range().Assign(members, map[string]int32{"t": 5})
	for _, id := range slices.Sorted(maps.Keys(plan)) {
		f.Add(EncodeAssignment(plan[id]))
	}
	// Other clients' encodings: version 0, user data, a topic twice.
	m := kmsg.NewConsumerMemberAssignment()
	m.Version = 0
	at := kmsg.NewConsumerMemberAssignmentTopic()
	at.Topic, at.Partitions = "orders", []int32{4, 1}
	m.Topics = []kmsg.ConsumerMemberAssignmentTopic{at, at}
	m.UserData = []byte("sticky")
	f.Add(m.AppendTo(nil))
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := DecodeAssignment(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			if a != nil {
				t.Fatalf("error %v came with assignment %v", err, a)
			}
			return
		}
		if a == nil {
			t.Fatal("decoded a nil assignment without an error")
		}
		again, err := DecodeAssignment(EncodeAssignment(a))
		if err != nil {
			t.Fatalf("re-encoded %v does not decode: %v", a, err)
		}
		if got, want := sortedAssignment(again), sortedAssignment(a); !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip: %v, want %v", got, want)
		}
		if again.Count() != sortedAssignment(a).Count() {
			t.Fatalf("round trip changed the partition count: %d, want %d", again.Count(), a.Count())
		}
	})
}
