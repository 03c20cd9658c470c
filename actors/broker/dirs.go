// dirs.go: the broker's partition directories. Each lives directly inside
// the data dir, named "<topic>-<partition>" (confined there: confinedDir),
// and holds a partition.metadata naming the topic id it belongs to.
//
// Every operation on them goes through the logs' file system
// (Config.LogFS, the storage.FS seam, so tests inject faults) and runs off
// the actor's goroutine, on the broker's directory worker (dirWorker), one
// at a time and in the order the broker asked for them — so a removal
// asked for before a claim of the same name always runs first. The
// worker posts what the broker must know back to its mailbox:
//
//   - claim (before a replica is spawned: plan's actSpawn): create the
//     directory for a topic id, discarding one left by an older topic of
//     the same name; the outcome comes back as dirClaimed, and reconcile
//     spawns the replica once it is there.
//   - remove (plan's actRemoveDir: a deleted topic, a partition
//     reassigned away): discard the directory if it belongs to the topic
//     id given (any, when none is).
//   - stray scan (once, after the first snapshot): list the data dir and
//     discard the directories plan's strayDirs picks.
//
// Discarding renames a directory to a tombstone; the remover (remover.go)
// deletes tombstones on a goroutine of its own.

package broker

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage"
)

// partitionMetadataFile records, in each partition directory, which topic
// (by id) the log belongs to, so a directory left by a deleted topic is
// never mistaken for a new topic of the same name (Kafka's partition.metadata).
const partitionMetadataFile = "partition.metadata"

// dirClaimed reports a claim's outcome to the broker: key's directory is
// ready for topicID (err nil), or could not be prepared.
type dirClaimed struct {
	key     tp
	topicID string
	err     error
}

// partitionDir is key's log directory, "<data dir>/<topic>-<partition>".
// The name must be a local path (filepath.IsLocal: no "..", no separator
// escaping) and the joined path must lie strictly inside the data dir;
// otherwise it fails with errOutsideDataDir and nothing may be done there.
// Metadata is validated before it gets here (topic names hold no
// separators); this is the last line.
func (b *Broker) partitionDir(key tp) (string, error) {
	return confinedDir(b.cfg.DataDir, dirName(key))
}

// errOutsideDataDir: a partition directory would not be inside the data
// dir.
var errOutsideDataDir = errors.New("broker: partition directory outside the data dir")

