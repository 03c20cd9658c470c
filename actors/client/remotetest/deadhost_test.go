// Package remotetest holds tests of the client's protoactor remote that
// need a remote of their own: two remotes in one test process race in
// protoactor's global gRPC logger set-up (DESIGN §8), so each such test
// gets its own package (and process).
package remotetest

import (
	"bytes"
	"fmt"
	"net"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
)

// grpcConnGoroutines counts the goroutines that live as long as a
// grpc.ClientConn (its callback serializers).
func grpcConnGoroutines(t *testing.T) int {
	t.Helper()
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 2); err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b.Bytes(), []byte("grpcsync.(*CallbackSerializer).run"))
}

// Messages to a host that is gone (connections refused) leave no gRPC
// client connection behind once the endpoint gives up.
func TestDeadHostLeavesNoConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{Bootstrap: []string{dead}, RequestTimeout: time.Second, Logger: logrus.NewEntry(logrus.New())})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	terminated := make(chan struct{}, 16)
	sub := c.System().EventStream.Subscribe(func(evt any) {
		if e, ok := evt.(*remote.EndpointTerminatedEvent); ok && e.Address == dead {
			terminated <- struct{}{}
		}
	})
	defer c.System().EventStream.Unsubscribe(sub)
	base := grpcConnGoroutines(t)
	for round := 0; round < 3; round++ {
		c.System().Root.Send(actor.NewPID(dead, messages.BrokerActorID), &messages.MetadataRequest{})
		select {
		case <-terminated:
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: the endpoint to a dead host never gave up", round)
		}
	}
	clustertest.WaitFor(t, 10*time.Second, func() error {
		if n := grpcConnGoroutines(t); n > base {
			return fmt.Errorf("%d connection goroutines, %d before: client connections to the dead host were left behind", n, base)
		}
		return nil
	})
}
