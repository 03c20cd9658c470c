// console_browser_e2e_test.go: the web console (issue 17) in a real
// browser. Headless Chromium, driven through chromedp, browses the console
// of host 1 of a three-host cluster of host processes, and every step
// checks what the page shows against the cluster: the cluster page lists
// the hosts and the controller; a topic created with the UI form is on the
// CLI; records produced with a Kafka client are in the record browser; a
// consumer group's lag shows before and after it commits; a SIGKILLed
// host's row turns dead and its partitions are counted under-replicated by
// the page's live refresh within the lease time. A screenshot of each page
// goes to $ACTORLOG_ARTIFACTS_DIR/TestConsoleBrowser (or a temporary
// directory).
//
// Chromium is Debian's `chromium` package (scripts/install-tools.sh
// installs it). Without it the test skips, except under CI=true, where it
// fails.

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kgo"
)

// consoleLeaseTTL is the hosts' --lease-ttl here: short, so a killed host
// is declared dead quickly (etcd's minimum is 2s).
const consoleLeaseTTL = 3 * time.Second

// consoleRefresh is the console's live refresh period (console.js PERIOD).
const consoleRefresh = 5 * time.Second

func TestConsoleBrowser(t *testing.T) {
	chrome := chromiumPath(t)
	t0 := time.Now()
	hosts, kafkaAddrs := startKafkaCluster(t, "--lease-ttl", consoleLeaseTTL.String())
	t.Logf("cluster up in %v", time.Since(t0))
	b := newConsoleBrowser(t, chrome, "http://"+hosts[0].httpAddr())
	const topic = "browser-orders"

	step := func(name string, fn func(t *testing.T)) {
		t.Helper()
		start := time.Now()
		ok := t.Run(name, fn)
		t.Logf("step %s: %v", name, time.Since(start))
		if !ok {
			t.FailNow()
		}
	}

	// 1. The cluster page: three live hosts, one controller, the one the
	// CLI names, and no warning.
	step("cluster", func(t *testing.T) {
		var rows []map[string]string
		b.pollPage(t, "/ui/", 30*time.Second, func() error {
			rows = b.table(t, "#hosts")
			if len(rows) != 3 {
				return fmt.Errorf("%d host rows, want 3: %v", len(rows), rows)
			}
			ctl := 0
			for _, r := range rows {
				if r["alive"] != "yes" {
					return fmt.Errorf("host %s not alive: %v", r["name"], r)
				}
				if r["controller"] == "yes" {
					ctl++
				}
			}
			if ctl != 1 {
				return fmt.Errorf("%d controllers among %v", ctl, rows)
			}
			return nil
		})
		var names []string
		var ctlRow map[string]string
		for _, r := range rows {
			names = append(names, r["name"])
			if r["controller"] == "yes" {
				ctlRow = r
			}
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"host1", "host2", "host3"}) {
			t.Fatalf("host names %v, want host1..host3", names)
		}
		if got := b.text(t, `dd [data-t="controller_id"]`); got != ctlRow["id"] {
			t.Fatalf("controller stat says host %q, the hosts table host %q", got, ctlRow["id"])
		}
		if got := b.text(t, `dd [data-t="controller_name"]`); got != ctlRow["name"] {
			t.Fatalf("controller stat names %q, the hosts table %q", got, ctlRow["name"])
		}
		cli, err := controllerOf(hosts[0])
		if err != nil {
			t.Fatal(err)
		}
		if strconv.Itoa(cli.id) != ctlRow["id"] || cli.name != ctlRow["name"] {
			t.Fatalf("page names controller %s (id %s), the CLI %s (id %d)", ctlRow["name"], ctlRow["id"], cli.name, cli.id)
		}
		if b.bannerShown(t) {
			t.Fatalf("warning banner shown on a healthy cluster: %q", b.text(t, "p.banner"))
		}
		// The live refresh (console.js) reached /api/v1/cluster.
		b.poll(t, 2*consoleRefresh, func() error {
			if s := b.text(t, "#live"); !strings.HasPrefix(s, "live") {
				return fmt.Errorf("live refresh status %q", s)
			}
			return nil
		})
		b.screenshot(t, "cluster")
	})

	// 2. Create a topic with the form on the topics page; the CLI sees it
	// as it was typed in.
	step("create-topic", func(t *testing.T) {
		b.open(t, "/ui/topics")
		b.do(t,
			chromedp.SendKeys(chromedp.CSS(`#create-topic input[name="name"]`), topic),
			chromedp.SetValue(chromedp.CSS(`#create-topic input[name="partitions"]`), "3"),
			chromedp.SetValue(chromedp.CSS(`#create-topic input[name="replication_factor"]`), "3"),
			chromedp.SendKeys(chromedp.CSS(`#create-topic textarea[name="configs"]`), "min.insync.replicas=2"),
		)
		b.screenshot(t, "topics-create-form")
		b.do(t, chromedp.Click(chromedp.CSS(`#create-topic button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS("p.notice")))
		if loc := b.location(t); !strings.HasSuffix(loc, "/ui/topics/"+topic+"?done=created") {
			t.Fatalf("after the form, the browser is at %s, want the topic's page", loc)
		}
		if n := b.text(t, "p.notice"); n != "Topic created." {
			t.Fatalf("notice %q, want %q", n, "Topic created.")
		}
		if list := hosts[1].mustCLI("", "topics", "list"); !slices.Contains(strings.Fields(list), topic) {
			t.Fatalf("`topics list` does not show %s:\n%s", topic, list)
		}
		td := hosts[2].mustDescribeTopic(topic)
		if len(td.Partitions) != 3 || td.ReplicationFactor != 3 || td.Configs["min.insync.replicas"] != "2" {
			t.Fatalf("`topics describe %s`: %d partitions, RF %d, configs %v; want 3, 3, min.insync.replicas=2",
				topic, len(td.Partitions), td.ReplicationFactor, td.Configs)
		}
		for _, p := range td.Partitions {
			if len(p.Replicas) != 3 {
				t.Fatalf("partition %d has replicas %v, want 3", p.Partition, p.Replicas)
			}
		}
		b.screenshot(t, "topic-created")
	})

	// 3. Records produced through the Kafka listener show in the record
	// browser, reached through the topic page's form: keys, pretty
	// JSON values and headers.
	const perPartition = 4
	step("records", func(t *testing.T) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddrs...), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(100*time.Millisecond))
		if err != nil {
			t.Fatalf("kgo client: %v", err)
		}
		defer cl.Close()
		var recs []*kgo.Record
		for i := range 3 * perPartition {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 3),
				Key:     []byte(fmt.Sprintf("order-%02d", i)),
				Value:   []byte(fmt.Sprintf(`{"order":%d,"item":"widget-%d"}`, i, i)),
				Headers: []kgo.RecordHeader{{Key: "source", Value: []byte("browser-test")}}})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		b.pollPage(t, "/ui/topics/"+topic, 20*time.Second, func() error {
			if s := b.text(t, `[data-t="total_log_end_offset"]`); s != strconv.Itoa(3*perPartition) {
				return fmt.Errorf("topic page counts %s records, want %d", s, 3*perPartition)
			}
			return nil
		})
		b.screenshot(t, "topic")
		b.do(t,
			chromedp.SetValue(chromedp.CSS(`#browse input[name="partition"]`), "1"),
			chromedp.SetValue(chromedp.CSS(`#browse select[name="format"]`), "auto"),
			chromedp.Click(chromedp.CSS(`#browse button[type="submit"]`)),
			chromedp.WaitVisible(chromedp.CSS("#records")),
		)
		if loc := b.location(t); !strings.Contains(loc, "/ui/topics/"+topic+"/records?") || !strings.Contains(loc, "partition=1") {
			t.Fatalf("the browse form went to %s", loc)
		}
		rows := b.table(t, "#records")
		if len(rows) != perPartition {
			t.Fatalf("record browser shows %d records of partition 1, want %d: %v", len(rows), perPartition, rows)
		}
		for j, r := range rows {
			i := 3*j + 1 // partition 1 holds records 1, 4, 7, 10
			if r["offset"] != strconv.Itoa(j) {
				t.Errorf("row %d: offset %q, want %d", j, r["offset"], j)
			}
			if want := fmt.Sprintf("order-%02d", i); r["key"] != want {
				t.Errorf("row %d: key %q, want %q", j, r["key"], want)
			}
			// Pretty-printed: one field a line, a space after the colon.
			if want := fmt.Sprintf(`"item": "widget-%d"`, i); !strings.Contains(r["value"], want) || !strings.Contains(r["value"], "\n") {
				t.Errorf("row %d: value %q, want pretty JSON with %s", j, r["value"], want)
			}
			if r["headers"] != "source=browser-test" {
				t.Errorf("row %d: headers %q, want source=browser-test", j, r["headers"])
			}
		}
		b.screenshot(t, "records")
	})

	// 4. A consumer group: lag while only the first record of each
	// partition is committed, 0 once all are.
	step("group-lag", func(t *testing.T) {
		const group = "browser-group"
		cl, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddrs...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ClientID("browser-consumer"), kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(500*time.Millisecond), kgo.MetadataMinAge(100*time.Millisecond))
		if err != nil {
			t.Fatalf("kgo consumer: %v", err)
		}
		defer cl.Close()
		first, last := map[int32]*kgo.Record{}, map[int32]*kgo.Record{}
		n := 0
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for n < 3*perPartition {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("consumed %d of %d records: %v", n, 3*perPartition, err)
			}
			fs.EachError(func(tp string, p int32, err error) { t.Logf("fetch %s-%d: %v", tp, p, err) })
			fs.EachRecord(func(r *kgo.Record) {
				n++
				if first[r.Partition] == nil {
					first[r.Partition] = r
				}
				last[r.Partition] = r
			})
		}
		commit := func(rs map[int32]*kgo.Record) {
			t.Helper()
			var list []*kgo.Record
			for _, r := range rs {
				list = append(list, r)
			}
			if err := cl.CommitRecords(ctx, list...); err != nil {
				t.Fatalf("commit: %v", err)
			}
		}
		commit(first) // offset 1 committed on each partition: lag 3 each
		checkLag := func(committed, lag int) {
			t.Helper()
			b.pollPage(t, "/ui/groups/"+group, 30*time.Second, func() error {
				if s := b.text(t, `[data-t="total_lag"]`); s != strconv.Itoa(3*lag) {
					return fmt.Errorf("group page: total lag %s, want %d", s, 3*lag)
				}
				rows := b.table(t, "#offsets")
				if len(rows) != 3 {
					return fmt.Errorf("group page: %d offset rows, want 3: %v", len(rows), rows)
				}
				for _, r := range rows {
					if r["topic"] != topic || r["committed_offset"] != strconv.Itoa(committed) || r["lag"] != strconv.Itoa(lag) {
						return fmt.Errorf("group page: offsets row %v, want %s committed %d lag %d", r, topic, committed, lag)
					}
				}
				members := b.table(t, "#members")
				if len(members) != 1 || members[0]["client"] != "browser-consumer" || !strings.Contains(members[0]["assignment"], topic) {
					return fmt.Errorf("group page: members %v, want browser-consumer assigned %s", members, topic)
				}
				return nil
			})
		}
		checkLag(1, perPartition-1)
		b.screenshot(t, "group-lagging")
		commit(last)
		checkLag(perPartition, 0)
		b.screenshot(t, "group")
		b.pollPage(t, "/ui/groups", 20*time.Second, func() error {
			for _, r := range b.table(t, "#groups") {
				if r["group_id"] == group {
					if r["total_lag"] != "0" || r["members"] != "1" {
						return fmt.Errorf("groups page: %v, want lag 0 and 1 member", r)
					}
					return nil
				}
			}
			return fmt.Errorf("groups page does not list %s", group)
		})
		b.screenshot(t, "groups")
	})

	// 5. SIGKILL a host (not host 1, whose console the browser reads, nor
	// the controller): the open cluster page, refreshing itself, shows its
	// row dead and its partitions under-replicated, with the banner, within
	// the lease time plus a refresh period and a margin.
	step("host-killed", func(t *testing.T) {
		var rows []map[string]string
		b.pollPage(t, "/ui/", 30*time.Second, func() error {
			if b.bannerShown(t) {
				return fmt.Errorf("banner shown before the kill: %q", b.text(t, "p.banner"))
			}
			rows = b.table(t, "#hosts")
			if len(rows) != 3 {
				return fmt.Errorf("%d host rows, want 3", len(rows))
			}
			return nil
		})
		var victim map[string]string
		for _, r := range rows {
			if r["name"] != "host1" && r["controller"] != "yes" {
				victim = r
				break
			}
		}
		if victim == nil {
			t.Fatalf("no host other than host1 and the controller in %v", rows)
		}
		replicas, err := strconv.Atoi(victim["replicas"])
		if err != nil || replicas < 3 {
			t.Fatalf("host %s holds %q replicas, want at least the topic's 3", victim["name"], victim["replicas"])
		}
		idx, err := strconv.Atoi(strings.TrimPrefix(victim["name"], "host"))
		if err != nil || idx < 1 || idx > 3 {
			t.Fatalf("unexpected host name %q", victim["name"])
		}
		killed := time.Now()
		if code := hosts[idx-1].stop(syscall.SIGKILL); code != -int(syscall.SIGKILL) {
			t.Fatalf("host %s: exit %d, want killed by SIGKILL", victim["name"], code)
		}
		// No reload from here on: the page's own refresh must show it.
		deadline := consoleLeaseTTL + consoleRefresh + 15*time.Second
		var deadAt time.Duration
		b.poll(t, deadline, func() error {
			for _, r := range b.table(t, "#hosts") {
				dead := r["name"] == victim["name"]
				if dead && (r["alive"] != "no" || r["warn"] != "yes" || r["broker_epoch"] != "-") {
					return fmt.Errorf("killed host's row: %v", r)
				}
				if dead && deadAt == 0 {
					deadAt = time.Since(killed)
				}
				if !dead && r["alive"] != "yes" {
					return fmt.Errorf("live host's row: %v", r)
				}
			}
			if !b.bannerShown(t) {
				return fmt.Errorf("no warning banner")
			}
			if s := b.text(t, `dd[data-t="under_replicated"]`); s != strconv.Itoa(replicas) {
				return fmt.Errorf("under-replicated %s, want %d (the killed host's replicas)", s, replicas)
			}
			return nil
		})
		t.Logf("host %s killed: row dead after %v, banner and %d under-replicated after %v (lease %v, refresh %v)",
			victim["name"], deadAt, replicas, time.Since(killed), consoleLeaseTTL, consoleRefresh)
		b.screenshot(t, "cluster-host-dead")
		b.pollPage(t, "/ui/topics", 10*time.Second, func() error {
			for _, r := range b.table(t, "#topics") {
				if r["name"] == topic {
					if r["warn"] != "yes" || r["under_replicated"] != "3" {
						return fmt.Errorf("topics page: %v, want 3 under-replicated, marked", r)
					}
					return nil
				}
			}
			return fmt.Errorf("topics page does not list %s", topic)
		})
		b.screenshot(t, "topics-under-replicated")
	})
}

