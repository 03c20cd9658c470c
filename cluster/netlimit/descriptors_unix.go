// descriptors_unix.go reads the process's descriptor limit on Unix systems.

//go:build unix

package netlimit

import "syscall"

// DescriptorLimit returns the soft RLIMIT_NOFILE of the process.
func DescriptorLimit() (uint64, bool) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, false
	}
	return uint64(lim.Cur), true // int64 on some systems
}
