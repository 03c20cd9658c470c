// remote.go: the protoactor remote settings every actorlog process uses,
// host or client (DESIGN §8): gRPC message limits well above the largest
// request, a small endpoint-writer batch, insecure transport credentials
// (set explicitly, because WithDialOptions replaces protoactor's defaults)
// or TLS both ways (WithTLS, remotetls.go),
// the remote guard's interceptors (remoteguard.go, DESIGN §10), a codec
// that does not copy large envelopes (remotecodec.go), the
// connection limits and stream and keepalive bounds of the gRPC server
// (issue 11), and a Start that reports a listen failure as an error
// instead of a panic.

package client

import (
	"fmt"
	"net"
	"strconv"
	"sync/atomic"

	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/keepalive"

	"github.com/actorlog/actorlog/cluster/netlimit"
)

// MaxWireMessage is the gRPC message limit on both sides. Requests and
// responses are kept well below it (fetches ask for at most MaxFetchBytes).
const MaxWireMessage = 128 << 20

// MaxFetchBytes caps the bytes one fetch response may carry.
const MaxFetchBytes = 32 << 20

// Bounds of the remote's gRPC server (issue 11). protoactor opens one
// long-lived Receive stream per peer connection, so a handful of streams
// per connection is all the protocol uses.
const (
	// MaxConcurrentStreams bounds the streams one connection may have
	// open (grpc-go's default is unlimited; HTTP/2 suggests at least 100).
	MaxConcurrentStreams = 100
	// ConnectionTimeout is how long a new connection has to complete
	// the HTTP/2 preface and settings; one that sends nothing is closed
	// after it (grpc-go's default is 120 s).
	ConnectionTimeout = 10 * time.Second
	// MaxConnectionIdle closes a connection that has had no stream open
	// this long (Kafka's connections.max.idle.ms, 10 min). protoactor's
	// peers always hold a stream; an idle connection is someone else's.
	MaxConnectionIdle = 10 * time.Minute
	// KeepaliveTime and KeepaliveTimeout: the server pings a connection
	// silent for KeepaliveTime and closes it when the answer takes longer
	// than KeepaliveTimeout, so connections of vanished peers (a host
	// powered off, a partition) do not hold descriptors for ever.
	KeepaliveTime    = time.Minute
	KeepaliveTimeout = 20 * time.Second
	// KeepaliveMinTime is the shortest ping interval a client may use;
	// faster pingers are sent GOAWAY (protoactor's clients do not ping).
	KeepaliveMinTime = 10 * time.Second
)

// Flow control and buffering of the remote's connections, both as server
// and as dialer (issue 15). protoactor carries every request and answer
// between two processes on one gRPC stream, so that stream's HTTP/2 window
// bounds the bytes in flight between them. grpc-go starts at 64 KiB and
// grows the window from its bandwidth-delay estimate, which on a fast link
// (loopback, a LAN) stays small: a 1 MiB produce request or a 4 MiB fetch
// answer crossed in many window-update round trips, and `perf produce` and
// `perf consume` at 1 KiB ran at about half the speed they reach with a
// static window (scripts/bench.sh, README). A static window of the
// estimator's own ceiling (16 MiB, grpc-go's bdpLimit) keeps the bound on
// what a peer can make a process buffer per connection where it was, and
// lets a stream carry that much without waiting.
const (
	// FlowControlWindow is the initial (and static) HTTP/2 window of each
	// stream and of each connection.
	FlowControlWindow = 16 << 20
	// WriteBufferSize is how much grpc-go gathers before a write(2)
	// (default 32 KiB: 32 system calls per MiB sent). The buffer is shared
	// (grpc.SharedWriteBuffer): a connection takes one from a pool while it
	// writes and returns it after, so idle connections hold none.
	WriteBufferSize = 1 << 20
	// ReadBufferSize is each connection's read buffer (default 32 KiB). It
	// is held for the connection's life: at the default connection limit
	// (512) 64 MiB in all.
	ReadBufferSize = 128 << 10
)

// EndpointWriterInitialQueue is the first size of each endpoint writer's
// mailbox ring (protoactor's goring, which grows by doubling).
const EndpointWriterInitialQueue = 1024

