// access.go: what each console route needs of the principal (issues 16
// and 17), in one table, and the guard that checks it before the route's
// handler runs. The checks are the Kafka listener's (the same
// acl.Authorizer, the same operations Kafka's APIs need), so a user may do
// in the console what its ACLs let it do with a Kafka client:
//
//	cluster page / API        DESCRIBE cluster (Kafka's DescribeCluster)
//	topic list                every authenticated principal; only the
//	                          topics it may DESCRIBE are listed
//	topic page / API          DESCRIBE topic; the configs only with
//	                          DESCRIBE_CONFIGS topic (else hidden)
//	record browser            READ topic
//	produce a test record     WRITE topic
//	create a topic            CREATE cluster, or CREATE on the topic
//	add partitions            ALTER topic
//	delete a topic            DELETE topic
//	alter configs             ALTER_CONFIGS topic
//	group list                only the groups it may DESCRIBE
//	group page / API          DESCRIBE group; offsets only of topics it
//	                          may DESCRIBE
//	reset offsets             READ group and READ on each topic reset
//	                          (Kafka's AlterConsumerGroupOffsets)
//
// A refusal is a 403 page (or JSON error) naming the operation and the
// resource, is logged (rate-limited) as an audit line and counted, and
// changes nothing: the guard runs before the handler. Without
// authentication (Config.Auth nil) every route is open, as before; with
// authentication but no Authorizer, every authenticated principal may do
// everything.

package console

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/internal/acl"
)

// Authorizer decides whether a principal ("User:alice"), connected from
// clientHost, may do op on a resource (*acl.Authorizer implements it).
type Authorizer interface {
	Authorize(principal, clientHost string, op acl.Operation, res acl.ResourceType, name string) acl.Decision
}

// Permission is one operation on one resource that a route needs.
type Permission struct {
	Op  acl.Operation
	Res acl.ResourceType
	// Name says where the resource's name comes from: "path:name" (the
	// {name} of the path), "path:id", "form:FIELD" (a field of the POSTed
	// form; an empty field is left to the handler, which checks each
	// resource it resolves), or "" for the cluster.
	Name string
	// OrCluster: the same operation on the cluster is enough as well
	// (CreateTopics: CREATE on the cluster or on the topic).
	OrCluster bool
}

// Access is what one route needs.
type Access struct {
	// Open routes are served without a principal (the login page, the
	// static files).
	Open bool
	// Need lists the permissions checked before the handler runs, all
	// required. Empty: any authenticated principal.
	Need []Permission
	// Filter says what the handler checks per item (lists that show only
	// what the principal may see).
	Filter string
}

