// limits_unix_test.go: the host capacity comes from the process's
// RLIMIT_NOFILE.

//go:build unix

package cluster_test

import (
	"syscall"
	"testing"

	"github.com/actorlog/actorlog/cluster"
)

func TestHostPartitionCapacity(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	if got, want := cluster.HostPartitionCapacity(), cluster.PartitionCapacity(uint64(lim.Cur)); got != want || got <= 0 {
		t.Fatalf("HostPartitionCapacity() = %d, want %d (RLIMIT_NOFILE %d)", got, want, lim.Cur)
	}
}
