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
)

// startCluster starts three hosts that form one cluster.
func startCluster(t *testing.T) []*hostProc {
	t.Helper()
	bases := make([]int, 3)
	var peers []string
	for i := range bases {
		bases[i] = freeBase(t)
		peers = append(peers, fmt.Sprintf("host-%d=http://127.0.0.1:%d", i+1, bases[i]+1))
	}
	hosts := make([]*hostProc, 3)
	var wg sync.WaitGroup
	for i := range hosts {
		hosts[i] = &hostProc{t: t, dir: t.TempDir(), base: bases[i], logPath: t.TempDir() + "/host.log", bin: clusterBinPath,
			extra: []string{"--host-id", strconv.Itoa(i + 1), "--etcd-initial-cluster", strings.Join(peers, ",")}}
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
			if code := h.stop(syscall.SIGTERM); code > 0 {
				t.Errorf("host exited with %d on SIGTERM; log:\n%s", code, h.log())
			}
		})
	}
	return hosts
}

// controllerOf returns the host id the cluster reports as controller.
func controllerOf(h *hostProc) (int, error) {
	out, _, err := h.cli("", "cluster", "describe")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "yes (epoch") {
			return strconv.Atoi(strings.Fields(line)[0])
		}
	}
	return 0, fmt.Errorf("no controller in %q", out)
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
	leaders := map[string]int{}
	for _, line := range strings.Split(hosts[2].mustCLI("", "topics", "describe", "spread"), "\n")[2:] {
		if f := strings.Fields(line); len(f) >= 2 {
			leaders[f[1]]++
		}
	}
	if len(leaders) != 3 || leaders["1"] != 2 || leaders["2"] != 2 || leaders["3"] != 2 {
		t.Fatalf("partitions not spread evenly: leaders %v", leaders)
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
	victim := hosts[ctrl-1]
	var survivor *hostProc
	for _, h := range hosts {
		if h != victim {
			survivor = h
			break
		}
	}
	victim.stop(syscall.SIGKILL)
	start := time.Now()
	newCtrl := ctrl
	for newCtrl == ctrl {
		if time.Since(start) > time.Minute {
			t.Fatal("no new controller within a minute")
		}
		time.Sleep(200 * time.Millisecond)
		if id, err := controllerOf(survivor); err == nil {
			newCtrl = id
		}
	}
	elected := time.Since(start)
	survivor.mustCLI("", "topics", "create", "after-failover", "--partitions", "2")
	t.Logf("controller failover (SIGKILL host %d): host %d elected after %v; topic creation served after %v",
		ctrl, newCtrl, elected, time.Since(start))
	if out := survivor.mustCLI("", "topics", "list"); !strings.Contains(out, "spread") || !strings.Contains(out, "after-failover") {
		t.Fatalf("metadata after failover: %q", out)
	}
}
