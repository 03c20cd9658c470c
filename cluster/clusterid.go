// clusterid.go holds the cluster id (Kafka's cluster.id, sent in Kafka
// Metadata answers): generated once, by whichever host asks first, and kept
// in the metadata store for good:
//
//	<prefix>cluster-id   22 characters: 16 random bytes in unpadded
//	                     URL-safe base64, as Kafka prints its Uuids
//
// It is created with a create-if-absent transaction, so hosts starting
// together agree on one id; it never changes afterwards (a restart of any
// host, or of the whole cluster over the same etcd data, keeps it).

package cluster

import (
	"context"
	"encoding/base64"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ClusterID is the key of the cluster id.
func (k Keys) ClusterID() string { return k.prefix + "cluster-id" }

// NewClusterID returns a random cluster id: 16 random bytes in unpadded
// URL-safe base64, 22 characters (the form of NewTopicID and of Kafka's
// Uuids).
func NewClusterID() string { return NewTopicID() }

// ValidateClusterID checks a stored cluster id: 22 characters of unpadded
// URL-safe base64 that decode to 16 bytes. The error wraps
// ErrCorruptMetadata.
func ValidateClusterID(id string) error {
	b, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil || len(id) != 22 || len(b) != 16 {
		return fmt.Errorf("%w: cluster id %q: want 16 bytes in unpadded URL-safe base64 (22 characters)", ErrCorruptMetadata, id)
	}
	return nil
}

// ClusterID returns the cluster id, creating it if the store holds none
// yet: a new id is put only if the key is still absent (one transaction),
// and otherwise the id already stored is returned, so concurrent callers on
// any host get the same id. A stored value that is not a valid id
// (ValidateClusterID) is an error wrapping ErrCorruptMetadata: it is never
// replaced, since clients may have seen it.
func (s *Store) ClusterID(ctx context.Context) (string, error) {
	key, fresh := s.keys.ClusterID(), NewClusterID()
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, fresh)).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return "", fmt.Errorf("cluster: cluster id: %w", err)
	}
	if resp.Succeeded {
		s.logger.WithField("cluster_id", fresh).Info("generated the cluster id")
		return fresh, nil
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 {
		// The compare and the get are one transaction: the key was
		// there, so an empty range is etcd answering oddly.
		return "", fmt.Errorf("%w: cluster id key %q present but not read", ErrCorruptMetadata, key)
	}
	id := string(kvs[0].Value)
	if err := ValidateClusterID(id); err != nil {
		return "", fmt.Errorf("cluster: key %q: %w", key, err)
	}
	return id, nil
}
