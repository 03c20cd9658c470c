// reloader.go: the certificate, key and CA pool read from PEM files,
// validated, and swapped atomically on Reload.

package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
)

// Files names the PEM files of one identity: its certificate chain (leaf
// first), its private key, and the CA certificates peers must chain to.
type Files struct {
	Cert, Key, CA string
}

// material is one validated generation of the files. It is immutable once
// published.
type material struct {
	cert *tls.Certificate // Leaf is set
	pool *x509.CertPool
	cas  []*x509.Certificate
}

// Reloader holds the current certificate, key and CA pool. It is safe for
// concurrent use: handshakes read the current material without locks,
// Reload replaces it atomically, and concurrent Reloads are serialized.
type Reloader struct {
	files Files
	log   logrus.FieldLogger
	now   func() time.Time // the clock for validity checks

	mu  sync.Mutex // serializes Reload
	cur atomic.Pointer[material]
}

// NewReloader reads and validates f (see Reload). log receives one line per
// load; nil discards them.
func NewReloader(f Files, log logrus.FieldLogger) (*Reloader, error) {
	if f.Cert == "" || f.Key == "" || f.CA == "" {
		return nil, fmt.Errorf("tlsconf: certificate, key and CA files are all required (cert=%q key=%q ca=%q)", f.Cert, f.Key, f.CA)
	}
	if log == nil {
		l := logrus.New()
		l.Out = io.Discard
		log = l
	}
	r := &Reloader{files: f, log: log.WithField("component", "tlsconf"), now: time.Now}
	if err := r.Reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// Reload re-reads the files, validates them and makes them current for new
// handshakes. On error the previous material stays current and the error
// (wrapping the cause) is returned.
func (r *Reloader) Reload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, err := load(r.files, r.now())
	if err != nil {
		err = fmt.Errorf("tlsconf: load %s: %w", r.files.Cert, err)
		if r.cur.Load() != nil {
			r.log.WithError(err).Warn("TLS reload failed; keeping the current certificate")
		}
		return err
	}
	r.cur.Store(m)
	leaf := m.cert.Leaf
	r.log.WithFields(logrus.Fields{
		"cert": r.files.Cert, "subject": leaf.Subject.String(), "serial": leaf.SerialNumber.String(),
		"not_after": leaf.NotAfter.UTC().Format(time.RFC3339), "cas": len(m.cas),
	}).Info("TLS certificate loaded")
	return nil
}

// Leaf returns the current certificate. The caller must not modify it.
func (r *Reloader) Leaf() *x509.Certificate { return r.cur.Load().cert.Leaf }

// Pool returns the current CA pool. The caller must not modify it.
func (r *Reloader) Pool() *x509.CertPool { return r.cur.Load().pool }

// load reads and validates one generation of f at time now.
func load(f Files, now time.Time) (*material, error) {
	certPEM, err := os.ReadFile(f.Cert)
	if err != nil {
		return nil, fmt.Errorf("read certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(f.Key)
	if err != nil {
		return nil, fmt.Errorf("read key: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("certificate %s with key %s: %w", f.Cert, f.Key, err)
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("parse certificate: %w", err)
		}
	}
	leaf := cert.Leaf
	if now.Before(leaf.NotBefore) {
		return nil, fmt.Errorf("certificate %s is not valid before %s", leaf.Subject, leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	if now.After(leaf.NotAfter) {
		return nil, fmt.Errorf("certificate %s expired at %s", leaf.Subject, leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	cas, err := readCerts(f.CA)
	if err != nil {
		return nil, fmt.Errorf("CA file %s: %w", f.CA, err)
	}
	pool := x509.NewCertPool()
	for _, ca := range cas {
		pool.AddCert(ca)
	}
	inter := x509.NewCertPool()
	for _, der := range cert.Certificate[1:] {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("parse intermediate certificate: %w", err)
		}
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{
		Roots: pool, Intermediates: inter, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	}); err != nil {
		return nil, fmt.Errorf("certificate %s does not verify against CA file %s: %w", leaf.Subject, f.CA, err)
	}
	return &material{cert: &cert, pool: pool, cas: cas}, nil
}

// readCerts parses every CERTIFICATE block of a PEM file; anything that does
// not parse is an error (x509.CertPool.AppendCertsFromPEM would skip it).
func readCerts(path string) ([]*x509.Certificate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("unexpected PEM block %q", blk.Type)
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse certificate %d: %w", len(out)+1, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM certificates found")
	}
	return out, nil
}
