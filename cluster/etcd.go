// etcd.go holds the embedded etcd member every host runs by default
// (DESIGN §5): its configuration, start-up (waiting until it serves, with a
// timeout), restart from an existing data directory, and a client pointed at
// this member only (a client given a frozen member's endpoint hangs, so
// each host talks to its own). etcd's zap logs go to logrus at warn level.

package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.uber.org/zap/zapcore"

	"github.com/actorlog/actorlog/cluster/netlimit"
)

// Values of EtcdConfig.ClusterState.
const (
	// ClusterStateNew bootstraps a new cluster from InitialCluster.
	ClusterStateNew = "new"
	// ClusterStateExisting joins a cluster that already runs (the member
	// must have been added with `etcdctl member add` first), or restarts a
	// member from its data directory.
	ClusterStateExisting = "existing"
)

// Defaults of EtcdConfig.
const (
	DefaultEtcdReadyTimeout        = time.Minute
	DefaultEtcdCompactionRetention = time.Hour
	DefaultInitialClusterToken     = "actorlog"
)

// etcdSnapshotCount is how many raft entries an embedded member keeps
// before it snapshots (see StartEtcd).
const etcdSnapshotCount = 2000

// EtcdConfig configures one embedded etcd member.
type EtcdConfig struct {
	// Name is the member's name, unique in the etcd cluster. Required.
	Name string
	// DataDir holds the member's WAL, snapshots and database. Required.
	// Reusing it restarts the member with its data.
	DataDir string
	// ClientURL is where the member serves clients and where Client()
	// connects, e.g. http://127.0.0.1:2379. It is also the advertised
	// client URL, so it must be reachable as written. Required.
	ClientURL string
	// PeerURL is where the member talks raft to its peers, e.g.
	// http://127.0.0.1:2380; listened on and advertised. Required.
	PeerURL string
	// InitialCluster lists every member of a new cluster,
	// "name1=peerURL1,name2=peerURL2,..."; it must include this member.
	// Default: Name=PeerURL (a single-member cluster).
	InitialCluster string
	// ClusterState is ClusterStateNew or ClusterStateExisting. Default:
	// existing when DataDir already holds this member's WAL, else new.
	// With a WAL present etcd restarts from it whatever this says.
	ClusterState string
	// InitialClusterToken keeps distinct clusters from joining each other
	// by mistake; every member of one cluster must use the same. Default
	// DefaultInitialClusterToken.
	InitialClusterToken string
	// UnsafeNoFsync disables fsync. Tests only: a crash loses data.
	UnsafeNoFsync bool
	// ReadyTimeout bounds the wait for the member to serve (for a new
	// multi-member cluster: for a quorum of members to start). Default
	// DefaultEtcdReadyTimeout; negative waits until ctx ends. The ctx
	// given to StartEtcd bounds it too.
	ReadyTimeout time.Duration
	// CompactionRetention is how much history etcd keeps (periodic
	// auto-compaction); watches cannot resume from older revisions.
	// Default DefaultEtcdCompactionRetention; negative disables compaction.
	CompactionRetention time.Duration
	// Limiter, when set, limits the connections of the member's client
	// and peer ports (etcdlimit.go): the process listens on ClientURL and
	// PeerURL itself and relays to the member's private loopback ports.
	// Default: none, etcd listens on them directly.
	Limiter *netlimit.Limiter
	// TLS, when set, serves the client and peer URLs (then all https://,
	// the initial cluster's too) with TLS and etcd's client-certificate
	// authentication, and connects the member's own client with
	// TLS.Client (etcdtls.go). Default: plain http.
	TLS *EtcdTLS
	// Logger receives etcd's server and client logs at warn level and
	// above. Default: logrus's standard logger.
	Logger *logrus.Entry
}

// Etcd is a running embedded etcd member and a client connected to it.
// Its methods are safe for concurrent use.
type Etcd struct {
	etcd      *embed.Etcd
	client    *clientv3.Client
	clientURL string
	logger    *logrus.Entry
	stopping  *atomic.Bool // set by Close: quiets shutdown noise
	fronts    *etcdFronts  // with EtcdConfig.Limiter: the limited ports
	closeOnce sync.Once
	closeErr  error
}

