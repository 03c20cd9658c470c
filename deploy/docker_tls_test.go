// docker_tls_test.go: deploy/compose-tls.yaml brought up as a user would
// (the certs service, the hosts, the setup profile's users and ACLs), then
// driven from outside with franz-go over SASL_SSL + SCRAM-SHA-512: the
// admin creates a topic, app produces and consumes in its group, app is
// refused another topic, a plain-text client is refused, and after a host
// is SIGKILLed (docker kill) app's writes go on and nothing is lost.

package deploy_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// composeTLSKafkaPorts are the Kafka ports compose-tls.yaml publishes and
// advertises, in host order; the test moves them to free ports.
var composeTLSKafkaPorts = []string{"19093", "29093", "39093"}

// tlsComposeFile writes compose-tls.yaml with its Kafka ports moved to
// free ones (published and advertised alike: clients outside Docker dial
// what the hosts advertise) and the other published ports left to Docker.
// It returns the file and the Kafka addresses.
func tlsComposeFile(t *testing.T) (string, []string) {
	t.Helper()
	src, err := os.ReadFile("compose-tls.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	var addrs []string
	for _, p := range composeTLSKafkaPorts {
		if n := strings.Count(text, "127.0.0.1:"+p); n < 2 {
			t.Fatalf("compose-tls.yaml names 127.0.0.1:%s %d times, want it published and advertised", p, n)
		}
		free := freePort(t)
		text = strings.ReplaceAll(text, "127.0.0.1:"+p, "127.0.0.1:"+free)
		addrs = append(addrs, "127.0.0.1:"+free)
	}
	staged := filepath.Join(t.TempDir(), "compose-tls.yaml")
	if err := os.WriteFile(staged, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	file := rewriteComposeFile(t, t.TempDir(), staged, func(port string) bool { return strings.HasSuffix(port, ":9092") })
	return file, addrs
}

// freePort returns a loopback TCP port free at the time of the call.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

func TestDockerClusterTLS(t *testing.T) {
	compose := requireDocker(t)
	buildImage(t)
	file, seeds := tlsComposeFile(t)
	start := time.Now()
	c := startClusterFile(t, compose, file)
	c.cliArgs = []string{"--tls-cert", "/certs/admin.crt", "--tls-key", "/certs/admin.key", "--tls-ca", "/certs/ca.crt"}
	v, took := c.waitHealthy("host1", 2*time.Minute, "TLS cluster formed")
	t.Logf("TLS cluster formed %v after up (%v since start): %v", took.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), v)

	// The CLI without a certificate is refused by the remote.
	saved := c.cliArgs
	c.cliArgs = nil
	if out, err := c.cli("host1", "", "topics", "list"); err == nil {
		t.Fatalf("CLI without a client certificate listed topics: %q", out)
	}
	c.cliArgs = saved

	if out, err := c.composeRun(3*time.Minute, "--profile", "setup", "up", "-d"); err != nil {
		t.Fatalf("compose --profile setup up: %v\n%s", err, out)
	}
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	c.docker("cp", c.ids["host1"]+":/certs/ca.crt", caFile)
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("no certificate in the cluster's ca.crt")
	}
	tlsCfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	client := func(user, pass string, opts ...kgo.Opt) *kgo.Client {
		t.Helper()
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.DialTLSConfig(tlsCfg.Clone()),
			kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()), kgo.RetryTimeout(20 * time.Second)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// The setup profile's users and ACLs, seen through the admin.
	adm := kadm.NewClient(client("admin", "admin-secret"))
	waitFor(t, 90*time.Second, "setup profile: users admin and app, app's two ACLs", func() error {
		actx, acancel := context.WithTimeout(ctx, 10*time.Second)
		defer acancel()
		users, err := adm.DescribeUserSCRAMs(actx)
		if err != nil {
			return fmt.Errorf("describe users: %w", err)
		}
		if _, ok := users["app"]; !ok {
			return fmt.Errorf("users %v: no app", users)
		}
		acls, err := adm.DescribeACLs(actx, kadm.NewACLs().Allow("User:app").AllowHosts().AnyResource().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
		if err != nil {
			return fmt.Errorf("describe ACLs: %w", err)
		}
		n := 0
		for _, r := range acls {
			if r.Err != nil {
				return fmt.Errorf("describe ACLs: %w", r.Err)
			}
			n += len(r.Described)
		}
		if n < 3 { // READ+WRITE on app- topics, READ on app- groups
			return fmt.Errorf("%d ACL bindings for User:app, want 3", n)
		}
		return nil
	})

	for _, topic := range []string{"app-events", "orders"} {
		resp, err := adm.CreateTopic(ctx, 3, 3, nil, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatalf("admin creates %s: %v", topic, err)
		}
	}

	app := client("app", "app-secret", kgo.DefaultProduceTopic("app-events"))
	var want []string
	produce := func(from, n int) {
		t.Helper()
		var rs []*kgo.Record
		for i := from; i < from+n; i++ {
			v := fmt.Sprintf("tls-%04d", i)
			want = append(want, v)
			rs = append(rs, &kgo.Record{Key: []byte(v), Value: []byte(v)})
		}
		if err := app.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("app produces records %d..%d: %v", from, from+n-1, err)
		}
	}
	produce(0, 200)
	consumeAll := func(group string) {
		t.Helper()
		cl := client("app", "app-secret", kgo.ConsumeTopics("app-events"), kgo.ConsumerGroup(group),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		var got []string
		for len(got) < len(want) && ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			for _, fe := range fs.Errors() {
				if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
					t.Fatalf("group %s fetch: %v", group, fe.Err)
				}
			}
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		if err := sameRecords(got, want); err != nil {
			t.Fatalf("group %s: %v", group, err)
		}
	}
	consumeAll("app-readers")

	// app may not write to orders; the error names the refusal.
	err = app.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("app produces to orders: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	// A plain-text Kafka client gets no answer.
	plain, err := kgo.NewClient(kgo.SeedBrokers(seeds[0]), kgo.DialTimeout(3*time.Second), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
	if err := plain.Ping(pctx); err == nil {
		t.Error("a plain-text Kafka client was answered by the TLS listener")
	}
	pcancel()
	plain.Close()

	// SIGKILL a host; app's writes go on, nothing acknowledged is lost.
	victim := "host3"
	c.docker("kill", c.ids[victim])
	killed := time.Now()
	produce(200, 100)
	t.Logf("docker kill %s: 100 more records acknowledged %v after the kill", victim, time.Since(killed).Round(time.Millisecond))
	consumeAll("app-readers-after-kill")
	t.Logf("TestDockerClusterTLS took %v after the image build", time.Since(start).Round(time.Millisecond))
}
