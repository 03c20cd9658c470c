// conn.go holds one client connection: a reader goroutine that reads,
// vets and decodes frames and starts their handlers in request order, and a
// writer goroutine that writes the responses in that same order, waiting
// for each in turn. A bounded number of requests may be in flight between
// the two (Config.MaxInFlight).

package kafka

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/internal/tlsconf"
)

// maxKeptWriteBuffer is the largest response buffer a connection keeps for
// the next response; a larger one goes back to the shared pool below (or
// is dropped) once written.
const maxKeptWriteBuffer = 1 << 20

// Larger response buffers (a default kgo fetch answers 3 partitions of
// 1 MiB) are shared by every connection through pools by size class:
// class k holds buffers of at least 1<<k bytes, for responses from
// 2 MiB (class 21) to 64 MiB (class 26, above fetch.max.bytes' 50 MiB
// default). A buffer goes back to its pool as soon as its response is
// written (io.Writer must not retain it), so idle connections hold none,
// and sync.Pool lets the garbage collector drop what goes unused.
const (
	minPooledWriteClass = 21
	maxPooledWriteClass = 26
)

var largeWriteBuffers [maxPooledWriteClass - minPooledWriteClass + 1]sync.Pool

// largeBuffersMade counts the pooled-class buffers allocated because their
// pool was empty: a pool that works keeps it near the number of responses
// in flight at once.
var largeBuffersMade atomic.Int64

// largeBuffer is a pooled response buffer; the holder is pooled with it so
// that a Put allocates nothing.
type largeBuffer struct{ b []byte }

// getLargeBuffer returns a pooled buffer with room for at least size
// bytes, nil when size is outside the pooled classes.
func getLargeBuffer(size int) *largeBuffer {
	class := max(bits.Len(uint(size-1)), minPooledWriteClass) // ceil(log2(size))
	if size <= 0 || class > maxPooledWriteClass {
		return nil
	}
	if lb, ok := largeWriteBuffers[class-minPooledWriteClass].Get().(*largeBuffer); ok {
		return lb
	}
	largeBuffersMade.Add(1)
	return &largeBuffer{b: make([]byte, 0, 1<<class)}
}

// putLargeBuffer files lb under the largest class its capacity covers, or
// drops it when it is below the smallest or above the largest.
func putLargeBuffer(lb *largeBuffer) {
	class := bits.Len(uint(cap(lb.b))) - 1 // floor(log2(cap))
	if class < minPooledWriteClass || class > maxPooledWriteClass {
		return
	}
	lb.b = lb.b[:0]
	largeWriteBuffers[class-minPooledWriteClass].Put(lb)
}

// encodeFrame encodes resp's frame for correlation id corr into kept, the
// connection's own buffer, or, for a response whose size hint is above
// maxKeptWriteBuffer, into a pooled buffer, returned as large. The caller
// writes out and then calls releaseFrame.
func encodeFrame(kept []byte, corr int32, resp kmsg.Response) (out []byte, large *largeBuffer, err error) {
	out = kept[:0]
	if hint := responseSizeHint(resp); hint > maxKeptWriteBuffer {
		if large = getLargeBuffer(hint); large != nil {
			out = large.b[:0]
		}
	}
	out, err = encodeResponse(out, corr, resp)
	return out, large, err
}

// releaseFrame is done with out, a written frame from encodeFrame: a small
// buffer is returned to be kept for the next response, a large one goes
// to the shared pool (with large's holder when it came from there).
func releaseFrame(out []byte, large *largeBuffer) (kept []byte) {
	if cap(out) <= maxKeptWriteBuffer && large == nil {
		return out[:0]
	}
	if large == nil {
		large = &largeBuffer{}
	}
	large.b = out
	putLargeBuffer(large)
	return nil
}

// connReadBuffer is the size of a connection's read buffer: a small
// request's length and body come in one read.
const connReadBuffer = 4096

// maxLoggedClientID bounds the client id copied into log lines.
const maxLoggedClientID = 64

