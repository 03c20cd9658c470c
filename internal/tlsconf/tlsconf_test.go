// tlsconf_test.go: handshakes between ServerConfig and ClientConfig over
// loopback with certificates from internal/certs, reloads, validation and
// principals.

package tlsconf_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/actorlog/actorlog/internal/certs"
	"github.com/actorlog/actorlog/internal/tlsconf"
)

// pki is a CA with its file written in dir.
type pki struct {
	t   *testing.T
	dir string
	ca  *certs.KeyPair
}

func newPKI(t *testing.T, dir string) *pki {
	t.Helper()
	ca, err := certs.NewCA(certs.DefaultCAName, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := ca.WriteFiles(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")); err != nil {
		t.Fatal(err)
	}
	return &pki{t: t, dir: dir, ca: ca}
}

// host issues a host certificate and writes it as dir/<file>.crt/.key.
func (p *pki) host(name, file string) (*certs.KeyPair, tlsconf.Files) {
	p.t.Helper()
	kp, err := p.ca.IssueHost(name, nil, time.Hour)
	if err != nil {
		p.t.Fatal(err)
	}
	return kp, p.write(kp, file)
}

// client issues a client certificate and writes it as dir/<file>.crt/.key.
func (p *pki) client(name, file string) (*certs.KeyPair, tlsconf.Files) {
	p.t.Helper()
	kp, err := p.ca.IssueClient(name, time.Hour)
	if err != nil {
		p.t.Fatal(err)
	}
	return kp, p.write(kp, file)
}

func (p *pki) write(kp *certs.KeyPair, file string) tlsconf.Files {
	p.t.Helper()
	f := tlsconf.Files{Cert: filepath.Join(p.dir, file+".crt"), Key: filepath.Join(p.dir, file+".key"), CA: filepath.Join(p.dir, "ca.crt")}
	if err := kp.WriteFiles(f.Cert, f.Key); err != nil {
		p.t.Fatal(err)
	}
	return f
}

func reloader(t *testing.T, f tlsconf.Files) *tlsconf.Reloader {
	t.Helper()
	r, err := tlsconf.NewReloader(f, nil)
	if err != nil {
		t.Fatalf("NewReloader(%+v): %v", f, err)
	}
	return r
}

// result is one side of a handshake.
type result struct {
	state tls.ConnectionState
	err   error
}

// handshake runs one TLS connection over loopback: the server completes
// its handshake and writes a byte, the client completes its handshake and
// reads that byte (so a refusal after a TLS 1.3 client Finished surfaces).
// rawClient, if set, replaces the TLS client.
func handshake(t *testing.T, server, client *tls.Config, rawClient func(net.Conn) error) (srv, cli result) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := ln.Close(); err != nil {
			t.Errorf("close listener: %v", err)
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	srvCh := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			srvCh <- result{err: err}
			return
		}
		defer c.Close()
		if err := c.SetDeadline(deadline); err != nil {
			srvCh <- result{err: err}
			return
		}
		tc := tls.Server(c, server)
		err = tc.Handshake()
		if err == nil {
			_, err = tc.Write([]byte{1})
		}
		srvCh <- result{state: tc.ConnectionState(), err: err}
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if err := raw.SetDeadline(deadline); err != nil {
		t.Fatal(err)
	}
	if rawClient != nil {
		cli.err = rawClient(raw)
	} else {
		tc := tls.Client(raw, client)
		cli.err = tc.Handshake()
		if cli.err == nil {
			_, cli.err = io.ReadFull(tc, make([]byte, 1))
		}
		cli.state = tc.ConnectionState()
	}
	if cli.err != nil {
		_ = raw.Close() // unblock the server; its error says nothing more
	}
	return <-srvCh, cli
}

func TestTLSHandshakePrincipal(t *testing.T) {
	p := newPKI(t, t.TempDir())
	host1, f1 := p.host("host1", "host1")
	_, f2 := p.host("host2", "host2")
	_, fa := p.client("admin", "admin")
	srv := reloader(t, f1)
	for _, tc := range []struct {
		client tlsconf.Files
		want   string
	}{
		{fa, "User:admin"},
		{f2, "Host:host2"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			s, c := handshake(t, srv.ServerConfig(tls.RequireAndVerifyClientCert), reloader(t, tc.client).ClientConfig("host1"), nil)
			if s.err != nil || c.err != nil {
				t.Fatalf("handshake: server %v, client %v", s.err, c.err)
			}
			if s.state.Version < tls.VersionTLS12 {
				t.Errorf("version %x, want >= TLS 1.2", s.state.Version)
			}
			pr, err := tlsconf.PrincipalFromConnState(s.state)
			if err != nil {
				t.Fatal(err)
			}
			if pr.String() != tc.want {
				t.Errorf("server sees %s, want %s", pr, tc.want)
			}
			if got := c.state.PeerCertificates[0].SerialNumber; got.Cmp(host1.Cert.SerialNumber) != 0 {
				t.Errorf("client saw serial %s, want host1's %s", got, host1.Cert.SerialNumber)
			}
			pr, err = tlsconf.PrincipalFromCert(c.state.PeerCertificates[0])
			if err != nil || pr != (tlsconf.Principal{Kind: tlsconf.PrincipalHost, Name: "host1"}) {
				t.Errorf("client sees server %v (%v), want Host:host1", pr, err)
			}
		})
	}
}

