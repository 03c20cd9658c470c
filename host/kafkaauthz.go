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
// User:ANONYMOUS); AuthorizerNone never. Without enforcement the ACL APIs
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

	"github.com/prometheus/client_golang/prometheus"

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

// startACLs starts following the ACLs when the Kafka listener enforces
// them, returning its authorizer and ACL API backend (both nil when it
// does not).
func (h *Host) startACLs() (kafka.Authorizer, kafka.ACLBackend, error) {
	if !h.cfg.enforcesACLs() {
		return nil, nil, nil
	}
	if h.store == nil {
		return nil, nil, fmt.Errorf("host: Kafka ACLs need the metadata store")
	}
	auth, err := acl.New(acl.Config{SuperUsers: slices.Clone(h.cfg.SuperUsers), AllowEveryoneIfNoACLFound: h.cfg.AllowEveryoneIfNoACLFound}, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("host: Kafka ACLs: %w", err)
	}
	log := h.logger.WithField("component", "acls")
	cache := cluster.NewACLCache(h.store, auth, 0, log)
	lctx, cancel := context.WithTimeout(context.Background(), aclLoadTimeout)
	err = cache.Load(lctx)
	cancel()
	if err != nil {
		log.WithError(err).Warn("ACLs not loaded yet: denying all but super users until they are")
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
	log.WithFields(map[string]any{
		"bindings": auth.Len(), "super_users": h.cfg.SuperUsers, "allow_everyone_if_no_acl_found": h.cfg.AllowEveryoneIfNoACLFound,
	}).Info("Kafka listener enforces ACLs")
	return auth, &kafkaACLs{cache: cache}, nil
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
