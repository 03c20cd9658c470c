// kafkaauthz.go: the Kafka listener's authorization (issue 16): the ACL
// bindings from the metadata store, kept current on this host by a
// cluster.ACLCache following the store's watch, decided by an
// acl.Authorizer that every Kafka request passes (kafka/authorize.go),
// and the ACL APIs (CreateAcls, DescribeAcls, DeleteAcls) over the same
// cache.
//
// Whether ACLs are enforced is Config.Authorizer: AuthorizerAuto (the
// default) enforces them when Kafka clients must authenticate (SASL, or
// a required client certificate), as a Kafka cluster with an authorizer
// and authentication; AuthorizerACL always (unauthenticated clients are
// User:ANONYMOUS); AuthorizerNone never.
//
// The actor remote enforces the same ACLs, with the same authorizer, on
// the requests of non-host principals (client.RemoteACL, a receiver
// middleware on the broker, controller, replicas and group coordinators)
// when it verifies its peers' certificates (RemoteTLS) and Authorizer is
// not none; refusals are counted in
// actorlog_remote_authorization_denied_total. Without enforcement the ACL APIs
// are not served, as Kafka answers them without an authorizer
// (SECURITY_DISABLED): bindings can still be written to the store with
// `actorlog acls --etcd-endpoints`, to apply once enforcement is on.

package host

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/internal/acl"
	"github.com/actorlog/actorlog/kafka"
)

// The Kafka listener's authorization modes (Config.Authorizer).
const (
	AuthorizerAuto = "auto"
	AuthorizerACL  = "acl"
	AuthorizerNone = "none"
)

// aclLoadTimeout bounds the first load of the ACLs before the Kafka
// listener serves; on failure it serves on an empty set (denying all but
// super users) and the cache keeps trying.
const aclLoadTimeout = 10 * time.Second

// authorizerDefaults checks c's authorization settings.
func (c *Config) authorizerDefaults() error {
	switch c.Authorizer {
	case "":
		c.Authorizer = AuthorizerAuto
	case AuthorizerAuto, AuthorizerACL, AuthorizerNone:
	default:
		return fmt.Errorf("host: --authorizer %q: want %s, %s or %s", c.Authorizer, AuthorizerAuto, AuthorizerACL, AuthorizerNone)
	}
	for _, p := range c.SuperUsers {
		if err := acl.ValidatePrincipal(p); err != nil || strings.HasSuffix(p, ":*") {
			return fmt.Errorf("host: --super-users: %q is not a principal (want e.g. User:admin or Host:host1)", p)
		}
	}
	return nil
}

// enforcesACLs reports whether the Kafka listener authorizes requests.
func (c *Config) enforcesACLs() bool {
	switch c.Authorizer {
	case AuthorizerACL:
		return true
	case AuthorizerNone:
		return false
	}
	return len(c.KafkaSASLMechanisms) > 0 || c.KafkaClientAuth == KafkaClientAuthRequire
}

// enforcesRemoteACLs reports whether the actor remote authorizes the
// requests of non-host principals (client.RemoteACL): when it verifies
// every peer's certificate (RemoteTLS) and Authorizer is not none. With
// AuthorizerACL but no RemoteTLS every peer, hosts included, would be
// User:ANONYMOUS, so the remote cannot tell clients from hosts: it is not
// enforced, and startAuthorizer warns.
func (c *Config) enforcesRemoteACLs() bool {
	return c.RemoteTLS && c.Authorizer != AuthorizerNone
}

