// Package host boots one actorlog host: the actor system, the protoactor
// remote endpoint clients and other hosts talk to, the embedded etcd member
// that holds the metadata (DESIGN §5), the host's registration under an etcd
// lease, the controller and broker actors, the HTTP endpoint with /healthz
// and Prometheus /metrics, and the Kafka listener (kafka.go, DESIGN §9).
package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/actorlog/actorlog/actors/broker"
	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/actors/controller"
	"github.com/actorlog/actorlog/actors/group"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/netlimit"
	"github.com/actorlog/actorlog/internal/acl"
	"github.com/actorlog/actorlog/internal/tlsconf"
	"github.com/actorlog/actorlog/kafka"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage"
)

// Config configures a host. Zero fields take the defaults noted.
type Config struct {
	// Name is the host's name, unique in the cluster; it is also its etcd
	// member name (default "host-<HostID>", "host-1" for a lone host).
	Name string
	// HostID asks for a host id (0: the cluster assigns one to Name the
	// first time it sees it, and the data directory remembers it).
	HostID int32
	// DataDir holds the partition logs and the etcd member (default ./data).
	DataDir string
	// Listen is the remote endpoint, what clients bootstrap to (default
	// 127.0.0.1:7070).
	Listen string
	// Advertise is the address others use to reach Listen (default Listen).
	Advertise string
	// HTTP is the /healthz and /metrics endpoint (default 127.0.0.1:7080;
	// "off" disables it).
	HTTP string
	// KafkaListen is the Kafka wire-protocol listener, what Kafka clients
	// (kcat, librdkafka, franz-go, ...) bootstrap to. "" takes
	// DefaultKafkaListen (127.0.0.1:9092) if it is free: when another
	// process holds it (a second host on this machine), the host logs a
	// warning and runs without a Kafka listener. KafkaOff ("off") runs
	// none. Any other address must be bound, or Start fails; port 0 takes
	// a free port (advertised as bound).
	KafkaListen string
	// TLSCert, TLSKey and TLSCA are PEM files of the host's certificate,
	// its key and the CA peers are verified against (internal/tlsconf).
	// They cover the Kafka listener, which then speaks TLS only, with
	// RemoteTLS the actor remote and with EtcdTLS the embedded etcd. All
	// three or none. SIGHUP reloads them (Host.ReloadTLS).
	TLSCert, TLSKey, TLSCA string
	// RemoteTLS puts the actor remote on TLS with TLSCert, which must then
	// be a host certificate for Name (remotetls.go); every peer, host or
	// client, must present a verified certificate.
	RemoteTLS bool
	// EtcdTLS puts the embedded etcd's client and peer ports on TLS with
	// TLSCert (a host certificate for Name) and etcd's client-certificate
	// authentication, and the host's etcd clients on TLS; every etcd URL
	// is then https:// (etcdtls.go).
	EtcdTLS bool
	// EtcdClientCNs are the Common Names of client certificates that the
	// embedded etcd's client port accepts with EtcdTLS besides the
	// --initial-cluster members' (hosts joining through EtcdEndpoints,
	// admins running `actorlog users|acls --etcd-endpoints`); "*": any
	// certificate of TLSCA. nil: DefaultEtcdClientCNs.
	EtcdClientCNs []string
	// KafkaClientAuth is the Kafka listener's client-certificate policy
	// with TLS: KafkaClientAuthNone (default), KafkaClientAuthRequest (a
	// certificate, if sent, must verify and names the principal) or
	// KafkaClientAuthRequire (one must be sent and verify).
	KafkaClientAuth string
	// KafkaSASLMechanisms are the SASL mechanisms the Kafka listener
	// requires clients to authenticate with (SCRAM-SHA-256,
	// SCRAM-SHA-512, PLAIN; PLAIN only over TLS). Empty: no SASL.
	// Credentials are kept in the metadata store (`actorlog users`).
	KafkaSASLMechanisms []string
	// Authorizer says when the Kafka listener and the actor remote
	// enforce ACLs (kafkaauthz.go): AuthorizerAuto (default: the Kafka
	// listener when clients must authenticate, the remote with RemoteTLS),
	// AuthorizerACL (always; the remote only with RemoteTLS) or
	// AuthorizerNone.
	Authorizer string
	// SuperUsers may do anything whatever the ACLs say (Kafka's
	// super.users), e.g. "User:admin".
	SuperUsers []string
	// AllowEveryoneIfNoACLFound allows a request on a resource no ACL
	// names (Kafka's allow.everyone.if.no.acl.found). Off by default.
	AllowEveryoneIfNoACLFound bool
	// KafkaAdvertise is the address Kafka clients are told to reach this
	// host at (its broker entry in Kafka Metadata; kept in its
	// registration). Default KafkaListen; when KafkaListen is on every
	// interface (0.0.0.0, [::]), Advertise's host with KafkaListen's port,
	// and an error if Advertise names every interface too.
	KafkaAdvertise string
	// kafkaDefault: KafkaListen was not given (withDefaults set it), so a
	// busy address is not an error.
	kafkaDefault bool
	// AutoCreateTopics is Kafka's auto.create.topics.enable: a Kafka
	// Metadata request naming an unknown topic (and allowing it) has the
	// topic created with NumPartitions and DefaultReplicationFactor. Off
	// by default (Kafka's default is on).
	AutoCreateTopics bool
	// NumPartitions is Kafka's num.partitions: the partition count of an
	// auto-created topic and of one a Kafka CreateTopics request creates
	// with -1 (0: kafka.DefaultNumPartitions, 1; negative is an error).
	NumPartitions int32
	// DefaultReplicationFactor is Kafka's default.replication.factor: the
	// replication factor of those topics (0: kafka.DefaultReplicationFactor,
	// 1; negative is an error). A topic needing more live hosts than there
	// are is refused with INVALID_REPLICATION_FACTOR, as in Kafka.
	DefaultReplicationFactor int16
	// PProf serves Go's profiles under /debug/pprof/ on the HTTP endpoint.
	// Off by default: a CPU profile costs the host while it runs, and
	// anyone who can reach the port could ask for one.
	PProf bool
	// Console serves the web console under /ui/ and /api/v1/ on the HTTP
	// endpoint: ConsoleAuto (default) only when HTTP listens on loopback,
	// ConsoleOn, ConsoleOff (console.go).
	Console ConsoleMode
	// HTTPTLS serves HTTP over TLS with TLSCert, asking for (not
	// requiring) client certificates (--http-tls; httptls.go).
	HTTPTLS bool
	// EtcdClient and EtcdPeer are the embedded etcd member's URLs
	// ("http://HOST:PORT", or "HOST:PORT"). Defaults: the peer URL from
	// EtcdInitialCluster's entry for Name, else Listen's host with port
	// Listen+1; the client URL Listen's host, port Listen+2.
	EtcdClient, EtcdPeer string
	// EtcdInitialCluster is "name=peerURL,..." and must name this host
	// (default: this member alone).
	EtcdInitialCluster string
	// EtcdEndpoints, when set, makes the host a client of an etcd cluster
	// run elsewhere (other hosts' members, or an external etcd) instead of
	// running a member itself. Excludes the other Etcd fields.
	EtcdEndpoints []string
	// EtcdUnsafeNoFsync skips etcd's fsyncs (tests only).
	EtcdUnsafeNoFsync bool
	// LeaseTTL is the host registration and controller session TTL
	// (default DefaultLeaseTTL; DESIGN §5 and the README explain the choice).
	LeaseTTL time.Duration
	// ReplicaLagTimeMax is replica.lag.time.max.ms: a follower that has
	// not caught up for this long leaves the ISR (default 30 s, as Kafka).
	ReplicaLagTimeMax time.Duration
	// MaxOpeningReplicas bounds the replicas this host starts at once
	// (opening their logs, recording their leader epochs): a slow disk
	// fsyncs the rest of a large topic's partitions behind them, not in
	// front of the embedded etcd's lease renewals (0:
	// broker.DefaultMaxOpeningReplicas, 16; negative is an error).
	MaxOpeningReplicas int
	// LeaderImbalanceCheckInterval is how often this host's controller,
	// while elected, moves leadership back to preferred replicas where a
	// host's imbalance exceeds 10 % (Kafka's
	// leader.imbalance.check.interval.seconds with
	// auto.leader.rebalance.enable=true; 0: the default, 300 s; negative
	// is an error).
	LeaderImbalanceCheckInterval time.Duration
	// OffsetsTopicPartitions is the partition count of the internal
	// offsets topic, if this host's broker is the one that has it created
	// (Kafka's offsets.topic.num.partitions; 0: 50; negative is an error).
	OffsetsTopicPartitions int32
	// GroupInitialRebalanceDelay is how long a consumer group's first
	// rebalance waits for more members to join (Kafka's
	// group.initial.rebalance.delay.ms; default 3 s, 0 allowed, negative
	// is an error).
	GroupInitialRebalanceDelay time.Duration
	// GroupMinSessionTimeout is the shortest session timeout a consumer
	// may ask for (Kafka's group.min.session.timeout.ms; 0: 6 s).
	GroupMinSessionTimeout time.Duration
	// OffsetsRetention is how long a consumer group must have been empty
	// before its committed offsets expire (offsets committed from outside
	// group management: how long after their commit), Kafka's
	// offsets.retention.minutes (0: 7 days; negative is an error).
	OffsetsRetention time.Duration
	// OffsetsRetentionCheckInterval is how often the group coordinators
	// look for expired offsets (Kafka's
	// offsets.retention.check.interval.ms; 0: 10 min; negative is an
	// error).
	OffsetsRetentionCheckInterval time.Duration
	// LogCleanerThreads is how many logs of compacted topics the host's
	// log cleaner cleans at once (Kafka's log.cleaner.threads; 0: 1).
	LogCleanerThreads int
	// LogCleanerBackoff is how long a cleaner thread sleeps when no log
	// needs cleaning (Kafka's log.cleaner.backoff.ms; 0:
	// storage.DefaultCleanerBackoff, 15 s).
	LogCleanerBackoff time.Duration
	// LogCleanerDedupeBufferSize is the memory of the cleaner's offset
	// maps, shared by its threads (Kafka's
	// log.cleaner.dedupe.buffer.size; 0: 128 MiB; at least
	// MinLogCleanerDedupeBufferPerThread a thread).
	LogCleanerDedupeBufferSize int64
	// LogCleanerIOMaxBytesPerSecond bounds the bytes the cleaner reads
	// and writes a second, all threads together (Kafka's
	// log.cleaner.io.max.bytes.per.second; 0: no bound).
	LogCleanerIOMaxBytesPerSecond int64
	// MaxConnections bounds the connections the host holds open over all
	// its listeners: the remote, HTTP, Kafka, and the embedded etcd's client and
	// peer ports, each of whose connections counts three (Kafka's
	// max.connections; 0: netlimit.HostMaxConnections(), half the
	// descriptors kept out of the partition capacity). Connections over
	// it are closed as they arrive.
	MaxConnections int
	// MaxConnectionsPerIP bounds those from one address (Kafka's
	// max.connections.per.ip; 0: netlimit.DefaultMaxConnectionsPerIP, half
	// of MaxConnections).
	MaxConnectionsPerIP int
	// RestartBackoff and RestartBackoffMax bound the wait before the
	// broker or controller actor, when it stops unexpectedly, is respawned:
	// the first, doubled per consecutive death up to the second (defaults
	// DefaultRestartBackoff, DefaultRestartBackoffMax; supervisor.go).
	RestartBackoff, RestartBackoffMax time.Duration
	// HealthDescriptorRatio, when set, is the part of the soft
	// RLIMIT_NOFILE in use above which /healthz fails (at most 1; 0: when
	// fewer than HealthDescriptorHeadroom, or 10 % of the limit, remain
	// free).
	HealthDescriptorRatio float64
	// Logger (logrus.StandardLogger when nil).
	Logger *logrus.Logger
}

