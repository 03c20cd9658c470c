// live.go: the console's figures that cost more than one metadata call —
// each host's etcd member role (cluster page), each topic's and
// partition's size on disk (topics list, topic page) — read through the
// optional sources below and cached a few seconds, so a page asks the
// cluster at most once per cache period however often it is loaded.
//
// Sizes: every live host's broker is asked (DescribeLogDirs, at most
// sizeParallelism at once, each within sizeHostTimeout) for the bytes of
// segment files of each replica it runs. A topic's size is the sum over
// all its replicas (as Kafka UI sums DescribeLogDirs); a partition's
// "size_bytes" is its leader's copy, "replicas_size_bytes" the sum over
// its replicas. A replica whose host did not answer (dead, slow) or does
// not report it (not running yet) leaves the sum partial: "size_partial".
//
// Etcd roles: EtcdReader lists the members with their roles (the host
// asks each member's client URL for its Status, within 1 s each); a host
// whose name is a member's shows that member's role, "leader",
// "follower", "learner" or "unreachable"; other hosts show "not a
// member" when some host is a member (they use the others' etcd), else
// "external etcd"; "unknown" when the members could not be listed.
//
// Refreshes run on a goroutine of their own, bounded by their own
// timeouts, so a request that gives up does not leave the cache empty;
// concurrent requests share one refresh.

package console

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/messages"
)

const (
	// liveCacheTTL is how long sizes and etcd roles are reused.
	liveCacheTTL = 5 * time.Second
	// sizeHostTimeout bounds one host's DescribeLogDirs.
	sizeHostTimeout = 2 * time.Second
	// sizeParallelism bounds the hosts asked at once.
	sizeParallelism = 8
	// etcdTimeout bounds listing the etcd members with their roles.
	etcdTimeout = 3 * time.Second
)

// Etcd member roles (HostView.EtcdRole).
const (
	EtcdLeader      = "leader"
	EtcdFollower    = "follower"
	EtcdLearner     = "learner"
	EtcdUnreachable = "unreachable"
	EtcdNotMember   = "not a member"
	EtcdExternal    = "external etcd"
	EtcdUnknown     = "unknown"
)

// LogDirReader asks one live host for the sizes of the partition replicas
// it runs (FromClient: its broker's DescribeLogDirs).
type LogDirReader interface {
	DescribeLogDirs(ctx context.Context, host *messages.HostInfo) (*messages.DescribeLogDirsResponse, error)
}

// CommittedReader reads a group's committed offsets, of every partition
// it has committed when none is named (*client.Client implements it).
type CommittedReader interface {
	FetchOffsets(ctx context.Context, group string, partitions ...*messages.TopicPartitions) ([]client.CommittedOffset, error)
}

// EtcdMember is one member of the etcd cluster holding the metadata:
// its name (a host's name for the hosts' embedded members) and Role,
// one of EtcdLeader, EtcdFollower, EtcdLearner, EtcdUnreachable.
type EtcdMember struct {
	Name string
	Role string
}

// EtcdReader lists the etcd members with their roles (the host
// implements it with its etcd client; it must bound each member's probe).
type EtcdReader interface {
	EtcdMembers(ctx context.Context) ([]EtcdMember, error)
}

// clientLogDirs asks a host's broker through a client.
type clientLogDirs struct{ c *client.Client }

func (l clientLogDirs) DescribeLogDirs(ctx context.Context, h *messages.HostInfo) (*messages.DescribeLogDirsResponse, error) {
	pid := actor.NewPID(h.AdvertisedAddress, messages.BrokerActorID)
	res, err := l.c.Request(ctx, pid, &messages.DescribeLogDirsRequest{CorrelationId: l.c.NextCorrelationID()})
	if err != nil {
		return nil, fmt.Errorf("describe log dirs of %s: %w", h.Name, err)
	}
	resp, ok := res.(*messages.DescribeLogDirsResponse)
	if !ok {
		return nil, fmt.Errorf("describe log dirs of %s: it answered %T", h.Name, res)
	}
	if resp.ErrorMessage != "" {
		return nil, fmt.Errorf("describe log dirs of %s: %s", h.Name, resp.ErrorMessage)
	}
	return resp, nil
}

// cached is a value refreshed at most once per liveCacheTTL by one
// goroutine at a time.
type cached[T any] struct {
	mu       sync.Mutex
	val      T
	at       time.Time
	have     bool
	inflight chan struct{} // closed when the running refresh ends
}

// get returns the value, refreshing it with load when older than
// liveCacheTTL: a stale value is returned at once (the refresh runs
// behind it, for the next caller); with none yet, get waits for the
// refresh until ctx ends (ok false when it ended first).
func (c *cached[T]) get(ctx context.Context, load func() T) (T, bool) {
	c.mu.Lock()
	if c.have && time.Since(c.at) < liveCacheTTL {
		v := c.val
		c.mu.Unlock()
		return v, true
	}
	ch := c.inflight
	if ch == nil {
		ch = make(chan struct{})
		c.inflight = ch
		go func() {
			v := load()
			c.mu.Lock()
			c.val, c.at, c.have, c.inflight = v, time.Now(), true, nil
			c.mu.Unlock()
			close(ch)
		}()
	}
	if c.have {
		v := c.val
		c.mu.Unlock()
		return v, true
	}
	c.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.val, c.have
}

// replicaKey names one partition replica.
type replicaKey struct {
	topic     string
	partition int32
	host      int32
}

// sizeSnapshot is what the hosts reported.
type sizeSnapshot struct {
	bytes map[replicaKey]int64
	// failed names the hosts that did not answer, sorted.
	failed []string
}