func TestTLSRefused(t *testing.T) {
	dir := t.TempDir()
	p := newPKI(t, dir)
	_, f1 := p.host("host1", "host1")
	_, fa := p.client("admin", "admin")
	other := newPKI(t, t.TempDir())
	_, fo := other.client("admin", "admin")
	_, foHost := other.host("host1", "host1")
	srv := reloader(t, f1).ServerConfig(tls.RequireAndVerifyClientCert)
	admin := reloader(t, fa)
	// A client that trusts our CA but presents another CA's certificate.
	foreign, err := tls.LoadX509KeyPair(fo.Cert, fo.Key)
	if err != nil {
		t.Fatal(err)
	}

	// A certificate of our CA without a Common Name names no principal.
	anon := signed(t, p.ca, &x509.Certificate{Subject: pkix.Name{Organization: []string{"acme"}}, NotBefore: time.Now().Add(-time.Minute),
		NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature})
	anonCert := tls.Certificate{Certificate: [][]byte{anon.Cert.Raw}, PrivateKey: anon.Key}

	tests := []struct {
		name      string
		server    *tls.Config
		client    *tls.Config
		raw       func(net.Conn) error
		serverErr string // substring of the server's error, if the server refuses
		clientErr string // substring of the client's error, if the client refuses
	}{
		{name: "client cert from another CA", server: srv,
			client:    &tls.Config{RootCAs: admin.Pool(), ServerName: "host1", Certificates: []tls.Certificate{foreign}, MinVersion: tls.VersionTLS12},
			serverErr: "certificate signed by unknown authority"},
		{name: "client cert without a principal", server: srv,
			client:    &tls.Config{RootCAs: admin.Pool(), ServerName: "host1", Certificates: []tls.Certificate{anonCert}, MinVersion: tls.VersionTLS12},
			serverErr: "empty common name"},
		{name: "no client cert", server: srv,
			client:    &tls.Config{RootCAs: admin.Pool(), ServerName: "host1", MinVersion: tls.VersionTLS12},
			serverErr: "didn't provide a certificate"},
		{name: "TLS 1.1 client", server: srv,
			client:    &tls.Config{RootCAs: admin.Pool(), ServerName: "host1", MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11},
			serverErr: "unsupported versions"},
		{name: "plain text client", server: srv, raw: func(c net.Conn) error {
			_, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: host1\r\n\r\n")
			return err
		}, serverErr: "does not look like a TLS handshake"},
		{name: "server from another CA", server: reloader(t, foHost).ServerConfig(tls.RequireAndVerifyClientCert),
			client: admin.ClientConfig("host1"), clientErr: "signed by unknown authority"},
		{name: "wrong server name", server: srv, client: admin.ClientConfig("host2"), clientErr: "not host2"},
		{name: "no server name", server: srv, client: admin.ClientConfig(""), clientErr: "no server name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, c := handshake(t, tc.server, tc.client, tc.raw)
			if tc.serverErr != "" && (s.err == nil || !strings.Contains(s.err.Error(), tc.serverErr)) {
				t.Errorf("server error %v, want one containing %q (client error %v)", s.err, tc.serverErr, c.err)
			}
			if tc.clientErr != "" && (c.err == nil || !strings.Contains(c.err.Error(), tc.clientErr)) {
				t.Errorf("client error %v, want one containing %q (server error %v)", c.err, tc.clientErr, s.err)
			}
			if s.err == nil {
				t.Error("server completed the connection")
			}
		})
	}
}

