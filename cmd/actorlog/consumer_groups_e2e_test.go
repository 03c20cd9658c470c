// consumer_groups_e2e_test.go: `actorlog consume --group` as users run it,
// several consumer processes in one group against a real `actorlog host`:
// they split a topic's partitions and print every record exactly once;
// a SIGKILLed static member restarted at once gets its partitions back
// without a rebalance; a SIGKILLed member's partitions move to the others
// once its session times out, with no record lost (duplicates only from
// work it had not committed); a returning member takes partitions from the
// others incrementally (cooperative-sticky). And the time a fourth member
// takes to get its partitions from a stable group of three.

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/actors/producer"
	"github.com/actorlog/actorlog/internal/poll"
	"github.com/actorlog/actorlog/messages"
)

// groupEvent is a consumer's log line about its membership.
type groupEvent struct {
	at         time.Time
	Msg        string   `json:"msg"`
	Generation int32    `json:"generation"`
	Member     string   `json:"member"`
	Added      []string `json:"added"`
	Revoked    []string `json:"revoked"`
	Owned      []string `json:"owned"`
	Lost       bool     `json:"lost"`
}

// consumerProc is one `actorlog consume --group` process; its stdout goes
// to a file, its JSON log is read as it comes.
type consumerProc struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	out    string
	start  time.Time
	exited chan struct{}

	mu     sync.Mutex
	events []groupEvent
	log    []string
}

func startGroupConsumer(t *testing.T, h *hostProc, name string, args ...string) *consumerProc {
	t.Helper()
	p := &consumerProc{t: t, name: name, out: filepath.Join(t.TempDir(), name+".out"), exited: make(chan struct{})}
	f, err := os.Create(p.out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p.cmd = exec.Command(binPath, append([]string{"--bootstrap", h.addr(), "--log-level", "info", "--log-format", "json", "consume"}, args...)...)
	p.cmd.Stdout = f
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.start = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			now := time.Now()
			var ev groupEvent
			ok := json.Unmarshal([]byte(line), &ev) == nil && strings.HasPrefix(ev.Msg, "consumer: ")
			p.mu.Lock()
			p.log = append(p.log, line)
			if ok && (strings.Contains(ev.Msg, "partitions") || strings.Contains(ev.Msg, "joining")) {
				ev.at = now
				p.events = append(p.events, ev)
			}
			p.mu.Unlock()
		}
		_ = p.cmd.Wait() // the exit status is read from ProcessState
		close(p.exited)
	}()
	t.Cleanup(func() { p.stop(syscall.SIGKILL) })
	return p
}

// stop signals the process and waits for it to exit; it returns the exit
// code (negative: killed by that signal).
func (p *consumerProc) stop(sig syscall.Signal) int {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Signal(sig)
		select {
		case <-p.exited:
		case <-time.After(60 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
			p.t.Errorf("%s did not exit on %v; log:\n%s", p.name, sig, p.logText())
		}
	}
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -int(ws.Signal())
	}
	return p.cmd.ProcessState.ExitCode()
}

func (p *consumerProc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.log, "\n")
}

// eventsSince returns the membership events logged at or after t.
func (p *consumerProc) eventsSince(t time.Time) []groupEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []groupEvent
	for _, e := range p.events {
		if !e.at.Before(t) {
			out = append(out, e)
		}
	}
	return out
}

// owned returns the partitions the last assignment or revocation left the
// member with, and that event.
func (p *consumerProc) owned() ([]string, groupEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.events) - 1; i >= 0; i-- {
		if e := p.events[i]; strings.Contains(e.Msg, "partitions") {
			return e.Owned, e
		}
	}
	return nil, groupEvent{}
}

// printed is one record a consumer printed (--print-offset).
type printed struct {
	partition int32
	offset    int64
	value     string
}

// records parses the process's output so far (a torn last line of a
// killed process is skipped).
func (p *consumerProc) records() []printed {
	p.t.Helper()
	b, err := os.ReadFile(p.out)
	if err != nil {
		p.t.Fatal(err)
	}
	var out []printed
	for _, line := range strings.Split(string(b), "\n") {
		po, value, ok := strings.Cut(line, "\t")
		ps, offs, ok2 := strings.Cut(po, ":")
		part, err1 := strconv.Atoi(ps)
		off, err2 := strconv.ParseInt(offs, 10, 64)
		if !ok || !ok2 || err1 != nil || err2 != nil || !strings.HasPrefix(value, "v") {
			continue
		}
		out = append(out, printed{int32(part), off, value})
	}
	return out
}

