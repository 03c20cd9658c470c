// snapshot.go: the Log's producer state (producerstate.go) on disk and in
// recovery, with its accessors and expiry. The state is written to
// %020d.snapshot (the offset is the log end offset it covers), atomically,
// at every segment roll and on Close. On open and after a truncation that
// cut some producer's batches, the newest readable snapshot at or below the
// log end is loaded (damaged ones are logged and deleted; those above the
// log end are deleted) and the batches from its offset to the log end are
// replayed into it; without a snapshot the whole log is replayed. Retention
// deletes the snapshots below the new log start but the newest.
//
// Everything here runs under Log.mu.

package storage

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/storage/record"
)

const snapshotSuffix = ".snapshot"

// listSnapshots returns the offsets of the snapshot files in dir, ascending.
func listSnapshots(fsys FS, dir string) ([]int64, error) {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	var offs []int64
	for _, e := range entries {
		if off, ok := parseOffsetName(e.Name(), snapshotSuffix); ok {
			offs = append(offs, off)
		}
	}
	slices.Sort(offs)
	return offs, nil
}

func (l *Log) removeSnapshot(off int64) error {
	if err := l.fs.Remove(segmentPath(l.dir, off, snapshotSuffix)); err != nil && !isNotExist(err) {
		return fmt.Errorf("remove producer state snapshot %d: %w", off, err)
	}
	return nil
}

// takeSnapshotLocked writes the producer state as covering the log up to
// offset. A failure makes the log fail, as any failed write does.
func (l *Log) takeSnapshotLocked(offset int64) error {
	data := l.producers.encodeSnapshot(offset)
	if err := writeFileAtomic(l.fs, l.dir, segmentPath(l.dir, offset, snapshotSuffix), data); err != nil {
		return l.fail(fmt.Errorf("write producer state snapshot %d: %w", offset, err))
	}
	return nil
}

// trackProducer records a batch that is now in the log in the producer
// state. Caller holds mu and has checked that h has a producer id.
func (l *Log) trackProducer(h *record.Header) {
	ts := h.MaxTimestamp
	if ts < 0 {
		ts = l.cfg.Now().UnixMilli()
	}
	l.producers.update(h, ts)
}

// rebuildProducerStateLocked replaces the producer state with the one the
// log holds up to its end: snapshots above the end are deleted, the newest
// loadable one at or below it is loaded and the batches after it are
// replayed. It fails only on I/O errors the caller must treat as a write
// failure.
func (l *Log) rebuildProducerStateLocked() error {
	end := l.leo.Load()
	offs, err := l.deleteSnapshotsAboveLocked(end)
	if err != nil {
		return err
	}
	state, from := newProducerState(), int64(-1)
	for i := len(offs) - 1; i >= 0 && from < 0; i-- {
		ps, err := l.readSnapshot(offs[i])
		if err != nil {
			l.logger.WithError(err).WithField("snapshot", offs[i]).Warn("deleting unreadable producer state snapshot; falling back to an older one")
			if err := l.removeSnapshot(offs[i]); err != nil {
				return err
			}
			continue
		}
		state, from = ps, offs[i]
	}
	l.producers = state
	from = max(from, l.start.Load())
	if err := l.replayProducersLocked(from, end); err != nil {
		return err
	}
	l.logger.WithFields(logrus.Fields{"from": from, "log_end_offset": end, "producers": len(l.producers.producers)}).
		Debug("rebuilt producer state")
	return nil
}

// truncateProducerStateLocked brings the producer state back in line with
// the log after a truncation to end. When no producer's last batch reaches
// end, the truncation removed none of their batches and the state is already
// right (a log without idempotent producers never pays for a replay); else
// it is rebuilt.
func (l *Log) truncateProducerStateLocked(end int64) error {
	if l.producers.reaches(end) {
		return l.rebuildProducerStateLocked()
	}
	_, err := l.deleteSnapshotsAboveLocked(end)
	return err
}

// deleteSnapshotsAboveLocked deletes the snapshots above end (state of a
// log that no longer exists) and returns the offsets of the others,
// ascending.
func (l *Log) deleteSnapshotsAboveLocked(end int64) ([]int64, error) {
	return l.pruneSnapshotsLocked("above the log end", func(offs []int64, i int) bool { return offs[i] > end })
}

// deleteSnapshotsBelowLocked deletes the snapshots below start (the new log
// start offset) except the newest snapshot, which stays whatever its offset.
func (l *Log) deleteSnapshotsBelowLocked(start int64) error {
	_, err := l.pruneSnapshotsLocked("below the log start", func(offs []int64, i int) bool {
		return offs[i] < start && i < len(offs)-1
	})
	return err
}

