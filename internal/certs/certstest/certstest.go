// Package certstest writes test certificates issued by internal/certs to
// files, as `actorlog certs init` lays them out.
package certstest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/actorlog/actorlog/internal/certs"
	"github.com/actorlog/actorlog/internal/tlsconf"
)

// NewCA makes a CA valid for an hour and writes its certificate to
// dir/ca.crt.
func NewCA(t testing.TB, dir string) *certs.KeyPair {
	t.Helper()
	ca, err := certs.NewCA("test CA", time.Hour)
	if err != nil {
		t.Fatalf("certstest: new CA: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca.CertPEM(), 0o644); err != nil {
		t.Fatalf("certstest: write ca.crt: %v", err)
	}
	return ca
}

// WritePair issues a host (host true) or client certificate of name,
// valid for an hour, into dir/<name>.crt and .key and returns the files
// with dir/ca.crt as the CA.
func WritePair(t testing.TB, ca *certs.KeyPair, dir, name string, host bool) tlsconf.Files {
	t.Helper()
	var kp *certs.KeyPair
	var err error
	if host {
		kp, err = ca.IssueHost(name, nil, time.Hour)
	} else {
		kp, err = ca.IssueClient(name, time.Hour)
	}
	if err != nil {
		t.Fatalf("certstest: issue %s: %v", name, err)
	}
	f := tlsconf.Files{Cert: filepath.Join(dir, name+".crt"), Key: filepath.Join(dir, name+".key"), CA: filepath.Join(dir, "ca.crt")}
	if err := kp.WriteFiles(f.Cert, f.Key); err != nil {
		t.Fatalf("certstest: write %s: %v", name, err)
	}
	return f
}
