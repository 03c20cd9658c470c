// Package remotetlstest starts a host whose actor remote speaks TLS
// (Config.RemoteTLS) and reaches it with the Go client from a child
// process (this test binary re-executed, TestMain): a host and a client in
// one process race in protoactor's global gRPC logger set-up (DESIGN §8).
package remotetlstest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/host"
	"github.com/actorlog/actorlog/internal/certs/certstest"
	"github.com/actorlog/actorlog/internal/tlsconf"
)

// Environment of the client process.
const (
	envClient = "ACTORLOG_REMOTETLSTEST_CLIENT" // the host's address
	envCert   = "ACTORLOG_REMOTETLSTEST_CERT"   // empty: plain text
	envKey    = "ACTORLOG_REMOTETLSTEST_KEY"
	envCA     = "ACTORLOG_REMOTETLSTEST_CA"
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(envClient); addr != "" {
		if err := runClient(addr); err != nil {
			fmt.Println("RESULT ERR:", err)
		} else {
			fmt.Println("RESULT OK")
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runClient creates a topic on the host at addr and reads it back.
func runClient(addr string) error {
	l := logrus.New()
	l.SetLevel(logrus.ErrorLevel)
	cfg := client.Config{Bootstrap: []string{addr}, RequestTimeout: 5 * time.Second, Logger: logrus.NewEntry(l)}
	if cert := os.Getenv(envCert); cert != "" {
		r, err := tlsconf.NewReloader(tlsconf.Files{Cert: cert, Key: os.Getenv(envKey), CA: os.Getenv(envCA)}, nil)
		if err != nil {
			return fmt.Errorf("reloader: %w", err)
		}
		cfg.TLS = r
	}
	c, err := client.New(cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.CreateTopic(ctx, "tls-topic", 1, 1, nil); err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	md, err := c.Metadata(ctx, "tls-topic")
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	if len(md.GetTopics()) != 1 || md.GetTopics()[0].GetName() != "tls-topic" {
		return fmt.Errorf("metadata %v", md)
	}
	return nil
}

// runClientProcess runs the client process against addr with f (zero:
// plain text) and returns its result line.
func runClientProcess(t *testing.T, addr string, f tlsconf.Files) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envClient+"="+addr, envCert+"="+f.Cert, envKey+"="+f.Key, envCA+"="+f.CA)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client process: %v (output %q)", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "RESULT ") {
			return line
		}
	}
	t.Fatalf("client process printed no result: %q", out)
	return ""
}

func TestTLSHostServesTLSClient(t *testing.T) {
	dir := t.TempDir()
	ca := certstest.NewCA(t, dir)
	hostFiles := certstest.WritePair(t, ca, dir, "host1", true)
	app := certstest.WritePair(t, ca, dir, "app", false)
	base := func() host.Config {
		return host.Config{
			Name: "host1", DataDir: t.TempDir(), Listen: net.JoinHostPort("127.0.0.1", strconv.Itoa(clustertest.FreePortBase(t))), HTTP: "off",
			KafkaListen: host.KafkaOff, EtcdUnsafeNoFsync: true, Logger: clustertest.Logger(t).Logger,
			TLSCert: hostFiles.Cert, TLSKey: hostFiles.Key, TLSCA: hostFiles.CA, RemoteTLS: true,
			// The TLS remote enforces ACLs (--authorizer auto); this test
			// is about TLS, not ACLs (host/remoteacltest).
			AllowEveryoneIfNoACLFound: true,
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A certificate that is not this host's is refused at start.
	for _, tc := range []struct {
		name string
		edit func(c *host.Config)
	}{
		{"client certificate", func(c *host.Config) { c.TLSCert, c.TLSKey = app.Cert, app.Key }},
		{"another host's certificate", func(c *host.Config) { c.Name = "host2" }},
		{"no certificate", func(c *host.Config) { c.TLSCert, c.TLSKey, c.TLSCA = "", "", "" }},
	} {
		cfg := base()
		tc.edit(&cfg)
		if h, err := host.Start(ctx, cfg); err == nil {
			if serr := h.Shutdown(ctx); serr != nil {
				t.Errorf("shut down: %v", serr)
			}
			t.Fatalf("%s: host started with --remote-tls", tc.name)
		} else if !strings.Contains(err.Error(), "remote") {
			t.Errorf("%s: error %q does not name the remote", tc.name, err)
		}
	}

	cfg := base()
	h, err := host.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start TLS host: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Errorf("shut the host down: %v", err)
		}
	})
	if got := runClientProcess(t, cfg.Listen, app); got != "RESULT OK" {
		t.Fatalf("TLS client: %s", got)
	}
	// A plain-text client is told the host speaks TLS, not "dead letter".
	if got := runClientProcess(t, cfg.Listen, tlsconf.Files{}); !strings.HasPrefix(got, "RESULT ERR") || !strings.Contains(got, "speaks TLS on its actor remote") {
		t.Fatalf("plain-text client: %s, want an error saying the host speaks TLS", got)
	}
}
