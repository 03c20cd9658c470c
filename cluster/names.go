// names.go maps host names to host ids. Users name hosts (--name host1, as
// etcd members are named); the metadata uses small integer ids (replica
// lists, leaders, ISRs), as Kafka's node ids. The first time a name is seen
// it gets the next free id, recorded in etcd in both directions in one
// transaction, so two hosts can never end up with one id:
//
//	<prefix>names/<name>   host id, decimal
//	<prefix>ids/<host id>  name

package cluster

import (
	"context"
	"fmt"
	"regexp"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Names is the prefix of the name → id keys.
func (k Keys) Names() string { return k.prefix + "names/" }

// Name is the key holding the id of host name.
func (k Keys) Name(name string) string { return k.Names() + name }

// ID is the key holding the name of host id.
func (k Keys) ID(id int32) string { return k.prefix + "ids/" + strconv.FormatInt(int64(id), 10) }

var hostNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{0,62}$`)

// ValidateHostName checks a host name: 1-63 characters of [a-zA-Z0-9._-],
// starting with a letter or digit (it is also the etcd member name).
func ValidateHostName(name string) error {
	if !hostNameRE.MatchString(name) {
		return fmt.Errorf("%w: host name %q: want 1-63 characters of [a-zA-Z0-9._-] starting with a letter or digit", ErrHostIdentity, name)
	}
	return nil
}

// ResolveHostID returns the host id of name, assigning one if the name is
// new. want > 0 asks for that id (from configuration or the data
// directory): it is recorded if both the name and the id are free, and an
// error if either is bound otherwise. want == 0 takes the name's id, or the
// lowest free id for a new name.
func (s *Store) ResolveHostID(ctx context.Context, name string, want int32) (int32, error) {
	if err := ValidateHostName(name); err != nil {
		return 0, err
	}
	if want < 0 {
		return 0, fmt.Errorf("%w: host %q: id %d must be positive", ErrHostIdentity, name, want)
	}
	nameKey := s.keys.Name(name)
	for attempt := 0; attempt < 100; attempt++ {
		resp, err := s.client.Get(ctx, nameKey)
		if err != nil {
			return 0, fmt.Errorf("cluster: resolve host name %q: %w", name, err)
		}
		if len(resp.Kvs) > 0 {
			id, err := strconv.ParseInt(string(resp.Kvs[0].Value), 10, 32)
			if err != nil || id < 1 {
				return 0, fmt.Errorf("%w: %s holds %q", ErrCorruptMetadata, nameKey, resp.Kvs[0].Value)
			}
			if want != 0 && int32(id) != want {
				return 0, fmt.Errorf("%w: host name %q already has id %d in this cluster, not %d", ErrHostIdentity, name, id, want)
			}
			return int32(id), nil
		}
		id := want
		if id == 0 {
			id, err = s.lowestFreeID(ctx)
			if err != nil {
				return 0, err
			}
		}
		idKey := s.keys.ID(id)
		txn, err := s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(nameKey), "=", 0),
				clientv3.Compare(clientv3.CreateRevision(idKey), "=", 0)).
			Then(clientv3.OpPut(nameKey, strconv.FormatInt(int64(id), 10)), clientv3.OpPut(idKey, name)).
			Else(clientv3.OpGet(idKey)).
			Commit()
		if err != nil {
			return 0, fmt.Errorf("cluster: assign an id to host name %q: %w", name, err)
		}
		if txn.Succeeded {
			s.logger.WithField("host_name", name).WithField("host_id", id).Info("host name assigned an id")
			return id, nil
		}
		if want != 0 {
			if kvs := txn.Responses[0].GetResponseRange().GetKvs(); len(kvs) > 0 && string(kvs[0].Value) != name {
				return 0, fmt.Errorf("%w: host id %d is already taken by host %q", ErrHostIdentity, want, kvs[0].Value)
			}
		}
		// Lost a race for the name or the id: look again.
	}
	return 0, fmt.Errorf("cluster: assign an id to host name %q: too much contention", name)
}

// HostNames returns every known host id → name binding.
func (s *Store) HostNames(ctx context.Context) (map[int32]string, error) {
	resp, err := s.client.Get(ctx, s.keys.prefix+"ids/", clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("cluster: list host names: %w", err)
	}
	out := make(map[int32]string, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		id, err := strconv.ParseInt(string(kv.Key[len(s.keys.prefix+"ids/"):]), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%w: key %q", ErrCorruptMetadata, kv.Key)
		}
		out[int32(id)] = string(kv.Value)
	}
	return out, nil
}

func (s *Store) lowestFreeID(ctx context.Context) (int32, error) {
	names, err := s.HostNames(ctx)
	if err != nil {
		return 0, err
	}
	for id := int32(1); ; id++ {
		if _, taken := names[id]; !taken {
			return id, nil
		}
	}
}
