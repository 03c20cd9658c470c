// coordinator_test.go: the coordinator names and the Err methods of the
// coordinator responses.

package messages

import "testing"

func TestCoordinatorNames(t *testing.T) {
	if got := CoordinatorActorID(7); got != "broker/coordinator/7" {
		t.Errorf("CoordinatorActorID(7) = %q", got)
	}
	if !IsInternalTopic("__consumer_offsets") || IsInternalTopic("events") || IsInternalTopic("__consumer_offsets2") {
		t.Error("IsInternalTopic: only __consumer_offsets is internal")
	}
}

func TestCoordinatorResponseErr(t *testing.T) {
	const code = ErrorCode_ERROR_CODE_NOT_COORDINATOR
	tests := []struct {
		name    string
		ok, bad interface{ Err() error }
	}{
		{"find coordinator", &FindCoordinatorResponse{}, &FindCoordinatorResponse{ErrorCode: code, ErrorMessage: "m"}},
		{"offset commit", &OffsetCommitResponse{Results: []*PartitionResult{{ErrorCode: ErrorCode_ERROR_CODE_OFFSET_METADATA_TOO_LARGE}}},
			&OffsetCommitResponse{ErrorCode: code, ErrorMessage: "m"}},
		{"offset fetch", &OffsetFetchResponse{}, &OffsetFetchResponse{ErrorCode: code, ErrorMessage: "m"}},
		{"nil response", (*OffsetFetchResponse)(nil), &OffsetFetchResponse{ErrorCode: code, ErrorMessage: "m"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.ok.Err(); err != nil {
				t.Errorf("success: Err() = %v, want nil (per-partition codes are not looked at)", err)
			}
			if err := tt.bad.Err(); CodeOf(err) != code || err.Error() != "actorlog: NOT_COORDINATOR: m" {
				t.Errorf("failure: Err() = %v", err)
			}
		})
	}
}
