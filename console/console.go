// Package console is the web console every actorlog host serves on its
// HTTP port (issue 17): server-rendered pages under /ui/ and the same data
// as JSON under /api/v1/. Templates, CSS and JavaScript are embedded; the
// pages need nothing but a browser (no CDN, no build step). The JavaScript
// only polls the JSON endpoints every few seconds to refresh tables and
// draw SVG sparklines; every page works without it.
//
// It lives outside package host on purpose: it needs nothing of a host but
// the cluster client API (actors/client), so its inputs are the small
// interfaces below — FromClient adapts a *client.Client, tests pass fakes —
// and any process holding a client could serve it.
//
// Pages (GET unless noted):
//
//	/ui/                          cluster: hosts (alive, broker epoch,
//	                              controller with epoch, leaders and
//	                              replicas per host, etcd member role),
//	                              under-replicated /
//	                              offline / under-min-ISR partition counts,
//	                              a warning banner when any is non-zero
//	/ui/topics                    topics with partitions, RF, health, size
//	                              on disk, records in/out per second with
//	                              sparklines (live.go, rates.go);
//	                              POST: create (name, partitions,
//	                              replication_factor, configs "k=v" lines)
//	/ui/topics/{name}             partitions (leader, replicas, ISR,
//	                              adding/removing, log start/end), a
//	                              produce-rate sparkline, the record
//	                              browser form, produce a test record,
//	                              alter configs, add-partitions and delete
//	/ui/topics/{name}/records     the record browser (query as the API's)
//	POST /ui/topics/{name}/partitions   total=N
//	POST /ui/topics/{name}/delete       confirm=NAME (must repeat the name)
//	POST /ui/topics/{name}/configs      set="k=v" lines, delete=KEY
//	                                    (repeated): the overrides with set
//	                                    applied and delete removed replace
//	                                    them (`topics alter --config`);
//	                                    checked by cluster.ValidateTopicConfigs
//	POST /ui/topics/{name}/produce      key (empty: none), value (at most
//	                                    MaxProduceValueBytes), headers
//	                                    "k=v" lines, partition (empty: by
//	                                    key); acks=all; the topic page then
//	                                    shows the partition and offset
//	/ui/groups                    groups: state, members, total lag
//	/ui/groups/{id}               members and assignments, per partition
//	                              committed offset, log end, lag; a lag
//	                              sparkline; reset offsets
//	POST /ui/groups/{id}/reset-offsets  to=earliest|latest|offset|datetime,
//	                                    offset=O, datetime=RFC 3339,
//	                                    topic (empty: every topic the group
//	                                    has committed), partition (optional,
//	                                    with a topic), confirm=ID (must
//	                                    repeat the id); as `groups
//	                                    reset-offsets`, only while the group
//	                                    has no members (else 409)
//
// Every POST carries the per-process token of the page's form (field
// "csrf") and, when the browser sends Origin or Sec-Fetch-Site, must come
// from the same origin; otherwise 403 and nothing changes. With
// Config.ReadOnly the forms are hidden and every POST is refused (403).
//
// JSON endpoints (GET; errors are {"error": "..."} with the status):
//
//	/api/v1/cluster        ClusterView: {"controller_id", "controller_name",
//	                       "controller_epoch",
//	                       "hosts": [{"name", "id", "address", "http_address",
//	                       "kafka_address", "alive", "broker_epoch" (a string:
//	                       epochs exceed 2^53),
//	                       "controller", "leaders", "replicas", "etcd_role"
//	                       (live.go)}], "topics",
//	                       "partitions", "under_replicated", "offline",
//	                       "under_min_isr", "warning"}
//	/api/v1/topics         TopicsView: {"topics": [{"name", "internal",
//	                       "partitions", "replication_factor",
//	                       "under_replicated", "offline", "under_min_isr",
//	                       "size_bytes", "size_partial" (live.go),
//	                       "in_per_sec", "out_per_sec", "in_history",
//	                       "out_history" (rates.go)}], "size_error",
//	                       "sample_period_seconds"}
//	/api/v1/topics/{name}  TopicView: {"name", "replication_factor",
//	                       "min_insync_replicas", "configs": {k: v},
//	                       "total_log_end_offset", "size_bytes",
//	                       "size_partial", "partitions": [{"partition",
//	                       "leader", "leader_epoch", "leader_status",
//	                       "replicas", "isr", "adding", "removing",
//	                       "log_start_offset", "log_end_offset" (null when
//	                       unknown), "under_replicated", "offline",
//	                       "under_min_isr", "size_bytes" (the leader's),
//	                       "replicas_size_bytes", "size_partial"}]}
//	/api/v1/topics/{name}/records?partition=P&offset=O|timestamp=MS&limit=N&format=F
//	                       RecordsView: {"topic", "partition", "offset",
//	                       "limit", "format", "log_start_offset",
//	                       "high_watermark", "next_offset", "truncated",
//	                       "records": [{"offset", "timestamp", "time", "key",
//	                       "key_format", "value", "value_format",
//	                       "value_size", "value_truncated", "headers":
//	                       [{"key", "value"}]}]}. partition defaults to 0,
//	                       offset to the log start; limit 1..MaxRecords
//	                       (default 20); format auto (JSON pretty-printed,
//	                       else text, else hex), text, json or hex. At most
//	                       MaxRecordBytes of keys and values are returned
//	                       ("truncated": true, "next_offset" says where to
//	                       go on); key and value are null for a null key or
//	                       value (a tombstone).
//	/api/v1/groups         GroupsView: {"groups": [{"group_id", "state",
//	                       "protocol_type", "members", "total_lag"}],
//	                       "error"} ("members" and "total_lag" are null
//	                       beyond the first MaxDescribedGroups groups, or
//	                       when unknown; "error" names hosts that did not
//	                       answer)
//	/api/v1/groups/{id}    GroupView: {"group_id", "state", "protocol_type",
//	                       "protocol", "generation", "leader", "members":
//	                       [{"member_id", "group_instance_id", "client_id",
//	                       "client_host", "assignment": [{"topic",
//	                       "partitions"}]}], "offsets": [{"topic",
//	                       "partition", "committed_offset", "log_end_offset",
//	                       "lag", "member_id", "error"}], "total_lag"}
//
// Bad input (a malformed topic name, partition, offset, limit, format, a
// form field) is a 400 naming the field and changes nothing; an unknown
// topic, partition or group a 404; a cluster that does not answer a 503.
// changes.go lists the checks of the alter-configs, produce and
// reset-offsets forms.
//
// A Console is safe for concurrent use; each request is bounded by
// Config.Timeout.
package console

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/actors/producer"
	"github.com/actorlog/actorlog/messages"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// ClusterReader reads the cluster's hosts and metadata
