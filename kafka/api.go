// api.go holds the API table: every served Kafka API registers, from its
// own file's init, its key, the versions it serves and advertises and its
// handler. The ApiVersions answer is built from this table and requests are
// vetted against it, so what is advertised cannot drift from what is
// served. It also holds the reply a handler returns.

package kafka

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// api is one Kafka API the server serves.
type api struct {
	// key is the Kafka API key; name its name, for logs.
	key  int16
	name string
	// servedMin..servedMax are the versions handle serves.
	servedMin, servedMax int16
	// advertisedMin..advertisedMax are the versions ApiVersions advertises
	// (a superset of the served ones). A request for a version outside
	// them closes its connection, as Kafka does; one inside them but not
	// served is answered by unsupported.
	advertisedMin, advertisedMax int16
	// handle serves a request whose version is in the served range.
	handle handler
	// unsupported answers a version advertised but not served, normally
	// with UNSUPPORTED_VERSION (Kafka 4 advertises Produce 0-12 and
	// refuses v0-2 so; advertising a minimum above 0 turns compression off
	// in older librdkafka), or by closing the connection where no answer
	// is read (an acks=0 Produce). Required exactly when the ranges
	// differ.
	unsupported func(r *request) reply
	// enabled reports whether a server with cfg serves the API (its
	// backend is set); nil means always. A disabled API is neither
	// advertised nor served by that server: a request for it closes the
	// connection, as for a key not in the table.
	enabled func(cfg *Config) bool
}

// handler serves one request. It runs on the connection's reader
// goroutine, one request at a time in request order, so whatever it starts
// before returning (messages to local actors) is ordered like the requests.
// It must not block on the backend: a handler that waits returns
// c.async(...), and the response is written once ready, still in request
// order.
type handler func(c *conn, r *request) reply

// request is one decoded request.
type request struct {
	header
	// kreq is the decoded body, version set (for ApiVersions above its
	// range, the version asked for and an undecoded body).
	kreq kmsg.Request
	// api is the request's table entry.
	api *api
	// noAutoCreate: the principal may not create every topic a Metadata
	// request names, so none is auto-created (authorize.go).
	noAutoCreate bool
}

// outcome is what is written for one request.
type outcome struct {
	// resp is the response; nil when none or err is set.
	resp kmsg.Response
	// none: the request takes no response (acks=0 Produce); the next
	// response is written in its turn.
	none bool
	// err closes the connection once every earlier response is written;
	// reason is its log key.
	err    error
	reason string
	// closeAfter closes the connection once resp is written (a failed
	// authentication).
	closeAfter bool
}

// reply is a handler's answer: an outcome now, or one to wait for.
type reply struct {
	now   outcome
	later <-chan outcome // when set, the outcome arrives on it (exactly once)
}

// respond answers with resp now.
func respond(resp kmsg.Response) reply { return reply{now: outcome{resp: resp}} }

// noResponse answers with nothing (acks=0 Produce).
func noResponse() reply { return reply{now: outcome{none: true}} }

// failed closes the connection after the earlier responses; err is a
// local fault worth a log line, reason its kind.
func failed(reason string, err error) reply {
	return reply{now: outcome{reason: reason, err: err}}
}

// asyncOutcome is async for a handler whose answer may be no response
// (acks=0 Produce) or a deliberate close: fn returns the whole outcome.
// A panic in fn closes the connection with a log line.
func (c *conn) asyncOutcome(r *request, fn func(ctx context.Context) outcome) reply {
	ch := make(chan outcome, 1)
	c.srv.wg.Add(1)
	go func() {
		defer c.srv.wg.Done()
		defer func() {
			if p := recover(); p != nil {
				ch <- outcome{reason: reasonPanic, err: fmt.Errorf("%s v%d handler panicked: %v", r.api.name, r.version, p)}
			}
		}()
		ch <- fn(c.ctx)
	}()
	return reply{later: ch}
}

