// etcdtls.go: the TLS of the commands that dial etcd themselves
// (`actorlog users|acls --etcd-endpoints`): https endpoints (hosts
// started with --etcd-tls) take a client certificate of the cluster's CA
// from --tls-cert, --tls-key and --tls-ca.

package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/internal/tlsconf"
)

// etcdTLS returns the TLS config for endpoints: nil when none is https,
// else one presenting --tls-cert and verifying the members against
// --tls-ca (cluster.EtcdClientTLS).
func (f adminFlags) etcdTLS(endpoints []string) (*tls.Config, error) {
	https := false
	for _, e := range endpoints {
		if u, err := url.Parse(e); err == nil && u.Scheme == "https" {
			https = true
		}
	}
	if !https {
		return nil, nil
	}
	if f.tlsCert == "" || f.tlsKey == "" || f.tlsCA == "" {
		return nil, errors.New("--etcd-endpoints: https endpoints need a client certificate of the cluster's CA: --tls-cert, --tls-key and --tls-ca")
	}
	r, err := tlsconf.NewReloader(tlsconf.Files{Cert: f.tlsCert, Key: f.tlsKey, CA: f.tlsCA}, nil)
	if err != nil {
		return nil, fmt.Errorf("--etcd-endpoints TLS: %w", err)
	}
	return cluster.EtcdClientTLS(r), nil
}
