// sasl_apis.go: SaslHandshake (key 17) and SaslAuthenticate (key 36), both
// served only with SASL enabled (Config.SASL.Mechanisms).
//
// SaslHandshake: advertised v0-1, served v1. v0 (the raw, unframed
// authentication that follows it) is answered UNSUPPORTED_VERSION with the
// mechanisms (every client of the last years uses v1; Kafka 4 removed v0).
// The mechanism must be enabled and usable on the connection (PLAIN only
// over TLS), else UNSUPPORTED_SASL_MECHANISM with the list of those that
// are. A handshake once the connection is past its own handshake is
// ILLEGAL_SASL_STATE, and closes it.
//
// SaslAuthenticate: v0-2 (v1 adds session_lifetime_ms, always 0: no
// re-authentication; v2 is flexible). PLAIN: "authzid\0user\0password",
// the authzid empty or equal to the user, checked against the user's
// SCRAM credential. SCRAM: two rounds (sasl_scram.go). Wrong credentials:
// SASL_AUTHENTICATION_FAILED, "authentication failed", then the
// connection closes; a malformed message also answers
// SASL_AUTHENTICATION_FAILED (with what is wrong) and closes. Before a
// handshake: ILLEGAL_SASL_STATE, and the connection closes.
//
// Error codes: UNSUPPORTED_VERSION (35), UNSUPPORTED_SASL_MECHANISM (33),
// ILLEGAL_SASL_STATE (34), SASL_AUTHENTICATION_FAILED (58).

package kafka

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/internal/tlsconf"
)

const (
	saslHandshakeKey    = 17
	saslAuthenticateKey = 36
)

func init() {
	register(api{key: saslHandshakeKey, servedMin: 1, servedMax: 1, advertisedMin: 0, advertisedMax: 1,
		handle: handleSaslHandshake, unsupported: saslHandshakeV0, enabled: saslEnabled})
	register(api{key: saslAuthenticateKey, servedMin: 0, servedMax: 2, advertisedMin: 0, advertisedMax: 2,
		handle: handleSaslAuthenticate, enabled: saslEnabled})
}

// usableMechanisms are the enabled mechanisms a connection may use: PLAIN
// only over TLS.
func (c *conn) usableMechanisms() []string {
	var out []string
	for _, m := range c.srv.cfg.SASL.Mechanisms {
		if m == MechanismPlain && !c.isTLS {
			continue
		}
		out = append(out, m)
	}
	return out
}

// saslHandshakeV0 answers a v0 handshake: not served.
func saslHandshakeV0(r *request) reply {
	resp := r.kreq.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	return respond(resp)
}

func handleSaslHandshake(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	usable := c.usableMechanisms()
	resp.SupportedMechanisms = usable
	if c.sasl.stage != saslBegin {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return c.authFail(r, resp, reasonAuthState, fmt.Errorf("SASL handshake in stage %d", c.sasl.stage))
	}
	switch req.Mechanism {
	case MechanismPlain:
		if !slices.Contains(usable, req.Mechanism) {
			break
		}
		c.sasl.stage = saslPlainAuth
		return respond(resp)
	case MechanismScramSHA256, MechanismScramSHA512:
		if !slices.Contains(usable, req.Mechanism) {
			break
		}
		c.sasl.stage = saslScramFirst
		c.sasl.mech = ScramSHA256
		if req.Mechanism == MechanismScramSHA512 {
			c.sasl.mech = ScramSHA512
		}
		return respond(resp)
	}
	// Kafka answers and keeps the connection: the client may try another.
	resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
	return respond(resp)
}