// DefaultLeaseTTL is the default host lease and controller session TTL.
const DefaultLeaseTTL = 6 * time.Second

// MinLogCleanerDedupeBufferPerThread is the smallest share of
// --log-cleaner-dedupe-buffer-size a cleaner thread may get.
const MinLogCleanerDedupeBufferPerThread = 1 << 20

func (c Config) withDefaults() (Config, error) {
	if c.HostID < 0 {
		return c, fmt.Errorf("host: host id %d must be positive", c.HostID)
	}
	if c.Name == "" {
		id := c.HostID
		if id == 0 {
			id = 1
		}
		c.Name = fmt.Sprintf("host-%d", id)
	}
	if err := cluster.ValidateHostName(c.Name); err != nil {
		return c, fmt.Errorf("host: --name: %w", err)
	}
	if c.DataDir == "" {
		c.DataDir = "./data"
	}
	if c.Listen == "" {
		c.Listen = "127.0.0.1:7070"
	}
	if c.HTTP == "" {
		c.HTTP = "127.0.0.1:7080"
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.LeaseTTL < 2*time.Second {
		return c, fmt.Errorf("host: lease TTL %v is below etcd's minimum of 2s", c.LeaseTTL)
	}
	if c.MaxOpeningReplicas < 0 {
		return c, fmt.Errorf("host: --max-opening-replicas %d: want at least 1", c.MaxOpeningReplicas)
	}
	if c.LeaderImbalanceCheckInterval < 0 {
		return c, fmt.Errorf("host: --leader-imbalance-check-interval %v: want a positive duration", c.LeaderImbalanceCheckInterval)
	}
	if c.OffsetsTopicPartitions < 0 {
		return c, fmt.Errorf("host: --offsets-topic-partitions %d: want at least 1", c.OffsetsTopicPartitions)
	}
	if c.GroupInitialRebalanceDelay < 0 {
		return c, fmt.Errorf("host: --group-initial-rebalance-delay %v: want zero or a positive duration", c.GroupInitialRebalanceDelay)
	}
	if c.GroupMinSessionTimeout < 0 {
		return c, fmt.Errorf("host: --group-min-session-timeout %v: want a positive duration", c.GroupMinSessionTimeout)
	}
	if c.OffsetsRetention < 0 {
		return c, fmt.Errorf("host: --offsets-retention %v: want a positive duration", c.OffsetsRetention)
	}
	if c.OffsetsRetentionCheckInterval < 0 {
		return c, fmt.Errorf("host: --offsets-retention-check-interval %v: want a positive duration", c.OffsetsRetentionCheckInterval)
	}
	if c.LogCleanerThreads < 0 {
		return c, fmt.Errorf("host: --log-cleaner-threads %d: want at least 1", c.LogCleanerThreads)
	}
	if c.LogCleanerThreads == 0 {
		c.LogCleanerThreads = 1
	}
	if c.LogCleanerBackoff < 0 {
		return c, fmt.Errorf("host: --log-cleaner-backoff %v: want a positive duration", c.LogCleanerBackoff)
	}
	if c.LogCleanerBackoff == 0 {
		c.LogCleanerBackoff = storage.DefaultCleanerBackoff
	}
	if c.LogCleanerDedupeBufferSize < 0 {
		return c, fmt.Errorf("host: --log-cleaner-dedupe-buffer-size %d: want a positive size", c.LogCleanerDedupeBufferSize)
	}
	if c.LogCleanerDedupeBufferSize == 0 {
		c.LogCleanerDedupeBufferSize = storage.DefaultDedupeBufferBytes
	}
	if per := c.LogCleanerDedupeBufferSize / int64(c.LogCleanerThreads); per < MinLogCleanerDedupeBufferPerThread || per > math.MaxInt32 {
		return c, fmt.Errorf("host: --log-cleaner-dedupe-buffer-size %d over %d --log-cleaner-threads: want %d to %d bytes a thread",
			c.LogCleanerDedupeBufferSize, c.LogCleanerThreads, MinLogCleanerDedupeBufferPerThread, math.MaxInt32)
	}
	if c.LogCleanerIOMaxBytesPerSecond < 0 {
		return c, fmt.Errorf("host: --log-cleaner-io-max-bytes-per-second %d: want 0 (no bound) or a positive rate", c.LogCleanerIOMaxBytesPerSecond)
	}
	if c.NumPartitions < 0 {
		return c, fmt.Errorf("host: --num-partitions %d: want at least 1", c.NumPartitions)
	}
	if c.NumPartitions == 0 {
		c.NumPartitions = kafka.DefaultNumPartitions
	}
	if c.NumPartitions > cluster.MaxPartitionsPerTopic {
		return c, fmt.Errorf("host: --num-partitions %d: want at most %d", c.NumPartitions, cluster.MaxPartitionsPerTopic)
	}
	if c.DefaultReplicationFactor < 0 {
		return c, fmt.Errorf("host: --default-replication-factor %d: want at least 1", c.DefaultReplicationFactor)
	}
	if c.DefaultReplicationFactor == 0 {
		c.DefaultReplicationFactor = kafka.DefaultReplicationFactor
	}
	if c.Logger == nil {
		c.Logger = logrus.StandardLogger()
	}
	if c.RestartBackoff < 0 || c.RestartBackoffMax < 0 {
		return c, fmt.Errorf("host: restart backoff %v up to %v: want positive durations", c.RestartBackoff, c.RestartBackoffMax)
	}
	if !(c.HealthDescriptorRatio >= 0 && c.HealthDescriptorRatio <= 1) {
		return c, fmt.Errorf("host: health descriptor ratio %v: want a fraction in [0, 1]", c.HealthDescriptorRatio)
	}
	if c.MaxConnections < 0 {
		return c, fmt.Errorf("host: --max-connections %d: want a positive number (0: the default)", c.MaxConnections)
	}
	if c.MaxConnectionsPerIP < 0 {
		return c, fmt.Errorf("host: --max-connections-per-ip %d: want a positive number (0: the default)", c.MaxConnectionsPerIP)
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = netlimit.HostMaxConnections()
	}
	if c.MaxConnectionsPerIP == 0 {
		c.MaxConnectionsPerIP = netlimit.DefaultMaxConnectionsPerIP(c.MaxConnections)
	}
	h, p, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return c, fmt.Errorf("host: --listen %q: %w", c.Listen, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port <= 0 || port > 65533 {
		return c, fmt.Errorf("host: --listen %q: need an explicit port (1-65533)", c.Listen)
	}
	if c.Advertise == "" {
		c.Advertise = c.Listen
	}
	if err := c.kafkaDefaults(); err != nil { // kafka.go
		return c, err
	}
	if err := c.httpDefaults(); err != nil { // httptls.go
		return c, err
	}
	if err := c.etcdTLSDefaults(); err != nil { // etcdtls.go
		return c, err
	}
	if len(c.EtcdEndpoints) > 0 {
		if c.EtcdPeer != "" || c.EtcdClient != "" || c.EtcdInitialCluster != "" {
			return c, errors.New("host: --etcd-endpoints (use an etcd cluster run elsewhere) excludes --etcd-peer, --etcd-client and --initial-cluster (run a member here)")
		}
		return c, c.checkEtcdSchemes()
	}
	if c.EtcdPeer, err = etcdURL("--etcd-peer", c.EtcdPeer); err != nil {
		return c, err
	}
	if c.EtcdClient, err = etcdURL("--etcd-client", c.EtcdClient); err != nil {
		return c, err
	}
	if c.EtcdInitialCluster != "" {
		peer, err := initialClusterPeer(c.EtcdInitialCluster, c.Name)
		if err != nil {
			return c, err
		}
		if c.EtcdPeer == "" {
			c.EtcdPeer = peer
		} else if !sameURL(peer, c.EtcdPeer) {
			return c, fmt.Errorf("host: --initial-cluster gives %s the peer URL %s but --etcd-peer is %s", c.Name, peer, c.EtcdPeer)
		}
	}
	if c.EtcdPeer == "" {
		c.EtcdPeer = c.etcdScheme() + "://" + net.JoinHostPort(h, strconv.Itoa(port+1))
	}
	if c.EtcdClient == "" {
		c.EtcdClient = c.etcdScheme() + "://" + net.JoinHostPort(h, strconv.Itoa(port+2))
	}
	return c, c.checkEtcdSchemes()
}

// etcdURL normalizes an etcd URL flag: "HOST:PORT" means http://HOST:PORT.
func etcdURL(flag, v string) (string, error) {
	if v == "" {
		return "", nil
	}
	if !strings.Contains(v, "://") {
		v = "http://" + v
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.Port() == "" {
		return "", fmt.Errorf("host: %s %q: want HOST:PORT or http://HOST:PORT", flag, v)
	}
	return v, nil
}

// initialClusterPeer returns name's peer URL in an etcd initial-cluster
// list, or an error if the list is malformed or does not name it.
func initialClusterPeer(list, name string) (string, error) {
	var peer string
	seen := map[string]bool{}
	for _, e := range strings.Split(list, ",") {
		n, u, ok := strings.Cut(strings.TrimSpace(e), "=")
		if !ok || n == "" {
			return "", fmt.Errorf("host: --initial-cluster %q: entry %q is not NAME=http://HOST:PEERPORT", list, e)
		}
		if _, err := etcdURL("--initial-cluster", u); err != nil || !strings.Contains(u, "://") {
			return "", fmt.Errorf("host: --initial-cluster %q: entry %q is not NAME=http://HOST:PEERPORT", list, e)
		}
		if seen[n] {
			return "", fmt.Errorf("host: --initial-cluster %q names %s twice", list, n)
		}
		seen[n] = true
		if n == name {
			peer = u
		}
	}
	if peer == "" {
		return "", fmt.Errorf("host: --initial-cluster %q does not include this host (%s); list every etcd voter as NAME=http://HOST:PEERPORT, this one too, or use --etcd-endpoints to join without running a voter", list, name)
	}
	return peer, nil
}

func sameURL(a, b string) bool { return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/") }

// Host is a running host.
type Host struct {
	cfg      Config
	logger   *logrus.Entry
	lock     *os.File
	system   *actor.ActorSystem
	etcd     *cluster.Etcd
	external *clientv3.Client // with EtcdEndpoints: the client of that etcd
	store    *cluster.Store
	hostID   atomic.Int32 // resolved from Name in StartMember
	// metaID is the id the data directory remembers (0 if new).
	metaID int32
	// fenced is closed when the host's registration lease is lost.
	fenced    chan struct{}
	fenceOnce sync.Once
	stopping  atomic.Bool
	brokerMu  sync.Mutex // guards stopping the broker (fence vs Shutdown)
	reg       *cluster.Registration
	cluster   *pcluster.Cluster
	provider  *cluster.MemberProvider
	// localController is this host's controller activation, if it has one.
	localController atomic.Pointer[actor.PID]
	metrics         *Metrics
	cleaner         *storage.Cleaner  // the log cleaner; nil until start made it
	conns           *netlimit.Limiter // limits the connections of every listener
	http            *http.Server
	// aclStop stops following the Kafka ACLs (kafkaauthz.go); nil when
	// they are not enforced.
	aclStop func()
	// kafkaCtrl is the client the Kafka listener's ACL and SCRAM writes
	// go to the controller through (kafkaacls.go); nil without a Kafka
	// listener.
	kafkaCtrl *client.Client
	// authz decides, over aclCache's bindings, for the Kafka listener
	// and the remote; remoteACL is the remote's middleware (kafkaauthz.go).
	// nil when not enforced.
	authz     *acl.Authorizer
	aclCache  *cluster.ACLCache
	remoteACL *client.RemoteACL
	// remoteNames maps host ids to names for the TLS remote's guard
	// (remotetls.go); nil without TLS on the remote.
	remoteNames *hostNames
	// kafkaLn is the bound Kafka listener (nil: none), served by kafka
	// once the broker runs; kafkaAddr is its advertised address and
	// clusterID the cluster id it reports (kafka.go).
	kafkaLn   net.Listener
	kafka     *kafka.Server
	tls       *tlsconf.Reloader // the Kafka listener's and remote's TLS material; nil without TLS
	kafkaAddr string
	clusterID string
	broker    *actor.PID
	stopOnce  sync.Once
	stopErr   error

	// fencing is set when the lease is lost, before anything is stopped.
	fencing atomic.Bool
	// watchdog respawns the broker and controller (supervisor.go);
	// brokerHealth is the broker's report on its partitions, for /healthz.
	watchdog     *actor.PID
	brokerHealth *broker.Health
}

// Start boots a host and returns once it serves requests.
func Start(ctx context.Context, cfg Config) (*Host, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	h := &Host{cfg: cfg, logger: logrus.NewEntry(cfg.Logger).WithField("host", cfg.Name), fenced: make(chan struct{})}
	if err := h.start(ctx); err != nil {
		h.logger.WithError(err).Error("host failed to start")
		if serr := h.Shutdown(context.Background()); serr != nil {
			h.logger.WithError(serr).Warn("cleaning up after a failed start")
		}
		return nil, err
	}
	return h, nil
}

func (h *Host) start(ctx context.Context) error {
	cfg := h.cfg
	// Before /healthz serves: it reads it.
	h.brokerHealth = broker.NewHealth()
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("host: data dir: %w", err)
	}
	lock, err := lockDir(cfg.DataDir)
	if err != nil {
		return err
	}
	h.lock = lock
	meta, err := readMeta(cfg.DataDir)
	if err != nil {
		return err
	}
	if meta != nil {
		if meta.Name != cfg.Name {
			return fmt.Errorf("host: data dir %s belongs to host %q, not %q: start it with --name %s, or give this host its own --data-dir", cfg.DataDir, meta.Name, cfg.Name, meta.Name)
		}
		if cfg.HostID != 0 && cfg.HostID != meta.HostID {
			return fmt.Errorf("host: data dir %s belongs to host id %d, not %d", cfg.DataDir, meta.HostID, cfg.HostID)
		}
		h.metaID = meta.HostID
	}

	h.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return client.NewSlogLogger(h.logger.WithField("component", "protoactor"))
	}))
	h.conns, err = netlimit.New(netlimit.Limits{MaxConnections: cfg.MaxConnections, MaxConnectionsPerIP: cfg.MaxConnectionsPerIP}, h.logger)
	if err != nil {
		return fmt.Errorf("host: %w", err)
	}
	// Bound before the host registers: the registration carries its
	// address, and an explicit address that cannot be bound fails the
	// start before anything else is claimed.
	if err := h.listenKafka(); err != nil {
		return err
	}
	if reserved := netlimit.HostMaxConnections(); cfg.MaxConnections > reserved {
		h.logger.WithFields(logrus.Fields{"max_connections": cfg.MaxConnections, "reserved_for_connections": reserved}).
			Warn("--max-connections is above the descriptors RLIMIT_NOFILE reserves for connections: raise the limit too, or a host holding its full partition capacity may run out of descriptors")
	}
	remoteTLS, err := h.remoteTLSOptions() // remotetls.go
	if err != nil {
		return err
	}
	rc, err := client.RemoteConfig(cfg.Listen, cfg.Advertise, append([]client.RemoteOption{client.WithGuardLogger(h.logger.WithField("component", "remote-guard")),
		client.WithConnectionLimiter(h.conns), client.WithPooledFetchAnswers()}, remoteTLS...)...)
	if err != nil {
		return fmt.Errorf("host: %w", err)
	}
	// Membership comes from the etcd registrations; etcd itself starts
	// inside StartMember, after protoactor's remote (DESIGN §8).
	provider := cluster.NewMemberProvider(func(c *pcluster.Cluster) (*cluster.Store, error) {
		return h.startMetadata(ctx, c.ActorSystem.ID)
	}, h.logger)
	h.provider = provider
	ccfg := pcluster.Configure("actorlog", provider, disthash.New(), rc, pcluster.WithRequestTimeout(10*time.Second))
	// No gossip: the member list comes from the etcd registrations, and
	// nothing here reads gossiped state. protoactor's gossip keeps the
	// state of every member incarnation it ever heard of (a new one per
	// host restart) and hands it on to each new member, so it only grows:
	// after 200 leader kills every host carried ~200 dead members' state
	// and logged "gossip request from unknown member" on each restart.
	// Its first round would come after GossipInterval; it never comes.
	ccfg.GossipInterval = math.MaxInt64
	h.cluster = pcluster.New(h.system, ccfg)
	if err := startMember(h.cluster, provider.Listed()); err != nil {
		return fmt.Errorf("host: %w", err)
	}
	h.remoteNames.follow(h.store, h.logger.WithField("component", "remote-tls"))

	h.metrics = NewMetrics()
	h.metrics.Registry.MustRegister(newStateCollector(
		func() *pcluster.Cluster { return h.cluster },
		func() *clientv3.Client {
			if h.store == nil {
				return nil
			}
			return h.store.Client()
		}, h.logger))
	if cfg.HTTP != "off" {
		if err := h.startHTTP(); err != nil {
			return err
		}
	}
	// The controller is a cluster singleton by etcd election, not by
	// protoactor placement (DESIGN §5): every host runs a candidate; the
	// winner acts, the others wait in Campaign as standbys and forward to
	// it. A standby takes over the moment the controller's session lease
	// lapses, without waiting for protoactor to notice the member is gone
	// and place a new activation (that cost 4-5 s more per failover).
	// Both run under the watchdog, which respawns them should they stop
	// while the host runs.
	h.watchdog = h.system.Root.Spawn(watchdogProps(watchdogConfig{
		backoff: cfg.RestartBackoff, backoffMax: cfg.RestartBackoffMax,
		retired:   func() bool { return h.stopping.Load() || h.fencing.Load() },
		restarted: h.metrics.ActorRestarted, logger: h.logger,
	}))
	if err := h.startAuthorizer(); err != nil { // kafkaauthz.go
		return err
	}
	ctrl, err := h.supervise(messages.ControllerActorID, h.withRemoteACLs(controller.Props(controller.Config{
		HostID: h.hostID.Load(), Store: h.store, SessionTTL: cfg.LeaseTTL, Logger: h.logger,
		LeaderImbalanceCheckInterval: cfg.LeaderImbalanceCheckInterval,
	})))
	if err != nil {
		return fmt.Errorf("host: spawn controller: %w", err)
	}
	h.localController.Store(ctrl)
	gcfg := group.DefaultConfig()
	gcfg.InitialRebalanceDelay = cfg.GroupInitialRebalanceDelay
	if cfg.GroupMinSessionTimeout > 0 {
		gcfg.MinSessionTimeout = cfg.GroupMinSessionTimeout
	}
	if cfg.OffsetsRetention > 0 {
		gcfg.OffsetsRetention = cfg.OffsetsRetention
	}
	if cfg.OffsetsRetentionCheckInterval > 0 {
		gcfg.OffsetsRetentionCheckInterval = cfg.OffsetsRetentionCheckInterval
	}
	if err := gcfg.Validate(); err != nil {
		return fmt.Errorf("host: consumer group settings: %w", err)
	}
	cleaner, err := storage.NewCleaner(storage.CleanerConfig{
		Threads: cfg.LogCleanerThreads, Backoff: cfg.LogCleanerBackoff, DedupeBufferBytes: int(cfg.LogCleanerDedupeBufferSize),
		IOBytesPerSecond: cfg.LogCleanerIOMaxBytesPerSecond, Observer: h.metrics, Logger: h.logger.WithField("component", "log-cleaner"),
	})
	if err != nil {
		return fmt.Errorf("host: log cleaner: %w", err)
	}
	cleaner.Start()
	h.cleaner = cleaner
	brk, err := h.supervise(messages.BrokerActorID, h.withRemoteACLs(broker.Props(broker.Config{
		HostID: h.hostID.Load(), Address: cfg.Advertise, DataDir: cfg.DataDir, Store: h.store,
		Metrics: h.metrics, Logger: h.logger, Controller: func() *actor.PID { return ctrl },
		ReplicaLagTimeMax: cfg.ReplicaLagTimeMax, OffsetsTopicPartitions: cfg.OffsetsTopicPartitions,
		MaxOpeningReplicas: cfg.MaxOpeningReplicas, Group: &gcfg, Health: h.brokerHealth, Restarts: h.metrics, Cleaner: cleaner,
		ReceiverMiddleware: h.remoteMiddleware(),
	})))
	h.brokerMu.Lock()
	h.broker = brk
	h.brokerMu.Unlock()
	if err != nil {
		return fmt.Errorf("host: spawn broker: %w", err)
	}
	if h.kafkaLn != nil {
		if err := h.loadClusterID(ctx); err != nil {
			return err
		}
		if err := h.startKafka(); err != nil {
			return err
		}
	}
	go h.watchLease(h.reg)
	kafkaAt := "none"
	if h.kafkaLn != nil {
		kafkaAt = h.kafkaLn.Addr().String()
	}
	h.logger.WithFields(logrus.Fields{"host_id": h.hostID.Load(), "broker_epoch": h.reg.Epoch(), "listen": cfg.Listen, "advertise": cfg.Advertise, "http": cfg.HTTP,
		"kafka_listen": kafkaAt, "kafka_advertise": h.kafkaAddr, "cluster_id": h.clusterID, "data_dir": cfg.DataDir, "member_id": h.system.ID}).Info("host started")
	return nil
}

