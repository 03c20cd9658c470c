// logdirs_test.go: DescribeLogDirs' directory walk — only segment files
// count, a missing directory gives -1 and its error, and the answer is
// sorted.

package broker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/actorlog/actorlog/storage"
)

func TestMeasureLogDirs(t *testing.T) {
	data := t.TempDir()
	write := func(dir, name string, n int) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(data, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(data, dir, name), make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("orders-1", "00000000000000000000.log", 100)
	write("orders-1", "00000000000000000042.log", 23)
	write("orders-1", "00000000000000000000.index", 4096)
	write("orders-1", partitionMetadataFile, 50)
	write("orders-0", "00000000000000000000.log", 0)
	dirs := []logDir{
		{key: tp{"orders", 1}, dir: filepath.Join(data, "orders-1")},
		{key: tp{"orders", 0}, dir: filepath.Join(data, "orders-0")},
		{key: tp{"audit", 0}, dir: filepath.Join(data, "audit-0")}, // missing
	}
	got := measureLogDirs(dirs, storage.OSFS{}.ReadDir)
	if len(got) != 3 {
		t.Fatalf("got %d partitions, want 3: %v", len(got), got)
	}
	if a := got[0]; a.Topic != "audit" || a.SizeBytes != -1 || !strings.Contains(a.ErrorMessage, "audit-0") {
		t.Errorf("missing directory: %v", a)
	}
	if o := got[1]; o.Topic != "orders" || o.Partition != 0 || o.SizeBytes != 0 || o.ErrorMessage != "" {
		t.Errorf("empty segment: %v", o)
	}
	if o := got[2]; o.Partition != 1 || o.SizeBytes != 123 {
		t.Errorf("orders-1: %v, want 123 bytes (segments only)", o)
	}
}
