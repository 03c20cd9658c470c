// host.go: `actorlog host` — run one host until SIGINT/SIGTERM.

package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/actorlog/actorlog/actors/broker"
	"github.com/actorlog/actorlog/actors/controller"
	"github.com/actorlog/actorlog/actors/group"
	"github.com/actorlog/actorlog/actors/replica"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/host"
	"github.com/actorlog/actorlog/kafka"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage"
)

func newHostCmd(g *globals) *cobra.Command {
	var cfg host.Config
	var hostID int
	var endpoints, configFile string
	var minSegmentBytes int64
	var crashPoint string
	var saslMechanisms string // --kafka-sasl-mechanisms
	var serveConsole bool     // --console
	var superUsers string     // --super-users
	var gcPercent int         // --gc-percent
	cmd := &cobra.Command{
		Use:   "host",
		Short: "Run an actorlog host",
		Long: `Run an actorlog host. With no cluster flags it is a cluster of one, with
its own single-member etcd. In a cluster every host has a --name; the first
3 (or 5) run an etcd voter (--etcd-peer, --etcd-client, --initial-cluster
listing every voter), others join with --etcd-endpoints.

Every flag can also be set as ACTORLOG_<FLAG> (ACTORLOG_ETCD_PEER) or as a
key of the YAML file given with --config (etcd-peer: host1:7071); the
command line wins over the environment, which wins over the file.`,
		Args:        cobra.NoArgs,
		Annotations: map[string]string{settingsFileAnnotation: "true"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := g.logger("info")
			if err != nil {
				return err
			}
			cfg.Logger = logger
			cfg.HostID = int32(hostID)
			if err := setGCPercent(gcPercent, logger); err != nil {
				return err
			}
			// --kafka-listen: its default is taken only if free (a
			// second host on this machine runs without a Kafka
			// listener); one given explicitly (flag, environment or
			// file) must be bound; "" turns it off.
			// --console: unless given, the host serves it only on a
			// loopback --http (console.go in package host).
			switch {
			case !cmd.Flags().Changed("console"):
				cfg.Console = host.ConsoleAuto
			case serveConsole:
				cfg.Console = host.ConsoleOn
			default:
				cfg.Console = host.ConsoleOff
			}
			switch {
			case !cmd.Flags().Changed("kafka-listen"):
				cfg.KafkaListen = ""
			case cfg.KafkaListen == "":
				cfg.KafkaListen = host.KafkaOff
			}
			if minSegmentBytes != cluster.MinSegmentBytes {
				// A test escape hatch (hidden): small segments through
				// topic configs cost three descriptors each.
				cluster.SetMinSegmentBytes(minSegmentBytes)
				logger.WithField("min_segment_bytes", cluster.CurrentMinSegmentBytes()).Warn("segment.bytes minimum changed by --unsafe-min-segment-bytes: for tests only")
			}
			if crashPoint != "" {
				if err := armCrashPoint(crashPoint, logrus.NewEntry(logger)); err != nil {
					return fmt.Errorf("--unsafe-crash-point: %w", err)
				}
			}
			if endpoints != "" {
				if cfg.EtcdEndpoints, err = cluster.ParseEndpoints(endpoints); err != nil {
					return fmt.Errorf("--etcd-endpoints: %w", err)
				}
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			// No deadline: a voter waits for its etcd quorum as Kafka
			// brokers wait for their controllers (it logs while it waits).
			if saslMechanisms != "" {
				cfg.KafkaSASLMechanisms = strings.Split(saslMechanisms, ",")
			}
			if superUsers != "" {
				cfg.SuperUsers = strings.Split(superUsers, ",")
			}
			h, err := host.Start(ctx, cfg)
			if err != nil {
				return err
			}
			// SIGHUP re-reads the TLS files (new Kafka connections use
			// them; a failed reload keeps the current ones).
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			go func() {
				for range hup {
					if err := h.ReloadTLS(); err != nil {
						logger.WithError(err).Error("SIGHUP: TLS reload failed; keeping the current certificate")
						continue
					}
					logger.Info("SIGHUP: TLS files reloaded")
				}
			}()
			fenced := false
			select {
			case <-ctx.Done():
				logger.Info("shutting down")
			case <-h.Fenced():
				fenced = true
				logger.Warn("fenced after losing the host lease; restarting to rejoin the cluster with a new broker epoch")
			}
			stop()
			shutCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := h.Shutdown(shutCtx); err != nil && !fenced {
				return fmt.Errorf("shutdown: %w", err)
			} else if err != nil {
				logger.WithError(err).Warn("shutdown of the fenced host")
			}
			if fenced {
				return reexec()
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&configFile, "config", "", "YAML file of flag settings (keys are flag names)")
	f.StringVar(&cfg.Name, "name", "", "this host's name, unique in the cluster; also its etcd member name (default host-1)")
	f.StringVar(&cfg.DataDir, "data-dir", "./data", "directory for partition logs and metadata")
	f.StringVar(&cfg.Listen, "listen", "127.0.0.1:7070", "address clients and other hosts connect to")
	f.StringVar(&cfg.HTTP, "http", "127.0.0.1:7080", "address of /healthz and /metrics (\"off\" to disable)")
	f.BoolVar(&cfg.HTTPTLS, "http-tls", false,
		"serve --http over TLS 1.2+ with --tls-cert/--tls-key (SIGHUP reloads them), asking for (not requiring) a client certificate of --tls-ca; plain HTTP to it is refused")
	f.StringVar(&cfg.KafkaListen, "kafka-listen", host.DefaultKafkaListen,
		"address of the Kafka listener Kafka clients bootstrap to (\"\" for none; the default is skipped with a warning when in use)")
	f.StringVar(&cfg.TLSCert, "tls-cert", "",
		"PEM certificate of this host (with --tls-key, --tls-ca: TLS on the Kafka listener, on the actor remote with --remote-tls and on the embedded etcd with --etcd-tls; `actorlog certs init` makes them; SIGHUP reloads them)")
	f.StringVar(&cfg.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
	f.BoolVar(&cfg.RemoteTLS, "remote-tls", false,
		"the actor remote (host<->host, client<->host) speaks TLS with --tls-cert and requires a verified certificate of every peer (clients then need one too); --tls-cert must be a host certificate for --name")
	f.BoolVar(&cfg.EtcdTLS, "etcd-tls", false,
		"the embedded etcd's client and peer ports speak TLS with --tls-cert and require a certificate of --tls-ca (peers: of an --initial-cluster member); every etcd URL is then https:// (HOST:PORT flags default to it); --tls-cert must be a host certificate for --name")
	f.StringVar(&cfg.TLSCA, "tls-ca", "", "PEM CA certificates that client certificates are verified against")
	f.StringSliceVar(&cfg.EtcdClientCNs, "etcd-client-cns", host.DefaultEtcdClientCNs,
		"with --etcd-tls, the Common Names of client certificates the embedded etcd's client port accepts besides the --initial-cluster members' (hosts joining through --etcd-endpoints, admins running `actorlog users|acls --etcd-endpoints`); \"*\": any certificate of --tls-ca")
	f.StringVar(&cfg.KafkaClientAuth, "kafka-client-auth", host.KafkaClientAuthNone,
		"client certificates on the TLS Kafka listener: none, request (verified if sent; its CN names the principal) or require")
	f.StringVar(&saslMechanisms, "kafka-sasl-mechanisms", "",
		"SASL mechanisms Kafka clients must authenticate with, comma-separated: SCRAM-SHA-256,SCRAM-SHA-512,PLAIN (PLAIN only over TLS; empty: no SASL); users are managed with `actorlog users`")
	f.StringVar(&cfg.Authorizer, "authorizer", host.AuthorizerAuto,
		"when ACLs (`actorlog acls`) are enforced: auto (on the Kafka listener when clients must authenticate: SASL or --kafka-client-auth require; on the actor remote with --remote-tls), acl (always; unauthenticated Kafka clients are User:ANONYMOUS; the actor remote only with --remote-tls) or none")
	f.StringVar(&superUsers, "super-users", "",
		"principals that may do anything whatever the ACLs say, comma-separated, e.g. User:admin (Kafka's super.users)")
	f.BoolVar(&cfg.AllowEveryoneIfNoACLFound, "allow-everyone-if-no-acl-found", false,
		"with ACLs enforced, allow a request on a resource that no ACL names (Kafka's allow.everyone.if.no.acl.found)")
	f.StringVar(&cfg.KafkaAdvertise, "kafka-advertise", "",
		"address Kafka clients reach --kafka-listen at (default --kafka-listen; on 0.0.0.0 the host of --advertise with the Kafka port)")
	f.BoolVar(&cfg.AutoCreateTopics, "auto-create-topics", false,
		"create a topic when a Kafka client's Metadata request names an unknown one (Kafka's auto.create.topics.enable; off by default, unlike Kafka)")
	f.Int32Var(&cfg.NumPartitions, "num-partitions", kafka.DefaultNumPartitions,
		"partitions of an auto-created topic, and of one a Kafka CreateTopics request creates with -1 (Kafka's num.partitions)")
	f.Int16Var(&cfg.DefaultReplicationFactor, "default-replication-factor", kafka.DefaultReplicationFactor,
		"replication factor of those topics (Kafka's default.replication.factor); more than the live hosts is refused with INVALID_REPLICATION_FACTOR")
	f.BoolVar(&cfg.PProf, "pprof", false, "also serve Go's profiles under /debug/pprof/ on --http")
	f.IntVar(&gcPercent, "gc-percent", defaultGCPercent,
		"Go's garbage collection target (GOGC) for the host: the heap grows to (1 + N/100) times the live heap between collections; a GOGC environment variable wins")
	f.BoolVar(&serveConsole, "console", true,
		"serve the web console under /ui/ and its JSON under /api/v1/ on --http; unless given, only when --http is a loopback address or has --http-tls with authentication on. "+
			"The console authenticates users whenever the host authenticates clients (--kafka-sasl-mechanisms, --kafka-client-auth require, --remote-tls or --authorizer acl): "+
			"a client certificate, or a login with a SCRAM user's password (`actorlog users`; over plain HTTP only on loopback), and checks every action against the ACLs like the Kafka listener; otherwise it has no authentication")
	f.StringVar(&cfg.Advertise, "advertise", "", "address others use to reach --listen (default --listen)")
	f.StringVar(&cfg.EtcdPeer, "etcd-peer", "", "embedded etcd peer address HOST:PORT (default from --initial-cluster, else --listen port+1)")
	f.StringVar(&cfg.EtcdClient, "etcd-client", "", "embedded etcd client address HOST:PORT (default --listen port+2)")
	f.StringVar(&cfg.EtcdInitialCluster, "initial-cluster", "", "the etcd voters, NAME=http://HOST:PEERPORT,... including this host (default this host alone)")
	f.StringVar(&endpoints, "etcd-endpoints", "", "join through an etcd cluster run elsewhere (http://HOST:CLIENTPORT,...) instead of running a voter")
	f.DurationVar(&cfg.LeaseTTL, "lease-ttl", host.DefaultLeaseTTL, "host liveness lease TTL: a host silent this long loses its partitions")
	f.DurationVar(&cfg.ReplicaLagTimeMax, "replica-lag-time-max", replica.DefaultReplicaLagTimeMax, "a follower that has not caught up for this long leaves the ISR")
	f.IntVar(&cfg.MaxOpeningReplicas, "max-opening-replicas", broker.DefaultMaxOpeningReplicas,
		"replicas the host starts at once (opening their logs); on a slow disk the others of a large topic wait, not the lease renewals")
	f.DurationVar(&cfg.LeaderImbalanceCheckInterval, "leader-imbalance-check-interval", controller.DefaultLeaderImbalanceCheckInterval,
		"how often the controller moves leadership back to preferred replicas (where a host's imbalance exceeds 10%)")
	f.Int32Var(&cfg.OffsetsTopicPartitions, "offsets-topic-partitions", broker.DefaultOffsetsTopicPartitions,
		"partitions of the internal "+messages.OffsetsTopic+" topic, when this host has it created (on the first consumer group use)")
	f.DurationVar(&cfg.GroupInitialRebalanceDelay, "group-initial-rebalance-delay", group.DefaultConfig().InitialRebalanceDelay,
		"how long a consumer group's first rebalance waits for more members (0: none)")
	f.DurationVar(&cfg.GroupMinSessionTimeout, "group-min-session-timeout", group.DefaultConfig().MinSessionTimeout,
		"the shortest session timeout a group member may ask for")
	f.DurationVar(&cfg.OffsetsRetention, "offsets-retention", group.DefaultOffsetsRetention,
		"committed offsets of a consumer group expire once it has been empty this long (offsets committed from outside a group: this long after their commit); Kafka's offsets.retention.minutes")
	f.DurationVar(&cfg.OffsetsRetentionCheckInterval, "offsets-retention-check-interval", group.DefaultOffsetsRetentionCheckInterval,
		"how often the group coordinators look for expired offsets (Kafka's offsets.retention.check.interval.ms)")
	f.IntVar(&cfg.LogCleanerThreads, "log-cleaner-threads", 1,
		"how many logs of compacted topics are cleaned at once (Kafka's log.cleaner.threads)")
	f.DurationVar(&cfg.LogCleanerBackoff, "log-cleaner-backoff", storage.DefaultCleanerBackoff,
		"how long a log cleaner thread sleeps when no log needs cleaning (Kafka's log.cleaner.backoff.ms)")
	f.Int64Var(&cfg.LogCleanerDedupeBufferSize, "log-cleaner-dedupe-buffer-size", storage.DefaultDedupeBufferBytes,
		"bytes of the log cleaner's offset maps, shared by its threads, at least 1 MiB a thread (Kafka's log.cleaner.dedupe.buffer.size)")
	f.Int64Var(&cfg.LogCleanerIOMaxBytesPerSecond, "log-cleaner-io-max-bytes-per-second", 0,
		"bytes the log cleaner reads and writes a second, all threads together (Kafka's log.cleaner.io.max.bytes.per.second; 0: no bound)")
	f.IntVar(&hostID, "host-id", 0, "ask for this host id (default: assigned to --name by the cluster)")
	f.IntVar(&cfg.MaxConnections, "max-connections", 0,
		"connections the host keeps open over all its ports (Kafka's max.connections; etcd's ports count three each); more are closed as they arrive (default: half the descriptors RLIMIT_NOFILE keeps out of partitions, 512 at 2048 and above)")
	f.IntVar(&cfg.MaxConnectionsPerIP, "max-connections-per-ip", 0,
		"connections kept open from one address (Kafka's max.connections.per.ip; default half of --max-connections)")
	// Hidden: tests that want many small segments through a topic config
	// (e2e_test.go) lower Kafka 4's 1 MiB minimum of segment.bytes with
	// it. Every host of a cluster needs the same value.
	f.Int64Var(&minSegmentBytes, "unsafe-min-segment-bytes", cluster.MinSegmentBytes, "smallest segment.bytes accepted (tests only)")
	_ = f.MarkHidden("unsafe-min-segment-bytes")
	// Hidden: the host crash tests (compaction_crash_e2e_test.go) SIGKILL
	// the host at a named step of a log cleaning with it.
	f.StringVar(&crashPoint, "unsafe-crash-point", "", "POINT[:N]: SIGKILL this process the N-th time (default 1) a log cleaning passes POINT (tests only)")
	_ = f.MarkHidden("unsafe-crash-point")
	return cmd
}

// armCrashPoint parses "POINT[:N]" (a storage.CrashPoints name) and
// installs a storage crash point that SIGKILLs the process the N-th time a
// cleaning passes POINT.
func armCrashPoint(spec string, logger *logrus.Entry) error {
	point, count, found := strings.Cut(spec, ":")
	n := 1
	if found {
		var err error
		if n, err = strconv.Atoi(count); err != nil || n < 1 {
			return fmt.Errorf("%q: the count after ':' must be a positive integer", spec)
		}
	}
	if !slices.Contains(storage.CrashPoints, point) {
		return fmt.Errorf("%q: unknown point; one of %s", point, strings.Join(storage.CrashPoints, ", "))
	}
	var passes atomic.Int64
	storage.SetCrashPoint(func(p string) {
		if p != point || passes.Add(1) != int64(n) {
			return
		}
		logger.WithFields(logrus.Fields{"point": p, "pass": n}).Warn("--unsafe-crash-point reached: killing this process")
		if err := syscall.Kill(os.Getpid(), syscall.SIGKILL); err != nil {
			logger.WithError(err).Error("--unsafe-crash-point: SIGKILL failed")
		}
		select {} // the signal is on its way: nothing after the point runs
	})
	logger.WithFields(logrus.Fields{"point": point, "pass": n}).Warn("--unsafe-crash-point armed: this host SIGKILLs itself in a log cleaning (for tests only)")
	return nil
}

// reexec replaces the process with a fresh copy of itself (same pid, same
// arguments): a fenced host comes back as a new incarnation, with a new
// protoactor member id and a new broker epoch.
func reexec() error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("restart after fencing: %w", err)
	}
	// Linux resolves /proc/self/exe to "<path> (deleted)" when the binary
	// was replaced on disk; run the new one at the same path.
	exe = strings.TrimSuffix(exe, " (deleted)")
	if err := syscall.Exec(exe, os.Args, os.Environ()); err != nil {
		return fmt.Errorf("restart after fencing: exec %s: %w", exe, err)
	}
	return nil
}
