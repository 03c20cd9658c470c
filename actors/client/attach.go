// attach.go: a Client over an actor system that already runs a remote
// endpoint (a host's own), for code inside a host that wants the CLI's
// admin calls (the web console) without a second actor system and
// listener.

package client

import (
	"errors"

	"github.com/asynkron/protoactor-go/actor"
)

// Attach returns a Client that sends its requests through system, whose
// remote endpoint must already run (replies come back to it). cfg is read
// as by New, except Listen, which is ignored. Close on such a client stops
// only what Attach started: system and its remote stay with their owner.
func Attach(system *actor.ActorSystem, cfg Config) (*Client, error) {
	if system == nil {
		return nil, errors.New("client: attach: nil actor system")
	}
	if err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, system: system, logger: cfg.Logger, health: newHealth(cfg.Logger, dialProbe)}
	c.health.subscribe(system.EventStream)
	return c, nil
}
