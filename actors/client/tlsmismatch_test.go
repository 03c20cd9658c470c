// tlsmismatch_test.go: the probe behind the TLS-mismatch error.

package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
)

// TestSpeaksTLS: a TLS remote (mutual TLS required) is recognized, a
// plain-text one is not, a closed port is an error; explainDeadLetter
// turns a dead letter into ErrTLSMismatch only when the probe disagrees
// with the client's own setting, and leaves other errors alone.
func TestSpeaksTLS(t *testing.T) {
	pki := newTestPKI(t, "test CA")
	tlsAddr, _ := startTLSRemote(t, WithTLS(pki.host("host1"), tls.RequireAndVerifyClientCert))
	plainAddr, _ := startTLSRemote(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if got, err := speaksTLS(ctx, tlsAddr); !got || err != nil {
		t.Errorf("TLS remote: speaksTLS = %v, %v; want true", got, err)
	}
	if got, err := speaksTLS(ctx, plainAddr); got || err != nil {
		t.Errorf("plain-text remote: speaksTLS = %v, %v; want false", got, err)
	}
	if _, err := speaksTLS(ctx, closed); err == nil {
		t.Error("closed port: no error")
	}

	dead := fmt.Errorf("client: request: %w", actor.ErrDeadLetter)
	for _, tc := range []struct {
		name     string
		err      error
		addr     string
		tlsOn    bool
		mismatch bool
	}{
		{"plain client, TLS host", dead, tlsAddr, false, true},
		{"TLS client, plain host", dead, plainAddr, true, true},
		{"TLS client, TLS host", dead, tlsAddr, true, false},
		{"plain client, plain host", dead, plainAddr, false, false},
		{"not a dead letter", errors.New("timeout"), tlsAddr, false, false},
		{"host gone", dead, closed, false, false},
	} {
		got := explainDeadLetter(ctx, tc.err, tc.addr, tc.tlsOn)
		if errors.Is(got, ErrTLSMismatch) != tc.mismatch {
			t.Errorf("%s: %v; TLS mismatch %v, want %v", tc.name, got, errors.Is(got, ErrTLSMismatch), tc.mismatch)
		}
		if !errors.Is(got, tc.err) {
			t.Errorf("%s: %v does not wrap %v", tc.name, got, tc.err)
		}
	}
}
