// console_auth_test.go: the HTTP endpoint over TLS and the web console's
// authentication and ACLs on a real in-process host (httptls.go,
// console/auth.go, console/access.go): HTTPS with the dev certificates,
// plain HTTP to the TLS port refused, /healthz and /metrics open, login
// with a SCRAM user's right and wrong password, the session cookie and
// logout, HTTP Basic on /api/v1, a client certificate as the principal,
// actions allowed and refused by ACLs stored in etcd (nothing changed on
// refusal), and the configurations a host refuses to start with.

package host

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/console"
	"github.com/actorlog/actorlog/internal/acl"
	"github.com/actorlog/actorlog/internal/certs"
	"github.com/actorlog/actorlog/kafka"
)

func TestConsoleSecurityConfig(t *testing.T) {
	dir := t.TempDir()
	if _, err := certs.Init(certs.InitOptions{Dir: dir, Hosts: []string{"host-1"}}); err != nil {
		t.Fatal(err)
	}
	tlsFiles := func(c *Config) {
		c.TLSCert, c.TLSKey, c.TLSCA = filepath.Join(dir, "host-1.crt"), filepath.Join(dir, "host-1.key"), filepath.Join(dir, certs.CACertFile)
	}
	sasl := func(c *Config) { c.KafkaSASLMechanisms = []string{kafka.MechanismScramSHA512} }
	for _, tc := range []struct {
		name    string
		prepare []func(*Config)
		wantErr string
		auth    bool
		served  bool
	}{
		{name: "no security: console on loopback, no auth", served: true},
		{name: "SASL on loopback plain HTTP", prepare: []func(*Config){sasl}, auth: true, served: true},
		{name: "SASL, console on beyond loopback without TLS", prepare: []func(*Config){sasl, func(c *Config) { c.HTTP, c.Console = "0.0.0.0:7080", ConsoleOn }},
			wantErr: "is not loopback and has no TLS"},
		{name: "remote TLS, console on beyond loopback without TLS", prepare: []func(*Config){tlsFiles, func(c *Config) { c.RemoteTLS, c.HTTP, c.Console = true, "10.0.0.1:7080", ConsoleOn }},
			wantErr: "is not loopback and has no TLS"},
		{name: "SASL beyond loopback, console auto: off", prepare: []func(*Config){sasl, func(c *Config) { c.HTTP = "0.0.0.0:7080" }}, auth: true},
		{name: "SASL beyond loopback with --http-tls, console auto: on", prepare: []func(*Config){sasl, tlsFiles, func(c *Config) { c.HTTP, c.HTTPTLS = "0.0.0.0:7080", true }}, auth: true, served: true},
		{name: "no auth beyond loopback with --http-tls, console auto: off", prepare: []func(*Config){tlsFiles, func(c *Config) { c.HTTP, c.HTTPTLS = "0.0.0.0:7080", true }}},
		{name: "--http-tls without TLS files", prepare: []func(*Config){func(c *Config) { c.HTTPTLS = true }}, wantErr: "--http-tls needs --tls-cert"},
		{name: "--http-tls with --http off", prepare: []func(*Config){tlsFiles, func(c *Config) { c.HTTPTLS, c.HTTP = true, "off" }}, wantErr: "--http is off"},
		{name: "authorizer acl", prepare: []func(*Config){func(c *Config) { c.Authorizer = AuthorizerACL }}, auth: true, served: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Config
			for _, p := range tc.prepare {
				p(&c)
			}
			got, err := c.withDefaults()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("withDefaults: %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("withDefaults: %v", err)
			}
			if got.consoleAuth() != tc.auth || got.consoleServed() != tc.served {
				t.Fatalf("console auth %v served %v, want %v %v", got.consoleAuth(), got.consoleServed(), tc.auth, tc.served)
			}
		})
	}
}

