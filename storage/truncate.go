// truncate.go: removing the tail of the log (a follower whose log diverged
// from a new leader's), starting it over at a new offset (a follower that
// fell behind the leader's log start), and recording a new leader epoch.
// Both truncations bring the leader-epoch cache, the producer state (and its
// snapshots) and the high-watermark checkpoint back in line with the log.

package storage

import (
	"fmt"

	"github.com/sirupsen/logrus"
)

// TruncateTo removes every batch whose last offset is >= offset, so the log
// ends at offset (at the start of the batch holding offset, if offset falls
// inside one). It returns the new log end offset. Truncating to or past the
// end does nothing; truncating below the log start empties the log and
// restarts it at offset. The producer state becomes what it was at the new
// end (batches cut off are no longer duplicates), and a checkpointed high
// watermark above the new end is lowered to it.
func (l *Log) TruncateTo(offset int64) (int64, error) {
	l.swapMu.Lock()
	defer l.swapMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritable(); err != nil {
		return 0, err
	}
	if offset >= l.leo.Load() {
		return l.leo.Load(), nil
	}
	if offset < l.start.Load() {
		return offset, l.truncateFullyLocked(offset)
	}
	l.rmu.Lock()
	i := l.floorSegment(offset)
	s := l.segs[i]
	doomed := append([]*segment(nil), l.segs[i+1:]...)
	var pos int64
	var entered, found bool
	err := l.withFiles(s, true, func() error {
		entered = true
		p, _, err := s.findBatch(s.log, offset, s.size.Load())
		if err != nil {
			return fmt.Errorf("truncate: %w", err)
		}
		pos, found = p, true
		s.writes.Add(1)
		if err := s.log.Truncate(pos); err != nil {
			return err
		}
		end, err := s.rebuild(pos, false, l.cfg.IndexIntervalBytes)
		if err == nil && end != pos {
			err = fmt.Errorf("segment %d: rescan after truncation stopped at %d of %d", s.base, end, pos)
		}
		if err == nil {
			err = s.offFile.Truncate(0)
		}
		if err == nil {
			err = s.timeFile.Truncate(0)
		}
		return err
	})
	if !found {
		l.rmu.Unlock()
		if !entered {
			return 0, err // the files could not be reopened; nothing was written
		}
		return 0, l.fail(err)
	}
	s.size.Store(pos)
	if s.checked.Load() > pos {
		s.checked.Store(pos)
	}
	s.corruptAt = -1
	l.segs = l.segs[:i+1]
	l.leo.Store(s.next)
	l.rmu.Unlock()
	// s is the active segment again.
	s.sealed.Store(false)
	l.forgetSegment(s)
	if err != nil {
		return 0, l.fail(fmt.Errorf("truncate segment %d: %w", s.base, err))
	}
	for _, d := range doomed {
		if err := l.dropSegment(d); err != nil {
			return 0, l.fail(err)
		}
	}
	l.gen++
	newEnd := s.next
	l.recoveryPoint = min(l.recoveryPoint, newEnd)
	if err := writeRecoveryPoint(l.fs, l.dir, l.recoveryPoint); err != nil {
		return 0, l.fail(err)
	}
	if err := l.lowerCleanerCheckpoint(newEnd); err != nil {
		return 0, l.fail(err)
	}
	if err := l.epochs.truncateFromEnd(newEnd); err != nil {
		return 0, l.fail(err)
	}
	if l.hw.Load() > newEnd {
		if err := l.setHighWatermarkLocked(newEnd); err != nil {
			return 0, err
		}
	}
	if err := l.truncateProducerStateLocked(newEnd); err != nil {
		return 0, l.fail(err)
	}
	l.logger.WithFields(logrus.Fields{"offset": offset, "log_end_offset": newEnd}).Info("truncated log")
	return newEnd, nil
}

// TruncateFullyAndStartAt deletes every segment and restarts the log, empty,
// at offset (Kafka's truncateFullyAndStartAt, for a follower whose log end
// is below its leader's log start). The producer state is emptied and its
// snapshots deleted; the checkpointed high watermark becomes offset.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: negative start offset %d", ErrOffsetOutOfRange, offset)
	}
	l.swapMu.Lock()
	defer l.swapMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritable(); err != nil {
		return err
	}
	return l.truncateFullyLocked(offset)
}

func (l *Log) truncateFullyLocked(offset int64) error {
	s, err := createSegment(l.fs, l.dir, offset, l.cfg.Now().UnixMilli())
	if err != nil {
		return l.fail(err)
	}
	l.rmu.Lock()
	doomed := l.segs
	l.segs = []*segment{s}
	l.leo.Store(offset)
	l.start.Store(offset)
	l.rmu.Unlock()
	for _, d := range doomed {
		if d.base == offset {
			// Its files were replaced by the new segment's: only its
			// handles go.
			if err := l.closeSegmentFiles(d); err != nil {
				return l.fail(err)
			}
			continue
		}
		if err := l.dropSegment(d); err != nil {
			return l.fail(err)
		}
	}
	l.gen++
	l.recoveryPoint = offset
	if err := writeRecoveryPoint(l.fs, l.dir, offset); err != nil {
		return l.fail(err)
	}
	if err := l.epochs.clear(); err != nil {
		return l.fail(err)
	}
	l.producers = newProducerState()
	if err := l.deleteAllSnapshotsLocked(); err != nil {
		return l.fail(err)
	}
	if err := l.setHighWatermarkLocked(offset); err != nil {
		return err
	}
	l.logger.WithField("offset", offset).Info("truncated log fully")
	return nil
}

// AssignEpoch records that leader epoch starts at offset (a new leader calls
// it with its log end offset when it takes over). Older epochs are ignored.
func (l *Log) AssignEpoch(epoch int32, offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritable(); err != nil {
		return err
	}
	if _, err := l.epochs.assign(epoch, offset); err != nil {
		return l.fail(err)
	}
	return nil
}
