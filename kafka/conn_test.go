// conn_test.go: one connection's contract over raw TCP: bad input closes
// only that connection with a log line, responses come back in request
// order, pipelining is bounded, idle connections close, handler panics
// and backend faults close the connection but not the server.

package kafka

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/internal/poll"
)

// lengthPrefixed frames body with its length.
func lengthPrefixed(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func TestBadInputClosesOnlyThatConnection(t *testing.T) {
	for _, tc := range []struct {
		name   string
		send   []byte
		reason string
		// halfClose ends the client's side after sending.
		halfClose bool
	}{
		{"oversized length", binary.BigEndian.AppendUint32(nil, DefaultMaxRequestBytes+1), reasonFrameTooLarge, false},
		{"huge length", []byte{0x7f, 0xff, 0xff, 0xff}, reasonFrameTooLarge, false},
		{"negative length", []byte{0xff, 0xff, 0xff, 0xfe}, reasonBadLength, false},
		{"zero length", []byte{0, 0, 0, 0}, reasonBadLength, false},
		{"garbage shorter than a header", lengthPrefixed([]byte("junk")), reasonBadLength, false},
		{"garbage header", lengthPrefixed(append(rawHeader(3, 1, 1)[:8], 0x7f, 0x00, 'x')), reasonBadHeader, false},
		{"ascii garbage", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), reasonFrameTooLarge, false},
		{"truncated frame", append(binary.BigEndian.AppendUint32(nil, 100), rawHeader(18, 3, 1)...), reasonTruncated, true},
		{"truncated length", []byte{0, 0}, reasonTruncated, true},
		{"unknown api key", lengthPrefixed(rawHeader(999, 0, 1)), reasonUnknownKey, false},
		{"api key not served", frame(kmsg.NewPtrProduceRequest(), 1), reasonUnknownKey, false},
		{"unsupported version", lengthPrefixed(rawHeader(3, 13, 1)), reasonBadVersion, false},
		{"negative version", lengthPrefixed(rawHeader(3, -2, 1)), reasonBadVersion, false},
		{"bad flexible header tags", lengthPrefixed(rawHeader(18, 3, 1, 9, 9)), reasonBadHeader, false},
		{"body does not decode", lengthPrefixed(rawHeader(3, 1, 1, 0, 0, 0, 50, 0)), reasonBadBody, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, nil)
			healthy := ts.dial(t) // opened before, must survive
			c := ts.dial(t)
			if _, err := c.Write(tc.send); err != nil {
				t.Fatalf("write: %v", err)
			}
			if tc.halfClose {
				if err := c.(*net.TCPConn).CloseWrite(); err != nil {
					t.Fatalf("close write: %v", err)
				}
			}
			expectClosed(t, c)
			e := ts.waitLog(t, tc.reason)
			if e.Level != 3 /* warn */ || e.Data["remote"] == nil {
				t.Errorf("log line %v %v", e.Level, e.Data)
			}
			if _, err := healthy.Write(frame(apiVersionsReq(0), 9)); err != nil {
				t.Fatalf("write on the healthy connection: %v", err)
			}
			resp := kmsg.NewPtrApiVersionsResponse()
			if corr := readResponse(t, healthy, resp); corr != 9 || resp.ErrorCode != 0 {
				t.Fatalf("healthy connection: corr %d error %d", corr, resp.ErrorCode)
			}
			ts.expectServed(t)
		})
	}
}

func TestEarlierResponsesAreAnsweredBeforeBadInput(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial(t)
	// The server reads the good request, then the bad one: the connection
	// closes at once (as Kafka does), so the good answer may or may not
	// make it, but nothing after the bad frame is answered.
	msg := append(frame(apiVersionsReq(3), 1), lengthPrefixed(rawHeader(999, 0, 2))...)
	msg = append(msg, frame(apiVersionsReq(3), 3)...)
	if _, err := c.Write(msg); err != nil {
		t.Fatalf("write: %v", err)
	}
	for {
		corr, _, err := readResponseFrame(c)
		if err != nil {
			break
		}
		if corr != 1 {
			t.Fatalf("answered correlation id %d after the bad frame", corr)
		}
	}
	ts.waitLog(t, reasonUnknownKey)
	ts.expectServed(t)
}

