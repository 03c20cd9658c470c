// tls.go: TLS on the listener (issue 16). With Config.TLS set, Serve wraps
// every accepted connection in tls.Server; the connection's reader runs
// the handshake first, within Config.TLSHandshakeTimeout, before reading
// any request. A failed or timed-out handshake (a plain-text client, a
// client certificate from another CA, a scanner) closes the connection,
// with a log line rate-limited like the other refused input. A verified
// client certificate (tls.VerifyClientCertIfGiven or
// tls.RequireAndVerifyClientCert) names the connection's principal by the
// tlsconf convention (User:<CN>, or Host:<CN> for a host certificate),
// unless SASL authenticates it later.

package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"time"

	"github.com/actorlog/actorlog/internal/tlsconf"
)

// DefaultTLSHandshakeTimeout is Config.TLSHandshakeTimeout's default.
const DefaultTLSHandshakeTimeout = 10 * time.Second

// handshake completes the TLS handshake of a TLS connection and records
// the principal of its verified client certificate. It returns false when
// the connection is to close (the failure is logged). Runs on the reader
// goroutine before the first read.
func (c *conn) handshake() bool {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return true
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.srv.cfg.TLSHandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		if c.ctx.Err() == nil {
			c.srv.warn(reasonTLS, c.fields(nil), "closing Kafka connection: TLS handshake: "+err.Error())
		}
		return false
	}
	cs := tc.ConnectionState()
	p, err := tlsconf.PrincipalFromConnState(cs)
	switch {
	case err == nil:
		c.principal.Store(&p)
	case len(cs.VerifiedChains) > 0 && !errors.Is(err, tlsconf.ErrNoPrincipal):
		// A verified certificate that names nobody is refused by
		// tlsconf's VerifyConnection already; this is a config that
		// lacks it.
		c.srv.warn(reasonTLS, c.fields(nil), "closing Kafka connection: client certificate: "+err.Error())
		return false
	}
	return true
}
