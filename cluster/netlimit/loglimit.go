package netlimit

import (
	"sync"
	"time"
)

// LogLimiter allows one event per key per Every: how the project keeps a
// line that a network peer can trigger (a refused connection, envelope or
// internal request) from flooding the log. Safe for concurrent use; keys
// must come from a fixed set, so its maps stay small. The zero Every
// allows everything.
type LogLimiter struct {
	Every      time.Duration
	mu         sync.Mutex
	last       map[string]time.Time
	suppressed map[string]int
}

// Allow reports whether an event for key may be logged at now and, if so,
// how many were held back since the last one allowed.
func (l *LogLimiter) Allow(key string, now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		l.last = make(map[string]time.Time)
		l.suppressed = make(map[string]int)
	}
	if last, ok := l.last[key]; ok && now.Sub(last) < l.Every {
		l.suppressed[key]++
		return false, 0
	}
	l.last[key] = now
	n := l.suppressed[key]
	delete(l.suppressed, key)
	return true, n
}
