// etcdtls_test.go: the embedded etcd member with TLS (etcdtls.go): its
// client port refuses plain text, a client without a certificate and one
// with another CA's certificate, and serves a client certificate of its
// CA; its peer port admits only member certificates; three members form
// a cluster over TLS peers; and TLS config errors.

package cluster_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/cluster/netlimit"
	"github.com/actorlog/actorlog/internal/certs"
	"github.com/actorlog/actorlog/internal/tlsconf"
)

// testPKI is a CA and the certificates it issued, written under dir.
type testPKI struct {
	t   *testing.T
	dir string
	ca  *certs.KeyPair
}

func newTestPKI(t *testing.T, name string) *testPKI {
	t.Helper()
	ca, err := certs.NewCA(name, time.Hour)
	if err != nil {
		t.Fatalf("new CA: %v", err)
	}
	p := &testPKI{t: t, dir: t.TempDir(), ca: ca}
	if err := ca.WriteFiles(p.caFile(), filepath.Join(p.dir, "ca.key")); err != nil {
		t.Fatalf("write CA: %v", err)
	}
	return p
}

func (p *testPKI) caFile() string { return filepath.Join(p.dir, "ca.crt") }

// files writes kp as name.crt/name.key and returns them with the CA file.
func (p *testPKI) files(kp *certs.KeyPair, name string) tlsconf.Files {
	p.t.Helper()
	f := tlsconf.Files{Cert: filepath.Join(p.dir, name+".crt"), Key: filepath.Join(p.dir, name+".key"), CA: p.caFile()}
	if err := kp.WriteFiles(f.Cert, f.Key); err != nil {
		p.t.Fatalf("write %s: %v", name, err)
	}
	return f
}

func (p *testPKI) host(name string) tlsconf.Files {
	p.t.Helper()
	kp, err := p.ca.IssueHost(name, nil, time.Hour)
	if err != nil {
		p.t.Fatalf("issue host %s: %v", name, err)
	}
	return p.files(kp, name)
}

func (p *testPKI) client(name string) tlsconf.Files {
	p.t.Helper()
	kp, err := p.ca.IssueClient(name, time.Hour)
	if err != nil {
		p.t.Fatalf("issue client %s: %v", name, err)
	}
	return p.files(kp, name)
}

// clientTLS is an etcd client config with f's certificate (cluster.EtcdClientTLS).
func clientTLS(t *testing.T, f tlsconf.Files) *tls.Config {
	t.Helper()
	r, err := tlsconf.NewReloader(f, nil)
	if err != nil {
		t.Fatalf("reloader %+v: %v", f, err)
	}
	return cluster.EtcdClientTLS(r)
}

// tlsMemberConfig is clustertest.Config with https URLs and TLS from f.
func tlsMemberConfig(t *testing.T, name string, f tlsconf.Files) cluster.EtcdConfig {
	t.Helper()
	cfg := clustertest.Config(t, name)
	cfg.ClientURL = strings.Replace(cfg.ClientURL, "http://", "https://", 1)
	cfg.PeerURL = strings.Replace(cfg.PeerURL, "http://", "https://", 1)
	cfg.TLS = &cluster.EtcdTLS{CertFile: f.Cert, KeyFile: f.Key, CAFile: f.CA, Client: clientTLS(t, f), ClientCNs: []string{"admin"}}
	return cfg
}

// connect tries a client of endpoint with tlsCfg (nil: plain text) and a
// short timeout; it closes the client.
func connect(t *testing.T, endpoint string, tlsCfg *tls.Config) error {
	t.Helper()
	c, err := cluster.ConnectEtcdTLS(context.Background(), []string{endpoint}, tlsCfg, 2*time.Second, clustertest.Logger(t))
	if err != nil {
		return err
	}
	if err := c.Close(); err != nil {
		t.Errorf("close client: %v", err)
	}
	return nil
}

// peerGet fetches the member list from a peer URL with tlsCfg, as a peer
// would.
func peerGet(peerURL string, tlsCfg *tls.Config) error {
	tr := &http.Transport{TLSClientConfig: tlsCfg}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	resp, err := cl.Get(peerURL + "/members")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return fmt.Errorf("read /members: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /members: %s", resp.Status)
	}
	return nil
}

