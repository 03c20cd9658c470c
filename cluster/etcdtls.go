// etcdtls.go: TLS on the embedded etcd member's ports and on etcd clients
// (issue 16). With EtcdConfig.TLS the member serves its client and peer
// URLs (https://) with etcd's own client-certificate authentication: a
// connection must present a certificate of the CA file, on both ports.
//
//   - Peer port: only the members named in InitialCluster may connect
//     (etcd's AllowedCNs: the certificate's Common Name must be a member
//     name — a host certificate for that host, as `actorlog certs init`
//     issues). etcd's check of a peer certificate's SANs against the
//     connection's source address is off: relayed connections
//     (EtcdConfig.Limiter) arrive from a loopback address, and the
//     certificate and its name are what authenticate a member.
//   - Client port: the members' certificates and those whose Common Name
//     is in EtcdTLS.ClientCNs (hosts joining through --etcd-endpoints,
//     admins running `actorlog users|acls --etcd-endpoints`), or any
//     certificate of the CA with ClientCNs ["*"]. A Kafka or actor-remote
//     client certificate of the same CA is refused: those principals go
//     through ACLs, and etcd would let them rewrite the metadata.
//
// Both sides verify the other's certificate: a member dialing a peer
// checks the peer URL's host against the peer's certificate, a client the
// endpoint's host (so the URLs' hosts must be among the certificates'
// SANs).
//
// Reloading: etcd reads the certificate and key files on every handshake
// itself, so a rotated host certificate is used by the next connection
// without a signal; the CA file is read once, when the member starts.
// EtcdClientTLS's clients take their certificate from a tlsconf.Reloader
// (reloaded on SIGHUP) per handshake; their CA pool is the one current
// when the client was made.

package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/actorlog/actorlog/internal/tlsconf"
)

// EtcdTLS puts an embedded member's client and peer ports on TLS.
type EtcdTLS struct {
	// CertFile and KeyFile are the member's PEM certificate and key,
	// served on both ports and presented to peers. The certificate's
	// Common Name must be the member's name (peers accept only member
	// names), and its SANs must cover the hosts of ClientURL and PeerURL.
	CertFile, KeyFile string
	// CAFile holds the PEM CA certificates client and peer certificates
	// must chain to.
	CAFile string
	// ClientCNs are the Common Names of client certificates the client
	// port accepts besides the members' (the initial cluster's names);
	// ["*"]: any certificate of the CA.
	ClientCNs []string
	// Client is the TLS config of the member's own client (Etcd.Client):
	// its certificate and RootCAs, e.g. EtcdClientTLS. Required. The
	// member's certificate is verified against RootCAs and ClientURL's
	// host, whatever address the client dials.
	Client *tls.Config
}

// errEtcdTLSScheme: an etcd URL's scheme does not match whether TLS is on.
var errEtcdTLSScheme = errors.New("cluster: etcd URL scheme")

// check validates t for a member whose URLs are clientURL and peerURL and
// whose initial cluster is initial: all https, files given.
func (t *EtcdTLS) check(clientURL, peerURL, initial string) error {
	if t.CertFile == "" || t.KeyFile == "" || t.CAFile == "" {
		return fmt.Errorf("cluster: etcd config: TLS needs CertFile, KeyFile and CAFile (cert=%q key=%q ca=%q)", t.CertFile, t.KeyFile, t.CAFile)
	}
	if t.Client == nil {
		return errors.New("cluster: etcd config: TLS needs a Client config for the member's own client")
	}
	return checkEtcdSchemes(true, clientURL, peerURL, initial)
}

// checkEtcdSchemes checks that the member URLs, and every peer URL of
// initial ("name=url,..."), are https when tlsOn and http otherwise.
func checkEtcdSchemes(tlsOn bool, clientURL, peerURL, initial string) error {
	urls := []string{clientURL, peerURL}
	for _, e := range strings.Split(initial, ",") {
		if _, u, ok := strings.Cut(strings.TrimSpace(e), "="); ok {
			urls = append(urls, u)
		}
	}
	for _, s := range urls {
		u, err := url.Parse(s)
		if err != nil {
			return fmt.Errorf("cluster: etcd config: URL %q: %w", s, err)
		}
		switch {
		case tlsOn && u.Scheme != "https":
			return fmt.Errorf("%w: %s: an etcd member with TLS serves and dials https:// URLs only (peer URLs in the initial cluster too)", errEtcdTLSScheme, s)
		case !tlsOn && u.Scheme == "https":
			return fmt.Errorf("%w: %s: https needs TLS on the etcd member (host: --etcd-tls with --tls-cert, --tls-key, --tls-ca)", errEtcdTLSScheme, s)
		}
	}
	return nil
}

