// statemetrics.go: figures read at scrape time that show state a long-lived
// host could accumulate across many failures — protoactor's member list,
// block list and gossip state, and the metadata store's revision, database
// size and leases — and what the remote guard refused, and the internal
// requests refused for not coming from a host, so an operator
// (and the long fault runs) can see growth before it hurts. The etcd figures come from one Status and one
// Leases call, bounded by a short timeout; a scrape that cannot reach etcd
// leaves them out and counts the failure.

package host

import (
	"context"
	"runtime/metrics"
	"time"

	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/cluster"
)

// stateScrapeTimeout bounds the etcd calls of one scrape.
const stateScrapeTimeout = 2 * time.Second

// stateCollector reads the gauges on each scrape. Safe for concurrent use.
type stateCollector struct {
	cluster func() *pcluster.Cluster // nil until the member has started
	etcd    func() *clientv3.Client  // nil until the store is up
	logger  *logrus.Entry

	members, blocked, gossipMembers       *prometheus.Desc
	etcdRevision, etcdDBSize, etcdDBInUse *prometheus.Desc
	etcdLeases                            *prometheus.Desc
	heapLive                              *prometheus.Desc
	guard                                 *prometheus.Desc
	internalRefused                       *prometheus.Desc
	scrapeErrors                          prometheus.Counter
}

func newStateCollector(c func() *pcluster.Cluster, etcd func() *clientv3.Client, logger *logrus.Entry) *stateCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &stateCollector{
		cluster: c, etcd: etcd, logger: logger,
		members:       d("actorlog_protoactor_members", "Members in protoactor's member list (live hosts, fed from the etcd registrations)."),
		blocked:       d("actorlog_protoactor_blocked_members", "Member ids in protoactor's block list (one per host restart; never shrinks while this process lives)."),
		gossipMembers: d("actorlog_protoactor_gossip_members", "Members whose state protoactor's gossip holds (dead ones included)."),
		etcdRevision:  d("actorlog_etcd_revision", "The metadata store's current revision."),
		etcdDBSize:    d("actorlog_etcd_db_size_bytes", "Size of the metadata store's database, as its member reports it."),
		etcdDBInUse:   d("actorlog_etcd_db_size_in_use_bytes", "Bytes of the metadata store's database in use (the rest is free pages)."),
		etcdLeases:    d("actorlog_etcd_leases", "Leases granted in the metadata store (host registrations, controller sessions, ...)."),
		heapLive:      d("actorlog_go_heap_live_bytes", "Heap bytes the last garbage collection found live (runtime/metrics /gc/heap/live:bytes): what a leak grows, unlike RSS, which follows GC pacing and when freed pages go back to the OS."),
		guard: prometheus.NewDesc("actorlog_remote_refused_total",
			"What the remote guard refused on the actor remote's port since start, by kind (client.RemoteGuardStats).", []string{"kind"}, nil),
		internalRefused: prometheus.NewDesc("actorlog_internal_requests_refused_total",
			"Internal requests (follower fetch, AlterPartition, ControlledShutdown, ...) refused since start because they did not come from the registered host they must come from, by kind (cluster.InternalRefusals).", []string{"kind"}, nil),
		scrapeErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "actorlog_state_scrape_errors_total", Help: "Scrapes that could not read the metadata store's status.",
		}),
	}
}

// Describe implements prometheus.Collector.
func (s *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{s.members, s.blocked, s.gossipMembers, s.etcdRevision, s.etcdDBSize, s.etcdDBInUse, s.etcdLeases, s.heapLive, s.guard, s.internalRefused} {
		ch <- d
	}
	s.scrapeErrors.Describe(ch)
}

// Collect implements prometheus.Collector.
func (s *stateCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	if v, ok := HeapLiveBytes(); ok {
		gauge(s.heapLive, float64(v))
	}
	g := client.RemoteGuardStats()
	for kind, v := range map[string]uint64{"dropped_batches": g.DroppedBatches, "dropped_envelopes": g.DroppedEnvelopes,
		"skipped_messages": g.SkippedMessages, "rejected_streams": g.RejectedStreams, "rejected_calls": g.RejectedCalls, "panics": g.Panics} {
		ch <- prometheus.MustNewConstMetric(s.guard, prometheus.CounterValue, float64(v), kind)
	}
	for kind, v := range cluster.InternalRefusals() {
		ch <- prometheus.MustNewConstMetric(s.internalRefused, prometheus.CounterValue, float64(v), kind)
	}
	if c := s.cluster(); c != nil {
		if c.MemberList != nil {
			gauge(s.members, float64(c.MemberList.Members().Len()))
		}
		if c.Remote != nil {
			gauge(s.blocked, float64(c.Remote.BlockList().Len()))
		}
		if n, ok := gossipMembers(c); ok {
			gauge(s.gossipMembers, float64(n))
		}
	}
	if cli := s.etcd(); cli != nil {
		if err := s.collectEtcd(cli, gauge); err != nil {
			s.scrapeErrors.Inc()
			s.logger.WithError(err).Debug("metrics: metadata store status unavailable")
		}
	}
	s.scrapeErrors.Collect(ch)
}

func (s *stateCollector) collectEtcd(cli *clientv3.Client, gauge func(*prometheus.Desc, float64)) error {
	ctx, cancel := context.WithTimeout(context.Background(), stateScrapeTimeout)
	defer cancel()
	eps := cli.Endpoints()
	if len(eps) == 0 {
		return nil
	}
	st, err := cli.Status(ctx, eps[0])
	if err != nil {
		return err
	}
	gauge(s.etcdRevision, float64(st.Header.Revision))
	gauge(s.etcdDBSize, float64(st.DbSize))
	gauge(s.etcdDBInUse, float64(st.DbSizeInUse))
	leases, err := cli.Leases(ctx)
	if err != nil {
		return err
	}
	gauge(s.etcdLeases, float64(len(leases.Leases)))
	return nil
}

// gossipMembers counts the members in protoactor's gossip heartbeat state
// (a bounded request to the local gossip actor).
func gossipMembers(c *pcluster.Cluster) (int, bool) {
	if c.Gossip == nil {
		return 0, false
	}
	st, err := c.Gossip.GetState(pcluster.HeartbeatKey)
	if err != nil {
		return 0, false
	}
	return len(st), true
}

// HeapLiveBytes is the heap the last garbage collection found live.
func HeapLiveBytes() (uint64, bool) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0, false
	}
	return sample[0].Value.Uint64(), true
}
