// connlimit_e2e_test.go: issue 11 row 3 against a real host process —
// thousands of idle TCP connections to every port the host listens on
// (remote, HTTP, etcd client and peer) no longer exhaust its descriptors.
// The host runs with RLIMIT_NOFILE 1024 and --max-connections 200
// --max-connections-per-ip 60; each port is flooded from its own loopback
// address (127.0.0.2-4) with more connections than the descriptor limit.
// While the flood is held: the process is alive, its descriptors stay well
// below the limit, /healthz answers 200, a topic can be created, records
// are produced and consumed through the CLI (from 127.0.0.1), and the
// refusals are counted in /metrics. After it ends, the slots come back.

package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// connLimitNofile is the child's RLIMIT_NOFILE; the flood on each port is
// larger than it.
const connLimitNofile = 1024

func TestConnectionFloodDoesNotExhaustDescriptors(t *testing.T) {
	if testing.Short() {
		t.Skip("opens ~5000 connections")
	}
	// The flood's client ends are held by this process.
	var own syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &own); err != nil {
		t.Fatal(err)
	}
	if own.Cur < 6000 {
		t.Skipf("RLIMIT_NOFILE of the test process is %d; the flood needs 6000", own.Cur)
	}
	// The child's descriptor limit is lowered by a wrapper script: Go
	// raises the soft limit to the hard one at start, so both are set.
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "actorlog-nofile")
	script := fmt.Sprintf("#!/bin/sh\nulimit -n %d || exit 97\nexec %q \"$@\"\n", connLimitNofile, binPath)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	h := &hostProc{t: t, dir: filepath.Join(dir, "data"), base: freeBase(t), bin: wrapper,
		extra: []string{"--max-connections", "200", "--max-connections-per-ip", "60"}}
	h.logPath = hostLogPath(t, h.base)
	h.start()
	t.Cleanup(func() {
		if code := h.stop(syscall.SIGTERM); code > 0 {
			t.Errorf("host exited with %d on SIGTERM; log:\n%s", code, h.log())
		}
	})
	pid := h.cmd.Process.Pid
	if n := connLimitRlimit(t, pid); n != connLimitNofile {
		t.Fatalf("host's RLIMIT_NOFILE is %d, want %d", n, connLimitNofile)
	}
	h.mustCLI("", "topics", "create", "before", "--partitions", "2")

	ports := []struct {
		name, from string
		port       int
		n          int
	}{
		{"remote", "127.0.0.2", h.base, 1500},
		{"http", "127.0.0.3", h.base + 3, 1500},
		{"etcd-client", "127.0.0.4", h.base + 2, 1000},
		{"etcd-peer", "127.0.0.4", h.base + 1, 1000},
	}
	var flood []net.Conn
	closeFlood := func() {
		for _, c := range flood {
			c.Close()
		}
		flood = nil
	}
	t.Cleanup(closeFlood)
	start := time.Now()
	for _, p := range ports {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(p.from)}, Timeout: 5 * time.Second}
		for i := range p.n {
			c, err := d.Dial("tcp", "127.0.0.1:"+strconv.Itoa(p.port))
			if err != nil {
				t.Fatalf("flood %s: connection %d: %v\nhost log:\n%s", p.name, i, err, h.log())
			}
			flood = append(flood, c)
		}
	}
	t.Logf("opened %d connections in %v", len(flood), time.Since(start))

	// Every port refused the connections beyond the per-address limit
	// (60 slots; etcd's relayed connections take three each).
	connLimitWaitFor(t, 20*time.Second, func() error {
		m, err := connLimitMetrics(h)
		if err != nil {
			return err
		}
		for _, p := range ports {
			key := fmt.Sprintf(`actorlog_connections_refused_total{listener=%q,reason="max_connections_per_ip"}`, p.name)
			if m[key] < float64(p.n-60) {
				return fmt.Errorf("%s = %v, want at least %d", key, m[key], p.n-60)
			}
		}
		return nil
	})
	if err := h.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("host process gone during the flood: %v\nlog:\n%s", err, h.log())
	}
	if n := connLimitFDs(t, pid); n > connLimitNofile/2 {
		t.Errorf("host holds %d descriptors during the flood, want at most %d", n, connLimitNofile/2)
	}
	resp, err := http.Get("http://" + h.httpAddr() + "/healthz")
	if err != nil {
		t.Fatalf("/healthz during the flood: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz during the flood: %s", resp.Status)
	}
	h.mustCLI("", "topics", "create", "during", "--partitions", "2")
	for _, topic := range []string{"before", "during"} {
		h.mustCLI("a:1\nb:2\nc:3\n", "produce", topic, "--key-separator", ":", "--acks", "all")
		recs := h.consumeAll(topic, 3)
		if len(recs) != 3 {
			t.Fatalf("consumed %d records of %s during the flood, want 3: %v", len(recs), topic, recs)
		}
		got := map[string]string{}
		for _, r := range recs {
			got[r.key] = r.value
		}
		if got["a"] != "1" || got["b"] != "2" || got["c"] != "3" {
			t.Errorf("consumed %v from %s, want a:1 b:2 c:3", got, topic)
		}
	}
	if err := h.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("host process gone: %v\nlog:\n%s", err, h.log())
	}

	// The flood ends; its slots come back.
	closeFlood()
	connLimitWaitFor(t, 20*time.Second, func() error {
		m, err := connLimitMetrics(h)
		if err != nil {
			return err
		}
		var open float64
		for _, p := range ports {
			open += m[fmt.Sprintf(`actorlog_connections_open{listener=%q}`, p.name)]
		}
		if open > 20 {
			return fmt.Errorf("%v connection slots still open after the flood ended", open)
		}
		return nil
	})
}

// connLimitMetrics reads the host's /metrics into sample -> value.
func connLimitMetrics(h *hostProc) (map[string]float64, error) {
	resp, err := http.Get("http://" + h.httpAddr() + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("/metrics: %w", err)
	}
	defer resp.Body.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("/metrics line %q: %w", line, err)
		}
		m[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("/metrics: %w", err)
	}
	return m, nil
}

// connLimitFDs counts the descriptors process pid holds.
func connLimitFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		t.Fatalf("descriptors of %d: %v", pid, err)
	}
	return len(ents)
}

// connLimitRlimit returns process pid's soft RLIMIT_NOFILE.
func connLimitRlimit(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/limits")
	if err != nil {
		t.Fatalf("limits of %d: %v", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "Max open files") {
			f := strings.Fields(strings.TrimPrefix(line, "Max open files"))
			if n, err := strconv.Atoi(f[0]); err == nil {
				return n
			}
		}
	}
	t.Fatalf("no open-files limit in /proc/%d/limits:\n%s", pid, b)
	return 0
}

// connLimitWaitFor polls fn until it returns nil or total passes. Not
// internal/poll's Until: fn scrapes /metrics, a connection to the very
// listeners whose counts are checked, so it polls every 200 ms, not 10 ms,
// to keep its own connections out of what is measured.
func connLimitWaitFor(t *testing.T, total time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(total)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %v", total, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