// The name the client checks: given to ClientConfig (DNS or IP), or set
// later on a copy of the config as tls.Dial and gRPC do.
func TestTLSClientServerName(t *testing.T) {
	p := newPKI(t, t.TempDir())
	_, f1 := p.host("host1", "host1")
	_, fa := p.client("admin", "admin")
	scfg := reloader(t, f1).ServerConfig(tls.RequireAndVerifyClientCert)
	admin := reloader(t, fa)
	later := func(name string) *tls.Config {
		c := admin.ClientConfig("").Clone()
		c.ServerName = name
		return c
	}
	for _, tc := range []struct {
		name   string
		client *tls.Config
		ok     bool
	}{
		{"DNS name", admin.ClientConfig("host1"), true},
		{"IPv4 SAN", admin.ClientConfig("127.0.0.1"), true},
		{"IPv6 SAN", admin.ClientConfig("::1"), true},
		{"IP not in SANs", admin.ClientConfig("10.9.9.9"), false},
		{"DNS name set on a copy", later("localhost"), true},
		{"wrong DNS name set on a copy", later("host2"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, c := handshake(t, scfg, tc.client, nil)
			if ok := s.err == nil && c.err == nil; ok != tc.ok {
				t.Errorf("handshake ok=%v, want %v (server %v, client %v)", ok, tc.ok, s.err, c.err)
			}
		})
	}
}

// Fields set on the returned server config before use (gRPC's "h2") apply
// to the per-handshake config too.
func TestTLSServerConfigKeepsNextProtos(t *testing.T) {
	p := newPKI(t, t.TempDir())
	_, f1 := p.host("host1", "host1")
	_, fa := p.client("admin", "admin")
	scfg := reloader(t, f1).ServerConfig(tls.RequireAndVerifyClientCert)
	scfg.NextProtos = []string{"h2"}
	ccfg := reloader(t, fa).ClientConfig("host1")
	ccfg.NextProtos = []string{"h2", "http/1.1"}
	s, c := handshake(t, scfg, ccfg, nil)
	if s.err != nil || c.err != nil {
		t.Fatalf("handshake: server %v, client %v", s.err, c.err)
	}
	if c.state.NegotiatedProtocol != "h2" {
		t.Errorf("negotiated %q, want h2", c.state.NegotiatedProtocol)
	}
}

func TestTLSOptionalClientCert(t *testing.T) {
	p := newPKI(t, t.TempDir())
	_, f1 := p.host("host1", "host1")
	srv := reloader(t, f1)
	s, c := handshake(t, srv.ServerConfig(tls.VerifyClientCertIfGiven), &tls.Config{RootCAs: srv.Pool(), ServerName: "host1", MinVersion: tls.VersionTLS12}, nil)
	if s.err != nil || c.err != nil {
		t.Fatalf("handshake: server %v, client %v", s.err, c.err)
	}
	if _, err := tlsconf.PrincipalFromConnState(s.state); !errors.Is(err, tlsconf.ErrNoPrincipal) {
		t.Errorf("PrincipalFromConnState without a client cert = %v, want ErrNoPrincipal", err)
	}
}

func TestReloadSwapsCertificate(t *testing.T) {
	p := newPKI(t, t.TempDir())
	first, f1 := p.host("host1", "host1")
	_, fa := p.client("admin", "admin")
	srv := reloader(t, f1)
	scfg := srv.ServerConfig(tls.RequireAndVerifyClientCert) // built once, used throughout
	ccfg := reloader(t, fa).ClientConfig("host1")
	served := func() *big.Int {
		t.Helper()
		s, c := handshake(t, scfg, ccfg, nil)
		if s.err != nil || c.err != nil {
			t.Fatalf("handshake: server %v, client %v", s.err, c.err)
		}
		return c.state.PeerCertificates[0].SerialNumber
	}
	if got := served(); got.Cmp(first.Cert.SerialNumber) != 0 {
		t.Fatalf("served serial %s, want %s", got, first.Cert.SerialNumber)
	}

	second, _ := p.host("host1", "host1") // overwrite the files
	if err := srv.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := served(); got.Cmp(second.Cert.SerialNumber) != 0 {
		t.Fatalf("after reload served serial %s, want the new %s", got, second.Cert.SerialNumber)
	}

	// Bad material on disk: every reload fails and the second cert stays.
	third, err := p.ca.IssueHost("host1", nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	thirdKey, err := third.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		name string
		file string
		data []byte
		is   error
	}{
		{"garbage cert", f1.Cert, []byte("not a certificate"), nil},
		{"key of another cert", f1.Key, thirdKey, nil},
		{"garbage CA", f1.CA, []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), nil},
		{"missing cert", f1.Cert, nil, os.ErrNotExist},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			saved, err := os.ReadFile(b.file)
			if err != nil {
				t.Fatal(err)
			}
			if b.data == nil {
				err = os.Remove(b.file)
			} else {
				err = os.WriteFile(b.file, b.data, 0o600)
			}
			if err != nil {
				t.Fatal(err)
			}
			err = srv.Reload()
			if err == nil {
				t.Fatal("Reload accepted bad material")
			}
			if b.is != nil && !errors.Is(err, b.is) {
				t.Errorf("Reload error %v does not wrap %v", err, b.is)
			}
			if got := served(); got.Cmp(second.Cert.SerialNumber) != 0 {
				t.Errorf("after a failed reload served serial %s, want the kept %s", got, second.Cert.SerialNumber)
			}
			if got := srv.Leaf().SerialNumber; got.Cmp(second.Cert.SerialNumber) != 0 {
				t.Errorf("Leaf serial %s, want %s", got, second.Cert.SerialNumber)
			}
			if err := os.WriteFile(b.file, saved, 0o600); err != nil {
				t.Fatal(err)
			}
		})
	}
	if err := srv.Reload(); err != nil {
		t.Fatalf("reload of restored files: %v", err)
	}
}

