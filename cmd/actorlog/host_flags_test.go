// host_flags_test.go: `actorlog host` settings from a config file and the
// environment, and bad start-up input — a clear error at start and no
// damage to an existing data directory.

package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/actorlog/actorlog/internal/poll"
)

// hostMustFail runs `actorlog host args...` and returns its output; the
// test fails unless it exits non-zero within timeout.
func hostMustFail(t *testing.T, timeout time.Duration, args ...string) string {
	t.Helper()
	cmd := exec.Command(clusterBinPath, append([]string{"host"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("host %v started; want an error. Output:\n%s", args, out.String())
		}
	case <-time.After(timeout):
		if err := cmd.Process.Kill(); err != nil {
			t.Errorf("kill: %v", err)
		}
		<-done
		t.Fatalf("host %v did not fail within %v. Output:\n%s", args, timeout, out.String())
	}
	return out.String()
}

// lastLine is the error line a failed host prints last.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func TestHostBadStartInput(t *testing.T) {
	t.Parallel()
	port := strconv.Itoa(freeBase(t))
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"initial cluster without this host", []string{"--name", "h9", "--initial-cluster", "a=http://127.0.0.1:1,b=http://127.0.0.1:2"}, "does not include this host (h9)"},
		{"malformed initial cluster", []string{"--name", "h9", "--initial-cluster", "h9"}, "is not NAME=http://HOST:PEERPORT"},
		{"peer URL disagrees", []string{"--name", "h9", "--initial-cluster", "h9=http://127.0.0.1:5", "--etcd-peer", "127.0.0.1:6"}, "but --etcd-peer is"},
		{"unreachable etcd", []string{"--name", "h9", "--etcd-endpoints", "http://127.0.0.1:" + port}, "did not answer"},
		{"endpoints and a voter", []string{"--name", "h9", "--etcd-endpoints", "http://127.0.0.1:" + port, "--initial-cluster", "h9=http://127.0.0.1:5"}, "excludes"},
		{"bad name", []string{"--name", "no/slash"}, "host name"},
		{"bad lease", []string{"--lease-ttl", "500ms"}, "below etcd's minimum"},
		{"bad leader imbalance check interval", []string{"--leader-imbalance-check-interval", "-2s"}, "want a positive duration"},
		{"bad max opening replicas", []string{"--max-opening-replicas", "-1"}, "--max-opening-replicas -1: want at least 1"},
		{"bad offsets topic partitions", []string{"--offsets-topic-partitions", "-1"}, "--offsets-topic-partitions -1: want at least 1"},
		{"bad group rebalance delay", []string{"--group-initial-rebalance-delay", "-1s"}, "--group-initial-rebalance-delay -1s"},
		{"bad group session timeout", []string{"--group-min-session-timeout", "-1s"}, "--group-min-session-timeout -1s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := freeBase(t)
			dir := t.TempDir()
			args := append([]string{"--data-dir", dir, "--listen", "127.0.0.1:" + strconv.Itoa(base), "--http", "127.0.0.1:" + strconv.Itoa(base+3)}, c.args...)
			out := hostMustFail(t, 30*time.Second, args...)
			if line := lastLine(out); !strings.HasPrefix(line, "Error: ") || !strings.Contains(line, c.want) {
				t.Fatalf("last line %q, want an Error: containing %q; output:\n%s", line, c.want, out)
			}
			if _, err := os.Stat(filepath.Join(dir, "host.meta")); err == nil {
				t.Fatal("a refused start claimed the data directory (host.meta written)")
			}
		})
	}
}

func TestHostDataDirAndNameConflicts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := freeBase(t)
	a := &hostProc{t: t, dir: dir, base: base, logPath: filepath.Join(t.TempDir(), "host.log"), bin: clusterBinPath,
		extra: []string{"--name", "alpha"}}
	a.start()
	t.Cleanup(func() { a.stop(syscall.SIGKILL) })
	a.mustCLI("", "topics", "create", "keep", "--partitions", "1")
	a.mustCLI(strings.Repeat("record\n", 10), "produce", "keep")
	before, err := describe(a)
	if err != nil || len(before) != 1 || before[0].name != "alpha" {
		t.Fatalf("describe: %+v, %v", before, err)
	}

	// A second host with the same name joins through alpha's etcd: refused
	// once alpha's registration has not lapsed within one (short) TTL.
	b := freeBase(t)
	out := hostMustFail(t, 60*time.Second, "--name", "alpha", "--data-dir", t.TempDir(), "--lease-ttl", "2s",
		"--listen", "127.0.0.1:"+strconv.Itoa(b), "--http", "127.0.0.1:"+strconv.Itoa(b+3),
		"--etcd-endpoints", "http://127.0.0.1:"+strconv.Itoa(base+2))
	if line := lastLine(out); !strings.Contains(line, "a live host named alpha is registered already") {
		t.Fatalf("duplicate name: %q", line)
	}
	// The same data directory while alpha runs.
	out = hostMustFail(t, 30*time.Second, "--name", "alpha", "--data-dir", dir, "--listen", "127.0.0.1:"+strconv.Itoa(b), "--http", "off")
	if line := lastLine(out); !strings.Contains(line, "in use by another host") {
		t.Fatalf("shared data dir: %q", line)
	}
	after, err := describe(a)
	if err != nil || len(after) != 1 || after[0].epoch != before[0].epoch {
		t.Fatalf("alpha's registration changed: %+v → %+v (%v)", before, after, err)
	}

	// alpha's data directory under another name, once alpha is down.
	if code := a.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("alpha exited with %d", code)
	}
	out = hostMustFail(t, 30*time.Second, "--name", "beta", "--data-dir", dir, "--listen", a.addr(), "--http", a.httpAddr())
	if line := lastLine(out); !strings.Contains(line, `belongs to host "alpha"`) {
		t.Fatalf("foreign data dir: %q", line)
	}
	// Nothing was damaged: alpha starts again with its topic and records.
	a.start()
	if recs := a.consumeAll("keep", 10); len(recs) != 10 {
		t.Fatalf("after the refused starts: %d of 10 records", len(recs))
	}
}

