package messages

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestErrorCodeRetriable(t *testing.T) {
	tests := []struct {
		code      ErrorCode
		retriable bool
	}{
		{ErrorCode_ERROR_CODE_UNSPECIFIED, false},
		{ErrorCode_ERROR_CODE_UNKNOWN_SERVER_ERROR, false},
		{ErrorCode_ERROR_CODE_OFFSET_OUT_OF_RANGE, false},
		{ErrorCode_ERROR_CODE_CORRUPT_MESSAGE, true},
		{ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION, true},
		{ErrorCode_ERROR_CODE_INVALID_FETCH_SIZE, false},
		{ErrorCode_ERROR_CODE_LEADER_NOT_AVAILABLE, true},
		{ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER, true},
		{ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT, true},
		{ErrorCode_ERROR_CODE_MESSAGE_TOO_LARGE, false},
		{ErrorCode_ERROR_CODE_STALE_CONTROLLER_EPOCH, false},
		{ErrorCode_ERROR_CODE_INVALID_TOPIC_EXCEPTION, false},
		{ErrorCode_ERROR_CODE_RECORD_LIST_TOO_LARGE, false},
		{ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS, true},
		{ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS_AFTER_APPEND, true},
		{ErrorCode_ERROR_CODE_INVALID_REQUIRED_ACKS, false},
		{ErrorCode_ERROR_CODE_TOPIC_AUTHORIZATION_FAILED, false},
		{ErrorCode_ERROR_CODE_GROUP_AUTHORIZATION_FAILED, false},
		{ErrorCode_ERROR_CODE_CLUSTER_AUTHORIZATION_FAILED, false},
		{ErrorCode_ERROR_CODE_INVALID_TIMESTAMP, false},
		{ErrorCode_ERROR_CODE_TOPIC_ALREADY_EXISTS, false},
		{ErrorCode_ERROR_CODE_INVALID_PARTITIONS, false},
		{ErrorCode_ERROR_CODE_INVALID_REPLICATION_FACTOR, false},
		{ErrorCode_ERROR_CODE_INVALID_CONFIG, false},
		{ErrorCode_ERROR_CODE_NOT_CONTROLLER, true},
		{ErrorCode_ERROR_CODE_INVALID_REQUEST, false},
		{ErrorCode_ERROR_CODE_POLICY_VIOLATION, false},
		{ErrorCode_ERROR_CODE_KAFKA_STORAGE_ERROR, true},
		{ErrorCode_ERROR_CODE_FENCED_LEADER_EPOCH, true},
		{ErrorCode_ERROR_CODE_UNKNOWN_LEADER_EPOCH, true},
		{ErrorCode_ERROR_CODE_INVALID_RECORD, false},
		{ErrorCode_ERROR_CODE_INVALID_UPDATE_VERSION, false},
		{ErrorCode_ERROR_CODE_INELIGIBLE_REPLICA, false},
		{ErrorCode_ERROR_CODE_STALE_BROKER_EPOCH, false},
		{ErrorCode_ERROR_CODE_OUT_OF_ORDER_SEQUENCE_NUMBER, false},
		{ErrorCode_ERROR_CODE_DUPLICATE_SEQUENCE_NUMBER, false},
		{ErrorCode_ERROR_CODE_INVALID_PRODUCER_EPOCH, false},
		{ErrorCode_ERROR_CODE_UNKNOWN_PRODUCER_ID, false},
		{ErrorCode_ERROR_CODE_REASSIGNMENT_IN_PROGRESS, false},
		{ErrorCode_ERROR_CODE_ELECTION_NOT_NEEDED, true},
		{ErrorCode_ERROR_CODE_PREFERRED_LEADER_NOT_AVAILABLE, true},
		{ErrorCode_ERROR_CODE_NO_REASSIGNMENT_IN_PROGRESS, false},
		{ErrorCode_ERROR_CODE_OFFSET_METADATA_TOO_LARGE, false},
		{ErrorCode_ERROR_CODE_COORDINATOR_LOAD_IN_PROGRESS, true},
		{ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE, true},
		{ErrorCode_ERROR_CODE_NOT_COORDINATOR, true},
		{ErrorCode_ERROR_CODE_INVALID_GROUP_ID, false},
		{ErrorCode_ERROR_CODE_INVALID_COMMIT_OFFSET_SIZE, false},
		{ErrorCode_ERROR_CODE_ILLEGAL_GENERATION, false},
		{ErrorCode_ERROR_CODE_INCONSISTENT_GROUP_PROTOCOL, false},
		{ErrorCode_ERROR_CODE_UNKNOWN_MEMBER_ID, false},
		{ErrorCode_ERROR_CODE_INVALID_SESSION_TIMEOUT, false},
		{ErrorCode_ERROR_CODE_REBALANCE_IN_PROGRESS, false},
		{ErrorCode_ERROR_CODE_NON_EMPTY_GROUP, false},
		{ErrorCode_ERROR_CODE_GROUP_ID_NOT_FOUND, false},
		{ErrorCode_ERROR_CODE_MEMBER_ID_REQUIRED, false},
		{ErrorCode_ERROR_CODE_GROUP_MAX_SIZE_REACHED, false},
		{ErrorCode_ERROR_CODE_FENCED_INSTANCE_ID, false},
		{ErrorCode(9999), false},
	}
	// Every declared code is in the table, so a new code must be classified.
	seen := make(map[ErrorCode]bool)
	for _, tt := range tests {
		seen[tt.code] = true
	}
	for n, name := range ErrorCode_name {
		if !seen[ErrorCode(n)] {
			t.Errorf("%s missing from the table", name)
		}
	}
	for _, tt := range tests {
		t.Run(tt.code.String(), func(t *testing.T) {
			if got := tt.code.Retriable(); got != tt.retriable {
				t.Errorf("%v.Retriable() = %v, want %v", tt.code, got, tt.retriable)
			}
		})
	}
}

