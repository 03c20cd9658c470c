// etcdtls_test.go: a host with --etcd-tls (etcdtls.go): the config's
// https defaults and refusals, a certificate that is not the host's or
// does not name its etcd URLs refused at start, and a host that runs with
// its etcd on TLS, refusing plain text and serving a client certificate.

package host

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/internal/certs"
	"github.com/actorlog/actorlog/internal/tlsconf"
)

// etcdTestPKI writes a CA, a host certificate for host-1 and a client
// certificate "admin" into a temporary directory.
func etcdTestPKI(t *testing.T) (hostFiles, admin tlsconf.Files) {
	t.Helper()
	dir := t.TempDir()
	ca, err := certs.NewCA("etcd TLS test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.crt")
	if err := ca.WriteFiles(caFile, filepath.Join(dir, "ca.key")); err != nil {
		t.Fatal(err)
	}
	write := func(kp *certs.KeyPair, err error, name string) tlsconf.Files {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		f := tlsconf.Files{Cert: filepath.Join(dir, name+".crt"), Key: filepath.Join(dir, name+".key"), CA: caFile}
		if err := kp.WriteFiles(f.Cert, f.Key); err != nil {
			t.Fatal(err)
		}
		return f
	}
	hk, herr := ca.IssueHost("host-1", nil, time.Hour)
	ak, aerr := ca.IssueClient("admin", time.Hour)
	return write(hk, herr, "host-1"), write(ak, aerr, "admin")
}

