// failover_test.go: controller failover time, measured. Each trial
// SIGKILLs the controller's host of a three-host loopback cluster and times
// until another host is controller and has served a topic creation; the
// victim is then restarted and rejoins. ACTORLOG_FAILOVER_TRIALS sets the
// number of trials (default 2, the bounded form CI runs; the README's
// numbers come from 10).

package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/actorlog/actorlog/cluster/clustertest"
)

func TestControllerFailoverTrials(t *testing.T) {
	trials := 2
	if v := os.Getenv("ACTORLOG_FAILOVER_TRIALS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("ACTORLOG_FAILOVER_TRIALS=%q: want a positive number", v)
		}
		trials = n
	}
	hosts := startCluster(t)
	var times []time.Duration
	for i := 0; i < trials; i++ {
		ctrl, victim, survivor, before := controllerHost(t, hosts)
		victim.stop(syscall.SIGKILL)
		start := time.Now()
		topic := fmt.Sprintf("failover-%d", i)
		clustertest.WaitFor(t, 60*time.Second, func() error {
			c, err := controllerOf(survivor)
			if err != nil {
				return err
			}
			if c.name == ctrl.name {
				return fmt.Errorf("%s is still controller", c.name)
			}
			_, errOut, err := survivor.cli("", "topics", "create", topic, "--partitions", "1")
			if err != nil {
				return fmt.Errorf("create: %v: %s", err, errOut)
			}
			return nil
		})
		took := time.Since(start)
		times = append(times, took)
		t.Logf("trial %d: killed controller %s; new controller served a topic creation after %v", i+1, ctrl.name, took.Round(10*time.Millisecond))
		victim.start()
		waitRejoined(t, survivor, ctrl.name, before[ctrl.name], 3)
	}
	slices.Sort(times)
	median := times[len(times)/2]
	if len(times)%2 == 0 {
		median = (times[len(times)/2-1] + median) / 2
	}
	t.Logf("controller failover over %d trials (lease TTL default): min %v, median %v, max %v",
		len(times), times[0].Round(10*time.Millisecond), median.Round(10*time.Millisecond), times[len(times)-1].Round(10*time.Millisecond))
}
