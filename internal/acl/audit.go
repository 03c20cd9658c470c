// audit.go: the refusal log every enforcement point shares (the Kafka
// listener's gates, the actor remote's middleware): each refusal is
// counted, and logged once per principal, client host, operation and
// resource per interval, the next line counting what was suppressed, so
// a client hammering a refused request cannot flood the log.

package acl

import (
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// auditKeys bounds an Audit's memory: past it, entries older than the
// interval are forgotten, and if none are, all (a flood of distinct
// refusals is then logged a little more often).
const auditKeys = 4096

// Audit logs and counts refusals. The zero value is not usable: make one
// with NewAudit. Safe for concurrent use.
type Audit struct {
	log      *logrus.Entry
	msg      string
	level    logrus.Level
	every    time.Duration
	onDenied func(Operation, ResourceType)
	now      func() time.Time

	mu   sync.Mutex
	last map[auditKey]*auditEntry
}

type auditKey struct {
	principal, host string
	op              Operation
	res             ResourceType
	name            string
}

type auditEntry struct {
	at         time.Time
	suppressed int
}

// NewAudit returns an Audit writing msg at level to log at most once per
// every (> 0) for one principal, host, operation and resource; onDenied
// (optional) counts every refusal.
func NewAudit(log *logrus.Entry, level logrus.Level, msg string, every time.Duration, onDenied func(Operation, ResourceType)) *Audit {
	return &Audit{log: log, msg: msg, level: level, every: every, onDenied: onDenied, now: time.Now,
		last: make(map[auditKey]*auditEntry)}
}

// Denied records that principal, from clientHost, was refused op on the
// resource res/name for reason.
func (a *Audit) Denied(principal, clientHost string, op Operation, res ResourceType, name, reason string) {
	if a.onDenied != nil {
		a.onDenied(op, res)
	}
	k := auditKey{principal: principal, host: clientHost, op: op, res: res, name: name}
	now := a.now()
	a.mu.Lock()
	e := a.last[k]
	if e != nil && now.Sub(e.at) < a.every {
		e.suppressed++
		a.mu.Unlock()
		return
	}
	suppressed := 0
	if e != nil {
		suppressed = e.suppressed
	}
	if len(a.last) >= auditKeys {
		for key, old := range a.last {
			if now.Sub(old.at) >= a.every {
				delete(a.last, key)
			}
		}
		if len(a.last) >= auditKeys {
			clear(a.last)
		}
	}
	a.last[k] = &auditEntry{at: now}
	a.mu.Unlock()
	fields := logrus.Fields{
		"principal": principal, "client_host": clientHost, "operation": op.String(),
		"resource_type": res.String(), "resource": name, "reason": reason,
	}
	if suppressed > 0 {
		fields["suppressed"] = suppressed
	}
	a.log.WithFields(fields).Log(a.level, a.msg)
}