// withDefaults validates cfg and fills its defaults.
func (cfg EtcdConfig) withDefaults() (EtcdConfig, error) {
	switch {
	case cfg.Name == "":
		return cfg, errors.New("cluster: etcd config: Name is required")
	case cfg.DataDir == "":
		return cfg, errors.New("cluster: etcd config: DataDir is required")
	case cfg.ClientURL == "":
		return cfg, errors.New("cluster: etcd config: ClientURL is required")
	case cfg.PeerURL == "":
		return cfg, errors.New("cluster: etcd config: PeerURL is required")
	}
	if cfg.InitialCluster == "" {
		cfg.InitialCluster = cfg.Name + "=" + cfg.PeerURL
	}
	if !strings.Contains(","+cfg.InitialCluster, ","+cfg.Name+"=") {
		return cfg, fmt.Errorf("cluster: etcd config: InitialCluster %q does not include member %q", cfg.InitialCluster, cfg.Name)
	}
	if cfg.TLS != nil {
		if err := cfg.TLS.check(cfg.ClientURL, cfg.PeerURL, cfg.InitialCluster); err != nil {
			return cfg, err
		}
	} else if err := checkEtcdSchemes(false, cfg.ClientURL, cfg.PeerURL, cfg.InitialCluster); err != nil {
		return cfg, err
	}
	if cfg.ClusterState == "" {
		cfg.ClusterState = ClusterStateNew
		if wal.Exist(filepath.Join(cfg.DataDir, "member", "wal")) {
			cfg.ClusterState = ClusterStateExisting
		}
	}
	if cfg.ClusterState != ClusterStateNew && cfg.ClusterState != ClusterStateExisting {
		return cfg, fmt.Errorf("cluster: etcd config: ClusterState %q, want %q or %q", cfg.ClusterState, ClusterStateNew, ClusterStateExisting)
	}
	if cfg.InitialClusterToken == "" {
		cfg.InitialClusterToken = DefaultInitialClusterToken
	}
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = DefaultEtcdReadyTimeout
	}
	if cfg.CompactionRetention == 0 {
		cfg.CompactionRetention = DefaultEtcdCompactionRetention
	}
	if cfg.Logger == nil {
		cfg.Logger = logrus.NewEntry(logrus.StandardLogger())
	}
	return cfg, nil
}

// StartEtcd starts an embedded etcd member and waits until it serves
// clients, then connects a client to it. It fails with a clear error when
// the config is invalid, the member cannot start (ports in use, a data
// directory of another cluster), or it is not ready within ReadyTimeout or
// before ctx ends; the member is then stopped again. The caller must Close
// the returned Etcd.
func StartEtcd(ctx context.Context, cfg EtcdConfig) (*Etcd, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	cu, err := url.Parse(cfg.ClientURL)
	if err != nil {
		return nil, fmt.Errorf("cluster: etcd config: ClientURL %q: %w", cfg.ClientURL, err)
	}
	pu, err := url.Parse(cfg.PeerURL)
	if err != nil {
		return nil, fmt.Errorf("cluster: etcd config: PeerURL %q: %w", cfg.PeerURL, err)
	}
	logger := cfg.Logger.WithFields(logrus.Fields{"etcd_member": cfg.Name})
	stopping := new(atomic.Bool)
	zlog := newZapLogger(logger, zapcore.WarnLevel, stopping)

	ec := embed.NewConfig()
	ec.Name = cfg.Name
	ec.Dir = cfg.DataDir
	if ec.ListenClientUrls, err = listenURLs(ctx, *cu); err != nil {
		return nil, fmt.Errorf("cluster: start etcd member %q: client URL: %w", cfg.Name, err)
	}
	ec.AdvertiseClientUrls = []url.URL{*cu}
	if ec.ListenPeerUrls, err = listenURLs(ctx, *pu); err != nil {
		return nil, fmt.Errorf("cluster: start etcd member %q: peer URL: %w", cfg.Name, err)
	}
	ec.AdvertisePeerUrls = []url.URL{*pu}
	var fronts *etcdFronts
	if cfg.Limiter != nil {
		// Bound before the member starts, so that peers reach this
		// member while it waits for its quorum (the connections wait in
		// the backlog until the relays start).
		if fronts, err = listenFronts(cfg.Limiter, ec.ListenClientUrls, ec.ListenPeerUrls, logger); err != nil {
			return nil, fmt.Errorf("cluster: start etcd member %q: %w", cfg.Name, err)
		}
		ec.ListenClientUrls = []url.URL{privateURL(*cu)}
		ec.ListenPeerUrls = []url.URL{privateURL(*pu)}
	}
	var clientTLS *tls.Config
	if cfg.TLS != nil {
		cfg.TLS.apply(ec, cfg.InitialCluster)
		clientTLS = cfg.TLS.memberClientTLS(cu)
	}
	ec.InitialCluster = cfg.InitialCluster
	ec.ClusterState = cfg.ClusterState
	ec.InitialClusterToken = cfg.InitialClusterToken
	ec.UnsafeNoFsync = cfg.UnsafeNoFsync
	ec.LogLevel = "warn"
	// NewConfig leaves this 0 (only the command line sets the default),
	// which makes the server warn about every request.
	ec.WarningUnaryRequestDuration = embed.DefaultWarningUnaryRequestDuration
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zlog.Named("etcd-server"))
	ec.EnableGRPCGateway = false
	// Snapshot the (tiny) metadata store every etcdSnapshotCount raft
	// entries instead of etcd's 10000: until a snapshot, every entry stays
	// in the member's memory and in the WAL a restarted member replays, so
	// memory grows with every metadata change (a host kill makes a few
	// dozen) until then. A snapshot of a few hundred kilobytes is cheap.
	ec.SnapshotCount = etcdSnapshotCount
	ec.SnapshotCatchUpEntries = etcdSnapshotCount / 2
	if cfg.CompactionRetention > 0 {
		ec.AutoCompactionMode = embed.CompactorModePeriodic
		ec.AutoCompactionRetention = cfg.CompactionRetention.String()
	} else {
		ec.AutoCompactionRetention = "0"
	}

	logger = logger.WithFields(logrus.Fields{"data_dir": cfg.DataDir, "client_url": cfg.ClientURL, "peer_url": cfg.PeerURL})
	start := time.Now()
	e, err := embed.StartEtcd(ec)
	if err != nil {
		fronts.Close()
		return nil, fmt.Errorf("cluster: start etcd member %q (data dir %s, client %s, peer %s): %w",
			cfg.Name, cfg.DataDir, cfg.ClientURL, cfg.PeerURL, err)
	}
	dialURL := cu.String()
	if fronts != nil {
		fronts.serve(e.Clients[0].Addr().String(), e.Peers[0].Listener.Addr().String())
		// The member's own client skips the relay.
		dialURL = cu.Scheme + "://" + e.Clients[0].Addr().String()
	}
	var deadline <-chan time.Time
	if cfg.ReadyTimeout > 0 {
		timer := time.NewTimer(cfg.ReadyTimeout)
		defer timer.Stop()
		deadline = timer.C
	}
	// A member is ready once it has joined a quorum; until then say what
	// it waits for, every 10 s.
	progress := time.NewTicker(10 * time.Second)
	defer progress.Stop()
	var waitErr error