// supervise has the watchdog spawn props at the root under name and
// respawn it whenever it stops while the host runs.
func (h *Host) supervise(name string, props *actor.Props) (*actor.PID, error) {
	res, err := h.system.Root.RequestFuture(h.watchdog, &superviseChild{name: name, props: props}, 10*time.Second).Result()
	if err != nil {
		return nil, fmt.Errorf("spawn %s: %w", name, err)
	}
	r, ok := res.(*superviseResult)
	if !ok {
		return nil, fmt.Errorf("spawn %s: watchdog answered %T", name, res)
	}
	return r.pid, r.err
}

// startMember starts the protoactor cluster member, turning its panics
// (listen failures, provider errors) into errors. protoactor's
// StartMember ends with a fixed one-second sleep after the provider has
// started (time for gossip to settle; gossip is off here, and the member
// list comes from the registrations): it returns as soon as the provider
// has published its first member list (listed), leaving the sleep to
// finish in the background. That was a second of every host start and
// restart. If the list never comes (the registrations cannot be read),
// it returns when StartMember does, as before.
func startMember(c *pcluster.Cluster, listed <-chan struct{}) error {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("start cluster member: %v", p)
				return
			}
			done <- nil
		}()
		c.StartMember()
	}()
	select {
	case err := <-done:
		return err
	case <-listed:
		return nil
	}
}

