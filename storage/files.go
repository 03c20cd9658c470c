// files.go: which of a log's files are open, and when they are closed, so
// that descriptors scale with the partitions and segments in use rather
// than with every segment on disk (a log used to hold three per segment
// for its whole life: 100,000 partitions, or segment.bytes=100, ran a host
// out of descriptors).
//
//   - The active segment's files (.log, .index, .timeindex) are open while
//     it is in use. After Config.FileIdleTimeout with no append or read they
//     are fsynced and closed; the next append or read reopens them.
//   - A sealed segment's files are opened on demand: its .log by a read (or
//     the writer: truncation, producer-state replay), its indexes only to
//     write them. At most Config.MaxOpenSealedSegments sealed segments per
//     log keep files open (Log.openSealed, oldest first); opening one more
//     closes the oldest clean one. Sealed files unused for FileIdleTimeout
//     are closed too.
//   - Nothing is closed before it is fsynced (segment.clean). Under
//     FlushNever, a roll that leaves more sealed segments open than the cap
//     starts a background Flush, which fsyncs them (Kafka flushes every
//     rolled segment asynchronously), after which they may be closed. The
//     recovery point moves with that flush.
//   - One goroutine per process (fileJanitor) runs the idle sweep of every
//     open log.
//
// Lock order: Log.mu, then Log.rmu, then segment.fmu, then Log.fdmu; under
// Log.fdmu a segment's fmu is only ever tried (TryLock), never waited for.

package storage

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// markUsed records a use of the segment's files for the idle sweep. It
// writes only when the flag is clear, so concurrent readers do not contend.
func (s *segment) markUsed() {
	if !s.used.Load() {
		s.used.Store(true)
	}
}

// acquireLog returns the segment's open .log file, opening it if it is
// closed, with s.fmu held for reading: the caller must s.fmu.RUnlock() when
// done with the file. Opening a sealed segment's file may close another's
// (the per-log cap). An open failure leaves the log writable: nothing was
// written.
func (l *Log) acquireLog(s *segment) (File, error) {
	s.markUsed()
	for {
		s.fmu.RLock()
		if f := s.log; f != nil {
			return f, nil
		}
		s.fmu.RUnlock()
		opened, err := l.openSegmentFiles(s, false)
		if err != nil {
			return nil, err
		}
		if opened {
			l.noteOpened(s)
		}
	}
}

// withFiles runs fn with the segment's .log file open and, with indexes,
// its index files too, holding s.fmu so nothing closes them meanwhile
// (for writing if it had to open one). fn uses s.log, s.offFile and
// s.timeFile directly. The writer's own uses (flush, truncation, replay)
// go through it; they do not count as uses for the idle sweep.
func (l *Log) withFiles(s *segment, indexes bool, fn func() error) error {
	s.fmu.RLock()
	if s.log != nil && (!indexes || (s.offFile != nil && s.timeFile != nil)) {
		err := fn()
		s.fmu.RUnlock()
		return err
	}
	s.fmu.RUnlock()
	s.fmu.Lock()
	opened, err := l.openSegmentFilesLocked(s, indexes)
	if err == nil {
		err = fn()
	}
	s.fmu.Unlock()
	if opened {
		l.noteOpened(s)
	}
	return err
}

// openSegmentFiles opens the segment's closed .log file and, with indexes,
// its closed index files. It reports whether it opened anything.
func (l *Log) openSegmentFiles(s *segment, indexes bool) (bool, error) {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	return l.openSegmentFilesLocked(s, indexes)
}

// openSegmentFilesLocked is openSegmentFiles; caller holds s.fmu for
// writing.
func (l *Log) openSegmentFilesLocked(s *segment, indexes bool) (bool, error) {
	opened := false
	if s.log == nil {
		f, err := l.fs.OpenFile(segmentPath(s.dir, s.base, logSuffix), os.O_RDWR, 0)
		if err != nil {
			return false, fmt.Errorf("storage: reopen segment %d of %s: %w", s.base, l.dir, err)
		}
		s.log, opened = f, true
	}
	if indexes && (s.offFile == nil || s.timeFile == nil) {
		if err := s.openIndexes(l.fs, false); err != nil {
			return opened, fmt.Errorf("storage: reopen indexes of segment %d of %s: %w", s.base, l.dir, err)
		}
		opened = true
	}
	return opened, nil
}

// noteOpened puts a sealed segment whose files were just opened in the
// list of open sealed segments and enforces the cap, sparing s itself.
func (l *Log) noteOpened(s *segment) {
	if !s.sealed.Load() {
		return
	}
	l.fdmu.Lock()
	if !s.inOpenList {
		s.inOpenList = true
		l.openSealed = append(l.openSealed, s)
	}
	l.evictLocked(s)
	l.fdmu.Unlock()
}

// tooManyOpenSealed reports whether more sealed segments hold files than
// Config.MaxOpenSealedSegments allows (those not fsynced yet cannot close).
func (l *Log) tooManyOpenSealed() bool {
	l.fdmu.Lock()
	defer l.fdmu.Unlock()
	return len(l.openSealed) > l.cfg.MaxOpenSealedSegments
}