func TestEtcdTLSConfig(t *testing.T) {
	files := Config{TLSCert: "c.pem", TLSKey: "k.pem", TLSCA: "ca.pem"}
	c := files
	c.EtcdTLS = true
	got, err := c.withDefaults()
	if err != nil {
		t.Fatalf("--etcd-tls with certificates: %v", err)
	}
	if got.EtcdPeer != "https://127.0.0.1:7071" || got.EtcdClient != "https://127.0.0.1:7072" {
		t.Errorf("etcd URLs %s, %s; want https defaults", got.EtcdPeer, got.EtcdClient)
	}
	c.EtcdPeer, c.EtcdClient = "127.0.0.1:9001", "127.0.0.1:9002"
	if got, err = c.withDefaults(); err != nil || got.EtcdPeer != "https://127.0.0.1:9001" || got.EtcdClient != "https://127.0.0.1:9002" {
		t.Errorf("HOST:PORT with --etcd-tls: %s %s %v, want https URLs", got.EtcdPeer, got.EtcdClient, err)
	}

	refusals := []struct {
		name string
		edit func(c *Config)
		want string
	}{
		{"--etcd-tls without certificates", func(c *Config) { *c = Config{EtcdTLS: true} }, "--etcd-tls needs --tls-cert"},
		{"http peer URL with --etcd-tls", func(c *Config) { c.EtcdTLS, c.EtcdPeer = true, "http://127.0.0.1:9001" }, "must be https://"},
		{"http initial cluster with --etcd-tls", func(c *Config) {
			c.EtcdTLS, c.EtcdInitialCluster = true, "host-1=https://127.0.0.1:7071,host-2=http://127.0.0.1:7171"
		}, "must be https://"},
		{"http endpoints with --etcd-tls", func(c *Config) {
			c.EtcdTLS, c.EtcdEndpoints = true, []string{"http://127.0.0.1:7072"}
		}, "must be https://"},
		{"https initial cluster without --etcd-tls", func(c *Config) { c.EtcdInitialCluster = "host-1=https://127.0.0.1:7071" }, "needs --etcd-tls"},
		{"https endpoints without --etcd-tls", func(c *Config) { c.EtcdEndpoints = []string{"https://127.0.0.1:7072"} }, "needs --etcd-tls"},
	}
	for _, tc := range refusals {
		c := files
		tc.edit(&c)
		if _, err := c.withDefaults(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
}

// TestEtcdTLSHost: a host with --etcd-tls starts and registers (its store
// works over TLS); its etcd client port refuses plain text and serves a
// client certificate of the CA. Certificates that are not the host's, or
// do not name its etcd URLs, are refused at start.
func TestEtcdTLSHost(t *testing.T) {
	hostFiles, admin := etcdTestPKI(t)
	withTLS := func(c *Config) {
		c.HTTP, c.KafkaListen = "off", KafkaOff
		c.TLSCert, c.TLSKey, c.TLSCA, c.EtcdTLS = hostFiles.Cert, hostFiles.Key, hostFiles.CA, true
	}
	for _, tc := range []struct {
		name string
		edit func(c *Config)
		want string
	}{
		{"client certificate", func(c *Config) { c.TLSCert, c.TLSKey = admin.Cert, admin.Key }, "not Host:host-1"},
		{"another host's certificate", func(c *Config) { c.Name = "host-2" }, "not Host:host-2"},
		{"peer URL not in the certificate", func(c *Config) { c.EtcdPeer = "https://127.0.0.2:1" }, "does not name 127.0.0.2"},
	} {
		cfg := Config{Name: "host-1", DataDir: t.TempDir(), Listen: "127.0.0.1:1", EtcdUnsafeNoFsync: true, Logger: clustertest.Logger(t).Logger}
		withTLS(&cfg)
		tc.edit(&cfg)
		ctx, cancel := context30s()
		h, err := Start(ctx, cfg)
		cancel()
		if err == nil {
			ctx, cancel := context30s()
			if serr := h.Shutdown(ctx); serr != nil {
				t.Errorf("shut down: %v", serr)
			}
			cancel()
			t.Fatalf("%s: host started", tc.name)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q, want it to contain %q", tc.name, err, tc.want)
		}
	}

	h := startTestHost(t, withTLS)
	ctx, cancel := context30s()
	defer cancel()
	if !strings.HasPrefix(h.cfg.EtcdClient, "https://") {
		t.Fatalf("etcd client URL %s, want https", h.cfg.EtcdClient)
	}
	snap, err := h.store.Snapshot(ctx)
	if err != nil {
		t.Fatalf("store snapshot over TLS: %v", err)
	}
	if len(snap.Hosts) != 1 || snap.Hosts[0].GetName() != "host-1" {
		t.Fatalf("registered hosts %v, want host-1", snap.Hosts)
	}

	log := clustertest.Logger(t)
	plain := "http://" + strings.TrimPrefix(h.cfg.EtcdClient, "https://")
	if c, err := cluster.ConnectEtcd(ctx, []string{plain}, 2*time.Second, log); err == nil {
		if cerr := c.Close(); cerr != nil {
			t.Errorf("close: %v", cerr)
		}
		t.Error("the host's etcd served a plain-text client")
	}
	r, err := tlsconf.NewReloader(admin, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.ConnectEtcdTLS(ctx, []string{h.cfg.EtcdClient}, cluster.EtcdClientTLS(r), 5*time.Second, log)
	if err != nil {
		t.Fatalf("client certificate of the CA refused: %v", err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	admSnap, err := cluster.NewStore(c, "", log).Snapshot(ctx)
	if err != nil {
		t.Fatalf("snapshot through an admin client: %v", err)
	}
	if len(admSnap.Hosts) != 1 {
		t.Fatalf("admin client sees %d hosts, want 1", len(admSnap.Hosts))
	}

	// A host joining through --etcd-endpoints https://... runs no member
	// and dials with its host certificate.
	joiner := Config{Name: "host-1", EtcdEndpoints: []string{h.cfg.EtcdClient}, Logger: log.Logger}
	withTLS(&joiner)
	if joiner, err = joiner.withDefaults(); err != nil {
		t.Fatalf("joiner config: %v", err)
	}
	jh := &Host{cfg: joiner, logger: log}
	memberTLS, clientTLS, err := jh.etcdTLS()
	if err != nil || memberTLS != nil || clientTLS == nil {
		t.Fatalf("joiner's etcd TLS: member %v, client %v, %v; want a client config only", memberTLS, clientTLS != nil, err)
	}
	jc, err := cluster.ConnectEtcdTLS(ctx, joiner.EtcdEndpoints, clientTLS, 5*time.Second, log)
	if err != nil {
		t.Fatalf("joiner's etcd client: %v", err)
	}
	if err := jc.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}
