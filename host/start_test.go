package host

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/actorlog/actorlog/cluster/clustertest"
)

// TestStartOnTakenPortFails: a host whose --listen port another process
// holds fails to start with an error that says so, and cleaning up after
// the half-started cluster member (no gossiper yet) does not crash the
// process — it used to, with a nil dereference inside protoactor's
// Shutdown.
func TestStartOnTakenPortFails(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer func() {
		if err := taken.Close(); err != nil {
			t.Errorf("close listener: %v", err)
		}
	}()
	ctx, cancel := context30s()
	defer cancel()
	h, err := Start(ctx, Config{Name: "host-1", DataDir: t.TempDir(), Listen: taken.Addr().String(), HTTP: "off",
		KafkaListen: KafkaOff, EtcdUnsafeNoFsync: true, Logger: clustertest.Logger(t).Logger})
	if err == nil {
		if serr := h.Shutdown(ctx); serr != nil {
			t.Errorf("shutdown: %v", serr)
		}
		t.Fatal("host started on a port another listener holds")
	}
	if !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("start error %q does not say the address is in use", err)
	}
}

// TestStartReturnsWithItsOwnMemberListed: Start no longer waits out
// protoactor's fixed one-second sleep at the end of StartMember; it goes
// on once the member provider has published the member list from the
// registrations. That list holds this host when Start returns, as it did
// after the sleep.
func TestStartReturnsWithItsOwnMemberListed(t *testing.T) {
	ctx, cancel := context30s()
	defer cancel()
	h, err := Start(ctx, Config{Name: "host-1", DataDir: t.TempDir(),
		Listen: net.JoinHostPort("127.0.0.1", strconv.Itoa(clustertest.FreePortBase(t))), HTTP: "off",
		KafkaListen: KafkaOff, EtcdUnsafeNoFsync: true, Logger: clustertest.Logger(t).Logger})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	defer func() {
		if err := h.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}()
	if !h.cluster.MemberList.ContainsMemberID(h.system.ID) {
		t.Fatalf("member list at start holds %d members, not this host (%s)", h.cluster.MemberList.Length(), h.system.ID)
	}
}