// A CA rotation: after both sides reload to a new CA, peers with the old
// CA's certificates are refused by configs built before the reload.
func TestReloadRotatesCA(t *testing.T) {
	dir := t.TempDir()
	p := newPKI(t, dir)
	_, f1 := p.host("host1", "host1")
	_, fa := p.client("admin", "admin")
	srv, cli := reloader(t, f1), reloader(t, fa)
	scfg := srv.ServerConfig(tls.RequireAndVerifyClientCert)
	ccfg := cli.ClientConfig("host1")
	oldAdmin, err := tls.LoadX509KeyPair(fa.Cert, fa.Key) // kept in memory across the rotation
	if err != nil {
		t.Fatal(err)
	}

	p2 := newPKI(t, dir) // overwrites ca.crt
	p2.host("host1", "host1")
	p2.client("admin", "admin")
	if err := srv.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := cli.Reload(); err != nil {
		t.Fatal(err)
	}
	// Both configs were built before the reload: the client now verifies
	// the new server certificate against the new pool, and vice versa.
	if s, c := handshake(t, scfg, ccfg, nil); s.err != nil || c.err != nil {
		t.Fatalf("rotated pair: server %v, client %v", s.err, c.err)
	}
	// A client that trusts the new CA but still presents the old CA's
	// certificate is refused by the server.
	stale := &tls.Config{RootCAs: srv.Pool(), ServerName: "host1", Certificates: []tls.Certificate{oldAdmin}, MinVersion: tls.VersionTLS12}
	s, c := handshake(t, scfg, stale, nil)
	if s.err == nil || !strings.Contains(s.err.Error(), "unknown authority") {
		t.Fatalf("server error %v for an old-CA client certificate, want unknown authority (client: %v)", s.err, c.err)
	}
}

