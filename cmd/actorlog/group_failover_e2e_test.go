// group_failover_e2e_test.go: two `actorlog consume --group` processes on
// three loopback hosts (topic and offsets topic at RF=3) carry on when the
// host leading their group's offsets partition — their coordinator — is
// SIGKILLed: records produced after the kill are all printed, a record is
// printed again only if it was not committed before the kill, the group is
// Stable with both members and no lag through a surviving host, and the
// committed offsets never go backwards.

package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
)

// commitWatch polls a group's committed offsets of one topic and records
// any that went backwards; after mark, when a fetch that started after it
// was first answered, and when an offset first moved past the baseline.
type commitWatch struct {
	c          *client.Client
	grp, topic string
	stop, done chan struct{}

	mu        sync.Mutex
	last      map[int32]int64
	backwards []string
	polls     int
	failures  int
	baseline  map[int32]int64
	marked    time.Time
	served    time.Time // first fetch started after marked and answered
	advanced  time.Time // first poll after marked with an offset past baseline
}

func watchCommits(c *client.Client, grp, topic string) *commitWatch {
	w := &commitWatch{c: c, grp: grp, topic: topic, stop: make(chan struct{}), done: make(chan struct{}), last: map[int32]int64{}}
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			w.poll()
		}
	}()
	return w
}

func (w *commitWatch) poll() {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	offs, err := w.c.FetchOffsets(ctx, w.grp, &messages.TopicPartitions{Topic: w.topic})
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.polls++
	if err != nil {
		w.failures++
		return
	}
	if !w.marked.IsZero() && w.served.IsZero() && start.After(w.marked) {
		w.served = now
	}
	for _, o := range offs {
		if prev, ok := w.last[o.Partition]; ok && o.Offset < prev {
			w.backwards = append(w.backwards, fmt.Sprintf("partition %d: %d after %d at %s", o.Partition, o.Offset, prev, now.Format("15:04:05.000")))
		}
		w.last[o.Partition] = o.Offset
		if w.baseline != nil && w.advanced.IsZero() && o.Offset > w.baseline[o.Partition] {
			w.advanced = now
		}
	}
}

// mark sets the baseline: advanced is the first poll after now that sees
// an offset beyond it.
func (w *commitWatch) mark(baseline map[int32]int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.baseline, w.marked = baseline, time.Now()
}

func (w *commitWatch) halt() {
	close(w.stop)
	<-w.done
}

// firstGrowth waits in the background for any of files to grow beyond its
// size now and records when.
func firstGrowth(files ...string) (func() time.Time, func()) {
	sizes := make([]int64, len(files))
	for i, f := range files {
		if st, err := os.Stat(f); err == nil {
			sizes[i] = st.Size()
		}
	}
	var mu sync.Mutex
	var at time.Time
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			for i, f := range files {
				if st, err := os.Stat(f); err == nil && st.Size() > sizes[i] {
					mu.Lock()
					at = time.Now()
					mu.Unlock()
					return
				}
			}
		}
	}()
	get := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return at
	}
	return get, func() { close(stop); <-done }
}

