// kafka_badinput_e2e_test.go: bad input on the Kafka port of a real `actorlog
// host` process (issue 13, row 11). Raw TCP frames — a length prefix above
// socket.request.max.bytes (100 MiB), a negative length, garbage bytes, a
// truncated frame then close, an unknown API key, an unsupported version
// (Metadata v99) — each close their connection, as Kafka does and as the
// kafka package's unit tests (kafka/conn_test.go) expect, with a warning
// in the host's log naming the connection and the reason; ApiVersions v99
// instead gets the KIP-511 answer (v0, UNSUPPORTED_VERSION, the key list)
// and the connection stays usable. Throughout, the host stays healthy
// (/healthz) and a kgo client on its own connections keeps producing
// (idempotent, acks=all) and consuming: unit tests drive the listener
// in-process; this checks the host process wires it the same way.

package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/internal/poll"
)

// badHeader is a request header (v1: key, version, correlation id, client
// id "c") followed by rest.
func badHeader(key, version int16, corr int32, rest ...byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = append(b, 0, 1, 'c')
	return append(b, rest...)
}

// badFramed prefixes body with its length.
func badFramed(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func TestKafkaBadInputOnHostProcess(t *testing.T) {
	const topic = "badinput"
	kafkaAddr := "127.0.0.1:" + strconv.Itoa(freeBase(t))
	h := startHost(t, t.TempDir(), freeBase(t), "--kafka-listen", kafkaAddr)
	h.mustCLI("", "topics", "create", topic, "--partitions", "2")

	// The well-behaved client: produces and consumes throughout.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	cons, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var mu sync.Mutex
	acked := map[string]bool{}
	seen := map[string]bool{}
	var produceErr error
	bgctx, bgstop := context.WithCancel(ctx)
	var bg sync.WaitGroup
	bg.Add(2)
	go func() {
		defer bg.Done()
		for i := 0; bgctx.Err() == nil; i++ {
			v := fmt.Sprintf("good-%05d", i)
			prod.Produce(ctx, &kgo.Record{Key: []byte(v), Value: []byte(v)}, func(r *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					produceErr = fmt.Errorf("produce %s: %w", r.Value, err)
					return
				}
				acked[string(r.Value)] = true
			})
			time.Sleep(10 * time.Millisecond)
		}
	}()
	go func() {
		defer bg.Done()
		for bgctx.Err() == nil {
			cons.PollFetches(bgctx).EachRecord(func(r *kgo.Record) {
				mu.Lock()
				seen[string(r.Value)] = true
				mu.Unlock()
			})
		}
	}()
	defer func() {
		bgstop()
		bg.Wait()
	}()
	// counts returns how many records were acknowledged and consumed.
	counts := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		if produceErr != nil {
			t.Fatalf("the well-behaved client: %v", produceErr)
		}
		return len(acked), len(seen)
	}
	// progress waits until both counts grew past what they were.
	progress := func(what string) {
		t.Helper()
		a0, s0 := counts()
		poll.Until(t, 30*time.Second, func() error {
			if a, s := counts(); a < a0+10 || s < s0+10 {
				return fmt.Errorf("after %s: %d acknowledged (was %d), %d consumed (was %d); want 10 more of each", what, a, a0, s, s0)
			}
			return nil
		})
	}
	progress("start")

	healthy := func(what string) {
		t.Helper()
		resp, err := http.Get("http://" + h.httpAddr() + "/healthz")
		if err != nil {
			t.Fatalf("after %s: /healthz: %v", what, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("after %s: /healthz answered %s", what, resp.Status)
		}
	}

	for _, tc := range []struct {
		name string
		send []byte
		// reason is the log line's reason ("" for any: garbage may be
		// read as any of several bad frames).
		reason string
		// close ends the connection after sending (a truncated frame).
		close bool
	}{
		{"length above 100 MiB", binary.BigEndian.AppendUint32(nil, 100<<20+1), "frame_too_large", false},
		{"negative length", []byte{0xff, 0xff, 0xff, 0xf0}, "bad_length", false},
		{"garbage bytes", badFramed(bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 8)), "", false},
		{"ascii garbage", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), "frame_too_large", false},
		{"truncated frame then close", append(binary.BigEndian.AppendUint32(nil, 100), badHeader(18, 3, 1)...), "truncated_frame", true},
		{"unknown api key", badFramed(badHeader(999, 0, 1)), "unsupported_api_key", false},
		{"metadata v99", badFramed(badHeader(3, 99, 1)), "unsupported_version", false},
		{"negative api version", badFramed(badHeader(3, -1, 1)), "unsupported_version", false},
	} {
		c, err := net.Dial("tcp", kafkaAddr)
		if err != nil {
			t.Fatalf("%s: dial: %v", tc.name, err)
		}
		local := c.LocalAddr().String()
		if _, err := c.Write(tc.send); err != nil {
			t.Fatalf("%s: write: %v", tc.name, err)
		}
		if tc.close {
			c.Close()
		} else {
			expectKafkaClosed(t, tc.name, c)
		}
		// The host logs a warning naming this connection (its lines are
		// rate-limited per reason per second: the cases sharing a reason
		// are a second apart, below).
		poll.Until(t, 10*time.Second, func() error {
			for _, line := range strings.Split(h.log(), "\n") {
				if strings.Contains(line, "level=warn") && strings.Contains(line, local) &&
					strings.Contains(line, "closing Kafka connection") && strings.Contains(line, "reason="+tc.reason) {
					return nil
				}
			}
			return fmt.Errorf("%s: no warning about the connection from %s (reason %q) in the host log:\n%s", tc.name, local, tc.reason, grepLog(h.log(), "component=kafka"))
		})
		healthy(tc.name)
		progress(tc.name)
		time.Sleep(time.Second) // past the log rate limit
	}

	// ApiVersions above the served range is answered (KIP-511): v0,
	// UNSUPPORTED_VERSION and the key list, on a connection that stays
	// open for the retry at a served version.
	c, err := net.Dial("tcp", kafkaAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(99)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "badinput", "1"
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("badinput"))
	if _, err := c.Write(f.AppendRequest(nil, req, 7)); err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	readKafkaResponse(t, c, 7, resp)
	if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) == 0 {
		t.Fatalf("ApiVersions v99: error %d, %d keys; want UNSUPPORTED_VERSION with the key list", resp.ErrorCode, len(resp.ApiKeys))
	}
	req.SetVersion(3)
	if _, err := c.Write(f.AppendRequest(nil, req, 8)); err != nil {
		t.Fatal(err)
	}
	resp = kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	readKafkaResponse(t, c, 8, resp)
	if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		t.Fatalf("ApiVersions v3 after the fallback: error %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
	}
	healthy("ApiVersions v99")
	progress("ApiVersions v99")

	// Every acknowledged record is read back by the well-behaved client.
	bgstop()
	bg.Wait()
	if err := prod.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	mu.Lock()
	want := make([]string, 0, len(acked))
	for v := range acked {
		want = append(want, v)
	}
	mu.Unlock()
	for {
		left := want[:0]
		for _, v := range want {
			if !seen[v] {
				left = append(left, v)
			}
		}
		if want = left; len(want) == 0 {
			break
		}
		pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
		fs := cons.PollFetches(pctx)
		waitErr := pctx.Err() // before pcancel, which sets it
		pcancel()
		if waitErr != nil {
			t.Fatalf("%d acknowledged records not read back: %v", len(want), waitErr)
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	a, s := counts()
	t.Logf("the host stayed up through every bad input; the kgo client had %d records acknowledged and %d consumed meanwhile", a, s)
	if code := h.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("host exited with %d on SIGTERM; log:\n%s", code, h.log())
	}
}

