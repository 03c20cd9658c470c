// acls.go: the blocking calls for the Kafka listener's ACL bindings and
// SCRAM credentials (issue 16), which are controller metadata: they go to
// the controller actor of a bootstrap host, which acts on them when
// elected or forwards them to the elected one (actors/controller/acls.go).
// NOT_CONTROLLER (no controller yet, an election in progress, a controller
// deposed before it wrote anything) is retried with backoff until ctx
// ends, as the topic admin calls do. The writes need ALTER on the cluster
// resource, the reads DESCRIBE on it. SCRAM credentials travel salted
// (StoredKey, ServerKey): the password never leaves the caller.

package client

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/internal/acl"
	"github.com/actorlog/actorlog/messages"
)

// controllerReply is an answer of the controller with a top-level code.
type controllerReply interface {
	proto.Message
	GetErrorCode() messages.ErrorCode
	GetErrorMessage() string
}

// askController sends msg to a bootstrap host's controller actor and
// returns its answer, a T, once it is not NOT_CONTROLLER or ctx ends; the
// answer's top-level code is returned as the error.
func askController[T controllerReply](ctx context.Context, c *Client, msg proto.Message) (T, error) {
	var zero T
	backoff := 50 * time.Millisecond
	for {
		res, err := c.bootstrapRequest(ctx, messages.ControllerActorID, msg)
		if err != nil {
			return zero, err
		}
		resp, ok := res.(T)
		if !ok {
			return zero, fmt.Errorf("client: unexpected reply %T to %T", res, msg)
		}
		if resp.GetErrorCode() != messages.ErrorCode_ERROR_CODE_NOT_CONTROLLER {
			return resp, resp.GetErrorCode().Err(resp.GetErrorMessage())
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return zero, resp.GetErrorCode().Err(resp.GetErrorMessage())
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}

// CreateACLs stores ACL bindings through the controller. It returns one
// error per binding (nil: stored; a *messages.Error otherwise,
// INVALID_REQUEST for an invalid binding), and an error for the request
// as a whole (then the per-binding errors are nil).
func (c *Client) CreateACLs(ctx context.Context, bindings []acl.Binding) ([]error, error) {
	req := &messages.CreateAclsRequest{Bindings: messages.BindingsToProto(bindings), CorrelationId: c.NextCorrelationID()}
	resp, err := askController[*messages.CreateAclsResponse](ctx, c, req)
	if err != nil {
		return nil, err
	}
	if len(resp.Results) != len(bindings) {
		return nil, fmt.Errorf("client: create ACLs: %d results for %d bindings", len(resp.Results), len(bindings))
	}
	out := make([]error, len(resp.Results))
	for i, r := range resp.Results {
		out[i] = r.GetErrorCode().Err(r.GetErrorMessage())
	}
	return out, nil
}

// ACLDeletion is the outcome of one DeleteACLs filter: the bindings it
// deleted (also when it failed part way) and its error (a
// *messages.Error), if any.
type ACLDeletion struct {
	Deleted []acl.Binding
	Err     error
}

// DeleteACLs deletes, through the controller, the bindings each filter
// matches, returning one ACLDeletion per filter, and an error for the
// request as a whole (then no deletions).
func (c *Client) DeleteACLs(ctx context.Context, filters []acl.Filter) ([]ACLDeletion, error) {
	pf := make([]*messages.AclFilter, len(filters))
	for i, f := range filters {
		pf[i] = messages.FilterToProto(f)
	}
	req := &messages.DeleteAclsRequest{Filters: pf, CorrelationId: c.NextCorrelationID()}
	resp, err := askController[*messages.DeleteAclsResponse](ctx, c, req)
	if err != nil {
		return nil, err
	}
	if len(resp.Results) != len(filters) {
		return nil, fmt.Errorf("client: delete ACLs: %d results for %d filters", len(resp.Results), len(filters))
	}
	out := make([]ACLDeletion, len(resp.Results))
	for i, r := range resp.Results {
		out[i] = ACLDeletion{Deleted: messages.BindingsFromProto(r.Deleted), Err: r.GetErrorCode().Err(r.GetErrorMessage())}
	}
	return out, nil
}

// DescribeACLs returns the bindings f matches, from the metadata store.
func (c *Client) DescribeACLs(ctx context.Context, f acl.Filter) ([]acl.Binding, error) {
	req := &messages.DescribeAclsRequest{Filter: messages.FilterToProto(f), CorrelationId: c.NextCorrelationID()}
	resp, err := askController[*messages.DescribeAclsResponse](ctx, c, req)
	if err != nil {
		return nil, err
	}
	return messages.BindingsFromProto(resp.Bindings), nil
}

// AlterScramCredentials applies deletions, then upsertions, through the
// controller. The response holds one result per item, in order; a
// deletion of a credential that does not exist has NotFound set. The
// error is for the request as a whole.
func (c *Client) AlterScramCredentials(ctx context.Context, upsertions []*messages.ScramUpsertion, deletions []*messages.ScramDeletion) (*messages.AlterScramCredentialsResponse, error) {
	req := &messages.AlterScramCredentialsRequest{Upsertions: upsertions, Deletions: deletions, CorrelationId: c.NextCorrelationID()}
	resp, err := askController[*messages.AlterScramCredentialsResponse](ctx, c, req)
	if err != nil {
		return nil, err
	}
	if len(resp.UpsertionResults) != len(upsertions) || len(resp.DeletionResults) != len(deletions) {
		return nil, fmt.Errorf("client: alter SCRAM credentials: %d+%d results for %d upsertions and %d deletions",
			len(resp.UpsertionResults), len(resp.DeletionResults), len(upsertions), len(deletions))
	}
	return resp, nil
}

// DescribeScramUsers returns the named users' mechanisms and iteration
// counts (every user when none is named), by name.
func (c *Client) DescribeScramUsers(ctx context.Context, users ...string) ([]*messages.ScramUserInfo, error) {
	req := &messages.DescribeScramUsersRequest{Users: users, CorrelationId: c.NextCorrelationID()}
	resp, err := askController[*messages.DescribeScramUsersResponse](ctx, c, req)
	if err != nil {
		return nil, err
	}
	return resp.Users, nil
}
