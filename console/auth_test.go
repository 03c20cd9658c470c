// auth_test.go: the console's authentication (auth.go) and authorization
// (access.go) over the fake cluster: the access table covers every route,
// logins with right and wrong passwords, the session cookie and logout,
// HTTP Basic on the API, passwords refused over plain HTTP, the login
// rate limit, client certificates, and every action allowed or refused by
// real ACLs with nothing changed on refusal.

package console

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/actorlog/actorlog/internal/acl"
	"github.com/actorlog/actorlog/internal/certs"
	"github.com/actorlog/actorlog/internal/tlsconf"
)

// TestEveryRouteHasAnAccessEntry reads the patterns console.go registers
// and checks each has exactly one Routes entry, and each entry a route.
func TestEveryRouteHasAnAccessEntry(t *testing.T) {
	src, err := os.ReadFile("console.go")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^\s*(?:m\.)?(?:handle|handleFunc|Handle|HandleFunc)\("([^"]+)"`)
	var registered []string
	for _, m := range re.FindAllStringSubmatch(string(src), -1) {
		registered = append(registered, m[1])
	}
	if len(registered) < 20 {
		t.Fatalf("found %d routes in console.go, want at least 20: %v", len(registered), registered)
	}
	for _, p := range registered {
		if _, ok := Routes[p]; !ok {
			t.Errorf("route %q has no entry in Routes", p)
		}
	}
	for p, acc := range Routes {
		if !slices.Contains(registered, p) {
			t.Errorf("Routes entry %q names no registered route", p)
		}
		if acc.Open && len(acc.Need) > 0 {
			t.Errorf("Routes entry %q is open but needs %v", p, acc.Need)
		}
		if strings.HasPrefix(p, "POST ") && !acc.Open && len(acc.Need) == 0 {
			t.Errorf("form %q changes something but needs no permission", p)
		}
	}
	// A route without an entry is refused at registration.
	c := &Console{}
	if err := c.handle(http.NewServeMux(), "GET /ui/nowhere", http.NotFoundHandler()); err == nil {
		t.Error("registering a route without an access entry: no error")
	}
}

// fakePasswords knows user → password.
type fakePasswords struct {
	mu     sync.Mutex
	users  map[string]string
	checks int
}

func (f *fakePasswords) CheckPassword(_ context.Context, user, password string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checks++
	p, ok := f.users[user]
	return ok && p == password, nil
}

// authCounters records the auth hooks.
type authCounters struct {
	mu       sync.Mutex
	failures map[string]int
	denied   []string
}

func (a *authCounters) failure(reason string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.failures[reason]++
}

func (a *authCounters) deny(op acl.Operation, res acl.ResourceType) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.denied = append(a.denied, op.String()+" "+res.String())
}

func (a *authCounters) failuresOf(reason string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.failures[reason]
}

func (a *authCounters) deniedCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.denied)
}

type authEnv struct {
	srv      *httptest.Server
	fake     *fakeCluster
	console  *Console
	counters *authCounters
	authz    *acl.Authorizer
}

