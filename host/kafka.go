// kafka.go holds the host's Kafka listener (DESIGN §9, issue 13): its
// address settings (--kafka-listen, --kafka-advertise), binding it beside
// the actor remote and the HTTP endpoint under the host's connection
// limiter, serving it once the broker runs, and kafkaBackend, the
// kafka.Backend the listener asks — over the LOCAL broker actor only (its
// metadata cache), never over the network. The data APIs' backend, over
// the local replicas, is in kafkadata.go.

package host

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/broker"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/netlimit"
	"github.com/actorlog/actorlog/internal/tlsconf"
	"github.com/actorlog/actorlog/kafka"
	"github.com/actorlog/actorlog/messages"
)

// DefaultKafkaListen is the Kafka listener's address when none is given
// (Kafka's own default port), so `kcat -b 127.0.0.1:9092 -L` works against
// a host started with no flags.
const DefaultKafkaListen = "127.0.0.1:9092"

// KafkaOff as Config.KafkaListen runs no Kafka listener.
const KafkaOff = "off"

// Kafka backend bounds.
const (
	// kafkaAskTimeout bounds one request to the local broker.
	kafkaAskTimeout = 5 * time.Second
	// kafkaSyncPoll is how often a Metadata request made before the
	// broker read the metadata store asks it again.
	kafkaSyncPoll = 50 * time.Millisecond
	// controllerTTL is how long the controller id, read through the
	// broker's DescribeCluster (three etcd reads), is reused: clients ask
	// for Metadata often, and the controller rarely changes.
	controllerTTL = 2 * time.Second
)

// Kafka client-certificate policies (Config.KafkaClientAuth).
const (
	KafkaClientAuthNone    = "none"
	KafkaClientAuthRequest = "request"
	KafkaClientAuthRequire = "require"
)

// kafkaSecurityDefaults checks the TLS and SASL settings of the Kafka
// listener.
func (c *Config) kafkaSecurityDefaults() error {
	files := 0
	for _, f := range []string{c.TLSCert, c.TLSKey, c.TLSCA} {
		if f != "" {
			files++
		}
	}
	if files != 0 && files != 3 {
		return fmt.Errorf("host: --tls-cert, --tls-key and --tls-ca go together (got cert %q, key %q, CA %q)", c.TLSCert, c.TLSKey, c.TLSCA)
	}
	switch c.KafkaClientAuth {
	case "":
		c.KafkaClientAuth = KafkaClientAuthNone
	case KafkaClientAuthNone, KafkaClientAuthRequest, KafkaClientAuthRequire:
	default:
		return fmt.Errorf("host: --kafka-client-auth %q: want %s, %s or %s", c.KafkaClientAuth, KafkaClientAuthNone, KafkaClientAuthRequest, KafkaClientAuthRequire)
	}
	if c.KafkaClientAuth != KafkaClientAuthNone && files == 0 {
		return fmt.Errorf("host: --kafka-client-auth %s needs TLS (--tls-cert, --tls-key, --tls-ca)", c.KafkaClientAuth)
	}
	mechs, err := kafka.ParseSASLMechanisms(strings.Join(c.KafkaSASLMechanisms, ","))
	if err != nil {
		return fmt.Errorf("host: --kafka-sasl-mechanisms: %w", err)
	}
	c.KafkaSASLMechanisms = mechs
	return nil
}

// kafkaClientAuth is c's tls.ClientAuthType.
func (c *Config) kafkaClientAuth() tls.ClientAuthType {
	switch c.KafkaClientAuth {
	case KafkaClientAuthRequest:
		return tls.VerifyClientCertIfGiven
	case KafkaClientAuthRequire:
		return tls.RequireAndVerifyClientCert
	}
	return tls.NoClientCert
}