// initialClusterNames returns the member names of initial
// ("name=url,..."), in order.
func initialClusterNames(initial string) []string {
	var names []string
	for _, e := range strings.Split(initial, ",") {
		if n, _, ok := strings.Cut(strings.TrimSpace(e), "="); ok && n != "" {
			names = append(names, n)
		}
	}
	return names
}

// apply sets ec's client and peer TLS from t, for a member of the initial
// cluster initial.
func (t *EtcdTLS) apply(ec *embed.Config, initial string) {
	ec.ClientAutoTLS, ec.PeerAutoTLS = false, false
	ec.ClientTLSInfo = transport.TLSInfo{
		CertFile:       t.CertFile,
		KeyFile:        t.KeyFile,
		TrustedCAFile:  t.CAFile,
		ClientCertAuth: true,
		AllowedCNs:     t.clientCNs(initial),
	}
	ec.PeerTLSInfo = transport.TLSInfo{
		CertFile:       t.CertFile,
		KeyFile:        t.KeyFile,
		TrustedCAFile:  t.CAFile,
		ClientCertAuth: true,
		// Relayed peer connections come from a loopback address; the
		// certificate, its CA and its name authenticate a member.
		SkipClientSANVerify: true,
		// Only members may talk raft. etcd applies this to the
		// certificates of dialed peers too, which are members as well.
		AllowedCNs: initialClusterNames(initial),
	}
}

// clientCNs returns the Common Names the client port accepts (nil: any
// certificate of the CA): the members' and t.ClientCNs.
func (t *EtcdTLS) clientCNs(initial string) []string {
	if slices.Contains(t.ClientCNs, "*") {
		return nil
	}
	cns := initialClusterNames(initial)
	for _, cn := range t.ClientCNs {
		if cn != "" && !slices.Contains(cns, cn) {
			cns = append(cns, cn)
		}
	}
	return cns
}

// memberClientTLS returns the member's own client config: t.Client
// verifying the server against its RootCAs and clientURL's host. The
// client may dial the member's private address (etcdlimit.go), whose IP
// no certificate names, and gRPC sets ServerName to the dialed address,
// so the name is pinned in VerifyConnection instead.
func (t *EtcdTLS) memberClientTLS(clientURL *url.URL) *tls.Config {
	c := t.Client.Clone()
	name, roots := clientURL.Hostname(), c.RootCAs
	c.InsecureSkipVerify = true // verified by VerifyConnection below
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("cluster: etcd member sent no certificate")
		}
		inter := x509.NewCertPool()
		for _, ic := range cs.PeerCertificates[1:] {
			inter.AddCert(ic)
		}
		if _, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
			Roots: roots, Intermediates: inter, DNSName: name,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}); err != nil {
			return fmt.Errorf("cluster: verify the etcd member's certificate for %s: %w", name, err)
		}
		return nil
	}
	return c
}

// EtcdClientTLS returns the TLS config of an etcd client authenticating
// with r's certificate, read from r at every handshake (so a certificate
// reloaded by r is used by the next connection), and verifying the
// server against r's CA pool as it is now and against the endpoint's
// host (gRPC sets ServerName to it). For clientv3.Config.TLS.
func EtcdClientTLS(r *tlsconf.Reloader) *tls.Config {
	getCert := r.ClientConfig("").GetClientCertificate
	return &tls.Config{
		MinVersion:           tls.VersionTLS12,
		RootCAs:              r.Pool(),
		GetClientCertificate: getCert,
	}
}

// checkEndpointSchemes checks that endpoints are all https when tlsCfg is
// set and all http otherwise.
func checkEndpointSchemes(endpoints []string, tlsCfg *tls.Config) error {
	for _, e := range endpoints {
		u, err := url.Parse(e)
		if err != nil {
			return fmt.Errorf("cluster: etcd endpoint %q: %w", e, err)
		}
		switch {
		case tlsCfg != nil && u.Scheme != "https":
			return fmt.Errorf("%w: endpoint %s: with TLS every etcd endpoint must be https://", errEtcdTLSScheme, e)
		case tlsCfg == nil && u.Scheme == "https":
			return fmt.Errorf("%w: endpoint %s: https needs a client certificate (--tls-cert, --tls-key, --tls-ca)", errEtcdTLSScheme, e)
		}
	}
	return nil
}