// shutdownCluster stops the protoactor cluster member, turning a panic
// into an error: a member whose start failed part way (its remote could
// not listen: the port was taken) has no gossiper, and protoactor's
// Shutdown dereferences it.
func shutdownCluster(c *pcluster.Cluster) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("stop cluster member: %v", p)
		}
	}()
	c.Shutdown(false)
	return nil
}

// startMetadata starts the embedded etcd member (or connects to the etcd
// cluster of EtcdEndpoints), resolves this host's id from its name, and
// registers the host (called by the member provider).
func (h *Host) startMetadata(ctx context.Context, memberID string) (*cluster.Store, error) {
	cfg := h.cfg
	var client *clientv3.Client
	etcdTLS, etcdClientTLS, err := h.etcdTLS() // etcdtls.go
	if err != nil {
		return nil, err
	}
	if len(cfg.EtcdEndpoints) > 0 {
		c, err := cluster.ConnectEtcdTLS(ctx, cfg.EtcdEndpoints, etcdClientTLS, 10*time.Second, h.logger)
		if err != nil {
			return nil, err
		}
		h.external, client = c, c
	} else {
		e, err := cluster.StartEtcd(ctx, cluster.EtcdConfig{
			Name:           cfg.Name,
			DataDir:        filepath.Join(cfg.DataDir, "etcd"),
			ClientURL:      cfg.EtcdClient,
			PeerURL:        cfg.EtcdPeer,
			InitialCluster: cfg.EtcdInitialCluster,
			UnsafeNoFsync:  cfg.EtcdUnsafeNoFsync,
			// Wait for the other voters as long as the caller does (they
			// may start later, or a restarted member may be cut off).
			ReadyTimeout: -1,
			Limiter:      h.conns,
			TLS:          etcdTLS,
			Logger:       h.logger.WithField("component", "etcd"),
		})
		if err != nil {
			return nil, err
		}
		h.etcd, client = e, e.Client()
	}
	h.store = cluster.NewStore(client, "", h.logger.WithField("component", "metadata"))
	want := cfg.HostID
	if h.metaID != 0 {
		want = h.metaID
	}
	// etcd may be slow to serve right after this member (re)joined; only
	// identity conflicts are final. A registration of this name at another
	// address is either a duplicate host or this host's previous
	// incarnation at an old address (a container with a new IP) whose
	// lease has not lapsed: wait one TTL for it to go, then give up.
	dupDeadline := time.Now().Add(cfg.LeaseTTL + 2*time.Second)
	for attempt := 1; ; attempt++ {
		err := h.register(ctx, memberID, want)
		switch {
		case err == nil:
			return h.store, nil
		case errors.Is(err, cluster.ErrHostIdentity), ctx.Err() != nil:
			return nil, err
		case errors.Is(err, cluster.ErrHostRegistered):
			if time.Now().After(dupDeadline) {
				return nil, fmt.Errorf("host: a live host named %s is registered already; each host needs its own --name: %w", cfg.Name, err)
			}
			h.logger.WithError(err).Warn("another live host holds this name; waiting one lease TTL for it to lapse")
		default:
			h.logger.WithError(err).WithField("attempt", attempt).Warn("registering with the cluster failed; retrying")
		}
		cluster.SleepCtx(ctx, time.Second)
	}
}

