// grpc.go: the limits for a gRPC server whose listener the process does
// not create (protoactor's remote): transport credentials whose server
// handshake takes a connection slot or refuses the connection.

package netlimit

import (
	"net"

	"google.golang.org/grpc/credentials"
)

// Credentials returns inner (e.g. insecure.NewCredentials()) with every
// server handshake counted against l under name: a connection over a limit
// fails its handshake with ErrRefused and grpc-go closes it at once. A
// connection within the limits gives its slot back when gRPC closes it,
// or at its first read or write error. Client handshakes are inner's.
//
// grpc-go retries its own Accept failures (EMFILE included) with a pause,
// so the listener it serves needs no wrapping for that.
func (l *Limiter) Credentials(name string, inner credentials.TransportCredentials) credentials.TransportCredentials {
	return &limitedCreds{TransportCredentials: inner, lim: l, name: name}
}

type limitedCreds struct {
	credentials.TransportCredentials
	lim  *Limiter
	name string
}

// ServerHandshake takes a slot for rawConn, then runs the inner handshake.
func (c *limitedCreds) ServerHandshake(rawConn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	release := c.lim.acquire(c.name, rawConn.RemoteAddr(), 1)
	if release == nil {
		return nil, nil, ErrRefused
	}
	conn, info, err := c.TransportCredentials.ServerHandshake(rawConn)
	if err != nil {
		release()
		return nil, nil, err
	}
	return &errorReleasingConn{Conn{Conn: conn, release: release}}, info, nil
}

// Clone returns a copy sharing the Limiter.
func (c *limitedCreds) Clone() credentials.TransportCredentials {
	return &limitedCreds{TransportCredentials: c.TransportCredentials.Clone(), lim: c.lim, name: c.name}
}
