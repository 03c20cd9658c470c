// Package client is the connection a Go app (or the CLI) holds to an
// actorlog cluster: its own actor system and remote endpoint (replies come
// back to it), a bootstrap list of host addresses, metadata lookups, and the
// blocking admin calls. Producer and consumer actors (actors/producer,
// actors/consumer) run in the same actor system.
package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/internal/tlsconf"
	"github.com/actorlog/actorlog/messages"
)

// ErrUnreachable means no bootstrap host answered.
var ErrUnreachable = errors.New("client: no host reachable")

// Config configures a Client. Bootstrap is required.
type Config struct {
	// Bootstrap lists host addresses ("host:port") to ask for metadata.
	Bootstrap []string
	// Listen is where the client's own endpoint listens (default: port 0
	// on the local address that routes to the first bootstrap host).
	Listen string
	// RequestTimeout bounds one request/response exchange (default 10 s).
	RequestTimeout time.Duration
	// Logger (logrus.StandardLogger when nil).
	Logger *logrus.Entry
	// TLS, when set, makes the client's remote speak TLS with this
	// certificate (remotetls.go): to hosts, which then know the client as
	// its principal (User:<CN>), and on its own endpoint, where it
	// requires and verifies the certificates of the hosts answering it.
	// Needed to reach hosts whose remote runs with TLS.
	TLS *tlsconf.Reloader
}

// Client is a connection to a cluster. Safe for concurrent use.
type Client struct {
	cfg    Config
	system *actor.ActorSystem
	remote *remote.Remote
	logger *logrus.Entry
	corr   atomic.Int64
	closed sync.Once
	health *health
	// lastGood is the index of the bootstrap host that answered last.
	lastGood atomic.Int32
	// coordinators caches the group coordinators found (groups.go).
	coordinators coordinatorCache
	// fetchPoolUsers counts the PoolFetchAnswers callers not yet
	// released; the remote's codec reads it.
	fetchPoolUsers atomic.Int32
}

// withDefaults checks the bootstrap addresses and fills in the request
// timeout and the logger.
func (cfg *Config) withDefaults() error {
	if len(cfg.Bootstrap) == 0 {
		return errors.New("client: empty bootstrap list")
	}
	for _, a := range cfg.Bootstrap {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("client: bootstrap address %q: %w", a, err)
		}
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = logrus.NewEntry(logrus.StandardLogger())
	}
	return nil
}

// New starts the client's actor system and remote endpoint. It does not
// contact the cluster; the first request does.
func New(cfg Config) (*Client, error) {
	if err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	if cfg.Listen == "" {
		cfg.Listen = net.JoinHostPort(localIPFor(cfg.Bootstrap[0]), "0")
	}
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return NewSlogLogger(cfg.Logger.WithField("component", "protoactor"))
	}))
	c := &Client{cfg: cfg, system: system, logger: cfg.Logger, health: newHealth(cfg.Logger, dialProbe)}
	ropts := []RemoteOption{WithGuardLogger(cfg.Logger.WithField("component", "remote-guard")), withFetchPoolSwitch(&c.fetchPoolUsers)}
	if cfg.TLS != nil {
		ropts = append(ropts, WithTLS(cfg.TLS, tls.RequireAndVerifyClientCert))
	}
	rc, err := RemoteConfig(cfg.Listen, "", ropts...)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	r, err := StartRemote(system, rc)
	if err != nil {
		system.Shutdown()
		return nil, fmt.Errorf("client: %w", err)
	}
	c.remote = r
	c.health.subscribe(system.EventStream)
	return c, nil
}

// PoolFetchAnswers has the client's remote receive every large fetch
// answer into a pooled frame of its own until release is called, for a
// consumer that gives each frame back once its records were handled
// (consumer.Config.ReuseBuffers). Calls nest: the frames are pooled while
// any caller has not released. Without it the remote copies each message
// batch it receives into one fresh buffer that the records alias, the
// cheaper choice when nothing gives buffers back. A client attached to a
// host's system (Attach) changes nothing: a host pools fetch answers
// always. release may be called more than once.
func (c *Client) PoolFetchAnswers() (release func()) {
	if c.remote == nil {
		return func() {}
	}
	c.fetchPoolUsers.Add(1)
	var once sync.Once
	return func() { once.Do(func() { c.fetchPoolUsers.Add(-1) }) }
}