// waitOwnership waits until each process owns want[i] partitions and all
// together own total distinct ones.
func waitOwnership(t *testing.T, timeout time.Duration, total int, procs []*consumerProc, want ...int) time.Time {
	t.Helper()
	met := false
	defer func() {
		if met {
			return
		}
		// poll.Until failed the test (t.Fatalf runs the deferred calls):
		// what each member was doing, for a failure seen once under CI's
		// load (a member of a new group owning nothing for 60 s).
		for _, p := range procs {
			lines := strings.Split(p.logText(), "\n")
			t.Logf("%s, last %d log lines:\n%s", p.name, min(len(lines), 40), strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	}()
	var last time.Time
	poll.Until(t, timeout, func() error {
		seen := map[string]bool{}
		ok := true
		last = time.Time{}
		var state []string
		for i, p := range procs {
			owned, ev := p.owned()
			state = append(state, fmt.Sprintf("%s:%v", p.name, owned))
			if len(owned) != want[i] {
				ok = false
			}
			for _, tp := range owned {
				if seen[tp] {
					ok = false
				}
				seen[tp] = true
			}
			if ev.at.After(last) {
				last = ev.at
			}
		}
		if !ok || len(seen) != total {
			return fmt.Errorf("the members own %v; want %v of %d partitions", state, want, total)
		}
		return nil
	})
	met = true
	return last
}

// ackedRecord is a record the producer had acknowledged.
type ackedRecord struct {
	partition int32
	offset    int64
}

// recordFeed produces numbered records ("v0000001", keyed k<n mod 97>)
// through the Go API and remembers the acknowledged ones.
type recordFeed struct {
	t    *testing.T
	p    *producer.Producer
	mu   sync.Mutex
	next int
	acks map[string]ackedRecord
	err  error
	stop chan struct{}
	done chan struct{}
}

func newRecordFeed(t *testing.T, c *client.Client) *recordFeed {
	p, err := producer.New(c, producer.ActorConfig{Acks: messages.Acks_ACKS_ALL})
	if err != nil {
		t.Fatal(err)
	}
	return &recordFeed{t: t, p: p, acks: map[string]ackedRecord{}}
}

// send produces n records and waits for their acknowledgements.
func (f *recordFeed) send(topic string, n int) {
	f.t.Helper()
	for range n {
		f.mu.Lock()
		f.next++
		v := fmt.Sprintf("v%07d", f.next)
		key := fmt.Sprintf("k%d", f.next%97)
		f.mu.Unlock()
		f.p.ProduceAsync(&producer.Send{Topic: topic, Partition: producer.AnyPartition, Key: []byte(key), Value: []byte(v),
			Callback: func(d producer.Delivered) {
				f.mu.Lock()
				defer f.mu.Unlock()
				if d.Err != nil {
					f.err = d.Err
					return
				}
				f.acks[v] = ackedRecord{d.Partition, d.Offset}
			}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := f.p.Flush(ctx); err != nil {
		f.t.Fatalf("flush: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		f.t.Fatalf("produce: %v", f.err)
	}
}

// run produces batches of 20 records every 20 ms until halt.
func (f *recordFeed) run(topic string) {
	f.stop, f.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(f.done)
		for {
			select {
			case <-f.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			f.send(topic, 20)
		}
	}()
}

func (f *recordFeed) halt() {
	close(f.stop)
	<-f.done
}

func (f *recordFeed) acked() map[string]ackedRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]ackedRecord, len(f.acks))
	for k, v := range f.acks {
		out[k] = v
	}
	return out
}

// waitAllPrinted waits until every acknowledged record was printed by one
// of procs.
func waitAllPrinted(t *testing.T, timeout time.Duration, acked map[string]ackedRecord, procs ...*consumerProc) map[string][]string {
	t.Helper()
	var by map[string][]string
	poll.Until(t, timeout, func() error {
		by = printedBy(procs...)
		missing := 0
		var example string
		for v := range acked {
			if len(by[v]) == 0 {
				missing++
				example = v
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d of %d acknowledged records never printed (e.g. %s at %+v)", missing, len(acked), example, acked[example])
		}
		return nil
	})
	return by
}

// printedBy maps each value to the processes that printed it (a name once
// per printing).
func printedBy(procs ...*consumerProc) map[string][]string {
	by := map[string][]string{}
	for _, p := range procs {
		for _, r := range p.records() {
			by[r.value] = append(by[r.value], p.name)
		}
	}
	return by
}

// committedOffsets returns the group's committed offsets of topic by
// partition.
func committedOffsets(t *testing.T, c *client.Client, grp, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	offs, err := c.FetchOffsets(ctx, grp, &messages.TopicPartitions{Topic: topic})
	if err != nil {
		t.Fatalf("fetch offsets: %v", err)
	}
	out := map[int32]int64{}
	for _, o := range offs {
		out[o.Partition] = o.Offset
	}
	return out
}

// partitionIndex returns the partition of "topic-N".
func partitionIndex(tp string) int32 {
	i := strings.LastIndex(tp, "-")
	n, _ := strconv.Atoi(tp[i+1:])
	return int32(n)
}

// killRecord is what a SIGKILL of a member left behind: the partitions it
// owned and the group's committed offsets of them at that moment.
type killRecord struct {
	proc      *consumerProc
	owned     map[int32]bool
	committed map[int32]int64
}

// explains reports whether printing r again is the killed member's
// uncommitted work: it owned r's partition, printed r, and r was not
// committed when it died.
func (k killRecord) explains(r printed, killedPrinted map[string]bool) bool {
	return k.owned[r.partition] && r.offset >= k.committed[r.partition] && killedPrinted[r.value]
}

func TestConsumerGroupProcessesShareKillAndRestart(t *testing.T) {
	const (
		topic      = "events"
		grp        = "workers"
		partitions = 12
		session    = 6 * time.Second
		heartbeat  = time.Second
	)
	h := startHost(t, t.TempDir(), freeBase(t), "--offsets-topic-partitions", "4", "--group-initial-rebalance-delay", "0")
	h.mustCLI("", "topics", "create", topic, "--partitions", strconv.Itoa(partitions))
	c := newClient(t, h.addr())
	feed := newRecordFeed(t, c)
	feed.send(topic, 3000)

	member := func(name string) *consumerProc {
		return startGroupConsumer(t, h, name, topic, "--group", grp, "--group-instance-id", name[:1],
			"--from-beginning", "--print-offset", "--timeout", "0",
			"--session-timeout", session.String(), "--heartbeat-interval", heartbeat.String())
	}

	// 1. Three members split the partitions and print every record once.
	a, b, c1 := member("a"), member("b"), member("c1")
	t0 := time.Now()
	waitOwnership(t, 60*time.Second, partitions, []*consumerProc{a, b, c1}, 4, 4, 4)
	by := waitAllPrinted(t, 60*time.Second, feed.acked(), a, b, c1)
	for v, who := range by {
		if len(who) != 1 {
			t.Errorf("record %s printed by %v: more than once without any failure", v, who)
		}
	}
	t.Logf("3 members own 4 partitions each and printed all 3000 records once, %v after they started", time.Since(t0).Round(time.Millisecond))

	// 2. SIGKILL a member and restart it at once with the same instance
	// id: it gets its partitions back in the same generation, without a
	// rebalance; the others notice nothing.
	feed.run(topic)
	// Sleeps between the phases below stay: each lets the feed and the
	// members run for a while, so a kill finds both committed and
	// uncommitted work in flight; time under load is the point, not a
	// state to wait for.
	time.Sleep(1500 * time.Millisecond)
	kill := func(p *consumerProc) killRecord {
		owned, _ := p.owned()
		if code := p.stop(syscall.SIGKILL); code != -int(syscall.SIGKILL) {
			t.Fatalf("%s exited with %d before the kill", p.name, code)
		}
		k := killRecord{proc: p, owned: map[int32]bool{}, committed: committedOffsets(t, c, grp, topic)}
		for _, tp := range owned {
			k.owned[partitionIndex(tp)] = true
		}
		return k
	}
	ownedBefore, lastEv := c1.owned()
	kill1 := kill(c1)
	tKill := time.Now()
	c2 := member("c2")
	waitOwnership(t, 30*time.Second, partitions, []*consumerProc{a, b, c2}, 4, 4, 4)
	owned2, ev2 := c2.owned()
	if !slices.Equal(owned2, ownedBefore) || ev2.Generation != lastEv.Generation {
		t.Fatalf("the restarted static member owns %v in generation %d; before the kill %v in generation %d", owned2, ev2.Generation, ownedBefore, lastEv.Generation)
	}
	for _, p := range []*consumerProc{a, b} {
		if evs := p.eventsSince(tKill); len(evs) > 0 {
			t.Fatalf("%s took part in a rebalance when the static member restarted: %+v", p.name, evs)
		}
	}
	t.Logf("static member restarted: its %d partitions back in generation %d, %v after the SIGKILL (process start included)", len(owned2), ev2.Generation, ev2.at.Sub(tKill).Round(time.Millisecond))

	// 3. SIGKILL it again and leave it dead: once its session times out
	// its partitions move to the other two.
	time.Sleep(2 * time.Second) // under load for a while (see above)
	kill2 := kill(c2)
	tKill = time.Now()
	moved := waitOwnership(t, 30*time.Second, partitions, []*consumerProc{a, b}, 6, 6)
	took := moved.Sub(tKill)
	t.Logf("the killed member's partitions moved to the others %v after the SIGKILL (session timeout %v, heartbeat %v)", took.Round(time.Millisecond), session, heartbeat)
	if took > session+heartbeat+3*time.Second {
		t.Errorf("the partitions moved %v after the kill; want within the session timeout %v plus a heartbeat and a rebalance", took, session)
	}

	// 4. Start it again (same instance id, but its session is over): it
	// joins as a new member and takes 4 partitions from the others, who
	// give up only those (cooperative-sticky) and keep the rest.
	time.Sleep(time.Second) // under load for a while (see above)
	tBack := time.Now()
	c3 := member("c3")
	waitOwnership(t, 30*time.Second, partitions, []*consumerProc{a, b, c3}, 4, 4, 4)
	var revoked []string
	for _, p := range []*consumerProc{a, b} {
		for _, e := range p.eventsSince(tBack) {
			if e.Msg == "consumer: partitions revoked" {
				if e.Lost || len(e.Owned) < 4 {
					t.Errorf("%s: a revocation beyond the moved partitions: %+v", p.name, e)
				}
				revoked = append(revoked, e.Revoked...)
			}
		}
	}
	byPartition := func(tps []string) []string {
		out := slices.Clone(tps)
		sort.Slice(out, func(i, j int) bool { return partitionIndex(out[i]) < partitionIndex(out[j]) })
		return out
	}
	if owned3, _ := c3.owned(); len(revoked) != 4 || !slices.Equal(byPartition(revoked), byPartition(owned3)) {
		t.Errorf("the others revoked %v for the returning member, which owns %v: want exactly those 4", revoked, owned3)
	}

	// 5. Stop producing; every acknowledged record was printed; the
	// duplicates are the killed members' uncommitted work only.
	time.Sleep(time.Second) // under load for a while (see above)
	feed.halt()
	acked := feed.acked()
	by = waitAllPrinted(t, 60*time.Second, acked, a, b, c1, c2, c3)
	for _, p := range []*consumerProc{a, b, c3} {
		if code := p.stop(syscall.SIGTERM); code != 0 {
			t.Errorf("%s exited with %d on SIGTERM; log:\n%s", p.name, code, p.logText())
		}
	}
	printedByKilled := func(p *consumerProc) map[string]bool {
		out := map[string]bool{}
		for _, r := range p.records() {
			out[r.value] = true
		}
		return out
	}
	killed1, killed2 := printedByKilled(c1), printedByKilled(c2)
	dups := map[string]int{}
	for _, p := range []*consumerProc{a, b, c1, c2, c3} {
		for _, r := range p.records() {
			if len(by[r.value]) < 2 {
				continue
			}
			switch {
			case kill1.explains(r, killed1) && p != c1:
				dups["first kill"]++
			case kill2.explains(r, killed2) && p != c2:
				dups["second kill"]++
			case p == kill1.proc || p == kill2.proc:
				// the killed member's own printing of a record
				// printed again by the next owner
			default:
				t.Errorf("record %s (partition %d offset %d) printed by %v: not uncommitted work of a killed member", r.value, r.partition, r.offset, by[r.value])
			}
		}
	}
	t.Logf("%d records acknowledged, all printed; reprinted after the kills (uncommitted work): %v", len(acked), dups)

	// The group's committed offsets reached the log end.
	ends := h.endOffsets(topic)
	final := committedOffsets(t, c, grp, topic)
	for p, end := range ends {
		if final[int32(p)] != end {
			t.Errorf("partition %d: committed %d, log end %d after a clean stop", p, final[int32(p)], end)
		}
	}
}

// rebalanceTrial starts a fourth member in a stable group of three and
// returns how long it took from its first JoinGroup, and from its process
// start, until it owned its share; then stops it (it leaves) and waits for
// the three to own everything again.
func rebalanceTrial(t *testing.T, h *hostProc, three []*consumerProc, args []string, name string) (fromJoin, fromStart time.Duration) {
	t.Helper()
	fourth := startGroupConsumer(t, h, name, args...)
	all := append(slices.Clone(three), fourth)
	done := waitOwnership(t, 60*time.Second, 12, all, 3, 3, 3, 3)
	var joined time.Time
	for _, e := range fourth.eventsSince(time.Time{}) {
		if e.Msg == "consumer: joining the group" {
			joined = e.at
			break
		}
	}
	fromJoin, fromStart = done.Sub(joined), done.Sub(fourth.start)
	if code := fourth.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("%s exited with %d; log:\n%s", name, code, fourth.logText())
	}
	waitOwnership(t, 60*time.Second, 12, three, 4, 4, 4)
	return fromJoin, fromStart
}

func TestConsumerGroupRebalanceTimeForAFourthMember(t *testing.T) {
	trials := 3
	if s := os.Getenv("ACTORLOG_REBALANCE_TRIALS"); s != "" {
		trials, _ = strconv.Atoi(s)
	}
	h := startHost(t, t.TempDir(), freeBase(t), "--offsets-topic-partitions", "4", "--group-initial-rebalance-delay", "0")
	h.mustCLI("", "topics", "create", "rt", "--partitions", "12")
	for _, hb := range []time.Duration{3 * time.Second, 250 * time.Millisecond} {
		grp := "rt-" + hb.String()
		args := []string{"rt", "--group", grp, "--timeout", "0", "--session-timeout", "10s", "--heartbeat-interval", hb.String()}
		var three []*consumerProc
		for i := range 3 {
			three = append(three, startGroupConsumer(t, h, fmt.Sprintf("%s-m%d", grp, i), args...))
		}
		waitOwnership(t, 60*time.Second, 12, three, 4, 4, 4)
		var fromJoin, fromStart []time.Duration
		for i := range trials {
			time.Sleep(time.Second) // stable for a while: each trial starts from a settled group
			j, s := rebalanceTrial(t, h, three, args, fmt.Sprintf("%s-fourth%d", grp, i))
			fromJoin, fromStart = append(fromJoin, j), append(fromStart, s)
		}
		slices.Sort(fromJoin)
		slices.Sort(fromStart)
		t.Logf("heartbeat %v: a 4th member owned its 3 of 12 partitions after (from its first JoinGroup) min %v median %v max %v; (from its process start) min %v median %v max %v; %d trials",
			hb, fromJoin[0].Round(time.Millisecond), fromJoin[len(fromJoin)/2].Round(time.Millisecond), fromJoin[len(fromJoin)-1].Round(time.Millisecond),
			fromStart[0].Round(time.Millisecond), fromStart[len(fromStart)/2].Round(time.Millisecond), fromStart[len(fromStart)-1].Round(time.Millisecond), trials)
		// The coordinator hints the members (RebalanceStarted) as each
		// of the two rebalances (cooperative: and its follow-up)
		// starts, so they rejoin at once, whatever the heartbeat
		// interval; without hints a join phase would last up to a
		// heartbeat interval.
		if med := fromJoin[len(fromJoin)/2]; med > time.Second {
			t.Errorf("heartbeat %v: median rebalance %v", hb, med)
		}
		for _, p := range three {
			if code := p.stop(syscall.SIGTERM); code != 0 {
				t.Errorf("%s exited with %d", p.name, code)
			}
		}
	}
}
