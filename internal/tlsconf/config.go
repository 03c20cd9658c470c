// config.go: the server and client tls.Configs over a Reloader. Both read
// the Reloader's current material at each handshake.

package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
)

// ServerConfig returns a server config that presents the current
// certificate and, for the verifying client-auth types
// (tls.VerifyClientCertIfGiven, tls.RequireAndVerifyClientCert), verifies
// client certificates against the current CA pool, so the connection state
// carries VerifiedChains for PrincipalFromConnState. A verified client
// certificate that names no principal (empty Common Name) is refused.
//
// The config has MinVersion TLS 1.2 and session tickets disabled, so every
// connection is verified against the pool current at its handshake (a
// resumed session would skip that). The CA pool is applied per handshake
// through GetConfigForClient, which clones the returned config at that
// moment: set fields such as NextProtos on the returned config itself (for
// gRPC, NextProtos = []string{"h2"}) before handing it out, because changes
// made to a copy of it are not seen by the handshake.
func (r *Reloader) ServerConfig(clientAuth tls.ClientAuthType) *tls.Config {
	base := &tls.Config{
		MinVersion:             tls.VersionTLS12,
		ClientAuth:             clientAuth,
		ClientCAs:              r.Pool(),
		SessionTicketsDisabled: true,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return r.cur.Load().cert, nil
		},
		VerifyConnection: verifyClientPrincipal,
	}
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		m := r.cur.Load()
		c := base.Clone()
		c.GetConfigForClient = nil
		c.ClientCAs = m.pool
		c.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return m.cert, nil }
		return c, nil
	}
	return base
}

// verifyClientPrincipal refuses a verified client certificate without a
// principal. Connections without a client certificate are left to the
// ClientAuth policy.
func verifyClientPrincipal(cs tls.ConnectionState) error {
	if len(cs.VerifiedChains) == 0 {
		return nil
	}
	if _, err := PrincipalFromCert(cs.VerifiedChains[0][0]); err != nil {
		return fmt.Errorf("tlsconf: client certificate refused: %w", err)
	}
	return nil
}

// ClientConfig returns a client config that presents the current
// certificate when the server asks for one and verifies the server against
// the current CA pool and serverName, a DNS name or IP address that must be
// among the server certificate's SANs. With an empty serverName the name
// sent as SNI is checked instead: tls.Dial and gRPC set the config's
// ServerName from the address they dial, but TLS sends no SNI for an IP
// address, so to reach a server by IP pass the IP as serverName. A
// handshake with no name to check fails.
//
// The standard verification is replaced by VerifyConnection so that the
// pool can change after a Reload (InsecureSkipVerify is set for that reason
// only: VerifyConnection performs the full chain and name check). As a
// consequence the client's ConnectionState has no VerifiedChains; the
// server's certificate, once the handshake succeeded, is PeerCertificates[0].
func (r *Reloader) ClientConfig(serverName string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		ServerName: serverName,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return r.cur.Load().cert, nil
		},
		InsecureSkipVerify: true, // replaced by VerifyConnection below
		VerifyConnection: func(cs tls.ConnectionState) error {
			name := serverName
			if name == "" {
				name = cs.ServerName
			}
			return r.verifyServer(cs, name)
		},
	}
}

// verifyServer checks the server's chain against the current pool and its
// SANs against name.
func (r *Reloader) verifyServer(cs tls.ConnectionState, name string) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tlsconf: server sent no certificate")
	}
	if name == "" {
		return errors.New("tlsconf: no server name to verify the server certificate against (pass it to ClientConfig for an IP address)")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	if _, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
		Roots:         r.Pool(),
		Intermediates: inter,
		DNSName:       name,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}); err != nil {
		return fmt.Errorf("tlsconf: verify server %q: %w", name, err)
	}
	return nil
}
