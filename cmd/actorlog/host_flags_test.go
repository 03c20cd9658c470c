// host_flags_test.go: `actorlog host` settings from a config file and the
// environment, and bad start-up input — a clear error at start and no
// damage to an existing data directory.

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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