// chromiumPath returns the headless browser to drive; without one the test
// skips, or fails under CI=true.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const msg = "no Chromium on PATH (chromium, chromium-browser or google-chrome): scripts/install-tools.sh installs Debian's chromium"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// consoleBrowser is one headless Chromium tab browsing a host's console.
type consoleBrowser struct {
	ctx   context.Context // the tab's; actions derive timeouts from it
	base  string          // http://host:port of the console
	dir   string          // where screenshots go
	shots int
}

// newConsoleBrowser starts Chromium with a 1280x800 window, closed at
// cleanup.
func newConsoleBrowser(t *testing.T, chrome, base string) *consoleBrowser {
	t.Helper()
	dir := t.TempDir()
	if root := os.Getenv("ACTORLOG_ARTIFACTS_DIR"); root != "" {
		dir = filepath.Join(root, strings.ReplaceAll(t.Name(), "/", "_"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("artifacts directory: %v", err)
		}
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.WindowSize(1280, 800))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to sandbox as root
	}
	// chromedp logs from its own goroutines, which may outlive the test.
	var mu sync.Mutex
	done := false
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			t.Logf("chromedp: "+format, args...)
		}
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithLogf(logf), chromedp.WithErrorf(logf))
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		mu.Lock()
		done = true
		mu.Unlock()
	})
	// The first action starts the browser and ties it to ctx, so it runs
	// without a timeout of its own; a browser that does not start fails
	// the test.
	start := time.Now()
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("start %s: %v", chrome, err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not start in 60s", chrome)
	}
	t.Logf("%s started in %v; screenshots go to %s", chrome, time.Since(start), dir)
	return &consoleBrowser{ctx: ctx, base: base, dir: dir}
}

