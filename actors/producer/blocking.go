// blocking.go: Producer, the small blocking wrapper around the producer
// actor for code that is not actor-based.

package producer

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/actors/client"
)

// Producer wraps a producer actor. Safe for concurrent use.
type Producer struct {
	c   *client.Client
	pid *actor.PID
}

// New spawns a producer actor in the client's actor system.
func New(c *client.Client, cfg ActorConfig) (*Producer, error) {
	cfg.Client = c
	props, err := ActorProps(cfg)
	if err != nil {
		return nil, err
	}
	return &Producer{c: c, pid: c.System().Root.Spawn(props)}, nil
}

// PID is the producer actor, for actors that send it Send messages.
func (p *Producer) PID() *actor.PID { return p.pid }

// Produce sends one record and waits for its delivery: the offset it got,
// or why it failed.
func (p *Producer) Produce(ctx context.Context, msg Send) (int64, error) {
	done := make(chan Delivered, 1)
	msg.Callback = func(d Delivered) { done <- d }
	msg.at = time.Now()
	p.c.System().Root.Send(p.pid, &msg)
	select {
	case d := <-done:
		return d.Offset, d.Err
	case <-ctx.Done():
		return -1, fmt.Errorf("producer: waiting for delivery: %w", ctx.Err())
	}
}

// ProduceAsync sends one record without waiting; msg.Callback (which must
// not block: it runs inside the producer actor) receives its delivery.
func (p *Producer) ProduceAsync(msg *Send) {
	msg.at = time.Now()
	p.c.System().Root.Send(p.pid, msg)
}

// ProduceMany sends many records in one message; callback (which must not
// block) receives each record's delivery.
func (p *Producer) ProduceMany(records []Send, callback func(Delivered)) {
	p.c.System().Root.Send(p.pid, &SendMany{Records: records, Callback: callback, at: time.Now()})
}

// Flush sends everything buffered and waits until all records sent before
// it are delivered or failed.
func (p *Producer) Flush(ctx context.Context) error {
	f := p.c.System().Root.RequestFuture(p.pid, &Flush{}, p.c.RequestTimeout()*10)
	done := make(chan error, 1)
	go func() { _, err := f.Result(); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("producer: flush: %w", err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("producer: flush: %w", ctx.Err())
	}
}

// Stats returns the producer's counters and current load, waiting at most
// the client's request timeout.
func (p *Producer) Stats() (ProducerStats, error) {
	f := p.c.System().Root.RequestFuture(p.pid, &StatsRequest{}, p.c.RequestTimeout())
	res, err := f.Result()
	if err != nil {
		return ProducerStats{}, fmt.Errorf("producer: stats: %w", err)
	}
	st, ok := res.(*ProducerStats)
	if !ok {
		return ProducerStats{}, fmt.Errorf("producer: stats: unexpected reply %T", res)
	}
	return *st, nil
}

// Close flushes and stops the producer actor.
func (p *Producer) Close(ctx context.Context) error {
	err := p.Flush(ctx)
	if serr := p.c.System().Root.StopFuture(p.pid).Wait(); serr != nil && err == nil {
		err = fmt.Errorf("producer: stop: %w", serr)
	}
	return err
}
