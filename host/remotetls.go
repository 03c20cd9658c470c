// remotetls.go: TLS on the host's actor remote (issue 16). With
// Config.RemoteTLS (--remote-tls) and --tls-cert/--tls-key/--tls-ca the
// remote speaks TLS both ways and requires a verified certificate of every
// peer, with the same material as the Kafka listener (h.tls, reloaded by
// ReloadTLS). Off by default for now: the CLI's commands and the Go
// client need a certificate of their own to reach such a host. The host's own
// certificate must be a host certificate for its --name, since other hosts
// accept host-only requests only from Host:<name> principals.
//
// The remote guard checks that a host-only request naming host id N comes
// from the principal of N's name (client.WithHostNames): hostNames keeps
// the id → name map of the host registrations, followed through the
// metadata store's host watch. An id it does not know yet is left to the
// actors' own checks.

package host

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/internal/tlsconf"
)

// remoteTLSOptions returns the remote options that put the actor remote
// on TLS, or none when Config.RemoteTLS is off. It loads the TLS files if the Kafka listener did not (h.tls),
// and refuses a certificate that does not name this host.
func (h *Host) remoteTLSOptions() ([]client.RemoteOption, error) {
	cfg := h.cfg
	if !cfg.RemoteTLS {
		if cfg.TLSCert != "" {
			h.logger.Warn("the actor remote runs in plain text although --tls-cert is set (no --remote-tls): anyone who can reach it can read and send its messages")
		}
		return nil, nil
	}
	if cfg.TLSCert == "" {
		return nil, errors.New("host: --remote-tls needs --tls-cert, --tls-key and --tls-ca")
	}
	if h.tls == nil {
		r, err := tlsconf.NewReloader(tlsconf.Files{Cert: cfg.TLSCert, Key: cfg.TLSKey, CA: cfg.TLSCA}, h.logger.WithField("listener", "remote"))
		if err != nil {
			return nil, fmt.Errorf("host: actor remote TLS: %w", err)
		}
		h.tls = r
	}
	p, err := tlsconf.PrincipalFromCert(h.tls.Leaf())
	if err != nil {
		return nil, fmt.Errorf("host: actor remote TLS: %w", err)
	}
	if !p.IsHost() || p.Name != cfg.Name {
		return nil, fmt.Errorf("host: actor remote TLS: --tls-cert %s names %s, not Host:%s: the remote needs a host certificate for this host (Subject CN=%s, OU=%s; `actorlog certs init --hosts %s`)",
			cfg.TLSCert, p, cfg.Name, cfg.Name, tlsconf.HostOU, cfg.Name)
	}
	h.remoteNames = &hostNames{}
	h.logger.WithField("principal", p.String()).Info("actor remote speaks TLS and requires peer certificates")
	return []client.RemoteOption{
		client.WithTLS(h.tls, tls.RequireAndVerifyClientCert),
		client.WithHostNames(h.remoteNames.lookup),
	}, nil
}

// hostNames maps host ids to host names for the remote guard. Safe for
// concurrent use; lookup is lock-free.
type hostNames struct {
	names atomic.Pointer[map[int32]string]
	mu    sync.Mutex // guards stop
	stop  func()
}

// lookup returns the name of host id, if known.
func (n *hostNames) lookup(id int32) (string, bool) {
	m := n.names.Load()
	if m == nil {
		return "", false
	}
	name, ok := (*m)[id]
	return name, ok
}

// follow keeps the map current from store's host registrations until
// close. Names are never removed: a host's name and id are bound for good
// (Store.ResolveHostID), and a lapsed registration may come back.
// Nil-safe.
func (n *hostNames) follow(store *cluster.Store, log *logrus.Entry) {
	if n == nil || store == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	n.mu.Lock()
	n.stop = func() {
		cancel()
		<-done
	}
	n.mu.Unlock()
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			snap, err := store.Snapshot(ctx)
			if err != nil {
				if ctx.Err() == nil {
					log.WithError(err).Warn("remote TLS: listing hosts failed; retrying")
					cluster.SleepCtx(ctx, time.Second)
				}
				continue
			}
			for _, hi := range snap.Hosts {
				n.add(hi.GetHostId(), hi.GetName())
			}
			for ev := range store.WatchHosts(ctx, snap.Revision) {
				if ev.Err != nil {
					if ctx.Err() == nil {
						log.WithError(ev.Err).Warn("remote TLS: host watch ended; listing again")
					}
					break
				}
				if ev.Type == cluster.EventPut && ev.Host != nil {
					n.add(ev.HostID, ev.Host.GetName())
				}
			}
		}
	}()
}

// add records id's name (copy on write).
func (n *hostNames) add(id int32, name string) {
	if name == "" {
		return
	}
	old := n.names.Load()
	if old != nil && (*old)[id] == name {
		return
	}
	m := make(map[int32]string, 8)
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	m[id] = name
	n.names.Store(&m)
}

// close stops following; nil-safe.
func (n *hostNames) close() {
	if n == nil {
		return
	}
	n.mu.Lock()
	stop := n.stop
	n.stop = nil
	n.mu.Unlock()
	if stop != nil {
		stop()
	}
}
