// handlers.go: the HTTP shell of the console — the wrappers that bound a
// request's cluster calls, render a page or JSON, and map errors to a
// status; the CSRF guard of the forms; the page and form handlers.

package console

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/actors/producer"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/messages"
)

// httpError is an error with the status to answer it with.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &httpError{status: http.StatusNotFound, msg: fmt.Sprintf(format, args...)}
}

func forbidden(msg string) error { return &httpError{status: http.StatusForbidden, msg: msg} }

// statusOf maps an error to the status to answer it with: the console's
// own, then the cluster's error codes (the same the CLI reports), then
// 503 for a cluster that did not answer.
func statusOf(err error) int {
	var he *httpError
	if errors.As(err, &he) {
		return he.status
	}
	var me *messages.Error
	if errors.As(err, &me) {
		switch me.Code {
		case messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION, messages.ErrorCode_ERROR_CODE_GROUP_ID_NOT_FOUND:
			return http.StatusNotFound
		case messages.ErrorCode_ERROR_CODE_TOPIC_ALREADY_EXISTS, messages.ErrorCode_ERROR_CODE_NON_EMPTY_GROUP,
			messages.ErrorCode_ERROR_CODE_REASSIGNMENT_IN_PROGRESS:
			return http.StatusConflict
		case messages.ErrorCode_ERROR_CODE_INVALID_TOPIC_EXCEPTION, messages.ErrorCode_ERROR_CODE_INVALID_PARTITIONS,
			messages.ErrorCode_ERROR_CODE_INVALID_REPLICATION_FACTOR, messages.ErrorCode_ERROR_CODE_INVALID_CONFIG,
			messages.ErrorCode_ERROR_CODE_INVALID_REQUEST, messages.ErrorCode_ERROR_CODE_POLICY_VIOLATION,
			messages.ErrorCode_ERROR_CODE_OFFSET_OUT_OF_RANGE, messages.ErrorCode_ERROR_CODE_INVALID_GROUP_ID,
			messages.ErrorCode_ERROR_CODE_MESSAGE_TOO_LARGE, messages.ErrorCode_ERROR_CODE_RECORD_LIST_TOO_LARGE,
			messages.ErrorCode_ERROR_CODE_INVALID_RECORD:
			return http.StatusBadRequest
		case messages.ErrorCode_ERROR_CODE_CLUSTER_AUTHORIZATION_FAILED:
			return http.StatusForbidden
		}
		return http.StatusServiceUnavailable
	}
	if errors.Is(err, cluster.ErrInvalidTopic) || errors.Is(err, cluster.ErrInvalidConfig) || errors.Is(err, producer.ErrRecordTooLarge) {
		return http.StatusBadRequest
	}
	if errors.Is(err, client.ErrGroupNotEmpty) {
		return http.StatusConflict
	}
	if errors.Is(err, client.ErrUnreachable) || errors.Is(err, context.DeadlineExceeded) {
		return http.StatusServiceUnavailable
	}
	return http.StatusBadGateway
}

// logFailure logs a failure that is not the client's fault.
func (c *Console) logFailure(r *http.Request, status int, err error) {
	if status < 500 {
		return
	}
	c.log.WithError(err).WithFields(logrus.Fields{"method": r.Method, "path": r.URL.Path, "status": status}).Warn("console request failed")
}

// api serves fn's result as JSON.
func (c *Console) api(fn func(ctx context.Context, r *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), c.cfg.Timeout)
		defer cancel()
		v, err := fn(ctx, r)
		if err != nil {
			c.writeAPIError(w, r, err)
			return
		}
		c.writeJSON(w, r, http.StatusOK, v)
	}
}

func (c *Console) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		c.log.WithError(err).WithField("path", r.URL.Path).Error("console: encode JSON")
		http.Error(w, "encode JSON", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	if _, err := w.Write(append(b, '\n')); err != nil {
		c.log.WithError(err).WithField("path", r.URL.Path).Debug("console: write response")
	}
}

func (c *Console) writeAPIError(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(err)
	c.logFailure(r, status, err)
	c.writeJSON(w, r, status, map[string]string{"error": err.Error()})
}