func TestHostSettingsFromFileAndEnvironment(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "host.yaml")
	if err := os.WriteFile(cfg, []byte("# actorlog host settings\nname: from-file\nlease-ttl: 7s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(h *hostProc, want string) {
		t.Helper()
		lines, err := describe(h)
		if err != nil || len(lines) != 1 || lines[0].name != want {
			t.Fatalf("describe %+v (%v), want the host named %s", lines, err, want)
		}
	}
	// The file alone.
	h := startHost(t, t.TempDir(), freeBase(t), "--config", cfg)
	check(h, "from-file")
	// The environment wins over the file; the command line over both.
	e := &hostProc{t: t, dir: t.TempDir(), base: freeBase(t), logPath: filepath.Join(t.TempDir(), "host.log"),
		extra: []string{"--config", cfg}, env: []string{"ACTORLOG_NAME=from-env"}}
	e.start()
	t.Cleanup(func() { e.stop(syscall.SIGTERM) })
	check(e, "from-env")
	f := &hostProc{t: t, dir: t.TempDir(), base: freeBase(t), logPath: filepath.Join(t.TempDir(), "host.log"),
		extra: []string{"--config", cfg, "--name", "from-flag"}, env: []string{"ACTORLOG_NAME=from-env"}}
	f.start()
	t.Cleanup(func() { f.stop(syscall.SIGTERM) })
	check(f, "from-flag")

	// Bad settings are errors at start.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\nlisten-port: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if line := lastLine(hostMustFail(t, 30*time.Second, "--config", bad)); !strings.Contains(line, "unknown keys listen-port") {
		t.Fatalf("unknown key: %q", line)
	}
	cmd := exec.Command(clusterBinPath, "host", "--http", "off")
	cmd.Env = append(os.Environ(), "ACTORLOG_LEASE_TTL=soon")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(lastLine(string(out)), "ACTORLOG_LEASE_TTL") {
		t.Fatalf("bad environment value: %v %q", err, out)
	}
}

// TestHostKafkaFlags: --kafka-listen and --kafka-advertise. An explicit
// address (flag or environment) that cannot be bound, or one on every
// interface with nothing to advertise, fails the start; a host's Kafka
// Metadata names it at its --kafka-advertise address; "" runs no Kafka
// listener.
func TestHostKafkaFlags(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := busy.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	busyAddr := busy.Addr().String()
	for _, c := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"every interface, nothing to advertise", []string{"--listen", "0.0.0.0:" + strconv.Itoa(freeBase(t)), "--kafka-listen", "0.0.0.0:" + strconv.Itoa(freeBase(t))}, nil, "give --kafka-advertise"},
		{"no port", []string{"--kafka-listen", "127.0.0.1"}, nil, "--kafka-listen"},
		{"unspecified advertise", []string{"--kafka-advertise", "0.0.0.0:9092"}, nil, "--kafka-advertise"},
		{"advertise without a listener", []string{"--kafka-listen", "", "--kafka-advertise", "h:9092"}, nil, "without a Kafka listener"},
		{"explicit address in use", []string{"--kafka-listen", busyAddr}, nil, "--kafka-listen " + busyAddr},
		{"address in use from the environment", nil, []string{"ACTORLOG_KAFKA_LISTEN=" + busyAddr}, "--kafka-listen " + busyAddr},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := freeBase(t)
			args := append([]string{"host", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:" + strconv.Itoa(base), "--http", "off"}, c.args...)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, clusterBinPath, args...) // killed if it does not fail in time
			cmd.Env = append(os.Environ(), c.env...)
			out, err := cmd.CombinedOutput()
			if line := lastLine(string(out)); err == nil || !strings.HasPrefix(line, "Error: ") || !strings.Contains(line, c.want) {
				t.Fatalf("exit %v, last line %q; want an Error: containing %q. Output:\n%s", err, line, c.want, out)
			}
		})
	}

	// Listening on one address, advertising another name for it.
	port := strconv.Itoa(freeBase(t))
	h := startHost(t, t.TempDir(), freeBase(t), "--kafka-listen", "127.0.0.1:"+port, "--kafka-advertise", "localhost:"+port)
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:" + port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	poll.Until(t, 20*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		md, err := adm.Metadata(ctx)
		if err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
		if len(md.Brokers) != 1 || md.Brokers[0].Host != "localhost" || strconv.Itoa(int(md.Brokers[0].Port)) != port || md.Cluster == "" {
			return fmt.Errorf("brokers %+v, cluster %q: want one at localhost:%s and a cluster id", md.Brokers, md.Cluster, port)
		}
		return nil
	})
	poll.Until(t, 10*time.Second, func() error {
		if log := h.log(); !strings.Contains(log, `kafka_advertise="localhost:`+port+`"`) {
			return fmt.Errorf("the start line does not name the Kafka address; log:\n%s", log)
		}
		return nil
	})

	// "" turns it off.
	off := startHost(t, t.TempDir(), freeBase(t), "--kafka-listen", "")
	// The start line may follow /healthz's first ok by a moment.
	poll.Until(t, 10*time.Second, func() error {
		if log := off.log(); !strings.Contains(log, "no Kafka listener") || !strings.Contains(log, "kafka_listen=none") {
			return fmt.Errorf("--kafka-listen \"\": the log does not say it runs no Kafka listener:\n%s", log)
		}
		return nil
	})
}