func TestReloadConcurrentHandshakes(t *testing.T) {
	p := newPKI(t, t.TempDir())
	_, f1 := p.host("host1", "host1")
	_, fa := p.client("admin", "admin")
	srv := reloader(t, f1)
	scfg := srv.ServerConfig(tls.RequireAndVerifyClientCert)
	ccfg := reloader(t, fa).ClientConfig("host1")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 4 {
		wg.Go(func() {
			for range 3 {
				s, c := handshake(t, scfg, ccfg, nil)
				if s.err != nil || c.err != nil {
					errs <- errors.Join(s.err, c.err)
					return
				}
			}
		})
	}
	for range 5 {
		p.host("host1", "host1")
		if err := srv.Reload(); err != nil {
			t.Error(err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("handshake during reloads: %v", err)
	}
}

// signed issues a certificate from tmpl with the CA, for shapes
// internal/certs does not make.
func signed(t *testing.T, ca *certs.KeyPair, tmpl *x509.Certificate) *certs.KeyPair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.SerialNumber == nil {
		tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &certs.KeyPair{Cert: cert, Key: key}
}

func TestNewReloaderValidates(t *testing.T) {
	dir := t.TempDir()
	p := newPKI(t, dir)
	good, fg := p.host("host1", "host1")
	other := newPKI(t, t.TempDir())
	_, fo := other.host("host1", "host1")
	expired := p.write(signed(t, p.ca, &x509.Certificate{Subject: pkix.Name{CommonName: "old"}, NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: time.Now().Add(-time.Hour)}), "expired")
	future := p.write(signed(t, p.ca, &x509.Certificate{Subject: pkix.Name{CommonName: "new"}, NotBefore: time.Now().Add(time.Hour), NotAfter: time.Now().Add(2 * time.Hour)}), "future")
	write := func(name, data string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	keyPEM, err := good.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		files tlsconf.Files
		want  string // substring of the error
	}{
		{"key of another cert", tlsconf.Files{Cert: fo.Cert, Key: fg.Key, CA: fg.CA}, "private key does not match"},
		{"expired", expired, "expired"},
		{"not yet valid", future, "not valid before"},
		{"other CA", tlsconf.Files{Cert: fo.Cert, Key: fo.Key, CA: fg.CA}, "does not verify"},
		{"CA not PEM", tlsconf.Files{Cert: fg.Cert, Key: fg.Key, CA: write("bad-ca.crt", "hello")}, "no PEM certificates"},
		{"CA holds a key", tlsconf.Files{Cert: fg.Cert, Key: fg.Key, CA: write("key-ca.crt", string(keyPEM))}, "unexpected PEM block"},
		{"missing key", tlsconf.Files{Cert: fg.Cert, Key: filepath.Join(dir, "nope.key"), CA: fg.CA}, "no such file"},
		{"no CA given", tlsconf.Files{Cert: fg.Cert, Key: fg.Key}, "all required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := tlsconf.NewReloader(tc.files, nil)
			if err == nil {
				t.Fatalf("NewReloader accepted it (leaf %s)", r.Leaf().Subject)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
	if r := reloader(t, fg); r.Leaf().SerialNumber.Cmp(good.Cert.SerialNumber) != 0 {
		t.Errorf("Leaf serial %s, want %s", r.Leaf().SerialNumber, good.Cert.SerialNumber)
	}
}

func TestPrincipalFromCert(t *testing.T) {
	tests := []struct {
		name    string
		subject pkix.Name
		want    string // principal, or "" for an error
	}{
		{"host", pkix.Name{CommonName: "host1", OrganizationalUnit: []string{tlsconf.HostOU}}, "Host:host1"},
		{"host among other OUs", pkix.Name{CommonName: "h2", OrganizationalUnit: []string{"ops", tlsconf.HostOU}}, "Host:h2"},
		{"user", pkix.Name{CommonName: "admin"}, "User:admin"},
		{"user with another OU", pkix.Name{CommonName: "app", OrganizationalUnit: []string{"actorlog-hosts"}}, "User:app"},
		{"user with host-like O", pkix.Name{CommonName: "app", Organization: []string{tlsconf.HostOU}}, "User:app"},
		{"empty CN", pkix.Name{OrganizationalUnit: []string{tlsconf.HostOU}}, ""},
		{"empty user CN", pkix.Name{Organization: []string{"acme"}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tlsconf.PrincipalFromCert(&x509.Certificate{Subject: tc.subject, SerialNumber: big.NewInt(1)})
			if tc.want == "" {
				if !errors.Is(err, tlsconf.ErrNoPrincipal) {
					t.Fatalf("got %v, %v; want ErrNoPrincipal", got, err)
				}
				return
			}
			if err != nil || got.String() != tc.want {
				t.Fatalf("got %v, %v; want %s", got, err, tc.want)
			}
			if got.IsHost() != strings.HasPrefix(tc.want, "Host:") {
				t.Errorf("IsHost() = %v for %s", got.IsHost(), got)
			}
		})
	}
	if _, err := tlsconf.PrincipalFromCert(nil); !errors.Is(err, tlsconf.ErrNoPrincipal) {
		t.Errorf("nil cert: %v, want ErrNoPrincipal", err)
	}
}

func TestPrincipalFromConnStateUnverified(t *testing.T) {
	leaf := &x509.Certificate{Subject: pkix.Name{CommonName: "admin"}}
	for name, cs := range map[string]tls.ConnectionState{
		"handshake incomplete":  {VerifiedChains: [][]*x509.Certificate{{leaf}}},
		"peer cert unverified":  {HandshakeComplete: true, PeerCertificates: []*x509.Certificate{leaf}},
		"empty verified chain":  {HandshakeComplete: true, VerifiedChains: [][]*x509.Certificate{{}}},
		"no certificate at all": {HandshakeComplete: true},
	} {
		if p, err := tlsconf.PrincipalFromConnState(cs); !errors.Is(err, tlsconf.ErrNoPrincipal) {
			t.Errorf("%s: got %v, %v; want ErrNoPrincipal", name, p, err)
		}
	}
	p, err := tlsconf.PrincipalFromConnState(tls.ConnectionState{HandshakeComplete: true, VerifiedChains: [][]*x509.Certificate{{leaf}}})
	if err != nil || p.String() != "User:admin" {
		t.Errorf("verified chain: got %v, %v; want User:admin", p, err)
	}
}