func handleSaslAuthenticate(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	ctx, cancel := context.WithTimeout(c.ctx, c.srv.cfg.SASL.LookupTimeout)
	defer cancel()
	switch c.sasl.stage {
	case saslPlainAuth:
		user, ok, err := c.authPlain(ctx, req.SASLAuthBytes)
		if err != nil {
			return c.lookupFailed(err)
		}
		if !ok {
			return c.authFailed(r, resp, user, nil)
		}
		return c.authenticated(resp, user)
	case saslScramFirst:
		cf, err := parseScramClientFirst(req.SASLAuthBytes)
		if err != nil {
			return c.authFailed(r, resp, "", err)
		}
		cred, found, err := c.srv.cfg.SASL.Credentials.ScramCredential(ctx, cf.user, c.sasl.mech)
		if err != nil {
			return c.lookupFailed(err)
		}
		if !found || len(cred.Salt) == 0 || cred.Iterations < 1 {
			cred = decoyScramCredential(decoySecret, c.sasl.mech, cf.user)
		}
		s, err := newScramServer(c.sasl.mech, cred, cf)
		if err != nil {
			return failed(reasonHandler, err)
		}
		c.sasl.stage, c.sasl.scram, c.sasl.user = saslScramFinal, s, cf.user
		resp.SASLAuthBytes = []byte(s.serverFirst)
		return respond(resp)
	case saslScramFinal:
		sf, err := c.sasl.scram.final(req.SASLAuthBytes)
		c.sasl.scram = nil
		if err != nil {
			if errors.Is(err, errScramProof) {
				err = nil
			}
			return c.authFailed(r, resp, c.sasl.user, err)
		}
		resp.SASLAuthBytes = []byte(sf)
		return c.authenticated(resp, c.sasl.user)
	default:
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = kmsg.StringPtr("SaslAuthenticate before a SaslHandshake")
		return c.authFail(r, resp, reasonAuthState, fmt.Errorf("SASL authenticate in stage %d", c.sasl.stage))
	}
}

// authPlain checks a PLAIN message; user is the user it names.
func (c *conn) authPlain(ctx context.Context, msg []byte) (user string, ok bool, err error) {
	parts := bytes.SplitN(msg, []byte{0}, 3)
	if len(parts) != 3 || len(parts[1]) == 0 || (len(parts[0]) > 0 && !bytes.Equal(parts[0], parts[1])) {
		return "", false, nil
	}
	user, pass := string(parts[1]), string(parts[2])
	for _, m := range []ScramMechanism{ScramSHA512, ScramSHA256} {
		cred, found, err := c.srv.cfg.SASL.Credentials.ScramCredential(ctx, user, m)
		if err != nil {
			return user, false, err
		}
		if found {
			return user, VerifyPassword(m, cred, pass), nil
		}
	}
	// Unknown user: spend the time a check takes, so the answer's delay
	// does not tell unknown users from wrong passwords.
	VerifyPassword(ScramSHA512, decoyScramCredential(decoySecret, ScramSHA512, user), pass)
	return user, false, nil
}

// authenticated completes the authentication of user.
func (c *conn) authenticated(resp *kmsg.SASLAuthenticateResponse, user string) reply {
	c.sasl.stage, c.sasl.user = saslDone, ""
	p := tlsconf.Principal{Kind: tlsconf.PrincipalUser, Name: user}
	c.principal.Store(&p)
	c.srv.log.WithFields(c.fields(nil)).WithField("principal", p.String()).Debug("Kafka connection authenticated")
	return respond(resp)
}

// authFailed answers a failed authentication of user (empty when the
// message did not parse; detail is what was malformed, nil for wrong
// credentials) and closes the connection after the answer.
func (c *conn) authFailed(r *request, resp *kmsg.SASLAuthenticateResponse, user string, detail error) reply {
	resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
	resp.ErrorMessage = kmsg.StringPtr(authFailedMessage)
	err := errors.New("authentication failed: wrong credentials or unknown user")
	if detail != nil {
		err = fmt.Errorf("authentication failed: %w", detail)
	}
	if user != "" {
		err = fmt.Errorf("user %q: %w", user, err)
	}
	return c.authFail(r, resp, reasonAuth, err)
}

// authFail marks the connection failed and answers resp, closing the
// connection afterwards; err is logged, rate-limited by reason.
func (c *conn) authFail(r *request, resp kmsg.Response, reason string, err error) reply {
	c.sasl.stage, c.sasl.scram = saslFailed, nil
	c.srv.warn(reason, c.fields(&r.header), "closing Kafka connection after its answer: "+err.Error())
	return reply{now: outcome{resp: resp, closeAfter: true}}
}

// lookupFailed closes the connection on a credential lookup that did not
// answer (a local fault: the client retries on another connection).
func (c *conn) lookupFailed(err error) reply {
	c.sasl.stage, c.sasl.scram = saslFailed, nil
	return failed(reasonAuthLookup, fmt.Errorf("SASL credential lookup: %w", err))
}