// pageData is what every page template gets.
type pageData struct {
	Title    string
	Nav      string // the nav entry to highlight
	API      string // the JSON endpoint the page's script polls ("": none)
	CSRF     string
	ReadOnly bool
	Notice   string
	// NoticeLink, when set, follows the notice ("see it").
	NoticeLink string
	Data       any
	// User is the authenticated principal ("": no authentication) and
	// Session whether it logged in (then the page offers to log out).
	User    string
	Session bool
}

// withIdentity fills d's User and Session from r (auth.go).
func withIdentity(r *http.Request, d *pageData) *pageData {
	if id, ok := identityFrom(r.Context()); ok {
		d.User, d.Session = id.principal.String(), id.session != ""
	}
	return d
}

// page renders template name over fn's data.
func (c *Console) page(name string, fn func(ctx context.Context, r *http.Request, d *pageData) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), c.cfg.Timeout)
		defer cancel()
		d := withIdentity(r, &pageData{Nav: name, CSRF: c.csrfToken(r), ReadOnly: c.cfg.ReadOnly})
		d.Notice, d.NoticeLink = notice(r)
		if err := fn(ctx, r, d); err != nil {
			c.renderError(w, r, err)
			return
		}
		c.render(w, r, http.StatusOK, name, d)
	}
}

// notices are the fixed messages a form's redirect may ask for (?done=).
var notices = map[string]string{
	"created":    "Topic created.",
	"partitions": "Partitions added.",
	"deleted":    "Topic deleted.",
	"configs":    "Configs updated.",
}

// notice is the message a form's redirect asks for: a fixed one, or one
// with numbers (?done=produced&partition=P&offset=O, ?done=reset&n=N),
// read as numbers so that a crafted link cannot put words in it.
func notice(r *http.Request) (msg, link string) {
	q := r.URL.Query()
	num := func(k string) (int64, bool) {
		n, err := strconv.ParseInt(q.Get(k), 10, 64)
		return n, err == nil && n >= 0
	}
	switch q.Get("done") {
	case "produced":
		p, okP := num("partition")
		o, okO := num("offset")
		if !okP || !okO || p > 1<<31-1 {
			return "Record produced.", ""
		}
		return fmt.Sprintf("Record produced to partition %d at offset %d.", p, o),
			fmt.Sprintf("%s/records?partition=%d&offset=%d&limit=1", r.URL.Path, p, o)
	case "reset":
		if n, ok := num("n"); ok {
			return fmt.Sprintf("Offsets reset: %d partition(s).", n), ""
		}
		return "Offsets reset.", ""
	}
	return notices[q.Get("done")], ""
}

func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, d *pageData) {
	var buf bytes.Buffer
	if err := c.pages[name].ExecuteTemplate(&buf, "layout", d); err != nil {
		c.log.WithError(err).WithField("page", name).Error("console: render page")
		http.Error(w, "render page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if _, err := buf.WriteTo(w); err != nil {
		c.log.WithError(err).WithField("path", r.URL.Path).Debug("console: write response")
	}
}

func (c *Console) renderError(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(err)
	c.logFailure(r, status, err)
	c.render(w, r, status, "error", withIdentity(r, &pageData{
		Title: http.StatusText(status), CSRF: c.csrfToken(r), ReadOnly: c.cfg.ReadOnly,
		Data: struct {
			Status  int
			Message string
		}{status, err.Error()},
	}))
}

// maxFormBytes bounds the body of a form but the produce form's.
const maxFormBytes = 64 << 10

// form guards a state-changing POST, then runs fn, which returns where to
// redirect to.
func (c *Console) form(fn func(ctx context.Context, r *http.Request) (string, error)) http.HandlerFunc {
	return c.formLimit(maxFormBytes, fn)
}

// formLimit is form for a body of at most limit bytes.
func (c *Console) formLimit(limit int64, fn func(ctx context.Context, r *http.Request) (string, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		if err := c.checkCSRF(r); err != nil {
			c.renderError(w, r, err)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), c.cfg.Timeout)
		defer cancel()
		to, err := fn(ctx, r)
		if err != nil {
			c.renderError(w, r, err)
			return
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
	}
}

// checkCSRF refuses a POST that is not from one of the console's own
// forms: read-only consoles refuse all; the browser's Sec-Fetch-Site and
// Origin, when sent, must say same origin; the form's token must match.
func (c *Console) checkCSRF(r *http.Request) error {
	if c.cfg.ReadOnly {
		return forbidden("the console is read-only")
	}
	return c.checkFormOrigin(r)
}

// checkFormOrigin is checkCSRF but for read-only consoles (the login and
// logout forms work on those too): same origin, the token of r's session
// (auth.go) or the console's.
func (c *Console) checkFormOrigin(r *http.Request) error {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
		return forbidden("cross-site request refused (Sec-Fetch-Site: " + s + ")")
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return forbidden("cross-origin request refused (Origin " + o + ")")
		}
	}
	if err := r.ParseForm(); err != nil {
		return badRequest("form: %v", err)
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(c.csrfToken(r))) != 1 {
		return forbidden("missing or stale form token: reload the page and try again")
	}
	return nil
}

