// listener.go: the limited net.Listener (Limiter.Listener) and the
// connections it returns.

package netlimit

import (
	"net"
	"sync"
	"time"
)

// ListenerOption adjusts a Listener.
type ListenerOption func(*listener)

// WithWeight makes each connection of the listener count n times against
// the limits (n >= 1): a listener that relays each connection to another
// local server holds three descriptors per connection.
func WithWeight(n int) ListenerOption {
	return func(ln *listener) { ln.weight = max(n, 1) }
}

// Listener returns inner limited by l under name (a label of the metrics
// and logs; listeners may share one name). Accept returns only
// connections within the limits; the others are closed as they arrive.
// Accept failures for lack of descriptors or memory are retried after a
// pause; Close ends such a pause. The returned connections give their
// slot back on Close (the first call), so the caller must close every
// connection it accepts, as servers do.
func (l *Limiter) Listener(name string, inner net.Listener, opts ...ListenerOption) net.Listener {
	ln := &listener{Listener: inner, lim: l, name: name, weight: 1, closed: make(chan struct{})}
	for _, o := range opts {
		o(ln)
	}
	return ln
}

type listener struct {
	net.Listener
	lim       *Limiter
	name      string
	weight    int
	closed    chan struct{}
	closeOnce sync.Once
}

// Accept waits for the next connection within the limits.
func (ln *listener) Accept() (net.Conn, error) {
	var pause time.Duration
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			if !retryableAccept(err) {
				return nil, err
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			ln.lim.acceptFailed(ln.name, err, pause)
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-ln.closed:
				t.Stop()
				return nil, net.ErrClosed
			}
			continue
		}
		pause = 0
		release := ln.lim.acquire(ln.name, c.RemoteAddr(), ln.weight)
		if release == nil {
			// Refused: counted and logged by acquire. The close error
			// says nothing about the listener.
			_ = c.Close()
			continue
		}
		return &Conn{Conn: c, release: release}, nil
	}
}

// Close closes the listener, ending a pause in Accept.
func (ln *listener) Close() error {
	ln.closeOnce.Do(func() { close(ln.closed) })
	return ln.Listener.Close()
}

// Conn is a connection within the limits. Close gives its slot back.
type Conn struct {
	net.Conn
	release func()
}

// Close closes the connection and gives its slot back (once).
func (c *Conn) Close() error {
	c.release()
	return c.Conn.Close()
}

// NetConn returns the underlying connection (for splice-aware copies);
// closing it directly does not give the slot back.
func (c *Conn) NetConn() net.Conn { return c.Conn }

// errorReleasingConn is a Conn that also gives its slot back on its first
// read or write error: the gRPC server closes, on some handshake failures,
// the raw connection it accepted instead of the one the credentials
// returned, and after any I/O error it drops the connection anyway.
type errorReleasingConn struct {
	Conn
}

func (c *errorReleasingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Conn.Read(b)
	if err != nil {
		c.release()
	}
	return n, err
}

func (c *errorReleasingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Conn.Write(b)
	if err != nil {
		c.release()
	}
	return n, err
}