// register resolves this host's id and registers it under a new lease.
func (h *Host) register(ctx context.Context, memberID string, want int32) error {
	cfg := h.cfg
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	id, err := h.store.ResolveHostID(rctx, cfg.Name, want)
	if err != nil {
		return fmt.Errorf("host: %w", err)
	}
	h.hostID.Store(id)
	if h.metaID == 0 {
		if err := writeMeta(cfg.DataDir, hostMeta{Name: cfg.Name, HostID: id}); err != nil {
			return fmt.Errorf("%w: %w", cluster.ErrHostIdentity, err)
		}
		h.metaID = id
	}
	info := &messages.HostInfo{HostId: id, Name: cfg.Name, AdvertisedAddress: cfg.Advertise, HttpAddress: cfg.HTTP, KafkaAddress: h.kafkaAddr, MemberId: memberID}
	reg, err := h.store.Register(rctx, info, cfg.LeaseTTL)
	if err != nil {
		return fmt.Errorf("host: register: %w", err)
	}
	h.reg = reg
	return nil
}

// watchLease fences the host when its registration lease is lost (the
// host froze, or was cut off from the etcd quorum, for a TTL): the
// controller may already have moved its partitions, so it stops serving
// as a leader at once and reports it on Fenced.
func (h *Host) watchLease(reg *cluster.Registration) {
	<-reg.Done()
	if h.stopping.Load() {
		return
	}
	h.fenceOnce.Do(func() {
		h.fencing.Store(true) // the watchdog respawns neither
		h.logger.WithField("broker_epoch", reg.Epoch()).Error("host registration lease lost: fenced; stopping all replicas and the controller")
		h.stopBroker(false)
		if pid := h.localController.Load(); pid != nil {
			h.system.Root.Poison(pid)
		}
		close(h.fenced)
	})
}