// startAuthorizer starts following the ACLs when the Kafka listener or
// the actor remote enforces them (once; later calls return at once), and
// builds the remote's ACL middleware (h.remoteACL) when the remote does.
func (h *Host) startAuthorizer() error {
	if h.authz != nil {
		return nil
	}
	if h.cfg.Authorizer == AuthorizerACL && !h.cfg.RemoteTLS {
		h.logger.Warn("--authorizer acl: the actor remote does not enforce ACLs without --remote-tls (it cannot tell clients from hosts); Go clients and CLI commands that reach it are not authorized")
	}
	if !h.cfg.enforcesACLs() && !h.cfg.enforcesRemoteACLs() {
		return nil
	}
	if h.store == nil {
		return fmt.Errorf("host: ACLs need the metadata store")
	}
	auth, err := acl.New(acl.Config{SuperUsers: slices.Clone(h.cfg.SuperUsers), AllowEveryoneIfNoACLFound: h.cfg.AllowEveryoneIfNoACLFound}, nil)
	if err != nil {
		return fmt.Errorf("host: ACLs: %w", err)
	}
	log := h.logger.WithField("component", "acls")
	cache := cluster.NewACLCache(h.store, auth, 0, log)
	lctx, cancel := context.WithTimeout(context.Background(), aclLoadTimeout)
	err = cache.Load(lctx)
	cancel()
	if err != nil {
		log.WithError(err).Warn("ACLs not loaded yet: denying all but super users until they are")
	}
	if h.cfg.enforcesRemoteACLs() {
		var onDenied func(acl.Operation, acl.ResourceType)
		if h.metrics != nil {
			onDenied = h.metrics.remoteAuthorizationDenied
		}
		ra, err := client.NewRemoteACL(client.RemoteACLConfig{Authorizer: auth, Logger: h.logger, OnDenied: onDenied})
		if err != nil {
			return fmt.Errorf("host: remote ACLs: %w", err)
		}
		h.remoteACL = ra
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		cache.Run(ctx)
	}()
	h.aclStop = func() {
		stop()
		<-done
	}
	h.authz, h.aclCache = auth, cache
	log.WithFields(map[string]any{
		"bindings": auth.Len(), "super_users": h.cfg.SuperUsers, "allow_everyone_if_no_acl_found": h.cfg.AllowEveryoneIfNoACLFound,
		"kafka_listener": h.cfg.enforcesACLs(), "actor_remote": h.cfg.enforcesRemoteACLs(),
	}).Info("ACLs enforced")
	return nil
}

// remoteMiddleware returns the receiver middleware of the actors that
// serve client requests over the remote: the ACLs when the remote
// enforces them, else none.
func (h *Host) remoteMiddleware() []actor.ReceiverMiddleware {
	if h.remoteACL == nil {
		return nil
	}
	return []actor.ReceiverMiddleware{h.remoteACL.Middleware()}
}

// withRemoteACLs applies remoteMiddleware to props.
func (h *Host) withRemoteACLs(props *actor.Props) *actor.Props {
	if mw := h.remoteMiddleware(); len(mw) > 0 {
		return props.Configure(actor.WithReceiverMiddleware(mw...))
	}
	return props
}

// startACLs returns the Kafka listener's authorizer and ACL API backend
// when it enforces ACLs (both nil when it does not), following the ACLs
// (startAuthorizer) if nothing did yet.
func (h *Host) startACLs() (kafka.Authorizer, kafka.ACLBackend, error) {
	if !h.cfg.enforcesACLs() {
		return nil, nil, nil
	}
	if err := h.startAuthorizer(); err != nil {
		return nil, nil, err
	}
	return h.authz, &kafkaACLs{cache: h.aclCache, ctrl: h.kafkaCtrl}, nil
}

// remoteAuthorizationDenied counts a refused remote request
// (client.RemoteACLConfig.OnDenied).
func (m *Metrics) remoteAuthorizationDenied(op acl.Operation, res acl.ResourceType) {
	m.remoteDenied.WithLabelValues(op.String(), res.String()).Inc()
}

func newRemoteDeniedCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "actorlog_remote_authorization_denied_total",
		Help: "Actor remote requests (or parts of them) from non-host principals refused by the ACLs, by operation and resource type.",
	}, []string{"operation", "resource_type"})
}

// authorizationDenied counts a refused Kafka request (kafka.Config.OnDenied).
func (m *Metrics) authorizationDenied(op acl.Operation, res acl.ResourceType) {
	m.denied.WithLabelValues(op.String(), res.String()).Inc()
}

func newDeniedCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "actorlog_kafka_authorization_denied_total",
		Help: "Kafka requests (or parts of them) refused by the ACLs, by operation and resource type.",
	}, []string{"operation", "resource_type"})
}
