// replication_docker_test.go: the Replication scenario of TestDockerCluster.
// A topic with 3 partitions, replication factor 3 and min.insync.replicas=2
// takes records from `actorlog perf verifiable-produce --acks all`, run in
// a container of its own on the compose network (the cli service), which
// prints exactly which records were acknowledged. The container leading
// partition 0 is cut off the network (docker network disconnect) while
// production goes on, until another host leads partition 0 and
// acknowledges its records; then it is reconnected. Once every ISR is full
// again the producer is stopped (SIGTERM), and:
//
//   - every acknowledged record is in the log at its acknowledged offset;
//   - no value is in the log twice (exactly once: holds with the
//     idempotent producer, which retries without duplicating);
//   - per partition, values are in produce order;
//   - every host's `topics describe` shows the same leaders, full ISRs and
//     end offsets, matching what was consumed;
//   - once the hosts are stopped, the three replicas of each partition
//     are byte-for-byte identical (read from the containers' volumes).
//
// The scenario leaves the cluster stopped: it runs last.

package deploy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/actorlog/actorlog/storage"
)

const (
	replTopic      = "replicated"
	replPartitions = 3
	// replThroughput is the producer's rate over all partitions: enough
	// to keep every partition busy, little enough for 2 shared cores.
	replThroughput = 150
)

// partitionRow is one partition line of `topics describe`.
type partitionRow struct {
	partition int32
	leader    int  // -1: none (offline)
	leaderUp  bool // false when the leader is marked unavailable
	replicas  []int
	isr       []int
	end       int64 // -1 when the leader did not answer
}

// topicJSON is the part of `topics describe --output json` the tests read
// (the README documents the whole document).
type topicJSON struct {
	Partitions []struct {
		Partition    int32  `json:"partition"`
		Leader       int    `json:"leader"`
		LeaderStatus string `json:"leader_status"`
		Replicas     []int  `json:"replicas"`
		ISR          []int  `json:"isr"`
		LogEndOffset *int64 `json:"log_end_offset"`
	} `json:"partitions"`
}

// parseTopicDescribe parses `topics describe --output json` output, one row
// per partition by index.
func parseTopicDescribe(out string) ([]partitionRow, error) {
	var d topicJSON
	if err := decodeJSON(out, &d); err != nil {
		return nil, fmt.Errorf("topics describe: %w", err)
	}
	var rows []partitionRow
	for _, p := range d.Partitions {
		if p.LeaderStatus == "" || p.Replicas == nil || p.ISR == nil {
			return nil, fmt.Errorf("topics describe: partition %d lacks fields in %q", p.Partition, out)
		}
		r := partitionRow{partition: p.Partition, leader: p.Leader, leaderUp: p.LeaderStatus == "available",
			replicas: p.Replicas, isr: p.ISR, end: -1}
		if p.LogEndOffset != nil {
			r.end = *p.LogEndOffset
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].partition < rows[j].partition })
	return rows, nil
}

