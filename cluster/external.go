// external.go connects a host that runs no etcd member of its own — a host
// beyond the first 3 or 5 voters, or a cluster on an external etcd — to
// the etcd cluster given by --etcd-endpoints.

package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap/zapcore"
)

// ParseEndpoints splits a comma-separated list of etcd client URLs
// ("http://host:port,..."), checking each.
func ParseEndpoints(list string) ([]string, error) {
	var out []string
	for _, e := range strings.Split(list, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Port() == "" {
			return nil, fmt.Errorf("cluster: etcd endpoint %q: want http://HOST:PORT (or https://)", e)
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("cluster: no etcd endpoints in %q", list)
	}
	return out, nil
}

// ConnectEtcd returns a client of the etcd cluster at endpoints, once one
// of them has answered a request; it fails with a clear error when none
// answers within timeout (or before ctx ends). The caller closes the client.
// The endpoints must be http://; ConnectEtcdTLS connects to https ones.
func ConnectEtcd(ctx context.Context, endpoints []string, timeout time.Duration, logger *logrus.Entry) (*clientv3.Client, error) {
	return ConnectEtcdTLS(ctx, endpoints, nil, timeout, logger)
}

// ConnectEtcdTLS is ConnectEtcd with TLS: with tlsCfg (e.g.
// EtcdClientTLS) every endpoint must be https://, without it http://.
func ConnectEtcdTLS(ctx context.Context, endpoints []string, tlsCfg *tls.Config, timeout time.Duration, logger *logrus.Entry) (*clientv3.Client, error) {
	if err := checkEndpointSchemes(endpoints, tlsCfg); err != nil {
		return nil, err
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: timeout,
		TLS:         tlsCfg,
		Logger:      newZapLogger(logger.WithField("component", "etcd-client"), zapcore.WarnLevel, new(atomic.Bool)).Named("etcd-client"),
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: etcd client for %s: %w", strings.Join(endpoints, ","), err)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// A linearizable read needs a leader with a quorum: the cluster
	// really works, not just a port that answers.
	if _, err := client.Get(cctx, "health-check"); err != nil {
		if cerr := client.Close(); cerr != nil {
			logger.WithError(cerr).Debug("closing the etcd client")
		}
		return nil, fmt.Errorf("cluster: etcd at %s did not answer within %v: %w", strings.Join(endpoints, ","), timeout, err)
	}
	return client, nil
}
