// descriptors_other.go: systems without RLIMIT_NOFILE.

//go:build !unix

package netlimit

// DescriptorLimit reports that the limit is unknown.
func DescriptorLimit() (uint64, bool) { return 0, false }