// topicName reads and checks the {name} of a request's path.
func topicName(r *http.Request) (string, error) {
	name := r.PathValue("name")
	if err := cluster.ValidateTopicName(name); err != nil {
		return "", badRequest("topic name: %v", err)
	}
	return name, nil
}

func (c *Console) clusterPage(ctx context.Context, _ *http.Request, d *pageData) error {
	v, err := c.cluster(ctx)
	d.Title, d.API, d.Data = "Cluster", "/api/v1/cluster", v
	return err
}

func (c *Console) topicsPage(ctx context.Context, _ *http.Request, d *pageData) error {
	v, err := c.topics(ctx)
	c.scopeTopics(ctx, v) // access.go
	d.Title, d.API, d.Data = "Topics", "/api/v1/topics", v
	return err
}

func (c *Console) topicPage(ctx context.Context, r *http.Request, d *pageData) error {
	v, err := c.topic(ctx, r.PathValue("name"))
	if err != nil {
		return err
	}
	c.scopeTopic(ctx, v) // access.go
	d.Title, d.API, d.Data = "Topic "+v.Name, "/api/v1/topics/"+url.PathEscape(v.Name), v
	d.Nav = "topics"
	return nil
}

func (c *Console) recordsPage(ctx context.Context, r *http.Request, d *pageData) error {
	q, err := parseRecordsQuery(r)
	if err != nil {
		return err
	}
	v, err := c.records(ctx, r.PathValue("name"), q)
	if err != nil {
		return err
	}
	d.Title, d.Nav, d.Data = "Records of "+v.Topic, "topics", v
	return nil
}

func (c *Console) groupsPage(ctx context.Context, _ *http.Request, d *pageData) error {
	v, err := c.groups(ctx)
	c.scopeGroups(ctx, v) // access.go
	d.Title, d.API, d.Data = "Consumer groups", "/api/v1/groups", v
	return err
}

func (c *Console) groupPage(ctx context.Context, r *http.Request, d *pageData) error {
	v, err := c.group(ctx, r.PathValue("id"))
	if err != nil {
		return err
	}
	c.scopeGroup(ctx, v) // access.go
	d.Title, d.Nav, d.API, d.Data = "Group "+v.GroupID, "groups", "/api/v1/groups/"+url.PathEscape(v.GroupID), v
	return nil
}

// formInt32 reads a required int32 form field within [lo, hi].
func formInt32(r *http.Request, field string, lo, hi int64) (int32, error) {
	s := strings.TrimSpace(r.PostForm.Get(field))
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < lo || n > hi {
		return 0, badRequest("%s %q: want a number from %d to %d", field, s, lo, hi)
	}
	return int32(n), nil
}

// parseConfigLines reads "key=value" lines (blank lines skipped), as the
// CLI's repeated --config.
func parseConfigLines(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, badRequest("config %q: want key=value", line)
		}
		out[k] = strings.TrimSpace(v)
	}
	return out, nil
}