// TestHostKafkaMetadataListsEveryHost: every host's Kafka address is part
// of its registration, so any host's Kafka Metadata lists every host with a
// Kafka listener (node id = host id) and each partition's replicas and ISR
// across hosts; a host without a Kafka listener is left out of the
// brokers. All hosts report the same cluster id.
func TestHostKafkaMetadataListsEveryHost(t *testing.T) {
	t.Parallel()
	a := startHost(t, t.TempDir(), freeBase(t), "--name", "ka", "--kafka-listen", "127.0.0.1:"+strconv.Itoa(freeBase(t)))
	etcd := "http://127.0.0.1:" + strconv.Itoa(a.base+2)
	bKafka := "127.0.0.1:" + strconv.Itoa(freeBase(t))
	startHost(t, t.TempDir(), freeBase(t), "--name", "kb", "--etcd-endpoints", etcd, "--kafka-listen", bKafka)
	startHost(t, t.TempDir(), freeBase(t), "--name", "kc", "--etcd-endpoints", etcd, "--kafka-listen", "")
	a.mustCLI("", "topics", "create", "spread", "--partitions", "4", "--replication-factor", "3")

	clusterIDs := map[string]bool{}
	for _, addr := range []string{kafkaAddrOf(t, a), bKafka} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MetadataMinAge(10*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		adm := kadm.NewClient(cl)
		var md kadm.Metadata
		poll.Until(t, 30*time.Second, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			md, err = adm.Metadata(ctx, "spread")
			if err != nil {
				return fmt.Errorf("metadata from %s: %w", addr, err)
			}
			if len(md.Brokers) != 2 {
				return fmt.Errorf("brokers %+v from %s: want the two hosts with a Kafka listener", md.Brokers, addr)
			}
			td := md.Topics["spread"]
			if len(td.Partitions) != 4 {
				return fmt.Errorf("spread has %d partitions, want 4", len(td.Partitions))
			}
			for _, p := range td.Partitions {
				if len(p.Replicas) != 3 || len(p.ISR) != 3 {
					return fmt.Errorf("spread-%d replicas %v ISR %v: want 3 of each", p.Partition, p.Replicas, p.ISR)
				}
			}
			return nil
		})
		ids := map[int32]bool{}
		for _, b := range md.Brokers {
			ids[b.NodeID] = true
		}
		for _, p := range md.Topics["spread"].Partitions {
			// A leader on the host without a Kafka listener is not a
			// broker Kafka clients can reach: reported as none.
			if (p.Leader == -1) == ids[p.Leader] || (p.Leader != -1 && p.Err != nil) {
				t.Fatalf("spread-%d leader %d (%v) with brokers %v", p.Partition, p.Leader, p.Err, ids)
			}
		}
		clusterIDs[md.Cluster] = true
	}
	if len(clusterIDs) != 1 || clusterIDs[""] {
		t.Fatalf("cluster ids %v: want one, the same from every host", clusterIDs)
	}
}

// kafkaAddrOf reads a host's advertised Kafka address from its start line.
func kafkaAddrOf(t *testing.T, h *hostProc) string {
	t.Helper()
	for _, line := range strings.Split(h.log(), "\n") {
		if !strings.Contains(line, `msg="host started"`) {
			continue
		}
		_, rest, ok := strings.Cut(line, `kafka_advertise="`)
		if addr, _, ok2 := strings.Cut(rest, `"`); ok && ok2 && addr != "" {
			return addr
		}
	}
	t.Fatalf("no Kafka address in the host's start line; log:\n%s", h.log())
	return ""
}
