// Package host boots one actorlog host: the actor system, the protoactor
// remote endpoint clients and other hosts talk to, the embedded etcd member
// that holds the metadata (DESIGN §5), the host's registration under an etcd
// lease, the controller and broker actors, and the HTTP endpoint with
// /healthz and Prometheus /metrics.
package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/broker"
	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/actors/controller"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/messages"
)

// Config configures a host. Zero fields take the defaults noted.
type Config struct {
	// HostID identifies the host in the cluster (default 1).
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
	// EtcdClient and EtcdPeer are the embedded etcd member's URLs (defaults:
	// Listen's host, ports Listen+1 (peer) and Listen+2 (client)).
	EtcdClient, EtcdPeer string
	// EtcdInitialCluster is "name=peerURL,..." (default: this member alone).
	EtcdInitialCluster string
	// EtcdUnsafeNoFsync skips etcd's fsyncs (tests only).
	EtcdUnsafeNoFsync bool
	// LeaseTTL is the host registration and controller session TTL
	// (default 10 s; DESIGN §5 explains the trade-off).
	LeaseTTL time.Duration
	// Logger (logrus.StandardLogger when nil).
	Logger *logrus.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.HostID == 0 {
		c.HostID = 1
	}
	if c.HostID < 0 {
		return c, fmt.Errorf("host: host id %d must be positive", c.HostID)
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
		c.LeaseTTL = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = logrus.StandardLogger()
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
	if c.EtcdPeer == "" {
		c.EtcdPeer = "http://" + net.JoinHostPort(h, strconv.Itoa(port+1))
	}
	if c.EtcdClient == "" {
		c.EtcdClient = "http://" + net.JoinHostPort(h, strconv.Itoa(port+2))
	}
	return c, nil
}

// Host is a running host.
type Host struct {
	cfg      Config
	logger   *logrus.Entry
	lock     *os.File
	system   *actor.ActorSystem
	etcd     *cluster.Etcd
	store    *cluster.Store
	reg      *cluster.Registration
	cluster  *pcluster.Cluster
	provider *cluster.MemberProvider
	stopKeep chan struct{}
	// localController is this host's controller activation, if it has one.
	localController atomic.Pointer[actor.PID]
	keepDone        chan struct{}
	metrics         *Metrics
	http            *http.Server
	broker          *actor.PID
	stopOnce        sync.Once
	stopErr         error
}

// Start boots a host and returns once it serves requests.
func Start(ctx context.Context, cfg Config) (*Host, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	h := &Host{cfg: cfg, logger: logrus.NewEntry(cfg.Logger).WithField("host", cfg.HostID)}
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
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("host: data dir: %w", err)
	}
	lock, err := lockDir(cfg.DataDir)
	if err != nil {
		return err
	}
	h.lock = lock

	h.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return client.NewSlogLogger(h.logger.WithField("component", "protoactor"))
	}))
	rc, err := client.RemoteConfig(cfg.Listen, cfg.Advertise)
	if err != nil {
		return fmt.Errorf("host: %w", err)
	}
	// The controller is a cluster kind with one identity: protoactor places
	// its activation on one member; its authority comes from the etcd
	// election, so a second activation is a standby, never a rival.
	controllerKind := pcluster.NewKind(ControllerKind, actor.PropsFromProducer(func() actor.Actor {
		return controller.New(controller.Config{HostID: cfg.HostID, Store: h.store, SessionTTL: cfg.LeaseTTL, Logger: h.logger,
			OnStarted: func(pid *actor.PID) { h.localController.Store(pid) }})
	}))
	// Membership comes from the etcd registrations; etcd itself starts
	// inside StartMember, after protoactor's remote (DESIGN §8).
	provider := cluster.NewMemberProvider(func(c *pcluster.Cluster) (*cluster.Store, error) {
		return h.startMetadata(ctx, c.ActorSystem.ID)
	}, h.logger)
	h.provider = provider
	h.cluster = pcluster.New(h.system, pcluster.Configure("actorlog", provider, disthash.New(), rc,
		pcluster.WithKinds(controllerKind), pcluster.WithRequestTimeout(10*time.Second)))
	if err := startMember(h.cluster); err != nil {
		return fmt.Errorf("host: %w", err)
	}

	h.metrics = NewMetrics()
	if cfg.HTTP != "off" {
		if err := h.startHTTP(); err != nil {
			return err
		}
	}
	h.broker, err = h.system.Root.SpawnNamed(broker.Props(broker.Config{
		HostID: cfg.HostID, Address: cfg.Advertise, DataDir: cfg.DataDir, Store: h.store,
		Metrics: h.metrics, Logger: h.logger, Controller: h.controllerPID,
	}), messages.BrokerActorID)
	if err != nil {
		return fmt.Errorf("host: spawn broker: %w", err)
	}
	h.keepController()
	h.logger.WithFields(logrus.Fields{"listen": cfg.Listen, "advertise": cfg.Advertise, "http": cfg.HTTP, "data_dir": cfg.DataDir, "member_id": h.system.ID}).Info("host started")
	return nil
}