// newAuthConsole serves a console with authentication over a fake
// cluster; users alice/alice-pw, bob/bob-pw and admin/admin-pw (a super
// user); bindings are the ACLs.
func newAuthConsole(t *testing.T, tune func(*AuthConfig), bindings ...acl.Binding) *authEnv {
	t.Helper()
	f := newFake()
	authz, err := acl.New(acl.Config{SuperUsers: []string{"User:admin"}}, bindings)
	if err != nil {
		t.Fatal(err)
	}
	counters := &authCounters{failures: map[string]int{}}
	ac := &AuthConfig{
		Passwords:      &fakePasswords{users: map[string]string{"alice": "alice-pw", "bob": "bob-pw", "admin": "admin-pw"}},
		Authorizer:     authz,
		PlainPasswords: true,
		OnLoginFailure: counters.failure,
		OnDenied:       counters.deny,
	}
	if tune != nil {
		tune(ac)
	}
	c, err := New(Config{Sources: Sources{Cluster: f, Offsets: f, Records: f, Admin: f, Groups: f, GroupAdmin: f, Producer: f}, Auth: ac})
	if err != nil {
		t.Fatalf("new console: %v", err)
	}
	mux := http.NewServeMux()
	c.Mount(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &authEnv{srv: srv, fake: f, console: c, counters: counters, authz: authz}
}

// browser is a client with a session cookie (or Basic credentials).
type browser struct {
	t      *testing.T
	base   string
	client *http.Client
	cookie *http.Cookie
	user   string
	pass   string
}

func newBrowser(t *testing.T, base string, client *http.Client) *browser {
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &browser{t: t, base: base, client: &c}
}

// do sends a request: the status, the response and its body.
func (b *browser) do(method, path string, form url.Values) (int, *http.Response, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if b.cookie != nil {
		req.AddCookie(b.cookie)
	}
	if b.user != "" {
		req.SetBasicAuth(b.user, b.pass)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return resp.StatusCode, resp, string(out)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]{64})"`)

// token reads a form token from a page.
func (b *browser) token(path string) string {
	b.t.Helper()
	code, _, body := b.do(http.MethodGet, path, nil)
	m := csrfRE.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		b.t.Fatalf("GET %s: %d, no form token: %s", path, code, body)
	}
	return m[1]
}

// login logs in through the form; the status.
func (b *browser) login(user, pass string) int {
	b.t.Helper()
	tok := b.token("/ui/login")
	code, resp, body := b.do(http.MethodPost, "/ui/login", url.Values{"csrf": {tok}, "user": {user}, "password": {pass}, "next": {"/ui/topics"}})
	if code != http.StatusSeeOther {
		b.t.Logf("login %s: %d %s", user, code, body)
		return code
	}
	for _, c := range resp.Cookies() {
		if c.Name == SessionCookie {
			b.cookie = c
		}
	}
	if b.cookie == nil {
		b.t.Fatalf("login %s: no session cookie", user)
	}
	return code
}

