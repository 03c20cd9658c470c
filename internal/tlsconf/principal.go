// principal.go: the identity of a TLS peer (Host:NAME or User:NAME) and how
// it is read from a certificate or a verified connection.

package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
)

// HostOU is the Subject Organizational Unit that marks a host certificate.
const HostOU = "actorlog-host"

// PrincipalKind says what a principal is: a host of the cluster or a user.
type PrincipalKind string

// The principal kinds, spelled as in Kafka ACLs' principal prefixes.
const (
	PrincipalHost PrincipalKind = "Host"
	PrincipalUser PrincipalKind = "User"
)

// Principal is an authenticated identity. String gives the Kafka-style
// "Host:host1" or "User:admin".
type Principal struct {
	Kind PrincipalKind
	Name string
}

// String returns Kind:Name, e.g. "Host:host1".
func (p Principal) String() string { return string(p.Kind) + ":" + p.Name }

// IsHost reports whether p is a host of the cluster.
func (p Principal) IsHost() bool { return p.Kind == PrincipalHost }

// ErrNoPrincipal is returned when a certificate or connection names no
// principal.
var ErrNoPrincipal = errors.New("tlsconf: no principal")

// PrincipalFromCert names the principal of cert by the package's
// convention: HostOU in the Subject makes it a host named by the Common
// Name, otherwise it is a user named by the Common Name. An empty Common
// Name is an error wrapping ErrNoPrincipal. The certificate must already
// have been verified; this function only reads it.
func PrincipalFromCert(cert *x509.Certificate) (Principal, error) {
	if cert == nil {
		return Principal{}, fmt.Errorf("%w: nil certificate", ErrNoPrincipal)
	}
	cn := cert.Subject.CommonName
	if cn == "" {
		return Principal{}, fmt.Errorf("%w: certificate %s (serial %s) has an empty common name", ErrNoPrincipal, cert.Subject, cert.SerialNumber)
	}
	if slices.Contains(cert.Subject.OrganizationalUnit, HostOU) {
		return Principal{Kind: PrincipalHost, Name: cn}, nil
	}
	return Principal{Kind: PrincipalUser, Name: cn}, nil
}

// PrincipalFromConnState names the peer of a handshake-complete connection
// from the leaf of its first verified chain. A connection without a
// verified chain (no client certificate, or a config that did not verify
// it) is an error wrapping ErrNoPrincipal: unverified certificates are
// never trusted. Connections served with ServerConfig carry verified
// chains; ClientConfig verifies the server itself (see ClientConfig), so on
// the client side use PrincipalFromCert on PeerCertificates[0].
func PrincipalFromConnState(cs tls.ConnectionState) (Principal, error) {
	if !cs.HandshakeComplete {
		return Principal{}, fmt.Errorf("%w: handshake not complete", ErrNoPrincipal)
	}
	if len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return Principal{}, fmt.Errorf("%w: connection has no verified peer certificate", ErrNoPrincipal)
	}
	return PrincipalFromCert(cs.VerifiedChains[0][0])
}
