// export_test.go exposes internals to the external test package.

package cluster

import (
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// KeepLeaseForTest exposes the lease keeper.
func KeepLeaseForTest(s *Store, lease int64, ttl time.Duration, granted time.Time) (done <-chan struct{}, lost func() bool, stop func()) {
	k := keepLease(s.client, clientv3.LeaseID(lease), ttl, granted, s.logger)
	return k.Done(), k.Lost, k.Stop
}
