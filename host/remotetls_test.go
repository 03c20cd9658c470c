// remotetls_test.go: the host-name map the TLS remote's guard checks
// host-only requests against.

package host

import "testing"

func TestHostNamesLookup(t *testing.T) {
	var n hostNames
	if _, ok := n.lookup(1); ok {
		t.Fatal("an empty map knows host 1")
	}
	n.add(1, "host1")
	n.add(2, "host2")
	n.add(3, "") // a registration without a name is not recorded
	before := n.names.Load()
	n.add(1, "host1") // unchanged: no new map
	if n.names.Load() != before {
		t.Error("re-adding a known name replaced the map")
	}
	for id, want := range map[int32]string{1: "host1", 2: "host2"} {
		if got, ok := n.lookup(id); !ok || got != want {
			t.Errorf("host %d: %q %v, want %q", id, got, ok, want)
		}
	}
	if _, ok := n.lookup(3); ok {
		t.Error("host 3 (no name) is known")
	}
	n.add(2, "host2b")
	if got := (*before)[2]; got != "host2" {
		t.Errorf("a published map was modified: host 2 is %q", got)
	}
	if got, _ := n.lookup(2); got != "host2b" {
		t.Errorf("host 2 renamed: %q", got)
	}
	var nilNames *hostNames
	nilNames.follow(nil, nil) // nil-safe: a host without remote TLS
	nilNames.close()
	n.close() // never followed
}
