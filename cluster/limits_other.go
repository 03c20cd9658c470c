// limits_other.go: systems without RLIMIT_NOFILE.

//go:build !unix

package cluster

// descriptorLimit reports that the limit is unknown.
func descriptorLimit() (uint64, bool) { return 0, false }
