// Package poll is the one way tests wait: poll a condition with a deadline
// instead of sleeping a fixed time. A condition reports why it does not hold
// yet as an error, so a test that times out says what it was waiting for.
package poll

import (
	"testing"
	"time"
)

// Interval is how often Until re-checks a condition.
const Interval = 10 * time.Millisecond

// Until calls cond every Interval until it returns nil and reports how long
// that took. After timeout it fails the test with cond's last error.
func Until(t testing.TB, timeout time.Duration, cond func() error) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		err := cond()
		if err == nil {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met after %v: %v", timeout, err)
		}
		time.Sleep(Interval)
	}
}

// Never checks, for the whole of d, that cond keeps returning nil: the
// honest form of "sleep, then assert nothing happened". It fails the test at
// the first error.
func Never(t testing.TB, d time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if err := cond(); err != nil {
			t.Fatalf("condition broken after %v: %v", d-time.Until(deadline), err)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(Interval)
	}
}