// (*client.Client implements it).
type ClusterReader interface {
	DescribeCluster(ctx context.Context) (*messages.DescribeClusterResponse, error)
	Metadata(ctx context.Context, topics ...string) (*messages.MetadataResponse, error)
}

// OffsetReader reads a partition's offsets from its leader: -2 the log
// start, -1 the log end (*client.Client implements it).
type OffsetReader interface {
	ListOffsets(ctx context.Context, p *messages.PartitionMetadata, topic string, ts int64) (*messages.ListOffsetsResponse, error)
}

// RecordReader fetches records of a partition from its leader, as a
// consumer does (FromClient adapts a *client.Client).
type RecordReader interface {
	Fetch(ctx context.Context, p *messages.PartitionMetadata, topic string, offset int64, maxBytes int32) (*messages.FetchResponse, error)
}

// TopicAdmin changes topics (*client.Client implements it).
// AlterTopicConfigs replaces all of a topic's config overrides.
type TopicAdmin interface {
	CreateTopic(ctx context.Context, name string, partitions, replicationFactor int32, configs map[string]string) (*messages.TopicMetadata, error)
	CreatePartitions(ctx context.Context, name string, total int32) (*messages.TopicMetadata, error)
	DeleteTopic(ctx context.Context, name string) error
	AlterTopicConfigs(ctx context.Context, name string, configs map[string]string) (*messages.TopicMetadata, error)
}

