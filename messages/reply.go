// reply.go holds ErrorReply, the whole-request failure answer to an admin
// or controller request, shared by the controller and the brokers that
// forward to it.

package messages

import "google.golang.org/protobuf/proto"

// ErrorReply returns the response a controller gives to req when it fails
// as a whole with code: the response type that answers req
// (ElectLeadersResponse, ReassignPartitionsResponse,
// AlterPartitionResponse, ControlledShutdownResponse, the ACL and SCRAM
// responses), an AdminResponse
// for the topic admin requests. Brokers forwarding requests use it too.
func ErrorReply(req proto.Message, corr int64, code ErrorCode, text string) proto.Message {
	switch req.(type) {
	case *ElectLeadersRequest:
		return &ElectLeadersResponse{CorrelationId: corr, ErrorCode: code, ErrorMessage: text}
	case *ReassignPartitionsRequest:
		return &ReassignPartitionsResponse{CorrelationId: corr, ErrorCode: code, ErrorMessage: text}
	case *AlterPartitionRequest:
		return &AlterPartitionResponse{CorrelationId: corr, ErrorCode: code, ErrorMessage: text}
	case *ControlledShutdownRequest:
		return &ControlledShutdownResponse{CorrelationId: corr, ErrorCode: code, ErrorMessage: text}
	case *CreateAclsRequest:
		return &CreateAclsResponse{CorrelationId: corr, ErrorCode: code, ErrorMessage: text}
	case *DeleteAclsRequest:
		return &DeleteAclsResponse{CorrelationId: corr, ErrorCode: code, ErrorMessage: text}
	case *DescribeAclsRequest:
		return &DescribeAclsResponse{CorrelationId: corr, ErrorCode: code, ErrorMessage: text}
	case *AlterScramCredentialsRequest:
		return &AlterScramCredentialsResponse{CorrelationId: corr, ErrorCode: code, ErrorMessage: text}
	case *DescribeScramUsersRequest:
		return &DescribeScramUsersResponse{CorrelationId: corr, ErrorCode: code, ErrorMessage: text}
	}
	return &AdminResponse{CorrelationId: corr, ErrorCode: code, ErrorMessage: text}
}
