// remotetls.go: TLS on the actor remote and the principal of each message
// (issue 16, DESIGN §10).
//
// With WithTLS, the remote's gRPC server speaks TLS only (a plain-text
// peer fails its handshake), verifies client certificates against the
// Reloader's CA pool, and its dialled connections (to other hosts, and a
// host's connections back to a client's endpoint) present the Reloader's
// certificate. Reloads apply to new connections.
//
// The server side names the peer of each connection (tlsconf's convention:
// "Host:<name>" for a host certificate, "User:<CN>" otherwise, "User:ANONYMOUS"
// without a verified certificate or without TLS) and the guard
// (remoteguard.go) writes it into the header of every envelope it lets
// through, under PrincipalHeader, overwriting anything the sender put
// there. Actors read it with PrincipalOf. A message without the header did
// not come over the remote: it was sent inside the process.
//
// With TLS on, the guard also drops host-only requests (hostOnlyKind) whose
// principal is not a host, and, with WithHostNames, those naming a host id
// other than the principal's host.
//
// Peer verification when dialling: a peer presenting a host certificate
// must have the dialled host name or IP among its SANs; a peer presenting a
// user certificate is a client's endpoint (client certificates carry no
// SANs, and a host dials a client only to answer it), so only its chain is
// verified. An attacker with a valid user certificate who can take over a
// host's address could therefore receive what is sent to that address;
// the server side never grants such a peer a host principal.

package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/grpc/credentials"

	"github.com/actorlog/actorlog/internal/tlsconf"
)

// PrincipalHeader is the envelope header key under which the remote's
// server stamps the authenticated principal of the sending connection
// ("Host:host1", "User:app", AnonymousPrincipal).
const PrincipalHeader = "actorlog-principal"

// AnonymousPrincipal is the principal of a connection without a verified
// certificate (Kafka's User:ANONYMOUS), and of every connection of a
// remote without TLS.
const AnonymousPrincipal = "User:ANONYMOUS"

// anonymous is AnonymousPrincipal as a tlsconf.Principal.
var anonymous = tlsconf.Principal{Kind: tlsconf.PrincipalUser, Name: "ANONYMOUS"}

// remoteTLS is WithTLS's setting.
type remoteTLS struct {
	r          *tlsconf.Reloader
	clientAuth tls.ClientAuthType
}

// WithTLS makes the remote speak TLS with r's certificate, on its server
// and on the connections it dials. clientAuth is the server's client
// certificate policy and must verify certificates:
// tls.RequireAndVerifyClientCert (hosts; a client without a certificate is
// refused) or tls.VerifyClientCertIfGiven (one without is served as
// AnonymousPrincipal). Other policies are an error of RemoteConfig: an
// unverified certificate cannot name a principal.
func WithTLS(r *tlsconf.Reloader, clientAuth tls.ClientAuthType) RemoteOption {
	return func(o *remoteOptions) { o.tls = &remoteTLS{r: r, clientAuth: clientAuth} }
}

// WithHostNames gives the guard the name of each host id (lookup answers
// ok false for an unknown id), so that with TLS a host-only request naming
// host id N is accepted only from the principal Host:<name of N>. An id
// lookup does not know passes for any host principal (left to the actors'
// checks: a host that has just registered may not be known yet). Without
// it, any host principal may send them. lookup is called on gRPC
// goroutines and must be safe for concurrent use and fast.
func WithHostNames(lookup func(hostID int32) (name string, ok bool)) RemoteOption {
	return func(o *remoteOptions) { o.hostNames = lookup }
}

// validate checks the setting before RemoteConfig uses it.
func (t *remoteTLS) validate() error {
	if t.r == nil {
		return errors.New("TLS: nil certificate reloader")
	}
	switch t.clientAuth {
	case tls.RequireAndVerifyClientCert, tls.VerifyClientCertIfGiven:
		return nil
	}
	return fmt.Errorf("TLS: client auth %v does not verify client certificates (use RequireAndVerifyClientCert or VerifyClientCertIfGiven)", t.clientAuth)
}

// serverCredentials returns the server's TLS credentials (not yet wrapped
// by the connection limiter).
func (t *remoteTLS) serverCredentials() credentials.TransportCredentials {
	cfg := t.r.ServerConfig(t.clientAuth)
	// Set on the config ServerConfig returned: its per-handshake clone
	// copies it (tlsconf.ServerConfig).
	cfg.NextProtos = []string{"h2"}
	return credentials.NewTLS(cfg)
}

