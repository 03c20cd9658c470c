// etcdlimit.go: the connection limits of the embedded etcd member's ports
// (issue 11). etcd creates its listeners itself and takes no listener
// from its caller, and an etcd member exits when it meets EMFILE, so a
// flood of connections to its client or peer port ended the host. With
// EtcdConfig.Limiter set, the host binds the client and peer addresses
// itself, behind the shared connection Limiter (cluster/netlimit), and
// relays each connection it keeps to the member, which listens on private
// loopback ports chosen by the kernel (127.0.0.1:0); the advertised URLs
// stay the public ones. A relayed connection holds three descriptors in
// the process (the accepted one, the relay's own, the member's), so it
// counts three against the limits. The member's own client dials the
// private client port directly.
//
// The private ports are reachable from this machine only, without the
// limits; a peer on the network sees only the limited ones.

package cluster

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/cluster/netlimit"
)

// relayWeight is what a relayed connection counts against the limits:
// its descriptors in this process.
const relayWeight = 3

// etcdFront is a limited public listener relaying to one of the member's
// private ports. Safe for concurrent use.
type etcdFront struct {
	ln   net.Listener
	name string
	log  *logrus.Entry

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	logs   netlimit.LogLimiter
	wg     sync.WaitGroup
}

// listenFront binds u's host:port behind lim under name. It accepts
// nothing until serve.
func listenFront(lim *netlimit.Limiter, name string, u url.URL, log *logrus.Entry) (*etcdFront, error) {
	ln, err := net.Listen("tcp", u.Host)
	if err != nil {
		return nil, err
	}
	return &etcdFront{
		ln: lim.Listener(name, ln, netlimit.WithWeight(relayWeight)), name: name,
		log: log.WithField("listener", name), conns: map[net.Conn]struct{}{},
		logs: netlimit.LogLimiter{Every: time.Second},
	}, nil
}

// privateURL is the URL the member listens on behind a front of u: u's
// scheme on a port the kernel picks, on privateIP.
func privateURL(u url.URL) url.URL {
	return url.URL{Scheme: u.Scheme, Host: net.JoinHostPort(privateIP().String(), "0")}
}

// privateLoopback is the loopback address the members' private ports and
// the relays' own connections use where the system has it (Linux routes
// all of 127.0.0.0/8 to the loopback interface). On 127.0.0.1 they would
// take kernel-chosen ports that a host about to start may have been given
// as its public address (loopback clusters and tests pick free ports on
// 127.0.0.1 ahead of starting their hosts): "bind: address already in
// use". Elsewhere (one loopback address) it falls back to 127.0.0.1.
var privateLoopback = net.IPv4(127, 0, 31, 1)

var privateIPOnce = sync.OnceValue(func() net.IP {
	ln, err := net.Listen("tcp", net.JoinHostPort(privateLoopback.String(), "0"))
	if err != nil {
		return net.IPv4(127, 0, 0, 1)
	}
	if err := ln.Close(); err != nil {
		return net.IPv4(127, 0, 0, 1)
	}
	return privateLoopback
})

// privateIP is the address of the members' private ports.
func privateIP() net.IP { return privateIPOnce() }

// relayDialer dials a member's private port from privateIP, so that the
// relay's own ephemeral ports are not taken on 127.0.0.1 either.
func relayDialer() *net.Dialer {
	return &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: privateIP()}}
}

// serve accepts connections and relays each to target until Close.
func (f *etcdFront) serve(target string) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := f.ln.Accept()
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					f.log.WithError(err).Error("etcd port stopped accepting connections")
				}
				return
			}
			if !f.track(c) {
				return
			}
			f.wg.Add(1)
			go f.relay(c, target)
		}
	}()
}

// track registers c for Close; false (and c closed) once closed.
func (f *etcdFront) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		closeQuietly(c)
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *etcdFront) untrack(c net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.conns, c)
}

// relay copies between c and a new connection to target, both ways, and
// closes both when either side is done.
func (f *etcdFront) relay(c net.Conn, target string) {
	defer f.wg.Done()
	defer f.untrack(c)
	defer closeQuietly(c)
	u, err := relayDialer().Dial("tcp", target)
	if err != nil {
		if logIt, _ := f.logs.Allow("dial", time.Now()); logIt {
			f.log.WithError(err).WithField("remote", c.RemoteAddr().String()).Warn("cannot reach the etcd member's private port; connection dropped (logged at most once a second)")
		}
		return
	}
	if !f.track(u) {
		return
	}
	defer f.untrack(u)
	defer closeQuietly(u)
	src := c
	if nc, ok := c.(interface{ NetConn() net.Conn }); ok {
		src = nc.NetConn() // a *net.TCPConn: io.Copy splices
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		defer func() { done <- struct{}{} }()
		if _, err := io.Copy(dst, src); err != nil {
			// A reset or a closed side: end both directions.
			closeQuietly(dst)
			closeQuietly(src)
			return
		}
		// End of stream: pass the half-close on.
		if cw, ok := dst.(interface{ CloseWrite() error }); !ok || cw.CloseWrite() != nil {
			closeQuietly(dst)
		}
	}
	go pipe(u, src)
	go pipe(src, u)
	<-done
	<-done
}

// Close stops accepting, closes every relayed connection and waits for
// the relays to end. Idempotent.
func (f *etcdFront) Close() {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	f.closed = true
	closeQuietly(f.ln)
	for c := range f.conns {
		closeQuietly(c)
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// closeQuietly closes c; the error of closing a connection that is being
// torn down says nothing useful.
func closeQuietly(c io.Closer) { _ = c.Close() }

// etcdFronts are the fronts of a member's client and peer ports (one per
// listen URL: a name may resolve to several of this machine's addresses).
type etcdFronts struct{ client, peer []*etcdFront }

// listenFronts binds every public listen address behind lim.
func listenFronts(lim *netlimit.Limiter, client, peer []url.URL, log *logrus.Entry) (*etcdFronts, error) {
	fs := &etcdFronts{}
	for _, u := range client {
		f, err := listenFront(lim, "etcd-client", u, log)
		if err != nil {
			fs.Close()
			return nil, fmt.Errorf("listen on etcd client address %s: %w", u.Host, err)
		}
		fs.client = append(fs.client, f)
	}
	for _, u := range peer {
		f, err := listenFront(lim, "etcd-peer", u, log)
		if err != nil {
			fs.Close()
			return nil, fmt.Errorf("listen on etcd peer address %s: %w", u.Host, err)
		}
		fs.peer = append(fs.peer, f)
	}
	return fs, nil
}

// serve starts relaying the client fronts to clientTarget and the peer
// fronts to peerTarget.
func (fs *etcdFronts) serve(clientTarget, peerTarget string) {
	for _, f := range fs.client {
		f.serve(clientTarget)
	}
	for _, f := range fs.peer {
		f.serve(peerTarget)
	}
}

// Close closes every front; nil-safe.
func (fs *etcdFronts) Close() {
	if fs == nil {
		return
	}
	for _, f := range append(fs.client, fs.peer...) {
		f.Close()
	}
}