func TestLoginSessionAndLogout(t *testing.T) {
	env := newAuthConsole(t, nil, acl.Binding{Principal: "User:alice", Host: "*", Resource: acl.ResourceTopic, Name: "*", Pattern: acl.PatternLiteral, Operation: acl.OpAll, Permission: acl.Allow})
	b := newBrowser(t, env.srv.URL, nil)

	// Without a principal: pages go to the login form, the API is 401,
	// static files and the login page are open.
	code, resp, _ := b.do(http.MethodGet, "/ui/topics?x=1", nil)
	if code != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/login?next="+url.QueryEscape("/ui/topics?x=1") {
		t.Fatalf("GET /ui/topics unauthenticated: %d to %q", code, resp.Header.Get("Location"))
	}
	code, resp, body := b.do(http.MethodGet, "/api/v1/topics", nil)
	if code != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") || !strings.Contains(body, "authentication required") {
		t.Fatalf("GET /api/v1/topics unauthenticated: %d %q %s", code, resp.Header.Get("WWW-Authenticate"), body)
	}
	if code, _, _ := b.do(http.MethodGet, "/ui/static/console.css", nil); code != http.StatusOK {
		t.Fatalf("static file unauthenticated: %d", code)
	}
	if code, _, _ := b.do(http.MethodPost, "/ui/topics", url.Values{"name": {"x"}}); code != http.StatusUnauthorized {
		t.Fatalf("POST unauthenticated: %d, want 401", code)
	}

	// A wrong password, an unknown user, a login without the form token.
	if code := b.login("alice", "wrong"); code != http.StatusUnauthorized {
		t.Fatalf("wrong password: %d, want 401", code)
	}
	if code := b.login("mallory", "alice-pw"); code != http.StatusUnauthorized {
		t.Fatalf("unknown user: %d, want 401", code)
	}
	if n := env.counters.failuresOf(LoginWrong); n != 2 {
		t.Fatalf("wrong-credential failures counted: %d, want 2", n)
	}
	if code, _, _ := b.do(http.MethodPost, "/ui/login", url.Values{"user": {"alice"}, "password": {"alice-pw"}}); code != http.StatusForbidden {
		t.Fatalf("login without the form token: %d, want 403", code)
	}

	// The right password: a session cookie, then pages with the user.
	if code := b.login("alice", "alice-pw"); code != http.StatusSeeOther {
		t.Fatalf("login: %d", code)
	}
	ck := b.cookie
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Secure || ck.MaxAge != int(DefaultSessionTTL/time.Second) || len(ck.Value) != 64 {
		t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, not Secure over plain HTTP, 8 h, 256-bit id", ck)
	}
	code, _, body = b.do(http.MethodGet, "/ui/topics", nil)
	if code != http.StatusOK || !strings.Contains(body, "User:alice") || !strings.Contains(body, `action="/ui/logout"`) {
		t.Fatalf("topics page with the session: %d %s", code, body)
	}
	// The session's form token differs from the console's and works.
	tok := b.token("/ui/topics")
	if tok == env.console.token {
		t.Fatal("the session's form token is the console's shared one")
	}
	code, resp, _ = b.do(http.MethodPost, "/ui/topics", url.Values{"csrf": {tok}, "name": {"fresh"}, "partitions": {"1"}, "replication_factor": {"1"}})
	if code != http.StatusSeeOther {
		t.Fatalf("create with the session: %d", code)
	}
	if code, _, _ := b.do(http.MethodPost, "/ui/topics", url.Values{"csrf": {env.console.token}, "name": {"fresh2"}, "partitions": {"1"}, "replication_factor": {"1"}}); code != http.StatusForbidden {
		t.Fatalf("create with the shared token instead of the session's: %d, want 403", code)
	}

	// Logout ends the session: the same cookie is refused afterwards.
	code, resp, body = b.do(http.MethodPost, "/ui/logout", url.Values{"csrf": {tok}})
	if code != http.StatusOK || !strings.Contains(body, "Logged out.") {
		t.Fatalf("logout: %d %s", code, body)
	}
	cleared := false
	for _, c := range resp.Cookies() {
		cleared = cleared || (c.Name == SessionCookie && c.MaxAge < 0)
	}
	if !cleared {
		t.Fatal("logout did not clear the cookie")
	}
	if code, _, _ := b.do(http.MethodGet, "/ui/topics", nil); code != http.StatusSeeOther {
		t.Fatalf("GET with the ended session: %d, want a redirect to the login", code)
	}
}

func TestSessionExpires(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	env := newAuthConsole(t, func(a *AuthConfig) { a.Now, a.SessionTTL = clock, time.Hour })
	b := newBrowser(t, env.srv.URL, nil)
	if code := b.login("admin", "admin-pw"); code != http.StatusSeeOther {
		t.Fatalf("login: %d", code)
	}
	if code, _, _ := b.do(http.MethodGet, "/api/v1/topics", nil); code != http.StatusOK {
		t.Fatalf("API with the session: %d", code)
	}
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	if code, _, _ := b.do(http.MethodGet, "/api/v1/topics", nil); code != http.StatusUnauthorized {
		t.Fatalf("API with an expired session: %d, want 401", code)
	}
}

func TestBasicAuthOnAPI(t *testing.T) {
	env := newAuthConsole(t, nil)
	b := newBrowser(t, env.srv.URL, nil)
	b.user, b.pass = "admin", "admin-pw"
	code, _, body := b.do(http.MethodGet, "/api/v1/topics", nil)
	if code != http.StatusOK {
		t.Fatalf("API with Basic: %d %s", code, body)
	}
	if !strings.Contains(body, `"orders"`) {
		t.Fatalf("API with Basic: %s", body)
	}
	b.pass = "nope"
	code, resp, _ := b.do(http.MethodGet, "/api/v1/topics", nil)
	if code != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("API with a wrong Basic password: %d", code)
	}
	// Basic is for the API only: pages want a login.
	b.pass = "admin-pw"
	if code, _, _ := b.do(http.MethodGet, "/ui/topics", nil); code != http.StatusSeeOther {
		t.Fatalf("page with Basic: %d, want a redirect to the login", code)
	}
}