// TestConsoleRefusesPlainTextBeyondLoopbackAtStart: Start itself fails,
// before binding anything, for a console that would take passwords over
// a non-loopback plain-text --http.
func TestConsoleRefusesPlainTextBeyondLoopbackAtStart(t *testing.T) {
	ctx, cancel := context30s()
	defer cancel()
	h, err := Start(ctx, Config{Name: "host-1", DataDir: t.TempDir(), HTTP: "0.0.0.0:0", Console: ConsoleOn,
		KafkaSASLMechanisms: []string{kafka.MechanismScramSHA512}, Logger: clustertest.Logger(t).Logger})
	if err == nil {
		if serr := h.Shutdown(ctx); serr != nil {
			t.Errorf("shutdown: %v", serr)
		}
		t.Fatal("host started with a password-taking console on a plain-text non-loopback --http")
	}
	if !strings.Contains(err.Error(), "--http-tls") {
		t.Fatalf("start error %q does not say how to fix it (--http-tls)", err)
	}
}

// secureHost starts a host with SASL (so the console authenticates),
// TLS on its HTTP endpoint, users alice and bob, and client
// certificates in dir.
func secureHost(t *testing.T) (h *Host, dir string) {
	t.Helper()
	dir = t.TempDir()
	if _, err := certs.Init(certs.InitOptions{Dir: dir, Hosts: []string{"host-1"}, Clients: []string{"alice", "bob"}}); err != nil {
		t.Fatal(err)
	}
	h = startTestHost(t, func(c *Config) {
		c.TLSCert, c.TLSKey, c.TLSCA = filepath.Join(dir, "host-1.crt"), filepath.Join(dir, "host-1.key"), filepath.Join(dir, certs.CACertFile)
		c.HTTPTLS = true
		c.KafkaListen = KafkaOff
		c.KafkaSASLMechanisms = []string{kafka.MechanismScramSHA512, kafka.MechanismScramSHA256}
	})
	ctx, cancel := context30s()
	defer cancel()
	for user, mech := range map[string]kafka.ScramMechanism{"alice": kafka.ScramSHA512, "bob": kafka.ScramSHA256} {
		kc, err := kafka.NewScramCredential(mech, user+"-pw", kafka.MinScramIterations)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.store.PutScramCredential(ctx, user, mech.String(), cluster.ScramCredential{Salt: kc.Salt, Iterations: kc.Iterations, StoredKey: kc.StoredKey, ServerKey: kc.ServerKey}); err != nil {
			t.Fatalf("create SCRAM user %s: %v", user, err)
		}
	}
	bindings := []acl.Binding{
		{Principal: "User:alice", Host: "*", Resource: acl.ResourceTopic, Name: "orders", Pattern: acl.PatternLiteral, Operation: acl.OpAll, Permission: acl.Allow},
		{Principal: "User:alice", Host: "*", Resource: acl.ResourceCluster, Name: acl.ClusterName, Pattern: acl.PatternLiteral, Operation: acl.OpDescribe, Permission: acl.Allow},
		{Principal: "User:bob", Host: "*", Resource: acl.ResourceTopic, Name: "orders", Pattern: acl.PatternLiteral, Operation: acl.OpDescribe, Permission: acl.Allow},
	}
	if err := h.store.AddACLs(ctx, bindings); err != nil {
		t.Fatalf("add ACLs: %v", err)
	}
	clustertest.WaitFor(t, 15*time.Second, func() error {
		if h.authz == nil || h.authz.Len() != len(bindings) {
			return fmt.Errorf("the host's authorizer does not have the %d bindings yet", len(bindings))
		}
		return nil
	})
	return h, dir
}

