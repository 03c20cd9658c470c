// sasl.go: SASL authentication on the listener (issue 16): the SASL
// settings of the Config, the credential lookup it asks, the per-connection
// state machine and the principal handlers see.
//
// With SASL enabled (Config.SASL.Mechanisms not empty), a connection must
// authenticate before anything else: until it has, only ApiVersions,
// SaslHandshake and SaslAuthenticate are served and any other request
// closes the connection, as Kafka does. The exchange:
//
//	SaslHandshake(mechanism)   UNSUPPORTED_SASL_MECHANISM with the
//	                           mechanisms usable on this connection when
//	                           it is not one of them (PLAIN only over TLS)
//	SaslAuthenticate(...)      PLAIN: one round; SCRAM: client-first →
//	                           server-first, client-final → server-final
//
// Wrong credentials are answered SASL_AUTHENTICATION_FAILED with the
// message "authentication failed" (an unknown user gets exactly the same
// answer, at the same step, as a wrong password: SCRAM goes on with a decoy
// credential), and the connection is closed after that response. A
// malformed SASL message or a request out of order (ILLEGAL_SASL_STATE) is
// answered and closes the connection too. Re-authentication (KIP-368) is
// not offered: session_lifetime_ms is 0.
//
// The authenticated principal is User:<name>; without SASL it is the one
// of a verified TLS client certificate, if any (tls.go). Handlers read it
// with PrincipalFrom on their context.

package kafka

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/actorlog/actorlog/internal/tlsconf"
)

// Credentials looks up the stored SCRAM credentials of users. It is asked
// once or twice per authentication, from the connection's reader; it
// should answer from a cache (an unauthenticated peer can make it ask at
// will). Implementations must be safe for concurrent use.
type Credentials interface {
	// ScramCredential returns user's credential for mech; false when the
	// user has none for it. An error is a local fault (the store does not
	// answer): the connection is closed without an answer.
	ScramCredential(ctx context.Context, user string, mech ScramMechanism) (ScramCredential, bool, error)
}

// ScramUserInfo describes one user's SCRAM credentials (never the keys).
type ScramUserInfo struct {
	Name        string
	Credentials []ScramCredentialInfo
}

// ScramCredentialInfo is one mechanism of a user and its iteration count.
type ScramCredentialInfo struct {
	Mechanism  ScramMechanism
	Iterations int32
}

// ErrUnknownScramUser is returned (wrapped) by ScramUsers for a user, or
// a user's mechanism, that has no credential.
var ErrUnknownScramUser = errors.New("kafka: unknown SCRAM user")

// ScramUsers manages the stored SCRAM credentials for
// DescribeUserScramCredentials and AlterUserScramCredentials. Safe for
// concurrent use.
type ScramUsers interface {
	// DescribeScramUsers returns the named users (all users when names is
	// nil), by name; a named user without credentials is left out.
	DescribeScramUsers(ctx context.Context, names []string) ([]ScramUserInfo, error)
	// UpsertScramCredential sets user's credential for mech.
	UpsertScramCredential(ctx context.Context, user string, mech ScramMechanism, cred ScramCredential) error
	// DeleteScramCredential removes user's credential for mech; an error
	// wrapping ErrUnknownScramUser when there is none.
	DeleteScramCredential(ctx context.Context, user string, mech ScramMechanism) error
}

// SASLConfig are the SASL settings of the listener.
type SASLConfig struct {
	// Mechanisms are the enabled mechanisms: MechanismScramSHA256,
	// MechanismScramSHA512, MechanismPlain. Empty: SASL is off and
	// connections are not authenticated (beyond a TLS client
	// certificate).
	Mechanisms []string
	// Credentials looks the users up. Required when Mechanisms is set.
	// PLAIN checks the password against the user's SCRAM-SHA-512
	// credential, else its SCRAM-SHA-256 one (no plain password is
	// stored).
	Credentials Credentials
	// Users, when set (with Mechanisms), serves
	// DescribeUserScramCredentials and AlterUserScramCredentials. Until
	// ACLs exist, any authenticated client may call them.
	Users ScramUsers
	// LookupTimeout bounds one credential lookup. Default 10 s.
	LookupTimeout time.Duration
}

// enabled reports whether SASL is on.
func (s SASLConfig) enabled() bool { return len(s.Mechanisms) > 0 }

// defaultSASLLookupTimeout is SASLConfig.LookupTimeout's default.
const defaultSASLLookupTimeout = 10 * time.Second

