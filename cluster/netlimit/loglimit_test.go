package netlimit

import (
	"testing"
	"time"
)

func TestLogLimiter(t *testing.T) {
	l := &LogLimiter{Every: time.Second}
	t0 := time.Unix(1000, 0)
	if ok, n := l.Allow("a", t0); !ok || n != 0 {
		t.Fatalf("first: %v %d", ok, n)
	}
	for i := 1; i <= 3; i++ {
		if ok, _ := l.Allow("a", t0.Add(time.Duration(i)*100*time.Millisecond)); ok {
			t.Fatalf("event %d within the second allowed", i)
		}
	}
	if ok, _ := l.Allow("b", t0); !ok {
		t.Fatal("another key is limited by the first")
	}
	if ok, n := l.Allow("a", t0.Add(time.Second)); !ok || n != 3 {
		t.Fatalf("after a second: %v, %d held back (want 3)", ok, n)
	}
}

func TestLogLimiterTable(t *testing.T) {
	l := LogLimiter{Every: time.Second}
	t0 := time.Unix(1000, 0)
	steps := []struct {
		key        string
		at         time.Duration
		ok         bool
		suppressed int
	}{
		{"a", 0, true, 0},
		{"a", 100 * time.Millisecond, false, 0},
		{"b", 200 * time.Millisecond, true, 0},
		{"a", 900 * time.Millisecond, false, 0},
		{"a", time.Second, true, 2},
		{"a", 1500 * time.Millisecond, false, 0},
		{"b", 3 * time.Second, true, 0},
	}
	for i, s := range steps {
		ok, n := l.Allow(s.key, t0.Add(s.at))
		if ok != s.ok || n != s.suppressed {
			t.Fatalf("step %d: allow(%s, +%v) = %v, %d; want %v, %d", i, s.key, s.at, ok, n, s.ok, s.suppressed)
		}
	}
}
