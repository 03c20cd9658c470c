// certs_test.go: what the issued certificates contain, name validation and
// reading keys back.

package certs

import (
	"crypto/x509"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/actorlog/actorlog/internal/tlsconf"
)

func TestCertIssueShapes(t *testing.T) {
	ca, err := NewCA(DefaultCAName, DefaultCAValidity)
	if err != nil {
		t.Fatal(err)
	}
	if !ca.Cert.IsCA || ca.Cert.Subject.CommonName != DefaultCAName || ca.Cert.NotAfter.Before(time.Now().Add(9*365*24*time.Hour)) {
		t.Fatalf("CA: IsCA %v CN %q NotAfter %v", ca.Cert.IsCA, ca.Cert.Subject.CommonName, ca.Cert.NotAfter)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)

	host, err := ca.IssueHost("host1", []string{"lb.example", "10.0.0.5", "127.0.0.1"}, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := host.Cert.DNSNames, []string{"host1", "localhost", "lb.example"}; !slices.Equal(got, want) {
		t.Errorf("DNS SANs %v, want %v", got, want)
	}
	var ips []string
	for _, ip := range host.Cert.IPAddresses {
		ips = append(ips, ip.String())
	}
	if want := []string{"127.0.0.1", "::1", "10.0.0.5"}; !slices.Equal(ips, want) {
		t.Errorf("IP SANs %v, want %v (no duplicates)", ips, want)
	}
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := host.Cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "host1", KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Errorf("host cert for usage %v: %v", usage, err)
		}
	}
	if p, err := tlsconf.PrincipalFromCert(host.Cert); err != nil || p.String() != "Host:host1" {
		t.Errorf("host principal %v, %v", p, err)
	}

	client, err := ca.IssueClient("admin", 100*365*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !client.Cert.NotAfter.Equal(ca.Cert.NotAfter) {
		t.Errorf("client NotAfter %v not capped at the CA's %v", client.Cert.NotAfter, ca.Cert.NotAfter)
	}
	if _, err := client.Cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client cert for client auth: %v", err)
	}
	if _, err := client.Cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("client cert verifies for server auth")
	}
	if p, err := tlsconf.PrincipalFromCert(client.Cert); err != nil || p.String() != "User:admin" {
		t.Errorf("client principal %v, %v", p, err)
	}
	if host.Cert.SerialNumber.Cmp(client.Cert.SerialNumber) == 0 {
		t.Error("two certificates share a serial number")
	}

	dir := t.TempDir()
	if err := host.WriteFiles(filepath.Join(dir, "h.crt"), filepath.Join(dir, "h.key")); err != nil {
		t.Fatal(err)
	}
	back, err := LoadKeyPair(filepath.Join(dir, "h.crt"), filepath.Join(dir, "h.key"))
	if err != nil {
		t.Fatal(err)
	}
	if !back.Cert.Equal(host.Cert) || !back.Key.Equal(host.Key) {
		t.Error("LoadKeyPair did not read back what WriteFiles wrote")
	}
	if err := client.WriteFiles(filepath.Join(dir, "c.crt"), filepath.Join(dir, "c.key")); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKeyPair(filepath.Join(dir, "h.crt"), filepath.Join(dir, "c.key")); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("mismatched key: %v", err)
	}
}

func TestCertValidateName(t *testing.T) {
	for name, want := range map[string]string{
		"host1":                 "",
		"db-2.example_x@y":      "",
		"":                      "empty",
		"a/b":                   "path separator",
		`a\b`:                   "path separator",
		"..":                    "starts with",
		".hidden":               "starts with",
		"-flag":                 "starts with",
		"ca":                    "reserved",
		"a b":                   "contains ' '",
		"host:1":                "contains ':'",
		"é":                     "contains 'é'",
		strings.Repeat("a", 65): "longer than 64",
	} {
		err := ValidateName(name)
		if want == "" {
			if err != nil {
				t.Errorf("ValidateName(%q) = %v", name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidateName(%q) = %v, want error containing %q", name, err, want)
		}
	}
}
