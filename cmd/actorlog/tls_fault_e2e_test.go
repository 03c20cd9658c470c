// tls_fault_e2e_test.go: the replication fault test on a cluster whose
// actor remote speaks TLS (issue 16): three host processes with
// --remote-tls and their own host certificates, a workload client with a
// client certificate; the controller's host is SIGKILLed (another host
// becomes controller, writes resume), then a partition leader's host;
// while the producer runs every host's certificate is rotated with
// SIGHUP; and in the end every acknowledged record is in the log exactly
// once, no send failed, and the replicas are identical.

package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/internal/certs"
	"github.com/actorlog/actorlog/internal/tlsconf"
)

// tlsFiles writes a CA, a host certificate per host name and a client
// certificate into dir and returns the CA's key pair.
func tlsFiles(t *testing.T, dir string, hosts ...string) *certs.KeyPair {
	t.Helper()
	ca, err := certs.NewCA("e2e CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := ca.WriteFiles(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")); err != nil {
		t.Fatal(err)
	}
	for _, name := range hosts {
		issueHostFiles(t, ca, dir, name)
	}
	cl, err := ca.IssueClient("e2e-client", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.WriteFiles(filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")); err != nil {
		t.Fatal(err)
	}
	return ca
}

// issueHostFiles (re)issues name's host certificate into dir (written
// atomically, so a host reloading meanwhile reads the old or the new).
func issueHostFiles(t *testing.T, ca *certs.KeyPair, dir, name string) *certs.KeyPair {
	t.Helper()
	kp, err := ca.IssueHost(name, nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := kp.WriteFiles(filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")); err != nil {
		t.Fatal(err)
	}
	return kp
}

func TestTLSClusterFailoverLosesNothing(t *testing.T) {
	dir := t.TempDir()
	names := []string{"host1", "host2", "host3"}
	ca := tlsFiles(t, dir, names...)
	caPath := filepath.Join(dir, "ca.crt")
	hosts := startClusterEach(t, func(i int) []string {
		// The remote enforces ACLs with --remote-tls: the workload's client
		// is a super user (ACL checks themselves: actors/client/acltest).
		return []string{"--remote-tls", "--tls-cert", filepath.Join(dir, names[i]+".crt"), "--tls-key", filepath.Join(dir, names[i]+".key"), "--tls-ca", caPath,
			"--super-users", "User:e2e-client"}
	})
	clientFlags := []string{"--tls-cert", filepath.Join(dir, "client.crt"), "--tls-key", filepath.Join(dir, "client.key"), "--tls-ca", caPath}
	for _, h := range hosts {
		h.cliArgs = clientFlags
	}
	// Without a certificate the CLI is refused.
	if _, _, err := hosts[0].cli("", "--tls-cert", "", "--tls-key", "", "--tls-ca", "", "topics", "list"); err == nil {
		t.Fatal("a client without a certificate was served by a TLS cluster")
	}

	const topic, parts = "tls-kill", 3
	hosts[0].mustCLI("", "topics", "create", topic, "--partitions", strconv.Itoa(parts), "--replication-factor", "3", "--config", "min.insync.replicas=2")
	tlsr, err := tlsconf.NewReloader(tlsconf.Files{Cert: filepath.Join(dir, "client.crt"), Key: filepath.Join(dir, "client.key"), CA: caPath}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := startWorkloadTLS(t, hosts, topic, parts, tlsr)
	w.waitAcked(-1, 2000, 60*time.Second)

	// Cycle 1: the controller's host; cycle 2: partition 1's leader's.
	for cycle := 1; cycle <= 2; cycle++ {
		var victim *hostProc
		var what string
		if cycle == 1 {
			ctrl, err := controllerOf(hosts[0])
			if err != nil {
				t.Fatal(err)
			}
			victim, what = byAddr(t, hosts, ctrl.addr), fmt.Sprintf("the controller (host %d)", ctrl.id)
		} else {
			rows, err := describePartitions(t, hosts[0], topic)
			if err != nil {
				t.Fatal(err)
			}
			victim, what = hostByID(t, hosts, rows[1].leader), fmt.Sprintf("partition 1's leader (host %d)", rows[1].leader)
		}
		before := make([]int, parts)
		for p := range parts {
			before[p] = w.ackedCount(int32(p))
		}
		victim.stop(syscall.SIGKILL)
		killed := time.Now()
		clustertest.WaitFor(t, 90*time.Second, func() error {
			for p := range parts {
				if w.ackedCount(int32(p)) < before[p]+100 {
					return fmt.Errorf("partition %d took no writes since %s was killed", p, what)
				}
			}
			return nil
		})
		resumed := time.Since(killed)
		survivor := others(hosts, victim)[0]
		if cycle == 1 {
			clustertest.WaitFor(t, 60*time.Second, func() error {
				ctrl, err := controllerOf(survivor)
				if err != nil {
					return err
				}
				if ctrl.addr == victim.addr() { // hostByID asks hosts[0], maybe the victim
					return fmt.Errorf("host %d is still the controller", ctrl.id)
				}
				return nil
			})
		}
		victim.start()
		waitFullISR(t, survivor, topic)
		t.Logf("cycle %d: killed %s over TLS; writes to every partition resumed after %v", cycle, what, resumed.Round(10*time.Millisecond))
	}

	// Rotate every host's certificate while the producer runs.
	for i, h := range hosts {
		issueHostFiles(t, ca, dir, names[i])
		if err := h.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	clustertest.WaitFor(t, 20*time.Second, func() error {
		for _, h := range hosts {
			if !strings.Contains(h.log(), "SIGHUP: TLS files reloaded") {
				return fmt.Errorf("host %s logged no reload", h.addr())
			}
		}
		return nil
	})
	// New connections use the new certificates: the hosts' and the
	// client's connections to a restarted host are new ones.
	w.waitAcked(-1, 3000, 60*time.Second)

	via := hosts[0]
	w.finish(via)
	for p, ph := range w.parts {
		if n := ph.nFailed.Load(); n != 0 {
			t.Errorf("partition %d: %d sends failed", p, n)
		}
	}
	w.check(hosts, via)
}