// TestErrorCodeMatchesKafka checks every code against franz-go's table of
// Kafka error codes: same number, same name, same retriability.
func TestErrorCodeMatchesKafka(t *testing.T) {
	// Kafka renamed NOT_LEADER_FOR_PARTITION (KIP-392); franz-go keeps the
	// old name.
	renamed := map[string]string{"NOT_LEADER_OR_FOLLOWER": "NOT_LEADER_FOR_PARTITION"}
	for n := range ErrorCode_name {
		c := ErrorCode(n)
		if c == ErrorCode_ERROR_CODE_UNSPECIFIED {
			continue
		}
		t.Run(c.String(), func(t *testing.T) {
			ke := kerr.TypedErrorForCode(int16(n))
			if ke == nil {
				t.Fatalf("Kafka has no error code %d", n)
			}
			want := c.ShortName()
			if old, ok := renamed[want]; ok {
				want = old
			}
			if ke.Message != want {
				t.Errorf("Kafka code %d is %s, ours is %s", n, ke.Message, c.ShortName())
			}
			if ke.Retriable != c.Retriable() {
				t.Errorf("%s: Kafka retriable = %v, ours %v", c, ke.Retriable, c.Retriable())
			}
		})
	}
}

func TestErrorCodeErr(t *testing.T) {
	tests := []struct {
		name string
		code ErrorCode
		msg  string
		want string // "" means a nil error
	}{
		{"success is nil", ErrorCode_ERROR_CODE_UNSPECIFIED, "ignored", ""},
		{"with message", ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER, "leader is broker 2",
			"actorlog: NOT_LEADER_OR_FOLLOWER: leader is broker 2"},
		{"without message", ErrorCode_ERROR_CODE_OFFSET_OUT_OF_RANGE, "",
			"actorlog: OFFSET_OUT_OF_RANGE"},
		{"negative code", ErrorCode_ERROR_CODE_UNKNOWN_SERVER_ERROR, "boom",
			"actorlog: UNKNOWN_SERVER_ERROR: boom"},
		{"unknown code", ErrorCode(9999), "from a newer peer",
			"actorlog: ERROR_CODE(9999): from a newer peer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.code.Err(tt.msg)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Err() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Err() = nil, want %q", tt.want)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
			if got := CodeOf(err); got != tt.code {
				t.Errorf("CodeOf() = %v, want %v", got, tt.code)
			}
		})
	}
}

func TestErrorIsAndCodeOf(t *testing.T) {
	err := fmt.Errorf("replica: append: %w",
		ErrorCode_ERROR_CODE_FENCED_LEADER_EPOCH.Err("request epoch 3 < 4"))
	if !errors.Is(err, &Error{Code: ErrorCode_ERROR_CODE_FENCED_LEADER_EPOCH}) {
		t.Errorf("errors.Is by code failed for %v", err)
	}
	if errors.Is(err, &Error{Code: ErrorCode_ERROR_CODE_UNKNOWN_LEADER_EPOCH}) {
		t.Errorf("errors.Is matched a different code for %v", err)
	}
	if e, ok := errors.AsType[*Error](err); !ok || !e.Retriable() {
		t.Errorf("errors.AsType = %v, %v; want a retriable *Error", e, ok)
	}

	tests := []struct {
		name string
		err  error
		want ErrorCode
	}{
		{"nil", nil, ErrorCode_ERROR_CODE_UNSPECIFIED},
		{"wrapped", err, ErrorCode_ERROR_CODE_FENCED_LEADER_EPOCH},
		{"plain error", errors.New("disk on fire"), ErrorCode_ERROR_CODE_UNKNOWN_SERVER_ERROR},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CodeOf(tt.err); got != tt.want {
				t.Errorf("CodeOf(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestResponseErr(t *testing.T) {
	const code = ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER
	tests := []struct {
		name    string
		ok, bad interface{ Err() error }
	}{
		{"produce", &ProduceResponse{}, &ProduceResponse{ErrorCode: code, ErrorMessage: "m"}},
		{"fetch", &FetchResponse{}, &FetchResponse{ErrorCode: code, ErrorMessage: "m"}},
		{"list offsets", &ListOffsetsResponse{}, &ListOffsetsResponse{ErrorCode: code, ErrorMessage: "m"}},
		{"offset for leader epoch", &OffsetForLeaderEpochResponse{},
			&OffsetForLeaderEpochResponse{ErrorCode: code, ErrorMessage: "m"}},
		{"join group", &JoinGroupResponse{}, &JoinGroupResponse{ErrorCode: code, ErrorMessage: "m"}},
		{"sync group", &SyncGroupResponse{}, &SyncGroupResponse{ErrorCode: code, ErrorMessage: "m"}},
		{"heartbeat", &HeartbeatResponse{}, &HeartbeatResponse{ErrorCode: code, ErrorMessage: "m"}},
		{"leave group", &LeaveGroupResponse{}, &LeaveGroupResponse{ErrorCode: code, ErrorMessage: "m"}},
		{"list groups", &ListGroupsResponse{}, &ListGroupsResponse{ErrorCode: code, ErrorMessage: "m"}},
		{"nil response", (*ProduceResponse)(nil), &ProduceResponse{ErrorCode: code, ErrorMessage: "m"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.ok.Err(); err != nil {
				t.Errorf("success: Err() = %v, want nil", err)
			}
			if err := tt.bad.Err(); CodeOf(err) != code || err.Error() != "actorlog: NOT_LEADER_OR_FOLLOWER: m" {
				t.Errorf("failure: Err() = %v", err)
			}
		})
	}
}
