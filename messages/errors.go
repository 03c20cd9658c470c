// errors.go holds the Go side of ErrorCode: Kafka's retriable set, and the
// Error type that carries a code as a Go error.

package messages

import (
	"errors"
	"strconv"
	"strings"
)

// Retriable reports whether a request that failed with c may succeed if sent
// again unchanged (perhaps after a metadata refresh), following Kafka's
// classification of the same codes. ERROR_CODE_UNSPECIFIED (success) and codes
// unknown to this package are not retriable.
func (c ErrorCode) Retriable() bool {
	switch c {
	case ErrorCode_ERROR_CODE_CORRUPT_MESSAGE,
		ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION,
		ErrorCode_ERROR_CODE_LEADER_NOT_AVAILABLE,
		ErrorCode_ERROR_CODE_NOT_LEADER_OR_FOLLOWER,
		ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT,
		ErrorCode_ERROR_CODE_NOT_CONTROLLER,
		ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS,
		ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS_AFTER_APPEND,
		ErrorCode_ERROR_CODE_KAFKA_STORAGE_ERROR,
		ErrorCode_ERROR_CODE_FENCED_LEADER_EPOCH,
		ErrorCode_ERROR_CODE_UNKNOWN_LEADER_EPOCH,
		ErrorCode_ERROR_CODE_PREFERRED_LEADER_NOT_AVAILABLE,
		ErrorCode_ERROR_CODE_ELECTION_NOT_NEEDED,
		ErrorCode_ERROR_CODE_COORDINATOR_LOAD_IN_PROGRESS,
		ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE,
		ErrorCode_ERROR_CODE_NOT_COORDINATOR:
		return true
	}
	return false
}

// ShortName returns c's name without the ERROR_CODE_ prefix, which is Kafka's
// name for the code ("NOT_LEADER_OR_FOLLOWER"); "NONE" for
// ERROR_CODE_UNSPECIFIED, and "ERROR_CODE(n)" for a value this package does not
// know (a newer peer may send one).
func (c ErrorCode) ShortName() string {
	if c == ErrorCode_ERROR_CODE_UNSPECIFIED {
		return "NONE"
	}
	name, ok := ErrorCode_name[int32(c)]
	if !ok {
		return "ERROR_CODE(" + strconv.Itoa(int(c)) + ")"
	}
	return strings.TrimPrefix(name, "ERROR_CODE_")
}

// Err returns nil for ERROR_CODE_UNSPECIFIED (success) and otherwise an *Error
// holding c and msg.
func (c ErrorCode) Err(msg string) error {
	if c == ErrorCode_ERROR_CODE_UNSPECIFIED {
		return nil
	}
	return &Error{Code: c, Message: msg}
}

// Error is an ErrorCode as a Go error, for callers that turn a response's
// error_code and error_message into an error. Errors match with errors.Is by
// code alone: errors.Is(err, &Error{Code: c}) holds for any message.
type Error struct {
	// Code is the error code; never ERROR_CODE_UNSPECIFIED when built by Err.
	Code ErrorCode
	// Message is the responder's detail; may be empty.
	Message string
}

// Error returns "actorlog: CODE: message", or "actorlog: CODE" when Message is
// empty.
func (e *Error) Error() string {
	if e.Message == "" {
		return "actorlog: " + e.Code.ShortName()
	}
	return "actorlog: " + e.Code.ShortName() + ": " + e.Message
}

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Retriable reports whether the request may be retried; see
// ErrorCode.Retriable.
func (e *Error) Retriable() bool { return e.Code.Retriable() }

// CodeOf returns the ErrorCode to report for err: ERROR_CODE_UNSPECIFIED for
// nil, the code of the first *Error in err's chain, and
// ERROR_CODE_UNKNOWN_SERVER_ERROR for any other error.
func CodeOf(err error) ErrorCode {
	if err == nil {
		return ErrorCode_ERROR_CODE_UNSPECIFIED
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	return ErrorCode_ERROR_CODE_UNKNOWN_SERVER_ERROR
}

// Err returns the response's error_code and error_message as an error, or nil
// on success. Safe on a nil response (returns nil).
func (x *ProduceResponse) Err() error { return x.GetErrorCode().Err(x.GetErrorMessage()) }

// Err returns the response's error_code and error_message as an error, or nil
// on success. Safe on a nil response (returns nil).
func (x *FetchResponse) Err() error { return x.GetErrorCode().Err(x.GetErrorMessage()) }

// Err returns the response's error_code and error_message as an error, or nil
// on success. Safe on a nil response (returns nil).
func (x *ListOffsetsResponse) Err() error { return x.GetErrorCode().Err(x.GetErrorMessage()) }

// Err returns the response's error_code and error_message as an error, or nil
// on success. Safe on a nil response (returns nil).
func (x *OffsetForLeaderEpochResponse) Err() error {
	return x.GetErrorCode().Err(x.GetErrorMessage())
}

// Err returns the response's error_code and error_message as an error, or nil
// on success. Safe on a nil response (returns nil).
func (x *JoinGroupResponse) Err() error { return x.GetErrorCode().Err(x.GetErrorMessage()) }

// Err returns the response's error_code and error_message as an error, or nil
// on success. Safe on a nil response (returns nil).
func (x *SyncGroupResponse) Err() error { return x.GetErrorCode().Err(x.GetErrorMessage()) }

// Err returns the response's error_code and error_message as an error, or nil
// on success. Safe on a nil response (returns nil).
func (x *HeartbeatResponse) Err() error { return x.GetErrorCode().Err(x.GetErrorMessage()) }

// Err returns the response's group-level error_code and error_message as an
// error, or nil; per-member results are not looked at. Safe on a nil
// response (returns nil).
func (x *LeaveGroupResponse) Err() error { return x.GetErrorCode().Err(x.GetErrorMessage()) }

// Err returns the response's error_code and error_message as an error, or nil
// on success. Safe on a nil response (returns nil).
func (x *ListGroupsResponse) Err() error { return x.GetErrorCode().Err(x.GetErrorMessage()) }
