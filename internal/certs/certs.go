// Package certs generates the development PKI of an actorlog cluster: an
// ECDSA P-256 CA, host certificates and client certificates that follow
// the principal convention of internal/tlsconf (a host certificate carries
// tlsconf.HostOU and its name as Common Name; a client certificate is a
// user named by its Common Name). Init lays them out in a directory, as
// `actorlog certs init` does. Standard library crypto only.
package certs

// certs.go: key pairs, issuing, and reading/writing PEM files.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/actorlog/actorlog/internal/tlsconf"
)

// DefaultCAName is the Common Name of a generated CA.
const DefaultCAName = "actorlog dev CA"

// DefaultCAValidity is how long a generated CA is valid (10 years).
const DefaultCAValidity = 10 * 365 * 24 * time.Hour

// DefaultValidity is how long host and client certificates are valid.
const DefaultValidity = 365 * 24 * time.Hour

// backdate is how far before now certificates become valid, to tolerate
// clock skew between the machine that issues them and the hosts.
const backdate = 5 * time.Minute

// KeyPair is a certificate and its private key.
type KeyPair struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// CertPEM returns the certificate as PEM.
func (k *KeyPair) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: k.Cert.Raw})
}

// KeyPEM returns the private key as a PKCS #8 PEM block.
func (k *KeyPair) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k.Key)
	if err != nil {
		return nil, fmt.Errorf("certs: marshal key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// NewCA generates a self-signed CA valid from now (minus a small clock-skew
// margin) for validity.
func NewCA(cn string, validity time.Duration) (*KeyPair, error) {
	if cn == "" {
		return nil, errors.New("certs: CA common name is empty")
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	return issue(tmpl, nil)
}

// IssueHost issues a host certificate for name: Subject OU tlsconf.HostOU,
// CN name, SANs name, localhost, 127.0.0.1, ::1 and extraSANs (each an IP
// address or a DNS name), usable for both server and client auth since a
// host is both. Validity is capped at the CA's expiry.
func (ca *KeyPair) IssueHost(name string, extraSANs []string, validity time.Duration) (*KeyPair, error) {
	tmpl := ca.leafTemplate(pkix.Name{CommonName: name, OrganizationalUnit: []string{tlsconf.HostOU}}, validity)
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	seen := map[string]bool{}
	for _, san := range append([]string{name, "localhost", "127.0.0.1", "::1"}, extraSANs...) {
		if san == "" {
			return nil, errors.New("certs: empty SAN")
		}
		if ip := net.ParseIP(san); ip != nil {
			if !seen[ip.String()] {
				seen[ip.String()] = true
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			}
			continue
		}
		if !seen[san] {
			seen[san] = true
			tmpl.DNSNames = append(tmpl.DNSNames, san)
		}
	}
	return issue(tmpl, ca)
}

// IssueClient issues a client (user) certificate: CN name, client auth only.
// Validity is capped at the CA's expiry.
func (ca *KeyPair) IssueClient(name string, validity time.Duration) (*KeyPair, error) {
	tmpl := ca.leafTemplate(pkix.Name{CommonName: name}, validity)
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return issue(tmpl, ca)
}

func (ca *KeyPair) leafTemplate(subject pkix.Name, validity time.Duration) *x509.Certificate {
	now := time.Now()
	notAfter := now.Add(validity)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	return &x509.Certificate{
		Subject:               subject,
		NotBefore:             now.Add(-backdate),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
}

// issue generates a P-256 key and signs tmpl with parent (self-signed when
// parent is nil). The serial number is random.
func issue(tmpl *x509.Certificate, parent *KeyPair) (*KeyPair, error) {
	if tmpl.Subject.CommonName == "" {
		return nil, errors.New("certs: common name is empty")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: generate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("certs: serial number: %w", err)
	}
	tmpl.SerialNumber = serial
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent.Cert, parent.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		return nil, fmt.Errorf("certs: sign certificate for %q: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certs: parse issued certificate: %w", err)
	}
	return &KeyPair{Cert: cert, Key: key}, nil
}

// WriteFiles writes the certificate (mode 0644) and the key (mode 0600).
// Each file is written to a temporary file in the same directory and
// renamed into place, so a process reloading them never reads half a file.
func (k *KeyPair) WriteFiles(certPath, keyPath string) error {
	keyPEM, err := k.KeyPEM()
	if err != nil {
		return err
	}
	if err := writeFileAtomic(keyPath, keyPEM, 0o600); err != nil {
		return err
	}
	return writeFileAtomic(certPath, k.CertPEM(), 0o644)
}

// LoadKeyPair reads a PEM certificate (its first block) and an ECDSA key
// (PKCS #8 or SEC 1) and checks that they belong together.
func LoadKeyPair(certPath, keyPath string) (*KeyPair, error) {
	cb, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("certs: read certificate: %w", err)
	}
	blk, _ := pem.Decode(cb)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("certs: %s: no PEM certificate", certPath)
	}
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("certs: parse %s: %w", certPath, err)
	}
	kb, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("certs: read key: %w", err)
	}
	kblk, _ := pem.Decode(kb)
	if kblk == nil {
		return nil, fmt.Errorf("certs: %s: no PEM key", keyPath)
	}
	var key *ecdsa.PrivateKey
	switch kblk.Type {
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(kblk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certs: parse %s: %w", keyPath, err)
		}
		var ok bool
		if key, ok = k.(*ecdsa.PrivateKey); !ok {
			return nil, fmt.Errorf("certs: %s: key is %T, want ECDSA", keyPath, k)
		}
	case "EC PRIVATE KEY":
		if key, err = x509.ParseECPrivateKey(kblk.Bytes); err != nil {
			return nil, fmt.Errorf("certs: parse %s: %w", keyPath, err)
		}
	default:
		return nil, fmt.Errorf("certs: %s: unexpected PEM block %q", keyPath, kblk.Type)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("certs: key %s does not match certificate %s", keyPath, certPath)
	}
	return &KeyPair{Cert: cert, Key: key}, nil
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("certs: write %s: %w", path, err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		if rmErr := os.Remove(tmp); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			err = errors.Join(err, rmErr)
		}
		return fmt.Errorf("certs: write %s: %w", path, err)
	}
	if err := f.Chmod(mode); err != nil {
		return fail(errors.Join(err, f.Close()))
	}
	if _, err := f.Write(data); err != nil {
		return fail(errors.Join(err, f.Close()))
	}
	if err := f.Sync(); err != nil {
		return fail(errors.Join(err, f.Close()))
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(err)
	}
	return nil
}
