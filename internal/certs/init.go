// init.go: Init lays out a CA, host and client certificates in a directory
// (`actorlog certs init`), reusing a CA already there.

package certs

import (
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/actorlog/actorlog/internal/tlsconf"
)

// CA file names inside an Init directory.
const (
	CACertFile = "ca.crt"
	CAKeyFile  = "ca.key"
)

// InitOptions says what Init creates.
type InitOptions struct {
	Dir        string
	Hosts      []string      // host names: DIR/<host>.crt, DIR/<host>.key
	Clients    []string      // client (user) names: DIR/<client>.crt, DIR/<client>.key
	SANs       []string      // extra DNS names or IP addresses for every host certificate
	Validity   time.Duration // host and client certificates; 0 means DefaultValidity
	CAValidity time.Duration // a new CA; 0 means DefaultCAValidity
	// NewCA replaces a CA already in Dir (and so re-issues every named
	// certificate). Without it an existing CA is reused.
	NewCA bool
	// Force re-issues host and client certificates that already exist.
	// Without it they are kept (and must verify against the CA).
	Force bool
}

// Status says what Init did with one file pair.
type Status string

// The statuses of InitResult entries.
const (
	StatusCreated  Status = "created"
	StatusReissued Status = "re-issued"
	StatusKept     Status = "kept"
	StatusReused   Status = "reused" // the CA only
)

// Entry is one certificate and key in the directory.
type Entry struct {
	Kind     string // "ca", "host" or "client"
	Name     string
	CertPath string
	KeyPath  string
	Status   Status
	Cert     *x509.Certificate
}

// InitResult lists what Init wrote or kept: the CA first, then hosts, then
// clients, in the order given.
type InitResult struct {
	CA      Entry
	Entries []Entry
}

