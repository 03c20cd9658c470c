// tlsmismatch.go: a clear error when a client and a host disagree about
// TLS on the actor remote. protoactor reports a connection that fails its
// handshake only as a dead letter, so when a bootstrap request ends that
// way the client probes the address once: a plain-text client finding a
// host that completes a TLS handshake (or a TLS client finding one that
// answers in plain text) is told so, with the flags that fix it.

package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// tlsProbeTimeout bounds the probe of a host after a dead letter.
const tlsProbeTimeout = time.Second

// ErrTLSMismatch: the client and a host disagree about TLS on the actor
// remote (one speaks it, the other does not).
var ErrTLSMismatch = errors.New("client: TLS mismatch with the host's actor remote")

// speaksTLS dials addr and starts a TLS handshake without verifying
// anything: true when the other side answers as a TLS server (a complete
// handshake, or a TLS alert such as "certificate required"), false when
// it answers in something else or closes. err: addr could not be probed.
func speaksTLS(ctx context.Context, addr string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, tlsProbeTimeout)
	defer cancel()
	d := tls.Dialer{Config: &tls.Config{
		InsecureSkipVerify: true, // a probe: nothing is sent over it
		MinVersion:         tls.VersionTLS12,
	}}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		return true, conn.Close()
	}
	var alert tls.AlertError
	var recHdr tls.RecordHeaderError
	var opErr *net.OpError
	switch {
	case errors.As(err, &alert):
		return true, nil
	case errors.As(err, &recHdr):
		return false, nil // "first record does not look like a TLS handshake"
	case errors.As(err, &opErr) && opErr.Op == "remote error":
		return true, nil // a TLS alert from the server
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return false, fmt.Errorf("probe %s: %w", addr, err)
	}
	return false, nil
}

// explainDeadLetter returns err, or, when err is a dead letter from addr
// and a probe shows the host's remote disagrees with tlsOn about TLS, an
// error wrapping ErrTLSMismatch that says what to configure.
func explainDeadLetter(ctx context.Context, err error, addr string, tlsOn bool) error {
	if !errors.Is(err, actor.ErrDeadLetter) {
		return err
	}
	hostTLS, perr := speaksTLS(ctx, addr)
	switch {
	case perr != nil || hostTLS == tlsOn:
		return err
	case hostTLS:
		return fmt.Errorf("%w: host %s speaks TLS on its actor remote (--remote-tls): give the client a certificate of the cluster's CA (Go: Config.TLS; CLI: --tls-cert, --tls-key, --tls-ca or ACTORLOG_TLS_*): %w", ErrTLSMismatch, addr, err)
	default:
		return fmt.Errorf("%w: host %s does not speak TLS on its actor remote (no --remote-tls) but the client does: drop the client's TLS settings or turn on --remote-tls: %w", ErrTLSMismatch, addr, err)
	}
}