// dialCredentials returns the credentials the remote dials peers with.
func (t *remoteTLS) dialCredentials() credentials.TransportCredentials {
	return &dialCreds{r: t.r}
}

// dialCreds are TLS client credentials that verify each peer against the
// address it was dialled at (see the file comment). Safe for concurrent
// use.
type dialCreds struct {
	r *tlsconf.Reloader
}

// ClientHandshake runs a TLS handshake on rawConn, dialled at authority
// ("host:port"), presenting the current certificate.
func (c *dialCreds) ClientHandshake(ctx context.Context, authority string, rawConn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	host, _, err := net.SplitHostPort(authority)
	if err != nil {
		host = authority
	}
	cfg := c.r.ClientConfig(host)
	cfg.NextProtos = []string{"h2"}
	cfg.VerifyConnection = func(cs tls.ConnectionState) error { return verifyDialedPeer(c.r.Pool(), cs, host) }
	conn, info, err := credentials.NewTLS(cfg).ClientHandshake(ctx, authority, rawConn)
	if err != nil {
		return nil, nil, fmt.Errorf("remote TLS handshake with %s: %w", authority, err)
	}
	return conn, info, nil
}

// ServerHandshake is not used: the server has credentials of its own.
func (c *dialCreds) ServerHandshake(net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("client: dial credentials cannot serve")
}

// Info describes the protocol.
func (c *dialCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "tls", SecurityVersion: "1.2"}
}

// Clone returns a copy sharing the Reloader.
func (c *dialCreds) Clone() credentials.TransportCredentials { return &dialCreds{r: c.r} }

// OverrideServerName is deprecated in gRPC and unused: each dial verifies
// the name it dialled.
func (c *dialCreds) OverrideServerName(string) error { return nil }

// verifyDialedPeer verifies the certificate chain a dialled peer presented
// against pool; a host certificate must also name host (the dialled DNS
// name or IP) among its SANs. A user certificate (a client's endpoint)
// must be valid for client authentication.
func verifyDialedPeer(pool *x509.CertPool, cs tls.ConnectionState, host string) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("remote peer sent no certificate")
	}
	leaf := cs.PeerCertificates[0]
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	opts := x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if slices.Contains(leaf.Subject.OrganizationalUnit, tlsconf.HostOU) {
		if host == "" {
			return errors.New("remote peer: no name to verify the host certificate against")
		}
		opts.DNSName = host
		opts.KeyUsages = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	if _, err := leaf.Verify(opts); err != nil {
		return fmt.Errorf("verify remote peer %q (%s): %w", host, leaf.Subject, err)
	}
	if _, err := tlsconf.PrincipalFromCert(leaf); err != nil {
		return fmt.Errorf("remote peer %q: %w", host, err)
	}
	return nil
}

// connPrincipal names the peer of a server connection from its gRPC auth
// info: the principal of a verified TLS certificate, else anonymous.
func connPrincipal(info credentials.AuthInfo) tlsconf.Principal {
	ti, ok := info.(credentials.TLSInfo)
	if !ok {
		return anonymous
	}
	p, err := tlsconf.PrincipalFromConnState(ti.State)
	if err != nil {
		return anonymous
	}
	return p
}

// PrincipalOf returns the principal the remote's server stamped on the
// message ctx is handling (PrincipalHeader). ok is false when the message
// carries none: it was sent from inside this process (or the header is
// not a principal, which only code in this process can have set). Call it
// from the actor's Receive.
func PrincipalOf(ctx actor.Context) (tlsconf.Principal, bool) {
	return PrincipalFromHeader(ctx.MessageHeader())
}

// PrincipalFromHeader parses PrincipalHeader out of a message header (nil
// allowed); see PrincipalOf.
func PrincipalFromHeader(h actor.ReadonlyMessageHeader) (tlsconf.Principal, bool) {
	if h == nil {
		return tlsconf.Principal{}, false
	}
	return parsePrincipal(h.Get(PrincipalHeader))
}

// parsePrincipal parses "Host:name" or "User:name".
func parsePrincipal(s string) (tlsconf.Principal, bool) {
	kind, name, ok := strings.Cut(s, ":")
	if !ok || name == "" {
		return tlsconf.Principal{}, false
	}
	switch k := tlsconf.PrincipalKind(kind); k {
	case tlsconf.PrincipalHost, tlsconf.PrincipalUser:
		return tlsconf.Principal{Kind: k, Name: name}, true
	}
	return tlsconf.Principal{}, false
}