// RemoteOption adjusts the configuration RemoteConfig returns.
type RemoteOption func(*remoteOptions)

type remoteOptions struct {
	guardLogger *logrus.Entry
	limiter     *netlimit.Limiter
	tls         *remoteTLS                 // WithTLS; nil: plain text
	hostNames   func(int32) (string, bool) // WithHostNames
	poolFetch   bool                       // WithPooledFetchAnswers
	fetchUsers  *atomic.Int32              // withFetchPoolSwitch
}

// WithConnectionLimiter counts the remote server's connections against
// limiter (the host shares one between all its listeners). Default: a
// limiter of the remote's own, with netlimit.HostMaxConnections() and
// netlimit.DefaultMaxConnectionsPerIP of that.
func WithConnectionLimiter(limiter *netlimit.Limiter) RemoteOption {
	return func(o *remoteOptions) { o.limiter = limiter }
}

// WithPooledFetchAnswers makes the remote's codec receive every
// FetchResponse envelope of pieceMinBytes or more into a pooled frame of
// its own, as it does produce requests (remotedecode.go), for a host whose
// follower replicas give the frame back once they appended the records
// (actors/replica: follower.go). A host receives fetch answers mostly as
// a follower; a client, whose consumers keep the records they hand over,
// gets one buffer per message batch without it, unless its consumers
// reuse buffers (Client.PoolFetchAnswers).
func WithPooledFetchAnswers() RemoteOption {
	return func(o *remoteOptions) { o.poolFetch = true }
}

// withFetchPoolSwitch makes the remote's codec receive fetch answers into
// pooled frames while users counts more than zero (a client's
// PoolFetchAnswers).
func withFetchPoolSwitch(users *atomic.Int32) RemoteOption {
	return func(o *remoteOptions) { o.fetchUsers = users }
}

// WithGuardLogger sets the logger the remote guard reports refused
// messages and recovered panics to (default: logrus.StandardLogger()).
func WithGuardLogger(log *logrus.Entry) RemoteOption {
	return func(o *remoteOptions) { o.guardLogger = log }
}