// do runs actions in the tab, failing the test on an error or after 30s.
func (b *consoleBrowser) do(t *testing.T, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// open loads the console page at path and waits for its content.
func (b *consoleBrowser) open(t *testing.T, path string) {
	t.Helper()
	b.do(t, chromedp.Navigate(b.base+path), chromedp.WaitVisible(chromedp.CSS("main")))
}

// evalJS evaluates expr in the page and decodes its value into T.
func evalJS[T any](t *testing.T, b *consoleBrowser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("browser: evaluate %.80q: %v", expr, err)
	}
	return v
}

// location is the tab's URL.
func (b *consoleBrowser) location(t *testing.T) string {
	t.Helper()
	return evalJS[string](t, b, `location.href`)
}

// text is the trimmed text of the first element matching the CSS
// selector sel, "<none>" when there is none.
func (b *consoleBrowser) text(t *testing.T, sel string) string {
	t.Helper()
	return evalJS[string](t, b, fmt.Sprintf(`(() => { const e = document.querySelector(%s); return e ? e.textContent.trim() : "<none>"; })()`, strconv.Quote(sel)))
}

// bannerShown reports whether the cluster page's warning banner is shown.
func (b *consoleBrowser) bannerShown(t *testing.T) bool {
	t.Helper()
	return evalJS[bool](t, b, `(() => { const e = document.querySelector('p.banner[data-show="warning"]'); return !!e && !e.hidden; })()`)
}

