// auth.go: who is asking (issue 16). With Config.Auth the console serves
// only authenticated principals, identified by, in this order:
//
//   - a verified TLS client certificate (the HTTP endpoint with TLS asks
//     for one): User:<CN>, or Host:<CN> for a host certificate, exactly
//     as the Kafka listener derives it (tlsconf.PrincipalFromConnState);
//   - the session cookie a login set (User:<name>);
//   - on /api/v1/ only, HTTP Basic credentials (User:<name>), for scripts.
//
// Passwords (the login form and Basic) are checked against the user's
// SCRAM credential (AuthConfig.Passwords), and are refused over plain HTTP
// unless AuthConfig.PlainPasswords says the endpoint is loopback-only.
// Password checks are rate-limited per client address (a check that
// succeeds gives its token back); failures are logged, rate-limited, and
// reported to AuthConfig.OnLoginFailure.
//
//	GET  /ui/login    the login form (next=PATH: where to go after)
//	POST /ui/login    user, password, csrf, next: sets the session
//	                  cookie (HttpOnly, SameSite=Strict, Secure over TLS,
//	                  SessionTTL) and redirects to next; 401 on wrong
//	                  credentials, 429 when rate-limited, 403 for a
//	                  password over plain HTTP
//	POST /ui/logout   csrf: ends the session, clears the cookie
//
// Sessions are random 256-bit ids kept in memory by this host's console
// (a restart logs everyone out). A form's CSRF token is then bound to its
// session (an HMAC of the session id).

package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/cluster/netlimit"
	"github.com/actorlog/actorlog/internal/acl"
	"github.com/actorlog/actorlog/internal/tlsconf"
)

// PasswordChecker checks a user's password against its stored
// credential. false: wrong password or unknown user; an error: the store
// did not answer.
type PasswordChecker interface {
	CheckPassword(ctx context.Context, user, password string) (bool, error)
}