// kafkaDefaults fills in and checks the Kafka listener settings of c
// (called by withDefaults once c.Advertise is set).
func (c *Config) kafkaDefaults() error {
	if err := c.kafkaSecurityDefaults(); err != nil {
		return err
	}
	if err := c.authorizerDefaults(); err != nil { // kafkaauthz.go
		return err
	}
	switch c.KafkaListen {
	case KafkaOff:
		if c.KafkaAdvertise != "" {
			return fmt.Errorf("host: --kafka-advertise %s without a Kafka listener (--kafka-listen is off)", c.KafkaAdvertise)
		}
		return nil
	case "":
		c.KafkaListen, c.kafkaDefault = DefaultKafkaListen, true
	}
	h, p, err := net.SplitHostPort(c.KafkaListen)
	if err != nil {
		return fmt.Errorf("host: --kafka-listen %q: want HOST:PORT (or \"\" for none): %w", c.KafkaListen, err)
	}
	if port, err := strconv.Atoi(p); err != nil || port < 0 || port > 65535 {
		return fmt.Errorf("host: --kafka-listen %q: want a port in 0-65535", c.KafkaListen)
	}
	if c.KafkaAdvertise != "" {
		if err := cluster.ValidateHostInfo(&messages.HostInfo{KafkaAddress: c.KafkaAdvertise}); err != nil {
			return fmt.Errorf("host: --kafka-advertise %q: want HOST:PORT that Kafka clients can connect to: %w", c.KafkaAdvertise, err)
		}
		return nil
	}
	if !unspecifiedHost(h) {
		c.KafkaAdvertise = c.KafkaListen // port 0: the port bound (listenKafka)
		return nil
	}
	// Listening on every interface: clients need a name for this host.
	// As the remote's --advertise names it, use that name.
	ah, _, err := net.SplitHostPort(c.Advertise)
	if err != nil || unspecifiedHost(ah) {
		return fmt.Errorf("host: --kafka-listen %s listens on every interface: give --kafka-advertise HOST:PORT, the address Kafka clients reach this host at (or --advertise HOST:PORT, whose host is then advertised with the Kafka port)", c.KafkaListen)
	}
	c.KafkaAdvertise = net.JoinHostPort(ah, p)
	return nil
}

// unspecifiedHost reports whether h, the host of a listen address, means
// every interface ("", 0.0.0.0, ::).
func unspecifiedHost(h string) bool {
	if h == "" {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.IsUnspecified()
}

// listenKafka binds the Kafka listener (before the host registers, so the
// registration carries its address) and wraps it in the host's connection
// limiter. The default address, when taken by another process (a second
// host on this machine), is no error: the host logs a warning and runs
// without a Kafka listener. Any other failure to bind is.
func (h *Host) listenKafka() error {
	cfg := h.cfg
	if cfg.KafkaListen == KafkaOff {
		h.logger.Info("no Kafka listener (--kafka-listen is off)")
		return nil
	}
	ln, err := net.Listen("tcp", cfg.KafkaListen)
	if err != nil {
		if cfg.kafkaDefault && errors.Is(err, syscall.EADDRINUSE) {
			h.logger.WithError(err).WithField("kafka_listen", cfg.KafkaListen).
				Warn("the default Kafka address is in use (another host on this machine?): running WITHOUT a Kafka listener; give each host its own --kafka-listen to serve Kafka clients")
			return nil
		}
		return fmt.Errorf("host: --kafka-listen %s: %w", cfg.KafkaListen, err)
	}
	if cfg.TLSCert != "" {
		r, err := tlsconf.NewReloader(tlsconf.Files{Cert: cfg.TLSCert, Key: cfg.TLSKey, CA: cfg.TLSCA}, h.logger.WithField("listener", "kafka"))
		if err != nil {
			if cerr := ln.Close(); cerr != nil {
				h.logger.WithError(cerr).Debug("closing the Kafka listener")
			}
			return fmt.Errorf("host: Kafka listener TLS: %w", err)
		}
		h.tls = r
	}
	advertise := cfg.KafkaAdvertise
	if ah, ap, err := net.SplitHostPort(advertise); err == nil && ap == "0" {
		advertise = net.JoinHostPort(ah, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	}
	h.kafkaLn = h.conns.Listener("kafka", ln)
	h.kafkaAddr = advertise
	return nil
}

// startKafka serves the bound Kafka listener, if any, over the local
// broker (metadata, producer ids) and the local replicas (the data APIs,
// kafkadata.go); called once the broker runs and the cluster id is known.
func (h *Host) startKafka() error {
	if h.kafkaLn == nil {
		return nil
	}
	meta := &kafkaBackend{
		clusterID: h.clusterID, root: h.system.Root, broker: h.brokerPID,
		log: h.logger.WithField("component", "kafka-backend"),
	}
	admin := newKafkaAdmin(meta, h.cfg.NumPartitions, h.cfg.DefaultReplicationFactor, h.logger.WithField("component", "kafka-admin"))
	var tlsCfg *tls.Config
	if h.tls != nil {
		tlsCfg = h.tls.ServerConfig(h.cfg.kafkaClientAuth())
	}
	// The ACL and SCRAM writes go to the controller (kafkaacls.go).
	ctrl, err := h.attachKafkaController()
	if err != nil {
		return err
	}
	h.kafkaCtrl = ctrl
	var sasl kafka.SASLConfig
	if len(h.cfg.KafkaSASLMechanisms) > 0 {
		if h.store == nil {
			return errors.New("host: Kafka SASL needs the metadata store")
		}
		users := &kafkaScram{cache: cluster.NewScramCache(h.store, 0), ctrl: h.kafkaCtrl}
		sasl = kafka.SASLConfig{Mechanisms: h.cfg.KafkaSASLMechanisms, Credentials: users, Users: users}
		if tlsCfg == nil && slices.Contains(sasl.Mechanisms, kafka.MechanismPlain) {
			h.logger.Warn("--kafka-sasl-mechanisms has PLAIN but the Kafka listener has no TLS: PLAIN is refused on plain-text connections")
		}
	}
	authz, acls, err := h.startACLs() // kafkaauthz.go
	if err != nil {
		return err
	}
	h.logger.WithFields(logrus.Fields{
		"tls": tlsCfg != nil, "client_auth": h.cfg.KafkaClientAuth, "sasl": h.cfg.KafkaSASLMechanisms, "acls": authz != nil,
	}).Info("Kafka listener security")
	srv, err := kafka.NewServer(kafka.Config{
		Logger:         h.logger,
		Backend:        meta,
		Data:           newKafkaData(meta, h.system.Root, h.system.Address(), h.logger.WithField("component", "kafka-data")),
		Groups:         newKafkaGroups(meta, h.system.Root, h.system.Address(), h.hostID.Load(), h.logger.WithField("component", "kafka-groups")),
		Admin:          admin,
		PartitionAdmin: admin,
		Topics: kafka.TopicSettings{
			AutoCreate: h.cfg.AutoCreateTopics, NumPartitions: h.cfg.NumPartitions, ReplicationFactor: h.cfg.DefaultReplicationFactor,
		},
		TLS:        tlsCfg,
		SASL:       sasl,
		ACLs:       acls,
		Authorizer: authz,
		OnDenied:   h.metrics.authorizationDenied,
	})
	if err != nil {
		return fmt.Errorf("host: Kafka listener: %w", err)
	}
	h.kafka = srv
	ln := h.kafkaLn
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, kafka.ErrServerClosed) {
			h.logger.WithError(err).Error("Kafka listener stopped")
		}
	}()
	return nil
}