// conn is one client connection.
type conn struct {
	srv    *Server
	nc     net.Conn
	br     *bufio.Reader // reads nc; only the reader goroutine (or its peek, see awaitToken) uses it
	remote string

	// ctx is done once the connection is closing; handlers' backend calls
	// run under it.
	ctx    context.Context
	cancel context.CancelFunc

	// tokens holds one token per request read and not yet answered: the
	// reader puts one in before reading a frame and the writer takes it
	// out after the response is written, so at most cap(tokens) requests
	// are in flight.
	tokens chan struct{}
	// queue carries each request's reply from reader to writer in request
	// order; it has room for every token, so a send never blocks.
	queue chan slot
	// queued counts the replies in queue or being written: a connection
	// with some is not idle.
	queued atomic.Int32
	// lastWrite is when the writer last wrote a response (Unix nanos): a
	// response written counts as activity for the idle timeout.
	lastWrite atomic.Int64

	// isTLS: nc is a *tls.Conn (Config.TLS), handshaken by the reader
	// before its first read (tls.go).
	isTLS bool
	// sasl is the connection's authentication, nil when SASL is off. Only
	// the reader goroutine touches it (sasl.go).
	sasl *saslState
	// principal is the authenticated principal, nil until there is one;
	// handlers read it through PrincipalFrom on their context.
	principal atomic.Pointer[tlsconf.Principal]

	closeOnce sync.Once
}

// slot is one request on its way to the writer.
type slot struct {
	req   *request
	reply reply
	// fix completes the response of a request its gate narrowed
	// (authorize.go).
	fix func(kmsg.Response)
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{
		srv:    s,
		nc:     nc,
		br:     bufio.NewReaderSize(nc, connReadBuffer),
		remote: nc.RemoteAddr().String(),
		tokens: make(chan struct{}, s.cfg.MaxInFlight),
		queue:  make(chan slot, s.cfg.MaxInFlight),
	}
	_, c.isTLS = nc.(*tls.Conn)
	if s.cfg.SASL.enabled() {
		c.sasl = &saslState{}
	}
	c.ctx, c.cancel = context.WithCancel(context.WithValue(s.ctx, principalKey{}, &c.principal))
	return c
}

// close closes the connection (once): its context is done, so the reader,
// the writer and the handlers stop.
func (c *conn) close() {
	c.closeOnce.Do(func() {
		c.cancel()
		if err := c.nc.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			c.srv.log.WithError(err).WithField("remote", c.remote).Debug("closing Kafka connection")
		}
		c.srv.forget(c)
	})
}

// fields describes the connection, and h when it is known, for a log line.
func (c *conn) fields(h *header) logrus.Fields {
	f := logrus.Fields{"remote": c.remote}
	if h != nil {
		f["api_key"] = h.key
		f["api_version"] = h.version
		f["correlation_id"] = h.corr
		if h.clientID != nil {
			id := *h.clientID
			if len(id) > maxLoggedClientID {
				id = id[:maxLoggedClientID] + "..."
			}
			f["client_id"] = id
		}
	}
	return f
}

// refused logs why the peer's input closes the connection, rate-limited.
func (c *conn) refused(h *header, e *inputError) {
	c.srv.warn(e.reason, c.fields(h), "closing Kafka connection: "+e.err.Error())
}

// readLoop reads requests until the connection fails or closes.
func (c *conn) readLoop() {
	defer c.srv.wg.Done()
	defer c.close()
	if c.isTLS && !c.handshake() {
		return
	}
	for {
		select {
		case c.tokens <- struct{}{}:
		default:
			if !c.awaitToken() {
				return
			}
		}
		frame, ierr := c.readRequestFrame()
		if ierr != nil {
			if ierr.reason != "" {
				c.refused(nil, ierr)
			}
			return
		}
		h, kreq, ierr := safeParse(c.srv.table, frame)
		if ierr == nil && c.sasl != nil && !c.sasl.allowed(h.key) {
			ierr = refuse(reasonAuthState, "%s before SASL authentication", kmsg.NameForKey(h.key))
		}
		if ierr != nil {
			c.refused(&h, ierr)
			return
		}
		r := &request{header: h, kreq: kreq, api: c.srv.table.lookup(h.key)}
		rep, fix := c.dispatch(r)
		c.queued.Add(1)
		c.queue <- slot{req: r, reply: rep, fix: fix}
		if c.sasl != nil && c.sasl.stage == saslFailed {
			// Read no more: the writer answers and closes (sasl.go).
			<-c.ctx.Done()
			return
		}
	}
}

