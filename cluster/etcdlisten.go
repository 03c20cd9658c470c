// etcdlisten.go: where the embedded etcd member listens for the URLs it
// advertises (issue 11, "a hostname in an etcd URL is never silently
// turned into 0.0.0.0"). etcd binds IP addresses only (and "localhost"),
// so a URL naming a host — a container advertising its service name —
// cannot be handed to it as it is. Listening on every interface instead
// (0.0.0.0) would expose the member's ports on interfaces the name never
// pointed at; so the name is resolved, and the member listens on each
// address it resolves to that belongs to this machine. A name that does
// not resolve, or resolves only to other machines' addresses, is refused
// with an error saying so.

package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"time"
)

// etcdResolveTimeout bounds the lookup of a name in an etcd URL.
const etcdResolveTimeout = 5 * time.Second

// errNotLocal means a name in an etcd URL resolves to no address of this
// machine.
var errNotLocal = errors.New("cluster: etcd URL names no address of this machine")

// Seams of listenURLs, replaced in tests.
var (
	// lookupIP resolves a host name.
	lookupIP = func(ctx context.Context, host string) ([]net.IP, error) {
		return net.DefaultResolver.LookupIP(ctx, "ip", host)
	}
	// localIPs lists the addresses of this machine's interfaces.
	localIPs = func() ([]net.IP, error) {
		addrs, err := net.InterfaceAddrs()
		if err != nil {
			return nil, err
		}
		ips := make([]net.IP, 0, len(addrs))
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				ips = append(ips, n.IP)
			}
		}
		return ips, nil
	}
)

// listenURLs returns the URLs the member binds for advertised URL u: u
// itself when its host is an IP address or "localhost"; for a name, u with
// each address the name resolves to that is this machine's (an interface's,
// or a loopback address), in the resolver's order. It never returns an
// unspecified address (0.0.0.0, ::) for a name. Errors name u, the
// addresses found, and what to do.
func listenURLs(ctx context.Context, u url.URL) ([]url.URL, error) {
	host := u.Hostname()
	if host == "" || host == "localhost" || net.ParseIP(host) != nil {
		return []url.URL{u}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, etcdResolveTimeout)
	defer cancel()
	resolved, err := lookupIP(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("cluster: etcd URL %s: resolve %s: %w (give an IP address of this machine, or a name that resolves to one)", u.String(), host, err)
	}
	local, err := localIPs()
	if err != nil {
		return nil, fmt.Errorf("cluster: etcd URL %s: list this machine's addresses: %w", u.String(), err)
	}
	var out []url.URL
	var seen []net.IP
	for _, ip := range resolved {
		if ip.IsUnspecified() || slices.ContainsFunc(seen, ip.Equal) {
			continue
		}
		if !ip.IsLoopback() && !slices.ContainsFunc(local, ip.Equal) {
			continue
		}
		seen = append(seen, ip)
		lu := u
		lu.Host = net.JoinHostPort(ip.String(), u.Port())
		out = append(out, lu)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s: %s resolves to %v (give an IP address of this machine, or a name that resolves to one)",
			errNotLocal, u.String(), host, resolved)
	}
	return out, nil
}
