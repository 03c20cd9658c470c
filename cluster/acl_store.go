// acl_store.go holds the Kafka ACL bindings (issue 16), one key per
// binding:
//
//	<prefix>acls/<RESOURCE>/<PATTERN>/<name>/<principal>/<host>/<OPERATION>/<PERMISSION>
//	                                     JSON acl.Binding
//
// The key is derived from the binding (Keys.ACL), so adding a binding
// that exists rewrites the same key: AddACLs is idempotent.
//
// Bindings are controller metadata, fenced like the other metadata
// writes: in a cluster they are written only by the elected controller
// (actors/controller/acls.go, on the requests of the hosts' Kafka
// listeners), with AddACLsFenced and DeleteACLsFenced, whose transactions
// hold only while the controller's election key has its epoch's create
// revision — a deposed controller's write fails with ErrNotController and
// changes nothing. The unfenced AddACLs and DeleteACLs remain for where
// there is no controller to ask: the CLI's straight-to-etcd mode
// (`actorlog acls --etcd-endpoints`, an admin tool like etcdctl, to write
// the first bindings before any host runs) and tests.
//
// Values are validated on write and on read: a value that does not
// decode, is not a valid binding, or does not belong under its key is
// skipped and logged once (per key and revision), never a binding.

package cluster

import (
	"context"
	"encoding/json"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/actorlog/actorlog/internal/acl"
)

// aclTxnOps bounds the operations of one etcd transaction (etcd's
// --max-txn-ops defaults to 128).
const aclTxnOps = 64

// ACLStore keeps the ACL bindings. Store (etcd) and MemACLStore implement
// it; implementations are safe for concurrent use.
type ACLStore interface {
	// AddACLs stores bindings. They are all validated first: an invalid
	// one is an error wrapping acl.ErrInvalidBinding and nothing is
	// written. Adding an existing binding changes nothing.
	AddACLs(ctx context.Context, bindings []acl.Binding) error
	// DeleteACLs deletes the bindings f matches and returns those it
	// deleted (not those a concurrent call deleted first), in key order.
	DeleteACLs(ctx context.Context, f acl.Filter) ([]acl.Binding, error)
	// ListACLs returns the bindings f matches, in key order.
	ListACLs(ctx context.Context, f acl.Filter) ([]acl.Binding, error)
}

// FencedACLStore is the controller's ACLStore: its writes carry the
// controller's Fence and fail with an error wrapping ErrNotController,
// changing nothing, once the fence no longer holds. Store (etcd) and
// MemACLStore implement it.
type FencedACLStore interface {
	ACLStore
	// AddACLsFenced is AddACLs, fenced.
	AddACLsFenced(ctx context.Context, fence Fence, bindings []acl.Binding) error
	// DeleteACLsFenced is DeleteACLs, fenced: a batch refused by the
	// fence deletes nothing (batches before it were deleted while the
	// fence held, and are returned).
	DeleteACLsFenced(ctx context.Context, fence Fence, f acl.Filter) ([]acl.Binding, error)
}

// Compile-time checks.
var (
	_ FencedACLStore = (*Store)(nil)
	_ FencedACLStore = (*MemACLStore)(nil)
)

// aclWatcher is implemented by the stores an ACLCache can follow instead
// of polling: listACLsRev lists every binding at a revision, and
// watchACLChanges signals (without blocking, on a channel of capacity 1)
// each change made after fromRevision until ctx ends (nil) or the watch
// cannot go on (an error; the caller lists again and watches anew).
type aclWatcher interface {
	listACLsRev(ctx context.Context) ([]acl.Binding, int64, error)
	watchACLChanges(ctx context.Context, fromRevision int64, changed chan<- struct{}) error
}

// validateBindings validates every binding of an AddACLs call.
func validateBindings(bindings []acl.Binding) error {
	for i, b := range bindings {
		if err := b.Validate(); err != nil {
			return fmt.Errorf("cluster: ACL binding %d (%s): %w", i, b, err)
		}
	}
	return nil
}

// filterPrefix is the narrowest key prefix holding every binding f can
// match.
func (k Keys) filterPrefix(f acl.Filter) string {
	if f.Resource > acl.ResourceAny {
		return k.ACLsOf(f.Resource)
	}
	return k.ACLs()
}

// decodeACL parses and validates the value of key: a valid binding whose
// own key is key.
func (k Keys) decodeACL(key string, value []byte) (acl.Binding, error) {
	var b acl.Binding
	if err := json.Unmarshal(value, &b); err != nil {
		return acl.Binding{}, fmt.Errorf("%w: ACL %q: %v", ErrCorruptMetadata, key, err)
	}
	if err := b.Validate(); err != nil {
		return acl.Binding{}, fmt.Errorf("%w: ACL %q: %v", ErrCorruptMetadata, key, err)
	}
	if want := k.ACL(b); want != key {
		return acl.Binding{}, fmt.Errorf("%w: ACL %q holds %s, whose key is %q", ErrCorruptMetadata, key, b, want)
	}
	return b, nil
}

// AddACLs implements ACLStore, unfenced: for the CLI's straight-to-etcd
// mode and tests only (see the file comment).
func (s *Store) AddACLs(ctx context.Context, bindings []acl.Binding) error {
	return s.addACLs(ctx, nil, bindings)
}

// AddACLsFenced implements FencedACLStore.
func (s *Store) AddACLsFenced(ctx context.Context, fence Fence, bindings []acl.Binding) error {
	return s.addACLs(ctx, &fence, bindings)
}