// loadClusterID reads (or, on a new cluster, creates) the cluster id,
// retrying while the metadata store does not answer, up to a minute.
func (h *Host) loadClusterID(ctx context.Context) error {
	deadline := time.Now().Add(time.Minute)
	for attempt := 1; ; attempt++ {
		qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		id, err := h.store.ClusterID(qctx)
		cancel()
		switch {
		case err == nil:
			h.clusterID = id
			return nil
		case errors.Is(err, cluster.ErrCorruptMetadata), ctx.Err() != nil, time.Now().After(deadline):
			return fmt.Errorf("host: cluster id: %w", err)
		}
		h.logger.WithError(err).WithField("attempt", attempt).Warn("reading the cluster id failed; retrying")
		cluster.SleepCtx(ctx, time.Second)
	}
}

// brokerPID is the local broker's PID, nil once it was stopped.
func (h *Host) brokerPID() *actor.PID {
	h.brokerMu.Lock()
	defer h.brokerMu.Unlock()
	return h.broker
}

// KafkaAddress is the address Kafka clients reach this host at (its
// registration's kafka_address), "" when it runs no Kafka listener.
func (h *Host) KafkaAddress() string { return h.kafkaAddr }

// ClusterID is the cluster id (Kafka's cluster.id), "" when the host runs
// no Kafka listener (it is read only for one).
func (h *Host) ClusterID() string { return h.clusterID }

// kafkaBackend is the kafka.Backend of a host: it answers from the local
// broker's metadata cache (broker.KafkaMetadataRequest) and, for the
// controller id, the broker's DescribeCluster. Safe for concurrent use;
// every call is bounded by kafkaAskTimeout and returns once its context is
// done.
type kafkaBackend struct {
	clusterID string
	root      *actor.RootContext
	broker    func() *actor.PID
	log       *logrus.Entry
	logLimit  netlimit.LogLimiter

	mu           sync.Mutex // guards the controller cache; held while it is refreshed
	controller   int32
	controllerAt time.Time // zero: never read
}

var _ kafka.Backend = (*kafkaBackend)(nil)

// errBrokerDown: the local broker was stopped (the host is shutting down
// or fenced); the Kafka client reconnects elsewhere.
var errBrokerDown = errors.New("host: the local broker is not running")