// GroupAdmin moves a group's committed offsets of a topic, as `actorlog
// groups reset-offsets` does (*client.Client implements it): both refuse
// a group with members (client.ErrGroupNotEmpty); PlanResetOffsets only
// resolves the new offsets, ResetOffsets commits them.
type GroupAdmin interface {
	PlanResetOffsets(ctx context.Context, group, topic string, partitions []int32, target client.ResetTarget) ([]client.CommitOffset, error)
	ResetOffsets(ctx context.Context, group, topic string, partitions []int32, target client.ResetTarget) ([]client.CommitOffset, error)
}

// RecordProducer produces one record (msg.Callback is ignored) and waits
// for its delivery: the partition and offset it got, or why it failed
// (FromClient adapts a *client.Client).
type RecordProducer interface {
	Produce(ctx context.Context, msg producer.Send) (producer.Delivered, error)
}

// GroupReader reads consumer groups (*client.Client implements it).
type GroupReader interface {
	ListGroups(ctx context.Context, states ...string) ([]*messages.ListedGroup, error)
	DescribeGroup(ctx context.Context, group string) (*messages.DescribedGroup, error)
	GroupLag(ctx context.Context, group string, also ...*messages.TopicPartitions) ([]client.PartitionLag, error)
}

// Sources are where the console's data comes from. All are required but
// the optional three at the end.
type Sources struct {
	Cluster    ClusterReader
	Offsets    OffsetReader
	Records    RecordReader
	Admin      TopicAdmin
	Groups     GroupReader
	GroupAdmin GroupAdmin
	Producer   RecordProducer
	// Optional (live.go, rates.go): without them the matching figures are
	// null or "unknown". LogDirs gives the sizes on disk, Committed the
	// topics' records out per second, Etcd the hosts' etcd roles.
	LogDirs   LogDirReader
	Committed CommittedReader
	Etcd      EtcdReader
}

// FromClient returns Sources that all go through c.
func FromClient(c *client.Client) Sources {
	return Sources{Cluster: c, Offsets: c, Records: clientRecords{c}, Admin: c, Groups: c, GroupAdmin: c, Producer: clientProducer{c},
		LogDirs: clientLogDirs{c}, Committed: c}
}

// clientProducer produces each record with a producer actor of its own,
// as `actorlog produce` does (acks=all), stopped once the record is
// delivered: test records are rare, and no actor outlives the request.
type clientProducer struct{ c *client.Client }

// produceCloseTimeout bounds stopping a record's producer actor.
const produceCloseTimeout = 5 * time.Second

