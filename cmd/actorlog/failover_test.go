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
	trials := trialCount(t, "ACTORLOG_FAILOVER_TRIALS", 2)
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
	t.Logf("controller failover over %d trials (lease TTL default): %s", len(times), summarize(times))
}

// trialCount reads a trial count from the environment (default def).
func trialCount(t *testing.T, env string, def int) int {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", env, v)
	}
	return n
}

// summarize reports min, median and max of durations.
func summarize(times []time.Duration) string {
	s := slices.Clone(times)
	slices.Sort(s)
	median := s[len(s)/2]
	if len(s)%2 == 0 {
		median = (s[len(s)/2-1] + median) / 2
	}
	r := func(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }
	return fmt.Sprintf("min %v, median %v, max %v", r(s[0]), r(median), r(s[len(s)-1]))
}