// ValidateName checks a host or client name: non-empty, at most 64
// characters (the X.509 Common Name limit), made of ASCII letters, digits,
// '.', '-', '_' and '@', not starting with '.' or '-', and not "ca" (the CA's
// file names). It becomes a file name and a Common Name.
func ValidateName(name string) error {
	switch {
	case name == "":
		return errors.New("empty name")
	case len(name) > 64:
		return fmt.Errorf("name %q is longer than 64 characters", name)
	case strings.ContainsAny(name, `/\`):
		return fmt.Errorf("name %q contains a path separator", name)
	case name[0] == '.' || name[0] == '-':
		return fmt.Errorf("name %q starts with %q", name, name[0])
	case name == "ca":
		return errors.New(`name "ca" is reserved for the CA files`)
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(".-_@", r)
		if !ok {
			return fmt.Errorf("name %q contains %q (allowed: letters, digits, '.', '-', '_', '@')", name, r)
		}
	}
	return nil
}

// validate checks every name (no duplicates across hosts and clients) and
// the SANs before anything is written.
func (o *InitOptions) validate() error {
	if o.Dir == "" {
		return errors.New("certs: no directory given")
	}
	seen := map[string]string{}
	for _, list := range []struct {
		kind  string
		names []string
	}{{"host", o.Hosts}, {"client", o.Clients}} {
		for _, n := range list.names {
			if err := ValidateName(n); err != nil {
				return fmt.Errorf("certs: %s: %w", list.kind, err)
			}
			key := strings.ToLower(n) // file names may be case-insensitive
			if prev, dup := seen[key]; dup {
				return fmt.Errorf("certs: %s name %q duplicates %s (names are compared ignoring case: they are file names)", list.kind, n, prev)
			}
			seen[key] = fmt.Sprintf("%s name %q", list.kind, n)
		}
	}
	for _, s := range o.SANs {
		if strings.TrimSpace(s) == "" || strings.ContainsAny(s, " \t/\\,") {
			return fmt.Errorf("certs: bad SAN %q", s)
		}
	}
	if o.Validity < 0 || o.CAValidity < 0 {
		return errors.New("certs: validity must be positive")
	}
	return nil
}

// Init creates or reuses the CA in o.Dir (DIR/ca.crt, DIR/ca.key) and
// issues the host and client certificates o names. Keys are written with
// mode 0600, certificates 0644, the directory is created 0700. An existing
// CA is reused unless o.NewCA; a CA with only one of its two files present
// is an error. Names are validated before anything is written.
func Init(o InitOptions) (*InitResult, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.Validity == 0 {
		o.Validity = DefaultValidity
	}
	if o.CAValidity == 0 {
		o.CAValidity = DefaultCAValidity
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("certs: create %s: %w", o.Dir, err)
	}
	res := &InitResult{}
	ca, caEntry, err := loadOrCreateCA(o)
	if err != nil {
		return nil, err
	}
	res.CA = caEntry
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	issueAll := func(kind string, names []string, issueFn func(string) (*KeyPair, error)) error {
		for _, n := range names {
			e := Entry{Kind: kind, Name: n, CertPath: filepath.Join(o.Dir, n+".crt"), KeyPath: filepath.Join(o.Dir, n+".key")}
			reissue := o.Force || caEntry.Status != StatusReused
			exists, err := anyExists(e.CertPath, e.KeyPath)
			if err != nil {
				return err
			}
			if exists && !reissue {
				existing, _, err := existingPair(e.CertPath, e.KeyPath)
				if err != nil {
					return fmt.Errorf("%w (use --force to re-issue it)", err)
				}
				if _, err := existing.Cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
					return fmt.Errorf("certs: %s exists but does not verify against %s (use --force to re-issue it): %w", e.CertPath, caEntry.CertPath, err)
				}
				if err := o.matches(kind, n, existing.Cert); err != nil {
					return fmt.Errorf("certs: %s exists but %w (use --force to re-issue it)", e.CertPath, err)
				}
				e.Status, e.Cert = StatusKept, existing.Cert
				res.Entries = append(res.Entries, e)
				continue
			}
			kp, err := issueFn(n)
			if err != nil {
				return err
			}
			if err := kp.WriteFiles(e.CertPath, e.KeyPath); err != nil {
				return err
			}
			e.Status, e.Cert = StatusCreated, kp.Cert
			if exists {
				e.Status = StatusReissued
			}
			res.Entries = append(res.Entries, e)
		}
		return nil
	}
	if err := issueAll("host", o.Hosts, func(n string) (*KeyPair, error) { return ca.IssueHost(n, o.SANs, o.Validity) }); err != nil {
		return res, err
	}
	if err := issueAll("client", o.Clients, func(n string) (*KeyPair, error) { return ca.IssueClient(n, o.Validity) }); err != nil {
		return res, err
	}
	return res, nil
}

// matches checks that an existing certificate is what Init would issue for
// name: the same kind of principal and, for a host, every requested SAN.
func (o *InitOptions) matches(kind, name string, cert *x509.Certificate) error {
	p, err := tlsconf.PrincipalFromCert(cert)
	if err != nil {
		return fmt.Errorf("names no principal: %w", err)
	}
	want := tlsconf.Principal{Kind: tlsconf.PrincipalUser, Name: name}
	if kind == "host" {
		want.Kind = tlsconf.PrincipalHost
	}
	if p != want {
		return fmt.Errorf("is for %s, not %s", p, want)
	}
	if kind != "host" {
		return nil
	}
	for _, san := range o.SANs {
		if err := cert.VerifyHostname(san); err != nil {
			return fmt.Errorf("lacks SAN %q", san)
		}
	}
	return nil
}

// loadOrCreateCA reuses DIR/ca.crt + DIR/ca.key, or creates them when
// neither exists or o.NewCA is set.
func loadOrCreateCA(o InitOptions) (*KeyPair, Entry, error) {
	e := Entry{Kind: "ca", Name: DefaultCAName, CertPath: filepath.Join(o.Dir, CACertFile), KeyPath: filepath.Join(o.Dir, CAKeyFile)}
	exists, err := anyExists(e.CertPath, e.KeyPath)
	if err != nil {
		return nil, e, err
	}
	if exists && !o.NewCA {
		existing, _, err := existingPair(e.CertPath, e.KeyPath)
		if err != nil {
			return nil, e, fmt.Errorf("%w (use --new-ca to replace the CA)", err)
		}
		if !existing.Cert.IsCA {
			return nil, e, fmt.Errorf("certs: %s is not a CA certificate", e.CertPath)
		}
		if time.Now().After(existing.Cert.NotAfter) {
			return nil, e, fmt.Errorf("certs: CA %s expired at %s (use --new-ca to replace it)", e.CertPath, existing.Cert.NotAfter.UTC().Format(time.RFC3339))
		}
		e.Name, e.Status, e.Cert = existing.Cert.Subject.CommonName, StatusReused, existing.Cert
		return existing, e, nil
	}
	ca, err := NewCA(DefaultCAName, o.CAValidity)
	if err != nil {
		return nil, e, err
	}
	if err := ca.WriteFiles(e.CertPath, e.KeyPath); err != nil {
		return nil, e, err
	}
	e.Status, e.Cert = StatusCreated, ca.Cert
	if exists {
		e.Status = StatusReissued
	}
	return ca, e, nil
}

// existingPair loads certPath+keyPath if both exist. Neither existing is
// (nil, false, nil); only one existing, or files that do not load, is an
// error.
func existingPair(certPath, keyPath string) (*KeyPair, bool, error) {
	certOK, err := fileExists(certPath)
	if err != nil {
		return nil, false, err
	}
	keyOK, err := fileExists(keyPath)
	if err != nil {
		return nil, false, err
	}
	switch {
	case !certOK && !keyOK:
		return nil, false, nil
	case certOK != keyOK:
		have, missing := certPath, keyPath
		if keyOK {
			have, missing = keyPath, certPath
		}
		return nil, false, fmt.Errorf("certs: %s exists but %s does not", have, missing)
	}
	kp, err := LoadKeyPair(certPath, keyPath)
	if err != nil {
		return nil, true, err
	}
	return kp, true, nil
}

// anyExists reports whether either file exists.
func anyExists(a, b string) (bool, error) {
	aOK, err := fileExists(a)
	if err != nil || aOK {
		return aOK, err
	}
	return fileExists(b)
}

func fileExists(path string) (bool, error) {
	_, err := os.Stat(path)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return false, fmt.Errorf("certs: %w", err)
}
