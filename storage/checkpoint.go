// checkpoint.go: the recovery-point checkpoint. The recovery point is the
// offset below which every byte of the log (and its indexes) has been fsynced;
// on open, segments at or above it are scanned and truncated at the first
// torn or corrupt frame, as Kafka does after an unclean shutdown.

package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
)

const recoveryPointFile = "recovery-point-checkpoint"

// ErrCorruptCheckpoint means a checkpoint file could not be parsed.
var ErrCorruptCheckpoint = errors.New("storage: corrupt checkpoint file")

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// readRecoveryPoint returns the stored recovery point, 0 when absent. A
// damaged file is not fatal: it only means recovering from offset 0.
func readRecoveryPoint(fsys FS, dir string) (int64, error) {
	raw, err := readWholeFile(fsys, filepath.Join(dir, recoveryPointFile))
	if err != nil {
		if isNotExist(err) {
			return 0, nil
		}
		return 0, fmt.Errorf("read recovery point: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 2 || lines[0] != "0" {
		return 0, fmt.Errorf("%w: recovery point %q", ErrCorruptCheckpoint, raw)
	}
	rp, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || rp < 0 {
		return 0, fmt.Errorf("%w: recovery point %q", ErrCorruptCheckpoint, raw)
	}
	return rp, nil
}

func writeRecoveryPoint(fsys FS, dir string, rp int64) error {
	data := []byte("0\n" + strconv.FormatInt(rp, 10) + "\n")
	if err := writeFileAtomic(fsys, dir, filepath.Join(dir, recoveryPointFile), data); err != nil {
		return fmt.Errorf("write recovery point: %w", err)
	}
	return nil
}