// confinedDir joins name to dataDir if name is a single local path element
// and the result lies strictly inside dataDir.
func confinedDir(dataDir, name string) (string, error) {
	if !filepath.IsLocal(name) || strings.ContainsAny(name, `/\`) || name == "." {
		return "", fmt.Errorf("%w: %q is not a local directory name", errOutsideDataDir, name)
	}
	base := filepath.Clean(dataDir)
	dir := filepath.Join(base, name)
	rel, err := filepath.Rel(base, dir)
	if err != nil || rel == "." || !filepath.IsLocal(rel) || filepath.Dir(dir) != base {
		return "", fmt.Errorf("%w: %q joined to %q gives %q", errOutsideDataDir, name, dataDir, dir)
	}
	return dir, nil
}

// dirWorker runs the partition-directory operations of one data dir, one
// at a time in the order queued, on a goroutine of its own (started when
// there is work, ended when there is none). Safe for concurrent use; like
// the remover it outlives broker incarnations (Props creates it).
type dirWorker struct {
	dataDir string
	fs      storage.FS
	remover *dirRemover
	logger  *logrus.Entry

	mu      sync.Mutex
	queue   []func()
	running bool
}

func newDirWorker(dataDir string, fsys storage.FS, remover *dirRemover, logger *logrus.Entry) *dirWorker {
	return &dirWorker{dataDir: dataDir, fs: fsys, remover: remover, logger: logger}
}

// do queues job; jobs run in the order queued.
func (w *dirWorker) do(job func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.queue = append(w.queue, job)
	if !w.running {
		w.running = true
		go w.run()
	}
}

// run runs queued jobs until none is left.
func (w *dirWorker) run() {
	for {
		w.mu.Lock()
		if len(w.queue) == 0 {
			w.running = false
			w.queue = nil
			w.mu.Unlock()
			return
		}
		job := w.queue[0]
		w.queue[0] = nil
		w.queue = w.queue[1:]
		w.mu.Unlock()
		job()
	}
}

// readTopicID reads the topic id the partition.metadata of dir names.
func (w *dirWorker) readTopicID(dir string) (string, error) {
	name := filepath.Join(dir, partitionMetadataFile)
	f, err := w.fs.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", name, err)
	}
	raw, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<16))
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", name, err)
	}
	return strings.TrimPrefix(strings.TrimSpace(string(raw)), "topic_id: "), nil
}

// claim creates a partition directory for topicID, wiping one that
// belongs to an older topic of the same name.
func (w *dirWorker) claim(dir, topicID string) error {
	id, err := w.readTopicID(dir)
	switch {
	case err == nil && id == topicID:
		return nil
	case err == nil:
		w.logger.WithField("dir", dir).Warn("removing a partition directory left by a deleted topic of the same name")
		if err := w.remover.discard(dir); err != nil {
			return fmt.Errorf("remove stale %s: %w", dir, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	if err := w.fs.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	meta := filepath.Join(dir, partitionMetadataFile)
	f, err := w.fs.OpenFile(meta, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", meta, err)
	}
	_, err = f.WriteAt([]byte("topic_id: "+topicID+"\n"), 0)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", meta, err)
	}
	return nil
}

// remove carries out a remove-dir action: it discards the partition
// directory a.dir if it belongs to a.topicID (empty: whichever topic it
// belongs to).
func (w *dirWorker) remove(a action) {
	dir, err := confinedDir(w.dataDir, a.dir)
	log := w.logger.WithFields(logrus.Fields{"dir": dir, "reason": a.why})
	if a.key != (tp{}) {
		log = log.WithFields(logrus.Fields{"topic": a.key.topic, "partition": a.key.partition})
	}
	if err != nil {
		log.WithError(err).Error("partition directory not removed")
		return
	}
	if a.topicID != "" {
		id, err := w.readTopicID(dir)
		if errors.Is(err, os.ErrNotExist) {
			return
		}
		if err != nil {
			log.WithError(err).Warn("cannot read the partition directory's topic id; left in place")
			return
		}
		if id != a.topicID {
			return
		}
	}
	if err := w.remover.discard(dir); err != nil {
		log.WithError(err).Error("cannot remove partition's log")
		return
	}
	log.Info("removing partition's log (in the background)")
}

// removeStrays lists the data dir and discards the directories of topics
// that no longer exist (deleted while this host was down) and of
// partitions no longer hosted here (strayDirs), except those of topics
// whose record is invalid (rejected: not acted on, so their data stays).
// topics is the broker's first snapshot (a copy: the worker only reads it).
func (w *dirWorker) removeStrays(self int32, topics map[string]*messages.TopicMetadata, rejected map[string]bool) {
	entries, err := w.fs.ReadDir(w.dataDir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			w.logger.WithError(err).Warn("cannot list data dir")
		}
		return
	}
	var found []partitionDirInfo
	for _, e := range entries {
		if !e.IsDir() || !maybeStray(e.Name(), rejected) {
			continue
		}
		dir, err := confinedDir(w.dataDir, e.Name())
		if err != nil {
			continue
		}
		id, err := w.readTopicID(dir)
		if err != nil {
			continue // not a partition directory of ours
		}
		found = append(found, partitionDirInfo{name: e.Name(), topicID: id})
	}
	for _, a := range strayDirs(self, topics, found) {
		dir, err := confinedDir(w.dataDir, a.dir)
		if err == nil {
			err = w.remover.discard(dir)
		}
		if err != nil {
			w.logger.WithError(err).WithField("dir", dir).Error("cannot remove stray partition directory")
			continue
		}
		w.logger.WithFields(logrus.Fields{"dir": dir, "reason": a.why}).Info("removing stray partition directory (in the background)")
	}
}
