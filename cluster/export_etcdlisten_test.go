// export_etcdlisten_test.go exposes etcdlisten.go's resolver seam to the
// external test package.

package cluster

import (
	"context"
	"net"
)

// SetLookupIP replaces the resolver of etcd URL names until restore is
// called. Not safe to use while a member starts in another goroutine.
func SetLookupIP(f func(ctx context.Context, host string) ([]net.IP, error)) (restore func()) {
	prev := lookupIP
	lookupIP = f
	return func() { lookupIP = prev }
}