// localIPFor returns the local IP that routes to addr (loopback for a
// loopback host), so hosts can reach the client's endpoint.
func localIPFor(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "127.0.0.1"
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() || host == "localhost" {
		return "127.0.0.1"
	}
	c, err := net.Dial("udp", addr) // no packet is sent
	if err != nil {
		return "127.0.0.1"
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP.String()
}

// System is the client's actor system, for spawning producers and consumers.
func (c *Client) System() *actor.ActorSystem { return c.system }

// Logger is the client's logger.
func (c *Client) Logger() *logrus.Entry { return c.logger }

// RequestTimeout is the per-request timeout.
func (c *Client) RequestTimeout() time.Duration { return c.cfg.RequestTimeout }

// NextCorrelationID returns a fresh correlation id.
func (c *Client) NextCorrelationID() int64 { return c.corr.Add(1) }

// Close stops the client's endpoint and actor system (of a client made by
// Attach, only its own subscription). Idempotent.
func (c *Client) Close() {
	c.closed.Do(func() {
		c.health.close(c.system.EventStream)
		if c.remote == nil {
			return // Attach: the system belongs to its owner
		}
		// Not graceful: protoactor's graceful path races on its suspend
		// flag (a data race in the library), and callers flush first.
		c.remote.Shutdown(false)
		c.system.Shutdown()
	})
}

// Request sends msg to pid and waits for the reply (bounded by ctx and the
// request timeout).
func (c *Client) Request(ctx context.Context, pid *actor.PID, msg proto.Message) (any, error) {
	timeout := c.cfg.RequestTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		return nil, context.DeadlineExceeded
	}
	res, err := c.system.Root.RequestFuture(pid, msg, timeout).Result()
	if err != nil {
		return nil, fmt.Errorf("client: %T to %s: %w", msg, pid.Address, err)
	}
	return res, nil
}

// bootstrapRequest sends msg to the actor id on a bootstrap host that
// accepts a TCP connection and answers. It starts with the host that
// answered last, and gives each host a fair share of the time left, so one
// frozen host (which accepts connections but answers nothing) cannot use
// up the whole deadline.
func (c *Client) bootstrapRequest(ctx context.Context, id string, msg proto.Message) (any, error) {
	var errs []string
	n := len(c.cfg.Bootstrap)
	first := int(c.lastGood.Load())
	for i := 0; i < n; i++ {
		idx := (first + i) % n
		addr := c.cfg.Bootstrap[idx]
		actx, cancel := ctx, context.CancelFunc(func() {})
		if dl, ok := ctx.Deadline(); ok && i < n-1 {
			actx, cancel = context.WithTimeout(ctx, time.Until(dl)/time.Duration(n-i))
		} else if !ok && i < n-1 {
			actx, cancel = context.WithTimeout(ctx, c.cfg.RequestTimeout/time.Duration(n-i))
		}
		res, err := c.tryHost(actx, addr, id, msg)
		cancel()
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		c.lastGood.Store(int32(idx))
		return res, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrUnreachable, strings.Join(errs, "; "))
}

// tryHost probes addr with a TCP connection, then sends msg to the actor
// id there and waits for the answer.
func (c *Client) tryHost(ctx context.Context, addr, id string, msg proto.Message) (any, error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if err := conn.Close(); err != nil {
		c.logger.WithError(err).Debug("closing probe connection")
	}
	res, err := c.Request(ctx, actor.NewPID(addr, id), msg)
	if err != nil {
		return nil, explainDeadLetter(ctx, err, addr, c.cfg.TLS != nil)
	}
	return res, nil
}

// Metadata asks a bootstrap host for the metadata of topics (all when none).
func (c *Client) Metadata(ctx context.Context, topics ...string) (*messages.MetadataResponse, error) {
	res, err := c.bootstrapRequest(ctx, messages.BrokerActorID, &messages.MetadataRequest{Topics: topics, CorrelationId: c.NextCorrelationID()})
	if err != nil {
		return nil, err
	}
	md, ok := res.(*messages.MetadataResponse)
	if !ok {
		return nil, fmt.Errorf("client: unexpected metadata reply %T", res)
	}
	return md, nil
}

