// console.go: the web console (package console) on the host's HTTP
// endpoint, under /ui/ and /api/v1/. Its data comes through a client
// attached to the host's own actor system (client.Attach), bootstrapped to
// this host: the same requests, checks and errors as the CLI, no second
// listener. By default it is served only when the HTTP endpoint listens
// on loopback: the console can create and delete topics, and until the
// host has authentication anyone who can reach a non-loopback port could;
// Config.Console (--console) turns it on or off explicitly.

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
// built answers 503 and is retried on the next request.
func (h *Host) mountConsole(mux *http.ServeMux) {
	log := h.logger.WithField("component", "console")
	if !consoleEnabled(h.cfg.Console, h.cfg.HTTP) {
		if h.cfg.Console == ConsoleAuto {
			log.WithField("http", h.cfg.HTTP).Info("web console off: --http listens beyond loopback; --console=true serves it there")
		}
		return
	}
	lc := &lazyConsole{host: h, log: log}
	mux.Handle("/ui/", lc)
	mux.Handle("/api/v1/", lc)
	mux.Handle("/ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently))
	h.http.RegisterOnShutdown(lc.close)
	log.WithFields(logrus.Fields{"url": "http://" + h.cfg.HTTP + "/ui/"}).Info("web console served")
}

// lazyConsole builds the console, and attaches its client, on the first
// request.
type lazyConsole struct {
	host *Host
	log  *logrus.Entry

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
	con, err := console.New(console.Config{Sources: console.FromClient(c), Logger: l.log})
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
	if l.client != nil {
		l.client.Close()
	}
}
