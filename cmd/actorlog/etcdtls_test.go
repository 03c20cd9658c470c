// etcdtls_test.go: `actorlog users|acls --etcd-endpoints` against an etcd
// member with TLS (etcdtls.go): a client certificate reaches it, https
// without one is refused with the flags to give.

package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/internal/certs"
	"github.com/actorlog/actorlog/internal/tlsconf"
	"github.com/actorlog/actorlog/kafka"
)

func TestAdminConnEtcdTLS(t *testing.T) {
	dir := t.TempDir()
	ca, err := certs.NewCA("etcd TLS test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.crt")
	if err := ca.WriteFiles(caFile, filepath.Join(dir, "ca.key")); err != nil {
		t.Fatal(err)
	}
	hk, err := ca.IssueHost("m1", nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ak, err := ca.IssueClient("admin", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	hostFiles := tlsconf.Files{Cert: filepath.Join(dir, "m1.crt"), Key: filepath.Join(dir, "m1.key"), CA: caFile}
	adminFiles := tlsconf.Files{Cert: filepath.Join(dir, "admin.crt"), Key: filepath.Join(dir, "admin.key"), CA: caFile}
	for kp, f := range map[*certs.KeyPair]tlsconf.Files{hk: hostFiles, ak: adminFiles} {
		if err := kp.WriteFiles(f.Cert, f.Key); err != nil {
			t.Fatal(err)
		}
	}
	r, err := tlsconf.NewReloader(hostFiles, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := clustertest.Config(t, "m1")
	cfg.ClientURL = strings.Replace(cfg.ClientURL, "http://", "https://", 1)
	cfg.PeerURL = strings.Replace(cfg.PeerURL, "http://", "https://", 1)
	cfg.TLS = &cluster.EtcdTLS{CertFile: hostFiles.Cert, KeyFile: hostFiles.Key, CAFile: caFile, Client: cluster.EtcdClientTLS(r), ClientCNs: []string{"admin"}}
	clustertest.Start(t, cfg)

	g := &globals{logLevel: "error"}
	f := adminFlags{etcdEndpoints: cfg.ClientURL, tlsCert: adminFiles.Cert, tlsKey: adminFiles.Key, tlsCA: caFile}
	var rows []userRow
	if err := withUserAdmin(g, f, func(ctx context.Context, a userAdmin) error {
		if err := a.upsert(ctx, "alice", kafka.ScramSHA512, "secret-password", 4096); err != nil {
			return err
		}
		rows, err = a.list(ctx)
		return err
	}); err != nil {
		t.Fatalf("users over https --etcd-endpoints with a client certificate: %v", err)
	}
	if len(rows) != 1 || rows[0].Name != "alice" {
		t.Fatalf("users %v, want alice", rows)
	}

	f.tlsCert, f.tlsKey = "", ""
	err = withUserAdmin(g, f, func(context.Context, userAdmin) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "--tls-cert, --tls-key and --tls-ca") {
		t.Fatalf("https endpoints without a certificate: %v, want an error naming the flags", err)
	}
}