// evictOpenSealed closes the oldest clean sealed segments beyond the cap.
func (l *Log) evictOpenSealed() {
	l.fdmu.Lock()
	l.evictLocked(nil)
	l.fdmu.Unlock()
}

// evictLocked closes the files of the oldest clean sealed segments while
// more than Config.MaxOpenSealedSegments are open, never keep's, and the
// index files of the clean ones it keeps (a sealed segment's indexes are
// written once). A segment in use (its fmu held) or not yet fsynced is
// skipped: the cap is exceeded until a later open, flush or sweep. Caller
// holds fdmu.
func (l *Log) evictLocked(keep *segment) {
	over := len(l.openSealed) - l.cfg.MaxOpenSealedSegments
	l.filterOpenLocked(func(s *segment) bool {
		if s == keep {
			return true
		}
		if over > 0 && l.closeSealedLocked(s) {
			over--
			return false
		}
		l.closeSealedIndexesLocked(s)
		return true
	})
}

// closeSealedIndexesLocked closes a clean sealed segment's index files if
// no one uses the segment. Caller holds fdmu.
func (l *Log) closeSealedIndexesLocked(s *segment) {
	if !s.clean() || !s.fmu.TryLock() {
		return
	}
	defer s.fmu.Unlock()
	if !s.clean() || !s.sealed.Load() {
		return
	}
	for _, f := range []*File{&s.offFile, &s.timeFile} {
		if *f == nil {
			continue
		}
		if err := (*f).Close(); err != nil {
			l.logger.WithError(err).WithField("segment", s.base).Warn("closing a sealed segment's index file failed")
		}
		*f = nil
	}
}

// filterOpenLocked keeps the open sealed segments for which keep is true,
// in order. Caller holds fdmu.
func (l *Log) filterOpenLocked(keep func(s *segment) bool) {
	kept := l.openSealed[:0]
	for _, s := range l.openSealed {
		if keep(s) {
			kept = append(kept, s)
		}
	}
	clear(l.openSealed[len(kept):])
	l.openSealed = kept
	if cap(l.openSealed) > 4*max(l.cfg.MaxOpenSealedSegments, 4) && len(l.openSealed) < cap(l.openSealed)/4 {
		l.openSealed = append([]*segment(nil), l.openSealed...)
	}
}

// closeSealedLocked closes a sealed segment's files if it is clean and not
// in use, and reports whether it did (its list entry is then the caller's
// to drop). Caller holds fdmu.
func (l *Log) closeSealedLocked(s *segment) bool {
	if !s.clean() || !s.fmu.TryLock() {
		return false
	}
	defer s.fmu.Unlock()
	if !s.clean() {
		return false
	}
	if err := s.closeFiles(); err != nil {
		// Everything in it was fsynced: nothing is lost.
		l.logger.WithError(err).WithField("segment", s.base).Warn("closing an idle sealed segment's files failed")
	}
	s.inOpenList = false
	return true
}

// forgetSegment drops a segment about to be deleted, or made active again,
// from the list of open sealed segments.
func (l *Log) forgetSegment(s *segment) {
	l.fdmu.Lock()
	if s.inOpenList {
		s.inOpenList = false
		l.filterOpenLocked(func(o *segment) bool { return o != s })
	}
	l.fdmu.Unlock()
}

// dropSegment forgets a segment no longer in the log and deletes its files.
func (l *Log) dropSegment(s *segment) error {
	l.forgetSegment(s)
	return s.remove(l.fs)
}

// closeSegmentFiles closes the files of a segment that is fsynced or about
// to be replaced, whatever its state.
func (l *Log) closeSegmentFiles(s *segment) error {
	l.forgetSegment(s)
	s.fmu.Lock()
	defer s.fmu.Unlock()
	if err := s.closeFiles(); err != nil {
		return fmt.Errorf("close segment %d: %w", s.base, err)
	}
	return nil
}

// OpenFiles reports how many files the log holds open (for tests and
// health checks). Safe from any goroutine.
func (l *Log) OpenFiles() int {
	l.rmu.RLock()
	defer l.rmu.RUnlock()
	n := 0
	for _, s := range l.segs {
		s.fmu.RLock()
		n += s.openFiles()
		s.fmu.RUnlock()
	}
	return n
}

