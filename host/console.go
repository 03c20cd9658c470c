// console.go: the web console (package console) on the host's HTTP
// endpoint, under /ui/ and /api/v1/. Its data comes through a client
// attached to the host's own actor system (client.Attach), bootstrapped to
// this host: the same requests, checks and errors as the CLI, no second
// listener. By default it is served only when the HTTP endpoint listens
// on loopback, or when it authenticates its users over TLS (httptls.go):
// the console can create and delete topics; Config.Console (--console)
// turns it on or off explicitly. Its authentication and authorization
// follow the host's (httptls.go, console/auth.go, console/access.go).

package host

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/console"
	"github.com/actorlog/actorlog/internal/acl"
)

// ConsoleMode says whether the host serves the web console.
type ConsoleMode int

const (
	// ConsoleAuto serves it when the HTTP endpoint listens on loopback
	// only (the default).
	ConsoleAuto ConsoleMode = iota
	// ConsoleOn serves it on any address.
	ConsoleOn
	// ConsoleOff never serves it.
	ConsoleOff
)

// consoleEnabled decides Config.Console for the HTTP address addr.
func consoleEnabled(mode ConsoleMode, addr string) bool {
	switch mode {
	case ConsoleOn:
		return true
	case ConsoleOff:
		return false
	}
	return loopbackAddr(addr)
}

// loopbackAddr reports whether addr ("host:port") listens on loopback
// only.
func loopbackAddr(addr string) bool {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// mountConsole mounts the console on mux when Config.Console asks for it;
// it stops with the HTTP server. Called once h.http exists. Its client is
// attached on the first console request, so a host nobody browses keeps
// no client (and no watch of its peers) for it; a console that cannot be
// built answers 503 and is retried on the next request. Its
// authentication (and the ACLs it authorizes with) is set up here, so
// that a store that cannot serve them fails the start.
func (h *Host) mountConsole(mux *http.ServeMux) error {
	log := h.logger.WithField("component", "console")
	if !h.cfg.consoleServed() {
		if h.cfg.Console == ConsoleAuto {
			log.WithField("http", h.cfg.HTTP).Info("web console off: --http listens beyond loopback; --console=true serves it there")
		}
		return nil
	}
	auth, err := h.consoleAuthConfig(log)
	if err != nil {
		return err
	}
	lc := &lazyConsole{host: h, log: log, auth: auth}
	mux.Handle("/ui/", lc)
	mux.Handle("/api/v1/", lc)
	mux.Handle("/ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently))
	h.http.RegisterOnShutdown(lc.close)
	log.WithFields(logrus.Fields{"url": h.cfg.httpScheme() + "://" + h.cfg.HTTP + "/ui/", "authentication": auth != nil,
		"acls": auth != nil && auth.Authorizer != nil}).Info("web console served")
	return nil
}

// consoleAuthConfig is the console's authentication when Config asks for
// it (httptls.go), nil otherwise.
func (h *Host) consoleAuthConfig(log *logrus.Entry) (*console.AuthConfig, error) {
	if !h.cfg.consoleAuth() {
		return nil, nil
	}
	if h.store == nil {
		return nil, errors.New("host: console authentication needs the metadata store")
	}
	pw, err := newConsolePasswords(h.store)
	if err != nil {
		return nil, err
	}
	m, err := newConsoleMetrics(h.metrics.Registry)
	if err != nil {
		return nil, err
	}
	auth := &console.AuthConfig{
		Passwords:      pw,
		PlainPasswords: !h.cfg.HTTPTLS && loopbackAddr(h.cfg.HTTP),
		OnLoginFailure: func(reason string) { m.loginFailures.WithLabelValues(reason).Inc() },
		OnDenied: func(op acl.Operation, res acl.ResourceType) {
			m.denied.WithLabelValues(op.String(), res.String()).Inc()
		},
	}
	if err := h.startAuthorizer(); err != nil { // kafkaauthz.go
		return nil, err
	}
	if h.authz != nil {
		auth.Authorizer = h.authz
	} else {
		log.Warn("web console authenticates users but no ACLs are enforced (--authorizer none): every authenticated user may do everything")
	}
	return auth, nil
}

// lazyConsole builds the console, and attaches its client, on the first
// request.
type lazyConsole struct {
	host *Host
	log  *logrus.Entry
	auth *console.AuthConfig // nil: no authentication

	mu     sync.Mutex
	con    *console.Console
	client *client.Client
	closed bool
}

func (l *lazyConsole) get() (*console.Console, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, errors.New("the host is shutting down")
	}
	if l.con != nil {
		return l.con, nil
	}
	c, err := client.Attach(l.host.system, client.Config{Bootstrap: []string{l.host.system.Address()}, Logger: l.log})
	if err != nil {
		return nil, fmt.Errorf("attach the console's client: %w", err)
	}
	src := console.FromClient(c)
	src.Etcd = hostEtcd{l.host} // consoleetcd.go
	con, err := console.New(console.Config{Sources: src, Logger: l.log, Auth: l.auth})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("build the console: %w", err)
	}
	l.con, l.client = con, c
	return con, nil
}

func (l *lazyConsole) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	con, err := l.get()
	if err != nil {
		l.log.WithError(err).Warn("web console not served")
		http.Error(w, "web console unavailable: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	con.ServeHTTP(w, r)
}

// close closes the console's client, if attached, with the HTTP server.
func (l *lazyConsole) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.con != nil {
		l.con.Close() // its rate sampler
	}
	if l.client != nil {
		l.client.Close()
	}
}