// TestEtcdTLSClientAuth: a TLS member behind the connection limiter (as a
// host runs it) serves its own client and a client certificate of its CA,
// and refuses plain text, a TLS client without a certificate and a
// certificate of another CA, and a certificate whose name is neither a
// member's nor in ClientCNs; its peer port takes a member's certificate
// only.
func TestEtcdTLSClientAuth(t *testing.T) {
	t.Parallel()
	pki := newTestPKI(t, "etcd test CA")
	other := newTestPKI(t, "another CA")
	cfg := tlsMemberConfig(t, "m1", pki.host("m1"))
	lim, err := netlimit.New(netlimit.Limits{MaxConnections: 100, MaxConnectionsPerIP: 100}, clustertest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Limiter = lim
	e := clustertest.Start(t, cfg)
	ctx := testCtx(t, 20*time.Second)

	if _, err := e.Client().Put(ctx, "k", "v"); err != nil {
		t.Fatalf("the member's own TLS client: put: %v", err)
	}

	admin := clientTLS(t, pki.client("admin"))
	if err := connect(t, cfg.ClientURL, admin); err != nil {
		t.Fatalf("client certificate of the cluster CA refused: %v", err)
	}
	plain := "http://" + strings.TrimPrefix(cfg.ClientURL, "https://")
	if err := connect(t, plain, nil); err == nil {
		t.Error("plain-text client served")
	}
	// Only the members' and ClientCNs' names: a Kafka client's certificate
	// of the same CA, or a host that is neither, is refused.
	if err := connect(t, cfg.ClientURL, clientTLS(t, pki.client("app"))); err == nil {
		t.Error("client certificate app (not in ClientCNs) served")
	}
	if err := connect(t, cfg.ClientURL, clientTLS(t, pki.host("m9"))); err == nil {
		t.Error("host certificate m9 (not a member, not in ClientCNs) served")
	}
	pool := x509.NewCertPool()
	pool.AddCert(pki.ca.Cert)
	if err := connect(t, cfg.ClientURL, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}); err == nil {
		t.Error("TLS client without a certificate served")
	}
	foreign := clientTLS(t, other.client("admin"))
	foreign.RootCAs = pool // trusts the server; presents another CA's certificate
	if err := connect(t, cfg.ClientURL, foreign); err == nil {
		t.Error("client certificate of another CA served")
	}

	// Peer port: a member certificate, nothing else.
	if err := peerGet(cfg.PeerURL, clientTLS(t, pki.host("m1"))); err != nil {
		t.Fatalf("peer port refused the member's certificate: %v", err)
	}
	for name, c := range map[string]*tls.Config{
		"a client certificate (not a member)": admin,
		"no certificate":                      {RootCAs: pool, MinVersion: tls.VersionTLS12},
		"a member name from another CA":       withRoots(clientTLS(t, other.host("m1")), pool),
		"another host's certificate":          clientTLS(t, pki.host("m9")),
	} {
		if err := peerGet(cfg.PeerURL, c); err == nil {
			t.Errorf("peer port served %s", name)
		}
	}
}

func withRoots(c *tls.Config, pool *x509.CertPool) *tls.Config {
	c.RootCAs = pool
	return c
}

