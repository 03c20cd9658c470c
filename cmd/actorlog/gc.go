// gc.go: the host's garbage collection target (--gc-percent).
//
// A host's allocations are mostly short-lived buffers the size of what it
// moves: each produce request's records as received, each fetch answer's
// records as read (internal/frame). With Go's default GOGC of 100 and a
// live heap of ~30 MiB (most of it the embedded etcd), a host serving
// ~1 GB/s collected every ~30 MiB allocated: a fifth of its CPU while
// serving consumers went to the collector (issue 15, CPU profiles). 200
// halves the collections for ~50 MiB more resident memory (peak RSS under
// `perf produce` of 1M x 1 KiB: 127-137 -> 184 MiB; host CPU -13 % producing
// and -20 % serving consumers, same runs), inside the 256 MiB the memory
// goal allows. Kafka likewise ships a heap size for its JVM
// (KAFKA_HEAP_OPTS) rather than the runtime's default.

package main

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/sirupsen/logrus"
)

// defaultGCPercent is --gc-percent's default (see the file comment).
const defaultGCPercent = 200

// minGCPercent is the smallest --gc-percent accepted: below it the
// collector would run nearly continuously (and 0 or less turns it off,
// which a server must not do).
const minGCPercent = 25

// setGCPercent applies --gc-percent unless the GOGC environment variable
// is set (Go has applied it then; it wins, as Go users expect).
func setGCPercent(percent int, logger *logrus.Logger) error {
	if percent < minGCPercent {
		return fmt.Errorf("--gc-percent %d: must be at least %d", percent, minGCPercent)
	}
	if v, ok := os.LookupEnv("GOGC"); ok {
		logger.WithField("GOGC", v).Debug("GOGC set: --gc-percent not applied")
		return nil
	}
	debug.SetGCPercent(percent)
	return nil
}