// expectKafkaClosed waits for the server to close c: a read ends with EOF
// or a reset, not a timeout, and nothing is answered.
func expectKafkaClosed(t *testing.T, what string, c net.Conn) {
	t.Helper()
	defer c.Close()
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	n, err := c.Read(make([]byte, 64))
	switch {
	case n > 0:
		t.Fatalf("%s: the server answered %d bytes; want the connection closed", what, n)
	case errors.Is(err, os.ErrDeadlineExceeded):
		t.Fatalf("%s: the connection is still open after 10 s", what)
	case !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET):
		t.Fatalf("%s: read: %v; want the connection closed", what, err)
	}
}

// readKafkaResponse reads one response frame from c into resp (its
// version set) and checks its correlation id.
func readKafkaResponse(t *testing.T, c net.Conn, corr int32, resp kmsg.Response) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatalf("read a response length: %v", err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, body); err != nil {
		t.Fatalf("read a response of %d bytes: %v", len(body), err)
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != corr {
		t.Fatalf("response correlation id %d, want %d", got, corr)
	}
	// ApiVersions responses have no header tags, whatever their version.
	if err := resp.ReadFrom(body[4:]); err != nil {
		t.Fatalf("decode %T v%d: %v", resp, resp.GetVersion(), err)
	}
}
