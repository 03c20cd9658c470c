// Package layers checks the import layering of the module: client
// packages (what a Go application links to produce and consume) must not
// pull in server packages (replicas, storage, the controller, etcd).
package layers

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// clientPackages are what an application imports.
var clientPackages = []string{
	"github.com/actorlog/actorlog/actors/client",
	"github.com/actorlog/actorlog/actors/producer",
	"github.com/actorlog/actorlog/actors/consumer",
	"github.com/actorlog/actorlog/actors/group",
	"github.com/actorlog/actorlog/messages",
}

// serverOnly are packages (or module prefixes, ending in "/") no client
// package may depend on.
var serverOnly = []string{
	"github.com/actorlog/actorlog/actors/replica",
	"github.com/actorlog/actorlog/actors/broker",
	"github.com/actorlog/actorlog/actors/controller",
	"github.com/actorlog/actorlog/actors/coordinator",
	"github.com/actorlog/actorlog/storage",
	"github.com/actorlog/actorlog/cluster",
	"github.com/actorlog/actorlog/host",
	"go.etcd.io/",
}

func forbidden(dep string) bool {
	for _, s := range serverOnly {
		if dep == s || (strings.HasSuffix(s, "/") && strings.HasPrefix(dep, s)) {
			return true
		}
	}
	return false
}

func TestClientPackagesDoNotLinkServerPackages(t *testing.T) {
	args := append([]string{"list", "-deps", "-json=ImportPath,Imports"}, clientPackages...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	importers := map[string][]string{} // dep -> packages importing it
	dec := json.NewDecoder(strings.NewReader(string(out)))
	n := 0
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		n++
		for _, imp := range p.Imports {
			importers[imp] = append(importers[imp], p.ImportPath)
		}
	}
	if n < len(clientPackages) {
		t.Fatalf("go list listed %d packages, want at least %d", n, len(clientPackages))
	}
	for dep, by := range importers {
		if forbidden(dep) {
			t.Errorf("client packages depend on server package %s (imported by %v)", dep, by)
		}
	}
}
