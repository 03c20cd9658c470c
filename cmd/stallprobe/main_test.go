package main

import (
	"strings"
	"testing"
	"time"
)

// A sleep that returns 60 ms late is one stall, in the count, the maximum
// and the list; the on-time sleeps around it are not.
func TestProbeCountsALateWakeUp(t *testing.T) {
	n := 0
	sleep := func(d time.Duration) {
		n++
		if n == 5 {
			d += 60 * time.Millisecond
		}
		time.Sleep(d)
	}
	p := probe(150*time.Millisecond, 2*time.Millisecond, sleep)
	if len(p.wakes) < 10 {
		t.Fatalf("%d sleeps in 150 ms of 2 ms sleeps", len(p.wakes))
	}
	var out strings.Builder
	if err := p.print(&out, 40*time.Millisecond, true); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if !strings.Contains(s, "woken more than 40ms late: 1 times") || strings.Count(s, "stall at ") != 1 {
		t.Fatalf("want exactly one stall reported:\n%s", s)
	}
	if p.wakes[4].late < 60*time.Millisecond {
		t.Fatalf("the fifth sleep is recorded %v late, want at least 60ms", p.wakes[4].late)
	}
}