func TestApiVersionsAboveRangeGetsV0Fallback(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial(t)
	req := apiVersionsReq(99) // header v2, body of what kmsg calls v99
	if _, err := c.Write(frame(req, 4242)); err != nil {
		t.Fatalf("write: %v", err)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	if corr := readResponse(t, c, resp); corr != 4242 {
		t.Fatalf("correlation id %d", corr)
	}
	if resp.ErrorCode != kerr.UnsupportedVersion.Code || !sameKeys(resp.ApiKeys, ts.srv.table.advertised()) {
		t.Fatalf("error %d keys %v, want UNSUPPORTED_VERSION with the key list", resp.ErrorCode, resp.ApiKeys)
	}
	var apiVersionsMax int16 = -1
	for _, k := range resp.ApiKeys {
		if k.ApiKey == apiVersionsKey {
			apiVersionsMax = k.MaxVersion
		}
	}
	if apiVersionsMax != 4 {
		t.Fatalf("ApiVersions max %d in the fallback, want 4", apiVersionsMax)
	}
	// The client retries at that version on the same connection.
	if _, err := c.Write(frame(apiVersionsReq(apiVersionsMax), 4243)); err != nil {
		t.Fatalf("write: %v", err)
	}
	resp = kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(apiVersionsMax)
	if corr := readResponse(t, c, resp); corr != 4243 || resp.ErrorCode != 0 || !sameKeys(resp.ApiKeys, ts.srv.table.advertised()) {
		t.Fatalf("retry: corr %d error %d keys %v", corr, resp.ErrorCode, resp.ApiKeys)
	}
}

// pipeline writes reqs at once on c and checks the answers come back in
// order with their correlation ids.
func pipeline(t *testing.T, c net.Conn, reqs []kmsg.Request) {
	t.Helper()
	var buf []byte
	for i, req := range reqs {
		buf = append(buf, frame(req, int32(1000+i))...)
	}
	if _, err := c.Write(buf); err != nil {
		t.Fatalf("write: %v", err)
	}
	for i, req := range reqs {
		resp := req.ResponseKind()
		if resp.Key() == apiVersionsKey && resp.GetVersion() > 4 {
			resp.SetVersion(0) // the KIP-511 fallback
		}
		if corr := readResponse(t, c, resp); corr != int32(1000+i) {
			t.Fatalf("response %d has correlation id %d", i, corr)
		}
	}
}

func TestPipelinedResponsesComeBackInOrder(t *testing.T) {
	for _, inflight := range []int{1, 3, DefaultMaxInFlight} {
		t.Run(fmt.Sprint("max in flight ", inflight), func(t *testing.T) {
			ts := startServer(t, func(c *Config) { c.MaxInFlight = inflight })
			c := ts.dial(t)
			var reqs []kmsg.Request
			for i := 0; i < 40; i++ {
				switch i % 4 {
				case 0:
					reqs = append(reqs, apiVersionsReq(int16(i%5)))
				case 1:
					reqs = append(reqs, metadataReq(int16(i%13), "orders"))
				case 2:
					reqs = append(reqs, metadataReq(int16(i%12)+1))
				default:
					reqs = append(reqs, apiVersionsReq(99))
				}
			}
			pipeline(t, c, reqs)
		})
	}
}

// TestSlowAnswersKeepTheirPlace: a slow Metadata (answered asynchronously)
// followed by fast ApiVersions answers still goes first.
func TestSlowAnswersKeepTheirPlace(t *testing.T) {
	ts := startServer(t, nil)
	gate := make(chan struct{})
	ts.backend.set(func(b *fakeBackend) { b.gate = gate })
	c := ts.dial(t)
	msg := append(frame(metadataReq(9, "orders"), 1), frame(apiVersionsReq(3), 2)...)
	msg = append(msg, frame(apiVersionsReq(3), 3)...)
	if _, err := c.Write(msg); err != nil {
		t.Fatalf("write: %v", err)
	}
	poll.Until(t, 5*time.Second, func() error {
		if ts.backend.calls.Load() == 0 {
			return errors.New("metadata not asked yet")
		}
		return nil
	})
	if err := c.SetReadDeadline(time.Now().Add(200 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	var one [1]byte
	if n, err := c.Read(one[:]); n != 0 || err == nil {
		t.Fatalf("an answer overtook the pending metadata: %d bytes, %v", n, err)
	}
	close(gate)
	for want := int32(1); want <= 3; want++ {
		var resp kmsg.Response = kmsg.NewPtrApiVersionsResponse()
		if want == 1 {
			resp = kmsg.NewPtrMetadataResponse()
		}
		resp.SetVersion(map[bool]int16{true: 9, false: 3}[want == 1])
		if corr := readResponse(t, c, resp); corr != want {
			t.Fatalf("got correlation id %d, want %d", corr, want)
		}
	}
}

func TestInFlightIsBounded(t *testing.T) {
	const limit = 3
	ts := startServer(t, func(c *Config) { c.MaxInFlight = limit })
	gate := make(chan struct{})
	ts.backend.set(func(b *fakeBackend) { b.gate = gate })
	c := ts.dial(t)
	var reqs []kmsg.Request
	var buf []byte
	for i := 0; i < limit+4; i++ {
		reqs = append(reqs, metadataReq(12, "orders"))
		buf = append(buf, frame(reqs[i], int32(1000+i))...)
	}
	if _, err := c.Write(buf); err != nil {
		t.Fatalf("write: %v", err)
	}
	poll.Until(t, 5*time.Second, func() error {
		if n := ts.backend.calls.Load(); n != limit {
			return fmt.Errorf("%d backend calls, want %d", n, limit)
		}
		return nil
	})
	poll.Never(t, 200*time.Millisecond, func() error {
		if n := ts.backend.calls.Load(); n != limit {
			return fmt.Errorf("%d backend calls past the limit of %d", n, limit)
		}
		return nil
	})
	close(gate)
	for i, req := range reqs {
		if corr := readResponse(t, c, req.ResponseKind()); corr != int32(1000+i) {
			t.Fatalf("response %d: correlation id %d", i, corr)
		}
	}
}

func TestIdleConnectionsClose(t *testing.T) {
	const idleTimeout = time.Second
	ts := startServer(t, func(c *Config) { c.IdleTimeout = idleTimeout })
	gate := make(chan struct{})
	ts.backend.set(func(b *fakeBackend) { b.gate = gate })

	idle := ts.dial(t)
	start := time.Now()
	expectClosed(t, idle)
	if d := time.Since(start); d < idleTimeout-50*time.Millisecond {
		t.Errorf("closed after %v, before the idle timeout", d)
	}
	ts.waitLog(t, reasonIdle)

	// A connection waiting for an answer is not idle.
	busy := ts.dial(t)
	if _, err := busy.Write(frame(metadataReq(12), 1)); err != nil {
		t.Fatalf("write: %v", err)
	}
	time.AfterFunc(3*idleTimeout/2, func() { close(gate) })
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(12)
	if corr := readResponse(t, busy, resp); corr != 1 {
		t.Fatalf("correlation id %d", corr)
	}
	// Writing that answer was activity: 0.6 of the timeout later (past a
	// whole timeout since the request was read) the connection is open.
	time.Sleep(idleTimeout * 6 / 10)
	if _, err := busy.Write(frame(apiVersionsReq(3), 2)); err != nil {
		t.Fatalf("write: %v", err)
	}
	if corr := readResponse(t, busy, apiVersionsReq(3).ResponseKind()); corr != 2 {
		t.Fatalf("correlation id %d", corr)
	}
	expectClosed(t, busy) // idle again after the answers
}

// TestAcksZeroKeepsOrder: a request answered with no response (as acks=0
// Produce will be) writes nothing, and the answers around it keep their
// order. Uses a stand-in API on Produce's key.
func TestAcksZeroKeepsOrder(t *testing.T) {
	withTestAPI(t, api{key: 0, servedMin: 3, servedMax: 12, advertisedMin: 0, advertisedMax: 12,
		handle: func(c *conn, r *request) reply {
			req := r.kreq.(*kmsg.ProduceRequest)
			if req.Acks == 0 {
				return noResponse()
			}
			return c.async(r, func(context.Context) (kmsg.Response, error) {
				time.Sleep(20 * time.Millisecond)
				return req.ResponseKind(), nil
			})
		},
		unsupported: func(r *request) reply {
			resp := r.kreq.ResponseKind().(*kmsg.ProduceResponse)
			resp.ThrottleMillis = 1 // marks the refusal for the test
			return respond(resp)
		},
	})
	ts := startServer(t, nil)
	c := ts.dial(t)
	produce := func(v, acks int16) *kmsg.ProduceRequest {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(v)
		req.Acks = acks
		return req
	}
	msg := append(frame(produce(9, -1), 1), frame(produce(9, 0), 2)...)
	msg = append(msg, frame(apiVersionsReq(3), 3)...)
	msg = append(msg, frame(produce(12, 0), 4)...)
	msg = append(msg, frame(produce(2, 1), 5)...) // advertised, not served
	msg = append(msg, frame(produce(12, 1), 6)...)
	if _, err := c.Write(msg); err != nil {
		t.Fatalf("write: %v", err)
	}
	for _, want := range []int32{1, 3, 5, 6} {
		var resp kmsg.Response
		switch want {
		case 1:
			resp = produce(9, 1).ResponseKind()
		case 3:
			resp = apiVersionsReq(3).ResponseKind()
		case 5:
			resp = produce(2, 1).ResponseKind()
		default:
			resp = produce(12, 1).ResponseKind()
		}
		if corr := readResponse(t, c, resp); corr != want {
			t.Fatalf("correlation id %d, want %d", corr, want)
		}
		if p, ok := resp.(*kmsg.ProduceResponse); ok && (p.ThrottleMillis == 1) != (want == 5) {
			t.Errorf("corr %d: unsupported-version answer %v", want, p.ThrottleMillis == 1)
		}
	}
	// Advertised 0-12 with ApiVersions, though only 3-12 are served.
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	if _, err := c.Write(frame(apiVersionsReq(3), 7)); err != nil {
		t.Fatal(err)
	}
	readResponse(t, c, resp)
	if !sameKeys(resp.ApiKeys[:1], []kmsg.ApiVersionsResponseApiKey{{ApiKey: 0, MinVersion: 0, MaxVersion: 12}}) {
		t.Errorf("produce advertised as %+v", resp.ApiKeys[0])
	}
}

func TestHandlerPanicsCloseTheConnection(t *testing.T) {
	withTestAPI(t, api{key: 0, servedMax: 12, advertisedMax: 12, handle: func(c *conn, r *request) reply {
		panic("boom in a handler")
	}})
	ts := startServer(t, nil)
	c := ts.dial(t)
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	// The answer before the panic is still written, in order.
	if _, err := c.Write(append(frame(apiVersionsReq(3), 1), frame(req, 2)...)); err != nil {
		t.Fatalf("write: %v", err)
	}
	if corr := readResponse(t, c, apiVersionsReq(3).ResponseKind()); corr != 1 {
		t.Fatalf("correlation id %d", corr)
	}
	expectClosed(t, c)
	if e := ts.waitLog(t, reasonPanic); !strings.Contains(fmt.Sprint(e.Message), "boom in a handler") {
		t.Errorf("log line %q", e.Message)
	}
	ts.expectServed(t)

	// A panic on a handler's goroutine (the backend) is caught too.
	ts.backend.set(func(b *fakeBackend) { b.panicMsg = "boom in the backend" })
	c2 := ts.dial(t)
	if _, err := c2.Write(frame(metadataReq(12), 1)); err != nil {
		t.Fatalf("write: %v", err)
	}
	expectClosed(t, c2)
	poll.Until(t, 5*time.Second, func() error {
		for _, e := range ts.hook.AllEntries() {
			if strings.Contains(e.Message, "boom in the backend") {
				return nil
			}
		}
		return errors.New("no log line for the backend panic")
	})
	ts.backend.set(func(b *fakeBackend) { b.panicMsg = "" })
	ts.expectServed(t)
}

func TestBackendErrorClosesTheConnection(t *testing.T) {
	ts := startServer(t, nil)
	ts.backend.set(func(b *fakeBackend) { b.err = errors.New("broker actor did not answer") })
	c := ts.dial(t)
	if _, err := c.Write(frame(metadataReq(12), 1)); err != nil {
		t.Fatalf("write: %v", err)
	}
	expectClosed(t, c)
	if e := ts.waitLog(t, reasonHandler); !strings.Contains(e.Message, "broker actor did not answer") {
		t.Errorf("log line %q", e.Message)
	}
	ts.expectServed(t)
}

func TestCloseEndsPendingHandlers(t *testing.T) {
	ts := startServer(t, nil)
	gate := make(chan struct{}) // never opened: Close must end the wait
	ts.backend.set(func(b *fakeBackend) { b.gate = gate })
	c := ts.dial(t)
	if _, err := c.Write(frame(metadataReq(12), 1)); err != nil {
		t.Fatalf("write: %v", err)
	}
	poll.Until(t, 5*time.Second, func() error {
		if ts.backend.calls.Load() == 0 {
			return errors.New("backend not asked yet")
		}
		return nil
	})
	done := make(chan error, 1)
	go func() { done <- ts.srv.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return with a handler pending")
	}
	expectClosed(t, c)
	if err := ts.srv.Serve(nil); !errors.Is(err, ErrServerClosed) {
		t.Errorf("serve after close: %v", err)
	}
}

// TestLogLinesAreRateLimited: a flood of bad connections logs one line per
// reason per LogEvery.
func TestLogLinesAreRateLimited(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.LogEvery = time.Hour })
	for i := 0; i < 5; i++ {
		c := ts.dial(t)
		if _, err := c.Write([]byte{0xff, 0xff, 0xff, 0xff}); err != nil {
			t.Fatalf("write: %v", err)
		}
		expectClosed(t, c)
	}
	ts.expectServed(t)
	n := 0
	for _, e := range ts.hook.AllEntries() {
		if e.Data["reason"] == reasonBadLength {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d lines for 5 bad lengths, want 1", n)
	}
}

// TestServeRetriesTemporaryAcceptErrors: an EMFILE from Accept pauses
// instead of ending Serve.
func TestServeRetriesTemporaryAcceptErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fl := &flakyListener{Listener: ln, fails: 3}
	logger, hook := logtest.NewNullLogger()
	srv, err := NewServer(Config{Logger: logrus.NewEntry(logger), Backend: &fakeBackend{md: sampleCluster(ln.Addr().String())}})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(fl) }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(frame(apiVersionsReq(3), 1)); err != nil {
		t.Fatal(err)
	}
	if corr := readResponse(t, c, apiVersionsReq(3).ResponseKind()); corr != 1 {
		t.Fatalf("correlation id %d", corr)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-served; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("serve: %v", err)
	}
	if e := hook.LastEntry(); e == nil || !strings.Contains(e.Message, "accept failed") {
		t.Errorf("no log line for the accept failures: %v", e)
	}

	// A permanent error ends Serve with it.
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv2, err := NewServer(Config{Logger: logrus.NewEntry(logger), Backend: &fakeBackend{}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	if err := ln2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv2.Serve(ln2); err == nil || errors.Is(err, ErrServerClosed) {
		t.Fatalf("serve on a closed listener: %v", err)
	}
}

type flakyListener struct {
	net.Listener
	fails int
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.fails > 0 {
		l.fails--
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: errEMFILE}
	}
	return l.Listener.Accept()
}

// TestLargeFrameWithinLimit: a frame above the allocation chunk but within
// the limit is read whole.
func TestLargeFrameWithinLimit(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial(t)
	var names []string
	for i := 0; i < 20000; i++ {
		names = append(names, fmt.Sprintf("topic-%05d", i))
	}
	req := metadataReq(12, names...)
	f := frame(req, 5)
	if len(f) < 2*frameChunk {
		t.Fatalf("frame of %d bytes is too small for the test", len(f))
	}
	if _, err := c.Write(f); err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(12)
	if corr := readResponse(t, c, resp); corr != 5 || len(resp.Topics) != len(names) {
		t.Fatalf("corr %d, %d topics", corr, len(resp.Topics))
	}
	if !bytes.Equal([]byte(*resp.Topics[19999].Topic), []byte("topic-19999")) {
		t.Errorf("last topic %q", *resp.Topics[19999].Topic)
	}
}

// panickyResponse is a response whose encoder panics.
type panickyResponse struct{ *kmsg.ProduceResponse }

func (panickyResponse) AppendTo([]byte) []byte { panic("boom in an encoder") }

func TestEncoderPanicClosesTheConnection(t *testing.T) {
	withTestAPI(t, api{key: 0, servedMax: 12, advertisedMax: 12, handle: func(c *conn, r *request) reply {
		return respond(panickyResponse{r.kreq.ResponseKind().(*kmsg.ProduceResponse)})
	}})
	ts := startServer(t, nil)
	c := ts.dial(t)
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	if _, err := c.Write(frame(req, 1)); err != nil {
		t.Fatalf("write: %v", err)
	}
	expectClosed(t, c)
	if e := ts.waitLog(t, reasonPanic); !strings.Contains(e.Message, "boom in an encoder") {
		t.Errorf("log line %q", e.Message)
	}
	ts.expectServed(t)
}

// TestWrongResponseKindClosesTheConnection: a handler answering with
// another API's response is a bug caught before anything is written.
func TestWrongResponseKindClosesTheConnection(t *testing.T) {
	withTestAPI(t, api{key: 0, servedMax: 12, advertisedMax: 12, handle: func(c *conn, r *request) reply {
		return respond(kmsg.NewPtrMetadataResponse())
	}})
	ts := startServer(t, nil)
	c := ts.dial(t)
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	if _, err := c.Write(frame(req, 1)); err != nil {
		t.Fatalf("write: %v", err)
	}
	expectClosed(t, c)
	ts.waitLog(t, reasonHandler)
	ts.expectServed(t)
}

// A peer that pipelines as many long-polling fetches as may be in flight,
// then closes: the server notices the close at once, not after the
// fetches' max_wait_ms (here an hour), ends the fetches and frees the
// connection and its slot. Before, the reader waited for a free in-flight
// slot without reading, so such a connection lived for the client-chosen
// wait. A peer that pipelines more than that (the next request waits in
// the read buffer, and TCP delivers the close after it) is bounded by
// MaxFetchWait.
func TestPeerCloseEndsParkedFetches(t *testing.T) {
	const limit = 2
	for _, tc := range []struct {
		pipelined int
		maxWait   time.Duration // MaxFetchWait; 0: default, above the poll
	}{{pipelined: limit}, {pipelined: limit + 3, maxWait: time.Second}} {
		ds := startDataServer(t, map[string]int{"t": 1}, func(c *Config) { c.MaxInFlight, c.MaxFetchWait = limit, tc.maxWait })
		appendTo(t, ds.data, "t", 0, 2)
		c := ds.dial(t)
		var buf []byte
		for i := 0; i < tc.pipelined; i++ {
			buf = append(buf, frame(fetchReq(12, "t", []int64{2}, int32(time.Hour/time.Millisecond), 1, 1<<20, 1<<20), int32(i))...)
		}
		if _, err := c.Write(buf); err != nil {
			t.Fatalf("write: %v", err)
		}
		poll.Until(t, 5*time.Second, func() error {
			if n := ds.data.liveWatchs.Load(); n != limit {
				return fmt.Errorf("%d fetches parked, want %d", n, limit)
			}
			return nil
		})
		if err := c.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		took := poll.Until(t, 5*time.Second, func() error {
			if n := openConns(ds.srv); n != 0 {
				return fmt.Errorf("%d connections open after the peer closed", n)
			}
			if n := ds.data.liveWatchs.Load(); n != 0 {
				return fmt.Errorf("%d fetches still parked after the peer closed", n)
			}
			return nil
		})
		t.Logf("%d pipelined fetches (%d in flight, max fetch wait %v): connection freed %v after the peer closed", tc.pipelined, limit, tc.maxWait, took)
	}
}
