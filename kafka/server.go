// server.go holds the Server: it accepts connections from the listeners it
// is given, starts each connection's reader and writer, and closes
// everything on Close.

package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/cluster/netlimit"
	"github.com/actorlog/actorlog/internal/acl"
)

// ErrServerClosed is what Serve returns after Close.
var ErrServerClosed = errors.New("kafka: server closed")

// Server is a Kafka wire-protocol listener: it serves the APIs of the API
// table (see the package doc) on every listener passed to Serve, asking its
// Backend. Safe for concurrent use; Serve may run on several listeners at
// once.
type Server struct {
	cfg     Config
	table   *table // the APIs cfg enables, fixed at NewServer
	log     *logrus.Entry
	limiter netlimit.LogLimiter

	// ctx is done once Close has begun; every connection's context derives
	// from it.
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}

	// audit logs refused requests; nil without an authorizer.
	audit *acl.Audit

	// wg counts every goroutine the server started: readers, writers and
	// asynchronous handlers. Close waits for it.
	wg sync.WaitGroup
}

// NewServer returns a Server for cfg, its limits defaulted and validated.
func NewServer(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg:       cfg,
		table:     newTable(&cfg),
		log:       cfg.Logger.WithField("component", "kafka"),
		ctx:       ctx,
		cancel:    cancel,
		listeners: map[net.Listener]struct{}{},
		conns:     map[*conn]struct{}{},
	}
	s.limiter.Every = cfg.LogEvery
	if cfg.Authorizer != nil {
		if err := checkGates(s.table); err != nil {
			cancel()
			return nil, err
		}
		s.audit = acl.NewAudit(s.log.WithField("audit", "authorization"), logrus.InfoLevel, "request refused: not authorized", cfg.AuditEvery, cfg.OnDenied)
	}
	return s, nil
}

// Serve accepts connections on ln and serves each on its own goroutines
// until ln fails or the server is closed; it then returns, ErrServerClosed
// after Close. ln may already be limited (cluster/netlimit): Serve only
// accepts from it. Accept errors for lack of descriptors or memory, or an
// aborted handshake, are retried after a pause (5 ms doubling to 1 s, as
// net/http does). Close closes the listeners Serve is using; when Accept
// fails for good, Serve returns that error and leaves ln to the caller.
func (s *Server) Serve(ln net.Listener) error {
	if !s.track(ln) {
		return ErrServerClosed
	}
	defer s.untrack(ln)
	var pause time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.ctx.Err() != nil {
				return ErrServerClosed
			}
			if !retryableAccept(err) {
				return fmt.Errorf("kafka: accept on %s: %w", ln.Addr(), err)
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			if ok, n := s.limiter.Allow("accept", time.Now()); ok {
				s.log.WithError(err).WithFields(logrus.Fields{"pause": pause, "suppressed": n}).Warn("Kafka listener accept failed; retrying")
			}
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-s.ctx.Done():
				t.Stop()
				return ErrServerClosed
			}
			continue
		}
		pause = 0
		s.serveConn(nc)
	}
}

// Close stops every Serve (closing its listener), closes every connection
// and waits for the server's goroutines, handlers included (the Backend's
// calls see their context done). It returns the listeners' close errors.
// Calling it again does nothing.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.cancel()
	var errs []error
	for ln := range s.listeners {
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, fmt.Errorf("kafka: close listener %s: %w", ln.Addr(), err))
		}
	}
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	s.wg.Wait()
	return errors.Join(errs...)
}

// track records ln, false once the server is closed.
func (s *Server) track(ln net.Listener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.listeners[ln] = struct{}{}
	return true
}

func (s *Server) untrack(ln net.Listener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.listeners, ln)
}

// serveConn starts serving nc (closing it at once if the server is
// closed).
func (s *Server) serveConn(nc net.Conn) {
	if s.cfg.TLS != nil {
		nc = tls.Server(nc, s.cfg.TLS) // handshaken by the reader (tls.go)
	}
	c := newConn(s, nc)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.close()
		return
	}
	s.conns[c] = struct{}{}
	s.wg.Add(2)
	s.mu.Unlock()
	go c.readLoop()
	go c.writeLoop()
}

// forget drops a closed connection.
func (s *Server) forget(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
}

// warn logs a line about a peer's connection, at most one per reason per
// LogEvery (a peer can trigger these at will).
func (s *Server) warn(reason string, fields logrus.Fields, msg string) {
	ok, suppressed := s.limiter.Allow(reason, time.Now())
	if !ok {
		return
	}
	e := s.log.WithFields(fields).WithField("reason", reason)
	if suppressed > 0 {
		e = e.WithField("suppressed", suppressed)
	}
	e.Warn(msg)
}

// retryableAccept reports an Accept error that a pause may cure: out of
// descriptors or memory, or a connection aborted before it was accepted.
func retryableAccept(err error) bool {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		if errors.Is(err, errno) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
