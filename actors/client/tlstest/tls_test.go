// Package tlstest runs the client's TLS remote (remotetls.go) between two
// real protoactor actor systems. Two remotes in one test process race in
// protoactor's global gRPC logger set-up (DESIGN §8), so the sending side
// runs in a child process: this test binary re-executed with
// ACTORLOG_TLSTEST_SENDER set (TestMain).
//
// The test process is "host1": a TLS remote requiring client certificates,
// knowing host ids 1-3 by name, with a probe actor that records each
// message's type and principal (client.PrincipalOf) and answers a
// MetadataRequest. Each child sends host-only requests, a MetadataRequest
// with a forged principal header, then asks the probe (a request, answered
// over the connection host1 dials back to the child) and prints the
// outcome.
package tlstest

import (
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/internal/certs"
	"github.com/actorlog/actorlog/internal/tlsconf"
	"github.com/actorlog/actorlog/messages"
)

// Environment of the sender process.
const (
	envSender = "ACTORLOG_TLSTEST_SENDER" // the probe's address
	envCert   = "ACTORLOG_TLSTEST_CERT"   // empty: plain text
	envKey    = "ACTORLOG_TLSTEST_KEY"
	envCA     = "ACTORLOG_TLSTEST_CA"
)

const probeID = "probe"

func TestMain(m *testing.M) {
	if addr := os.Getenv(envSender); addr != "" {
		if err := sender(addr); err != nil {
			fmt.Println("REPLY ERR:", err)
		} else {
			fmt.Println("REPLY OK")
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func quiet() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}

// sender is the child process: it sends the test's messages to the probe
// at addr and waits for the probe's answer to the last one.
func sender(addr string) error {
	var opts []client.RemoteOption
	if cert := os.Getenv(envCert); cert != "" {
		r, err := tlsconf.NewReloader(tlsconf.Files{Cert: cert, Key: os.Getenv(envKey), CA: os.Getenv(envCA)}, nil)
		if err != nil {
			return fmt.Errorf("reloader: %w", err)
		}
		opts = append(opts, client.WithTLS(r, tls.RequireAndVerifyClientCert))
	}
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return client.NewSlogLogger(quiet()) }))
	cfg, err := client.RemoteConfig("127.0.0.1:0", "", append(opts, client.WithGuardLogger(quiet()))...)
	if err != nil {
		return err
	}
	r, err := client.StartRemote(system, cfg)
	if err != nil {
		return err
	}
	defer r.Shutdown(false)
	probe := actor.NewPID(addr, probeID)
	forged := map[string]string{client.PrincipalHeader: "Host:host1"}
	for _, m := range []proto.Message{
		&messages.FetchRequest{ReplicaId: 2, Topic: "t"},
		&messages.FetchRequest{ReplicaId: 3, Topic: "t"},
		&messages.FetchRequest{ReplicaId: -1, Topic: "t"},
		&messages.AlterPartitionRequest{LeaderId: 2},
		&messages.CreateOffsetsTopicRequest{Partitions: 1},
		&messages.MetadataRequest{Topics: []string{"forged"}},
	} {
		system.Root.Send(probe, &actor.MessageEnvelope{Header: forged, Message: m})
	}
	res, err := system.Root.RequestFuture(probe, &messages.MetadataRequest{Topics: []string{"last"}}, 5*time.Second).Result()
	if err != nil {
		return err
	}
	if _, ok := res.(*messages.MetadataResponse); !ok {
		return fmt.Errorf("answer %T", res)
	}
	return nil
}

// got is what the probe received.
type got struct {
	what      string // type name, and the topic of a MetadataRequest
	principal string
}

