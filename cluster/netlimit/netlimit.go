// Package netlimit caps the TCP connections a process holds open, in
// total and per remote IP address (Kafka's max.connections and
// max.connections.per.ip), across every listener it serves (issue 11: ~15,000
// idle connections to one port exhausted a host's descriptors, and the
// embedded etcd exits on EMFILE).
//
// One Limiter is shared by all of a process's listeners, as a descriptor
// budget is shared. It is applied in two ways:
//
//   - Listener wraps a net.Listener the process creates itself (the HTTP
//     endpoint, the fronts of the embedded etcd's ports);
//   - Credentials wraps gRPC transport credentials, for a gRPC server whose
//     listener someone else creates (protoactor's remote calls net.Listen
//     itself and takes only server options): grpc-go runs the handshake on
//     every accepted connection before anything else.
//
// A connection over a limit is accepted and closed at once, so the
// kernel's backlog keeps draining and the peer sees the connection end; it
// is counted (Stats, and the Prometheus collector the Limiter is) and logged
// at warn, at most once a second per listener and reason. An Accept that
// fails for lack of descriptors or memory (EMFILE, ENFILE, ENOBUFS,
// ENOMEM) or an aborted handshake is retried after a pause (5 ms doubling
// to 1 s, as net/http and grpc-go do) instead of ending the server.
//
// Per-IP counts use the exact address (an IPv6 peer with a /64 has many);
// the total cap bounds those too. Connections whose remote address is not
// IP (Unix sockets) count toward the total only.
//
// Safe for concurrent use.
package netlimit

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
)

// Reasons a connection is refused, the values of the "reason" label.
const (
	// ReasonTotal: the process holds MaxConnections already.
	ReasonTotal = "max_connections"
	// ReasonPerIP: the peer's address holds MaxConnectionsPerIP already.
	ReasonPerIP = "max_connections_per_ip"
)

// ErrRefused is the error a refused gRPC handshake returns (grpc-go then
// closes the connection).
var ErrRefused = errors.New("netlimit: connection limit reached")

// Unlimited is Kafka's default of max.connections.per.ip (2^31-1): no cap
// beyond the total.
const Unlimited = math.MaxInt32

// Limits are the caps of a Limiter.
type Limits struct {
	// MaxConnections bounds the connections open at once over every
	// listener of the Limiter (Kafka's max.connections). At least 1.
	MaxConnections int
	// MaxConnectionsPerIP bounds those from one remote address (Kafka's
	// max.connections.per.ip). At least 1; above MaxConnections it has no
	// effect (Unlimited).
	MaxConnectionsPerIP int
}

// Validate reports limits below 1.
func (l Limits) Validate() error {
	if l.MaxConnections < 1 {
		return fmt.Errorf("netlimit: max.connections %d: want at least 1", l.MaxConnections)
	}
	if l.MaxConnectionsPerIP < 1 {
		return fmt.Errorf("netlimit: max.connections.per.ip %d: want at least 1", l.MaxConnectionsPerIP)
	}
	return nil
}

// ListenerStats counts one listener's connections since the Limiter was
// made.
type ListenerStats struct {
	// Open is the number of its connections open now (counted with their
	// weight, see WithWeight).
	Open int
	// Accepted counts the connections let through.
	Accepted uint64
	// RefusedTotal and RefusedPerIP count the connections closed at
	// accept for ReasonTotal and ReasonPerIP.
	RefusedTotal, RefusedPerIP uint64
	// AcceptErrors counts Accept failures that were retried (EMFILE...).
	AcceptErrors uint64
}

// Limiter counts the open connections of a process's listeners against
// its Limits. Safe for concurrent use.
type Limiter struct {
	limits Limits
	log    *logrus.Entry

	mu        sync.Mutex
	total     int
	perIP     map[netip.Addr]int
	listeners map[string]*ListenerStats
	logs      LogLimiter

	descOpen, descAccepted, descRefused, descAcceptErrors *prometheus.Desc
}

// New returns a Limiter enforcing limits; log (logrus's standard logger
// when nil) receives the refusals.
func New(limits Limits, log *logrus.Entry) (*Limiter, error) {
	if err := limits.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = logrus.NewEntry(logrus.StandardLogger())
	}
	return &Limiter{
		limits:    limits,
		log:       log.WithField("component", "netlimit"),
		perIP:     map[netip.Addr]int{},
		listeners: map[string]*ListenerStats{},
		logs:      LogLimiter{Every: time.Second},
		descOpen: prometheus.NewDesc("actorlog_connections_open",
			"Connections open now, by listener (relayed etcd connections count with their descriptors).", []string{"listener"}, nil),
		descAccepted: prometheus.NewDesc("actorlog_connections_accepted_total",
			"Connections accepted within the connection limits, by listener.", []string{"listener"}, nil),
		descRefused: prometheus.NewDesc("actorlog_connections_refused_total",
			"Connections closed at accept because a limit was reached (max_connections, max_connections_per_ip), by listener.", []string{"listener", "reason"}, nil),
		descAcceptErrors: prometheus.NewDesc("actorlog_accept_errors_total",
			"Accept failures retried after a pause (out of descriptors or memory), by listener.", []string{"listener"}, nil),
	}, nil
}