// RemoteConfig returns the remote configuration for an endpoint listening on
// listen ("host:port", port 0 for any) and advertised as advertise (empty:
// the listen address). Its gRPC server runs the remote guard
// (remoteguard.go): handler panics are recovered, the unimplemented
// Remoting calls refused, and message batches screened. Its connections
// are limited (WithConnectionLimiter) through the server's transport
// credentials, since protoactor creates the listener itself and takes
// only server options; streams per connection, handshake time and idle
// connections are bounded (the constants above), and a message may be at
// most MaxWireMessage. With WithTLS the server and the connections it
// dials speak TLS (remotetls.go); an invalid TLS setting is an error.
func RemoteConfig(listen, advertise string, options ...RemoteOption) (*remote.Config, error) {
	var ro remoteOptions
	for _, o := range options {
		o(&ro)
	}
	host, portStr, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %w", listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return nil, fmt.Errorf("listen address %q: bad port", listen)
	}
	// The guard drops envelopes whose sender claims to be this process.
	// With port 0 (a client) the address is known only once listening;
	// a client serves no internal requests, so none is needed there.
	self := advertise
	if self == "" && port != 0 {
		self = listen
	}
	guard := newRemoteGuard(ro.guardLogger, self)
	guard.hostName = ro.hostNames
	serverCreds, dialCreds := insecure.NewCredentials(), insecure.NewCredentials()
	if ro.tls != nil {
		if err := ro.tls.validate(); err != nil {
			return nil, fmt.Errorf("remote %s: %w", listen, err)
		}
		guard.tls = true
		serverCreds, dialCreds = ro.tls.serverCredentials(), ro.tls.dialCredentials()
	}
	if ro.limiter == nil {
		total := netlimit.HostMaxConnections()
		if ro.limiter, err = netlimit.New(netlimit.Limits{MaxConnections: total, MaxConnectionsPerIP: netlimit.DefaultMaxConnectionsPerIP(total)}, ro.guardLogger); err != nil {
			return nil, fmt.Errorf("remote %s: connection limits: %w", listen, err)
		}
	}
	opts := []remote.ConfigOption{
		remote.WithServerOptions(
			grpc.MaxRecvMsgSize(MaxWireMessage), grpc.MaxSendMsgSize(MaxWireMessage),
			grpc.ChainUnaryInterceptor(guard.unary), grpc.ChainStreamInterceptor(guard.stream),
			grpc.Creds(ro.limiter.Credentials("remote", serverCreds)),
			grpc.MaxConcurrentStreams(MaxConcurrentStreams),
			grpc.ConnectionTimeout(ConnectionTimeout),
			grpc.KeepaliveParams(keepalive.ServerParameters{
				MaxConnectionIdle: MaxConnectionIdle, Time: KeepaliveTime, Timeout: KeepaliveTimeout,
			}),
			grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: KeepaliveMinTime, PermitWithoutStream: true}),
			grpc.ForceServerCodecV2(remoteCodec{poolFetch: ro.poolFetch, fetchUsers: ro.fetchUsers}), // large envelopes not copied (remotecodec.go)
			grpc.InitialWindowSize(FlowControlWindow), grpc.InitialConnWindowSize(FlowControlWindow),
			grpc.WriteBufferSize(WriteBufferSize), grpc.SharedWriteBuffer(true), grpc.ReadBufferSize(ReadBufferSize),
			experimental.BufferPool(remoteBufferPool), // no clearing (bufpool.go)
		),
		remote.WithDialOptions(
			grpc.WithTransportCredentials(dialCreds),
			grpc.WithInitialWindowSize(FlowControlWindow), grpc.WithInitialConnWindowSize(FlowControlWindow),
			grpc.WithWriteBufferSize(WriteBufferSize), grpc.WithSharedWriteBuffer(true), grpc.WithReadBufferSize(ReadBufferSize),
			experimental.WithBufferPool(remoteBufferPool),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxWireMessage), grpc.MaxCallSendMsgSize(MaxWireMessage),
				grpc.ForceCodecV2(remoteCodec{poolFetch: ro.poolFetch, fetchUsers: ro.fetchUsers})),
		),
		remote.WithEndpointWriterBatchSize(64),
		// The endpoint writer's mailbox is a ring that doubles when full;
		// this is only its first size. 100,000 slots were 1.6 MB zeroed
		// (and page-faulted in) by whichever actor first sent to a new
		// peer, inside that send: on the PVM test VMs, where a first
		// touch of a page costs ~15 µs, a host answering a new client
		// stalled its broker or a replica for ~10-60 ms (issue 15's
		// latency run). EndpointWriterInitialQueue slots cost 16 KiB.
		remote.WithEndpointWriterQueueSize(EndpointWriterInitialQueue),
	}
	if advertise != "" {
		opts = append(opts, remote.WithAdvertisedHost(advertise))
	}
	cfg := remote.Configure(host, port, opts...)
	// One connection attempt per endpoint. protoactor's endpoint writer
	// retries a failed connect MaxRetryCount times, 2 s apart, and each
	// retry dials a new grpc.ClientConn over the last one without closing
	// it: every failure to reach a dead host left MaxRetryCount-1 client
	// connections behind, each redialling that address forever (a long
	// fault run grew the client by ~50 goroutines and several descriptors
	// per 30 failovers). With one attempt the endpoint's only connection is
	// closed when it stops; the next message to the address dials afresh,
	// and callers' own timeouts and HostUp handle the host being away,
	// without 10 s of queueing.
	cfg.MaxRetryCount = 1
	return cfg, nil
}

// StartRemote starts a remote endpoint for system, turning protoactor's
// panic on a listen failure into an error.
func StartRemote(system *actor.ActorSystem, cfg *remote.Config) (r *remote.Remote, err error) {
	r = remote.NewRemote(system, cfg)
	defer func() {
		if p := recover(); p != nil {
			r, err = nil, fmt.Errorf("start remote on %s: %v", cfg.Address(), p)
		}
	}()
	r.Start()
	return r, nil
}