// table returns the body rows of the table matching the CSS selector sel,
// each a map from its column (the header's data-f, else its lower-case
// text) to the cell's trimmed text, plus "warn": "yes" or "no" for the
// row's warning mark.
func (b *consoleBrowser) table(t *testing.T, sel string) []map[string]string {
	t.Helper()
	return evalJS[[]map[string]string](t, b, fmt.Sprintf(`(() => {
		const tbl = document.querySelector(%s);
		if (!tbl) return [];
		const cols = Array.from(tbl.querySelectorAll("thead th"), th => th.dataset.f || th.textContent.trim().toLowerCase());
		return Array.from(tbl.querySelectorAll("tbody tr"), tr => {
			const row = {warn: tr.classList.contains("warn") ? "yes" : "no"};
			Array.from(tr.cells).forEach((td, i) => { row[cols[i] || String(i)] = td.textContent.trim(); });
			return row;
		});
	})()`, strconv.Quote(sel)))
}

// poll checks cond on the page as it is, every 250ms, until it holds or
// timeout passes (then the test fails with cond's last error).
func (b *consoleBrowser) poll(t *testing.T, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			b.screenshot(t, "failed")
			t.Fatalf("page %s: not as expected after %v: %v", b.location(t), timeout, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// pollPage is poll with the page at path (re)loaded before each check.
func (b *consoleBrowser) pollPage(t *testing.T, path string, timeout time.Duration, cond func() error) {
	t.Helper()
	b.poll(t, timeout, func() error {
		b.open(t, path)
		return cond()
	})
}

// screenshot writes a full-page PNG of the tab to the screenshot
// directory, numbered in the order taken.
func (b *consoleBrowser) screenshot(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	b.shots++
	path := filepath.Join(b.dir, fmt.Sprintf("console-%02d-%s.png", b.shots, name))
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	t.Logf("screenshot: %s (%d KB)", path, len(png)/1024)
}
