// fuzz_test.go: arbitrary bytes on one connection never panic the server
// (nor a handler, the data APIs' over the fake included), and a fresh
// connection is served afterwards.

package kafka

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/storage/record"
)

// pipeConn serves one end of a net.Pipe on srv and returns the other.
func pipeConn(srv *Server) net.Conn {
	client, server := net.Pipe()
	srv.serveConn(server)
	return client
}

func FuzzServeFrame(f *testing.F) {
	seeds := [][]byte{
		frame(apiVersionsReq(0), 1),
		frame(apiVersionsReq(3), 2),
		frame(apiVersionsReq(4), 2),
		frame(apiVersionsReq(99), 3),
		frame(metadataReq(0, []string{}...), 4),
		frame(metadataReq(1), 5),
		frame(metadataReq(4, "orders", "nope"), 6),
		frame(metadataReq(9, "orders"), 7),
		frame(metadataReq(12), 8),
		append(frame(metadataReq(12, "logs"), 9), frame(apiVersionsReq(3), 10)...),
		lengthPrefixed(rawHeader(999, 0, 1)),
		lengthPrefixed(rawHeader(3, 13, 1)),
		lengthPrefixed(rawHeader(3, 9, 1, 7, 7)),
		lengthPrefixed(rawHeader(3, 1, 1, 0, 0, 0, 50)),
		{0xff, 0xff, 0xff, 0xff},
		{0, 0, 0, 20, 0, 18},
		[]byte("GET / HTTP/1.1\r\n\r\n"),
	}
	batch := testBatch(f, 3, record.CompressionNone)
	seeds = append(seeds,
		frame(produceReq(9, -1, "orders", map[int32][]byte{0: batch, 1: batch}), 12),
		frame(produceReq(3, 1, "orders", map[int32][]byte{0: testBatch(f, 1, record.CompressionGzip)}), 13),
		frame(produceReq(12, 0, "orders", map[int32][]byte{2: batch}), 14),
		frame(produceReq(2, 1, "orders", map[int32][]byte{0: batch}), 15),
		frame(fetchReq(12, "orders", []int64{0, 0, 0}, 0, 1, 1<<20, 1<<20), 16),
		frame(fetchReq(4, "orders", []int64{0, 5}, 10, 1, 100, 10), 17),
		append(frame(produceReq(9, 1, "orders", map[int32][]byte{0: batch}), 18), frame(fetchReq(11, "orders", []int64{0}, 0, 1, 1<<20, 1<<20), 19)...),
	)
	byID := metadataReq(12)
	byID.Topics = []kmsg.MetadataRequestTopic{kmsg.NewMetadataRequestTopic(), {TopicID: testTopicID(1)}}
	seeds = append(seeds, frame(byID, 11))
	for _, s := range seeds {
		f.Add(s)
	}

	logger, hook := logtest.NewNullLogger()
	b := &fakeBackend{md: sampleCluster("127.0.0.1:9092")}
	data := newFakeData()
	data.addTopic("orders", 3, 1)
	srv, err := NewServer(Config{Logger: logrus.NewEntry(logger), Backend: b, Data: data, MaxRequestBytes: 1 << 20, IdleTimeout: 5 * time.Second, MaxInFlight: 4, MaxFetchWait: time.Second})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		if err := srv.Close(); err != nil {
			f.Errorf("close: %v", err)
		}
	})

	f.Fuzz(func(t *testing.T, data []byte) {
		c := pipeConn(srv)
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			_, _ = io.Copy(io.Discard, c) // responses; ends when the server closes
		}()
		// The server may close early (bad input), or stop reading while
		// requests are in flight (a fetch may long-poll): a failed or
		// timed-out write is fine.
		if err := c.SetWriteDeadline(time.Now().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(data); err != nil && !errors.Is(err, io.ErrClosedPipe) && !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("write: %v", err)
		}
		if err := c.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		<-drained
		// The server closes its end once it has read the client's close.
		for deadline := time.Now().Add(10 * time.Second); openConns(srv) != 0; time.Sleep(100 * time.Microsecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d connections still open 10s after the client closed", openConns(srv))
			}
		}
		for _, e := range hook.AllEntries() {
			if e.Data["reason"] == reasonPanic || e.Data["reason"] == reasonHandler {
				t.Fatalf("handler failed on input %x: %s", data, e.Message)
			}
		}
		hook.Reset()

		// A fresh connection is served.
		fresh := pipeConn(srv)
		defer fresh.Close()
		go func() { _, _ = fresh.Write(frame(apiVersionsReq(3), 99)) }()
		if err := fresh.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		var size [4]byte
		if _, err := io.ReadFull(fresh, size[:]); err != nil {
			t.Fatalf("fresh connection: %v", err)
		}
		body := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(fresh, body); err != nil {
			t.Fatalf("fresh connection: %v", err)
		}
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.SetVersion(3)
		if corr := int32(binary.BigEndian.Uint32(body)); corr != 99 {
			t.Fatalf("fresh connection: correlation id %d", corr)
		}
		if err := resp.ReadFrom(body[4:]); err != nil || resp.ErrorCode != 0 {
			t.Fatalf("fresh connection: %v, error %d", err, resp.ErrorCode)
		}
	})
}

// openConns is how many connections srv has not closed yet.
func openConns(srv *Server) int {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return len(srv.conns)
}