func TestPasswordsRefusedOverPlainHTTP(t *testing.T) {
	env := newAuthConsole(t, func(a *AuthConfig) { a.PlainPasswords = false })
	b := newBrowser(t, env.srv.URL, nil)
	code, _, body := b.do(http.MethodGet, "/ui/login", nil)
	if code != http.StatusOK || strings.Contains(body, `name="password"`) || !strings.Contains(body, "needs HTTPS") {
		t.Fatalf("login page over plain HTTP: %d %s", code, body)
	}
	// The page has no form; the console's shared token (no session) is valid.
	form := url.Values{"user": {"admin"}, "password": {"admin-pw"}, "csrf": {env.console.token}}
	code, _, body = b.do(http.MethodPost, "/ui/login", form)
	if code != http.StatusForbidden || !strings.Contains(body, "plain HTTP") {
		t.Fatalf("password login over plain HTTP: %d %s", code, body)
	}
	b.user, b.pass = "admin", "admin-pw"
	if code, _, _ := b.do(http.MethodGet, "/api/v1/topics", nil); code != http.StatusForbidden {
		t.Fatalf("Basic over plain HTTP: %d, want 403", code)
	}
	if n := env.counters.failuresOf(LoginPlainText); n != 2 {
		t.Fatalf("plain-text failures counted: %d, want 2", n)
	}
}

func TestLoginRateLimited(t *testing.T) {
	env := newAuthConsole(t, func(a *AuthConfig) { a.LoginBurst, a.LoginEvery = 3, time.Hour })
	b := newBrowser(t, env.srv.URL, nil)
	// Successes give their token back.
	for range 5 {
		if code := b.login("admin", "admin-pw"); code != http.StatusSeeOther {
			t.Fatalf("login: %d", code)
		}
	}
	for i := range 3 {
		if code := b.login("admin", fmt.Sprint("wrong", i)); code != http.StatusUnauthorized {
			t.Fatalf("wrong password %d: %d, want 401", i, code)
		}
	}
	checks := env.console.auth.cfg.Passwords.(*fakePasswords)
	checks.mu.Lock()
	before := checks.checks
	checks.mu.Unlock()
	if code := b.login("admin", "admin-pw"); code != http.StatusTooManyRequests {
		t.Fatalf("login past the limit: %d, want 429", code)
	}
	checks.mu.Lock()
	after := checks.checks
	checks.mu.Unlock()
	if after != before {
		t.Fatal("a rate-limited login still checked the password")
	}
	if env.counters.failuresOf(LoginRateLimited) != 1 {
		t.Fatalf("rate-limited failures: %d, want 1", env.counters.failuresOf(LoginRateLimited))
	}
}

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"/ui/topics?x=1":       "/ui/topics?x=1",
		"":                     "/ui/",
		"//evil.example/ui/":   "/ui/",
		"https://evil.example": "/ui/",
		"/ui/login?next=/ui/":  "/ui/",
		"/api/v1/topics":       "/ui/",
		"/ui/\\evil":           "/ui/",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

// allow is an ALLOW binding of principal for op on a literal resource.
func allow(principal string, op acl.Operation, res acl.ResourceType, name string) acl.Binding {
	return acl.Binding{Principal: principal, Host: "*", Resource: res, Name: name, Pattern: acl.PatternLiteral, Operation: op, Permission: acl.Allow}
}

