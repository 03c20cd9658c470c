// consume.go: `actorlog consume TOPIC` — print records, one value per line.
// With --group it reads as a member of a consumer group: the partitions
// the group assigns, from the group's committed offsets (--from-beginning
// only where the group has none), committing as it goes (auto-commit, and
// before giving partitions up); on SIGINT/SIGTERM, --max-messages or
// --timeout it commits what it printed and leaves the group (a static
// member, --group-instance-id, stays in it, so a restart within the
// session timeout gets its partitions back without a rebalance). A batch
// that cannot be decoded ends it with an error (exit status 1) naming the
// partition and offset, after the records before it were printed.

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/actorlog/actorlog/actors/consumer"
	"github.com/actorlog/actorlog/actors/group"
)

// groupFlags are consume's consumer-group flags.
type groupFlags struct {
	id, instanceID, include, assignors        string
	session, heartbeat, rebalance, autoCommit time.Duration
}

// config fills in cfg's group settings for topics.
func (gf *groupFlags) config(cfg *consumer.Config, topics []string) error {
	cfg.GroupID, cfg.GroupInstanceID = gf.id, gf.instanceID
	cfg.Topics = topics
	if gf.include != "" {
		re, err := regexp.Compile(gf.include)
		if err != nil {
			return fmt.Errorf("--include: %w", err)
		}
		cfg.TopicRegex = re
	}
	for _, name := range strings.Split(gf.assignors, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		a, ok := group.ByName(name)
		if !ok {
			return fmt.Errorf("--assignors: unknown assignor %q (want cooperative-sticky, range or roundrobin)", name)
		}
		cfg.Assignors = append(cfg.Assignors, a)
	}
	cfg.SessionTimeout, cfg.HeartbeatInterval = gf.session, gf.heartbeat
	cfg.RebalanceTimeout, cfg.AutoCommitInterval = gf.rebalance, gf.autoCommit
	return nil
}