// Fenced is closed when the host lost its registration lease and stopped
// serving. The host cannot come back as it is (protoactor does not take a
// member back, DESIGN §5): the owner shuts it down and starts a new one,
// which registers with a new member id and broker epoch (`actorlog host`
// re-executes itself).
func (h *Host) Fenced() <-chan struct{} { return h.fenced }

// stopBroker stops the broker and its replicas, once; drain first serves
// what they have queued and flushes the logs.
func (h *Host) stopBroker(drain bool) error {
	h.brokerMu.Lock()
	defer h.brokerMu.Unlock()
	if h.broker == nil {
		return nil
	}
	var errs []error
	if _, alive := h.system.ProcessRegistry.GetLocal(h.broker.GetId()); !alive {
		drain = false // it died and is not respawned any more: nothing to drain
	}
	if drain {
		if _, err := h.system.Root.RequestFuture(h.broker, &broker.Drain{}, 30*time.Second).Result(); err != nil {
			errs = append(errs, fmt.Errorf("drain replicas: %w", err))
		}
	}
	if err := h.system.Root.PoisonFuture(h.broker).Wait(); err != nil {
		errs = append(errs, fmt.Errorf("stop broker: %w", err))
	}
	// A respawn the watchdog began just before the host retired it may
	// have brought a new incarnation up meanwhile.
	for i := 0; i < 3; i++ {
		if _, alive := h.system.ProcessRegistry.GetLocal(h.broker.GetId()); !alive {
			break
		}
		if err := h.system.Root.PoisonFuture(h.broker).Wait(); err != nil {
			errs = append(errs, fmt.Errorf("stop respawned broker: %w", err))
		}
	}
	h.broker = nil
	return errors.Join(errs...)
}

