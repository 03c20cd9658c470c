// remotetls.go: the CLI side of TLS on the actor remote (issue 16). The
// commands that talk to hosts through the actor remote (topics, produce,
// consume, perf, cluster, groups) take --tls-cert, --tls-key and --tls-ca
// (or ACTORLOG_TLS_CERT, ...) to reach hosts started with --remote-tls:
// the certificate names the client's principal (User:<CN>), the CA
// verifies the hosts. `host` and `users` have --tls-* flags of their own,
// which take precedence on those commands.

package main

import (
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"
	"github.com/spf13/pflag"

	"github.com/actorlog/actorlog/internal/tlsconf"
)

// remoteTLSFlags are the remote TLS flags of the client commands.
type remoteTLSFlags struct {
	cert, key, ca string
}

// register adds the flags to fs (the root's persistent flags).
func (f *remoteTLSFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.cert, "tls-cert", "", "PEM client certificate for hosts whose actor remote speaks TLS (--remote-tls), with --tls-key and --tls-ca")
	fs.StringVar(&f.key, "tls-key", "", "PEM key of --tls-cert")
	fs.StringVar(&f.ca, "tls-ca", "", "PEM CA certificates the hosts' certificates are verified against")
}

// reloader loads the flags' files; nil without any (plain text). Some but
// not all of them is an error.
func (f *remoteTLSFlags) reloader(log *logrus.Entry) (*tlsconf.Reloader, error) {
	if f.cert == "" && f.key == "" && f.ca == "" {
		return nil, nil
	}
	if f.cert == "" || f.key == "" || f.ca == "" {
		return nil, errors.New("--tls-cert, --tls-key and --tls-ca go together (TLS to the hosts' actor remote)")
	}
	r, err := tlsconf.NewReloader(tlsconf.Files{Cert: f.cert, Key: f.key, CA: f.ca}, log)
	if err != nil {
		return nil, fmt.Errorf("remote TLS: %w", err)
	}
	return r, nil
}