func newConsumeCmd(g *globals) *cobra.Command {
	var (
		fromBeginning, printKey, printOffset bool
		partition                            int32
		offset                               int64
		maxMessages                          int64
		idle                                 time.Duration
		gf                                   groupFlags
	)
	cmd := &cobra.Command{
		Use:   "consume TOPIC | consume --group G [TOPIC...] [--include REGEX]",
		Short: "Print a topic's records, one value per line (with --group, as a member of a consumer group)",
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case gf.id == "" && len(args) != 1:
				return fmt.Errorf("want one topic, got %d (several topics or --include need --group)", len(args))
			case gf.id != "" && gf.include != "" && len(args) > 0:
				return errors.New("--include subscribes by pattern: give no topics with it")
			case gf.id != "" && gf.include == "" && len(args) == 0:
				return errors.New("--group needs topics or --include")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			if f.Changed("offset") && !f.Changed("partition") {
				return errors.New("--offset needs --partition")
			}
			if gf.id == "" {
				for _, name := range []string{"group-instance-id", "include", "assignors", "session-timeout", "heartbeat-interval", "rebalance-timeout", "auto-commit-interval"} {
					if f.Changed(name) {
						return fmt.Errorf("--%s needs --group", name)
					}
				}
			} else if f.Changed("partition") {
				return errors.New("--partition reads outside group management: not with --group")
			}
			c, err := g.connect()
			if err != nil {
				return err
			}
			defer c.Close()
			start := consumer.Latest()
			if fromBeginning {
				start = consumer.Earliest()
			}
			var parts []int32
			if f.Changed("partition") {
				parts = []int32{partition}
				if f.Changed("offset") {
					if offset < 0 {
						return fmt.Errorf("--offset %d: must not be negative", offset)
					}
					start = consumer.AtOffset(offset)
				}
			}
			// Check the topics and partition before consuming, for a clear error.
			for _, topic := range args {
				if err := checkTopicPartition(c, topic, parts); err != nil {
					return err
				}
			}
			out := bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)
			pr := &printer{out: out, max: maxMessages, printKey: printKey, printOffset: printOffset,
				notify: make(chan struct{}, 1), fatal: make(chan error, 1), cut: map[consumer.TopicPartition]int64{}}
			// The handler may still run on the consumer's goroutine
			// while this returns (Stop is asynchronous): flush under
			// the printer's lock.
			defer pr.flush(cmd)
			// The printer copies each record out before its handler
			// returns and keeps none: the consumer may reuse buffers.
			cfg := consumer.Config{Client: c, Partitions: parts, Start: start, Handler: pr.handle, OnError: pr.onError, ReuseBuffers: true}
			if gf.id != "" {
				if err := gf.config(&cfg, args); err != nil {
					return err
				}
			} else {
				cfg.Topic = args[0]
			}
			if f.Changed("offset") {
				// An explicit offset outside the log is the user's error.
				cfg.OnOutOfRange = consumer.Fail
			}
			props, err := consumer.Props(cfg)
			if err != nil {
				return err
			}
			root := c.System().Root
			pid := root.Spawn(props)
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
			defer signal.Stop(sig)
			runErr := pr.run(cmd, idle, sig)
			if gf.id == "" {
				root.Stop(pid)
				return runErr
			}
			// Records handed to the handler after --max-messages were
			// not printed: move those partitions back before the close
			// commits.
			for tp, off := range pr.cuts() {
				root.Send(pid, &consumer.Seek{Partition: tp, Offset: off})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := consumer.CloseAndStop(ctx, root, pid); err != nil {
				// Not fatal: what was printed and not committed is
				// printed again by the partition's next reader.
				fmt.Fprintf(cmd.ErrOrStderr(), "Warning: closing the group consumer: %v\n", err)
			}
			return runErr
		},
	}
	f := cmd.Flags()
	f.BoolVar(&fromBeginning, "from-beginning", false, "start at the earliest offset (default: only new records; with --group, where the group has no committed offset)")
	f.Int32Var(&partition, "partition", 0, "read only this partition")
	f.Int64Var(&offset, "offset", 0, "start at this offset (with --partition)")
	f.Int64Var(&maxMessages, "max-messages", 0, "exit after this many records (0: no limit)")
	f.DurationVar(&idle, "timeout", 10*time.Second, "exit after this long without records (0: never)")
	f.BoolVar(&printKey, "print-key", false, "print key<TAB>value")
	f.BoolVar(&printOffset, "print-offset", false, "prefix partition:offset<TAB>")
	f.StringVar(&gf.id, "group", "", "consume as a member of this consumer group, committing as it goes")
	f.StringVar(&gf.instanceID, "group-instance-id", "", "static membership (group.instance.id): keep the partitions across a restart within the session timeout")
	f.StringVar(&gf.include, "include", "", "with --group: subscribe to every topic whose name matches this regular expression")
	f.StringVar(&gf.assignors, "assignors", "", "with --group: partition assignors, most preferred first (default cooperative-sticky; range, roundrobin)")
	f.DurationVar(&gf.session, "session-timeout", consumer.DefaultSessionTimeout, "with --group: the member is removed after this long without heartbeats")
	f.DurationVar(&gf.heartbeat, "heartbeat-interval", consumer.DefaultHeartbeatInterval, "with --group: how often the member heartbeats (and learns of rebalances)")
	f.DurationVar(&gf.rebalance, "rebalance-timeout", consumer.DefaultRebalanceTimeout, "with --group: how long a rebalance waits for members to rejoin")
	f.DurationVar(&gf.autoCommit, "auto-commit-interval", consumer.DefaultAutoCommitInterval, "with --group: how often printed positions are committed")
	return cmd
}

