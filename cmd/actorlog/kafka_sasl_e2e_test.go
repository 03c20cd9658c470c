// kafka_sasl_e2e_test.go: a host process whose Kafka listener requires
// TLS and SCRAM-SHA-512 (SASL_SSL) and so enforces ACLs: users added
// straight to the metadata store with `actorlog users add
// --etcd-endpoints`; a user without ACLs refused (TOPIC_AUTHORIZATION_FAILED);
// the super user granting ACLs with kadm (CreateAcls, DescribeAcls) and
// the user unable to grant herself any; kgo producing and consuming in a
// group over SASL_SSL, refused in a group and a topic the ACLs do not
// name; sarama and kcat as the same user; `users list` through the
// listener (kadm); refused plain-text and wrong-password clients; and a
// SIGHUP reload of the TLS files.

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

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/actorlog/actorlog/internal/certs"
	"github.com/actorlog/actorlog/internal/poll"
)

func TestKafkaSASLSSLHostProcess(t *testing.T) {
	const topic, secret, n = "sasl-e2e", "secret", 200
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

	// SASL on: ACLs are enforced (--authorizer auto), admin is a super user.
	h, addr := startKafkaHost(t, "--tls-cert", hostCert, "--tls-key", hostKey, "--tls-ca", caPath,
		"--kafka-sasl-mechanisms", "SCRAM-SHA-512", "--kafka-client-auth", "request", "--super-users", "User:admin")
	etcd := "http://127.0.0.1:" + strconv.Itoa(h.base+2)
	h.mustCLI("alice-pw\n", "users", "add", "alice", "--password-stdin", "--etcd-endpoints", etcd)
	h.mustCLI("admin-pw\n", "users", "add", "admin", "--password-stdin", "--etcd-endpoints", etcd)
	h.mustCLI("", "topics", "create", topic, "--partitions", "1")
	h.mustCLI("", "topics", "create", secret, "--partitions", "1")

	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	tlsCfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	auth := scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha512Mechanism()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	client := func(opts ...kgo.Opt) *kgo.Client {
		c, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.DialTLSConfig(tlsCfg), kgo.RecordRetries(5)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}

	// Without ACLs alice may neither write nor read.
	cl := client(kgo.SASL(auth), kgo.DefaultProduceTopic(topic))
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce without an ACL: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// The super user grants them with kadm (CreateAcls) and lists them
	// (DescribeAcls).
	adm := kadm.NewClient(client(kgo.SASL(scram.Auth{User: "admin", Pass: "admin-pw"}.AsSha512Mechanism())))
	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:alice").Topics(topic).Operations(kadm.OpWrite, kadm.OpRead),
		kadm.NewACLs().Allow("User:alice").Groups("e2e-").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpRead),
	} {
		res, err := adm.CreateACLs(ctx, b)
		if err != nil {
			t.Fatalf("kadm CreateACLs: %v", err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("kadm CreateACLs %s %s: %v (%s)", r.Name, r.Operation, r.Err, r.ErrMessage)
			}
		}
	}
	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
		Operations().Allow().AllowHosts().Deny().DenyHosts())
	if err != nil {
		t.Fatalf("kadm DescribeACLs: %v", err)
	}
	listed := 0
	for _, d := range described {
		if d.Err != nil {
			t.Fatalf("kadm DescribeACLs: %v", d.Err)
		}
		listed += len(d.Described)
	}
	if listed != 3 {
		t.Fatalf("kadm DescribeACLs lists %d bindings, want 3: %+v", listed, described)
	}
	self, err := kadm.NewClient(cl).CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Clusters().Operations(kadm.OpAll))
	if err != nil || len(self) != 1 || !errors.Is(self[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice granting herself ALL on the cluster: %v %+v, want CLUSTER_AUTHORIZATION_FAILED", err, self)
	}

	// Now alice produces and consumes in group e2e-readers (the ACLs reach
	// the listener through the watch within milliseconds).
	poll.Until(t, 10*time.Second, func() error {
		return cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v0000")}).FirstErr()
	})
	for i := 1; i < n; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("v%04d", i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d over SASL_SSL: %v\nhost log:\n%s", i, err, h.log())
		}
	}
	got := consumeGroup(ctx, t, client(kgo.SASL(auth), kgo.ConsumeTopics(topic), kgo.ConsumerGroup("e2e-readers")), n)
	for i, v := range got {
		if want := fmt.Sprintf("v%04d", i); v != want {
			t.Fatalf("record %d is %q, want %q", i, v, want)
		}
	}
	// ... but not in a group the ACLs do not name, nor write to secret.
	other := client(kgo.SASL(auth), kgo.ConsumeTopics(topic), kgo.ConsumerGroup("other-readers"))
	poll.Until(t, 20*time.Second, func() error {
		for _, fe := range other.PollFetches(ctx).Errors() {
			if errors.Is(fe.Err, kerr.GroupAuthorizationFailed) {
				return nil
			}
		}
		return errors.New("no GROUP_AUTHORIZATION_FAILED yet")
	})
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: secret, Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce to %s: %v, want TOPIC_AUTHORIZATION_FAILED", secret, err)
	}

	// sarama (SCRAM-SHA-512 over TLS) and kcat (librdkafka) as alice.
	saramaSASL(t, addr, tlsCfg, topic, secret)
	kcatSASL(t, addr, caPath, topic, secret, n)

	// users list through the listener, authenticated.
	out := h.mustCLI("", "users", "list", "--kafka-bootstrap", addr, "--tls-ca", caPath, "--tls-server-name", "127.0.0.1",
		"--sasl-user", "admin", "--sasl-password", "admin-pw")
	if !strings.Contains(out, "alice") || !strings.Contains(out, "SCRAM-SHA-512") || !strings.Contains(out, "8192") {
		t.Fatalf("users list:\n%s", out)
	}
	// alice may not list users (DESCRIBE on the cluster).
	if stdout, stderr, err := h.cli("", "users", "list", "--kafka-bootstrap", addr, "--tls-ca", caPath, "--tls-server-name", "127.0.0.1",
		"--sasl-user", "alice", "--sasl-password", "alice-pw"); err == nil || !strings.Contains(stderr, "CLUSTER_AUTHORIZATION_FAILED") {
		t.Fatalf("users list as alice: %v\n%s%s", err, stdout, stderr)
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

// consumeGroup polls cl (a group consumer) until n records arrived and
// returns their values.
func consumeGroup(ctx context.Context, t *testing.T, cl *kgo.Client, n int) []string {
	t.Helper()
	var got []string
	for len(got) < n && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		if errs := fs.Errors(); len(errs) > 0 && ctx.Err() == nil {
			t.Fatalf("consume over SASL_SSL: %v", errs)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if len(got) != n {
		t.Fatalf("consumed %d of %d records", len(got), n)
	}
	return got
}

// saramaScram is sarama's SCRAMClient over franz-go's SCRAM, so sarama
// speaks SCRAM-SHA-512 without another SCRAM library.
type saramaScram struct {
	sess  sasl.Session
	first []byte
	done  bool
}

func (s *saramaScram) Begin(user, pass, _ string) error {
	sess, first, err := scram.Auth{User: user, Pass: pass}.AsSha512Mechanism().Authenticate(context.Background(), "")
	s.sess, s.first = sess, first
	return err
}

func (s *saramaScram) Step(challenge string) (string, error) {
	if s.first != nil {
		first := s.first
		s.first = nil
		return string(first), nil
	}
	done, resp, err := s.sess.Challenge([]byte(challenge))
	s.done = done
	return string(resp), err
}

func (s *saramaScram) Done() bool { return s.done }

// saramaSASL produces as alice with sarama over SASL_SSL: allowed to
// topic, TOPIC_AUTHORIZATION_FAILED to secret.
func saramaSASL(t *testing.T, addr string, tlsCfg *tls.Config, topic, secret string) {
	t.Helper()
	c := saramaConfig(sarama.V3_6_0_0)
	c.Net.TLS.Enable, c.Net.TLS.Config = true, tlsCfg
	c.Net.SASL.Enable, c.Net.SASL.Version, c.Net.SASL.Handshake = true, sarama.SASLHandshakeV1, true
	c.Net.SASL.Mechanism, c.Net.SASL.User, c.Net.SASL.Password = sarama.SASLTypeSCRAMSHA512, "alice", "alice-pw"
	c.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaScram{} }
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Retry.Max = 2
	p, err := sarama.NewSyncProducer([]string{addr}, c)
	if err != nil {
		t.Fatalf("sarama over SASL_SSL: %v", err)
	}
	defer func() {
		if err := p.Close(); err != nil {
			t.Errorf("close the sarama producer: %v", err)
		}
	}()
	if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("sarama")}); err != nil {
		t.Fatalf("sarama produce to %s: %v", topic, err)
	}
	if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: secret, Value: sarama.StringEncoder("sarama")}); !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		t.Fatalf("sarama produce to %s: %v, want TOPIC_AUTHORIZATION_FAILED", secret, err)
	}
}

// kcatSASL reads topic's first n records as alice with kcat over
// SASL_SSL, and checks that its metadata listing hides secret.
func kcatSASL(t *testing.T, addr, caPath, topic, secret string, n int) {
	t.Helper()
	conf := []string{"-b", addr, "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=SCRAM-SHA-512",
		"-X", "sasl.username=alice", "-X", "sasl.password=alice-pw", "-X", "ssl.ca.location=" + caPath}
	out, _ := rdkKcat(t, nil, append(conf, "-C", "-t", topic, "-o", "beginning", "-c", strconv.Itoa(n), "-e", "-q")...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != n || lines[0] != "v0000" {
		t.Fatalf("kcat read %d records (first %q), want %d from v0000", len(lines), lines[0], n)
	}
	md, _ := rdkKcat(t, nil, append(conf, "-L", "-J")...)
	if !strings.Contains(md, `"topic":"`+topic+`"`) || strings.Contains(md, `"topic":"`+secret+`"`) {
		t.Fatalf("kcat -L as alice lists:\n%s\nwant %s and not %s", md, topic, secret)
	}
}
