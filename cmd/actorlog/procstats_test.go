// procstats_test.go: resource samples of the test process and of host
// processes (RSS, CPU time, open descriptors, goroutines), read from /proc
// and from a host's /metrics, so long fault runs report what the harness
// and each host use next to the failover times.

package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	cmap "github.com/orcaman/concurrent-map"

	"github.com/actorlog/actorlog/host"
)

// procSample is one reading of a process's resources.
type procSample struct {
	pid        int
	at         time.Time
	rssBytes   int64
	anonBytes  int64         // RssAnon: the process's own memory (heap, stacks)
	fileBytes  int64         // RssFile: mapped file pages (the binary's text, etcd's bbolt db)
	fileBound  int64         // what fileBytes cannot exceed: the executable, etcd's db, 16 MiB of libraries
	cpu        time.Duration // user + system time so far
	fds        int
	goroutines int      // -1 when unknown
	liveHeap   int64    // heap the last GC found live; -1 when unknown
	extra      []string // more figures, printed as they are
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times (100 on Linux).
const clockTicks = 100

// sampleProc reads pid's RSS, CPU time and descriptors from /proc.
func sampleProc(pid int) (procSample, error) {
	s := procSample{pid: pid, at: time.Now(), goroutines: -1, liveHeap: -1}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, fmt.Errorf("read stat of %d: %w", pid, err)
	}
	// Fields after the command name (which may hold spaces) start at ") ".
	rest := string(stat)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+2:]
	}
	f := strings.Fields(rest)
	if len(f) < 22 {
		return s, fmt.Errorf("stat of %d: %d fields", pid, len(f))
	}
	// rest starts at field 3 (state): utime is field 14, stime 15, rss 24.
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	rssPages, err3 := strconv.ParseInt(f[21], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return s, fmt.Errorf("stat of %d: bad numbers", pid)
	}
	s.cpu = time.Duration(utime+stime) * time.Second / clockTicks
	s.rssBytes = rssPages * int64(os.Getpagesize())
	if err := s.readRssParts(pid); err != nil {
		return s, err
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return s, fmt.Errorf("list descriptors of %d: %w", pid, err)
	}
	s.fds = len(fds)
	exe, err := os.Stat(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return s, fmt.Errorf("stat executable of %d: %w", pid, err)
	}
	s.fileBound = exe.Size() + 16<<20
	return s, nil
}

// readRssParts splits RSS into anonymous and file-backed pages
// (/proc/PID/status RssAnon, RssFile). File-backed pages are page cache
// mapped into the process, bounded by the mapped files' sizes: the
// executable's text (more of it is touched the more code has run) and
// embedded etcd's mmapped bbolt database.
func (s *procSample) readRssParts(pid int) error {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return fmt.Errorf("read status of %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(st), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "RssAnon" && k != "RssFile") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return fmt.Errorf("status of %d: %s: %w", pid, k, err)
		}
		if k == "RssAnon" {
			s.anonBytes = kb << 10
		} else {
			s.fileBytes = kb << 10
		}
	}
	return nil
}

// sampleSelf samples the test process, with its goroutines.
func sampleSelf() (procSample, error) {
	s, err := sampleProc(os.Getpid())
	s.goroutines = runtime.NumGoroutine()
	if v, ok := host.HeapLiveBytes(); ok {
		s.liveHeap = int64(v)
	}
	return s, err
}

// hostStateMetrics are the /metrics gauges a long run reports per host
// next to its process figures: what could accumulate across failures.
var hostStateMetrics = []struct{ name, label string }{
	{"actorlog_protoactor_members", "members"},
	{"actorlog_protoactor_blocked_members", "blocked"},
	{"actorlog_protoactor_gossip_members", "gossip"},
	{"actorlog_etcd_revision", "etcd-rev"},
	{"actorlog_etcd_db_size_in_use_bytes", "etcd-db"},
	{"actorlog_etcd_leases", "leases"},
}

// sampleHost samples a running host process, with the goroutine count and
// the state gauges its /metrics reports.
func sampleHost(h *hostProc) (procSample, error) {
	if h.cmd == nil || h.cmd.Process == nil {
		return procSample{goroutines: -1, liveHeap: -1}, fmt.Errorf("host %s is not running", h.addr())
	}
	s, err := sampleProc(h.cmd.Process.Pid)
	if err != nil {
		return s, err
	}
	vals, err := metricValues(h)
	if err != nil {
		return s, nil // the process figures are still worth reporting
	}
	if g, ok := vals["go_goroutines"]; ok {
		s.goroutines = int(g)
	}
	if v, ok := vals["actorlog_go_heap_live_bytes"]; ok {
		s.liveHeap = int64(v)
	}
	s.fileBound += int64(vals["actorlog_etcd_db_size_bytes"])
	for _, m := range hostStateMetrics {
		if v, ok := vals[m.name]; ok {
			s.extra = append(s.extra, fmt.Sprintf("%s %.0f", m.label, v))
		}
	}
	return s, nil
}

// metricValues reads the unlabelled metrics of a host's /metrics.
func metricValues(h *hostProc) (map[string]float64, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + h.httpAddr() + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("metrics of %s: %w", h.addr(), err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 || strings.HasPrefix(f[0], "#") || strings.Contains(f[0], "{") {
			continue
		}
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			out[f[0]] = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("metrics of %s: %w", h.addr(), err)
	}
	return out, nil
}

