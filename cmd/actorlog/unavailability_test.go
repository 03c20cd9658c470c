// unavailability_test.go: how long a replicated partition cannot take
// acks=all writes after its leader's host is SIGKILLed. Each trial kills
// the leader's host of a RF=3 partition and times until a produce with
// acks=all to that partition succeeds through another host; the victim is
// restarted and catches up before the next trial. ACTORLOG_UNAVAIL_TRIALS
// sets the number of trials (default 1, the bounded form CI runs).

package main

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/actorlog/actorlog/cluster/clustertest"
)

func TestPartitionUnavailabilityAfterLeaderKill(t *testing.T) {
	trials := trialCount(t, "ACTORLOG_UNAVAIL_TRIALS", 1)
	hosts := startCluster(t)
	const topic = "unavail"
	hosts[0].mustCLI("", "topics", "create", topic, "--partitions", "1", "--replication-factor", "3", "--config", "min.insync.replicas=2")
	hosts[0].mustCLI("warm\n", "produce", topic, "--acks", "all")
	var times []time.Duration
	for i := 0; i < trials; i++ {
		rows, err := describePartitions(t, hosts[0], topic)
		if err != nil {
			t.Fatal(err)
		}
		victim := hostByID(t, hosts, rows[0].leader)
		survivor := others(hosts, victim)[0]
		victim.stop(syscall.SIGKILL)
		start := time.Now()
		clustertest.WaitFor(t, 60*time.Second, func() error {
			_, errOut, err := survivor.cli(fmt.Sprintf("trial-%d\n", i), "produce", topic, "--acks", "all", "--partition", "0")
			if err != nil {
				return fmt.Errorf("%v: %s", err, errOut)
			}
			return nil
		})
		took := time.Since(start)
		times = append(times, took)
		t.Logf("trial %d: leader host %d killed; acks=all accepted again after %v", i+1, rows[0].leader, took.Round(10*time.Millisecond))
		victim.start()
		clustertest.WaitFor(t, 60*time.Second, func() error {
			rows, err := describePartitions(t, survivor, topic)
			if err != nil {
				return err
			}
			if len(rows[0].isr) != 3 {
				return fmt.Errorf("ISR %v", rows[0].isr)
			}
			return nil
		})
	}
	t.Logf("partition unavailability after SIGKILL of its leader's host over %d trials: %s", len(times), summarize(times))
}
