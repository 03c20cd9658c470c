// kafka_sasl_e2e_test.go: a host process whose Kafka listener requires
// TLS and SCRAM-SHA-512 (SASL_SSL): the first user added straight to the
// metadata store with `actorlog users add --etcd-endpoints`, a kgo client
// producing and consuming over SASL_SSL, `users list` through the listener
// (kadm), refused plain-text and wrong-password clients, and a SIGHUP
// reload of the TLS files.

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/actorlog/actorlog/internal/certs"
	"github.com/actorlog/actorlog/internal/poll"
)

func TestKafkaSASLSSLHostProcess(t *testing.T) {
	const topic, n = "sasl-e2e", 200
	dir := t.TempDir()
	ca, err := certs.NewCA("e2e CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	hostKP, err := ca.IssueHost("host1", nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	caPath, hostCert, hostKey := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "host.crt"), filepath.Join(dir, "host.key")
	if err := ca.WriteFiles(caPath, filepath.Join(dir, "ca.key")); err != nil {
		t.Fatal(err)
	}
	if err := hostKP.WriteFiles(hostCert, hostKey); err != nil {
		t.Fatal(err)
	}

	h, addr := startKafkaHost(t, "--tls-cert", hostCert, "--tls-key", hostKey, "--tls-ca", caPath,
		"--kafka-sasl-mechanisms", "SCRAM-SHA-512", "--kafka-client-auth", "request")
	etcd := "http://127.0.0.1:" + strconv.Itoa(h.base+2)
	h.mustCLI("alice-pw\n", "users", "add", "alice", "--password-stdin", "--etcd-endpoints", etcd)
	h.mustCLI("", "topics", "create", topic, "--partitions", "1")

	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	tlsCfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	auth := scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha512Mechanism()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(tlsCfg), kgo.SASL(auth),
		kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic), kgo.RecordRetries(5))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("v%04d", i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d over SASL_SSL: %v\nhost log:\n%s", i, err, h.log())
		}
	}
	var got []string
	for len(got) < n && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		if errs := fs.Errors(); len(errs) > 0 && ctx.Err() == nil {
			t.Fatalf("fetch over SASL_SSL: %v", errs)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if len(got) != n {
		t.Fatalf("consumed %d of %d records", len(got), n)
	}
	for i, v := range got {
		if want := fmt.Sprintf("v%04d", i); v != want {
			t.Fatalf("record %d is %q, want %q", i, v, want)
		}
	}

	// users list through the listener, authenticated.
	out := h.mustCLI("", "users", "list", "--kafka-bootstrap", addr, "--tls-ca", caPath, "--tls-server-name", "127.0.0.1",
		"--sasl-user", "alice", "--sasl-password", "alice-pw")
	if !strings.Contains(out, "alice") || !strings.Contains(out, "SCRAM-SHA-512") || !strings.Contains(out, "8192") {
		t.Fatalf("users list:\n%s", out)
	}

	metadata := func(opts ...kgo.Opt) error {
		c, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(0), kgo.DialTimeout(3 * time.Second)}, opts...)...)
		if err != nil {
			return err
		}
		defer c.Close()
		mctx, mcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer mcancel()
		_, err = kmsg.NewPtrMetadataRequest().RequestWith(mctx, c)
		return err
	}
	if err := metadata(); err == nil {
		t.Fatal("a plain-text client was served by the TLS listener")
	}
	if err := metadata(kgo.DialTLSConfig(tlsCfg)); err == nil {
		t.Fatal("a client without SASL was served")
	}
	wrong := scram.Auth{User: "alice", Pass: "nope"}.AsSha512Mechanism()
	if err := metadata(kgo.DialTLSConfig(tlsCfg), kgo.SASL(wrong)); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}

	// SIGHUP reloads the TLS files.
	if err := h.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, func() error {
		if !strings.Contains(h.log(), "SIGHUP: TLS files reloaded") {
			return errors.New("no reload line in the host log")
		}
		return nil
	})
	if err := metadata(kgo.DialTLSConfig(tlsCfg), kgo.SASL(auth)); err != nil {
		t.Fatalf("after the reload: %v", err)
	}
}

func TestUsersReadPassword(t *testing.T) {
	for _, tc := range []struct {
		name             string
		stdin, flag      string
		fromStdin, isSet bool
		want             string // "" means an error
	}{
		{"stdin line", "pw one\r\nrest", "", true, false, "pw one"},
		{"stdin without newline", "pw", "", true, false, "pw"},
		{"stdin empty", "\n", "", true, false, ""},
		{"flag", "", "p", false, true, "p"},
		{"flag empty", "", "", false, true, ""},
		{"both", "x\n", "y", true, true, ""},
		{"neither", "", "", false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readPassword(strings.NewReader(tc.stdin), tc.flag, tc.fromStdin, tc.isSet)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("got %q, want an error", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
