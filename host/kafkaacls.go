// kafkaacls.go holds kafkaACLs, the host's kafka.ACLBackend: the Kafka
// listener's CreateAcls and DeleteAcls go to the controller (the ACL
// bindings are controller metadata, written fenced on its epoch, as
// Kafka's KRaft brokers forward these APIs), through a client.Client
// attached to this host (kafkaController); DescribeAcls reads the metadata
// store. A change made here applies to this host's authorizer before the
// request is answered (the cache reloads once the controller has
// written), and to the other hosts' within one etcd watch delivery. It
// also holds the SCRAM side of the same path (alterScram), for
// kafkaScram's AlterUserScramCredentials (kafka.go).
//
// NOT_CONTROLLER (no controller yet, an election) is retried until
// kafkaAdminTimeout, as the topic admin requests are.

package host

import (
	"context"
	"errors"
	"fmt"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/internal/acl"
	"github.com/actorlog/actorlog/kafka"
	"github.com/actorlog/actorlog/messages"
)

// aclController writes ACL bindings through the controller
// (*client.Client; tests fake it).
type aclController interface {
	CreateACLs(ctx context.Context, bindings []acl.Binding) ([]error, error)
	DeleteACLs(ctx context.Context, filters []acl.Filter) ([]client.ACLDeletion, error)
}

// scramController writes SCRAM credentials through the controller
// (*client.Client; tests fake it).
type scramController interface {
	AlterScramCredentials(ctx context.Context, upsertions []*messages.ScramUpsertion, deletions []*messages.ScramDeletion) (*messages.AlterScramCredentialsResponse, error)
}

var (
	_ aclController   = (*client.Client)(nil)
	_ scramController = (*client.Client)(nil)
)

// attachKafkaController returns the client the Kafka listener's ACL and
// SCRAM writes go through: attached to this host's actor system and
// bootstrapped to this host, whose controller actor acts or forwards to
// the elected one. Close it when the host stops.
func (h *Host) attachKafkaController() (*client.Client, error) {
	c, err := client.Attach(h.system, client.Config{
		Bootstrap: []string{h.system.Address()}, Logger: h.logger.WithField("component", "kafka-controller-client"),
	})
	if err != nil {
		return nil, fmt.Errorf("host: attach the Kafka listener's controller client: %w", err)
	}
	return c, nil
}

// kafkaACLs implements kafka.ACLBackend over the controller (writes) and
// an ACLCache (reads, and this host's authorizer). Safe for concurrent
// use (the cache, its store and the client are).
type kafkaACLs struct {
	cache *cluster.ACLCache
	ctrl  aclController
}

// aclError makes a controller's INVALID_REQUEST wrap acl.ErrInvalidBinding
// (the Kafka listener answers it INVALID_REQUEST, anything else
// UNKNOWN_SERVER_ERROR).
func aclError(err error) error {
	if errors.Is(err, &messages.Error{Code: messages.ErrorCode_ERROR_CODE_INVALID_REQUEST}) {
		return fmt.Errorf("%w: %w", acl.ErrInvalidBinding, err)
	}
	return err
}

// CreateACLs implements kafka.ACLBackend.
func (k *kafkaACLs) CreateACLs(ctx context.Context, b []acl.Binding) error {
	ctx, cancel := context.WithTimeout(ctx, kafkaAdminTimeout)
	defer cancel()
	errs, err := k.ctrl.CreateACLs(ctx, b)
	if err != nil {
		return fmt.Errorf("host: create %d ACL bindings: %w", len(b), aclError(err))
	}
	for i, e := range errs {
		if e != nil {
			return fmt.Errorf("host: create ACL binding %s: %w", b[i], aclError(e))
		}
	}
	k.cache.Reload(ctx)
	return nil
}

// DescribeACLs implements kafka.ACLBackend. It reads the store, not the
// cache's authorizer, so it sees changes made on other hosts at once.
func (k *kafkaACLs) DescribeACLs(ctx context.Context, f acl.Filter) ([]acl.Binding, error) {
	bs, err := k.cache.Store().ListACLs(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("host: list ACL bindings: %w", err)
	}
	return bs, nil
}

// DeleteACLs implements kafka.ACLBackend.
func (k *kafkaACLs) DeleteACLs(ctx context.Context, f acl.Filter) ([]acl.Binding, error) {
	ctx, cancel := context.WithTimeout(ctx, kafkaAdminTimeout)
	defer cancel()
	res, err := k.ctrl.DeleteACLs(ctx, []acl.Filter{f})
	if err != nil {
		return nil, fmt.Errorf("host: delete ACL bindings: %w", aclError(err))
	}
	if len(res) != 1 {
		return nil, fmt.Errorf("host: delete ACL bindings: %d results for one filter", len(res))
	}
	if len(res[0].Deleted) > 0 {
		k.cache.Reload(ctx)
	}
	if res[0].Err != nil {
		return res[0].Deleted, fmt.Errorf("host: delete ACL bindings: %w", aclError(res[0].Err))
	}
	return res[0].Deleted, nil
}

// alterScram sends one SCRAM upsertion or deletion (the other nil) to the
// controller and returns its outcome: a deletion of a credential that
// does not exist wraps kafka.ErrUnknownScramUser.
func alterScram(ctx context.Context, ctrl scramController, up *messages.ScramUpsertion, del *messages.ScramDeletion) error {
	ctx, cancel := context.WithTimeout(ctx, kafkaAdminTimeout)
	defer cancel()
	var ups []*messages.ScramUpsertion
	var dels []*messages.ScramDeletion
	what := "set"
	if up != nil {
		ups = []*messages.ScramUpsertion{up}
	} else {
		dels, what = []*messages.ScramDeletion{del}, "delete"
	}
	resp, err := ctrl.AlterScramCredentials(ctx, ups, dels)
	if err != nil {
		return fmt.Errorf("host: %s SCRAM credential: %w", what, err)
	}
	results := resp.GetUpsertionResults()
	if del != nil {
		results = resp.GetDeletionResults()
	}
	if len(results) != 1 {
		return fmt.Errorf("host: %s SCRAM credential: %d results for one", what, len(results))
	}
	r := results[0]
	err = r.GetErrorCode().Err(r.GetErrorMessage())
	switch {
	case err == nil:
		return nil
	case r.GetNotFound():
		return fmt.Errorf("%w: %w", kafka.ErrUnknownScramUser, err)
	}
	return fmt.Errorf("host: %s SCRAM credential: %w", what, err)
}