// lockDir takes an exclusive lock on dir/.lock so two hosts never share a
// data directory.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("host: lock data dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close() // the lock error is the one to report
		return nil, fmt.Errorf("host: data dir %s is in use by another host: %w", dir, err)
	}
	return f, nil
}

func (h *Host) startHTTP() error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(h.metrics.Registry, promhttp.HandlerOpts{}))
	if h.cfg.PProf {
		// Profiles, for finding where time goes (--pprof).
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/heap", pprof.Index)
		// Execution traces: where goroutines wait (scheduler latency,
		// blocking), which a CPU profile does not show.
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.HandleFunc("/healthz", h.serveHealth) // health.go
	ln, err := net.Listen("tcp", h.cfg.HTTP)
	if err != nil {
		return fmt.Errorf("host: http listen: %w", err)
	}
	ln = h.conns.Listener("http", ln)
	tln, err := h.httpListener(ln) // httptls.go
	if err != nil {
		return errors.Join(err, ln.Close())
	}
	ln = tln
	h.metrics.Registry.MustRegister(h.conns)
	// IdleTimeout: a keep-alive connection waiting for its next request
	// holds a connection slot; without it, for ever.
	h.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	if err := h.mountConsole(mux); err != nil { // console.go
		return errors.Join(err, ln.Close())
	}
	go func() {
		if err := h.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			h.logger.WithError(err).Error("http server stopped")
		}
	}()
	return nil
}

// Address is the host's advertised remote address.
func (h *Host) Address() string { return h.cfg.Advertise }

// Shutdown stops the host cleanly: no new requests, replicas finish what
// they hold and close (flush) their logs, the registration is revoked, etcd
// and the actor system stop.
func (h *Host) Shutdown(ctx context.Context) error {
	h.stopOnce.Do(func() { h.stopErr = h.shutdown(ctx) })
	return h.stopErr
}