// TestEtcdTLSThreeMembers: three members behind connection limiters (as
// hosts run them: peer connections are relayed, so they arrive from a
// loopback address no certificate names) bootstrap over TLS peers and
// replicate a write.
func TestEtcdTLSThreeMembers(t *testing.T) {
	t.Parallel()
	pki := newTestPKI(t, "etcd test CA")
	names := []string{"t1", "t2", "t3"}
	members := clustertest.StartMembers(t, func() []cluster.EtcdConfig {
		cfgs := make([]cluster.EtcdConfig, len(names))
		for i, n := range names {
			cfgs[i] = tlsMemberConfig(t, n, pki.host(n))
			lim, err := netlimit.New(netlimit.Limits{MaxConnections: 100, MaxConnectionsPerIP: 100}, clustertest.Logger(t))
			if err != nil {
				t.Fatal(err)
			}
			cfgs[i].Limiter = lim
		}
		return cfgs
	})
	ctx := testCtx(t, 20*time.Second)
	if _, err := members[0].Client().Put(ctx, "replicated", "yes"); err != nil {
		t.Fatalf("put through t1: %v", err)
	}
	resp, err := members[2].Client().Get(ctx, "replicated")
	if err != nil {
		t.Fatalf("get through t3: %v", err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "yes" {
		t.Fatalf("t3 read %v, want replicated=yes", resp.Kvs)
	}
}

func TestEtcdTLSConfigErrors(t *testing.T) {
	pki := newTestPKI(t, "etcd test CA")
	f := pki.host("a")
	tlsOK := &cluster.EtcdTLS{CertFile: f.Cert, KeyFile: f.Key, CAFile: f.CA, Client: &tls.Config{}}
	base := cluster.EtcdConfig{Name: "a", DataDir: t.TempDir(), ClientURL: "https://127.0.0.1:1", PeerURL: "https://127.0.0.1:2", TLS: tlsOK}
	tests := []struct {
		name   string
		mutate func(*cluster.EtcdConfig)
		want   string
	}{
		{"http client URL with TLS", func(c *cluster.EtcdConfig) { c.ClientURL = "http://127.0.0.1:1" }, "https:// URLs only"},
		{"http peer in initial cluster", func(c *cluster.EtcdConfig) {
			c.InitialCluster = "a=https://127.0.0.1:2,b=http://127.0.0.1:3"
		}, "https:// URLs only"},
		{"https without TLS", func(c *cluster.EtcdConfig) { c.TLS = nil }, "https needs TLS"},
		{"no CA", func(c *cluster.EtcdConfig) {
			c.TLS = &cluster.EtcdTLS{CertFile: f.Cert, KeyFile: f.Key, Client: &tls.Config{}}
		}, "CAFile"},
		{"no client config", func(c *cluster.EtcdConfig) { c.TLS = &cluster.EtcdTLS{CertFile: f.Cert, KeyFile: f.Key, CAFile: f.CA} }, "Client config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := base
			tt.mutate(&cfg)
			e, err := cluster.StartEtcd(context.Background(), cfg)
			if err == nil {
				_ = e.Close() // only reached on a test failure
				t.Fatalf("StartEtcd succeeded, want an error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
	if _, err := cluster.ConnectEtcdTLS(context.Background(), []string{"https://127.0.0.1:1"}, nil, time.Second, clustertest.Logger(t)); err == nil || !strings.Contains(err.Error(), "client certificate") {
		t.Errorf("https endpoint without TLS: %v, want a scheme error", err)
	}
	if _, err := cluster.ConnectEtcdTLS(context.Background(), []string{"http://127.0.0.1:1"}, &tls.Config{}, time.Second, clustertest.Logger(t)); err == nil || !strings.Contains(err.Error(), "must be https") {
		t.Errorf("http endpoint with TLS: %v, want a scheme error", err)
	}
}

// TestEtcdTLSServesRotatedCertificate: etcd reads its certificate files
// at every handshake, so a certificate rotated on disk (same CA, same
// name) is served to the next connection without a restart or a signal,
// and the member's own client keeps working.
func TestEtcdTLSServesRotatedCertificate(t *testing.T) {
	t.Parallel()
	pki := newTestPKI(t, "etcd test CA")
	files := pki.host("r1")
	e := clustertest.Start(t, tlsMemberConfig(t, "r1", files))
	admin := clientTLS(t, pki.client("admin"))
	addr := strings.TrimPrefix(e.Endpoints()[0], "https://")
	served := func() string {
		t.Helper()
		c := admin.Clone()
		c.ServerName = "127.0.0.1"
		conn, err := tls.Dial("tcp", addr, c)
		if err != nil {
			t.Fatalf("TLS dial %s: %v", addr, err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	before := served()
	kp, err := pki.ca.IssueHost("r1", nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := kp.WriteFiles(files.Cert, files.Key); err != nil {
		t.Fatal(err)
	}
	after := served()
	if after == before || after != kp.Cert.SerialNumber.String() {
		t.Fatalf("served serial %s after rotation (before %s), want the new certificate's %s", after, before, kp.Cert.SerialNumber)
	}
	ctx := testCtx(t, 10*time.Second)
	if _, err := e.Client().Put(ctx, "after-rotation", "ok"); err != nil {
		t.Fatalf("the member's own client after rotation: %v", err)
	}
}