// printer prints records for consume. Its handler runs inside the
// consumer actor; run waits on the main goroutine.
type printer struct {
	out                   *bufio.Writer
	max                   int64
	printKey, printOffset bool
	notify                chan struct{}
	fatal                 chan error

	mu      sync.Mutex
	printed int64
	// cut holds, per partition, the first record handed over but not
	// printed (once max was reached).
	cut map[consumer.TopicPartition]int64
}

func (p *printer) handle(msgs []consumer.Message) {
	p.mu.Lock()
	for _, m := range msgs {
		if p.max > 0 && p.printed >= p.max {
			tp := consumer.TopicPartition{Topic: m.Topic, Partition: m.Partition}
			if _, ok := p.cut[tp]; !ok {
				p.cut[tp] = m.Offset
			}
			break
		}
		if p.printOffset {
			fmt.Fprintf(p.out, "%d:%d\t", m.Partition, m.Offset)
		}
		if p.printKey {
			p.out.Write(m.Key)
			p.out.WriteByte('\t')
		}
		p.out.Write(m.Value)
		p.out.WriteByte('\n')
		p.printed++
	}
	// Flushed before the handler returns: a record counts as handled (and
	// its offset may be committed) only once it is out.
	err := p.out.Flush()
	p.mu.Unlock()
	if err != nil {
		p.onError(fmt.Errorf("write output: %w", err))
	}
	select {
	case p.notify <- struct{}{}:
	default:
	}
}

// onError passes unrecoverable consumer errors to run: an offset out of
// range under --offset, a refusal by the group, a failed write, and a batch
// that cannot be decoded (the consumer stops that partition; consume exits
// non-zero rather than wait on it forever, after printing the records
// before it, and says how to read past it).
func (p *printer) onError(err error) {
	var ce *consumer.CorruptBatchError
	if errors.As(err, &ce) && ce.NextOffset >= 0 {
		err = fmt.Errorf("%w (the records before it were printed; to read past it: consume %s --partition %d --offset %d)",
			err, ce.Partition.Topic, ce.Partition.Partition, ce.NextOffset)
	}
	if errors.Is(err, consumer.ErrOffsetOutOfRange) || errors.Is(err, consumer.ErrGroupFatal) || errors.Is(err, consumer.ErrCorruptBatch) ||
		strings.HasPrefix(err.Error(), "write output") {
		select {
		case p.fatal <- err:
		default:
		}
	}
}

// flush writes out what is buffered, under the lock the handler holds.
func (p *printer) flush(cmd *cobra.Command) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.out.Flush(); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "Warning: writing output: %v\n", err)
	}
}

func (p *printer) count() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.printed
}

// cuts returns the partitions whose records were not all printed, with
// the first offset not printed.
func (p *printer) cuts() map[consumer.TopicPartition]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[consumer.TopicPartition]int64, len(p.cut))
	for tp, off := range p.cut {
		out[tp] = off
	}
	return out
}

// run waits until max records were printed, idle passed without records
// (0: never), a signal came, or a fatal error.
func (p *printer) run(cmd *cobra.Command, idle time.Duration, sig <-chan os.Signal) error {
	var timeout <-chan time.Time
	var timer *time.Timer
	if idle > 0 {
		timer = time.NewTimer(idle)
		defer timer.Stop()
		timeout = timer.C
	}
	var progress *counter
	if f, ok := cmd.OutOrStdout().(*os.File); !ok || !isTerminal(f) {
		progress = newCounter("consuming") // output is redirected: show progress on stderr
	} else {
		progress = &counter{}
	}
	defer progress.done()
	var shown int64
	for {
		select {
		case <-p.notify:
			n := p.count()
			progress.add(int(n - shown))
			shown = n
			if p.max > 0 && n >= p.max {
				return nil
			}
			if timer != nil {
				timer.Reset(idle) // Go >= 1.23: no stale tick survives Reset
			}
		case err := <-p.fatal:
			return err
		case <-timeout:
			return nil
		case <-sig:
			return nil
		}
	}
}