// awaitToken waits for a free in-flight slot while watching the peer: with
// every slot taken by requests that may wait long (a Fetch long-polls for
// its max_wait_ms, which a client chooses), a reader that stopped reading
// would not see the peer close the connection, and the connection, its
// slot under the connection limits and its handlers would outlive the peer
// by that long. So a peek of one byte runs meanwhile: the peer's close (or
// a failed connection) ends the connection at once, cancelling the
// handlers; bytes from the peer stay buffered for the next read. It
// returns false when the connection is to close.
func (c *conn) awaitToken() bool {
	peeked := make(chan error, 1)
	peek := func() {
		_, err := c.br.Peek(1)
		peeked <- err
	}
	go peek()
	for {
		select {
		case c.tokens <- struct{}{}:
			// The next read must not race the peek: wait for it (it
			// ends when a byte comes, at the read deadline, or at close,
			// which is what the next read would wait for anyway).
			select {
			case err := <-peeked:
				return err == nil || errors.Is(err, os.ErrDeadlineExceeded)
			case <-c.ctx.Done():
				return false
			}
		case err := <-peeked:
			switch {
			case err == nil: // the next request is here: wait for the slot
				select {
				case c.tokens <- struct{}{}:
					return true
				case <-c.ctx.Done():
					return false
				}
			case errors.Is(err, os.ErrDeadlineExceeded): // quiet peer: keep watching
				if err := c.nc.SetReadDeadline(time.Now().Add(c.srv.cfg.IdleTimeout)); err != nil {
					c.ended(err)
					return false
				}
				go peek()
			default:
				c.ended(err)
				return false
			}
		case <-c.ctx.Done():
			return false
		}
	}
}

// safeParse is parseRequest with a panic in a decoder turned into a bad
// body: input must never take the host down.
func safeParse(t *table, frame []byte) (h header, kreq kmsg.Request, ierr *inputError) {
	defer func() {
		if p := recover(); p != nil {
			kreq, ierr = nil, refuse(reasonBadBody, "decoding a request of %d bytes panicked: %v", len(frame), p)
		}
	}()
	return parseRequest(t, frame)
}

// encodeResponse appends resp's frame to dst; a panic in an encoder (a
// handler built an invalid response) is returned as an error.
func encodeResponse(dst []byte, corr int32, resp kmsg.Response) (out []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = dst, fmt.Errorf("encoding %T v%d panicked: %v", resp, resp.GetVersion(), p)
		}
	}()
	return appendResponse(dst, corr, resp), nil
}

// readRequestFrame reads the next frame. It returns an *inputError whose
// reason is empty when the connection simply ended or was closed (nothing
// worth a warning).
func (c *conn) readRequestFrame() ([]byte, *inputError) {
	var size [4]byte
	idle := c.srv.cfg.IdleTimeout
	deadline := time.Now().Add(idle)
	for {
		if err := c.nc.SetReadDeadline(deadline); err != nil {
			return nil, c.ended(err)
		}
		n, err := io.ReadFull(c.br, size[:])
		if err == nil {
			break
		}
		if c.ctx.Err() != nil {
			return nil, &inputError{err: err}
		}
		if n > 0 {
			return nil, refuse(reasonTruncated, "connection ended after %d bytes of a frame length: %w", n, err)
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, c.ended(err)
		}
		// Idle means nothing read, nothing in flight and nothing written
		// for the whole timeout.
		if c.queued.Load() > 0 {
			deadline = time.Now().Add(idle)
			continue
		}
		if last := time.Unix(0, c.lastWrite.Load()); time.Since(last) < idle {
			deadline = last.Add(idle)
			continue
		}
		c.srv.log.WithFields(c.fields(nil)).WithField("reason", reasonIdle).
			Debugf("closing Kafka connection idle for %v (connections.max.idle.ms)", idle)
		return nil, &inputError{err: err}
	}
	length := int32(binary.BigEndian.Uint32(size[:]))
	if ierr := checkLength(length, c.srv.cfg.MaxRequestBytes); ierr != nil {
		return nil, ierr
	}
	// The frame's bytes may take up to the idle timeout to arrive.
	if err := c.nc.SetReadDeadline(time.Now().Add(idle)); err != nil {
		return nil, c.ended(err)
	}
	frame, err := readFrame(c.br, int(length))
	if err != nil {
		if c.ctx.Err() != nil {
			return nil, &inputError{err: err}
		}
		return nil, refuse(reasonTruncated, "connection ended after %d of %d bytes of a frame: %w", len(frame), length, err)
	}
	return frame, nil
}

