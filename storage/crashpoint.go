// crashpoint.go: a test seam for crash tests of whole host processes. The
// storage crash tests (compact_crash_test.go, clean_test.go) interrupt a
// cleaning at every file operation through a failing FS, in process; a
// host's crash test needs the real thing: a SIGKILL at a known step of a
// live cleaning, then a restart. SetCrashPoint installs a function the
// cleaner calls at each named step below (cmd/actorlog's hidden
// --unsafe-crash-point flag installs one that kills the process at the
// n-th pass of a point). Unset, a step costs one atomic load.

package storage

import "sync/atomic"

// The named steps of a live cleaning, in the order they pass.
const (
	// CrashCleanedLogWritten: the cleaned segment's .log.cleaned is
	// written and synced, its indexes not yet.
	CrashCleanedLogWritten = "clean.cleaned-log-written"
	// CrashBeforeSwap: every .cleaned file and the marker are written and
	// synced; nothing of the swap has happened.
	CrashBeforeSwap = "clean.before-swap"
	// CrashSwapRenamed: the .cleaned data files are renamed .swap, the
	// marker not yet (the swap is not committed).
	CrashSwapRenamed = "clean.swap-renamed"
	// CrashCommitted: the marker is renamed .swap and synced (the commit
	// point); the replaced segments are all still there.
	CrashCommitted = "clean.committed"
	// CrashOldRemoved: the replaced segments' files are removed, the .swap
	// files not renamed to their final names yet.
	CrashOldRemoved = "clean.old-removed"
	// CrashSwapped: the cleaned segment is in place and in the open log;
	// the cleaner checkpoint is not moved yet.
	CrashSwapped = "clean.swapped"
	// CrashCheckpointed: the cleaning is over, its checkpoint written.
	CrashCheckpointed = "clean.checkpointed"
)

// CrashPoints lists the named steps, in order.
var CrashPoints = []string{CrashCleanedLogWritten, CrashBeforeSwap, CrashSwapRenamed, CrashCommitted, CrashOldRemoved, CrashSwapped, CrashCheckpointed}

var crashPoint atomic.Pointer[func(point string)]

// SetCrashPoint installs fn, called at each named step of a cleaning (nil
// removes it). For tests only.
func SetCrashPoint(fn func(point string)) {
	if fn == nil {
		crashPoint.Store(nil)
		return
	}
	crashPoint.Store(&fn)
}

// passCrashPoint calls the installed function, if any.
func passCrashPoint(point string) {
	if fn := crashPoint.Load(); fn != nil {
		(*fn)(point)
	}
}
