// retention.go: deleting whole segments past retention.ms (by each
// segment's largest record timestamp, as Kafka) or beyond retention.bytes
// (oldest first). Only segments wholly below the high watermark may go, so a
// leader never deletes what a follower or consumer has not had the chance to
// read; the log start offset moves to the first remaining segment, and the
// producer state snapshots below it go, but for the newest.

package storage

import (
	"github.com/sirupsen/logrus"
)

// DeleteExpiredSegments deletes the oldest segments that retention allows,
// considering only segments that end at or below highWatermark (pass the log
// end offset when there is no replication). If the active segment itself is
// due, a new empty segment is rolled first, so the log is never left without
// one. It returns how many segments it deleted.
func (l *Log) DeleteExpiredSegments(highWatermark int64) (int, error) {
	l.swapMu.Lock()
	defer l.swapMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritable(); err != nil {
		return 0, err
	}
	now := l.cfg.Now().UnixMilli()
	var excess int64 = -1
	if l.cfg.RetentionBytes >= 0 {
		var total int64
		for _, s := range l.segs {
			total += s.size.Load()
		}
		excess = total - l.cfg.RetentionBytes
	}
	n := 0
	for _, s := range l.segs {
		if s.empty() || s.next > highWatermark {
			break
		}
		byTime := l.cfg.Retention >= 0 && now-s.maxTS.Load() > l.cfg.Retention.Milliseconds()
		bySize := excess >= 0 && excess-s.size.Load() >= 0
		if !byTime && !bySize {
			break
		}
		if bySize {
			excess -= s.size.Load()
		}
		n++
	}
	if n == 0 {
		return 0, nil
	}
	if n == len(l.segs) {
		if err := l.rollLocked(l.leo.Load()); err != nil {
			return 0, err
		}
	}
	l.rmu.Lock()
	doomed := append([]*segment(nil), l.segs[:n]...)
	l.segs = append([]*segment(nil), l.segs[n:]...)
	l.start.Store(l.segs[0].base)
	l.rmu.Unlock()
	for _, s := range doomed {
		if err := l.dropSegment(s); err != nil {
			return 0, l.fail(err)
		}
		l.logger.WithFields(logrus.Fields{"segment": s.base, "next_offset": s.next, "max_timestamp": s.maxTS.Load()}).
			Info("deleted segment by retention")
	}
	if l.recoveryPoint < l.start.Load() {
		l.recoveryPoint = l.start.Load()
	}
	if err := l.epochs.truncateFromStart(l.start.Load()); err != nil {
		return n, l.fail(err)
	}
	if err := l.deleteSnapshotsBelowLocked(l.start.Load()); err != nil {
		return n, l.fail(err)
	}
	return n, nil
}
