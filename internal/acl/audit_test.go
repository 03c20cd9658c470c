package acl

import (
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
)

// TestAuditRateLimits: one line per principal, host, operation and
// resource per interval, the next one counting the suppressed; every
// refusal counted; other resources logged independently.
func TestAuditRateLimits(t *testing.T) {
	l, hook := test.NewNullLogger()
	counted := 0
	a := NewAudit(logrus.NewEntry(l), logrus.WarnLevel, "denied", time.Minute, func(Operation, ResourceType) { counted++ })
	now := time.Unix(100, 0)
	a.now = func() time.Time { return now }
	for range 10 {
		a.Denied("User:app", "10.0.0.1", OpWrite, ResourceTopic, "orders", "no ACL")
	}
	a.Denied("User:app", "10.0.0.1", OpWrite, ResourceTopic, "payments", "no ACL")
	if n := len(hook.AllEntries()); n != 2 || counted != 11 {
		t.Fatalf("%d lines and %d counted for 11 refusals on 2 topics, want 2 and 11", n, counted)
	}
	now = now.Add(time.Minute)
	a.Denied("User:app", "10.0.0.1", OpWrite, ResourceTopic, "orders", "no ACL")
	e := hook.LastEntry()
	if e.Level != logrus.WarnLevel || e.Message != "denied" || e.Data["suppressed"] != 9 || e.Data["resource"] != "orders" || e.Data["operation"] != OpWrite.String() {
		t.Fatalf("line after the interval: %v %q %v, want warn, suppressed 9", e.Level, e.Message, e.Data)
	}
}
