// cluster_fault_test.go: freezing hosts (SIGSTOP) in a three-host loopback
// cluster. A frozen controller is replaced and, resumed, cannot act; a
// frozen etcd raft leader does not split the others into islands; a host
// that lost its lease comes back as a new incarnation (new broker epoch).

package main

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/host"
	"github.com/actorlog/actorlog/internal/poll"
)

// signal sends sig to the host's process (which keeps its pid across the
// re-exec that follows fencing).
func (h *hostProc) signal(sig syscall.Signal) {
	h.t.Helper()
	if err := h.cmd.Process.Signal(sig); err != nil {
		h.t.Fatalf("signal %v: %v", sig, err)
	}
}

// etcdLeader reports whether the host's etcd member is the raft leader,
// from etcd's own metrics on its client port.
func (h *hostProc) etcdLeader() (bool, error) {
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(h.base+2) + "/metrics")
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "etcd_server_is_leader "); ok {
			return strings.TrimSpace(v) == "1", nil
		}
	}
	return false, fmt.Errorf("no etcd_server_is_leader metric: %v", sc.Err())
}

// others returns the hosts except x.
func others(hosts []*hostProc, x *hostProc) []*hostProc {
	var out []*hostProc
	for _, h := range hosts {
		if h != x {
			out = append(out, h)
		}
	}
	return out
}

// epochs returns name → broker epoch of the live hosts h reports.
func epochs(h *hostProc) (map[string]string, error) {
	lines, err := describe(h)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, l := range lines {
		if l.alive {
			out[l.name] = l.epoch
		}
	}
	return out, nil
}