func (h *Host) shutdown(ctx context.Context) error {
	h.stopping.Store(true)
	var errs []error
	// Kafka clients first: they reconnect to the other hosts.
	if h.kafka != nil {
		if err := h.kafka.Close(); err != nil {
			errs = append(errs, fmt.Errorf("kafka listener: %w", err))
		}
	}
	if h.kafkaLn != nil {
		// Closed by the server's Close once it serves it; not before.
		if err := h.kafkaLn.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, fmt.Errorf("kafka listener: %w", err))
		}
	}
	if h.aclStop != nil {
		h.aclStop()
	}
	if h.kafkaCtrl != nil {
		h.kafkaCtrl.Close()
	}
	h.remoteNames.close()
	if h.http != nil {
		if err := h.http.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http: %w", err))
		}
	}
	storeGone := !h.controlledShutdown(ctx)
	if h.cleaner != nil {
		// Aborts the cleanings in progress (they start over after the
		// restart), so no replica's stop waits for one.
		h.cleaner.Stop()
	}
	// Replicas serve what they have queued, then close their logs.
	if err := h.stopBroker(true); err != nil {
		errs = append(errs, err)
	}
	if h.cluster != nil && h.cluster.Remote != nil {
		// Stop the controller candidate first: if elected it resigns, so
		// a standby takes over at once (see stopController for a store
		// that does not answer).
		if pid := h.localController.Load(); pid != nil {
			h.stopController(pid, storeGone)
		}
	}
	if h.provider != nil {
		if err := h.provider.Shutdown(false); err != nil {
			errs = append(errs, fmt.Errorf("stop member provider: %w", err))
		}
	}
	if h.cluster != nil && h.cluster.Remote != nil {
		// Stops the actor system (the controller activation with it) and
		// the remote. Not graceful: protoactor's graceful leave sleeps 2 s
		// and gRPC's graceful stop waits up to 10 s for peers to hang up;
		// the replicas have drained already.
		if err := shutdownCluster(h.cluster); err != nil {
			errs = append(errs, err)
			h.system.Shutdown()
		}
	} else if h.system != nil {
		h.system.Shutdown()
	}
	if h.reg != nil && storeGone {
		// The revocation cannot commit without a quorum and would only
		// wait out its timeout (5 s): the lease lapses by itself.
		h.reg.Abandon()
	} else if h.reg != nil {
		if err := h.reg.Close(); err != nil {
			// Without an etcd quorum (the other members already gone) the
			// revoke cannot commit; the lease lapses by itself. Not a
			// failed shutdown.
			h.logger.WithError(err).Warn("could not revoke the host registration; it expires with its lease")
		}
	}
	if h.external != nil {
		if err := h.external.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close etcd client: %w", err))
		}
	}
	if h.etcd != nil {
		if err := h.etcd.Close(); err != nil {
			errs = append(errs, fmt.Errorf("stop etcd: %w", err))
		}
	}
	if h.lock != nil {
		if err := h.lock.Close(); err != nil {
			errs = append(errs, fmt.Errorf("unlock data dir: %w", err))
		}
	}
	h.logger.Info("host stopped")
	return errors.Join(errs...)
}

// stopController stops the local controller candidate and waits until it
// has stopped (resigned, if elected). When the metadata store did not
// answer (storeGone) its etcd calls cannot commit and would each wait out
// their timeouts, seconds in all: then it is waited for only briefly and
// stops by itself while the rest of the host stops (an election it may
// hold lapses with its lease, as it would have).
func (h *Host) stopController(pid *actor.PID, storeGone bool) {
	if !storeGone {
		if err := h.system.Root.PoisonFuture(pid).Wait(); err != nil {
			h.logger.WithError(err).Warn("the controller did not stop in time; its election lease lapses by itself")
		}
		return
	}
	const wait = 500 * time.Millisecond
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		h.system.Root.PoisonFuture(pid).Wait() // its outcome: the select below
	}()
	select {
	case <-stopped:
	case <-time.After(wait):
		h.logger.WithField("waited", wait).Info("the controller is still stopping (the metadata store does not answer); not waiting for it")
	}
}

// controlledShutdown asks the controller to move leadership of this
// host's partitions to other in-sync replicas before the replicas stop,
// retrying for up to 8 s (a controller may be failing over; the last host
// of a cluster has no quorum to ask). Partitions
// with no other in-sync replica stay here until the host goes. It reports
// false when the metadata store did not answer within a second (true when
// it answered, or was not asked).
func (h *Host) controlledShutdown(ctx context.Context) bool {
	ctrl := h.localController.Load()
	if ctrl == nil || h.reg == nil || h.fenceClosed() {
		return true // not asked
	}
	// Without an etcd quorum (the last hosts of a cluster stopping) there
	// is no controller to ask: do not wait for one.
	qctx, cancel := context.WithTimeout(ctx, time.Second)
	_, err := h.store.ListHosts(qctx)
	cancel()
	if err != nil {
		h.logger.WithError(err).Info("controlled shutdown skipped: the metadata store does not answer")
		return false
	}
	deadline := time.Now().Add(8 * time.Second)
	for attempt := 1; ; attempt++ {
		req := &messages.ControlledShutdownRequest{HostId: h.hostID.Load(), BrokerEpoch: h.reg.Epoch()}
		res, err := h.system.Root.RequestFuture(ctrl, req, 5*time.Second).Result()
		resp, ok := res.(*messages.ControlledShutdownResponse)
		switch {
		case err == nil && ok && resp.ErrorCode == 0:
			h.logger.WithFields(logrus.Fields{"partitions_still_led": resp.PartitionsRemaining, "attempts": attempt}).Info("controlled shutdown: leadership moved to other replicas")
			// Give the broker a moment to act on the new metadata (its
			// leaders become followers) before the replicas are drained.
			cluster.SleepCtx(ctx, 300*time.Millisecond)
			return true
		case err == nil && ok && resp.ErrorCode == messages.ErrorCode_ERROR_CODE_STALE_BROKER_EPOCH:
			h.logger.WithField("error", resp.ErrorMessage).Warn("controlled shutdown refused; stopping anyway")
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			h.logger.WithError(err).WithField("answer", res).Warn("controlled shutdown did not complete; stopping anyway (leadership moves when the lease goes)")
			return true
		}
		cluster.SleepCtx(ctx, 500*time.Millisecond)
	}
}

// fenceClosed reports whether the host was fenced (its lease is gone:
// nothing to hand over).
func (h *Host) fenceClosed() bool {
	select {
	case <-h.fenced:
		return true
	default:
		return false
	}
}
