package messages

import (
	"testing"

	"google.golang.org/protobuf/proto"
)

func TestProduceRequestRoundTrip(t *testing.T) {
	in := &ProduceRequest{
		Topic:              "orders",
		Partition:          3,
		Acks:               Acks_ACKS_ALL,
		TimeoutMs:          30000,
		Records:            []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 49, 0xff, 0xff, 0xff, 0xff, 2},
		CurrentLeaderEpoch: -1,
		CorrelationId:      1 << 40,
	}
	b, err := proto.Marshal(in)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	out := &ProduceRequest{}
	if err := proto.Unmarshal(b, out); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	if !proto.Equal(in, out) {
		t.Errorf("round trip changed the message:\n in: %v\nout: %v", in, out)
	}
}

func TestFetchResponseRoundTrip(t *testing.T) {
	in := &FetchResponse{
		CorrelationId:  7,
		Topic:          "orders",
		ErrorCode:      ErrorCode_ERROR_CODE_UNKNOWN_SERVER_ERROR, // negative enum value
		HighWatermark:  42,
		DivergingEpoch: &EpochEndOffset{Epoch: 4, EndOffset: 40},
		LeaderEpoch:    5,
	}
	b, err := proto.Marshal(in)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	out := &FetchResponse{}
	if err := proto.Unmarshal(b, out); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	if !proto.Equal(in, out) {
		t.Errorf("round trip changed the message:\n in: %v\nout: %v", in, out)
	}
}