// Metadata implements kafka.MetadataBackend from the local broker's cache.
// Until the broker has read the metadata store once it waits (polling),
// rather than answer that no topic exists.
func (b *kafkaBackend) Metadata(ctx context.Context, q kafka.MetadataQuery) (*kafka.ClusterMetadata, error) {
	ctx, cancel := context.WithTimeout(ctx, kafkaAskTimeout)
	defer cancel()
	req := &broker.KafkaMetadataRequest{AllTopics: q.AllTopics, Topics: q.Topics}
	var md *broker.KafkaMetadata
	for {
		res, err := b.ask(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("host: Kafka metadata: %w", err)
		}
		m, ok := res.(*broker.KafkaMetadata)
		if !ok {
			return nil, fmt.Errorf("host: Kafka metadata: the broker answered %T", res)
		}
		if m.Synced {
			md = m
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("host: Kafka metadata: the broker has not read the metadata store yet: %w", ctx.Err())
		case <-time.After(kafkaSyncPoll):
		}
	}
	out := toClusterMetadata(md, b.log)
	out.ClusterID = b.clusterID
	out.ControllerID = b.controllerID(ctx)
	return out, nil
}

// ask sends msg to the local broker and waits for its answer, at most
// until ctx is done.
func (b *kafkaBackend) ask(ctx context.Context, msg any) (any, error) {
	pid := b.broker()
	if pid == nil {
		return nil, errBrokerDown
	}
	timeout := kafkaAskTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		return nil, context.DeadlineExceeded
	}
	f := b.root.RequestFuture(pid, msg, timeout)
	type answer struct {
		res any
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := f.Result()
		done <- answer{res, err}
	}()
	select {
	case a := <-done:
		if a.err != nil {
			return nil, fmt.Errorf("ask the local broker: %w", a.err)
		}
		return a.res, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// controllerID returns the active controller's host id from the broker's
// DescribeCluster, reused for controllerTTL; -1 when it is unknown (no
// controller elected, or the store did not answer: Kafka clients take -1
// as "no controller", and need it only for admin requests).
func (b *kafkaBackend) controllerID(ctx context.Context) int32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.controllerAt.IsZero() && time.Since(b.controllerAt) < controllerTTL {
		return b.controller
	}
	id := int32(-1)
	res, err := b.ask(ctx, &messages.DescribeClusterRequest{})
	resp, ok := res.(*messages.DescribeClusterResponse)
	switch {
	case err != nil:
	case !ok:
		err = fmt.Errorf("the broker answered %T", res)
	case resp.ErrorCode != messages.ErrorCode_ERROR_CODE_UNSPECIFIED:
		err = fmt.Errorf("describe cluster: %s: %s", resp.ErrorCode, resp.ErrorMessage)
	default:
		id = resp.ControllerId
	}
	if err != nil {
		if ok, n := b.logLimit.Allow("controller", time.Now()); ok {
			b.log.WithError(err).WithField("suppressed", n).Warn("Kafka metadata: controller id unknown; answering -1")
		}
		return id // not cached: ask again next time
	}
	b.controller, b.controllerAt = id, time.Now()
	return id
}

// toClusterMetadata maps the broker's cache to the Kafka listener's
// structs: node id = host id; the brokers are the live hosts with a Kafka
// listener; topics being deleted are left out (clients see
// UNKNOWN_TOPIC_OR_PARTITION, as for a topic Kafka has deleted); offline
// replicas are those on hosts that are not live. Pure apart from logging a
// record it cannot map.
func toClusterMetadata(md *broker.KafkaMetadata, log *logrus.Entry) *kafka.ClusterMetadata {
	out := &kafka.ClusterMetadata{ControllerID: -1}
	live := make(map[int32]bool, len(md.Hosts))
	for _, h := range md.Hosts {
		live[h.GetHostId()] = true
		addr := h.GetKafkaAddress()
		if addr == "" {
			continue // a host without a Kafka listener
		}
		host, ps, err := net.SplitHostPort(addr)
		port, perr := strconv.ParseUint(ps, 10, 16)
		if err != nil || perr != nil {
			// The store validates registrations: not expected.
			log.WithFields(logrus.Fields{"host_id": h.GetHostId(), "kafka_address": addr}).Warn("host registration with a bad Kafka address left out of Kafka metadata")
			continue
		}
		out.Brokers = append(out.Brokers, kafka.Broker{NodeID: h.GetHostId(), Host: host, Port: int32(port), Rack: h.GetRack()})
	}
	for _, t := range md.Topics {
		if t.GetDeleting() {
			continue
		}
		id, err := kafka.ParseTopicID(t.GetTopicId())
		if err != nil {
			log.WithError(err).WithField("topic", t.GetName()).Warn("topic with a malformed id: sent to Kafka clients without one")
		}
		kt := kafka.Topic{Name: t.GetName(), ID: id, Internal: t.GetName() == messages.OffsetsTopic}
		for _, p := range t.GetPartitions() {
			kp := kafka.Partition{
				Partition: p.GetPartition(), Leader: p.GetLeader(), LeaderEpoch: p.GetLeaderEpoch(),
				Replicas: p.GetReplicas(), ISR: p.GetIsr(),
			}
			if kp.Replicas == nil {
				kp.Replicas = []int32{}
			}
			if kp.ISR == nil {
				kp.ISR = []int32{}
			}
			kp.Offline = []int32{}
			for _, r := range p.GetReplicas() {
				if !live[r] {
					kp.Offline = append(kp.Offline, r)
				}
			}
			kt.Partitions = append(kt.Partitions, kp)
		}
		out.Topics = append(out.Topics, kt)
	}
	return out
}

