// rolling_test.go: rolling restarts of a 3-host cluster under a steady
// acks=all load, as an operator upgrading hosts one at a time would do:
// each host in turn gets SIGTERM (a controlled shutdown moves its
// leadership away first), starts again and catches up to the full ISR.
// Acknowledged writes must never pause for more than 2 s, and the history
// is checked as in the Jepsen tests (nothing lost, nothing twice, in
// order, identical replicas).
//
// ACTORLOG_ROLLING_RESTARTS sets the number of restarts (default 3, the
// bounded form CI runs; scripts/soak.sh runs 100).

package main

import (
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// maxWritePause is the longest pause in acknowledged writes a rolling
// restart may cause.
const maxWritePause = 2 * time.Second

func TestRollingRestartsKeepWriting(t *testing.T) {
	restarts := trialCount(t, "ACTORLOG_ROLLING_RESTARTS", 3)
	hosts := startCluster(t)
	const topic, parts = "rolling", 3
	hosts[0].mustCLI("", "topics", "create", topic, "--partitions", strconv.Itoa(parts), "--replication-factor", "3", "--config", "min.insync.replicas=2")
	w := startWorkload(t, hosts, topic, parts)
	w.waitAcked(-1, 2000, 60*time.Second)
	w.takeMaxGap()

	var pauses []time.Duration
	res := newResourceLog(t, hosts, w)
	for i := 0; i < restarts; i++ {
		h := hosts[i%len(hosts)]
		t0 := time.Now()
		if code := h.stop(syscall.SIGTERM); code != 0 {
			t.Fatalf("restart %d: host %s exited with %d on SIGTERM; log:\n%s", i+1, h.addr(), code, h.log())
		}
		stopped := time.Since(t0)
		h.start()
		waitFullISR(t, others(hosts, h)[0], topic)
		w.waitAcked(-1, 1000, 60*time.Second)
		gap, part, end := w.takeMaxGap()
		pauses = append(pauses, gap)
		t.Logf("restart %d: host %s stopped in %v, back in the ISR after %v; longest pause in acknowledged writes %v (partition %d, ended %s); %s",
			i+1, h.addr(), stopped.Round(10*time.Millisecond), time.Since(t0).Round(10*time.Millisecond), gap.Round(time.Millisecond), part, end.UTC().Format("15:04:05.000"), res.sample(i+1))
		if gap > maxWritePause {
			t.Errorf("restart %d of host %s: acknowledged writes to partition %d paused for %v (at most %v)", i+1, h.addr(), part, gap.Round(time.Millisecond), maxWritePause)
		}
	}
	s := slices.Clone(pauses)
	slices.Sort(s)
	t.Logf("longest pause in acknowledged writes per restart over %d restarts: %s", len(s), summarizeP90(s))
	res.checkNoGrowth(len(pauses))
	via := hosts[0]
	w.finish(via)
	w.check(hosts, via)
}
