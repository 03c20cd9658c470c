// onfail_test.go: a log that fails tells its owner once, through
// Config.OnFail, with the sticky error it refuses writes with from then on.

package storage

import (
	"errors"
	"testing"

	"github.com/actorlog/actorlog/storage/record"
)

func TestOnFailReportsTheStickyErrorOnce(t *testing.T) {
	fsys := &faultFS{}
	var reported []error
	l := openLog(t, t.TempDir(), Config{FS: fsys, OnFail: func(err error) { reported = append(reported, err) }})
	appendBatches(t, l, record.CompressionNone, 1, 2, 5, 0)
	if len(reported) != 0 {
		t.Fatalf("OnFail called on a healthy log: %v", reported)
	}
	fsys.set(true, false)
	for i := 0; i < 3; i++ {
		if _, err := l.Append(buildBatch(t, record.CompressionNone, makeRecords(uint64(10+i), 5, 0)), 1); err == nil {
			t.Fatal("an append whose write failed succeeded")
		}
	}
	if len(reported) != 1 {
		t.Fatalf("OnFail called %d times, want once", len(reported))
	}
	if !errors.Is(reported[0], errInjected) || !errors.Is(l.Err(), errInjected) || reported[0].Error() != l.Err().Error() {
		t.Fatalf("OnFail got %v, the log's sticky error is %v", reported[0], l.Err())
	}
}
