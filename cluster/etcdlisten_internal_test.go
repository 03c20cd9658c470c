// etcdlisten_internal_test.go: listenURLs, with a fake resolver and a
// fake list of this machine's addresses: a name becomes the machine's own
// addresses it resolves to, never 0.0.0.0, and a name that resolves to no
// address of this machine is refused with an error that says so.

package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
)

func TestListenURLs(t *testing.T) {
	names := map[string][]string{
		"self":      {"10.1.2.3"},
		"loop":      {"127.0.1.1"},
		"mixed":     {"8.8.8.8", "10.1.2.3", "10.1.2.3", "fd00::5"},
		"remote":    {"8.8.8.8", "192.0.2.7"},
		"zeros":     {"0.0.0.0", "::"},
		"ipv6-only": {"fd00::5"},
	}
	restore := fakeAddresses(t, names, []string{"10.1.2.3", "fd00::5", "127.0.0.1", "::1"})
	defer restore()
	tests := []struct {
		url     string
		want    []string // listen URLs
		wantErr string   // part of the error; "" for none
	}{
		{"http://127.0.0.1:2379", []string{"http://127.0.0.1:2379"}, ""},
		{"http://10.9.9.9:2379", []string{"http://10.9.9.9:2379"}, ""}, // an IP is the user's choice
		{"http://[::1]:2380", []string{"http://[::1]:2380"}, ""},
		{"http://localhost:2379", []string{"http://localhost:2379"}, ""},
		{"http://self:2379", []string{"http://10.1.2.3:2379"}, ""},
		{"https://self:2380", []string{"https://10.1.2.3:2380"}, ""},
		{"http://loop:2379", []string{"http://127.0.1.1:2379"}, ""},
		{"http://mixed:2380", []string{"http://10.1.2.3:2380", "http://[fd00::5]:2380"}, ""},
		{"http://ipv6-only:2380", []string{"http://[fd00::5]:2380"}, ""},
		{"http://remote:2379", nil, "remote resolves to [8.8.8.8 192.0.2.7]"},
		{"http://zeros:2379", nil, "zeros resolves to [0.0.0.0 ::]"},
		{"http://nowhere:2379", nil, "resolve nowhere:"},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			u, err := url.Parse(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			got, err := listenURLs(context.Background(), *u)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), tc.url) || !strings.Contains(err.Error(), "IP address of this machine") {
					t.Fatalf("listenURLs(%s) = %v, %v; want an error naming the URL, %q and what to do", tc.url, got, err, tc.wantErr)
				}
				if strings.Contains(tc.wantErr, "resolves to") && !errors.Is(err, errNotLocal) {
					t.Fatalf("listenURLs(%s): %v does not match errNotLocal", tc.url, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("listenURLs(%s): %v", tc.url, err)
			}
			var s []string
			for _, l := range got {
				s = append(s, l.String())
				if ip := net.ParseIP(l.Hostname()); ip != nil && ip.IsUnspecified() {
					t.Fatalf("listenURLs(%s) listens on %s", tc.url, l.String())
				}
			}
			if fmt.Sprint(s) != fmt.Sprint(tc.want) {
				t.Fatalf("listenURLs(%s) = %v, want %v", tc.url, s, tc.want)
			}
		})
	}
}

// fakeAddresses makes names resolve as given (anything else: no such
// host) and local the machine's addresses, until restore.
func fakeAddresses(t *testing.T, names map[string][]string, local []string) (restore func()) {
	t.Helper()
	parse := func(ss []string) []net.IP {
		var ips []net.IP
		for _, s := range ss {
			ip := net.ParseIP(s)
			if ip == nil {
				t.Fatalf("bad test address %q", s)
			}
			ips = append(ips, ip)
		}
		return ips
	}
	prevLookup, prevLocal := lookupIP, localIPs
	lookupIP = func(_ context.Context, host string) ([]net.IP, error) {
		ss, ok := names[host]
		if !ok {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		return parse(ss), nil
	}
	localIPs = func() ([]net.IP, error) { return parse(local), nil }
	return func() { lookupIP, localIPs = prevLookup, prevLocal }
}
