// remover.go: partition directories are removed off the broker's
// goroutine. A directory is renamed to a tombstone inside the data
// dir ("<name>.deleted-<unix nanoseconds>", a name no partition directory
// can have: its number does not fit a partition id), which frees the name
// at once for a new topic of the same name, and queues the tombstone for a
// background goroutine that runs os.RemoveAll (Config.RemoveDir) on it.
// The renames and the listing of the data dir go through the logs' file
// system (Config.LogFS), never on the actor's goroutine: renames on the
// broker's directory worker (dirs.go), the listing for leftover
// tombstones on the remover's goroutine. A stop leaves tombstones
// behind; the next broker's sweep removes them. Removing a topic of
// 100,000 partitions takes minutes; the worker only renames.

package broker

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/storage"
)

// tombstoneInfix separates a discarded directory's name from its stamp.
const tombstoneInfix = ".deleted-"

// isTombstone reports whether name is a tombstone's name: "<name>" +
// tombstoneInfix + a number above any partition id.
func isTombstone(name string) bool {
	i := strings.LastIndex(name, tombstoneInfix)
	if i <= 0 {
		return false
	}
	n, err := strconv.ParseInt(name[i+len(tombstoneInfix):], 10, 64)
	return err == nil && n > math.MaxInt32
}

// dirRemover removes tombstones of one data dir on a goroutine of its own,
// one at a time (a removal competes with the logs for the disk), started
// when there is work and ended when there is none. Safe for concurrent
// use; it outlives broker incarnations (Props creates it, every broker
// spawned from the Props shares it).
type dirRemover struct {
	dataDir   string
	fs        storage.FS
	removeAll func(string) error
	logger    *logrus.Entry
	// hwCheckpoints loses the entry of each partition whose directory is
	// discarded (nil: none).
	hwCheckpoints *storage.HighWatermarkCheckpoints

	mu      sync.Mutex
	queue   []string // tombstone paths
	sweep   bool     // list the data dir for leftover tombstones first
	running bool

	lastStamp atomic.Int64
}

func newDirRemover(dataDir string, fsys storage.FS, removeAll func(string) error, logger *logrus.Entry) *dirRemover {
	if removeAll == nil {
		removeAll = os.RemoveAll
	}
	return &dirRemover{dataDir: dataDir, fs: fsys, removeAll: removeAll, logger: logger}
}

// discard renames dir (a directory directly inside the data dir) to a new
// tombstone and queues its removal. A dir that does not exist is no error.
func (r *dirRemover) discard(dir string) error {
	name := filepath.Base(dir)
	if _, err := confinedDir(r.dataDir, name); err != nil || filepath.Clean(dir) != filepath.Join(filepath.Clean(r.dataDir), name) {
		return fmt.Errorf("discard %s: %w", dir, errOutsideDataDir)
	}
	tomb, err := confinedDir(r.dataDir, name+tombstoneInfix+strconv.FormatInt(r.stamp(), 10))
	if err != nil {
		return fmt.Errorf("discard %s: %w", dir, err)
	}
	if err := r.fs.Rename(dir, tomb); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("discard %s: %w", dir, err)
	}
	if key, ok := keyOfDir(name); ok && r.hwCheckpoints != nil {
		r.hwCheckpoints.Remove(key.topic, key.partition)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queue = append(r.queue, tomb)
	r.startLocked()
	return nil
}

// sweepLeftovers has the goroutine remove every tombstone in the data
// dir (left by a stop while removals were pending).
func (r *dirRemover) sweepLeftovers() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweep = true
	r.startLocked()
}

// stamp returns a tombstone stamp: the time in nanoseconds, made strictly
// increasing so two discards never pick the same name.
func (r *dirRemover) stamp() int64 {
	for {
		last := r.lastStamp.Load()
		next := max(time.Now().UnixNano(), last+1)
		if r.lastStamp.CompareAndSwap(last, next) {
			return next
		}
	}
}

// startLocked starts the goroutine if it is not running. Caller holds mu.
func (r *dirRemover) startLocked() {
	if !r.running {
		r.running = true
		go r.run()
	}
}

// run removes queued tombstones until none is left.
func (r *dirRemover) run() {
	for {
		r.mu.Lock()
		sweep := r.sweep
		r.sweep = false
		var next string
		if !sweep && len(r.queue) > 0 {
			next = r.queue[0]
			r.queue[0] = ""
			r.queue = r.queue[1:]
		}
		if !sweep && next == "" {
			r.running = false
			r.queue = nil
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		if sweep {
			r.findLeftovers()
			continue
		}
		start := time.Now()
		log := r.logger.WithField("dir", next)
		if err := r.removeAll(next); err != nil {
			log.WithError(err).Error("cannot remove a discarded partition directory; the next start retries")
			continue
		}
		log.WithField("took", time.Since(start)).Info("removed a discarded partition directory")
	}
}

// findLeftovers queues the tombstones found in the data dir.
func (r *dirRemover) findLeftovers() {
	entries, err := r.fs.ReadDir(r.dataDir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			r.logger.WithError(err).Warn("cannot list the data dir for leftover discarded directories")
		}
		return
	}
	var found []string
	for _, e := range entries {
		if !e.IsDir() || !isTombstone(e.Name()) {
			continue
		}
		if dir, err := confinedDir(r.dataDir, e.Name()); err == nil {
			found = append(found, dir)
		}
	}
	if len(found) == 0 {
		return
	}
	r.logger.WithField("dirs", len(found)).Info("removing partition directories a previous run discarded")
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queue = append(r.queue, found...)
}
