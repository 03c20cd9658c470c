// etcdlisten_test.go: a member whose URLs name this machine by a host
// name listens on the addresses the name resolves to, not on every
// interface; one whose name resolves elsewhere does not start, and says
// why (issue 11).

package cluster_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
)

// withName returns raw (an http URL on 127.0.0.1) with its host replaced
// by name.
func withName(t *testing.T, raw, name string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = net.JoinHostPort(name, u.Port())
	return u.String()
}

// TestEtcdListensWhereItsNameResolves starts a member whose URLs name
// this machine by its host name (the real resolver; skipped where the
// name does not resolve to an address of this machine): its client
// reaches it by that name, and its ports are bound on the name's
// addresses only — nothing answers on the machine's other addresses, as
// it would on 0.0.0.0.
func TestEtcdListensWhereItsNameResolves(t *testing.T) {
	name, err := os.Hostname()
	if err != nil {
		t.Fatalf("host name: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resolved, err := net.DefaultResolver.LookupIP(ctx, "ip", name)
	if err != nil {
		t.Skipf("this machine's name %q does not resolve: %v", name, err)
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatalf("list this machine's addresses: %v", err)
	}
	var local, others []net.IP
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.To4() == nil {
			continue
		}
		if slices.ContainsFunc(resolved, n.IP.Equal) {
			local = append(local, n.IP)
		} else {
			others = append(others, n.IP)
		}
	}
	if len(local) == 0 {
		t.Skipf("this machine's name %q resolves to %v, none of them an IPv4 address of an interface here", name, resolved)
	}

	cfg := clustertest.Config(t, "named")
	cfg.ClientURL = withName(t, cfg.ClientURL, name)
	cfg.PeerURL = withName(t, cfg.PeerURL, name)
	e := clustertest.Start(t, cfg)
	if _, err := e.Client().Put(ctx, "k", "v"); err != nil {
		t.Fatalf("put through the member's client (%s): %v", cfg.ClientURL, err)
	}
	for _, raw := range []string{cfg.ClientURL, cfg.PeerURL} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, ip := range local {
			c, err := net.DialTimeout("tcp", net.JoinHostPort(ip.String(), u.Port()), 2*time.Second)
			if err != nil {
				t.Fatalf("%s: nothing listens on %s, an address %s resolves to: %v", raw, ip, name, err)
			}
			c.Close()
		}
		for _, ip := range others {
			if c, err := net.DialTimeout("tcp", net.JoinHostPort(ip.String(), u.Port()), 2*time.Second); err == nil {
				c.Close()
				t.Fatalf("%s: the member also listens on %s, which %s does not resolve to: the name became 0.0.0.0", raw, ip, name)
			}
		}
		t.Logf("%s: listens on %v, not on %v", raw, local, others)
	}
}

// TestEtcdRefusesANameOfAnotherMachine: a member whose URL names a host
// that resolves only to other machines' addresses does not start, and
// the error names the URL, the addresses and what to do.
func TestEtcdRefusesANameOfAnotherMachine(t *testing.T) {
	restore := cluster.SetLookupIP(func(_ context.Context, host string) ([]net.IP, error) {
		if host == "elsewhere.test" {
			return []net.IP{net.IPv4(198, 51, 100, 7)}, nil // TEST-NET-2: no machine's
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	})
	defer restore()
	for _, which := range []string{"client", "peer"} {
		cfg := clustertest.Config(t, "elsewhere-"+which)
		if which == "client" {
			cfg.ClientURL = withName(t, cfg.ClientURL, "elsewhere.test")
		} else {
			cfg.PeerURL = withName(t, cfg.PeerURL, "elsewhere.test")
		}
		_, err := clustertest.TryStart(cfg)
		if err == nil || !strings.Contains(err.Error(), which+" URL") || !strings.Contains(err.Error(), "elsewhere.test resolves to [198.51.100.7]") ||
			!strings.Contains(err.Error(), "IP address of this machine") {
			t.Fatalf("start with a %s URL naming another machine: %v; want an error naming it and what to do", which, err)
		}
	}
	cfg := clustertest.Config(t, "nowhere")
	cfg.PeerURL = withName(t, cfg.PeerURL, "nowhere.test")
	var dnsErr *net.DNSError
	if _, err := clustertest.TryStart(cfg); err == nil || !errors.As(err, &dnsErr) {
		t.Fatalf("start with a name that does not resolve: %v; want the resolver's error", err)
	}
}
