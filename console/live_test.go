// live_test.go: the figures of live.go and rates.go over a fake cluster —
// topic and partition sizes summed over the replicas that reported (and
// marked partial when one did not), the hosts' etcd roles, records in and
// out per second while the list is viewed, and the topics list and topic
// page with 1,000 partitions within 200 ms.

package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage/record"
)

// fakeLive adds the optional sources to a fakeCluster.
type fakeLive struct {
	*fakeCluster
	lmu       sync.Mutex
	sizes     map[int32][]*messages.LogDirPartition // by host id
	sizeErr   map[int32]error
	sizeCalls int
	committed map[string][]client.CommittedOffset // by group
	members   []EtcdMember
	etcdErr   error
}

func (f *fakeLive) DescribeLogDirs(_ context.Context, h *messages.HostInfo) (*messages.DescribeLogDirsResponse, error) {
	f.lmu.Lock()
	defer f.lmu.Unlock()
	f.sizeCalls++
	if err := f.sizeErr[h.HostId]; err != nil {
		return nil, err
	}
	return &messages.DescribeLogDirsResponse{HostId: h.HostId, Partitions: f.sizes[h.HostId]}, nil
}

func (f *fakeLive) FetchOffsets(_ context.Context, group string, _ ...*messages.TopicPartitions) ([]client.CommittedOffset, error) {
	f.lmu.Lock()
	defer f.lmu.Unlock()
	return append([]client.CommittedOffset(nil), f.committed[group]...), nil
}

func (f *fakeLive) EtcdMembers(context.Context) ([]EtcdMember, error) {
	f.lmu.Lock()
	defer f.lmu.Unlock()
	return append([]EtcdMember(nil), f.members...), f.etcdErr
}

func newFakeLive() *fakeLive {
	return &fakeLive{fakeCluster: newFake(), sizes: map[int32][]*messages.LogDirPartition{}, sizeErr: map[int32]error{},
		committed: map[string][]client.CommittedOffset{}}
}

