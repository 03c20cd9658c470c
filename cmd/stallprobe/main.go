// stallprobe: how late a process that only sleeps wakes up. The benchmark
// scripts run it beside a latency run (scripts/replication-bench.sh): a
// probe that does nothing but sleep --period should wake within a fraction
// of a millisecond, so wake-ups many milliseconds late mean the machine,
// not the system under test, stopped running for that long.
//
// On the PVM test VMs of issue 15 such stalls come in trains of ~20-30 ms
// about every 100 ms while the VM's disk writes and CPU use are both high
// (reproduced with `dd oflag=direct` and one busy loop, no actorlog
// running), and the guest's scheduler shows no run-queue wait for the
// probe meanwhile (perf sched latency): the whole VM was paused. A p99
// measured across such a train says little about the code.
//
// Usage:
//
//	stallprobe --duration 12s [--period 1ms] [--late 10ms] [--list]
//
// It prints one summary line (see summary) and, with --list, every
// wake-up later than --late, with its time since the start.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

func main() {
	duration := flag.Duration("duration", 10*time.Second, "how long to probe")
	period := flag.Duration("period", time.Millisecond, "how long each sleep asks for")
	late := flag.Duration("late", 10*time.Millisecond, "a wake-up later than this counts as a stall")
	list := flag.Bool("list", false, "also print every stall with its time since the start")
	flag.Parse()
	if *duration <= 0 || *period <= 0 || *late <= 0 {
		fmt.Fprintln(os.Stderr, "stallprobe: --duration, --period and --late must be positive")
		os.Exit(2)
	}
	p := probe(*duration, *period, time.Sleep)
	if err := p.print(os.Stdout, *late, *list); err != nil {
		fmt.Fprintln(os.Stderr, "stallprobe:", err)
		os.Exit(1)
	}
}

// wake is one sleep: when it started (since the probe's start) and how
// much later than asked it returned.
type wake struct {
	at, late time.Duration
}

type probed struct {
	period time.Duration
	wakes  []wake
}

// probe sleeps period again and again for duration, recording how late
// each sleep returned.
func probe(duration, period time.Duration, sleep func(time.Duration)) probed {
	p := probed{period: period, wakes: make([]wake, 0, int(duration/period)+1)}
	start := time.Now()
	for {
		t := time.Now()
		at := t.Sub(start)
		if at >= duration {
			return p
		}
		sleep(period)
		p.wakes = append(p.wakes, wake{at: at, late: max(time.Since(t)-period, 0)})
	}
}

// print writes the summary line
//
//	stallprobe: N sleeps of P over D; woken more than L late: S times (max M, T in all); p99 late X, p99.9 Y
//
// and, with list, a "stall at A: late Z" line per stall.
func (p probed) print(w io.Writer, late time.Duration, list bool) error {
	if len(p.wakes) == 0 {
		_, err := fmt.Fprintln(w, "stallprobe: no sleep completed")
		return err
	}
	lates := make([]time.Duration, len(p.wakes))
	var stalls int
	var stalled, worst time.Duration
	for i, wk := range p.wakes {
		lates[i] = wk.late
		if wk.late > late {
			stalls++
			stalled += wk.late
		}
		worst = max(worst, wk.late)
	}
	slices.Sort(lates)
	pct := func(q float64) time.Duration { return lates[min(len(lates)-1, int(q*float64(len(lates))))] }
	last := p.wakes[len(p.wakes)-1]
	if _, err := fmt.Fprintf(w, "stallprobe: %d sleeps of %v over %v; woken more than %v late: %d times (max %v, %v in all); p99 late %v, p99.9 %v\n",
		len(p.wakes), p.period, (last.at + p.period + last.late).Round(time.Millisecond), late, stalls,
		worst.Round(10*time.Microsecond), stalled.Round(10*time.Microsecond),
		pct(0.99).Round(10*time.Microsecond), pct(0.999).Round(10*time.Microsecond)); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	if !list {
		return nil
	}
	for _, wk := range p.wakes {
		if wk.late > late {
			if _, err := fmt.Fprintf(w, "stall at %.3fs: late %v\n", wk.at.Seconds(), wk.late.Round(10*time.Microsecond)); err != nil {
				return fmt.Errorf("write stall: %w", err)
			}
		}
	}
	return nil
}