// admin sends an admin request to a bootstrap host's broker (which
// forwards it to the controller) and checks the reply. NOT_CONTROLLER (no
// controller elected yet, or an election in progress) is retried with
// backoff until ctx ends, as Kafka's admin client does.
func (c *Client) admin(ctx context.Context, msg proto.Message) (*messages.TopicMetadata, error) {
	backoff := 50 * time.Millisecond
	for {
		res, err := c.bootstrapRequest(ctx, messages.BrokerActorID, msg)
		if err != nil {
			return nil, err
		}
		resp, ok := res.(*messages.AdminResponse)
		if !ok {
			return nil, fmt.Errorf("client: unexpected admin reply %T", res)
		}
		if resp.ErrorCode != messages.ErrorCode_ERROR_CODE_NOT_CONTROLLER {
			if err := resp.ErrorCode.Err(resp.ErrorMessage); err != nil {
				return nil, err
			}
			return resp.Topic, nil
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, resp.ErrorCode.Err(resp.ErrorMessage)
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}

// DescribeCluster asks a bootstrap host for the live hosts and the controller.
func (c *Client) DescribeCluster(ctx context.Context) (*messages.DescribeClusterResponse, error) {
	res, err := c.bootstrapRequest(ctx, messages.BrokerActorID, &messages.DescribeClusterRequest{CorrelationId: c.NextCorrelationID()})
	if err != nil {
		return nil, err
	}
	resp, ok := res.(*messages.DescribeClusterResponse)
	if !ok {
		return nil, fmt.Errorf("client: unexpected describe-cluster reply %T", res)
	}
	return resp, resp.ErrorCode.Err(resp.ErrorMessage)
}

// CreateTopic creates a topic.
func (c *Client) CreateTopic(ctx context.Context, name string, partitions, replicationFactor int32, configs map[string]string) (*messages.TopicMetadata, error) {
	return c.admin(ctx, &messages.CreateTopicRequest{Name: name, Partitions: partitions, ReplicationFactor: replicationFactor, Configs: configs, CorrelationId: c.NextCorrelationID()})
}

// DeleteTopic deletes a topic and its data.
func (c *Client) DeleteTopic(ctx context.Context, name string) error {
	_, err := c.admin(ctx, &messages.DeleteTopicRequest{Name: name, CorrelationId: c.NextCorrelationID()})
	return err
}

// CreatePartitions grows a topic to total partitions.
func (c *Client) CreatePartitions(ctx context.Context, name string, total int32) (*messages.TopicMetadata, error) {
	return c.admin(ctx, &messages.CreatePartitionsRequest{Name: name, Total: total, CorrelationId: c.NextCorrelationID()})
}

// AlterTopicConfigs replaces a topic's config overrides.
func (c *Client) AlterTopicConfigs(ctx context.Context, name string, configs map[string]string) (*messages.TopicMetadata, error) {
	return c.admin(ctx, &messages.AlterTopicConfigsRequest{Name: name, Configs: configs, CorrelationId: c.NextCorrelationID()})
}

// LeaderPID returns the PID of a partition's leader replica from metadata.
func LeaderPID(p *messages.PartitionMetadata) (*actor.PID, error) {
	if err := p.ErrorCode.Err("partition " + fmt.Sprint(p.Partition) + " has no leader"); err != nil {
		return nil, err
	}
	if p.LeaderAddress == "" {
		return nil, messages.ErrorCode_ERROR_CODE_LEADER_NOT_AVAILABLE.Err(fmt.Sprintf("partition %d has no leader", p.Partition))
	}
	return actor.NewPID(p.LeaderAddress, p.ReplicaActorId), nil
}

// ListOffsets asks a partition's leader for the offset at ts (-1 latest, -2
// earliest, or a timestamp in ms).
func (c *Client) ListOffsets(ctx context.Context, p *messages.PartitionMetadata, topic string, ts int64) (*messages.ListOffsetsResponse, error) {
	pid, err := LeaderPID(p)
	if err != nil {
		return nil, err
	}
	res, err := c.Request(ctx, pid, &messages.ListOffsetsRequest{Topic: topic, Partition: p.Partition, Timestamp: ts, CurrentLeaderEpoch: p.LeaderEpoch, CorrelationId: c.NextCorrelationID()})
	if err != nil {
		return nil, err
	}
	resp, ok := res.(*messages.ListOffsetsResponse)
	if !ok {
		return nil, fmt.Errorf("client: unexpected list-offsets reply %T", res)
	}
	return resp, resp.ErrorCode.Err(resp.ErrorMessage)
}