// Routes is the access table: every route of the console, by its
// ServeMux pattern. New refuses a route without an entry, and a test
// checks every registered pattern has one.
var Routes = map[string]Access{
	"GET /ui/login":   {Open: true},
	"POST /ui/login":  {Open: true},
	"POST /ui/logout": {Open: true},
	"GET /ui/static/": {Open: true},
	"/ui/":            {}, // the not-found page
	"/api/v1/":        {}, // the not-found / not-allowed answer

	"GET /ui/{$}":                        {Need: []Permission{{Op: acl.OpDescribe, Res: acl.ResourceCluster}}},
	"GET /ui/topics":                     {Filter: "topics the principal may DESCRIBE"},
	"POST /ui/topics":                    {Need: []Permission{{Op: acl.OpCreate, Res: acl.ResourceTopic, Name: "form:name", OrCluster: true}}},
	"GET /ui/topics/{name}":              {Need: []Permission{{Op: acl.OpDescribe, Res: acl.ResourceTopic, Name: "path:name"}}, Filter: "configs with DESCRIBE_CONFIGS"},
	"GET /ui/topics/{name}/records":      {Need: []Permission{{Op: acl.OpRead, Res: acl.ResourceTopic, Name: "path:name"}}},
	"POST /ui/topics/{name}/partitions":  {Need: []Permission{{Op: acl.OpAlter, Res: acl.ResourceTopic, Name: "path:name"}}},
	"POST /ui/topics/{name}/delete":      {Need: []Permission{{Op: acl.OpDelete, Res: acl.ResourceTopic, Name: "path:name"}}},
	"POST /ui/topics/{name}/configs":     {Need: []Permission{{Op: acl.OpAlterConfigs, Res: acl.ResourceTopic, Name: "path:name"}}},
	"POST /ui/topics/{name}/produce":     {Need: []Permission{{Op: acl.OpWrite, Res: acl.ResourceTopic, Name: "path:name"}}},
	"GET /ui/groups":                     {Filter: "groups the principal may DESCRIBE"},
	"GET /ui/groups/{id}":                {Need: []Permission{{Op: acl.OpDescribe, Res: acl.ResourceGroup, Name: "path:id"}}, Filter: "offsets of topics the principal may DESCRIBE"},
	"POST /ui/groups/{id}/reset-offsets": {Need: []Permission{{Op: acl.OpRead, Res: acl.ResourceGroup, Name: "path:id"}, {Op: acl.OpRead, Res: acl.ResourceTopic, Name: "form:topic"}}, Filter: "READ on each committed topic when no topic is named"},
	"GET /api/v1/cluster":                {Need: []Permission{{Op: acl.OpDescribe, Res: acl.ResourceCluster}}},
	"GET /api/v1/topics":                 {Filter: "topics the principal may DESCRIBE"},
	"GET /api/v1/topics/{name}":          {Need: []Permission{{Op: acl.OpDescribe, Res: acl.ResourceTopic, Name: "path:name"}}, Filter: "configs with DESCRIBE_CONFIGS"},
	"GET /api/v1/topics/{name}/records":  {Need: []Permission{{Op: acl.OpRead, Res: acl.ResourceTopic, Name: "path:name"}}},
	"GET /api/v1/groups":                 {Filter: "groups the principal may DESCRIBE"},
	"GET /api/v1/groups/{id}":            {Need: []Permission{{Op: acl.OpDescribe, Res: acl.ResourceGroup, Name: "path:id"}}, Filter: "offsets of topics the principal may DESCRIBE"},
}

// errDenied is wrapped by the refusals of the authorizer.
var errDenied = errors.New("not authorized")

// deniedError is a refusal: a 403 naming the operation and resource.
type deniedError struct {
	principal string
	op        acl.Operation
	res       acl.ResourceType
	name      string
}

func (e *deniedError) Error() string {
	if e.res == acl.ResourceCluster {
		return fmt.Sprintf("%s: %s may not %s the cluster", errDenied, e.principal, e.op)
	}
	return fmt.Sprintf("%s: %s may not %s %s %q", errDenied, e.principal, e.op, strings.ToLower(e.res.String()), e.name)
}

func (e *deniedError) Unwrap() error { return errDenied }

// handle registers h for pattern on m behind the guard of its Routes
// entry; a pattern without one is an error.
func (c *Console) handle(m *http.ServeMux, pattern string, h http.Handler) error {
	acc, ok := Routes[pattern]
	if !ok {
		return fmt.Errorf("console: route %q has no entry in the access table (console.Routes)", pattern)
	}
	m.Handle(pattern, c.guard(acc, h))
	return nil
}

