// cluster_e2e_test.go: three `actorlog host` processes on loopback forming
// one cluster (each an etcd voter): metadata is shared, partitions spread,
// any host bootstraps a client, and when the controller's host is killed
// another host's controller takes over.

package main

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/internal/poll"
)

// startCluster starts three hosts that form one cluster; extra flags go
// to every host.
func startCluster(t *testing.T, extra ...string) []*hostProc {
	t.Helper()
	return startClusterEach(t, nil, extra...)
}

// startClusterEach is startCluster with, when perHost is set, more flags
// for host i (0-2): perHost(i).
func startClusterEach(t *testing.T, perHost func(i int) []string, extra ...string) []*hostProc {
	t.Helper()
	bases := make([]int, 3)
	var peers []string
	for i := range bases {
		bases[i] = freeBase(t)
		peers = append(peers, fmt.Sprintf("host%d=http://127.0.0.1:%d", i+1, bases[i]+1))
	}
	hosts := make([]*hostProc, 3)
	var wg sync.WaitGroup
	for i := range hosts {
		hosts[i] = &hostProc{t: t, dir: t.TempDir(), base: bases[i], logPath: hostLogPath(t, bases[i]), bin: clusterBinPath,
			extra: append([]string{"--name", fmt.Sprintf("host%d", i+1), "--initial-cluster", strings.Join(peers, ",")}, extra...)}
		if perHost != nil {
			hosts[i].extra = append(hosts[i].extra, perHost(i)...)
		}
	}
	// The members wait for each other's etcd, so they start together.
	for _, h := range hosts {
		wg.Add(1)
		go func(h *hostProc) {
			defer wg.Done()
			h.start()
		}(h)
	}
	wg.Wait()
	for _, h := range hosts {
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("host %s log (warnings and up):\n%s", h.addr(), grepLog(h.log(), "level=warn", "level=error", "level=fatal", "controller"))
			}
			if code := h.stop(syscall.SIGTERM); code > 0 {
				t.Errorf("host exited with %d on SIGTERM; log:\n%s", code, h.log())
			}
		})
	}
	return hosts
}

// describeLine is one host line of `cluster describe`.
type describeLine struct {
	name, addr   string
	id           int
	alive        bool
	epoch        string // broker epoch, "-" when down
	controller   bool
	controllerEp string
}

// describe runs `cluster describe --output json` through h and returns
// its hosts as the table shows them ("-" for an unknown name or epoch).
func describe(h *hostProc) ([]describeLine, error) {
	var cd clusterDescription
	if err := h.describeJSON(&cd, "cluster", "describe"); err != nil {
		return nil, err
	}
	var lines []describeLine
	for _, host := range cd.Hosts {
		d := describeLine{name: orDash(host.Name), id: int(host.ID), addr: orDash(host.Address), alive: host.Alive, epoch: "-", controller: host.Controller}
		if host.BrokerEpoch != nil {
			d.epoch = strconv.FormatInt(*host.BrokerEpoch, 10)
		}
		if d.controller {
			d.controllerEp = strconv.FormatInt(cd.ControllerEpoch, 10)
		}
		lines = append(lines, d)
	}
	return lines, nil
}

// controllerOf returns the describe line of the controller as h reports it.
func controllerOf(h *hostProc) (describeLine, error) {
	lines, err := describe(h)
	if err != nil {
		return describeLine{}, err
	}
	for _, l := range lines {
		if l.controller {
			return l, nil
		}
	}
	return describeLine{}, fmt.Errorf("no controller in %v", lines)
}

// byAddr returns the host process listening at addr.
func byAddr(t *testing.T, hosts []*hostProc, addr string) *hostProc {
	t.Helper()
	for _, h := range hosts {
		if h.addr() == addr {
			return h
		}
	}
	t.Fatalf("no host at %s", addr)
	return nil
}