// deleteAllSnapshotsLocked deletes every snapshot (the log starts over).
func (l *Log) deleteAllSnapshotsLocked() error {
	_, err := l.pruneSnapshotsLocked("log started over", func([]int64, int) bool { return true })
	return err
}

// pruneSnapshotsLocked deletes the snapshots for which drop (given every
// offset, ascending, and an index) is true, and returns the offsets of the
// others, ascending.
func (l *Log) pruneSnapshotsLocked(reason string, drop func(offs []int64, i int) bool) ([]int64, error) {
	offs, err := listSnapshots(l.fs, l.dir)
	if err != nil {
		return nil, err
	}
	var kept []int64
	for i, off := range offs {
		if !drop(offs, i) {
			kept = append(kept, off)
			continue
		}
		if err := l.removeSnapshot(off); err != nil {
			return nil, err
		}
		l.logger.WithFields(logrus.Fields{"snapshot": off, "reason": reason}).Debug("deleted producer state snapshot")
	}
	return kept, nil
}

func (l *Log) readSnapshot(off int64) (*producerState, error) {
	raw, err := readWholeFile(l.fs, segmentPath(l.dir, off, snapshotSuffix))
	if err != nil {
		return nil, fmt.Errorf("read producer state snapshot %d: %w", off, err)
	}
	ps, err := decodeSnapshot(raw, off)
	if err != nil {
		return nil, fmt.Errorf("producer state snapshot %d: %w", off, err)
	}
	return ps, nil
}

// errReplayDone ends a replay scan at the end offset.
var errReplayDone = errors.New("storage: replay reached its end")

// replayProducersLocked records in the producer state every batch whose base
// offset lies in [from, end). Only headers are read. A sealed segment found
// corrupt on open is replayed up to its damage (reads stop there too).
func (l *Log) replayProducersLocked(from, end int64) error {
	if from >= end {
		return nil
	}
	started := time.Now()
	batches := 0
	for i := l.floorSegment(from); i < len(l.segs); i++ {
		s := l.segs[i]
		if s.base >= end {
			break
		}
		size := s.size.Load()
		if s.corruptAt >= 0 && s.corruptAt < size {
			size = s.corruptAt
		}
		var pos int64
		found := false
		err := l.withFiles(s, false, func() error {
			var err error
			if pos, _, err = s.findBatch(s.log, from, size); err != nil {
				return fmt.Errorf("replay producer state from %d: %w", from, err)
			}
			found = true
			_, err = scanBatches(s.log, pos, size, false, func(h *record.Header, _ int64) error {
				if h.BaseOffset >= end {
					return errReplayDone
				}
				if h.BaseOffset >= from && h.ProducerID >= 0 {
					l.trackProducer(h)
					batches++
				}
				return nil
			})
			return err
		})
		switch {
		case !found:
			return err
		case errors.Is(err, errReplayDone):
			return nil
		case isDataError(err):
			l.logger.WithError(err).WithField("segment", s.base).Warn("producer state replay stopped at damaged data")
		case err != nil:
			return fmt.Errorf("replay producer state in segment %d: %w", s.base, err)
		}
	}
	l.logger.WithFields(logrus.Fields{"from": from, "to": end, "batches": batches, "took": time.Since(started)}).
		Debug("replayed producer state")
	return nil
}

// ProducerState returns a copy of the state kept for producer id pid.
// Safe from any goroutine; it waits for the writer.
func (l *Log) ProducerState(pid int64) (ProducerEntry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.producers.get(pid)
}

// ProducerCount is the number of producer ids with state. Safe from any
// goroutine; it waits for the writer.
func (l *Log) ProducerCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.producers.producers)
}

// ExpireProducers drops the state of every producer whose last batch's
// timestamp is ProducerIDExpiration or more before now (Kafka's
// producer.id.expiration.ms), and returns how many it dropped. A dropped
// producer is unknown again: its next batch is accepted at any sequence.
// The replica calls it from its retention tick; it writes nothing to disk
// (the next snapshot leaves the expired producers out).
func (l *Log) ExpireProducers(now time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.producers.expire(now.UnixMilli() - l.cfg.ProducerIDExpiration.Milliseconds())
	if n > 0 {
		l.logger.WithFields(logrus.Fields{"expired": n, "remaining": len(l.producers.producers)}).Info("expired idle producer ids")
	}
	return n
}