// createTopic is POST /ui/topics: name, partitions, replication_factor,
// configs. The name and configs are checked as the controller checks them
// before anything is asked.
func (c *Console) createTopic(ctx context.Context, r *http.Request) (string, error) {
	name := strings.TrimSpace(r.PostForm.Get("name"))
	if err := cluster.ValidateTopicName(name); err != nil {
		return "", badRequest("topic name: %v", err)
	}
	parts, err := formInt32(r, "partitions", 1, cluster.MaxPartitionsPerTopic)
	if err != nil {
		return "", err
	}
	rf, err := formInt32(r, "replication_factor", 1, 1<<15-1)
	if err != nil {
		return "", err
	}
	cfgs, err := parseConfigLines(r.PostForm.Get("configs"))
	if err != nil {
		return "", err
	}
	if err := cluster.ValidateTopicConfigs(cfgs); err != nil {
		return "", badRequest("configs: %v", err)
	}
	if _, err := c.cfg.Admin.CreateTopic(ctx, name, parts, rf, cfgs); err != nil {
		return "", fmt.Errorf("create topic %q: %w", name, err)
	}
	c.log.WithFields(logrus.Fields{"topic": name, "partitions": parts, "replication_factor": rf, "remote": r.RemoteAddr}).Info("console: topic created")
	return "/ui/topics/" + url.PathEscape(name) + "?done=created", nil
}

// addPartitions is POST /ui/topics/{name}/partitions: total.
func (c *Console) addPartitions(ctx context.Context, r *http.Request) (string, error) {
	name, err := topicName(r)
	if err != nil {
		return "", err
	}
	total, err := formInt32(r, "total", 1, cluster.MaxPartitionsPerTopic)
	if err != nil {
		return "", err
	}
	if _, err := c.cfg.Admin.CreatePartitions(ctx, name, total); err != nil {
		return "", fmt.Errorf("add partitions to %q: %w", name, err)
	}
	c.log.WithFields(logrus.Fields{"topic": name, "total": total, "remote": r.RemoteAddr}).Info("console: partitions added")
	return "/ui/topics/" + url.PathEscape(name) + "?done=partitions", nil
}

// deleteTopic is POST /ui/topics/{name}/delete: confirm must repeat the
// name.
func (c *Console) deleteTopic(ctx context.Context, r *http.Request) (string, error) {
	name, err := topicName(r)
	if err != nil {
		return "", err
	}
	if r.PostForm.Get("confirm") != name {
		return "", badRequest("confirm: type the topic's name (%s) to delete it", name)
	}
	if err := c.cfg.Admin.DeleteTopic(ctx, name); err != nil {
		return "", fmt.Errorf("delete topic %q: %w", name, err)
	}
	c.log.WithFields(logrus.Fields{"topic": name, "remote": r.RemoteAddr}).Info("console: topic deleted")
	return "/ui/topics?done=deleted", nil
}

// parsePages parses each page template with the layout.
func parsePages() (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"pathEscape": url.PathEscape,
		"ids":        idsText,
		"offset":     offsetText,
		"yesno": func(b bool) string {
			if b {
				return "yes"
			}
			return "no"
		},
		"inc":         func(n int) int { return n + 1 },
		"configKeys":  cluster.TopicConfigKeys,
		"groupTopics": groupTopics,
		"formats":     func() []string { return []string{FormatAuto, FormatText, FormatJSON, FormatHex} },
		"count": func(n *int) string {
			if n == nil {
				return "-"
			}
			return strconv.Itoa(*n)
		},
	}
	for name, fn := range liveFuncs { // live.go
		funcs[name] = fn
	}
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("console: parse layout: %w", err)
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("console: list templates: %w", err)
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		page := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if page == "layout" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(templateFS, n)
		if err != nil {
			return nil, fmt.Errorf("console: parse %s: %w", n, err)
		}
		pages[page] = t
	}
	return pages, nil
}

// idsText renders host ids "1,2,3", "-" for none.
func idsText(xs []int32) string {
	if len(xs) == 0 {
		return "-"
	}
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(int(x))
	}
	return strings.Join(s, ",")
}

// offsetText renders an offset, "-" when unknown (nil).
func offsetText(n *int64) string {
	if n == nil {
		return "-"
	}
	return strconv.FormatInt(*n, 10)
}
