// consume.go: `actorlog consume TOPIC` — print records, one value per line.

package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/actorlog/actorlog/actors/consumer"
)

func newConsumeCmd(g *globals) *cobra.Command {
	var (
		fromBeginning, printKey, printOffset bool
		partition                            int32
		offset                               int64
		maxMessages                          int64
		idle                                 time.Duration
	)
	cmd := &cobra.Command{
		Use:   "consume TOPIC",
		Short: "Print a topic's records, one value per line",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic := args[0]
			if cmd.Flags().Changed("offset") && !cmd.Flags().Changed("partition") {
				return errors.New("--offset needs --partition")
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
			if cmd.Flags().Changed("partition") {
				parts = []int32{partition}
				if cmd.Flags().Changed("offset") {
					if offset < 0 {
						return fmt.Errorf("--offset %d: must not be negative", offset)
					}
					start = consumer.AtOffset(offset)
				}
			}
			// Check the topic and partition before consuming, for a clear error.
			if err := checkTopicPartition(c, topic, parts); err != nil {
				return err
			}
			out := bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)
			defer out.Flush()
			got := make(chan int, 1024)
			fatal := make(chan error, 1)
			var n int64
			handler := func(msgs []consumer.Message) {
				for _, m := range msgs {
					if maxMessages > 0 && n >= maxMessages {
						break
					}
					if printOffset {
						fmt.Fprintf(out, "%d:%d\t", m.Partition, m.Offset)
					}
					if printKey {
						out.Write(m.Key)
						out.WriteByte('\t')
					}
					out.Write(m.Value)
					out.WriteByte('\n')
					n++
				}
				if err := out.Flush(); err != nil {
					select {
					case fatal <- fmt.Errorf("write output: %w", err):
					default:
					}
				}
				got <- len(msgs)
			}
			cfg := consumer.Config{Client: c, Topic: topic, Partitions: parts, Start: start, Handler: handler}
			if cmd.Flags().Changed("offset") {
				// An explicit offset outside the log is the user's error.
				cfg.OnOutOfRange = consumer.Fail
				cfg.OnError = func(err error) {
					if errors.Is(err, consumer.ErrOffsetOutOfRange) {
						select {
						case fatal <- err:
						default:
						}
					}
				}
			}
			props, err := consumer.Props(cfg)
			if err != nil {
				return err
			}
			pid := c.System().Root.Spawn(props)
			defer c.System().Root.Stop(pid)
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
			defer signal.Stop(sig)
			timer := time.NewTimer(idle)
			defer timer.Stop()
			var total int64
			var progress *counter
			if f, ok := cmd.OutOrStdout().(*os.File); !ok || !isTerminal(f) {
				progress = newCounter("consuming") // output is redirected: show progress on stderr
			} else {
				progress = &counter{}
			}
			defer progress.done()
			for {
				select {
				case k := <-got:
					total += int64(k)
					progress.add(k)
					if maxMessages > 0 && total >= maxMessages {
						return nil
					}
					timer.Reset(idle) // Go >= 1.23: no stale tick survives Reset
				case err := <-fatal:
					return err
				case <-timer.C:
					return nil
				case <-sig:
					return nil
				}
			}
		},
	}
	f := cmd.Flags()
	f.BoolVar(&fromBeginning, "from-beginning", false, "start at the earliest offset (default: only new records)")
	f.Int32Var(&partition, "partition", 0, "read only this partition")
	f.Int64Var(&offset, "offset", 0, "start at this offset (with --partition)")
	f.Int64Var(&maxMessages, "max-messages", 0, "exit after this many records (0: no limit)")
	f.DurationVar(&idle, "timeout", 10*time.Second, "exit after this long without records")
	f.BoolVar(&printKey, "print-key", false, "print key<TAB>value")
	f.BoolVar(&printOffset, "print-offset", false, "prefix partition:offset<TAB>")
	return cmd
}