func TestParseTopicDescribe(t *testing.T) {
	out := `{"name": "r", "replication_factor": 3, "configs": {"min.insync.replicas": "2"}, "partitions": [
		{"partition": 1, "leader": -1, "leader_status": "offline", "replicas": [2, 3, 1], "isr": [2],
		 "log_start_offset": null, "log_end_offset": null, "adding_replicas": [], "removing_replicas": []},
		{"partition": 0, "leader": 1, "leader_status": "available", "replicas": [1, 2, 3], "isr": [1, 2, 3],
		 "log_start_offset": 0, "log_end_offset": 1200, "adding_replicas": [], "removing_replicas": []},
		{"partition": 2, "leader": 3, "leader_status": "unavailable", "replicas": [3, 1, 2], "isr": [3, 1],
		 "log_start_offset": 0, "log_end_offset": 17, "adding_replicas": [], "removing_replicas": []}]}
`
	rows, err := parseTopicDescribe(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []partitionRow{
		{partition: 0, leader: 1, leaderUp: true, replicas: []int{1, 2, 3}, isr: []int{1, 2, 3}, end: 1200},
		{partition: 1, leader: -1, replicas: []int{2, 3, 1}, isr: []int{2}, end: -1},
		{partition: 2, leader: 3, replicas: []int{3, 1, 2}, isr: []int{3, 1}, end: 17},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("parsed\n%v\nwant\n%v", rows, want)
	}
	if _, err := parseTopicDescribe(`{"partitions": [{"partition": 0, "leader": 1}]}`); err == nil {
		t.Fatal("a partition without its fields parsed")
	}
	if _, err := parseTopicDescribe("PARTITION LEADER REPLICAS ISR LOG-END-OFFSET\n0 1 1,2,3 1\n"); err == nil {
		t.Fatal("a table parsed as JSON")
	}
}

// describeTopic runs `topics describe --output json` through service.
func (c *cluster) describeTopic(service, topic string) ([]partitionRow, error) {
	out, err := c.cli(service, "", "topics", "describe", topic, "--output", "json")
	if err != nil {
		return nil, err
	}
	return parseTopicDescribe(out)
}

// fullISR checks that every partition has a live leader and all its
// replicas in sync.
func fullISR(rows []partitionRow, partitions int) error {
	if len(rows) != partitions {
		return fmt.Errorf("%d partitions described, want %d", len(rows), partitions)
	}
	for _, r := range rows {
		if !r.leaderUp || len(r.isr) != len(r.replicas) {
			return fmt.Errorf("partition %d: leader %d (up %v), replicas %v, ISR %v", r.partition, r.leader, r.leaderUp, r.replicas, r.isr)
		}
	}
	return nil
}

// vpEvent is one output line of `perf verifiable-produce`.
type vpEvent struct {
	Event     string `json:"event"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Value     string `json:"value"`
	Error     string `json:"error"`
	Sent      int64  `json:"sent"`
	Acked     int64  `json:"acked"`
	Failed    int64  `json:"failed"`
}

// ack is one acknowledged record, with when the test read its line.
type ack struct {
	offset int64
	value  string
	at     time.Time
}

// verifiableProducer is `perf verifiable-produce` running in a container of
// the cli service; it collects the producer's output as it comes.
type verifiableProducer struct {
	name   string // the container's
	stderr string // a file with the producer's log (debug level)
	exited chan struct{}

	mu      sync.Mutex
	acks    map[int32][]ack // in output order
	errs    []vpEvent
	done    *vpEvent
	other   []string // lines that are not events
	waitErr error    // the command's, once exited
}

// startVerifiableProducer runs verifiable-produce on topic in a new
// container of the cli service, with its log at debug level (where the
// producer logs its retries), and reads its output. The container is
// killed at cleanup if it still runs.
func (c *cluster) startVerifiableProducer(topic string, args ...string) *verifiableProducer {
	t := c.t
	p := &verifiableProducer{name: c.project + "-verifiable-producer", stderr: filepath.Join(t.TempDir(), "stderr"),
		exited: make(chan struct{}), acks: map[int32][]ack{}}
	full := append(append(c.compose[1:len(c.compose):len(c.compose)], "-p", c.project, "-f", c.file,
		"run", "--rm", "-T", "--name", p.name, "cli", "--log-level", "debug", "perf", "verifiable-produce", topic), args...)
	cmd := exec.Command(c.compose[0], full...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.Create(p.stderr)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		stderr.Close()
		t.Fatalf("%s %s: %v", c.compose[0], strings.Join(full, " "), err)
	}
	go func() {
		defer stderr.Close()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.line(sc.Text())
		}
		err := cmd.Wait()
		if err != nil {
			b, rerr := os.ReadFile(p.stderr)
			err = fmt.Errorf("verifiable producer: %v: %s (reading its log: %v)", err, lastLines(string(b), 5), rerr)
		}
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
			return
		default:
		}
		if out, err := run(30*time.Second, "", "docker", "kill", p.name); err != nil {
			t.Logf("docker kill %s: %v %s", p.name, err, out)
		}
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			t.Errorf("the verifiable producer did not exit after docker kill")
		}
	})
	return p
}

// line records one output line.
func (p *verifiableProducer) line(l string) {
	var e vpEvent
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := json.Unmarshal([]byte(l), &e); err != nil {
		p.other = append(p.other, l)
		return
	}
	switch e.Event {
	case "ack":
		p.acks[e.Partition] = append(p.acks[e.Partition], ack{offset: e.Offset, value: e.Value, at: time.Now()})
	case "error":
		p.errs = append(p.errs, e)
	case "done":
		p.done = &e
	default:
		p.other = append(p.other, l)
	}
}

// acked returns the acks of partition read at or after since.
func (p *verifiableProducer) acked(part int32, since time.Time) []ack {
	p.mu.Lock()
	defer p.mu.Unlock()
	as := p.acks[part]
	i := sort.Search(len(as), func(i int) bool { return !as[i].at.Before(since) })
	return append([]ack(nil), as[i:]...)
}

// stop sends SIGTERM to the producer's container and waits for it to
// print "done" and exit.
func (p *verifiableProducer) stop(t *testing.T) {
	t.Helper()
	if out, err := run(30*time.Second, "", "docker", "kill", "--signal", "TERM", p.name); err != nil {
		t.Fatalf("stop the verifiable producer: %v %s", err, out)
	}
	select {
	case <-p.exited:
	case <-time.After(90 * time.Second):
		t.Fatal("the verifiable producer did not exit within 90s of SIGTERM")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waitErr != nil {
		t.Fatal(p.waitErr)
	}
	if len(p.other) > 0 {
		t.Logf("verifiable producer: %d lines that are not events, the first %q", len(p.other), p.other[0])
	}
	if p.done == nil {
		t.Fatal("the verifiable producer exited without a done line")
	}
}

// retries summarizes the producer's retries from its log: how many, by
// error code, and the first few lines.
func (p *verifiableProducer) retries() (string, error) {
	b, err := os.ReadFile(p.stderr)
	if err != nil {
		return "", fmt.Errorf("the verifiable producer's log: %w", err)
	}
	codes := map[string]int{}
	var n int
	var first []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.Contains(l, "retrying") {
			continue
		}
		n++
		code := "?"
		if _, after, ok := strings.Cut(l, "code="); ok {
			code = strings.Fields(after)[0]
		}
		codes[code]++
		if len(first) < 3 {
			first = append(first, l)
		}
	}
	if n == 0 {
		return "no retries", nil
	}
	return fmt.Sprintf("%d retries %v; the first:\n  %s", n, codes, strings.Join(first, "\n  ")), nil
}

// hostNames maps host ids to service names through `cluster describe`.
func (c *cluster) hostNames(via string) map[int]string {
	c.t.Helper()
	v, err := c.describe(via)
	if err != nil {
		c.t.Fatal(err)
	}
	names := map[int]string{}
	for _, h := range v {
		names[h.id] = h.name
	}
	return names
}

// logged is one record as the consume command printed it.
type logged struct {
	partition int32
	offset    int64
	value     string
}

// consumeLogged reads n records of topic from the beginning through
// service, with their partitions and offsets.
func (c *cluster) consumeLogged(service, topic string, n int64) ([]logged, error) {
	out, err := c.cli(service, "", "consume", topic, "--from-beginning", "--print-offset",
		"--max-messages", strconv.FormatInt(n, 10), "--timeout", "10s")
	if err != nil {
		return nil, err
	}
	var recs []logged
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		po, v, ok1 := strings.Cut(l, "\t")
		ps, offs, ok2 := strings.Cut(po, ":")
		p, err1 := strconv.Atoi(ps)
		o, err2 := strconv.ParseInt(offs, 10, 64)
		if !ok1 || !ok2 || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("consume line %q: want PARTITION:OFFSET<TAB>VALUE", l)
		}
		recs = append(recs, logged{partition: int32(p), offset: o, value: v})
	}
	return recs, nil
}

// rowsText describes topic replTopic's leaders and ISRs through via, for
// the log.
func rowsText(c *cluster, via string) string {
	rows, err := c.describeTopic(via, replTopic)
	if err != nil {
		return err.Error()
	}
	var s []string
	for _, r := range rows {
		s = append(s, fmt.Sprintf("p%d leader %d ISR %v", r.partition, r.leader, r.isr))
	}
	return strings.Join(s, ", ")
}

// errorList collects assertion failures and reports the first few.
type errorList struct {
	n     int
	first []string
}

func (e *errorList) add(format string, args ...any) {
	e.n++
	if len(e.first) < 10 {
		e.first = append(e.first, fmt.Sprintf(format, args...))
	}
}

func (e *errorList) report(t *testing.T, what string) {
	t.Helper()
	if e.n > 0 {
		t.Errorf("%s: %d violations; the first:\n  %s", what, e.n, strings.Join(e.first, "\n  "))
	}
}

// replicationCutScenario is the scenario of this file's comment.
func replicationCutScenario(c *cluster) {
	t := c.t
	start := time.Now()
	c.waitHealthy("host1", time.Minute, "cluster healthy before the replication scenario")
	c.mustCLI("host1", "", "topics", "create", replTopic, "--partitions", strconv.Itoa(replPartitions),
		"--replication-factor", "3", "--config", "min.insync.replicas=2")
	waitFor(t, 30*time.Second, "every partition of "+replTopic+" led and fully in sync", func() error {
		rows, err := c.describeTopic("host1", replTopic)
		if err != nil {
			return err
		}
		return fullISR(rows, replPartitions)
	})

	// A backstop: the producer stops by itself after 5 minutes.
	p := c.startVerifiableProducer(replTopic, "--acks", "all", "--throughput", strconv.Itoa(replThroughput),
		"--max-messages", strconv.Itoa(5*60*replThroughput))
	began := time.Now()
	waitFor(t, 45*time.Second, "the producer's first acks on every partition", func() error {
		for part := int32(0); part < replPartitions; part++ {
			if n := len(p.acked(part, began)); n < 20 {
				return fmt.Errorf("partition %d: %d acks", part, n)
			}
		}
		return nil
	})

	rows, err := c.describeTopic("host1", replTopic)
	if err != nil {
		t.Fatal(err)
	}
	if err := fullISR(rows, replPartitions); err != nil {
		t.Fatal(err)
	}
	names := c.hostNames("host1")
	cutID := rows[0].leader
	cut := names[cutID]
	if cut == "" {
		t.Fatalf("partition 0's leader %d is no host of %v", cutID, names)
	}
	majority := other(cut)
	v, err := c.describe(majority)
	if err != nil {
		t.Fatal(err)
	}
	ctrl, _ := v.controller()
	c.docker("network", "disconnect", c.network, c.ids[cut])
	cutAt := time.Now()
	var newLeader string
	elected := waitFor(t, 60*time.Second, "another host leads partition 0 after the cut of "+cut, func() error {
		rows, err := c.describeTopic(majority, replTopic)
		if err != nil {
			return err
		}
		if r := rows[0]; !r.leaderUp || r.leader == cutID {
			return fmt.Errorf("partition 0: leader %d (up %v), ISR %v", r.leader, r.leaderUp, r.isr)
		}
		newLeader = names[rows[0].leader]
		return nil
	})
	isrDuringCut := rowsText(c, majority)
	waitFor(t, 60*time.Second, "acks for partition 0 from "+newLeader, func() error {
		if n := len(p.acked(0, cutAt)); n < 20 {
			return fmt.Errorf("%d acks for partition 0 since the cut", n)
		}
		return nil
	})
	resumedAcks := p.acked(0, cutAt)
	firstAck, resumed := resumedAcks[0].at.Sub(cutAt), resumedAcks[19].at.Sub(cutAt)
	c.docker("network", "connect", "--alias", cut, c.network, c.ids[cut])
	reconnectAt := time.Now()
	var during []string
	for part := int32(0); part < replPartitions; part++ {
		as := p.acked(part, cutAt)
		n := sort.Search(len(as), func(i int) bool { return !as[i].at.Before(reconnectAt) })
		gap, last := time.Duration(0), cutAt
		for _, a := range as[:n] {
			gap, last = max(gap, a.at.Sub(last)), a.at
		}
		during = append(during, fmt.Sprintf("partition %d: %d acks, longest gap %v", part, n, gap.Round(time.Millisecond)))
	}
	role := "leader of partition 0"
	if ctrl.name == cut {
		role += " and controller"
	}
	t.Logf("network disconnect %s (%s): %s leads partition 0 after %v (%s); the first ack of partition 0 %v after the cut, the 20th after %v; during the %v cut: %s",
		cut, role, newLeader, elected.Round(time.Millisecond), isrDuringCut,
		firstAck.Round(time.Millisecond), resumed.Round(time.Millisecond), reconnectAt.Sub(cutAt).Round(time.Millisecond), strings.Join(during, "; "))

	healed := waitFor(t, 90*time.Second, "every ISR full again after reconnecting "+cut, func() error {
		v, err := c.describe(majority)
		if err != nil {
			return err
		}
		if v.alive() != len(services) {
			return fmt.Errorf("not every host alive: %v", v)
		}
		rows, err := c.describeTopic(majority, replTopic)
		if err != nil {
			return err
		}
		return fullISR(rows, replPartitions)
	})
	t.Logf("network connect %s -> every ISR full after %v", cut, healed.Round(time.Millisecond))

	p.stop(t)
	stoppedAt := time.Now()
	if r, err := p.retries(); err != nil {
		t.Error(err)
	} else {
		t.Logf("producer: %s", r)
	}

	// Every host describes the same partitions: leaders, full ISRs, end
	// offsets.
	var ends []int64
	var total int64
	for i, s := range services {
		rows, err := c.describeTopic(s, replTopic)
		if err != nil {
			t.Fatal(err)
		}
		if err := fullISR(rows, replPartitions); err != nil {
			t.Fatalf("through %s: %v", s, err)
		}
		if i == 0 {
			for _, r := range rows {
				ends = append(ends, r.end)
				total += r.end
			}
			continue
		}
		for j, r := range rows {
			if r.end != ends[j] {
				t.Errorf("partition %d: end offset %d through %s, %d through %s", r.partition, r.end, s, ends[j], services[0])
			}
		}
	}

	recs, err := c.consumeLogged(majority, replTopic, total)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var acked, failedInLog int64
	for _, as := range p.acks {
		acked += int64(len(as))
	}
	if d := *p.done; d.Acked != acked || d.Failed != int64(len(p.errs)) || d.Sent != d.Acked+d.Failed {
		t.Errorf("done line %+v: %d ack lines, %d error lines", d, acked, len(p.errs))
	}
	at := map[int32]map[int64]string{}
	count := map[int32]int64{}
	seen := map[string]logged{}
	var dups, order, foreign errorList
	last := map[int32]int64{}
	for _, r := range recs {
		if at[r.partition] == nil {
			at[r.partition] = map[int64]string{}
		}
		at[r.partition][r.offset] = r.value
		count[r.partition]++
		ps, ss, ok := strings.Cut(r.value, "-")
		seq, err := strconv.ParseInt(ss, 10, 64)
		if !ok || err != nil || ps != strconv.Itoa(int(r.partition)) {
			foreign.add("partition %d offset %d: value %q is not <partition>-<seq> of this partition", r.partition, r.offset, r.value)
			continue
		}
		if prev, dup := seen[r.value]; dup {
			dups.add("%s at partition %d offsets %d and %d", r.value, r.partition, prev.offset, r.offset)
			continue
		}
		seen[r.value] = r
		if l, ok := last[r.partition]; ok && seq <= l {
			order.add("partition %d offset %d: %s after %d-%d", r.partition, r.offset, r.value, r.partition, l)
		}
		last[r.partition] = max(last[r.partition], seq)
	}
	for part := int32(0); part < replPartitions; part++ {
		if count[part] != ends[part] {
			t.Errorf("partition %d: consumed %d records, end offset %d", part, count[part], ends[part])
		}
	}
	var missing errorList
	for part, as := range p.acks {
		for _, a := range as {
			if got, ok := at[part][a.offset]; !ok || got != a.value {
				missing.add("%s acknowledged at partition %d offset %d, the log holds %q there", a.value, part, a.offset, got)
			}
		}
	}
	for _, e := range p.errs {
		if _, ok := seen[e.Value]; ok {
			failedInLog++
		}
	}
	foreign.report(t, "foreign values")
	missing.report(t, "acknowledged records not in the log at their offset")
	order.report(t, "values out of produce order")
	dups.report(t, "values in the log more than once (not exactly once)")
	t.Logf("%d records sent, %d acknowledged, %d failed (%d of them in the log anyway), %d in the log, %d duplicates; producer stopped %v after the cut",
		p.done.Sent, acked, len(p.errs), failedInLog, len(recs), dups.n, stoppedAt.Sub(cutAt).Round(time.Millisecond))
	if dups.n == 0 {
		t.Logf("exactly once: every acknowledged record is in the log once, in produce order")
	}

	// The replicas' logs, read from the stopped containers' volumes.
	stopping := time.Now()
	ids := make([]string, len(services))
	for i, s := range services {
		ids[i] = c.ids[s]
	}
	c.docker(append([]string{"stop", "-t", "30"}, ids...)...)
	var codes []string
	for _, s := range services {
		codes = append(codes, s+" "+strings.TrimSpace(c.docker("inspect", "-f", "{{.State.ExitCode}}", c.ids[s])))
	}
	t.Logf("hosts stopped in %v, exit codes: %s", time.Since(stopping).Round(time.Millisecond), strings.Join(codes, ", "))
	dir := t.TempDir()
	for part := 0; part < replPartitions; part++ {
		var first []byte
		for i, s := range services {
			dst := filepath.Join(dir, fmt.Sprintf("%s-%s-%d", s, replTopic, part))
			c.docker("cp", fmt.Sprintf("%s:/data/%s-%d", c.ids[s], replTopic, part), dst)
			b, err := storage.ReadAllDir(dst, storage.Config{})
			if err != nil {
				t.Fatalf("%s's replica of partition %d: %v", s, part, err)
			}
			if i == 0 {
				first = b
			} else if !bytes.Equal(b, first) {
				t.Errorf("partition %d: %s's replica differs from %s's (%d vs %d bytes)", part, s, services[0], len(b), len(first))
			}
		}
		if len(first) == 0 {
			t.Errorf("partition %d: empty replicas", part)
		}
	}
	t.Logf("replication scenario took %v", time.Since(start).Round(time.Millisecond))
}