func TestActionsAuthorizedByACLs(t *testing.T) {
	const alice, bob = "User:alice", "User:bob"
	env := newAuthConsole(t, nil,
		// alice: everything on orders and the billing group, creates
		// topics by name, reads the cluster.
		allow(alice, acl.OpAll, acl.ResourceTopic, "orders"),
		allow(alice, acl.OpAll, acl.ResourceGroup, "billing"),
		allow(alice, acl.OpCreate, acl.ResourceTopic, "alice-new"),
		allow(alice, acl.OpDescribe, acl.ResourceCluster, acl.ClusterName),
		// bob: only describes orders.
		allow(bob, acl.OpDescribe, acl.ResourceTopic, "orders"),
		allow(bob, acl.OpDescribe, acl.ResourceGroup, "billing"),
	)
	a := newBrowser(t, env.srv.URL, nil)
	if a.login("alice", "alice-pw") != http.StatusSeeOther {
		t.Fatal("alice cannot log in")
	}
	b := newBrowser(t, env.srv.URL, nil)
	if b.login("bob", "bob-pw") != http.StatusSeeOther {
		t.Fatal("bob cannot log in")
	}
	atok, btok := a.token("/ui/topics"), b.token("/ui/topics")

	// Reads: lists filtered, pages refused with the operation named.
	getAs := func(br *browser, path string, want int, contains string) string {
		t.Helper()
		code, _, body := br.do(http.MethodGet, path, nil)
		if code != want || !strings.Contains(body, contains) {
			t.Fatalf("GET %s: %d (want %d) without %q: %s", path, code, want, contains, body)
		}
		return body
	}
	body := getAs(b, "/api/v1/topics", http.StatusOK, `"orders"`)
	if strings.Contains(body, `"logs"`) {
		t.Fatalf("bob's topic list shows logs, which he may not describe: %s", body)
	}
	getAs(b, "/api/v1/cluster", http.StatusForbidden, "User:bob may not DESCRIBE the cluster")
	getAs(b, "/ui/", http.StatusForbidden, "may not DESCRIBE the cluster")
	getAs(a, "/api/v1/cluster", http.StatusOK, `"controller_id"`)
	getAs(b, "/api/v1/topics/logs", http.StatusForbidden, `may not DESCRIBE topic \"logs\"`)
	getAs(b, "/api/v1/topics/orders", http.StatusOK, `"configs": {}`) // no DESCRIBE_CONFIGS
	getAs(a, "/api/v1/topics/orders", http.StatusOK, `"min.insync.replicas"`)
	getAs(b, "/api/v1/topics/orders/records", http.StatusForbidden, "may not READ topic")
	getAs(b, "/ui/topics/orders/records", http.StatusForbidden, "may not READ topic")
	getAs(a, "/api/v1/topics/orders/records", http.StatusOK, `"records"`)
	body = getAs(b, "/api/v1/groups", http.StatusOK, `"billing"`)
	if strings.Contains(body, `"audit"`) {
		t.Fatalf("bob's group list shows audit: %s", body)
	}
	getAs(b, "/api/v1/groups/audit", http.StatusForbidden, `may not DESCRIBE group \"audit\"`)
	// bob may describe billing and orders: its offsets of orders show.
	getAs(b, "/api/v1/groups/billing", http.StatusOK, `"orders"`)

	// Forms: refused for bob with nothing changed, allowed for alice.
	calls := len(env.fake.adminCalls())
	deniedBefore := env.counters.deniedCount()
	for _, tc := range []struct {
		path string
		form url.Values
		op   string
	}{
		{"/ui/topics", url.Values{"name": {"bob-new"}, "partitions": {"1"}, "replication_factor": {"1"}}, `may not CREATE topic "bob-new"`},
		{"/ui/topics/orders/partitions", url.Values{"total": {"9"}}, "may not ALTER topic"},
		{"/ui/topics/orders/delete", url.Values{"confirm": {"orders"}}, "may not DELETE topic"},
		{"/ui/topics/orders/configs", url.Values{"set": {"retention.ms=1000"}}, "may not ALTER_CONFIGS topic"},
		{"/ui/topics/orders/produce", url.Values{"value": {"v"}}, "may not WRITE topic"},
		{"/ui/groups/billing/reset-offsets", url.Values{"confirm": {"billing"}, "to": {"earliest"}, "topic": {"orders"}}, `may not READ group "billing"`},
	} {
		tc.form.Set("csrf", btok)
		code, _, body := b.do(http.MethodPost, tc.path, tc.form)
		if code != http.StatusForbidden || !strings.Contains(body, strings.ReplaceAll(tc.op, `"`, "&#34;")) {
			t.Errorf("bob POST %s: %d, want 403 naming %q: %s", tc.path, code, tc.op, body)
		}
	}
	if got := env.fake.adminCalls(); len(got) != calls {
		t.Fatalf("refused forms changed something: %v", got[calls:])
	}
	if n := len(env.fake.records[tpKey("orders", 0)]); n != 0 {
		t.Fatalf("a refused produce wrote %d records", n)
	}
	if n := env.counters.deniedCount() - deniedBefore; n != 6 {
		t.Fatalf("refusals counted: %d, want 6", n)
	}

	for _, tc := range []struct {
		path string
		form url.Values
		want int
	}{
		{"/ui/topics", url.Values{"name": {"alice-new"}, "partitions": {"1"}, "replication_factor": {"1"}}, http.StatusSeeOther},
		{"/ui/topics", url.Values{"name": {"other-new"}, "partitions": {"1"}, "replication_factor": {"1"}}, http.StatusForbidden},
		{"/ui/topics/orders/produce", url.Values{"value": {"v"}}, http.StatusSeeOther},
		{"/ui/topics/orders/configs", url.Values{"set": {"retention.ms=1000"}}, http.StatusSeeOther},
		{"/ui/topics/orders/partitions", url.Values{"total": {"9"}}, http.StatusSeeOther},
		{"/ui/groups/billing/reset-offsets", url.Values{"confirm": {"billing"}, "to": {"earliest"}, "topic": {"orders"}}, http.StatusConflict}, // has members: allowed, then refused by the cluster
		{"/ui/groups/audit/reset-offsets", url.Values{"confirm": {"audit"}, "to": {"earliest"}}, http.StatusForbidden},
		{"/ui/topics/logs/delete", url.Values{"confirm": {"logs"}}, http.StatusForbidden},
		{"/ui/topics/orders/delete", url.Values{"confirm": {"orders"}}, http.StatusSeeOther},
	} {
		tc.form.Set("csrf", atok)
		if code, _, body := a.do(http.MethodPost, tc.path, tc.form); code != tc.want {
			t.Errorf("alice POST %s %v: %d, want %d: %s", tc.path, tc.form, code, tc.want, body)
		}
	}
	if _, ok := env.fake.topics["orders"]; ok {
		t.Error("alice's delete of orders did not happen")
	}
	if _, ok := env.fake.topics["logs"]; !ok {
		t.Error("alice's refused delete of logs happened")
	}
}