func TestGroupCarriesOnAfterCoordinatorHostKill(t *testing.T) {
	const (
		topic      = "failover"
		grp        = "failover-group"
		partitions = 6
		before     = 3000 // records produced before the kill
		after      = 3000 // and after it
		session    = 6 * time.Second
		heartbeat  = time.Second
	)
	tStart := time.Now()
	hosts := startCluster(t, "--offsets-topic-partitions", "3", "--group-initial-rebalance-delay", "0")
	hosts[0].mustCLI("", "topics", "create", topic, "--partitions", strconv.Itoa(partitions), "--replication-factor", "3")
	var boot []string
	for _, h := range hosts {
		boot = append(boot, h.addr())
	}
	c := newClient(t, boot[0], boot[1:]...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Finding the coordinator creates the offsets topic (RF=3).
	co, err := c.FindCoordinator(ctx, grp)
	if err != nil {
		t.Fatalf("find coordinator: %v", err)
	}
	waitFullISR(t, hosts[0], topic)
	waitFullISR(t, hosts[0], messages.OffsetsTopic)
	feed := newRecordFeed(t, c)
	feed.send(topic, before)
	tReady := time.Now()

	// Both members bootstrap from every host (the later --bootstrap wins
	// over the one startGroupConsumer puts first).
	member := func(name string) *consumerProc {
		return startGroupConsumer(t, hosts[0], name, topic, "--bootstrap", strings.Join(boot, ","),
			"--group", grp, "--from-beginning", "--print-offset", "--timeout", "0",
			"--session-timeout", session.String(), "--heartbeat-interval", heartbeat.String(), "--auto-commit-interval", "500ms")
	}
	a, b := member("a"), member("b")
	procs := []*consumerProc{a, b}
	waitOwnership(t, 30*time.Second, partitions, procs, 3, 3)
	by := waitAllPrinted(t, 30*time.Second, feed.acked(), procs...)
	for v, who := range by {
		if len(who) != 1 {
			t.Fatalf("record %s printed by %v before any failure", v, who)
		}
	}
	ends := hosts[0].endOffsets(topic)
	var committed map[int32]int64
	clustertest.WaitFor(t, 10*time.Second, func() error {
		committed = committedOffsets(t, c, grp, topic)
		for p, end := range ends {
			if committed[int32(p)] != end {
				return fmt.Errorf("committed %v, log ends %v", committed, ends)
			}
		}
		return nil
	})
	tConsumed := time.Now()
	watch := watchCommits(newClient(t, boot[0], boot[1:]...), grp, topic)

	// The coordinator is the leader of the group's offsets partition.
	rows, err := describePartitions(t, hosts[0], messages.OffsetsTopic)
	if err != nil {
		t.Fatal(err)
	}
	leader := -1
	for _, r := range rows {
		if int32(r.partition) == co.Partition {
			leader = r.leader
		}
	}
	victim := hostByID(t, hosts, leader)
	if victim.addr() != co.Address {
		t.Logf("the coordinator moved since FindCoordinator: %s then, host %d (%s) now", co.Address, leader, victim.addr())
	}
	live := others(hosts, victim)
	gen := describeGroupCLI(t, live[0], grp).Generation

	// SIGKILL it, then produce more through the survivors.
	growth, stopGrowth := firstGrowth(a.out, b.out)
	defer stopGrowth()
	victim.stop(syscall.SIGKILL)
	tKill := time.Now()
	watch.mark(committed)
	feed.send(topic, after)
	tProduced := time.Now()
	acked := feed.acked()
	by = waitAllPrinted(t, 30*time.Second, acked, procs...)
	tPrinted := time.Now()

	// Every record printed more than once was not committed at the kill.
	dups, dupsSelf := 0, 0
	for _, p := range procs {
		seen := map[string]bool{}
		for _, r := range p.records() {
			if len(by[r.value]) < 2 {
				continue
			}
			if r.offset < committed[r.partition] {
				t.Errorf("record %s (partition %d offset %d, committed %d at the kill) printed by %v", r.value, r.partition, r.offset, committed[r.partition], by[r.value])
			}
			if seen[r.value] {
				dupsSelf++
			}
			seen[r.value] = true
		}
	}
	for _, who := range by {
		dups += len(who) - 1
	}

	// The group settles Stable with both members and no lag, as a
	// surviving host describes it.
	ends = live[0].endOffsets(topic)
	clustertest.WaitFor(t, 20*time.Second, func() error {
		got := committedOffsets(t, c, grp, topic)
		for p, end := range ends {
			if got[int32(p)] != end {
				return fmt.Errorf("committed %v, log ends %v", got, ends)
			}
		}
		return nil
	})
	tCommitted := time.Now()
	var d groupDescription
	clustertest.WaitFor(t, 20*time.Second, func() error {
		d = describeGroupCLI(t, live[1], grp)
		if d.State != "Stable" || len(d.Members) != 2 || len(d.Offsets) != partitions {
			return fmt.Errorf("group %s, members %+v, offsets %v", d.State, d.Members, d.lags())
		}
		for _, o := range d.Offsets {
			if o.Lag == nil || *o.Lag != 0 {
				return fmt.Errorf("partition %d: lag %s (%v)", o.Partition, offsetPtrText(o.Lag), d.lags())
			}
		}
		return nil
	})
	watch.poll()
	watch.halt()
	watch.mu.Lock()
	if len(watch.backwards) > 0 {
		t.Errorf("committed offsets went backwards: %v", watch.backwards)
	}
	t.Logf("commit watch: %d polls, %d failed (coordinator unavailable), none backwards: %v", watch.polls, watch.failures, len(watch.backwards) == 0)
	advanced, served := watch.advanced, watch.served
	watch.mu.Unlock()

	var events []string
	for _, p := range procs {
		for _, e := range p.eventsSince(tKill) {
			events = append(events, fmt.Sprintf("%s: %s (generation %d)", p.name, e.Msg, e.Generation))
		}
		if n := strings.Count(p.logText(), "finding the group coordinator again"); n > 0 {
			events = append(events, fmt.Sprintf("%s: rediscovered the coordinator %d times", p.name, n))
		}
	}
	for _, p := range procs {
		if code := p.stop(syscall.SIGTERM); code != 0 {
			t.Errorf("%s exited with %d on SIGTERM; log:\n%s", p.name, code, p.logText())
		}
	}

	since := func(at time.Time) string {
		if at.IsZero() {
			return "never"
		}
		return at.Sub(tKill).Round(time.Millisecond).String()
	}
	t.Logf("SIGKILL of host %d (%s), leader of %s-%d (the coordinator of %q, generation %d before the kill)",
		leader, victim.addr(), messages.OffsetsTopic, co.Partition, grp, gen)
	t.Logf("setup %v (cluster, topics, %d records); %d records printed and committed by 2 members %v after they started",
		tReady.Sub(tStart).Round(time.Millisecond), before, before, tConsumed.Sub(tReady).Round(time.Millisecond))
	t.Logf("after the kill (host liveness lease TTL 6 s): offsets fetched from the new coordinator at %s; %d more records acknowledged at %s; first record printed at %s; first commit past the kill's at %s; all printed at %s; all committed at %s",
		since(served), after, since(tProduced), since(growth()), since(advanced), since(tPrinted), since(tCommitted))
	t.Logf("duplicates: %d printings beyond the first (%d by the same member), all at or above the last commit before the kill", dups, dupsSelf)
	t.Logf("group after the kill: %s, generation %d, %d members; membership events since the kill: %v", d.State, d.Generation, len(d.Members), events)
	t.Logf("whole test %v", time.Since(tStart).Round(time.Millisecond))
}
