// attach_test.go: a client attached to an actor system it does not own
// checks its config like New, and its Close leaves the system running.

package client

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

func TestAttachLeavesTheSystemToItsOwner(t *testing.T) {
	if _, err := Attach(nil, Config{Bootstrap: []string{"127.0.0.1:7070"}}); err == nil {
		t.Fatal("Attach(nil) succeeded")
	}
	system := actor.NewActorSystem()
	t.Cleanup(system.Shutdown)
	if _, err := Attach(system, Config{}); err == nil {
		t.Fatal("Attach with no bootstrap host succeeded")
	}
	if _, err := Attach(system, Config{Bootstrap: []string{"no-port"}}); err == nil {
		t.Fatal("Attach with a bad bootstrap address succeeded")
	}
	c, err := Attach(system, Config{Bootstrap: []string{"127.0.0.1:7070"}})
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	if c.System() != system || c.RequestTimeout() != 10*time.Second {
		t.Fatalf("attached client: system %p, timeout %v", c.System(), c.RequestTimeout())
	}
	c.Close()
	c.Close() // idempotent
	pid := system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if s, ok := ctx.Message().(string); ok {
			ctx.Respond(s + "!")
		}
	}))
	res, err := system.Root.RequestFuture(pid, "still up", 5*time.Second).Result()
	if err != nil || res != "still up!" {
		t.Fatalf("the system after Close answered %v, %v", res, err)
	}
}