// Limits returns the limiter's caps.
func (l *Limiter) Limits() Limits { return l.limits }

// Stats returns each listener's counts (by name). Listeners appear once
// they were first used.
func (l *Limiter) Stats() map[string]ListenerStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]ListenerStats, len(l.listeners))
	for k, s := range l.listeners {
		out[k] = *s
	}
	return out
}

// Open returns the connections open now over all listeners (weighted).
func (l *Limiter) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// Describe implements prometheus.Collector.
func (l *Limiter) Describe(ch chan<- *prometheus.Desc) {
	ch <- l.descOpen
	ch <- l.descAccepted
	ch <- l.descRefused
	ch <- l.descAcceptErrors
}

// Collect implements prometheus.Collector.
func (l *Limiter) Collect(ch chan<- prometheus.Metric) {
	stats := l.Stats()
	names := make([]string, 0, len(stats))
	for n := range stats {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := stats[n]
		ch <- prometheus.MustNewConstMetric(l.descOpen, prometheus.GaugeValue, float64(s.Open), n)
		ch <- prometheus.MustNewConstMetric(l.descAccepted, prometheus.CounterValue, float64(s.Accepted), n)
		ch <- prometheus.MustNewConstMetric(l.descRefused, prometheus.CounterValue, float64(s.RefusedTotal), n, ReasonTotal)
		ch <- prometheus.MustNewConstMetric(l.descRefused, prometheus.CounterValue, float64(s.RefusedPerIP), n, ReasonPerIP)
		ch <- prometheus.MustNewConstMetric(l.descAcceptErrors, prometheus.CounterValue, float64(s.AcceptErrors), n)
	}
}

// stats returns listener name's counters; l.mu must be held.
func (l *Limiter) stats(name string) *ListenerStats {
	s, ok := l.listeners[name]
	if !ok {
		s = &ListenerStats{}
		l.listeners[name] = s
	}
	return s
}

// acquire takes weight slots for a connection from remote on listener
// name. It returns the function that gives them back (to call once), or
// nil and logs the refusal.
func (l *Limiter) acquire(name string, remote net.Addr, weight int) func() {
	ip, hasIP := addrIP(remote)
	l.mu.Lock()
	s := l.stats(name)
	reason := ""
	switch {
	case l.total+weight > l.limits.MaxConnections:
		reason = ReasonTotal
		s.RefusedTotal++
	case hasIP && l.perIP[ip]+weight > l.limits.MaxConnectionsPerIP:
		reason = ReasonPerIP
		s.RefusedPerIP++
	}
	if reason != "" {
		refused := s.RefusedTotal + s.RefusedPerIP
		logIt := l.allowLog(name+"/"+reason, time.Now())
		l.mu.Unlock()
		if logIt {
			l.log.WithFields(logrus.Fields{
				"listener": name, "reason": reason, "remote": addrString(remote),
				"max_connections": l.limits.MaxConnections, "max_connections_per_ip": l.limits.MaxConnectionsPerIP,
				"refused_total": refused,
			}).Warn("connection refused: limit reached (logged at most once a second per listener and reason)")
		}
		return nil
	}
	l.total += weight
	if hasIP {
		l.perIP[ip] += weight
	}
	s.Open += weight
	s.Accepted++
	l.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.total -= weight
			l.stats(name).Open -= weight
			if hasIP {
				if n := l.perIP[ip] - weight; n > 0 {
					l.perIP[ip] = n
				} else {
					delete(l.perIP, ip)
				}
			}
		})
	}
}

// acceptFailed counts a retried Accept failure and logs it, rate-limited.
func (l *Limiter) acceptFailed(name string, err error, pause time.Duration) {
	l.mu.Lock()
	s := l.stats(name)
	s.AcceptErrors++
	n := s.AcceptErrors
	logIt := l.allowLog(name+"/accept", time.Now())
	l.mu.Unlock()
	if logIt {
		l.log.WithError(err).WithFields(logrus.Fields{"listener": name, "retry_in": pause, "accept_errors_total": n}).
			Warn("accept failed; retrying (logged at most once a second per listener)")
	}
}

// allowLog reports whether a line for key may be logged at now (one a
// second per key; the keys are a fixed set).
func (l *Limiter) allowLog(key string, now time.Time) bool {
	ok, _ := l.logs.Allow(key, now)
	return ok
}

// addrIP returns a TCP or UDP address's IP (IPv4-mapped IPv6 unmapped).
func addrIP(a net.Addr) (netip.Addr, bool) {
	switch a := a.(type) {
	case *net.TCPAddr:
		ip, ok := netip.AddrFromSlice(a.IP)
		return ip.Unmap(), ok
	case *net.UDPAddr:
		ip, ok := netip.AddrFromSlice(a.IP)
		return ip.Unmap(), ok
	}
	return netip.Addr{}, false
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// retryableAccept reports whether an Accept error is one a server should
// survive by pausing: out of descriptors or kernel memory, or a
// connection aborted before it was accepted.
func retryableAccept(err error) bool {
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.ECONNRESET} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