// TestResetOffsetsOfEveryTopicNeedsReadOnEach: a reset without a topic
// resets every committed topic, so READ is checked on each.
func TestResetOffsetsOfEveryTopicNeedsReadOnEach(t *testing.T) {
	const carol = "User:carol"
	env := newAuthConsole(t, func(a *AuthConfig) {
		a.Passwords = &fakePasswords{users: map[string]string{"carol": "pw"}}
	}, allow(carol, acl.OpAll, acl.ResourceGroup, "audit"), allow(carol, acl.OpDescribe, acl.ResourceTopic, "logs"))
	b := newBrowser(t, env.srv.URL, nil)
	if b.login("carol", "pw") != http.StatusSeeOther {
		t.Fatal("login")
	}
	tok := b.token("/ui/groups")
	calls := len(env.fake.adminCalls())
	code, _, body := b.do(http.MethodPost, "/ui/groups/audit/reset-offsets", url.Values{"csrf": {tok}, "confirm": {"audit"}, "to": {"earliest"}})
	if code != http.StatusForbidden || !strings.Contains(body, "may not READ topic &#34;logs&#34;") {
		t.Fatalf("reset of every topic without READ on logs: %d %s", code, body)
	}
	if got := env.fake.adminCalls(); len(got) != calls {
		t.Fatalf("the refused reset changed something: %v", got[calls:])
	}
	if err := env.authz.SetBindings(append(env.authz.Bindings(), allow(carol, acl.OpRead, acl.ResourceTopic, "logs"))); err != nil {
		t.Fatal(err)
	}
	if code, _, body := b.do(http.MethodPost, "/ui/groups/audit/reset-offsets", url.Values{"csrf": {tok}, "confirm": {"audit"}, "to": {"earliest"}}); code != http.StatusSeeOther {
		t.Fatalf("reset with READ on logs: %d %s", code, body)
	}
}

