// supervisor.go: the host's watchdog over its broker and controller
// actors. Both live at the root under fixed names (other hosts and clients
// address them by name), so no parent supervises them: the watchdog
// watches each, and when one stops without the host stopping it (a bug, a
// local Stop, a failure protoactor's supervision gave up on) it logs at
// error level and respawns it under the same name after a backoff —
// RestartBackoff, doubled per consecutive death up to RestartBackoffMax,
// starting over once the actor has lived for watchdogResetAfter — and
// counts the respawn (actorlog_actor_restarts_total). PIDs name actors by
// id, so every PID held elsewhere reaches the new incarnation.
//
// Threading: the watchdog's state is owned by its actor; timers only post
// to its mailbox. retired is read from any goroutine.

package host

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
)

// Default restart backoff of the broker and controller actors.
const (
	DefaultRestartBackoff    = 100 * time.Millisecond
	DefaultRestartBackoffMax = 10 * time.Second
)

// watchdogResetAfter: an actor that has lived this long starts over at the
// shortest backoff when it next dies.
const watchdogResetAfter = time.Minute

// watchdogConfig configures the watchdog.
type watchdogConfig struct {
	backoff, backoffMax time.Duration
	// retired reports that the host is stopping or fenced: an actor that
	// stops then is not respawned.
	retired func() bool
	// restarted counts a respawn of the actor named name.
	restarted func(name string)
	logger    *logrus.Entry
}

// superviseChild asks the watchdog to spawn props at the root under name
// and keep it alive. Reply: superviseResult.
type superviseChild struct {
	name  string
	props *actor.Props
}

type superviseResult struct {
	pid *actor.PID
	err error
}

// respawnChild is posted by a backoff timer.
type respawnChild struct{ name string }

type watchedChild struct {
	props    *actor.Props
	failures int
	started  time.Time
	timer    *time.Timer // pending respawn
}

// watchdog is the actor.
type watchdog struct {
	cfg      watchdogConfig
	logger   *logrus.Entry
	children map[string]*watchedChild
}

func watchdogProps(cfg watchdogConfig) *actor.Props {
	if cfg.backoff <= 0 {
		cfg.backoff = DefaultRestartBackoff
	}
	if cfg.backoffMax < cfg.backoff {
		cfg.backoffMax = max(DefaultRestartBackoffMax, cfg.backoff)
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &watchdog{cfg: cfg, logger: cfg.logger.WithField("component", "watchdog"), children: map[string]*watchedChild{}}
	})
}

// Receive dispatches the watchdog's messages.
func (w *watchdog) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *superviseChild:
		pid, err := w.spawn(ctx, msg.name, msg.props)
		if err == nil {
			w.children[msg.name] = &watchedChild{props: msg.props, started: time.Now()}
		}
		ctx.Respond(&superviseResult{pid: pid, err: err})
	case *actor.Terminated:
		w.onTerminated(ctx, msg)
	case respawnChild:
		w.onRespawn(ctx, msg.name)
	case *actor.Stopping:
		for _, c := range w.children {
			if c.timer != nil {
				c.timer.Stop()
			}
		}
	case *actor.Started, *actor.Stopped, *actor.Restarting:
	default:
		w.logger.WithFields(logrus.Fields{"type": fmt.Sprintf("%T", msg), "sender": ctx.Sender()}).Warn("watchdog: unknown message")
	}
}

// spawn spawns props at the root under name and watches it.
func (w *watchdog) spawn(ctx actor.Context, name string, props *actor.Props) (*actor.PID, error) {
	pid, err := ctx.ActorSystem().Root.SpawnNamed(props, name)
	if err != nil {
		return nil, fmt.Errorf("spawn %s: %w", name, err)
	}
	ctx.Watch(pid)
	return pid, nil
}

func (w *watchdog) onTerminated(ctx actor.Context, msg *actor.Terminated) {
	name := msg.GetWho().GetId()
	c := w.children[name]
	if c == nil {
		return
	}
	log := w.logger.WithField("actor", name)
	if w.cfg.retired() {
		log.Info("actor stopped with the host; not respawned")
		return
	}
	if time.Since(c.started) >= watchdogResetAfter {
		c.failures = 0
	}
	w.scheduleRespawn(ctx, name, c)
	log.WithFields(logrus.Fields{"respawn_in": w.delay(c.failures), "consecutive_deaths": c.failures, "why": msg.GetWhy().String()}).
		Error("actor stopped unexpectedly; respawning it after a backoff")
}

// scheduleRespawn counts a death of c and posts respawnChild after the
// backoff.
func (w *watchdog) scheduleRespawn(ctx actor.Context, name string, c *watchedChild) {
	c.failures++
	self, root := ctx.Self(), ctx.ActorSystem().Root
	if c.timer != nil {
		c.timer.Stop()
	}
	c.timer = time.AfterFunc(w.delay(c.failures), func() { root.Send(self, respawnChild{name: name}) })
}

// delay is the wait after the n-th consecutive death: backoff doubled n-1
// times, at most backoffMax.
func (w *watchdog) delay(n int) time.Duration {
	d := w.cfg.backoff
	for i := 1; i < n && d < w.cfg.backoffMax; i++ {
		d *= 2
	}
	return min(d, w.cfg.backoffMax)
}

func (w *watchdog) onRespawn(ctx actor.Context, name string) {
	c := w.children[name]
	if c == nil || w.cfg.retired() {
		return
	}
	c.timer = nil
	log := w.logger.WithField("actor", name)
	if _, alive := ctx.ActorSystem().ProcessRegistry.GetLocal(name); alive {
		// Someone spawned it meanwhile: watch that one.
		ctx.Watch(actor.NewPID(ctx.ActorSystem().Address(), name))
		return
	}
	if _, err := w.spawn(ctx, name, c.props); err != nil {
		w.scheduleRespawn(ctx, name, c)
		log.WithError(err).WithField("retry_in", w.delay(c.failures)).Error("respawning the actor failed; retrying after a backoff")
		return
	}
	c.started = time.Now()
	if w.cfg.restarted != nil {
		w.cfg.restarted(name)
	}
	log.WithField("consecutive_deaths", c.failures).Warn("actor respawned")
}