// validate checks the SASL settings.
func (s SASLConfig) validate() error {
	if !s.enabled() {
		if s.Users != nil {
			return fmt.Errorf("%w: SCRAM user management needs SASL mechanisms", ErrBadConfig)
		}
		return nil
	}
	for i, m := range s.Mechanisms {
		switch m {
		case MechanismPlain, MechanismScramSHA256, MechanismScramSHA512:
		default:
			return fmt.Errorf("%w: SASL mechanism %q: want %s, %s or %s", ErrBadConfig, m, MechanismScramSHA256, MechanismScramSHA512, MechanismPlain)
		}
		if slices.Contains(s.Mechanisms[:i], m) {
			return fmt.Errorf("%w: SASL mechanism %s listed twice", ErrBadConfig, m)
		}
	}
	if s.Credentials == nil {
		return fmt.Errorf("%w: SASL needs a credential lookup", ErrBadConfig)
	}
	if s.LookupTimeout < 0 {
		return fmt.Errorf("%w: SASL lookup timeout %v: want positive", ErrBadConfig, s.LookupTimeout)
	}
	return nil
}

// ParseSASLMechanisms parses a comma-separated mechanism list ("" or
// whitespace: none), upper-casing the names; unknown names are an error.
func ParseSASLMechanisms(s string) ([]string, error) {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		f = strings.ToUpper(strings.TrimSpace(f))
		if f == "" {
			continue
		}
		switch f {
		case MechanismPlain, MechanismScramSHA256, MechanismScramSHA512:
		default:
			return nil, fmt.Errorf("kafka: SASL mechanism %q: want %s, %s or %s", f, MechanismScramSHA256, MechanismScramSHA512, MechanismPlain)
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out, nil
}

// saslEnabled is the enabled test of SaslHandshake and SaslAuthenticate.
func saslEnabled(cfg *Config) bool { return cfg.SASL.enabled() }

// scramUsersEnabled is the enabled test of the SCRAM user APIs.
func scramUsersEnabled(cfg *Config) bool { return cfg.SASL.enabled() && cfg.SASL.Users != nil }

// Principals for PrincipalFrom.
type principalKey struct{}

// PrincipalFrom returns the authenticated principal of the connection a
// handler's context belongs to: User:<name> after SASL, else the principal
// of a verified TLS client certificate (User:<CN> or Host:<CN>). false when
// the connection is not authenticated (Kafka's User:ANONYMOUS).
func PrincipalFrom(ctx context.Context) (tlsconf.Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(*atomic.Pointer[tlsconf.Principal])
	if !ok {
		return tlsconf.Principal{}, false
	}
	if cur := p.Load(); cur != nil {
		return *cur, true
	}
	return tlsconf.Principal{}, false
}

// saslStage is where a connection is in its authentication.
type saslStage uint8

const (
	saslBegin      saslStage = iota // nothing yet: ApiVersions or SaslHandshake
	saslPlainAuth                   // handshake PLAIN done: SaslAuthenticate
	saslScramFirst                  // handshake SCRAM done: client-first
	saslScramFinal                  // server-first sent: client-final
	saslDone                        // authenticated
	saslFailed                      // failed: the connection is closing
)

// saslState is a connection's authentication. Only the reader goroutine
// touches it (handlers of SaslHandshake and SaslAuthenticate run there,
// synchronously: until the connection is authenticated nothing else is
// served, so waiting for a lookup holds nothing up).
type saslState struct {
	stage saslStage
	mech  ScramMechanism // SCRAM stages
	scram *scramServer   // saslScramFinal
	user  string         // saslScramFinal: the user being authenticated
}

// allowed reports whether a request for key may be served at this stage;
// a request that may not closes the connection.
func (s *saslState) allowed(key int16) bool {
	switch s.stage {
	case saslDone:
		return true
	case saslFailed:
		return false
	}
	return key == apiVersionsKey || key == saslHandshakeKey || key == saslAuthenticateKey
}

// decoySecret keys the decoy credentials of unknown users; per process,
// so an unknown user's salt is stable while the process runs.
var decoySecret = func() []byte {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("kafka: random decoy secret: %v", err))
	}
	return b
}()

// reasonAuth and reasonTLS key the log lines about failed
// authentications and TLS handshakes.
const (
	reasonAuth      = "sasl_authentication_failed"
	reasonAuthState = "sasl_illegal_state"
	// reasonAuthorization: a refused acks=0 Produce (authorize.go).
	reasonAuthorization = "not_authorized"
	reasonTLS           = "tls_handshake_failed"
	reasonAuthLookup    = "sasl_lookup_failed"
)

// authFailedMessage is the one message of every failed authentication.
const authFailedMessage = "authentication failed"