// logSizes returns the replicas' sizes on the live hosts (nil: look
// them up), from the cache; nil without a LogDirReader, or when none is
// known yet.
func (c *Console) logSizes(ctx context.Context, hosts []*messages.HostInfo) *sizeSnapshot {
	if c.cfg.LogDirs == nil {
		return nil
	}
	hosts = slices.Clone(hosts)
	s, ok := c.sizes.get(ctx, func() *sizeSnapshot { return c.loadSizes(hosts) })
	if !ok {
		return nil
	}
	return s
}

func (c *Console) loadSizes(hosts []*messages.HostInfo) *sizeSnapshot {
	s := &sizeSnapshot{bytes: map[replicaKey]int64{}}
	if hosts == nil {
		ctx, cancel := context.WithTimeout(context.Background(), sizeHostTimeout)
		d, err := c.cfg.Cluster.DescribeCluster(ctx)
		cancel()
		if err != nil {
			c.log.WithError(err).Debug("console: log sizes: list the hosts")
			s.failed = []string{"every host (the cluster did not list them)"}
			return s
		}
		hosts = d.Hosts
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, sizeParallelism)
	for _, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), sizeHostTimeout)
			defer cancel()
			resp, err := c.cfg.LogDirs.DescribeLogDirs(ctx, h)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				c.log.WithError(err).WithField("host", h.Name).Debug("console: a host did not report its log sizes")
				s.failed = append(s.failed, h.Name)
				return
			}
			for _, p := range resp.Partitions {
				if p.SizeBytes >= 0 {
					s.bytes[replicaKey{p.Topic, p.Partition, h.HostId}] = p.SizeBytes
				}
			}
		}()
	}
	wg.Wait()
	sort.Strings(s.failed)
	return s
}

// partitionSize is p's size on its leader (nil: unknown), the sum over
// its replicas that reported one and how many did, and whether some did
// not.
func (s *sizeSnapshot) partitionSize(topic string, p *messages.PartitionMetadata) (leader *int64, replicas int64, reported int, partial bool) {
	for _, r := range p.Replicas {
		n, ok := s.bytes[replicaKey{topic, p.Partition, r}]
		if !ok {
			partial = true
			continue
		}
		replicas += n
		reported++
		if r == p.Leader {
			leader = &n
		}
	}
	return leader, replicas, reported, partial
}

// sizeError says which hosts did not report their sizes ("" when all
// did).
func (s *sizeSnapshot) sizeError() string {
	if s == nil || len(s.failed) == 0 {
		return ""
	}
	return "no log sizes from " + strings.Join(s.failed, ", ")
}

// etcdMembers returns the etcd members by name (cached); nil when they
// are unknown.
func (c *Console) etcdMembers(ctx context.Context) map[string]string {
	if c.cfg.Etcd == nil {
		return nil
	}
	m, _ := c.etcd.get(ctx, func() map[string]string {
		ctx, cancel := context.WithTimeout(context.Background(), etcdTimeout)
		defer cancel()
		ms, err := c.cfg.Etcd.EtcdMembers(ctx)
		if err != nil {
			c.log.WithError(err).Warn("console: list the etcd members")
			return nil
		}
		out := make(map[string]string, len(ms))
		for _, m := range ms {
			out[m.Name] = m.Role
		}
		return out
	})
	return m
}

// setEtcdRoles fills each host's EtcdRole from members (nil: unknown).
func setEtcdRoles(hosts []HostView, members map[string]string) {
	embedded := false
	for _, h := range hosts {
		if _, ok := members[h.Name]; ok {
			embedded = true
		}
	}
	for i := range hosts {
		h := &hosts[i]
		role, ok := members[h.Name]
		switch {
		case members == nil:
			h.EtcdRole = EtcdUnknown
		case ok:
			h.EtcdRole = role
		case embedded:
			h.EtcdRole = EtcdNotMember
		default:
			h.EtcdRole = EtcdExternal
		}
	}
}

// liveFuncs are the page templates' helpers for these figures (parsePages
// adds them).
var liveFuncs = map[string]any{
	"bytes":       bytesText,
	"rate":        rateText,
	"sparkPoints": sparkPoints,
}

// bytesText renders a size in binary units ("-": unknown), with " (partial)"
// when some replica did not report its size.
func bytesText(n *int64, partial bool) string {
	if n == nil {
		return "-"
	}
	s := humanBytes(*n)
	if partial {
		s += " (partial)"
	}
	return s
}

// humanBytes is n in B, KiB, MiB, ... with one decimal above bytes.
func humanBytes(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	f, unit := float64(n), 0
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	for f /= 1024; f >= 1024 && unit < len(units)-1; f /= 1024 {
		unit++
	}
	return fmt.Sprintf("%.1f %s", f, units[unit])
}

// rateText renders a rate per second with one decimal ("-": unknown).
func rateText(r *float64) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *r)
}

// sparkPoints is the polyline of a sparkline of xs in a 240x40 box, as
// console.js draws them.
func sparkPoints(xs []float64) string {
	if len(xs) == 0 {
		return ""
	}
	const w, h = 240.0, 40.0
	top := 1.0
	for _, x := range xs {
		top = max(top, x)
	}
	pts := make([]string, len(xs))
	for i, x := range xs {
		px := w
		if len(xs) > 1 {
			px = float64(i) * w / float64(len(xs)-1)
		}
		pts[i] = fmt.Sprintf("%.1f,%.1f", px, h-2-x/top*(h-4))
	}
	return strings.Join(pts, " ")
}
