// Package remoteacltest starts a host whose actor remote speaks TLS
// (Config.RemoteTLS, --authorizer auto: the remote enforces ACLs) and
// reaches it with the Go client from a child process (this test binary
// re-executed, TestMain): a host and a client in one process race in
// protoactor's global gRPC logger set-up (DESIGN §8). User:admin (a super
// user) creates the topics; User:app, allowed to WRITE "allowed" and to
// DESCRIBE "denied", produces to both.
package remoteacltest

import (
	"context"
	"errors"
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
	"github.com/actorlog/actorlog/actors/producer"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/host"
	"github.com/actorlog/actorlog/internal/acl"
	"github.com/actorlog/actorlog/internal/certs/certstest"
	"github.com/actorlog/actorlog/internal/tlsconf"
	"github.com/actorlog/actorlog/messages"
)

// Environment of the client process.
const (
	envClient = "ACTORLOG_REMOTEACLTEST_CLIENT" // the host's address
	envMode   = "ACTORLOG_REMOTEACLTEST_MODE"   // setup or produce
	envCert   = "ACTORLOG_REMOTEACLTEST_CERT"
	envKey    = "ACTORLOG_REMOTEACLTEST_KEY"
	envCA     = "ACTORLOG_REMOTEACLTEST_CA"
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(envClient); addr != "" {
		if err := runClient(addr, os.Getenv(envMode)); err != nil {
			fmt.Println("RESULT ERR:", err)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runClient, in mode setup, creates the topics; in mode produce it waits
// until the host knows the ACLs (app may describe "allowed"), then
// produces a record to each topic and prints the outcome of each.
func runClient(addr, mode string) error {
	l := logrus.New()
	l.SetLevel(logrus.ErrorLevel)
	r, err := tlsconf.NewReloader(tlsconf.Files{Cert: os.Getenv(envCert), Key: os.Getenv(envKey), CA: os.Getenv(envCA)}, nil)
	if err != nil {
		return fmt.Errorf("reloader: %w", err)
	}
	c, err := client.New(client.Config{Bootstrap: []string{addr}, RequestTimeout: 5 * time.Second, Logger: logrus.NewEntry(l), TLS: r})
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	switch mode {
	case "setup":
		for _, topic := range []string{"allowed", "denied"} {
			if _, err := c.CreateTopic(ctx, topic, 1, 1, nil); err != nil {
				return fmt.Errorf("create topic %s: %w", topic, err)
			}
		}
		fmt.Println("RESULT OK")
		return nil
	case "produce":
	default:
		return fmt.Errorf("mode %q", mode)
	}
	for {
		md, err := c.Metadata(ctx, "allowed")
		if err == nil && len(md.GetTopics()) == 1 && md.GetTopics()[0].GetErrorCode() == 0 && len(md.GetTopics()[0].GetPartitions()) == 1 &&
			md.GetTopics()[0].GetPartitions()[0].GetLeader() > 0 {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("topic allowed never became describable and led: %v, %w", md, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	p, err := producer.New(c, producer.ActorConfig{})
	if err != nil {
		return err
	}
	defer func() {
		if err := p.Close(ctx); err != nil {
			fmt.Println("close producer:", err)
		}
	}()
	for _, topic := range []string{"allowed", "denied"} {
		off, err := p.Produce(ctx, producer.Send{Topic: topic, Partition: 0, Value: []byte("v")})
		if err != nil {
			fmt.Printf("PRODUCE %s ERR %v (authorization %v)\n", topic, err,
				errors.Is(err, &messages.Error{Code: messages.ErrorCode_ERROR_CODE_TOPIC_AUTHORIZATION_FAILED}))
		} else {
			fmt.Printf("PRODUCE %s OK %d\n", topic, off)
		}
	}
	fmt.Println("RESULT OK")
	return nil
}

// runClientProcess runs the client in mode with f and returns its lines.
func runClientProcess(t *testing.T, addr, mode string, f tlsconf.Files) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envClient+"="+addr, envMode+"="+mode, envCert+"="+f.Cert, envKey+"="+f.Key, envCA+"="+f.CA)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client process: %v (output %q)", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if lines[len(lines)-1] != "RESULT OK" {
		t.Fatalf("client process (%s): %q", mode, out)
	}
	return lines
}

func TestRemoteACLsOnHost(t *testing.T) {
	dir := t.TempDir()
	ca := certstest.NewCA(t, dir)
	hostFiles := certstest.WritePair(t, ca, dir, "host1", true)
	app := certstest.WritePair(t, ca, dir, "app", false)
	admin := certstest.WritePair(t, ca, dir, "admin", false)
	base := clustertest.FreePortBase(t)
	cfg := host.Config{
		Name: "host1", DataDir: t.TempDir(), Listen: net.JoinHostPort("127.0.0.1", strconv.Itoa(base)), HTTP: "off",
		KafkaListen: host.KafkaOff, EtcdUnsafeNoFsync: true, Logger: clustertest.Logger(t).Logger,
		TLSCert: hostFiles.Cert, TLSKey: hostFiles.Key, TLSCA: hostFiles.CA, RemoteTLS: true,
		SuperUsers: []string{"User:admin"}, // Authorizer: auto, enforced on the TLS remote
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
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
	runClientProcess(t, cfg.Listen, "setup", admin)

	etcd, err := cluster.ConnectEtcd(ctx, []string{"http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(base+2))}, 10*time.Second, clustertest.Logger(t))
	if err != nil {
		t.Fatalf("connect to the host's etcd: %v", err)
	}
	defer func() {
		if err := etcd.Close(); err != nil {
			t.Errorf("close etcd client: %v", err)
		}
	}()
	bind := func(name string, op acl.Operation) acl.Binding {
		return acl.Binding{Principal: "User:app", Host: "*", Resource: acl.ResourceTopic, Pattern: acl.PatternLiteral, Name: name, Operation: op, Permission: acl.Allow}
	}
	if err := cluster.NewStore(etcd, "", clustertest.Logger(t)).AddACLs(ctx, []acl.Binding{bind("allowed", acl.OpWrite), bind("denied", acl.OpDescribe)}); err != nil {
		t.Fatalf("add ACLs: %v", err)
	}

	lines := strings.Join(runClientProcess(t, cfg.Listen, "produce", app), "\n")
	if !strings.Contains(lines, "PRODUCE allowed OK 0") {
		t.Errorf("produce to allowed: %s", lines)
	}
	if !strings.Contains(lines, `PRODUCE denied ERR`) || !strings.Contains(lines, `not authorized to WRITE topic "denied"`) ||
		!strings.Contains(lines, "(authorization true)") {
		t.Errorf("produce to denied: %s; want TOPIC_AUTHORIZATION_FAILED naming WRITE and the topic", lines)
	}
}
