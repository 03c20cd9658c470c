// senders_test.go: the sender check's decision (nextSenderStep),
// table-driven.

package controller

import (
	"testing"
	"time"
)

func TestNextSenderStep(t *testing.T) {
	const (
		fresh = hostCacheTTL / 2
		stale = hostCacheTTL
		soon  = hostCacheMinRefresh / 2
		later = hostCacheMinRefresh
	)
	cases := []struct {
		name                      string
		internal, local, cachedOK bool
		sinceRead, sinceTry       time.Duration
		reading                   bool
		want                      senderStep
	}{
		{"not an internal request", false, false, false, stale, soon, true, stepServe},
		{"this host, locally", true, true, false, stale, soon, true, stepServe},
		{"a fresh copy admits it", true, false, true, fresh, soon, false, stepServe},
		{"a stale copy is read again", true, false, true, stale, later, false, stepRead},
		{"a fresh copy that refuses: read again", true, false, false, fresh, later, false, stepRead},
		{"a read under way: wait for it", true, false, false, stale, soon, true, stepWait},
		{"a read under way, stale copy admits: wait", true, false, true, stale, soon, true, stepWait},
		{"read too recently: the last copy decides", true, false, false, fresh, soon, false, stepDecide},
		{"read too recently, stale copy: it decides", true, false, true, stale, soon, false, stepDecide},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := nextSenderStep(c.internal, c.local, c.cachedOK, c.sinceRead, c.sinceTry, c.reading); got != c.want {
				t.Fatalf("step %d, want %d", got, c.want)
			}
		})
	}
}
