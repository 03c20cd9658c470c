// kafkaacls.go holds kafkaACLs, the host's kafka.ACLBackend: the Kafka
// listener's CreateAcls, DescribeAcls and DeleteAcls on the ACL bindings
// of the metadata store, through the host's cluster.ACLCache. A change
// made here applies to this host's authorizer before the request is
// answered, and to the other hosts' within one etcd watch delivery.

package host

import (
	"context"
	"fmt"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/internal/acl"
)

// kafkaACLs implements kafka.ACLBackend over an ACLCache. Safe for
// concurrent use (the cache and its store are).
type kafkaACLs struct {
	cache *cluster.ACLCache
}

// CreateACLs implements kafka.ACLBackend.
func (k *kafkaACLs) CreateACLs(ctx context.Context, b []acl.Binding) error {
	if err := k.cache.Add(ctx, b); err != nil {
		return fmt.Errorf("host: create %d ACL bindings: %w", len(b), err)
	}
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
	deleted, err := k.cache.Delete(ctx, f)
	if err != nil {
		return deleted, fmt.Errorf("host: delete ACL bindings: %w", err)
	}
	return deleted, nil
}
