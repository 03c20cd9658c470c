// checkpoint.go: the single-offset checkpoint files of a log, both in
// Kafka's text format ("0\n<offset>\n", version then value):
//
//   - the recovery point (recovery-point-checkpoint): the offset below which
//     every byte of the log (and its indexes) has been fsynced; on open,
//     segments at or above it are scanned and truncated at the first torn or
//     corrupt frame, as Kafka does after an unclean shutdown;
//   - the high watermark (high-watermark): the last high watermark the
//     replica checkpointed, so a restarted replica does not expose less (or
//     more) than was committed. With Config.HighWatermarks it is kept in
//     the data dir's shared checkpoint instead (hwcheckpoint.go), and the
//     per-log file is only read, once, to upgrade.

package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
)

const (
	recoveryPointFile = "recovery-point-checkpoint"
	highWatermarkFile = "high-watermark"
)

// ErrCorruptCheckpoint means a checkpoint file could not be parsed.
var ErrCorruptCheckpoint = errors.New("storage: corrupt checkpoint file")

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// readOffsetCheckpoint returns the offset stored in the checkpoint file name
// of dir; found is false when the file does not exist. A damaged file is an
// error wrapping ErrCorruptCheckpoint.
func readOffsetCheckpoint(fsys FS, dir, name string) (offset int64, found bool, err error) {
	raw, err := readWholeFile(fsys, filepath.Join(dir, name))
	if err != nil {
		if isNotExist(err) {
			return 0, false, nil
		}
		return 0, false, fmt.Errorf("read %s: %w", name, err)
	}
	off, err := parseOffsetCheckpoint(raw)
	if err != nil {
		return 0, false, fmt.Errorf("%s: %w", name, err)
	}
	return off, true, nil
}

// parseOffsetCheckpoint decodes a single-offset checkpoint file's bytes; a
// damaged file is an error wrapping ErrCorruptCheckpoint.
func parseOffsetCheckpoint(raw []byte) (int64, error) {
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 2 || lines[0] != "0" {
		return 0, fmt.Errorf("%w: %q", ErrCorruptCheckpoint, raw)
	}
	off, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || off < 0 {
		return 0, fmt.Errorf("%w: %q", ErrCorruptCheckpoint, raw)
	}
	return off, nil
}

// formatOffsetCheckpoint encodes offset as a single-offset checkpoint file.
func formatOffsetCheckpoint(offset int64) []byte {
	return []byte("0\n" + strconv.FormatInt(offset, 10) + "\n")
}

// writeOffsetCheckpoint replaces the checkpoint file name of dir atomically.
func writeOffsetCheckpoint(fsys FS, dir, name string, offset int64) error {
	data := formatOffsetCheckpoint(offset)
	if err := writeFileAtomic(fsys, dir, filepath.Join(dir, name), data); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// readRecoveryPoint returns the stored recovery point, 0 when absent. A
// damaged file is not fatal: it only means recovering from offset 0.
func readRecoveryPoint(fsys FS, dir string) (int64, error) {
	rp, _, err := readOffsetCheckpoint(fsys, dir, recoveryPointFile)
	return rp, err
}

func writeRecoveryPoint(fsys FS, dir string, rp int64) error {
	return writeOffsetCheckpoint(fsys, dir, recoveryPointFile, rp)
}

// loadHighWatermark reads the high-watermark checkpoint at open: the log's
// entry in the shared checkpoint when Config.HighWatermarks is set (else,
// or without an entry, its own high-watermark file). A missing file means
// the log start; a damaged one is logged and means the same. The value is
// clamped to the log.
func (l *Log) loadHighWatermark() {
	hw, found := int64(0), false
	slot := l.cfg.HighWatermarks
	if slot != nil {
		hw, found = slot.load()
	}
	legacy, lfound, err := readOffsetCheckpoint(l.fs, l.dir, highWatermarkFile)
	if err != nil && !found {
		l.logger.WithError(err).WithField("log_start_offset", l.start.Load()).
			Warn("high-watermark checkpoint unreadable; starting from the log start")
	}
	if slot != nil && (lfound || err != nil) {
		// A file of before the shared checkpoint: its value when the
		// shared one has none; removed once the shared one holds it.
		path := filepath.Join(l.dir, highWatermarkFile)
		slot.adoptLegacy(legacy, lfound, func() error { return l.fs.Remove(path) })
	}
	if !found && lfound {
		hw, found = legacy, true
	}
	if !found {
		hw = l.start.Load()
	}
	clamped := min(max(hw, l.start.Load()), l.leo.Load())
	l.hw.Store(clamped)
	l.hwOnDisk = found && clamped == hw
}

// HighWatermarkCheckpoint returns the last checkpointed high watermark: what
// WriteHighWatermark last wrote, or what was read at Open (the log start
// when the file was missing or damaged), lowered by truncations, and
// clamped to [LogStartOffset, LogEndOffset]. Safe from any goroutine.
func (l *Log) HighWatermarkCheckpoint() int64 {
	return min(max(l.hw.Load(), l.start.Load()), l.leo.Load())
}

// WriteHighWatermark checkpoints hw atomically (write, fsync, rename) in the
// file high-watermark of the log directory. hw must lie in
// [LogStartOffset, LogEndOffset], else the error wraps ErrOffsetOutOfRange.
// Writing the value already on disk does nothing. A failed write fails the
// log, as any failed write does. Writer only.
func (l *Log) WriteHighWatermark(hw int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritable(); err != nil {
		return err
	}
	if start, end := l.start.Load(), l.leo.Load(); hw < start || hw > end {
		return fmt.Errorf("%w: high watermark %d outside the log [%d, %d]", ErrOffsetOutOfRange, hw, start, end)
	}
	return l.setHighWatermarkLocked(hw)
}

// setHighWatermarkLocked stores and checkpoints hw: in the shared
// checkpoint when Config.HighWatermarks is set (a value below what its
// file may hold rewrites it at once), else in the log's own file. Caller
// holds mu.
func (l *Log) setHighWatermarkLocked(hw int64) error {
	if l.hwOnDisk && l.hw.Load() == hw {
		return nil
	}
	l.hw.Store(hw)
	var err error
	if slot := l.cfg.HighWatermarks; slot != nil {
		err = slot.set(hw)
	} else {
		err = writeOffsetCheckpoint(l.fs, l.dir, highWatermarkFile, hw)
	}
	if err != nil {
		l.hwOnDisk = false
		return l.fail(err)
	}
	l.hwOnDisk = true
	return nil
}