wait:
	for {
		select {
		case <-e.Server.ReadyNotify():
			break wait
		case err := <-e.Err():
			waitErr = fmt.Errorf("failed while starting: %w", err)
			break wait
		case <-ctx.Done():
			waitErr = fmt.Errorf("not ready: %w", ctx.Err())
			break wait
		case <-deadline:
			waitErr = fmt.Errorf("not ready after %v (for a new multi-member cluster: is a quorum of %q started?)", cfg.ReadyTimeout, cfg.InitialCluster)
			break wait
		case <-progress.C:
			logger.WithFields(logrus.Fields{"initial_cluster": cfg.InitialCluster, "waited": time.Since(start).Round(time.Second)}).
				Warn("etcd member waiting for a quorum of its cluster's members")
		}
	}
	if waitErr != nil {
		// Stop the server first: embed.Etcd.Close waits for the client
		// servers, which only start (or give up) once the server is ready
		// or stopping, so Close alone would hang here.
		stopping.Store(true)
		e.Server.Stop()
		e.Close()
		fronts.Close()
		return nil, fmt.Errorf("cluster: start etcd member %q (%s): %w", cfg.Name, cfg.ClusterState, waitErr)
	}

	client, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{dialURL},
		DialTimeout: 5 * time.Second,
		TLS:         clientTLS,
		Logger:      zlog.Named("etcd-client"),
		// AutoSyncInterval stays 0: the client must not discover and
		// fail over to other members.
	})
	if err != nil {
		stopping.Store(true)
		e.Close()
		fronts.Close()
		return nil, fmt.Errorf("cluster: etcd member %q: client for %s: %w", cfg.Name, cfg.ClientURL, err)
	}
	logger.WithFields(logrus.Fields{
		"cluster_state": cfg.ClusterState,
		"member_id":     e.Server.MemberID().String(),
		"took":          time.Since(start).Round(time.Millisecond),
	}).Info("etcd member ready")
	return &Etcd{etcd: e, client: client, clientURL: cu.String(), logger: logger, stopping: stopping, fronts: fronts}, nil
}

// Client returns a client connected to this member only. It is owned by
// the Etcd and closed by Close; do not close it yourself.
func (e *Etcd) Client() *clientv3.Client { return e.client }

// Endpoints returns the member's client URL as a client endpoint list, for
// callers that want their own client (clientv3.Config.Endpoints).
func (e *Etcd) Endpoints() []string { return []string{e.clientURL} }

// Err reports fatal errors of the running member (a server goroutine
// failing). Not closed by Close.
func (e *Etcd) Err() <-chan error { return e.etcd.Err() }

// Close closes the client and stops the member, waiting until it has
// stopped. Idempotent; later calls return the first call's result.
func (e *Etcd) Close() error {
	e.closeOnce.Do(func() {
		e.stopping.Store(true)
		if err := e.client.Close(); err != nil && !errors.Is(err, context.Canceled) {
			e.closeErr = fmt.Errorf("cluster: close etcd client: %w", err)
		}
		e.etcd.Close()
		<-e.etcd.Server.StopNotify()
		e.fronts.Close()
		e.logger.Info("etcd member stopped")
	})
	return e.closeErr
}