func TestThreeHostCluster(t *testing.T) {
	hosts := startCluster(t)
	hosts[1].mustCLI("", "topics", "create", "spread", "--partitions", "6")

	// Every host sees the topic; partitions are spread evenly over the hosts.
	for _, h := range hosts {
		if out := h.mustCLI("", "topics", "list"); !strings.Contains(out, "spread") {
			t.Fatalf("host %d does not list the topic: %q", h.base, out)
		}
	}
	leaders := map[int32]int{}
	for _, p := range hosts[2].mustDescribeTopic("spread").Partitions {
		leaders[p.Leader]++
	}
	if len(leaders) != 3 || leaders[1] != 2 || leaders[2] != 2 || leaders[3] != 2 {
		t.Fatalf("partitions not spread evenly: leaders %v", leaders)
	}
	if lines, err := describe(hosts[0]); err != nil || len(lines) != 3 {
		t.Fatalf("cluster describe: %v, %v", lines, err)
	} else {
		for _, l := range lines {
			if !l.alive || l.epoch == "-" || !strings.HasPrefix(l.name, "host") {
				t.Fatalf("cluster describe line %+v", l)
			}
		}
	}

	// Produce through one host, consume through another.
	var in strings.Builder
	for i := 0; i < 600; i++ {
		fmt.Fprintf(&in, "k%d:v%d\n", i%50, i)
	}
	hosts[2].mustCLI(in.String(), "produce", "spread", "--key-separator", ":")
	recs := hosts[0].consumeAll("spread", 600)
	if len(recs) != 600 {
		t.Fatalf("consumed %d of 600 records", len(recs))
	}
	parts := map[int32]bool{}
	for _, r := range recs {
		parts[r.partition] = true
	}
	if len(parts) < 4 {
		t.Fatalf("keyed records landed in only %d partitions", len(parts))
	}

	// Kill the controller's host: another host's controller takes over and
	// serves topic creation, with all metadata intact.
	ctrl, err := controllerOf(hosts[0])
	if err != nil {
		t.Fatal(err)
	}
	victim := byAddr(t, hosts, ctrl.addr)
	var survivor *hostProc
	for _, h := range hosts {
		if h != victim {
			survivor = h
			break
		}
	}
	victim.stop(syscall.SIGKILL)
	start := time.Now()
	var newCtrl describeLine
	poll.Until(t, time.Minute, func() error {
		c, err := controllerOf(survivor)
		if err != nil {
			return err
		}
		if c.name == ctrl.name {
			return fmt.Errorf("the controller is still %s", c.name)
		}
		newCtrl = c
		return nil
	})
	elected := time.Since(start)
	survivor.mustCLI("", "topics", "create", "after-failover", "--partitions", "2")
	t.Logf("controller failover (SIGKILL %s): %s elected after %v; topic creation served after %v",
		ctrl.name, newCtrl.name, elected, time.Since(start))
	if out := survivor.mustCLI("", "topics", "list"); !strings.Contains(out, "spread") || !strings.Contains(out, "after-failover") {
		t.Fatalf("metadata after failover: %q", out)
	}

	// The dead host's partitions are offline (no replication yet), the
	// cluster knows the host is down; the rest keep serving.
	clustertest.WaitFor(t, 30*time.Second, func() error {
		td := survivor.mustDescribeTopic("spread")
		if n := td.count(leaderOffline); n != 2 {
			return fmt.Errorf("%d partitions offline, want 2: %+v", n, td.Partitions)
		}
		return nil
	})
	if lines, err := describe(survivor); err != nil {
		t.Fatal(err)
	} else {
		for _, l := range lines {
			if l.name == ctrl.name && l.alive {
				t.Fatalf("killed host still alive in %+v", lines)
			}
		}
	}

	// It comes back with its data: every record is there again.
	victim.start()
	clustertest.WaitFor(t, 30*time.Second, func() error {
		td := survivor.mustDescribeTopic("spread")
		if n := len(td.Partitions) - td.count(leaderAvailable); n > 0 {
			return fmt.Errorf("%d partitions still offline or unavailable: %+v", n, td.Partitions)
		}
		return nil
	})
	if recs := survivor.consumeAll("spread", 600); len(recs) != 600 {
		t.Fatalf("after the host returned: consumed %d of 600 records", len(recs))
	}
}

// grepLog keeps the lines of a host log that contain any of words (protoactor's
// gossip retries aside).
func grepLog(log string, words ...string) string {
	var out strings.Builder
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "sendGossipForMember") {
			continue
		}
		for _, w := range words {
			if strings.Contains(line, w) {
				out.WriteString(line)
				out.WriteByte('\n')
				break
			}
		}
	}
	return out.String()
}

func TestWholeClusterRestart(t *testing.T) {
	hosts := startCluster(t)
	hosts[0].mustCLI("", "topics", "create", "durable", "--partitions", "3")
	var in strings.Builder
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&in, "k%d:v%d\n", i, i)
	}
	hosts[1].mustCLI(in.String(), "produce", "durable", "--key-separator", ":", "--acks", "all")
	before := hosts[2].mustCLI("", "topics", "describe", "durable")

	// Kill every host at once, then start them all again: the etcd
	// members recover the metadata, the logs their records.
	for _, h := range hosts {
		h.stop(syscall.SIGKILL)
	}
	var wg sync.WaitGroup
	for _, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.start()
		}()
	}
	wg.Wait()
	clustertest.WaitFor(t, 60*time.Second, func() error {
		td, err := hosts[0].describeTopic("durable")
		if err != nil {
			return err
		}
		if n := len(td.Partitions) - td.count(leaderAvailable); n > 0 {
			return fmt.Errorf("%d partitions not back: %+v", n, td.Partitions)
		}
		return nil
	})
	if recs := hosts[2].consumeAll("durable", 300); len(recs) != 300 {
		t.Fatalf("after a whole-cluster restart: %d of 300 records (before:\n%s)", len(recs), before)
	}
	if lines, err := describe(hosts[1]); err != nil || len(lines) != 3 {
		t.Fatalf("hosts after restart: %+v, %v", lines, err)
	}
}
