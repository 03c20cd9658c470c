package poll

import (
	"errors"
	"testing"
	"time"
)

// recorder is a testing.TB whose Fatalf records instead of stopping the
// test, so Until's failure path can be checked.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = format
	panic(r)
}

func runRecorded(t *testing.T, f func(tb testing.TB)) (failed bool) {
	r := &recorder{TB: t}
	defer func() {
		if p := recover(); p != nil {
			if p != r {
				panic(p)
			}
			failed = true
		}
	}()
	f(r)
	return r.failed != ""
}

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	Until(t, time.Second, func() error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if calls != 3 {
		t.Fatalf("cond called %d times, want 3", calls)
	}
}

func TestUntilFailsAfterTheTimeout(t *testing.T) {
	if !runRecorded(t, func(tb testing.TB) {
		Until(tb, 30*time.Millisecond, func() error { return errors.New("never") })
	}) {
		t.Fatal("Until did not fail on a condition that never holds")
	}
}

func TestNeverFailsAtTheFirstError(t *testing.T) {
	calls := 0
	if !runRecorded(t, func(tb testing.TB) {
		Never(tb, time.Second, func() error {
			calls++
			if calls == 2 {
				return errors.New("broken")
			}
			return nil
		})
	}) {
		t.Fatal("Never did not fail on a broken condition")
	}
	if calls != 2 {
		t.Fatalf("cond called %d times, want 2", calls)
	}
	Never(t, 30*time.Millisecond, func() error { return nil })
}