// ended is the connection ending between frames: the peer closed it, or we
// did.
func (c *conn) ended(err error) *inputError {
	if c.ctx.Err() == nil {
		c.srv.log.WithFields(c.fields(nil)).WithError(err).Debug("Kafka connection ended")
	}
	return &inputError{err: err}
}

// dispatch starts serving r and returns its reply. It runs on the reader
// goroutine; a panicking handler closes the connection (after the earlier
// responses) with a log line instead of taking the host down.
//
// With an authorizer, the request first passes its API's gate
// (authorize.go), which may answer it or narrow it; fix then completes
// the handler's response.
func (c *conn) dispatch(r *request) (rep reply, fix func(kmsg.Response)) {
	defer func() {
		if p := recover(); p != nil {
			rep, fix = failed(reasonPanic, fmt.Errorf("%s v%d handler panicked: %v\n%s", r.api.name, r.version, p, debug.Stack())), nil
		}
	}()
	a := r.api
	if r.version >= a.advertisedMin && r.version <= a.advertisedMax && (r.version < a.servedMin || r.version > a.servedMax) {
		return a.unsupported(r), nil
	}
	if c.srv.audit != nil {
		var answered *reply
		if fix, answered = c.authorize(r); answered != nil {
			return *answered, nil
		}
	}
	return a.handle(c, r), fix
}

// writeLoop writes each request's response in request order, waiting for
// each in turn, until the connection closes or a reply fails it.
func (c *conn) writeLoop() {
	defer c.srv.wg.Done()
	defer c.close()
	var buf []byte
	for {
		var s slot
		select {
		case s = <-c.queue:
		case <-c.ctx.Done():
			return
		}
		o := s.reply.now
		if s.reply.later != nil {
			select {
			case o = <-s.reply.later:
			case <-c.ctx.Done():
				return
			}
		}
		if s.fix != nil && o.err == nil && o.resp != nil && o.resp.Key() == s.req.key {
			s.fix(o.resp)
		}
		if o.err == nil && !o.none && (o.resp == nil || o.resp.Key() != s.req.key) {
			o = outcome{reason: reasonHandler, err: fmt.Errorf("%s v%d handler returned %T for the response", s.req.api.name, s.req.version, o.resp)}
		}
		if o.err != nil {
			if c.ctx.Err() == nil { // else the connection is closing anyway
				c.srv.warn(o.reason, c.fields(&s.req.header), "closing Kafka connection: "+o.err.Error())
			}
			return
		}
		if !o.none {
			out, large, err := encodeFrame(buf, s.req.corr, o.resp)
			if err != nil {
				c.srv.warn(reasonPanic, c.fields(&s.req.header), "closing Kafka connection: "+err.Error())
				return
			}
			if err := c.nc.SetWriteDeadline(time.Now().Add(c.srv.cfg.IdleTimeout)); err != nil {
				c.srv.log.WithFields(c.fields(&s.req.header)).WithError(err).Debug("Kafka connection ended")
				return
			}
			if _, err := c.nc.Write(out); err != nil {
				if c.ctx.Err() == nil {
					c.srv.warn(reasonWrite, c.fields(&s.req.header), "closing Kafka connection: writing a response: "+err.Error())
				}
				return
			}
			c.lastWrite.Store(time.Now().UnixNano())
			// Write returned, so nothing holds out any more.
			buf = releaseFrame(out, large)
		}
		if o.closeAfter {
			return
		}
		c.queued.Add(-1)
		<-c.tokens
	}
}
