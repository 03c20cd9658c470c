// perf_inprocess.go: `actorlog perf inprocess` (hidden), a host and the
// perf tools in one process: what scripts/bench.sh's in-process kfake
// baseline measures for franz-go (broker and client sharing one Go heap
// and scheduler), measured for actorlog, so the two can be compared like
// for like as well as across processes.

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/host"
)

func newPerfInProcessCmd(g *globals) *cobra.Command {
	var (
		numRecords int64
		recordSize int
		partitions int32
		listen     string
		dataDir    string
		batchSize  int
		fetchSize  int32
		consume    bool
		reuse      bool
	)
	cmd := &cobra.Command{
		Use:   "inprocess --num-records N --record-size S",
		Short: "Start a host in this process, then run perf produce and perf consume against it",
		Long: "Starts a lone host (fresh data directory, Kafka listener and HTTP off) in this process,\n" +
			"creates a topic, runs `perf produce` with its defaults (or --batch-size) and then `perf consume` of the\n" +
			"same records, as the same code the two commands run, and stops the host. For the\n" +
			"like-for-like comparison with franz-go against an in-process kfake (scripts/bench.sh).",
		Args:   cobra.NoArgs,
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			if numRecords <= 0 {
				return fmt.Errorf("--num-records must be positive")
			}
			dir := dataDir
			if dir == "" {
				if dir, err = os.MkdirTemp("", "actorlog-perf-inprocess-"); err != nil {
					return fmt.Errorf("data directory: %w", err)
				}
				defer func() {
					if rerr := os.RemoveAll(dir); rerr != nil {
						err = errors.Join(err, fmt.Errorf("remove data directory: %w", rerr))
					}
				}()
			}
			logger, err := g.logger("warn")
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			h, err := host.Start(ctx, host.Config{DataDir: dir, Listen: listen, HTTP: "off", KafkaListen: "off", Logger: logger})
			if err != nil {
				return fmt.Errorf("start the in-process host: %w", err)
			}
			defer func() {
				sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer scancel()
				if serr := h.Shutdown(sctx); serr != nil {
					err = errors.Join(err, fmt.Errorf("stop the in-process host: %w", serr))
				}
			}()
			local := *g
			local.bootstrap = h.Address()
			const topic = "perf-inprocess"
			if err := withClient(&local, func(ctx context.Context, c *client.Client) error {
				_, err := c.CreateTopic(ctx, topic, partitions, 1, nil)
				return err
			}); err != nil {
				return fmt.Errorf("create topic %q: %w", topic, err)
			}
			logger.WithFields(logrus.Fields{"address": h.Address(), "data_dir": dir, "partitions": partitions}).Info("in-process host ready")
			produceArgs := []string{"--topic", topic, "--num-records", strconv.FormatInt(numRecords, 10), "--record-size", strconv.Itoa(recordSize)}
			if cmd.Flags().Changed("batch-size") { // perf produce checks it
				produceArgs = append(produceArgs, "--batch-size", strconv.Itoa(batchSize))
			}
			type step struct {
				cmd  *cobra.Command
				args []string
			}
			steps := []step{{newPerfProduceCmd(&local), produceArgs}}
			if consume {
				consumeArgs := []string{"--topic", topic, "--messages", strconv.FormatInt(numRecords, 10)}
				if cmd.Flags().Changed("fetch-size") { // perf consume checks it
					consumeArgs = append(consumeArgs, "--fetch-size", strconv.FormatInt(int64(fetchSize), 10))
				}
				if reuse {
					consumeArgs = append(consumeArgs, "--reuse-buffers")
				}
				steps = append(steps, step{newPerfConsumeCmd(&local), consumeArgs})
			}
			for _, s := range steps {
				s.cmd.SetArgs(s.args)
				s.cmd.SetOut(cmd.OutOrStdout())
				s.cmd.SetErr(cmd.ErrOrStderr())
				s.cmd.SilenceUsage, s.cmd.SilenceErrors = true, true
				if err := s.cmd.Execute(); err != nil {
					return fmt.Errorf("perf %s: %w", s.cmd.Name(), err)
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.Int64Var(&numRecords, "num-records", 0, "number of records to produce, then consume")
	f.IntVar(&recordSize, "record-size", 100, "record value size in bytes")
	f.Int32Var(&partitions, "partitions", 3, "partitions of the topic")
	f.StringVar(&listen, "listen", "127.0.0.1:19960", "the in-process host's remote address (its embedded etcd takes the next two ports)")
	f.IntVar(&batchSize, "batch-size", 0, "perf produce's --batch-size (default: perf produce's default)")
	f.Int32Var(&fetchSize, "fetch-size", 0, "perf consume's --fetch-size (default: perf consume's default)")
	f.BoolVar(&reuse, "reuse-buffers", false, "perf consume's --reuse-buffers")
	f.BoolVar(&consume, "consume", true, "run perf consume of the produced records after perf produce")
	f.StringVar(&dataDir, "data-dir", "", "the host's data directory (default: a new temporary directory, removed at the end)")
	return cmd
}
