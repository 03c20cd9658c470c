// httptls.go: TLS on the HTTP endpoint and the web console's
// authentication (issues 16 and 17).
//
// With Config.HTTPTLS (--http-tls) the endpoint (/healthz, /metrics,
// /debug/pprof, the console) speaks TLS 1.2+ only, with --tls-cert,
// --tls-key and --tls-ca: the same tlsconf.Reloader as the Kafka listener
// and the remote (h.tls, reloaded by ReloadTLS on SIGHUP). It asks for,
// but does not require, a client certificate, verified against --tls-ca
// when given: /metrics scrapers and browsers without one still connect,
// and the console takes a verified one as its principal. Plain HTTP sent
// to the port is answered 400 by net/http ("Client sent an HTTP request
// to an HTTPS server").
//
// Console authentication is on whenever the host authenticates any of its
// clients: Kafka SASL, --kafka-client-auth require, --remote-tls, or
// --authorizer acl (consoleAuth). Then every console page and API call
// needs a principal (a client certificate, a login with the user's SCRAM
// password, or HTTP Basic on /api/v1/), and is authorized by the host's
// ACL authorizer whenever the host enforces one (h.authz; console/access.go
// has the table). Passwords cross plain HTTP only when --http listens on
// loopback; a host whose console would take them over a non-loopback,
// plain-text --http refuses to start. With authentication and --http-tls,
// ConsoleAuto serves the console on any address.

package host

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/internal/tlsconf"
	"github.com/actorlog/actorlog/kafka"
)

// consoleAuth reports whether the console authenticates its users: when
// the host authenticates any client.
func (c *Config) consoleAuth() bool {
	return len(c.KafkaSASLMechanisms) > 0 || c.KafkaClientAuth == KafkaClientAuthRequire ||
		c.RemoteTLS || c.Authorizer == AuthorizerACL
}

// consoleServed reports whether the host serves the console: Console as
// consoleEnabled decides it, and with ConsoleAuto also beyond loopback
// when the console authenticates its users over TLS.
func (c *Config) consoleServed() bool {
	if c.Console == ConsoleAuto && c.HTTP != "off" && c.HTTPTLS && c.consoleAuth() {
		return true
	}
	return consoleEnabled(c.Console, c.HTTP)
}

// httpDefaults checks the HTTP endpoint's TLS and the console's security
// (called by withDefaults after kafkaDefaults).
func (c *Config) httpDefaults() error {
	if c.HTTPTLS {
		if c.HTTP == "off" {
			return errors.New("host: --http-tls without an HTTP endpoint (--http is off)")
		}
		if c.TLSCert == "" {
			return errors.New("host: --http-tls needs --tls-cert, --tls-key and --tls-ca")
		}
	}
	if c.HTTP != "off" && c.consoleAuth() && c.consoleServed() && !c.HTTPTLS && !loopbackAddr(c.HTTP) {
		return fmt.Errorf("host: the web console authenticates its users (the host authenticates clients) but --http %s is not loopback and has no TLS: passwords and session cookies would cross the network in plain text; add --http-tls (with --tls-cert/--tls-key/--tls-ca), listen on loopback, or turn the console off (--console=false)", c.HTTP)
	}
	return nil
}

// httpListener puts ln on TLS when Config.HTTPTLS asks for it, loading the
// TLS files if no other listener did.
func (h *Host) httpListener(ln net.Listener) (net.Listener, error) {
	if !h.cfg.HTTPTLS {
		return ln, nil
	}
	if h.tls == nil {
		cfg := h.cfg
		r, err := tlsconf.NewReloader(tlsconf.Files{Cert: cfg.TLSCert, Key: cfg.TLSKey, CA: cfg.TLSCA}, h.logger.WithField("listener", "http"))
		if err != nil {
			return nil, fmt.Errorf("host: HTTP endpoint TLS: %w", err)
		}
		h.tls = r
	}
	h.logger.WithField("http", h.cfg.HTTP).Info("HTTP endpoint speaks TLS; client certificates are asked for, not required")
	return tls.NewListener(ln, h.tls.ServerConfig(tls.VerifyClientCertIfGiven)), nil
}

// httpScheme is the scheme of the HTTP endpoint's URLs.
func (c *Config) httpScheme() string {
	if c.HTTPTLS {
		return "https"
	}
	return "http"
}

// consolePasswords checks console passwords against the users' SCRAM
// credentials in the metadata store (console.PasswordChecker), as the
// Kafka listener checks SASL PLAIN: the SCRAM-SHA-512 credential, else the
// SCRAM-SHA-256 one. An unknown user costs a check against a decoy
// credential, so the answer's delay does not tell it from a wrong
// password.
type consolePasswords struct {
	cache *cluster.ScramCache
	decoy kafka.ScramCredential
}

func newConsolePasswords(store cluster.ScramStore) (*consolePasswords, error) {
	decoy, err := kafka.NewScramCredential(kafka.ScramSHA512, "decoy", kafka.DefaultScramIterations)
	if err != nil {
		return nil, fmt.Errorf("host: console decoy credential: %w", err)
	}
	return &consolePasswords{cache: cluster.NewScramCache(store, 0), decoy: decoy}, nil
}

// CheckPassword implements console.PasswordChecker.
func (p *consolePasswords) CheckPassword(ctx context.Context, user, password string) (bool, error) {
	if cluster.ValidateScramUserName(user) == nil {
		for _, m := range []kafka.ScramMechanism{kafka.ScramSHA512, kafka.ScramSHA256} {
			c, ok, err := p.cache.Credential(ctx, user, m.String())
			if err != nil {
				return false, fmt.Errorf("host: SCRAM user %q: %w", user, err)
			}
			if ok {
				cred := kafka.ScramCredential{Salt: c.Salt, Iterations: c.Iterations, StoredKey: c.StoredKey, ServerKey: c.ServerKey}
				return kafka.VerifyPassword(m, cred, password), nil
			}
		}
	}
	kafka.VerifyPassword(kafka.ScramSHA512, p.decoy, password)
	return false, nil
}

// consoleMetrics are the console's authentication counters.
type consoleMetrics struct {
	loginFailures *prometheus.CounterVec
	denied        *prometheus.CounterVec
}

func newConsoleMetrics(r prometheus.Registerer) (*consoleMetrics, error) {
	m := &consoleMetrics{
		loginFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "actorlog_console_login_failures_total",
			Help: "Failed web console password checks (login form, HTTP Basic), by reason: wrong_credentials, rate_limited, plain_text, store_error.",
		}, []string{"reason"}),
		denied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "actorlog_console_authorization_denied_total",
			Help: "Web console requests refused by the ACLs, by operation and resource type.",
		}, []string{"operation", "resource_type"}),
	}
	for _, c := range []prometheus.Collector{m.loginFailures, m.denied} {
		if err := r.Register(c); err != nil {
			return nil, fmt.Errorf("host: console metrics: %w", err)
		}
	}
	return m, nil
}