func (p clientProducer) Produce(ctx context.Context, msg producer.Send) (producer.Delivered, error) {
	pr, err := producer.New(p.c, producer.ActorConfig{Acks: messages.Acks_ACKS_ALL})
	if err != nil {
		return producer.Delivered{}, fmt.Errorf("start producer: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), produceCloseTimeout)
		defer cancel()
		if err := pr.Close(cctx); err != nil {
			p.c.Logger().WithError(err).WithField("topic", msg.Topic).Warn("console: stop the test record's producer")
		}
	}()
	done := make(chan producer.Delivered, 1)
	msg.Callback = func(d producer.Delivered) { done <- d }
	pr.ProduceAsync(&msg)
	select {
	case d := <-done:
		return d, d.Err
	case <-ctx.Done():
		return producer.Delivered{}, fmt.Errorf("waiting for delivery: %w", ctx.Err())
	}
}

// clientRecords fetches through a client as a consumer does: from the
// leader, up to the high watermark, without waiting.
type clientRecords struct{ c *client.Client }

func (r clientRecords) Fetch(ctx context.Context, p *messages.PartitionMetadata, topic string, offset int64, maxBytes int32) (*messages.FetchResponse, error) {
	pid, err := client.LeaderPID(p)
	if err != nil {
		return nil, err
	}
	return fetchFrom(ctx, r.c, pid, p, topic, offset, maxBytes)
}

func fetchFrom(ctx context.Context, c *client.Client, pid *actor.PID, p *messages.PartitionMetadata, topic string, offset int64, maxBytes int32) (*messages.FetchResponse, error) {
	res, err := c.Request(ctx, pid, &messages.FetchRequest{
		Topic: topic, Partition: p.Partition, FetchOffset: offset, MaxBytes: maxBytes,
		CurrentLeaderEpoch: -1, ReplicaId: -1, LogStartOffset: -1, LastFetchedEpoch: -1,
		CorrelationId: c.NextCorrelationID(),
	})
	if err != nil {
		return nil, fmt.Errorf("fetch %s-%d: %w", topic, p.Partition, err)
	}
	resp, ok := res.(*messages.FetchResponse)
	if !ok {
		return nil, fmt.Errorf("fetch %s-%d: the leader answered %T", topic, p.Partition, res)
	}
	return resp, resp.ErrorCode.Err(resp.ErrorMessage)
}

// Config configures a Console.
type Config struct {
	Sources
	// ReadOnly hides the forms and refuses every POST.
	ReadOnly bool
	// Timeout bounds the cluster calls of one request (default 10 s).
	Timeout time.Duration
	// Logger (logrus.StandardLogger when nil).
	Logger *logrus.Entry
	// SamplePeriod is how often the topics' rates are sampled while the
	// topics list is viewed (default DefaultSamplePeriod; rates.go).
	SamplePeriod time.Duration
	// Auth, when set, requires every request but the login page's to be
	// authenticated, and authorizes it with Auth.Authorizer (auth.go,
	// access.go). Nil: anyone who reaches the console may do anything.
	Auth *AuthConfig
}

// Console serves the pages and the JSON endpoints. Safe for concurrent
// use.
type Console struct {
	cfg    Config
	log    *logrus.Entry
	token  string // the per-process CSRF token of the forms
	pages  map[string]*template.Template
	static http.Handler
	mux    *http.ServeMux
	auth   *auth // nil without Config.Auth
	// sizes and etcd cache the hosts' log sizes and the etcd roles;
	// rates samples the topics' rates (live.go, rates.go).
	sizes cached[*sizeSnapshot]
	etcd  cached[map[string]string]
	rates *rateSampler
}

// New checks cfg and parses the embedded templates.
func New(cfg Config) (*Console, error) {
	s := cfg.Sources
	if s.Cluster == nil || s.Offsets == nil || s.Records == nil || s.Admin == nil || s.Groups == nil || s.GroupAdmin == nil || s.Producer == nil {
		return nil, errors.New("console: every source (Cluster, Offsets, Records, Admin, Groups, GroupAdmin, Producer) is required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = logrus.NewEntry(logrus.StandardLogger())
	}
	if cfg.SamplePeriod <= 0 {
		cfg.SamplePeriod = DefaultSamplePeriod
	}
	var tok [32]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return nil, fmt.Errorf("console: csrf token: %w", err)
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, fmt.Errorf("console: static files: %w", err)
	}
	c := &Console{cfg: cfg, log: cfg.Logger, token: hex.EncodeToString(tok[:]), pages: pages,
		static: http.StripPrefix("/ui/static/", http.FileServerFS(sub))}
	c.rates = newRateSampler(c, cfg.SamplePeriod)
	if cfg.Auth != nil {
		if c.auth, err = newAuth(*cfg.Auth, c.log); err != nil {
			return nil, err
		}
	}
	if c.mux, err = c.routes(); err != nil {
		return nil, err
	}
	return c, nil
}

// Close stops the console's background rate sampling (rates.go); the
// pages keep working, without rates.
func (c *Console) Close() { c.rates.close() }

// Mount registers the console on mux under /ui/ and /api/v1/.
func (c *Console) Mount(mux *http.ServeMux) {
	mux.Handle("/ui/", c)
	mux.Handle("/api/v1/", c)
	mux.Handle("/ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently))
}

// ServeHTTP serves one console request.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	if c.auth != nil {
		var ok bool
		if r, ok = c.auth.identify(w, r); !ok {
			return
		}
	}
	c.mux.ServeHTTP(w, r)
}

