// keys_test.go: the etcd key layout.

package cluster

import (
	"errors"
	"testing"
)

func TestKeys(t *testing.T) {
	for _, prefix := range []string{"", "/actorlog", "/actorlog/"} {
		k := NewKeys(prefix)
		if k.Prefix() != "/actorlog/" {
			t.Fatalf("NewKeys(%q).Prefix() = %q", prefix, k.Prefix())
		}
	}
	k := NewKeys("/c1")
	for got, want := range map[string]string{
		k.Host(12):           "/c1/hosts/12",
		k.Topic("orders"):    "/c1/topics/orders",
		k.Election():         "/c1/controller/election",
		k.Hosts():            "/c1/hosts/",
		k.Topics():           "/c1/topics/",
		NewKeys("").Topics(): "/actorlog/topics/",
	} {
		if got != want {
			t.Errorf("key %q, want %q", got, want)
		}
	}
	if id, err := k.hostIDFromKey(k.Host(12)); err != nil || id != 12 {
		t.Errorf("hostIDFromKey = %d, %v", id, err)
	}
	for _, bad := range []string{"/c1/hosts/x", "/c1/hosts/", "/c2/hosts/1", "/c1/hosts/99999999999"} {
		if _, err := k.hostIDFromKey(bad); !errors.Is(err, ErrCorruptMetadata) {
			t.Errorf("hostIDFromKey(%q) = %v, want ErrCorruptMetadata", bad, err)
		}
	}
	if name, err := k.topicFromKey(k.Topic("a.b")); err != nil || name != "a.b" {
		t.Errorf("topicFromKey = %q, %v", name, err)
	}
}