// aclTxn commits ops, fenced when fence is set.
func (s *Store) aclTxn(ctx context.Context, fence *Fence, ops []clientv3.Op) (*clientv3.TxnResponse, error) {
	if fence == nil {
		return s.client.Txn(ctx).Then(ops...).Commit()
	}
	return s.fenced(ctx, *fence, nil, ops)
}

// addACLs is AddACLs, fenced when fence is set.
func (s *Store) addACLs(ctx context.Context, fence *Fence, bindings []acl.Binding) error {
	if err := validateBindings(bindings); err != nil {
		return err
	}
	ops := make([]clientv3.Op, 0, min(len(bindings), aclTxnOps))
	flush := func() error {
		if len(ops) == 0 {
			return nil
		}
		if _, err := s.aclTxn(ctx, fence, ops); err != nil {
			return fmt.Errorf("cluster: add %d ACL bindings: %w", len(ops), err)
		}
		ops = ops[:0]
		return nil
	}
	seen := make(map[string]struct{}, len(bindings))
	for _, b := range bindings {
		key := s.keys.ACL(b)
		if _, dup := seen[key]; dup {
			continue // etcd refuses a transaction that puts one key twice
		}
		seen[key] = struct{}{}
		raw, err := json.Marshal(b)
		if err != nil {
			return fmt.Errorf("cluster: encode ACL binding %s: %w", b, err)
		}
		ops = append(ops, clientv3.OpPut(key, string(raw)))
		if len(ops) == aclTxnOps {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// ListACLs implements ACLStore. Invalid values are skipped and logged.
func (s *Store) ListACLs(ctx context.Context, f acl.Filter) ([]acl.Binding, error) {
	kvs, _, err := s.listACLKeys(ctx, f)
	if err != nil {
		return nil, err
	}
	out := make([]acl.Binding, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, kv.b)
	}
	return out, nil
}

type aclKV struct {
	key string
	b   acl.Binding
}

// listACLKeys returns the valid bindings f matches with their keys, and
// the store revision of the read.
func (s *Store) listACLKeys(ctx context.Context, f acl.Filter) ([]aclKV, int64, error) {
	if err := f.Validate(); err != nil {
		return nil, 0, err
	}
	resp, err := s.client.Get(ctx, s.keys.filterPrefix(f), clientv3.WithPrefix())
	if err != nil {
		return nil, 0, fmt.Errorf("cluster: list ACLs: %w", err)
	}
	out := make([]aclKV, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		b, err := s.keys.decodeACL(string(kv.Key), kv.Value)
		if err != nil {
			s.rejects.report(s.logger, string(kv.Key), kv.ModRevision, err)
			continue
		}
		if f.Matches(b) {
			out = append(out, aclKV{key: string(kv.Key), b: b})
		}
	}
	return out, resp.Header.Revision, nil
}

// DeleteACLs implements ACLStore, unfenced: for the CLI's
// straight-to-etcd mode and tests only (see the file comment). Invalid
// values are never deleted by a filter (they are no bindings); delete
// them with etcdctl.
func (s *Store) DeleteACLs(ctx context.Context, f acl.Filter) ([]acl.Binding, error) {
	return s.deleteACLs(ctx, nil, f)
}

// DeleteACLsFenced implements FencedACLStore.
func (s *Store) DeleteACLsFenced(ctx context.Context, fence Fence, f acl.Filter) ([]acl.Binding, error) {
	return s.deleteACLs(ctx, &fence, f)
}

// deleteACLs is DeleteACLs, fenced when fence is set.
func (s *Store) deleteACLs(ctx context.Context, fence *Fence, f acl.Filter) ([]acl.Binding, error) {
	kvs, _, err := s.listACLKeys(ctx, f)
	if err != nil {
		return nil, err
	}
	var deleted []acl.Binding
	for start := 0; start < len(kvs); start += aclTxnOps {
		batch := kvs[start:min(start+aclTxnOps, len(kvs))]
		ops := make([]clientv3.Op, len(batch))
		for i, kv := range batch {
			ops[i] = clientv3.OpDelete(kv.key)
		}
		resp, err := s.aclTxn(ctx, fence, ops)
		if err != nil {
			return deleted, fmt.Errorf("cluster: delete %d ACL bindings: %w", len(ops), err)
		}
		for i, r := range resp.Responses {
			if dr := r.GetResponseDeleteRange(); dr != nil && dr.Deleted > 0 {
				deleted = append(deleted, batch[i].b)
			}
		}
	}
	return deleted, nil
}

// listACLsRev implements aclWatcher.
func (s *Store) listACLsRev(ctx context.Context) ([]acl.Binding, int64, error) {
	kvs, rev, err := s.listACLKeys(ctx, acl.Filter{})
	if err != nil {
		return nil, 0, err
	}
	out := make([]acl.Binding, len(kvs))
	for i, kv := range kvs {
		out[i] = kv.b
	}
	return out, rev, nil
}

// watchACLChanges implements aclWatcher with an etcd watch of the ACL
// prefix (see Store.watch: compaction, a lost raft leader or a closed
// client end it with an error).
func (s *Store) watchACLChanges(ctx context.Context, fromRevision int64, changed chan<- struct{}) error {
	err := s.watch(ctx, s.keys.ACLs(), fromRevision, func(*clientv3.Event) (bool, error) {
		select {
		case changed <- struct{}{}:
		default: // a reload is already due
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("cluster: watch ACLs: %w", err)
	}
	return nil
}