// startProbe runs host1's TLS remote and the probe actor; it returns the
// probe's address and what it receives.
func startProbe(t *testing.T, r *tlsconf.Reloader) (string, chan got) {
	t.Helper()
	names := map[int32]string{1: "host1", 2: "host2", 3: "host3"}
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return client.NewSlogLogger(quiet()) }))
	cfg, err := client.RemoteConfig("127.0.0.1:0", "", client.WithGuardLogger(quiet()), client.WithTLS(r, tls.RequireAndVerifyClientCert),
		client.WithHostNames(func(id int32) (string, bool) { n, ok := names[id]; return n, ok }))
	if err != nil {
		t.Fatal(err)
	}
	rem, err := client.StartRemote(system, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rem.Shutdown(false); system.Shutdown() })
	ch := make(chan got, 100)
	_, err = system.Root.SpawnNamed(actor.PropsFromFunc(func(ctx actor.Context) {
		m, ok := ctx.Message().(proto.Message)
		if !ok {
			return // lifecycle messages
		}
		what := string(m.ProtoReflect().Descriptor().Name())
		if md, ok := m.(*messages.MetadataRequest); ok {
			what += " " + strings.Join(md.Topics, ",")
		}
		p, ok := client.PrincipalOf(ctx)
		ps := "<none>"
		if ok {
			ps = p.String()
		}
		ch <- got{what: what, principal: ps}
		if ctx.Sender() != nil {
			ctx.Respond(&messages.MetadataResponse{})
		}
	}), probeID)
	if err != nil {
		t.Fatal(err)
	}
	return system.Address(), ch
}

// pki writes a CA's certificate and the named certificates into dir.
type pki struct {
	t   *testing.T
	dir string
	ca  *certs.KeyPair
}

func newPKI(t *testing.T, name string) *pki {
	t.Helper()
	ca, err := certs.NewCA(name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	return &pki{t: t, dir: dir, ca: ca}
}

// issue writes a host (host true) or client certificate and returns its
// files.
func (p *pki) issue(name string, host bool) tlsconf.Files {
	p.t.Helper()
	var kp *certs.KeyPair
	var err error
	if host {
		kp, err = p.ca.IssueHost(name, nil, time.Hour)
	} else {
		kp, err = p.ca.IssueClient(name, time.Hour)
	}
	if err != nil {
		p.t.Fatal(err)
	}
	f := tlsconf.Files{Cert: filepath.Join(p.dir, name+".crt"), Key: filepath.Join(p.dir, name+".key"), CA: filepath.Join(p.dir, "ca.crt")}
	if err := kp.WriteFiles(f.Cert, f.Key); err != nil {
		p.t.Fatal(err)
	}
	return f
}

// runSender runs the sender process with files (zero: plain text) and
// returns its outcome line.
func runSender(t *testing.T, addr string, f tlsconf.Files) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envSender+"="+addr, envCert+"="+f.Cert, envKey+"="+f.Key, envCA+"="+f.CA)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sender process: %v (output %q)", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "REPLY ") {
			return line
		}
	}
	t.Fatalf("sender process printed no outcome: %q", out)
	return ""
}

// drain returns what the probe received within wait.
func drain(ch chan got, wait time.Duration) []got {
	var out []got
	deadline := time.After(wait)
	for {
		select {
		case g := <-ch:
			out = append(out, g)
		case <-deadline:
			return out
		}
	}
}

func TestRemoteTLSBetweenActorSystems(t *testing.T) {
	ca := newPKI(t, "ca")
	host1, err := tlsconf.NewReloader(ca.issue("host1", true), nil)
	if err != nil {
		t.Fatal(err)
	}
	addr, ch := startProbe(t, host1)
	other := newPKI(t, "other")
	for _, tc := range []struct {
		name  string
		files tlsconf.Files
		reply string
		want  []got // in order
	}{
		{"host2 certificate", ca.issue("host2", true), "REPLY OK", []got{
			{"FetchRequest", "Host:host2"}, // replica 2 only: it cannot fetch as host 3
			{"FetchRequest", "Host:host2"}, // the consumer fetch
			{"AlterPartitionRequest", "Host:host2"},
			{"CreateOffsetsTopicRequest", "Host:host2"},
			{"MetadataRequest forged", "Host:host2"},
			{"MetadataRequest last", "Host:host2"},
		}},
		{"client certificate", ca.issue("app", false), "REPLY OK", []got{
			{"FetchRequest", "User:app"}, // the consumer fetch only
			{"MetadataRequest forged", "User:app"},
			{"MetadataRequest last", "User:app"},
		}},
		{"plain text", tlsconf.Files{}, "REPLY ERR", nil},
		{"certificate of another CA", other.issue("host2", true), "REPLY ERR", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if out := runSender(t, addr, tc.files); !strings.HasPrefix(out, tc.reply) {
				t.Fatalf("sender: %s, want %s", out, tc.reply)
			}
			recv := drain(ch, 300*time.Millisecond)
			if fmt.Sprint(recv) != fmt.Sprint(tc.want) {
				t.Fatalf("probe received\n%v\nwant\n%v", recv, tc.want)
			}
		})
	}
}