// newLiveConsole serves a console over f with every optional source.
func newLiveConsole(t *testing.T, f *fakeLive, period time.Duration) (*httptest.Server, *Console) {
	t.Helper()
	c, err := New(Config{Sources: Sources{Cluster: f, Offsets: f, Records: f, Admin: f, Groups: f, GroupAdmin: f, Producer: f,
		LogDirs: f, Committed: f, Etcd: f}, SamplePeriod: period})
	if err != nil {
		t.Fatalf("new console: %v", err)
	}
	t.Cleanup(c.Close)
	mux := http.NewServeMux()
	c.Mount(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, c
}

func lp(topic string, p int32, n int64) *messages.LogDirPartition {
	return &messages.LogDirPartition{Topic: topic, Partition: p, SizeBytes: n}
}

func TestTopicSizes(t *testing.T) {
	f := newFakeLive()
	// gamma (3) is dead; orders-2's replicas on alpha and beta run nowhere
	// yet, and beta's copy of orders-1 could not be read (-1).
	f.sizes[1] = []*messages.LogDirPartition{lp("orders", 0, 100), lp("orders", 1, 10), lp("logs", 0, 7)}
	f.sizes[2] = []*messages.LogDirPartition{lp("orders", 0, 100), lp("orders", 1, -1)}
	srv, _ := newLiveConsole(t, f, time.Hour)

	var v TopicsView
	getJSON(t, srv, "/api/v1/topics", http.StatusOK, &v)
	logs, orders := v.Topics[0], v.Topics[1]
	if logs.SizeBytes == nil || *logs.SizeBytes != 7 || logs.SizePartial {
		t.Errorf("logs size %v partial %v, want 7 complete", logs.SizeBytes, logs.SizePartial)
	}
	if orders.SizeBytes == nil || *orders.SizeBytes != 210 || !orders.SizePartial {
		t.Errorf("orders size %v partial %v, want 210 partial", orders.SizeBytes, orders.SizePartial)
	}
	if v.SizeError != "" {
		t.Errorf("size error %q with every live host answering", v.SizeError)
	}
	getPage(t, srv, "/ui/topics", http.StatusOK, "<td>210 B (partial)</td>", "<td>7 B</td>", `data-fmt="bytes"`)

	var tv TopicView
	getJSON(t, srv, "/api/v1/topics/orders", http.StatusOK, &tv)
	p0, p1, p2 := tv.Partitions[0], tv.Partitions[1], tv.Partitions[2]
	if p0.SizeBytes == nil || *p0.SizeBytes != 100 || p0.ReplicasSizeBytes == nil || *p0.ReplicasSizeBytes != 200 || !p0.SizePartial {
		t.Errorf("orders-0 sizes %+v", p0)
	}
	// orders-1's leader is beta, whose copy could not be read.
	if p1.SizeBytes != nil || p1.ReplicasSizeBytes == nil || *p1.ReplicasSizeBytes != 10 || !p1.SizePartial {
		t.Errorf("orders-1 sizes %+v", p1)
	}
	if p2.SizeBytes != nil || p2.ReplicasSizeBytes != nil || !p2.SizePartial {
		t.Errorf("orders-2 sizes %+v, want unknown", p2)
	}
	if tv.SizeBytes == nil || *tv.SizeBytes != 210 || !tv.SizePartial {
		t.Errorf("topic size %v partial %v", tv.SizeBytes, tv.SizePartial)
	}
	getPage(t, srv, "/ui/topics/orders", http.StatusOK, "<td>100 B</td><td>200 B (partial)</td>")

	// Cached: the three requests above asked each live host once.
	f.lmu.Lock()
	calls := f.sizeCalls
	f.lmu.Unlock()
	if calls != 2 {
		t.Errorf("%d DescribeLogDirs calls, want 2 (one per live host, then cached)", calls)
	}
}

func TestTopicSizesWhenAHostDoesNotAnswer(t *testing.T) {
	f := newFakeLive()
	f.sizes[1] = []*messages.LogDirPartition{lp("logs", 0, 2048)}
	f.sizeErr[2] = errors.New("timed out")
	srv, _ := newLiveConsole(t, f, time.Hour)
	var v TopicsView
	getJSON(t, srv, "/api/v1/topics", http.StatusOK, &v)
	if v.SizeError != "no log sizes from beta" {
		t.Errorf("size error %q", v.SizeError)
	}
	if s := v.Topics[0].SizeBytes; s == nil || *s != 2048 {
		t.Errorf("logs size %v, want 2048", s)
	}
	getPage(t, srv, "/ui/topics", http.StatusOK, "<td>2.0 KiB</td>", "no log sizes from beta")
}

func TestEtcdRoles(t *testing.T) {
	roles := func(t *testing.T, f *fakeLive) map[string]string {
		t.Helper()
		srv, _ := newLiveConsole(t, f, time.Hour)
		var v ClusterView
		getJSON(t, srv, "/api/v1/cluster", http.StatusOK, &v)
		out := map[string]string{}
		for _, h := range v.Hosts {
			out[h.Name] = h.EtcdRole
		}
		return out
	}
	f := newFakeLive()
	f.members = []EtcdMember{{Name: "alpha", Role: EtcdLeader}, {Name: "beta", Role: EtcdUnreachable}}
	if got := roles(t, f); got["alpha"] != "leader" || got["beta"] != "unreachable" || got["gamma"] != "not a member" {
		t.Errorf("embedded members: roles %v", got)
	}
	f = newFakeLive()
	f.members = []EtcdMember{{Name: "etcd-a", Role: EtcdLeader}, {Name: "etcd-b", Role: EtcdFollower}}
	if got := roles(t, f); got["alpha"] != "external etcd" || got["gamma"] != "external etcd" {
		t.Errorf("external etcd: roles %v", got)
	}
	f = newFakeLive()
	f.etcdErr = errors.New("no etcd")
	if got := roles(t, f); got["alpha"] != "unknown" {
		t.Errorf("members not listed: roles %v", got)
	}
	srv, _, _ := newTestConsole(t, false) // no EtcdReader
	var v ClusterView
	getJSON(t, srv, "/api/v1/cluster", http.StatusOK, &v)
	if v.Hosts[0].EtcdRole != "unknown" {
		t.Errorf("without an EtcdReader: role %q", v.Hosts[0].EtcdRole)
	}
	f = newFakeLive()
	f.members = []EtcdMember{{Name: "alpha", Role: EtcdFollower}}
	srv, _ = newLiveConsole(t, f, time.Hour)
	getPage(t, srv, "/ui/", http.StatusOK, `<th data-f="etcd_role">Etcd</th>`, "<td>follower</td>", "<td>not a member</td>")
}

func TestTopicRates(t *testing.T) {
	f := newFakeLive()
	srv, c := newLiveConsole(t, f, 50*time.Millisecond)
	var v TopicsView
	getJSON(t, srv, "/api/v1/topics", http.StatusOK, &v)
	if v.Topics[1].InPerSec != nil || v.SamplePeriodSeconds != 0.05 {
		t.Fatalf("rates before two samples: %+v, period %v", v.Topics[1], v.SamplePeriodSeconds)
	}
	// Produce to orders-0 and consume it as group billing.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var n int64
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			n++
			f.mu.Lock()
			f.records[tpKey("orders", 0)] = append(f.records[tpKey("orders", 0)], record.Record{Value: []byte("x")})
			f.mu.Unlock()
			f.lmu.Lock()
			f.committed["billing"] = []client.CommittedOffset{{Topic: "orders", Partition: 0, Offset: n}}
			f.lmu.Unlock()
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		getJSON(t, srv, "/api/v1/topics", http.StatusOK, &v)
		o, l := v.Topics[1], v.Topics[0]
		if o.InPerSec != nil && *o.InPerSec > 0 && o.OutPerSec != nil && *o.OutPerSec > 0 && len(o.InHistory) >= 2 && len(o.OutHistory) >= 2 {
			if l.InPerSec == nil || *l.InPerSec != 0 || *l.OutPerSec != 0 {
				t.Errorf("idle topic logs: in %v out %v, want 0", l.InPerSec, l.OutPerSec)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no rates while producing and consuming: %+v", o)
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	<-done
	page := getPage(t, srv, "/ui/topics", http.StatusOK, `data-spark="1"`)
	if !strings.Contains(page, `<polyline points="0.0,`) {
		t.Errorf("no server-drawn sparkline: %s", page)
	}
	c.rates.mu.Lock()
	n := len(c.rates.hist["orders"].in)
	c.rates.mu.Unlock()
	if n > rateSamples {
		t.Errorf("%d rates kept, at most %d allowed", n, rateSamples)
	}

	// Close stops the sampler and forgets its history.
	c.Close()
	deadlineStop := time.Now().Add(5 * time.Second)
	for {
		c.rates.mu.Lock()
		running, kept := c.rates.running, len(c.rates.hist)
		c.rates.mu.Unlock()
		if !running && kept == 0 {
			break
		}
		if time.Now().After(deadlineStop) {
			t.Fatalf("sampler still running (%v) with %d topics after Close", running, kept)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestAppendCappedAndSparkPoints(t *testing.T) {
	var xs []float64
	for i := range rateSamples + 5 {
		xs = appendCapped(xs, float64(i))
	}
	if len(xs) != rateSamples || xs[0] != 5 || xs[len(xs)-1] != rateSamples+4 {
		t.Errorf("capped history: len %d, first %v, last %v", len(xs), xs[0], xs[len(xs)-1])
	}
	if got := sparkPoints([]float64{0, 2}); got != "0.0,38.0 240.0,2.0" {
		t.Errorf("sparkPoints = %q", got)
	}
	if got := sparkPoints(nil); got != "" {
		t.Errorf("sparkPoints(nil) = %q", got)
	}
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 5 << 20: "5.0 MiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestThousandPartitionsWithin200ms: the topics list (sizes, rates) and
// the topic page of a cluster with 1,000 partitions answer within 200 ms
// once the sizes are cached (the median of several loads; checked
// without the race detector, which slows them about tenfold).
func TestThousandPartitionsWithin200ms(t *testing.T) {
	f := newFakeLive()
	f.topics = map[string]*messages.TopicMetadataResponse{}
	for ti := range 50 {
		name := fmt.Sprintf("topic-%02d", ti)
		t := &messages.TopicMetadataResponse{Name: name, ReplicationFactor: 2}
		for p := range int32(20) {
			t.Partitions = append(t.Partitions, &messages.PartitionMetadata{Partition: p, Leader: 1, Replicas: []int32{1, 2}, Isr: []int32{1, 2}})
			f.sizes[1] = append(f.sizes[1], lp(name, p, 1<<20))
			f.sizes[2] = append(f.sizes[2], lp(name, p, 1<<20))
		}
		f.topics[name] = t
	}
	big := &messages.TopicMetadataResponse{Name: "big", ReplicationFactor: 2}
	for p := range int32(1000) {
		big.Partitions = append(big.Partitions, &messages.PartitionMetadata{Partition: p, Leader: 1, Replicas: []int32{1, 2}, Isr: []int32{1, 2}})
		f.sizes[1] = append(f.sizes[1], lp("big", p, 4096))
	}
	f.topics["big"] = big
	srv, _ := newLiveConsole(t, f, DefaultSamplePeriod)

	median := func(path string, check func(body string) error) time.Duration {
		t.Helper()
		get(t, srv, path) // warm the caches
		var ds []time.Duration
		for range 7 {
			start := time.Now()
			code, _, body := get(t, srv, path)
			ds = append(ds, time.Since(start))
			if code != http.StatusOK {
				t.Fatalf("GET %s: %d", path, code)
			}
			if err := check(body); err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	has := func(s string) func(string) error {
		return func(body string) error {
			if !strings.Contains(body, s) {
				return fmt.Errorf("lacks %q", s)
			}
			return nil
		}
	}
	for _, tc := range []struct {
		path  string
		check func(string) error
	}{
		{"/ui/topics", has("<td>40.0 MiB</td>")},
		{"/api/v1/topics", has(`"size_bytes": 41943040`)},
		{"/ui/topics/big", has("<td>4.0 KiB</td><td>4.0 KiB (partial)</td>")},
		{"/api/v1/topics/big", has(`"replicas_size_bytes": 4096`)},
	} {
		d := median(tc.path, tc.check)
		t.Logf("GET %s: median %v (race detector: %v)", tc.path, d, raceEnabled)
		if d > 200*time.Millisecond && !raceEnabled {
			t.Errorf("GET %s: median %v, want under 200ms with 1,000+ partitions", tc.path, d)
		}
	}
}