// kickFlush has a background Flush run (again, if one is running), so a
// sealed segment gets fsynced (and may then be closed) without holding up
// the append that rolled it. Caller holds mu.
func (l *Log) kickFlush() {
	if l.closing {
		return
	}
	l.flushAgain.Store(true)
	if !l.flushing.CompareAndSwap(false, true) {
		return // the running one flushes again
	}
	l.bg.Add(1)
	go func() {
		defer l.bg.Done()
		for {
			for l.flushAgain.Swap(false) {
				if err := l.Flush(); err != nil && !errors.Is(err, ErrClosed) {
					l.logger.WithError(err).Warn("background flush after a segment roll failed")
				}
			}
			l.flushing.Store(false)
			// A kick between the last Swap and the Store started nothing.
			if !l.flushAgain.Load() || !l.flushing.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}

// idleFor is the idle sweep's view of one segment: it clears the used
// flag, and reports whether the segment went unused for timeout. Caller
// holds idleMu.
func (s *segment) idleFor(nowMs int64, timeout time.Duration) bool {
	if s.used.Swap(false) || s.idleSince == 0 {
		s.idleSince = nowMs
		return false
	}
	return nowMs-s.idleSince >= timeout.Milliseconds()
}

// closeIdle is the idle sweep of one log: it closes the files of sealed
// segments and of the active segment that went unused for
// Config.FileIdleTimeout, fsyncing them first. now is the log's clock.
// It returns how many segments it closed. It never waits for an append
// in progress (the log is not idle then).
func (l *Log) closeIdle(now time.Time) int {
	timeout := l.cfg.FileIdleTimeout
	if timeout < 0 || l.closed.Load() {
		return 0
	}
	l.idleMu.Lock()
	defer l.idleMu.Unlock()
	nowMs := now.UnixMilli()
	closed := 0
	dirtyIdle := false
	l.fdmu.Lock()
	l.filterOpenLocked(func(s *segment) bool {
		if !s.idleFor(nowMs, timeout) {
			return true
		}
		if l.closeSealedLocked(s) {
			closed++
			return false
		}
		dirtyIdle = dirtyIdle || !s.clean()
		return true
	})
	l.fdmu.Unlock()
	if dirtyIdle {
		// Idle sealed segments not fsynced yet: fsync and close them.
		if err := l.Flush(); err != nil {
			l.logger.WithError(err).Debug("idle sweep: flush failed; files stay open")
			return closed
		}
		l.fdmu.Lock()
		l.filterOpenLocked(func(s *segment) bool {
			if s.used.Load() || nowMs-s.idleSince < timeout.Milliseconds() || !l.closeSealedLocked(s) {
				return true
			}
			closed++
			return false
		})
		l.fdmu.Unlock()
	}

	l.rmu.RLock()
	a := l.segs[len(l.segs)-1]
	l.rmu.RUnlock()
	if !a.idleFor(nowMs, timeout) {
		return closed
	}
	a.fmu.RLock()
	open := a.openFiles()
	a.fmu.RUnlock()
	if open == 0 {
		return closed
	}
	if !a.clean() {
		// fsync outside the writer's lock, as any flush.
		if err := l.Flush(); err != nil {
			l.logger.WithError(err).Debug("idle sweep: flush failed; files stay open")
			return closed
		}
	}
	if !l.mu.TryLock() {
		return closed
	}
	defer l.mu.Unlock()
	if l.closed.Load() || l.writeErr != nil || l.segs[len(l.segs)-1] != a || a.used.Load() {
		return closed
	}
	err := a.writeIndexes(l)
	if err == nil && !a.clean() {
		err = a.sync()
	}
	if err != nil {
		l.logger.WithError(l.fail(err)).Warn("idle sweep: writing out the idle active segment failed")
		return closed
	}
	a.fmu.Lock()
	defer a.fmu.Unlock()
	if !a.clean() {
		return closed
	}
	if err := a.closeFiles(); err != nil {
		l.logger.WithError(err).WithField("segment", a.base).Warn("closing the idle active segment's files failed")
	}
	l.logger.WithFields(logrus.Fields{"segment": a.base, "idle": timeout}).Debug("closed the files of an idle log")
	return closed + 1
}

// fileJanitor runs the idle sweep of every open log whose FileIdleTimeout
// is not negative, on one goroutine for the whole process. The goroutine
// ends when no log is registered.
type fileJanitor struct {
	mu       sync.Mutex
	logs     map[*Log]struct{}
	interval time.Duration // the shortest sweep interval a registered log asked for
	running  bool
}

var janitor = &fileJanitor{logs: map[*Log]struct{}{}}

// sweepInterval is how often logs with this idle timeout are swept: a
// quarter of it, within [10ms, 10s].
func sweepInterval(timeout time.Duration) time.Duration {
	return min(max(timeout/4, 10*time.Millisecond), 10*time.Second)
}

func (j *fileJanitor) add(l *Log) {
	if l.cfg.FileIdleTimeout < 0 {
		return
	}
	iv := sweepInterval(l.cfg.FileIdleTimeout)
	j.mu.Lock()
	defer j.mu.Unlock()
	j.logs[l] = struct{}{}
	if j.interval == 0 || iv < j.interval {
		j.interval = iv
	}
	if !j.running {
		j.running = true
		go j.run()
	}
}

func (j *fileJanitor) remove(l *Log) {
	j.mu.Lock()
	delete(j.logs, l)
	j.mu.Unlock()
}

func (j *fileJanitor) run() {
	var logs []*Log
	for {
		j.mu.Lock()
		iv := j.interval
		j.mu.Unlock()
		time.Sleep(iv)
		j.mu.Lock()
		if len(j.logs) == 0 {
			j.running, j.interval = false, 0
			j.mu.Unlock()
			return
		}
		logs = logs[:0]
		for l := range j.logs {
			logs = append(logs, l)
		}
		j.mu.Unlock()
		for _, l := range logs {
			l.closeIdle(l.cfg.Now())
		}
		clear(logs)
	}
}