// AuthConfig turns authentication on (Config.Auth).
type AuthConfig struct {
	// Passwords checks the login form and HTTP Basic; nil: client
	// certificates only.
	Passwords PasswordChecker
	// Authorizer decides what a principal may do (access.go); nil: every
	// authenticated principal may do everything.
	Authorizer Authorizer
	// PlainPasswords allows passwords over plain HTTP (the endpoint
	// listens on loopback only); otherwise they are refused without TLS.
	PlainPasswords bool
	// SessionTTL is a session's lifetime (default DefaultSessionTTL).
	SessionTTL time.Duration
	// LoginBurst and LoginEvery rate-limit password checks per client
	// address: LoginBurst at once, then one per LoginEvery (defaults 10
	// and 6 s).
	LoginBurst int
	LoginEvery time.Duration
	// OnLoginFailure, if set, counts a failed password check by reason
	// (LoginWrong, LoginRateLimited, LoginPlainText, LoginError).
	OnLoginFailure func(reason string)
	// OnDenied, if set, counts a refusal by the Authorizer.
	OnDenied func(op acl.Operation, res acl.ResourceType)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// The reasons of AuthConfig.OnLoginFailure.
const (
	LoginWrong       = "wrong_credentials"
	LoginRateLimited = "rate_limited"
	LoginPlainText   = "plain_text"
	LoginError       = "store_error"
)

const (
	// DefaultSessionTTL is a login session's default lifetime.
	DefaultSessionTTL = 8 * time.Hour
	// SessionCookie is the session cookie's name.
	SessionCookie = "actorlog_session"
	// maxSessions bounds the sessions kept; past it the oldest goes.
	maxSessions = 10000
	// maxLoginAddrs bounds the client addresses rate-limited at once.
	maxLoginAddrs = 10000
	// maxCredentialBytes bounds a user name or password.
	maxCredentialBytes = 1024
	// authLogEvery is the rate of the audit and login-failure log lines,
	// per kind.
	authLogEvery = 10 * time.Second
)

// identity is the authenticated peer of a request.
type identity struct {
	principal tlsconf.Principal
	host      string // the client's IP address
	method    string // "certificate", "session" or "basic"
	session   string // the session id (method "session")
}

type identityKey struct{}

func identityFrom(ctx context.Context) (identity, bool) {
	id, ok := ctx.Value(identityKey{}).(identity)
	return id, ok
}

// PrincipalFrom returns the principal a console request was
// authenticated as; false without authentication.
func PrincipalFrom(ctx context.Context) (tlsconf.Principal, bool) {
	id, ok := identityFrom(ctx)
	return id.principal, ok
}

// auth is a console's authentication state. Safe for concurrent use.
type auth struct {
	cfg    AuthConfig
	log    *logrus.Entry
	key    [32]byte // binds CSRF tokens to sessions
	logLim netlimit.LogLimiter

	mu       sync.Mutex
	sessions map[string]*session
	buckets  map[string]*bucket
}

type session struct {
	principal tlsconf.Principal
	created   time.Time
	expires   time.Time
}

// bucket is one client address's login tokens.
type bucket struct {
	tokens float64
	last   time.Time
}

func newAuth(cfg AuthConfig, log *logrus.Entry) (*auth, error) {
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.LoginBurst <= 0 {
		cfg.LoginBurst = 10
	}
	if cfg.LoginEvery <= 0 {
		cfg.LoginEvery = 6 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	a := &auth{cfg: cfg, log: log, logLim: netlimit.LogLimiter{Every: authLogEvery},
		sessions: map[string]*session{}, buckets: map[string]*bucket{}}
	if _, err := rand.Read(a.key[:]); err != nil {
		return nil, fmt.Errorf("console: session key: %w", err)
	}
	return a, nil
}

// warn logs a line a client can trigger, at most one per kind per
// authLogEvery.
func (a *auth) warn(kind string, fields logrus.Fields, msg string) {
	ok, suppressed := a.logLim.Allow(kind, a.cfg.Now())
	if !ok {
		return
	}
	e := a.log.WithFields(fields)
	if suppressed > 0 {
		e = e.WithField("suppressed", suppressed)
	}
	e.Warn(msg)
}

// denied audits and counts a refusal.
func (a *auth) denied(id identity, p Permission, name, reason string) {
	if a.cfg.OnDenied != nil {
		a.cfg.OnDenied(p.Op, p.Res)
	}
	f := auditFields(id)
	f["operation"], f["resource_type"], f["resource"], f["reason"] = p.Op.String(), p.Res.String(), name, reason
	a.warn("denied", f, "console: request refused by the ACLs")
}

// loginFailed logs and counts a failed password check.
func (a *auth) loginFailed(r *http.Request, user, reason string, err error) {
	if a.cfg.OnLoginFailure != nil {
		a.cfg.OnLoginFailure(reason)
	}
	f := logrus.Fields{"user": user, "client_host": clientHost(r), "reason": reason, "path": r.URL.Path}
	if err != nil {
		f[logrus.ErrorKey] = err
	}
	a.warn("login-"+reason, f, "console: authentication failed")
}

// identify authenticates r, if it can; false with a response written when
// its credentials are refused (a wrong Basic password).
func (a *auth) identify(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	host := clientHost(r)
	with := func(id identity) *http.Request {
		id.host = host
		return r.WithContext(context.WithValue(r.Context(), identityKey{}, id))
	}
	if r.TLS != nil {
		if p, err := tlsconf.PrincipalFromConnState(*r.TLS); err == nil {
			return with(identity{principal: p, method: "certificate"}), true
		}
	}
	if ck, err := r.Cookie(SessionCookie); err == nil {
		if s, ok := a.session(ck.Value); ok {
			return with(identity{principal: s.principal, method: "session", session: ck.Value}), true
		}
	}
	if user, pass, ok := r.BasicAuth(); ok && strings.HasPrefix(r.URL.Path, "/api/") {
		if status, msg := a.checkPassword(r, user, pass); status != 0 {
			if status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Basic realm="actorlog", charset="UTF-8"`)
			}
			writeAuthJSON(w, status, msg)
			return nil, false
		}
		return with(identity{principal: tlsconf.Principal{Kind: tlsconf.PrincipalUser, Name: user}, method: "basic"}), true
	}
	return r, true
}

// writeAuthJSON answers an API authentication failure.
func writeAuthJSON(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, "{\n  \"error\": %q\n}\n", msg) //nolint:errcheck // the client went away
}

// checkPassword checks user's password for r: 0 when right, else the
// status and message to answer.
func (a *auth) checkPassword(r *http.Request, user, pass string) (int, string) {
	if a.cfg.Passwords == nil {
		a.loginFailed(r, user, LoginWrong, nil)
		return http.StatusUnauthorized, "password authentication is not available: present a client certificate"
	}
	if r.TLS == nil && !a.cfg.PlainPasswords {
		a.loginFailed(r, user, LoginPlainText, nil)
		return http.StatusForbidden, "password refused over plain HTTP: use HTTPS (the host's --http-tls)"
	}
	if user == "" || len(user) > maxCredentialBytes || len(pass) > maxCredentialBytes {
		a.loginFailed(r, user, LoginWrong, nil)
		return http.StatusUnauthorized, "wrong user name or password"
	}
	addr := clientHost(r)
	if !a.take(addr) {
		a.loginFailed(r, user, LoginRateLimited, nil)
		return http.StatusTooManyRequests, "too many login attempts from " + addr + ": wait and try again"
	}
	ok, err := a.cfg.Passwords.CheckPassword(r.Context(), user, pass)
	if err != nil {
		a.loginFailed(r, user, LoginError, err)
		return http.StatusServiceUnavailable, "the credential store did not answer: try again"
	}
	if !ok {
		a.loginFailed(r, user, LoginWrong, nil)
		return http.StatusUnauthorized, "wrong user name or password"
	}
	a.give(addr)
	return 0, ""
}

// take takes a login token of addr; false when it has none left.
func (a *auth) take(addr string) bool {
	now := a.cfg.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	b := a.buckets[addr]
	if b == nil {
		if len(a.buckets) >= maxLoginAddrs {
			a.pruneBuckets(now)
		}
		b = &bucket{tokens: float64(a.cfg.LoginBurst), last: now}
		a.buckets[addr] = b
	}
	b.refill(now, a.cfg.LoginBurst, a.cfg.LoginEvery)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// give gives back the token of a successful check.
func (a *auth) give(addr string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if b := a.buckets[addr]; b != nil && b.tokens+1 <= float64(a.cfg.LoginBurst) {
		b.tokens++
	}
}

func (b *bucket) refill(now time.Time, burst int, every time.Duration) {
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(float64(burst), b.tokens+float64(d)/float64(every))
		b.last = now
	}
}

// pruneBuckets drops full buckets, then, if still too many, all. Called
// with a.mu held.
func (a *auth) pruneBuckets(now time.Time) {
	for k, b := range a.buckets {
		b.refill(now, a.cfg.LoginBurst, a.cfg.LoginEvery)
		if b.tokens >= float64(a.cfg.LoginBurst) {
			delete(a.buckets, k)
		}
	}
	if len(a.buckets) >= maxLoginAddrs {
		clear(a.buckets)
	}
}

// newSession starts a session of p and returns its id.
func (a *auth) newSession(p tlsconf.Principal) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("console: session id: %w", err)
	}
	id := hex.EncodeToString(b[:])
	now := a.cfg.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.sessions) >= maxSessions {
		oldest := ""
		for k, s := range a.sessions {
			if !now.Before(s.expires) {
				delete(a.sessions, k)
			} else if oldest == "" || s.created.Before(a.sessions[oldest].created) {
				oldest = k
			}
		}
		if len(a.sessions) >= maxSessions {
			delete(a.sessions, oldest)
		}
	}
	a.sessions[id] = &session{principal: p, created: now, expires: now.Add(a.cfg.SessionTTL)}
	return id, nil
}

// session returns the live session of id.
func (a *auth) session(id string) (session, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[id]
	if !ok {
		return session{}, false
	}
	if !a.cfg.Now().Before(s.expires) {
		delete(a.sessions, id)
		return session{}, false
	}
	return *s, true
}

// endSession ends the session of id.
func (a *auth) endSession(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.sessions, id)
}

// csrfToken is the form token of r: bound to its session when it has one,
// else the console's.
func (c *Console) csrfToken(r *http.Request) string {
	if c.auth != nil {
		if id, ok := identityFrom(r.Context()); ok && id.session != "" {
			mac := hmac.New(sha256.New, c.auth.key[:])
			mac.Write([]byte("csrf\x00" + id.session))
			return hex.EncodeToString(mac.Sum(nil))
		}
	}
	return c.token
}

// unauthenticated answers a request without a principal: 401 JSON under
// /api/, a redirect to the login page for a page, else a 401 page.
func (a *auth) unauthenticated(c *Console, w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/api/") {
		w.Header().Set("WWW-Authenticate", `Basic realm="actorlog", charset="UTF-8"`)
		c.writeJSON(w, r, http.StatusUnauthorized, map[string]string{"error": "authentication required: a session cookie, a client certificate or HTTP Basic credentials"})
		return
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		http.Redirect(w, r, "/ui/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return
	}
	c.renderError(w, r, &httpError{status: http.StatusUnauthorized, msg: "log in first"})
}

// loginData is the login page's data.
type loginData struct {
	Next    string
	User    string
	Error   string
	Enabled bool // authentication is on
	// Passwords: the form can be used on this connection.
	Passwords bool
}

// safeNext is the console path to go to after a login: next when it is a
// console page, else /ui/.
func safeNext(next string) string {
	if strings.HasPrefix(next, "/ui/") && !strings.HasPrefix(next, "/ui/login") && !strings.ContainsAny(next, "\\\r\n") {
		return next
	}
	return "/ui/"
}

// loginPage is GET /ui/login.
func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	c.renderLogin(w, r, http.StatusOK, loginData{Next: safeNext(r.URL.Query().Get("next"))}, "")
}

func (c *Console) renderLogin(w http.ResponseWriter, r *http.Request, status int, d loginData, notice string) {
	if c.auth == nil {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	}
	d.Enabled = true
	d.Passwords = c.auth.cfg.Passwords != nil && (r.TLS != nil || c.auth.cfg.PlainPasswords)
	pd := &pageData{Title: "Log in", Nav: "login", CSRF: c.csrfToken(r), ReadOnly: c.cfg.ReadOnly, Notice: notice, Data: d}
	if p, ok := PrincipalFrom(r.Context()); ok {
		pd.User = p.String()
	}
	c.render(w, r, status, "login", pd)
}

// login is POST /ui/login.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if c.auth == nil {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := c.checkFormOrigin(r); err != nil {
		c.renderError(w, r, err)
		return
	}
	user := r.PostForm.Get("user")
	d := loginData{Next: safeNext(r.PostForm.Get("next")), User: user}
	if status, msg := c.auth.checkPassword(r, user, r.PostForm.Get("password")); status != 0 {
		d.Error = msg
		c.renderLogin(w, r, status, d, "")
		return
	}
	p := tlsconf.Principal{Kind: tlsconf.PrincipalUser, Name: user}
	id, err := c.auth.newSession(p)
	if err != nil {
		c.renderError(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: id, Path: "/", MaxAge: int(c.auth.cfg.SessionTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	c.log.WithFields(logrus.Fields{"principal": p.String(), "client_host": clientHost(r)}).Info("console: logged in")
	http.Redirect(w, r, d.Next, http.StatusSeeOther)
}

// logout is POST /ui/logout.
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if c.auth == nil {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := c.checkFormOrigin(r); err != nil {
		c.renderError(w, r, err)
		return
	}
	if id, ok := identityFrom(r.Context()); ok && id.session != "" {
		c.auth.endSession(id.session)
		c.log.WithFields(logrus.Fields{"principal": id.principal.String(), "client_host": id.host}).Info("console: logged out")
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	// The request's own identity is gone: render the form as a stranger.
	r = r.WithContext(context.WithValue(r.Context(), identityKey{}, nil))
	c.renderLogin(w, r, http.StatusOK, loginData{Next: "/ui/"}, "Logged out.")
}