// httpsClient trusts dir's CA and presents user's certificate ("" none).
func httpsClient(t *testing.T, dir, user string) *http.Client {
	t.Helper()
	ca, err := os.ReadFile(filepath.Join(dir, certs.CACertFile))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("no CA certificate")
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if user != "" {
		kp, err := tls.LoadX509KeyPair(filepath.Join(dir, user+".crt"), filepath.Join(dir, user+".key"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{kp}
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// call is one request: status, response, body.
func call(t *testing.T, c *http.Client, method, u string, form url.Values, mod func(*http.Request)) (int, *http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if mod != nil {
		mod(req)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp, string(b)
}

var hostCSRF = regexp.MustCompile(`name="csrf" value="([0-9a-f]{64})"`)

func TestConsoleSecurityOnRealHost(t *testing.T) {
	h, dir := secureHost(t)
	base := "https://" + h.cfg.HTTP
	anon := httpsClient(t, dir, "")

	// /healthz and /metrics stay open over HTTPS without a certificate.
	for _, p := range []string{"/healthz", "/metrics"} {
		if code, _, body := call(t, anon, http.MethodGet, base+p, nil, nil); code != http.StatusOK && code != http.StatusServiceUnavailable {
			t.Fatalf("GET %s over HTTPS: %d %s", p, code, body)
		}
	}
	// Plain HTTP to the TLS port is refused.
	code, _, body := call(t, &http.Client{Timeout: 10 * time.Second}, http.MethodGet, "http://"+h.cfg.HTTP+"/healthz", nil, nil)
	if code != http.StatusBadRequest || !strings.Contains(body, "Client sent an HTTP request to an HTTPS server") {
		t.Fatalf("plain HTTP to the TLS port: %d %s", code, body)
	}

	// The console wants a principal.
	if code, _, _ := call(t, anon, http.MethodGet, base+"/api/v1/topics", nil, nil); code != http.StatusUnauthorized {
		t.Fatalf("API without credentials: %d, want 401", code)
	}
	// Basic: wrong then right password (bob's SCRAM-SHA-256 credential).
	basic := func(user, pass string) func(*http.Request) {
		return func(r *http.Request) { r.SetBasicAuth(user, pass) }
	}
	if code, _, _ := call(t, anon, http.MethodGet, base+"/api/v1/topics", nil, basic("bob", "alice-pw")); code != http.StatusUnauthorized {
		t.Fatalf("Basic with a wrong password: %d, want 401", code)
	}
	if code, _, body := call(t, anon, http.MethodGet, base+"/api/v1/topics", nil, basic("bob", "bob-pw")); code != http.StatusOK {
		t.Fatalf("Basic with bob's password: %d %s", code, body)
	}

	// Login form: wrong password, then right; the cookie is Secure.
	_, _, page := call(t, anon, http.MethodGet, base+"/ui/login", nil, nil)
	m := hostCSRF.FindStringSubmatch(page)
	if m == nil || !strings.Contains(page, `name="password"`) {
		t.Fatalf("login page over HTTPS: %s", page)
	}
	login := url.Values{"csrf": {m[1]}, "user": {"alice"}, "password": {"wrong"}, "next": {"/ui/topics"}}
	if code, _, _ := call(t, anon, http.MethodPost, base+"/ui/login", login, nil); code != http.StatusUnauthorized {
		t.Fatalf("login with a wrong password: %d, want 401", code)
	}
	login.Set("password", "alice-pw")
	code, resp, body := call(t, anon, http.MethodPost, base+"/ui/login", login, nil)
	var ck *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == console.SessionCookie {
			ck = c
		}
	}
	if code != http.StatusSeeOther || ck == nil || !ck.Secure || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
		t.Fatalf("login: %d cookie %+v %s", code, ck, body)
	}
	alice := func(r *http.Request) { r.AddCookie(ck) }
	if code, _, body := call(t, anon, http.MethodGet, base+"/api/v1/cluster", nil, alice); code != http.StatusOK {
		t.Fatalf("cluster API with alice's session: %d %s", code, body)
	}
	_, _, page = call(t, anon, http.MethodGet, base+"/ui/topics", nil, alice)
	m = hostCSRF.FindStringSubmatch(page)
	if m == nil || !strings.Contains(page, "User:alice") {
		t.Fatalf("topics page of alice: %s", page)
	}
	aliceTok := m[1]

	// Create: orders is allowed (ALL on it), others are not.
	create := func(name string) int {
		code, _, _ := call(t, anon, http.MethodPost, base+"/ui/topics", url.Values{"csrf": {aliceTok}, "name": {name}, "partitions": {"1"}, "replication_factor": {"1"}}, alice)
		return code
	}
	if code := create("forbidden-topic"); code != http.StatusForbidden {
		t.Fatalf("alice creates forbidden-topic: %d, want 403", code)
	}
	if code := create("orders"); code != http.StatusSeeOther {
		t.Fatalf("alice creates orders: %d, want 303", code)
	}
	clustertest.WaitFor(t, 15*time.Second, func() error {
		code, _, body := call(t, anon, http.MethodGet, base+"/api/v1/topics/orders", nil, alice)
		if code != http.StatusOK {
			return fmt.Errorf("topic orders: %d %s", code, body)
		}
		return nil
	})
	code, _, body = call(t, anon, http.MethodGet, base+"/api/v1/topics", nil, alice)
	if code != http.StatusOK || strings.Contains(body, "forbidden-topic") || !strings.Contains(body, `"orders"`) {
		t.Fatalf("alice's topics: %d %s", code, body)
	}

	// bob by client certificate: may see orders, not delete it.
	bob := httpsClient(t, dir, "bob")
	_, _, page = call(t, bob, http.MethodGet, base+"/ui/topics/orders", nil, nil)
	m = hostCSRF.FindStringSubmatch(page)
	if m == nil || !strings.Contains(page, "User:bob") {
		t.Fatalf("topic page for bob's certificate: %s", page)
	}
	code, _, body = call(t, bob, http.MethodPost, base+"/ui/topics/orders/delete", url.Values{"csrf": {m[1]}, "confirm": {"orders"}}, nil)
	if code != http.StatusForbidden || !strings.Contains(body, "User:bob may not DELETE topic") {
		t.Fatalf("bob deletes orders: %d %s", code, body)
	}
	code, _, body = call(t, bob, http.MethodGet, base+"/api/v1/topics/orders/records", nil, nil)
	if code != http.StatusForbidden || !strings.Contains(body, "may not READ topic") {
		t.Fatalf("bob reads orders: %d %s", code, body)
	}
	if code, _, body := call(t, anon, http.MethodGet, base+"/api/v1/topics/orders", nil, alice); code != http.StatusOK {
		t.Fatalf("orders after bob's refused delete: %d %s", code, body)
	}

	// The refusals and failures are counted in /metrics.
	_, _, metrics := call(t, anon, http.MethodGet, base+"/metrics", nil, nil)
	for _, want := range []string{
		`actorlog_console_login_failures_total{reason="wrong_credentials"} 2`,
		`actorlog_console_authorization_denied_total{operation="DELETE",resource_type="TOPIC"} 1`,
		`actorlog_console_authorization_denied_total{operation="CREATE",resource_type="TOPIC"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// Logout ends alice's session.
	code, _, _ = call(t, anon, http.MethodPost, base+"/ui/logout", url.Values{"csrf": {aliceTok}}, alice)
	if code != http.StatusOK {
		t.Fatalf("logout: %d", code)
	}
	if code, _, _ := call(t, anon, http.MethodGet, base+"/api/v1/cluster", nil, alice); code != http.StatusUnauthorized {
		t.Fatalf("API with the ended session: %d, want 401", code)
	}

	// SIGHUP's reload keeps serving HTTPS.
	if err := h.ReloadTLS(); err != nil {
		t.Fatalf("reload TLS: %v", err)
	}
	if code, _, _ := call(t, httpsClient(t, dir, ""), http.MethodGet, base+"/healthz", nil, nil); code != http.StatusOK && code != http.StatusServiceUnavailable {
		t.Fatalf("HTTPS after the reload: %d", code)
	}
}