// cpuShare is the share of one core the process used since prev, in
// percent; false when prev is of another process (a restarted host).
func (s procSample) cpuShare(prev procSample) (float64, bool) {
	wall := s.at.Sub(prev.at)
	if wall <= 0 || prev.pid != s.pid {
		return 0, false
	}
	return 100 * float64(s.cpu-prev.cpu) / float64(wall), true
}

// format prints RSS, CPU share since prev, descriptors and goroutines.
func (s procSample) format(prev procSample) string {
	g := "?"
	if s.goroutines >= 0 {
		g = strconv.Itoa(s.goroutines)
	}
	cpu := "new"
	if share, ok := s.cpuShare(prev); ok {
		cpu = fmt.Sprintf("%.0f%%", share)
	}
	out := fmt.Sprintf("rss %dMB (anon %dMB file %dMB) live heap %s cpu %s fds %d goroutines %s", s.rssBytes>>20, s.anonBytes>>20, s.fileBytes>>20, mib(s.liveHeap), cpu, s.fds, g)
	if len(s.extra) > 0 {
		out += " " + strings.Join(s.extra, " ")
	}
	return out
}

// mib formats bytes as MiB, "?" when unknown (negative).
func mib(b int64) string {
	if b < 0 {
		return "?"
	}
	return fmt.Sprintf("%.1fMB", float64(b)/(1<<20))
}

// grewBeyond reports how s grew past base by more than frac (and more
// than slack of absolute noise): RSS, live heap, descriptors and
// goroutines, and file-backed RSS past the files it maps.
func (s procSample) grewBeyond(base procSample, frac float64) []string {
	var out []string
	check := func(what string, now, was, slack int64) {
		if float64(now) > float64(was)*(1+frac)+float64(slack) {
			out = append(out, fmt.Sprintf("%s %d, was %d", what, now, was))
		}
	}
	check("rss bytes", s.rssBytes, base.rssBytes, 0)
	if s.liveHeap >= 0 && base.liveHeap >= 0 {
		check("live heap bytes", s.liveHeap, base.liveHeap, 1<<20)
	}
	if s.fileBytes > s.fileBound {
		out = append(out, fmt.Sprintf("file-backed rss %d, above the mapped files' %d", s.fileBytes, s.fileBound))
	}
	check("descriptors", int64(s.fds), int64(base.fds), 2)
	if s.goroutines >= 0 && base.goroutines >= 0 {
		check("goroutines", int64(s.goroutines), int64(base.goroutines), 5)
	}
	return out
}

// registeredActors counts the processes in sys's registry (actors and
// futures), and how many of each kind: the ID with every generated part
// ("$" and what follows, up to the next "/") cut to "$".
func registeredActors(sys *actor.ActorSystem) (int, map[string]int) {
	kinds := map[string]int{}
	n := 0
	for _, m := range sys.ProcessRegistry.LocalPIDs.LocalPIDs {
		// IterCb walks the shards in turn; Keys would start 33 goroutines
		// per map, 33,792 a sample.
		m.IterCb(func(id string, _ interface{}) {
			n++
			kinds[actorKind(id)]++
		})
	}
	return n, kinds
}

func actorKind(id string) string {
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		if id[i] != '$' {
			b.WriteByte(id[i])
			continue
		}
		b.WriteByte('$')
		for i+1 < len(id) && id[i+1] != '/' {
			i++
		}
	}
	return b.String()
}

// topKinds formats the k most numerous kinds.
func topKinds(kinds map[string]int, k int) string {
	names := make([]string, 0, len(kinds))
	for name := range kinds {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		if kinds[names[i]] != kinds[names[j]] {
			return kinds[names[i]] > kinds[names[j]]
		}
		return names[i] < names[j]
	})
	var parts []string
	for _, name := range names[:min(k, len(names))] {
		parts = append(parts, fmt.Sprintf("%s %d", name, kinds[name]))
	}
	return strings.Join(parts, ", ")
}

// warmRegistry makes sys's process registry allocate all its maps now.
// protoactor's registry is 1,024 concurrent maps of 32 shards, each a Go
// map that allocates its first group (288 bytes) on its first insert and
// keeps it: 32,768 × 288 B ≈ 9 MiB, taken bit by bit as actors and
// futures with new IDs land in shards not used before (measured on a
// bare ActorSystem: 2.4 MiB after 10,000 futures, 7.1 MiB after 50,000,
// 9.0 MiB after 200,000, then flat). A client in a long run
// makes a few dozen futures a cycle, so without this its live heap rose
// by ~7 KB a cycle for thousands of cycles, a one-time cost that a
// growth check over quarters of the run cannot tell from a leak.
func warmRegistry(sys *actor.ActorSystem) {
	buckets := sys.ProcessRegistry.LocalPIDs
	want := len(buckets.LocalPIDs) * cmap.SHARD_COUNT
	touched := make(map[*cmap.ConcurrentMapShared]bool, want)
	for i := 0; len(touched) < want; i++ {
		key := "warm-registry-" + strconv.Itoa(i)
		m := buckets.GetBucket(key)
		if sh := m.GetShard(key); !touched[sh] {
			touched[sh] = true
			m.Set(key, nil)
			m.Remove(key)
		}
	}
}