// async answers with what fn returns, running fn on its own goroutine with
// the connection's context (done when the connection closes). A panic in fn
// closes the connection with a log line. An error from fn (a local fault,
// e.g. an actor did not answer) closes the connection too.
func (c *conn) async(r *request, fn func(ctx context.Context) (kmsg.Response, error)) reply {
	ch := make(chan outcome, 1)
	c.srv.wg.Add(1)
	go func() {
		defer c.srv.wg.Done()
		defer func() {
			if p := recover(); p != nil {
				ch <- outcome{reason: reasonPanic, err: fmt.Errorf("%s v%d handler panicked: %v", r.api.name, r.version, p)}
			}
		}()
		resp, err := fn(c.ctx)
		if err != nil {
			ch <- outcome{reason: reasonHandler, err: fmt.Errorf("%s v%d: %w", r.api.name, r.version, err)}
			return
		}
		ch <- outcome{resp: resp}
	}()
	return reply{later: ch}
}

// The table, filled by register from each API file's init.
var (
	apisMu sync.RWMutex
	apis   = map[int16]*api{}
)

// checkAPI reports what is wrong with a registration.
func checkAPI(a api) error {
	kreq := kmsg.RequestForKey(a.key)
	switch {
	case kreq == nil:
		return fmt.Errorf("kafka: api key %d unknown to kmsg", a.key)
	case a.handle == nil:
		return fmt.Errorf("kafka: %s: no handler", a.name)
	case a.advertisedMin < 0 || a.advertisedMin > a.servedMin || a.servedMin > a.servedMax || a.servedMax > a.advertisedMax:
		return fmt.Errorf("kafka: %s: want 0 <= advertised min %d <= served min %d <= served max %d <= advertised max %d",
			a.name, a.advertisedMin, a.servedMin, a.servedMax, a.advertisedMax)
	case a.advertisedMax > kreq.MaxVersion():
		return fmt.Errorf("kafka: %s: advertised max %d above kmsg's %d", a.name, a.advertisedMax, kreq.MaxVersion())
	case (a.unsupported != nil) != (a.servedMin != a.advertisedMin || a.servedMax != a.advertisedMax):
		return fmt.Errorf("kafka: %s: an unsupported-version answer is needed exactly when served %d-%d differs from advertised %d-%d",
			a.name, a.servedMin, a.servedMax, a.advertisedMin, a.advertisedMax)
	}
	return nil
}

// register adds a to the table; each API file calls it from init. A bad or
// duplicate registration is a programming error and panics at start.
func register(a api) {
	a.name = kmsg.NameForKey(a.key)
	if err := checkAPI(a); err != nil {
		panic(err)
	}
	apisMu.Lock()
	defer apisMu.Unlock()
	if _, dup := apis[a.key]; dup {
		panic(fmt.Sprintf("kafka: api key %d (%s) registered twice", a.key, a.name))
	}
	apis[a.key] = &a
}

// table is the part of the API table one server serves: the registered
// APIs enabled by its Config. It is built once by NewServer and read-only
// afterwards, so connections read it without locking.
type table struct {
	byKey map[int16]*api
	// keys is the ApiVersions answer, by key.
	keys []kmsg.ApiVersionsResponseApiKey
}

// newTable snapshots the registered APIs that cfg enables.
func newTable(cfg *Config) *table {
	apisMu.RLock()
	defer apisMu.RUnlock()
	t := &table{byKey: make(map[int16]*api, len(apis))}
	for key, a := range apis {
		if a.enabled != nil && !a.enabled(cfg) {
			continue
		}
		t.byKey[key] = a
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.key, a.advertisedMin, a.advertisedMax
		t.keys = append(t.keys, k)
	}
	sort.Slice(t.keys, func(i, j int) bool { return t.keys[i].ApiKey < t.keys[j].ApiKey })
	return t
}

// lookup returns key's entry, nil if this server does not serve it.
func (t *table) lookup(key int16) *api { return t.byKey[key] }

// advertised returns the ApiVersions entries, by key. Callers must not
// modify the slice.
func (t *table) advertised() []kmsg.ApiVersionsResponseApiKey { return t.keys }

// dataEnabled is the enabled test of the data APIs (Produce, Fetch,
// ListOffsets, OffsetForLeaderEpoch, InitProducerId): they need
// Config.Data.
func dataEnabled(cfg *Config) bool { return cfg.Data != nil }
