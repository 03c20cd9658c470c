package client

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/messages"
)

// frozenListener accepts connections and never answers, as the kernel does
// for a SIGSTOPped host.
func frozenListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held open, never read
		}
	}()
	t.Cleanup(func() {
		if err := ln.Close(); err != nil {
			t.Errorf("close listener: %v", err)
		}
	})
	return ln.Addr().String()
}

// serveMetadata makes the client's own actor system a fake host whose
// broker answers metadata requests (a second remote in one process would
// race in protoactor's global gRPC logger set-up).
func serveMetadata(t *testing.T, c *Client) {
	t.Helper()
	_, err := c.System().Root.SpawnNamed(actor.PropsFromFunc(func(ctx actor.Context) {
		if req, ok := ctx.Message().(*messages.MetadataRequest); ok {
			ctx.Respond(&messages.MetadataResponse{CorrelationId: req.CorrelationId})
		}
	}), messages.BrokerActorID)
	if err != nil {
		t.Fatal(err)
	}
}

// A frozen first bootstrap host costs a share of the deadline, not all of
// it, and later requests start with the host that answered.
func TestBootstrapSkipsAFrozenHost(t *testing.T) {
	frozen := frozenListener(t)
	// The client listens on a fixed free port so its own address can be
	// the second bootstrap host.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	good := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Bootstrap: []string{frozen, good}, Listen: good, RequestTimeout: 4 * time.Second, Logger: logrus.NewEntry(logrus.New())})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	serveMetadata(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := c.Metadata(ctx); err != nil {
		t.Fatalf("metadata with a frozen first host: %v", err)
	}
	t.Logf("first metadata request took %v", time.Since(start))
	start = time.Now()
	if _, err := c.Metadata(context.Background()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("the second request took %v: it did not start with the host that answered", took)
	}
}