// nameOf returns the host's name as the cluster reports it.
func nameOf(t *testing.T, hosts []*hostProc, x *hostProc) string {
	t.Helper()
	lines, err := describe(others(hosts, x)[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if l.addr == x.addr() {
			return l.name
		}
	}
	t.Fatalf("host %s not in %v", x.addr(), lines)
	return ""
}

// waitRejoined waits until every host is alive again in what via reports
// and x has a broker epoch other than old.
func waitRejoined(t *testing.T, via *hostProc, name, old string, n int) {
	t.Helper()
	clustertest.WaitFor(t, 90*time.Second, func() error {
		e, err := epochs(via)
		if err != nil {
			return err
		}
		if len(e) != n || e[name] == "" || e[name] == old {
			return fmt.Errorf("live hosts %v; want %d, %s with a new broker epoch (old %s)", e, n, name, old)
		}
		return nil
	})
}

// controllerHost finds the controller: its describe line, its process,
// another host's process, and the broker epochs before anything happens.
func controllerHost(t *testing.T, hosts []*hostProc) (describeLine, *hostProc, *hostProc, map[string]string) {
	t.Helper()
	ctrl, err := controllerOf(hosts[0])
	if err != nil {
		t.Fatal(err)
	}
	h := byAddr(t, hosts, ctrl.addr)
	survivor := others(hosts, h)[0]
	before, err := epochs(survivor)
	if err != nil {
		t.Fatal(err)
	}
	return ctrl, h, survivor, before
}

func TestFrozenControllerIsReplacedAndFenced(t *testing.T) {
	hosts := startCluster(t)
	ctrl, old, survivor, before := controllerHost(t, hosts)

	// Freeze the controller's host past its lease: another takes over.
	old.signal(syscall.SIGSTOP)
	frozen := time.Now()
	var next describeLine
	clustertest.WaitFor(t, 60*time.Second, func() error {
		c, err := controllerOf(survivor)
		if err != nil {
			return err
		}
		if c.name == ctrl.name {
			return fmt.Errorf("%s is still controller", c.name)
		}
		next = c
		return nil
	})
	t.Logf("controller %s frozen; %s took over after %v", ctrl.name, next.name, time.Since(frozen))
	if a, _ := strconv.Atoi(next.controllerEp); a <= mustAtoi(t, ctrl.controllerEp) {
		t.Fatalf("new controller epoch %s not above the old %s", next.controllerEp, ctrl.controllerEp)
	}
	survivor.mustCLI("", "topics", "create", "while-frozen", "--partitions", "3")

	// Resume it and at once ask it (not another host) to create a topic:
	// it still believes it is controller until it hears its session is
	// gone, but its fenced write cannot land; the request fails cleanly or
	// is served by the real controller.
	old.signal(syscall.SIGCONT)
	out, errOut, err := old.cli("", "topics", "create", "via-old", "--partitions", "1")
	t.Logf("create through the resumed old controller: err=%v stdout=%q stderr=%q", err, out, errOut)
	if err != nil && !strings.HasPrefix(strings.TrimSpace(errOut), "Error:") {
		t.Fatalf("unclean failure: %v %q", err, errOut)
	}

	// It noticed it lost its lease and stepped down; it rejoins as a plain
	// host with a new broker epoch, and the cluster has one controller.
	clustertest.WaitFor(t, 60*time.Second, func() error {
		log := old.log()
		if !strings.Contains(log, "fenced") && !strings.Contains(log, "lost the controller election session") {
			return fmt.Errorf("the resumed host has not stepped down")
		}
		return nil
	})
	waitRejoined(t, survivor, ctrl.name, before[ctrl.name], 3)
	// Every host names the same controller, never the old one's epoch.
	// (Normally it is still the one that took over; on a starved machine
	// the others may lose their leases too and elect again, which is
	// safe — the epoch only grows.)
	clustertest.WaitFor(t, 60*time.Second, func() error {
		var first describeLine
		for i, h := range hosts {
			c, err := controllerOf(h)
			if err != nil {
				return err
			}
			if mustAtoi(t, c.controllerEp) < mustAtoi(t, next.controllerEp) {
				return fmt.Errorf("host %s reports controller %+v, older than %+v", h.addr(), c, next)
			}
			if i > 0 && (c.name != first.name || c.controllerEp != first.controllerEp) {
				return fmt.Errorf("hosts disagree on the controller: %+v and %+v", first, c)
			}
			first = c
		}
		if first.name != next.name {
			t.Logf("controller changed again after the resume: %+v (was %+v)", first, next)
		}
		return nil
	})
	// No metadata was lost or made twice: every host lists the same topics.
	var want string
	clustertest.WaitFor(t, 30*time.Second, func() error {
		out, _, err := old.cli("", "topics", "list")
		want = out
		return err
	})
	if !strings.Contains(want, "while-frozen") {
		t.Fatalf("topics after resume: %q", want)
	}
	for _, h := range hosts {
		if got := h.mustCLI("", "topics", "list"); got != want {
			t.Fatalf("host %s lists %q, host %s lists %q", h.addr(), got, old.addr(), want)
		}
	}
}

func TestFrozenEtcdLeaderDoesNotSplitTheCluster(t *testing.T) {
	hosts := startCluster(t)
	var leader *hostProc
	clustertest.WaitFor(t, 20*time.Second, func() error {
		for _, h := range hosts {
			if ok, err := h.etcdLeader(); err == nil && ok {
				leader = h
				return nil
			}
		}
		return fmt.Errorf("no etcd leader found")
	})
	before, err := epochs(hosts[0])
	if err != nil {
		t.Fatal(err)
	}
	name := nameOf(t, hosts, leader)
	rest := others(hosts, leader)

	// Freeze the raft leader's host for more than two lease TTLs.
	leader.signal(syscall.SIGSTOP)
	freeze := 2*host.DefaultLeaseTTL + 3*time.Second
	frozen := time.Now()
	clustertest.WaitFor(t, 60*time.Second, func() error {
		e, err := epochs(rest[0])
		if err != nil {
			return err
		}
		if _, alive := e[name]; alive {
			return fmt.Errorf("frozen host %s still registered", name)
		}
		return nil
	})
	t.Logf("frozen etcd leader %s deregistered after %v", name, time.Since(frozen))
	// The sleep that stays: the fault is the freeze's length (past two
	// lease TTLs), so it is waited out in full before the checks below,
	// not until some state shows.
	time.Sleep(time.Until(frozen.Add(freeze)))

	// The two others kept their registrations (same broker epochs: nobody
	// was fenced), see each other, and agree on one controller.
	var ctrl describeLine
	for i, h := range rest {
		e, err := epochs(h)
		if err != nil {
			t.Fatal(err)
		}
		if len(e) != 2 {
			t.Fatalf("host %s sees live hosts %v, want the 2 unfrozen ones", h.addr(), e)
		}
		for n, ep := range e {
			if before[n] != ep {
				t.Fatalf("host %s re-registered during the freeze (epoch %s → %s): the cluster split", n, before[n], ep)
			}
		}
		c, err := controllerOf(h)
		if err != nil {
			t.Fatal(err)
		}
		if c.name == name || (i > 0 && c.name != ctrl.name) {
			t.Fatalf("controller %+v (other host said %+v)", c, ctrl)
		}
		ctrl = c
	}
	rest[0].mustCLI("", "topics", "create", "during-freeze", "--partitions", "2")

	// Resumed, the frozen host rejoins with a new broker epoch.
	leader.signal(syscall.SIGCONT)
	resumed := time.Now()
	waitRejoined(t, rest[0], name, before[name], 3)
	t.Logf("resumed %s rejoined after %v", name, time.Since(resumed))
	// Registered again does not mean serving yet: its broker, stopped
	// when it was fenced, may still be starting (a request to it is a
	// dead letter meanwhile).
	poll.Until(t, 30*time.Second, func() error {
		out, errOut, err := leader.cli("", "topics", "list")
		if err != nil {
			return fmt.Errorf("rejoined host: %w: %s", err, strings.TrimSpace(errOut))
		}
		if !strings.Contains(out, "during-freeze") {
			return fmt.Errorf("rejoined host lists %q", out)
		}
		return nil
	})
	t.Logf("resumed %s served metadata after %v", name, time.Since(resumed))
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}