// ControllerKind is the protoactor cluster kind (and identity) of the
// controller.
const ControllerKind = "controller"

// startMember starts the protoactor cluster member, turning its panics
// (listen failures, provider errors) into errors.
func startMember(c *pcluster.Cluster) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("start cluster member: %v", p)
		}
	}()
	c.StartMember()
	return nil
}

// startMetadata starts the embedded etcd member, the metadata store and this
// host's registration (called by the member provider).
func (h *Host) startMetadata(ctx context.Context, memberID string) (*cluster.Store, error) {
	cfg := h.cfg
	var err error
	h.etcd, err = cluster.StartEtcd(ctx, cluster.EtcdConfig{
		Name:           fmt.Sprintf("host-%d", cfg.HostID),
		DataDir:        filepath.Join(cfg.DataDir, "etcd"),
		ClientURL:      cfg.EtcdClient,
		PeerURL:        cfg.EtcdPeer,
		InitialCluster: cfg.EtcdInitialCluster,
		UnsafeNoFsync:  cfg.EtcdUnsafeNoFsync,
		Logger:         h.logger.WithField("component", "etcd"),
	})
	if err != nil {
		return nil, err
	}
	h.store = cluster.NewStore(h.etcd.Client(), "", h.logger.WithField("component", "metadata"))
	h.reg, err = h.store.Register(ctx, &messages.HostInfo{HostId: cfg.HostID, AdvertisedAddress: cfg.Advertise, HttpAddress: cfg.HTTP, MemberId: memberID}, cfg.LeaseTTL)
	if err != nil {
		return nil, fmt.Errorf("register: %w", err)
	}
	return h.store, nil
}

// controllerPID resolves the controller's activation through the cluster
// (activating it if none exists), for the broker's admin forwarding.
func (h *Host) controllerPID() *actor.PID {
	return h.provider.Lookup(h.cluster, ControllerKind, ControllerKind)
}

// keepController makes sure a controller activation exists somewhere in
// the cluster, now and every second (a member that held it may leave; the
// sooner a new activation campaigns, the shorter a failover).
func (h *Host) keepController() {
	h.stopKeep = make(chan struct{})
	h.keepDone = make(chan struct{})
	go func() {
		defer close(h.keepDone)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			if pid := h.controllerPID(); pid == nil {
				h.logger.Debug("no controller activation yet")
			}
			select {
			case <-h.stopKeep:
				return
			case <-t.C:
			}
		}
	}()
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
	// Profiles, for finding where time goes (the HTTP port is loopback by default).
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/heap", pprof.Index)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		select {
		case <-h.reg.Done():
			http.Error(w, "host registration lost", http.StatusServiceUnavailable)
			return
		default:
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"status\":\"ok\",\"host_id\":%d}\n", h.cfg.HostID)
	})
	ln, err := net.Listen("tcp", h.cfg.HTTP)
	if err != nil {
		return fmt.Errorf("host: http listen: %w", err)
	}
	h.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
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
	var errs []error
	if h.http != nil {
		if err := h.http.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http: %w", err))
		}
	}
	if h.stopKeep != nil {
		close(h.stopKeep)
		<-h.keepDone
	}
	if h.broker != nil {
		// Replicas serve what they have queued, then close their logs.
		if _, err := h.system.Root.RequestFuture(h.broker, &broker.Drain{}, 30*time.Second).Result(); err != nil {
			errs = append(errs, fmt.Errorf("drain replicas: %w", err))
		}
		if err := h.system.Root.PoisonFuture(h.broker).Wait(); err != nil {
			errs = append(errs, fmt.Errorf("stop broker: %w", err))
		}
	}
	if h.cluster != nil && h.cluster.Remote != nil {
		// Stop a local controller activation first: it resigns, so
		// another host's takes over at once.
		if pid := h.localController.Load(); pid != nil {
			if err := h.system.Root.PoisonFuture(pid).Wait(); err != nil {
				errs = append(errs, fmt.Errorf("stop controller: %w", err))
			}
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
		h.cluster.Shutdown(false)
	} else if h.system != nil {
		h.system.Shutdown()
	}
	if h.reg != nil {
		if err := h.reg.Close(); err != nil {
			// Without an etcd quorum (the other members already gone) the
			// revoke cannot commit; the lease lapses by itself. Not a
			// failed shutdown.
			h.logger.WithError(err).Warn("could not revoke the host registration; it expires with its lease")
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