// TestClientCertificatePrincipal serves the console over TLS asking for
// client certificates: a verified one is the principal, without a login.
func TestClientCertificatePrincipal(t *testing.T) {
	dir := t.TempDir()
	if _, err := certs.Init(certs.InitOptions{Dir: dir, Hosts: []string{"host-1"}, Clients: []string{"alice"}}); err != nil {
		t.Fatalf("certs: %v", err)
	}
	ca := filepath.Join(dir, certs.CACertFile)
	srvTLS, err := tlsconf.NewReloader(tlsconf.Files{Cert: filepath.Join(dir, "host-1.crt"), Key: filepath.Join(dir, "host-1.key"), CA: ca}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cliTLS, err := tlsconf.NewReloader(tlsconf.Files{Cert: filepath.Join(dir, "alice.crt"), Key: filepath.Join(dir, "alice.key"), CA: ca}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := newFake()
	authz, err := acl.New(acl.Config{}, []acl.Binding{allow("User:alice", acl.OpDescribe, acl.ResourceTopic, "orders")})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Sources: Sources{Cluster: f, Offsets: f, Records: f, Admin: f, Groups: f, GroupAdmin: f, Producer: f},
		Auth: &AuthConfig{Authorizer: authz}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	c.Mount(mux)
	srv := httptest.NewUnstartedServer(mux)
	srv.TLS = srvTLS.ServerConfig(tls.VerifyClientCertIfGiven)
	srv.StartTLS()
	t.Cleanup(srv.Close)

	withCert := newBrowser(t, srv.URL, &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cliTLS.ClientConfig("127.0.0.1")}})
	code, _, body := withCert.do(http.MethodGet, "/api/v1/topics", nil)
	if code != http.StatusOK || !strings.Contains(body, `"orders"`) || strings.Contains(body, `"logs"`) {
		t.Fatalf("API with alice's certificate: %d %s", code, body)
	}
	code, _, body = withCert.do(http.MethodGet, "/ui/topics", nil)
	if code != http.StatusOK || !strings.Contains(body, "User:alice") || strings.Contains(body, `action="/ui/logout"`) {
		t.Fatalf("page with alice's certificate: %d (no logout form expected) %s", code, body)
	}

	noCertCfg := cliTLS.ClientConfig("127.0.0.1")
	noCertCfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &tls.Certificate{}, nil }
	noCert := newBrowser(t, srv.URL, &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: noCertCfg}})
	if code, _, _ := noCert.do(http.MethodGet, "/api/v1/topics", nil); code != http.StatusUnauthorized {
		t.Fatalf("API without a certificate: %d, want 401", code)
	}
	// Without a password checker, Basic is refused.
	noCert.user, noCert.pass = "alice", "x"
	if code, _, _ := noCert.do(http.MethodGet, "/api/v1/topics", nil); code != http.StatusUnauthorized {
		t.Fatalf("Basic without password checks: %d, want 401", code)
	}
}
