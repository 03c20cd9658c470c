// etcdtls.go: TLS on the embedded etcd member and on the host's etcd
// clients (issue 16). With Config.EtcdTLS (--etcd-tls) and
// --tls-cert/--tls-key/--tls-ca the member serves its client and peer
// URLs as https with etcd's client-certificate authentication on both
// (cluster/etcdtls.go: on the client port the members' names and
// --etcd-client-cns, "admin" by default, so a Kafka client's certificate
// of the same CA cannot rewrite the metadata; on the peer port only the
// --initial-cluster members' names), and the host's
// own etcd client — the member's, or the one of --etcd-endpoints —
// presents the host certificate. Every etcd URL is then https://: a
// HOST:PORT flag means https://HOST:PORT, the defaults are https, and
// --initial-cluster and --etcd-endpoints must spell https:// out.
//
// The certificate must be a host certificate for --name (its Common Name
// is the etcd member name peers accept) whose SANs cover the hosts of
// --etcd-client and --etcd-peer (what peers and clients verify).
//
// Reloading: etcd itself re-reads the certificate and key files at every
// handshake, SIGHUP or not; the host's etcd client takes its certificate
// from h.tls (reloaded on SIGHUP). A new CA file takes a restart.

package host

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/internal/tlsconf"
)

// DefaultEtcdClientCNs are the client certificates' Common Names, besides
// the members', that the embedded etcd's client port accepts by default:
// the admin certificate `actorlog certs init --clients admin` issues.
var DefaultEtcdClientCNs = []string{"admin"}

// etcdScheme is the scheme of the host's etcd URLs.
func (c *Config) etcdScheme() string {
	if c.EtcdTLS {
		return "https"
	}
	return "http"
}

// etcdTLSDefaults runs before the etcd URLs are normalized: --etcd-tls
// needs the TLS files, and makes a scheme-less --etcd-peer/--etcd-client
// https.
func (c *Config) etcdTLSDefaults() error {
	if !c.EtcdTLS {
		return nil
	}
	if c.TLSCert == "" || c.TLSKey == "" || c.TLSCA == "" {
		return errors.New("host: --etcd-tls needs --tls-cert, --tls-key and --tls-ca")
	}
	for _, v := range []*string{&c.EtcdPeer, &c.EtcdClient} {
		if *v != "" && !strings.Contains(*v, "://") {
			*v = "https://" + *v
		}
	}
	return nil
}

// checkEtcdSchemes checks, once the etcd URLs are final, that they are
// all https with --etcd-tls and all http without.
func (c *Config) checkEtcdSchemes() error {
	urls := append([]string{c.EtcdPeer, c.EtcdClient}, c.EtcdEndpoints...)
	for _, e := range strings.Split(c.EtcdInitialCluster, ",") {
		if _, u, ok := strings.Cut(strings.TrimSpace(e), "="); ok {
			urls = append(urls, u)
		}
	}
	for _, s := range urls {
		if s == "" {
			continue
		}
		u, err := url.Parse(s)
		if err != nil {
			return fmt.Errorf("host: etcd URL %q: %w", s, err)
		}
		switch {
		case c.EtcdTLS && u.Scheme != "https":
			return fmt.Errorf("host: --etcd-tls: etcd URL %s must be https:// (--initial-cluster, --etcd-endpoints, --etcd-peer and --etcd-client alike)", s)
		case !c.EtcdTLS && u.Scheme == "https":
			return fmt.Errorf("host: etcd URL %s is https: that needs --etcd-tls (with --tls-cert, --tls-key and --tls-ca)", s)
		}
	}
	return nil
}

// etcdTLS returns the embedded member's TLS (nil without --etcd-tls) and
// the TLS config of an etcd client of this host. It loads the TLS files
// if no other listener did (h.tls) and refuses a certificate that is not
// a host certificate for this host, or whose SANs miss the member's URLs.
func (h *Host) etcdTLS() (*cluster.EtcdTLS, *tls.Config, error) {
	cfg := h.cfg
	if !cfg.EtcdTLS {
		if cfg.TLSCert != "" {
			h.logger.Warn("the embedded etcd runs in plain text although --tls-cert is set (no --etcd-tls): anyone who can reach its ports can read and rewrite the cluster's metadata")
		}
		return nil, nil, nil
	}
	if h.tls == nil {
		r, err := tlsconf.NewReloader(tlsconf.Files{Cert: cfg.TLSCert, Key: cfg.TLSKey, CA: cfg.TLSCA}, h.logger.WithField("listener", "etcd"))
		if err != nil {
			return nil, nil, fmt.Errorf("host: etcd TLS: %w", err)
		}
		h.tls = r
	}
	leaf := h.tls.Leaf()
	p, err := tlsconf.PrincipalFromCert(leaf)
	if err != nil {
		return nil, nil, fmt.Errorf("host: etcd TLS: %w", err)
	}
	if !p.IsHost() || p.Name != cfg.Name {
		return nil, nil, fmt.Errorf("host: etcd TLS: --tls-cert %s names %s, not Host:%s: etcd members accept peers by their host certificate (Subject CN=%s, OU=%s; `actorlog certs init --hosts %s`)",
			cfg.TLSCert, p, cfg.Name, cfg.Name, tlsconf.HostOU, cfg.Name)
	}
	clientTLS := cluster.EtcdClientTLS(h.tls)
	if len(cfg.EtcdEndpoints) > 0 {
		h.logger.Info("etcd client uses TLS with the host certificate")
		return nil, clientTLS, nil
	}
	for flag, s := range map[string]string{"--etcd-client": cfg.EtcdClient, "--etcd-peer": cfg.EtcdPeer} {
		u, err := url.Parse(s)
		if err != nil {
			return nil, nil, fmt.Errorf("host: etcd TLS: %s %q: %w", flag, s, err)
		}
		if err := leaf.VerifyHostname(u.Hostname()); err != nil {
			return nil, nil, fmt.Errorf("host: etcd TLS: %s %s: the certificate %s does not name %s (SANs %v %v), so peers and clients would refuse it; issue it with that name (`actorlog certs init --san %s`): %w",
				flag, s, cfg.TLSCert, u.Hostname(), leaf.DNSNames, leaf.IPAddresses, u.Hostname(), err)
		}
	}
	h.logger.WithField("principal", p.String()).Info("embedded etcd serves TLS and requires client certificates on its client and peer ports")
	cns := cfg.EtcdClientCNs
	if cns == nil {
		cns = DefaultEtcdClientCNs
	}
	return &cluster.EtcdTLS{CertFile: cfg.TLSCert, KeyFile: cfg.TLSKey, CAFile: cfg.TLSCA, Client: clientTLS, ClientCNs: cns}, clientTLS, nil
}
