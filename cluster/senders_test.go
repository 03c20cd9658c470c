// senders_test.go: who speaks for a host (SenderIsHost, SenderIsAnyHost),
// and the refusals' counting and rate-limited log lines.

package cluster

import (
	"io"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/actorlog/actorlog/messages"
)

func TestSenderIsHost(t *testing.T) {
	const self = "10.0.0.1:8090" // the receiver, host 1
	hosts := HostAddresses([]*messages.HostInfo{
		{HostId: 1, AdvertisedAddress: self},
		{HostId: 2, AdvertisedAddress: "10.0.0.2:8090"},
		{HostId: 3}, // no address: never matched
	})
	from := func(addr string) *actor.PID { return actor.NewPID(addr, "future$1") }
	tests := []struct {
		name   string
		sender *actor.PID
		hosts  map[int32]string
		id     int32
		want   bool
	}{
		{"host 2 from its address", from("10.0.0.2:8090"), hosts, 2, true},
		{"host 2 from a client's address", from("10.0.0.9:40000"), hosts, 2, false},
		{"host 2 from host 1's address", from(self), hosts, 2, false},
		{"host 2 from an empty address (local: host 1)", from(""), hosts, 2, false},
		{"host 2 from nonhost (local: host 1)", from("nonhost"), hosts, 2, false},
		{"local sender for the local host", from(self), nil, 1, true},
		{"empty address for the local host", from(""), nil, 1, true},
		{"nonhost for the local host", from("nonhost"), nil, 1, true},
		{"host 1's address by registry", from(self), hosts, 1, true},
		{"unregistered host", from("10.0.0.4:8090"), hosts, 4, false},
		{"host without an address", from(""), hosts, 3, false},
		{"no sender", nil, hosts, 1, false},
		{"no registry", from("10.0.0.2:8090"), nil, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SenderIsHost(tt.sender, self, 1, tt.hosts, tt.id); got != tt.want {
				t.Fatalf("SenderIsHost(%v, host %d) = %v, want %v", tt.sender, tt.id, got, tt.want)
			}
		})
	}
	// In-process tests (no remote: the receiver's address is "nonhost")
	// map other host ids to protoactor's local address.
	if !SenderIsHost(from("nonhost"), "nonhost", 1, map[int32]string{2: "nonhost"}, 2) {
		t.Fatal("a test registry mapping host 2 to nonhost is not honoured")
	}
}

func TestSenderIsAnyHost(t *testing.T) {
	const self = "10.0.0.1:8090"
	hosts := map[int32]string{1: self, 2: "10.0.0.2:8090"}
	for _, tt := range []struct {
		sender *actor.PID
		want   bool
	}{
		{actor.NewPID("10.0.0.2:8090", "f"), true},
		{actor.NewPID(self, "f"), true},
		{actor.NewPID("", "f"), true},
		{actor.NewPID("10.0.0.9:1", "f"), false},
		{nil, false},
	} {
		if got := SenderIsAnyHost(tt.sender, self, hosts); got != tt.want {
			t.Errorf("SenderIsAnyHost(%v) = %v, want %v", tt.sender, got, tt.want)
		}
	}
	if SenderIsAnyHost(actor.NewPID("10.0.0.2:8090", "f"), self, nil) {
		t.Error("a remote sender is a host without a registry")
	}
}

func TestRefuseInternalCountsAndLimitsLines(t *testing.T) {
	logger, hook := test.NewNullLogger()
	logger.SetOutput(io.Discard)
	log := logrus.NewEntry(logger)
	before := InternalRefusals()
	sender := actor.NewPID("10.0.0.9:40000", "future$7")
	for i := 0; i < 50; i++ {
		RefuseInternal(log, RefusedControlledShutdown, sender, logrus.Fields{"host": 2})
	}
	RefuseInternal(log, "made-up", nil, nil)
	after := InternalRefusals()
	if d := after[RefusedControlledShutdown] - before[RefusedControlledShutdown]; d != 50 {
		t.Fatalf("counted %d controlled shutdown refusals, want 50", d)
	}
	if d := after["other"] - before["other"]; d != 1 {
		t.Fatalf("counted %d other refusals, want 1", d)
	}
	// Another test of this process may have logged this kind in the last
	// second; at most one line each, and none for the 49 that followed.
	lines := map[string]int{}
	for _, e := range hook.AllEntries() {
		if e.Level != logrus.WarnLevel {
			t.Fatalf("refusal logged at %v", e.Level)
		}
		lines[e.Data["kind"].(string)]++
		if e.Data["kind"] == RefusedControlledShutdown && e.Data["sender_address"] != "10.0.0.9:40000" {
			t.Fatalf("line without the sender's address: %v", e.Data)
		}
	}
	if lines[RefusedControlledShutdown] > 1 || lines["other"] > 1 {
		t.Fatalf("lines per kind: %v, want at most one each within a second", lines)
	}
}
