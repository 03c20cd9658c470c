// meta.go: the data directory remembers whose it is (host.meta), as
// Kafka's meta.properties does, so a data directory is never served under
// another host's name or id by mistake.

package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

const metaFile = "host.meta"

type hostMeta struct {
	Name   string `json:"name"`
	HostID int32  `json:"host_id"`
}

// readMeta returns the data directory's host.meta, or nil if it has none.
func readMeta(dir string) (*hostMeta, error) {
	b, err := os.ReadFile(filepath.Join(dir, metaFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("host: read %s: %w", metaFile, err)
	}
	var m hostMeta
	if err := json.Unmarshal(b, &m); err != nil || m.Name == "" || m.HostID < 1 {
		return nil, fmt.Errorf("host: %s in %s is corrupt (%q); it names the host this data directory belongs to — restore it or move the directory away", metaFile, dir, b)
	}
	return &m, nil
}

// writeMeta writes host.meta atomically (temp file, fsync, rename).
func writeMeta(dir string, m hostMeta) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("host: encode %s: %w", metaFile, err)
	}
	tmp := filepath.Join(dir, metaFile+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("host: write %s: %w", metaFile, err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		return errors.Join(fmt.Errorf("host: write %s: %w", metaFile, err), f.Close())
	}
	if err := f.Sync(); err != nil {
		return errors.Join(fmt.Errorf("host: sync %s: %w", metaFile, err), f.Close())
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("host: close %s: %w", metaFile, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, metaFile)); err != nil {
		return fmt.Errorf("host: install %s: %w", metaFile, err)
	}
	return nil
}