// guard checks acc before h runs.
func (c *Console) guard(acc Access, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.auth == nil || acc.Open {
			h.ServeHTTP(w, r)
			return
		}
		if _, ok := PrincipalFrom(r.Context()); !ok {
			c.auth.unauthenticated(c, w, r)
			return
		}
		for _, p := range acc.Need {
			name, ok, err := resourceName(w, r, p)
			if err != nil {
				c.refuse(w, r, err)
				return
			}
			if !ok {
				continue // left to the handler
			}
			if err := c.authorize(r.Context(), p, name); err != nil {
				c.refuse(w, r, err)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// resourceName reads the name p's resource has in r; ok false when the
// form leaves it to the handler.
func resourceName(w http.ResponseWriter, r *http.Request, p Permission) (string, bool, error) {
	switch {
	case p.Name == "":
		return acl.ClusterName, true, nil
	case strings.HasPrefix(p.Name, "path:"):
		return r.PathValue(strings.TrimPrefix(p.Name, "path:")), true, nil
	case strings.HasPrefix(p.Name, "form:"):
		if r.PostForm == nil {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			if err := r.ParseForm(); err != nil {
				return "", false, badRequest("form: %v", err)
			}
		}
		v := strings.TrimSpace(r.PostForm.Get(strings.TrimPrefix(p.Name, "form:")))
		return v, v != "", nil
	}
	return "", false, fmt.Errorf("console: permission name %q: want path:, form: or empty", p.Name)
}

// refuse answers a refused request: JSON under /api/, else a page.
func (c *Console) refuse(w http.ResponseWriter, r *http.Request, err error) {
	if strings.HasPrefix(r.URL.Path, "/api/") {
		c.writeAPIError(w, r, err)
		return
	}
	c.renderError(w, r, err)
}

// authorize checks one permission of the request's principal; a refusal
// is audited and returned as a 403 error.
func (c *Console) authorize(ctx context.Context, p Permission, name string) error {
	if c.auth == nil || c.auth.cfg.Authorizer == nil {
		return nil
	}
	id, _ := identityFrom(ctx)
	if p.OrCluster && c.auth.cfg.Authorizer.Authorize(id.principal.String(), id.host, p.Op, acl.ResourceCluster, acl.ClusterName).Allowed {
		return nil
	}
	d := c.auth.cfg.Authorizer.Authorize(id.principal.String(), id.host, p.Op, p.Res, name)
	if d.Allowed {
		return nil
	}
	c.auth.denied(id, p, name, d.Reason)
	return &httpError{status: http.StatusForbidden, msg: (&deniedError{principal: id.principal.String(), op: p.Op, res: p.Res, name: name}).Error()}
}

// authorizeEach checks op on each topic (reset offsets without a named
// topic: every topic the group has committed).
func (c *Console) authorizeEach(ctx context.Context, op acl.Operation, res acl.ResourceType, names []string) error {
	for _, n := range names {
		if err := c.authorize(ctx, Permission{Op: op, Res: res}, n); err != nil {
			return err
		}
	}
	return nil
}

// allowed reports, without auditing, whether the request's principal may
// do op on a resource: the per-item filter of lists.
func (c *Console) allowed(ctx context.Context, op acl.Operation, res acl.ResourceType, name string) bool {
	if c.auth == nil || c.auth.cfg.Authorizer == nil {
		return true
	}
	id, ok := identityFrom(ctx)
	if !ok {
		return false
	}
	return c.auth.cfg.Authorizer.Authorize(id.principal.String(), id.host, op, res, name).Allowed
}

// scopeTopics keeps the topics the principal may DESCRIBE.
func (c *Console) scopeTopics(ctx context.Context, v *TopicsView) {
	if v == nil {
		return
	}
	kept := v.Topics[:0]
	for _, t := range v.Topics {
		if c.allowed(ctx, acl.OpDescribe, acl.ResourceTopic, t.Name) {
			kept = append(kept, t)
		}
	}
	v.Topics = kept
}

// scopeTopic hides the configs of a topic the principal may not
// DESCRIBE_CONFIGS.
func (c *Console) scopeTopic(ctx context.Context, v *TopicView) {
	if v != nil && !c.allowed(ctx, acl.OpDescribeConfigs, acl.ResourceTopic, v.Name) {
		v.Configs = map[string]string{}
	}
}

// scopeGroups keeps the groups the principal may DESCRIBE.
func (c *Console) scopeGroups(ctx context.Context, v *GroupsView) {
	if v == nil {
		return
	}
	kept := v.Groups[:0]
	for _, g := range v.Groups {
		if c.allowed(ctx, acl.OpDescribe, acl.ResourceGroup, g.GroupID) {
			kept = append(kept, g)
		}
	}
	v.Groups = kept
}

// scopeGroup keeps the offsets of topics the principal may DESCRIBE (as
// Kafka's OffsetFetch leaves the others out).
func (c *Console) scopeGroup(ctx context.Context, v *GroupView) {
	if v == nil {
		return
	}
	if len(v.Offsets) == 0 {
		return
	}
	kept := v.Offsets[:0]
	var lag int64
	for _, o := range v.Offsets {
		if c.allowed(ctx, acl.OpDescribe, acl.ResourceTopic, o.Topic) {
			kept = append(kept, o)
			if o.Lag != nil {
				lag += *o.Lag
			}
		}
	}
	if len(kept) < len(v.Offsets) {
		v.TotalLag = lag // of the topics shown only
	}
	v.Offsets = kept
}

// clientHost is the IP address of r's peer (what ACL host fields match).
func clientHost(r *http.Request) string {
	h, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return h
}

// auditFields are the log fields of a request's identity.
func auditFields(id identity) logrus.Fields {
	return logrus.Fields{"principal": id.principal.String(), "client_host": id.host, "method": id.method}
}