// ReloadTLS re-reads the Kafka listener's TLS files (SIGHUP): new
// connections use the new material, established ones keep theirs. On
// error the current material stays. No TLS: nothing to do.
func (h *Host) ReloadTLS() error {
	if h.tls == nil {
		return nil
	}
	if err := h.tls.Reload(); err != nil {
		return fmt.Errorf("host: reload TLS: %w", err)
	}
	return nil
}

// kafkaScram serves the Kafka listener's SCRAM credentials from the
// metadata store, through a read-through cache (cluster.ScramCache): a
// change made on another host applies here within
// cluster.DefaultScramCacheTTL, one made through this host at once.
// AlterUserScramCredentials goes to the controller, which writes the
// credentials fenced (kafkaacls.go's alterScram).
type kafkaScram struct {
	cache *cluster.ScramCache
	ctrl  scramController
}

// ScramCredential implements kafka.Credentials.
func (k *kafkaScram) ScramCredential(ctx context.Context, user string, mech kafka.ScramMechanism) (kafka.ScramCredential, bool, error) {
	c, ok, err := k.cache.Credential(ctx, user, mech.String())
	if err != nil || !ok {
		return kafka.ScramCredential{}, false, err
	}
	return kafka.ScramCredential{Salt: c.Salt, Iterations: c.Iterations, StoredKey: c.StoredKey, ServerKey: c.ServerKey}, true, nil
}

// DescribeScramUsers implements kafka.ScramUsers.
func (k *kafkaScram) DescribeScramUsers(ctx context.Context, names []string) ([]kafka.ScramUserInfo, error) {
	var users []cluster.ScramUser
	if names == nil {
		all, err := k.cache.Store().ListScramUsers(ctx)
		if err != nil {
			return nil, fmt.Errorf("host: list SCRAM users: %w", err)
		}
		users = all
	} else {
		for _, n := range names {
			u, ok, err := k.cache.Store().GetScramUser(ctx, n)
			if err != nil {
				return nil, fmt.Errorf("host: SCRAM user %q: %w", n, err)
			}
			if ok {
				users = append(users, u)
			}
		}
	}
	out := make([]kafka.ScramUserInfo, 0, len(users))
	for _, u := range users {
		info := kafka.ScramUserInfo{Name: u.Name}
		for _, m := range u.Mechanisms() {
			mech, err := kafka.ParseScramMechanism(m)
			if err != nil {
				continue // validated on read: cannot happen
			}
			info.Credentials = append(info.Credentials, kafka.ScramCredentialInfo{Mechanism: mech, Iterations: u.Credentials[m].Iterations})
		}
		out = append(out, info)
	}
	return out, nil
}

// UpsertScramCredential implements kafka.ScramUsers.
func (k *kafkaScram) UpsertScramCredential(ctx context.Context, user string, mech kafka.ScramMechanism, c kafka.ScramCredential) error {
	defer k.cache.Invalidate(user)
	return alterScram(ctx, k.ctrl, &messages.ScramUpsertion{
		User: user, Mechanism: mech.String(), Salt: c.Salt, Iterations: c.Iterations, StoredKey: c.StoredKey, ServerKey: c.ServerKey,
	}, nil)
}

// DeleteScramCredential implements kafka.ScramUsers.
func (k *kafkaScram) DeleteScramCredential(ctx context.Context, user string, mech kafka.ScramMechanism) error {
	defer k.cache.Invalidate(user)
	return alterScram(ctx, k.ctrl, nil, &messages.ScramDeletion{User: user, Mechanism: mech.String()})
}