// routes registers every route behind the guard of its access table
// entry (access.go).
func (c *Console) routes() (*http.ServeMux, error) {
	m := http.NewServeMux()
	var errs []error
	handle := func(pattern string, h http.Handler) { errs = append(errs, c.handle(m, pattern, h)) }
	handleFunc := func(pattern string, h http.HandlerFunc) { handle(pattern, h) }
	handleFunc("GET /ui/login", c.loginPage)
	handleFunc("POST /ui/login", c.login)
	handleFunc("POST /ui/logout", c.logout)
	handleFunc("GET /ui/{$}", c.page("cluster", c.clusterPage))
	handleFunc("GET /ui/topics", c.page("topics", c.topicsPage))
	handleFunc("POST /ui/topics", c.form(c.createTopic))
	handleFunc("GET /ui/topics/{name}", c.page("topic", c.topicPage))
	handleFunc("GET /ui/topics/{name}/records", c.page("records", c.recordsPage))
	handleFunc("POST /ui/topics/{name}/partitions", c.form(c.addPartitions))
	handleFunc("POST /ui/topics/{name}/delete", c.form(c.deleteTopic))
	handleFunc("POST /ui/topics/{name}/configs", c.form(c.alterConfigs))
	handleFunc("POST /ui/topics/{name}/produce", c.formLimit(maxProduceFormBytes, c.produceRecord))
	handleFunc("GET /ui/groups", c.page("groups", c.groupsPage))
	handleFunc("GET /ui/groups/{id}", c.page("group", c.groupPage))
	handleFunc("POST /ui/groups/{id}/reset-offsets", c.form(c.resetOffsets))
	handle("GET /ui/static/", c.static)
	handleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		c.renderError(w, r, notFound("no console page %s", r.URL.Path))
	})

	handleFunc("GET /api/v1/cluster", c.api(func(ctx context.Context, _ *http.Request) (any, error) { return c.cluster(ctx) }))
	handleFunc("GET /api/v1/topics", c.api(func(ctx context.Context, _ *http.Request) (any, error) {
		v, err := c.topics(ctx)
		c.scopeTopics(ctx, v)
		return v, err
	}))
	handleFunc("GET /api/v1/topics/{name}", c.api(func(ctx context.Context, r *http.Request) (any, error) {
		v, err := c.topic(ctx, r.PathValue("name"))
		c.scopeTopic(ctx, v)
		return v, err
	}))
	handleFunc("GET /api/v1/topics/{name}/records", c.api(func(ctx context.Context, r *http.Request) (any, error) {
		q, err := parseRecordsQuery(r)
		if err != nil {
			return nil, err
		}
		return c.records(ctx, r.PathValue("name"), q)
	}))
	handleFunc("GET /api/v1/groups", c.api(func(ctx context.Context, _ *http.Request) (any, error) {
		v, err := c.groups(ctx)
		c.scopeGroups(ctx, v)
		return v, err
	}))
	handleFunc("GET /api/v1/groups/{id}", c.api(func(ctx context.Context, r *http.Request) (any, error) {
		v, err := c.group(ctx, r.PathValue("id"))
		c.scopeGroup(ctx, v)
		return v, err
	}))
	handleFunc("/api/v1/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			c.writeAPIError(w, r, &httpError{status: http.StatusMethodNotAllowed, msg: "the API is read-only: " + r.Method + " is not allowed"})
			return
		}
		c.writeAPIError(w, r, notFound("no API endpoint %s", r.URL.Path))
	})
	return m, errors.Join(errs...)
}
